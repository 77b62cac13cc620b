//! Helpers shared by the integration tests.

pub mod cases;
pub mod differential;
pub mod fuzz;

use f16c_runtime::Tensor;
use std::path::PathBuf;

/// The models in `tests/data/models`, by name.
pub const MODELS: &[&str] = &["mlp_small", "cnn_small", "attention_tiny", "depthwise_block", "overflow_probe"];

/// `tests/data/models/<file>`.
pub fn model_path(file: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("data/models").join(file)
}

/// Largest |a - b| divided by the largest |b| (the issue's "relative to the output's max
/// magnitude" measure); a NaN in one but not the other makes it infinite.
pub fn max_rel_to_peak(a: &Tensor, b: &Tensor) -> f64 {
    f16c_runtime::compare::compare(a, b).expect("shapes match").relative_to_peak()
}

/// `mlir-opt` of Debian's LLVM 22.
pub const MLIR_OPT: &str = "/usr/lib/llvm-22/bin/mlir-opt";
