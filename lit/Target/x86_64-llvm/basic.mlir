// --target=x86_64 --backend=llvm: the LLVM x86-64 backend (the shared LLVM emitter's kernels
// in the CPU ABI; x86_64-llvm-gemm.mlir shows its contraction micro-kernel). fp16 is converted
// with F16C instructions; f32 exp, tanh and erf are the contract's own, inline (vectorised: the
// exp below has no call), other math functions are called through the runtime's table (rt), so
// results are the reference interpreter's bits; the artifact runs in f16c-run like Cranelift's.
// RUN: %f16c compile %s --target=x86_64 --backend=llvm --emit=asm | FileCheck %s
// RUN: %f16c compile %s --target=x86_64 --backend=llvm --emit=llvm | FileCheck %s --check-prefix=IR
// RUN: %f16c compile %s --target=x86_64 --backend=llvm -o %t.llvm.f16c
// RUN: %f16c compile %s --target=x86_64 -o %t.cranelift.f16c
// RUN: %f16c-run %t.llvm.f16c --info | FileCheck %s --check-prefix=INFO
// RUN: %f16c-run %t.llvm.f16c --input %inputs/f16_4x64_a.npy --input %inputs/f16_4x64_b.npy --output %t.llvm.npy
// RUN: %f16c-run %t.cranelift.f16c --input %inputs/f16_4x64_a.npy --input %inputs/f16_4x64_b.npy --output %t.cranelift.npy
// RUN: cmp %t.llvm.npy %t.cranelift.npy
// f16c run --backend=llvm compiles ahead of time and runs through the same executor: on a real
// model in fp16 its results are the JIT's bits.
// RUN: %f16c run %models/attention_tiny.tosa.mlir --backend=llvm --precision=fp16 --input %models/attention_tiny.input.npy --output %t.run.llvm.npy
// RUN: %f16c run %models/attention_tiny.tosa.mlir --precision=fp16 --input %models/attention_tiny.input.npy --output %t.run.jit.npy
// RUN: cmp %t.run.llvm.npy %t.run.jit.npy
// RUN: not %f16c run %models/attention_tiny.tosa.mlir --target=reference --backend=llvm --input %models/attention_tiny.input.npy 2>&1 | FileCheck %s --check-prefix=RUNCHOICE
// RUNCHOICE: error: --backend chooses the code generator of --target=x86_64 (cranelift or llvm), not of reference
// RUN: not %f16c compile %s --target=sm_80 --backend=llvm --emit=ptx 2>&1 | FileCheck %s --check-prefix=NOCHOICE
// NOCHOICE: error: --backend=llvm: sm_80 has no such backend (--backend chooses between cranelift and llvm for x86_64)

// CHECK-LABEL: f16c_k0_add:
// CHECK: vcvtph2ps
// CHECK: vcvtps2ph $4
// CHECK: {{vrndscaleps|vroundps}}
// CHECK-NOT: callq
// CHECK: retq
// IR: define {{.*}}i32 @f16c_k0_add(ptr {{.*}}, i64 %1, i64 %2, ptr {{.*}}, ptr {{.*}})
// IR: define hidden bfloat @__truncsfbf2(float %0)
// INFO: target x86_64 (llvm-x86_64), code ElfSharedObject
func.func @f(%a: tensor<4x64xf16>, %b: tensor<4x64xf16>) -> tensor<4x64xf16> {
  %0 = tosa.add %a, %b : (tensor<4x64xf16>, tensor<4x64xf16>) -> tensor<4x64xf16>
  %1 = tosa.exp %0 : (tensor<4x64xf16>) -> tensor<4x64xf16>
  return %1 : tensor<4x64xf16>
}
