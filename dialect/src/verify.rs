//! The graph verifier: the invariants every pass must preserve, all checked, every violation
//! reported (not just the first).
//!
//! Invariants:
//! 1. The graph is acyclic; every node's operand positions are exactly `0..n`, and `n` is within
//!    the op's arity ([`Op::arity`]).
//! 2. Arguments are the `Op::Arg` nodes, numbered in order; every function result is a tensor.
//! 3. Shape operands ([`Op::shape_operands`]) are `!tosa.shape` values; all other operands and
//!    every result except `tosa.const_shape`'s are tensors.
//! 4. Constants hold data of exactly their result type; a const_shape's rank is its length.
//! 5. Element types: elementwise ops, clamp, reductions, pooling and data movement keep the
//!    element type of their data operands; comparisons produce i1; select takes an i1
//!    predicate; contractions take one element type on both data operands.
//! 6. Shapes: elementwise operands broadcast to the result (equal rank, size-1 dims stretch);
//!    reshape keeps the element count; transpose permutes; reductions keep the axis as 1;
//!    cast keeps the shape; matmul is `[N,H,C] x [N,C,W] -> [N,H,W]`; convolutions and pooling
//!    produce the spatial size their attributes imply.

use crate::diag::{Diagnostic, Diagnostics};
use crate::graph::{Graph, Module, NodeId};
use crate::op::{BinaryOp, Op, Region, Rounding, UnaryOp};
use crate::types::{DType, TensorType, ValueType};

/// Verifies every function of a module (the pass manager, before and after its passes; the
/// driver verifies each function again before lowering it, [`verify`]).
pub fn verify_module(m: &Module) -> Result<(), Diagnostics> {
    let mut errors = Vec::new();
    for g in &m.functions {
        if let Err(d) = verify(g) {
            errors.extend(d.0);
        }
    }
    if errors.is_empty() { Ok(()) } else { Err(Diagnostics(errors)) }
}

/// Verifies one function.
pub fn verify(g: &Graph) -> Result<(), Diagnostics> {
    let mut v = Verifier { g, errors: Vec::new() };
    v.run();
    if v.errors.is_empty() { Ok(()) } else { Err(Diagnostics(v.errors)) }
}

struct Verifier<'g> {
    g: &'g Graph,
    errors: Vec<Diagnostic>,
}

impl Verifier<'_> {
    fn fail(&mut self, id: NodeId, msg: impl Into<String>) {
        let op = self.g.op(id).mlir_name();
        self.errors.push(Diagnostic::error(self.g.location(id), format!("'{op}' op {}", msg.into())));
    }

    fn run(&mut self) {
        let g = self.g;
        if g.topo_order().is_none() {
            self.errors.push(Diagnostic::error(g.location.clone(), format!("function '@{}' has a cycle", g.name)));
            return;
        }
        for (k, &i) in g.inputs().iter().enumerate() {
            if g.op(i) != &Op::Arg(k) {
                self.fail(i, format!("input #{k} is not argument node #{k}"));
            }
        }
        for (k, &o) in g.outputs().iter().enumerate() {
            if g.tensor_ty(o).is_none() {
                self.errors.push(Diagnostic::error(g.location.clone(), format!("result #{k} of '@{}' is not a tensor", g.name)));
            }
        }
        for id in g.node_ids() {
            self.node(id);
        }
    }

    fn node(&mut self, id: NodeId) {
        let g = self.g;
        let op = g.op(id);
        let slots = g.operand_slots(id);
        if slots.iter().enumerate().any(|(i, &s)| i != s) {
            self.fail(id, format!("has operand slots {slots:?}, expected 0..{}", slots.len()));
            return;
        }
        let operands = g.operands(id);
        let (lo, hi) = op.arity();
        if operands.len() < lo || hi.is_some_and(|h| operands.len() > h) {
            self.fail(id, format!("takes {lo}{} operands, has {}", hi.map_or("+".to_string(), |h| if h == lo { String::new() } else { format!("..{h}") }), operands.len()));
            return;
        }
        if let Op::Arg(k) = op {
            if g.inputs().get(*k) != Some(&id) {
                self.fail(id, format!("argument #{k} is not input #{k}"));
            }
        }
        for (i, &o) in operands.iter().enumerate() {
            let want_shape = op.shape_operands().contains(&i);
            let is_shape = matches!(g.ty(o), ValueType::Shape(_));
            if want_shape != is_shape {
                self.fail(id, format!("operand #{i} must be {}", if want_shape { "a !tosa.shape" } else { "a tensor" }));
                return;
            }
            if matches!(g.ty(o), ValueType::Results(_)) != matches!(op, Op::Result(_)) {
                self.fail(id, format!("operand #{i}: only f16c.result takes the results of a control-flow op"));
                return;
            }
        }
        if op.is_control_flow() || matches!(op, Op::Result(_)) {
            self.control_flow(id, &operands);
            return;
        }
        let out = match (op, g.ty(id)) {
            (Op::ConstShape(s), ValueType::Shape(n)) => {
                if s.len() != *n {
                    self.fail(id, format!("holds {} values but its type is !tosa.shape<{n}>", s.len()));
                }
                return;
            }
            (_, ValueType::Tensor(t)) => t,
            _ => {
                self.fail(id, "must produce a tensor");
                return;
            }
        };
        let t = |i: usize| g.tensor_ty(operands[i]).expect("checked: tensor operand");
        let shape_val = |i: usize| match g.op(operands[i]) {
            Op::ConstShape(s) => Some(s.clone()),
            _ => None,
        };
        match op {
            Op::Arg(_) | Op::ConstShape(_) | Op::CondIf { .. } | Op::WhileLoop { .. } | Op::Result(_) => {}
            Op::Const(c) => {
                if c.ty() != *out {
                    self.fail(id, format!("holds {} data but its type is {out}", c.ty()));
                }
            }
            Op::Unary(u) => {
                self.same_elem(id, t(0), out);
                self.same_shape(id, t(0), out);
                if *u == UnaryOp::Clz {
                    self.types_among(id, out, &[DType::I32]);
                } else if u.is_integer_only() {
                    if out.dtype.is_float() || out.dtype == DType::I1 {
                        self.fail(id, format!("needs an integer type, has {}", out.dtype));
                    }
                } else if u.is_logical() {
                    if out.dtype != DType::I1 {
                        self.fail(id, format!("needs i1, has {}", out.dtype));
                    }
                } else if *u != UnaryOp::Negate && *u != UnaryOp::Abs && !out.dtype.is_float() {
                    self.fail(id, format!("needs a float type, has {}", out.dtype));
                }
            }
            Op::Binary(b) => {
                for i in 0..2 {
                    self.broadcasts(id, i, t(i), out);
                }
                if t(0).dtype != t(1).dtype {
                    self.fail(id, format!("operands have element types {} and {}", t(0).dtype, t(1).dtype));
                }
                if b.is_comparison() {
                    if out.dtype != DType::I1 {
                        self.fail(id, format!("produces {}, expected i1", out.dtype));
                    }
                } else {
                    self.same_elem(id, t(0), out);
                }
                if *b == BinaryOp::Pow && !out.dtype.is_float() {
                    self.fail(id, "needs a float type");
                }
                if b.is_shift() {
                    self.types_among(id, out, &[DType::I8, DType::I16, DType::I32]);
                } else if *b == BinaryOp::IntDiv {
                    self.types_among(id, out, &[DType::I32]);
                } else if b.is_integer_only() && (out.dtype.is_float() || out.dtype == DType::I1) {
                    self.fail(id, format!("needs an integer type, has {}", out.dtype));
                }
                if b.is_logical() && out.dtype != DType::I1 {
                    self.fail(id, format!("needs i1, has {}", out.dtype));
                }
            }
            Op::Clamp { min, max } => {
                self.same_elem(id, t(0), out);
                self.same_shape(id, t(0), out);
                if min > max {
                    self.fail(id, format!("has min_val {min} above max_val {max}"));
                }
            }
            Op::Cast => self.same_shape(id, t(0), out),
            Op::Select => {
                if t(0).dtype != DType::I1 {
                    self.fail(id, "predicate must be i1");
                }
                for i in 0..3 {
                    self.broadcasts(id, i, t(i), out);
                }
                self.same_elem(id, t(1), out);
                self.same_elem(id, t(2), out);
            }
            Op::Reduce { axis, .. } => {
                self.same_elem(id, t(0), out);
                let mut want = t(0).shape.clone();
                if *axis < want.len() {
                    want[*axis] = 1;
                    self.shape_is(id, out, &want);
                } else {
                    self.fail(id, format!("axis {axis} is out of range for rank {}", want.len()));
                }
            }
            Op::ArgMax { axis } => {
                let mut want = t(0).shape.clone();
                if *axis < want.len() {
                    want.remove(*axis);
                    self.shape_is(id, out, &want);
                } else {
                    self.fail(id, format!("axis {axis} is out of range for rank {}", want.len()));
                }
                if !out.dtype.is_int() {
                    self.fail(id, "must produce an integer tensor");
                }
            }
            Op::Reshape => {
                self.same_elem(id, t(0), out);
                if t(0).num_elements() != out.num_elements() {
                    self.fail(id, format!("reshapes {} into {out}: element counts differ", t(0)));
                }
                if let Some(s) = shape_val(1) {
                    if s.len() != out.rank() || s.iter().zip(&out.shape).any(|(&a, &b)| a != -1 && a as usize != b) {
                        self.fail(id, format!("shape operand {s:?} does not match result {out}"));
                    }
                }
            }
            Op::Identity => {
                self.same_elem(id, t(0), out);
                self.same_shape(id, t(0), out);
            }
            Op::Reverse { axis } => {
                self.same_elem(id, t(0), out);
                self.same_shape(id, t(0), out);
                if *axis >= t(0).rank() {
                    self.fail(id, format!("axis {axis} is out of range for rank {}", t(0).rank()));
                }
            }
            Op::Transpose { perms } => {
                self.same_elem(id, t(0), out);
                let mut seen = perms.clone();
                seen.sort_unstable();
                if seen != (0..t(0).rank()).collect::<Vec<_>>() {
                    self.fail(id, format!("perms {perms:?} is not a permutation of 0..{}", t(0).rank()));
                } else {
                    let want: Vec<usize> = perms.iter().map(|&p| t(0).shape[p]).collect();
                    self.shape_is(id, out, &want);
                }
            }
            Op::Slice => {
                self.same_elem(id, t(0), out);
                if let (Some(start), Some(size)) = (shape_val(1), shape_val(2)) {
                    let input = &t(0).shape;
                    let ok = start.len() == input.len()
                        && size.len() == input.len()
                        && start.iter().zip(&size).zip(input).all(|((&s, &z), &d)| s >= 0 && z >= 0 && (s + z) as usize <= d);
                    if !ok {
                        self.fail(id, format!("start {start:?} + size {size:?} is outside the input {}", t(0)));
                    } else {
                        self.shape_is(id, out, &size.iter().map(|&z| z as usize).collect::<Vec<_>>());
                    }
                }
            }
            Op::Pad => {
                self.same_elem(id, t(0), out);
                self.same_elem(id, t(2), out);
                if let Some(p) = shape_val(1) {
                    if p.len() != 2 * t(0).rank() || p.iter().any(|&x| x < 0) {
                        self.fail(id, format!("padding {p:?} needs two non-negative entries for each of {} dims", t(0).rank()));
                    } else {
                        let want: Vec<usize> = t(0).shape.iter().enumerate().map(|(d, &s)| s + (p[2 * d] + p[2 * d + 1]) as usize).collect();
                        self.shape_is(id, out, &want);
                    }
                }
            }
            Op::Tile => {
                self.same_elem(id, t(0), out);
                if let Some(m) = shape_val(1) {
                    let want: Vec<usize> = t(0).shape.iter().zip(&m).map(|(&s, &k)| s * k.max(0) as usize).collect();
                    if m.len() != t(0).rank() {
                        self.fail(id, "multiples must have one entry a dimension");
                    } else {
                        self.shape_is(id, out, &want);
                    }
                }
            }
            Op::Concat { axis } => {
                let first = t(0).clone();
                let mut total = 0;
                for i in 0..operands.len() {
                    let ti = t(i);
                    self.same_elem(id, ti, out);
                    if ti.rank() != first.rank() || *axis >= ti.rank() {
                        self.fail(id, format!("operand #{i} has rank {} or axis {axis} is out of range", ti.rank()));
                        return;
                    }
                    total += ti.shape[*axis];
                }
                let mut want = first.shape.clone();
                want[*axis] = total;
                self.shape_is(id, out, &want);
            }
            Op::Rescale(r) => {
                self.same_shape(id, t(0), out);
                let (ins, outs) = ([DType::I8, DType::I16, DType::I32, DType::I48], [DType::I8, DType::I16, DType::I32]);
                if !ins.contains(&t(0).dtype) || !outs.contains(&out.dtype) {
                    self.fail(id, format!("is defined from i8, i16, i32 or i48 to i8, i16 or i32, not {} -> {}", t(0).dtype, out.dtype));
                }
                if r.scale32 && t(0).dtype == DType::I48 {
                    self.fail(id, "of an i48 input needs scale32 = false (TOSA: 16-bit multipliers)");
                }
                if !r.scale32 && r.rounding == Rounding::Double {
                    self.fail(id, "with scale32 = false cannot use DOUBLE_ROUND (TOSA)");
                }
                let channels = if r.per_channel { t(0).shape.last().copied().unwrap_or(1) } else { 1 };
                let multiplier = if r.scale32 { DType::I32 } else { DType::I16 };
                for (i, (what, d)) in [(1, ("multiplier", multiplier)), (2, ("shift", DType::I8))] {
                    if t(i).dtype != d || t(i).shape != [channels] {
                        self.fail(id, format!("{what} {} should be tensor<{channels}x{d}>", t(i)));
                    }
                }
                for (i, d) in [(3, t(0).dtype), (4, out.dtype)] {
                    if t(i).dtype != d {
                        self.fail(id, format!("zero point #{i} {} should have element type {d}", t(i)));
                    }
                }
            }
            Op::Table => {
                // TOSA's table: i8 -> i8 with 256 entries, i16 -> i32 with 513 (interpolated).
                self.same_shape(id, t(0), out);
                let (want_out, entries) = match t(0).dtype {
                    DType::I16 => (DType::I32, 513),
                    _ => (DType::I8, 256),
                };
                if !matches!(t(0).dtype, DType::I8 | DType::I16) || out.dtype != want_out {
                    self.fail(id, format!("is defined on i8 (-> i8) and i16 (-> i32), not {} -> {}", t(0).dtype, out.dtype));
                }
                let table_d = if t(0).dtype == DType::I16 { DType::I16 } else { DType::I8 };
                if t(1).dtype != table_d || t(1).shape != [entries] {
                    self.fail(id, format!("needs a tensor<{entries}x{table_d}> table, has {}", t(1)));
                }
            }
            Op::Resize { bilinear } => {
                let (input, out_d) = (t(0), out.dtype);
                let want_d = match input.dtype {
                    d if d.is_float() => Some(d),
                    DType::I8 if *bilinear => Some(DType::I32),
                    DType::I16 if *bilinear => Some(DType::I48),
                    DType::I8 | DType::I16 => Some(input.dtype),
                    _ => None,
                };
                match want_d {
                    None => self.fail(id, format!("is defined on floats, i8 and i16, not {}", input.dtype)),
                    Some(d) if d != out_d => self.fail(id, format!("of {} produces {d}, not {out_d}", input.dtype)),
                    _ => {}
                }
                if let (&[n, ih, iw, c], Some(scale), Some(offset), Some(border)) = (&input.shape[..], shape_val(1), shape_val(2), shape_val(3)) {
                    match resize_extent(ih, iw, &scale, &offset, &border) {
                        Ok((oh, ow)) => self.shape_is(id, out, &[n, oh, ow, c]),
                        Err(m) => self.fail(id, m),
                    }
                } else if input.rank() != 4 {
                    self.fail(id, "takes a rank-4 NHWC input");
                }
            }
            Op::Scatter => {
                self.same_elem(id, t(0), out);
                self.same_elem(id, t(2), out);
                self.same_shape(id, t(0), out);
                match (&t(0).shape[..], &t(1).shape[..], &t(2).shape[..]) {
                    (&[n, _, c], &[n2, w], &[n3, w2, c2]) if n == n2 && n == n3 && w == w2 && c == c2 => {}
                    _ => self.fail(id, "takes [N,K,C] values_in, [N,W] indices and [N,W,C] input"),
                }
                if !matches!(t(1).dtype, DType::I32 | DType::I64) {
                    self.fail(id, format!("indices must be i32 or i64, not {}", t(1).dtype));
                }
            }
            Op::Gather => {
                self.same_elem(id, t(0), out);
                if let (&[n, _, c], &[_, w]) = (&t(0).shape[..], &t(1).shape[..]) {
                    self.shape_is(id, out, &[n, w, c]);
                } else {
                    self.fail(id, "takes [N,K,C] values and [N,W] indices");
                }
            }
            Op::MatMul => {
                self.contraction_types(id, &[t(0), t(1)], out);
                match (&t(0).shape[..], &t(1).shape[..]) {
                    (&[n, h, c], &[n2, c2, w]) if n == n2 && c == c2 => self.shape_is(id, out, &[n, h, w]),
                    _ => self.fail(id, format!("cannot multiply {} by {}", t(0), t(1))),
                }
            }
            Op::Conv2d(a) | Op::DepthwiseConv2d(a) => {
                self.contraction_types(id, &[t(0), t(1)], out);
                let dw = matches!(op, Op::DepthwiseConv2d(_));
                if let (&[n, ih, iw, ic], &[w0, w1, w2, w3]) = (&t(0).shape[..], &t(1).shape[..]) {
                    let (kh, kw, oc, wic) = if dw { (w0, w1, w2 * w3, w2) } else { (w1, w2, w0, w3) };
                    if wic != ic {
                        self.fail(id, format!("weight {} does not match {ic} input channels", t(1)));
                    }
                    let oh = conv_out(ih, a.pad[0] + a.pad[1], kh, a.stride[0], a.dilation[0]);
                    let ow = conv_out(iw, a.pad[2] + a.pad[3], kw, a.stride[1], a.dilation[1]);
                    match (oh, ow) {
                        (Some(oh), Some(ow)) => self.shape_is(id, out, &[n, oh, ow, oc]),
                        _ => self.fail(id, "kernel, stride and padding leave no output"),
                    }
                    self.bias(id, t(2), oc);
                } else {
                    self.fail(id, "takes a rank-4 NHWC input and a rank-4 weight");
                }
            }
            Op::Conv3d(a) => {
                self.contraction_types(id, &[t(0), t(1)], out);
                if let (&[n, depth, ih, iw, ic], &[oc, kd, kh, kw, wic]) = (&t(0).shape[..], &t(1).shape[..]) {
                    if wic != ic {
                        self.fail(id, format!("weight {} does not match {ic} input channels", t(1)));
                    }
                    let extent = |axis: usize, input: usize, kernel: usize| {
                        conv_out(input, a.pad[2 * axis] + a.pad[2 * axis + 1], kernel, a.stride[axis], a.dilation[axis])
                    };
                    match (extent(0, depth, kd), extent(1, ih, kh), extent(2, iw, kw)) {
                        (Some(od), Some(oh), Some(ow)) => self.shape_is(id, out, &[n, od, oh, ow, oc]),
                        _ => self.fail(id, "kernel, stride and padding leave no output"),
                    }
                    self.bias(id, t(2), oc);
                } else {
                    self.fail(id, "takes a rank-5 NDHWC input and a rank-5 ODHWI weight");
                }
            }
            Op::TransposeConv2d(a) => {
                self.contraction_types(id, &[t(0), t(1)], out);
                if let (&[n, ih, iw, _], &[oc, kh, kw, _]) = (&t(0).shape[..], &t(1).shape[..]) {
                    let oh = (ih - 1) * a.stride[0] + a.out_pad[0] + a.out_pad[1] + kh;
                    let ow = (iw.max(1) - 1) * a.stride[1] + a.out_pad[2] + a.out_pad[3] + kw;
                    self.shape_is(id, out, &[n, oh, ow, oc]);
                    self.bias(id, t(2), oc);
                } else {
                    self.fail(id, "takes a rank-4 NHWC input and a rank-4 OHWI weight");
                }
            }
            Op::MaxPool2d(p) | Op::AvgPool2d(p) => {
                self.same_elem(id, t(0), out);
                if let &[n, ih, iw, c] = &t(0).shape[..] {
                    let oh = conv_out(ih, p.pad[0] + p.pad[1], p.kernel[0], p.stride[0], 1);
                    let ow = conv_out(iw, p.pad[2] + p.pad[3], p.kernel[1], p.stride[1], 1);
                    match (oh, ow) {
                        (Some(oh), Some(ow)) => self.shape_is(id, out, &[n, oh, ow, c]),
                        _ => self.fail(id, "kernel, stride and padding leave no output"),
                    }
                } else {
                    self.fail(id, "takes a rank-4 NHWC input");
                }
            }
        }
    }

    /// `tosa.cond_if`, `tosa.while_loop` (operand layouts in [`Op`]) and `f16c.result`; the
    /// regions are verified as graphs of their own.
    fn control_flow(&mut self, id: NodeId, operands: &[NodeId]) {
        let g = self.g;
        let op = g.op(id);
        if let Op::Result(i) = op {
            match (g.ty(operands[0]), g.ty(id)) {
                (ValueType::Results(r), ValueType::Tensor(t)) if r.get(*i) == Some(t) => {}
                _ => self.fail(id, format!("must take result #{i} of a control-flow op, with its type")),
            }
            return;
        }
        let ValueType::Results(results) = g.ty(id) else {
            self.fail(id, "must produce a list of results");
            return;
        };
        let Some(types): Option<Vec<TensorType>> = operands.iter().map(|&o| g.tensor_ty(o).cloned()).collect() else {
            self.fail(id, "takes tensors");
            return;
        };
        for r in op.regions() {
            if let Err(d) = verify(&r.graph) {
                self.errors.extend(d.0);
            }
        }
        let inputs = |r: &Region| -> Vec<TensorType> { r.graph.inputs().iter().filter_map(|&i| r.graph.tensor_ty(i).cloned()).collect() };
        let outputs = |r: &Region| -> Vec<TensorType> { r.graph.outputs().iter().filter_map(|&o| r.graph.tensor_ty(o).cloned()).collect() };
        let one_i1 = |t: &TensorType| t.dtype == DType::I1 && t.num_elements() == 1;
        let list = |ts: &[TensorType]| ts.iter().map(|t| t.to_string()).collect::<Vec<_>>().join(", ");
        let layout = op.control_layout().expect("control flow");
        let [first, second] = [0, 1].map(|k| op.regions()[k]);
        let n = first.args;
        if second.args != n || types.len() != layout.captures[1].end {
            self.fail(id, format!("has {} operands for regions of {n} and {} arguments capturing {} and {} values", types.len(), second.args, first.captures(), second.captures()));
            return;
        }
        let init = &types[layout.inputs.clone()];
        for (k, r) in [first, second].into_iter().enumerate() {
            let want: Vec<TensorType> = init.iter().chain(&types[layout.captures[k].clone()]).cloned().collect();
            if inputs(r) != want {
                self.fail(id, format!("region #{k} takes ({}), but is given ({})", list(&inputs(r)), list(&want)));
            }
        }
        match layout.looping {
            false => {
                if !one_i1(&types[0]) {
                    self.fail(id, format!("condition must be one i1, not {}", types[0]));
                }
                for (k, r) in [first, second].into_iter().enumerate() {
                    if outputs(r) != *results {
                        self.fail(id, format!("region #{k} yields ({}), but the op produces ({})", list(&outputs(r)), list(results)));
                    }
                }
            }
            true => {
                if outputs(first).len() != 1 || !one_i1(&outputs(first)[0]) {
                    self.fail(id, format!("cond region must yield one i1, yields ({})", list(&outputs(first))));
                }
                if outputs(second) != init || results != init {
                    self.fail(id, format!("body yields ({}) and the op produces ({}), both must be the loop values' types ({})", list(&outputs(second)), list(results), list(init)));
                }
            }
        }
    }

    fn same_elem(&mut self, id: NodeId, a: &TensorType, out: &TensorType) {
        if a.dtype != out.dtype {
            self.fail(id, format!("operand element type {} differs from result element type {}", a.dtype, out.dtype));
        }
    }

    /// The element types TOSA defines an op on (f16c's subset of them).
    fn types_among(&mut self, id: NodeId, out: &TensorType, allowed: &[DType]) {
        if !allowed.contains(&out.dtype) {
            let list: Vec<String> = allowed.iter().map(|d| d.to_string()).collect();
            self.fail(id, format!("is defined on {}, not {}", list.join(" and "), out.dtype));
        }
    }

    fn same_shape(&mut self, id: NodeId, a: &TensorType, out: &TensorType) {
        if a.shape != out.shape {
            self.fail(id, format!("operand {a} and result {out} differ in shape"));
        }
    }

    fn shape_is(&mut self, id: NodeId, out: &TensorType, want: &[usize]) {
        if out.shape != want {
            self.fail(id, format!("result type {out} should have shape {want:?}"));
        }
    }

    fn broadcasts(&mut self, id: NodeId, i: usize, a: &TensorType, out: &TensorType) {
        if a.rank() != out.rank() || a.shape.iter().zip(&out.shape).any(|(&x, &y)| x != y && x != 1) {
            self.fail(id, format!("operand #{i} {a} does not broadcast to result {out}"));
        }
    }

    fn contraction_types(&mut self, id: NodeId, data: &[&TensorType], out: &TensorType) {
        // Input and weight share one element type (TOSA); the result is in the same family
        // (an integer contraction widens to i32, a float one may widen to f32).
        let fam = |d: DType| if d.is_float() { 0 } else { 1 };
        // TOSA's one mixed form: an i16 input with an i8 weight (an i48 result).
        let second_ok = |d: DType| d == data[0].dtype || (data[0].dtype == DType::I16 && d == DType::I8);
        if data[1..].iter().any(|t| !second_ok(t.dtype)) || fam(out.dtype) != fam(data[0].dtype) {
            let list: Vec<String> = data.iter().map(|t| t.dtype.to_string()).collect();
            self.fail(id, format!("mixes element types {} -> {}", list.join(", "), out.dtype));
        }
    }

    fn bias(&mut self, id: NodeId, bias: &TensorType, oc: usize) {
        if bias.rank() != 1 || (bias.shape[0] != oc && bias.shape[0] != 1) {
            self.fail(id, format!("bias {bias} does not match {oc} output channels"));
        }
    }
}

/// The output height and width of `tosa.resize`, checking the specification's requirements
/// on scale `[y_n, y_d, x_n, x_d]`, offset `[y, x]` and border `[y, x]`.
pub fn resize_extent(ih: usize, iw: usize, scale: &[i64], offset: &[i64], border: &[i64]) -> Result<(usize, usize), String> {
    if scale.len() != 4 || offset.len() != 2 || border.len() != 2 {
        return Err("takes a scale of 4 values and an offset and a border of 2".into());
    }
    let mut out = [0usize; 2];
    for (a, len) in [ih, iw].into_iter().enumerate() {
        let (n, d, o, b) = (scale[2 * a], scale[2 * a + 1], offset[a], border[a]);
        let axis = ["y", "x"][a];
        if !(1..=2048).contains(&n) || d < 1 || d >= 16 * n {
            return Err(format!("scale {axis} {n}/{d} is outside the specification's range (0 < n <= 2048, 0 < d < 16 n)"));
        }
        if o < -n || o >= 16 * n || b < -16 * n || b >= n {
            return Err(format!("offset {o} or border {b} along {axis} is outside the specification's range for scale {n}/{d}"));
        }
        let span = (len as i64 - 1) * n - o + b;
        if len == 0 || span < 0 || span % d != 0 {
            return Err(format!("({len} - 1) * {n} - {o} + {b} along {axis} is not a non-negative multiple of {d}"));
        }
        out[a] = (span / d) as usize + 1;
    }
    Ok((out[0], out[1]))
}

/// Output size of a convolution or pooling window along one axis: `input` with `pad` (both
/// sides together), a window of `kernel` taps `dilation` apart, every `stride`; `None` where the
/// window does not fit or the stride is 0.
pub fn conv_out(input: usize, pad: usize, kernel: usize, stride: usize, dilation: usize) -> Option<usize> {
    let span = (kernel.checked_sub(1)?) * dilation + 1;
    let padded = input + pad;
    (padded >= span && stride > 0).then(|| (padded - span) / stride + 1)
}
