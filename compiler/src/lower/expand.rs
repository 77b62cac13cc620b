//! Ops rewritten into ops every backend has, before lowering, with the reference's results bit
//! for bit:
//! - `tosa.resize`: its taps are known at compile time (they depend only on the static shapes
//!   and the scale and offset operands), so nearest neighbour is one gather with a constant
//!   index map, and bilinear four gathers weighted by constant tensors, summed in the order the
//!   reference sums them. Float data is widened to f32 (f64 stays f64) around the arithmetic
//!   and rounded once at the end (`semantics::resize` computes each weight with the same
//!   [`ResizeParams`]).
//! - `tosa.table` on i8: a gather from the 256-entry table at `x + 128`.
//! - `tosa.conv3d`: one conv2d over depth and channels merged. A gather with a constant index
//!   map builds `[N·OD, H, W, KD·C]` (row `(od, y, x)` holds, for each depth tap `kd`, the
//!   input plane `od·sd + kd·dd − pad_front`, or a plane of the input zero point where that
//!   falls in the depth padding), and the ODHWI weight becomes `[O, KH, KW, KD·C]`. The conv2d
//!   sums over `(ky, kx, kd, c)`, the order `semantics::conv3d` sums in, so the results are
//!   the reference's on every backend. Depth padding is multiplied as zeros, which changes
//!   nothing for finite weights; a weight that may hold an inf or a NaN (computed at run time,
//!   or a constant holding one) with depth padding is refused with a located error.
//! - a `conv2d` or `depthwise_conv2d` without padding whose input is a slice from the origin
//!   (keeping every image and channel) reads the sliced value itself where its output shape is
//!   the same over it ([`unsliced_input`]): the windows read the same values, and the slice's
//!   copy is gone.
//! - `tosa.rescale` stays, but its `[C]` multiplier and shift are reshaped to the input's rank
//!   (`[1, …, 1, C]`), so that the elementwise kernels broadcast them like any operand.

use f16c_dialect::semantics::{self, ResizeParams, ResizeTap, Value};
use f16c_dialect::{BinaryOp, Conv3dAttrs, ConvAttrs, DType, Data, Graph, Location, NodeId, Op, Tensor, TensorType, ValueType};

use super::LowerError;

fn expands(op: &Op) -> bool {
    matches!(op, Op::Resize { .. } | Op::Table | Op::Rescale(_) | Op::Conv3d(_))
}

/// Whether the graph has an op for [`expand`] to rewrite.
pub fn needed(g: &Graph) -> bool {
    g.node_ids().any(|id| expands(g.op(id)) || unsliced_input(g, id).is_some())
}

/// The value a convolution without padding (`conv2d`, `depthwise_conv2d`) at `id` can read in
/// place of its input, where that input is a slice from the origin of it that keeps every
/// image and channel (through further such slices), and the convolution over the whole value
/// has the same output shape: it then reads the same values (its windows never reach the rows
/// and columns the slice drops). torch-mlir slices a ResNet's input to a 1 × 1 convolution of
/// stride 2 from 56 × 56 to 55 × 55 so that TOSA's output size divides exactly (a copy of
/// the input, 0.4 ms of ResNet-50's 78 at one thread); the kernels have no such rule.
fn unsliced_input(g: &Graph, id: NodeId) -> Option<NodeId> {
    let (attrs, kernel) = match g.op(id) {
        Op::Conv2d(a) => (a, [1, 2]),
        Op::DepthwiseConv2d(a) => (a, [0, 1]),
        _ => return None,
    };
    if attrs.pad != [0; 4] {
        return None;
    }
    let ops = g.operands(id);
    let (input, w, out) = (g.tensor_ty(ops[0])?, g.tensor_ty(ops[1])?, g.tensor_ty(id)?);
    let mut x = ops[0];
    while let Op::Slice = g.op(x) {
        let s = g.operands(x);
        let from_origin = matches!(g.op(s[1]), Op::ConstShape(start) if start.iter().all(|&v| v == 0));
        let source = g.tensor_ty(s[0])?;
        if !from_origin || source.rank() != 4 || source.shape[0] != input.shape[0] || source.shape[3] != input.shape[3] {
            break;
        }
        x = s[0];
    }
    let whole = g.tensor_ty(x)?;
    let fits = |axis: usize| f16c_dialect::verify::conv_out(whole.shape[1 + axis], 0, w.shape[kernel[axis]], attrs.stride[axis], attrs.dilation[axis]) == Some(out.shape[1 + axis]);
    (x != ops[0] && fits(0) && fits(1)).then_some(x)
}

/// A copy of `g` with every resize, table and conv3d replaced by ops every backend has (on the
/// original op's location). The graph must have been verified.
pub fn expand(g: &Graph) -> Result<Graph, LowerError> {
    let mut g = g.clone();
    // Convolutions read the value their input was sliced from ([`unsliced_input`]); the
    // slices nothing else reads go.
    let unsliced: Vec<(NodeId, NodeId)> = g.node_ids().filter_map(|id| unsliced_input(&g, id).map(|x| (id, x))).collect();
    for &(id, x) in &unsliced {
        g.set_operand(id, 0, x);
    }
    if !unsliced.is_empty() {
        g.remove_dead_nodes();
    }
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
            Op::Conv3d(ref a) => {
                let a = a.clone();
                let loc = g.location(id);
                Builder { loc: loc.clone(), g: &mut g }
                    .conv3d(&ops, &a, &out)
                    .map_err(|message| LowerError { location: loc, op: "tosa.conv3d", message })?
            }
            _ => Builder { loc: g.location(id), g: &mut g }.table(ops[0], ops[1], &out),
        };
        g.replace_all_uses(id, new);
        g.remove_node(id);
    }
    Ok(g)
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
        self.g.add_constant(t, self.loc.clone())
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

    /// `table[x + 128]` for i8 `x`: a gather from the table as `[1, 256, 1]` values; for i16
    /// `x`, two gathers and the interpolation of [`semantics::table_i16`] in i32.
    fn table(&mut self, x: NodeId, table: NodeId, out: &TensorType) -> NodeId {
        let count = out.num_elements();
        if self.g.tensor_ty(x).expect("a tensor").dtype == DType::I16 {
            return self.table_i16(x, table, out);
        }
        let wide = self.cast(x, DType::I8, DType::I32, &out.shape);
        let bias = self.constant(Tensor::new(vec![1; out.rank()], Data::I32(vec![128])).expect("one element"));
        let index = self.node(Op::Binary(BinaryOp::Add), DType::I32, &out.shape, &[wide, bias]);
        let index = self.reshape(index, DType::I32, &[1, count]);
        let values = self.reshape(table, DType::I8, &[1, 256, 1]);
        let g = self.node(Op::Gather, DType::I8, &[1, count, 1], &[values, index]);
        self.reshape(g, DType::I8, &out.shape)
    }

    fn table_i16(&mut self, x: NodeId, table: NodeId, out: &TensorType) -> NodeId {
        let (shape, count) = (&out.shape, out.num_elements());
        let i32s = |b: &mut Self, v: i32| b.constant(Tensor::new(vec![1; shape.len()], Data::I32(vec![v])).expect("one element"));
        let binary = |b: &mut Self, op: BinaryOp, p: NodeId, q: NodeId| b.node(Op::Binary(op), DType::I32, shape, &[p, q]);
        let wide = self.cast(x, DType::I16, DType::I32, shape);
        let (bias, seven, mask, one) = (i32s(self, 32768), i32s(self, 7), i32s(self, 0x7f), i32s(self, 1));
        let biased = binary(self, BinaryOp::Add, wide, bias);
        let index = binary(self, BinaryOp::ShiftRightArith { round: false }, biased, seven);
        let fraction = binary(self, BinaryOp::BitwiseAnd, wide, mask);
        let values = self.reshape(table, DType::I16, &[1, 513, 1]);
        let entry = |b: &mut Self, at: NodeId| {
            let at = b.reshape(at, DType::I32, &[1, count]);
            let g = b.node(Op::Gather, DType::I16, &[1, count, 1], &[values, at]);
            let g = b.reshape(g, DType::I16, shape);
            b.cast(g, DType::I16, DType::I32, shape)
        };
        let base = entry(self, index);
        let index1 = binary(self, BinaryOp::Add, index, one);
        let next = entry(self, index1);
        let slope = binary(self, BinaryOp::Sub, next, base);
        let slope = self.mul(slope, fraction, DType::I32, shape);
        let high = binary(self, BinaryOp::ShiftLeft, base, seven);
        binary(self, BinaryOp::Add, high, slope)
    }

    /// `tosa.conv3d` as one conv2d (module comment). `ops`: input, weight, bias, zero points.
    fn conv3d(&mut self, ops: &[NodeId], a: &Conv3dAttrs, out: &TensorType) -> Result<NodeId, String> {
        let input = self.g.tensor_ty(ops[0]).expect("a tensor").clone();
        let weight = self.g.tensor_ty(ops[1]).expect("a tensor").clone();
        let (&[n, depth, h, w, c], &[o, kd, kh, kw, _], &[_, od, oh, ow, _]) = (&input.shape[..], &weight.shape[..], &out.shape[..]) else {
            unreachable!("verified: NDHWC input, ODHWI weight")
        };
        let d = input.dtype;
        // The input plane of output plane `z` and depth tap `k`; `None` in the padding.
        let plane = |z: usize, k: usize| semantics::window_input(z, k, a.stride[0], a.dilation[0], a.pad[0], depth);
        let padded = (0..od).any(|z| (0..kd).any(|k| plane(z, k).is_none()));
        let constant_weight = match self.g.op(ops[1]) {
            Op::Const(t) => Some(t.clone()),
            _ => None,
        };
        if padded && d.is_float() {
            let finite = constant_weight.as_ref().is_some_and(|t| t.to_f64_vec().iter().all(|v| v.is_finite()));
            if !finite {
                return Err("depth padding with a weight that may hold an inf or a NaN (computed at run time, or a constant holding one) is not supported: f16c turns a conv3d into a conv2d whose depth padding is multiplied as zeros".into());
            }
        }
        // The input as [N·OD, H, W, KD·C].
        let rows = [n * od, h, w, kd * c];
        let x = if kd == 1 && a.stride[0] == 1 && !padded && od == depth {
            self.reshape(ops[0], d, &rows)
        } else {
            let (values, planes) = if padded {
                // One more plane, of the input zero point (the pad value TOSA's pad takes).
                let padding = self.g.add_node(Op::ConstShape(vec![0, 0, 0, 1, 0, 0, 0, 0, 0, 0]), ValueType::Shape(10), &[], self.loc.clone());
                (self.node(Op::Pad, d, &[n, depth + 1, h, w, c], &[ops[0], padding, ops[3]]), depth + 1)
            } else {
                (ops[0], depth)
            };
            let values = self.reshape(values, d, &[n, planes * h * w, c]);
            let mut index = Vec::with_capacity(n * od * h * w * kd);
            for _ in 0..n {
                for z in 0..od {
                    for y in 0..h {
                        for x in 0..w {
                            index.extend((0..kd).map(|k| ((plane(z, k).unwrap_or(depth) * h + y) * w + x) as i32));
                        }
                    }
                }
            }
            let index = self.constant(Tensor::new(vec![n, od * h * w * kd], Data::I32(index)).expect("sized"));
            let g = self.node(Op::Gather, d, &[n, od * h * w * kd, c], &[values, index]);
            self.reshape(g, d, &rows)
        };
        // The weight as [O, KH, KW, KD·C].
        let wshape = [o, kh, kw, kd * c];
        let perms = vec![0, 2, 3, 1, 4];
        let w2 = match constant_weight {
            Some(t) => {
                let moved = TensorType::new(weight.dtype, [o, kh, kw, kd, c]);
                let Value::Tensor(t) = semantics::eval(&Op::Transpose { perms }, &[&Value::Tensor(t)], &ValueType::Tensor(moved)).map_err(|e| e.to_string())? else {
                    unreachable!("a transpose gives a tensor")
                };
                self.constant(Tensor::new(wshape.to_vec(), t.into_data()).expect("sized"))
            }
            None => {
                let t = self.node(Op::Transpose { perms }, weight.dtype, &[o, kh, kw, kd, c], &[ops[1]]);
                self.reshape(t, weight.dtype, &wshape)
            }
        };
        let attrs = ConvAttrs {
            pad: [a.pad[2], a.pad[3], a.pad[4], a.pad[5]],
            stride: [a.stride[1], a.stride[2]],
            dilation: [a.dilation[1], a.dilation[2]],
            acc: a.acc,
        };
        let conv = self.node(Op::Conv2d(attrs), out.dtype, &[n * od, oh, ow, o], &[x, w2, ops[2], ops[3], ops[4]]);
        Ok(self.reshape(conv, out.dtype, &out.shape))
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
        // (f64 for f64 data) as `1 - r/n` and `r/n`, integers as `n - r` and `r` (i8 data in
        // i32, i16 data in i48: the results' types).
        let w = match d {
            DType::F64 => DType::F64,
            f if f.is_float() => DType::F32,
            DType::I16 => DType::I48,
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
                    _ => Data::from_i64(v.into_iter().map(|x| x as i64).collect(), w),
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
