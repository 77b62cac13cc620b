// --accumulate=f16: fp16 matmuls and convolutions may accumulate in fp16, a fast mode outside
// the numeric contract. insert-casts records it (f16c.acc_type = f16 on the matmul, TOSA's
// acc_type = f16 on the conv: still valid TOSA), the report marks the ops as less accurate, and
// the AArch64 micro-kernel runs it as 8-lane fp16 FMLA instead of FMLAL into f32. The default
// keeps f32 accumulation.
// RUN: %f16c compile %s --target=aarch64 --precision=fp16 --accumulate=f16 --emit=asm | FileCheck %s --check-prefix=FAST
// RUN: %f16c compile %s --target=aarch64 --precision=fp16 --emit=asm | FileCheck %s --check-prefix=EXACT
// RUN: %f16c compile %s --target=aarch64 --precision=fp16 --accumulate=f16 --emit=report | FileCheck %s --check-prefix=REPORT
// RUN: %f16c compile %s --target=aarch64 --precision=fp16 --emit=report | FileCheck %s --check-prefix=NOREPORT
// RUN: %f16c compile %s --target=aarch64 --precision=fp16 --accumulate=f16 --emit=mlir -o %t.mlir
// RUN: FileCheck %s --check-prefix=MLIR < %t.mlir
// RUN: mlir-opt %t.mlir -o /dev/null
// RUN: %f16c run %s --target=aarch64 --precision=fp16 --accumulate=f16 --input %inputs/x_1x8x8x8_f32.npy | FileCheck %s --check-prefix=RAN
// A row's eight A values (k = 8) are one load, each FMLA/FMLAL taking its value from a lane.
// FAST: fmla v{{[0-9]+}}.8h, v{{[0-9]+}}.8h, v{{[0-9]+}}.h[{{[0-7]}}]
// FAST: fmla v{{[0-9]+}}.8h, v{{[0-9]+}}.8h, v{{[0-9]+}}.h[7]
// FAST-NOT: fmlal
// EXACT: fmlal
// EXACT: fmlal v{{[0-9]+}}.4s, v{{[0-9]+}}.4h, v{{[0-9]+}}.h[7]
// EXACT-NOT: fmla v{{[0-9]+}}.8h
// REPORT: tosa.conv2d {{.*}} f16 f16
// REPORT: less accurate: 2 contraction(s) accumulate in f16
// NOREPORT-NOT: less accurate
// MLIR: tosa.conv2d {{.*}}acc_type = f16
// MLIR: tosa.matmul {{.*}}f16c.acc_type = f16
// RAN: result #0: tensor<1x8x8x8xf32>
func.func @f(%x: tensor<1x8x8x8xf32>) -> tensor<1x8x8x8xf32> {
  %w = "tosa.const"() <{values = dense<[[[[0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8]]], [[[0.2, 0.1, 0.0, 0.1, 0.2, 0.3, 0.4, 0.5]]], [[[0.3, 0.3, 0.3, 0.3, 0.3, 0.3, 0.3, 0.3]]], [[[0.4, 0.1, 0.4, 0.1, 0.4, 0.1, 0.4, 0.1]]], [[[0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5]]], [[[0.6, 0.0, 0.6, 0.0, 0.6, 0.0, 0.6, 0.0]]], [[[0.7, 0.7, 0.0, 0.0, 0.7, 0.7, 0.0, 0.0]]], [[[0.8, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7]]]]> : tensor<8x1x1x8xf32>}> : () -> tensor<8x1x1x8xf32>
  %b = "tosa.const"() <{values = dense<0.0> : tensor<8xf32>}> : () -> tensor<8xf32>
  %z = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %w2 = "tosa.const"() <{values = dense<[[[0.5, -0.5, 0.25, 1.0, 0.0, 0.75, -0.25, 0.125], [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8], [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0], [0.0, 0.5, 0.0, 0.5, 0.0, 0.5, 0.0, 0.5], [0.3, 0.1, 0.4, 0.1, 0.5, 0.9, 0.2, 0.6], [0.2, 0.7, 0.1, 0.8, 0.2, 0.8, 0.1, 0.8], [0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2], [0.25, 0.25, 0.25, 0.25, 0.5, 0.5, 0.5, 0.5]]]> : tensor<1x8x8xf32>}> : () -> tensor<1x8x8xf32>
  %c = tosa.conv2d %x, %w, %b, %z, %z {acc_type = f32, dilation = array<i64: 1, 1>, pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 1, 1>} : (tensor<1x8x8x8xf32>, tensor<8x1x1x8xf32>, tensor<8xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x8x8x8xf32>
  %s = tosa.const_shape {values = dense<[1, 64, 8]> : tensor<3xindex>} : () -> !tosa.shape<3>
  %r = tosa.reshape %c, %s : (tensor<1x8x8x8xf32>, !tosa.shape<3>) -> tensor<1x64x8xf32>
  %m = tosa.matmul %r, %w2, %z, %z : (tensor<1x64x8xf32>, tensor<1x8x8xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x64x8xf32>
  %s2 = tosa.const_shape {values = dense<[1, 8, 8, 8]> : tensor<4xindex>} : () -> !tosa.shape<4>
  %o = tosa.reshape %m, %s2 : (tensor<1x64x8xf32>, !tosa.shape<4>) -> tensor<1x8x8x8xf32>
  return %o : tensor<1x8x8x8xf32>
}
