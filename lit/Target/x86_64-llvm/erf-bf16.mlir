// erf of bf16 values (a bf16 GELU's erf(x · 1/√2), its argument rounded to bf16 and widened):
// the LLVM CPU backends look the contract's erf up in a table of its values at the
// non-negative bf16 values (one vgatherdps for sixteen lanes) instead of computing it; erf of
// f32 values is computed. The same bits as the reference and the JIT either way.
// RUN: %f16c compile %s --target=x86_64 --backend=llvm --cpu=x86-64-v4 --precision=fp32 --emit=asm | FileCheck %s --check-prefix=ASM
// RUN: %f16c run %s --target=reference --precision=fp32 --input %inputs/x_4x64_f32.npy --output %t.ref.npy --output %t.ref2.npy
// RUN: %f16c run %s --backend=llvm --precision=fp32 --input %inputs/x_4x64_f32.npy --output %t.llvm.npy --output %t.llvm2.npy
// RUN: cmp %t.llvm.npy %t.ref.npy
// RUN: cmp %t.llvm2.npy %t.ref2.npy
// RUN: %f16c run %s --precision=fp32 --no-cache --input %inputs/x_4x64_f32.npy --output %t.jit.npy --output %t.jit2.npy
// RUN: cmp %t.jit.npy %t.ref.npy
// RUN: cmp %t.jit2.npy %t.ref2.npy
// ASM-LABEL: f16c_k0_{{.*}}:
// ASM: vgatherdps
// ASM-LABEL: f16c_k1_{{.*}}:
// ASM-NOT: vgatherdps
// ASM: vdivps
func.func @f(%a: tensor<4x64xf32>) -> (tensor<4x64xf32>, tensor<4x64xf32>) {
  %h = tosa.cast %a : (tensor<4x64xf32>) -> tensor<4x64xbf16>
  %b = "tosa.const"() <{values = dense<[[-0.5, -0.375, -0.25, -0.125, 0.0, 0.125, 0.25, 0.375, 0.5, -0.5, -0.375, -0.25, -0.125, 0.0, 0.125, 0.25, 0.375, 0.5, -0.5, -0.375, -0.25, -0.125, 0.0, 0.125, 0.25, 0.375, 0.5, -0.5, -0.375, -0.25, -0.125, 0.0, 0.125, 0.25, 0.375, 0.5, -0.5, -0.375, -0.25, -0.125, 0.0, 0.125, 0.25, 0.375, 0.5, -0.5, -0.375, -0.25, -0.125, 0.0, 0.125, 0.25, 0.375, 0.5, -0.5, -0.375, -0.25, -0.125, 0.0, 0.125, 0.25, 0.375, 0.5, -0.5]]> : tensor<1x64xbf16>}> : () -> tensor<1x64xbf16>
  %hb = tosa.add %h, %b : (tensor<4x64xbf16>, tensor<1x64xbf16>) -> tensor<4x64xbf16>
  %w = tosa.cast %hb : (tensor<4x64xbf16>) -> tensor<4x64xf32>
  %e = tosa.erf %w : (tensor<4x64xf32>) -> tensor<4x64xf32>
  %c = "tosa.const"() <{values = dense<[[-0.5, -0.375, -0.25, -0.125, 0.0, 0.125, 0.25, 0.375, 0.5, -0.5, -0.375, -0.25, -0.125, 0.0, 0.125, 0.25, 0.375, 0.5, -0.5, -0.375, -0.25, -0.125, 0.0, 0.125, 0.25, 0.375, 0.5, -0.5, -0.375, -0.25, -0.125, 0.0, 0.125, 0.25, 0.375, 0.5, -0.5, -0.375, -0.25, -0.125, 0.0, 0.125, 0.25, 0.375, 0.5, -0.5, -0.375, -0.25, -0.125, 0.0, 0.125, 0.25, 0.375, 0.5, -0.5, -0.375, -0.25, -0.125, 0.0, 0.125, 0.25, 0.375, 0.5, -0.5]]> : tensor<1x64xf32>}> : () -> tensor<1x64xf32>
  %s = tosa.add %a, %c : (tensor<4x64xf32>, tensor<1x64xf32>) -> tensor<4x64xf32>
  %f = tosa.erf %s : (tensor<4x64xf32>) -> tensor<4x64xf32>
  return %e, %f : tensor<4x64xf32>, tensor<4x64xf32>
}
