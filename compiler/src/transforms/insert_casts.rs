//! `insert-casts`: apply the decisions of `assign-precision` with as few casts as possible.
//!
//! 1. **Retype**: every op with `f16c.assigned` gets that element type (the attribute is
//!    consumed); a low-precision matmul gets `f16c.acc_type = f32` (convolutions keep their
//!    `acc_type = f32`): contractions accumulate in f32.
//! 2. **Casts on edges**: every operand whose type no longer matches its user's compute type
//!    gets a conversion, **one per (value, type)** however many users share it. Constants are
//!    converted at compile time instead (the f16 copy replaces the f32 one; a weight used in
//!    both types keeps both copies). Function results are cast back to their original type,
//!    unless the arguments were lowered too (`io-types=low`).
//! 3. **Fold**, to a fixed point, together with 4:
//!    - `cast(cast(x: A→B): B→C)` with `A→B` exact (widening) becomes `cast(x: A→C)`, and
//!      just `x` when `C = A` (the f16→f32→f16 round trip);
//!    - `cast(cast(x: f32→f16): f16→f32)` is lossy and is folded to `x` only with
//!      `fold-lossy=true`;
//!    - two casts of one value to one type become one; a cast to the value's own type goes.
//! 4. **Move** casts through precision-neutral ops (reshape, transpose, slice, max_pool2d,
//!    clamp) to the cheaper side, so that data moves in the narrow type: a widening cast that
//!    feeds such an op moves below it, a narrowing cast of its result moves above it (exact:
//!    these ops commute with rounding, which is monotone). Moved ops get `f16c.rule = "cast-motion"`.
//!    Option `move-casts` (default true).
//! 5. Dead casts and constants are removed.
//!
//! Pre: a verified graph, usually with `f16c.assigned` from `assign-precision` (ops without it
//! keep their type). Post: a verified graph whose element types follow the decisions.
//!
//! ```mlir
//! %0 = tosa.matmul %a, %w, %zp, %zp {f16c.assigned = "f16"} : (tensor<1x2x3xf32>, ...) -> tensor<1x2x4xf32>
//! // becomes
//! %c = tosa.cast %a : (tensor<1x2x3xf32>) -> tensor<1x2x3xf16>
//! %0 = tosa.matmul %c, %w16, %zp16, %zp16 {f16c.acc_type = f32} : (tensor<1x2x3xf16>, ...) -> tensor<1x2x4xf16>
//! %1 = tosa.cast %0 : (tensor<1x2x4xf16>) -> tensor<1x2x4xf32>
//! ```

use super::{attrs, compute_dtype, is_exact_conversion, typed_operands};
use crate::pass::registry::{OptionKind, PassInfo, PassOption};
use crate::pass::{Pass, Statistic};
use f16c_dialect::semantics::cast;
use f16c_dialect::{DType, Diagnostic, Diagnostics, Graph, Module, NodeId, Op, ValueType};
use std::collections::{BTreeMap, HashMap};

/// Registry entry.
pub const INFO: PassInfo = PassInfo {
    name: "insert-casts",
    type_name: "InsertCasts",
    summary: "Retype ops as assigned, insert one cast per (value, type), convert weights, fold and move casts",
    options: &[
        PassOption {
            name: "fold-lossy",
            kind: OptionKind::Bool,
            default: "false",
            summary: "Also fold f32->f16->f32 pairs (changes results: the rounding disappears)",
        },
        PassOption { name: "move-casts", kind: OptionKind::Bool, default: "true", summary: "Move casts through reshape/transpose/slice/max_pool2d/clamp" },
        PassOption {
            name: "accumulate",
            kind: OptionKind::Enum(&["f32", "f16"]),
            default: "f32",
            summary: "Accumulator of fp16 matmuls and convolutions (f16: a fast mode outside the numeric contract, less accurate)",
        },
    ],
    create: |o| {
        Ok(Box::new(InsertCasts { fold_lossy: o.flag("fold-lossy"), move_casts: o.flag("move-casts"), f16_accumulate: o.string("accumulate") == "f16", stats: Stats::default() }))
    },
};

/// Upper bound on fold/move rounds.
const MAX_ROUNDS: usize = 64;

/// The pass.
pub struct InsertCasts {
    fold_lossy: bool,
    move_casts: bool,
    f16_accumulate: bool,
    stats: Stats,
}

#[derive(Clone, Copy, Debug, Default)]
struct Stats {
    retyped: u64,
    inserted: u64,
    weights: u64,
    removed: u64,
    folded: u64,
    lossy: u64,
    moved: u64,
}

/// A use of a value: an operand slot or a function result.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Use {
    Operand(NodeId, usize),
    Output(usize),
}

/// Ops that only move or select values: they commute with rounding.
fn is_neutral(op: &Op) -> bool {
    matches!(op, Op::Reshape | Op::Transpose { .. } | Op::Slice | Op::MaxPool2d(_) | Op::Clamp { .. } | Op::Identity | Op::Reverse { .. } | Op::Resize { bilinear: false })
}

fn dtype(g: &Graph, id: NodeId) -> DType {
    g.tensor_ty(id).expect("a tensor value").dtype
}

fn set_dtype(g: &mut Graph, id: NodeId, dt: DType) {
    let node = g.node_mut(id);
    if let ValueType::Tensor(t) = &node.ty {
        node.ty = ValueType::Tensor(t.with_dtype(dt));
    }
}

impl InsertCasts {
    fn function(&mut self, g: &mut Graph, errors: &mut Vec<Diagnostic>) -> bool {
        let mut assigned: Vec<(NodeId, DType)> = Vec::new();
        for id in g.node_ids().collect::<Vec<_>>() {
            let Some(text) = g.node_mut(id).remove_attr(attrs::ASSIGNED) else { continue };
            let name = g.op(id).mlir_name();
            match DType::from_mlir(text.trim_matches('"')) {
                Some(d @ (DType::F32 | DType::F16 | DType::BF16)) if text.starts_with('"') => {
                    if compute_dtype(g, id) == Some(DType::F32) || matches!(g.op(id), Op::Arg(_)) && g.tensor_ty(id).is_some_and(|t| t.dtype == DType::F32) {
                        assigned.push((id, d));
                    } else {
                        let what = compute_dtype(g, id).map_or("no float type".to_string(), |d| d.to_string());
                        errors.push(Diagnostic::error(
                            g.location(id),
                            format!("'{name}' op: f16c.assigned applies only to ops that compute in f32; this one computes in {what}"),
                        ));
                    }
                }
                _ => errors.push(Diagnostic::error(
                    g.location(id),
                    format!("'{name}' op: f16c.assigned = {text} is not one of \"f32\", \"f16\", \"bf16\""),
                )),
            }
        }
        if assigned.is_empty() || !errors.is_empty() {
            return false;
        }
        // What each op computed in before, and the signature.
        let before: HashMap<NodeId, DType> = g.node_ids().filter_map(|n| Some((n, compute_dtype(g, n)?))).collect();
        let result_types: Vec<DType> = g.outputs().iter().map(|&o| dtype(g, o)).collect();
        let io_low = assigned.iter().any(|(n, d)| matches!(g.op(*n), Op::Arg(_)) && d.is_low_float());
        let assigned: HashMap<NodeId, DType> = assigned.into_iter().collect();

        // 1. Retype.
        for (&id, &dt) in &assigned {
            if g.tensor_ty(id).is_some_and(|t| t.dtype.is_float() && t.dtype != dt) {
                set_dtype(g, id, dt);
                self.stats.retyped += 1;
            }
            // Contractions accumulate in f32; with accumulate=f16, fp16 ones in fp16.
            let f16_acc = self.f16_accumulate && dt == DType::F16;
            let node = g.node_mut(id);
            if matches!(node.op, Op::MatMul) && dt.is_low_float() {
                node.set_attr(attrs::ACC_TYPE, if f16_acc { "f16" } else { "f32" });
            } else if f16_acc {
                node.op.set_conv_acc(DType::F16);
            }
        }

        // 2. Conversions on edges, grouped by (value, type).
        let mut need: BTreeMap<(NodeId, DType), Vec<Use>> = BTreeMap::new();
        for id in g.node_ids().collect::<Vec<_>>() {
            if g.op(id).is_control_flow() {
                // Its regions were not retyped: every float operand keeps its original type.
                for (p, o) in g.operands(id).into_iter().enumerate() {
                    let was = before.get(&o).copied().filter(|_| g.tensor_ty(o).is_some_and(|t| t.dtype.is_float()));
                    if let Some(was) = was.filter(|&w| w != dtype(g, o)) {
                        need.entry((o, was)).or_default().push(Use::Operand(id, p));
                    }
                }
                continue;
            }
            let Some(ct) = assigned.get(&id).or(before.get(&id)).copied() else { continue };
            let ops = g.operands(id);
            for p in typed_operands(g, id) {
                if dtype(g, ops[p]) != ct {
                    need.entry((ops[p], ct)).or_default().push(Use::Operand(id, p));
                }
            }
        }
        if !io_low {
            for (k, &o) in g.outputs().to_vec().iter().enumerate() {
                if dtype(g, o) != result_types[k] {
                    need.entry((o, result_types[k])).or_default().push(Use::Output(k));
                }
            }
        }
        for ((value, dt), uses) in need {
            let loc = g.location(value);
            let ty = ValueType::Tensor(g.tensor_ty(value).expect("tensor").with_dtype(dt));
            let new = match g.op(value) {
                Op::Const(t) => {
                    self.stats.weights += 1;
                    // The same weight converted in every probe of `check --fix`: once.
                    let c = f16c_core::memo::tensor(t, f16c_core::memo::what(&format!("cast to {dt:?}"), &[]), || cast(t, dt));
                    g.add_node(Op::Const(c), ty, &[], loc)
                }
                _ => {
                    self.stats.inserted += 1;
                    g.add_node(Op::Cast, ty, &[value], loc)
                }
            };
            for u in uses {
                match u {
                    Use::Operand(user, p) => g.set_operand(user, p, new),
                    Use::Output(k) => {
                        let mut outs = g.outputs().to_vec();
                        outs[k] = new;
                        g.set_outputs(outs);
                    }
                }
            }
        }

        // 3 + 4. Fold and move to a fixed point.
        for _ in 0..MAX_ROUNDS {
            let mut changed = self.fold(g);
            if self.move_casts {
                changed |= self.move_round(g);
            }
            if !changed {
                break;
            }
        }
        g.remove_dead_nodes();
        true
    }

    /// One sweep of cast folding; returns whether anything changed.
    fn fold(&mut self, g: &mut Graph) -> bool {
        let mut changed = false;
        let mut seen: HashMap<(NodeId, DType), NodeId> = HashMap::new();
        for c in g.topo_order().expect("acyclic") {
            if !g.contains(c) || !matches!(g.op(c), Op::Cast) || !g.is_used(c) {
                continue;
            }
            let x = g.operands(c)[0];
            let (a, b) = (dtype(g, x), dtype(g, c));
            if a == b {
                g.replace_all_uses(c, x);
                self.stats.removed += 1;
                changed = true;
                continue;
            }
            if matches!(g.op(x), Op::Cast) {
                let y = g.operands(x)[0];
                let s = dtype(g, y);
                if is_exact_conversion(s, a) {
                    if s == b {
                        g.replace_all_uses(c, y);
                        self.stats.removed += 1;
                    } else {
                        g.set_operand(c, 0, y);
                        self.stats.folded += 1;
                    }
                    changed = true;
                    continue;
                }
                if self.fold_lossy && s == b {
                    g.replace_all_uses(c, y);
                    self.stats.lossy += 1;
                    changed = true;
                    continue;
                }
            }
            match seen.get(&(x, b)) {
                Some(&twin) => {
                    g.replace_all_uses(c, twin);
                    self.stats.removed += 1;
                    changed = true;
                }
                None => {
                    seen.insert((x, b), c);
                }
            }
        }
        if changed {
            g.remove_dead_nodes();
        }
        changed
    }

    /// One sweep of cast motion through neutral ops; returns whether anything moved.
    fn move_round(&mut self, g: &mut Graph) -> bool {
        let mut changed = false;
        for n in g.topo_order().expect("acyclic") {
            if !g.contains(n) || !is_neutral(g.op(n)) || !g.is_used(n) {
                continue;
            }
            let x = g.operands(n)[0];
            let users = g.users(n);
            let is_output = g.outputs().contains(&n);
            // A widening cast feeding n moves below it: n then works on the narrow values.
            if matches!(g.op(x), Op::Cast) && g.users(x).len() == 1 && !g.outputs().contains(&x) {
                let y = g.operands(x)[0];
                let (narrow, wide) = (dtype(g, y), dtype(g, x));
                if narrow != wide && is_exact_conversion(narrow, wide) && narrow.is_float() {
                    set_dtype(g, n, narrow);
                    g.set_operand(n, 0, y);
                    let ty = ValueType::Tensor(g.tensor_ty(n).expect("tensor").with_dtype(wide));
                    let c = g.add_node(Op::Cast, ty, &[n], g.location(n));
                    for (u, p) in users {
                        g.set_operand(u, p, c);
                    }
                    let outs: Vec<NodeId> = g.outputs().iter().map(|&o| if o == n { c } else { o }).collect();
                    g.set_outputs(outs);
                    g.node_mut(n).set_attr(attrs::RULE, "\"cast-motion\"");
                    self.stats.moved += 1;
                    changed = true;
                    continue;
                }
            }
            // A narrowing cast of n's only use moves above it.
            if let [(c, _)] = users[..] {
                if !is_output && matches!(g.op(c), Op::Cast) {
                    let (wide, narrow) = (dtype(g, n), dtype(g, c));
                    if wide != narrow && wide.is_float() && narrow.is_float() && is_exact_conversion(narrow, wide) {
                        let ty = ValueType::Tensor(g.tensor_ty(x).expect("tensor").with_dtype(narrow));
                        let above = g.add_node(Op::Cast, ty, &[x], g.location(c));
                        g.set_operand(n, 0, above);
                        set_dtype(g, n, narrow);
                        g.replace_all_uses(c, n);
                        g.node_mut(n).set_attr(attrs::RULE, "\"cast-motion\"");
                        self.stats.moved += 1;
                        changed = true;
                    }
                }
            }
        }
        if changed {
            g.remove_dead_nodes();
        }
        changed
    }
}

impl Pass for InsertCasts {
    fn info(&self) -> &'static PassInfo {
        &INFO
    }

    fn run(&mut self, module: &mut Module, _diagnostics: &mut Vec<Diagnostic>) -> Result<bool, Diagnostics> {
        self.stats = Stats::default();
        let mut changed = false;
        let mut errors = Vec::new();
        for g in &mut module.functions {
            changed |= self.function(g, &mut errors);
        }
        if errors.is_empty() { Ok(changed) } else { Err(Diagnostics(errors)) }
    }

    fn statistics(&self) -> Vec<Statistic> {
        let s = &self.stats;
        vec![
            Statistic { name: "ops-retyped", value: s.retyped, description: "ops and arguments given a new element type" },
            Statistic { name: "casts-inserted", value: s.inserted, description: "casts added on edges (one per value and type)" },
            Statistic { name: "weights-converted", value: s.weights, description: "constants converted at compile time" },
            Statistic { name: "casts-removed", value: s.removed, description: "exact round trips, duplicates and identity casts removed" },
            Statistic { name: "casts-folded", value: s.folded, description: "cast chains folded into one cast" },
            Statistic { name: "casts-folded-lossy", value: s.lossy, description: "lossy f32->low->f32 pairs folded (fold-lossy)" },
            Statistic { name: "casts-moved", value: s.moved, description: "casts moved through neutral ops" },
        ]
    }
}
