// torch-mlir's gather indices for a bilinear upsampling: four coordinate vectors tiled to the
// output's size, concatenated along a last axis of 4, flattened, multiplied by the strides and
// summed along that axis. Canonicalize makes the index a sum of the vectors times their
// strides, each read as a broadcast (no tile, concat or reduction), then the reshape.
// RUN: %f16c opt %s -split-input-file --canonicalize | FileCheck %s
// CHECK-LABEL: func.func @index_sum
// CHECK-NOT: tosa.concat
// CHECK-NOT: tosa.reduce_sum
// CHECK-NOT: tosa.tile
// CHECK: dense<80> : tensor<1x1x1x1x1xi32>
// CHECK: %[[C:.*]] = tosa.mul %arg0, %{{.*}}, %{{.*}} : (tensor<1x3x1x1x1xi32>, tensor<1x1x1x1x1xi32>, tensor<1xi8>) -> tensor<1x3x1x1x1xi32>
// CHECK: dense<8> : tensor<1x1x1x1x1xi32>
// CHECK: %[[Y:.*]] = tosa.mul %arg1, %{{.*}}, %{{.*}} : (tensor<1x1x10x1x1xi32>, tensor<1x1x1x1x1xi32>, tensor<1xi8>) -> tensor<1x1x10x1x1xi32>
// CHECK: %[[CY:.*]] = tosa.add %[[C]], %[[Y]] : (tensor<1x3x1x1x1xi32>, tensor<1x1x10x1x1xi32>) -> tensor<1x3x10x1x1xi32>
// The stride of one multiplies by nothing.
// CHECK-NOT: tosa.mul
// CHECK: %[[S:.*]] = tosa.add %[[CY]], %arg2 : (tensor<1x3x10x1x1xi32>, tensor<1x1x1x8x1xi32>) -> tensor<1x3x10x8x1xi32>
// CHECK: tosa.reshape %[[S]], %{{.*}} : (tensor<1x3x10x8x1xi32>, !tosa.shape<2>) -> tensor<240x1xi32>
func.func @index_sum(%c: tensor<1x3x1x1x1xi32>, %y: tensor<1x1x10x1x1xi32>, %x: tensor<1x1x1x8x1xi32>) -> tensor<240x1xi32> {
  %strides = "tosa.const"() <{values = dense<[[80, 8, 1]]> : tensor<1x3xi32>}> : () -> tensor<1x3xi32>
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %mc = tosa.const_shape {values = dense<[1, 1, 10, 8, 1]> : tensor<5xindex>} : () -> !tosa.shape<5>
  %my = tosa.const_shape {values = dense<[1, 3, 1, 8, 1]> : tensor<5xindex>} : () -> !tosa.shape<5>
  %mx = tosa.const_shape {values = dense<[1, 3, 10, 1, 1]> : tensor<5xindex>} : () -> !tosa.shape<5>
  %flat = tosa.const_shape {values = dense<[240, 3]> : tensor<2xindex>} : () -> !tosa.shape<2>
  %tc = tosa.tile %c, %mc : (tensor<1x3x1x1x1xi32>, !tosa.shape<5>) -> tensor<1x3x10x8x1xi32>
  %ty = tosa.tile %y, %my : (tensor<1x1x10x1x1xi32>, !tosa.shape<5>) -> tensor<1x3x10x8x1xi32>
  %tx = tosa.tile %x, %mx : (tensor<1x1x1x8x1xi32>, !tosa.shape<5>) -> tensor<1x3x10x8x1xi32>
  %cat = tosa.concat %tc, %ty, %tx {axis = 4 : i32} : (tensor<1x3x10x8x1xi32>, tensor<1x3x10x8x1xi32>, tensor<1x3x10x8x1xi32>) -> tensor<1x3x10x8x3xi32>
  %r = tosa.reshape %cat, %flat : (tensor<1x3x10x8x3xi32>, !tosa.shape<2>) -> tensor<240x3xi32>
  %m = tosa.mul %r, %strides, %shift : (tensor<240x3xi32>, tensor<1x3xi32>, tensor<1xi8>) -> tensor<240x3xi32>
  %s = tosa.reduce_sum %m {axis = 1 : i32} : (tensor<240x3xi32>) -> tensor<240x1xi32>
  return %s : tensor<240x1xi32>
}

// -----

// A float concat is summed in index order by the reduction: it stays.
// CHECK-LABEL: func.func @float_sum_stays
// CHECK: tosa.concat
// CHECK: tosa.reduce_sum
func.func @float_sum_stays(%a: tensor<4x1xf32>, %b: tensor<4x1xf32>) -> tensor<4x1xf32> {
  %strides = "tosa.const"() <{values = dense<[[2.0, 1.0]]> : tensor<1x2xf32>}> : () -> tensor<1x2xf32>
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %cat = tosa.concat %a, %b {axis = 1 : i32} : (tensor<4x1xf32>, tensor<4x1xf32>) -> tensor<4x2xf32>
  %m = tosa.mul %cat, %strides, %shift : (tensor<4x2xf32>, tensor<1x2xf32>, tensor<1xi8>) -> tensor<4x2xf32>
  %s = tosa.reduce_sum %m {axis = 1 : i32} : (tensor<4x2xf32>) -> tensor<4x1xf32>
  return %s : tensor<4x1xf32>
}

// -----

// Folding does not expand: a tile of 64 constants to 65,536 values stays an op (cheaper read
// as a broadcast than stored); one to 4,096 values folds.
// CHECK-LABEL: func.func @expansion
// CHECK: tosa.tile %{{.*}} -> tensor<1x16x64x64x1xi32>
// CHECK-NOT: tosa.tile
func.func @expansion() -> (tensor<1x16x64x64x1xi32>, tensor<1x1x64x64x1xi32>) {
  %v = "tosa.const"() <{values = dense<7> : tensor<1x1x1x64x1xi32>}> : () -> tensor<1x1x1x64x1xi32>
  %big = tosa.const_shape {values = dense<[1, 16, 64, 1, 1]> : tensor<5xindex>} : () -> !tosa.shape<5>
  %small = tosa.const_shape {values = dense<[1, 1, 64, 1, 1]> : tensor<5xindex>} : () -> !tosa.shape<5>
  %a = tosa.tile %v, %big : (tensor<1x1x1x64x1xi32>, !tosa.shape<5>) -> tensor<1x16x64x64x1xi32>
  %b = tosa.tile %v, %small : (tensor<1x1x1x64x1xi32>, !tosa.shape<5>) -> tensor<1x1x64x64x1xi32>
  return %a, %b : tensor<1x16x64x64x1xi32>, tensor<1x1x64x64x1xi32>
}
