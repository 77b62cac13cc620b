// TOSA skips a convolution's padding; it does not multiply it. Here the weight's first tap is
// +inf and, with stride 3, it meets padding in three of the four outputs, which stay finite (the
// reference, the LLVM backends on x86-64 and AArch64, which leave a sum alone for a tap in the
// padding). Backends that multiply the padding's zeros (0 x inf = NaN) must not run it: the
// JIT's packed GEMM refuses it with a located error, and on a GPU the conv runs off the tensor
// cores (issue 14's reproducer gave NaN on the JIT).
// RUN: %f16c run %s --target=reference --input %inputs/x_1x3x3x1_f32.npy --output %t.ref.npy | FileCheck %s --allow-empty --check-prefix=NONE
// RUN: %f16c run %s --target=reference --input %inputs/x_1x3x3x1_f32.npy | FileCheck %s --check-prefix=REF
// RUN: %f16c run %s --backend=llvm --input %inputs/x_1x3x3x1_f32.npy --output %t.llvm.npy
// RUN: cmp %t.llvm.npy %t.ref.npy
// RUN: %f16c run %s --target=aarch64 --input %inputs/x_1x3x3x1_f32.npy --output %t.arm.npy
// RUN: cmp %t.arm.npy %t.ref.npy
// RUN: %f16c run %s --target=aarch64 --precision=fp16 --input %inputs/x_1x3x3x1_f32.npy | FileCheck %s --check-prefix=REF
// RUN: not %f16c run %s --input %inputs/x_1x3x3x1_f32.npy 2>&1 | FileCheck %s --check-prefix=JIT
// RUN: %f16c compile %s --target=sm_80 --precision=fp16 --emit=ptx | FileCheck %s --check-prefix=PTX
// NONE-NOT: result
// REF: result #0: tensor<1x2x2x1xf32> = [-0.125, -0.5, 3.5, -inf]
// JIT: conv-padding-inf.mlir:[[# @LINE + 10]]:8: error: 'tosa.conv2d' is not supported by cranelift-x86_64: a convolution whose padding meets an inf or NaN weight
// PTX-NOT: wmma.mma
// With a finite weight the same conv runs on tensor cores.
// RUN: sed 's/0x7F800000/2.0/' %s > %t.finite.mlir
// RUN: %f16c compile %t.finite.mlir --target=sm_80 --precision=fp16 --emit=ptx | FileCheck %s --check-prefix=FINITE
// FINITE: wmma.mma
func.func @f(%x: tensor<1x3x3x1xf32>) -> tensor<1x2x2x1xf32> {
  %w = "tosa.const"() <{values = dense<[[[[0x7F800000], [1.0], [1.0]], [[1.0], [0.5], [0.25]], [[1.0], [0.0], [-0.5]]]]> : tensor<1x3x3x1xf32>}> : () -> tensor<1x3x3x1xf32>
  %b = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %z = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %c = tosa.conv2d %x, %w, %b, %z, %z {acc_type = f32, dilation = array<i64: 1, 1>, pad = array<i64: 1, 2, 1, 2>, stride = array<i64: 3, 3>} : (tensor<1x3x3x1xf32>, tensor<1x3x3x1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x2x2x1xf32>
  return %c : tensor<1x2x2x1xf32>
}

// The same conv with its weight given at run time (an argument, here holding the inf): lowering
// cannot see the weight, so it treats it as a hazard too: the reference's results on the LLVM
// backend, a located refusal on the JIT.
// RUN: sed -e 's/%x: tensor<1x3x3x1xf32>)/%x: tensor<1x3x3x1xf32>, %w: tensor<1x3x3x1xf32>)/' -e '/%w = "tosa.const"/d' %s > %t.runtime.mlir
// RUN: %f16c run %t.runtime.mlir --backend=llvm --input %inputs/x_1x3x3x1_f32.npy --input %inputs/w_1x3x3x1_inf_f32.npy | FileCheck %s --check-prefix=REF
// RUN: not %f16c run %t.runtime.mlir --input %inputs/x_1x3x3x1_f32.npy --input %inputs/w_1x3x3x1_inf_f32.npy 2>&1 | FileCheck %s --check-prefix=RUNTIME
// RUNTIME: error: 'tosa.conv2d' is not supported by cranelift-x86_64: a convolution whose padding meets an inf or NaN weight
