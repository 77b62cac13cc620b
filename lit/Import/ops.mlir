// Every op of the import list survives import -> export, and the export verifies in mlir-opt.
// RUN: %f16c opt %s -split-input-file | FileCheck %s
// RUN: %f16c opt %s -split-input-file | mlir-opt -split-input-file -o /dev/null
// RUN: %f16c opt %s -split-input-file | %f16c opt -split-input-file | FileCheck %s

// CHECK-LABEL: func.func @contractions
// CHECK: tosa.conv2d %{{.*}} {acc_type = f32, dilation = array<i64: 1, 1>, pad = array<i64: 1, 0, 1, 0>, stride = array<i64: 2, 2>}
// CHECK: tosa.depthwise_conv2d
// CHECK: tosa.transpose_conv2d %{{.*}} {acc_type = f32, out_pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 2, 2>}
// CHECK: tosa.matmul
func.func @contractions(%x: tensor<1x8x8x4xf32>, %a: tensor<1x3x4xf32>, %b: tensor<1x4x5xf32>) -> (tensor<1x4x4x6xf32>, tensor<1x8x8x8xf32>, tensor<1x16x16x3xf32>, tensor<1x3x5xf32>) {
  %w = "tosa.const"() <{values = dense<0.5> : tensor<6x3x3x4xf32>}> : () -> tensor<6x3x3x4xf32>
  %bias = "tosa.const"() <{values = dense<0.0> : tensor<6xf32>}> : () -> tensor<6xf32>
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %0 = tosa.conv2d %x, %w, %bias, %zp, %zp {acc_type = f32, dilation = array<i64: 1, 1>, pad = array<i64: 1, 0, 1, 0>, stride = array<i64: 2, 2>} : (tensor<1x8x8x4xf32>, tensor<6x3x3x4xf32>, tensor<6xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x4x4x6xf32>
  %dw = "tosa.const"() <{values = dense<0.25> : tensor<3x3x4x2xf32>}> : () -> tensor<3x3x4x2xf32>
  %db = "tosa.const"() <{values = dense<0.0> : tensor<8xf32>}> : () -> tensor<8xf32>
  %1 = tosa.depthwise_conv2d %x, %dw, %db, %zp, %zp {acc_type = f32, dilation = array<i64: 1, 1>, pad = array<i64: 1, 1, 1, 1>, stride = array<i64: 1, 1>} : (tensor<1x8x8x4xf32>, tensor<3x3x4x2xf32>, tensor<8xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x8x8x8xf32>
  %tw = "tosa.const"() <{values = dense<1.0> : tensor<3x2x2x4xf32>}> : () -> tensor<3x2x2x4xf32>
  %tb = "tosa.const"() <{values = dense<0.0> : tensor<3xf32>}> : () -> tensor<3xf32>
  %2 = tosa.transpose_conv2d %x, %tw, %tb, %zp, %zp {acc_type = f32, out_pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 2, 2>} : (tensor<1x8x8x4xf32>, tensor<3x2x2x4xf32>, tensor<3xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x16x16x3xf32>
  %3 = tosa.matmul %a, %b, %zp, %zp : (tensor<1x3x4xf32>, tensor<1x4x5xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x3x5xf32>
  return %0, %1, %2, %3 : tensor<1x4x4x6xf32>, tensor<1x8x8x8xf32>, tensor<1x16x16x3xf32>, tensor<1x3x5xf32>
}

// -----

// CHECK-LABEL: func.func @elementwise
// CHECK-DAG: tosa.add
// CHECK-DAG: tosa.sub
// CHECK-DAG: tosa.mul
// CHECK-DAG: tosa.negate
// CHECK-DAG: tosa.abs
// CHECK-DAG: tosa.clamp %{{.*}} {max_val = 6.000000e+00 : f32, min_val = 0.000000e+00 : f32}
// CHECK-DAG: tosa.maximum
// CHECK-DAG: tosa.minimum
// CHECK-DAG: tosa.exp
// CHECK-DAG: tosa.log
// CHECK-DAG: tosa.rsqrt
// CHECK-DAG: tosa.reciprocal
// CHECK-DAG: tosa.tanh
// CHECK-DAG: tosa.sigmoid
// CHECK-DAG: tosa.erf
// CHECK-DAG: tosa.pow
// CHECK-DAG: tosa.equal
// CHECK-DAG: tosa.greater %
// CHECK-DAG: tosa.greater_equal
// CHECK-DAG: tosa.select
// CHECK-DAG: tosa.cast %{{.*}} : (tensor<2x3xf32>) -> tensor<2x3xf16>
func.func @elementwise(%a: tensor<2x3xf32>, %b: tensor<1x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf16>) {
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %0 = tosa.add %a, %b : (tensor<2x3xf32>, tensor<1x3xf32>) -> tensor<2x3xf32>
  %1 = tosa.sub %0, %b : (tensor<2x3xf32>, tensor<1x3xf32>) -> tensor<2x3xf32>
  %2 = tosa.mul %1, %b, %shift : (tensor<2x3xf32>, tensor<1x3xf32>, tensor<1xi8>) -> tensor<2x3xf32>
  %3 = tosa.negate %2, %zp, %zp : (tensor<2x3xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<2x3xf32>
  %4 = tosa.abs %3 : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %5 = tosa.clamp %4 {min_val = 0.0 : f32, max_val = 6.0 : f32} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %6 = tosa.maximum %5, %a : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %7 = tosa.minimum %6, %a : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %8 = tosa.exp %7 : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %9 = tosa.log %8 : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %10 = tosa.rsqrt %9 : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %11 = tosa.reciprocal %10 : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %12 = tosa.tanh %11 : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %13 = tosa.sigmoid %12 : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %14 = tosa.erf %13 : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %15 = tosa.pow %14, %a : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %16 = tosa.equal %15, %a : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xi1>
  %17 = tosa.greater %15, %a : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xi1>
  %18 = tosa.greater_equal %15, %a : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xi1>
  %19 = tosa.select %16, %15, %a : (tensor<2x3xi1>, tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %20 = tosa.select %17, %19, %a : (tensor<2x3xi1>, tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %21 = tosa.select %18, %20, %a : (tensor<2x3xi1>, tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %22 = tosa.cast %21 : (tensor<2x3xf32>) -> tensor<2x3xf16>
  return %21, %22 : tensor<2x3xf32>, tensor<2x3xf16>
}

// -----

// CHECK-LABEL: func.func @reductions_and_pooling
// CHECK-DAG: tosa.reduce_sum %{{.*}} {axis = 1 : i32}
// CHECK-DAG: tosa.reduce_max
// CHECK-DAG: tosa.reduce_min
// CHECK-DAG: tosa.reduce_product
// CHECK-DAG: tosa.reduce_all
// CHECK-DAG: tosa.reduce_any
// CHECK-DAG: tosa.argmax %{{.*}} {axis = 3 : i32}
// CHECK-DAG: tosa.max_pool2d %{{.*}} {kernel = array<i64: 2, 2>, pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 2, 2>}
// CHECK-DAG: tosa.avg_pool2d %{{.*}} {acc_type = f32, kernel = array<i64: 2, 2>, pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 2, 2>}
func.func @reductions_and_pooling(%x: tensor<1x4x4x2xf32>, %p: tensor<1x4x4x2xi1>) -> (tensor<1x1x4x2xf32>, tensor<1x4x1x2xf32>, tensor<1x4x4x1xf32>, tensor<1x4x4x1xf32>, tensor<1x1x4x2xi1>, tensor<1x4x1x2xi1>, tensor<1x4x4xi32>, tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>) {
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %0 = tosa.reduce_sum %x {axis = 1 : i32} : (tensor<1x4x4x2xf32>) -> tensor<1x1x4x2xf32>
  %1 = tosa.reduce_max %x {axis = 2 : i32} : (tensor<1x4x4x2xf32>) -> tensor<1x4x1x2xf32>
  %2 = tosa.reduce_min %x {axis = 3 : i32} : (tensor<1x4x4x2xf32>) -> tensor<1x4x4x1xf32>
  %3 = tosa.reduce_product %x {axis = 3 : i32} : (tensor<1x4x4x2xf32>) -> tensor<1x4x4x1xf32>
  %4 = tosa.reduce_all %p {axis = 1 : i32} : (tensor<1x4x4x2xi1>) -> tensor<1x1x4x2xi1>
  %5 = tosa.reduce_any %p {axis = 2 : i32} : (tensor<1x4x4x2xi1>) -> tensor<1x4x1x2xi1>
  %6 = tosa.argmax %x {axis = 3 : i32} : (tensor<1x4x4x2xf32>) -> tensor<1x4x4xi32>
  %7 = tosa.max_pool2d %x {kernel = array<i64: 2, 2>, pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 2, 2>} : (tensor<1x4x4x2xf32>) -> tensor<1x2x2x2xf32>
  %8 = tosa.avg_pool2d %x, %zp, %zp {acc_type = f32, kernel = array<i64: 2, 2>, pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 2, 2>} : (tensor<1x4x4x2xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x2x2x2xf32>
  return %0, %1, %2, %3, %4, %5, %6, %7, %8 : tensor<1x1x4x2xf32>, tensor<1x4x1x2xf32>, tensor<1x4x4x1xf32>, tensor<1x4x4x1xf32>, tensor<1x1x4x2xi1>, tensor<1x4x1x2xi1>, tensor<1x4x4xi32>, tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>
}

// -----

// CHECK-LABEL: func.func @data_movement
// CHECK-DAG: tosa.reshape
// CHECK-DAG: tosa.transpose %{{.*}} {perms = array<i32: 1, 0>}
// CHECK-DAG: tosa.slice
// CHECK-DAG: tosa.pad
// CHECK-DAG: tosa.concat %{{.*}} {axis = 0 : i32}
// CHECK-DAG: tosa.tile
// CHECK-DAG: tosa.gather
func.func @data_movement(%x: tensor<2x3xf32>, %v: tensor<1x5x2xf32>, %i: tensor<1x3xi32>) -> (tensor<3x2xf32>, tensor<3x2xf32>, tensor<1x2xf32>, tensor<4x5xf32>, tensor<4x3xf32>, tensor<4x3xf32>, tensor<1x3x2xf32>) {
  %s = tosa.const_shape {values = dense<[3, 2]> : tensor<2xindex>} : () -> !tosa.shape<2>
  %0 = tosa.reshape %x, %s : (tensor<2x3xf32>, !tosa.shape<2>) -> tensor<3x2xf32>
  %1 = tosa.transpose %x {perms = array<i32: 1, 0>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
  %start = tosa.const_shape {values = dense<[1, 1]> : tensor<2xindex>} : () -> !tosa.shape<2>
  %size = tosa.const_shape {values = dense<[1, 2]> : tensor<2xindex>} : () -> !tosa.shape<2>
  %2 = tosa.slice %x, %start, %size : (tensor<2x3xf32>, !tosa.shape<2>, !tosa.shape<2>) -> tensor<1x2xf32>
  %padding = tosa.const_shape {values = dense<[1, 1, 0, 2]> : tensor<4xindex>} : () -> !tosa.shape<4>
  %pv = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %3 = tosa.pad %x, %padding, %pv : (tensor<2x3xf32>, !tosa.shape<4>, tensor<1xf32>) -> tensor<4x5xf32>
  %4 = tosa.concat %x, %x {axis = 0 : i32} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<4x3xf32>
  %m = tosa.const_shape {values = dense<[2, 1]> : tensor<2xindex>} : () -> !tosa.shape<2>
  %5 = tosa.tile %x, %m : (tensor<2x3xf32>, !tosa.shape<2>) -> tensor<4x3xf32>
  %6 = tosa.gather %v, %i : (tensor<1x5x2xf32>, tensor<1x3xi32>) -> tensor<1x3x2xf32>
  return %0, %1, %2, %3, %4, %5, %6 : tensor<3x2xf32>, tensor<3x2xf32>, tensor<1x2xf32>, tensor<4x5xf32>, tensor<4x3xf32>, tensor<4x3xf32>, tensor<1x3x2xf32>
}

// -----

// Weights in every spelling real exporters use; f64 and i1 tensors.
// CHECK-LABEL: func.func @constants
// CHECK: dense<[1.000000e+00, 2.000000e+00]> : tensor<2xf32>
// CHECK: dense<0xFFF0000000000000> : tensor<1xf64>
// CHECK: dense<[true, false]> : tensor<2xi1>
// CHECK: dense<[3, 4]> : tensor<2xi32>
// CHECK: dense<[1.000000e+00, 2.000000e+00]> : tensor<2xf32>
func.func @constants() -> (tensor<2xf32>, tensor<1xf64>, tensor<2xi1>, tensor<2xi32>, tensor<2xf32>) {
  %0 = "tosa.const"() <{values = dense<"0x0000803F00000040"> : tensor<2xf32>}> : () -> tensor<2xf32>
  %1 = "tosa.const"() <{values = dense<0xFFF0000000000000> : tensor<1xf64>}> : () -> tensor<1xf64>
  %2 = "tosa.const"() <{values = dense<[true, false]> : tensor<2xi1>}> : () -> tensor<2xi1>
  %3 = arith.constant dense<[3, 4]> : tensor<2xi32>
  %4 = "tosa.const"() <{values = dense_resource<blob_a> : tensor<2xf32>}> : () -> tensor<2xf32>
  return %0, %1, %2, %3, %4 : tensor<2xf32>, tensor<1xf64>, tensor<2xi1>, tensor<2xi32>, tensor<2xf32>
}

{-#
  dialect_resources: {
    builtin: {
      blob_a: "0x040000000000803F00000040"
    }
  }
#-}

// -----

// The rounding and trigonometric ops (issue 15; rotary position embeddings use sin and cos).
// CHECK-LABEL: func.func @rounding_and_trig
// CHECK: tosa.ceil %{{.*}} : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK: tosa.floor %{{.*}} : (tensor<2x3xf16>) -> tensor<2x3xf16>
// CHECK: tosa.sin %{{.*}} : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK: tosa.cos %{{.*}} : (tensor<2x3xbf16>) -> tensor<2x3xbf16>
func.func @rounding_and_trig(%a: tensor<2x3xf32>, %h: tensor<2x3xf16>, %b: tensor<2x3xbf16>) -> (tensor<2x3xf32>, tensor<2x3xf16>, tensor<2x3xf32>, tensor<2x3xbf16>) {
  %0 = tosa.ceil %a : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %1 = tosa.floor %h : (tensor<2x3xf16>) -> tensor<2x3xf16>
  %2 = tosa.sin %0 : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %3 = tosa.cos %b : (tensor<2x3xbf16>) -> tensor<2x3xbf16>
  return %0, %1, %2, %3 : tensor<2x3xf32>, tensor<2x3xf16>, tensor<2x3xf32>, tensor<2x3xbf16>
}

// -----

// The bitwise ops on integers and the logical ops on i1 (issue 15).
// CHECK-LABEL: func.func @bitwise_and_logical
// CHECK: tosa.bitwise_and
// CHECK: tosa.bitwise_or
// CHECK: tosa.bitwise_xor
// CHECK: tosa.bitwise_not %{{.*}} : (tensor<2x3xi32>) -> tensor<2x3xi32>
// CHECK: tosa.logical_and
// CHECK: tosa.logical_or
// CHECK: tosa.logical_xor
// CHECK: tosa.logical_not %{{.*}} : (tensor<2x3xi1>) -> tensor<2x3xi1>
func.func @bitwise_and_logical(%a: tensor<2x3xi32>, %b: tensor<1x3xi32>, %p: tensor<2x3xi1>, %q: tensor<2x1xi1>) -> (tensor<2x3xi32>, tensor<2x3xi1>) {
  %0 = tosa.bitwise_and %a, %b : (tensor<2x3xi32>, tensor<1x3xi32>) -> tensor<2x3xi32>
  %1 = tosa.bitwise_or %0, %a : (tensor<2x3xi32>, tensor<2x3xi32>) -> tensor<2x3xi32>
  %2 = tosa.bitwise_xor %1, %b : (tensor<2x3xi32>, tensor<1x3xi32>) -> tensor<2x3xi32>
  %3 = tosa.bitwise_not %2 : (tensor<2x3xi32>) -> tensor<2x3xi32>
  %4 = tosa.logical_and %p, %q : (tensor<2x3xi1>, tensor<2x1xi1>) -> tensor<2x3xi1>
  %5 = tosa.logical_or %4, %p : (tensor<2x3xi1>, tensor<2x3xi1>) -> tensor<2x3xi1>
  %6 = tosa.logical_xor %5, %q : (tensor<2x3xi1>, tensor<2x1xi1>) -> tensor<2x3xi1>
  %7 = tosa.logical_not %6 : (tensor<2x3xi1>) -> tensor<2x3xi1>
  return %3, %7 : tensor<2x3xi32>, tensor<2x3xi1>
}

// -----

// The shifts, clz, intdiv, identity and reverse (issue 15).
// CHECK-LABEL: func.func @shifts_and_movement
// CHECK: tosa.logical_left_shift %{{.*}} : (tensor<2x3xi8>, tensor<1x3xi8>) -> tensor<2x3xi8>
// CHECK: tosa.logical_right_shift
// CHECK: tosa.arithmetic_right_shift %{{.*}} {round = true}
// CHECK: tosa.arithmetic_right_shift %{{.*}} {round = false}
// CHECK: tosa.clz %{{.*}} : (tensor<2x3xi32>) -> tensor<2x3xi32>
// CHECK: tosa.intdiv
// CHECK: tosa.identity %{{.*}} : (tensor<2x3xf16>) -> tensor<2x3xf16>
// CHECK: tosa.reverse %{{.*}} {axis = 1 : i32} : (tensor<2x3xf16>) -> tensor<2x3xf16>
func.func @shifts_and_movement(%a: tensor<2x3xi8>, %b: tensor<1x3xi8>, %c: tensor<2x3xi32>, %x: tensor<2x3xf16>) -> (tensor<2x3xi8>, tensor<2x3xi32>, tensor<2x3xf16>) {
  %0 = tosa.logical_left_shift %a, %b : (tensor<2x3xi8>, tensor<1x3xi8>) -> tensor<2x3xi8>
  %1 = tosa.logical_right_shift %0, %b : (tensor<2x3xi8>, tensor<1x3xi8>) -> tensor<2x3xi8>
  %2 = tosa.arithmetic_right_shift %1, %b {round = true} : (tensor<2x3xi8>, tensor<1x3xi8>) -> tensor<2x3xi8>
  %3 = tosa.arithmetic_right_shift %c, %c {round = false} : (tensor<2x3xi32>, tensor<2x3xi32>) -> tensor<2x3xi32>
  %4 = tosa.clz %3 : (tensor<2x3xi32>) -> tensor<2x3xi32>
  %5 = tosa.intdiv %4, %c : (tensor<2x3xi32>, tensor<2x3xi32>) -> tensor<2x3xi32>
  %6 = tosa.identity %x : (tensor<2x3xf16>) -> tensor<2x3xf16>
  %7 = tosa.reverse %6 {axis = 1 : i32} : (tensor<2x3xf16>) -> tensor<2x3xf16>
  return %2, %5, %7 : tensor<2x3xi8>, tensor<2x3xi32>, tensor<2x3xf16>
}

// -----

// tosa.resize in both modes, i8 bilinear to i32 (issue 15).
// CHECK-LABEL: func.func @resize
// CHECK: tosa.resize %{{.*}} {mode = BILINEAR} : (tensor<1x3x3x2xf16>, !tosa.shape<4>, !tosa.shape<2>, !tosa.shape<2>) -> tensor<1x6x6x2xf16>
// CHECK: tosa.resize %{{.*}} {mode = NEAREST_NEIGHBOR}
// CHECK: tosa.resize %{{.*}} {mode = BILINEAR} : (tensor<1x3x3x2xi8>, !tosa.shape<4>, !tosa.shape<2>, !tosa.shape<2>) -> tensor<1x6x6x2xi32>
func.func @resize(%x: tensor<1x3x3x2xf16>, %q: tensor<1x3x3x2xi8>) -> (tensor<1x6x6x2xf16>, tensor<1x6x6x2xf16>, tensor<1x6x6x2xi32>) {
  %s = tosa.const_shape {values = dense<[4, 2, 4, 2]> : tensor<4xindex>} : () -> !tosa.shape<4>
  %o = tosa.const_shape {values = dense<-1> : tensor<2xindex>} : () -> !tosa.shape<2>
  %b = tosa.const_shape {values = dense<1> : tensor<2xindex>} : () -> !tosa.shape<2>
  %0 = tosa.resize %x, %s, %o, %b {mode = BILINEAR} : (tensor<1x3x3x2xf16>, !tosa.shape<4>, !tosa.shape<2>, !tosa.shape<2>) -> tensor<1x6x6x2xf16>
  %1 = tosa.resize %x, %s, %o, %b {mode = NEAREST_NEIGHBOR} : (tensor<1x3x3x2xf16>, !tosa.shape<4>, !tosa.shape<2>, !tosa.shape<2>) -> tensor<1x6x6x2xf16>
  %2 = tosa.resize %q, %s, %o, %b {mode = BILINEAR} : (tensor<1x3x3x2xi8>, !tosa.shape<4>, !tosa.shape<2>, !tosa.shape<2>) -> tensor<1x6x6x2xi32>
  return %0, %1, %2 : tensor<1x6x6x2xf16>, tensor<1x6x6x2xf16>, tensor<1x6x6x2xi32>
}

// -----

// tosa.table on i8 (issue 15).
// CHECK-LABEL: func.func @table
// CHECK: tosa.table %{{.*}} : (tensor<2x5xi8>, tensor<256xi8>) -> tensor<2x5xi8>
func.func @table(%x: tensor<2x5xi8>, %t: tensor<256xi8>) -> tensor<2x5xi8> {
  %0 = tosa.table %x, %t : (tensor<2x5xi8>, tensor<256xi8>) -> tensor<2x5xi8>
  return %0 : tensor<2x5xi8>
}

// -----

// tosa.rescale, per channel with double rounding (issue 15).
// CHECK-LABEL: func.func @rescale
// CHECK: tosa.rescale %{{.*}} {input_unsigned = false, output_unsigned = false, per_channel = true, rounding_mode = DOUBLE_ROUND, scale32 = true} : (tensor<2x3xi8>, tensor<3xi32>, tensor<3xi8>, tensor<1xi8>, tensor<1xi32>) -> tensor<2x3xi32>
func.func @rescale(%x: tensor<2x3xi8>) -> tensor<2x3xi32> {
  %m = "tosa.const"() <{values = dense<[1073741824, 1500000000, 2000000000]> : tensor<3xi32>}> : () -> tensor<3xi32>
  %s = "tosa.const"() <{values = dense<[30, 31, 40]> : tensor<3xi8>}> : () -> tensor<3xi8>
  %iz = "tosa.const"() <{values = dense<3> : tensor<1xi8>}> : () -> tensor<1xi8>
  %oz = "tosa.const"() <{values = dense<0> : tensor<1xi32>}> : () -> tensor<1xi32>
  %0 = tosa.rescale %x, %m, %s, %iz, %oz {input_unsigned = false, output_unsigned = false, per_channel = true, rounding_mode = DOUBLE_ROUND, scale32 = true} : (tensor<2x3xi8>, tensor<3xi32>, tensor<3xi8>, tensor<1xi8>, tensor<1xi32>) -> tensor<2x3xi32>
  return %0 : tensor<2x3xi32>
}

// -----

// tosa.scatter (issue 15).
// CHECK-LABEL: func.func @scatter
// CHECK: tosa.scatter %{{.*}} : (tensor<2x5x3xf32>, tensor<2x2xi32>, tensor<2x2x3xf32>) -> tensor<2x5x3xf32>
func.func @scatter(%v: tensor<2x5x3xf32>, %i: tensor<2x2xi32>, %x: tensor<2x2x3xf32>) -> tensor<2x5x3xf32> {
  %0 = tosa.scatter %v, %i, %x : (tensor<2x5x3xf32>, tensor<2x2xi32>, tensor<2x2x3xf32>) -> tensor<2x5x3xf32>
  return %0 : tensor<2x5x3xf32>
}

// -----

// tosa.conv3d (issue 15).
// CHECK-LABEL: func.func @conv3d
// CHECK: tosa.conv3d %{{.*}} {acc_type = f32, dilation = array<i64: 1, 1, 2>, pad = array<i64: 1, 0, 1, 1, 0, 2>, stride = array<i64: 2, 1, 1>} : (tensor<1x5x6x7x3xf32>, tensor<4x2x3x3x3xf32>, tensor<4xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x3x6x5x4xf32>
func.func @conv3d(%x: tensor<1x5x6x7x3xf32>) -> tensor<1x3x6x5x4xf32> {
  %w = "tosa.const"() <{values = dense<0.5> : tensor<4x2x3x3x3xf32>}> : () -> tensor<4x2x3x3x3xf32>
  %b = "tosa.const"() <{values = dense<0.0> : tensor<4xf32>}> : () -> tensor<4xf32>
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %0 = tosa.conv3d %x, %w, %b, %zp, %zp {acc_type = f32, dilation = array<i64: 1, 1, 2>, pad = array<i64: 1, 0, 1, 1, 0, 2>, stride = array<i64: 2, 1, 1>} : (tensor<1x5x6x7x3xf32>, tensor<4x2x3x3x3xf32>, tensor<4xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x3x6x5x4xf32>
  return %0 : tensor<1x3x6x5x4xf32>
}

// -----

// i16 and i48 (TOSA's 16-bit integer extension): an i16 x i8 conv2d into i48, a rescale of
// i48 with 16-bit multipliers, an i16 table (issue 15).
// CHECK-LABEL: func.func @int16
// CHECK: "tosa.const"() <{values = dense<[-140737488355328, 0, 1, 140737488355327]> : tensor<4xi48>}>
// CHECK: tosa.conv2d %{{.*}} {acc_type = i48, {{.*}}} : (tensor<1x2x2x3xi16>, tensor<4x1x1x3xi8>, tensor<4xi48>, tensor<1xi16>, tensor<1xi8>) -> tensor<1x2x2x4xi48>
// CHECK: tosa.rescale %{{.*}} {{.*}}scale32 = false} : (tensor<1x2x2x4xi48>, tensor<1xi16>, tensor<1xi8>, tensor<1xi48>, tensor<1xi16>) -> tensor<1x2x2x4xi16>
// CHECK: tosa.table %{{.*}} : (tensor<1x2x2x4xi16>, tensor<513xi16>) -> tensor<1x2x2x4xi32>
func.func @int16(%x: tensor<1x2x2x3xi16>, %t: tensor<513xi16>) -> (tensor<1x2x2x4xi32>, tensor<4xi48>) {
  %w = "tosa.const"() <{values = dense<3> : tensor<4x1x1x3xi8>}> : () -> tensor<4x1x1x3xi8>
  %b = "tosa.const"() <{values = dense<[1, -2, 3, -4]> : tensor<4xi48>}> : () -> tensor<4xi48>
  %edges = "tosa.const"() <{values = dense<[-140737488355328, 0, 1, 140737488355327]> : tensor<4xi48>}> : () -> tensor<4xi48>
  %xz = "tosa.const"() <{values = dense<0> : tensor<1xi16>}> : () -> tensor<1xi16>
  %wz = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %0 = tosa.conv2d %x, %w, %b, %xz, %wz {acc_type = i48, dilation = array<i64: 1, 1>, pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 1, 1>} : (tensor<1x2x2x3xi16>, tensor<4x1x1x3xi8>, tensor<4xi48>, tensor<1xi16>, tensor<1xi8>) -> tensor<1x2x2x4xi48>
  %m = "tosa.const"() <{values = dense<16384> : tensor<1xi16>}> : () -> tensor<1xi16>
  %s = "tosa.const"() <{values = dense<15> : tensor<1xi8>}> : () -> tensor<1xi8>
  %iz = "tosa.const"() <{values = dense<0> : tensor<1xi48>}> : () -> tensor<1xi48>
  %oz = "tosa.const"() <{values = dense<0> : tensor<1xi16>}> : () -> tensor<1xi16>
  %1 = tosa.rescale %0, %m, %s, %iz, %oz {input_unsigned = false, output_unsigned = false, per_channel = false, rounding_mode = SINGLE_ROUND, scale32 = false} : (tensor<1x2x2x4xi48>, tensor<1xi16>, tensor<1xi8>, tensor<1xi48>, tensor<1xi16>) -> tensor<1x2x2x4xi16>
  %2 = tosa.table %1, %t : (tensor<1x2x2x4xi16>, tensor<513xi16>) -> tensor<1x2x2x4xi32>
  return %2, %edges : tensor<1x2x2x4xi32>, tensor<4xi48>
}

// -----

// tosa.cond_if and tosa.while_loop (issue 15): several results, a region that captures a
// function argument, and a cond_if nested in a loop body that captures from two levels up.
// CHECK-LABEL: func.func @control_flow
// CHECK: tosa.while_loop (%{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}) : (tensor<i32>, tensor<3xf32>) -> (tensor<i32>, tensor<3xf32>)
// CHECK: tosa.cond_if %{{.*}} (%{{.*}} = %{{.*}}) : tensor<i1> (tensor<3xf32>) -> tensor<3xf32>
// CHECK: tosa.add %{{.*}}, %arg1
// CHECK: tosa.yield
// CHECK: } else {
// CHECK: return %{{[0-9]+}}#0, %{{[0-9]+}}#1 : tensor<i32>, tensor<3xf32>
func.func @control_flow(%n: tensor<i32>, %x: tensor<3xf32>) -> (tensor<i32>, tensor<3xf32>) {
  %zero = "tosa.const"() <{values = dense<0> : tensor<i32>}> : () -> tensor<i32>
  %r:2 = tosa.while_loop (%i = %zero, %acc = %x) : (tensor<i32>, tensor<3xf32>) -> (tensor<i32>, tensor<3xf32>) {
    %go = tosa.greater %n, %i : (tensor<i32>, tensor<i32>) -> tensor<i1>
    tosa.yield %go : tensor<i1>
  } do {
  ^bb0(%i: tensor<i32>, %acc: tensor<3xf32>):
    %one = "tosa.const"() <{values = dense<1> : tensor<i32>}> : () -> tensor<i32>
    %j = tosa.add %i, %one : (tensor<i32>, tensor<i32>) -> tensor<i32>
    %odd = tosa.bitwise_and %i, %one : (tensor<i32>, tensor<i32>) -> tensor<i32>
    %c = tosa.equal %odd, %one : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %next = tosa.cond_if %c (%a = %acc) : tensor<i1> (tensor<3xf32>) -> tensor<3xf32> {
    ^bb0(%a: tensor<3xf32>):
      %s = tosa.add %a, %x : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
      tosa.yield %s : tensor<3xf32>
    } else {
    ^bb0(%a: tensor<3xf32>):
      tosa.yield %a : tensor<3xf32>
    }
    tosa.yield %j, %next : tensor<i32>, tensor<3xf32>
  }
  return %r#0, %r#1 : tensor<i32>, tensor<3xf32>
}
