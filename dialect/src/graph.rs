//! The graph IR: one [`Graph`] per function, ops as nodes, operands as ordered edges.
//!
//! Every node produces exactly one value (TOSA ops here are single-result), so a [`NodeId`] names
//! both the op and its result. Node ids are stable across removals (petgraph's
//! `StableDiGraph`), and print as `%N`.

use crate::diag::Location;
use crate::op::Op;
use crate::types::{TensorType, ValueType};
use petgraph::stable_graph::{NodeIndex, StableDiGraph};
use petgraph::visit::EdgeRef;
use petgraph::Direction;
use std::collections::HashMap;
use std::fmt;

/// A node of a [`Graph`]: an op and the value it produces.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NodeId(NodeIndex);

impl NodeId {
    /// The raw index (stable for the life of the node).
    pub fn index(self) -> usize {
        self.0.index()
    }
}

impl fmt::Display for NodeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "%{}", self.0.index())
    }
}

/// An op with the type of the value it produces.
#[derive(Clone, Debug, PartialEq)]
pub struct Node {
    /// The operation.
    pub op: Op,
    /// The result type.
    pub ty: ValueType,
    /// Discardable attributes carried through unchanged (`f16c.precision = "f32"`), as
    /// `(name, MLIR attribute text)`.
    pub attrs: Vec<(String, String)>,
}

impl Node {
    /// The MLIR text of a discardable attribute, if present.
    pub fn attr(&self, name: &str) -> Option<&str> {
        self.attrs.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }

    /// The value of a string attribute (`name = "text"`), if present and a string.
    pub fn string_attr(&self, name: &str) -> Option<&str> {
        let text = self.attr(name)?;
        text.strip_prefix('"')?.strip_suffix('"')
    }

    /// The value of a float attribute (`name = 1.5e+05 : f32`), if present and a number.
    pub fn float_attr(&self, name: &str) -> Option<f64> {
        let text = self.attr(name)?;
        let number = text.split(':').next()?.trim();
        number.parse().ok()
    }

    /// Sets (or replaces) a discardable attribute, given as MLIR attribute text.
    pub fn set_attr(&mut self, name: &str, text: impl Into<String>) {
        let text = text.into();
        match self.attrs.iter_mut().find(|(k, _)| k == name) {
            Some(slot) => slot.1 = text,
            None => self.attrs.push((name.to_string(), text)),
        }
    }

    /// Removes a discardable attribute; returns its text.
    pub fn remove_attr(&mut self, name: &str) -> Option<String> {
        let at = self.attrs.iter().position(|(k, _)| k == name)?;
        Some(self.attrs.remove(at).1)
    }
}

/// One function: a DAG of ops with named inputs and ordered outputs.
#[derive(Clone, Debug, Default)]
pub struct Graph {
    /// The function's symbol name.
    pub name: String,
    g: StableDiGraph<Node, usize>,
    inputs: Vec<NodeId>,
    outputs: Vec<NodeId>,
    locations: HashMap<NodeId, Location>,
    /// Location of the function itself.
    pub location: Location,
}

impl Graph {
    /// An empty function.
    pub fn new(name: impl Into<String>) -> Self {
        Graph { name: name.into(), ..Graph::default() }
    }

    /// Adds a function argument of type `ty`; returns its node.
    pub fn add_input(&mut self, ty: TensorType, loc: Location) -> NodeId {
        let id = self.add_node(Op::Arg(self.inputs.len()), ValueType::Tensor(ty), &[], loc);
        self.inputs.push(id);
        id
    }

    /// Adds an op with its operands in order; returns its node.
    pub fn add_node(&mut self, op: Op, ty: ValueType, operands: &[NodeId], loc: Location) -> NodeId {
        let id = NodeId(self.g.add_node(Node { op, ty, attrs: Vec::new() }));
        for (i, o) in operands.iter().enumerate() {
            self.g.add_edge(o.0, id.0, i);
        }
        if loc != Location::default() {
            self.locations.insert(id, loc);
        }
        id
    }

    /// Adds a constant tensor (`tosa.const`) of the tensor's own type.
    pub fn add_constant(&mut self, t: crate::Tensor, loc: Location) -> NodeId {
        let ty = ValueType::Tensor(t.ty());
        self.add_node(Op::Const(t), ty, &[], loc)
    }

    /// Removes the arguments nothing uses (and that are not results), renumbering the rest;
    /// returns the positions removed, in increasing order.
    pub fn remove_unused_inputs(&mut self) -> Vec<usize> {
        let unused: Vec<usize> = (0..self.inputs.len()).filter(|&k| !self.is_used(self.inputs[k]) && !self.outputs.contains(&self.inputs[k])).collect();
        for &k in unused.iter().rev() {
            let id = self.inputs.remove(k);
            self.remove_node(id);
        }
        for (k, id) in self.inputs.clone().into_iter().enumerate() {
            self.node_mut(id).op = Op::Arg(k);
        }
        unused
    }

    /// Appends a function result.
    pub fn add_output(&mut self, id: NodeId) {
        self.outputs.push(id);
    }

    /// Replaces the function results.
    pub fn set_outputs(&mut self, outputs: Vec<NodeId>) {
        self.outputs = outputs;
    }

    /// The argument nodes, in order.
    pub fn inputs(&self) -> &[NodeId] {
        &self.inputs
    }

    /// The result values, in order.
    pub fn outputs(&self) -> &[NodeId] {
        &self.outputs
    }

    /// True if `id` names a node of this graph.
    pub fn contains(&self, id: NodeId) -> bool {
        self.g.contains_node(id.0)
    }

    /// The node. Panics on an id from another graph or a removed node.
    pub fn node(&self, id: NodeId) -> &Node {
        &self.g[id.0]
    }

    /// The node, mutably.
    pub fn node_mut(&mut self, id: NodeId) -> &mut Node {
        &mut self.g[id.0]
    }

    /// The op of a node.
    pub fn op(&self, id: NodeId) -> &Op {
        &self.g[id.0].op
    }

    /// The result type of a node.
    pub fn ty(&self, id: NodeId) -> &ValueType {
        &self.g[id.0].ty
    }

    /// The tensor type of a node; `None` for shape values.
    pub fn tensor_ty(&self, id: NodeId) -> Option<&TensorType> {
        self.g[id.0].ty.as_tensor()
    }

    /// The location of a node (unknown if none was recorded).
    pub fn location(&self, id: NodeId) -> Location {
        self.locations.get(&id).cloned().unwrap_or_default()
    }

    /// Sets the location of a node.
    pub fn set_location(&mut self, id: NodeId, loc: Location) {
        self.locations.insert(id, loc);
    }

    /// Number of nodes.
    pub fn len(&self) -> usize {
        self.g.node_count()
    }

    /// True when the graph has no nodes.
    pub fn is_empty(&self) -> bool {
        self.g.node_count() == 0
    }

    /// All node ids, in creation order.
    pub fn node_ids(&self) -> impl Iterator<Item = NodeId> + '_ {
        self.g.node_indices().map(NodeId)
    }

    /// The operands of a node, in order.
    pub fn operands(&self, id: NodeId) -> Vec<NodeId> {
        let mut ops: Vec<(usize, NodeId)> =
            self.g.edges_directed(id.0, Direction::Incoming).map(|e| (*e.weight(), NodeId(e.source()))).collect();
        ops.sort_unstable();
        ops.into_iter().map(|(_, n)| n).collect()
    }

    /// The operand positions recorded on a node's incoming edges, sorted (the verifier checks
    /// they are exactly `0..n`).
    pub fn operand_slots(&self, id: NodeId) -> Vec<usize> {
        let mut v: Vec<usize> = self.g.edges_directed(id.0, Direction::Incoming).map(|e| *e.weight()).collect();
        v.sort_unstable();
        v
    }

    /// The uses of a node: `(user, operand position)`, sorted.
    pub fn users(&self, id: NodeId) -> Vec<(NodeId, usize)> {
        let mut v: Vec<(NodeId, usize)> =
            self.g.edges_directed(id.0, Direction::Outgoing).map(|e| (NodeId(e.target()), *e.weight())).collect();
        v.sort_unstable();
        v
    }

    /// True if the value is used by another node or is a function result.
    pub fn is_used(&self, id: NodeId) -> bool {
        self.outputs.contains(&id) || self.g.edges_directed(id.0, Direction::Outgoing).next().is_some()
    }

    /// Makes operand `pos` of `user` be `value`.
    pub fn set_operand(&mut self, user: NodeId, pos: usize, value: NodeId) {
        let old: Vec<_> =
            self.g.edges_directed(user.0, Direction::Incoming).filter(|e| *e.weight() == pos).map(|e| e.id()).collect();
        for e in old {
            self.g.remove_edge(e);
        }
        self.g.add_edge(value.0, user.0, pos);
    }

    /// Replaces every use of `old` (operands and function results) with `new`.
    pub fn replace_all_uses(&mut self, old: NodeId, new: NodeId) {
        for (user, pos) in self.users(old) {
            self.set_operand(user, pos, new);
        }
        for o in &mut self.outputs {
            if *o == old {
                *o = new;
            }
        }
    }

    /// Removes a node and its edges. Its users must have been redirected first.
    pub fn remove_node(&mut self, id: NodeId) {
        self.locations.remove(&id);
        self.g.remove_node(id.0);
    }

    /// Removes every node that no function result depends on (arguments stay); returns how many.
    pub fn remove_dead_nodes(&mut self) -> usize {
        let bound = self.g.node_indices().map(|n| n.index() + 1).max().unwrap_or(0);
        let mut live = vec![false; bound];
        let mut stack: Vec<NodeId> = self.outputs.clone();
        stack.extend_from_slice(&self.inputs);
        while let Some(n) = stack.pop() {
            if std::mem::replace(&mut live[n.index()], true) {
                continue;
            }
            stack.extend(self.operands(n));
        }
        let dead: Vec<NodeId> = self.node_ids().filter(|n| !live[n.index()]).collect();
        for &n in &dead {
            self.remove_node(n);
        }
        dead.len()
    }

    /// Nodes in a topological order (operands before users), ties broken by node id so that the
    /// order is deterministic. `None` if the graph has a cycle.
    pub fn topo_order(&self) -> Option<Vec<NodeId>> {
        let mut indeg: HashMap<NodeId, usize> =
            self.node_ids().map(|n| (n, self.g.edges_directed(n.0, Direction::Incoming).count())).collect();
        let mut ready: std::collections::BinaryHeap<std::cmp::Reverse<NodeId>> =
            indeg.iter().filter(|(_, &d)| d == 0).map(|(&n, _)| std::cmp::Reverse(n)).collect();
        let mut order = Vec::with_capacity(self.len());
        while let Some(std::cmp::Reverse(n)) = ready.pop() {
            order.push(n);
            for e in self.g.edges_directed(n.0, Direction::Outgoing) {
                let d = indeg.get_mut(&NodeId(e.target())).expect("edge target is a node");
                *d -= 1;
                if *d == 0 {
                    ready.push(std::cmp::Reverse(NodeId(e.target())));
                }
            }
        }
        (order.len() == self.len()).then_some(order)
    }

    /// Structural equality: the same ops, types, attributes and wiring in topological order,
    /// and the same inputs and outputs (node ids and locations may differ).
    pub fn same_as(&self, other: &Graph) -> bool {
        let (Some(a), Some(b)) = (self.topo_order(), other.topo_order()) else { return false };
        if a.len() != b.len() || self.name != other.name {
            return false;
        }
        let pos_a: HashMap<NodeId, usize> = a.iter().enumerate().map(|(i, &n)| (n, i)).collect();
        let pos_b: HashMap<NodeId, usize> = b.iter().enumerate().map(|(i, &n)| (n, i)).collect();
        let same_nodes = a.iter().zip(&b).all(|(&x, &y)| {
            self.node(x) == other.node(y)
                && self.operands(x).iter().map(|o| pos_a[o]).eq(other.operands(y).iter().map(|o| pos_b[o]))
        });
        same_nodes
            && self.inputs.iter().map(|o| pos_a[o]).eq(other.inputs.iter().map(|o| pos_b[o]))
            && self.outputs.iter().map(|o| pos_a[o]).eq(other.outputs.iter().map(|o| pos_b[o]))
    }
}

/// A module: the functions of one MLIR file, in order.
#[derive(Clone, Debug, Default)]
pub struct Module {
    /// The functions.
    pub functions: Vec<Graph>,
}

impl Module {
    /// Structural equality of every function (see [`Graph::same_as`]).
    pub fn same_as(&self, other: &Module) -> bool {
        self.functions.len() == other.functions.len()
            && self.functions.iter().zip(&other.functions).all(|(a, b)| a.same_as(b))
    }
}
