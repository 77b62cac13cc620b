//! Helpers shared by the integration tests.

use f16c_runtime::Tensor;
use std::path::PathBuf;

/// The models in `tests/data/models`, by name.
pub const MODELS: &[&str] = &["mlp_small", "cnn_small", "attention_tiny", "depthwise_block", "overflow_probe"];

/// `tests/data/models/<file>`.
pub fn model_path(file: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("data/models").join(file)
}

/// Largest |a - b| divided by the largest |b| (the issue's "relative to the output's max
/// magnitude" measure); NaN anywhere makes it infinite.
pub fn max_rel_to_peak(a: &Tensor, b: &Tensor) -> f64 {
    assert_eq!(a.shape(), b.shape(), "shapes differ");
    let (x, y) = (a.to_f64_vec(), b.to_f64_vec());
    let peak = y.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    let worst = x.iter().zip(&y).fold(0.0f64, |m, (p, q)| if p.is_nan() || q.is_nan() { f64::INFINITY } else { m.max((p - q).abs()) });
    worst / peak.max(f64::MIN_POSITIVE)
}

/// Path of the built `f16c` binary (built by `cargo build -p f16c-tools` before the tests run;
/// the test script does that).
pub fn f16c_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/debug/f16c")
}

/// `mlir-opt` of Debian's LLVM 22.
pub const MLIR_OPT: &str = "/usr/lib/llvm-22/bin/mlir-opt";
