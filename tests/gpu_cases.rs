//! `f16c-gpu-cases OUT [--sm N]`: writes what `scripts/gpu-run.py` runs on a GPU machine, which
//! has no LLVM, MLIR or Rust: the artifact of every parity case and every shared model (fp32
//! and fp16) for `sm_N` (default 90), their inputs and the reference interpreter's outputs as
//! `.npy`, how each is compared (`cases.json`), and the GEMM benchmark's artifacts (fp16
//! 1024³, 4096³, 8192³; their inputs are made on the GPU machine). Used by `scripts/gpu-check`.
//! With `--cpu` it writes the same cases for x86-64, so that the whole check runs here.

use f16c_compiler::backend::nvptx::MATH_TOLERANCE;
use f16c_compiler::driver::{self, Options};
use f16c_compiler::policy::Precision;
use f16c_compiler::target::Target;
use f16c_dialect::import::parse_file;
use f16c_dialect::{reference, DType, Graph, Location, Op, Tensor, TensorType, ValueType};
use f16c_tests::cases::{contraction_tolerance, matmul_graph, parity_cases, Tolerance};
use f16c_tests::{model_path, MODELS};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

/// A model at fp16 (policy O1) against the reference interpreter on the same mixed-precision
/// graph: a contraction's f32 accumulation in another order can flip an f16 rounding by one
/// ulp, which propagates (the JIT's bound, `integration/jit.rs`).
const FP16_MODEL_PEAK: f64 = 4.0 / 2048.0;
/// A model at fp32: accumulation order and the GPU math approximations.
const FP32_MODEL_PEAK: f64 = 1e-5;

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let out = PathBuf::from(args.first().ok_or_else(|| anyhow::anyhow!("usage: f16c-gpu-cases OUT [--sm N]"))?);
    let sm: u32 = match args.iter().position(|a| a == "--sm") {
        Some(i) => args.get(i + 1).ok_or_else(|| anyhow::anyhow!("--sm needs a number"))?.parse()?,
        None => 90,
    };
    // `--cpu`: the same cases for this machine's x86-64 backend, which exercises this tool and
    // gpu-run.py end to end without a GPU (a small GEMM only).
    let cpu = args.iter().any(|a| a == "--cpu");
    let target = if cpu { Target::X86_64 } else { Target::Sm(sm) };
    let dir = out.join("cases");
    std::fs::create_dir_all(&dir)?;
    let mut cases = Vec::new();
    for case in parity_cases() {
        let low = case.graph.outputs().iter().any(|&o| case.graph.tensor_ty(o).is_some_and(|t| t.dtype.is_low_float()));
        let check = match case.tolerance {
            Tolerance::Exact => json!({"kind": "exact"}),
            // A few approximations compose (softmax: exp, a sum, a reciprocal); a low-precision
            // result may round one ulp the other way.
            Tolerance::Math => json!({"kind": "math", "rtol": 4.0 * MATH_TOLERANCE.0, "atol": 4.0 * MATH_TOLERANCE.1, "ulp": ulp(&case.graph)}),
            Tolerance::Contraction(k) => json!({"kind": "peak", "max": contraction_tolerance(k, low)}),
        };
        cases.push(write_case(&dir, &case.name, &case.graph, &case.inputs, target, check)?);
    }
    // Matmuls large enough for the 128 × 128 tensor-core tile (`wmma::Tile::LARGE`), ragged in
    // rows and columns, and one staged element by element (the 64 × 64 tile): their operands
    // and results are megabytes of random bits, so gpu-run.py makes the inputs there and takes
    // PyTorch's f32 matmul of the same low-precision inputs as the reference.
    let mut generated = Vec::new();
    for (name, batch, m, k, n, dtype) in [
        ("tile_large_matmul_f16", 1, 2100, 104, 2056, DType::F16),
        ("tile_large_matmul_bf16_batch2", 2, 1500, 72, 1504, DType::BF16),
        ("tile_small_matmul_f16_unaligned", 1, 2100, 100, 2050, DType::F16),
    ] {
        let g = matmul_graph(batch, m, k, n, dtype);
        let artifact = driver::artifact(&g, target).map_err(|d| anyhow::anyhow!("{name}: {d}"))?;
        std::fs::write(dir.join(format!("{name}.f16c")), artifact.to_bytes())?;
        generated.push(json!({"name": name, "artifact": format!("cases/{name}.f16c"), "batch": batch, "m": m, "k": k, "n": n,
            "dtype": dtype.to_string(), "max": contraction_tolerance(k, true)}));
    }
    let mut models = Vec::new();
    for name in MODELS {
        let input = f16c_runtime::npy::read(&model_path(&format!("{name}.input.npy")))?;
        for (precision, peak) in [(Precision::Fp32, FP32_MODEL_PEAK), (Precision::Fp16, FP16_MODEL_PEAK)] {
            let (mut module, _) = parse_file(&model_path(&format!("{name}.tosa.mlir")))?;
            driver::prepare(&mut module, &Options::new(target).with_precision(precision), &[])?;
            let g = &module.functions[0];
            let case = format!("model_{name}_{}", precision.name());
            models.push(write_case(&dir, &case, g, std::slice::from_ref(&input), target, json!({"kind": "peak", "max": peak}))?);
        }
    }
    let mut gemm = Vec::new();
    let sizes: &[usize] = if cpu { &[256] } else { &[1024, 4096, 8192] };
    for &n in sizes {
        let g = gemm_graph(n);
        let artifact = driver::artifact(&g, target).map_err(|d| anyhow::anyhow!("gemm {n}: {d}"))?;
        let file = format!("gemm_{n}.f16c");
        std::fs::write(dir.join(&file), artifact.to_bytes())?;
        gemm.push(json!({"n": n, "artifact": format!("cases/{file}")}));
    }
    let doc = json!({"target": target.to_string(), "cases": cases, "generated": generated, "models": models, "gemm": gemm});
    std::fs::write(out.join("cases.json"), serde_json::to_string_pretty(&doc)?)?;
    f16c_runtime::outln!("f16c-gpu-cases: {} parity cases, {} model runs and {} GEMMs for {target} in {}", cases.len(), models.len(), gemm.len(), out.display())?;
    Ok(())
}

/// One ulp (relative) of the lowest-precision result type.
fn ulp(g: &Graph) -> f64 {
    let types: Vec<DType> = g.outputs().iter().filter_map(|&o| g.tensor_ty(o).map(|t| t.dtype)).collect();
    if types.contains(&DType::BF16) {
        2f64.powi(-7)
    } else if types.contains(&DType::F16) {
        2f64.powi(-10)
    } else {
        0.0
    }
}

/// Writes `name`'s artifact, inputs and reference outputs; returns its `cases.json` entry.
fn write_case(dir: &Path, name: &str, g: &Graph, inputs: &[Tensor], target: Target, check: Value) -> anyhow::Result<Value> {
    let artifact = driver::artifact(g, target).map_err(|d| anyhow::anyhow!("{name}: {d}"))?;
    std::fs::write(dir.join(format!("{name}.f16c")), artifact.to_bytes())?;
    let want = reference::run(g, inputs).map_err(|e| anyhow::anyhow!("{name}: reference: {e}"))?;
    let mut ins = Vec::new();
    for (i, t) in inputs.iter().enumerate() {
        let f = format!("{name}.in{i}.npy");
        f16c_runtime::npy::write(&dir.join(&f), t)?;
        ins.push(format!("cases/{f}"));
    }
    let mut refs = Vec::new();
    for (i, t) in want.iter().enumerate() {
        let f = format!("{name}.ref{i}.npy");
        f16c_runtime::npy::write(&dir.join(&f), t)?;
        refs.push(format!("cases/{f}"));
    }
    Ok(json!({"name": name, "artifact": format!("cases/{name}.f16c"), "inputs": ins, "refs": refs, "check": check}))
}

/// `[1, n, n] × [1, n, n]` in fp16, both operands arguments.
fn gemm_graph(n: usize) -> Graph {
    let loc = Location::unknown;
    let ty = TensorType::new(DType::F16, [1, n, n]);
    let mut g = Graph::new("gemm");
    let a = g.add_input(ty.clone(), loc());
    let b = g.add_input(ty.clone(), loc());
    let z = |g: &mut Graph| g.add_node(Op::Const(Tensor::splat(&TensorType::new(DType::F16, [1]), 0.0)), ValueType::Tensor(TensorType::new(DType::F16, [1])), &[], loc());
    let (z1, z2) = (z(&mut g), z(&mut g));
    let o = g.add_node(Op::MatMul, ValueType::Tensor(ty), &[a, b, z1, z2], loc());
    g.add_output(o);
    g
}
