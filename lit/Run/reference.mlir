// The reference interpreter runs f32 exactly and f16 under the contract: widen, compute in
// f32, round once to nearest even.
// RUN: %f16c run %s --function=f32_add --input %inputs/x2_f32.npy | FileCheck %s --check-prefix=F32
// RUN: %f16c run %s --function=f16_round --input %inputs/f16_2048.npy | FileCheck %s --check-prefix=F16
// RUN: %f16c run %s --function=f32_add --input %inputs/x2_f32.npy --output %t.npy
// RUN: %f16c run %s --function=f32_add --input %t.npy | FileCheck %s --check-prefix=TWICE

// F32: result #0: tensor<2xf32> = [3.0, -4.0]
// TWICE: result #0: tensor<2xf32> = [6.0, -8.0]
func.func @f32_add(%x: tensor<2xf32>) -> tensor<2xf32> {
  %0 = tosa.add %x, %x : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// 2048 + 1 = 2049 is not an f16; it rounds to 2048 (ties to even). 2048 + 3 = 2051 rounds to 2052.
// F16: result #0: tensor<2xf32> = [2048.0, 2052.0]
func.func @f16_round(%x: tensor<2xf32>) -> tensor<2xf32> {
  %c = "tosa.const"() <{values = dense<[1.0, 3.0]> : tensor<2xf16>}> : () -> tensor<2xf16>
  %0 = tosa.cast %x : (tensor<2xf32>) -> tensor<2xf16>
  %1 = tosa.add %0, %c : (tensor<2xf16>, tensor<2xf16>) -> tensor<2xf16>
  %2 = tosa.cast %1 : (tensor<2xf16>) -> tensor<2xf32>
  return %2 : tensor<2xf32>
}
