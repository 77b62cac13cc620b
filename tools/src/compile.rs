//! `f16c compile`: the whole pipeline for a target, emitting a chosen form.

use crate::{input_arg, precision, read_input, switch};
use anyhow::{bail, Context};
use clap::{Arg, ArgMatches, Command};
use f16c_compiler::policy::Target;
use f16c_compiler::report::{to_dot, Report};
use f16c_dialect::export::{print_module, PrintOptions};
use std::collections::BTreeMap;
use std::process::ExitCode;

/// What `--emit` can produce, and which of them this build has.
const EMITS: &[&str] = &["mlir", "report", "dot", "ptx", "llvm", "asm", "obj", "clif"];
const AVAILABLE: &[&str] = &["mlir", "report", "dot", "clif", "asm"];

pub fn command() -> Command {
    let c = Command::new("compile")
        .about("Compile a model: canonicalize, assign precision, insert casts, then emit")
        .after_help(
            "Emit forms:\n  mlir    the mixed-precision TOSA MLIR (valid for mlir-opt)\n  \
             report  per op: precision, accumulator, deciding rule, casts, weight bytes (--report-format=table|json)\n  \
             dot     the graph coloured by precision, casts marked (Graphviz: dot -Tsvg)\n  \
             clif    the Cranelift IR of every kernel (--target=x86_64), after a header with the\n          \
             kernels, the buffer plan's peak and its liveness lower bound, and the weight bytes\n  \
             asm     the host machine code of every kernel (--target=x86_64, as Cranelift prints it)\n  \
             ptx, llvm, obj, and asm for sm_* and aarch64: not in this build yet\n\n\
             Examples:\n  f16c compile net.mlir --target=sm_70 --precision=fp16 --emit=report\n  \
             f16c compile net.mlir --target=x86_64 --precision=fp16 --emit=clif\n  \
             f16c compile net.mlir --policy=my-policy.toml --print-policy\n  \
             f16c compile net.mlir --calibrate x.npy --emit=mlir -o net.f16.mlir",
        )
        .arg(input_arg())
        .arg(Arg::new("output").short('o').value_name("FILE").help("Write the output here instead of standard output"))
        .arg(
            Arg::new("emit")
                .long("emit")
                .value_name("FORM")
                .value_parser(clap::builder::PossibleValuesParser::new(EMITS))
                .help("What to produce (see below)"),
        )
        .arg(
            Arg::new("report-format")
                .long("report-format")
                .value_name("F")
                .default_value("table")
                .value_parser(["table", "json"])
                .help("Format of --emit=report"),
        )
        .arg(switch("print-policy", "Print the effective precision policy (a valid policy file) and stop"));
    precision::args(c, "fp16", true)
}

pub fn main(m: &ArgMatches) -> anyhow::Result<ExitCode> {
    let target = m.get_one::<String>("target").expect("has default").clone();
    if m.get_flag("print-policy") {
        let text = precision::policy(m, &target)?.to_toml();
        return crate::write_output(m, &text).map(|_| ExitCode::SUCCESS);
    }
    let emit = match m.get_one::<String>("emit") {
        Some(e) if AVAILABLE.contains(&e.as_str()) => e.clone(),
        Some(e) => bail!("--emit={e}: code generation for {target} is not in this build yet (available: {})", AVAILABLE.join(", ")),
        None => bail!(
            "no backend in this build produces a loadable artifact for {target} yet; choose --emit={}",
            AVAILABLE.join("|")
        ),
    };
    Target::parse(&target).with_context(|| format!("unknown target '{target}'"))?;
    if matches!(emit.as_str(), "clif" | "asm") && target != "x86_64" {
        bail!("--emit={emit} for {target}: code generation for {target} is not in this build yet (--target=x86_64 has it)");
    }
    let (source, file) = read_input(m.get_one::<String>("input").expect("has default"))?;
    let Some(mut module) = crate::parse_or_report(&source, &file) else { return Ok(ExitCode::FAILURE) };
    let Some(precision::Compiled { before, stats }) = precision::compile(&mut module, m, &target, &source)? else {
        return Ok(ExitCode::FAILURE);
    };
    let text = match emit.as_str() {
        "mlir" => print_module(&module, PrintOptions::default()).map_err(|d| anyhow::anyhow!(d.render(Some(&source))))?,
        "dot" => before.functions.iter().zip(&module.functions).map(|(b, a)| to_dot(b, a)).collect(),
        "clif" | "asm" => {
            let mut text = String::new();
            for g in &module.functions {
                text.push_str(&clif(g, emit == "asm")?);
            }
            text
        }
        _ => {
            let mut settings = BTreeMap::new();
            for k in ["target", "precision", "policy", "io-types"] {
                settings.insert(k.to_string(), m.get_one::<String>(k).cloned().unwrap_or_else(|| target.clone()));
            }
            let reports: Vec<Report> =
                before.functions.iter().zip(&module.functions).map(|(b, a)| Report::build(&file, settings.clone(), b, a, &stats)).collect();
            if m.get_one::<String>("report-format").map(String::as_str) == Some("json") {
                let items: Vec<String> = reports.iter().map(Report::to_json).collect();
                if items.len() == 1 { items[0].clone() + "\n" } else { format!("[\n{}\n]\n", items.join(",\n")) }
            } else {
                reports.iter().map(Report::to_table).collect::<Vec<_>>().join("\n")
            }
        }
    };
    crate::write_output(m, &text)?;
    Ok(ExitCode::SUCCESS)
}

/// The x86_64 backend's CLIF (or, with `asm`, the host machine code) for one function, after a
/// summary of its kernels and memory.
fn clif(g: &f16c_dialect::Graph, asm: bool) -> anyhow::Result<String> {
    use f16c_compiler::backend::cranelift;
    let program = f16c_compiler::lower::lower(g)?;
    // Printed with FMA on (what x86-64 hosts with FMA3 run), so the text is the same everywhere.
    let artifact = cranelift::compile(&program, &cranelift::Options::default())?;
    let mut s = format!("; function @{}: {} kernels\n", g.name, program.kernels.len());
    for k in &program.kernels {
        s.push_str(&format!(";   {} ({} ops)\n", k.name, k.nodes.len()));
    }
    s.push_str(&format!(
        "; arena {} bytes (liveness lower bound {}), weights {} bytes, scratch {} bytes per thread\n",
        artifact.plan.arena_bytes,
        artifact.plan.lower_bound,
        artifact.weight_bytes(),
        artifact.scratch_bytes
    ));
    if asm {
        s.push_str(&f16c_runtime::jit::disassemble(&artifact)?);
    } else {
        s.push_str(&artifact.clif());
    }
    Ok(s)
}
