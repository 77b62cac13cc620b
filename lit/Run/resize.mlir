// tosa.resize on a 3x3 image, values computed by hand from the TOSA 1.0 pseudo-code, on the
// JIT, the reference interpreter, the LLVM x86-64 backend, and in fp16 (where every value
// here is exact, so the one rounding changes nothing).
// Rows: [1, -2, 0.5], [3, 0.25, -1], [2, 1.5, -0.5]; scale 2/1 (align corners): 5x5.
// RUN: %f16c run %s --function=bilinear --input %inputs/x_1x3x3x1_f32.npy | FileCheck %s --check-prefix=BIL
// RUN: %f16c run %s --function=bilinear --input %inputs/x_1x3x3x1_f32.npy --target=reference | FileCheck %s --check-prefix=BIL
// RUN: %f16c run %s --function=bilinear --input %inputs/x_1x3x3x1_f32.npy --backend=llvm | FileCheck %s --check-prefix=BIL
// RUN: %f16c run %s --function=bilinear --input %inputs/x_1x3x3x1_f32.npy --precision=fp16 --policy=O3 | FileCheck %s --check-prefix=BIL
// RUN: %f16c run %s --function=nearest --input %inputs/x_1x3x3x1_f32.npy | FileCheck %s --check-prefix=NEAR
// RUN: %f16c run %s --function=nearest --input %inputs/x_1x3x3x1_f32.npy --target=reference | FileCheck %s --check-prefix=NEAR
// RUN: %f16c run %s --function=nearest --input %inputs/x_1x3x3x1_f32.npy --backend=llvm | FileCheck %s --check-prefix=NEAR

// BIL: result #0: tensor<1x5x5x1xf32> = [1.0, -0.5, -2.0, -0.75, 0.5, 2.0, 0.5625, -0.875, -0.5625, -0.25, 3.0, 1.625, 0.25, -0.375, -1.0, 2.5, 1.6875, 0.875, 0.0625, -0.75, 2.0, 1.75, 1.5, 0.5, -0.5]
func.func @bilinear(%x: tensor<1x3x3x1xf32>) -> tensor<1x5x5x1xf32> {
  %s = tosa.const_shape {values = dense<[2, 1, 2, 1]> : tensor<4xindex>} : () -> !tosa.shape<4>
  %z = tosa.const_shape {values = dense<0> : tensor<2xindex>} : () -> !tosa.shape<2>
  %0 = tosa.resize %x, %s, %z, %z {mode = BILINEAR} : (tensor<1x3x3x1xf32>, !tosa.shape<4>, !tosa.shape<2>, !tosa.shape<2>) -> tensor<1x5x5x1xf32>
  return %0 : tensor<1x5x5x1xf32>
}

// Half-pixel 2x (scale 4/2, offset -1, border 1, as torch-mlir writes interpolate(scale_factor=2)):
// output x reads input (2x - 1) / 4: r/n = 3/4 or 1/4, so nearest picks the closer pixel.
// NEAR: result #0: tensor<1x6x6x1xf32> = [1.0, 1.0, -2.0, -2.0, 0.5, 0.5, 1.0, 1.0, -2.0, -2.0, 0.5, 0.5, 3.0, 3.0, 0.25, 0.25, -1.0, -1.0, 3.0, 3.0, 0.25, 0.25, -1.0, -1.0, 2.0, 2.0, 1.5, 1.5, -0.5, -0.5, 2.0, 2.0, 1.5, 1.5, -0.5, -0.5]
func.func @nearest(%x: tensor<1x3x3x1xf32>) -> tensor<1x6x6x1xf32> {
  %s = tosa.const_shape {values = dense<[4, 2, 4, 2]> : tensor<4xindex>} : () -> !tosa.shape<4>
  %o = tosa.const_shape {values = dense<-1> : tensor<2xindex>} : () -> !tosa.shape<2>
  %b = tosa.const_shape {values = dense<1> : tensor<2xindex>} : () -> !tosa.shape<2>
  %0 = tosa.resize %x, %s, %o, %b {mode = NEAREST_NEIGHBOR} : (tensor<1x3x3x1xf32>, !tosa.shape<4>, !tosa.shape<2>, !tosa.shape<2>) -> tensor<1x6x6x1xf32>
  return %0 : tensor<1x6x6x1xf32>
}
