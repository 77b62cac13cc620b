//! # f16c-runtime: running what f16c compiles, without the compiler
//!
//! This crate links neither MLIR nor LLVM (`cargo tree -p f16c-runtime` shows it): it is what a
//! user copies to a deployment machine, with its `f16c-run` binary (the analogue of IREE's
//! `iree-run-module`). It holds:
//! - [`exec`]: the one CPU executor. It checks inputs at the boundary, fills the buffer table
//!   from the artifact's slots (inputs in place, constants loaded once, intermediates in one
//!   arena per run), gives each thread its scratch, splits large steps across threads, and
//!   turns a kernel's status into a located error. The in-process JIT (`f16c-jit`) and the
//!   shared-object loader both run their code through it.
//! - [`libcalls`]: the math functions generated code calls through the `rt` table, the very
//!   functions the reference interpreter uses, so results are bit-identical; [`tiles`], the
//!   GEMM's inner loops in native AVX2 or AVX-512 code, and [`depthwise`], a depthwise convolution's row
//!   in native AVX-512 or AVX2 code, which generated code calls where the CPU has them.
//! - [`loader`]: reads an artifact file and loads it: a shared object for the CPU executor, or
//!   PTX for [`cuda`], the GPU executor (CUDA driver API loaded at run time, Cargo feature
//!   `cuda`, on by default; building needs nothing CUDA).
//!
//! Running standalone C libraries under qemu-user with a cross C compiler (a development tool)
//! lives in its own crate, `f16c-foreign`, so that what a deployment copies has none of it.
//! - [`npy`]: `.npy` input and output; [`results`]: writing, printing and comparing results;
//!   [`stdout`]: printing that neither panics on a closed pipe nor hides a full disk.
//!
//! Tensors, the kernel ABI and the artifact format come from `f16c-core`, which the compiler
//! shares.

#![deny(missing_docs)]

#[cfg(feature = "cuda")]
pub mod cuda;
pub mod exec;
pub mod finish;
pub mod libcalls;
pub mod loader;
pub mod npy;
pub mod results;
pub mod stdout;
pub mod ukernel;

/// Values for the native loops' unit tests.
#[cfg(test)]
mod test_values {
    /// Uniform values in [-1, 1) from a xorshift generator.
    pub fn uniform(mut seed: u32) -> impl FnMut() -> f32 {
        move || {
            seed ^= seed << 13;
            seed ^= seed >> 17;
            seed ^= seed << 5;
            (seed as f32 / u32::MAX as f32) * 2.0 - 1.0
        }
    }
}

pub use f16c_core::artifact::{Artifact, ArtifactError, Manifest};
pub use f16c_core::{artifact, compare};
pub use f16c_core::{DType, Data, Tensor, TensorType};

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
    /// A kernel failed while running (for example a gather index out of range).
    #[error("{location}: error: while running '{op}': {message}")]
    Eval {
        /// The op's location (`file:line:col`).
        location: String,
        /// The op name.
        op: String,
        /// What went wrong.
        message: String,
    },
    /// The artifact file is not valid.
    #[error("{path}: {source}")]
    Artifact {
        /// The file.
        path: String,
        /// Why.
        #[source]
        source: ArtifactError,
    },
    /// The artifact cannot run here (another target, a missing CPU feature, a loader failure).
    #[error("{0}")]
    Load(String),
    /// The GPU failed: no driver, a PTX JIT failure, out of memory, a failed launch.
    #[error("{0}")]
    Gpu(String),
    /// A tool needed to run code of another architecture is missing or failed (the C compiler,
    /// qemu-user), or a standalone library could not run.
    #[error("{0}")]
    Tool(String),
    /// A standalone library's entry point returned a failure status.
    #[error("{0}")]
    Failed(String),
    /// Standard output could not be written (a full disk, a closed file).
    #[error("{0}")]
    Output(String),
}

/// Result alias for the runtime.
pub type Result<T> = std::result::Result<T, RuntimeError>;
