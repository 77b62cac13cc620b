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
             Example:\n  f16c check net.mlir --input x.npy --precision=fp16 --policy=O3",
        )
        .arg(input_arg())
        .arg(Arg::new("inputs").long("input").value_name("X.npy").action(ArgAction::Append).required(true).help("Input tensor, one per function argument"))
        .arg(
            Arg::new("tolerance")
                .long("tolerance")
                .value_name("T")
                .default_value(DEFAULT_TOLERANCE)
                .value_parser(clap::value_parser!(f64))
                .help("Largest per-op error relative to the f32 peak"),
        )
        .arg(Arg::new("function").long("function").value_name("NAME").help("The function to check (default: the only one, or 'forward')"));
    precision::args(c, "fp16", true)
}

pub fn main(m: &ArgMatches) -> anyhow::Result<ExitCode> {
    let target = m.get_one::<String>("target").expect("has default").clone();
    let tolerance = *m.get_one::<f64>("tolerance").expect("has default");
    if !tolerance.is_finite() || tolerance < 0.0 {
        anyhow::bail!("--tolerance={tolerance}: the tolerance must be a finite number >= 0");
    }
    let (source, file) = read_input(m.get_one::<String>("input").expect("has default"))?;
    let Some(mut module) = crate::parse_or_report(&source, &file) else { return Ok(ExitCode::FAILURE) };
    let Some(compiled) = precision::compile(&mut module, m, &target, &source)? else { return Ok(ExitCode::FAILURE) };
    let index = crate::choose_function(&module, m, &file)?;
    let inputs = crate::read_npys(m, "inputs")?;
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
