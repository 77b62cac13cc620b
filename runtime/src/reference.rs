//! The reference interpreter: the golden model of the numeric contract.
//!
//! It evaluates a verified graph op by op in topological order with
//! [`f16c_dialect::semantics::eval`]. Values are dropped as soon as their last user has run, so
//! memory stays near the graph's live set.

use crate::{Result, RuntimeError};
use f16c_dialect::semantics::{eval, Value};
use f16c_dialect::{Graph, NodeId, Op, Tensor};
use std::collections::HashMap;

/// Checks that `inputs` match the function's arguments in count, shape and element type.
pub fn check_inputs(g: &Graph, inputs: &[Tensor]) -> Result<()> {
    if inputs.len() != g.inputs().len() {
        return Err(RuntimeError::BadInput(format!(
            "'@{}' takes {} input(s), {} given",
            g.name,
            g.inputs().len(),
            inputs.len()
        )));
    }
    for (k, (&arg, t)) in g.inputs().iter().zip(inputs).enumerate() {
        let want = g.tensor_ty(arg).expect("arguments are tensors");
        if t.ty() != *want {
            return Err(RuntimeError::BadInput(format!(
                "input #{k} of '@{}' must be {want}, got {} (shape {:?}, element type {})",
                g.name,
                t.ty(),
                t.shape(),
                t.dtype()
            )));
        }
    }
    Ok(())
}

/// Runs a function on its inputs and returns its results.
pub fn run(g: &Graph, inputs: &[Tensor]) -> Result<Vec<Tensor>> {
    run_observed(g, inputs, |_, _| {})
}

/// Runs a function, calling `observe(node, value)` for every tensor an op produces (used by
/// calibration and by `f16c check`).
pub fn run_observed(g: &Graph, inputs: &[Tensor], mut observe: impl FnMut(NodeId, &Tensor)) -> Result<Vec<Tensor>> {
    f16c_dialect::verify::verify(g)?;
    check_inputs(g, inputs)?;
    let order = g.topo_order().expect("verified graphs are acyclic");
    let mut remaining: HashMap<NodeId, usize> = order.iter().map(|&n| (n, g.users(n).len())).collect();
    for &o in g.outputs() {
        *remaining.get_mut(&o).expect("output is a node") += 1;
    }
    let mut values: HashMap<NodeId, Value> = HashMap::new();
    for id in order {
        let value = match g.op(id) {
            Op::Arg(k) => Value::Tensor(inputs[*k].clone()),
            op => {
                let operands = g.operands(id);
                let refs: Vec<&Value> = operands.iter().map(|o| &values[o]).collect();
                let v = eval(op, &refs, g.ty(id)).map_err(|e| RuntimeError::Eval {
                    location: g.location(id),
                    op: op.mlir_name(),
                    message: e.0,
                })?;
                for o in operands {
                    let r = remaining.get_mut(&o).expect("operand is a node");
                    *r -= 1;
                    if *r == 0 {
                        values.remove(&o);
                    }
                }
                v
            }
        };
        if let Value::Tensor(t) = &value {
            observe(id, t);
        }
        values.insert(id, value);
    }
    Ok(g.outputs().iter().map(|o| values[o].as_tensor().expect("outputs are tensors").clone()).collect())
}
