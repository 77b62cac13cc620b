//! The precision flags shared by `compile`, `opt`, `run` and `check`, turned into the compile
//! driver's options.

use anyhow::Context;
use clap::{Arg, ArgAction, ArgMatches, Command};
use f16c_compiler::driver;
use f16c_compiler::pass::PassError;
use f16c_compiler::policy::{Policy, Precision, Target};
use f16c_dialect::{Diagnostic, Diagnostics, Module};

/// Adds `--precision`, `--policy`, `--keep-f32`, `--io-types`, `--strict`, `--accumulate`,
/// `--no-fold-batch-norm`, `--calibrate` (and
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
        Arg::new("accumulate")
            .long("accumulate")
            .value_name("T")
            .default_value("f32")
            .value_parser(["f32", "f16"])
            .help("Accumulator of fp16 matmuls and convolutions: f32 (the contract), or f16, a fast mode outside it (AArch64: 8-lane FMLA; less accurate, the report marks it; other targets still accumulate in f32)"),
    )
    .arg(crate::switch(
        "no-fold-batch-norm",
        "Keep the add/sub/mul ops after a convolution (batch norm) as written instead of folding them into its weights and bias (folding changes f32 results by rounding only)",
    ))
    .arg(
        Arg::new("calibrate")
            .long("calibrate")
            .value_name("X.npy")
            .action(ArgAction::Append)
            .help("Calibration input (repeatable; k files per run for a k-input function): ops whose f32 activations exceed the safe range stay f32"),
    )
}

/// The driver's options for the flags given, for `target`.
pub fn options(m: &ArgMatches, target: &str) -> anyhow::Result<driver::Options> {
    let s = |k: &str| m.get_one::<String>(k).cloned().unwrap_or_default();
    let precision = Precision::parse(&s("precision")).expect("checked by clap");
    let target = Target::parse(target).with_context(|| format!("unknown target '{target}'"))?;
    Ok(driver::Options {
        target,
        precision,
        policy: s("policy"),
        keep_f32: m.get_one::<String>("keep-f32").cloned(),
        io_low: s("io-types") == "low",
        strict: m.get_flag("strict"),
        annotate_fp32: true,
        f16_accumulate: s("accumulate") == "f16",
        fold_batch_norm: !m.get_flag("no-fold-batch-norm"),
    })
}

/// The option text of `assign-precision` for the flags given.
pub fn assign_options(m: &ArgMatches, target: &str) -> anyhow::Result<String> {
    Ok(options(m, target)?.assign_precision_options())
}

/// The effective policy for the flags given (for `--print-policy`).
pub fn policy(m: &ArgMatches, target: &str) -> anyhow::Result<Policy> {
    let o = options(m, target)?;
    Ok(Policy::from_spec(&o.policy, o.precision, o.target)?)
}

/// The `--calibrate` tensors, in order.
pub fn calibration(m: &ArgMatches) -> anyhow::Result<Vec<f16c_runtime::Tensor>> {
    crate::read_npys(m, "calibrate")
}

/// What [`compile`] hands back besides the transformed module.
pub struct Compiled {
    /// The module after canonicalize, before precision assignment (for the report and `check`).
    pub before: Module,
    /// The precision passes' counters.
    pub stats: Vec<(&'static str, Vec<f16c_compiler::pass::Statistic>)>,
}

/// The standard pipeline (the driver's): calibration (with `--calibrate`), canonicalize,
/// assign-precision, insert-casts. Diagnostics (warnings, or the errors that stopped it) are
/// printed against `source`; `Ok(None)` means errors stopped it.
pub fn compile(module: &mut Module, m: &ArgMatches, target: &str, source: &str) -> anyhow::Result<Option<Compiled>> {
    let options = options(m, target)?;
    let result = driver::prepare_beside_f32(module, &options, &calibration(m)?);
    Ok(rendered(result, |(_, p)| &p.notes, source)?.map(|(before, prepared)| Compiled { before, stats: prepared.stats }))
}

/// [`compile`] without keeping the module before precision assignment (what `run` needs: no
/// copy of the weights). `Ok(false)` means errors stopped it (printed against `source`).
pub fn prepare(module: &mut Module, m: &ArgMatches, target: &str, source: &str) -> anyhow::Result<bool> {
    let options = options(m, target)?;
    let result = driver::prepare(module, &options, &calibration(m)?);
    Ok(rendered(result, |p| &p.notes, source)?.is_some())
}

/// Prints a pipeline's notes (found in its result by `notes`), or the diagnostics that stopped
/// it, against `source`; `Ok(None)` when errors stopped it.
fn rendered<T>(result: Result<T, PassError>, notes: impl Fn(&T) -> &Vec<Diagnostic>, source: &str) -> anyhow::Result<Option<T>> {
    match result {
        Ok(value) => {
            eprint!("{}", Diagnostics(notes(&value).clone()).render(Some(source)));
            Ok(Some(value))
        }
        Err(PassError::Diagnostics(d)) => {
            eprint!("{}", d.render(Some(source)));
            Ok(None)
        }
        Err(e) => Err(e.into()),
    }
}

/// Annotates calibration ranges on every function (for `opt`, which builds its own pipeline).
pub fn calibrate(module: &mut Module, m: &ArgMatches) -> anyhow::Result<()> {
    let tensors = calibration(m)?;
    if !tensors.is_empty() {
        for g in &mut module.functions {
            f16c_compiler::calibrate::annotate(g, &tensors)?;
        }
    }
    Ok(())
}
