// RUN: %f16c opt %s -split-input-file --fold-batch-norm --pass-statistics 2>%t.stats | FileCheck %s
// RUN: FileCheck %s --check-prefix=STATS < %t.stats
// RUN: not %f16c opt %s -split-input-file --no-fold-batch-norm 2>&1 | FileCheck %s --check-prefix=OPT
// OPT: error: --no-fold-batch-norm: opt runs only the passes it is given (leave out --fold-batch-norm)

// A batch norm as torch-mlir writes it (sub mean, mul rsqrt(var+eps), mul gamma, add beta)
// after a conv2d: weights W[oc] * a[oc], bias b*a + d, the four ops gone.
// a = [1*2*0.5, 1*4*1] = [1, 4]; d = [(0-1)*2*0.5 + 3, (0-(-1))*4*1 + 0] = [2, 4];
// bias [0.5, 1] -> [0.5*1 + 2, 1*4 + 4] = [2.5, 8].
// CHECK-LABEL: func.func @conv2d_batch_norm
// CHECK-DAG: %[[W:.*]] = "tosa.const"() <{values = dense<{{\[\[\[\[}}1.000000e+00, 2.000000e+00]]], {{\[\[\[}}1.200000e+01, 1.600000e+01]]]]> : tensor<2x1x1x2xf32>}>
// CHECK-DAG: %[[B:.*]] = "tosa.const"() <{values = dense<[2.500000e+00, 8.000000e+00]> : tensor<2xf32>}>
// CHECK: %[[C:.*]] = tosa.conv2d %arg0, %[[W]], %[[B]]
// CHECK-NEXT: return %[[C]]
// STATS: FoldBatchNorm
// STATS-NEXT: 1 convolutions-folded-into
// STATS-NEXT: 4 ops-folded
func.func @conv2d_batch_norm(%x: tensor<1x4x4x2xf32>) -> tensor<1x4x4x2xf32> {
  %w = "tosa.const"() <{values = dense<[[[[1.0, 2.0]]], [[[3.0, 4.0]]]]> : tensor<2x1x1x2xf32>}> : () -> tensor<2x1x1x2xf32>
  %b = "tosa.const"() <{values = dense<[0.5, 1.0]> : tensor<2xf32>}> : () -> tensor<2xf32>
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %mean = "tosa.const"() <{values = dense<[[[[1.0, -1.0]]]]> : tensor<1x1x1x2xf32>}> : () -> tensor<1x1x1x2xf32>
  %inv = "tosa.const"() <{values = dense<[[[[2.0, 4.0]]]]> : tensor<1x1x1x2xf32>}> : () -> tensor<1x1x1x2xf32>
  %gamma = "tosa.const"() <{values = dense<[[[[0.5, 1.0]]]]> : tensor<1x1x1x2xf32>}> : () -> tensor<1x1x1x2xf32>
  %beta = "tosa.const"() <{values = dense<[[[[3.0, 0.0]]]]> : tensor<1x1x1x2xf32>}> : () -> tensor<1x1x1x2xf32>
  %0 = tosa.conv2d %x, %w, %b, %zp, %zp {acc_type = f32, dilation = array<i64: 1, 1>, pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 1, 1>} : (tensor<1x4x4x2xf32>, tensor<2x1x1x2xf32>, tensor<2xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x4x4x2xf32>
  %1 = tosa.sub %0, %mean : (tensor<1x4x4x2xf32>, tensor<1x1x1x2xf32>) -> tensor<1x4x4x2xf32>
  %2 = tosa.mul %1, %inv, %shift : (tensor<1x4x4x2xf32>, tensor<1x1x1x2xf32>, tensor<1xi8>) -> tensor<1x4x4x2xf32>
  %3 = tosa.mul %2, %gamma, %shift : (tensor<1x4x4x2xf32>, tensor<1x1x1x2xf32>, tensor<1xi8>) -> tensor<1x4x4x2xf32>
  %4 = tosa.add %3, %beta : (tensor<1x4x4x2xf32>, tensor<1x1x1x2xf32>) -> tensor<1x4x4x2xf32>
  return %4 : tensor<1x4x4x2xf32>
}

// -----

// Depthwise weights [KH, KW, C, M]: output channel c*M + m scales the two innermost indices.
// A constant minus the convolution negates the scale (a = [-1, -1, -1, -1], d = [1, 1, 1, 1]
// times the one-element 10), and a one-element constant applies to every channel.
// STATS: FoldBatchNorm
// STATS-NEXT: 1 convolutions-folded-into
// STATS-NEXT: 2 ops-folded
// CHECK-LABEL: func.func @depthwise_reversed_sub
// CHECK-DAG: %[[W:.*]] = "tosa.const"() <{values = dense<{{\[\[\[\[}}-1.000000e+01, -2.000000e+01], [-3.000000e+01, -4.000000e+01]]]]> : tensor<1x1x2x2xf32>}>
// CHECK-DAG: %[[B:.*]] = "tosa.const"() <{values = dense<1.000000e+01> : tensor<4xf32>}>
// CHECK: %[[C:.*]] = tosa.depthwise_conv2d %arg0, %[[W]], %[[B]]
// CHECK-NEXT: return %[[C]]
func.func @depthwise_reversed_sub(%x: tensor<1x3x3x2xf32>) -> tensor<1x3x3x4xf32> {
  %w = "tosa.const"() <{values = dense<[[[[1.0, 2.0], [3.0, 4.0]]]]> : tensor<1x1x2x2xf32>}> : () -> tensor<1x1x2x2xf32>
  %b = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %one = "tosa.const"() <{values = dense<1.0> : tensor<1x1x1x1xf32>}> : () -> tensor<1x1x1x1xf32>
  %ten = "tosa.const"() <{values = dense<10.0> : tensor<1x1x1x1xf32>}> : () -> tensor<1x1x1x1xf32>
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %0 = tosa.depthwise_conv2d %x, %w, %b, %zp, %zp {acc_type = f32, dilation = array<i64: 1, 1>, pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 1, 1>} : (tensor<1x3x3x2xf32>, tensor<1x1x2x2xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x3x3x4xf32>
  %1 = tosa.sub %one, %0 : (tensor<1x1x1x1xf32>, tensor<1x3x3x4xf32>) -> tensor<1x3x3x4xf32>
  %2 = tosa.mul %ten, %1, %shift : (tensor<1x1x1x1xf32>, tensor<1x3x3x4xf32>, tensor<1xi8>) -> tensor<1x3x3x4xf32>
  return %2 : tensor<1x3x3x4xf32>
}

// -----

// Not folded: the convolution's result has a second user; a constant that varies along a
// non-channel axis; an op with a precision override (the chain stops before it); a scale of 0.
// STATS: FoldBatchNorm
// STATS-NEXT: 0 convolutions-folded-into
// STATS-NEXT: 0 ops-folded
// CHECK-LABEL: func.func @kept
// CHECK: %[[C0:.*]] = tosa.conv2d
// CHECK-NEXT: tosa.add %[[C0]]
// CHECK-NEXT: tosa.mul %[[C0]]
// CHECK: %[[C1:.*]] = tosa.conv2d
// CHECK-NEXT: tosa.add %[[C1]]
// CHECK: %[[C2:.*]] = tosa.conv2d
// CHECK-NEXT: tosa.add %[[C2]]{{.*}}f16c.precision
// CHECK: %[[C3:.*]] = tosa.conv2d
// CHECK-NEXT: tosa.mul %[[C3]]
func.func @kept(%x: tensor<1x2x2x2xf32>) -> (tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>) {
  %w = "tosa.const"() <{values = dense<[[[[1.0, 2.0]]], [[[3.0, 4.0]]]]> : tensor<2x1x1x2xf32>}> : () -> tensor<2x1x1x2xf32>
  %w1 = "tosa.const"() <{values = dense<[[[[5.0, 2.0]]], [[[3.0, 4.0]]]]> : tensor<2x1x1x2xf32>}> : () -> tensor<2x1x1x2xf32>
  %w2 = "tosa.const"() <{values = dense<[[[[6.0, 2.0]]], [[[3.0, 4.0]]]]> : tensor<2x1x1x2xf32>}> : () -> tensor<2x1x1x2xf32>
  %w3 = "tosa.const"() <{values = dense<[[[[7.0, 2.0]]], [[[3.0, 4.0]]]]> : tensor<2x1x1x2xf32>}> : () -> tensor<2x1x1x2xf32>
  %b = "tosa.const"() <{values = dense<[0.5, 1.0]> : tensor<2xf32>}> : () -> tensor<2xf32>
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %k = "tosa.const"() <{values = dense<[[[[1.0, 2.0]]]]> : tensor<1x1x1x2xf32>}> : () -> tensor<1x1x1x2xf32>
  %rows = "tosa.const"() <{values = dense<[[[[1.0], [2.0]]]]> : tensor<1x1x2x1xf32>}> : () -> tensor<1x1x2x1xf32>
  %zero = "tosa.const"() <{values = dense<0.0> : tensor<1x1x1x1xf32>}> : () -> tensor<1x1x1x1xf32>
  %0 = tosa.conv2d %x, %w, %b, %zp, %zp {acc_type = f32, dilation = array<i64: 1, 1>, pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 1, 1>} : (tensor<1x2x2x2xf32>, tensor<2x1x1x2xf32>, tensor<2xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x2x2x2xf32>
  %1 = tosa.add %0, %k : (tensor<1x2x2x2xf32>, tensor<1x1x1x2xf32>) -> tensor<1x2x2x2xf32>
  %2 = tosa.mul %0, %k, %shift : (tensor<1x2x2x2xf32>, tensor<1x1x1x2xf32>, tensor<1xi8>) -> tensor<1x2x2x2xf32>
  %3 = tosa.conv2d %x, %w1, %b, %zp, %zp {acc_type = f32, dilation = array<i64: 1, 1>, pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 1, 1>} : (tensor<1x2x2x2xf32>, tensor<2x1x1x2xf32>, tensor<2xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x2x2x2xf32>
  %4 = tosa.add %3, %rows : (tensor<1x2x2x2xf32>, tensor<1x1x2x1xf32>) -> tensor<1x2x2x2xf32>
  %5 = tosa.conv2d %x, %w2, %b, %zp, %zp {acc_type = f32, dilation = array<i64: 1, 1>, pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 1, 1>} : (tensor<1x2x2x2xf32>, tensor<2x1x1x2xf32>, tensor<2xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x2x2x2xf32>
  %6 = tosa.add %5, %k {f16c.precision = "f32"} : (tensor<1x2x2x2xf32>, tensor<1x1x1x2xf32>) -> tensor<1x2x2x2xf32>
  %7 = tosa.conv2d %x, %w3, %b, %zp, %zp {acc_type = f32, dilation = array<i64: 1, 1>, pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 1, 1>} : (tensor<1x2x2x2xf32>, tensor<2x1x1x2xf32>, tensor<2xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x2x2x2xf32>
  %8 = tosa.mul %7, %zero, %shift : (tensor<1x2x2x2xf32>, tensor<1x1x1x1xf32>, tensor<1xi8>) -> tensor<1x2x2x2xf32>
  return %1, %2, %4, %6, %8 : tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>
}
