//! Fuzzing and differential testing (issue 14), bounded for CI: the mutation harness on the
//! four readers, the random-graph differential tester on every backend that runs here, and
//! checks that both harnesses see what they exist to see (a crash, a hang, a panic; a wrong
//! bit, a contraction outside its bound) and that shrinking shrinks. Long campaigns:
//! `f16c-fuzz fuzz --seconds 900` and `f16c-fuzz diff --seconds 3600` (README, "Reliability").

use f16c_dialect::{reference, BinaryOp, DType, Graph, Op, Tensor, TensorType};
use f16c_tests::cases::{constant, loc, random, tensor_ty, zero, Rng};
use f16c_tests::differential::{self, DiffBackend, DiffCase};
use f16c_tests::fuzz::{self, FuzzTarget};
use std::path::Path;
use std::time::Duration;

const FUZZ: &str = env!("CARGO_BIN_EXE_f16c-fuzz");

/// Seconds per fuzz target in the bounded run.
const FUZZ_SECONDS: &str = "20";

/// Seconds of the bounded differential run.
const DIFF_SECONDS: f64 = 60.0;

fn out_dir(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join(name)
}

#[test]
fn a_bounded_fuzz_campaign_finds_nothing() {
    let out = out_dir("fuzz");
    let _ = std::fs::remove_dir_all(&out);
    let run = std::process::Command::new(FUZZ).args(["fuzz", "--seconds", FUZZ_SECONDS, "--seed", "14", "--out"]).arg(&out).output().unwrap();
    let text = String::from_utf8_lossy(&run.stdout);
    println!("{text}");
    assert!(run.status.success(), "the fuzz campaign found something (inputs in {}):\n{text}\n{}", out.display(), String::from_utf8_lossy(&run.stderr));
    // Not vacuous: every target ran inputs.
    for t in FuzzTarget::ALL {
        let row = text.lines().find(|l| l.starts_with(&format!("| {} |", t.name()))).unwrap_or_else(|| panic!("no row for {}", t.name()));
        let runs: u64 = row.split('|').nth(2).unwrap().trim().parse().unwrap();
        assert!(runs > 100, "{}: only {runs} runs", t.name());
    }
}

#[test]
fn a_bounded_differential_campaign_finds_nothing() {
    let out = out_dir("diff");
    let _ = std::fs::remove_dir_all(&out);
    let report = differential::campaign(DIFF_SECONDS, 14_000, &DiffBackend::ALL, &out, 100);
    println!("{}", report.table());
    assert!(report.findings.is_empty(), "{}", report.table());
    assert!(report.graphs >= 50, "only {} graphs", report.graphs);
    for (b, c) in &report.backends {
        assert!(c.compared > c.graphs / 2, "{}: {} results compared over {} graphs", b.name(), c.compared, c.graphs);
    }
}

#[test]
fn the_fuzz_harness_sees_crashes_hangs_panics_and_broken_invariants() {
    let inputs: [&[u8]; 5] = [b"#abort", b"#panic", b"#hang", b"base = \"O2\"\n", b"base = \"O9\"\n"];
    let got = fuzz::run_inputs(Path::new(FUZZ), FuzzTarget::Policy, &inputs, Duration::from_secs(5), &[("F16C_FUZZ_SELFTEST", "1")]).unwrap();
    assert!(matches!(&got[0], Err(m) if m.contains("aborted")), "{:?}", got[0]);
    assert!(matches!(&got[1], Ok(m) if m.starts_with("panic a panic on purpose")), "{:?}", got[1]);
    assert!(matches!(&got[2], Err(m) if m.starts_with("hang")), "{:?}", got[2]);
    assert_eq!(got[3].as_deref(), Ok("ok ok"));
    assert!(matches!(&got[4], Ok(m) if m.starts_with("ok error:")), "{:?}", got[4]);
}

#[test]
fn mutations_change_inputs_and_seeds_exist_for_every_target() {
    let mut rng = Rng(5);
    for t in FuzzTarget::ALL {
        let corpus = fuzz::seeds(t);
        assert!(!corpus.is_empty(), "{}: no seeds", t.name());
        let changed = (0..100).filter(|_| !corpus.contains(&fuzz::mutate(t, &corpus, &mut rng))).count();
        assert!(changed > 80, "{}: only {changed} of 100 mutations changed the input", t.name());
    }
}

/// `[1, 4] + [1, 4]` (exact) and a `[1, 3, 8] × [1, 8, 5]` matmul, both outputs.
fn exact_and_contraction() -> DiffCase {
    let mut rng = Rng(3);
    let mut g = Graph::new("judge");
    let a = g.add_input(TensorType::new(DType::F32, [1, 4]), loc());
    let b = g.add_input(TensorType::new(DType::F32, [1, 4]), loc());
    let s = g.add_node(Op::Binary(BinaryOp::Add), tensor_ty(DType::F32, &[1, 4]), &[a, b], loc());
    let x = g.add_input(TensorType::new(DType::F32, [1, 3, 8]), loc());
    let w = constant(&mut g, random(&TensorType::new(DType::F32, [1, 8, 5]), &mut rng, -1.0, 1.0));
    let (z1, z2) = (zero(&mut g, DType::F32), zero(&mut g, DType::F32));
    let m = g.add_node(Op::MatMul, tensor_ty(DType::F32, &[1, 3, 5]), &[x, w, z1, z2], loc());
    g.set_outputs(vec![s, m]);
    let inputs = g.inputs().iter().map(|&i| random(g.tensor_ty(i).unwrap(), &mut rng, -2.0, 2.0)).collect();
    DiffCase { graph: g, inputs }
}

fn nudged(t: &Tensor, index: usize, by: f32) -> Tensor {
    let mut v = t.to_f32_vec();
    v[index] = if by == 0.0 { f32::from_bits(v[index].to_bits() + 1) } else { v[index] + by };
    Tensor::from_f32(t.shape().to_vec(), v).unwrap()
}

#[test]
fn the_contract_judge_rejects_a_wrong_bit_and_a_sum_outside_its_bound() {
    let case = exact_and_contraction();
    let (values, want) = differential::reference_values(&case.graph, &case.inputs).unwrap();
    let judge = |got: &[Tensor]| differential::judge(&case.graph, &values, &want, got, 0);
    assert_eq!(judge(&want), Ok((2, 0)));
    // One ulp off in the exact add.
    assert!(judge(&[nudged(&want[0], 1, 0.0), want[1].clone()]).is_err());
    // The matmul: one ulp is within the reordering bound, 1e-3 is not.
    assert!(judge(&[want[0].clone(), nudged(&want[1], 2, 0.0)]).is_ok());
    assert!(judge(&[want[0].clone(), nudged(&want[1], 2, 1e-3)]).is_err());
    // A NaN where the reference is finite, in the contraction: the contract promises finite.
    assert!(judge(&[want[0].clone(), nudged(&want[1], 0, f32::NAN)]).is_err());
    // The JIT's real results agree.
    let got = f16c_jit::Model::compile_graph(&case.graph, 1).unwrap().run(&case.inputs).unwrap();
    assert!(judge(&got).is_ok());
}

#[test]
fn shrinking_keeps_the_failure_and_drops_the_rest() {
    // The first generated graph with at least five ops and an exp; "fails" while it has an exp.
    let has_exp = |g: &Graph| g.node_ids().any(|id| matches!(g.op(id), Op::Unary(f16c_dialect::UnaryOp::Exp)));
    let ops = |g: &Graph| g.node_ids().filter(|&id| !g.op(id).is_constant() && !matches!(g.op(id), Op::Arg(_))).count();
    let case = (0..2000u64).map(differential::generate).find(|c| has_exp(&c.graph) && ops(&c.graph) >= 5).expect("a graph with an exp");
    let small = differential::shrink(&case, |c| has_exp(&c.graph), 500);
    assert!(has_exp(&small.graph));
    assert!(ops(&small.graph) < ops(&case.graph), "{} ops, was {}", ops(&small.graph), ops(&case.graph));
    assert!(reference::run(&small.graph, &small.inputs).is_ok());
    // The inputs no longer matter to the failure: every element became plain.
    assert!(small.inputs.iter().all(|t| t.to_f32_vec().iter().all(|&x| x == 1.0)));
}

#[test]
fn the_generator_covers_the_import_list_with_valid_graphs() {
    let mut seen = std::collections::BTreeSet::new();
    let mut types = std::collections::BTreeSet::new();
    for seed in 0..400 {
        let c = differential::generate(seed);
        f16c_dialect::verify::verify(&c.graph).unwrap_or_else(|d| panic!("seed {seed}: {d}"));
        differential::round_trip(&c.graph).unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        seen.extend(c.graph.node_ids().map(|id| c.graph.op(id).mlir_name()));
        types.extend(c.graph.node_ids().filter_map(|id| c.graph.tensor_ty(id).map(|t| t.dtype)));
    }
    for d in [f16c_dialect::DType::I16, f16c_dialect::DType::I48] {
        assert!(types.contains(&d), "no {d} value in 400 generated graphs");
    }
    for op in ["tosa.conv2d", "tosa.depthwise_conv2d", "tosa.transpose_conv2d", "tosa.conv3d", "tosa.matmul", "tosa.max_pool2d", "tosa.avg_pool2d", "tosa.select", "tosa.gather", "tosa.argmax", "tosa.reduce_sum", "tosa.pad", "tosa.tile", "tosa.slice", "tosa.reverse", "tosa.resize", "tosa.concat", "tosa.cast", "tosa.exp", "tosa.pow", "tosa.clamp", "tosa.ceil", "tosa.sin", "tosa.logical_and", "tosa.logical_not", "tosa.rescale", "tosa.table", "tosa.intdiv", "tosa.arithmetic_right_shift", "tosa.clz"] {
        assert!(seen.contains(op), "no {op} in 400 generated graphs");
    }
}
