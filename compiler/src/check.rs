//! `f16c check`: which op broke accuracy? One run of the mixed-precision graph beside the f32
//! graph on the reference interpreter, compared op by op.
//!
//! Precision assignment and cast insertion keep the ids of the ops they retype, so every op of
//! the mixed graph that is not an inserted cast or a converted constant has its f32 twin under
//! the same id. Each op's error is measured against its twin with [`f16c_core::compare`] (largest
//! absolute difference relative to the f32 value's peak), and values that went non-finite
//! where f32 stayed finite are counted. The first op in topological order that goes non-finite
//! or exceeds the tolerance is the culprit.

use f16c_core::compare::{compare, Error};
use f16c_dialect::reference::{self, Result};
use f16c_dialect::{DType, Graph, Location, NodeId, Op, Tensor};
use std::collections::HashMap;

/// The comparison of one op.
#[derive(Clone, Debug)]
pub struct OpCheck {
    /// The op.
    pub id: NodeId,
    /// Its MLIR name.
    pub op: &'static str,
    /// Its location.
    pub location: Location,
    /// The element type of its result in the mixed graph.
    pub dtype: DType,
    /// Error against the f32 value.
    pub error: Error,
    /// Elements that are not finite in the mixed run but finite in f32.
    pub non_finite: usize,
}

impl OpCheck {
    /// True when the op went non-finite or is beyond `tolerance` (relative to peak).
    pub fn fails(&self, tolerance: f64) -> bool {
        let e = self.error.relative_to_peak();
        self.non_finite > 0 || e.is_nan() || e > tolerance
    }
}

/// The comparison of a whole run.
#[derive(Clone, Debug)]
pub struct Check {
    /// Every compared op, in the mixed graph's topological order.
    pub ops: Vec<OpCheck>,
    /// Index in `ops` of the first op that fails, if any.
    pub culprit: Option<usize>,
    /// Error of each function result against the f32 result.
    pub outputs: Vec<Error>,
}

/// Runs `f32_graph` and `mixed` (its mixed-precision version) on `inputs` (f32 tensors for the
/// f32 graph; they are cast to the mixed graph's argument types) and compares them op by op.
pub fn check(f32_graph: &Graph, mixed: &Graph, inputs: &[Tensor], tolerance: f64) -> Result<Check> {
    let mut reference_values: HashMap<NodeId, Tensor> = HashMap::new();
    let want = reference::run_observed(f32_graph, inputs, |id, t| {
        reference_values.insert(id, t.clone());
    })?;
    let mixed_inputs: Vec<Tensor> = mixed
        .inputs()
        .iter()
        .zip(inputs)
        .map(|(&a, t)| {
            let dt = mixed.tensor_ty(a).map_or(t.dtype(), |ty| ty.dtype);
            if dt == t.dtype() { t.clone() } else { f16c_dialect::semantics::cast(t, dt) }
        })
        .collect();
    let mut ops = Vec::new();
    let got = reference::run_observed(mixed, &mixed_inputs, |id, t| {
        let op = mixed.op(id);
        if matches!(op, Op::Arg(_) | Op::Const(_) | Op::ConstShape(_) | Op::Cast) {
            return;
        }
        let Some(r) = reference_values.get(&id) else { return };
        if !f32_graph.contains(id) || std::mem::discriminant(f32_graph.op(id)) != std::mem::discriminant(op) || r.shape() != t.shape() {
            return;
        }
        let Ok(error) = compare(t, r) else { return };
        let non_finite = t.to_f64_vec().iter().zip(r.to_f64_vec()).filter(|(a, b)| !a.is_finite() && b.is_finite()).count();
        ops.push(OpCheck { id, op: op.mlir_name(), location: mixed.location(id), dtype: t.dtype(), error, non_finite });
    })?;
    let culprit = ops.iter().position(|o| o.fails(tolerance));
    let outputs = got
        .iter()
        .zip(&want)
        .map(|(g, w)| compare(g, w).map_err(|e| reference::Error::BadInput(e.to_string())))
        .collect::<Result<Vec<_>>>()?;
    Ok(Check { ops, culprit, outputs })
}
