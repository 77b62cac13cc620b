//! Calibration: run the f32 graph on sample inputs and record, on every op, the largest
//! magnitude it produced (`f16c.max_abs`), which `assign-precision` reads to keep ops whose
//! activations leave the low type's safe range in f32.

use crate::transforms::attrs;
use f16c_dialect::reference::{self, Error, Result};
use f16c_dialect::{Graph, NodeId, Op, Tensor};
use std::collections::HashMap;

/// Runs `g` once per group of `g.inputs().len()` tensors in `samples` (in argument order) and
/// annotates every non-constant op with the largest finite magnitude it produced.
pub fn annotate(g: &mut Graph, samples: &[Tensor]) -> Result<()> {
    let k = g.inputs().len();
    if k == 0 || !samples.len().is_multiple_of(k) {
        return Err(Error::BadInput(format!(
            "calibration: '@{}' takes {k} input(s) per run, but {} tensor(s) were given",
            g.name,
            samples.len()
        )));
    }
    let mut max_abs: HashMap<NodeId, f64> = HashMap::new();
    for (run, sample) in samples.chunks(k).enumerate() {
        reference::run_observed(g, sample, |id, t| {
            if t.dtype().is_float() {
                let m = t.to_f64_vec().iter().filter(|v| v.is_finite()).fold(0.0f64, |a, v| a.max(v.abs()));
                let e = max_abs.entry(id).or_insert(0.0);
                *e = e.max(m);
            }
        })
        .map_err(|e| Error::BadInput(format!("calibration run #{run} of '@{}': {e}", g.name)))?;
    }
    for (id, v) in max_abs {
        if !g.op(id).is_constant() && !matches!(g.op(id), Op::Cast) {
            g.node_mut(id).set_attr(attrs::MAX_ABS, format!("{v:.9e} : f64"));
        }
    }
    Ok(())
}
