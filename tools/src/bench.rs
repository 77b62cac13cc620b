//! `f16c bench`: speed and memory of the x86_64 JIT and of the LLVM x86-64 backend ahead of
//! time, with numpy as a peer in the same run; with `--aarch64`, the instructions AArch64 code
//! executes under qemu.
//!
//! Prints GEMM throughput (f32 and fp16, JIT and LLVM, against numpy's float32 and float16
//! matmul at the same thread count), per-model latency (JIT and LLVM) and the JIT's compile time
//! (every model in `--models`, and a resnet18-style network at 3×64×64), and memory (weight
//! bytes, the buffer plan's peak against its liveness lower bound). Times are the best of
//! repeated runs. `--aarch64` adds the executed instructions of the AArch64 fp16 code against
//! its own f32 code (GEMM and every model), counted by a TCG plugin under qemu-aarch64.

use anyhow::{bail, Context};
use clap::{Arg, ArgMatches, Command};
use f16c_dialect::export::{print_module, PrintOptions};
use f16c_dialect::{BinaryOp, ConvAttrs, DType, Graph, Location, Module, NodeId, Op, PoolAttrs, Tensor, TensorType, ValueType};
use f16c_compiler::backend::llvm_cpu;
use f16c_compiler::driver;
use f16c_jit::{CompileOptions, Model};
use f16c_runtime::foreign;
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
             --aarch64 counts the instructions the AArch64 code executes under qemu-aarch64 (fp16\n\
             against f32, one call of the library's entry point; needs qemu-user,\n\
             gcc-aarch64-linux-gnu and a host C compiler for the counting plugin).\n\n\
             Examples:\n  f16c bench\n  f16c bench --threads=1 --sizes=256,512\n  f16c bench --aarch64 --sizes=256",
        )
        .arg(Arg::new("threads").long("threads").value_name("N").value_parser(clap::value_parser!(usize)).help("Threads (default: every core)"))
        .arg(Arg::new("sizes").long("sizes").value_name("N,..").default_value("256,512,1024").help("GEMM sizes (square)"))
        .arg(Arg::new("models").long("models").value_name("DIR").default_value("tests/data/models").help("Directory of NAME.tosa.mlir + NAME.input.npy models"))
        .arg(Arg::new("python").long("python").value_name("PY").default_value(".venv/bin/python").help("Python with numpy for the peer ('none' to skip)"))
        .arg(
            Arg::new("aarch64")
                .long("aarch64")
                .action(clap::ArgAction::SetTrue)
                .help("Also count the instructions of AArch64 fp16 vs f32 code under qemu (GEMM at the first size, every model)"),
        )
}

/// The LLVM x86-64 backend's executor for `g` (already in its precision).
fn llvm_executor(g: &Graph, threads: usize) -> anyhow::Result<f16c_runtime::exec::Executor> {
    let artifact = driver::artifact_with(g, &llvm_cpu::X86_64).map_err(|d| anyhow::anyhow!(d.to_string()))?;
    Ok(f16c_runtime::loader::load(artifact, threads)?)
}

/// `source`'s chosen function after the precision pipeline of `options`.
fn prepared(source: &str, name: &str, options: &CompileOptions) -> anyhow::Result<Graph> {
    let mut module = f16c_dialect::import::parse_module(source, name).map_err(|d| anyhow::anyhow!(d.render(Some(source))))?;
    f16c_jit::prepare(&mut module, options)?;
    let index = driver::choose_function(&module, options.function.as_deref()).map_err(|e| anyhow::anyhow!("{name}: {e}"))?;
    Ok(module.functions.swap_remove(index))
}

/// The instructions one call of `g`'s AArch64 library executes on `inputs` under qemu.
fn aarch64_instructions(g: &Graph, inputs: &[Tensor]) -> anyhow::Result<u64> {
    let lib = driver::c_library(g, llvm_cpu::aarch64(false)).map_err(|d| anyhow::anyhow!(d.to_string()))?;
    let library = foreign::Library { code: &lib.code, name: &lib.name, inputs: &lib.inputs, outputs: &lib.outputs };
    let inputs: Vec<Tensor> = inputs.iter().zip(&lib.inputs).map(|(t, w)| f16c_runtime::npy::fit(t.clone(), w)).collect();
    Ok(foreign::count_instructions("aarch64", &library, &inputs)?)
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

/// A deterministic pseudo-random tensor with values in `[-scale, scale]`.
fn random(ty: &TensorType, seed: u64, scale: f32) -> Tensor {
    let mut s = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    let v: Vec<f32> = (0..ty.num_elements())
        .map(|_| {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((s >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0) * scale
        })
        .collect();
    let t = Tensor::from_f32(ty.shape.clone(), v).expect("sized");
    f16c_dialect::semantics::cast(&t, ty.dtype)
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

/// Builds a resnet18-style network (NHWC, batch norm folded into conv biases) for a 3×64×64
/// input: the 7×7 stem, max pool, four stages of two basic blocks (64..512 channels, projection
/// shortcuts), global average pool and a 10-way classifier: resnet18's layer structure and
/// about its weight count.
pub fn resnet18() -> Module {
    struct B {
        g: Graph,
        seed: u64,
    }
    impl B {
        fn ty(&self, x: NodeId) -> TensorType {
            self.g.tensor_ty(x).expect("tensor").clone()
        }
        fn constant(&mut self, t: Tensor) -> NodeId {
            let ty = ValueType::Tensor(t.ty());
            self.g.add_node(Op::Const(t), ty, &[], loc())
        }
        fn conv(&mut self, x: NodeId, cout: usize, k: usize, stride: usize, relu: bool) -> NodeId {
            let [n, h, w, cin] = self.ty(x).shape[..] else { unreachable!("NHWC") };
            self.seed += 1;
            let scale = (2.0 / (k * k * cin) as f32).sqrt();
            let weight = self.constant(random(&TensorType::new(DType::F32, [cout, k, k, cin]), self.seed, scale));
            let bias = self.constant(random(&TensorType::new(DType::F32, [cout]), self.seed + 1000, 0.1));
            let z = self.constant(Tensor::splat(&TensorType::new(DType::F32, [1]), 0.0));
            // "Same" output size ceil(h / stride); TOSA wants the window to tile the padded input
            // exactly, so odd total padding puts the extra row on top.
            let (oh, ow) = (h.div_ceil(stride), w.div_ceil(stride));
            let total = (oh - 1) * stride + k - h;
            let (lo, hi) = (total - total / 2, total / 2);
            let _ = ow;
            let attrs = ConvAttrs { pad: [lo, hi, lo, hi], stride: [stride; 2], dilation: [1, 1], acc: DType::F32 };
            let out = ValueType::Tensor(TensorType::new(DType::F32, [n, oh, ow, cout]));
            let y = self.g.add_node(Op::Conv2d(attrs), out.clone(), &[x, weight, bias, z, z], loc());
            if relu { self.g.add_node(Op::Clamp { min: 0.0, max: f32::MAX as f64 }, out, &[y], loc()) } else { y }
        }
        fn block(&mut self, x: NodeId, cout: usize, stride: usize) -> NodeId {
            let cin = self.ty(x).shape[3];
            let y = self.conv(x, cout, 3, stride, true);
            let y = self.conv(y, cout, 3, 1, false);
            // Projection shortcut: 1×1, or 3×3 where it also halves the size (a 1×1 window
            // cannot tile an even input at stride 2 in TOSA's exact-division rule).
            let short = match (stride, cin == cout) {
                (1, true) => x,
                (1, false) => self.conv(x, cout, 1, 1, false),
                _ => self.conv(x, cout, 3, stride, false),
            };
            let ty = ValueType::Tensor(self.ty(y));
            let s = self.g.add_node(Op::Binary(BinaryOp::Add), ty.clone(), &[y, short], loc());
            self.g.add_node(Op::Clamp { min: 0.0, max: f32::MAX as f64 }, ty, &[s], loc())
        }
    }
    let mut b = B { g: Graph::new("forward"), seed: 0 };
    let x = b.g.add_input(TensorType::new(DType::F32, [1, 64, 64, 3]), loc());
    let mut y = b.conv(x, 64, 7, 2, true);
    let pool = PoolAttrs { kernel: [3, 3], stride: [2, 2], pad: [1, 0, 1, 0], acc: None };
    y = b.g.add_node(Op::MaxPool2d(pool), ValueType::Tensor(TensorType::new(DType::F32, [1, 16, 16, 64])), &[y], loc());
    for (c, s) in [(64, 1), (128, 2), (256, 2), (512, 2)] {
        y = b.block(y, c, s);
        y = b.block(y, c, 1);
    }
    let z = b.constant(Tensor::splat(&TensorType::new(DType::F32, [1]), 0.0));
    let avg = PoolAttrs { kernel: [2, 2], stride: [2, 2], pad: [0; 4], acc: Some(DType::F32) };
    y = b.g.add_node(Op::AvgPool2d(avg), ValueType::Tensor(TensorType::new(DType::F32, [1, 1, 1, 512])), &[y, z, z], loc());
    let shape = b.g.add_node(Op::ConstShape(vec![1, 1, 512]), ValueType::Shape(3), &[], loc());
    y = b.g.add_node(Op::Reshape, ValueType::Tensor(TensorType::new(DType::F32, [1, 1, 512])), &[y, shape], loc());
    let w = b.constant(random(&TensorType::new(DType::F32, [1, 512, 10]), 99, 0.05));
    y = b.g.add_node(Op::MatMul, ValueType::Tensor(TensorType::new(DType::F32, [1, 1, 10])), &[y, w, z, z], loc());
    let bias = b.constant(random(&TensorType::new(DType::F32, [1, 1, 10]), 98, 0.1));
    y = b.g.add_node(Op::Binary(BinaryOp::Add), ValueType::Tensor(TensorType::new(DType::F32, [1, 1, 10])), &[y, bias], loc());
    b.g.add_output(y);
    Module { functions: vec![b.g] }
}

pub fn main(m: &ArgMatches) -> anyhow::Result<ExitCode> {
    let threads = m.get_one::<usize>("threads").copied().unwrap_or_else(f16c_jit::default_threads);
    if threads == 0 {
        bail!("--threads must be at least 1");
    }
    let sizes: Vec<usize> = m
        .get_one::<String>("sizes")
        .expect("has default")
        .split(',')
        .map(|s| s.trim().parse().with_context(|| format!("--sizes: '{s}' is not a size")))
        .collect::<anyhow::Result<_>>()?;
    let python = m.get_one::<String>("python").expect("has default");
    println!("f16c bench: x86_64 JIT (Cranelift) and LLVM ahead of time, {threads} thread(s); times are the best of repeated runs\n");

    // numpy first, so its threads do not compete with ours.
    let peer = numpy(python, threads, &sizes)?;
    println!("GEMM n×n×n (A activation, B constant weight)");
    println!("GFLOP/s; jit = Cranelift, llvm = LLVM x86-64 ahead of time, np = numpy (OpenBLAS for f32)");
    println!(
        "{:>6} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>10} {:>10} {:>11}",
        "n", "jit f32", "jit fp16", "llvm f32", "llvm fp16", "np f32", "np f16", "llvm/np32", "llvm/jit", "llvm 16/32"
    );
    for &n in &sizes {
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
            let exec = llvm_executor(&g, threads)?;
            exec.run(std::slice::from_ref(&a))?;
            let t = best(Duration::from_millis(1500), || {
                let _ = exec.run(std::slice::from_ref(&a));
            });
            llvm.push(flops / t.as_secs_f64() / 1e9);
        }
        let (np32, np16) = peer.iter().find(|p| p.0 == n).map_or((f64::NAN, f64::NAN), |p| (p.1, p.2));
        println!(
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
        );
    }

    println!("\nModels: latency (ms), JIT compile time (ms: parse / passes / lower+CLIF / Cranelift)");
    println!("{:<16} {:>10} {:>10} {:>10} {:>10} {:>30} {:>30}", "model", "jit f32", "jit fp16", "llvm f32", "llvm fp16", "compile f32", "compile fp16");
    let mut memory = Vec::new();
    let dir = PathBuf::from(m.get_one::<String>("models").expect("has default"));
    let mut models: Vec<(String, String, Vec<Tensor>)> = Vec::new();
    let mut names = discover(&dir)?;
    names.sort();
    for name in names {
        let source = std::fs::read_to_string(dir.join(format!("{name}.tosa.mlir")))?;
        let input = f16c_runtime::npy::read(&dir.join(format!("{name}.input.npy")))?;
        models.push((name, source, vec![input]));
    }
    let resnet = print_module(&resnet18(), PrintOptions::default()).map_err(|d| anyhow::anyhow!(d.to_string()))?;
    models.push(("resnet18_64".into(), resnet, vec![random(&TensorType::new(DType::F32, [1, 64, 64, 3]), 5, 1.0)]));
    let mut counts = Vec::new();
    if m.get_flag("aarch64") {
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
        let mut cells = Vec::new();
        let mut llvm_cells = Vec::new();
        let mut compiles = Vec::new();
        let mut insns = Vec::new();
        for options in [CompileOptions { threads, ..CompileOptions::default() }, CompileOptions { threads, ..CompileOptions::fp16() }] {
            let g = prepared(source, name, &options)?;
            let exec = llvm_executor(&g, threads)?;
            exec.run(inputs).with_context(|| format!("{name}: running the LLVM code on {name}.input.npy"))?;
            llvm_cells.push(ms(best(Duration::from_millis(700), || {
                let _ = exec.run(inputs);
            })));
            if m.get_flag("aarch64") {
                insns.push(aarch64_instructions(&g, inputs)?);
                if options.precision != "fp32" {
                    // The same with fp16 accumulation (--accumulate=f16).
                    let mut module = f16c_dialect::import::parse_module(source, name).map_err(|d| anyhow::anyhow!(d.render(Some(source))))?;
                    let o = driver::Options { f16_accumulate: true, ..driver::Options::new(f16c_compiler::target::Target::Aarch64 { bf16: false }).with_precision(f16c_compiler::policy::Precision::Fp16) };
                    driver::prepare(&mut module, &o, &[]).map_err(|e| anyhow::anyhow!("{name}: {e}"))?;
                    let index = driver::choose_function(&module, None).map_err(|e| anyhow::anyhow!("{name}: {e}"))?;
                    insns.push(aarch64_instructions(&module.functions[index], inputs)?);
                }
            }
            let t0 = Instant::now();
            let model = Model::compile_source(source, name, &options)?;
            let total = t0.elapsed();
            let t = &model.times;
            compiles.push(format!(
                "{:.1} ({:.1}/{:.1}/{:.1}/{:.1})",
                ms(total),
                ms(t.parse),
                ms(t.passes),
                ms(t.lower),
                ms(t.codegen)
            ));
            // A first run reports a wrong input as the runtime's error, not as a panic.
            model.run(inputs).with_context(|| format!("{name}: running on {name}.input.npy"))?;
            let run = best(Duration::from_millis(700), || {
                let _ = model.run(inputs);
            });
            cells.push(ms(run));
            let plan = model.memory;
            memory.push((format!("{name} {}", options.precision), model.weight_bytes(), plan.arena_bytes, plan.lower_bound));
        }
        println!("{name:<16} {:>10.3} {:>10.3} {:>10.3} {:>10.3} {:>30} {:>30}", cells[0], cells[1], llvm_cells[0], llvm_cells[1], compiles[0], compiles[1]);
        if let [f32_count, fp16_count, f16_acc_count] = insns[..] {
            counts.push((name.clone(), f32_count, fp16_count, f16_acc_count));
        }
    }
    if !counts.is_empty() {
        println!("\nAArch64 under qemu: instructions executed by one call (fp16 = O1 with f32 accumulation, FMLAL; acc16 = --accumulate=f16, FMLA .8h)");
        println!("{:<16} {:>14} {:>14} {:>14} {:>10} {:>12}", "model", "f32", "fp16", "fp16 acc16", "fp16/f32", "acc16/f32");
        for (name, a, b, c) in counts {
            println!("{name:<16} {a:>14} {b:>14} {c:>14} {:>10.3} {:>12.3}", b as f64 / a.max(1) as f64, c as f64 / a.max(1) as f64);
        }
    }

    println!("\nMemory (bytes): weights as stored; activations: buffer plan peak vs liveness lower bound");
    println!("{:<22} {:>12} {:>12} {:>12} {:>8}", "model", "weights", "peak", "lower bound", "ratio");
    for (name, w, peak, lb) in memory {
        println!("{name:<22} {w:>12} {peak:>12} {lb:>12} {:>8.3}", peak as f64 / lb.max(1) as f64);
    }
    Ok(ExitCode::SUCCESS)
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
