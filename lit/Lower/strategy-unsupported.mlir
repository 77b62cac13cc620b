// A kernel the target's backend cannot compile: --emit=kernels shows the backend's reason where
// the plan would be (the backend's configure() answers it before any code), and a compile is a
// located error with the same reason.
// RUN: %f16c compile %s --target=x86_64 --precision=fp32 --emit=kernels | FileCheck %s --check-prefix=KERNELS
// RUN: not %f16c compile %s --target=x86_64 --precision=fp32 -o %t.f16c 2>&1 | FileCheck %s --check-prefix=COMPILE
// KERNELS: k0_matmul: contraction matmul batch=1 m=4 n=8 k=8 acc=f64
// KERNELS: strategy: not supported by cranelift-x86_64: f64 contractions (the JIT's contractions read f32, f16 and bf16)
// COMPILE: strategy-unsupported.mlir:[[@LINE+4]]:8: error: 'tosa.matmul' is not supported by cranelift-x86_64: f64 contractions
func.func @forward(%a: tensor<1x4x8xf64>) -> tensor<1x4x8xf64> {
  %w = "tosa.const"() <{values = dense<0.5> : tensor<1x8x8xf64>}> : () -> tensor<1x8x8xf64>
  %z = "tosa.const"() <{values = dense<0.0> : tensor<1xf64>}> : () -> tensor<1xf64>
  %y = tosa.matmul %a, %w, %z, %z : (tensor<1x4x8xf64>, tensor<1x8x8xf64>, tensor<1xf64>, tensor<1xf64>) -> tensor<1x4x8xf64>
  return %y : tensor<1x4x8xf64>
}
