//! `f16c run`: execute a model on `.npy` inputs.

use f16c_compiler::target::{BackendName, Cpu};
use crate::{input_arg, read_input};
use std::path::Path;
use anyhow::bail;
use clap::{Arg, ArgAction, ArgMatches, Command};
use f16c_dialect::{reference, Diagnostic};
use f16c_jit::JitError;
use f16c_runtime::{results, RuntimeError};
use std::process::ExitCode;

/// Targets `run` knows.
const TARGETS: &[&str] = &["x86_64", "reference", "sm_70", "sm_75", "sm_80", "sm_86", "sm_89", "sm_90", "aarch64", "aarch64+bf16"];

pub fn command() -> Command {
    let c = Command::new("run")
        .about("Run a model on .npy inputs and write .npy outputs")
        .after_help(
            "Targets:\n  x86_64     compile with Cranelift and run on this machine (default; fp16/bf16 emulated\n             \
             in software, bit-faithful to the reference); with --backend=llvm, compiled ahead of\n             \
             time by the LLVM x86-64 backend instead\n  \
             reference  the reference interpreter (the golden model of f16c's numeric contract)\n  \
             sm_XX      compile to PTX (NVPTX backend) and run on this machine's NVIDIA GPU through the\n             \
             CUDA driver (an error without a GPU or driver)\n  \
             aarch64    compile with the LLVM AArch64 backend (fp16 NEON; aarch64+bf16 adds +bf16) to a\n             \
             standalone library and run it through its C entry point: natively on an AArch64\n             \
             machine, under qemu-aarch64 -cpu max elsewhere (a C driver is built once with\n             \
             aarch64-linux-gnu-gcc; the entry point runs on one thread)\n\n\
             The model first goes through the pipeline f16c compile runs with the same options\n\
             (canonicalize, fold-batch-norm, assign-precision, insert-casts; at fp32 nothing is\n\
             lowered, but batch norms are folded unless --no-fold-batch-norm), so a run here gives\n\
             the same bits as the artifact of f16c compile -o.\n\n\
             Examples:\n  f16c run net.mlir --input x.npy --output y.npy\n  \
             f16c run net.mlir --precision=fp16 --policy=O1 --input x.npy --output y.npy --threads=2\n  \
             f16c run net.mlir --target=reference --input x.npy --compare y_ref.npy\n  \
             f16c compile net.mlir --target=x86_64 -o net.f16c && f16c run net.f16c --input x.npy",
        )
        .arg(input_arg().help("Input .mlir file ('-' for standard input), or an artifact of f16c compile -o (run as f16c-run runs it)"))
        .arg(
            Arg::new("target")
                .long("target")
                .value_name("TARGET")
                .default_value("x86_64")
                .value_parser(clap::builder::PossibleValuesParser::new(TARGETS))
                .help("Where to run the model"),
        )
        .arg(crate::backend_arg("Code generator for --target=x86_64: cranelift (the JIT, default) or llvm (ahead of time)"))
        .arg(crate::cpu_arg())
        .arg(
            Arg::new("threads")
                .long("threads")
                .value_name("N")
                .value_parser(clap::value_parser!(usize))
                .help("Threads for large kernels on x86_64 (default: every core)"),
        )
        .arg(Arg::new("inputs").long("input").value_name("X.npy").action(ArgAction::Append).help("Input tensor, one per function argument, in order"))
        .arg(Arg::new("outputs").long("output").value_name("Y.npy").action(ArgAction::Append).help("Where to write each result, in order (omitted: print them)"))
        .arg(
            Arg::new("compare")
                .long("compare")
                .value_name("REF.npy")
                .action(ArgAction::Append)
                .help("Compare each result with a reference .npy (in order) and print the error"),
        )
        .arg(Arg::new("function").long("function").value_name("NAME").help("The function to run (default: the only one, or 'forward')"))
        .arg(crate::switch(
            "profile",
            "Time every kernel and print the profile to standard error after the run: per kernel its time and share of the run, name, source location, what it computes (shape) and its plan where the backend records one (GPU), slowest first; x86_64 (both backends) and GPU targets (F16C_PROFILE=1 does the same)",
        ))
        .arg(crate::switch(
            "no-cache",
            "Compile again instead of loading the artifact an earlier run with the same file and options compiled (the cache: $F16C_CACHE_DIR, else ~/.cache/f16c; F16C_NO_CACHE=1 also turns it off)",
        ));
    crate::precision::args(c, "fp32", false)
}

pub fn main(m: &ArgMatches) -> anyhow::Result<ExitCode> {
    let target = m.get_one::<String>("target").expect("has default");
    let path = m.get_one::<String>("input").expect("has default");
    let threads = m.get_one::<usize>("threads").copied().unwrap_or_else(f16c_jit::default_threads);
    if threads == 0 {
        bail!("--threads must be at least 1");
    }
    if m.get_flag("profile") {
        f16c_runtime::exec::set_profiling(true);
    }
    // A compiled artifact (f16c compile -o) runs as f16c-run runs it: the options that shape a
    // compilation have nothing to act on.
    if path != "-" && is_artifact(Path::new(path)) {
        const RUN_OPTIONS: &[&str] = &["input", "inputs", "outputs", "compare", "threads", "profile", "no-cache"];
        let compile_options: Vec<String> = m.ids().map(|id| id.as_str()).filter(|id| !RUN_OPTIONS.contains(id) && m.value_source(id) == Some(clap::parser::ValueSource::CommandLine)).map(|id| format!("--{id}")).collect();
        if !compile_options.is_empty() {
            let verb = if compile_options.len() == 1 { "applies" } else { "apply" };
            bail!("'{path}' is a compiled artifact: {} {verb} when compiling MLIR (the artifact's target, precision and function were chosen by f16c compile)", compile_options.join(", "));
        }
        let model = f16c_runtime::loader::open(Path::new(path), threads)?;
        return run_loaded(model, m, path);
    }
    let target_value = f16c_compiler::target::Target::parse(target).expect("clap checked the name");
    // Targets whose program is an artifact (x86-64, GPUs) go through the compile cache: a run
    // of the same file with the same options loads what an earlier one compiled.
    let artifact_target = target != "reference" && !matches!(target_value, f16c_compiler::target::Target::Aarch64 { .. });
    let cache = if artifact_target && !m.get_flag("no-cache") { crate::cache::Cache::open() } else { None };
    // A file is hashed as it is read, before (and instead of) being parsed.
    let mut key = match &cache {
        Some(c) if path != "-" => c.content_hash(Path::new(path)).ok().map(|h| crate::cache::key(h, m)),
        _ => None,
    };
    if let (Some(cache), Some(key)) = (&cache, &key) {
        // An entry that does not load (corrupt, or for a CPU this one is not) is compiled again.
        if let Some(model) = cache.get(key).and_then(|p| f16c_runtime::loader::open(&p, threads).ok()) {
            return run_loaded(model, m, path);
        }
    }
    let (mut source, file) = read_input(path)?;
    if cache.is_some() && key.is_none() {
        key = Some(crate::cache::key(source.hash128(), m));
    }
    let Some(mut module) = crate::parse_or_report(&mut source, &file) else { return Ok(ExitCode::FAILURE) };
    // The pipeline `f16c compile` runs for the same options, at every precision (fp32 too:
    // canonicalize and fold-batch-norm change the graph), so that a run here is bit-identical
    // to the artifact of the same model.
    if !crate::precision::prepare(&mut module, m, target, &source)? {
        return Ok(ExitCode::FAILURE);
    }
    let backend_name = m.get_one::<BackendName>("backend").copied();
    if backend_name.is_some_and(|b| b != BackendName::Llvm || !target.starts_with("aarch64")) && target != "x86_64" {
        bail!("--backend chooses the code generator of --target=x86_64 (cranelift or llvm), not of {target}");
    }
    let g = &module.functions[crate::choose_function(&module, m, &file)?];
    let name = g.name.clone();
    // NumPy has no bf16: an f32 file is rounded to an f16 or bf16 argument, on every target.
    let inputs: Vec<_> = crate::read_npys(m, "inputs")?
        .into_iter()
        .enumerate()
        .map(|(k, t)| match g.inputs().get(k).and_then(|&a| g.tensor_ty(a)) {
            Some(want) => f16c_runtime::npy::fit(t, want),
            None => t,
        })
        .collect();
    let cpu = m.get_one::<Cpu>("cpu").copied();
    // With the cache, the JIT's program is an artifact too; a graph that does not lower to a
    // program (control flow) runs in process as before.
    let jit = target == "x86_64" && backend_name != Some(BackendName::Llvm);
    let outputs = if target == "reference" {
        match reference::run(g, &inputs) {
            Ok(o) => o,
            Err(reference::Error::Eval { location, op, message }) => {
                let d = Diagnostic::error(location, format!("while running '{op}': {message}"));
                return Ok(crate::report(&d.into(), &source));
            }
            Err(reference::Error::Invalid(d)) => return Ok(crate::report(&d, &source)),
            Err(e) => return Err(e.into()),
        }
    } else if let f16c_compiler::target::Target::Aarch64 { .. } = target_value {
        match run_library(g, target_value, &inputs) {
            Ok(Ok(o)) => o,
            Ok(Err(d)) => return Ok(crate::report(&d, &source)),
            Err(e) => return Err(e.into()),
        }
    } else {
        // The JIT without the cache: compiled in process, no artifact. Ahead of time (a GPU,
        // --backend=llvm, or the JIT's artifact for the cache): the artifact f16c compile -o
        // would write, loaded as f16c-run loads it.
        let lowered = if jit && cache.is_none() {
            None
        } else {
            let backend = match f16c_compiler::driver::backend_named(target_value, backend_name, cpu) {
                Ok(b) => b,
                Err(d) => return Ok(crate::report(&d, &source)),
            };
            match f16c_compiler::driver::lower_for(g, backend) {
                Ok(program) => Some((program, backend)),
                Err(_) if jit => None,
                Err(d) => return Ok(crate::report(&d, &source)),
            }
        };
        match lowered {
            None => match (f16c_jit::CompileOptions { cpu, ..f16c_jit::CompileOptions::default() })
                .backend_options()
                .and_then(|options| f16c_jit::Model::compile_graph_with(g, threads, &options))
                .and_then(|model| model.run(&inputs))
            {
                Ok(o) => o,
                Err(JitError::Diagnostics(d)) => return Ok(crate::report(&d, &source)),
                Err(JitError::Run(RuntimeError::Eval { location, op, message })) => return Ok(eval_error(&location, &op, &message, &source)),
                Err(e) => return Err(e.into()),
            },
            Some((program, backend)) => {
                // The program holds its own copy of every weight: the module's goes before the
                // backend adds its packed ones (as in f16c compile).
                drop(module);
                let artifact = match f16c_compiler::driver::artifact_of_owned(program, backend) {
                    Ok(a) => a,
                    Err(d) => return Ok(crate::report(&d, &source)),
                };
                // Stored in the cache, the artifact is loaded from there as f16c-run loads it
                // (each weight read into its own buffer): loaded from memory, the artifact's
                // constants and the executor's copies of them were the model's weights twice.
                let stored = match (&cache, &key) {
                    (Some(cache), Some(key)) => cache.put(key, &artifact),
                    _ => None,
                };
                let loaded = match stored {
                    Some(path) => {
                        drop(artifact);
                        f16c_runtime::loader::open(&path, threads)
                    }
                    None => f16c_runtime::loader::load_any(artifact, threads),
                };
                match loaded.and_then(|model| model.run(&inputs)) {
                    Ok(o) => o,
                    Err(RuntimeError::Eval { location, op, message }) => return Ok(eval_error(&location, &op, &message, &source)),
                    Err(e) => return Err(e.into()),
                }
            }
        }
    };
    let many = |k: &str| -> Vec<String> { m.get_many::<String>(k).into_iter().flatten().cloned().collect() };
    results::deliver(&name, &outputs, &many("outputs"), &many("compare"))?;
    Ok(ExitCode::SUCCESS)
}

/// Compiles `g` to a standalone library for `target` (`--emit=lib`) and runs it through its C
/// entry point, under qemu-user when this machine is not of the target's architecture.
fn run_library(g: &f16c_dialect::Graph, target: f16c_compiler::target::Target, inputs: &[f16c_dialect::Tensor]) -> Result<Result<Vec<f16c_dialect::Tensor>, f16c_dialect::Diagnostics>, RuntimeError> {
    use f16c_compiler::driver;
    let lib = match driver::backend_for(target).and_then(|b| driver::c_library(g, b)) {
        Ok(l) => l,
        Err(d) => return Ok(Err(d)),
    };
    // The inputs are fitted to the graph's (and so the library's) argument types already.
    let library = f16c_foreign::Library { code: &lib.code, name: &lib.name, inputs: &lib.inputs, outputs: &lib.outputs };
    f16c_foreign::run("aarch64", &library, inputs).map(Ok)
}

/// Runs a cached artifact: its manifest gives the argument types and the function's name; the
/// source (`path`) is read only to locate a run-time error.
fn run_loaded(model: f16c_runtime::loader::Loaded, m: &ArgMatches, path: &str) -> anyhow::Result<ExitCode> {
    let manifest = model.manifest();
    let inputs: Vec<_> = crate::read_npys(m, "inputs")?
        .into_iter()
        .enumerate()
        .map(|(k, t)| match manifest.inputs.get(k).and_then(|d| d.ty()) {
            Some(want) => f16c_runtime::npy::fit(t, &want),
            None => t,
        })
        .collect();
    let outputs = match model.run(&inputs) {
        Ok(o) => o,
        Err(RuntimeError::Eval { location, op, message }) => {
            let source = std::fs::read_to_string(path).unwrap_or_default();
            return Ok(eval_error(&location, &op, &message, &source));
        }
        Err(e) => return Err(e.into()),
    };
    let many = |k: &str| -> Vec<String> { m.get_many::<String>(k).into_iter().flatten().cloned().collect() };
    results::deliver(&manifest.function, &outputs, &many("outputs"), &many("compare"))?;
    Ok(ExitCode::SUCCESS)
}

/// Whether `path` is a file that starts as a compiled artifact does.
fn is_artifact(path: &Path) -> bool {
    let mut head = [0u8; 8];
    std::fs::File::open(path).and_then(|mut f| std::io::Read::read_exact(&mut f, &mut head)).is_ok() && &head == f16c_core::artifact::MAGIC
}

/// A run-time error of a kernel, located in the source and reported.
fn eval_error(location: &str, op: &str, message: &str, source: &str) -> ExitCode {
    let d = Diagnostic::error(crate::parse_location(location), format!("while running '{op}': {message}"));
    crate::report(&d.into(), source)
}
