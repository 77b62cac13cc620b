// A conv2d whose OHWI weight is an argument (computed at run time): the JIT packed it as if it
// were a row-major K x N matrix and mixed output channels up (found by the differential tester,
// shrunk from a random graph). Every backend now gives the reference's bits.
// RUN: %f16c run %s --target=reference --input %inputs/w_4x1x1x9_f32.npy --input %inputs/x_1x1x3x9_f32.npy --output %t.ref.npy
// RUN: %f16c run %s --input %inputs/w_4x1x1x9_f32.npy --input %inputs/x_1x1x3x9_f32.npy --output %t.jit.npy
// RUN: %f16c run %s --threads=1 --input %inputs/w_4x1x1x9_f32.npy --input %inputs/x_1x1x3x9_f32.npy --output %t.jit1.npy
// RUN: %f16c run %s --backend=llvm --input %inputs/w_4x1x1x9_f32.npy --input %inputs/x_1x1x3x9_f32.npy --output %t.llvm.npy
// RUN: cmp %t.ref.npy %t.jit.npy
// RUN: cmp %t.ref.npy %t.jit1.npy
// RUN: cmp %t.ref.npy %t.llvm.npy
func.func @f(%w: tensor<4x1x1x9xf32>, %x: tensor<1x1x3x9xf32>) -> tensor<1x1x2x4xf32> {
  %b = "tosa.const"() <{values = dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>}> : () -> tensor<4xf32>
  %z = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %c = tosa.conv2d %x, %w, %b, %z, %z {acc_type = f32, dilation = array<i64: 1, 1>, pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 1, 2>} : (tensor<1x1x3x9xf32>, tensor<4x1x1x9xf32>, tensor<4xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x1x2x4xf32>
  return %c : tensor<1x1x2x4xf32>
}
