//! `f16c-fuzz`: the fuzzing and differential-testing campaigns (README, "Reliability").
//!
//! ```text
//! f16c-fuzz fuzz [--target importer|npy|policy|artifact|all] [--seconds N] [--seed S] [--out DIR]
//! f16c-fuzz diff [--seconds N] [--seed S] [--backends jit,llvm,aarch64] [--out DIR]
//! f16c-fuzz graph SEED          # the generated graph of a seed, as MLIR
//! ```
//! Exit status 1 when a campaign finds something (the inputs or reproducers are saved under
//! `--out`), 2 on a usage error.

use f16c_tests::differential::{self, DiffBackend};
use f16c_tests::fuzz::{self, FuzzTarget};
use std::path::PathBuf;
use std::process::ExitCode;

const USAGE: &str = "usage:
  f16c-fuzz fuzz [--target importer|npy|policy|artifact|all] [--seconds N] [--seed S] [--out DIR]
      mutation fuzzing of f16c's readers; --seconds is per target (default 60), --out (default
      target/fuzz) receives each finding's input and message
  f16c-fuzz diff [--seconds N] [--seed S] [--backends jit,llvm,aarch64] [--out DIR]
      random valid TOSA graphs on the reference interpreter and the backends, compared under
      the numeric contract; failing graphs are shrunk and saved under --out (default
      target/diff); aarch64 runs under qemu-aarch64
  f16c-fuzz graph SEED
      prints the graph generated from SEED as MLIR, with its inputs' types";

fn main() -> ExitCode {
    f16c_runtime::stdout::die_quietly_on_closed_pipe();
    // The settings the libraries take from this binary's environment (a worker's limits).
    f16c_core::settings::set(f16c_core::settings::Settings::from_variables(|name| std::env::var(name).ok()));
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("f16c-fuzz: {e}\n\n{USAGE}");
            ExitCode::from(2)
        }
    }
}

/// The value of `--name` (`--name=V` or `--name V`).
fn flag(args: &[String], name: &str) -> Result<Option<String>, String> {
    let long = format!("--{name}");
    for (i, a) in args.iter().enumerate() {
        if let Some(v) = a.strip_prefix(&format!("{long}=")) {
            return Ok(Some(v.to_string()));
        }
        if *a == long {
            return args.get(i + 1).cloned().map(Some).ok_or(format!("{long} needs a value"));
        }
    }
    Ok(None)
}

fn number<T: std::str::FromStr>(args: &[String], name: &str, default: T) -> Result<T, String> {
    match flag(args, name)? {
        Some(v) => v.parse().map_err(|_| format!("--{name}={v} is not a number")),
        None => Ok(default),
    }
}

fn check_flags(args: &[String], known: &[&str]) -> Result<(), String> {
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        let name = a.strip_prefix("--").map(|n| n.split('=').next().unwrap_or(n)).ok_or(format!("unexpected argument '{a}'"))?;
        if !known.contains(&name) {
            return Err(format!("unknown option '--{name}'"));
        }
        i += if a.contains('=') { 1 } else { 2 };
    }
    Ok(())
}

fn run(args: &[String]) -> Result<bool, String> {
    let (command, rest) = args.split_first().ok_or("a command is needed")?;
    match command.as_str() {
        "worker" => {
            let target = rest.first().and_then(|t| FuzzTarget::parse(t)).ok_or("worker needs a target")?;
            fuzz::worker(target).map_err(|e| e.to_string())?;
            Ok(true)
        }
        "fuzz" => {
            check_flags(rest, &["target", "seconds", "seed", "out"])?;
            let targets = match flag(rest, "target")?.as_deref() {
                None | Some("all") => FuzzTarget::ALL.to_vec(),
                Some(t) => vec![FuzzTarget::parse(t).ok_or(format!("unknown target '{t}'"))?],
            };
            let seconds: f64 = number(rest, "seconds", 60.0)?;
            let seed: u64 = number(rest, "seed", 1)?;
            let out = PathBuf::from(flag(rest, "out")?.unwrap_or_else(|| "target/fuzz".into()));
            let exe = std::env::current_exe().map_err(|e| e.to_string())?;
            let mut report = fuzz::Report::default();
            for t in targets {
                fuzz::campaign(&exe, t, seconds, seed, &out, &mut report).map_err(|e| format!("{}: {e}", t.name()))?;
            }
            f16c_runtime::outln!("fuzz: {seconds} s per target, seed {seed}\n\n{}", report.table()).map_err(|e| e.to_string())?;
            Ok(report.findings.is_empty())
        }
        "diff" => {
            check_flags(rest, &["seconds", "seed", "backends", "out"])?;
            let seconds: f64 = number(rest, "seconds", 60.0)?;
            let seed: u64 = number(rest, "seed", 1)?;
            let out = PathBuf::from(flag(rest, "out")?.unwrap_or_else(|| "target/diff".into()));
            let names = flag(rest, "backends")?.unwrap_or_else(|| "jit,llvm,aarch64".into());
            let mut backends = Vec::new();
            for n in names.split(',') {
                match n {
                    "jit" => backends.extend([DiffBackend::Jit(1), DiffBackend::Jit(2)]),
                    "llvm" => backends.extend([DiffBackend::LlvmX86(1), DiffBackend::LlvmX86(2)]),
                    "aarch64" => backends.push(DiffBackend::Aarch64),
                    other => return Err(format!("unknown backend '{other}' (jit, llvm, aarch64)")),
                }
            }
            let report = differential::campaign(seconds, seed, &backends, &out, 200);
            f16c_runtime::outln!("diff: {seconds} s, seed {seed}, first graph seed {seed}, last {}\n\n{}", seed + report.graphs.saturating_sub(1), report.table()).map_err(|e| e.to_string())?;
            Ok(report.findings.is_empty())
        }
        "graph" => {
            let seed: u64 = rest.first().and_then(|s| s.parse().ok()).ok_or("graph needs a seed")?;
            let case = differential::generate(seed);
            let m = f16c_dialect::Module { functions: vec![case.graph] };
            let text = f16c_dialect::export::print_module(&m, Default::default()).map_err(|d| d.to_string())?;
            f16c_runtime::stdout::print(&text).map_err(|e| e.to_string())?;
            Ok(true)
        }
        "-h" | "--help" | "help" => {
            f16c_runtime::outln!("{USAGE}").map_err(|e| e.to_string())?;
            Ok(true)
        }
        other => Err(format!("unknown command '{other}'")),
    }
}
