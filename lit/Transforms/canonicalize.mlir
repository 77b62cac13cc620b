// RUN: %f16c opt %s -split-input-file --canonicalize | FileCheck %s
// RUN: %f16c opt %s -split-input-file --canonicalize="fold-constants=false cse=false" | FileCheck %s --check-prefix=NOFOLD

// Identity reshape, identity transpose and tosa.identity disappear.
// CHECK-LABEL: func.func @identities
// CHECK-NEXT: return %arg0
func.func @identities(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %s = tosa.const_shape {values = dense<[2, 3]> : tensor<2xindex>} : () -> !tosa.shape<2>
  %0 = tosa.reshape %x, %s : (tensor<2x3xf32>, !tosa.shape<2>) -> tensor<2x3xf32>
  %1 = tosa.transpose %0 {perms = array<i32: 0, 1>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %2 = tosa.identity %1 : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %2 : tensor<2x3xf32>
}

// -----

// Transposes compose; when the composition is the identity, both go.
// CHECK-LABEL: func.func @transpose_chains
// CHECK-NEXT: %[[T:.*]] = tosa.transpose %arg0 {perms = array<i32: 2, 0, 1>}
// CHECK-NEXT: return %[[T]], %arg0
func.func @transpose_chains(%x: tensor<2x3x4xf32>) -> (tensor<4x2x3xf32>, tensor<2x3x4xf32>) {
  %0 = tosa.transpose %x {perms = array<i32: 1, 0, 2>} : (tensor<2x3x4xf32>) -> tensor<3x2x4xf32>
  %1 = tosa.transpose %0 {perms = array<i32: 2, 1, 0>} : (tensor<3x2x4xf32>) -> tensor<4x2x3xf32>
  %2 = tosa.transpose %x {perms = array<i32: 1, 0, 2>} : (tensor<2x3x4xf32>) -> tensor<3x2x4xf32>
  %3 = tosa.transpose %2 {perms = array<i32: 1, 0, 2>} : (tensor<3x2x4xf32>) -> tensor<2x3x4xf32>
  return %1, %3 : tensor<4x2x3xf32>, tensor<2x3x4xf32>
}

// -----

// A reshape of a reshape reads the original value.
// CHECK-LABEL: func.func @reshape_chain
// CHECK: %[[S:.*]] = tosa.const_shape {{.*}}dense<6>
// CHECK-NEXT: %[[R:.*]] = tosa.reshape %arg0, %[[S]] : (tensor<2x3xf32>, !tosa.shape<1>) -> tensor<6xf32>
// CHECK-NEXT: return %[[R]]
func.func @reshape_chain(%x: tensor<2x3xf32>) -> tensor<6xf32> {
  %a = tosa.const_shape {values = dense<[3, 2]> : tensor<2xindex>} : () -> !tosa.shape<2>
  %b = tosa.const_shape {values = dense<[6]> : tensor<1xindex>} : () -> !tosa.shape<1>
  %0 = tosa.reshape %x, %a : (tensor<2x3xf32>, !tosa.shape<2>) -> tensor<3x2xf32>
  %1 = tosa.reshape %0, %b : (tensor<3x2xf32>, !tosa.shape<1>) -> tensor<6xf32>
  return %1 : tensor<6xf32>
}

// -----

// Constant subgraphs fold, with the interpreter's semantics (pow(2/pi, 0.5) from GELU).
// CHECK-LABEL: func.func @fold_constants
// CHECK-DAG: %[[C:.*]] = "tosa.const"() <{values = dense<0.79788{{[0-9]+}}> : tensor<1xf32>}>
// CHECK-DAG: %[[S:.*]] = "tosa.const"() <{values = dense<0> : tensor<1xi8>}>
// CHECK: %[[M:.*]] = tosa.mul %arg0, %[[C]], %[[S]]
// CHECK-NEXT: return %[[M]]
// NOFOLD-LABEL: func.func @fold_constants
// NOFOLD: tosa.pow
func.func @fold_constants(%x: tensor<1xf32>) -> tensor<1xf32> {
  %a = "tosa.const"() <{values = dense<0.636619746> : tensor<1xf32>}> : () -> tensor<1xf32>
  %b = "tosa.const"() <{values = dense<0.5> : tensor<1xf32>}> : () -> tensor<1xf32>
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %p = tosa.pow %a, %b : (tensor<1xf32>, tensor<1xf32>) -> tensor<1xf32>
  %0 = tosa.mul %x, %p, %shift : (tensor<1xf32>, tensor<1xf32>, tensor<1xi8>) -> tensor<1xf32>
  return %0 : tensor<1xf32>
}

// -----

// Weight transposes fold into the constant.
// CHECK-LABEL: func.func @fold_weight_transpose
// CHECK-NEXT: "tosa.const"() <{values = dense<{{\[\[}}1.000000e+00, 3.000000e+00], [2.000000e+00, 4.000000e+00]]> : tensor<2x2xf32>}>
// CHECK-NOT: tosa.transpose
func.func @fold_weight_transpose() -> tensor<2x2xf32> {
  %w = "tosa.const"() <{values = dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>}> : () -> tensor<2x2xf32>
  %0 = tosa.transpose %w {perms = array<i32: 1, 0>} : (tensor<2x2xf32>) -> tensor<2x2xf32>
  return %0 : tensor<2x2xf32>
}

// -----

// Identical ops on identical operands merge; dead ops go.
// CHECK-LABEL: func.func @cse_and_dce
// CHECK-NEXT: %[[E:.*]] = tosa.exp %arg0
// CHECK-NEXT: %[[A:.*]] = tosa.add %[[E]], %[[E]]
// CHECK-NEXT: return %[[A]]
// NOFOLD-LABEL: func.func @cse_and_dce
// NOFOLD-COUNT-2: tosa.exp
func.func @cse_and_dce(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = tosa.exp %x : (tensor<4xf32>) -> tensor<4xf32>
  %1 = tosa.exp %x : (tensor<4xf32>) -> tensor<4xf32>
  %dead = tosa.tanh %x : (tensor<4xf32>) -> tensor<4xf32>
  %2 = tosa.add %0, %1 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %2 : tensor<4xf32>
}

// -----

// Equal constants merge (and then so do the adds that use them); constants that differ only
// in the sign of zero do not: CSE compares bits, not values.
// CHECK-LABEL: func.func @cse_constants
// CHECK-COUNT-2: tosa.const
// CHECK-NOT: tosa.const
// CHECK-COUNT-2: tosa.add
// CHECK-NOT: tosa.add
func.func @cse_constants(%x: tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) {
  %a = "tosa.const"() <{values = dense<[1.5, 0.0]> : tensor<2xf32>}> : () -> tensor<2xf32>
  %b = "tosa.const"() <{values = dense<[1.5, 0.0]> : tensor<2xf32>}> : () -> tensor<2xf32>
  %c = "tosa.const"() <{values = dense<[1.5, -0.0]> : tensor<2xf32>}> : () -> tensor<2xf32>
  %0 = tosa.add %x, %a : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %1 = tosa.add %x, %b : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %2 = tosa.add %x, %c : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  return %0, %1, %2 : tensor<2xf32>, tensor<2xf32>, tensor<2xf32>
}

// -----

// Folding stops at the size limit.
// RUN: %f16c opt %s -split-input-file --canonicalize="max-fold-elements=2" | FileCheck %s --check-prefix=LIMIT
// LIMIT-LABEL: func.func @fold_limit
// LIMIT: tosa.exp
func.func @fold_limit() -> tensor<4xf32> {
  %c = "tosa.const"() <{values = dense<1.0> : tensor<4xf32>}> : () -> tensor<4xf32>
  %0 = tosa.exp %c : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// torch-mlir's layout dance around a convolution: NHWC result back to NCHW, a batch norm and a
// ReLU6 with 1×C×1×1 and 1×1×1×1 constants, and to NHWC again for the next convolution. The
// NHWC→NCHW transpose sinks through every elementwise op (the constants are transposed, and
// fold), meets its inverse and both disappear: the elementwise ops work on the NHWC values.
// CHECK-LABEL: func.func @torch_layout_pair
// CHECK-NOT: tosa.transpose
// The mean [0.5, 1, 2] per channel, now along the last dimension.
// CHECK: dense<{{\[\[\[\[}}5.000000e-01, 1.000000e+00, 2.000000e+00]]]]> : tensor<1x1x1x3xf32>
// CHECK: %[[S:.*]] = tosa.sub %arg0, %{{.*}} : (tensor<1x4x4x3xf32>, tensor<1x1x1x3xf32>) -> tensor<1x4x4x3xf32>
// CHECK: %[[M:.*]] = tosa.mul %[[S]], %{{.*}}, %{{.*}} : (tensor<1x4x4x3xf32>, tensor<1x1x1x3xf32>, tensor<1xi8>) -> tensor<1x4x4x3xf32>
// CHECK: %[[X:.*]] = tosa.maximum %[[M]], %{{.*}} : (tensor<1x4x4x3xf32>, tensor<1x1x1x1xf32>) -> tensor<1x4x4x3xf32>
// CHECK: %[[N:.*]] = tosa.minimum %[[X]], %{{.*}} : (tensor<1x4x4x3xf32>, tensor<1x1x1x1xf32>) -> tensor<1x4x4x3xf32>
// CHECK-NOT: tosa.transpose
// CHECK: return %[[N]]
// NOFOLD-LABEL: func.func @torch_layout_pair
// NOFOLD: tosa.transpose
func.func @torch_layout_pair(%y: tensor<1x4x4x3xf32>) -> tensor<1x4x4x3xf32> {
  %mean = "tosa.const"() <{values = dense<[[[[0.5]], [[1.0]], [[2.0]]]]> : tensor<1x3x1x1xf32>}> : () -> tensor<1x3x1x1xf32>
  %scale = "tosa.const"() <{values = dense<[[[[3.0]], [[4.0]], [[5.0]]]]> : tensor<1x3x1x1xf32>}> : () -> tensor<1x3x1x1xf32>
  %zero = "tosa.const"() <{values = dense<0.0> : tensor<1x1x1x1xf32>}> : () -> tensor<1x1x1x1xf32>
  %six = "tosa.const"() <{values = dense<6.0> : tensor<1x1x1x1xf32>}> : () -> tensor<1x1x1x1xf32>
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %0 = tosa.transpose %y {perms = array<i32: 0, 3, 1, 2>} : (tensor<1x4x4x3xf32>) -> tensor<1x3x4x4xf32>
  %1 = tosa.sub %0, %mean : (tensor<1x3x4x4xf32>, tensor<1x3x1x1xf32>) -> tensor<1x3x4x4xf32>
  %2 = tosa.mul %1, %scale, %shift : (tensor<1x3x4x4xf32>, tensor<1x3x1x1xf32>, tensor<1xi8>) -> tensor<1x3x4x4xf32>
  %3 = tosa.maximum %2, %zero : (tensor<1x3x4x4xf32>, tensor<1x1x1x1xf32>) -> tensor<1x3x4x4xf32>
  %4 = tosa.minimum %3, %six : (tensor<1x3x4x4xf32>, tensor<1x1x1x1xf32>) -> tensor<1x3x4x4xf32>
  %5 = tosa.transpose %4 {perms = array<i32: 0, 2, 3, 1>} : (tensor<1x3x4x4xf32>) -> tensor<1x4x4x3xf32>
  return %5 : tensor<1x4x4x3xf32>
}

// -----

// A residual add of two transposed values sinks too; a transpose with another user, or one
// that the op broadcasts, stays where it is (here moving axes of size 1 only: a reshape).
// CHECK-LABEL: func.func @sink_conditions
// CHECK-DAG: %[[K:.*]] = tosa.transpose %arg0 {perms = array<i32: 0, 3, 1, 2>}
// CHECK-DAG: %[[A:.*]] = tosa.add %arg0, %arg1 : (tensor<1x2x2x3xf32>, tensor<1x2x2x3xf32>) -> tensor<1x2x2x3xf32>
// CHECK-DAG: %[[E:.*]] = tosa.exp %[[K]]
// CHECK-DAG: %[[B:.*]] = tosa.reshape %arg2, %{{.*}} : (tensor<1x1x1x3xf32>, !tosa.shape<4>) -> tensor<1x3x1x1xf32>
// CHECK-DAG: %[[C:.*]] = tosa.add %[[B]], %arg3 : (tensor<1x3x1x1xf32>, tensor<1x3x2x2xf32>)
// CHECK-DAG: %[[T:.*]] = tosa.transpose %[[A]] {perms = array<i32: 0, 3, 1, 2>}
// CHECK: return %[[T]], %[[E]], %[[K]], %[[C]]
func.func @sink_conditions(%a: tensor<1x2x2x3xf32>, %b: tensor<1x2x2x3xf32>, %small: tensor<1x1x1x3xf32>, %big: tensor<1x3x2x2xf32>) -> (tensor<1x3x2x2xf32>, tensor<1x3x2x2xf32>, tensor<1x3x2x2xf32>, tensor<1x3x2x2xf32>) {
  %0 = tosa.transpose %a {perms = array<i32: 0, 3, 1, 2>} : (tensor<1x2x2x3xf32>) -> tensor<1x3x2x2xf32>
  %1 = tosa.transpose %b {perms = array<i32: 0, 3, 1, 2>} : (tensor<1x2x2x3xf32>) -> tensor<1x3x2x2xf32>
  %2 = tosa.add %0, %1 : (tensor<1x3x2x2xf32>, tensor<1x3x2x2xf32>) -> tensor<1x3x2x2xf32>
  %3 = tosa.transpose %a {perms = array<i32: 0, 3, 1, 2>} : (tensor<1x2x2x3xf32>) -> tensor<1x3x2x2xf32>
  %4 = tosa.exp %3 : (tensor<1x3x2x2xf32>) -> tensor<1x3x2x2xf32>
  %5 = tosa.transpose %small {perms = array<i32: 0, 3, 1, 2>} : (tensor<1x1x1x3xf32>) -> tensor<1x3x1x1xf32>
  %6 = tosa.add %5, %big : (tensor<1x3x1x1xf32>, tensor<1x3x2x2xf32>) -> tensor<1x3x2x2xf32>
  return %2, %4, %3, %6 : tensor<1x3x2x2xf32>, tensor<1x3x2x2xf32>, tensor<1x3x2x2xf32>, tensor<1x3x2x2xf32>
}

// -----

// Splat constants that select and binary ops broadcast shrink to the dimensions no other
// operand gives (the mask and scale become one value); a splat that decides the result's shape
// keeps those dimensions, and a non-splat constant keeps its size.
// CHECK-LABEL: func.func @splats_shrink
// CHECK-DAG: %[[V:.*]] = "tosa.const"() <{values = dense<"0x{{[0-9A-F]+}}"> : tensor<1x2x8x16xf32>}>
// CHECK-DAG: %[[H:.*]] = "tosa.const"() <{values = dense<1.250000e-01> : tensor<1x1x1x1xf32>}>
// CHECK: %[[M:.*]] = tosa.mul %arg0, %[[H]], %{{.*}} : (tensor<1x2x8x16xf32>, tensor<1x1x1x1xf32>, tensor<1xi8>)
// CHECK-DAG: %[[T:.*]] = "tosa.const"() <{values = dense<true> : tensor<1x1x1x1xi1>}>
// CHECK-DAG: %[[N:.*]] = "tosa.const"() <{values = dense<-1.000000e+04> : tensor<1x1x1x1xf32>}>
// CHECK: %[[S:.*]] = tosa.select %[[T]], %[[M]], %[[N]] : (tensor<1x1x1x1xi1>, tensor<1x2x8x16xf32>, tensor<1x1x1x1xf32>)
// CHECK: tosa.add %[[S]], %[[V]]
// CHECK: %[[W:.*]] = "tosa.const"() <{values = dense<2.000000e+00> : tensor<1x1x8x1xf32>}>
// CHECK-NEXT: tosa.sub %arg1, %[[W]] : (tensor<1x2x1x16xf32>, tensor<1x1x8x1xf32>) -> tensor<1x2x8x16xf32>
// NOFOLD-LABEL: func.func @splats_shrink
// NOFOLD: tensor<1x1x1x1xi1>
func.func @splats_shrink(%x: tensor<1x2x8x16xf32>, %y: tensor<1x2x1x16xf32>) -> (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) {
  %mask = "tosa.const"() <{values = dense<true> : tensor<1x2x8x16xi1>}> : () -> tensor<1x2x8x16xi1>
  %neg = "tosa.const"() <{values = dense<-1.0e4> : tensor<1x2x8x16xf32>}> : () -> tensor<1x2x8x16xf32>
  %half = "tosa.const"() <{values = dense<0.125> : tensor<1x2x8x16xf32>}> : () -> tensor<1x2x8x16xf32>
  %two = "tosa.const"() <{values = dense<2.0> : tensor<1x2x8x16xf32>}> : () -> tensor<1x2x8x16xf32>
  %ramp = "tosa.const"() <{values = dense<[[[[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0], [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0], [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0], [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0], [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0], [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0], [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0], [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0]], [[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0], [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0], [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0], [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0], [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0], [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0], [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0], [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0]]]]> : tensor<1x2x8x16xf32>}> : () -> tensor<1x2x8x16xf32>
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %m = tosa.mul %x, %half, %shift : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1xi8>) -> tensor<1x2x8x16xf32>
  %s = tosa.select %mask, %m, %neg : (tensor<1x2x8x16xi1>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  %r = tosa.add %s, %ramp : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  %d = tosa.sub %y, %two : (tensor<1x2x1x16xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  return %r, %d : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>
}

// -----

// PyTorch's safe softmax tests each row for all -inf through f64: that is its maximum being
// -inf, and the softmax's own reduce_max (CSE) answers it.
// CHECK-LABEL: func.func @safe_softmax
// CHECK: %[[M:.*]] = tosa.reduce_max %arg0 {axis = 1 : i32}
// CHECK-NOT: tosa.reduce_max
// CHECK-NOT: tosa.cast
// CHECK-NOT: tosa.reduce_all
// CHECK: tosa.equal %[[M]], %{{.*}} : (tensor<2x1xf32>, tensor<1x1xf32>) -> tensor<2x1xi1>
// CHECK: tosa.select
// Without CSE the test has its own reduce_max.
// NOFOLD-LABEL: func.func @safe_softmax
// NOFOLD: tosa.reduce_max
// NOFOLD: tosa.reduce_max
// NOFOLD-NOT: tosa.reduce_all
// NOFOLD: return
func.func @safe_softmax(%x: tensor<2x7xf32>) -> tensor<2x7xf32> {
  %z = "tosa.const"() <{values = dense<0.0> : tensor<2x7xf32>}> : () -> tensor<2x7xf32>
  %ninf = "tosa.const"() <{values = dense<0xFFF0000000000000> : tensor<1x1xf64>}> : () -> tensor<1x1xf64>
  %0 = tosa.reduce_max %x {axis = 1 : i32} : (tensor<2x7xf32>) -> tensor<2x1xf32>
  %1 = tosa.sub %x, %0 : (tensor<2x7xf32>, tensor<2x1xf32>) -> tensor<2x7xf32>
  %2 = tosa.exp %1 : (tensor<2x7xf32>) -> tensor<2x7xf32>
  %6 = tosa.cast %x : (tensor<2x7xf32>) -> tensor<2x7xf64>
  %7 = tosa.equal %6, %ninf : (tensor<2x7xf64>, tensor<1x1xf64>) -> tensor<2x7xi1>
  %8 = tosa.reduce_all %7 {axis = 1 : i32} : (tensor<2x7xi1>) -> tensor<2x1xi1>
  %9 = tosa.select %8, %z, %2 : (tensor<2x1xi1>, tensor<2x7xf32>, tensor<2x7xf32>) -> tensor<2x7xf32>
  return %9 : tensor<2x7xf32>
}

// -----

// A power of exactly 2 or 3 (GPT-2's tanh GELU cubes so) is multiplies, as PyTorch computes
// it; other exponents, and one that broadcasts x to a larger shape, stay pow.
// The multiplies carry the power (precision assignment treats them as the pow).
// CHECK-LABEL: func.func @squares_and_cubes
// CHECK-DAG: %[[P:.*]] = tosa.pow %arg0, %{{.*}} : (tensor<2x4xf32>, tensor<1x1xf32>) -> tensor<2x4xf32>
// CHECK-DAG: %[[Q:.*]] = tosa.pow %arg1, %{{.*}} : (tensor<1x1xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
// CHECK: %[[S:.*]] = tosa.mul %arg0, %arg0, %{{.*}} {f16c.pow = "3"} : (tensor<2x4xf32>, tensor<2x4xf32>, tensor<1xi8>) -> tensor<2x4xf32>
// CHECK-NEXT: %[[C:.*]] = tosa.mul %[[S]], %arg0, %{{.*}} {f16c.pow = "3"} : (tensor<2x4xf32>, tensor<2x4xf32>, tensor<1xi8>) -> tensor<2x4xf32>
// CHECK-NEXT: %[[T:.*]] = tosa.mul %arg0, %arg0, %{{.*}} {f16c.pow = "2"} : (tensor<2x4xf32>, tensor<2x4xf32>, tensor<1xi8>) -> tensor<2x4xf32>
// CHECK-NEXT: return %[[C]], %[[T]], %[[P]], %[[Q]]
func.func @squares_and_cubes(%x: tensor<2x4xf32>, %y: tensor<1x1xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>) {
  %three = "tosa.const"() <{values = dense<3.0> : tensor<1x1xf32>}> : () -> tensor<1x1xf32>
  %two = "tosa.const"() <{values = dense<2.0> : tensor<1x1xf32>}> : () -> tensor<1x1xf32>
  %half = "tosa.const"() <{values = dense<2.5> : tensor<1x1xf32>}> : () -> tensor<1x1xf32>
  %big = "tosa.const"() <{values = dense<3.0> : tensor<2x4xf32>}> : () -> tensor<2x4xf32>
  %0 = tosa.pow %x, %three : (tensor<2x4xf32>, tensor<1x1xf32>) -> tensor<2x4xf32>
  %1 = tosa.pow %x, %two : (tensor<2x4xf32>, tensor<1x1xf32>) -> tensor<2x4xf32>
  %2 = tosa.pow %x, %half : (tensor<2x4xf32>, tensor<1x1xf32>) -> tensor<2x4xf32>
  %3 = tosa.pow %y, %big : (tensor<1x1xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  return %0, %1, %2, %3 : tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>
}

// -----

// A slice keeping whole rows of a matmul nothing else reads (GPT-2's last position of its
// language-model head) slices the matmul's left operand: the matmul computes those rows only.
// A slice of columns, or of a matmul read elsewhere too, stays as it is.
// CHECK-LABEL: func.func @rows_of_matmul
// CHECK-DAG: %[[C:.*]] = tosa.matmul %arg0, %{{.*}} -> tensor<1x16x24xf32>
// CHECK-DAG: %[[CS:.*]] = tosa.slice %[[C]], %{{.*}} -> tensor<1x1x8xf32>
// CHECK-DAG: %[[U:.*]] = tosa.matmul %arg1, %{{.*}} -> tensor<1x16x24xf32>
// CHECK-DAG: %[[US:.*]] = tosa.slice %[[U]], %{{.*}} -> tensor<1x2x24xf32>
// CHECK: %[[A:.*]] = tosa.slice %arg0, %{{.*}}, %{{.*}} : (tensor<1x16x32xf32>, !tosa.shape<3>, !tosa.shape<3>) -> tensor<1x1x32xf32>
// CHECK-NEXT: %[[M:.*]] = tosa.matmul %[[A]], %{{.*}}, %{{.*}}, %{{.*}} : (tensor<1x1x32xf32>, tensor<1x32x24xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x1x24xf32>
// CHECK-NEXT: return %[[M]], %[[CS]], %[[US]], %[[U]]
func.func @rows_of_matmul(%x: tensor<1x16x32xf32>, %y: tensor<1x16x32xf32>) -> (tensor<1x1x24xf32>, tensor<1x1x8xf32>, tensor<1x2x24xf32>, tensor<1x16x24xf32>) {
  %w = "tosa.const"() <{values = dense<0.5> : tensor<1x32x24xf32>}> : () -> tensor<1x32x24xf32>
  %z = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %last = tosa.const_shape {values = dense<[0, 15, 0]> : tensor<3xindex>} : () -> !tosa.shape<3>
  %row = tosa.const_shape {values = dense<[1, 1, 24]> : tensor<3xindex>} : () -> !tosa.shape<3>
  %cols = tosa.const_shape {values = dense<[1, 1, 8]> : tensor<3xindex>} : () -> !tosa.shape<3>
  %two = tosa.const_shape {values = dense<[1, 2, 24]> : tensor<3xindex>} : () -> !tosa.shape<3>
  %first = tosa.const_shape {values = dense<[0, 0, 0]> : tensor<3xindex>} : () -> !tosa.shape<3>
  %0 = tosa.matmul %x, %w, %z, %z : (tensor<1x16x32xf32>, tensor<1x32x24xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x16x24xf32>
  %1 = tosa.slice %0, %last, %row : (tensor<1x16x24xf32>, !tosa.shape<3>, !tosa.shape<3>) -> tensor<1x1x24xf32>
  %2 = tosa.matmul %x, %w, %z, %z : (tensor<1x16x32xf32>, tensor<1x32x24xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x16x24xf32>
  %3 = tosa.slice %2, %first, %cols : (tensor<1x16x24xf32>, !tosa.shape<3>, !tosa.shape<3>) -> tensor<1x1x8xf32>
  %4 = tosa.matmul %y, %w, %z, %z : (tensor<1x16x32xf32>, tensor<1x32x24xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x16x24xf32>
  %5 = tosa.slice %4, %first, %two : (tensor<1x16x24xf32>, !tosa.shape<3>, !tosa.shape<3>) -> tensor<1x2x24xf32>
  return %1, %3, %5, %4 : tensor<1x1x24xf32>, tensor<1x1x8xf32>, tensor<1x2x24xf32>, tensor<1x16x24xf32>
}

// -----

// Squeeze-and-excite as torch-mlir writes it around NHWC convolutions: the transpose to NCHW
// moves below the two sums of the pooling (each output sums the same values in the same
// order) and below the scale's multiply (the excitation, a value per channel, takes the
// inverse transpose instead, moving axes of size 1 only: a reshape), where it meets the
// transpose back and both go. No full-size transpose is left.
// CHECK-LABEL: func.func @squeeze_excite
// CHECK-NOT: tosa.transpose
// CHECK: tosa.reduce_sum %arg0 {axis = 2 : i32} : (tensor<1x4x4x8xf32>) -> tensor<1x4x1x8xf32>
// CHECK-NEXT: tosa.reduce_sum %{{.*}} {axis = 1 : i32} : (tensor<1x4x1x8xf32>) -> tensor<1x1x1x8xf32>
// CHECK-NOT: tosa.transpose
// CHECK: tosa.mul %arg0, %{{.*}} : (tensor<1x4x4x8xf32>, tensor<1x1x1x8xf32>, tensor<1xi8>) -> tensor<1x4x4x8xf32>
// CHECK-NOT: tosa.transpose
// CHECK: return
func.func @squeeze_excite(%x: tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32> {
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %t = tosa.transpose %x {perms = array<i32: 0, 3, 1, 2>} : (tensor<1x4x4x8xf32>) -> tensor<1x8x4x4xf32>
  %r = tosa.reduce_sum %t {axis = 3 : i32} : (tensor<1x8x4x4xf32>) -> tensor<1x8x4x1xf32>
  %r2 = tosa.reduce_sum %r {axis = 2 : i32} : (tensor<1x8x4x1xf32>) -> tensor<1x8x1x1xf32>
  %s = tosa.sigmoid %r2 : (tensor<1x8x1x1xf32>) -> tensor<1x8x1x1xf32>
  %m = tosa.mul %t, %s, %shift : (tensor<1x8x4x4xf32>, tensor<1x8x1x1xf32>, tensor<1xi8>) -> tensor<1x8x4x4xf32>
  %back = tosa.transpose %m {perms = array<i32: 0, 2, 3, 1>} : (tensor<1x8x4x4xf32>) -> tensor<1x4x4x8xf32>
  return %back : tensor<1x4x4x8xf32>
}

// -----

// A linear layer as torch-mlir writes it: the matmul's result reshaped to 2-D, the bias added
// there, and reshaped back to 3-D for the GELU. The reshape pair around the add cancels: the
// add takes the matmul's own shape (its bias a reshape of the constant, folded), so the add
// and the GELU after it are one group of elementwise ops. A reshape with no pair stays where
// it is (@lone: moved above the multiply it would land between ops of another shape).
// CHECK-LABEL: func.func @linear_bias_pair
// CHECK: %[[MM:.*]] = tosa.matmul
// CHECK-NOT: tosa.reshape
// CHECK: %[[ADD:.*]] = tosa.add %[[MM]], %{{.*}} : (tensor<1x4x8xf32>, tensor<1x1x8xf32>) -> tensor<1x4x8xf32>
// CHECK-NOT: tosa.reshape
// CHECK: tosa.erf
// CHECK: return
// CHECK-LABEL: func.func @lone
// CHECK: tosa.mul %arg0, %arg0, %{{.*}} : (tensor<1x4x8xf32>, tensor<1x4x8xf32>, tensor<1xi8>) -> tensor<1x4x8xf32>
// CHECK-NEXT: tosa.reshape
func.func @linear_bias_pair(%a: tensor<1x4x6xf32>) -> tensor<1x4x8xf32> {
  %w = "tosa.const"() <{values = dense<0.5> : tensor<1x6x8xf32>}> : () -> tensor<1x6x8xf32>
  %z = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %bias = "tosa.const"() <{values = dense<[[0.0, 0.125, 0.25, 0.375, 0.5, 0.625, 0.75, 0.875]]> : tensor<1x8xf32>}> : () -> tensor<1x8xf32>
  %half = "tosa.const"() <{values = dense<0.5> : tensor<1x1x1xf32>}> : () -> tensor<1x1x1xf32>
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %s2 = tosa.const_shape {values = dense<[4, 8]> : tensor<2xindex>} : () -> !tosa.shape<2>
  %s3 = tosa.const_shape {values = dense<[1, 4, 8]> : tensor<3xindex>} : () -> !tosa.shape<3>
  %mm = tosa.matmul %a, %w, %z, %z : (tensor<1x4x6xf32>, tensor<1x6x8xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x4x8xf32>
  %r2 = tosa.reshape %mm, %s2 : (tensor<1x4x8xf32>, !tosa.shape<2>) -> tensor<4x8xf32>
  %add = tosa.add %r2, %bias : (tensor<4x8xf32>, tensor<1x8xf32>) -> tensor<4x8xf32>
  %r3 = tosa.reshape %add, %s3 : (tensor<4x8xf32>, !tosa.shape<3>) -> tensor<1x4x8xf32>
  %m = tosa.mul %r3, %half, %shift : (tensor<1x4x8xf32>, tensor<1x1x1xf32>, tensor<1xi8>) -> tensor<1x4x8xf32>
  %e = tosa.erf %m : (tensor<1x4x8xf32>) -> tensor<1x4x8xf32>
  %g = tosa.mul %r3, %e, %shift : (tensor<1x4x8xf32>, tensor<1x4x8xf32>, tensor<1xi8>) -> tensor<1x4x8xf32>
  return %g : tensor<1x4x8xf32>
}
func.func @lone(%x: tensor<1x4x8xf32>) -> tensor<4x8xf32> {
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %s2 = tosa.const_shape {values = dense<[4, 8]> : tensor<2xindex>} : () -> !tosa.shape<2>
  %m = tosa.mul %x, %x, %shift : (tensor<1x4x8xf32>, tensor<1x4x8xf32>, tensor<1xi8>) -> tensor<1x4x8xf32>
  %r = tosa.reshape %m, %s2 : (tensor<1x4x8xf32>, !tosa.shape<2>) -> tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}

// -----

// A pair a chain apart (the Whisper encoder's first GELU, after its conv1d written as a 1-row
// conv2d): the GELU runs on the value reshaped to 3-D, is reshaped back, and the last multiply
// reads the value at 4-D. The reshape moves up the chain, a step per round, until it meets its
// pair: every op at the 4-D shape, no reshape left. @two_computed: a chain op with a second
// computed operand would need a reshape nothing cancels; the reshapes stay.
// CHECK-LABEL: func.func @gelu_pair_chain
// CHECK-NOT: tosa.reshape
// CHECK: tosa.erf %{{.*}} : (tensor<1x1x4x8xf32>) -> tensor<1x1x4x8xf32>
// CHECK-NOT: tosa.reshape
// CHECK: tosa.mul %arg0, %{{.*}} : (tensor<1x1x4x8xf32>, tensor<1x1x4x8xf32>, tensor<1xi8>) -> tensor<1x1x4x8xf32>
// CHECK-NEXT: return
// CHECK-LABEL: func.func @two_computed
// CHECK: tosa.reshape %arg0
// CHECK: tosa.erf %{{.*}} : (tensor<1x4x8xf32>) -> tensor<1x4x8xf32>
// CHECK-NEXT: tosa.reshape
func.func @gelu_pair_chain(%x: tensor<1x1x4x8xf32>) -> tensor<1x1x4x8xf32> {
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %r2 = "tosa.const"() <{values = dense<0.707106769> : tensor<1x1x1xf32>}> : () -> tensor<1x1x1xf32>
  %one = "tosa.const"() <{values = dense<1.0> : tensor<1x1x1xf32>}> : () -> tensor<1x1x1xf32>
  %half = "tosa.const"() <{values = dense<0.5> : tensor<1x1x1xf32>}> : () -> tensor<1x1x1xf32>
  %s3 = tosa.const_shape {values = dense<[1, 4, 8]> : tensor<3xindex>} : () -> !tosa.shape<3>
  %s4 = tosa.const_shape {values = dense<[1, 1, 4, 8]> : tensor<4xindex>} : () -> !tosa.shape<4>
  %v = tosa.reshape %x, %s3 : (tensor<1x1x4x8xf32>, !tosa.shape<3>) -> tensor<1x4x8xf32>
  %a = tosa.mul %v, %r2, %shift : (tensor<1x4x8xf32>, tensor<1x1x1xf32>, tensor<1xi8>) -> tensor<1x4x8xf32>
  %e = tosa.erf %a : (tensor<1x4x8xf32>) -> tensor<1x4x8xf32>
  %p = tosa.add %e, %one : (tensor<1x4x8xf32>, tensor<1x1x1xf32>) -> tensor<1x4x8xf32>
  %h = tosa.mul %half, %p, %shift : (tensor<1x1x1xf32>, tensor<1x4x8xf32>, tensor<1xi8>) -> tensor<1x4x8xf32>
  %b = tosa.reshape %h, %s4 : (tensor<1x4x8xf32>, !tosa.shape<4>) -> tensor<1x1x4x8xf32>
  %g = tosa.mul %x, %b, %shift : (tensor<1x1x4x8xf32>, tensor<1x1x4x8xf32>, tensor<1xi8>) -> tensor<1x1x4x8xf32>
  return %g : tensor<1x1x4x8xf32>
}
func.func @two_computed(%x: tensor<1x1x4x8xf32>, %y: tensor<1x4x8xf32>) -> tensor<1x1x4x8xf32> {
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %s3 = tosa.const_shape {values = dense<[1, 4, 8]> : tensor<3xindex>} : () -> !tosa.shape<3>
  %s4 = tosa.const_shape {values = dense<[1, 1, 4, 8]> : tensor<4xindex>} : () -> !tosa.shape<4>
  %v = tosa.reshape %x, %s3 : (tensor<1x1x4x8xf32>, !tosa.shape<3>) -> tensor<1x4x8xf32>
  %p = tosa.add %v, %y : (tensor<1x4x8xf32>, tensor<1x4x8xf32>) -> tensor<1x4x8xf32>
  %e = tosa.erf %p : (tensor<1x4x8xf32>) -> tensor<1x4x8xf32>
  %b = tosa.reshape %e, %s4 : (tensor<1x4x8xf32>, !tosa.shape<4>) -> tensor<1x1x4x8xf32>
  %g = tosa.mul %x, %b, %shift : (tensor<1x1x4x8xf32>, tensor<1x1x4x8xf32>, tensor<1xi8>) -> tensor<1x1x4x8xf32>
  return %g : tensor<1x1x4x8xf32>
}

// -----

// A concatenation of NHWC values transposed to NCHW, transposed back for the next convolution
// (a U-Net's skip and upsampled value): the concat takes the NHWC values along their channels
// and no transpose is left. A bilinear interpolation `a + (b - a)·w` reads each transposed
// tap twice: the transposes still sink through it.
// CHECK-LABEL: func.func @concat_channels_last
// CHECK-NOT: tosa.transpose
// CHECK: tosa.concat %arg0, %{{.*}} {axis = 3 : i32} : (tensor<1x4x5x8xf32>, tensor<1x4x5x6xf32>) -> tensor<1x4x5x14xf32>
// CHECK-NOT: tosa.transpose
// NOFOLD-LABEL: func.func @concat_channels_last
func.func @concat_channels_last(%skip: tensor<1x4x5x8xf32>, %a: tensor<1x4x5x6xf32>, %b: tensor<1x4x5x6xf32>) -> tensor<1x4x5x14xf32> {
  %w = "tosa.const"() <{values = dense<[[[[0.25], [0.75], [0.25], [0.75]]]]> : tensor<1x1x4x1xf32>}> : () -> tensor<1x1x4x1xf32>
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %ts = tosa.transpose %skip {perms = array<i32: 0, 3, 1, 2>} : (tensor<1x4x5x8xf32>) -> tensor<1x8x4x5xf32>
  %ta = tosa.transpose %a {perms = array<i32: 0, 3, 1, 2>} : (tensor<1x4x5x6xf32>) -> tensor<1x6x4x5xf32>
  %tb = tosa.transpose %b {perms = array<i32: 0, 3, 1, 2>} : (tensor<1x4x5x6xf32>) -> tensor<1x6x4x5xf32>
  %d = tosa.sub %tb, %ta : (tensor<1x6x4x5xf32>, tensor<1x6x4x5xf32>) -> tensor<1x6x4x5xf32>
  %m = tosa.mul %d, %w, %shift : (tensor<1x6x4x5xf32>, tensor<1x1x4x1xf32>, tensor<1xi8>) -> tensor<1x6x4x5xf32>
  %up = tosa.add %ta, %m : (tensor<1x6x4x5xf32>, tensor<1x6x4x5xf32>) -> tensor<1x6x4x5xf32>
  %cat = tosa.concat %ts, %up {axis = 1 : i32} : (tensor<1x8x4x5xf32>, tensor<1x6x4x5xf32>) -> tensor<1x14x4x5xf32>
  %back = tosa.transpose %cat {perms = array<i32: 0, 2, 3, 1>} : (tensor<1x14x4x5xf32>) -> tensor<1x4x5x14xf32>
  return %back : tensor<1x4x5x14xf32>
}
