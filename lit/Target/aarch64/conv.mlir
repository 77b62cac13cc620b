// The LLVM CPU backend's convolutions and pools on cnn_small (3x3 convolutions with padding, a
// 2x2 average pool): the padded input is written once per run (a _pad_a step, each row one
// constant-length copy: vector loads and stores), so the tiles read it at addresses linear in
// the row and the tap, with no bounds test per value; a run of A values along k (a kernel row's
// three taps of three channels lie next to each other) is one vector load per row, each value
// multiplying from its lane (FMLA by element, lanes 0 to 3 of four f32, 0 to 7 of eight f16);
// the pool computes a pixel's channels in vectors, an output row per work item. In fp16 the
// casts beside the copies and the pool are folded into them: the input transpose converts f32
// planes to interleaved f16 (fcvtn, st3), the pool rounds its result to f16 as it stores it.
// A 16 x 16 transpose (@transposes below: a convolution's NHWC result to NCHW) moves square
// tiles through registers (4 x 4 in f32: four vector loads, two rounds of zip1/zip2, four
// vector stores; 8 x 8 in f16, the f32 result's cast folded in: the tiles widen, fcvtl).
// RUN: %f16c compile %models/cnn_small.tosa.mlir --target=aarch64 --precision=fp32 --emit=asm | FileCheck %s
// RUN: %f16c compile %models/cnn_small.tosa.mlir --target=aarch64 --accumulate=f16 --emit=asm | FileCheck %s --check-prefix=ACC16
// CHECK-LABEL: f16c_k1_conv2d_pad_a:
// CHECK: ldp q{{[0-9]+}}, q{{[0-9]+}}, [x{{[0-9]+}}
// CHECK-LABEL: f16c_k1_conv2d:
// CHECK-DAG: fmla v{{[0-9]+}}.4s, v{{[0-9]+}}.4s, v{{[0-9]+}}.s[3]
// CHECK-DAG: fmla v{{[0-9]+}}.4s, v{{[0-9]+}}.4s, v{{[0-9]+}}.s[1]
// CHECK-DAG: fmla v{{[0-9]+}}.4s, v{{[0-9]+}}.4s, v{{[0-9]+}}.s[2]
// CHECK-LABEL: f16c_k2_avg_pool2d:
// CHECK: fadd v{{[0-9]+}}.4s, v{{[0-9]+}}.4s, v{{[0-9]+}}.4s
// CHECK-LABEL: f16c_k3_conv2d_pad_a:
// RUN: %f16c compile %s --target=aarch64 --precision=fp32 --emit=asm | FileCheck %s --check-prefix=TR
// RUN: %f16c compile %s --target=aarch64 --accumulate=f16 --emit=asm | FileCheck %s --check-prefix=TR16
// TR-LABEL: f16c_k1_transpose_0:
// TR-COUNT-4: ldr q{{[0-9]+}}
// TR: zip1 v{{[0-9]+}}.4s, v{{[0-9]+}}.4s, v{{[0-9]+}}.4s
// TR: zip2 v{{[0-9]+}}.4s, v{{[0-9]+}}.4s, v{{[0-9]+}}.4s
// TR16-LABEL: f16c_k2_transpose_0:
// TR16: zip1 v{{[0-9]+}}.8h, v{{[0-9]+}}.8h, v{{[0-9]+}}.8h
// TR16: fcvtl v{{[0-9]+}}.4s, v{{[0-9]+}}.4h
// The fp16-accumulating tile takes its A values from lanes too; its ReLU (a clamp whose upper
// bound, FLT_MAX, f16 rounds to infinity) compares in half lanes.
// ACC16-LABEL: f16c_k0_transpose_0:
// ACC16: fcvtn2 v{{[0-9]+}}.8h, v{{[0-9]+}}.4s
// ACC16: st3 { v{{[0-9]+}}.8h, v{{[0-9]+}}.8h, v{{[0-9]+}}.8h }
// ACC16-LABEL: f16c_k1_conv2d:
// ACC16-DAG: fmla v{{[0-9]+}}.8h, v{{[0-9]+}}.8h, v{{[0-9]+}}.h[2]
// ACC16-DAG: fmla v{{[0-9]+}}.8h, v{{[0-9]+}}.8h, v{{[0-9]+}}.h[7]
// ACC16-DAG: fcmge v{{[0-9]+}}.8h, v{{[0-9]+}}.8h, #0.0
// ACC16-LABEL: f16c_k2_avg_pool2d:
// ACC16: fcvtn v{{[0-9]+}}.4h, v{{[0-9]+}}.4s

func.func @transposes(%x: tensor<1x4x4x16xf32>) -> tensor<1x16x4x4xf32> {
  %w = "tosa.const"() <{values = dense<0.5> : tensor<16x1x1x16xf32>}> : () -> tensor<16x1x1x16xf32>
  %b = "tosa.const"() <{values = dense<0.25> : tensor<16xf32>}> : () -> tensor<16xf32>
  %z = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %c = tosa.conv2d %x, %w, %b, %z, %z {acc_type = f32, dilation = array<i64: 1, 1>, pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 1, 1>} : (tensor<1x4x4x16xf32>, tensor<16x1x1x16xf32>, tensor<16xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x4x4x16xf32>
  %t = tosa.transpose %c {perms = array<i32: 0, 3, 1, 2>} : (tensor<1x4x4x16xf32>) -> tensor<1x16x4x4xf32>
  return %t : tensor<1x16x4x4xf32>
}
