//! `f16c bench`: speed and memory of the x86_64 JIT and of the LLVM x86-64 backend ahead of
//! time, with numpy and IREE as peers in the same run; with `--aarch64`, the instructions AArch64
//! code executes under qemu.
//!
//! Prints GEMM throughput (f32 and fp16, JIT and LLVM, against numpy's float32 and float16
//! matmul at the same thread count, best of repeated runs), per-model latency (JIT, LLVM and,
//! when installed, IREE compiled from the same TOSA) and compile times (every model in
//! `--models`, and the networks of [`crate::networks`] at 3×64×64), and memory (weight bytes, the
//! buffer plan's peak against its liveness lower bound, fp16's total against f32's). `--aarch64`
//! adds the executed instructions of the AArch64 fp16 code against its own f32 code (GEMM and
//! every model), counted by a TCG plugin under qemu-aarch64.

use f16c_compiler::target::Cpu;
use f16c_runtime::outln;
use anyhow::{bail, Context};
use clap::{Arg, ArgMatches, Command};
use f16c_dialect::export::{print_module, PrintOptions};
use f16c_dialect::{DType, Graph, Location, Module, Op, Tensor, TensorType, ValueType};
use crate::iree::{Iree, Measured};
use crate::networks::{decimal_weights, mobilenet_v2, random, resnet18};
use f16c_compiler::backend::llvm_cpu;
use f16c_compiler::driver;
use f16c_jit::{CompileOptions, Model};
use f16c_foreign as foreign;
use std::path::{Path, PathBuf};
use std::process::{Command as Process, ExitCode};
use std::time::{Duration, Instant};

pub fn command() -> Command {
    Command::new("bench")
        .about("Benchmark the x86_64 JIT and LLVM backends (GEMM, models, compile time, memory) against numpy")
        .after_help(
            "numpy runs from the project's .venv (scripts/setup.sh installs it) with\n\
             OPENBLAS_NUM_THREADS set to --threads, so both sides use the same cores. 'llvm' is the\n\
             LLVM x86-64 backend (--target=x86_64 --backend=llvm) through the same CPU executor.\n\n\
             IREE (bash scripts/setup.sh --iree installs it into .venv) compiles each model's f32\n\
             function and f16c's fp16 function (after precision assignment and cast insertion),\n\
             printed in MLIR's generic form, for the host CPU, plain and with data tiling; the faster\n\
             variant counts. iree-benchmark-module times it with --task_topology_max_group_count\n\
             set to --threads. Model latency on every side is the mean of one call, best of 3 rounds.\n\n\
             With --threads above 1, every model is timed again on one thread right after (the same\n\
             compiled code), and a table gives both and their ratio.\n\n\
             --aarch64 counts the instructions the AArch64 code executes under qemu-aarch64 (fp16\n\
             against f32, one call of the library's entry point; needs qemu-user,\n\
             gcc-aarch64-linux-gnu and a host C compiler for the counting plugin).\n\n\
             Examples:\n  f16c bench\n  f16c bench --threads=1 --sizes=256,512\n  f16c bench --sizes=none --only=mobilenet --threads=1\n  f16c bench --aarch64 --sizes=256\n  f16c bench --write-networks=/tmp/nets\n  f16c bench --real target/gpu-models --threads=1 --peers=ort,openvino,iree,torch\n\n\
             --real DIR times the real-size models that scripts/gpu_models.py exports (NAME.tosa.mlir,\n\
             NAME.in0.npy.., NAME.torch.npy) on the JIT (f32, bf16) and the LLVM backend (f32, fp16,\n\
             bf16) and the peers on the same inputs at the same thread count (scripts/peers.py in\n\
             the exporter venv: onnxruntime, OpenVINO, PyTorch eager), medians of --runs calls, and\n\
             prints per model f16c / best peer in f32 and in low precision.",
        )
        .arg(Arg::new("threads").long("threads").value_name("N").value_parser(clap::value_parser!(usize)).help("Threads (default: every core)"))
        .arg(Arg::new("sizes").long("sizes").value_name("N,..").default_value("256,512,1024").help("GEMM sizes (square), or 'none' to skip the GEMM table"))
        .arg(Arg::new("models").long("models").value_name("DIR").default_value("tests/data/models").help("Directory of NAME.tosa.mlir + NAME.input.npy models"))
        .arg(Arg::new("python").long("python").value_name("PY").default_value(".venv/bin/python").help("Python with numpy for the peer ('none' to skip)"))
        .arg(Arg::new("only").long("only").value_name("WORD,..").help("Only the models whose name contains one of these words (e.g. mobilenet,cnn)"))
        .arg(
            Arg::new("iree")
                .long("iree")
                .value_name("DIR")
                .help("Directory with iree-compile and iree-benchmark-module for the IREE peer (default .venv/bin; 'none' to skip)"),
        )
        .arg(
            Arg::new("write-networks")
                .long("write-networks")
                .value_name("DIR")
                .help("Write the networks the bench builds (NAME.tosa.mlir with decimal weights, NAME.input.npy) into DIR and stop"),
        )
        .arg(crate::cpu_arg())
        .arg(
            Arg::new("real")
                .long("real")
                .value_name("DIR")
                .help("Time the real-size models in DIR (scripts/gpu_models.py's exports) on the JIT and the LLVM backend in f32/fp16/bf16, against --peers, and stop"),
        )
        .arg(
            Arg::new("peers")
                .long("peers")
                .value_name("P,..")
                .default_value("ort,openvino,iree,torch")
                .help("With --real: the peers run in the same run: ort (onnxruntime f32 and its fp16 conversion), openvino (f32 and bf16 hints), torch (eager f32 and bf16), all three by scripts/peers.py, and iree (IREE on the same TOSA, f32, from .venv/bin: bash scripts/setup.sh --iree), or 'none'"),
        )
        .arg(Arg::new("peer-python").long("peer-python").value_name("PY").default_value(".venv-export/bin/python").help("With --real: the Python that has the peers (scripts/exporter-venv)"))
        .arg(Arg::new("runs").long("runs").value_name("N").value_parser(clap::value_parser!(usize)).default_value("10").help("With --real: timed runs per configuration, after a warm-up"))
        .arg(
            Arg::new("aarch64")
                .long("aarch64")
                .action(clap::ArgAction::SetTrue)
                .help("Also count the instructions of AArch64 fp16 vs f32 code under qemu (GEMM at the first size, every model)"),
        )
}

/// The LLVM x86-64 backend's executor for `g` (already in its precision).
pub(crate) fn llvm_executor(g: &Graph, llvm: &llvm_cpu::LlvmCpuBackend, threads: usize) -> anyhow::Result<f16c_runtime::exec::Executor> {
    let artifact = driver::artifact_with(g, llvm).map_err(|d| anyhow::anyhow!(d.to_string()))?;
    Ok(f16c_runtime::loader::load(artifact, threads)?)
}

/// `source`'s chosen function after the precision pipeline of `options`.
fn prepared(source: &str, name: &str, options: &CompileOptions) -> anyhow::Result<Graph> {
    let module = f16c_dialect::import::parse_module(source, name).map_err(|d| anyhow::anyhow!(d.render(Some(source))))?;
    let mut c = driver::compile(module, &options.driver_options()?, options.function.as_deref(), &[], false).map_err(|e| anyhow::anyhow!("{name}: {e}"))?;
    Ok(c.module.functions.swap_remove(c.function))
}

/// The instructions one call of `g`'s AArch64 library executes on `inputs` under qemu.
fn aarch64_instructions(g: &Graph, inputs: &[Tensor]) -> anyhow::Result<u64> {
    let lib = driver::c_library(g, llvm_cpu::aarch64(false)).map_err(|d| anyhow::anyhow!(d.to_string()))?;
    let library = foreign::Library { code: &lib.code, name: &lib.name, inputs: &lib.inputs, outputs: &lib.outputs };
    let inputs: Vec<Tensor> = inputs.iter().zip(&lib.inputs).map(|(t, w)| f16c_runtime::npy::fit(t.clone(), w)).collect();
    Ok(foreign::count_instructions("aarch64", &library, &inputs)?)
}

/// Model latency as IREE's benchmark reports its own: the mean time of one call over a round
/// of about `budget / 3` (at least 3 calls), the best of 3 rounds, after one warm-up call.
fn rounds(budget: Duration, mut f: impl FnMut()) -> Duration {
    f();
    (0..3)
        .map(|_| {
            let (start, mut runs) = (Instant::now(), 0u32);
            while runs < 3 || start.elapsed() < budget / 3 {
                f();
                runs += 1;
            }
            start.elapsed() / runs
        })
        .min()
        .expect("three rounds")
}

/// Best time of `f` over repeated runs lasting about `budget` (at least 3 runs).
fn best(budget: Duration, mut f: impl FnMut()) -> Duration {
    f();
    let (start, mut best, mut runs) = (Instant::now(), Duration::MAX, 0);
    while runs < 3 || (start.elapsed() < budget && runs < 1000) {
        let t = Instant::now();
        f();
        best = best.min(t.elapsed());
        runs += 1;
    }
    best
}

fn loc() -> Location {
    Location::unknown()
}

fn gemm_graph(n: usize, d: DType) -> Graph {
    let mut g = Graph::new("gemm");
    let a = g.add_input(TensorType::new(d, [1, n, n]), loc());
    let wt = TensorType::new(d, [1, n, n]);
    let w = g.add_node(Op::Const(random(&wt, 1, 1.0)), ValueType::Tensor(wt), &[], loc());
    let zt = TensorType::new(d, [1]);
    let z = g.add_node(Op::Const(Tensor::splat(&zt, 0.0)), ValueType::Tensor(zt), &[], loc());
    let m = g.add_node(Op::MatMul, ValueType::Tensor(TensorType::new(d, [1, n, n])), &[a, w, z, z], loc());
    g.add_output(m);
    g
}

pub fn main(m: &ArgMatches) -> anyhow::Result<ExitCode> {
    let threads = m.get_one::<usize>("threads").copied().unwrap_or_else(f16c_jit::default_threads);
    if threads == 0 {
        bail!("--threads must be at least 1");
    }
    if let Some(dir) = m.get_one::<String>("write-networks") {
        write_networks(Path::new(dir))?;
        return Ok(ExitCode::SUCCESS);
    }
    if let Some(dir) = m.get_one::<String>("real") {
        let cpu = m.get_one::<Cpu>("cpu").copied().unwrap_or(Cpu::Native);
        let llvm = llvm_cpu::x86_64(cpu).with_context(|| format!("--cpu={cpu}: the LLVM backend has no x86-64-v2"))?;
        let peers = match m.get_one::<String>("peers").expect("has default").as_str() {
            "none" => Vec::new(),
            list => list.split(',').map(|p| p.trim().to_string()).filter(|p| !p.is_empty()).collect(),
        };
        crate::bench_real::main(&crate::bench_real::Request {
            dir: PathBuf::from(dir),
            only: m.get_one::<String>("only"),
            peers,
            python: m.get_one::<String>("peer-python").expect("has default").clone(),
            threads,
            runs: *m.get_one::<usize>("runs").expect("has default"),
            llvm,
        })?;
        return Ok(ExitCode::SUCCESS);
    }
    let sizes: Vec<usize> = match m.get_one::<String>("sizes").expect("has default").as_str() {
        "none" => Vec::new(),
        list => list.split(',').map(|s| s.trim().parse().with_context(|| format!("--sizes: '{s}' is not a size"))).collect::<anyhow::Result<_>>()?,
    };
    let python = m.get_one::<String>("python").expect("has default");
    let cpu = m.get_one::<Cpu>("cpu").copied().unwrap_or(Cpu::Native);
    let llvm = llvm_cpu::x86_64(cpu).with_context(|| format!("--cpu={cpu}: the LLVM backend has no x86-64-v2"))?;
    outln!("f16c bench: x86_64 JIT (Cranelift) and LLVM ahead of time ({}), {threads} thread(s)\n", llvm.machine.cpu)?;
    if !sizes.is_empty() {
        gemm(python, llvm, threads, &sizes)?;
    }

    let dir = PathBuf::from(m.get_one::<String>("models").expect("has default"));
    let models = models(&dir, m.get_one::<String>("only"))?;
    let iree = match m.get_one::<String>("iree").map(String::as_str) {
        Some("none") => None,
        dir => match Iree::find(Path::new(dir.unwrap_or(".venv/bin"))) {
            Ok(iree) => Some(iree),
            Err(why) => {
                outln!("\n(IREE peer skipped: {why})")?;
                None
            }
        },
    };

    outln!("\nModels: latency (ms: mean of one call, best of 3 rounds), JIT compile time (ms: parse / passes / lower+CLIF / Cranelift)")?;
    outln!("{:<18} {:>9} {:>9} {:>9} {:>9} {:>30} {:>30}", "model", "jit f32", "jit fp16", "llvm f32", "llvm fp16", "compile f32", "compile fp16")?;
    let mut rows = Vec::new();
    let mut counts = Vec::new();
    let mut iree_notes: Vec<String> = Vec::new();
    if m.get_flag("aarch64") && !sizes.is_empty() {
        let n = sizes[0];
        let mut c = Vec::new();
        for (d, f16_acc) in [(DType::F32, false), (DType::F16, false), (DType::F16, true)] {
            let mut g = gemm_graph(n, d);
            if f16_acc {
                let mm = g.outputs()[0];
                g.node_mut(mm).set_attr(f16c_compiler::transforms::attrs::ACC_TYPE, "f16");
            }
            c.push(aarch64_instructions(&g, &[random(&TensorType::new(d, [1, n, n]), 2, 1.0)])?);
        }
        counts.push((format!("gemm {n}³"), c[0], c[1], c[2]));
    }
    for (name, source, inputs) in &models {
        let mut row = Row { name: name.clone(), ..Row::default() };
        let mut insns = Vec::new();
        for (k, options) in [CompileOptions { threads, ..CompileOptions::default() }, CompileOptions { threads, ..CompileOptions::fp16() }].into_iter().enumerate() {
            let g = prepared(source, name, &options)?;
            let mut exec = llvm_executor(&g, llvm, threads)?;
            exec.run(inputs).with_context(|| format!("{name}: running the LLVM code on {name}.input.npy"))?;
            row.llvm[k] = latency_ms(|| {
                let _ = exec.run(inputs);
            });
            if threads > 1 {
                exec.set_threads(1);
                row.llvm_one[k] = latency_ms(|| {
                    let _ = exec.run(inputs);
                });
            }
            if m.get_flag("aarch64") {
                insns.push(aarch64_instructions(&g, inputs)?);
                if options.precision != "fp32" {
                    // The same with fp16 accumulation (--accumulate=f16).
                    let module = f16c_dialect::import::parse_module(source, name).map_err(|d| anyhow::anyhow!(d.render(Some(source))))?;
                    let o = driver::Options { f16_accumulate: true, ..driver::Options::new(f16c_compiler::target::Target::Aarch64 { bf16: false }).with_precision(f16c_compiler::policy::Precision::Fp16) };
                    let c = driver::compile(module, &o, None, &[], false).map_err(|e| anyhow::anyhow!("{name}: {e}"))?;
                    insns.push(aarch64_instructions(c.graph(), inputs)?);
                }
            }
            let t0 = Instant::now();
            let mut model = Model::compile_source(source, name, &options)?;
            let total = t0.elapsed();
            let t = &model.times;
            row.compile[k] = total;
            row.compile_parts[k] = format!("{:.1} ({:.1}/{:.1}/{:.1}/{:.1})", ms(total), ms(t.parse), ms(t.passes), ms(t.lower), ms(t.codegen));
            // A first run reports a wrong input as the runtime's error, not as a panic.
            model.run(inputs).with_context(|| format!("{name}: running on {name}.input.npy"))?;
            row.jit[k] = latency_ms(|| {
                let _ = model.run(inputs);
            });
            if threads > 1 {
                model.set_threads(1);
                row.jit_one[k] = latency_ms(|| {
                    let _ = model.run(inputs);
                });
                model.set_threads(threads);
            }
            row.memory[k] = (model.weight_bytes(), model.memory.arena_bytes, model.memory.lower_bound);
            if let Some(iree) = &iree {
                // IREE compiles what f16c runs: the f32 function, and the fp16 one after
                // precision assignment and cast insertion (fp16 contraction inputs and weights).
                // What IREE refuses (f64 arithmetic, say) is noted under the table.
                let label = format!("{name}.{}", options.precision);
                match iree.measure(&label, &g, inputs, threads) {
                    Ok(measured) => row.iree[k] = Some(measured),
                    Err(e) => iree_notes.push(e.to_string().lines().next().unwrap_or("").to_string()),
                }
            }
        }
        outln!(
            "{:<18} {:>9.3} {:>9.3} {:>9.3} {:>9.3} {:>30} {:>30}",
            row.name, row.jit[0], row.jit[1], row.llvm[0], row.llvm[1], row.compile_parts[0], row.compile_parts[1]
        )?;
        if let [f32_count, fp16_count, f16_acc_count] = insns[..] {
            counts.push((name.clone(), f32_count, fp16_count, f16_acc_count));
        }
        rows.push(row);
    }
    if !counts.is_empty() {
        outln!("\nAArch64 under qemu: instructions executed by one call (fp16 = O1 with f32 accumulation, FMLAL; acc16 = --accumulate=f16, FMLA .8h)")?;
        outln!("{:<18} {:>14} {:>14} {:>14} {:>10} {:>12}", "model", "f32", "fp16", "fp16 acc16", "fp16/f32", "acc16/f32")?;
        for (name, a, b, c) in counts {
            outln!("{name:<18} {a:>14} {b:>14} {c:>14} {:>10.3} {:>12.3}", b as f64 / a.max(1) as f64, c as f64 / a.max(1) as f64)?;
        }
    }
    if threads > 1 {
        outln!("\nThreads: latency (ms) on 1 and {threads} threads, measured one after the other in this run; ratio = {threads} threads / 1")?;
        outln!("{:<18} {:>26} {:>26} {:>26} {:>26}", "model", "jit f32 (1 / N / ratio)", "jit fp16", "llvm f32", "llvm fp16")?;
        for r in &rows {
            let cell = |one: f64, n: f64| format!("{one:.3} / {n:.3} / {:.2}", n / one);
            outln!(
                "{:<18} {:>26} {:>26} {:>26} {:>26}",
                r.name,
                cell(r.jit_one[0], r.jit[0]),
                cell(r.jit_one[1], r.jit[1]),
                cell(r.llvm_one[0], r.llvm[0]),
                cell(r.llvm_one[1], r.llvm[1])
            )?;
        }
    }
    if iree.is_some() {
        outln!("\nAgainst IREE (same TOSA; IREE's fp16 input is f16c's fp16 function: f16 weights and contraction inputs)")?;
        outln!("latency ms; compile s (f16c: parse through Cranelift; IREE: iree-compile of the faster variant)")?;
        outln!(
            "{:<18} {:>9} {:>9} {:>8} {:>9} {:>9} {:>8} {:>9} {:>8} {:>8} {:>8} {:>8} {:>12}",
            "model", "jit f32", "iree f32", "jit/iree", "jit fp16", "iree f16", "jit/iree", "jit16/32", "f16c f32", "f16c f16", "iree f32", "iree f16", "iree variant"
        )?;
        let cell = |x: Option<f64>, digits: usize| x.map_or("n/a".to_string(), |x| format!("{x:.digits$}"));
        for r in &rows {
            let lat = |k: usize| r.iree[k].as_ref().map(|m| ms(m.latency));
            let comp = |k: usize| r.iree[k].as_ref().map(|m| m.compile.as_secs_f64());
            let variant = |k: usize| r.iree[k].as_ref().map_or("-", |m| short(m.variant));
            outln!(
                "{:<18} {:>9.3} {:>9} {:>8} {:>9.3} {:>9} {:>8} {:>9.3} {:>8.2} {:>8.2} {:>8} {:>8} {:>12}",
                r.name,
                r.jit[0],
                cell(lat(0), 3),
                cell(lat(0).map(|i| r.jit[0] / i), 3),
                r.jit[1],
                cell(lat(1), 3),
                cell(lat(1).map(|i| r.jit[1] / i), 3),
                r.jit[1] / r.jit[0],
                r.compile[0].as_secs_f64(),
                r.compile[1].as_secs_f64(),
                cell(comp(0), 2),
                cell(comp(1), 2),
                format!("{}/{}", variant(0), variant(1))
            )?;
        }
        for note in &iree_notes {
            outln!("  IREE n/a: {note}")?;
        }
    }

    outln!("\nMemory (bytes): weights as stored; activations: buffer plan peak vs liveness lower bound; total = weights + peak")?;
    outln!("{:<18} {:>5} {:>12} {:>12} {:>12} {:>8} {:>12} {:>10}", "model", "", "weights", "peak", "lower bound", "ratio", "total", "16/32 total")?;
    for r in &rows {
        let total = |k: usize| r.memory[k].0 + r.memory[k].1;
        for (k, label) in ["f32", "fp16"].into_iter().enumerate() {
            let (w, peak, lb) = r.memory[k];
            let vs = if k == 1 { format!("{:.3}", total(1) as f64 / total(0).max(1) as f64) } else { String::new() };
            outln!("{:<18} {label:>5} {w:>12} {peak:>12} {lb:>12} {:>8.3} {:>12} {vs:>10}", r.name, peak as f64 / lb.max(1) as f64, total(k))?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The GEMM table: JIT and LLVM in f32 and fp16 against numpy (best of repeated runs).
fn gemm(python: &str, llvm_backend: &llvm_cpu::LlvmCpuBackend, threads: usize, sizes: &[usize]) -> anyhow::Result<()> {
    // numpy first, so its threads do not compete with ours.
    let peer = numpy(python, threads, sizes)?;
    outln!("GEMM n×n×n (A activation, B constant weight)")?;
    outln!("GFLOP/s; jit = Cranelift, llvm = LLVM x86-64 ahead of time, np = numpy (OpenBLAS for f32)")?;
    outln!(
        "{:>6} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>10} {:>10} {:>11}",
        "n", "jit f32", "jit fp16", "llvm f32", "llvm fp16", "np f32", "np f16", "llvm/np32", "llvm/jit", "llvm 16/32"
    )?;
    for &n in sizes {
        let flops = 2.0 * (n as f64).powi(3);
        let (mut jit, mut llvm) = (Vec::new(), Vec::new());
        for d in [DType::F32, DType::F16] {
            let g = gemm_graph(n, d);
            let a = random(&TensorType::new(d, [1, n, n]), 2, 1.0);
            let model = Model::compile_graph(&g, threads)?;
            model.run(std::slice::from_ref(&a))?;
            let t = best(Duration::from_millis(1500), || {
                let _ = model.run(std::slice::from_ref(&a));
            });
            jit.push(flops / t.as_secs_f64() / 1e9);
            let exec = llvm_executor(&g, llvm_backend, threads)?;
            exec.run(std::slice::from_ref(&a))?;
            let t = best(Duration::from_millis(1500), || {
                let _ = exec.run(std::slice::from_ref(&a));
            });
            llvm.push(flops / t.as_secs_f64() / 1e9);
        }
        let (np32, np16) = peer.iter().find(|p| p.0 == n).map_or((f64::NAN, f64::NAN), |p| (p.1, p.2));
        outln!(
            "{n:>6} {:>9.2} {:>9.2} {:>9.2} {:>9.2} {:>9.2} {:>9.3} {:>10.3} {:>10.3} {:>11.3}",
            jit[0],
            jit[1],
            llvm[0],
            llvm[1],
            np32,
            np16,
            llvm[0] / np32,
            llvm[0] / jit[0],
            llvm[1] / llvm[0]
        )?;
    }
    Ok(())
}

/// One model's figures, f32 first and fp16 second in each pair.
#[derive(Default)]
struct Row {
    name: String,
    jit: [f64; 2],
    llvm: [f64; 2],
    /// The same on one thread, measured in this run right after (when `--threads` > 1).
    jit_one: [f64; 2],
    llvm_one: [f64; 2],
    compile: [Duration; 2],
    compile_parts: [String; 2],
    iree: [Option<Measured>; 2],
    /// Weight bytes, activation peak, liveness lower bound.
    memory: [(usize, usize, usize); 2],
}

fn short(variant: &str) -> &str {
    if variant == "plain" { "plain" } else { "tiled" }
}

/// The models to run: every model of `dir`, then the networks the bench builds; with `only`,
/// those whose name contains one of its comma-separated words.
fn models(dir: &Path, only: Option<&String>) -> anyhow::Result<Vec<(String, String, Vec<Tensor>)>> {
    let wanted = |name: &str| only.is_none_or(|o| o.split(',').any(|w| name.contains(w.trim())));
    let mut models = Vec::new();
    let mut names = discover(dir)?;
    names.sort();
    for name in names.into_iter().filter(|n| wanted(n)) {
        let source = std::fs::read_to_string(dir.join(format!("{name}.tosa.mlir")))?;
        let input = f16c_runtime::npy::read(&dir.join(format!("{name}.input.npy")))?;
        models.push((name, source, vec![input]));
    }
    for (name, module, input) in networks().into_iter().filter(|n| wanted(&n.0)) {
        let text = decimal_weights(&print_module(&module, PrintOptions::default()).map_err(|d| anyhow::anyhow!(d.to_string()))?);
        models.push((name, text, vec![input]));
    }
    Ok(models)
}

/// The networks the bench builds, with their inputs.
pub fn networks() -> Vec<(String, Module, Tensor)> {
    let nhwc = random(&TensorType::new(DType::F32, [1, 64, 64, 3]), 5, 1.0);
    let nchw = random(&TensorType::new(DType::F32, [1, 3, 64, 64]), 5, 1.0);
    vec![
        ("resnet18_64".into(), resnet18(), nhwc),
        ("mobilenet_v2_050".into(), mobilenet_v2(0.5), nchw.clone()),
        ("mobilenet_v2_100".into(), mobilenet_v2(1.0), nchw),
    ]
}

/// Writes the built networks as `NAME.tosa.mlir` (decimal weights) and `NAME.input.npy`.
fn write_networks(dir: &Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create '{}'", dir.display()))?;
    for (name, module, input) in networks() {
        let text = decimal_weights(&print_module(&module, PrintOptions::default()).map_err(|d| anyhow::anyhow!(d.to_string()))?);
        std::fs::write(dir.join(format!("{name}.tosa.mlir")), text)?;
        f16c_runtime::npy::write(&dir.join(format!("{name}.input.npy")), &input)?;
        outln!("wrote {}", dir.join(format!("{name}.tosa.mlir")).display())?;
    }
    Ok(())
}

/// The models of a directory: every `NAME.tosa.mlir` with a `NAME.input.npy` beside it (a model
/// without an input is named on standard error and skipped).
pub fn discover(dir: &Path) -> anyhow::Result<Vec<String>> {
    let mut names = Vec::new();
    for entry in std::fs::read_dir(dir).with_context(|| format!("cannot read '{}'", dir.display()))? {
        let Ok(file) = entry?.file_name().into_string() else { continue };
        let Some(name) = file.strip_suffix(".tosa.mlir") else { continue };
        if dir.join(format!("{name}.input.npy")).is_file() {
            names.push(name.to_string());
        } else if !name.ends_with(".raw") {
            eprintln!("bench: skipping {file}: no {name}.input.npy beside it");
        }
    }
    Ok(names)
}

/// A model's latency in ms: [`rounds`] of `run` within 600 ms.
fn latency_ms(run: impl FnMut()) -> f64 {
    ms(rounds(Duration::from_millis(600), run))
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// numpy's (n, f32 GFLOP/s, f16 GFLOP/s) per size, from `scripts/bench_numpy.py`.
fn numpy(python: &str, threads: usize, sizes: &[usize]) -> anyhow::Result<Vec<(usize, f64, f64)>> {
    if python == "none" {
        return Ok(Vec::new());
    }
    let script = Path::new("scripts/bench_numpy.py");
    let out = Process::new(python)
        .arg(script)
        .args(sizes.iter().map(|s| s.to_string()))
        .env("OPENBLAS_NUM_THREADS", threads.to_string())
        .env("OMP_NUM_THREADS", threads.to_string())
        .output()
        .with_context(|| format!("cannot run {python} {} (run scripts/setup.sh, or pass --python=none)", script.display()))?;
    if !out.status.success() {
        bail!("numpy peer failed: {}", String::from_utf8_lossy(&out.stderr));
    }
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let v: Vec<&str> = l.split_whitespace().collect();
            Some((v.first()?.parse().ok()?, v.get(1)?.parse().ok()?, v.get(2)?.parse().ok()?))
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::discover;

    #[test]
    fn discovers_models_by_tosa_file_with_an_input_beside_it() {
        let dir = std::env::temp_dir().join(format!("f16c-bench-discover-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for f in ["mine.tosa.mlir", "mine.input.npy", "lonely.tosa.mlir", "mine.raw.tosa.mlir", "notes.txt"] {
            std::fs::write(dir.join(f), "").unwrap();
        }
        let mut names = discover(&dir).unwrap();
        names.sort();
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(names, vec!["mine".to_string()]);
    }
}
