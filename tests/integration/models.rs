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

/// The blocks torch-mlir exports for the real-size models' parts (`scripts/export_blocks.py`:
/// Llama's RoPE, attention with a boolean mask and an all-masked row, an int8 fake-quantized
/// linear layer, a U-Net decoder level with its bilinear upsampling), exactly as it prints them: they import, verify, export to MLIR that mlir-opt
/// accepts, and match PyTorch's f32 output on the reference, the JIT and the LLVM x86-64
/// backend in f32, and on the JIT in fp16 and bf16 within those types' bounds.
#[test]
fn exported_blocks_match_pytorch_on_every_cpu_path() {
    use f16c_compiler::backend::llvm_cpu::X86_64 as LlvmCpuBackend;
    use f16c_compiler::backend::Backend;
    use f16c_jit::{CompileOptions, Model};
    let dir = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("data/blocks");
    for name in ["rope", "masked_attention", "quantized_linear", "unet_level"] {
        let path = dir.join(format!("{name}.mlir"));
        let inputs: Vec<_> = (0..)
            .map(|i| dir.join(format!("{name}.in{i}.npy")))
            .take_while(|p| p.exists())
            .map(|p| npy::read(&p).unwrap())
            .collect();
        let want = npy::read(&dir.join(format!("{name}.out_f32.npy"))).unwrap();
        let (module, _) = parse_file(&path).unwrap_or_else(|d| panic!("{name}: {d}"));
        verify_module(&module).unwrap_or_else(|d| panic!("{name}: {d}"));
        mlir_opt_accepts(&print_module(&module, PrintOptions::default()).unwrap()).unwrap_or_else(|e| panic!("{name}: mlir-opt rejects the export:\n{e}"));
        let g = &module.functions[0];
        let check = |what: &str, got: &f16c_dialect::Tensor, bound: f64| {
            let err = max_rel_to_peak(got, &want);
            assert!(err <= bound, "{name} {what}: {err:e} from PyTorch f32 (bound {bound:e})");
        };
        check("reference", &reference::run(g, &inputs).unwrap()[0], F32_TOLERANCE);
        let llvm = LlvmCpuBackend.artifact(&f16c_compiler::driver::lower_for(g, &LlvmCpuBackend).unwrap()).unwrap();
        check("llvm f32", &f16c_runtime::loader::load(llvm, 2).unwrap().run(&inputs).unwrap()[0], F32_TOLERANCE);
        // fp16 and bf16: a few roundings of the type's half ulp (2^-11, 2^-8) relative to the peak.
        for (precision, bound) in [("fp32", F32_TOLERANCE), ("fp16", 8.0 / 2048.0), ("bf16", 8.0 / 256.0)] {
            let options = CompileOptions { precision: precision.into(), threads: 2, ..CompileOptions::default() };
            let (mut module, _) = parse_file(&path).unwrap();
            f16c_jit::prepare(&mut module, &options).unwrap_or_else(|e| panic!("{name} {precision}: {e}"));
            let model = Model::compile_graph(&module.functions[0], 2).unwrap_or_else(|e| panic!("{name} {precision}: {e}"));
            check(&format!("jit {precision}"), &model.run(&inputs).unwrap()[0], bound);
        }
    }
}
