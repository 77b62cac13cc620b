//! # f16c-core: what the compiler and the thin runtime share
//!
//! f16c is two stacks that meet only in the artifact format: the compiler side (`f16c-dialect`
//! ← `f16c-compiler`, which link MLIR and LLVM) and the thin runtime (`f16c-runtime`, which
//! links neither, so that it can be copied alone to a deployment machine). This crate is the
//! meeting point, and depends on nothing heavy:
//! - [`types`] and [`tensor`]: element types, static tensor types and dense tensors (a weight in
//!   f16 takes two bytes an element);
//! - [`compare`]: the one error measure used by `--compare`, `f16c check` and the tests;
//! - [`abi`]: the CPU kernel ABI `(bufs, begin, end, scratch, rt) -> status` and the list of
//!   math functions generated code calls through the runtime's table;
//! - [`artifact`]: the loadable file format (versioned manifest, code, converted weights);
//! - [`settings`]: the process-wide settings a binary sets from its flags and environment.

#![deny(missing_docs)]

pub mod abi;
pub mod artifact;
pub mod compare;
pub mod math;
pub mod memo;
pub mod settings;
pub mod tempdir;
pub mod tensor;
pub mod types;

pub use tensor::{Data, Tensor};
pub use types::{max_tensor_bytes, set_max_tensor_bytes, DType, TensorType, ValueType};
