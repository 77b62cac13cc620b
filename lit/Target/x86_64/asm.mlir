// f16c compile --target=x86_64 --emit=asm prints the host machine code of every kernel, as
// Cranelift's disassembler writes it. (The suite runs on x86-64 hosts with AVX2 and FMA.)
// RUN: %f16c compile %s --target=x86_64 --precision=fp32 --emit=asm | FileCheck %s
// RUN: not %f16c compile %s --target=x86_64 --emit=ptx 2>&1 | FileCheck %s --check-prefix=FORM
// FORM: error: --emit=ptx: cranelift-x86_64 does not produce it (it emits clif, asm, obj)

// CHECK: ; function @mm: 1 kernels
// On this host (AVX2 and FMA at least) the GEMM calls the runtime's loop: no generated
// micro-kernel is emitted.
// CHECK-NOT: gemm_micro_kernel
// CHECK-LABEL: ; k0_matmul: {{[0-9]+}} bytes
// CHECK: call
// CHECK: retq
// RUN: %f16c compile %s --target=x86_64 --precision=fp32 --emit=asm --cpu=x86-64-v2 | FileCheck %s --check-prefix=GEN
// Without AVX2 (x86-64-v2) the tiles call the generated micro-kernel, compiled as written: per
// k step two B vectors, per row one A vector (packed already broadcast), and eight multiplies
// and adds on xmm registers; unrolled four times, with no spill to the stack.
// GEN-LABEL: ; gemm_micro_kernel: {{[0-9]+}} bytes
// GEN-NOT: (%rsp)
// GEN-COUNT-32: vmulps
// GEN-NOT: (%rsp)
// Its second form reads A's rows in place (this matmul's: eight full rows, nothing packed):
// each A value loaded and broadcast, rows one stride apart in registers, the same arithmetic.
// GEN-LABEL: ; gemm_micro_kernel_rows: {{[0-9]+}} bytes
// GEN: vmovss (%{{[a-z0-9]+}}, %{{[a-z0-9]+}}), %xmm
// GEN-COUNT-32: vmulps
// GEN: ; k0_matmul_pack_b: {{[0-9]+}} bytes
// GEN-LABEL: ; k0_matmul: {{[0-9]+}} bytes
// GEN: call
// GEN: retq
func.func @mm(%a: tensor<1x8x300xf32>, %b: tensor<1x300x16xf32>) -> tensor<1x8x16xf32> {
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %0 = tosa.matmul %a, %b, %zp, %zp : (tensor<1x8x300xf32>, tensor<1x300x16xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x8x16xf32>
  return %0 : tensor<1x8x16xf32>
}
