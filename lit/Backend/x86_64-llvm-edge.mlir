// Convolutions whose output pixels are not a multiple of the tile's rows (64 pixels; 12-row
// tiles at x86-64-v4, 6 at v3): the bottom tiles finish the rows inside the image a vector at a
// time (bias, ReLU, rounding), as the tiles inside do; where the channels are not a multiple of
// the tile's columns either (@g: 40 channels), the vector the matrix ends in finishes its
// columns inside one at a time, in a loop. The same bits as the reference, in fp16 and bf16,
// on every level.
// RUN: %f16c run %s --function=f --target=reference --precision=bf16 --input %inputs/x_1x8x8x8_f32.npy --output %t.f.ref.bf16.npy
// RUN: %f16c run %s --function=f --backend=llvm --cpu=x86-64-v4 --precision=bf16 --input %inputs/x_1x8x8x8_f32.npy --output %t.f.x86-64-v4.bf16.npy
// RUN: cmp %t.f.x86-64-v4.bf16.npy %t.f.ref.bf16.npy
// RUN: %f16c run %s --function=f --backend=llvm --cpu=native --precision=bf16 --input %inputs/x_1x8x8x8_f32.npy --output %t.f.native.bf16.npy
// RUN: cmp %t.f.native.bf16.npy %t.f.ref.bf16.npy
// RUN: %f16c run %s --function=f --backend=llvm --cpu=x86-64-v3 --precision=bf16 --input %inputs/x_1x8x8x8_f32.npy --output %t.f.x86-64-v3.bf16.npy
// RUN: cmp %t.f.x86-64-v3.bf16.npy %t.f.ref.bf16.npy
// RUN: %f16c run %s --function=f --target=reference --precision=fp16 --input %inputs/x_1x8x8x8_f32.npy --output %t.f.ref.fp16.npy
// RUN: %f16c run %s --function=f --backend=llvm --cpu=native --precision=fp16 --input %inputs/x_1x8x8x8_f32.npy --output %t.f.native.fp16.npy
// RUN: cmp %t.f.native.fp16.npy %t.f.ref.fp16.npy
// RUN: %f16c run %s --function=f --backend=llvm --cpu=x86-64-v3 --precision=fp16 --input %inputs/x_1x8x8x8_f32.npy --output %t.f.x86-64-v3.fp16.npy
// RUN: cmp %t.f.x86-64-v3.fp16.npy %t.f.ref.fp16.npy
// RUN: %f16c run %s --function=g --target=reference --precision=bf16 --input %inputs/x_1x8x8x8_f32.npy --output %t.g.ref.bf16.npy
// RUN: %f16c run %s --function=g --backend=llvm --cpu=x86-64-v4 --precision=bf16 --input %inputs/x_1x8x8x8_f32.npy --output %t.g.x86-64-v4.bf16.npy
// RUN: cmp %t.g.x86-64-v4.bf16.npy %t.g.ref.bf16.npy
// RUN: %f16c run %s --function=g --backend=llvm --cpu=native --precision=bf16 --input %inputs/x_1x8x8x8_f32.npy --output %t.g.native.bf16.npy
// RUN: cmp %t.g.native.bf16.npy %t.g.ref.bf16.npy
// RUN: %f16c run %s --function=g --backend=llvm --cpu=x86-64-v3 --precision=bf16 --input %inputs/x_1x8x8x8_f32.npy --output %t.g.x86-64-v3.bf16.npy
// RUN: cmp %t.g.x86-64-v3.bf16.npy %t.g.ref.bf16.npy
// RUN: %f16c run %s --function=g --target=reference --precision=fp16 --input %inputs/x_1x8x8x8_f32.npy --output %t.g.ref.fp16.npy
// RUN: %f16c run %s --function=g --backend=llvm --cpu=native --precision=fp16 --input %inputs/x_1x8x8x8_f32.npy --output %t.g.native.fp16.npy
// RUN: cmp %t.g.native.fp16.npy %t.g.ref.fp16.npy
// RUN: %f16c run %s --function=g --backend=llvm --cpu=x86-64-v3 --precision=fp16 --input %inputs/x_1x8x8x8_f32.npy --output %t.g.x86-64-v3.fp16.npy
// RUN: cmp %t.g.x86-64-v3.fp16.npy %t.g.ref.fp16.npy
func.func @f(%x: tensor<1x8x8x8xf32>) -> tensor<1x8x8x32xf32> {
  %w1 = "tosa.const"() <{values = dense<[[[[-1.375, 0.375, -0.75, 1.0, -0.125, -1.25, 0.5, -0.625, 1.125, 0.0, -1.125, 0.625, -0.5, 1.25, 0.125, -1.0, 0.75, -0.375, 1.375, 0.25, -0.875, 0.875, -0.25, -1.375, 0.375, -0.75, 1.0, -0.125, -1.25, 0.5, -0.625, 1.125, 0.0, -1.125, 0.625, -0.5, 1.25, 0.125, -1.0, 0.75, -0.375, 1.375, 0.25, -0.875, 0.875, -0.25, -1.375, 0.375, -0.75, 1.0, -0.125, -1.25, 0.5, -0.625, 1.125, 0.0, -1.125, 0.625, -0.5, 1.25, 0.125, -1.0, 0.75, -0.375, 1.375, 0.25, -0.875, 0.875, -0.25, -1.375, 0.375, -0.75]]]]> : tensor<1x1x1x72xf32>}> : () -> tensor<1x1x1x72xf32>
  %s1 = tosa.const_shape {values = dense<[1, 3, 3, 8]> : tensor<4xindex>} : () -> !tosa.shape<4>
  %w3 = tosa.reshape %w1, %s1 : (tensor<1x1x1x72xf32>, !tosa.shape<4>) -> tensor<1x3x3x8xf32>
  %sc = "tosa.const"() <{values = dense<[-0.75, 0.25, -0.5, 0.5, -0.25, 0.75, 0.0, -0.75, 0.25, -0.5, 0.5, -0.25, 0.75, 0.0, -0.75, 0.25, -0.5, 0.5, -0.25, 0.75, 0.0, -0.75, 0.25, -0.5, 0.5, -0.25, 0.75, 0.0, -0.75, 0.25, -0.5, 0.5]> : tensor<32xf32>}> : () -> tensor<32xf32>
  %s2 = tosa.const_shape {values = dense<[32, 1, 1, 1]> : tensor<4xindex>} : () -> !tosa.shape<4>
  %sc4 = tosa.reshape %sc, %s2 : (tensor<32xf32>, !tosa.shape<4>) -> tensor<32x1x1x1xf32>
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %w = tosa.mul %sc4, %w3, %shift : (tensor<32x1x1x1xf32>, tensor<1x3x3x8xf32>, tensor<1xi8>) -> tensor<32x3x3x8xf32>
  %b = "tosa.const"() <{values = dense<[-0.25, 0.0625, -0.1875, 0.125, -0.125, 0.1875, -0.0625, 0.25, 0.0, -0.25, 0.0625, -0.1875, 0.125, -0.125, 0.1875, -0.0625, 0.25, 0.0, -0.25, 0.0625, -0.1875, 0.125, -0.125, 0.1875, -0.0625, 0.25, 0.0, -0.25, 0.0625, -0.1875, 0.125, -0.125]> : tensor<32xf32>}> : () -> tensor<32xf32>
  %z = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %c = tosa.conv2d %x, %w, %b, %z, %z {acc_type = f32, dilation = array<i64: 1, 1>, pad = array<i64: 1, 1, 1, 1>, stride = array<i64: 1, 1>} : (tensor<1x8x8x8xf32>, tensor<32x3x3x8xf32>, tensor<32xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x8x8x32xf32>
  %r = tosa.clamp %c {max_val = 3.0e+38 : f32, min_val = 0.0 : f32} : (tensor<1x8x8x32xf32>) -> tensor<1x8x8x32xf32>
  return %r : tensor<1x8x8x32xf32>
}
func.func @g(%x: tensor<1x8x8x8xf32>) -> tensor<1x8x8x40xf32> {
  %w1 = "tosa.const"() <{values = dense<[[[[-1.375, 0.375, -0.75, 1.0, -0.125, -1.25, 0.5, -0.625, 1.125, 0.0, -1.125, 0.625, -0.5, 1.25, 0.125, -1.0, 0.75, -0.375, 1.375, 0.25, -0.875, 0.875, -0.25, -1.375, 0.375, -0.75, 1.0, -0.125, -1.25, 0.5, -0.625, 1.125, 0.0, -1.125, 0.625, -0.5, 1.25, 0.125, -1.0, 0.75, -0.375, 1.375, 0.25, -0.875, 0.875, -0.25, -1.375, 0.375, -0.75, 1.0, -0.125, -1.25, 0.5, -0.625, 1.125, 0.0, -1.125, 0.625, -0.5, 1.25, 0.125, -1.0, 0.75, -0.375, 1.375, 0.25, -0.875, 0.875, -0.25, -1.375, 0.375, -0.75]]]]> : tensor<1x1x1x72xf32>}> : () -> tensor<1x1x1x72xf32>
  %s1 = tosa.const_shape {values = dense<[1, 3, 3, 8]> : tensor<4xindex>} : () -> !tosa.shape<4>
  %w3 = tosa.reshape %w1, %s1 : (tensor<1x1x1x72xf32>, !tosa.shape<4>) -> tensor<1x3x3x8xf32>
  %sc = "tosa.const"() <{values = dense<[-0.75, 0.25, -0.5, 0.5, -0.25, 0.75, 0.0, -0.75, 0.25, -0.5, 0.5, -0.25, 0.75, 0.0, -0.75, 0.25, -0.5, 0.5, -0.25, 0.75, 0.0, -0.75, 0.25, -0.5, 0.5, -0.25, 0.75, 0.0, -0.75, 0.25, -0.5, 0.5, -0.25, 0.75, 0.0, -0.75, 0.25, -0.5, 0.5, -0.25]> : tensor<40xf32>}> : () -> tensor<40xf32>
  %s2 = tosa.const_shape {values = dense<[40, 1, 1, 1]> : tensor<4xindex>} : () -> !tosa.shape<4>
  %sc4 = tosa.reshape %sc, %s2 : (tensor<40xf32>, !tosa.shape<4>) -> tensor<40x1x1x1xf32>
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %w = tosa.mul %sc4, %w3, %shift : (tensor<40x1x1x1xf32>, tensor<1x3x3x8xf32>, tensor<1xi8>) -> tensor<40x3x3x8xf32>
  %b = "tosa.const"() <{values = dense<[-0.25, 0.0625, -0.1875, 0.125, -0.125, 0.1875, -0.0625, 0.25, 0.0, -0.25, 0.0625, -0.1875, 0.125, -0.125, 0.1875, -0.0625, 0.25, 0.0, -0.25, 0.0625, -0.1875, 0.125, -0.125, 0.1875, -0.0625, 0.25, 0.0, -0.25, 0.0625, -0.1875, 0.125, -0.125, 0.1875, -0.0625, 0.25, 0.0, -0.25, 0.0625, -0.1875, 0.125]> : tensor<40xf32>}> : () -> tensor<40xf32>
  %z = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %c = tosa.conv2d %x, %w, %b, %z, %z {acc_type = f32, dilation = array<i64: 1, 1>, pad = array<i64: 1, 1, 1, 1>, stride = array<i64: 1, 1>} : (tensor<1x8x8x8xf32>, tensor<40x3x3x8xf32>, tensor<40xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x8x8x40xf32>
  %r = tosa.clamp %c {max_val = 3.0e+38 : f32, min_val = 0.0 : f32} : (tensor<1x8x8x40xf32>) -> tensor<1x8x8x40xf32>
  return %r : tensor<1x8x8x40xf32>
}
