//! f16c's integration tests: one harness, because every test binary links MLIR statically.

mod aarch64;
mod artifact;
mod canonicalize;
mod diagnostics;
mod fix;
mod fuzzing;
mod jit;
mod llvm_cpu;
mod models;
mod nvptx;
mod precision;
mod roundtrip;
mod verifier;
