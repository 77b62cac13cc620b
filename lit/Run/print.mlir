// f16c run without --output prints each result in its own element type: integers as integers
// (16777217 is not representable in f32), booleans as true/false.
// RUN: %f16c run %s --function=ints | FileCheck %s --check-prefix=INT
// RUN: %f16c run %s --function=ints --target=reference | FileCheck %s --check-prefix=INT
// INT: result #0: tensor<2xi32> = [16777217, -3]
// RUN: %f16c run %s --function=bools | FileCheck %s --check-prefix=BOOL
// BOOL: result #0: tensor<2xi1> = [true, false]

func.func @ints() -> tensor<2xi32> {
  %a = "tosa.const"() {values = dense<[16777216, -4]> : tensor<2xi32>} : () -> tensor<2xi32>
  %b = "tosa.const"() {values = dense<1> : tensor<2xi32>} : () -> tensor<2xi32>
  %c = tosa.add %a, %b : (tensor<2xi32>, tensor<2xi32>) -> tensor<2xi32>
  return %c : tensor<2xi32>
}

func.func @bools() -> tensor<2xi1> {
  %a = "tosa.const"() {values = dense<[2.0, 1.0]> : tensor<2xf32>} : () -> tensor<2xf32>
  %b = "tosa.const"() {values = dense<1.5> : tensor<2xf32>} : () -> tensor<2xf32>
  %c = tosa.greater %a, %b : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xi1>
  return %c : tensor<2xi1>
}
