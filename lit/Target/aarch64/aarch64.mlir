// --target=aarch64: the LLVM CPU backend for ARMv8.2-A (+neon,+fullfp16,+fp16fml). fp16
// elementwise arithmetic runs in native half vectors (fadd/fmul v.8h: bit-identical to the
// reference's widen-compute-round for + - * / sqrt), f32 -> f16 narrows with fcvtn, and a matmul
// with fp16 inputs and a constant weight accumulates in f32 with FMLAL/FMLAL2 (exact products, so
// the reference's bits when summed in the same order). f16c run executes it under
// qemu-aarch64 through the library's C entry point.
// RUN: %f16c compile %s --target=aarch64 --emit=asm | FileCheck %s
// RUN: %f16c compile %s --target=aarch64 --emit=llvm | FileCheck %s --check-prefix=IR
// RUN: %f16c compile %s --target=aarch64+bf16 --function=g --emit=asm | FileCheck %s --check-prefix=BF16
// RUN: %f16c compile %s --target=aarch64 --function=g --emit=asm | FileCheck %s --check-prefix=NOBF16
// A library (and its header) holds one function, chosen as for the artifact; bf16 crosses the
// C boundary as float.
// RUN: not %f16c compile %s --target=aarch64 --emit=lib -o %t.so 2>&1 | FileCheck %s --check-prefix=WHICH
// RUN: %f16c compile %s --target=aarch64+bf16 --function=g --emit=header | FileCheck %s --check-prefix=HEADER
// WHICH: error: {{.*}}aarch64.mlir: no function (functions: f, g); choose one with --function
// HEADER: /* OUTPUT 0: 3 bf16, bf16 inside: returned as float (exactly) */
// HEADER: int32_t g_run(const float *in0, float *out0);
// A depthwise convolution runs four channels per vector (multiply then add, as the reference);
// a batch norm after it (kept here: by default it folds into the weights) and the ReLU6 are
// its fused epilogue, on the same four channels in native fp16 vectors (the loop is rotated:
// the epilogue comes first in the text).
// RUN: %f16c compile %models/depthwise_block.tosa.mlir --target=aarch64 --precision=fp16 --no-fold-batch-norm --emit=asm | FileCheck %s --check-prefix=DW
// DW-LABEL: f16c_k2_depthwise_conv2d:
// DW: fsub v{{[0-9]+}}.4h, v{{[0-9]+}}.4h, v{{[0-9]+}}.4h
// DW: fmul v{{[0-9]+}}.4h, v{{[0-9]+}}.4h, v{{[0-9]+}}.4h
// DW: fcmge v{{[0-9]+}}.4h, v{{[0-9]+}}.4h, v{{[0-9]+}}.4h
// DW: fcvtl v{{[0-9]+}}.4s, v{{[0-9]+}}.4h
// DW: fmul v{{[0-9]+}}.4s, v{{[0-9]+}}.4s, v{{[0-9]+}}.4s
// DW: fadd v{{[0-9]+}}.4s, v{{[0-9]+}}.4s, v{{[0-9]+}}.4s
// The 1x1 convolution after it accumulates its 8 x 8 tiles in f32 with FMLAL, then finishes a
// tile inside the matrix four outputs at a time: its batch norm also in native fp16 vectors.
// DW-LABEL: f16c_k3_conv2d:
// DW: fmlal v{{[0-9]+}}.4s
// DW: fsub v{{[0-9]+}}.4h, v{{[0-9]+}}.4h, v{{[0-9]+}}.4h
// DW: fmul v{{[0-9]+}}.4h, v{{[0-9]+}}.4h, v{{[0-9]+}}.4h
// DW-LABEL: f16c_k4_transpose_0:
// RUN: %f16c run %s --target=aarch64 --function=f --input %inputs/f16_4x64_a.npy --input %inputs/f16_4x64_b.npy --output %t.a0.npy --output %t.a1.npy
// RUN: %f16c run %s --target=reference --function=f --input %inputs/f16_4x64_a.npy --input %inputs/f16_4x64_b.npy --output %t.r0.npy --output %t.r1.npy
// RUN: cmp %t.a0.npy %t.r0.npy
// RUN: cmp %t.a1.npy %t.r1.npy
// RUN: %f16c run %s --target=aarch64+bf16 --function=g --input %inputs/x3_f32.npy --output %t.g.npy
// RUN: %f16c run %s --target=reference --function=g --input %inputs/x3_f32.npy --output %t.gr.npy
// RUN: cmp %t.g.npy %t.gr.npy

// CHECK-LABEL: f16c_k0_add:
// CHECK: fadd v{{[0-9]+}}.8h, v{{[0-9]+}}.8h, v{{[0-9]+}}.8h
// CHECK: fmul v{{[0-9]+}}.8h, v{{[0-9]+}}.8h, v{{[0-9]+}}.8h
// The exp is the contract's own (core/src/math.rs), inline and vectorised: round to nearest
// (frintn) and no call.
// CHECK-LABEL: f16c_k1_cast:
// CHECK: frintn v{{[0-9]+}}.4s
// CHECK-NOT: blr
// CHECK-LABEL: f16c_k2_matmul:
// A is read in runs of four values along k (one 64-bit load per row), each multiplied from
// its lane: FMLAL by element.
// CHECK: fmlal v{{[0-9]+}}.4s, v{{[0-9]+}}.4h, v{{[0-9]+}}.h[{{[0-3]}}]
// CHECK: fmlal2 v{{[0-9]+}}.4s, v{{[0-9]+}}.4h, v{{[0-9]+}}.h[{{[0-3]}}]
// The matmul's f16 result (then widened by the epilogue's cast), four lanes at a time.
// CHECK: fcvtn v{{[0-9]+}}.4h, v{{[0-9]+}}.4s
// IR: target triple = "aarch64-unknown-linux-gnu"
// IR: call <4 x float> @llvm.aarch64.neon.fmlal.v4f32.v8f16(
// BF16: bfcvt h{{[0-9]+}}, s{{[0-9]+}}
// NOBF16-NOT: bfcvt
func.func @f(%a: tensor<4x64xf16>, %b: tensor<4x64xf16>) -> (tensor<4x64xf16>, tensor<1x4x16xf32>) {
  %0 = tosa.add %a, %b : (tensor<4x64xf16>, tensor<4x64xf16>) -> tensor<4x64xf16>
  %s = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %1 = tosa.mul %0, %b, %s : (tensor<4x64xf16>, tensor<4x64xf16>, tensor<1xi8>) -> tensor<4x64xf16>
  %x = tosa.cast %1 : (tensor<4x64xf16>) -> tensor<4x64xf32>
  %e = tosa.exp %x : (tensor<4x64xf32>) -> tensor<4x64xf32>
  %y = tosa.cast %e : (tensor<4x64xf32>) -> tensor<4x64xf16>
  %shape = tosa.const_shape {values = dense<[1, 4, 64]> : tensor<3xindex>} : () -> !tosa.shape<3>
  %r = tosa.reshape %y, %shape : (tensor<4x64xf16>, !tosa.shape<3>) -> tensor<1x4x64xf16>
  %w = "tosa.const"() <{values = dense<0.5> : tensor<1x64x16xf16>}> : () -> tensor<1x64x16xf16>
  %z = "tosa.const"() <{values = dense<0.0> : tensor<1xf16>}> : () -> tensor<1xf16>
  %m = tosa.matmul %r, %w, %z, %z : (tensor<1x4x64xf16>, tensor<1x64x16xf16>, tensor<1xf16>, tensor<1xf16>) -> tensor<1x4x16xf32>
  return %1, %m : tensor<4x64xf16>, tensor<1x4x16xf32>
}

func.func @g(%x: tensor<3xf32>) -> tensor<3xbf16> {
  %0 = tosa.cast %x : (tensor<3xf32>) -> tensor<3xbf16>
  return %0 : tensor<3xbf16>
}
