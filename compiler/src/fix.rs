//! `f16c check --fix`: the fewest ops kept in f32 for the mixed-precision model to meet the
//! user's tolerance on every sample, written as a policy file.
//!
//! The algorithm, in three steps (docs/DESIGN.md, "Automatic mixed precision"):
//!
//! 1. **One instrumented f32 run per sample** on the reference interpreter records every op's
//!    value (`reference::run_observed`), and one instrumented run of the all-low model (the
//!    user's policy as it is) records the mixed values beside them. The results every mixed
//!    model is held to are the f32 model's, run by the same runner as the mixed ones.
//! 2. **Sensitivity per op**, for every op the policy runs in the low type: the *local* error
//!    (the op alone evaluated in the low type on its recorded f32 inputs, against its recorded
//!    f32 result: what rounding this op adds, and whether it overflows) and the *carried* error
//!    (in the all-low run, how much the error relative to the value's peak grows across the op:
//!    its error minus the largest error among its inputs; an op that amplifies the error it is
//!    given, as a subtraction that cancels, shows up here). The sensitivity is the larger of
//!    the two, and infinite for an op whose low result goes non-finite where f32 stays finite.
//! 3. **A search over the sensitivity order**, in rounds of bisection. Each probe is a real
//!    run of the mixed model (`Runner`: the JIT in `f16c check`, bit-identical to the reference
//!    interpreter by the numeric contract) on every sample. A round finds the shortest prefix of
//!    the order that, kept in f32 beside the ops already required, meets the tolerance; the
//!    op that completes that prefix is required from then on, and the ops after it are dropped
//!    (the prefix passed without them). The search ends when the required ops alone pass. The
//!    sensitivity order is a guess (an early op's rounding is often averaged away by the layers
//!    after it, a late op's reaches the output whole); the rounds correct it: on a ResNet-18
//!    the first round needs 31 ops to pass at 3e-4, but the one that completed the prefix (the
//!    classifier) passes alone. Each round costs about log2 of the pool; the rounds stop at a
//!    budget of 4·log2(candidates) + 4 runs, keeping the last passing prefix, so the number of
//!    runs stays logarithmic in the op count. More ops in f32 is assumed to mean less error
//!    (true of rounding error, not a theorem); every answer is a set whose run met the
//!    tolerance.
//!
//! The kept ops become `[[op]]` tables of a policy file on top of the user's policy (op name
//! and `LINE:COL`, so the same export re-applies them); the last confirming run compiles the
//! model through that policy, exactly as `f16c compile --policy FILE` will.

use crate::driver;
use crate::pass::{registry, PassError, PassManager};
use crate::policy::{OpOverride, Policy};
use crate::transforms::assign_precision::AssignPrecision;
use crate::transforms::compute_dtype;
use f16c_core::compare::compare_values;
use f16c_dialect::semantics::{cast, eval, Value};
use f16c_dialect::{reference, DType, Diagnostic, Diagnostics, Graph, Location, Module, NodeId, Op, Tensor, TensorType, ValueType};
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// How a result is compared with the f32 model's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Metric {
    /// Largest |mixed − f32| over the f32 result's peak magnitude (what `check` reports).
    MaxRel,
    /// Mean |mixed − f32| over the mean |f32|.
    MeanRel,
    /// 1 − cosine similarity of the flattened results.
    Cosine,
    /// The fraction of rows (the last axis) whose arg-max differs from f32's, over every sample.
    Top1,
}

impl Metric {
    /// The spellings `--metric` accepts.
    pub const NAMES: &'static [&'static str] = &["max-rel", "mean-rel", "cosine", "top1"];

    /// Parses a `--metric` value.
    pub fn parse(s: &str) -> Option<Metric> {
        match s {
            "max-rel" => Some(Metric::MaxRel),
            "mean-rel" => Some(Metric::MeanRel),
            "cosine" => Some(Metric::Cosine),
            "top1" => Some(Metric::Top1),
            _ => None,
        }
    }

    /// The spelling.
    pub fn name(self) -> &'static str {
        Metric::NAMES[self as usize]
    }

    /// The error of `got` against `want` (non-finite where `want` is finite: infinite).
    /// `Top1` gives the number of rows that disagree and the number of rows, as a fraction of
    /// this one pair; [`errors`] pools them over samples.
    fn measure(self, got: &Tensor, want: &Tensor) -> (f64, f64) {
        let (x, y) = (got.to_f64_vec(), want.to_f64_vec());
        let broken = x.iter().zip(&y).any(|(a, b)| !a.is_finite() && b.is_finite());
        match self {
            Metric::MaxRel => {
                let e = if got.shape() == want.shape() { compare_values(&x, &y).relative_to_peak() } else { f64::INFINITY };
                (if broken { f64::INFINITY } else { e }, 1.0)
            }
            Metric::MeanRel => {
                if broken {
                    return (f64::INFINITY, 1.0);
                }
                let n = y.len().max(1) as f64;
                let diff: f64 = x.iter().zip(&y).map(|(a, b)| (a - b).abs()).sum::<f64>() / n;
                let scale: f64 = y.iter().map(|b| b.abs()).sum::<f64>() / n;
                (diff / scale.max(f64::MIN_POSITIVE), 1.0)
            }
            Metric::Cosine => {
                if broken {
                    return (f64::INFINITY, 1.0);
                }
                let dot: f64 = x.iter().zip(&y).map(|(a, b)| a * b).sum();
                let (nx, ny) = (x.iter().map(|a| a * a).sum::<f64>().sqrt(), y.iter().map(|b| b * b).sum::<f64>().sqrt());
                if nx == 0.0 && ny == 0.0 {
                    return (0.0, 1.0);
                }
                ((1.0 - dot / (nx * ny).max(f64::MIN_POSITIVE)).max(0.0), 1.0)
            }
            Metric::Top1 => {
                let width = *want.shape().last().unwrap_or(&1).max(&1);
                let argmax = |v: &[f64]| v.chunks(width).map(|r| r.iter().enumerate().fold((0, f64::NEG_INFINITY), |b, (i, &x)| if x > b.1 { (i, x) } else { b }).0).collect::<Vec<_>>();
                let (a, b) = (argmax(&x), argmax(&y));
                let differ = a.iter().zip(&b).filter(|(p, q)| p != q).count() as f64 + if broken { 1.0 } else { 0.0 };
                (differ, a.len().max(1) as f64)
            }
        }
    }
}

/// The error of each result on each sample (`[sample][result]`); for `Top1`, every sample's
/// entry is the pooled disagreement fraction of that result.
pub fn errors(metric: Metric, got: &[Vec<Tensor>], want: &[Vec<Tensor>]) -> Vec<Vec<f64>> {
    let per: Vec<Vec<(f64, f64)>> = got.iter().zip(want).map(|(g, w)| g.iter().zip(w).map(|(a, b)| metric.measure(a, b)).collect()).collect();
    if metric != Metric::Top1 {
        return per.iter().map(|s| s.iter().map(|e| e.0).collect()).collect();
    }
    let results = per.first().map_or(0, Vec::len);
    let pooled: Vec<f64> = (0..results).map(|r| per.iter().map(|s| s[r].0).sum::<f64>() / per.iter().map(|s| s[r].1).sum::<f64>().max(1.0)).collect();
    per.iter().map(|_| pooled.clone()).collect()
}

/// Runs a compiled form of a graph on samples: `f16c check` passes the JIT.
pub type Runner<'a> = dyn Fn(&Graph, &[Vec<Tensor>]) -> Result<Vec<Vec<Tensor>>, String> + 'a;

/// One op the policy runs in the low type, with what was measured of it.
#[derive(Clone, Debug)]
pub struct Candidate {
    /// The op (in the f32 graph after canonicalize; the mixed graphs keep its id).
    pub id: NodeId,
    /// Its MLIR name.
    pub op: &'static str,
    /// Its location.
    pub location: Location,
    /// Its error alone in the low type on f32 inputs, relative to its f32 peak (worst sample).
    pub local: f64,
    /// How much the relative error grows across it in the all-low model (worst sample).
    pub carried: f64,
    /// Floating-point operations of one run.
    pub flops: u64,
}

impl Candidate {
    /// The larger of the local and the carried error (infinite for an op that overflows).
    pub fn sensitivity(&self) -> f64 {
        self.local.max(self.carried)
    }
}

/// What the search found.
#[derive(Clone, Debug)]
pub struct Fix {
    /// Every candidate, most sensitive first.
    pub candidates: Vec<Candidate>,
    /// How many of them (the first ones) stay f32.
    pub kept: usize,
    /// The policy to write: the user's, with an `[[op]]` table per kept op.
    pub policy: Policy,
    /// Errors of the final model, `[sample][result]`.
    pub errors: Vec<Vec<f64>>,
    /// Errors of the all-low model (the user's policy as it is), `[sample][result]`.
    pub all_low_errors: Vec<Vec<f64>>,
    /// Ops computing in the low type in the final model, and ops computing in a float type.
    pub low_ops: (usize, usize),
    /// FLOPs in the low type in the final model, and all float FLOPs.
    pub low_flops: (u64, u64),
    /// FLOPs of the contractions (matmul, convolutions) left in f32 in the final model, and of
    /// every float contraction: what a mixed-precision tool is judged by.
    pub f32_contraction_flops: (u64, u64),
    /// Weight bytes of the f32 model and of the final model.
    pub weight_bytes: (usize, usize),
    /// Runs of a mixed model made (each on every sample), besides the f32 model's run and the
    /// two instrumented interpreter runs per sample.
    pub runs: usize,
    /// Wall time of the whole search.
    pub time: Duration,
    /// Of it: the instrumented runs and the sensitivity (steps 1 and 2).
    pub sensitivity_time: Duration,
    /// Of it: the probes' precision passes, and their runs (compile and run).
    pub probe_times: (Duration, Duration),
}

/// Why there is no policy to write.
#[derive(Debug, thiserror::Error)]
pub enum FixError {
    /// A bad request (tolerance, samples).
    #[error("{0}")]
    Usage(String),
    /// Even with every candidate in f32 the model misses the tolerance.
    #[error("no precision assignment meets the tolerance {tolerance:e} ({metric}): with every op in f32 the error is still {worst:.3e}; nothing was written")]
    Unreachable {
        /// The tolerance asked for.
        tolerance: f64,
        /// The metric.
        metric: &'static str,
        /// The error with every candidate in f32.
        worst: f64,
    },
    /// The passes or a run failed.
    #[error("{0}")]
    Failed(String),
}

/// Rough float operation counts of one op: multiply-adds count two.
pub fn flops(g: &Graph, id: NodeId) -> u64 {
    let ty = |o: NodeId| g.tensor_ty(o);
    let Some(out) = ty(id) else { return 0 };
    let n = out.num_elements() as u64;
    let ops = g.operands(id);
    let weight = |k: usize| ops.get(k).and_then(|&o| ty(o)).map(|t| t.shape.clone()).unwrap_or_default();
    match g.op(id) {
        // Weights OHWI: each output element sums kh·kw·cin products.
        Op::Conv2d(_) => 2 * n * weight(1).iter().skip(1).product::<usize>() as u64,
        Op::Conv3d(_) => 2 * n * weight(1).iter().skip(1).product::<usize>() as u64,
        // Weights HWCM: each output element sums kh·kw products.
        Op::DepthwiseConv2d(_) => 2 * n * weight(1).iter().take(2).product::<usize>() as u64,
        // Each input element is scattered through kh·kw·cout products.
        Op::TransposeConv2d(_) => 2 * ty(ops[0]).map_or(0, |t| t.num_elements() as u64) * weight(1).iter().take(3).product::<usize>() as u64,
        // [B, M, K] × [B, K, N].
        Op::MatMul => 2 * n * ty(ops[0]).and_then(|t| t.shape.last().copied()).unwrap_or(1) as u64,
        _ => n,
    }
}

/// The precision passes alone (assign-precision with `policy`, insert-casts) on a copy of the
/// canonicalized f32 graph `before`.
pub fn mixed_graph(before: &Graph, policy: &Policy, options: &driver::Options) -> Result<Graph, Diagnostics> {
    let mut module = Module { functions: vec![before.clone()] };
    let mut pm = PassManager::new();
    let assign = AssignPrecision::configured(policy.clone(), options.keep_f32.as_deref(), options.io_low, options.strict).map_err(|e| diags(e.to_string()))?;
    pm.add(Box::new(assign));
    pm.add(registry::create("insert-casts", if options.f16_accumulate { "accumulate=f16" } else { "" }).map_err(|e| diags(e.to_string()))?);
    match pm.run(&mut module, &mut std::io::sink()) {
        Ok(_) => Ok(module.functions.remove(0)),
        Err(PassError::Diagnostics(d)) => Err(d),
        Err(e) => Err(diags(e.to_string())),
    }
}

fn diags(m: String) -> Diagnostics {
    Diagnostics::single(Diagnostic::error(Location::unknown(), m))
}

/// The low type an op of a mixed graph computes in, if it computes in one.
fn low_dtype(g: &Graph, id: NodeId) -> Option<DType> {
    compute_dtype(g, id).filter(|d| d.is_low_float())
}

/// Searches for the fewest ops to keep in f32 (see the module comment). `before` is the f32
/// graph after canonicalize (the driver's `prepare_beside_f32`), `options` the compile options
/// (their policy is the starting point), `samples` the input sets (f32 tensors, one per
/// argument), `run` runs a mixed graph on every sample.
pub fn fix(before: &Graph, options: &driver::Options, samples: &[Vec<Tensor>], metric: Metric, tolerance: f64, run: &Runner<'_>) -> Result<Fix, FixError> {
    let t0 = Instant::now();
    if !tolerance.is_finite() || tolerance <= 0.0 {
        return Err(FixError::Usage(format!("--tolerance={tolerance}: the tolerance of --fix must be a finite number > 0")));
    }
    let (candidates, base) = sensitivity(before, options, samples)?;
    let sensitivity_time = t0.elapsed();
    let failed = |d: Diagnostics| FixError::Failed(d.to_string());
    // What the mixed models are held to: the f32 model run by the same runner (a contraction's
    // summation order may differ between the interpreter and compiled code).
    let reference_out = run(before, samples).map_err(FixError::Failed)?;

    // 3. Rounds of bisection over the sensitivity order (see the module comment).
    let runs = std::cell::Cell::new(0usize);
    let (passes_time, runs_time) = (std::cell::Cell::new(Duration::ZERO), std::cell::Cell::new(Duration::ZERO));
    let policy_for = |set: &[usize]| policy_keeping(&base, set.iter().map(|&i| &candidates[i]), metric, tolerance);
    let probe = |set: &[usize]| -> Result<Probe, FixError> {
        let t = Instant::now();
        let g = mixed_graph(before, &policy_for(set), options).map_err(failed)?;
        passes_time.set(passes_time.get() + t.elapsed());
        let t = Instant::now();
        let got = run(&g, samples).map_err(FixError::Failed)?;
        runs_time.set(runs_time.get() + t.elapsed());
        runs.set(runs.get() + 1);
        let errors = errors(metric, &got, &reference_out);
        let ok = errors.iter().flatten().all(|&x| x <= tolerance);
        Ok(Probe { ok, errors, graph: g })
    };
    let n = candidates.len();
    let all: Vec<usize> = (0..n).collect();
    let low_probe = probe(&[])?;
    let all_low_errors = low_probe.errors.clone();
    let (kept, best) = if low_probe.ok {
        (Vec::new(), low_probe)
    } else {
        let all_f32 = probe(&all)?;
        if !all_f32.ok {
            let worst = all_f32.errors.iter().flatten().fold(0.0f64, |m, &x| m.max(x));
            return Err(FixError::Unreachable { tolerance, metric: metric.name(), worst });
        }
        // `required` are the ops found necessary so far, `pool` the rest still in play, most
        // sensitive first. Invariant: required ∪ pool passes, required alone fails.
        let (mut required, mut pool, mut best) = (Vec::new(), all, all_f32);
        let budget = 4 * (usize::BITS - n.leading_zeros()) as usize + 4;
        loop {
            // The shortest prefix of the pool that passes beside `required`: lo fails, hi passes.
            let (mut lo, mut hi) = (0usize, pool.len());
            while hi - lo > 1 && runs.get() < budget {
                let mid = lo + (hi - lo) / 2;
                let set: Vec<usize> = required.iter().chain(&pool[..mid]).copied().collect();
                let p = probe(&set)?;
                if p.ok {
                    hi = mid;
                    best = p;
                } else {
                    lo = mid;
                }
            }
            if hi - lo > 1 {
                // Out of runs: keep the passing prefix as it is.
                required.extend_from_slice(&pool[..hi]);
                break;
            }
            // pool[hi - 1] is what made the prefix pass: it stays f32; the ops after the
            // prefix are not needed beside it.
            required.push(pool[hi - 1]);
            pool.truncate(hi - 1);
            if pool.is_empty() || runs.get() >= budget {
                required.extend_from_slice(&pool);
                break;
            }
            let p = probe(&required)?;
            if p.ok {
                best = p;
                break;
            }
        }
        (required, best)
    };
    // The kept ops first, then the others, each part most sensitive first.
    let mut order = kept.clone();
    order.sort_unstable();
    order.extend((0..n).filter(|i| !kept.contains(i)));
    let mut slots: Vec<Option<Candidate>> = candidates.into_iter().map(Some).collect();
    let candidates: Vec<Candidate> = order.iter().map(|&i| slots[i].take().expect("a permutation")).collect();
    let kept = kept.len();
    let (errors, final_graph) = (best.errors, best.graph);
    let policy = policy_keeping(&base, &candidates[..kept], metric, tolerance);
    // The ops low in the final model, and their FLOPs.
    let float_ops: Vec<NodeId> = final_graph
        .node_ids()
        .filter(|&id| before.contains(id) && !matches!(final_graph.op(id), Op::Arg(_) | Op::Const(_) | Op::ConstShape(_) | Op::Cast))
        .filter(|&id| compute_dtype(&final_graph, id).is_some_and(DType::is_float))
        .collect();
    let low: Vec<NodeId> = float_ops.iter().copied().filter(|&id| low_dtype(&final_graph, id).is_some()).collect();
    let fl = |ids: &[NodeId]| ids.iter().map(|&id| flops(before, id)).sum::<u64>();
    let contractions: Vec<NodeId> = float_ops.iter().copied().filter(|&id| before.op(id).is_contraction()).collect();
    let f32_contractions: Vec<NodeId> = contractions.iter().copied().filter(|&id| low_dtype(&final_graph, id).is_none()).collect();
    let weights = |g: &Graph| g.node_ids().map(|id| crate::report::const_bytes(g, id)).sum::<usize>();
    Ok(Fix {
        low_ops: (low.len(), float_ops.len()),
        low_flops: (fl(&low), fl(&float_ops)),
        f32_contraction_flops: (fl(&f32_contractions), fl(&contractions)),
        weight_bytes: (weights(before), weights(&final_graph)),
        candidates,
        kept,
        policy,
        errors,
        all_low_errors,
        runs: runs.get(),
        time: t0.elapsed(),
        sensitivity_time,
        probe_times: (passes_time.get(), runs_time.get()),
    })
}

/// Steps 1 and 2 of the search (see the module comment): every op the policy runs in the low
/// type, with its local and carried error over `samples`, most sensitive first, and the policy
/// the options name. `f16c compile --emit=report|dot --input` shows the same numbers.
pub fn sensitivity(before: &Graph, options: &driver::Options, samples: &[Vec<Tensor>]) -> Result<(Vec<Candidate>, Policy), FixError> {
    if samples.is_empty() {
        return Err(FixError::Usage("the sensitivity needs at least one sample (--input, --samples)".into()));
    }
    let want: Vec<TensorType> = before.inputs().iter().filter_map(|&a| before.tensor_ty(a).cloned()).collect();
    for (k, s) in samples.iter().enumerate() {
        f16c_core::tensor::check_inputs(&before.name, &want, s).map_err(|e| FixError::Usage(format!("sample #{k}: {e}")))?;
    }
    let base = Policy::from_spec(&options.policy, options.precision, options.target).map_err(|e| FixError::Usage(e.to_string()))?;
    if base.low.is_none() {
        return Err(FixError::Usage("the sensitivity needs a low precision (--precision=fp16 or bf16) and a policy above O0".into()));
    }
    let failed = |d: Diagnostics| FixError::Failed(d.to_string());
    let all_low = mixed_graph(before, &base, options).map_err(failed)?;

    // 1. The instrumented runs: f32 values of every op, and the all-low model's.
    let mut recorded: Vec<HashMap<NodeId, Tensor>> = Vec::with_capacity(samples.len());
    let mut carried: HashMap<NodeId, f64> = HashMap::new();
    for s in samples {
        // The two instrumented runs are independent: one thread each.
        let mixed_inputs: Vec<Tensor> = all_low.inputs().iter().zip(s).map(|(&a, t)| all_low.tensor_ty(a).map_or(t.clone(), |ty| cast(t, ty.dtype))).collect();
        let observe = |g: &Graph, inputs: &[Tensor], what: &str| -> Result<HashMap<NodeId, Tensor>, FixError> {
            let mut values = HashMap::new();
            reference::run_observed(g, inputs, |id, t| {
                if before.contains(id) {
                    values.insert(id, t.clone());
                }
            })
            .map_err(|e| FixError::Failed(format!("the {what} run: {e}")))?;
            Ok(values)
        };
        let (values, mixed) = std::thread::scope(|scope| {
            let low = scope.spawn(|| observe(&all_low, &mixed_inputs, "all-low"));
            let f32_values = observe(before, s, "f32");
            (f32_values, low.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
        });
        let (values, mixed) = (values?, mixed?);
        let rel: HashMap<NodeId, f64> = mixed
            .iter()
            .filter_map(|(id, t)| values.get(id).filter(|r| r.shape() == t.shape() && r.dtype().is_float()).map(|r| (*id, Metric::MaxRel.measure(t, r).0)))
            .collect();
        drop(mixed);
        for id in all_low.node_ids() {
            let Some(&e) = rel.get(&id) else { continue };
            let given = all_low.operands(id).iter().filter_map(|o| rel.get(o)).fold(0.0f64, |m, &x| m.max(x));
            let grown = if e.is_infinite() && given.is_infinite() { 0.0 } else { (e - given).max(0.0) };
            let c = carried.entry(id).or_insert(0.0);
            *c = c.max(grown);
        }
        recorded.push(values);
    }

    // 2. Sensitivity of every op the policy runs low.
    let mut candidates = Vec::new();
    for id in all_low.topo_order().expect("verified graphs are acyclic") {
        let Some(low) = low_dtype(&all_low, id) else { continue };
        if !before.contains(id) || matches!(before.op(id), Op::Arg(_) | Op::Const(_) | Op::ConstShape(_) | Op::Cast) {
            continue;
        }
        let location = before.location(id);
        if OpOverride::key(before.op(id).mlir_name(), &location, DType::F32, None).is_none() {
            continue; // no location: a policy file cannot name it
        }
        let local = recorded.iter().map(|values| local_error(before, id, low, values)).fold(0.0f64, f64::max);
        candidates.push(Candidate { id, op: before.op(id).mlir_name(), location, local, carried: carried.get(&id).copied().unwrap_or(0.0), flops: flops(before, id) });
    }
    // Most sensitive first; ties (exact ops) keep graph order.
    candidates.sort_by(|a, b| b.sensitivity().total_cmp(&a.sensitivity()));
    Ok((candidates, base))
}

/// One confirming run: whether it met the tolerance, its errors, the graph it ran.
struct Probe {
    ok: bool,
    errors: Vec<Vec<f64>>,
    graph: Graph,
}

/// `base` with an `[[op]]` table keeping each of `kept` in f32.
fn policy_keeping<'c>(base: &Policy, kept: impl IntoIterator<Item = &'c Candidate>, metric: Metric, tolerance: f64) -> Policy {
    let mut p = base.clone();
    p.ops.extend(kept.into_iter().map(|c| {
        let why = if c.local.is_infinite() {
            "goes non-finite in the low type where f32 is finite".to_string()
        } else {
            format!("kept by f16c check --fix: local error {:.2e}, carried error {:.2e} ({} {tolerance:e})", c.local, c.carried, metric.name())
        };
        OpOverride::key(c.op, &c.location, DType::F32, Some(why)).expect("candidates have a location key")
    }));
    p
}

/// The error op `id` of `g` makes alone in `low`: its recorded f32 operands rounded to `low`
/// (float ones; integers and shapes as they are), the op evaluated with a `low` result, against
/// its recorded f32 result, relative to that result's peak; infinite when it goes non-finite
/// where f32 is finite. Ops whose operands were not all recorded count as exact (0).
fn local_error(g: &Graph, id: NodeId, low: DType, values: &HashMap<NodeId, Tensor>) -> f64 {
    let Some(want) = values.get(&id) else { return 0.0 };
    let mut operands = Vec::new();
    for o in g.operands(id) {
        let t = match g.op(o) {
            Op::ConstShape(s) => {
                operands.push(Value::Shape(s.clone()));
                continue;
            }
            Op::Const(t) => t,
            _ => match values.get(&o) {
                Some(t) => t,
                None => return 0.0,
            },
        };
        operands.push(Value::Tensor(if t.dtype() == DType::F32 { cast(t, low) } else { t.clone() }));
    }
    let ty = match g.ty(id) {
        ValueType::Tensor(t) if t.dtype == DType::F32 => ValueType::Tensor(TensorType::new(low, t.shape.clone())),
        other => other.clone(),
    };
    let refs: Vec<&Value> = operands.iter().collect();
    match eval(g.op(id), &refs, &ty) {
        Ok(Value::Tensor(t)) => Metric::MaxRel.measure(&cast(&t, DType::F32), want).0,
        _ => 0.0,
    }
}
