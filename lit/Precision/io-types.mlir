// With --io-types=low the function takes and returns f16: no casts at the boundary.
// RUN: %f16c opt %s --io-types=low --assign-precision --insert-casts | FileCheck %s
// RUN: %f16c opt %s --assign-precision --insert-casts | FileCheck %s --check-prefix=F32IO

// CHECK-LABEL: func.func @io(%arg0: tensor<1x2x3xf16>) -> tensor<1x2x3xf16>
// CHECK-NOT: tosa.cast
// CHECK: return
// F32IO-LABEL: func.func @io(%arg0: tensor<1x2x3xf32>) -> tensor<1x2x3xf32>
// F32IO: tosa.cast %arg0 : (tensor<1x2x3xf32>) -> tensor<1x2x3xf16>
// F32IO: tosa.cast {{.*}} -> tensor<1x2x3xf32>
func.func @io(%a: tensor<1x2x3xf32>) -> tensor<1x2x3xf32> {
  %w = "tosa.const"() <{values = dense<0.5> : tensor<1x3x3xf32>}> : () -> tensor<1x3x3xf32>
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %0 = tosa.matmul %a, %w, %zp, %zp : (tensor<1x2x3xf32>, tensor<1x3x3xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x2x3xf32>
  return %0 : tensor<1x2x3xf32>
}
