//! Every shared model (both spellings) imports, verifies, exports to MLIR that mlir-opt accepts,
//! and runs on the reference interpreter matching PyTorch's f32 output.

use f16c_dialect::export::{print_module, PrintOptions};
use f16c_dialect::import::parse_file;
use f16c_dialect::verify::verify_module;
use f16c_dialect::reference;
use f16c_runtime::npy;
use f16c_tests::{max_rel_to_peak, model_path, MLIR_OPT, MODELS};
use std::io::Write;
use std::process::{Command, Stdio};

/// The bound: max |ref - out_f32| ≤ 1e-5 of the output's max magnitude.
const F32_TOLERANCE: f64 = 1e-5;

fn mlir_opt_accepts(text: &str) -> Result<(), String> {
    let mut child = Command::new(MLIR_OPT)
        .args(["-o", "/dev/null"])
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start {MLIR_OPT}: {e}"))?;
    child.stdin.take().unwrap().write_all(text.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    if out.status.success() { Ok(()) } else { Err(String::from_utf8_lossy(&out.stderr).into_owned()) }
}

#[test]
fn every_model_imports_verifies_exports_and_matches_pytorch_f32() {
    for name in MODELS {
        let input = npy::read(&model_path(&format!("{name}.input.npy"))).unwrap();
        let want = npy::read(&model_path(&format!("{name}.out_f32.npy"))).unwrap();
        for spelling in ["tosa", "raw.tosa"] {
            let file = format!("{name}.{spelling}.mlir");
            let (module, _) = parse_file(&model_path(&file)).unwrap_or_else(|d| panic!("{file}: {d}"));
            verify_module(&module).unwrap_or_else(|d| panic!("{file}: {d}"));
            let text = print_module(&module, PrintOptions::default()).unwrap();
            mlir_opt_accepts(&text).unwrap_or_else(|e| panic!("{file}: mlir-opt rejects the export:\n{e}"));
            let got = reference::run(&module.functions[0], std::slice::from_ref(&input)).unwrap();
            let err = max_rel_to_peak(&got[0], &want);
            assert!(err <= F32_TOLERANCE, "{file}: reference vs out_f32 error {err:e} > {F32_TOLERANCE:e}");
        }
    }
}

#[test]
fn both_spellings_of_a_model_import_to_the_same_graph() {
    for name in MODELS {
        let (a, _) = parse_file(&model_path(&format!("{name}.tosa.mlir"))).unwrap();
        let (b, _) = parse_file(&model_path(&format!("{name}.raw.tosa.mlir"))).unwrap();
        assert!(a.same_as(&b), "{name}: decimal and raw (dense_resource/hex) spellings differ");
    }
}

#[test]
fn wrong_input_shape_is_a_clear_error() {
    let (module, _) = parse_file(&model_path("mlp_small.tosa.mlir")).unwrap();
    let wrong = f16c_runtime::Tensor::from_f32(vec![3, 64], vec![0.0; 192]).unwrap();
    let e = reference::run(&module.functions[0], &[wrong]).unwrap_err().to_string();
    assert!(e.contains("input #0 of '@forward' must be tensor<2x64xf32>, got tensor<3x64xf32>"), "{e}");
}
