//! Loadable artifacts: every shared model compiled with the driver (what
//! `f16c compile --target=x86_64 -o` writes), written to bytes, read back by the thin runtime
//! and run through its executor, bit-identical to the JIT; artifacts for another target or CPU
//! are clear errors.

use f16c_compiler::driver;
use f16c_compiler::target::Target;
use f16c_core::artifact::{Artifact, CodeFormat};
use f16c_dialect::import::parse_file;
use f16c_jit::{CompileOptions, Model};
use f16c_runtime::{loader, npy};
use f16c_tests::{model_path, MODELS};

/// The artifact of `name` at `precision`, through the file format.
fn artifact(name: &str, precision: &str) -> Artifact {
    let (mut module, _) = parse_file(&model_path(&format!("{name}.tosa.mlir"))).unwrap();
    let options = CompileOptions { precision: precision.into(), ..CompileOptions::default() };
    f16c_jit::prepare(&mut module, &options).unwrap();
    let a = driver::artifact(&module.functions[0], Target::X86_64).unwrap_or_else(|d| panic!("{name} {precision}: {d}"));
    Artifact::from_bytes(&a.to_bytes()).unwrap()
}

#[test]
fn f16c_run_executes_every_model_bit_identical_to_the_jit() {
    for name in MODELS {
        let input = npy::read(&model_path(&format!("{name}.input.npy"))).unwrap();
        for precision in ["fp32", "fp16"] {
            let options = CompileOptions { precision: precision.into(), threads: 2, ..CompileOptions::default() };
            let jit = Model::compile_file(&model_path(&format!("{name}.tosa.mlir")), &options).unwrap();
            let want = jit.run(std::slice::from_ref(&input)).unwrap();
            let loaded = loader::load(artifact(name, precision), 2).unwrap();
            let got = loaded.run(std::slice::from_ref(&input)).unwrap();
            assert_eq!(got, want, "{name} {precision}: artifact and JIT differ");
            assert_eq!(loaded.weight_bytes(), jit.weight_bytes(), "{name} {precision}: the same weights");
        }
    }
}

#[test]
fn artifacts_for_another_target_or_cpu_are_refused() {
    let base = artifact("mlp_small", "fp16");
    let mut gpu = base.clone();
    gpu.manifest.target = "sm_70".into();
    gpu.manifest.code_format = CodeFormat::Ptx;
    let e = loader::load(gpu, 1).err().expect("refused").to_string();
    assert!(e.contains("this artifact is for sm_70"), "{e}");
    let mut arm = base.clone();
    arm.manifest.target = "aarch64".into();
    let e = loader::load(arm, 1).err().expect("refused").to_string();
    assert!(e.contains("this artifact is for aarch64; this machine is x86_64"), "{e}");
    let mut cpu = base.clone();
    cpu.manifest.requires.push("quantum-float".into());
    let e = loader::load(cpu, 1).err().expect("refused").to_string();
    assert!(e.contains("CPU features this machine lacks: quantum-float"), "{e}");
    let mut code = base;
    code.code = b"not a shared object".to_vec();
    let e = loader::load(code, 1).err().expect("refused").to_string();
    assert!(e.contains("cannot load the artifact's code"), "{e}");
}

/// Every x86-64 feature flag Cranelift may write into an artifact's `requires` (on a machine
/// that has it) is one the runtime can check: an AVX-512 VNNI machine once made every JIT
/// artifact unloadable because the runtime did not know `avx512vnni`.
#[test]
fn the_runtime_knows_every_feature_cranelift_can_require() {
    let (isa, _) = f16c_compiler::backend::cranelift::host_isa("speed", false).unwrap();
    let names: Vec<String> = isa.isa_flags().iter().filter(|f| f.as_bool().is_some()).filter_map(|f| f.name.strip_prefix("has_").map(str::to_string)).collect();
    assert!(names.iter().any(|n| n == "avx2"), "{names:?}");
    for n in &names {
        assert!(f16c_runtime::loader::knows_feature(n), "the runtime cannot check CPU feature '{n}'");
    }
}
