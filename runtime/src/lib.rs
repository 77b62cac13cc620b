//! # f16c-runtime: running what f16c compiles
//!
//! The runtime owns everything that executes: tensors (re-exported from the dialect, where
//! constants use the same type), `.npy` input and output, and the reference interpreter, the
//! golden model every backend is compared against. The interpreter walks a verified graph in
//! topological order and evaluates each op with [`f16c_dialect::semantics`], so a graph whose
//! types say f16 runs exactly under the fp16 contract (inputs widened to f32, one rounding per
//! op, f32 accumulation) and an f32 graph runs in f32.
//!
//! [`jit`] compiles models for this x86-64 host with Cranelift and runs them (the host API:
//! [`jit::Model::compile_file`], [`jit::Model::run`]).
//!
//! Inputs are checked at the boundary (count, shape, element type) with errors that say which
//! input and what was expected; nothing past the boundary sees a wrongly sized buffer.

#![deny(missing_docs)]

pub mod calibrate;
pub mod check;
pub mod compare;
pub mod jit;
pub mod npy;
pub mod reference;

pub use f16c_dialect::{DType, Data, Tensor, TensorType};

/// Errors of the runtime.
#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    /// A `.npy` file could not be read or written.
    #[error("{path}: {message}")]
    Npy {
        /// The file.
        path: String,
        /// What went wrong.
        message: String,
    },
    /// The inputs given do not match the function's arguments.
    #[error("{0}")]
    BadInput(String),
    /// An op failed while running (for example a gather index out of range).
    #[error("{location}: error: while running '{op}': {message}")]
    Eval {
        /// The op's location.
        location: f16c_dialect::Location,
        /// The op name.
        op: &'static str,
        /// What went wrong.
        message: String,
    },
    /// The model could not be compiled (rendered diagnostics or a located error).
    #[error("{0}")]
    Compile(String),
    /// Cranelift could not generate code for this host.
    #[error("JIT: {0}")]
    Jit(String),
    /// The graph does not verify.
    #[error("{0}")]
    Invalid(#[from] f16c_dialect::Diagnostics),
}

/// Result alias for the runtime.
pub type Result<T> = std::result::Result<T, RuntimeError>;
