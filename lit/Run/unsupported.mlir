// A kernel the backend cannot compile is a located error, rendered like an import error (the
// source line and a caret), from every command that generates code; every such kernel is
// reported, not just the first.
// RUN: not %f16c run %s --input %S/../Inputs/x2_f64.npy 2>&1 | FileCheck %s --match-full-lines --strict-whitespace
// RUN: not %f16c compile %s --target=x86_64 --emit=clif 2>&1 | FileCheck %s --match-full-lines --strict-whitespace
// RUN: not %f16c compile %s --target=x86_64 -o %t.f16c 2>&1 | FileCheck %s --match-full-lines --strict-whitespace

func.func @forward(%x: tensor<2xf64>) -> (tensor<1x1x1xf64>, tensor<1x2x2xf64>) {
  %sh = tosa.const_shape {values = dense<[1, 1, 2]> : tensor<3xindex>} : () -> !tosa.shape<3>
  %a = tosa.reshape %x, %sh : (tensor<2xf64>, !tosa.shape<3>) -> tensor<1x1x2xf64>
  %b = "tosa.const"() {values = dense<2.0> : tensor<1x2x1xf64>} : () -> tensor<1x2x1xf64>
  %z = "tosa.const"() {values = dense<0.0> : tensor<1xf64>} : () -> tensor<1xf64>
  %m = tosa.matmul %a, %b, %z, %z : (tensor<1x1x2xf64>, tensor<1x2x1xf64>, tensor<1xf64>, tensor<1xf64>) -> tensor<1x1x1xf64>
  %n = tosa.matmul %b, %a, %z, %z : (tensor<1x2x1xf64>, tensor<1x1x2xf64>, tensor<1xf64>, tensor<1xf64>) -> tensor<1x2x2xf64>
  return %m, %n : tensor<1x1x1xf64>, tensor<1x2x2xf64>
}
// CHECK:{{.*}}unsupported.mlir:13:8: error: 'tosa.matmul' is not supported by cranelift-x86_64: f64 contractions (the JIT's contractions read f32, f16 and bf16)
// CHECK-NEXT:  %m = tosa.matmul %a, %b, %z, %z : (tensor<1x1x2xf64>, tensor<1x2x1xf64>, tensor<1xf64>, tensor<1xf64>) -> tensor<1x1x1xf64>
// CHECK-NEXT:       ^
// CHECK-NEXT:{{.*}}unsupported.mlir:14:8: error: 'tosa.matmul' is not supported by cranelift-x86_64: f64 contractions (the JIT's contractions read f32, f16 and bf16)
