//! `f16c-run`: runs a compiled f16c artifact on `.npy` inputs, without the compiler (the
//! analogue of IREE's `iree-run-module`). Links neither MLIR nor LLVM.

use clap::{Arg, ArgAction, Command};
use f16c_core::artifact::Slot;
use f16c_runtime::{exec, loader, npy, outln, results, stdout};
use std::path::Path;
use std::process::ExitCode;

fn cli() -> Command {
    Command::new("f16c-run")
        .about("Run a compiled f16c artifact (f16c compile -o net.f16c) on .npy inputs")
        .version(env!("CARGO_PKG_VERSION"))
        .after_help(
            "The artifact holds the code (a shared object for CPU targets), the converted weights and a\n\
             manifest (target, argument and result types, buffer layout, kernel schedule). It is checked\n\
             on load: a truncated, corrupted or wrong-version file, or one for another target or CPU,\n\
             is an error. GPU artifacts (--target=sm_XX) run through the CUDA driver, loaded at run time.\n\
             An f32 input may be given for an f16 or bf16 argument (rounded to nearest even); bf16\n\
             results are written to .npy as f32 (exact).\n\n\
             Examples:\n  f16c compile net.mlir --target=x86_64 --precision=fp16 -o net.f16c\n  \
             f16c-run net.f16c --input x.npy --output y.npy\n  \
             f16c-run net.f16c --input x.npy --compare y_ref.npy --threads=4\n  \
             f16c-run net.f16c --info",
        )
        .arg(Arg::new("artifact").required(true).value_name("NET.f16c").help("The artifact to run"))
        .arg(Arg::new("inputs").long("input").value_name("X.npy").action(ArgAction::Append).help("Input tensor, one per function argument, in order"))
        .arg(Arg::new("outputs").long("output").value_name("Y.npy").action(ArgAction::Append).help("Where to write each result, in order (omitted: print them)"))
        .arg(Arg::new("compare").long("compare").value_name("REF.npy").action(ArgAction::Append).help("Compare each result with a reference .npy (in order) and print the error"))
        .arg(Arg::new("threads").long("threads").value_name("N").value_parser(clap::value_parser!(usize)).help("Threads for large kernels (default: every core)"))
        .arg(
            Arg::new("bench")
                .long("bench")
                .value_name("N")
                .value_parser(clap::value_parser!(usize))
                .help("Run N more times and print the median and minimum time (GPU: the kernels alone, timed with CUDA events; CPU: whole runs)"),
        )
        .arg(Arg::new("info").long("info").action(ArgAction::SetTrue).help("Print what the artifact holds (target, code, function, layout) and stop"))
        .arg(Arg::new("profile").long("profile").action(ArgAction::SetTrue).help(
            "Time every kernel (each run, --bench's included) and print the profile to standard error at the end: per kernel its time per run and share, name, source location, what it computes and its plan, slowest first (F16C_PROFILE=1 does the same)",
        ))
}

fn main() -> ExitCode {
    stdout::die_quietly_on_closed_pipe();
    // The settings the runtime takes from this binary's environment (F16C_MAX_TENSOR_BYTES, ...).
    f16c_core::settings::set(f16c_core::settings::Settings::from_variables(|name| std::env::var(name).ok()));
    let m = cli().get_matches();
    match run(&m) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("f16c-run: error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(m: &clap::ArgMatches) -> Result<(), Box<dyn std::error::Error>> {
    let path = Path::new(m.get_one::<String>("artifact").expect("required"));
    let many = |k: &str| -> Vec<String> { m.get_many::<String>(k).into_iter().flatten().cloned().collect() };
    if m.get_flag("info") {
        let artifact = loader::read(path)?;
        outln!("{}", describe(&artifact))?;
        return Ok(());
    }
    let threads = m.get_one::<usize>("threads").copied().unwrap_or_else(exec::default_threads);
    if threads == 0 {
        return Err("--threads must be at least 1".into());
    }
    exec::set_profiling(m.get_flag("profile") || std::env::var_os("F16C_PROFILE").is_some_and(|v| !v.is_empty() && v != "0"));
    let model = loader::open(path, threads)?;
    let inputs = many("inputs").iter().map(|p| npy::read(Path::new(p))).collect::<Result<Vec<_>, _>>()?;
    // f32 inputs fit f16/bf16 arguments (NumPy has no bf16).
    let wanted: Vec<Option<f16c_runtime::TensorType>> = model.manifest().inputs.iter().map(|d| d.ty()).collect();
    let inputs: Vec<_> = inputs.into_iter().enumerate().map(|(k, t)| match wanted.get(k).cloned().flatten() { Some(w) => npy::fit(t, &w), None => t }).collect();
    let outputs = model.run(&inputs)?;
    if let Some(&n) = m.get_one::<usize>("bench") {
        let mut times = (0..n.max(1)).map(|_| model.run_timed(&inputs).map(|(_, ms)| ms)).collect::<Result<Vec<_>, _>>()?;
        times.sort_by(f64::total_cmp);
        let what = if model.manifest().code_format == f16c_runtime::artifact::CodeFormat::Ptx { "kernels" } else { "runs" };
        outln!("bench: {} {what}: median {:.4} ms, min {:.4} ms", times.len(), times[times.len() / 2], times[0])?;
    }
    results::deliver(&model.manifest().function, &outputs, &many("outputs"), &many("compare"))?;
    Ok(())
}

/// The manifest and section sizes, for `--info`, then one line per step: its kernel, its
/// function and how many work items the executor splits across threads.
fn describe(a: &f16c_runtime::Artifact) -> String {
    let m = &a.manifest;
    let steps: String = m
        .steps
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let kernel = m.kernels.get(s.kernel).map_or("?", |k| k.name.as_str());
            let function = m.symbols.get(s.function).map_or("?", String::as_str);
            format!("\nstep {i}: {kernel} ({function}), {} work item{}", s.work, if s.work == 1 { "" } else { "s" })
        })
        .collect();
    let head = format!(
        "target {} ({}), code {:?} {} bytes, constants {} bytes\nfunction @{}: {} input(s), {} result(s), {} kernels, {} steps, arena {} bytes, scratch {} bytes per thread\nrequires CPU features: {}",
        m.target,
        m.backend,
        m.code_format,
        a.code.len(),
        a.constants.len(),
        m.function,
        m.inputs.len(),
        m.outputs.len(),
        m.kernels.len(),
        m.steps.len(),
        m.arena_bytes,
        m.scratch_bytes,
        if m.requires.is_empty() { "none".to_string() } else { m.requires.join(" ") }
    );
    let micro = if m.micro_kernels == 0 { String::new() } else { format!("\ncalls the runtime's micro-kernels (contract version {})", m.micro_kernels) };
    let (widened, stored) = m.slots.iter().filter_map(|s| if let Slot::Constant { bytes, widen: Some(_), .. } = s { Some(*bytes) } else { None }).fold((0, 0), |(n, b), x| (n + 1, b + x));
    let widen = if widened == 0 { String::new() } else { format!("\n{widened} weight(s) of {stored} bytes (fp16/bf16) widened to f32 when loaded ({} bytes in memory)", 2 * stored) };
    head + &micro + &widen + &steps
}
