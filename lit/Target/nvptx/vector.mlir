// Tensor-core staging loads 16 bytes (8 halves) at a time when the rows hold whole 16-byte chunks
// (here k = 64 and n = 96): two 128-bit global loads each for A and B per thread and k tile, and
// 128-bit shared stores. With k = 70 (nvptx-ptx.mlir) they load one element at a time.
// RUN: %f16c compile %s --target=sm_80 --emit=ptx | FileCheck %s
// CHECK-LABEL: .visible .entry f16c_k0_matmul(
// CHECK-COUNT-4: ld.global.v4.b32
// CHECK-COUNT-4: st.shared.v4.b32
// CHECK-NOT: ld.global.b16
// CHECK: wmma.mma.sync.aligned.row.row.m16n16k16.f32.f32
func.func @mm(%a: tensor<2x100x64xf16>, %b: tensor<2x64x96xf16>) -> tensor<2x100x96xf16> {
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf16>}> : () -> tensor<1xf16>
  %0 = tosa.matmul %a, %b, %zp, %zp : (tensor<2x100x64xf16>, tensor<2x64x96xf16>, tensor<1xf16>, tensor<1xf16>) -> tensor<2x100x96xf16>
  return %0 : tensor<2x100x96xf16>
}
