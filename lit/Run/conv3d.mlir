// tosa.conv3d, values computed by hand from the TOSA 1.0 pseudo-code. The input holds planes
// [1 2 3 4], [5 6 7 8], [9 10 11 12] (depth 3, 2x2); the weight taps two planes (1, then 10),
// with one plane of depth padding in front, so output plane 0 sees only the padding and plane 0.
// f16c lowers a conv3d to one conv2d over depth and channels merged (lit/Lower/kernels.mlir);
// the JIT on one and two threads, the reference, the LLVM x86-64 backend, AArch64 under qemu and
// fp16 (every value here exact) all print the same.
// RUN: %f16c run %s --function=hand --input %inputs/x_1x3x2x2x1_f32.npy | FileCheck %s --check-prefix=HAND
// RUN: %f16c run %s --function=hand --input %inputs/x_1x3x2x2x1_f32.npy --threads=2 | FileCheck %s --check-prefix=HAND
// RUN: %f16c run %s --function=hand --input %inputs/x_1x3x2x2x1_f32.npy --target=reference | FileCheck %s --check-prefix=HAND
// RUN: %f16c run %s --function=hand --input %inputs/x_1x3x2x2x1_f32.npy --backend=llvm | FileCheck %s --check-prefix=HAND
// RUN: %f16c run %s --function=hand --input %inputs/x_1x3x2x2x1_f32.npy --target=aarch64 | FileCheck %s --check-prefix=HAND
// RUN: %f16c run %s --function=hand --input %inputs/x_1x3x2x2x1_f32.npy --precision=fp16 | FileCheck %s --check-prefix=HAND
// RUN: %f16c compile %s --function=hand --target=sm_70 --emit=kernels | FileCheck %s --check-prefix=SM70
// HAND: result #0: tensor<1x3x2x2x1xf32> = [10.5, 20.5, 30.5, 40.5, 51.5, 62.5, 73.5, 84.5, 95.5, 106.5, 117.5, 128.5]
// SM70: gather
// SM70: conv2d
func.func @hand(%x: tensor<1x3x2x2x1xf32>) -> tensor<1x3x2x2x1xf32> {
  %w = "tosa.const"() <{values = dense<[[[[[1.0]]], [[[10.0]]]]]> : tensor<1x2x1x1x1xf32>}> : () -> tensor<1x2x1x1x1xf32>
  %b = "tosa.const"() <{values = dense<0.5> : tensor<1xf32>}> : () -> tensor<1xf32>
  %z = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %0 = tosa.conv3d %x, %w, %b, %z, %z {acc_type = f32, dilation = array<i64: 1, 1, 1>, pad = array<i64: 1, 0, 0, 0, 0, 0>, stride = array<i64: 1, 1, 1>} : (tensor<1x3x2x2x1xf32>, tensor<1x2x1x1x1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x3x2x2x1xf32>
  return %0 : tensor<1x3x2x2x1xf32>
}

// The same on i8 with an input zero point of 1: the padding plane holds the zero point and adds
// nothing; the input counts 0..11 after the zero point.
// RUN: %f16c run %s --function=int --input %inputs/x_1x3x2x2x1_f32.npy | FileCheck %s --check-prefix=INT
// RUN: %f16c run %s --function=int --input %inputs/x_1x3x2x2x1_f32.npy --target=reference | FileCheck %s --check-prefix=INT
// RUN: %f16c run %s --function=int --input %inputs/x_1x3x2x2x1_f32.npy --backend=llvm | FileCheck %s --check-prefix=INT
// INT: result #0: tensor<1x3x2x2x1xi32> = [0, 10, 20, 30, 40, 51, 62, 73, 84, 95, 106, 117]
func.func @int(%x: tensor<1x3x2x2x1xf32>) -> tensor<1x3x2x2x1xi32> {
  %q = tosa.cast %x : (tensor<1x3x2x2x1xf32>) -> tensor<1x3x2x2x1xi8>
  %w = "tosa.const"() <{values = dense<[[[[[1]]], [[[10]]]]]> : tensor<1x2x1x1x1xi8>}> : () -> tensor<1x2x1x1x1xi8>
  %b = "tosa.const"() <{values = dense<0> : tensor<1xi32>}> : () -> tensor<1xi32>
  %xz = "tosa.const"() <{values = dense<1> : tensor<1xi8>}> : () -> tensor<1xi8>
  %wz = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %0 = tosa.conv3d %q, %w, %b, %xz, %wz {acc_type = i32, dilation = array<i64: 1, 1, 1>, pad = array<i64: 1, 0, 0, 0, 0, 0>, stride = array<i64: 1, 1, 1>} : (tensor<1x3x2x2x1xi8>, tensor<1x2x1x1x1xi8>, tensor<1xi32>, tensor<1xi8>, tensor<1xi8>) -> tensor<1x3x2x2x1xi32>
  return %0 : tensor<1x3x2x2x1xi32>
}
