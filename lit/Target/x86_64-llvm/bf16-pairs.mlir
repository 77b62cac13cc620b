// bf16 matmul on AVX512-BF16: with --cpu=x86-64-v4+bf16 (what --cpu=native picks on such a
// machine) the LLVM backend packs the weight with its rows interleaved in pairs and multiplies
// bf16 pairs into f32 with VDPBF16PS; at x86-64-v4 it widens and uses f32 FMAs. A bf16 product
// is exact and the instruction adds the pair's products in k order, so every level, and the
// JIT (whose runtime loops use the instruction where the CPU has it), gives the reference's
// bits. The level's artifact requires avx512bf16.
// RUN: %f16c compile %s --target=x86_64 --backend=llvm --cpu=x86-64-v4+bf16 --precision=bf16 --emit=asm | FileCheck %s --check-prefix=PAIRS
// RUN: %f16c compile %s --target=x86_64 --backend=llvm --cpu=x86-64-v4 --precision=bf16 --emit=asm | FileCheck %s --check-prefix=V4
// RUN: %f16c compile %s --target=x86_64 --backend=llvm --cpu=x86-64-v4+bf16 --precision=bf16 -o %t.pairs.f16c
// RUN: %f16c-run %t.pairs.f16c --info | FileCheck %s --check-prefix=INFO
// RUN: %f16c run %s --target=reference --precision=bf16 --input %inputs/x_4x64_f32.npy --output %t.ref.npy
// RUN: %f16c run %s --backend=llvm --precision=bf16 --input %inputs/x_4x64_f32.npy --output %t.llvm.npy
// RUN: cmp %t.llvm.npy %t.ref.npy
// RUN: %f16c run %s --precision=bf16 --no-cache --input %inputs/x_4x64_f32.npy --output %t.jit.npy
// RUN: cmp %t.jit.npy %t.ref.npy
// PAIRS-LABEL: f16c_k{{[0-9]+}}_matmul:
// PAIRS: vdpbf16ps {{.*}}%zmm{{[0-9]+}}, %zmm{{[0-9]+}}
// V4-LABEL: f16c_k{{[0-9]+}}_matmul:
// V4-NOT: vdpbf16ps
// V4: vfmadd231ps {{.*}}, %zmm{{[0-9]+}}, %zmm{{[0-9]+}}
// INFO: avx512bf16
func.func @f(%a: tensor<4x64xf32>) -> tensor<1x4x40xf32> {
  %shape = tosa.const_shape {values = dense<[1, 4, 64]> : tensor<3xindex>} : () -> !tosa.shape<3>
  %r = tosa.reshape %a, %shape : (tensor<4x64xf32>, !tosa.shape<3>) -> tensor<1x4x64xf32>
  %w = "tosa.const"() <{values = dense<[[[0.25, -0.5, 1.0, 0.125, 2.0, -1.5, 0.75, -0.25, 0.5, 1.25, -2.0, 0.375, -0.625, 1.5, -0.125, 0.0625, 3.0, -0.75, 0.875, -1.25, 0.3125, 1.75, -0.875, 0.1875, -3.0, 0.625, -0.3125, 2.5, -0.0625, 1.125, -1.75, 0.4375, 0.25, -0.5, 1.0, 0.125, 2.0, -1.5, 0.75, -0.25]]]> : tensor<1x1x40xf32>}> : () -> tensor<1x1x40xf32>
  %shape2 = tosa.const_shape {values = dense<[1, 64, 40]> : tensor<3xindex>} : () -> !tosa.shape<3>
  %m1 = "tosa.const"() <{values = dense<1.0> : tensor<1x64x1xf32>}> : () -> tensor<1x64x1xf32>
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %wb = tosa.mul %m1, %w, %shift : (tensor<1x64x1xf32>, tensor<1x1x40xf32>, tensor<1xi8>) -> tensor<1x64x40xf32>
  %z = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %y = tosa.matmul %r, %wb, %z, %z : (tensor<1x4x64xf32>, tensor<1x64x40xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x4x40xf32>
  return %y : tensor<1x4x40xf32>
}
