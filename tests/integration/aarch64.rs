//! The LLVM AArch64 backend, run under `qemu-aarch64 -cpu max` on this x86 machine: every
//! parity case (and every elementwise op at the sizes around vector widths) and every shared model compiled to a standalone library (`--emit=lib`) and run
//! through its C entry point by the runtime's C driver ([`f16c_runtime::foreign`]), compared
//! with the reference interpreter under the contract. bf16 cases compile for `aarch64+bf16`
//! (`bfcvt`), the rest for `aarch64` (`+fullfp16`: native half arithmetic). The same library
//! path runs natively for x86-64.

use f16c_compiler::backend::llvm_cpu::{self, LlvmCpuBackend};
use f16c_compiler::driver::{self, Options};
use f16c_compiler::policy::Precision;
use f16c_compiler::target::Target;
use f16c_dialect::import::parse_file;
use f16c_dialect::reference;
use f16c_runtime::npy;
use f16c_compiler::backend::llvm_cpu::library::MATH_ULPS;
use f16c_tests::cases::{parity_cases, vector_edge_cases};
use f16c_tests::{max_rel_to_peak, model_path, MODELS};

/// How far a model accumulating in fp16 (`--accumulate=f16`) may be from the reference, relative
/// to its output's peak: measured at most 6.2e-4 on the shared models (mlp_small, whose layers
/// sum 64 terms); the bound leaves a factor of 6.
const F16_ACCUMULATION: f64 = 8.0 / 2048.0;

/// `aarch64+bf16` for a bf16 case (named so by the suite), `aarch64` otherwise.
fn backend_for(case: &str) -> &'static LlvmCpuBackend {
    llvm_cpu::aarch64(case.contains("bf16"))
}

#[test]
fn every_parity_case_matches_the_reference_under_qemu() {
    let mut cases = parity_cases();
    cases.extend(vector_edge_cases());
    // exp, tanh, erf and sigmoid are the contract's own, inline: exact (Tolerance::Exact).
    cases.extend(f16c_tests::cases::math_function_cases());
    let graphs: Vec<_> = cases.iter().map(|c| (&c.graph, c.inputs.as_slice(), backend_for(&c.name))).collect();
    let results = f16c_tests::run_libraries("aarch64", &graphs);
    let mut failures = Vec::new();
    for (case, got) in cases.iter().zip(results) {
        let want = reference::run(&case.graph, &case.inputs).unwrap();
        failures.extend(case.failures(got, &want, MATH_ULPS));
    }
    assert!(failures.is_empty(), "{} of {} cases fail:\n{}", failures.len(), cases.len(), failures.join("\n"));
}

/// Every shared model in f32 and O1 fp16 (and bf16 on `aarch64+bf16`, and fp16 with
/// `--accumulate=f16`), under qemu and as an x86-64 library natively, against the reference
/// interpreter run on the same mixed-precision graph (which accumulates in f32 whatever the
/// graph allows).
#[test]
fn every_model_matches_the_reference_as_a_library() {
    for (arch, target) in [("aarch64", Target::Aarch64 { bf16: true }), ("x86_64", Target::X86_64)] {
        let backend: &'static LlvmCpuBackend = if arch == "x86_64" { &llvm_cpu::X86_64 } else { llvm_cpu::aarch64(true) };
        let mut graphs = Vec::new();
        let mut names = Vec::new();
        for name in MODELS {
            let input = npy::read(&model_path(&format!("{name}.input.npy"))).unwrap();
            for (precision, f16_accumulate) in [(Precision::Fp32, false), (Precision::Fp16, false), (Precision::Bf16, false), (Precision::Fp16, true)] {
                let (mut module, _) = parse_file(&model_path(&format!("{name}.tosa.mlir"))).unwrap();
                let options = Options { f16_accumulate, ..Options::new(target).with_precision(precision) };
                driver::prepare(&mut module, &options, &[]).unwrap();
                graphs.push((module.functions.remove(0), vec![input.clone()]));
                names.push((name, precision, f16_accumulate));
            }
        }
        let runs: Vec<_> = graphs.iter().map(|(g, i)| (g, i.as_slice(), backend)).collect();
        let results = f16c_tests::run_libraries(arch, &runs);
        for (((g, inputs), got), (name, precision, f16_accumulate)) in graphs.iter().zip(results).zip(names) {
            let want = reference::run(g, inputs).unwrap();
            let got = got.unwrap_or_else(|e| panic!("{arch} {name} {}: {e}", precision.name()));
            let err = max_rel_to_peak(&got[0], &want[0]);
            let tol = match precision {
                Precision::Fp32 => 1e-5,
                // Every partial sum rounded to fp16: a few ulp of fp16 per model, not per term.
                Precision::Fp16 if f16_accumulate => F16_ACCUMULATION,
                Precision::Fp16 => 4.0 / 2048.0,
                _ => 4.0 / 256.0,
            };
            assert!(err <= tol, "{arch} {name} {} (accumulate f16: {f16_accumulate}): {err:e} > {tol:e}", precision.name());
        }
    }
}
