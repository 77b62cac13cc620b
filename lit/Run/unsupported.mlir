// A kernel the backend cannot compile is a located error, rendered like an import error (the
// source line and a caret), from every command that generates code; every such kernel is
// reported, not just the first.
// RUN: not %f16c run %s --input %S/../Inputs/x123_i8.npy 2>&1 | FileCheck %s --match-full-lines --strict-whitespace
// RUN: not %f16c compile %s --target=x86_64 --emit=clif 2>&1 | FileCheck %s --match-full-lines --strict-whitespace
// RUN: not %f16c compile %s --target=x86_64 -o %t.f16c 2>&1 | FileCheck %s --match-full-lines --strict-whitespace

func.func @forward(%a: tensor<1x2x3xi8>) -> (tensor<1x2x2xi32>, tensor<1x2x2xi32>) {
  %b = "tosa.const"() {values = dense<2> : tensor<1x3x2xi8>} : () -> tensor<1x3x2xi8>
  %z = "tosa.const"() {values = dense<0> : tensor<1xi8>} : () -> tensor<1xi8>
  %m = tosa.matmul %a, %b, %z, %z : (tensor<1x2x3xi8>, tensor<1x3x2xi8>, tensor<1xi8>, tensor<1xi8>) -> tensor<1x2x2xi32>
  %n = tosa.matmul %b, %a, %z, %z : (tensor<1x3x2xi8>, tensor<1x2x3xi8>, tensor<1xi8>, tensor<1xi8>) -> tensor<1x3x3xi32>
  %o = tosa.const_shape {values = dense<0> : tensor<3xindex>} : () -> !tosa.shape<3>
  %sz = tosa.const_shape {values = dense<[1, 2, 2]> : tensor<3xindex>} : () -> !tosa.shape<3>
  %s = tosa.slice %n, %o, %sz : (tensor<1x3x3xi32>, !tosa.shape<3>, !tosa.shape<3>) -> tensor<1x2x2xi32>
  return %m, %s : tensor<1x2x2xi32>, tensor<1x2x2xi32>
}
// CHECK:{{.*}}unsupported.mlir:11:8: error: 'tosa.matmul' is not supported by cranelift-x86_64: i8 contractions (the JIT's contractions read f32, f16 and bf16)
// CHECK-NEXT:  %m = tosa.matmul %a, %b, %z, %z : (tensor<1x2x3xi8>, tensor<1x3x2xi8>, tensor<1xi8>, tensor<1xi8>) -> tensor<1x2x2xi32>
// CHECK-NEXT:       ^
// CHECK-NEXT:{{.*}}unsupported.mlir:12:8: error: 'tosa.matmul' is not supported by cranelift-x86_64: i8 contractions (the JIT's contractions read f32, f16 and bf16)
