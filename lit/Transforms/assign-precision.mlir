// RUN: %f16c opt %s -split-input-file -verify-diagnostics --assign-precision | FileCheck %s
// RUN: %f16c opt %s -split-input-file -verify-diagnostics --policy=O2 --assign-precision | FileCheck %s --check-prefix=O2
// RUN: %f16c opt %s -split-input-file -verify-diagnostics --policy=O3 --assign-precision | FileCheck %s --check-prefix=O3
// RUN: %f16c opt %s -split-input-file -verify-diagnostics --policy=O0 --assign-precision | FileCheck %s --check-prefix=O0
// RUN: %f16c opt %s -split-input-file -verify-diagnostics --precision=fp32 --assign-precision | FileCheck %s --check-prefix=O0
// RUN: not %f16c opt %s -split-input-file --precision=bf16 --target=sm_70 --assign-precision 2>&1 | FileCheck %s --check-prefix=SM70
// RUN: not %f16c opt %s -split-input-file --precision=bf16 --target=sm_70 --strict --assign-precision 2>&1 | FileCheck %s --check-prefix=STRICT
// RUN: %f16c opt %s -split-input-file -verify-diagnostics --precision=bf16 --target=sm_80 --assign-precision | FileCheck %s --check-prefix=SM80
// RUN: %f16c opt %s -split-input-file -verify-diagnostics --keep-f32='^lin1$' --assign-precision | FileCheck %s --check-prefix=KEEP

// The lists: matmul is low, reshape/add follow, exp stays f32.
// CHECK-LABEL: func.func @lists
// CHECK: tosa.matmul {{.*}}f16c.assigned = "f16", f16c.rule = "low-list"
// CHECK: tosa.add {{.*}}f16c.assigned = "f16", f16c.rule = "follow"
// CHECK: tosa.exp {{.*}}f16c.assigned = "f32", f16c.rule = "fp32-list"
// O2-LABEL: func.func @lists
// O2: tosa.matmul {{.*}}f16c.assigned = "f16", f16c.rule = "low-list"
// O2: tosa.add {{.*}}f16c.assigned = "f32", f16c.rule = "unlisted"
// O3-LABEL: func.func @lists
// O3: tosa.exp {{.*}}f16c.assigned = "f16", f16c.rule = "low-list"
// O0-LABEL: func.func @lists
// O0-NOT: f16c.assigned
// SM70: warning: bf16 is not supported on sm_70: 1 op(s) of '@lists' stay f32
// SM70: tosa.matmul {{.*}}f16c.assigned = "f32", f16c.rule = "target"
// STRICT: error: 'tosa.matmul' op would run in bf16, which sm_70 does not support
// SM80-LABEL: func.func @lists
// SM80: tosa.matmul {{.*}}f16c.assigned = "bf16", f16c.rule = "low-list"
// KEEP-LABEL: func.func @lists
// KEEP: tosa.matmul {{.*}}f16c.assigned = "f32", f16c.rule = "keep-f32"
func.func @lists(%a: tensor<1x2x3xf32>) -> tensor<1x2x4xf32> {
  %w = "tosa.const"() <{values = dense<0.5> : tensor<1x3x4xf32>}> : () -> tensor<1x3x4xf32>
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %b = "tosa.const"() <{values = dense<0.25> : tensor<1x1x4xf32>}> : () -> tensor<1x1x4xf32>
  %0 = tosa.matmul %a, %w, %zp, %zp : (tensor<1x2x3xf32>, tensor<1x3x4xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x2x4xf32> loc("lin1")
  %1 = tosa.add %0, %b : (tensor<1x2x4xf32>, tensor<1x1x4xf32>) -> tensor<1x2x4xf32>
  %2 = tosa.exp %1 : (tensor<1x2x4xf32>) -> tensor<1x2x4xf32>
  return %2 : tensor<1x2x4xf32>
}

// -----

// reverse and identity move values: they follow their input (issue 15).
// CHECK-LABEL: func.func @movement_follows
// CHECK: tosa.reverse {{.*}}f16c.assigned = "f16", f16c.rule = "follow"
// CHECK: tosa.identity {{.*}}f16c.assigned = "f16", f16c.rule = "follow"
func.func @movement_follows(%a: tensor<1x2x3xf32>) -> tensor<1x2x4xf32> {
  %w = "tosa.const"() <{values = dense<0.5> : tensor<1x3x4xf32>}> : () -> tensor<1x3x4xf32>
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %0 = tosa.matmul %a, %w, %zp, %zp : (tensor<1x2x3xf32>, tensor<1x3x4xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x2x4xf32>
  %1 = tosa.reverse %0 {axis = 2 : i32} : (tensor<1x2x4xf32>) -> tensor<1x2x4xf32>
  %2 = tosa.identity %1 : (tensor<1x2x4xf32>) -> tensor<1x2x4xf32>
  return %2 : tensor<1x2x4xf32>
}

// -----

// Mixed inputs: the widest wins (the argument stays f32, so the add is f32).
// CHECK-LABEL: func.func @widest
// CHECK: tosa.add {{.*}}f16c.assigned = "f32", f16c.rule = "follow-widest"
func.func @widest(%a: tensor<1x2x3xf32>) -> tensor<1x2x3xf32> {
  %w = "tosa.const"() <{values = dense<0.5> : tensor<1x3x3xf32>}> : () -> tensor<1x3x3xf32>
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %0 = tosa.matmul %a, %w, %zp, %zp : (tensor<1x2x3xf32>, tensor<1x3x3xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x2x3xf32>
  %1 = tosa.add %0, %a : (tensor<1x2x3xf32>, tensor<1x2x3xf32>) -> tensor<1x2x3xf32>
  return %1 : tensor<1x2x3xf32>
}

// -----

// An override in the MLIR wins over the lists, in both directions.
// CHECK-LABEL: func.func @overrides
// CHECK: tosa.matmul {{.*}}f16c.assigned = "f32", f16c.precision = "f32", f16c.rule = "override"
// CHECK: tosa.exp {{.*}}f16c.assigned = "f16", f16c.precision = "f16", f16c.rule = "override"
func.func @overrides(%a: tensor<1x2x3xf32>) -> tensor<1x2x3xf32> {
  %w = "tosa.const"() <{values = dense<0.5> : tensor<1x3x3xf32>}> : () -> tensor<1x3x3xf32>
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %0 = tosa.matmul %a, %w, %zp, %zp {f16c.precision = "f32"} : (tensor<1x2x3xf32>, tensor<1x3x3xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x2x3xf32>
  %1 = tosa.exp %0 {f16c.precision = "f16"} : (tensor<1x2x3xf32>) -> tensor<1x2x3xf32>
  return %1 : tensor<1x2x3xf32>
}

// -----

// A constant that would overflow f16 keeps its user in f32 (never clamped silently).
// CHECK-LABEL: func.func @weight_range
// CHECK: tosa.mul {{.*}}f16c.assigned = "f32", f16c.rule = "weight-range"
func.func @weight_range(%a: tensor<1x2x3xf32>) -> tensor<1x2x3xf32> {
  %w = "tosa.const"() <{values = dense<0.5> : tensor<1x3x3xf32>}> : () -> tensor<1x3x3xf32>
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %big = "tosa.const"() <{values = dense<1.0e5> : tensor<1x1x3xf32>}> : () -> tensor<1x1x3xf32>
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %0 = tosa.matmul %a, %w, %zp, %zp : (tensor<1x2x3xf32>, tensor<1x3x3xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x2x3xf32>
  %1 = tosa.mul %0, %big, %shift : (tensor<1x2x3xf32>, tensor<1x1x3xf32>, tensor<1xi8>) -> tensor<1x2x3xf32>
  return %1 : tensor<1x2x3xf32>
}

// -----

// Weights that amplify unit inputs past the safe range (2 x 3000 > 65504/16) keep the
// contraction f32 at O1 and O2, not at O3.
// CHECK-LABEL: func.func @weight_gain
// CHECK: tosa.matmul {{.*}}f16c.assigned = "f32", f16c.rule = "weight-gain"
// O3-LABEL: func.func @weight_gain
// O3: tosa.matmul {{.*}}f16c.assigned = "f16", f16c.rule = "low-list"
func.func @weight_gain(%a: tensor<1x2x2xf32>) -> tensor<1x2x2xf32> {
  %w = "tosa.const"() <{values = dense<3000.0> : tensor<1x2x2xf32>}> : () -> tensor<1x2x2xf32>
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %0 = tosa.matmul %a, %w, %zp, %zp : (tensor<1x2x2xf32>, tensor<1x2x2xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x2x2xf32>
  return %0 : tensor<1x2x2xf32>
}

// -----

// Calibration ranges (what --calibrate records) above the safe range keep the op f32, and
// its user too (its input is too large); the attribute is consumed.
// CHECK-LABEL: func.func @calibration
// CHECK: tosa.matmul {{.*}}f16c.assigned = "f32", f16c.rule = "calibration"
// CHECK-NOT: f16c.max_abs
// CHECK: tosa.clamp {{.*}}f16c.assigned = "f32", f16c.rule = "follow"
func.func @calibration(%a: tensor<1x2x3xf32>) -> tensor<1x2x3xf32> {
  %w = "tosa.const"() <{values = dense<0.5> : tensor<1x3x3xf32>}> : () -> tensor<1x3x3xf32>
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %0 = tosa.matmul %a, %w, %zp, %zp {f16c.max_abs = 1.0e5 : f64} : (tensor<1x2x3xf32>, tensor<1x3x3xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x2x3xf32>
  %1 = tosa.clamp %0 {min_val = 0.0 : f32, max_val = 6.0 : f32, f16c.max_abs = 6.0 : f64} : (tensor<1x2x3xf32>) -> tensor<1x2x3xf32>
  return %1 : tensor<1x2x3xf32>
}

// -----

// f64 ops and the model's own casts are not candidates.
// CHECK-LABEL: func.func @f64_untouched
// CHECK: tosa.reduce_sum
// CHECK-NOT: f16c.assigned
// CHECK: return
func.func @f64_untouched(%a: tensor<2x3xf64>) -> tensor<2x1xf64> {
  %0 = tosa.reduce_sum %a {axis = 1 : i32} : (tensor<2x3xf64>) -> tensor<2x1xf64>
  return %0 : tensor<2x1xf64>
}

// -----

func.func @bad_override(%a: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error@+1 {{'tosa.exp' op: f16c.precision = "f8" is not one of "f32", "f16", "bf16"}}
  %0 = tosa.exp %a {f16c.precision = "f8"} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @override_without_effect(%a: tensor<2x3xf64>) -> tensor<2x3xf64> {
  // expected-warning@+1 {{f16c.precision has no effect on an op that does not compute in f32}}
  %0 = tosa.exp %a {f16c.precision = "f16"} : (tensor<2x3xf64>) -> tensor<2x3xf64>
  return %0 : tensor<2x3xf64>
}
