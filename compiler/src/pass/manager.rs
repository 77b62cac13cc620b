//! Runs passes in order, verifying after each one, with MLIR's instrumentation flags:
//! `--print-ir-after-all`, `--print-ir-after=<pass>`, `--print-ir-after-change` and
//! `--time-passes`.

use super::{Pass, PassError, Result, Statistic};
use f16c_dialect::export::{print_module, PrintOptions};
use f16c_dialect::verify::verify_module;
use f16c_dialect::{Diagnostic, Diagnostics, Location, Module};
use std::io::Write;
use std::time::{Duration, Instant};

/// What to print around passes.
#[derive(Clone, Debug, Default)]
pub struct Instrumentation {
    /// Dump the IR after every pass.
    pub print_after_all: bool,
    /// Dump the IR after the passes with these names.
    pub print_after: Vec<String>,
    /// Dump only when a pass changed something.
    pub print_after_change: bool,
    /// Print a timing report at the end.
    pub time_passes: bool,
    /// Print every pass's counters at the end (`--pass-statistics`).
    pub pass_statistics: bool,
    /// How dumps are printed.
    pub print: PrintOptions,
}

/// An ordered list of passes.
#[derive(Default)]
pub struct PassManager {
    passes: Vec<Box<dyn Pass>>,
    /// Printing and timing.
    pub instrumentation: Instrumentation,
}

impl PassManager {
    /// An empty pipeline.
    pub fn new() -> Self {
        PassManager::default()
    }

    /// Appends a pass.
    pub fn add(&mut self, pass: Box<dyn Pass>) {
        self.passes.push(pass);
    }

    /// The counters of every pass from its last run, in pipeline order: `(type name, counters)`.
    pub fn statistics(&self) -> Vec<(&'static str, Vec<Statistic>)> {
        self.passes.iter().map(|p| (p.info().type_name, p.statistics())).collect()
    }

    /// Number of passes.
    pub fn len(&self) -> usize {
        self.passes.len()
    }

    /// True when there are no passes.
    pub fn is_empty(&self) -> bool {
        self.passes.is_empty()
    }

    /// Runs every pass on `module`. IR dumps and the timing report go to `out` (stderr, as in
    /// MLIR). Returns the warnings and remarks passes produced.
    pub fn run(&mut self, module: &mut Module, out: &mut dyn Write) -> Result<Vec<Diagnostic>> {
        let mut notes = Vec::new();
        let mut times: Vec<(&'static str, Duration)> = Vec::new();
        let total = Instant::now();
        let verify_start = Instant::now();
        verify_module(module)?;
        let mut verify_time = verify_start.elapsed();
        for pass in &mut self.passes {
            let info = pass.info();
            let start = Instant::now();
            let changed = crate::timing::phase(format!("pass {}", info.name), || pass.run(module, &mut notes))?;
            times.push((info.type_name, start.elapsed()));
            let v = Instant::now();
            if let Err(d) = verify_module(module) {
                let mut all = vec![Diagnostic::error(
                    Location::unknown(),
                    format!("internal error: pass '{}' left the graph invalid (please report this f16c bug)", info.name),
                )];
                all.extend(d.0);
                return Err(PassError::Diagnostics(Diagnostics(all)));
            }
            verify_time += v.elapsed();
            let ins = &self.instrumentation;
            let wanted = ins.print_after_all || ins.print_after.iter().any(|p| p == info.name);
            if wanted && (changed || !ins.print_after_change) {
                let text = print_module(module, ins.print)?;
                let _ = write!(out, "// -----// IR Dump After {} ({}) //----- //\n{text}\n", info.type_name, info.name);
            }
        }
        if self.instrumentation.time_passes {
            times.push(("(V) Verifier", verify_time));
            let _ = out.write_all(timing_report(&times, total.elapsed()).as_bytes());
        }
        if self.instrumentation.pass_statistics {
            let _ = out.write_all(statistics_report(&self.statistics()).as_bytes());
        }
        Ok(notes)
    }
}

/// MLIR's `--time-passes` report layout.
fn timing_report(times: &[(&str, Duration)], total: Duration) -> String {
    let bar = "===-------------------------------------------------------------------------===";
    let mut s = format!("{bar}\n{:^79}\n{bar}\n", "... Execution time report ...");
    s.push_str(&format!("  Total Execution Time: {:.4} seconds\n\n  ----Wall Time----  ----Name----\n", total.as_secs_f64()));
    let t = total.as_secs_f64().max(1e-9);
    for (name, d) in times {
        s.push_str(&format!("    {:.4} ({:5.1}%)  {name}\n", d.as_secs_f64(), 100.0 * d.as_secs_f64() / t));
    }
    s.push_str(&format!("    {:.4} (100.0%)  Total\n", total.as_secs_f64()));
    s
}

/// MLIR's `--mlir-pass-statistics` report layout.
fn statistics_report(stats: &[(&str, Vec<Statistic>)]) -> String {
    let bar = "===-------------------------------------------------------------------------===";
    let mut s = format!("{bar}\n{:^79}\n{bar}\n", "... Pass statistics report ...");
    for (name, counters) in stats {
        s.push_str(&format!("{name}\n"));
        for c in counters {
            s.push_str(&format!("  (S) {:>6} {} - {}\n", c.value, c.name, c.description));
        }
    }
    s
}
