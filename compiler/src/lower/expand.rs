//! Ops rewritten into ops every backend has, before lowering, with the reference's results bit
//! for bit:
//! - `tosa.resize`: its taps are known at compile time (they depend only on the static shapes
//!   and the scale and offset operands), so nearest neighbour is one gather with a constant
//!   index map, and bilinear four gathers weighted by constant tensors, summed in the order the
//!   reference sums them. Float data is widened to f32 (f64 stays f64) around the arithmetic
//!   and rounded once at the end (`semantics::resize` computes each weight with the same
//!   [`ResizeParams`]).
//! - `tosa.table` on i8: a gather from the 256-entry table at `x + 128`.
//! - `tosa.rescale` stays, but its `[C]` multiplier and shift are reshaped to the input's rank
//!   (`[1, …, 1, C]`), so that the elementwise kernels broadcast them like any operand.

use f16c_dialect::semantics::{ResizeParams, ResizeTap};
use f16c_dialect::{BinaryOp, DType, Data, Graph, Location, NodeId, Op, Tensor, TensorType, ValueType};

fn expands(op: &Op) -> bool {
    matches!(op, Op::Resize { .. } | Op::Table | Op::Rescale(_))
}

/// Whether the graph has an op for [`expand`] to rewrite.
pub fn needed(g: &Graph) -> bool {
    g.node_ids().any(|id| expands(g.op(id)))
}

/// A copy of `g` with every resize and table replaced by gathers and elementwise ops (on the
/// original op's location). The graph must have been verified.
pub fn expand(g: &Graph) -> Graph {
    let mut g = g.clone();
    let todo: Vec<NodeId> = g.node_ids().filter(|&id| expands(g.op(id))).collect();
    for id in todo {
        let ops = g.operands(id);
        let out = g.tensor_ty(id).expect("a tensor").clone();
        let new = match *g.op(id) {
            Op::Resize { bilinear } => {
                let shape = |n: NodeId| match g.op(n) {
                    Op::ConstShape(s) => s.clone(),
                    _ => Vec::new(),
                };
                let params = ResizeParams::new(&shape(ops[1]), &shape(ops[2])).expect("verified: a scale of 4 and an offset of 2");
                Builder { loc: g.location(id), g: &mut g }.resize(ops[0], &params, bilinear, &out)
            }
            Op::Rescale(_) => {
                let mut b = Builder { loc: g.location(id), g: &mut g };
                let mut shape = vec![1; out.rank()];
                for slot in [1, 2] {
                    let t = b.g.tensor_ty(ops[slot]).expect("a tensor").clone();
                    *shape.last_mut().expect("rank >= 1") = t.num_elements();
                    let r = b.reshape(ops[slot], t.dtype, &shape);
                    b.g.set_operand(id, slot, r);
                }
                continue;
            }
            _ => Builder { loc: g.location(id), g: &mut g }.table(ops[0], ops[1], &out),
        };
        g.replace_all_uses(id, new);
        g.remove_node(id);
    }
    g
}

struct Builder<'g> {
    g: &'g mut Graph,
    loc: Location,
}

impl Builder<'_> {
    fn node(&mut self, op: Op, d: DType, shape: &[usize], operands: &[NodeId]) -> NodeId {
        self.g.add_node(op, ValueType::Tensor(TensorType::new(d, shape.to_vec())), operands, self.loc.clone())
    }

    fn constant(&mut self, t: Tensor) -> NodeId {
        let ty = ValueType::Tensor(t.ty());
        self.g.add_node(Op::Const(t), ty, &[], self.loc.clone())
    }

    fn reshape(&mut self, x: NodeId, d: DType, shape: &[usize]) -> NodeId {
        let s = self.g.add_node(Op::ConstShape(shape.iter().map(|&v| v as i64).collect()), ValueType::Shape(shape.len()), &[], self.loc.clone());
        self.node(Op::Reshape, d, shape, &[x, s])
    }

    fn cast(&mut self, x: NodeId, from: DType, to: DType, shape: &[usize]) -> NodeId {
        if from == to { x } else { self.node(Op::Cast, to, shape, &[x]) }
    }

    fn mul(&mut self, a: NodeId, b: NodeId, d: DType, shape: &[usize]) -> NodeId {
        let shift = self.constant(Tensor::new(vec![1], Data::I8(vec![0])).expect("one element"));
        self.node(Op::Binary(BinaryOp::Mul), d, shape, &[a, b, shift])
    }

    /// `table[x + 128]` for i8 `x`: a gather from the table as `[1, 256, 1]` values.
    fn table(&mut self, x: NodeId, table: NodeId, out: &TensorType) -> NodeId {
        let count = out.num_elements();
        let wide = self.cast(x, DType::I8, DType::I32, &out.shape);
        let bias = self.constant(Tensor::new(vec![1; out.rank()], Data::I32(vec![128])).expect("one element"));
        let index = self.node(Op::Binary(BinaryOp::Add), DType::I32, &out.shape, &[wide, bias]);
        let index = self.reshape(index, DType::I32, &[1, count]);
        let values = self.reshape(table, DType::I8, &[1, 256, 1]);
        let g = self.node(Op::Gather, DType::I8, &[1, count, 1], &[values, index]);
        self.reshape(g, DType::I8, &out.shape)
    }

    fn resize(&mut self, x: NodeId, p: &ResizeParams, bilinear: bool, out: &TensorType) -> NodeId {
        let input = self.g.tensor_ty(x).expect("a tensor").clone();
        let (&[n, ih, iw, c], &[_, oh, ow, _]) = (&input.shape[..], &out.shape[..]) else { unreachable!("verified: NHWC") };
        let d = input.dtype;
        let ty: Vec<ResizeTap> = (0..oh).map(|o| p.tap(0, o, ih)).collect();
        let tx: Vec<ResizeTap> = (0..ow).map(|o| p.tap(1, o, iw)).collect();
        // The input as gather values [N, IH·IW, C]; each tap a gather of [N, OH·OW] indices.
        let values = self.reshape(x, d, &[n, ih * iw, c]);
        let out4 = [n, oh, ow, c];
        let gather = |b: &mut Self, pick: &dyn Fn(usize, usize) -> usize| {
            let index: Vec<i32> = (0..n).flat_map(|_| (0..oh).flat_map(|y| (0..ow).map(move |x| (y, x)))).map(|(y, x)| pick(y, x) as i32).collect();
            let idx = b.constant(Tensor::new(vec![n, oh * ow], Data::I32(index)).expect("sized"));
            let g = b.node(Op::Gather, d, &[n, oh * ow, c], &[values, idx]);
            b.reshape(g, d, &out4)
        };
        if !bilinear {
            return gather(self, &|y, x| p.nearest(0, ty[y]) * iw + p.nearest(1, tx[x]));
        }
        let taps = [
            gather(self, &|y, x| ty[y].i0 * iw + tx[x].i0),
            gather(self, &|y, x| ty[y].i0 * iw + tx[x].i1),
            gather(self, &|y, x| ty[y].i1 * iw + tx[x].i0),
            gather(self, &|y, x| ty[y].i1 * iw + tx[x].i1),
        ];
        // The weights along y ([1, OH, 1, 1]) and x ([1, 1, OW, 1]) in the compute type: f32
        // (f64 for f64 data) as `1 - r/n` and `r/n`, integers (i8 data, an i32 result) as
        // `n - r` and `r`.
        let w = match d {
            DType::F64 => DType::F64,
            f if f.is_float() => DType::F32,
            _ => DType::I32,
        };
        let weights = |b: &mut Self, axis: usize, taps: &[ResizeTap], shape: [usize; 4]| -> [NodeId; 2] {
            let pair = |t: ResizeTap| -> (f64, f64) {
                match w {
                    DType::F32 => {
                        let (a, c) = p.weights_f32(axis, t);
                        (a as f64, c as f64)
                    }
                    DType::F64 => p.weights_f64(axis, t),
                    _ => ((p.scale[2 * axis] - t.r) as f64, t.r as f64),
                }
            };
            let data = |k: usize| -> Data {
                let v: Vec<f64> = taps.iter().map(|&t| if k == 0 { pair(t).0 } else { pair(t).1 }).collect();
                match w {
                    DType::F32 => Data::F32(v.into_iter().map(|x| x as f32).collect()),
                    DType::F64 => Data::F64(v),
                    _ => Data::I32(v.into_iter().map(|x| x as i32).collect()),
                }
            };
            [0, 1].map(|k| b.constant(Tensor::new(shape.to_vec(), data(k)).expect("sized")))
        };
        let [y0, y1] = weights(self, 0, &ty, [1, oh, 1, 1]);
        let [x0, x1] = weights(self, 1, &tx, [1, 1, ow, 1]);
        // v00·y0·x0 + v01·y0·x1 + v10·y1·x0 + v11·y1·x1, left to right.
        let mut acc = None;
        for (v, (wy, wx)) in taps.into_iter().zip([(y0, x0), (y0, x1), (y1, x0), (y1, x1)]) {
            let v = self.cast(v, d, w, &out4);
            let t = self.mul(v, wy, w, &out4);
            let t = self.mul(t, wx, w, &out4);
            acc = Some(match acc {
                None => t,
                Some(a) => self.node(Op::Binary(BinaryOp::Add), w, &out4, &[a, t]),
            });
        }
        let acc = acc.expect("four taps");
        self.cast(acc, w, out.dtype, &out4)
    }
}
