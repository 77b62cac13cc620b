// -verify-diagnostics fails when an expected diagnostic is missing or one is unexpected.
// RUN: not %f16c opt %s -verify-diagnostics 2>&1 | FileCheck %s

// CHECK: error: unexpected error: 'tosa.clz' is not supported by f16c
// CHECK: error: expected error "something else" was not produced (expected on line 12)
func.func @f(%x: tensor<4xi32>) -> tensor<4xi32> {
  %0 = tosa.clz %x : (tensor<4xi32>) -> tensor<4xi32>
  return %0 : tensor<4xi32>
}

// expected-error@+1 {{something else}}
