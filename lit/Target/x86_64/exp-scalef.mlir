// The contract's exp ends with y · 2^k, k an integer in [-150, 128]. With AVX-512 the LLVM
// backend scales in one instruction (vscalefps rounds the exact product once, as the two
// multiplications by built powers of two do: the same bits, checked over every f32 of the
// binades where the result is subnormal or overflows); without it, it builds the two powers
// from their bits.
// RUN: %f16c compile %s --target=x86_64 --backend=llvm --cpu=x86-64-v4 --precision=fp32 --emit=asm | FileCheck %s --check-prefix=V4
// RUN: %f16c compile %s --target=x86_64 --backend=llvm --cpu=x86-64-v3 --precision=fp32 --emit=asm | FileCheck %s --check-prefix=V3
// V4-NOT: vpslld $23
// V4: vscalefps
// V4-NOT: vpslld $23
// V3-NOT: vscalefps
// V3: vpslld $23
func.func @forward(%x: tensor<4x1024xf32>) -> tensor<4x1024xf32> {
  %e = tosa.exp %x : (tensor<4x1024xf32>) -> tensor<4x1024xf32>
  return %e : tensor<4x1024xf32>
}
