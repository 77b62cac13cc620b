//! The reference interpreter: the golden model of the numeric contract.
//!
//! It evaluates a verified graph op by op in topological order with
//! [`f16c_dialect::semantics::eval`]. Values are dropped as soon as their last user has run, so
//! memory stays near the graph's live set.

use crate::semantics::{eval, Value};
use crate::{Diagnostics, Graph, Location, NodeId, Op, Tensor};
use std::collections::HashMap;

/// Why a run of the reference interpreter failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The inputs given do not match the function's arguments.
    #[error("{0}")]
    BadInput(String),
    /// An op failed while running (for example a gather index out of range).
    #[error("{location}: error: while running '{op}': {message}")]
    Eval {
        /// The op's location.
        location: Location,
        /// The op name.
        op: &'static str,
        /// What went wrong.
        message: String,
    },
    /// The graph does not verify.
    #[error(transparent)]
    Invalid(#[from] Diagnostics),
}

/// Result alias of the interpreter.
pub type Result<T> = std::result::Result<T, Error>;

impl From<crate::semantics::EvalError> for Error {
    fn from(e: crate::semantics::EvalError) -> Error {
        Error::Eval { location: Location::unknown(), op: "control flow", message: e.0 }
    }
}

/// Checks that `inputs` match the function's arguments in count, shape and element type.
pub fn check_inputs(g: &Graph, inputs: &[Tensor]) -> Result<()> {
    let expected: Vec<crate::TensorType> = g.inputs().iter().map(|&a| g.tensor_ty(a).expect("arguments are tensors").clone()).collect();
    crate::tensor::check_inputs(&g.name, &expected, inputs).map_err(Error::BadInput)
}

/// Runs a function on its inputs and returns its results.
pub fn run(g: &Graph, inputs: &[Tensor]) -> Result<Vec<Tensor>> {
    run_observed(g, inputs, |_, _| {})
}

/// Runs a function, calling `observe(node, value)` for every tensor an op produces (used by
/// calibration and by `f16c check`).
pub fn run_observed(g: &Graph, inputs: &[Tensor], mut observe: impl FnMut(NodeId, &Tensor)) -> Result<Vec<Tensor>> {
    crate::verify::verify(g)?;
    check_inputs(g, inputs)?;
    execute(g, inputs, &mut observe)
}

/// Runs a verified graph (regions of control-flow ops recursively, without verifying again).
fn execute(g: &Graph, inputs: &[Tensor], observe: &mut dyn FnMut(NodeId, &Tensor)) -> Result<Vec<Tensor>> {
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
                let eval_error = |e: crate::semantics::EvalError| Error::Eval { location: g.location(id), op: op.mlir_name(), message: e.0 };
                let v = if let Some(layout) = op.control_layout() {
                    let tensors: Vec<Tensor> = refs.iter().map(|v| v.as_tensor().expect("verified: tensor operands").clone()).collect();
                    let regions = op.regions();
                    let results = crate::semantics::control_flow(&layout, &tensors, |k, args| {
                        execute(&regions[k].graph, args, &mut |_, _| {})
                    })
                    .map_err(|e| match e {
                        // The op's own failures (a condition that is not one i1) get its location.
                        Error::Eval { location, message, .. } if location == Location::unknown() => eval_error(crate::semantics::EvalError(message)),
                        e => e,
                    })?;
                    Value::Results(results)
                } else {
                    eval(op, &refs, g.ty(id)).map_err(eval_error)?
                };
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
