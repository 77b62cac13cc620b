// Pass instrumentation, named as in MLIR.
// RUN: %f16c opt %s --canonicalize --print-ir-after-all 2>&1 >/dev/null | FileCheck %s --check-prefix=DUMP
// RUN: %f16c opt %s --canonicalize --print-ir-after=canonicalize 2>&1 >/dev/null | FileCheck %s --check-prefix=DUMP
// RUN: %f16c opt %s --canonicalize --time-passes 2>&1 >/dev/null | FileCheck %s --check-prefix=TIME
// RUN: not %f16c opt %s --no-such-pass 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// RUN: not %f16c opt %s --canonicalize="bogus=1" 2>&1 | FileCheck %s --check-prefix=BADOPT
// RUN: not %f16c opt %s --print-ir-after=nope 2>&1 | FileCheck %s --check-prefix=BADDUMP
// RUN: %f16c opt --help | FileCheck %s --check-prefix=HELP

// DUMP: // -----// IR Dump After Canonicalize (canonicalize) //----- //
// DUMP-NEXT: module {
// DUMP: tosa.exp

// TIME: Execution time report
// TIME: Canonicalize
// TIME: (V) Verifier
// TIME: Total

// UNKNOWN: error: unexpected argument '--no-such-pass'
// BADOPT: error: pass 'canonicalize' has no option 'bogus' (options: max-fold-elements, fold-constants, cse, squares-and-cubes, sink-transposes)
// BADDUMP: error: --print-ir-after: unknown pass 'nope'

// HELP: --canonicalize
// HELP: max-fold-elements=<uint>

func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = tosa.exp %x : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
