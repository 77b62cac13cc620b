// A reduction over an axis of size 1 feeding another (found by the differential tester,
// shrunk from a random graph): row regions took the first reduction's per-row scalar for a full
// row and every backend panicked ("full values have a slot"). Now each gives the reference's
// bits. The bf16 arguments take the f32 .npy rounded (NumPy has no bf16), on every target.
// RUN: %f16c run %s --target=reference --input %inputs/x_2x1_f32.npy --input %inputs/x_2x1_f32.npy --output %t.ref.npy | FileCheck %s --allow-empty --check-prefix=NONE
// RUN: %f16c run %s --target=reference --input %inputs/x_2x1_f32.npy --input %inputs/x_2x1_f32.npy | FileCheck %s
// RUN: %f16c run %s --input %inputs/x_2x1_f32.npy --input %inputs/x_2x1_f32.npy --output %t.jit.npy
// RUN: %f16c run %s --backend=llvm --input %inputs/x_2x1_f32.npy --input %inputs/x_2x1_f32.npy --output %t.llvm.npy
// RUN: %f16c run %s --target=aarch64+bf16 --input %inputs/x_2x1_f32.npy --input %inputs/x_2x1_f32.npy --output %t.arm.npy
// RUN: cmp %t.ref.npy %t.jit.npy
// RUN: cmp %t.ref.npy %t.llvm.npy
// RUN: cmp %t.ref.npy %t.arm.npy
// RUN: %f16c compile %s --target=sm_80 --emit=ptx | FileCheck %s --check-prefix=PTX
// NONE-NOT: result
// CHECK: result #0: tensor<2x1xbf16> = [0.0, 0.0]
// PTX: .entry
func.func @diff(%a: tensor<2x1xbf16>, %b: tensor<2x1xbf16>) -> tensor<2x1xbf16> {
  %0 = tosa.reduce_max %b {axis = 1 : i32} : (tensor<2x1xbf16>) -> tensor<2x1xbf16>
  %1 = tosa.reduce_min %0 {axis = 1 : i32} : (tensor<2x1xbf16>) -> tensor<2x1xbf16>
  %2 = tosa.sub %a, %1 : (tensor<2x1xbf16>, tensor<2x1xbf16>) -> tensor<2x1xbf16>
  return %2 : tensor<2x1xbf16>
}
