//! The precision report (`f16c compile --emit=report`) and the precision picture
//! (`--emit=dot`).
//!
//! The report compares the graph before precision assignment with the graph after cast
//! insertion. Both passes keep the ids of the ops they retype, so each op's row reads its
//! precision from its types after, its rule from `f16c.rule`, and its weight bytes from its
//! constant operands before and after. Cast counts come from the passes' statistics.

use crate::pass::Statistic;
use crate::transforms::{attrs, compute_dtype};
use f16c_dialect::{DType, Graph, NodeId, Op};
use serde::Serialize;
use std::collections::{BTreeMap, HashSet};
use std::fmt::Write;

/// One op of the model.
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    /// `%N`.
    pub id: String,
    /// MLIR op name.
    pub op: String,
    /// `file:line:col` (or the location name).
    pub location: String,
    /// The type it computes in.
    pub precision: String,
    /// Accumulator type of contractions.
    pub accumulator: Option<String>,
    /// The rule that decided (`low-list`, `follow`, `calibration`, ...).
    pub rule: String,
    /// Casts f16c inserted on its operands.
    pub casts_in: usize,
    /// Bytes of its constant operands before.
    pub weight_bytes_before: usize,
    /// Bytes of its constant operands after.
    pub weight_bytes_after: usize,
    /// With sample inputs: what `f16c check --fix` measures of an op the policy runs low, the
    /// larger of its local and its carried error (`inf`: it overflows alone in the low type).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sensitivity: Option<String>,
}

/// Totals of the report.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Summary {
    /// Ops per compute type.
    pub ops_per_precision: BTreeMap<String, usize>,
    /// Casts f16c added and that are in the final graph.
    pub casts_in_graph: usize,
    /// Pass counters: casts inserted, removed, folded, moved; weights converted.
    pub counters: BTreeMap<String, u64>,
    /// Bytes of all constants before.
    pub weight_bytes_before: usize,
    /// Bytes of all constants after.
    pub weight_bytes_after: usize,
}

/// The report of one function.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    /// The input file.
    pub file: String,
    /// The function.
    pub function: String,
    /// Target, precision and policy as given.
    pub settings: BTreeMap<String, String>,
    /// One row per op, in topological order.
    pub rows: Vec<Row>,
    /// Totals.
    pub summary: Summary,
}

fn is_original(before: &Graph, after: &Graph, id: NodeId) -> bool {
    before.contains(id) && before.op(id) == after.op(id) && before.operands(id) == after.operands(id)
}

/// Bytes of `id` when it is a float constant (a weight), else 0.
pub(crate) fn const_bytes(g: &Graph, id: NodeId) -> usize {
    match g.op(id) {
        Op::Const(t) if t.dtype().is_float() => t.byte_size(),
        _ => 0,
    }
}

impl Report {
    /// Builds the report of `after` (the result of assign-precision + insert-casts on `before`).
    pub fn build(file: &str, settings: BTreeMap<String, String>, before: &Graph, after: &Graph, stats: &[(&str, Vec<Statistic>)]) -> Report {
        let mut rows = Vec::new();
        let mut summary = Summary::default();
        for id in after.topo_order().expect("verified graphs are acyclic") {
            let op = after.op(id);
            if matches!(op, Op::Arg(_) | Op::Const(_) | Op::ConstShape(_) | Op::Result(_)) {
                continue;
            }
            if matches!(op, Op::Cast) && !is_original(before, after, id) {
                summary.casts_in_graph += 1;
                continue;
            }
            let Some(precision) = compute_dtype(after, id) else { continue };
            let accumulator = match op {
                Op::MatMul => Some(after.node(id).attr(attrs::ACC_TYPE).map_or_else(|| precision.to_string(), str::to_string)),
                _ => op.conv_acc().map(|acc| acc.to_string()),
            };
            let ops_after = after.operands(id);
            let ops_before = if before.contains(id) { before.operands(id) } else { Vec::new() };
            let casts_in = ops_after.iter().filter(|&&o| matches!(after.op(o), Op::Cast) && !is_original(before, after, o)).count();
            let loc = after.location(id);
            rows.push(Row {
                id: id.to_string(),
                op: op.mlir_name().to_string(),
                location: loc.name.clone().unwrap_or_else(|| loc.to_string()),
                precision: precision.to_string(),
                accumulator,
                rule: after.node(id).string_attr(attrs::RULE).unwrap_or("unchanged").to_string(),
                casts_in,
                weight_bytes_before: ops_before.iter().map(|&o| const_bytes(before, o)).sum(),
                weight_bytes_after: ops_after.iter().map(|&o| const_bytes(after, o)).sum(),
                sensitivity: None,
            });
            *summary.ops_per_precision.entry(precision.to_string()).or_default() += 1;
        }
        summary.weight_bytes_before = before.node_ids().map(|n| const_bytes(before, n)).sum();
        summary.weight_bytes_after = after.node_ids().map(|n| const_bytes(after, n)).sum();
        for (_, counters) in stats {
            for c in counters {
                if c.name.starts_with("casts-") || c.name == "weights-converted" {
                    *summary.counters.entry(c.name.to_string()).or_default() += c.value;
                }
            }
        }
        Report { file: file.to_string(), function: after.name.clone(), settings, rows, summary }
    }

    /// Fills the sensitivity column from `f16c_compiler::fix::sensitivity`'s numbers, by op.
    pub fn set_sensitivity(&mut self, sensitivity: &std::collections::HashMap<NodeId, f64>) {
        let by_id: std::collections::HashMap<String, f64> = sensitivity.iter().map(|(id, &s)| (id.to_string(), s)).collect();
        for r in &mut self.rows {
            r.sensitivity = by_id.get(&r.id).map(|s| format!("{s:.2e}"));
        }
    }

    /// The report as an aligned text table with a summary.
    pub fn to_table(&self) -> String {
        let mut s = String::new();
        let settings: Vec<String> = self.settings.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let _ = writeln!(s, "f16c precision report: {} @{} ({})", self.file, self.function, settings.join(", "));
        let head = ["op", "location", "precision", "acc", "rule", "casts-in", "weight bytes", "sensitivity"];
        let with_sensitivity = self.rows.iter().any(|r| r.sensitivity.is_some());
        let cells: Vec<[String; 8]> = self
            .rows
            .iter()
            .map(|r| {
                [
                    format!("{} {}", r.id, r.op),
                    short_location(&r.location),
                    r.precision.clone(),
                    r.accumulator.clone().unwrap_or_else(|| "-".into()),
                    r.rule.clone(),
                    r.casts_in.to_string(),
                    if r.weight_bytes_before == 0 { "-".into() } else { format!("{} -> {}", r.weight_bytes_before, r.weight_bytes_after) },
                    r.sensitivity.clone().unwrap_or_else(|| "-".into()),
                ]
            })
            .collect();
        let mut width = head.map(str::len);
        for c in &cells {
            for (w, x) in width.iter_mut().zip(c) {
                *w = (*w).max(x.len());
            }
        }
        let shown = if with_sensitivity { 8 } else { 7 };
        let line = |cols: &[String]| -> String {
            let parts: Vec<String> = cols.iter().zip(&width).take(shown).map(|(c, w)| format!("{c:<w$}")).collect();
            format!("  {}\n", parts.join("  ").trim_end())
        };
        s.push_str(&line(&head.map(String::from)));
        for c in &cells {
            s.push_str(&line(c));
        }
        let sm = &self.summary;
        let per: Vec<String> = sm.ops_per_precision.iter().map(|(k, v)| format!("{k} {v}")).collect();
        let c = |k: &str| sm.counters.get(k).copied().unwrap_or(0);
        let _ = writeln!(s, "ops: {} ({})", self.rows.len(), per.join(", "));
        let _ = writeln!(
            s,
            "casts: {} in the graph; {} inserted, {} removed, {} folded, {} folded lossy, {} moved",
            sm.casts_in_graph,
            c("casts-inserted"),
            c("casts-removed"),
            c("casts-folded"),
            c("casts-folded-lossy"),
            c("casts-moved")
        );
        let _ = writeln!(
            s,
            "weights: {} -> {} bytes ({} constant(s) converted)",
            sm.weight_bytes_before,
            sm.weight_bytes_after,
            c("weights-converted")
        );
        let f16_acc = self.rows.iter().filter(|r| r.accumulator.as_deref() == Some("f16") && r.precision == "f16").count();
        if f16_acc > 0 {
            let _ = writeln!(
                s,
                "less accurate: {f16_acc} contraction(s) accumulate in f16 (--accumulate=f16, outside the numeric contract: every partial sum rounds to fp16, so the error grows with the reduction length)"
            );
        }
        s
    }

    /// The report as JSON (`--report-format=json`).
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("plain data serialises")
    }
}

fn colour(d: Option<DType>) -> &'static str {
    match d {
        Some(DType::F32) => "#9ec5f8",
        Some(DType::F16) => "#9be59b",
        Some(DType::BF16) => "#f5c36b",
        Some(DType::F64) => "#c9a7e0",
        _ => "#dddddd",
    }
}

/// A heat colour for a sensitivity: pale yellow at 1e-5 and below to red at 1e-1 and above
/// (log scale), dark red for an op that overflows (infinite).
fn heat(sensitivity: f64) -> String {
    if !sensitivity.is_finite() {
        return "#8b0000".into();
    }
    let t = ((sensitivity.max(1e-12).log10() + 5.0) / 4.0).clamp(0.0, 1.0);
    let mix = |a: f64, b: f64| (a + (b - a) * t).round() as u8;
    format!("#{:02x}{:02x}{:02x}", mix(255.0, 224.0), mix(255.0, 48.0), mix(224.0, 30.0))
}

/// The graph as Graphviz DOT, ops coloured by the type they compute in (f32 blue, f16 green,
/// bf16 orange, f64 purple), inserted casts as red diamonds, constants as grey notes.
pub fn to_dot(before: &Graph, after: &Graph) -> String {
    to_dot_with(before, after, None)
}

/// [`to_dot`]; with `sensitivity` (from sample inputs: `f16c_compiler::fix::sensitivity`),
/// the ops the policy runs low are coloured by it instead (a heat scale: where the model is
/// fragile), with the value in their label.
pub fn to_dot_with(before: &Graph, after: &Graph, sensitivity: Option<&std::collections::HashMap<NodeId, f64>>) -> String {
    let mut s = format!("digraph \"{}\" {{\n  rankdir=TB;\n  node [shape=box, style=filled, fontname=\"Helvetica\", fontsize=10];\n", after.name);
    s.push_str("  subgraph cluster_legend { label=\"legend\"; fontsize=10;\n");
    for (name, d) in [("f32", DType::F32), ("f16", DType::F16), ("bf16", DType::BF16), ("f64", DType::F64)] {
        let _ = writeln!(s, "    legend_{name} [label=\"{name}\", fillcolor=\"{}\"];", colour(Some(d)));
    }
    s.push_str("    legend_cast [label=\"cast (inserted)\", shape=diamond, fillcolor=\"#f4876c\"];\n");
    if sensitivity.is_some() {
        for (label, v) in [("sensitivity 1e-5", 1e-5), ("1e-3", 1e-3), ("1e-1", 1e-1), ("overflows", f64::INFINITY)] {
            let _ = writeln!(s, "    legend_heat_{} [label=\"{label}\", fillcolor=\"{}\"];", heat(v).trim_start_matches('#'), heat(v));
        }
    }
    s.push_str("  }\n");
    let mut shown = HashSet::new();
    for id in after.topo_order().expect("acyclic") {
        let op = after.op(id);
        if matches!(op, Op::ConstShape(_)) {
            continue;
        }
        shown.insert(id);
        let ty = after.tensor_ty(id).map(|t| t.to_string()).unwrap_or_default();
        let n = id.index();
        let _ = match op {
            Op::Const(t) => writeln!(s, "  n{n} [label=\"{id} const\\n{ty}\", shape=note, fillcolor=\"{}\", fontsize=8];", if t.dtype().is_low_float() { "#d8f0d8" } else { "#eeeeee" }),
            Op::Cast if !is_original(before, after, id) => writeln!(s, "  n{n} [label=\"cast\\n{ty}\", shape=diamond, fillcolor=\"#f4876c\", fontsize=8];"),
            Op::Arg(k) => writeln!(s, "  n{n} [label=\"arg{k}\\n{ty}\", shape=oval, fillcolor=\"{}\"];", colour(after.tensor_ty(id).map(|t| t.dtype))),
            _ => {
                let rule = after.node(id).string_attr(attrs::RULE).unwrap_or("unchanged");
                match sensitivity.and_then(|m| m.get(&id)) {
                    Some(&v) => writeln!(s, "  n{n} [label=\"{id} {}\\n{ty}\\n({rule})\\nsensitivity {v:.2e}\", fillcolor=\"{}\"];", op.short_name(), heat(v)),
                    None => writeln!(s, "  n{n} [label=\"{id} {}\\n{ty}\\n({rule})\", fillcolor=\"{}\"];", op.short_name(), colour(compute_dtype(after, id))),
                }
            }
        };
    }
    for id in after.topo_order().expect("acyclic") {
        if !shown.contains(&id) {
            continue;
        }
        for o in after.operands(id) {
            if shown.contains(&o) {
                let _ = writeln!(s, "  n{} -> n{};", o.index(), id.index());
            }
        }
    }
    for (k, o) in after.outputs().iter().enumerate() {
        let _ = writeln!(s, "  result{k} [label=\"result #{k}\", shape=oval, fillcolor=\"#ffffff\"];\n  n{} -> result{k};", o.index());
    }
    s.push_str("}\n");
    s
}

/// `dir/net.mlir:3:5` as `net.mlir:3:5`, to keep tables narrow.
pub fn short_location(loc: &str) -> String {
    match loc.rsplit_once('/') {
        Some((_, tail)) if !loc.starts_with("loc(") => tail.to_string(),
        _ => loc.to_string(),
    }
}
