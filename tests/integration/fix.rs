//! `f16c check --fix`: the policy it writes meets the tolerance on every shared model, read
//! back from its text and compiled on the JIT and the LLVM x86-64 backend; it keeps the op that
//! overflows in the T5 pattern; it uses a logarithmic number of confirming runs; bad requests
//! are errors.

use f16c_compiler::driver::{self, Options};
use f16c_compiler::fix::{self, errors, FixError, Metric};
use f16c_compiler::policy::{Policy, Precision};
use f16c_compiler::target::Target;
use f16c_dialect::{Graph, Op, Tensor};
use f16c_runtime::npy;
use f16c_tests::{model_path, MODELS};

/// The JIT, as `f16c check --fix` runs it, with one code cache for every test (each probe
/// reuses the kernel bodies any earlier compile made, of this model or another).
fn jit(g: &Graph, samples: &[Vec<Tensor>]) -> Result<Vec<Vec<Tensor>>, String> {
    static CACHE: std::sync::LazyLock<f16c_compiler::backend::cranelift::CodeCache> = std::sync::LazyLock::new(Default::default);
    f16c_jit::run_samples(g, samples, 1, &CACHE)
}

/// The LLVM x86-64 backend: the artifact `f16c compile --backend=llvm -o` writes, loaded.
fn llvm(g: &Graph, samples: &[Vec<Tensor>]) -> Vec<Vec<Tensor>> {
    let backend = driver::backend_named(Target::X86_64, Some(f16c_compiler::target::BackendName::Llvm), None).unwrap();
    let model = f16c_runtime::loader::load_any(driver::artifact_with(g, backend).unwrap(), 1).unwrap();
    samples.iter().map(|s| model.run(s).unwrap()).collect()
}

/// The f32 graph after canonicalize, as `check` has it, and the options for `precision`.
fn prepared(name: &str, precision: Precision) -> (Graph, Options) {
    let (mut module, _) = f16c_dialect::import::parse_file(&model_path(&format!("{name}.tosa.mlir"))).unwrap();
    let options = Options::new(Target::Reference).with_precision(precision);
    let (before, _) = driver::prepare_beside_f32(&mut module, &options, &[]).unwrap();
    (before.functions[0].clone(), options)
}

/// A second sample: the model's input, scaled and shifted.
fn samples(name: &str) -> Vec<Vec<Tensor>> {
    let x = npy::read(&model_path(&format!("{name}.input.npy"))).unwrap();
    let y = Tensor::from_f32(x.shape().to_vec(), x.to_f32_vec().iter().map(|v| 0.5 * v - 0.25).collect()).unwrap();
    vec![vec![x], vec![y]]
}

#[test]
fn the_written_policy_meets_the_tolerance_on_every_model_and_backend() {
    for name in MODELS {
        let sets = samples(name);
        for (precision, tolerances) in [(Precision::Fp16, &[1e-2, 1e-3, 1e-4][..]), (Precision::Bf16, &[1e-2][..])] {
            let (before, options) = prepared(name, precision);
            let want = jit(&before, &sets).unwrap();
            for &tolerance in tolerances {
                let what = format!("{name} {} {tolerance:e}", precision.name());
                let found = fix::fix(&before, &options, &sets, Metric::MaxRel, tolerance, &jit).unwrap_or_else(|e| panic!("{what}: {e}"));
                // Rounds of bisection within a budget logarithmic in the candidates.
                let n = found.candidates.len().max(1);
                assert!(found.runs <= 4 * (usize::BITS - n.leading_zeros()) as usize + 5, "{what}: {} runs for {n} candidates", found.runs);
                assert!(found.errors.iter().flatten().all(|&e| e <= tolerance), "{what}: {:?}", found.errors);
                // The file, read back as f16c compile --policy reads it, gives that model.
                let policy = Policy::from_toml(&found.policy.to_toml(), "fix.toml", precision, Target::Reference).unwrap();
                assert_eq!(policy.ops.len(), found.kept, "{what}");
                let g = fix::mixed_graph(&before, &policy, &options).unwrap();
                let on_jit = errors(Metric::MaxRel, &jit(&g, &sets).unwrap(), &want);
                assert_eq!(on_jit, found.errors, "{what}: the policy file gives another model");
                let on_llvm = errors(Metric::MaxRel, &llvm(&g, &sets), &want);
                assert!(on_llvm.iter().flatten().all(|&e| e <= tolerance), "{what}: LLVM {on_llvm:?}");
                // Looser tolerances keep no more ops in f32 than tighter ones.
                if tolerance < 1e-2 {
                    let looser = fix::fix(&before, &options, &sets, Metric::MaxRel, tolerance * 10.0, &jit).unwrap();
                    assert!(looser.kept <= found.kept, "{what}: {} kept at 10x the tolerance, {} here", looser.kept, found.kept);
                }
            }
        }
    }
}

/// The T5 pattern: large activations (inputs of magnitude 3000 through a layer of modest
/// gain: the weight-gain rule does not fire) overflow fp16 before a LayerNorm at O1. The fix
/// keeps exactly the op that overflows in f32, and the model is finite and within tolerance.
#[test]
fn the_op_that_overflows_is_the_one_kept() {
    let (mut before, options) = prepared("overflow_probe", Precision::Fp16);
    // overflow_probe multiplies the first Linear's weights and bias by 1e5; move 1e3 of that
    // into the input, so that the layer's gain is ordinary and its activations are not.
    let first = before.node_ids().find(|&id| matches!(before.op(id), Op::MatMul)).unwrap();
    let w = before.operands(first)[1];
    let Op::Const(t) = before.op(w).clone() else { panic!("constant weights") };
    before.node_mut(w).op = Op::Const(Tensor::from_f32(t.shape().to_vec(), t.to_f32_vec().iter().map(|v| v / 1e3).collect()).unwrap());
    let x = npy::read(&model_path("overflow_probe.input.npy")).unwrap();
    let x = Tensor::from_f32(x.shape().to_vec(), x.to_f32_vec().iter().map(|v| v * 1e3).collect()).unwrap();
    let sets = vec![vec![x]];
    let all_low = jit(&fix::mixed_graph(&before, &Policy::from_spec("O1", Precision::Fp16, Target::Reference).unwrap(), &options).unwrap(), &sets).unwrap();
    assert!(all_low[0][0].to_f32_vec().iter().any(|v| !v.is_finite()), "O1 is expected to overflow here");
    let found = fix::fix(&before, &options, &sets, Metric::MaxRel, 1e-2, &jit).unwrap();
    assert_eq!(found.kept, 1, "{:?}", &found.candidates[..3]);
    assert_eq!(found.candidates[0].id, first);
    assert!(found.candidates[0].local.is_infinite());
    assert_eq!(found.policy.ops[0].op, "tosa.matmul");
    assert!(found.errors[0][0] <= 1e-2);
}

#[test]
fn metrics_and_bad_requests() {
    let (before, options) = prepared("mlp_small", Precision::Fp16);
    let sets = samples("mlp_small");
    for metric in [Metric::MeanRel, Metric::Cosine, Metric::Top1] {
        let found = fix::fix(&before, &options, &sets, metric, 1e-5, &jit).unwrap();
        assert!(found.errors.iter().flatten().all(|&e| e <= 1e-5), "{metric:?}: {:?}", found.errors);
    }
    for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
        assert!(matches!(fix::fix(&before, &options, &sets, Metric::MaxRel, bad, &jit), Err(FixError::Usage(_))), "{bad}");
    }
    let wrong = vec![vec![Tensor::from_f32(vec![3], vec![0.0; 3]).unwrap()]];
    let e = fix::fix(&before, &options, &wrong, Metric::MaxRel, 1e-2, &jit).unwrap_err().to_string();
    assert!(e.contains("sample #0: input #0 of '@forward' must be"), "{e}");
    // A runner whose runs after the first (the f32 model's) are all off by one: not even the
    // all-f32 model meets the tolerance.
    let calls = std::cell::Cell::new(0);
    let off = |g: &Graph, s: &[Vec<Tensor>]| -> Result<Vec<Vec<Tensor>>, String> {
        calls.set(calls.get() + 1);
        let shift = if calls.get() == 1 { 0.0 } else { 1.0 };
        Ok(jit(g, s)?.into_iter().map(|r| r.into_iter().map(|t| Tensor::from_f32(t.shape().to_vec(), t.to_f32_vec().iter().map(|v| v + shift).collect()).unwrap()).collect()).collect())
    };
    let e = fix::fix(&before, &options, &sets, Metric::MaxRel, 1e-3, &off).unwrap_err();
    assert!(matches!(e, FixError::Unreachable { .. }), "{e}");
    assert!(e.to_string().contains("nothing was written"), "{e}");
}

