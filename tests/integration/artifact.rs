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

/// An executor keeps its arena and scratch from one run to the next (and in these debug builds
/// starts them filled with 0xFF, not zero): a run after a run of other inputs gives what a
/// fresh executor gives, so no kernel reads what it has not written in the same run.
#[test]
fn runs_after_other_runs_give_what_a_fresh_executor_gives() {
    for name in MODELS {
        let input = npy::read(&model_path(&format!("{name}.input.npy"))).unwrap();
        assert_eq!(input.dtype(), f16c_dialect::DType::F32, "{name}: the shared models take f32");
        let other = f16c_dialect::Tensor::from_f32(input.shape().to_vec(), input.to_f64_vec().iter().map(|x| (0.5 - 2.0 * x) as f32).collect()).unwrap();
        for precision in ["fp32", "fp16"] {
            let fresh = |x: &f16c_dialect::Tensor| loader::load(artifact(name, precision), 2).unwrap().run(std::slice::from_ref(x)).unwrap();
            let (want, want_other) = (fresh(&input), fresh(&other));
            let kept = loader::load(artifact(name, precision), 2).unwrap();
            for (round, (x, want)) in [(&input, &want), (&other, &want_other), (&input, &want)].into_iter().enumerate() {
                assert_eq!(&kept.run(std::slice::from_ref(x)).unwrap(), want, "{name} {precision}: run {round} of one executor differs from a fresh one");
            }
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

/// A model whose masks and scales are splat constants of a million elements each (the
/// Whisper-style attention mask `dense<0.0> : tensor<1x6x1500x1500xf32>`), read by select,
/// add and mul.
fn splat_model() -> String {
    let t = |e: &str| format!("tensor<1x4x512x512x{e}>");
    let (f, b) = (t("f32"), t("i1"));
    format!(
        r#"func.func @forward(%x: {f}) -> {f} {{
  %mask = "tosa.const"() <{{values = dense<true> : {b}}}> : () -> {b}
  %zero = "tosa.const"() <{{values = dense<0.0> : {f}}}> : () -> {f}
  %neg = "tosa.const"() <{{values = dense<-1.0e4> : {f}}}> : () -> {f}
  %scale = "tosa.const"() <{{values = dense<0.125> : {f}}}> : () -> {f}
  %shift = "tosa.const"() <{{values = dense<0> : tensor<1xi8>}}> : () -> tensor<1xi8>
  %a = tosa.add %x, %zero : ({f}, {f}) -> {f}
  %m = tosa.mul %scale, %a, %shift : ({f}, {f}, tensor<1xi8>) -> {f}
  %s = tosa.select %mask, %m, %neg : ({b}, {f}, {f}) -> {f}
  return %s : {f}
}}"#
    )
}

/// Splat constants cost O(1) bytes in the artifact and in the running model (canonicalize
/// shrinks them to broadcast operands), and the results are the reference's, bit for bit, on
/// the Cranelift and the LLVM x86-64 backends, in f32 and fp16.
#[test]
fn splat_constants_stay_one_value_in_the_artifact_and_in_memory() {
    let source = splat_model();
    let as_written = f16c_dialect::import::parse_module(&source, "splat.mlir").unwrap();
    let n: usize = 4 * 512 * 512;
    let x = f16c_runtime::Tensor::from_f32(vec![1, 4, 512, 512], (0..n).map(|i| ((i * 7919) % 1013) as f32 / 37.0 - 13.0).collect()).unwrap();
    let want = f16c_dialect::reference::run(&as_written.functions[0], std::slice::from_ref(&x)).unwrap();
    let llvm = f16c_compiler::backend::llvm_cpu::x86_64(f16c_compiler::target::Cpu::Native).expect("a level");
    for precision in ["fp32", "fp16"] {
        let mut module = as_written.clone();
        let options = CompileOptions { precision: precision.into(), ..CompileOptions::default() };
        f16c_jit::prepare(&mut module, &options).unwrap();
        let g = &module.functions[0];
        let mixed = f16c_dialect::reference::run(g, std::slice::from_ref(&x)).unwrap();
        if precision == "fp32" {
            assert_eq!(mixed, want, "canonicalize changed the f32 results");
        }
        for backend in [&f16c_compiler::backend::cranelift::CRANELIFT as &dyn f16c_compiler::backend::Backend, llvm] {
            let a = driver::artifact_with(g, backend).unwrap_or_else(|d| panic!("{precision} {}: {d}", backend.name()));
            let bytes = a.to_bytes();
            assert!(a.constants.len() < 1024, "{precision} {}: {} bytes of constants for four splats", backend.name(), a.constants.len());
            // The code and manifest only: 16 MB of f32 splats would otherwise be here.
            assert!(bytes.len() < 256 << 10, "{precision} {}: artifact of {} bytes", backend.name(), bytes.len());
            let loaded = loader::load(Artifact::from_bytes(&bytes).unwrap(), 2).unwrap();
            assert!(loaded.weight_bytes() < 1024, "{precision} {}: {} weight bytes in memory", backend.name(), loaded.weight_bytes());
            let got = loaded.run(std::slice::from_ref(&x)).unwrap();
            assert_eq!(got, mixed, "{precision} {}: artifact and reference differ", backend.name());
        }
    }
}
