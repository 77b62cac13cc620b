// f16c compile --emit=kernels --target=sm_XX prints, after each kernel, how the NVPTX backend
// runs it (nvptx::strategy, the function its emitter follows): both sides of each choice.
// RUN: %f16c compile %s --target=sm_90 --precision=fp32 --emit=kernels | FileCheck %s --check-prefixes=CHECK,SM90
// RUN: %f16c compile %s --target=sm_70 --precision=fp32 --emit=kernels | FileCheck %s --check-prefixes=CHECK,SM70

// A large f16 matmul whose rows stage in 16-byte chunks: the 128x128 tile (>= 256 such blocks).
// CHECK-LABEL: program @large
// CHECK: k0_matmul: contraction matmul batch=1 m=2100 n=2056 k=104
// CHECK: strategy: tensor cores (WMMA m16n16k16, f16 in, f32 accumulate), tile 128x128: 8 warps of 64x32, 256 threads, 40960 B shared; staged 8 / 8 elements per load (A / B)
func.func @large(%a: tensor<1x2100x104xf16>, %b: tensor<1x104x2056xf16>) -> tensor<1x2100x2056xf16> {
  %z = "tosa.const"() <{values = dense<0.0> : tensor<1xf16>}> : () -> tensor<1xf16>
  %0 = tosa.matmul %a, %b, %z, %z : (tensor<1x2100x104xf16>, tensor<1x104x2056xf16>, tensor<1xf16>, tensor<1xf16>) -> tensor<1x2100x2056xf16>
  return %0 : tensor<1x2100x2056xf16>
}

// As large, but k and n not multiples of 8: staged element by element, on the 64x64 tile.
// CHECK-LABEL: program @unaligned
// CHECK: strategy: tensor cores (WMMA m16n16k16, f16 in, f32 accumulate), tile 64x64: 4 warps of 32x32, 128 threads, 20480 B shared; staged 1 / 1 elements per load (A / B)
func.func @unaligned(%a: tensor<1x2100x100xf16>, %b: tensor<1x100x2050xf16>) -> tensor<1x2100x2050xf16> {
  %z = "tosa.const"() <{values = dense<0.0> : tensor<1xf16>}> : () -> tensor<1xf16>
  %0 = tosa.matmul %a, %b, %z, %z : (tensor<1x2100x100xf16>, tensor<1x100x2050xf16>, tensor<1xf16>, tensor<1xf16>) -> tensor<1x2100x2050xf16>
  return %0 : tensor<1x2100x2050xf16>
}

// Too few blocks for the large tile.
// CHECK-LABEL: program @small
// CHECK: strategy: tensor cores (WMMA m16n16k16, f16 in, f32 accumulate), tile 64x64: 4 warps of 32x32, 128 threads, 20480 B shared; staged 8 / 8 elements per load (A / B)
func.func @small(%a: tensor<1x64x64xf16>, %b: tensor<1x64x64xf16>) -> tensor<1x64x64xf16> {
  %z = "tosa.const"() <{values = dense<0.0> : tensor<1xf16>}> : () -> tensor<1xf16>
  %0 = tosa.matmul %a, %b, %z, %z : (tensor<1x64x64xf16>, tensor<1x64x64xf16>, tensor<1xf16>, tensor<1xf16>) -> tensor<1x64x64xf16>
  return %0 : tensor<1x64x64xf16>
}

// bf16 has tensor cores from sm_80; f32 never (TF32 would break the f32 contract).
// CHECK-LABEL: program @bf16
// SM90: strategy: tensor cores (WMMA m16n16k16, bf16 in, f32 accumulate), tile 64x64
// SM70: strategy: SIMT, a register tile of outputs per thread (no tensor-core shape on sm_70 for bf16 x bf16 accumulated in f32)
func.func @bf16(%a: tensor<1x64x64xbf16>, %b: tensor<1x64x64xbf16>) -> tensor<1x64x64xbf16> {
  %z = "tosa.const"() <{values = dense<0.0> : tensor<1xbf16>}> : () -> tensor<1xbf16>
  %0 = tosa.matmul %a, %b, %z, %z : (tensor<1x64x64xbf16>, tensor<1x64x64xbf16>, tensor<1xbf16>, tensor<1xbf16>) -> tensor<1x64x64xbf16>
  return %0 : tensor<1x64x64xbf16>
}
// CHECK-LABEL: program @f32
// CHECK: k0_matmul
// CHECK: strategy: SIMT, a register tile of outputs per thread (no tensor-core shape on sm_{{[79]}}0 for f32 x f32 accumulated in f32)
// CHECK: k1_add
// CHECK: strategy: SIMT, one thread per output (two for paired f16/bf16 elementwise work)
func.func @f32(%a: tensor<1x64x64xf32>, %b: tensor<1x64x64xf32>) -> (tensor<1x64x64xf32>, tensor<1x64x64xf32>) {
  %z = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %0 = tosa.matmul %a, %b, %z, %z : (tensor<1x64x64xf32>, tensor<1x64x64xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x64x64xf32>
  %1 = tosa.add %a, %b : (tensor<1x64x64xf32>, tensor<1x64x64xf32>) -> tensor<1x64x64xf32>
  return %0, %1 : tensor<1x64x64xf32>, tensor<1x64x64xf32>
}
