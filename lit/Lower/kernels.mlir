// f16c compile --emit=kernels prints the lowered program: what the target's backend receives. These
// cases pin the lowering's fusion rules and the buffer plan.
// RUN: %f16c compile %s --precision=fp32 --emit=kernels | FileCheck %s

// The add of a broadcast bias, the clamp and the residual add that consume the matmul are its
// epilogue: one kernel, no intermediate buffer. B (a constant) is row-major. (The bias is not a
// splat: canonicalize would shrink a splat to one value, read with col-stride 0.)
// CHECK-LABEL: program @epilogue: 1 kernels
// CHECK: k0_matmul: contraction matmul batch=1 m=4 n=16 k=8 acc=f32 result=f32 @ {{.*}}kernels.mlir:{{[0-9]+}}:{{[0-9]+}} (4 ops)
// CHECK-NEXT:   a  b[[X:[0-9]+]] tensor<1x4x8xf32> row-stride=8
// CHECK-NEXT:   b  b{{[0-9]+}} tensor<1x8x16xf32> row-major constant
// CHECK-NEXT:   epilogue v3 = add(v0, v1) : f32; v4 = clamp[0.0, 6.0](v3) : f32; v5 = add(v4, v2) : f32
// CHECK-NEXT:     in1 b{{[0-9]+}} f32 row-strides=[0, 0] col-stride=1
// CHECK-NEXT:     in2 b[[R:[0-9]+]] f32 row-strides=[0, 16] col-stride=1
// CHECK-NEXT:   out b[[OUT:[0-9]+]] tensor<1x4x16xf32>
// CHECK-NEXT: plan: arena 256 bytes (liveness lower bound 256)
// CHECK-NEXT:   b[[OUT]] @0 256 bytes
func.func @epilogue(%x: tensor<1x4x8xf32>, %r: tensor<1x4x16xf32>) -> tensor<1x4x16xf32> {
  %w = "tosa.const"() {values = dense<0.5> : tensor<1x8x16xf32>} : () -> tensor<1x8x16xf32>
  %z = "tosa.const"() {values = dense<0.0> : tensor<1xf32>} : () -> tensor<1xf32>
  %b = "tosa.const"() {values = dense<[[[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0]]]> : tensor<1x1x16xf32>} : () -> tensor<1x1x16xf32>
  %m = tosa.matmul %x, %w, %z, %z : (tensor<1x4x8xf32>, tensor<1x8x16xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x4x16xf32>
  %a = tosa.add %m, %b : (tensor<1x4x16xf32>, tensor<1x1x16xf32>) -> tensor<1x4x16xf32>
  %c = tosa.clamp %a {max_val = 6.0 : f32, min_val = 0.0 : f32} : (tensor<1x4x16xf32>) -> tensor<1x4x16xf32>
  %s = tosa.add %c, %r : (tensor<1x4x16xf32>, tensor<1x4x16xf32>) -> tensor<1x4x16xf32>
  return %s : tensor<1x4x16xf32>
}

// A conv2d is an implicit-im2col GEMM whose OHWI weight is a column-major B; its bias and
// the ReLU clamp are fused.
// CHECK-LABEL: program @conv: 1 kernels
// CHECK: k0_conv2d: contraction conv2d batch=1 m=64 n=8 k=36 acc=f32 result=f32 {{.*}}(2 ops)
// CHECK-NEXT:   geometry n=1 in=8x8x4 out=8x8x8 kernel=3x3 stride=[1, 1] dilation=[1, 1] pad=[1, 1, 1, 1]
// CHECK-NEXT:   a  b0 tensor<1x8x8x4xf32> implicit-im2col
// CHECK-NEXT:   b  b{{[0-9]+}} tensor<8x3x3x4xf32> col-major constant
// CHECK-NEXT:   bias b{{[0-9]+}} tensor<8xf32>
// CHECK-NEXT:   epilogue v1 = clamp[0.0, 3.40282347e38](v0) : f32
func.func @conv(%x: tensor<1x8x8x4xf32>) -> tensor<1x8x8x8xf32> {
  %w = "tosa.const"() {values = dense<0.25> : tensor<8x3x3x4xf32>} : () -> tensor<8x3x3x4xf32>
  %bias = "tosa.const"() {values = dense<0.1> : tensor<8xf32>} : () -> tensor<8xf32>
  %z = "tosa.const"() {values = dense<0.0> : tensor<1xf32>} : () -> tensor<1xf32>
  %y = tosa.conv2d %x, %w, %bias, %z, %z {acc_type = f32, dilation = array<i64: 1, 1>, pad = array<i64: 1, 1, 1, 1>, stride = array<i64: 1, 1>} : (tensor<1x8x8x4xf32>, tensor<8x3x3x4xf32>, tensor<8xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x8x8x8xf32>
  %c = tosa.clamp %y {max_val = 3.4028235e+38 : f32, min_val = 0.0 : f32} : (tensor<1x8x8x8xf32>) -> tensor<1x8x8x8xf32>
  return %c : tensor<1x8x8x8xf32>
}

// Softmax is one row kernel: both reductions and the elementwise ops around them run per row
// in the graph's order; the reciprocal runs once per row on a scalar.
// CHECK-LABEL: program @softmax: 1 kernels
// CHECK: k0_rows_reduce_max: rows rows=2 len=10 stages=6 {{.*}}(6 ops)
// CHECK-NEXT:   in v0 b0 f32 full per-row
// CHECK-NEXT:   v1 = reduce_max(v0) : f32
// CHECK-NEXT:   v2 = sub(v0, v1) : f32 over row
// CHECK-NEXT:   v3 = exp(v2) : f32 over row
// CHECK-NEXT:   v4 = reduce_sum(v3) : f32
// CHECK-NEXT:   v5 = reciprocal(v4) : f32 over scalar
// CHECK-NEXT:   v6 = mul(v3, v5) : f32 over row
func.func @softmax(%x: tensor<2x10xf32>) -> tensor<2x10xf32> {
  %m = tosa.reduce_max %x {axis = 1 : i32} : (tensor<2x10xf32>) -> tensor<2x1xf32>
  %d = tosa.sub %x, %m : (tensor<2x10xf32>, tensor<2x1xf32>) -> tensor<2x10xf32>
  %e = tosa.exp %d : (tensor<2x10xf32>) -> tensor<2x10xf32>
  %s = tosa.reduce_sum %e {axis = 1 : i32} : (tensor<2x10xf32>) -> tensor<2x1xf32>
  %r = tosa.reciprocal %s : (tensor<2x1xf32>) -> tensor<2x1xf32>
  %sh = "tosa.const"() {values = dense<0> : tensor<1xi8>} : () -> tensor<1xi8>
  %y = tosa.mul %e, %r, %sh : (tensor<2x10xf32>, tensor<2x1xf32>, tensor<1xi8>) -> tensor<2x10xf32>
  return %y : tensor<2x10xf32>
}

// Elementwise groups: a value joins the group that holds all its users (the add, read by the
// negate and the abs), so the add, negate, tanh, abs and sub fuse; a value read outside (the
// sub: a function result, and the exp's input) ends its group; a reshape is a view (exp reads
// the sub's buffer, no copy).
// CHECK-LABEL: program @groups: 2 kernels
// CHECK: k0_add: elementwise shape=[24] {{.*}}(5 ops)
// CHECK-NEXT:   in0 b0 f32 strides=[1]
// CHECK-NEXT:   in1 b1 f32 strides=[1]
// CHECK-NEXT:   v2 = add(v0, v1) : f32; v3 = negate(v2) : f32; v4 = tanh(v3) : f32; v5 = abs(v2) : f32; v6 = sub(v4, v5) : f32
// CHECK-NEXT:   out b[[V:[0-9]+]] f32
// CHECK-NEXT: k1_exp: elementwise shape=[24] {{.*}}(1 ops)
// CHECK-NEXT:   in0 b[[V]] f32 strides=[1]
func.func @groups(%x: tensor<4x6xf32>, %y: tensor<4x6xf32>) -> (tensor<4x6xf32>, tensor<24xf32>) {
  %a = tosa.add %x, %y : (tensor<4x6xf32>, tensor<4x6xf32>) -> tensor<4x6xf32>
  %z8 = "tosa.const"() {values = dense<0.0> : tensor<1xf32>} : () -> tensor<1xf32>
  %n = tosa.negate %a, %z8, %z8 : (tensor<4x6xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<4x6xf32>
  %t = tosa.tanh %n : (tensor<4x6xf32>) -> tensor<4x6xf32>
  %u = tosa.abs %a : (tensor<4x6xf32>) -> tensor<4x6xf32>
  %v = tosa.sub %t, %u : (tensor<4x6xf32>, tensor<4x6xf32>) -> tensor<4x6xf32>
  %shape = tosa.const_shape {values = dense<24> : tensor<1xindex>} : () -> !tosa.shape<1>
  %flat = tosa.reshape %v, %shape : (tensor<4x6xf32>, !tosa.shape<1>) -> tensor<24xf32>
  %e = tosa.exp %flat : (tensor<24xf32>) -> tensor<24xf32>
  return %v, %e : tensor<4x6xf32>, tensor<24xf32>
}
