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

/// Compiles every graph to a standalone C library with its backend (on two threads; a panic
/// is that graph's error) and runs them all in one driver process for `arch` (under qemu for
/// AArch64 on this machine): one result per graph, in order.
pub fn run_libraries(arch: &str, graphs: &[(&f16c_dialect::Graph, &[Tensor], &f16c_compiler::backend::llvm_cpu::LlvmCpuBackend)]) -> Vec<Result<Vec<Tensor>, String>> {
    use f16c_compiler::driver::{self, CLibrary};
    use f16c_foreign::{self as foreign, Library};
    let compile = |g: &f16c_dialect::Graph, b: &f16c_compiler::backend::llvm_cpu::LlvmCpuBackend| -> Result<CLibrary, String> {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| driver::c_library(g, b).map_err(|d| d.to_string()))).unwrap_or_else(|p| Err(panic_message(p)))
    };
    let compiled: Vec<Result<CLibrary, String>> = std::thread::scope(|s| {
        let half = graphs.len().div_ceil(2);
        let parts: Vec<_> = graphs.chunks(half.max(1)).map(|part| s.spawn(move || part.iter().map(|(g, _, b)| compile(g, b)).collect::<Vec<_>>())).collect();
        parts.into_iter().flat_map(|h| h.join().expect("compile errors and panics are results")).collect()
    });
    let libraries: Vec<Option<Library>> = compiled.iter().map(|c| c.as_ref().ok().map(|c| Library { code: &c.code, name: &c.name, inputs: &c.inputs, outputs: &c.outputs })).collect();
    let runs: Vec<(&Library, &[Tensor])> = libraries.iter().zip(graphs).filter_map(|(l, (_, inputs, _))| l.as_ref().map(|l| (l, *inputs))).collect();
    let mut results = match foreign::run_many(arch, &runs) {
        Ok(r) => r.into_iter(),
        Err(e) => return graphs.iter().map(|_| Err(format!("cannot run {arch} code: {e}"))).collect(),
    };
    compiled
        .iter()
        .map(|c| match c {
            Ok(_) => results.next().expect("one result per run").map_err(|e| e.to_string()),
            Err(e) => Err(e.clone()),
        })
        .collect()
}

/// The message of a caught panic.
pub fn panic_message(p: Box<dyn std::any::Any + Send>) -> String {
    let m = p.downcast_ref::<String>().cloned().or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string())).unwrap_or_default();
    format!("panic: {m}")
}
