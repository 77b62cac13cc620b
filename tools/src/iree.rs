//! IREE as a peer of `f16c bench`: the same TOSA function, printed in MLIR's generic op form
//! (IREE's TOSA parser does not read MLIR 22's custom syntax), compiled by `iree-compile` for
//! the host CPU and timed by `iree-benchmark-module` at the same thread count.

use anyhow::{bail, Context};
use f16c_dialect::export::{print_module, PrintOptions};
use f16c_dialect::{Graph, Module, Tensor};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// The IREE tools of one directory (`iree-compile`, `iree-benchmark-module`) and a scratch
/// directory for modules and inputs.
pub struct Iree {
    bin: PathBuf,
    scratch: PathBuf,
}

/// One model measured by IREE.
pub struct Measured {
    /// Mean time of one call, the best of three repetitions.
    pub latency: Duration,
    /// Wall time of `iree-compile` for the variant that ran fastest.
    pub compile: Duration,
    /// That variant: "plain" or "data-tiling".
    pub variant: &'static str,
}

/// Compiler flags of the variants tried; the faster one counts, as a user would pick it.
const VARIANTS: [(&str, &[&str]); 2] = [("plain", &[]), ("data-tiling", &["--iree-opt-data-tiling"])];

impl Iree {
    /// The tools in `dir`, or `None` (with the reason) when they are not there.
    pub fn find(dir: &Path) -> Result<Iree, String> {
        for tool in ["iree-compile", "iree-benchmark-module"] {
            if !dir.join(tool).is_file() {
                return Err(format!("no {} (bash scripts/setup.sh --iree installs IREE into .venv)", dir.join(tool).display()));
            }
        }
        let scratch = std::env::temp_dir().join(format!("f16c-bench-iree-{}", std::process::id()));
        std::fs::create_dir_all(&scratch).map_err(|e| format!("cannot create {}: {e}", scratch.display()))?;
        Ok(Iree { bin: dir.to_path_buf(), scratch })
    }

    /// Compiles `g` (its inputs are `inputs`) with each variant and times the faster one at
    /// `threads` worker threads. A variant IREE cannot compile or run is left out (data tiling
    /// refuses EfficientNet-B0's large vectors); the error is the first variant's when none
    /// runs.
    pub fn measure(&self, name: &str, g: &Graph, inputs: &[Tensor], threads: usize) -> anyhow::Result<Measured> {
        let text = print_module(&Module { functions: vec![g.clone()] }, PrintOptions { generic: true, ..PrintOptions::default() })
            .map_err(|d| anyhow::anyhow!("{name}: {d}"))?;
        let source = self.scratch.join(format!("{name}.mlir"));
        std::fs::write(&source, text)?;
        let mut input_flags = Vec::new();
        for (i, t) in inputs.iter().enumerate() {
            let path = self.scratch.join(format!("{name}.{i}.npy"));
            f16c_runtime::npy::write(&path, t)?;
            input_flags.push(format!("--input=@{}", path.display()));
        }
        let mut best: Option<Measured> = None;
        let mut first_error = None;
        for (variant, flags) in VARIANTS {
            match self.variant(name, &source, &input_flags, (variant, flags), threads) {
                Ok(m) if best.as_ref().is_none_or(|b| m.latency < b.latency) => best = Some(m),
                Ok(_) => {}
                Err(e) => {
                    first_error.get_or_insert(e);
                }
            }
        }
        match (best, first_error) {
            (Some(m), _) => Ok(m),
            (None, Some(e)) => Err(e),
            (None, None) => bail!("{name}: no IREE variant"),
        }
    }

    /// One variant of [`Iree::measure`]: compiled, then timed.
    fn variant(&self, name: &str, source: &Path, input_flags: &[String], (variant, flags): (&'static str, &[&str]), threads: usize) -> anyhow::Result<Measured> {
        let module = self.scratch.join(format!("{name}.{variant}.vmfb"));
        let t0 = Instant::now();
        let out = Command::new(self.bin.join("iree-compile"))
            .args(["--iree-input-type=tosa", "--iree-hal-target-device=local", "--iree-hal-local-target-device-backends=llvm-cpu", "--iree-llvmcpu-target-cpu=host"])
            .args(flags)
            .arg(&source)
            .arg("-o")
            .arg(&module)
            .output()
            .context("cannot run iree-compile")?;
        let compile = t0.elapsed();
        if !out.status.success() {
            bail!("{name}: iree-compile ({variant}) failed: {}", first_lines(&out.stderr));
        }
        let out = Command::new(self.bin.join("iree-benchmark-module"))
            .arg(format!("--module={}", module.display()))
            .args(["--device=local-task", "--function=forward", "--benchmark_repetitions=3", "--benchmark_format=csv", "--benchmark_min_time=0.3s"])
            .arg(format!("--task_topology_max_group_count={threads}"))
            .args(input_flags)
            .output()
            .context("cannot run iree-benchmark-module")?;
        if !out.status.success() {
            bail!("{name}: iree-benchmark-module ({variant}) failed: {}", first_lines(&out.stderr));
        }
        let latency = best_repetition(&String::from_utf8_lossy(&out.stdout)).with_context(|| format!("{name}: no timing in iree-benchmark-module's output"))?;
        Ok(Measured { latency, compile, variant })
    }

    /// The first result of `name`'s module compiled as `variant` by [`Iree::measure`], run once
    /// by `iree-run-module` on the inputs `measure` wrote.
    pub fn output(&self, name: &str, variant: &str, inputs: usize) -> anyhow::Result<Tensor> {
        let module = self.scratch.join(format!("{name}.{variant}.vmfb"));
        let result = self.scratch.join(format!("{name}.out.npy"));
        let out = Command::new(self.bin.join("iree-run-module"))
            .arg(format!("--module={}", module.display()))
            .args(["--device=local-task", "--function=forward"])
            .args((0..inputs).map(|i| format!("--input=@{}", self.scratch.join(format!("{name}.{i}.npy")).display())))
            .arg(format!("--output=@{}", result.display()))
            .output()
            .context("cannot run iree-run-module")?;
        if !out.status.success() {
            bail!("{name}: iree-run-module failed: {}", first_lines(&out.stderr));
        }
        f16c_runtime::npy::read(&result).with_context(|| format!("{name}: cannot read IREE's output"))
    }
}

impl Drop for Iree {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.scratch);
    }
}

fn first_lines(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).lines().take(4).collect::<Vec<_>>().join("\n")
}

/// The fastest repetition's mean time in Google Benchmark's CSV output (aggregate rows, whose
/// names end in `_mean`, `_median`, ..., are skipped).
fn best_repetition(csv: &str) -> Option<Duration> {
    csv.lines()
        .filter_map(|line| {
            let cells: Vec<&str> = line.split(',').collect();
            let name = cells.first()?.trim_matches('"');
            if !name.ends_with("/real_time") {
                return None;
            }
            let value: f64 = cells.get(2)?.parse().ok()?;
            let scale = match *cells.get(4)? {
                "ns" => 1e-9,
                "us" => 1e-6,
                "ms" => 1e-3,
                "s" => 1.0,
                _ => return None,
            };
            Some(Duration::from_secs_f64(value * scale))
        })
        .min()
}

#[cfg(test)]
mod tests {
    use super::best_repetition;
    use std::time::Duration;

    #[test]
    fn reads_the_fastest_repetition_and_skips_aggregates() {
        let csv = "name,iterations,real_time,cpu_time,time_unit,bytes_per_second,items_per_second,label,error_occurred,error_message\n\
                   \"BM_forward/process_time/real_time\",5884,0.1674,0.115863,ms,,5973.71,,,\n\
                   \"BM_forward/process_time/real_time\",5884,0.155915,0.111066,ms,,6413.75,,,\n\
                   \"BM_forward/process_time/real_time_mean\",3,0.01,0.118413,ms,,5941.31,,,\n\
                   \"BM_forward/process_time/real_time_cv\",3,0.0833278,0.075166,,,0.0823788,,,\n";
        assert_eq!(best_repetition(csv), Some(Duration::from_secs_f64(0.155915e-3)));
        assert_eq!(best_repetition("garbage\n"), None);
    }
}
