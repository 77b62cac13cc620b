// The policy rows of the rounding and trigonometric ops (issue 15): sin and cos are on the fp32
// list (an fp16 argument has lost the phase of a large angle: rotary position embeddings take
// sin/cos of position x frequency, in the thousands), ceil and floor follow their input (exact
// in any type). With a matmul feeding it, floor runs in fp16 and sin stays f32.
// RUN: %f16c compile %s --precision=fp16 --emit=report | FileCheck %s
// The mixed-precision graph gives the reference's bits on the JIT and on the LLVM x86-64 backend.
// RUN: %f16c compile %s --precision=fp16 --emit=mlir -o %t.fp16.mlir
// RUN: %f16c run %t.fp16.mlir --target=reference --input %inputs/x_4x64_f32.npy --input %inputs/angles_4x64_f32.npy --output %t.ref.npy
// RUN: %f16c run %t.fp16.mlir --input %inputs/x_4x64_f32.npy --input %inputs/angles_4x64_f32.npy --output %t.jit.npy
// RUN: %f16c run %t.fp16.mlir --backend=llvm --input %inputs/x_4x64_f32.npy --input %inputs/angles_4x64_f32.npy --output %t.llvm.npy
// RUN: cmp %t.ref.npy %t.jit.npy
// RUN: cmp %t.ref.npy %t.llvm.npy
// CHECK: tosa.sin{{ +}}rope.mlir:{{.*}}f32{{ +}}-{{ +}}fp32-list
// CHECK: tosa.cos{{ +}}rope.mlir:{{.*}}f32{{ +}}-{{ +}}fp32-list
// CHECK: tosa.matmul{{ +}}rope.mlir:{{.*}}f16{{ +}}f32{{ +}}low-list
// CHECK: tosa.floor{{ +}}rope.mlir:{{.*}}f16{{ +}}-{{ +}}follow
func.func @rope(%x: tensor<4x64xf32>, %p: tensor<4x64xf32>) -> tensor<4x64xf32> {
  %s = tosa.sin %p : (tensor<4x64xf32>) -> tensor<4x64xf32>
  %c = tosa.cos %p : (tensor<4x64xf32>) -> tensor<4x64xf32>
  %w = "tosa.const"() <{values = dense<0.125> : tensor<1x64x64xf32>}> : () -> tensor<1x64x64xf32>
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %s3 = tosa.const_shape {values = dense<[1, 4, 64]> : tensor<3xindex>} : () -> !tosa.shape<3>
  %x3 = tosa.reshape %x, %s3 : (tensor<4x64xf32>, !tosa.shape<3>) -> tensor<1x4x64xf32>
  %mm = tosa.matmul %x3, %w, %zp, %zp : (tensor<1x4x64xf32>, tensor<1x64x64xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x4x64xf32>
  %s2 = tosa.const_shape {values = dense<[4, 64]> : tensor<2xindex>} : () -> !tosa.shape<2>
  %y = tosa.reshape %mm, %s2 : (tensor<1x4x64xf32>, !tosa.shape<2>) -> tensor<4x64xf32>
  %f = tosa.floor %y : (tensor<4x64xf32>) -> tensor<4x64xf32>
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %m = tosa.mul %f, %s, %shift : (tensor<4x64xf32>, tensor<4x64xf32>, tensor<1xi8>) -> tensor<4x64xf32>
  %a = tosa.add %m, %c : (tensor<4x64xf32>, tensor<4x64xf32>) -> tensor<4x64xf32>
  %e = tosa.ceil %a : (tensor<4x64xf32>) -> tensor<4x64xf32>
  return %e : tensor<4x64xf32>
}
