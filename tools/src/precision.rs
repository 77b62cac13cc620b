//! The precision flags shared by `compile`, `opt`, `run` and `check`, calibration, and the
//! standard mixed-precision pipeline.

use anyhow::Context;
use clap::{Arg, ArgAction, ArgMatches, Command};
use f16c_compiler::pass::{registry, PassError, PassManager, Statistic};
use f16c_compiler::policy::{Policy, Precision, Target};
use f16c_dialect::{Diagnostics, Module};
use f16c_runtime::npy;
use std::path::Path;

/// Adds `--precision`, `--policy`, `--keep-f32`, `--io-types`, `--strict`, `--calibrate` (and
/// `--target` unless the command has its own).
pub fn args(mut c: Command, default_precision: &'static str, with_target: bool) -> Command {
    if with_target {
        c = c.arg(
            Arg::new("target")
                .long("target")
                .value_name("TARGET")
                .default_value("reference")
                .value_parser(clap::builder::PossibleValuesParser::new(Target::NAMES))
                .help("Target whose legality applies (bf16 needs sm_80+ or aarch64+bf16)"),
        );
    }
    c.arg(
        Arg::new("precision")
            .long("precision")
            .value_name("P")
            .default_value(default_precision)
            .value_parser(clap::builder::PossibleValuesParser::new(Precision::NAMES))
            .help("The low type: fp16, bf16, or fp32 (nothing lowered)"),
    )
    .arg(
        Arg::new("policy")
            .long("policy")
            .value_name("O0|O1|O2|O3|FILE.toml")
            .default_value("O1")
            .help("Precision policy: a level (O0 nothing, O1 default lists, O2 contractions only, O3 everything) or a TOML file"),
    )
    .arg(
        Arg::new("keep-f32")
            .long("keep-f32")
            .value_name("REGEX")
            .help("Keep ops whose location name (or file:line:col) matches in f32"),
    )
    .arg(
        Arg::new("io-types")
            .long("io-types")
            .value_name("T")
            .default_value("f32")
            .value_parser(["f32", "low"])
            .help("Type of function arguments and results: f32, or the low type"),
    )
    .arg(crate::switch("strict", "Fail instead of keeping f32 when the target cannot run the low type"))
    .arg(
        Arg::new("calibrate")
            .long("calibrate")
            .value_name("X.npy")
            .action(ArgAction::Append)
            .help("Calibration input (repeatable; k files per run for a k-input function): ops whose f32 activations exceed the safe range stay f32"),
    )
}

/// The option text of `assign-precision` for the flags given.
pub fn assign_options(m: &ArgMatches, target: &str) -> String {
    let s = |k: &str| m.get_one::<String>(k).cloned().unwrap_or_default();
    let mut o = format!("precision={} policy={} target={target} io-types={}", s("precision"), s("policy"), s("io-types"));
    if let Some(re) = m.get_one::<String>("keep-f32") {
        o.push_str(&format!(" keep-f32={re}"));
    }
    if m.get_flag("strict") {
        o.push_str(" strict=true");
    }
    o
}

/// The effective policy for the flags given (for `--print-policy`).
pub fn policy(m: &ArgMatches, target: &str) -> anyhow::Result<Policy> {
    let p = Precision::parse(m.get_one::<String>("precision").expect("has default")).expect("checked by clap");
    let t = Target::parse(target).with_context(|| format!("unknown target '{target}'"))?;
    Ok(Policy::from_spec(m.get_one::<String>("policy").expect("has default"), p, t)?)
}

/// The result of [`compile`].
pub struct Compiled {
    /// The module after canonicalize, before precision assignment: what the report and
    /// `check` compare with (the precision passes keep the ids of the ops they retype).
    pub before: Module,
    /// The precision passes' counters.
    pub stats: Vec<(&'static str, Vec<Statistic>)>,
}

/// The standard pipeline: calibration (with `--calibrate`), canonicalize, assign-precision,
/// insert-casts. Diagnostics (warnings, or the errors that stopped it) are printed against
/// `source`; `Ok(None)` means errors stopped it.
pub fn compile(module: &mut Module, m: &ArgMatches, target: &str, source: &str) -> anyhow::Result<Option<Compiled>> {
    calibrate(module, m)?;
    let mut canon = PassManager::new();
    canon.add(registry::create("canonicalize", "")?);
    let mut pm = PassManager::new();
    pm.add(registry::create("assign-precision", &assign_options(m, target))?);
    pm.add(registry::create("insert-casts", "")?);
    let mut sink = std::io::sink();
    let result = canon.run(module, &mut sink).and_then(|mut notes| {
        let before = module.clone();
        notes.extend(pm.run(module, &mut sink)?);
        Ok((before, notes))
    });
    match result {
        Ok((before, notes)) => {
            eprint!("{}", Diagnostics(notes).render(Some(source)));
            Ok(Some(Compiled { before, stats: pm.statistics() }))
        }
        Err(PassError::Diagnostics(d)) => {
            eprint!("{}", d.render(Some(source)));
            Ok(None)
        }
        Err(e) => Err(e.into()),
    }
}

/// Runs every function on the `--calibrate` inputs (f32, reference interpreter) and records on
/// each op the largest magnitude it produced, as `f16c.max_abs`, for `assign-precision`.
pub fn calibrate(module: &mut Module, m: &ArgMatches) -> anyhow::Result<()> {
    let files: Vec<&String> = m.get_many::<String>("calibrate").into_iter().flatten().collect();
    if files.is_empty() {
        return Ok(());
    }
    let tensors = files.iter().map(|p| npy::read(Path::new(p.as_str()))).collect::<Result<Vec<_>, _>>()?;
    for g in &mut module.functions {
        f16c_runtime::calibrate::annotate(g, &tensors)?;
    }
    Ok(())
}
