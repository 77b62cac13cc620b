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

// @h: a 1×1 convolution (bf16 pairs on a CPU with AVX512-BF16, k = 8) whose epilogue adds
// another convolution's result (read contiguously: one multiplication per row for its
// address), clamps to bounds bf16 does not hold (−0.1, 0.3: bf16 values clamp to the rounded
// bounds, with no rounding after), scales past f32's range (inf) and clamps to 3.0e38 (which
// bf16 rounds to 2.99e38). Bottom and right-edge tiles as above.
// RUN: %f16c run %s --function=h --target=reference --precision=bf16 --input %inputs/x_1x8x8x8_f32.npy --output %t.h.ref.bf16.npy
// RUN: %f16c run %s --function=h --backend=llvm --cpu=x86-64-v4 --precision=bf16 --input %inputs/x_1x8x8x8_f32.npy --output %t.h.x86-64-v4.bf16.npy
// RUN: cmp %t.h.x86-64-v4.bf16.npy %t.h.ref.bf16.npy
// RUN: %f16c run %s --function=h --backend=llvm --cpu=native --precision=bf16 --input %inputs/x_1x8x8x8_f32.npy --output %t.h.native.bf16.npy
// RUN: cmp %t.h.native.bf16.npy %t.h.ref.bf16.npy
// RUN: %f16c run %s --function=h --backend=llvm --cpu=x86-64-v3 --precision=bf16 --input %inputs/x_1x8x8x8_f32.npy --output %t.h.x86-64-v3.bf16.npy
// RUN: cmp %t.h.x86-64-v3.bf16.npy %t.h.ref.bf16.npy
// RUN: %f16c run %s --function=h --precision=bf16 --no-cache --input %inputs/x_1x8x8x8_f32.npy --output %t.h.jit.bf16.npy
// RUN: cmp %t.h.jit.bf16.npy %t.h.ref.bf16.npy
// RUN: %f16c run %s --function=h --target=reference --precision=fp16 --input %inputs/x_1x8x8x8_f32.npy --output %t.h.ref.fp16.npy
// RUN: %f16c run %s --function=h --backend=llvm --cpu=native --precision=fp16 --input %inputs/x_1x8x8x8_f32.npy --output %t.h.native.fp16.npy
// RUN: cmp %t.h.native.fp16.npy %t.h.ref.fp16.npy
// RUN: %f16c run %s --function=h --target=reference --precision=fp32 --input %inputs/x_1x8x8x8_f32.npy --output %t.h.ref.fp32.npy
// RUN: %f16c run %s --function=h --backend=llvm --cpu=native --precision=fp32 --input %inputs/x_1x8x8x8_f32.npy --output %t.h.native.fp32.npy
// RUN: cmp %t.h.native.fp32.npy %t.h.ref.fp32.npy
func.func @h(%x: tensor<1x8x8x8xf32>) -> tensor<1x8x8x40xf32> {
  %w1 = "tosa.const"() <{values = dense<[-0.875, -0.375, 0.125, 0.625, -0.6875, -0.1875, 0.3125, 0.8125, -0.5, 0.0, 0.5, -0.8125, -0.3125, 0.1875, 0.6875, -0.625, -0.125, 0.375, 0.875, -0.4375, 0.0625, 0.5625, -0.75, -0.25, 0.25, 0.75, -0.5625, -0.0625, 0.4375, -0.875, -0.375, 0.125, 0.625, -0.6875, -0.1875, 0.3125, 0.8125, -0.5, 0.0, 0.5, -0.8125, -0.3125, 0.1875, 0.6875, -0.625, -0.125, 0.375, 0.875, -0.4375, 0.0625, 0.5625, -0.75, -0.25, 0.25, 0.75, -0.5625, -0.0625, 0.4375, -0.875, -0.375, 0.125, 0.625, -0.6875, -0.1875, 0.3125, 0.8125, -0.5, 0.0, 0.5, -0.8125, -0.3125, 0.1875, 0.6875, -0.625, -0.125, 0.375, 0.875, -0.4375, 0.0625, 0.5625, -0.75, -0.25, 0.25, 0.75, -0.5625, -0.0625, 0.4375, -0.875, -0.375, 0.125, 0.625, -0.6875, -0.1875, 0.3125, 0.8125, -0.5, 0.0, 0.5, -0.8125, -0.3125, 0.1875, 0.6875, -0.625, -0.125, 0.375, 0.875, -0.4375, 0.0625, 0.5625, -0.75, -0.25, 0.25, 0.75, -0.5625, -0.0625, 0.4375, -0.875, -0.375, 0.125, 0.625, -0.6875, -0.1875, 0.3125, 0.8125, -0.5, 0.0, 0.5, -0.8125, -0.3125, 0.1875, 0.6875, -0.625, -0.125, 0.375, 0.875, -0.4375, 0.0625, 0.5625, -0.75, -0.25, 0.25, 0.75, -0.5625, -0.0625, 0.4375, -0.875, -0.375, 0.125, 0.625, -0.6875, -0.1875, 0.3125, 0.8125, -0.5, 0.0, 0.5, -0.8125, -0.3125, 0.1875, 0.6875, -0.625, -0.125, 0.375, 0.875, -0.4375, 0.0625, 0.5625, -0.75, -0.25, 0.25, 0.75, -0.5625, -0.0625, 0.4375, -0.875, -0.375, 0.125, 0.625, -0.6875, -0.1875, 0.3125, 0.8125, -0.5, 0.0, 0.5, -0.8125, -0.3125, 0.1875, 0.6875, -0.625, -0.125, 0.375, 0.875, -0.4375, 0.0625, 0.5625, -0.75, -0.25, 0.25, 0.75, -0.5625, -0.0625, 0.4375, -0.875, -0.375, 0.125, 0.625, -0.6875, -0.1875, 0.3125, 0.8125, -0.5, 0.0, 0.5, -0.8125, -0.3125, 0.1875, 0.6875, -0.625, -0.125, 0.375, 0.875, -0.4375, 0.0625, 0.5625, -0.75, -0.25, 0.25, 0.75, -0.5625, -0.0625, 0.4375, -0.875, -0.375, 0.125, 0.625, -0.6875, -0.1875, 0.3125, 0.8125, -0.5, 0.0, 0.5, -0.8125, -0.3125, 0.1875, 0.6875, -0.625, -0.125, 0.375, 0.875, -0.4375, 0.0625, 0.5625, -0.75, -0.25, 0.25, 0.75, -0.5625, -0.0625, 0.4375, -0.875, -0.375, 0.125, 0.625, -0.6875, -0.1875, 0.3125, 0.8125, -0.5, 0.0, 0.5, -0.8125, -0.3125, 0.1875, 0.6875, -0.625, -0.125, 0.375, 0.875, -0.4375, 0.0625, 0.5625, -0.75, -0.25, 0.25, 0.75, -0.5625, -0.0625, 0.4375, -0.875, -0.375, 0.125, 0.625, -0.6875, -0.1875, 0.3125, 0.8125, -0.5, 0.0, 0.5, -0.8125, -0.3125, 0.1875, 0.6875, -0.625, -0.125, 0.375, 0.875, -0.4375, 0.0625, 0.5625, -0.75, -0.25, 0.25, 0.75, -0.5625, -0.0625, 0.4375, -0.875]> : tensor<320xf32>}> : () -> tensor<320xf32>
  %w2 = "tosa.const"() <{values = dense<[-0.46875, 0.21875, -0.0625, -0.34375, 0.34375, 0.0625, -0.21875, 0.46875, 0.1875, -0.09375, -0.375, 0.3125, 0.03125, -0.25, 0.4375, 0.15625, -0.125, -0.40625, 0.28125, 0.0, -0.28125, 0.40625, 0.125, -0.15625, -0.4375, 0.25, -0.03125, -0.3125, 0.375, 0.09375, -0.1875, -0.46875, 0.21875, -0.0625, -0.34375, 0.34375, 0.0625, -0.21875, 0.46875, 0.1875, -0.09375, -0.375, 0.3125, 0.03125, -0.25, 0.4375, 0.15625, -0.125, -0.40625, 0.28125, 0.0, -0.28125, 0.40625, 0.125, -0.15625, -0.4375, 0.25, -0.03125, -0.3125, 0.375, 0.09375, -0.1875, -0.46875, 0.21875, -0.0625, -0.34375, 0.34375, 0.0625, -0.21875, 0.46875, 0.1875, -0.09375, -0.375, 0.3125, 0.03125, -0.25, 0.4375, 0.15625, -0.125, -0.40625, 0.28125, 0.0, -0.28125, 0.40625, 0.125, -0.15625, -0.4375, 0.25, -0.03125, -0.3125, 0.375, 0.09375, -0.1875, -0.46875, 0.21875, -0.0625, -0.34375, 0.34375, 0.0625, -0.21875, 0.46875, 0.1875, -0.09375, -0.375, 0.3125, 0.03125, -0.25, 0.4375, 0.15625, -0.125, -0.40625, 0.28125, 0.0, -0.28125, 0.40625, 0.125, -0.15625, -0.4375, 0.25, -0.03125, -0.3125, 0.375, 0.09375, -0.1875, -0.46875, 0.21875, -0.0625, -0.34375, 0.34375, 0.0625, -0.21875, 0.46875, 0.1875, -0.09375, -0.375, 0.3125, 0.03125, -0.25, 0.4375, 0.15625, -0.125, -0.40625, 0.28125, 0.0, -0.28125, 0.40625, 0.125, -0.15625, -0.4375, 0.25, -0.03125, -0.3125, 0.375, 0.09375, -0.1875, -0.46875, 0.21875, -0.0625, -0.34375, 0.34375, 0.0625, -0.21875, 0.46875, 0.1875, -0.09375, -0.375, 0.3125, 0.03125, -0.25, 0.4375, 0.15625, -0.125, -0.40625, 0.28125, 0.0, -0.28125, 0.40625, 0.125, -0.15625, -0.4375, 0.25, -0.03125, -0.3125, 0.375, 0.09375, -0.1875, -0.46875, 0.21875, -0.0625, -0.34375, 0.34375, 0.0625, -0.21875, 0.46875, 0.1875, -0.09375, -0.375, 0.3125, 0.03125, -0.25, 0.4375, 0.15625, -0.125, -0.40625, 0.28125, 0.0, -0.28125, 0.40625, 0.125, -0.15625, -0.4375, 0.25, -0.03125, -0.3125, 0.375, 0.09375, -0.1875, -0.46875, 0.21875, -0.0625, -0.34375, 0.34375, 0.0625, -0.21875, 0.46875, 0.1875, -0.09375, -0.375, 0.3125, 0.03125, -0.25, 0.4375, 0.15625, -0.125, -0.40625, 0.28125, 0.0, -0.28125, 0.40625, 0.125, -0.15625, -0.4375, 0.25, -0.03125, -0.3125, 0.375, 0.09375, -0.1875, -0.46875, 0.21875, -0.0625, -0.34375, 0.34375, 0.0625, -0.21875, 0.46875, 0.1875, -0.09375, -0.375, 0.3125, 0.03125, -0.25, 0.4375, 0.15625, -0.125, -0.40625, 0.28125, 0.0, -0.28125, 0.40625, 0.125, -0.15625, -0.4375, 0.25, -0.03125, -0.3125, 0.375, 0.09375, -0.1875, -0.46875, 0.21875, -0.0625, -0.34375, 0.34375, 0.0625, -0.21875, 0.46875, 0.1875, -0.09375, -0.375, 0.3125, 0.03125, -0.25, 0.4375, 0.15625, -0.125, -0.40625, 0.28125, 0.0, -0.28125, 0.40625, 0.125, -0.15625, -0.4375, 0.25, -0.03125, -0.3125, 0.375, 0.09375, -0.1875, -0.46875, 0.21875, -0.0625, -0.34375, 0.34375, 0.0625, -0.21875, 0.46875, 0.1875, -0.09375]> : tensor<320xf32>}> : () -> tensor<320xf32>
  %ws = tosa.const_shape {values = dense<[40, 1, 1, 8]> : tensor<4xindex>} : () -> !tosa.shape<4>
  %w1r = tosa.reshape %w1, %ws : (tensor<320xf32>, !tosa.shape<4>) -> tensor<40x1x1x8xf32>
  %w2r = tosa.reshape %w2, %ws : (tensor<320xf32>, !tosa.shape<4>) -> tensor<40x1x1x8xf32>
  %b = "tosa.const"() <{values = dense<[-0.625, 0.25, -0.25, 0.625, 0.125, -0.375, 0.5, 0.0, -0.5, 0.375, -0.125, -0.625, 0.25, -0.25, 0.625, 0.125, -0.375, 0.5, 0.0, -0.5, 0.375, -0.125, -0.625, 0.25, -0.25, 0.625, 0.125, -0.375, 0.5, 0.0, -0.5, 0.375, -0.125, -0.625, 0.25, -0.25, 0.625, 0.125, -0.375, 0.5]> : tensor<40xf32>}> : () -> tensor<40xf32>
  %z = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %c1 = tosa.conv2d %x, %w1r, %b, %z, %z {acc_type = f32, dilation = array<i64: 1, 1>, pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 1, 1>} : (tensor<1x8x8x8xf32>, tensor<40x1x1x8xf32>, tensor<40xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x8x8x40xf32>
  %c2 = tosa.conv2d %x, %w2r, %b, %z, %z {acc_type = f32, dilation = array<i64: 1, 1>, pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 1, 1>} : (tensor<1x8x8x8xf32>, tensor<40x1x1x8xf32>, tensor<40xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x8x8x40xf32>
  %s = tosa.add %c2, %c1 : (tensor<1x8x8x40xf32>, tensor<1x8x8x40xf32>) -> tensor<1x8x8x40xf32>
  %r1 = tosa.clamp %s {max_val = 0.3 : f32, min_val = -0.1 : f32} : (tensor<1x8x8x40xf32>) -> tensor<1x8x8x40xf32>
  %k = "tosa.const"() <{values = dense<1.0e+20> : tensor<1x1x1x1xf32>}> : () -> tensor<1x1x1x1xf32>
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %m1 = tosa.mul %r1, %k, %shift : (tensor<1x8x8x40xf32>, tensor<1x1x1x1xf32>, tensor<1xi8>) -> tensor<1x8x8x40xf32>
  %m2 = tosa.mul %m1, %k, %shift : (tensor<1x8x8x40xf32>, tensor<1x1x1x1xf32>, tensor<1xi8>) -> tensor<1x8x8x40xf32>
  %r2 = tosa.clamp %m2 {max_val = 3.0e+38 : f32, min_val = 0.0 : f32} : (tensor<1x8x8x40xf32>) -> tensor<1x8x8x40xf32>
  return %r2 : tensor<1x8x8x40xf32>
}
