// A weight computed at run time with depth padding is refused (a run-time inf would meet the
// padding's zeros, which the specification skips).
// RUN: not %f16c run %s --function=runtime_weight --input %inputs/x_1x3x2x2x1_f32.npy 2>&1 | FileCheck %s --check-prefix=RT
// RT: conv3d-runtime-weight.mlir:[[@LINE+3]]:{{[0-9]+}}: error: 'tosa.conv3d' cannot be lowered: depth padding with a weight that may hold an inf or a NaN
func.func @runtime_weight(%x: tensor<1x3x2x2x1xf32>) -> tensor<1x3x1x1x1xf32> {
  %z = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %0 = tosa.conv3d %x, %x, %z, %z, %z {acc_type = f32, dilation = array<i64: 1, 1, 1>, pad = array<i64: 1, 1, 0, 0, 0, 0>, stride = array<i64: 1, 1, 1>} : (tensor<1x3x2x2x1xf32>, tensor<1x3x2x2x1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x3x1x1x1xf32>
  return %0 : tensor<1x3x1x1x1xf32>
}
