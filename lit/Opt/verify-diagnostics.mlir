// -verify-diagnostics fails when an expected diagnostic is missing or one is unexpected.
// RUN: not %f16c opt %s -verify-diagnostics 2>&1 | FileCheck %s

// CHECK: error: unexpected error: 'tosa.rfft2d' is not supported by f16c
// CHECK: error: expected error "something else" was not produced (expected on line 12)
func.func @f(%x: tensor<1x8x8xf32>) -> tensor<1x8x5xf32> {
  %0, %1 = tosa.rfft2d %x : (tensor<1x8x8xf32>) -> (tensor<1x8x5xf32>, tensor<1x8x5xf32>)
  return %0 : tensor<1x8x5xf32>
}

// expected-error@+1 {{something else}}
