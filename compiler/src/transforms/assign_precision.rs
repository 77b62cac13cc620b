//! `assign-precision`: decide, per op, whether it computes in the low type (fp16 or bf16) or in
//! f32.
//!
//! The pass only decides; it writes the decision on each op as `f16c.assigned = "f16"` and the
//! rule that made it as `f16c.rule = "low-list"`, and `insert-casts` then retypes the graph.
//! Keeping the two apart makes each decision visible (and testable) in the MLIR between them.
//!
//! Candidates are the ops that compute in f32 (f64 ops, integer ops and the model's own casts
//! are never touched) and the function arguments. They are visited in topological order; the
//! first rule that applies wins:
//!
//! | rule | when | precision |
//! |---|---|---|
//! | `io` | a function argument | f32, or low with `io-types=low` |
//! | `override` | the op has `f16c.precision = "f32" \| "f16" \| "bf16"` | that type |
//! | `policy-op` | an `[[op]]` table of the policy file names the op (its MLIR name and `LINE:COL` or location name) | that type |
//! | `keep-f32` | `keep-f32=<regex>` matches the op's location name (or `file:line:col` when it has none) | f32 |
//! | `low-list` | the op is in the policy's low list | low |
//! | `follow` / `follow-widest` | the op is in the follow list: it takes its non-constant inputs' type, and the widest one when they differ (f16 with bf16 gives f32) | that type |
//! | `fp32-list` / `unlisted` | the op is in the fp32 list, or in no list | f32 |
//!
//! A low decision is then checked, and turned into f32 with the rule that says why:
//! `target` (the target cannot run the type: see [`crate::target::TargetInfo::low_types`]; with
//! `strict=true` this is an error instead), `weight-range` (a constant operand would overflow
//! the low type: weights are never clamped silently), `calibration` (the op's result or one of
//! its data inputs exceeded the policy's safe range on calibration data, recorded as
//! `f16c.max_abs` by `f16c ... --calibrate x.npy`; the pass consumes those attributes), and,
//! except at `O3`, `weight-gain` (a contraction with constant weights whose gain, the largest
//! sum of |weight| over one output plus |bias|, exceeds the safe range: such a layer turns
//! unit-scale inputs into values near the fp16 limit, so it stays f32 even without
//! calibration data).
//!
//! Options: `precision=fp16|bf16|fp32`, `policy=O0|O1|O2|O3|<file.toml>`, `target=<name>`,
//! `keep-f32=<regex>`, `io-types=f32|low`, `strict=<bool>`, `safe-range=<number>` (overrides
//! the policy's). `O0` and `precision=fp32` leave the graph as it is.
//!
//! Pre: a verified graph. Post: the same graph, with decisions in attributes.
//!
//! ```mlir
//! %0 = tosa.matmul %a, %b, %zp, %zp : (...) -> tensor<1x2x4xf32>
//! %1 = tosa.exp %0 : (tensor<1x2x4xf32>) -> tensor<1x2x4xf32>
//! // becomes
//! %0 = tosa.matmul %a, %b, %zp, %zp {f16c.assigned = "f16", f16c.rule = "low-list"} : ...
//! %1 = tosa.exp %0 {f16c.assigned = "f32", f16c.rule = "fp32-list"} : ...
//! ```

use super::{attrs, compute_dtype, data_operands, typed_operands, widest};
use crate::pass::registry::{OptionKind, PassInfo, PassOption};
use crate::pass::{Pass, PassError, PassOptions, Statistic};
use crate::policy::{Category, Level, Policy, Precision, Target};
use f16c_dialect::semantics::cast;
use f16c_dialect::{DType, Data, Diagnostic, Diagnostics, Graph, Module, NodeId, Op, Tensor};
use std::collections::HashMap;

/// Registry entry.
pub const INFO: PassInfo = PassInfo {
    name: "assign-precision",
    type_name: "AssignPrecision",
    summary: "Decide per op: fp16/bf16 or f32 (policy lists, overrides, target legality, weight range, calibration)",
    options: &[
        PassOption { name: "precision", kind: OptionKind::Enum(Precision::NAMES), default: "fp16", summary: "The low type" },
        PassOption { name: "policy", kind: OptionKind::Text, default: "O1", summary: "O0|O1|O2|O3 or a TOML policy file" },
        PassOption { name: "target", kind: OptionKind::Enum(Target::NAMES), default: "reference", summary: "Whose legality applies" },
        PassOption { name: "keep-f32", kind: OptionKind::Text, default: "", summary: "Regex: ops whose location name matches stay f32" },
        PassOption { name: "io-types", kind: OptionKind::Enum(&["f32", "low"]), default: "f32", summary: "Type of function arguments and results" },
        PassOption { name: "strict", kind: OptionKind::Bool, default: "false", summary: "Error instead of f32 when the target cannot run the type" },
        PassOption { name: "safe-range", kind: OptionKind::Float, default: "0", summary: "Calibration threshold (0: the policy's)" },
    ],
    create: |o| Ok(Box::new(AssignPrecision::new(o)?)),
};

/// The pass.
pub struct AssignPrecision {
    policy: Policy,
    keep_f32: Option<regex::Regex>,
    io_low: bool,
    strict: bool,
    counts: HashMap<&'static str, u64>,
}

/// How an op's precision was decided, as written in `f16c.rule`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Rule {
    /// A function argument.
    Io,
    /// `f16c.precision` on the op.
    Override,
    /// `--keep-f32` matched.
    KeepF32,
    /// An `[[op]]` table of the policy file names the op.
    PolicyOp,
    /// In the low list.
    LowList,
    /// In the follow list, all inputs one type.
    Follow,
    /// In the follow list, inputs of different types: the widest.
    FollowWidest,
    /// In the fp32 list.
    Fp32List,
    /// In no list.
    Unlisted,
    /// The target cannot run the low type.
    Target,
    /// A constant operand overflows the low type.
    WeightRange,
    /// Calibration data exceeded the safe range.
    Calibration,
    /// A contraction's constant weights amplify unit-scale inputs beyond the safe range.
    WeightGain,
}

impl Rule {
    /// The spelling in `f16c.rule` and reports.
    pub fn name(self) -> &'static str {
        match self {
            Rule::Io => "io",
            Rule::Override => "override",
            Rule::KeepF32 => "keep-f32",
            Rule::PolicyOp => "policy-op",
            Rule::LowList => "low-list",
            Rule::Follow => "follow",
            Rule::FollowWidest => "follow-widest",
            Rule::Fp32List => "fp32-list",
            Rule::Unlisted => "unlisted",
            Rule::Target => "target",
            Rule::WeightRange => "weight-range",
            Rule::Calibration => "calibration",
            Rule::WeightGain => "weight-gain",
        }
    }
}

impl AssignPrecision {
    /// Makes the pass from its options (reads the policy file, compiles the regex).
    pub fn new(o: &PassOptions) -> crate::pass::Result<Self> {
        let precision = Precision::parse(o.string("precision")).expect("checked by the option kind");
        let target = Target::parse(o.string("target")).expect("checked by the option kind");
        let mut policy = Policy::from_spec(o.string("policy"), precision, target).map_err(|e| PassError::Usage(e.to_string()))?;
        if o.float("safe-range") > 0.0 {
            policy.safe_range = o.float("safe-range");
        }
        let keep = o.string("keep-f32");
        let keep_f32 = if keep.is_empty() {
            None
        } else {
            Some(regex::Regex::new(keep).map_err(|e| PassError::Usage(format!("keep-f32: bad regex: {e}")))?)
        };
        Ok(AssignPrecision { policy, keep_f32, io_low: o.string("io-types") == "low", strict: o.flag("strict"), counts: HashMap::new() })
    }

    /// Makes the pass from a policy directly (the host API).
    pub fn with_policy(policy: Policy) -> Self {
        AssignPrecision { policy, keep_f32: None, io_low: false, strict: false, counts: HashMap::new() }
    }

    /// Makes the pass from a policy and the other options (`f16c check --fix` probes policies
    /// it builds in memory).
    pub fn configured(policy: Policy, keep_f32: Option<&str>, io_low: bool, strict: bool) -> crate::pass::Result<Self> {
        let keep_f32 = match keep_f32.filter(|k| !k.is_empty()) {
            Some(k) => Some(regex::Regex::new(k).map_err(|e| PassError::Usage(format!("keep-f32: bad regex: {e}")))?),
            None => None,
        };
        Ok(AssignPrecision { policy, keep_f32, io_low, strict, counts: HashMap::new() })
    }

    fn function(&mut self, g: &mut Graph, diags: &mut Vec<Diagnostic>, errors: &mut Vec<Diagnostic>) {
        let Some(low) = self.policy.low else {
            // Nothing is lowered (`O0`, `precision=fp32`), but a bad request is still an error.
            for id in g.node_ids() {
                check_unused_request(g, id, diags, errors);
            }
            return;
        };
        let order = g.topo_order().expect("verified graphs are acyclic");
        // Calibration ranges are read for an op and for its inputs, so collect them first.
        let ranges: HashMap<NodeId, f64> = order.iter().filter_map(|&n| Some((n, g.node(n).float_attr(attrs::MAX_ABS)?))).collect();
        let mut decided: HashMap<NodeId, DType> = HashMap::new();
        let mut downgraded = 0usize;
        let mut weight_ok: HashMap<(NodeId, DType), bool> = HashMap::new();
        for id in order {
            let Some((dt, rule)) = self.decide(g, id, low, &ranges, &decided, &mut weight_ok, &mut downgraded, errors) else {
                check_unused_request(g, id, diags, errors);
                g.node_mut(id).remove_attr(attrs::MAX_ABS);
                continue;
            };
            decided.insert(id, dt);
            *self.counts.entry(rule.name()).or_default() += 1;
            let node = g.node_mut(id);
            node.remove_attr(attrs::MAX_ABS);
            node.set_attr(attrs::ASSIGNED, format!("\"{dt}\""));
            node.set_attr(attrs::RULE, format!("\"{}\"", rule.name()));
        }
        if downgraded > 0 {
            diags.push(Diagnostic::warning(
                g.location.clone(),
                format!(
                    "{low} is not supported on {}: {downgraded} op(s) of '@{}' stay f32 (use --precision=fp16, or a target that has {low})",
                    self.policy.target, g.name
                ),
            ));
        }
    }

    /// The decision for one node; `None` if it is not a candidate.
    #[allow(clippy::too_many_arguments, reason = "the pass state the recursion threads through")]
    fn decide(
        &self,
        g: &Graph,
        id: NodeId,
        low: DType,
        ranges: &HashMap<NodeId, f64>,
        decided: &HashMap<NodeId, DType>,
        weight_ok: &mut HashMap<(NodeId, DType), bool>,
        downgraded: &mut usize,
        errors: &mut Vec<Diagnostic>,
    ) -> Option<(DType, Rule)> {
        let op = g.op(id);
        if let Op::Arg(_) = op {
            if g.tensor_ty(id)?.dtype != DType::F32 {
                return None;
            }
            let want = if self.io_low { low } else { DType::F32 };
            return Some(self.legal(g, id, want, Rule::Io, downgraded, errors));
        }
        if !computes_in_f32(g, id) {
            return None;
        }
        // Explicit requests first: they are final (except for target legality).
        match requested(g, id) {
            Some(Ok(want)) => return Some(self.legal(g, id, want, Rule::Override, downgraded, errors)),
            Some(Err(e)) => {
                errors.push(e);
                return Some((DType::F32, Rule::Override));
            }
            None => {}
        }
        if let Some(o) = self.policy.op_override(op.mlir_name(), &g.location(id)) {
            let want = o.dtype().expect("checked when the policy was read");
            return Some(self.legal(g, id, want, Rule::PolicyOp, downgraded, errors));
        }
        if let Some(re) = &self.keep_f32 {
            let loc = g.location(id);
            let label = loc.name.clone().unwrap_or_else(|| loc.to_string());
            if re.is_match(&label) {
                return Some((DType::F32, Rule::KeepF32));
            }
        }
        let ops = g.operands(id);
        // A multiply canonicalize wrote for a `pow` by 2 or 3 follows the policy's `pow`.
        let name = if g.node(id).attr(super::canonicalize::POW_ATTR).is_some() { "pow" } else { op.short_name() };
        let (want, rule) = match self.policy.category(name) {
            Some(Category::Low) => (low, Rule::LowList),
            Some(Category::Follow) => {
                let types: Vec<DType> = data_operands(g, id)
                    .into_iter()
                    .map(|p| ops[p])
                    .filter(|o| !g.op(*o).is_constant())
                    .map(|o| decided.get(&o).copied().unwrap_or_else(|| g.tensor_ty(o).expect("typed operand").dtype))
                    .collect();
                match types.split_first() {
                    None => (DType::F32, Rule::Follow),
                    Some((first, rest)) => {
                        let w = rest.iter().fold(*first, |a, b| widest(a, *b));
                        (w, if rest.iter().all(|t| t == first) { Rule::Follow } else { Rule::FollowWidest })
                    }
                }
            }
            Some(Category::Fp32) => (DType::F32, Rule::Fp32List),
            None => (DType::F32, Rule::Unlisted),
        };
        if want == DType::F32 {
            return Some((want, rule));
        }
        let (want, rule) = self.legal(g, id, want, rule, downgraded, errors);
        if want == DType::F32 {
            return Some((want, rule));
        }
        // Range safety: weights that would overflow, activations seen too large.
        for p in typed_operands(g, id) {
            let o = ops[p];
            if let Op::Const(t) = g.op(o) {
                let ok = *weight_ok.entry((o, want)).or_insert_with(|| converts_finite(t, want));
                if !ok {
                    return Some((DType::F32, Rule::WeightRange));
                }
            }
        }
        let too_big = |n: NodeId| ranges.get(&n).is_some_and(|&m| m > self.policy.safe_range);
        if too_big(id) || data_operands(g, id).into_iter().any(|p| too_big(ops[p])) {
            return Some((DType::F32, Rule::Calibration));
        }
        if self.policy.level != Level::O3 && weight_gain(g, id).is_some_and(|gain| gain > self.policy.safe_range) {
            return Some((DType::F32, Rule::WeightGain));
        }
        Some((want, rule))
    }

    /// Target legality of a low type: downgrade to f32 (or an error with `strict`).
    fn legal(&self, g: &Graph, id: NodeId, want: DType, rule: Rule, downgraded: &mut usize, errors: &mut Vec<Diagnostic>) -> (DType, Rule) {
        let target = self.policy.target;
        if target.supports(want) {
            return (want, rule);
        }
        if self.strict {
            errors.push(Diagnostic::error(
                g.location(id),
                format!("'{}' op would run in {want}, which {target} does not support (strict: no fallback to f32)", g.op(id).mlir_name()),
            ));
        }
        *downgraded += 1;
        (DType::F32, Rule::Target)
    }
}

impl Pass for AssignPrecision {
    fn info(&self) -> &'static PassInfo {
        &INFO
    }

    fn run(&mut self, module: &mut Module, diagnostics: &mut Vec<Diagnostic>) -> Result<bool, Diagnostics> {
        self.counts.clear();
        let mut errors = Vec::new();
        for g in &mut module.functions {
            self.function(g, diagnostics, &mut errors);
        }
        if errors.is_empty() { Ok(!self.counts.is_empty()) } else { Err(Diagnostics(errors)) }
    }

    fn statistics(&self) -> Vec<Statistic> {
        const RULES: [(Rule, &str); 12] = [
            (Rule::Io, "arguments decided by io-types"),
            (Rule::Override, "ops with an f16c.precision override"),
            (Rule::KeepF32, "ops kept f32 by keep-f32"),
            (Rule::LowList, "ops lowered by the low list"),
            (Rule::Follow, "ops following their inputs"),
            (Rule::FollowWidest, "ops following the widest of mixed inputs"),
            (Rule::Fp32List, "ops kept f32 by the fp32 list"),
            (Rule::Unlisted, "ops kept f32 because no list has them"),
            (Rule::Target, "ops kept f32 because the target lacks the type"),
            (Rule::WeightRange, "ops kept f32 because a weight overflows the low type"),
            (Rule::Calibration, "ops kept f32 by calibration ranges"),
            (Rule::WeightGain, "contractions kept f32 because their weights amplify past the safe range"),
        ];
        RULES
            .iter()
            .map(|(r, d)| Statistic { name: r.name(), value: self.counts.get(r.name()).copied().unwrap_or(0), description: d })
            .collect()
    }
}

/// Whether every finite element of `t` stays finite in `to`: rounding is monotone in the
/// magnitude, so it is enough that the largest finite magnitude does.
fn converts_finite(t: &Tensor, to: DType) -> bool {
    f16c_core::memo::number(t, f16c_core::memo::what(&format!("converts finite to {to:?}"), &[]), || converts_finite_now(t, to) as u8 as f64) != 0.0
}

fn converts_finite_now(t: &Tensor, to: DType) -> bool {
    let peak = match t.data() {
        // On the magnitude bits (ordered as the magnitudes), so that the loop is a vector one.
        Data::F32(v) => f32::from_bits(v.iter().map(|x| x.to_bits() & 0x7fff_ffff).fold(0, |m, b| if b < 0x7f80_0000 { m.max(b) } else { m })) as f64,
        _ => t.to_f64_vec().into_iter().filter(|x| x.is_finite()).fold(0.0f64, |m, x| m.max(x.abs())),
    };
    let peak = Tensor::new(vec![1], Data::F64(vec![peak])).expect("one element");
    let converted = cast(&cast(&peak, t.dtype()), to);
    converted.to_f64_vec()[0].is_finite()
}

/// True for the ops whose precision the pass decides (besides the arguments): those that
/// compute in f32, other than constants and the model's own casts.
fn computes_in_f32(g: &Graph, id: NodeId) -> bool {
    !matches!(g.op(id), Op::Arg(_) | Op::Const(_) | Op::ConstShape(_) | Op::Cast) && compute_dtype(g, id) == Some(DType::F32)
}

/// The precision an op asks for with `f16c.precision`: `None` without the attribute, an error
/// for a value other than "f32", "f16", "bf16".
fn requested(g: &Graph, id: NodeId) -> Option<Result<DType, Diagnostic>> {
    let text = g.node(id).attr(attrs::PRECISION)?;
    Some(match g.node(id).string_attr(attrs::PRECISION) {
        Some("f32") => Ok(DType::F32),
        Some("f16") => Ok(DType::F16),
        Some("bf16") => Ok(DType::BF16),
        _ => Err(Diagnostic::error(
            g.location(id),
            format!("'{}' op: f16c.precision = {text} is not one of \"f32\", \"f16\", \"bf16\"", g.op(id).mlir_name()),
        )),
    })
}

/// A request on an op the pass does not decide: an error if malformed, else a warning that it
/// has no effect (for ops that do not compute in f32).
fn check_unused_request(g: &Graph, id: NodeId, diags: &mut Vec<Diagnostic>, errors: &mut Vec<Diagnostic>) {
    match requested(g, id) {
        Some(Err(e)) => errors.push(e),
        Some(Ok(_)) if !computes_in_f32(g, id) => diags.push(Diagnostic::warning(
            g.location(id),
            format!("'{}' op: f16c.precision has no effect on an op that does not compute in f32", g.op(id).mlir_name()),
        )),
        _ => {}
    }
}

/// The gain of a contraction's constant weights: the largest sum of |weight| that feeds one
/// output element, plus the largest |bias|. `None` when the weights are not constant.
pub fn weight_gain(g: &Graph, id: NodeId) -> Option<f64> {
    let ops = g.operands(id);
    let constant = |p: usize| match g.op(ops[p]) {
        Op::Const(t) => Some((t.shape().to_vec(), t)),
        _ => None,
    };
    let bias = || constant(2).map_or(0.0, |(_, b)| b.to_f64_vec().iter().fold(0.0f64, |m, v| m.max(v.abs())));
    // Sums |w| over the flattened positions `inner` for each output index of `outer` x `rest`
    // (an estimate: with `rest` = 1, in eight interleaved partial sums).
    fn sums<T: Copy + Into<f64>>(w: &[T], outer: usize, inner: usize, rest: usize) -> f64 {
        let (mut best, mut s) = (0.0f64, vec![0.0f64; rest]);
        if rest == 1 {
            for o in 0..outer {
                let mut lanes = [0.0f64; 8];
                let row = &w[o * inner..(o + 1) * inner];
                let (whole, tail) = row.as_chunks::<8>();
                for c in whole {
                    for (l, &v) in lanes.iter_mut().zip(c) {
                        *l += v.into().abs();
                    }
                }
                let sum = lanes.iter().sum::<f64>() + tail.iter().map(|&v| v.into().abs()).sum::<f64>();
                best = best.max(sum);
            }
            return best;
        }
        for o in 0..outer {
            s.fill(0.0);
            for i in 0..inner {
                let row = &w[(o * inner + i) * rest..(o * inner + i + 1) * rest];
                for (s, &v) in s.iter_mut().zip(row) {
                    *s += v.into().abs();
                }
            }
            best = s.iter().fold(best, |m, &x| m.max(x));
        }
        best
    }
    let max_sum = |w: &Tensor, outer: usize, inner: usize, rest: usize| -> f64 {
        let what = f16c_core::memo::what("largest sum of |w|", &[outer as u64, inner as u64, rest as u64]);
        f16c_core::memo::number(w, what, || match w.data() {
            Data::F32(v) => sums(v, outer, inner, rest),
            _ => sums(&w.to_f64_vec(), outer, inner, rest),
        })
    };
    match g.op(id) {
        Op::MatMul => {
            if let Some((s, w)) = constant(1) {
                // [N, C, W]: one output sums over C.
                Some(max_sum(w, s[0], s[1], s[2]))
            } else {
                let (s, w) = constant(0)?;
                // [N, H, C]: one output sums over C.
                Some(max_sum(w, s[0] * s[1], s[2], 1))
            }
        }
        Op::Conv2d(_) | Op::TransposeConv2d(_) => {
            let (s, w) = constant(1)?;
            Some(max_sum(w, s[0], s[1] * s[2] * s[3], 1) + bias())
        }
        Op::Conv3d(_) => {
            let (s, w) = constant(1)?;
            Some(max_sum(w, s[0], s[1] * s[2] * s[3] * s[4], 1) + bias())
        }
        Op::DepthwiseConv2d(_) => {
            let (s, w) = constant(1)?;
            Some(max_sum(w, 1, s[0] * s[1], s[2] * s[3]) + bias())
        }
        _ => None,
    }
}
