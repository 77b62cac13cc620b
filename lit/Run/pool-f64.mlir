// Pooling in f64 on the x86-64 JIT (issue 14: it panicked, "f64 has no four-lane load"): the
// four-lane loop is only emitted for f32-domain windows; the f64 window gives the reference's
// bits.
// RUN: %f16c run %s --function=max --input %inputs/f64_1x4x4x8.npy --output %t.max.jit.npy
// RUN: %f16c run %s --function=max --target=reference --input %inputs/f64_1x4x4x8.npy --output %t.max.ref.npy
// RUN: cmp %t.max.jit.npy %t.max.ref.npy
// RUN: %f16c run %s --function=avg --input %inputs/f64_1x4x4x8.npy --output %t.avg.jit.npy
// RUN: %f16c run %s --function=avg --target=reference --input %inputs/f64_1x4x4x8.npy --output %t.avg.ref.npy
// RUN: cmp %t.avg.jit.npy %t.avg.ref.npy
// RUN: %f16c run %s --function=avg --input %inputs/f64_1x4x4x8.npy | FileCheck %s
// CHECK: result #0: tensor<1x4x4x8xf64> = [
func.func @max(%x: tensor<1x4x4x8xf64>) -> tensor<1x2x2x8xf64> {
  %0 = tosa.max_pool2d %x {kernel = array<i64: 2, 2>, stride = array<i64: 2, 2>, pad = array<i64: 0, 0, 0, 0>} : (tensor<1x4x4x8xf64>) -> tensor<1x2x2x8xf64>
  return %0 : tensor<1x2x2x8xf64>
}
func.func @avg(%x: tensor<1x4x4x8xf64>) -> tensor<1x4x4x8xf64> {
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf64>}> : () -> tensor<1xf64>
  %0 = tosa.avg_pool2d %x, %zp, %zp {acc_type = f32, kernel = array<i64: 3, 3>, stride = array<i64: 1, 1>, pad = array<i64: 1, 1, 1, 1>} : (tensor<1x4x4x8xf64>, tensor<1xf64>, tensor<1xf64>) -> tensor<1x4x4x8xf64>
  return %0 : tensor<1x4x4x8xf64>
}
