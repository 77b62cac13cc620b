//! `f16c check`: run the mixed-precision graph beside the f32 graph and name the first op that
//! goes non-finite or out of tolerance, with the override that keeps it in f32.

use f16c_runtime::outln;
use crate::{input_arg, precision, read_input};
use anyhow::Context;
use clap::{Arg, ArgAction, ArgMatches, Command};
use f16c_compiler::check;
use std::process::ExitCode;

/// Default per-op tolerance: largest |mixed - f32| relative to the f32 value's peak. fp16 has
/// a relative precision of 2^-11 (4.9e-4) per rounding; 1e-2 leaves room for ~20 roundings
/// compounding before an op is flagged.
const DEFAULT_TOLERANCE: &str = "1e-2";

pub fn command() -> Command {
    let c = Command::new("check")
        .about("Find the op that breaks accuracy: run mixed precision beside f32 and compare op by op")
        .after_help(
            "Prints every op's error against f32 (relative to the f32 value's largest magnitude), then names\n\
             the first op that goes non-finite or exceeds --tolerance, and how to keep it in f32.\n\
             Exit status: 0 when no op fails, 1 when one does.\n\n\
             With --fix, searches for the fewest ops to keep in f32 so that the whole model meets\n\
             --tolerance (--metric) on every sample (--input, and --samples DIR), and writes them as\n\
             [[op]] tables of a policy file (-o) that f16c compile --policy reads: one instrumented f32\n\
             run, each op's sensitivity (its error alone in the low type, and how it grows the error it\n\
             is given), then a bisection over the sensitivity order confirmed by real runs of the\n\
             mixed model on the JIT. Exit status 0 when a policy was written; nothing is written when\n\
             no assignment meets the tolerance.\n\n\
             Examples:\n  f16c check net.mlir --input x.npy --precision=fp16 --policy=O3\n  \
             f16c check net.mlir --input x.npy --tolerance=1e-3 --fix -o net.policy.toml\n  \
             f16c compile net.mlir --target=x86_64 --policy=net.policy.toml -o net.f16c",
        )
        .arg(input_arg())
        .arg(Arg::new("inputs").long("input").value_name("X.npy").action(ArgAction::Append).required_unless_present("samples").help("Input tensor, one per function argument"))
        .arg(
            Arg::new("tolerance")
                .long("tolerance")
                .value_name("T")
                .default_value(DEFAULT_TOLERANCE)
                .value_parser(clap::value_parser!(f64))
                .help("Largest per-op error relative to the f32 peak"),
        )
        .arg(Arg::new("function").long("function").value_name("NAME").help("The function to check (default: the only one, or 'forward')"))
        .arg(crate::switch("fix", "Find the fewest ops to keep in f32 so that the model meets --tolerance on every sample, and write them as a policy file"))
        .arg(Arg::new("output").short('o').value_name("FILE.toml").help("With --fix: where to write the policy (default: NET.policy.toml in the current directory, for NET.mlir)"))
        .arg(
            Arg::new("samples")
                .long("samples")
                .value_name("DIR")
                .help("With --fix: a folder of .npy input sets, read in name order, k files per set for a k-input function; the tolerance must hold on each"),
        )
        .arg(
            Arg::new("metric")
                .long("metric")
                .value_name("M")
                .default_value("max-rel")
                .value_parser(clap::builder::PossibleValuesParser::new(f16c_compiler::fix::Metric::NAMES))
                .help("With --fix: max-rel (max |mixed - f32| over the result's peak), mean-rel, cosine (1 - cosine similarity), top1 (fraction of rows whose arg-max changes)"),
        );
    precision::args(c, "fp16", true)
}

pub fn main(m: &ArgMatches) -> anyhow::Result<ExitCode> {
    let target = m.get_one::<String>("target").expect("has default").clone();
    let tolerance = *m.get_one::<f64>("tolerance").expect("has default");
    if !tolerance.is_finite() || tolerance < 0.0 {
        anyhow::bail!("--tolerance={tolerance}: the tolerance must be a finite number >= 0");
    }
    let (mut source, file) = read_input(m.get_one::<String>("input").expect("has default"))?;
    let Some(mut module) = crate::parse_or_report(&mut source, &file) else { return Ok(ExitCode::FAILURE) };
    let Some(compiled) = precision::compile(&mut module, m, &target, &source)? else { return Ok(ExitCode::FAILURE) };
    let index = crate::choose_function(&module, m, &file)?;
    let inputs = crate::read_npys(m, "inputs")?;
    if m.get_flag("fix") {
        return fix(m, &file, &target, &compiled.before.functions[index], inputs, tolerance);
    }
    if m.get_one::<String>("samples").is_some() || m.get_one::<String>("output").is_some() {
        anyhow::bail!("--samples and -o belong to --fix (without it, check compares one run on --input)");
    }
    let (f32_graph, mixed) = (&compiled.before.functions[index], &module.functions[index]);
    let result = check::check(f32_graph, mixed, &inputs, tolerance).context("running the two graphs")?;

    outln!("{:<24} {:<28} {:<5} {:>10} {:>10}", "op", "location", "type", "rel. error", "non-finite")?;
    for o in &result.ops {
        let flag = if Some(o.id) == result.culprit.map(|c| result.ops[c].id) { "  <-- first failure" } else if o.fails(tolerance) { "  (fails)" } else { "" };
        outln!(
            "{:<24} {:<28} {:<5} {:>10.3e} {:>10}{flag}",
            format!("{} {}", o.id, o.op),
            f16c_compiler::report::short_location(&o.location.to_string()),
            o.dtype.to_string(),
            o.error.relative_to_peak(),
            o.non_finite
        )?;
    }
    for (k, e) in result.outputs.iter().enumerate() {
        outln!("result #{k}: max |mixed - f32| = {:.3e}, relative to peak {:.3e}", e.max_abs, e.relative_to_peak())?;
    }
    let Some(c) = result.culprit else {
        outln!("no op goes non-finite or beyond the tolerance {tolerance:e}")?;
        return Ok(ExitCode::SUCCESS);
    };
    let o = &result.ops[c];
    let why = if o.non_finite > 0 {
        format!("{} value(s) became non-finite in {} (finite in f32, peak {:.4e})", o.non_finite, o.dtype, o.error.peak)
    } else {
        format!("error {:.3e} relative to peak exceeds the tolerance {tolerance:e}", o.error.relative_to_peak())
    };
    outln!("\nfirst failing op: {} '{}' at {}: {why}", o.id, o.op, o.location)?;
    let label = o.location.name.clone().unwrap_or_else(|| o.location.to_string());
    outln!("to keep it in f32, add {{f16c.precision = \"f32\"}} to the op at {}, or pass --keep-f32='^{}$'", o.location, regex::escape(&label))?;
    if m.get_many::<String>("calibrate").is_none() {
        outln!("or let calibration find every such op: --calibrate {}", m.get_one::<String>("inputs").map_or("x.npy", |s| s.as_str()))?;
    }
    Ok(ExitCode::FAILURE)
}

/// `--fix`: the search of `f16c_compiler::fix`, run on the JIT; prints the summary, writes the
/// policy.
fn fix(m: &ArgMatches, file: &str, target: &str, before: &f16c_dialect::Graph, inputs: Vec<f16c_runtime::Tensor>, tolerance: f64) -> anyhow::Result<ExitCode> {
    use f16c_compiler::fix::{self, Metric};
    let k = before.inputs().len().max(1);
    let mut samples = Vec::new();
    if !inputs.is_empty() {
        samples.push(inputs);
    }
    if let Some(dir) = m.get_one::<String>("samples") {
        let mut files: Vec<std::path::PathBuf> = std::fs::read_dir(dir)
            .with_context(|| format!("cannot read --samples folder '{dir}'"))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "npy"))
            .collect();
        files.sort();
        if files.is_empty() || files.len() % k != 0 {
            anyhow::bail!("--samples {dir}: {} .npy file(s), not a multiple of the {k} input(s) of '@{}'", files.len(), before.name);
        }
        for set in files.chunks(k) {
            samples.push(set.iter().map(|p| f16c_runtime::npy::read(p)).collect::<Result<Vec<_>, _>>()?);
        }
    }
    let metric = Metric::parse(m.get_one::<String>("metric").expect("has default")).expect("clap checked it");
    let options = precision::options(m, target)?;
    let out = match m.get_one::<String>("output") {
        Some(p) => p.clone(),
        None if file == "<stdin>" => anyhow::bail!("--fix reads the model from standard input: name the policy file with -o"),
        None => {
            let stem = std::path::Path::new(file).file_name().map(|f| f.to_string_lossy().to_string()).unwrap_or_default();
            format!("{}.policy.toml", stem.strip_suffix(".mlir").unwrap_or(&stem))
        }
    };
    let threads = f16c_jit::default_threads();
    crate::freed_blocks_kept();
    let cache = f16c_compiler::backend::cranelift::CodeCache::default();
    let runner = |g: &f16c_dialect::Graph, sets: &[Vec<f16c_runtime::Tensor>]| f16c_jit::run_samples(g, sets, threads, &cache);
    let result = match fix::fix(before, &options, &samples, metric, tolerance, &runner) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: {e}");
            return Ok(ExitCode::FAILURE);
        }
    };
    let low = options.precision.name();
    outln!("f16c check --fix: {low}, policy {}, {} {tolerance:e} on {} sample(s)", options.policy, metric.name(), samples.len())?;
    outln!("{:<24} {:<28} {:>10} {:>10}  {}", "op", "location", "local", "carried", "decision")?;
    for (i, c) in result.candidates.iter().enumerate() {
        if i >= result.kept + 5 {
            outln!("... {} more op(s) in {low}, less sensitive", result.candidates.len() - i)?;
            break;
        }
        let decision = if i < result.kept { "f32" } else { low };
        outln!(
            "{:<24} {:<28} {:>10.3e} {:>10.3e}  {decision}",
            format!("{} {}", c.id, c.op),
            f16c_compiler::report::short_location(&c.location.to_string()),
            c.local,
            c.carried
        )?;
    }
    let pct = |a: f64, b: f64| if b > 0.0 { 100.0 * a / b } else { 0.0 };
    outln!("kept in f32: {} of {} op(s) the policy runs in {low}", result.kept, result.candidates.len())?;
    outln!("ops in {low}: {} of {} float ops ({:.1}%)", result.low_ops.0, result.low_ops.1, pct(result.low_ops.0 as f64, result.low_ops.1 as f64))?;
    outln!("FLOPs in {low}: {:.4e} of {:.4e} ({:.1}%)", result.low_flops.0 as f64, result.low_flops.1 as f64, pct(result.low_flops.0 as f64, result.low_flops.1 as f64))?;
    outln!(
        "contraction FLOPs left in f32: {:.4e} of {:.4e} ({:.1}%)",
        result.f32_contraction_flops.0 as f64,
        result.f32_contraction_flops.1 as f64,
        pct(result.f32_contraction_flops.0 as f64, result.f32_contraction_flops.1 as f64)
    )?;
    outln!("weight bytes: {} -> {}", result.weight_bytes.0, result.weight_bytes.1)?;
    let show = |e: &Vec<Vec<f64>>| e.iter().enumerate().map(|(s, r)| format!("#{s}: {}", r.iter().map(|x| format!("{x:.3e}")).collect::<Vec<_>>().join(", "))).collect::<Vec<_>>().join("; ");
    outln!("error ({}) per sample: {}", metric.name(), show(&result.errors))?;
    outln!("error with the policy as given: {}", show(&result.all_low_errors))?;
    outln!("runs: {} of a mixed model and 1 of the f32 model on the JIT (each on every sample), 2 instrumented per sample", result.runs)?;
    let s = |d: std::time::Duration| d.as_secs_f64();
    outln!(
        "time: {:.2} s (instrumented runs and sensitivity {:.2} s; probes: precision passes {:.2} s, compile and run {:.2} s)",
        s(result.time),
        s(result.sensitivity_time),
        s(result.probe_times.0),
        s(result.probe_times.1)
    )?;
    std::fs::write(&out, result.policy.to_toml()).with_context(|| format!("cannot write '{out}'"))?;
    outln!("wrote {out} (f16c compile --policy={out})")?;
    Ok(ExitCode::SUCCESS)
}
