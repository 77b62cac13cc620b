//! `f16c opt`: MLIR in, passes, MLIR out — the driver lit tests use.

use crate::{diagnostics, input_arg, read_input, switch};
use clap::{Arg, ArgAction, ArgMatches, Command};
use f16c_compiler::pass::{registry, PassError, PassManager};
use f16c_dialect::export::{print_module, PrintOptions};
use f16c_dialect::import::parse_module;
use f16c_dialect::{Diagnostic, Diagnostics, Severity};
use std::process::ExitCode;

pub fn command() -> Command {
    let mut c = Command::new("opt")
        .about("Parse TOSA MLIR, run passes in the order given, print MLIR (for lit/FileCheck)")
        .after_help(registry::help())
        .arg(input_arg())
        .arg(Arg::new("output").short('o').value_name("FILE").help("Write the output here instead of standard output"))
        .arg(switch("split-input-file", "Split the input at '// -----' lines and process each piece on its own"))
        .arg(switch("verify-diagnostics", "Check diagnostics against 'expected-error {{...}}' comments instead of printing them"))
        .arg(switch("print-ir-after-all", "Print the IR after every pass (to stderr)"))
        .arg(Arg::new("print-ir-after").long("print-ir-after").value_name("PASS").action(ArgAction::Append).help("Print the IR after this pass (repeatable)"))
        .arg(switch("print-ir-after-change", "With --print-ir-after*, print only when the pass changed the IR"))
        .arg(switch("time-passes", "Print a wall-time report of the passes (to stderr)"))
        .arg(switch("pass-statistics", "Print the passes' counters (to stderr)"))
        .arg(switch("mlir-print-debuginfo", "Print op locations"))
        .arg(switch("mlir-print-op-generic", "Print every op in generic form"))
        .arg(
            Arg::new("mlir-elide-elementsattrs-if-larger")
                .long("mlir-elide-elementsattrs-if-larger")
                .value_name("N")
                .value_parser(clap::value_parser!(usize))
                .help("Elide constants with more than N elements"),
        );
    c = crate::precision::args(c, "fp16", true);
    for p in registry::REGISTRY {
        c = c.arg(
            Arg::new(p.name)
                .long(p.name)
                .num_args(0..=1)
                .require_equals(true)
                .default_missing_value("")
                .action(ArgAction::Append)
                .value_name("OPTIONS")
                .help(p.summary),
        );
    }
    c
}

/// The passes named on the command line, in command-line order.
fn pipeline(m: &ArgMatches) -> Result<PassManager, PassError> {
    let mut chosen: Vec<(usize, &str, String)> = Vec::new();
    for p in registry::REGISTRY {
        if let (Some(idx), Some(vals)) = (m.indices_of(p.name), m.get_many::<String>(p.name)) {
            for (i, v) in idx.zip(vals) {
                chosen.push((i, p.name, v.clone()));
            }
        }
    }
    chosen.sort_by_key(|c| c.0);
    if m.get_flag("no-fold-batch-norm") {
        return Err(PassError::Usage("--no-fold-batch-norm: opt runs only the passes it is given (leave out --fold-batch-norm)".into()));
    }
    let mut pm = PassManager::new();
    let target = m.get_one::<String>("target").expect("has default");
    let defaults = crate::precision::assign_options(m, target).map_err(|e| PassError::Usage(e.to_string()))?;
    for (_, name, opts) in chosen {
        // The global precision flags are defaults that the pass's own options override.
        let opts = if name == "assign-precision" { format!("{defaults} {opts}") } else { opts };
        pm.add(registry::create(name, &opts)?);
    }
    for p in m.get_many::<String>("print-ir-after").into_iter().flatten() {
        if registry::lookup(p).is_none() {
            return Err(PassError::Usage(format!("--print-ir-after: unknown pass '{p}'")));
        }
    }
    pm.instrumentation.print_after_all = m.get_flag("print-ir-after-all");
    pm.instrumentation.print_after = m.get_many::<String>("print-ir-after").into_iter().flatten().cloned().collect();
    pm.instrumentation.print_after_change = m.get_flag("print-ir-after-change");
    pm.instrumentation.time_passes = m.get_flag("time-passes");
    pm.instrumentation.pass_statistics = m.get_flag("pass-statistics");
    pm.instrumentation.print = print_options(m);
    Ok(pm)
}

fn print_options(m: &ArgMatches) -> PrintOptions {
    PrintOptions {
        debug_info: m.get_flag("mlir-print-debuginfo"),
        generic: m.get_flag("mlir-print-op-generic"),
        elide_elements_larger_than: m.get_one::<usize>("mlir-elide-elementsattrs-if-larger").copied(),
    }
}

/// Pieces of the input: `(first line number, text)`.
fn split(source: &str, enabled: bool) -> Vec<(u32, String)> {
    if !enabled {
        return vec![(1, source.to_string())];
    }
    let mut chunks = vec![(1u32, String::new())];
    for (i, line) in source.lines().enumerate() {
        if line.trim_start().starts_with("// -----") {
            chunks.push((i as u32 + 2, String::new()));
        } else {
            let c = &mut chunks.last_mut().expect("non-empty").1;
            c.push_str(line);
            c.push('\n');
        }
    }
    chunks
}

/// Processes one piece: import, passes, print. Diagnostics (errors and warnings) are returned
/// beside the output text, if any.
fn process(text: &str, file: &str, pm: &mut PassManager, m: &ArgMatches) -> anyhow::Result<(Option<String>, Vec<Diagnostic>)> {
    let print = print_options(m);
    let mut module = match parse_module(text, file) {
        Ok(m) => m,
        Err(d) => return Ok((None, d.0)),
    };
    crate::precision::calibrate(&mut module, m)?;
    let mut stderr = std::io::stderr();
    match pm.run(&mut module, &mut stderr) {
        Ok(notes) => {
            let out = print_module(&module, print).map_err(PassError::Diagnostics)?;
            Ok((Some(out), notes))
        }
        Err(PassError::Diagnostics(d)) => Ok((None, d.0)),
        Err(e) => Err(e.into()),
    }
}

pub fn main(m: &ArgMatches) -> anyhow::Result<ExitCode> {
    let (source, file) = read_input(m.get_one::<String>("input").expect("has default"))?;
    let mut pm = match pipeline(m) {
        Ok(pm) => pm,
        Err(e) => {
            eprintln!("error: {e}");
            return Ok(ExitCode::from(2));
        }
    };
    let verify = m.get_flag("verify-diagnostics");
    let mut outputs = Vec::new();
    let mut failed = false;
    for (first_line, chunk) in split(&source, m.get_flag("split-input-file")) {
        // Pad with newlines so that line numbers are those of the whole file.
        let padded = "\n".repeat(first_line as usize - 1) + &chunk;
        let (out, diags) = match process(&padded, &file, &mut pm, m) {
            Ok(r) => r,
            Err(e) => {
                eprintln!("error: {e}");
                return Ok(ExitCode::from(2));
            }
        };
        if verify {
            let problems = diagnostics::check(&chunk, first_line, &file, &diags);
            for p in &problems {
                eprintln!("{p}");
            }
            failed |= !problems.is_empty();
        } else {
            eprint!("{}", Diagnostics(diags.clone()).render(Some(&padded)));
            failed |= diags.iter().any(|d| d.severity == Severity::Error);
        }
        if let Some(o) = out {
            outputs.push(o);
        }
    }
    // As mlir-opt does, the pieces that succeeded are printed even when another one failed.
    crate::write_output(m, &outputs.join("// -----\n"))?;
    Ok(if failed { ExitCode::FAILURE } else { ExitCode::SUCCESS })
}
