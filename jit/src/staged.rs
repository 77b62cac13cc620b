//! Control flow on the JIT. A program is one straight line of kernels, so a graph with
//! `tosa.cond_if` or `tosa.while_loop` runs as stages: each straight-line piece between
//! control-flow ops is compiled as a model of its own, each region too (recursively), and the
//! stages pass tensors between them. A loop's trip count is known only at run time: the cond
//! region's compiled code decides each iteration, as `semantics::control_flow` specifies.

use crate::{JitError, Model, Result};
use f16c_dialect::semantics::control_flow;
use f16c_dialect::{ControlLayout, Graph, NodeId, Op, Tensor, TensorType};
use std::collections::{HashMap, HashSet};

/// One step of a staged model.
enum Stage {
    /// A straight-line piece: reads `inputs` (values of the whole graph), writes `outputs`.
    Code { model: Model, inputs: Vec<NodeId>, outputs: Vec<NodeId> },
    /// A control-flow op: where its operands are, its regions compiled, its operands, and the
    /// `Op::Result` node of each of its results (`None` where nothing uses it).
    Control { layout: ControlLayout, regions: Vec<Model>, operands: Vec<NodeId>, results: Vec<Option<NodeId>> },
}

/// A graph with control flow, compiled in stages.
pub(crate) struct Staged {
    name: String,
    args: Vec<NodeId>,
    inputs: Vec<TensorType>,
    stages: Vec<Stage>,
    outputs: Vec<NodeId>,
    /// Constants read directly by control-flow ops or returned as results.
    constants: HashMap<NodeId, Tensor>,
}

impl Staged {
    /// Splits `g` at its control-flow ops and compiles every piece and region.
    pub(crate) fn compile(g: &Graph, threads: usize) -> Result<Staged> {
        let order = g.topo_order().ok_or_else(|| JitError::Compile(format!("function '@{}' has a cycle", g.name)))?;
        let mut stages = Vec::new();
        let mut piece: Vec<NodeId> = Vec::new();
        let mut constants = HashMap::new();
        let flush = |piece: &mut Vec<NodeId>, stages: &mut Vec<Stage>| -> Result<()> {
            if !piece.is_empty() {
                stages.push(code_stage(g, std::mem::take(piece), threads)?);
            }
            Ok(())
        };
        for &id in &order {
            match g.op(id) {
                Op::Arg(_) | Op::ConstShape(_) | Op::Result(_) => {}
                Op::Const(t) => {
                    constants.insert(id, t.clone());
                }
                op if let Some(layout) = op.control_layout() => {
                    flush(&mut piece, &mut stages)?;
                    let regions = op.regions().iter().map(|r| Model::compile_graph(&r.graph, threads)).collect::<Result<Vec<_>>>()?;
                    let count = match g.ty(id) {
                        f16c_dialect::ValueType::Results(ts) => ts.len(),
                        _ => 0,
                    };
                    let mut results = vec![None; count];
                    for (user, _) in g.users(id) {
                        if let Op::Result(i) = g.op(user) {
                            results[*i] = Some(user);
                        }
                    }
                    stages.push(Stage::Control { layout, regions, operands: g.operands(id), results });
                }
                _ => piece.push(id),
            }
        }
        flush(&mut piece, &mut stages)?;
        let inputs = g.inputs().iter().map(|&i| g.tensor_ty(i).expect("arguments are tensors").clone()).collect();
        Ok(Staged { name: g.name.clone(), args: g.inputs().to_vec(), inputs, stages, outputs: g.outputs().to_vec(), constants })
    }

    pub(crate) fn inputs(&self) -> &[TensorType] {
        &self.inputs
    }

    pub(crate) fn set_threads(&mut self, threads: usize) {
        self.each_model(|m| m.set_threads(threads));
    }

    /// Calls `f` on the model of every stage and region.
    fn each_model(&mut self, mut f: impl FnMut(&mut crate::Model)) {
        for s in &mut self.stages {
            match s {
                Stage::Code { model, .. } => f(model),
                Stage::Control { regions, .. } => regions.iter_mut().for_each(&mut f),
            }
        }
    }

    pub(crate) fn weight_bytes(&self) -> usize {
        self.stages
            .iter()
            .map(|s| match s {
                Stage::Code { model, .. } => model.weight_bytes(),
                Stage::Control { regions, .. } => regions.iter().map(Model::weight_bytes).sum(),
            })
            .sum()
    }

    pub(crate) fn run(&self, inputs: &[Tensor]) -> Result<Vec<Tensor>> {
        f16c_dialect::tensor::check_inputs(&self.name, &self.inputs, inputs).map_err(JitError::Usage)?;
        let mut env: HashMap<NodeId, Tensor> = self.args.iter().copied().zip(inputs.iter().cloned()).collect();
        let get = |env: &HashMap<NodeId, Tensor>, id: &NodeId| -> Tensor { env.get(id).or_else(|| self.constants.get(id)).expect("computed by an earlier stage").clone() };
        for s in &self.stages {
            match s {
                Stage::Code { model, inputs, outputs } => {
                    let args: Vec<Tensor> = inputs.iter().map(|i| get(&env, i)).collect();
                    for (id, t) in outputs.iter().zip(model.run(&args)?) {
                        env.insert(*id, t);
                    }
                }
                Stage::Control { layout, regions, operands, results } => {
                    let args: Vec<Tensor> = operands.iter().map(|i| get(&env, i)).collect();
                    let values = control_flow(layout, &args, |k, a| regions[k].run(a))?;
                    for (r, t) in results.iter().zip(values) {
                        if let Some(r) = r {
                            env.insert(*r, t);
                        }
                    }
                }
            }
        }
        Ok(self.outputs.iter().map(|o| get(&env, o)).collect())
    }
}

/// Compiles the straight-line piece `nodes` (in topological order) as a graph of its own: the
/// values it reads from elsewhere become its inputs (constants are copied in), the values
/// something else reads (a later stage, a control-flow op, the function's results) its outputs.
fn code_stage(g: &Graph, nodes: Vec<NodeId>, threads: usize) -> Result<Stage> {
    let inside: HashSet<NodeId> = nodes.iter().copied().collect();
    let mut piece = Graph::new(format!("{}.piece", g.name));
    piece.location = g.location.clone();
    let mut map: HashMap<NodeId, NodeId> = HashMap::new();
    let mut inputs = Vec::new();
    for &id in &nodes {
        let mut operands = Vec::new();
        for o in g.operands(id) {
            let mapped = match map.get(&o) {
                Some(&m) => m,
                None => {
                    let m = if g.op(o).is_constant() {
                        piece.add_node(g.op(o).clone(), g.ty(o).clone(), &[], g.location(o))
                    } else {
                        inputs.push(o);
                        piece.add_input(g.tensor_ty(o).expect("values between stages are tensors").clone(), g.location(o))
                    };
                    map.insert(o, m);
                    m
                }
            };
            operands.push(mapped);
        }
        let node = g.node(id);
        let m = piece.add_node(node.op.clone(), node.ty.clone(), &operands, g.location(id));
        piece.node_mut(m).attrs = node.attrs.clone();
        map.insert(id, m);
    }
    let mut outputs = Vec::new();
    for &id in &nodes {
        let used_outside = g.users(id).iter().any(|(u, _)| !inside.contains(u)) || g.outputs().contains(&id);
        if used_outside && g.tensor_ty(id).is_some() {
            piece.add_output(map[&id]);
            outputs.push(id);
        }
    }
    let model = Model::compile_graph(&piece, threads)?;
    Ok(Stage::Code { model, inputs, outputs })
}
