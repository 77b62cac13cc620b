// The LLVM x86-64 backend's matmul with a constant weight: the weight packed at compile time in
// fp16, A widened once per run (vcvtph2ps), then the register-blocked micro-kernel: 6 x 16 with
// AVX2 FMAs on ymm for --cpu=x86-64-v3, 12 x 32 on zmm for --cpu=x86-64-v4 (AVX-512; --cpu=native
// picks it when the machine has AVX-512). fp16 products are exact in f32, so the result is the
// reference's bits. An AVX-512 artifact on a machine without it is refused before it loads.
// RUN: %f16c compile %s --target=x86_64 --backend=llvm --cpu=x86-64-v3 --emit=asm | FileCheck %s --check-prefix=V3
// RUN: %f16c compile %s --target=x86_64 --backend=llvm --cpu=x86-64-v4 --emit=asm | FileCheck %s --check-prefix=V4
// RUN: %f16c run %s --backend=llvm --cpu=x86-64-v3 --input %inputs/f16_4x64_a.npy --output %t.llvm.npy
// RUN: %f16c run %s --target=reference --input %inputs/f16_4x64_a.npy --output %t.ref.npy
// RUN: cmp %t.llvm.npy %t.ref.npy
// RUN: %f16c compile %s --target=x86_64 --backend=llvm --cpu=x86-64-v4 -o %t.v4.f16c
// RUN: %f16c-run %t.v4.f16c --info | FileCheck %s --check-prefix=INFO
// RUN: not %f16c compile %s --target=sm_80 --cpu=x86-64-v4 --emit=ptx 2>&1 | FileCheck %s --check-prefix=NOCPU
// V3-LABEL: f16c_k0_matmul_widen_a:
// V3: vcvtph2ps {{.*}}, %ymm{{[0-9]+}}
// V3-LABEL: f16c_k0_matmul:
// V3: vfmadd231ps %ymm{{[0-9]+}}, %ymm{{[0-9]+}}, %ymm{{[0-9]+}}
// V4-LABEL: f16c_k0_matmul:
// V4: vfmadd231ps {{.*}}, %zmm{{[0-9]+}}, %zmm{{[0-9]+}}
// INFO: avx512f
// NOCPU: error: --cpu chooses an x86-64 level, not one of sm_80
// RUN: not %f16c compile %s --target=x86_64 --backend=llvm --cpu=x86-64-v2 --emit=asm 2>&1 | FileCheck %s --check-prefix=NOV2
// NOV2: error: --cpu=x86-64-v2: --backend=llvm compiles for native, x86-64-v3, x86-64-v4, x86-64-v4+bf16
func.func @f(%a: tensor<4x64xf16>) -> tensor<1x4x16xf16> {
  %shape = tosa.const_shape {values = dense<[1, 4, 64]> : tensor<3xindex>} : () -> !tosa.shape<3>
  %r = tosa.reshape %a, %shape : (tensor<4x64xf16>, !tosa.shape<3>) -> tensor<1x4x64xf16>
  %w = "tosa.const"() <{values = dense<0.25> : tensor<1x64x16xf16>}> : () -> tensor<1x64x16xf16>
  %z = "tosa.const"() <{values = dense<0.0> : tensor<1xf16>}> : () -> tensor<1xf16>
  %m = tosa.matmul %r, %w, %z, %z : (tensor<1x4x64xf16>, tensor<1x64x16xf16>, tensor<1xf16>, tensor<1xf16>) -> tensor<1x4x16xf16>
  return %m : tensor<1x4x16xf16>
}
