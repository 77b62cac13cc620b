//! `f16c bench --real DIR`: real-size models (the exports of `scripts/gpu_models.py`) on the
//! x86_64 JIT and the LLVM x86-64 backend, against onnxruntime, OpenVINO and PyTorch eager
//! (`scripts/peers.py`) on the same inputs, at the same thread count, in the same run.
//!
//! Each configuration is warmed up once and timed over `--runs` calls; the table gives the
//! median (and the spread), the error against PyTorch's f32 output, and per model the ratios the
//! CPU-speed issue is judged by: f16c's best f32 over the best peer's f32, f16c's best bf16 over
//! the best peer's bf16 or fp16, f16c's own bf16 and fp16 over its f32, and the JIT over the
//! LLVM backend.

use anyhow::{bail, Context};
use f16c_dialect::Tensor;
use f16c_jit::{CompileOptions, Model};
use f16c_runtime::outln;
use std::path::{Path, PathBuf};
use std::process::Command as Process;
use std::time::Instant;

/// What `--real` needs from the command line.
pub struct Request<'a> {
    pub dir: PathBuf,
    pub only: Option<&'a String>,
    pub peers: Vec<String>,
    pub python: String,
    pub threads: usize,
    pub runs: usize,
    pub llvm: &'a f16c_compiler::backend::llvm_cpu::LlvmCpuBackend,
}

/// One configuration's measurement.
#[derive(Clone, Debug)]
struct Timing {
    /// `f16c jit`, `f16c llvm`, or a peer's name.
    side: String,
    /// f32, fp16 or bf16.
    precision: String,
    median_ms: f64,
    min_ms: f64,
    max_ms: f64,
    /// max |output − PyTorch f32| over PyTorch's peak.
    error: f64,
}

/// The models of `dir`: every `NAME.tosa.mlir` with `NAME.in0.npy` and `NAME.torch.npy` beside it.
fn discover(dir: &Path, only: Option<&String>) -> anyhow::Result<Vec<String>> {
    let wanted = |name: &str| only.is_none_or(|o| o.split(',').any(|w| name.contains(w.trim())));
    let mut names = Vec::new();
    for entry in std::fs::read_dir(dir).with_context(|| format!("cannot read '{}' (scripts/gpu_models.py writes the models there)", dir.display()))? {
        let Ok(file) = entry?.file_name().into_string() else { continue };
        let Some(name) = file.strip_suffix(".tosa.mlir") else { continue };
        if dir.join(format!("{name}.in0.npy")).is_file() && dir.join(format!("{name}.torch.npy")).is_file() && wanted(name) {
            names.push(name.to_string());
        }
    }
    names.sort();
    if names.is_empty() {
        bail!(
            "no model in '{}' (NAME.tosa.mlir with NAME.in0.npy and NAME.torch.npy): export them with\n  scripts/exporter-venv && .venv-export/bin/python scripts/gpu_models.py {} resnet50 bert_base gpt2 efficientnet_b0 whisper_tiny_enc vit_s16 llama_dec unet",
            dir.display(),
            dir.display()
        );
    }
    Ok(names)
}

/// Median, min and max of `runs` calls of `f` after one warm-up call.
fn timed(runs: usize, mut f: impl FnMut() -> anyhow::Result<Vec<Tensor>>) -> anyhow::Result<(Vec<Tensor>, f64, f64, f64)> {
    let out = f()?;
    let mut times = Vec::with_capacity(runs);
    for _ in 0..runs.max(1) {
        let t = Instant::now();
        f()?;
        times.push(t.elapsed().as_secs_f64() * 1e3);
    }
    times.sort_by(f64::total_cmp);
    Ok((out, times[times.len() / 2], times[0], times[times.len() - 1]))
}

/// max |got − want| over want's peak (infinite when `got` has a non-finite value).
fn error(got: &Tensor, want: &Tensor) -> f64 {
    let (g, w) = (got.to_f64_vec(), want.to_f64_vec());
    if g.len() != w.len() {
        return f64::NAN;
    }
    if g.iter().any(|x| !x.is_finite()) {
        return f64::INFINITY;
    }
    let peak = w.iter().fold(0.0f64, |m, x| m.max(x.abs())).max(1e-30);
    g.iter().zip(&w).fold(0.0f64, |m, (a, b)| m.max((a - b).abs())) / peak
}

pub fn main(r: &Request) -> anyhow::Result<()> {
    let names = discover(&r.dir, r.only)?;
    let cpu = std::fs::read_to_string("/proc/cpuinfo").ok().and_then(|s| s.lines().find(|l| l.starts_with("model name")).map(|l| l.split(':').nth(1).unwrap_or("").trim().to_string())).unwrap_or_default();
    outln!(
        "f16c bench --real {}: {} thread(s), {} runs after a warm-up (median [min-max] ms), error = max |out - PyTorch f32| / peak; {cpu}; LLVM at {}",
        r.dir.display(),
        r.threads,
        r.runs,
        r.llvm.machine.cpu
    )?;
    let mut summary = Vec::new();
    for name in &names {
        let model = Loaded::read(r, name)?;
        let mut rows = f16c_side(r, name, &model)?;
        if r.peers.iter().any(|p| p == "iree") {
            match iree_side(r, name, model) {
                Ok(t) => rows.push(t),
                Err(e) => eprintln!("bench: {name}: iree skipped: {e:#}"),
            }
        }
        // (The parsed model is gone before the Python peers run.)
        rows.extend(peer_side(r, name));
        outln!("\n{name}")?;
        for t in &rows {
            outln!("  {:<16} {:<5} {:>10.2} [{:.2}-{:.2}]  error {:.2e}", t.side, t.precision, t.median_ms, t.min_ms, t.max_ms, t.error)?;
        }
        summary.push((name.clone(), rows));
    }
    outln!("\nSummary ({} thread(s)): ms, the better f16c backend against the best peer", r.threads)?;
    outln!(
        "{:<18} {:>18} {:>22} {:>7} {:>18} {:>22} {:>7} {:>9} {:>9} {:>9}",
        "model", "f16c f32", "best peer f32", "ratio", "f16c bf16", "best peer low", "ratio", "fp16/f32", "bf16/f32", "jit/llvm"
    )?;
    for (name, rows) in &summary {
        let best = |f: &dyn Fn(&Timing) -> bool| rows.iter().filter(|t| f(t)).min_by(|a, b| a.median_ms.total_cmp(&b.median_ms)).cloned();
        let ours = |t: &Timing| t.side.starts_with("f16c");
        let f32_ours = best(&|t| ours(t) && t.precision == "f32");
        let f32_peer = best(&|t| !ours(t) && t.precision == "f32");
        let bf16_ours = best(&|t| ours(t) && t.precision == "bf16");
        let fp16_ours = best(&|t| ours(t) && t.precision == "fp16");
        let low_peer = best(&|t| !ours(t) && t.precision != "f32");
        let jit = best(&|t| t.side == "f16c jit" && t.precision == "f32");
        let llvm = best(&|t| t.side == "f16c llvm" && t.precision == "f32");
        let cell = |t: &Option<Timing>| t.as_ref().map_or("n/a".to_string(), |t| format!("{:.2} ({} {})", t.median_ms, t.side.trim_start_matches("f16c "), t.precision));
        let ratio = |a: &Option<Timing>, b: &Option<Timing>| match (a, b) {
            (Some(a), Some(b)) => format!("{:.2}", a.median_ms / b.median_ms),
            _ => "n/a".to_string(),
        };
        outln!(
            "{name:<18} {:>18} {:>22} {:>7} {:>18} {:>22} {:>7} {:>9} {:>9} {:>9}",
            cell(&f32_ours),
            cell(&f32_peer),
            ratio(&f32_ours, &f32_peer),
            cell(&bf16_ours),
            cell(&low_peer),
            ratio(&bf16_ours, &low_peer),
            ratio(&fp16_ours, &f32_ours),
            ratio(&bf16_ours, &f32_ours),
            ratio(&jit, &llvm)
        )?;
    }
    Ok(())
}

/// One model of `dir`, read once for f16c's configurations and IREE: the parsed file, its
/// inputs and PyTorch's f32 output.
struct Loaded {
    module: f16c_dialect::Module,
    inputs: Vec<Tensor>,
    want: Tensor,
}

impl Loaded {
    fn read(r: &Request, name: &str) -> anyhow::Result<Loaded> {
        let path = r.dir.join(format!("{name}.tosa.mlir"));
        let source = std::fs::read_to_string(&path).with_context(|| format!("cannot read '{}'", path.display()))?;
        let module = f16c_dialect::import::parse_module(&source, name).map_err(|d| anyhow::anyhow!(d.render(Some(&source))))?;
        let mut inputs = Vec::new();
        while let Ok(t) = f16c_runtime::npy::read(&r.dir.join(format!("{name}.in{}.npy", inputs.len()))) {
            inputs.push(t);
        }
        let want = f16c_runtime::npy::read(&r.dir.join(format!("{name}.torch.npy")))?;
        Ok(Loaded { module, inputs, want })
    }
}

/// f16c's configurations of one model: the JIT in f32 and bf16, the LLVM backend in f32, fp16
/// and bf16, from the model read once ([`Loaded`]); each precision's graph is prepared once and compiled by
/// both backends that run it, each compiled form dropped before the next.
fn f16c_side(r: &Request, name: &str, Loaded { module, inputs, want }: &Loaded) -> anyhow::Result<Vec<Timing>> {
    let mut rows = Vec::new();
    for (precision, sides) in [("fp32", &["jit", "llvm"][..]), ("bf16", &["jit", "llvm"][..]), ("fp16", &["llvm"][..])] {
        let options = CompileOptions { precision: precision.into(), threads: r.threads, ..CompileOptions::default() };
        let mut c = f16c_compiler::driver::compile(module.clone(), &options.driver_options()?, None, &[], false).map_err(|e| anyhow::anyhow!("{name}: {e}"))?;
        let g = c.module.functions.swap_remove(c.function);
        let label = if precision == "fp32" { "f32" } else { precision };
        for &side in sides {
            eprintln!("bench: {name}: compiling for f16c {side} {label}");
            let (out, median, min, max) = if side == "jit" {
                let model = Model::compile_graph(&g, r.threads)?;
                timed(r.runs, || Ok(model.run(&inputs)?))?
            } else {
                let exec = super::bench::llvm_executor(&g, r.llvm, r.threads)?;
                timed(r.runs, || Ok(exec.run(&inputs)?))?
            };
            let error = out.first().map_or(f64::NAN, |o| error(o, &want));
            rows.push(Timing { side: format!("f16c {side}"), precision: label.into(), median_ms: median, min_ms: min, max_ms: max, error });
        }
    }
    // Listed as before: the JIT's, then the LLVM backend's, each f32 first.
    let order = |t: &Timing| (t.side.clone(), ["f32", "fp16", "bf16"].iter().position(|p| *p == t.precision));
    rows.sort_by_key(order);
    Ok(rows)
}

/// IREE (`.venv/bin`, `bash scripts/setup.sh --iree`) on the same TOSA, f32, at the same
/// thread count: the model after f16c's `canonicalize` only (IREE's TOSA input refuses what
/// torch-mlir writes for the upsampling's index math, an i64 → f32 cast, before it folds),
/// printed in the generic op form, compiled plain and with data tiling, the faster timed by
/// `iree-benchmark-module` (the fastest of three repetitions: median, minimum and maximum are
/// that one time) and its output checked against PyTorch's.
fn iree_side(r: &Request, name: &str, Loaded { mut module, inputs, want }: Loaded) -> anyhow::Result<Timing> {
    let iree = crate::iree::Iree::find(Path::new(".venv/bin")).map_err(|e| anyhow::anyhow!(e))?;
    let mut pm = f16c_compiler::pass::PassManager::new();
    pm.add(f16c_compiler::pass::registry::create("canonicalize", "").map_err(|e| anyhow::anyhow!("{e}"))?);
    pm.run(&mut module, &mut std::io::sink()).map_err(|e| anyhow::anyhow!("{e}"))?;
    let index = f16c_compiler::driver::choose_function(&module, None).map_err(|e| anyhow::anyhow!("{name}: {e}"))?;
    let g = module.functions.swap_remove(index);
    drop(module);
    eprintln!("bench: {name}: compiling and timing IREE");
    let m = iree.measure(name, &g, &inputs, r.threads)?;
    drop(g);
    let error = iree.output(name, m.variant, inputs.len()).map_or(f64::NAN, |o| error(&o, &want));
    let ms = m.latency.as_secs_f64() * 1e3;
    eprintln!("bench: {name}: IREE's faster variant: {} (compiled in {:.1} s)", m.variant, m.compile.as_secs_f64());
    Ok(Timing { side: "iree".into(), precision: "f32".into(), median_ms: ms, min_ms: ms, max_ms: ms, error })
}

/// The peers' configurations of one model (`scripts/peers.py`), after f16c's (so that
/// nothing of ours is resident while they run). A peer that cannot run is named on standard
/// error and left out.
fn peer_side(r: &Request, name: &str) -> Vec<Timing> {
    if r.peers.is_empty() {
        return Vec::new();
    }
    let python: Vec<&str> = r.peers.iter().map(String::as_str).filter(|p| *p != "iree").collect();
    if python.is_empty() {
        return Vec::new();
    }
    eprintln!("bench: {name}: running the peers ({})", python.join(","));
    let out = Process::new(&r.python)
        .arg("scripts/peers.py")
        .arg(&r.dir)
        .arg(name)
        .arg("--peers")
        .arg(python.join(","))
        .arg("--threads")
        .arg(r.threads.to_string())
        .arg("--runs")
        .arg(r.runs.to_string())
        .env("OMP_NUM_THREADS", r.threads.to_string())
        .output();
    let out = match out {
        Ok(o) if o.status.success() => o,
        Ok(o) => {
            eprintln!("bench: {name}: the peers failed: {}", String::from_utf8_lossy(&o.stderr).lines().last().unwrap_or(""));
            return Vec::new();
        }
        Err(e) => {
            eprintln!("bench: cannot run {} scripts/peers.py ({e}): scripts/exporter-venv installs the peers", r.python);
            return Vec::new();
        }
    };
    let mut rows = Vec::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else { continue };
        let text = |k: &str| v.get(k).and_then(|x| x.as_str()).unwrap_or("").to_string();
        if let Some(why) = v.get("skipped").and_then(|x| x.as_str()) {
            eprintln!("bench: {name}: {} {} skipped: {why}", text("peer"), text("precision"));
            continue;
        }
        let num = |k: &str| v.get(k).and_then(|x| x.as_f64().or_else(|| (x.as_str() == Some("inf")).then_some(f64::INFINITY))).unwrap_or(f64::NAN);
        rows.push(Timing { side: text("peer"), precision: text("precision"), median_ms: num("median_ms"), min_ms: num("min_ms"), max_ms: num("max_ms"), error: num("error") });
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::{discover, error};

    #[test]
    fn discovers_exported_models_and_says_how_to_export_when_none() {
        let dir = std::env::temp_dir().join(format!("f16c-bench-real-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let empty = discover(&dir, None).unwrap_err().to_string();
        assert!(empty.contains("scripts/gpu_models.py"), "{empty}");
        for f in ["net.tosa.mlir", "net.in0.npy", "net.torch.npy", "half.tosa.mlir", "half.in0.npy", "other.tosa.mlir", "other.in0.npy", "other.torch.npy"] {
            std::fs::write(dir.join(f), "").unwrap();
        }
        let all = discover(&dir, None).unwrap();
        let only = discover(&dir, Some(&"oth".to_string())).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(all, vec!["net".to_string(), "other".to_string()], "a model without PyTorch's output is left out");
        assert_eq!(only, vec!["other".to_string()]);
    }

    #[test]
    fn the_error_is_relative_to_the_peak_and_infinite_for_non_finite_outputs() {
        let t = |v: Vec<f32>| f16c_dialect::Tensor::from_f32(vec![v.len()], v).unwrap();
        assert_eq!(error(&t(vec![1.0, -4.5]), &t(vec![1.0, -4.0])), 0.5 / 4.0);
        assert_eq!(error(&t(vec![f32::NAN, 0.0]), &t(vec![1.0, 2.0])), f64::INFINITY);
        assert!(error(&t(vec![1.0]), &t(vec![1.0, 2.0])).is_nan(), "a shape mismatch is no number");
    }
}
