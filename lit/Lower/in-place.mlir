// An elementwise kernel writes its output over an input it reads element for element when that
// input dies there (same size, no broadcast): the buffer plan gives both one place. A chain of
// such kernels is one buffer; an input still read later keeps its own.
// RUN: %f16c compile %s --precision=fp32 --emit=kernels | FileCheck %s

// The squeeze-and-excite shape: a product's column sums scale the product (k2_mul writes over
// b4, its last reader), the negation cannot (b6 is read again by k5_sub), and k5_sub writes over
// b6 (in b4's place, so the whole chain is at @0).
// CHECK-LABEL: program @scale: 6 kernels
// CHECK:      k2_mul: elementwise shape=[4, 16]
// CHECK-NEXT:   in0 b4 f32 strides=[16, 1]
// CHECK-NEXT:   in1 b5 f32 strides=[0, 1]
// CHECK:        out b6 f32
// CHECK:      k3_negate: elementwise shape=[64]
// CHECK-NEXT:   in0 b6 f32 strides=[1]
// CHECK:        out b7 f32
// CHECK:      k5_sub: elementwise shape=[4, 16]
// CHECK-NEXT:   in0 b6 f32 strides=[16, 1]
// CHECK-NEXT:   in1 b8 f32 strides=[0, 1]
// CHECK:        out b9 f32
// CHECK-NEXT: plan: arena 576 bytes (liveness lower bound 576)
// CHECK-NEXT:   b4 @0 256 bytes
// CHECK-NEXT:   b5 @256 64 bytes
// CHECK-NEXT:   b6 @0 256 bytes
// CHECK-NEXT:   b7 @256 256 bytes
// CHECK-NEXT:   b8 @512 64 bytes
// CHECK-NEXT:   b9 @0 256 bytes
func.func @scale(%x: tensor<1x4x8xf32>) -> tensor<1x4x16xf32> {
  %w = "tosa.const"() {values = dense<0.5> : tensor<1x8x16xf32>} : () -> tensor<1x8x16xf32>
  %z = "tosa.const"() {values = dense<0.0> : tensor<1xf32>} : () -> tensor<1xf32>
  %sh = "tosa.const"() {values = dense<0> : tensor<1xi8>} : () -> tensor<1xi8>
  %m = tosa.matmul %x, %w, %z, %z : (tensor<1x4x8xf32>, tensor<1x8x16xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x4x16xf32>
  %s = tosa.reduce_sum %m {axis = 1 : i32} : (tensor<1x4x16xf32>) -> tensor<1x1x16xf32>
  %y = tosa.mul %m, %s, %sh : (tensor<1x4x16xf32>, tensor<1x1x16xf32>, tensor<1xi8>) -> tensor<1x4x16xf32>
  %n = tosa.negate %y, %z, %z : (tensor<1x4x16xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x4x16xf32>
  %t = tosa.reduce_max %n {axis = 1 : i32} : (tensor<1x4x16xf32>) -> tensor<1x1x16xf32>
  %u = tosa.sub %y, %t : (tensor<1x4x16xf32>, tensor<1x1x16xf32>) -> tensor<1x4x16xf32>
  return %u : tensor<1x4x16xf32>
}
