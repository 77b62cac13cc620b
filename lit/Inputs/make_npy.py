"""Writes the small .npy inputs the lit tests use (no NumPy needed). Run: python3 make_npy.py"""
import struct


def npy(path, descr, shape, fmt, values):
    header = "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }" % (
        descr, "".join(f"{d}, " for d in shape) if len(shape) == 1 else ", ".join(map(str, shape)))
    pad = 64 - (10 + len(header) + 1) % 64
    header = header + " " * pad + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode())
        f.write(struct.pack("<" + fmt * len(values), *values))


npy("x2_f32.npy", "<f4", [2], "f", [1.5, -2.0])
npy("x3_f32.npy", "<f4", [3], "f", [1.0, 2.0, 3.0])
npy("x2_f64.npy", "<f8", [2], "d", [1.5, -2.0])
npy("f16_2048.npy", "<f4", [2], "f", [2048.0, 2048.0])
with open("not_npy.npy", "wb") as f:
    f.write(b"this is not a numpy file\n")
npy("x123_i8.npy", "|i1", [1, 2, 3], "b", [1, 2, 3, -1, -2, -3])
# 4x64 float16 inputs (struct's "e" is IEEE half): values around 1, some that overflow exp in f16.
npy("f16_4x64_a.npy", "<f2", [4, 64], "e", [((i * 37) % 101) / 10.0 - 5.0 for i in range(256)])
npy("f16_4x64_b.npy", "<f2", [4, 64], "e", [((i * 53) % 89) / 8.0 - 4.0 for i in range(256)])
# A 1x4x4x8 f64 image for pooling in f64.
npy("f64_1x4x4x8.npy", "<f8", [1, 4, 4, 8], "d", [float((i * 7) % 13) - 6.0 for i in range(128)])
# A 1x8x8x8 f32 image for the fp16-accumulation test.
npy("x_1x8x8x8_f32.npy", "<f4", [1, 8, 8, 8], "f", [((i * 29) % 17) / 4.0 - 2.0 for i in range(512)])
# A 1x3x3x1 f32 image for convolution padding checks.
npy("x_1x3x3x1_f32.npy", "<f4", [1, 3, 3, 1], "f", [1.0, -2.0, 0.5, 3.0, 0.25, -1.0, 2.0, 1.5, -0.5])
# A conv weight computed at run time: +inf in its first tap (lit/Run/conv-padding-inf.mlir).
npy("w_1x3x3x1_inf_f32.npy", "<f4", [1, 3, 3, 1], "f", [float("inf"), 1.0, 1.0, 1.0, 0.5, 0.25, 1.0, 0.0, -0.5])
# Angles and activations for the rotary-embedding style test (lit/Precision/rope.mlir).
npy("x_4x64_f32.npy", "<f4", [4, 64], "f", [((i * 37) % 101) / 8.0 - 6.0 for i in range(256)])
npy("angles_4x64_f32.npy", "<f4", [4, 64], "f", [float(p * (1.0 / 1.3 ** (i % 32))) for p in range(4) for i in range(64)])
# Two rows of one element (lit/Run/reduce-size1.mlir).
npy("x_2x1_f32.npy", "<f4", [2, 1], "f", [1.5, -0.0])
# A conv weight given at run time, OHWI, and an image for it (lit/Run/conv-runtime-weight.mlir).
npy("w_4x1x1x9_f32.npy", "<f4", [4, 1, 1, 9], "f", [((i * 13) % 7) / 4.0 - 0.75 for i in range(36)])
npy("x_1x1x3x9_f32.npy", "<f4", [1, 1, 3, 9], "f", [((i * 5) % 11) / 8.0 - 0.5 for i in range(27)])
# i32 values and shift amounts / divisors for the integer ops (lit/Run/integer.mlir).
npy("a_6_i32.npy", "<i4", [6], "i", [-7, 5, 2147483647, -2147483648, 96, 100])
npy("s_6_i32.npy", "<i4", [6], "i", [1, 1, 1, 31, 33, 0])
# A 1x3x2x2x1 volume 1..12 (lit/Run/conv3d.mlir).
npy("x_1x3x2x2x1_f32.npy", "<f4", [1, 3, 2, 2, 1], "f", [float(i) for i in range(1, 13)])
# i16 values at the type's edges (lit/Run/int16.mlir).
npy("x_8_i16.npy", "<i2", [8], "h", [-32768, -1, 0, 127, 128, 32767, 1000, -1000])
# A scalar trip count (lit/Run/control-flow.mlir).
npy("n_i32.npy", "<i4", [], "i", [5])
# A 1x32x64 float16 matrix for the fp16 GEMM whose weight is widened once per run.
npy("f16_1x32x64.npy", "<f2", [1, 32, 64], "e", [((i * 41) % 97) / 16.0 - 3.0 for i in range(2048)])
# A 1x24x24x20 f32 image for the SE block of lit/Target/x86_64-llvm/lanes.mlir: quarters up to
# ±14 (a 1×1 convolution with weights in 64ths sums them exactly, in any order, with or without
# FMA), with some past exp's clamps (95, -110) so that sigmoid saturates both ways.
npy("x_1x24x24x20_f32.npy", "<f4", [1, 24, 24, 20], "f",
    [95.0 if i % 97 == 5 else -110.0 if i % 89 == 7 else ((i * 29) % 113) / 4.0 - 14.0 for i in range(11520)])
