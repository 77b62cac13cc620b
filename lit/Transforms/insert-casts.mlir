// RUN: %f16c opt %s -split-input-file -verify-diagnostics --insert-casts | FileCheck %s
// RUN: %f16c opt %s -split-input-file -verify-diagnostics --insert-casts="fold-lossy=true" | FileCheck %s --check-prefix=LOSSY
// RUN: %f16c opt %s -split-input-file -verify-diagnostics --insert-casts="move-casts=false" | FileCheck %s --check-prefix=NOMOVE
// Everything insert-casts prints must be valid TOSA for MLIR itself:
// RUN: not %f16c opt %s -split-input-file --insert-casts > %t 2>/dev/null
// RUN: mlir-opt -split-input-file %t -o /dev/null
// RUN: FileCheck %s --input-file=%t --check-prefix=CONSUMED
// CONSUMED-NOT: f16c.assigned

// One cast per (value, type), however many users; weights converted at compile time; the
// zero points follow the matmul's type; the result goes back to f32; f32 accumulation.
// CHECK-LABEL: func.func @one_cast_per_value
// CHECK: %[[C:.*]] = tosa.cast %arg0 : (tensor<1x2x3xf32>) -> tensor<1x2x3xf16>
// CHECK-NOT: tosa.cast %arg0
// CHECK-DAG: %[[W:.*]] = "tosa.const"() <{values = dense<5.000000e-01> : tensor<1x3x3xf16>}>
// CHECK-DAG: %[[ZP:.*]] = "tosa.const"() <{values = dense<0.000000e+00> : tensor<1xf16>}>
// CHECK: %[[M1:.*]] = tosa.matmul %[[C]], %[[W]], %[[ZP]], %[[ZP]] {f16c.acc_type = f32} : {{.*}} -> tensor<1x2x3xf16>
// CHECK: %[[M2:.*]] = tosa.matmul %[[C]], %[[W]], %[[ZP]], %[[ZP]] {f16c.acc_type = f32} : {{.*}} -> tensor<1x2x3xf16>
// CHECK: %[[S:.*]] = tosa.add %[[M1]], %[[M2]] : (tensor<1x2x3xf16>, tensor<1x2x3xf16>) -> tensor<1x2x3xf16>
// CHECK: %[[R:.*]] = tosa.cast %[[S]] : (tensor<1x2x3xf16>) -> tensor<1x2x3xf32>
// CHECK: return %[[R]]
func.func @one_cast_per_value(%a: tensor<1x2x3xf32>) -> tensor<1x2x3xf32> {
  %w = "tosa.const"() <{values = dense<0.5> : tensor<1x3x3xf32>}> : () -> tensor<1x3x3xf32>
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %0 = tosa.matmul %a, %w, %zp, %zp {f16c.assigned = "f16"} : (tensor<1x2x3xf32>, tensor<1x3x3xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x2x3xf32>
  %1 = tosa.matmul %a, %w, %zp, %zp {f16c.assigned = "f16"} : (tensor<1x2x3xf32>, tensor<1x3x3xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x2x3xf32>
  %2 = tosa.add %0, %1 {f16c.assigned = "f16"} : (tensor<1x2x3xf32>, tensor<1x2x3xf32>) -> tensor<1x2x3xf32>
  return %2 : tensor<1x2x3xf32>
}

// -----

// A weight used by an f16 op and an f32 op keeps both copies.
// CHECK-LABEL: func.func @weight_both_ways
// CHECK-DAG: "tosa.const"() <{values = dense<2.500000e-01> : tensor<1x2x3xf16>}>
// CHECK-DAG: "tosa.const"() <{values = dense<2.500000e-01> : tensor<1x2x3xf32>}>
func.func @weight_both_ways(%a: tensor<1x2x3xf32>) -> (tensor<1x2x3xf32>, tensor<1x2x3xf32>) {
  %b = "tosa.const"() <{values = dense<0.25> : tensor<1x2x3xf32>}> : () -> tensor<1x2x3xf32>
  %0 = tosa.add %a, %b {f16c.assigned = "f16"} : (tensor<1x2x3xf32>, tensor<1x2x3xf32>) -> tensor<1x2x3xf32>
  %1 = tosa.sub %a, %b {f16c.assigned = "f32"} : (tensor<1x2x3xf32>, tensor<1x2x3xf32>) -> tensor<1x2x3xf32>
  return %0, %1 : tensor<1x2x3xf32>, tensor<1x2x3xf32>
}

// -----

// f16 -> f32 -> f16 is exact: the round trip disappears.
// CHECK-LABEL: func.func @round_trip
// CHECK-NOT: tosa.cast
// CHECK: %[[N:.*]] = tosa.negate %arg0
// CHECK-SAME: -> tensor<2x3xf16>
// CHECK-NOT: tosa.cast
// CHECK: return %[[N]]
func.func @round_trip(%a: tensor<2x3xf16>) -> tensor<2x3xf16> {
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %0 = tosa.cast %a : (tensor<2x3xf16>) -> tensor<2x3xf32>
  %1 = tosa.negate %0, %zp, %zp {f16c.assigned = "f16"} : (tensor<2x3xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<2x3xf32>
  %2 = tosa.cast %1 : (tensor<2x3xf32>) -> tensor<2x3xf16>
  return %2 : tensor<2x3xf16>
}

// -----

// f32 -> f16 -> f32 is lossy: kept unless fold-lossy=true.
// CHECK-LABEL: func.func @lossy_pair
// CHECK: tosa.cast %arg0 : (tensor<2x3xf32>) -> tensor<2x3xf16>
// CHECK: tosa.cast
// LOSSY-LABEL: func.func @lossy_pair
// LOSSY-NOT: tosa.cast
// LOSSY: tosa.exp %arg0
func.func @lossy_pair(%a: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = tosa.cast %a : (tensor<2x3xf32>) -> tensor<2x3xf16>
  %1 = tosa.cast %0 : (tensor<2x3xf16>) -> tensor<2x3xf32>
  %2 = tosa.exp %1 {f16c.assigned = "f32"} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %2 : tensor<2x3xf32>
}

// -----

// A cast chain whose first step is exact folds into one cast (the model's f32 -> f64 cast
// now reads the f16 value directly).
// CHECK-LABEL: func.func @chain
// CHECK: %[[E:.*]] = tosa.abs %arg0 {{.*}} -> tensor<2x3xf16>
// CHECK-NEXT: %[[D:.*]] = tosa.cast %[[E]] : (tensor<2x3xf16>) -> tensor<2x3xf64>
// CHECK-NEXT: return %[[D]]
func.func @chain(%a: tensor<2x3xf16>) -> tensor<2x3xf64> {
  %0 = tosa.cast %a : (tensor<2x3xf16>) -> tensor<2x3xf32>
  %1 = tosa.abs %0 {f16c.assigned = "f16"} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %2 = tosa.cast %1 : (tensor<2x3xf32>) -> tensor<2x3xf64>
  return %2 : tensor<2x3xf64>
}

// -----

// Casts move through precision-neutral ops to the narrow side: the transpose before an f16
// conv then moves f16 data, and the round trip through the reshape between two f16 matmuls
// disappears.
// CHECK-LABEL: func.func @motion
// CHECK: %[[C:.*]] = tosa.cast %arg0 : (tensor<1x3x4x4xf32>) -> tensor<1x3x4x4xf16>
// CHECK: tosa.transpose %[[C]] {f16c.rule = "cast-motion", perms = array<i32: 0, 2, 3, 1>} : (tensor<1x3x4x4xf16>) -> tensor<1x4x4x3xf16>
// CHECK: tosa.conv2d {{.*}} -> tensor<1x4x4x2xf16>
// NOMOVE-LABEL: func.func @motion
// NOMOVE: tosa.transpose %arg0 {{.*}} -> tensor<1x4x4x3xf32>
// NOMOVE: tosa.cast {{.*}} -> tensor<1x4x4x3xf16>
func.func @motion(%x: tensor<1x3x4x4xf32>) -> tensor<1x4x4x2xf32> {
  %w = "tosa.const"() <{values = dense<0.5> : tensor<2x1x1x3xf32>}> : () -> tensor<2x1x1x3xf32>
  %b = "tosa.const"() <{values = dense<0.0> : tensor<2xf32>}> : () -> tensor<2xf32>
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %t = tosa.transpose %x {perms = array<i32: 0, 2, 3, 1>, f16c.assigned = "f32"} : (tensor<1x3x4x4xf32>) -> tensor<1x4x4x3xf32>
  %0 = tosa.conv2d %t, %w, %b, %zp, %zp {acc_type = f32, dilation = array<i64: 1, 1>, pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 1, 1>, f16c.assigned = "f16"} : (tensor<1x4x4x3xf32>, tensor<2x1x1x3xf32>, tensor<2xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x4x4x2xf32>
  return %0 : tensor<1x4x4x2xf32>
}

// -----

// CHECK-LABEL: func.func @reshape_between_matmuls
// CHECK: %[[M1:.*]] = tosa.matmul
// CHECK-NEXT: %[[R:.*]] = tosa.reshape %[[M1]], %{{.*}} {f16c.rule = "cast-motion"} : (tensor<1x2x3xf16>, !tosa.shape<3>) -> tensor<1x2x3xf16>
// CHECK-NEXT: tosa.matmul %[[R]]
func.func @reshape_between_matmuls(%a: tensor<1x2x3xf32>) -> tensor<1x2x3xf32> {
  %w = "tosa.const"() <{values = dense<0.5> : tensor<1x3x3xf32>}> : () -> tensor<1x3x3xf32>
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %s = tosa.const_shape {values = dense<[1, 2, 3]> : tensor<3xindex>} : () -> !tosa.shape<3>
  %0 = tosa.matmul %a, %w, %zp, %zp {f16c.assigned = "f16"} : (tensor<1x2x3xf32>, tensor<1x3x3xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x2x3xf32>
  %1 = tosa.reshape %0, %s {f16c.assigned = "f32"} : (tensor<1x2x3xf32>, !tosa.shape<3>) -> tensor<1x2x3xf32>
  %2 = tosa.matmul %1, %w, %zp, %zp {f16c.assigned = "f16"} : (tensor<1x2x3xf32>, tensor<1x3x3xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x2x3xf32>
  return %2 : tensor<1x2x3xf32>
}

// -----

func.func @bad_assigned(%a: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error@+1 {{'tosa.exp' op: f16c.assigned = "i8" is not one of "f32", "f16", "bf16"}}
  %0 = tosa.exp %a {f16c.assigned = "i8"} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @assigned_on_f64(%a: tensor<2x3xf64>) -> tensor<2x3xf64> {
  // expected-error@+1 {{f16c.assigned applies only to ops that compute in f32; this one computes in f64}}
  %0 = tosa.exp %a {f16c.assigned = "f16"} : (tensor<2x3xf64>) -> tensor<2x3xf64>
  return %0 : tensor<2x3xf64>
}
