//! Differential testing: random valid TOSA graphs run on the reference interpreter and on
//! every backend that runs on this machine, compared under the numeric contract, with failing
//! graphs shrunk to small reproducers.
//!
//! [`generate`] builds a graph of one to seven ops of the import list (elementwise with
//! broadcasting, clamp, select on a comparison, reductions, argmax, transpose, reshape, slice,
//! pad, tile, concat, gather, casts between f32/f16/bf16, matmul, conv2d, depthwise and
//! transpose conv with random padding, stride and dilation, max and average pooling) on
//! random static shapes made of the vector-edge sizes, in f32, f16 or bf16, with inputs and
//! weights that mix ordinary values with the low types' limits, subnormals, signed zeros,
//! infinities and NaN.
//!
//! [`judge`] compares a backend's results with the reference's under the contract
//! (DESIGN.md, "Numerics"):
//! - a value computed without a contraction (and without a math function on a backend whose
//!   math library is not the reference's) must have the reference's bits (any NaN equals any
//!   NaN);
//! - a contraction may sum in another order: its error is bounded by `2·K·2⁻²⁴·Σ|a·b|` (the
//!   f32 accumulation's rounding on either side; `Σ|a·b|` computed by the reference on the
//!   operands' magnitudes) plus one ulp of a low result type; that bound is carried through
//!   the ops after it that cannot amplify it without limit (add, sub, mul, max/min, clamp,
//!   negate, abs, select, casts, data movement, pooling, sums, tanh/sigmoid/erf/sin/cos), with one
//!   ulp per rounding op;
//! - non-finite values: the contract promises that a contraction's result is finite on every
//!   backend only when its operands are finite and `Σ|a·b|` stays below half the largest finite
//!   value of the type (no partial sum can overflow in any order). Where that holds (and the
//!   values after it stay below half the largest finite value, and no multiply meets an
//!   infinity), a backend must agree with the reference on which elements are NaN, +inf and
//!   −inf and be within the bound elsewhere. Where it does not hold (a sum that can overflow
//!   in one order and not in another) the value is not compared, and the report counts it.
//! - math functions on a backend with another math library (AArch64's, `MATH_ULPS`): within
//!   that many ulp where the result is an output, and a bound of as many ulp carried on.
//!
//! [`shrink`] reduces a failing graph: one output at a time, ops bypassed (an operand of the
//! same type in their place), input and weight elements set to a plain value in halving
//! chunks, while the same backend still fails.

use crate::cases::{constant, loc, tensor_ty, zero, Rng, FLOATS};
use f16c_dialect::semantics::cast;
use f16c_dialect::{reference, BinaryOp, Conv3dAttrs, ConvAttrs, DType, Data, Graph, NodeId, Op, PoolAttrs, ReduceKind, Tensor, TensorType, TransposeConvAttrs, UnaryOp, ValueType};
use std::collections::HashMap;

/// Sizes dimensions are drawn from: vector and tile edges.
const EDGES: &[usize] = &[1, 2, 3, 4, 7, 8, 9, 15, 16, 17, 33];

/// No value of a generated graph has more elements than this (runs take milliseconds).
const MAX_ELEMENTS: usize = 4096;

/// A generated graph and its inputs.
#[derive(Clone)]
pub struct DiffCase {
    /// The graph.
    pub graph: Graph,
    /// One tensor per argument.
    pub inputs: Vec<Tensor>,
}

/// One value the generator can build on.
#[derive(Clone)]
struct Value {
    id: NodeId,
    d: DType,
    shape: Vec<usize>,
    /// Depends on a contraction: only ops that keep an error bound may follow.
    tainted: bool,
}

struct Gen {
    g: Graph,
    rng: Rng,
    values: Vec<Value>,
    inputs: Vec<Tensor>,
    /// How often a generated element is a special value.
    special: f64,
    outputs: Vec<NodeId>,
}

fn elems(shape: &[usize]) -> usize {
    shape.iter().product()
}

impl Gen {
    fn chance(&mut self, p: f64) -> bool {
        (self.rng.next() as f64 / (1u64 << 53) as f64) < p
    }

    /// One element: mostly uniform in `[-4, 4]`, sometimes a special value of `d`.
    fn element(&mut self, d: DType) -> f32 {
        if self.chance(self.special) {
            let max = match d {
                DType::F16 => 65504.0,
                DType::BF16 => 3.3895314e38,
                _ => f32::MAX,
            };
            let tiny = match d {
                DType::F16 => 5.96e-8,
                DType::BF16 => 9.2e-41,
                _ => 1.4e-45,
            };
            let specials = [0.0, -0.0, f32::INFINITY, f32::NEG_INFINITY, f32::NAN, max, -max, tiny, -tiny, 1.0e-5, 60000.0, -300.0, 1.0, -1.0];
            *self.rng.pick(&specials)
        } else {
            self.rng.uniform(-4.0, 4.0)
        }
    }

    fn tensor(&mut self, d: DType, shape: &[usize]) -> Tensor {
        let v: Vec<f32> = (0..elems(shape)).map(|_| self.element(d)).collect();
        cast(&Tensor::from_f32(shape.to_vec(), v).expect("sized"), d)
    }

    fn input(&mut self, d: DType, shape: &[usize]) -> NodeId {
        let t = self.tensor(d, shape);
        self.inputs.push(t);
        self.g.add_input(TensorType::new(d, shape), loc())
    }

    fn constant(&mut self, d: DType, shape: &[usize]) -> NodeId {
        let t = self.tensor(d, shape);
        constant(&mut self.g, t)
    }

    fn shape_node(&mut self, v: Vec<i64>) -> NodeId {
        let n = v.len();
        self.g.add_node(Op::ConstShape(v), ValueType::Shape(n), &[], loc())
    }

    fn push(&mut self, id: NodeId, d: DType, shape: Vec<usize>, tainted: bool) -> Value {
        let v = Value { id, d, shape, tainted };
        self.values.push(v.clone());
        v
    }

    fn node(&mut self, op: Op, d: DType, shape: &[usize], operands: &[NodeId], tainted: bool) -> Value {
        let id = self.g.add_node(op, tensor_ty(d, shape), operands, loc());
        self.push(id, d, shape.to_vec(), tainted)
    }

    fn random_shape(&mut self, rank: usize) -> Vec<usize> {
        let mut s: Vec<usize> = (0..rank).map(|_| *self.rng.pick(EDGES)).collect();
        while elems(&s) > MAX_ELEMENTS / 2 {
            let i = self.rng.below(rank);
            s[i] = s[i].div_ceil(2);
        }
        s
    }

    fn reshape(&mut self, x: &Value, shape: Vec<usize>) -> Value {
        if x.shape == shape {
            return x.clone();
        }
        let s = self.shape_node(shape.iter().map(|&d| d as i64).collect());
        let id = self.g.add_node(Op::Reshape, tensor_ty(x.d, &shape), &[x.id, s], loc());
        self.push(id, x.d, shape, x.tainted)
    }

    /// `x` as NHWC: `[1, H, W, C]` from its last dimension and the others.
    fn as_nhwc(&mut self, x: &Value) -> Value {
        if x.shape.len() == 4 {
            return x.clone();
        }
        let c = *x.shape.last().expect("rank ≥ 1");
        let rest = elems(&x.shape) / c;
        let h = (1..=rest).rev().find(|h| rest % h == 0 && h * h <= rest).unwrap_or(1);
        self.reshape(x, vec![1, h, rest / h, c])
    }

    /// A second operand for an elementwise op on `x`: another value of the same shape and type,
    /// a new input or a constant, either maybe broadcast (some dimensions 1).
    fn partner(&mut self, x: &Value, allow_tainted: bool) -> Value {
        let same: Vec<Value> = self.values.iter().filter(|v| v.d == x.d && v.shape == x.shape && (allow_tainted || !v.tainted)).cloned().collect();
        if !same.is_empty() && self.chance(0.4) {
            return self.rng.pick(&same).clone();
        }
        let mut shape = x.shape.clone();
        for s in shape.iter_mut() {
            if self.chance(0.3) {
                *s = 1;
            }
        }
        let id = if self.chance(0.5) { self.input(x.d, &shape) } else { self.constant(x.d, &shape) };
        Value { id, d: x.d, shape, tainted: false }
    }

    /// Applies one random op to `x`; the new value, or `None` when the op was terminal (its
    /// result is an output already) or did not fit.
    fn step(&mut self, x: &Value) -> Option<Value> {
        let d = x.d;
        let t = x.tainted;
        match self.rng.below(20) {
            0..=2 => {
                // Unary: after a contraction only those that keep an error bound.
                let ops: &[UnaryOp] = if t {
                    &[UnaryOp::Negate, UnaryOp::Abs, UnaryOp::Tanh, UnaryOp::Sigmoid, UnaryOp::Erf, UnaryOp::Sin, UnaryOp::Cos]
                } else {
                    &crate::cases::FLOAT_UNARY
                };
                let u = *self.rng.pick(ops);
                let operands = if u == UnaryOp::Negate { vec![x.id, zero(&mut self.g, d), zero(&mut self.g, d)] } else { vec![x.id] };
                Some(self.node(Op::Unary(u), d, &x.shape, &operands, t))
            }
            3..=6 => {
                let ops: &[BinaryOp] = if t { &[BinaryOp::Add, BinaryOp::Sub, BinaryOp::Mul, BinaryOp::Maximum, BinaryOp::Minimum] } else { &[BinaryOp::Add, BinaryOp::Sub, BinaryOp::Mul, BinaryOp::Maximum, BinaryOp::Minimum, BinaryOp::Pow] };
                let b = *self.rng.pick(ops);
                let y = self.partner(x, true);
                let (first, second) = if self.chance(0.5) || y.shape != x.shape { (x.id, y.id) } else { (y.id, x.id) };
                let mut operands = vec![first, second];
                if b == BinaryOp::Mul {
                    operands.push(constant(&mut self.g, Tensor::new(vec![1], Data::I8(vec![0])).expect("sized")));
                }
                Some(self.node(Op::Binary(b), d, &x.shape, &operands, t || y.tainted))
            }
            7 => {
                let bounds = [(-1.0, 6.0), (0.0, 6.0), (-0.5, 0.5), (0.0, 0.0), (-4.0, 256.0)];
                let (min, max) = *self.rng.pick(&bounds);
                Some(self.node(Op::Clamp { min, max }, d, &x.shape, &[x.id], t))
            }
            8 if !t => {
                // select(x > y, x, z)
                let y = self.partner(x, false);
                let cmp = *self.rng.pick(&[BinaryOp::Greater, BinaryOp::GreaterEqual, BinaryOp::Equal]);
                let mut p = self.g.add_node(Op::Binary(cmp), tensor_ty(DType::I1, &x.shape), &[x.id, y.id], loc());
                // Sometimes combined with a second comparison, or negated.
                if self.chance(0.4) {
                    let z = self.partner(x, false);
                    let q = self.g.add_node(Op::Binary(BinaryOp::Greater), tensor_ty(DType::I1, &x.shape), &[z.id, x.id], loc());
                    let l = *self.rng.pick(&[BinaryOp::LogicalAnd, BinaryOp::LogicalOr, BinaryOp::LogicalXor]);
                    p = self.g.add_node(Op::Binary(l), tensor_ty(DType::I1, &x.shape), &[p, q], loc());
                }
                if self.chance(0.2) {
                    p = self.g.add_node(Op::Unary(UnaryOp::LogicalNot), tensor_ty(DType::I1, &x.shape), &[p], loc());
                }
                if self.chance(0.2) {
                    self.outputs.push(p);
                }
                let z = self.partner(x, true);
                let zid = if z.shape == x.shape { z.id } else { self.input(d, &x.shape) };
                Some(self.node(Op::Select, d, &x.shape, &[p, x.id, zid], t || z.tainted))
            }
            9 => {
                let kinds: &[ReduceKind] = if t { &[ReduceKind::Sum, ReduceKind::Max, ReduceKind::Min] } else { &[ReduceKind::Sum, ReduceKind::Max, ReduceKind::Min, ReduceKind::Prod] };
                let kind = *self.rng.pick(kinds);
                let axis = self.rng.below(x.shape.len());
                let mut shape = x.shape.clone();
                shape[axis] = 1;
                Some(self.node(Op::Reduce { kind, axis }, d, &shape, &[x.id], t))
            }
            10 if !t => {
                let axis = self.rng.below(x.shape.len());
                let shape: Vec<usize> = x.shape.iter().enumerate().filter(|&(i, _)| i != axis).map(|(_, &s)| s).collect();
                if shape.is_empty() {
                    return Some(x.clone());
                }
                let id = self.g.add_node(Op::ArgMax { axis }, tensor_ty(DType::I32, &shape), &[x.id], loc());
                self.outputs.push(id);
                None
            }
            11 => {
                let mut perms: Vec<usize> = (0..x.shape.len()).collect();
                for i in (1..perms.len()).rev() {
                    let j = self.rng.below(i + 1);
                    perms.swap(i, j);
                }
                let shape: Vec<usize> = perms.iter().map(|&p| x.shape[p]).collect();
                Some(self.node(Op::Transpose { perms }, d, &shape, &[x.id], t))
            }
            12 => {
                // Slice, pad, tile or reverse.
                let rank = x.shape.len();
                match self.rng.below(4) {
                    0 => {
                        let start: Vec<usize> = x.shape.iter().map(|&s| self.rng.below(s)).collect();
                        let size: Vec<usize> = x.shape.iter().zip(&start).map(|(&s, &b)| 1 + self.rng.below(s - b)).collect();
                        let a = self.shape_node(start.iter().map(|&v| v as i64).collect());
                        let b = self.shape_node(size.iter().map(|&v| v as i64).collect());
                        Some(self.node(Op::Slice, d, &size, &[x.id, a, b], t))
                    }
                    1 => {
                        let pads: Vec<usize> = (0..2 * rank).map(|_| self.rng.below(3)).collect();
                        let shape: Vec<usize> = (0..rank).map(|i| x.shape[i] + pads[2 * i] + pads[2 * i + 1]).collect();
                        if elems(&shape) > MAX_ELEMENTS {
                            return Some(x.clone());
                        }
                        let p = self.shape_node(pads.iter().map(|&v| v as i64).collect());
                        let fill = self.constant(d, &[1]);
                        Some(self.node(Op::Pad, d, &shape, &[x.id, p, fill], t))
                    }
                    2 => {
                        let axis = self.rng.below(rank);
                        Some(self.node(Op::Reverse { axis }, d, &x.shape, &[x.id], t))
                    }
                    _ => {
                        let mult: Vec<usize> = (0..rank).map(|_| 1 + self.rng.below(2)).collect();
                        let shape: Vec<usize> = x.shape.iter().zip(&mult).map(|(a, b)| a * b).collect();
                        if elems(&shape) > MAX_ELEMENTS {
                            return Some(x.clone());
                        }
                        let m = self.shape_node(mult.iter().map(|&v| v as i64).collect());
                        Some(self.node(Op::Tile, d, &shape, &[x.id, m], t))
                    }
                }
            }
            13 => {
                // Concat with a partner along a random axis, or a cast to another float type.
                if self.chance(0.5) {
                    let axis = self.rng.below(x.shape.len());
                    let mut other = x.shape.clone();
                    other[axis] = 1 + self.rng.below(3);
                    let y = if self.chance(0.5) { self.input(d, &other) } else { self.constant(d, &other) };
                    let mut shape = x.shape.clone();
                    shape[axis] += other[axis];
                    if elems(&shape) > MAX_ELEMENTS {
                        return Some(x.clone());
                    }
                    let operands = if self.chance(0.5) { [x.id, y] } else { [y, x.id] };
                    Some(self.node(Op::Concat { axis }, d, &shape, &operands, t))
                } else {
                    let to = *self.rng.pick(&FLOATS);
                    if to == d {
                        return Some(x.clone());
                    }
                    Some(self.node(Op::Cast, to, &x.shape, &[x.id], t))
                }
            }
            14 => {
                // Gather rows of x seen as [N, K, C].
                let c = *x.shape.last().expect("rank ≥ 1");
                let k = elems(&x.shape) / c;
                let v = self.reshape(x, vec![1, k, c]);
                let w = 1 + self.rng.below(9);
                let idx: Vec<i32> = (0..w).map(|_| self.rng.below(k) as i32).collect();
                let idx = constant(&mut self.g, Tensor::new(vec![1, w], Data::I32(idx)).expect("sized"));
                Some(self.node(Op::Gather, d, &[1, w, c], &[v.id, idx], t))
            }
            15 | 16 => self.matmul(x),
            17 | 18 => self.conv(x),
            _ => self.pool(x),
        }
    }

    fn matmul(&mut self, x: &Value) -> Option<Value> {
        let k = *x.shape.last().expect("rank ≥ 1");
        let m = elems(&x.shape) / k;
        let n = *self.rng.pick(EDGES);
        if m * n > MAX_ELEMENTS {
            return None;
        }
        let a = self.reshape(x, vec![1, m, k]);
        let b = if self.chance(0.6) { self.constant(x.d, &[1, k, n]) } else { self.input(x.d, &[1, k, n]) };
        let (z1, z2) = (zero(&mut self.g, x.d), zero(&mut self.g, x.d));
        Some(self.node(Op::MatMul, x.d, &[1, m, n], &[a.id, b, z1, z2], true))
    }

    /// Output size of a window of `k` (dilated `dil`) over `n` padded by `lo`/`hi` at `stride`,
    /// when the window fits and the stride divides (TOSA requires both).
    fn window(n: usize, k: usize, lo: usize, hi: usize, stride: usize, dil: usize) -> Option<usize> {
        let span = n + lo + hi;
        let reach = (k - 1) * dil + 1;
        (span >= reach && (span - reach) % stride == 0).then(|| (span - reach) / stride + 1)
    }

    fn conv(&mut self, x: &Value) -> Option<Value> {
        let x = self.as_nhwc(x);
        let (n, h, w, c) = (x.shape[0], x.shape[1], x.shape[2], x.shape[3]);
        let d = x.d;
        let kind = self.rng.below(4);
        let (kh, kw) = (1 + self.rng.below(3), 1 + self.rng.below(3));
        let bias_of = |g: &mut Gen, oc: usize| if g.chance(0.5) { g.constant(d, &[oc]) } else { g.constant(d, &[1]) };
        if kind == 3 {
            // conv3d over the batch as depth: [N, H, W, C] as [1, N, H, W, C], back to rank 4.
            let kd = 1 + self.rng.below(n.min(3));
            let pad = [0; 6].map(|_| self.rng.below(2));
            let stride = [0; 3].map(|_| 1 + self.rng.below(2));
            let dilation = [0; 3].map(|_| 1 + self.rng.below(2));
            let od = Self::window(n, kd, pad[0], pad[1], stride[0], dilation[0])?;
            let oh = Self::window(h, kh, pad[2], pad[3], stride[1], dilation[1])?;
            let ow = Self::window(w, kw, pad[4], pad[5], stride[2], dilation[2])?;
            let oc = *self.rng.pick(&EDGES[..8]);
            if od * oh * ow * oc > MAX_ELEMENTS {
                return None;
            }
            let x5 = self.reshape(&x, vec![1, n, h, w, c]);
            let weight_shape = [oc, kd, kh, kw, c];
            let weight = if self.chance(0.15) { self.input(d, &weight_shape) } else { self.constant(d, &weight_shape) };
            let bias = bias_of(self, oc);
            let (z1, z2) = (zero(&mut self.g, d), zero(&mut self.g, d));
            let a = Conv3dAttrs { pad, stride, dilation, acc: DType::F32 };
            let y = self.node(Op::Conv3d(a), d, &[1, od, oh, ow, oc], &[x5.id, weight, bias, z1, z2], true);
            return Some(self.reshape(&y, vec![od, oh, ow, oc]));
        }
        if kind == 2 {
            // transpose_conv2d: out = (in − 1)·stride + kernel.
            let stride = [1 + self.rng.below(2), 1 + self.rng.below(2)];
            let oc = *self.rng.pick(&EDGES[..8]);
            let (oh, ow) = ((h - 1) * stride[0] + kh, (w - 1) * stride[1] + kw);
            if n * oh * ow * oc > MAX_ELEMENTS {
                return None;
            }
            let weight = self.constant(d, &[oc, kh, kw, c]);
            let bias = bias_of(self, oc);
            let (z1, z2) = (zero(&mut self.g, d), zero(&mut self.g, d));
            let a = TransposeConvAttrs { out_pad: [0, 0, 0, 0], stride, acc: DType::F32 };
            return Some(self.node(Op::TransposeConv2d(a), d, &[n, oh, ow, oc], &[x.id, weight, bias, z1, z2], true));
        }
        let pad = [self.rng.below(2), self.rng.below(2), self.rng.below(2), self.rng.below(2)];
        let stride = [1 + self.rng.below(2), 1 + self.rng.below(2)];
        let dilation = [1 + self.rng.below(2), 1 + self.rng.below(2)];
        let oh = Self::window(h, kh, pad[0], pad[1], stride[0], dilation[0])?;
        let ow = Self::window(w, kw, pad[2], pad[3], stride[1], dilation[1])?;
        let a = ConvAttrs { pad, stride, dilation, acc: DType::F32 };
        let (op, weight_shape, oc) = if kind == 0 {
            let oc = *self.rng.pick(&EDGES[..8]);
            (Op::Conv2d(a), vec![oc, kh, kw, c], oc)
        } else {
            let m = 1 + self.rng.below(2);
            (Op::DepthwiseConv2d(a), vec![kh, kw, c, m], c * m)
        };
        if n * oh * ow * oc > MAX_ELEMENTS {
            return None;
        }
        // Now and then a weight computed at run time (an argument).
        let weight = if self.chance(0.15) { self.input(d, &weight_shape) } else { self.constant(d, &weight_shape) };
        let bias = bias_of(self, oc);
        let (z1, z2) = (zero(&mut self.g, d), zero(&mut self.g, d));
        Some(self.node(op, d, &[n, oh, ow, oc], &[x.id, weight, bias, z1, z2], true))
    }

    fn pool(&mut self, x: &Value) -> Option<Value> {
        let x = self.as_nhwc(x);
        let (n, h, w, c) = (x.shape[0], x.shape[1], x.shape[2], x.shape[3]);
        if self.chance(0.3) {
            return self.resize(&x);
        }
        let kernel = [1 + self.rng.below(3), 1 + self.rng.below(3)];
        let stride = [1 + self.rng.below(2), 1 + self.rng.below(2)];
        // TOSA: padding smaller than the window.
        let pad = [self.rng.below(kernel[0]), self.rng.below(kernel[0]), self.rng.below(kernel[1]), self.rng.below(kernel[1])];
        let oh = Self::window(h, kernel[0], pad[0], pad[1], stride[0], 1)?;
        let ow = Self::window(w, kernel[1], pad[2], pad[3], stride[1], 1)?;
        let avg = self.chance(0.5);
        let attrs = PoolAttrs { kernel, stride, pad, acc: avg.then_some(DType::F32) };
        let shape = [n, oh, ow, c];
        Some(if avg {
            let (z1, z2) = (zero(&mut self.g, x.d), zero(&mut self.g, x.d));
            self.node(Op::AvgPool2d(attrs), x.d, &shape, &[x.id, z1, z2], x.tainted)
        } else {
            self.node(Op::MaxPool2d(attrs), x.d, &shape, &[x.id], x.tainted)
        })
    }

    /// `tosa.resize` of an NHWC value with random scale and offset (border chosen so that the
    /// output size is whole), nearest or bilinear.
    fn resize(&mut self, x: &Value) -> Option<Value> {
        let (n, h, w, c) = (x.shape[0], x.shape[1], x.shape[2], x.shape[3]);
        let mut scale = [0i64; 4];
        let (mut offset, mut border) = ([0i64; 2], [0i64; 2]);
        for (a, len) in [h, w].into_iter().enumerate() {
            let (sn, sd) = (1 + self.rng.below(4) as i64, 1 + self.rng.below(4) as i64);
            let o = self.rng.below(2 * sn as usize) as i64 - sn + 1;
            let base = (len as i64 - 1) * sn - o;
            scale[2 * a] = sn;
            scale[2 * a + 1] = sd;
            offset[a] = o;
            border[a] = -base.rem_euclid(sd);
        }
        let (oh, ow) = f16c_dialect::verify::resize_extent(h, w, &scale, &offset, &border).ok()?;
        if n * oh * ow * c > MAX_ELEMENTS {
            return None;
        }
        let (s, o, b) = (self.shape_node(scale.to_vec()), self.shape_node(offset.to_vec()), self.shape_node(border.to_vec()));
        let bilinear = self.chance(0.5);
        Some(self.node(Op::Resize { bilinear }, x.d, &[n, oh, ow, c], &[x.id, s, o, b], x.tainted))
    }
}

// ---------------------------------------------------------------- integer graphs

impl Gen {
    /// An integer tensor: over the type's range (or, `small`, in -3..40: shift amounts and
    /// divisors, zeros included), with its extremes, 0 and ±1 now and then.
    fn int_tensor(&mut self, d: DType, shape: &[usize], small: bool) -> Tensor {
        let (lo, hi) = d.int_range();
        let v: Vec<i64> = (0..elems(shape))
            .map(|_| match (small, self.chance(0.15)) {
                (true, _) => self.rng.below(44) as i64 - 3,
                (false, true) => *self.rng.pick(&[lo, hi, 0, 1, -1]),
                (false, false) => lo + (self.rng.next() % (hi - lo + 1) as u64) as i64,
            })
            .collect();
        cast(&Tensor::new(shape.to_vec(), Data::I64(v)).expect("sized"), d)
    }

    /// A new integer input or constant of `shape`.
    fn int_leaf(&mut self, d: DType, shape: &[usize], small: bool) -> NodeId {
        let t = self.int_tensor(d, shape, small);
        if self.chance(0.5) {
            self.inputs.push(t);
            self.g.add_input(TensorType::new(d, shape), loc())
        } else {
            constant(&mut self.g, t)
        }
    }

    /// A second operand for `x`: an earlier value of its shape and type, or a new leaf that
    /// may broadcast.
    fn int_partner(&mut self, x: &Value, small: bool) -> NodeId {
        let same: Vec<NodeId> = self.values.iter().filter(|v| v.d == x.d && v.shape == x.shape).map(|v| v.id).collect();
        if !small && !same.is_empty() && self.chance(0.4) {
            return *self.rng.pick(&same);
        }
        let shape: Vec<usize> = x.shape.iter().map(|&s| if self.chance(0.3) { 1 } else { s }).collect();
        self.int_leaf(x.d, &shape, small)
    }

    fn scalar(&mut self, d: DType, v: i64) -> NodeId {
        constant(&mut self.g, cast(&Tensor::new(vec![1], Data::I64(vec![v])).expect("one"), d))
    }

    /// One random integer op on `x` (i8, i16 or i32), TOSA's types for each.
    fn int_step(&mut self, x: &Value) -> Option<Value> {
        let (d, i32_, i8_) = (x.d, x.d == DType::I32, x.d == DType::I8);
        let same = |g: &mut Self, op: Op, operands: &[NodeId]| Some(g.node(op, d, &x.shape.clone(), operands, false));
        // An i48 (a bilinear i16 resize) only rescales, with 16-bit multipliers (TOSA).
        let step = if d == DType::I48 { 6 } else { self.rng.below(12) };
        match step {
            0 => {
                let b = *self.rng.pick(&[BinaryOp::BitwiseAnd, BinaryOp::BitwiseOr, BinaryOp::BitwiseXor]);
                let y = self.int_partner(x, false);
                same(self, Op::Binary(b), &[x.id, y])
            }
            1 => {
                let shift = if self.chance(0.5) { BinaryOp::ShiftLeft } else if self.chance(0.5) { BinaryOp::ShiftRightLogical } else { BinaryOp::ShiftRightArith { round: self.chance(0.5) } };
                let y = self.int_partner(x, true);
                same(self, Op::Binary(shift), &[x.id, y])
            }
            2 if i32_ => {
                let y = self.int_partner(x, true);
                same(self, Op::Binary(BinaryOp::IntDiv), &[x.id, y])
            }
            3 if i32_ => {
                let b = *self.rng.pick(&[BinaryOp::Add, BinaryOp::Sub, BinaryOp::Mul, BinaryOp::Maximum, BinaryOp::Minimum]);
                let y = self.int_partner(x, false);
                let mut operands = vec![x.id, y];
                if b == BinaryOp::Mul {
                    operands.push(self.scalar(DType::I8, 0));
                }
                same(self, Op::Binary(b), &operands)
            }
            4 => {
                let u = *self.rng.pick(&[UnaryOp::BitwiseNot, UnaryOp::Clz, UnaryOp::Abs, UnaryOp::Negate]);
                match u {
                    UnaryOp::Clz | UnaryOp::Abs if !i32_ => None,
                    UnaryOp::Negate => {
                        let (z1, z2) = (self.scalar(d, 0), self.scalar(d, 0));
                        same(self, Op::Unary(u), &[x.id, z1, z2])
                    }
                    _ => same(self, Op::Unary(u), &[x.id]),
                }
            }
            5 if !i32_ => {
                // i8: 256 entries, an i8 result; i16: 513 entries, interpolated, an i32 result.
                let (entries, to) = if i8_ { (256, DType::I8) } else { (513, DType::I32) };
                let table = self.int_tensor(d, &[entries], false);
                let t = constant(&mut self.g, table);
                Some(self.node(Op::Table, to, &x.shape.clone(), &[x.id, t], false))
            }
            6 => {
                let to = *self.rng.pick(&[DType::I8, DType::I16, DType::I32]);
                let per_channel = self.chance(0.5);
                let c = if per_channel { *x.shape.last().expect("rank ≥ 1") } else { 1 };
                // 32-bit multipliers, or 16-bit ones (scale32 = false, no double rounding).
                let scale32 = d != DType::I48 && self.chance(0.6);
                let roundings: &[f16c_dialect::Rounding] = if scale32 { &[f16c_dialect::Rounding::Single, f16c_dialect::Rounding::Double, f16c_dialect::Rounding::Inexact] } else { &[f16c_dialect::Rounding::Single, f16c_dialect::Rounding::Inexact] };
                let rounding = *self.rng.pick(roundings);
                let attrs = f16c_dialect::RescaleAttrs { scale32, rounding, per_channel, input_unsigned: false, output_unsigned: false };
                let (m_d, m_bits) = if scale32 { (DType::I32, 30) } else { (DType::I16, 14) };
                let m: Vec<i64> = (0..c).map(|_| (1 << m_bits) + (self.rng.next() % (1 << m_bits)) as i64).collect();
                let sh: Vec<i8> = (0..c).map(|_| 2 + self.rng.below(50) as i8).collect();
                let m = constant(&mut self.g, Tensor::new(vec![c], Data::from_i64(m, m_d)).expect("sized"));
                let sh = constant(&mut self.g, Tensor::new(vec![c], Data::I8(sh)).expect("sized"));
                // MLIR requires zero points of 0 for data other than i8.
                let zp_in = if !i8_ { 0 } else { self.rng.below(11) as i64 - 5 };
                let zp_out = if to != DType::I8 { 0 } else { self.rng.below(11) as i64 - 5 };
                let (zi, zo) = (self.scalar(d, zp_in), self.scalar(to, zp_out));
                Some(self.node(Op::Rescale(attrs), to, &x.shape.clone(), &[x.id, m, sh, zi, zo], false))
            }
            7 => {
                let x = self.as_nhwc(x);
                let (n, h, w, c) = (x.shape[0], x.shape[1], x.shape[2], x.shape[3]);
                let kernel = [1 + self.rng.below(3), 1 + self.rng.below(3)];
                let stride = [1 + self.rng.below(2), 1 + self.rng.below(2)];
                let pad = [self.rng.below(kernel[0]), self.rng.below(kernel[0]), self.rng.below(kernel[1]), self.rng.below(kernel[1])];
                let oh = Self::window(h, kernel[0], pad[0], pad[1], stride[0], 1)?;
                let ow = Self::window(w, kernel[1], pad[2], pad[3], stride[1], 1)?;
                let avg = i8_ && self.chance(0.5);
                let attrs = PoolAttrs { kernel, stride, pad, acc: avg.then_some(DType::I32) };
                Some(if avg {
                    let (a, b) = (self.rng.below(7) as i64 - 3, self.rng.below(7) as i64 - 3);
                    let (z1, z2) = (self.scalar(d, a), self.scalar(d, b));
                    self.node(Op::AvgPool2d(attrs), d, &[n, oh, ow, c], &[x.id, z1, z2], false)
                } else {
                    self.node(Op::MaxPool2d(attrs), d, &[n, oh, ow, c], &[x.id], false)
                })
            }
            8 => {
                let axis = self.rng.below(x.shape.len());
                same(self, Op::Reverse { axis }, &[x.id])
            }
            9 => {
                let others: Vec<DType> = [DType::I8, DType::I16, DType::I32].into_iter().filter(|&t| t != d).collect();
                let to = *self.rng.pick(&others);
                Some(self.node(Op::Cast, to, &x.shape.clone(), &[x.id], false))
            }
            10 if !i32_ => {
                let x = self.as_nhwc(x);
                let r = self.resize(&x)?;
                if let Op::Resize { bilinear: true } = self.g.op(r.id) {
                    // Bilinear widens: i8 to i32, i16 to i48.
                    let wide = if i8_ { DType::I32 } else { DType::I48 };
                    let ty = tensor_ty(wide, &r.shape);
                    self.g.node_mut(r.id).ty = ty;
                    let last = self.values.last_mut().expect("just pushed");
                    last.d = wide;
                    return Some(last.clone());
                }
                Some(r)
            }
            11 => {
                let (lo, hi) = d.int_range();
                let a = lo + (self.rng.next() % (hi - lo + 1) as u64) as i64;
                let b = lo + (self.rng.next() % (hi - lo + 1) as u64) as i64;
                same(self, Op::Clamp { min: a.min(b) as f64, max: a.max(b) as f64 }, &[x.id])
            }
            _ => None,
        }
    }
}

/// An integer graph (i8, i16 or i32 input, 1–7 integer ops) for seed-derived `gen`.
fn generate_integer(mut gen: Gen) -> DiffCase {
    let d = *gen.rng.pick(&[DType::I8, DType::I16, DType::I32]);
    let rank = 1 + gen.rng.below(4);
    let shape = gen.random_shape(rank);
    let t = gen.int_tensor(d, &shape, false);
    gen.inputs.push(t);
    let x = gen.g.add_input(TensorType::new(d, shape.clone()), loc());
    let mut cur = gen.push(x, d, shape, false);
    for _ in 0..1 + gen.rng.below(7) {
        if let Some(v) = gen.int_step(&cur) {
            cur = v;
        }
    }
    let out = if matches!(gen.g.op(cur.id), Op::Arg(_)) {
        let (z1, z2) = (gen.scalar(d, 0), gen.scalar(d, 0));
        gen.node(Op::Unary(UnaryOp::Negate), d, &cur.shape.clone(), &[cur.id, z1, z2], false).id
    } else {
        cur.id
    };
    gen.g.set_outputs(vec![out]);
    gen.g.remove_dead_nodes();
    DiffCase { graph: gen.g, inputs: gen.inputs }
}

/// The graph of seed `seed`: deterministic, valid (the verifier accepts it).
pub fn generate(seed: u64) -> DiffCase {
    let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 0x5851_f42d_4c95_7f2d);
    let d = *rng.pick(&FLOATS);
    let special = *rng.pick(&[0.0, 0.0, 0.02, 0.1, 0.3]);
    let mut gen = Gen { g: Graph::new("diff"), rng, values: Vec::new(), inputs: Vec::new(), special, outputs: Vec::new() };
    // One graph in six is an integer one (exact everywhere).
    if gen.chance(1.0 / 6.0) {
        return generate_integer(gen);
    }
    let rank = 1 + gen.rng.below(4);
    let shape = gen.random_shape(rank);
    let x = gen.input(d, &shape);
    let mut cur = gen.push(x, d, shape, false);
    let steps = 1 + gen.rng.below(7);
    for _ in 0..steps {
        match gen.step(&cur) {
            Some(v) => cur = v,
            None => {
                // A terminal op: go on from an earlier value.
                let pick = gen.rng.below(gen.values.len());
                cur = gen.values[pick].clone();
            }
        }
    }
    let mut outputs = std::mem::take(&mut gen.outputs);
    if gen.g.tensor_ty(cur.id).is_some() && !matches!(gen.g.op(cur.id), Op::Arg(_)) {
        outputs.push(cur.id);
    }
    // Sometimes an intermediate value too.
    if gen.values.len() > 2 && gen.chance(0.3) {
        let v = gen.values[1 + gen.rng.below(gen.values.len() - 1)].id;
        if !outputs.contains(&v) && !matches!(gen.g.op(v), Op::Arg(_)) {
            outputs.push(v);
        }
    }
    if outputs.is_empty() {
        let zero_add = gen.node(Op::Clamp { min: -1.0, max: 1.0 }, d, &gen.values[0].shape.clone(), &[x], false);
        outputs.push(zero_add.id);
    }
    gen.g.set_outputs(outputs);
    gen.g.remove_dead_nodes();
    DiffCase { graph: gen.g, inputs: gen.inputs }
}

// ---------------------------------------------------------------- the contract

/// How one value may differ from the reference's.
#[derive(Clone, Copy, Debug)]
enum Allowed {
    /// Bit for bit.
    Exact,
    /// A math function's result on a backend with another math library: within this many ulp.
    Ulps(u64),
    /// Within `bound` (absolute) elementwise, and the same NaN/±inf elements, when `promised`;
    /// not compared otherwise.
    Bound { bound: f64, promised: bool },
}

/// `2^-(p-1)`: one ulp relative to a normal value of `d`.
fn eps(d: DType) -> f64 {
    match d {
        DType::F16 => 2f64.powi(-10),
        DType::BF16 => 2f64.powi(-7),
        DType::F32 => 2f64.powi(-23),
        _ => 2f64.powi(-52),
    }
}

/// The smallest positive subnormal of `d`.
fn tiny(d: DType) -> f64 {
    match d {
        DType::F16 => 2f64.powi(-24),
        DType::BF16 => 2f64.powi(-133),
        DType::F32 => 2f64.powi(-149),
        _ => 0.0,
    }
}

fn max_finite(d: DType) -> f64 {
    match d {
        DType::F16 => 65504.0,
        DType::BF16 => 3.3895313892515355e38,
        DType::F32 => f32::MAX as f64,
        _ => f64::MAX,
    }
}

/// Largest finite magnitude, and whether every element is finite.
fn peak(t: &Tensor) -> (f64, bool) {
    t.to_f64_vec().iter().fold((0.0f64, true), |(p, all), &x| if x.is_finite() { (p.max(x.abs()), all) } else { (p, false) })
}

fn is_math(op: &Op) -> bool {
    matches!(op, Op::Unary(UnaryOp::Exp | UnaryOp::Log | UnaryOp::Tanh | UnaryOp::Sigmoid | UnaryOp::Erf | UnaryOp::Sin | UnaryOp::Cos) | Op::Binary(BinaryOp::Pow))
}

/// The reduction length of a contraction and `Σ|a·b|`'s largest value (bias included),
/// computed by the reference on the operands' magnitudes in f32.
fn magnitude_sum(g: &Graph, id: NodeId, values: &HashMap<NodeId, Tensor>) -> Option<(usize, f64)> {
    let ops = g.operands(id);
    let x = values.get(&ops[0])?;
    let w = values.get(&ops[1])?;
    let k = match g.op(id) {
        Op::MatMul => *x.shape().last()?,
        Op::Conv2d(_) | Op::TransposeConv2d(_) | Op::Conv3d(_) => w.shape()[1..].iter().product(),
        Op::DepthwiseConv2d(_) => w.shape()[0] * w.shape()[1],
        _ => return None,
    };
    let abs = |t: &Tensor| {
        let v: Vec<f32> = t.to_f32_vec().iter().map(|x| x.abs()).collect();
        Tensor::from_f32(t.shape().to_vec(), v).expect("sized")
    };
    let mut h = Graph::new("magnitudes");
    let mut operands = Vec::new();
    let mut inputs = Vec::new();
    for (i, &o) in ops.iter().enumerate() {
        let t = values.get(&o)?;
        let t = if i < 3 { abs(t) } else { cast(t, DType::F32) };
        operands.push(constant(&mut h, t.clone()));
        inputs.push(t);
    }
    let shape = g.tensor_ty(id)?.shape.clone();
    let y = h.add_node(g.op(id).clone(), tensor_ty(DType::F32, &shape), &operands, loc());
    h.add_output(y);
    let out = reference::run(&h, &[]).ok()?;
    // An infinite magnitude sum (an overflow) is a sum the contract promises nothing about.
    let (p, finite) = peak(&out[0]);
    Some((k, if finite { p } else { f64::INFINITY }))
}

/// What each node of `g` may differ by on a backend whose math functions are within
/// `math_ulps` of the reference's (0: the same), from the reference's values of every node.
fn allowances(g: &Graph, values: &HashMap<NodeId, Tensor>, math_ulps: u64) -> HashMap<NodeId, Allowed> {
    let mut a: HashMap<NodeId, Allowed> = HashMap::new();
    let unbounded = Allowed::Bound { bound: f64::INFINITY, promised: false };
    // Each value's peak, read once.
    let peaks: HashMap<NodeId, (f64, bool)> = values.iter().map(|(&id, t)| (id, peak(t))).collect();
    for id in g.topo_order().expect("acyclic") {
        let Some(v) = values.get(&id) else {
            a.insert(id, Allowed::Exact);
            continue;
        };
        let d = v.dtype();
        let pv = peaks[&id].0;
        let op = g.op(id);
        let data: Vec<NodeId> = g.operands(id).into_iter().enumerate().filter(|(i, _)| !op.side_operands().contains(i) && !op.shape_operands().contains(i)).map(|(_, o)| o).collect();
        let ins: Vec<Allowed> = data.iter().map(|o| *a.get(o).unwrap_or(&Allowed::Exact)).collect();
        let in_peak = |i: usize| data.get(i).and_then(|o| peaks.get(o)).map_or(0.0, |p| p.0);
        let in_finite = |i: usize| data.get(i).and_then(|o| peaks.get(o)).is_none_or(|p| p.1);
        // (bound, promised) of an operand: 0 and true for an exact one.
        let bp = |x: &Allowed, o: &NodeId| match *x {
            Allowed::Exact => Some((0.0, true)),
            Allowed::Ulps(u) => peaks.get(o).zip(values.get(o)).map(|(&(p, finite), t)| (u as f64 * (eps(t.dtype()) * p + tiny(t.dtype())), finite && p < max_finite(t.dtype()) / 2.0)),
            Allowed::Bound { bound, promised } => Some((bound, promised)),
        };
        let operand_bounds: Option<Vec<(f64, bool)>> = ins.iter().zip(&data).map(|(x, o)| bp(x, o)).collect();
        let all_exact = ins.iter().all(|x| matches!(x, Allowed::Exact));
        let allowed = if op.is_contraction() {
            match (magnitude_sum(g, id, values), &operand_bounds) {
                (Some((k, s)), Some(ob)) => {
                    let (px, pw) = (in_peak(0), in_peak(1));
                    let (bx, bw) = (ob[0].0, ob[1].0);
                    let bb = ob.get(2).map_or(0.0, |b| b.0);
                    // What the operands' own errors add to each sum.
                    let carried = k as f64 * (bx * pw + px * bw + bx * bw);
                    let bound = 2.0 * k as f64 * 2f64.powi(-24) * s + eps(d) * pv + tiny(d) + carried + bb;
                    let promised = ob.iter().all(|b| b.1) && (0..3).all(in_finite) && s + carried < max_finite(d) / 2.0;
                    Allowed::Bound { bound, promised }
                }
                _ => unbounded,
            }
        } else if all_exact {
            if is_math(op) && math_ulps > 0 { Allowed::Ulps(math_ulps) } else { Allowed::Exact }
        } else if let Some(ob) = operand_bounds {
            let sum: f64 = ob.iter().map(|b| b.0).sum();
            let promised = ob.iter().all(|b| b.1) && pv + sum < max_finite(d) / 2.0;
            let round = eps(d) * pv + tiny(d);
            let n_in = data.first().and_then(|o| values.get(o)).map_or(1, |t| t.len()) as f64;
            let n_out = v.len().max(1) as f64;
            match op {
                Op::Binary(BinaryOp::Add | BinaryOp::Sub) | Op::Cast => Allowed::Bound { bound: sum + round, promised },
                // Weights in [0, 1] summing to 1: the operand's error at most, plus the f32
                // roundings of the four products and three sums, plus the final one.
                Op::Resize { bilinear: true } => Allowed::Bound { bound: sum + round + 8.0 * 2f64.powi(-24) * pv, promised },
                // Moves and picks: no arithmetic, no new rounding.
                Op::Binary(BinaryOp::Maximum | BinaryOp::Minimum)
                | Op::Clamp { .. }
                | Op::Unary(UnaryOp::Negate | UnaryOp::Abs)
                | Op::Select
                | Op::Transpose { .. }
                | Op::Reshape
                | Op::Slice
                | Op::Pad
                | Op::Concat { .. }
                | Op::Tile
                | Op::Reverse { .. }
                | Op::Resize { bilinear: false }
                | Op::Gather
                | Op::MaxPool2d(_)
                | Op::Reduce { kind: ReduceKind::Max | ReduceKind::Min, .. } => Allowed::Bound { bound: sum, promised },
                Op::Binary(BinaryOp::Mul) => {
                    let (b0, b1) = (ob[0].0, ob[1].0);
                    let bound = b0 * in_peak(1) + in_peak(0) * b1 + b0 * b1 + round;
                    // 0·inf is NaN and tiny·inf is inf: a perturbed factor against an infinity.
                    Allowed::Bound { bound, promised: promised && in_finite(0) && in_finite(1) }
                }
                Op::Reduce { kind: ReduceKind::Sum, .. } => {
                    let n = n_in / n_out;
                    Allowed::Bound { bound: n * sum + n * n * eps(d) * in_peak(0) + round, promised }
                }
                Op::AvgPool2d(p) => {
                    let n = (p.kernel[0] * p.kernel[1]) as f64;
                    Allowed::Bound { bound: sum + n * eps(DType::F32) * in_peak(0) + round, promised }
                }
                // 1-Lipschitz (erf: 2/√π) and computed in f32 from a perturbed argument.
                Op::Unary(UnaryOp::Tanh | UnaryOp::Sigmoid | UnaryOp::Erf | UnaryOp::Sin | UnaryOp::Cos) => {
                    let own = if math_ulps > 0 { math_ulps as f64 * (eps(d) * pv + tiny(d)) } else { 0.0 };
                    Allowed::Bound { bound: 1.2 * sum + round + own, promised }
                }
                _ => unbounded,
            }
        } else {
            unbounded
        };
        a.insert(id, allowed);
    }
    a
}

/// Same special value: both NaN, or equal infinities.
fn same_special(p: f64, q: f64) -> bool {
    (p.is_nan() && q.is_nan()) || p == q
}

/// What the contract says about one result compared with the reference's: `Ok(true)` when it
/// was compared and agrees, `Ok(false)` when the contract promises nothing to compare.
fn judge_value(got: &Tensor, want: &Tensor, allowed: Allowed) -> Result<bool, String> {
    if got.ty() != want.ty() {
        return Err(format!("type {} where the reference has {}", got.ty(), want.ty()));
    }
    match allowed {
        Allowed::Exact => crate::cases::same_bits(got, want).map(|_| true),
        Allowed::Ulps(u) => crate::cases::within_ulps(got, want, u).map(|_| true),
        Allowed::Bound { promised: false, .. } => Ok(false),
        Allowed::Bound { bound, promised: true } => {
            for (i, (p, q)) in got.to_f64_vec().iter().zip(want.to_f64_vec()).enumerate() {
                let ok = if p.is_finite() && q.is_finite() { (p - q).abs() <= bound } else { same_special(*p, q) };
                if !ok {
                    return Err(format!("element {i}: {p:e} vs reference {q:e} (allowed: {bound:e})"));
                }
            }
            Ok(true)
        }
    }
}

/// The reference's value of every node of `g` on `inputs` (and its results).
pub fn reference_values(g: &Graph, inputs: &[Tensor]) -> Result<(HashMap<NodeId, Tensor>, Vec<Tensor>), String> {
    let mut values = HashMap::new();
    let outs = reference::run_observed(g, inputs, |id, t| {
        values.insert(id, t.clone());
    })
    .map_err(|e| e.to_string())?;
    Ok((values, outs))
}

/// Compares a backend's results with the reference's under the contract; the number of
/// results compared and not compared, or what disagrees.
pub fn judge(g: &Graph, values: &HashMap<NodeId, Tensor>, want: &[Tensor], got: &[Tensor], math_ulps: u64) -> Result<(usize, usize), String> {
    if got.len() != want.len() {
        return Err(format!("{} results where the reference has {}", got.len(), want.len()));
    }
    let allowed = allowances(g, values, math_ulps);
    let (mut compared, mut skipped) = (0, 0);
    for (k, ((o, a), b)) in g.outputs().iter().zip(got).zip(want).enumerate() {
        match judge_value(a, b, allowed[o]) {
            Ok(true) => compared += 1,
            Ok(false) => skipped += 1,
            Err(e) => return Err(format!("result #{k} ({}): {e}", g.op(*o).mlir_name())),
        }
    }
    Ok((compared, skipped))
}

// ---------------------------------------------------------------- backends

/// A backend the differential tester runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DiffBackend {
    /// The Cranelift JIT with this many threads.
    Jit(usize),
    /// The LLVM x86-64 backend (ahead of time, loaded by the runtime) with this many threads.
    LlvmX86(usize),
    /// The LLVM AArch64 backend as a C library under qemu.
    Aarch64,
}

impl DiffBackend {
    /// Every backend that runs here.
    pub const ALL: [DiffBackend; 5] = [DiffBackend::Jit(1), DiffBackend::Jit(2), DiffBackend::LlvmX86(1), DiffBackend::LlvmX86(2), DiffBackend::Aarch64];

    /// Its name in reports.
    pub fn name(self) -> String {
        match self {
            DiffBackend::Jit(t) => format!("jit/{t}t"),
            DiffBackend::LlvmX86(t) => format!("llvm-x86_64/{t}t"),
            DiffBackend::Aarch64 => "aarch64 (qemu)".into(),
        }
    }

    /// The `f16c run` flags that run a reproducer on it.
    pub fn flags(self) -> String {
        match self {
            DiffBackend::Jit(t) => format!("--threads={t}"),
            DiffBackend::LlvmX86(t) => format!("--backend=llvm --threads={t}"),
            DiffBackend::Aarch64 => "--target=aarch64+bf16".into(),
        }
    }

    /// Its math functions' distance from the reference's, in ulp.
    pub fn math_ulps(self) -> u64 {
        match self {
            DiffBackend::Aarch64 => f16c_compiler::backend::llvm_cpu::library::MATH_ULPS,
            _ => 0,
        }
    }
}

/// A backend's results, or its error; `Refused` for a located "not supported" (legality).
pub enum Ran {
    /// The results.
    Results(Vec<Tensor>),
    /// The backend refuses the graph (its legality table).
    Refused(String),
    /// Any other error, or a panic.
    Failed(String),
}

fn classify(e: String) -> Ran {
    if e.contains("not supported") { Ran::Refused(e) } else { Ran::Failed(e) }
}


/// Runs `g` on one in-process backend (not [`DiffBackend::Aarch64`], see [`run_aarch64`]).
pub fn run_on(backend: DiffBackend, g: &Graph, inputs: &[Tensor]) -> Ran {
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| -> Result<Vec<Tensor>, String> {
        match backend {
            DiffBackend::Jit(t) => f16c_jit::Model::compile_graph(g, t).map_err(|e| e.to_string())?.run(inputs).map_err(|e| e.to_string()),
            DiffBackend::LlvmX86(t) => {
                use f16c_compiler::backend::Backend;
                let b = &f16c_compiler::backend::llvm_cpu::X86_64;
                let program = f16c_compiler::driver::lower_for(g, b).map_err(|d| d.to_string())?;
                let artifact = b.artifact(&program).map_err(|e| e.to_string())?;
                f16c_runtime::loader::load(artifact, t).map_err(|e| e.to_string())?.run(inputs).map_err(|e| e.to_string())
            }
            DiffBackend::Aarch64 => run_aarch64(&[(g, inputs)]).pop().expect("one result").map_err(|e| e.to_string()),
        }
    }));
    match r {
        Ok(Ok(out)) => Ran::Results(out),
        Ok(Err(e)) => classify(e),
        Err(p) => Ran::Failed(crate::panic_message(p)),
    }
}

/// Runs graphs as AArch64 (`+bf16`) C libraries under qemu, all in one driver process.
pub fn run_aarch64(graphs: &[(&Graph, &[Tensor])]) -> Vec<Result<Vec<Tensor>, String>> {
    let backend = f16c_compiler::backend::llvm_cpu::aarch64(true);
    let runs: Vec<_> = graphs.iter().map(|&(g, inputs)| (g, inputs, backend)).collect();
    crate::run_libraries("aarch64", &runs)
}

/// What one backend did with one graph.
pub fn verdict(backend: DiffBackend, g: &Graph, values: &HashMap<NodeId, Tensor>, want: &[Tensor], ran: Ran) -> Verdict {
    match ran {
        Ran::Refused(e) => Verdict::Refused(e),
        Ran::Failed(e) => Verdict::Fails(e),
        Ran::Results(got) => match judge(g, values, want, &got, backend.math_ulps()) {
            Ok((compared, skipped)) => Verdict::Agrees { compared, skipped },
            Err(e) => Verdict::Fails(e),
        },
    }
}

/// Why `backend` fails `case` (run on its own, as the shrinker does), if it does; a case the
/// reference itself cannot run does not count.
fn failure(backend: DiffBackend, case: &DiffCase) -> Option<String> {
    let (values, want) = reference_values(&case.graph, &case.inputs).ok()?;
    match verdict(backend, &case.graph, &values, &want, run_on(backend, &case.graph, &case.inputs)) {
        Verdict::Fails(m) => Some(m),
        _ => None,
    }
}

/// What one backend did with one graph, judged.
#[derive(Debug)]
pub enum Verdict {
    /// Every result compared agrees; some were not comparable under the contract.
    Agrees {
        /// Results compared.
        compared: usize,
        /// Results the contract promises nothing about (see the module documentation).
        skipped: usize,
    },
    /// The backend refuses the graph (legality: a located "not supported").
    Refused(String),
    /// A disagreement, an error or a panic.
    Fails(String),
}

/// Export, import, export: the same text (the importer and printer on every generated graph).
pub fn round_trip(g: &Graph) -> Result<(), String> {
    let m = f16c_dialect::Module { functions: vec![g.clone()] };
    crate::fuzz::text_round_trip(&m)
}

// ---------------------------------------------------------------- shrinking

/// Shrinks a failing case while `fails` holds: the graph with one output, ops bypassed,
/// input and weight elements made plain. At most `budget` calls of `fails`.
pub fn shrink(case: &DiffCase, mut fails: impl FnMut(&DiffCase) -> bool, budget: usize) -> DiffCase {
    let mut best = case.clone();
    let mut calls = 0;
    let mut attempt = |mut c: DiffCase, best: &mut DiffCase, calls: &mut usize| -> bool {
        for k in c.graph.remove_unused_inputs().into_iter().rev() {
            c.inputs.remove(k);
        }
        if *calls >= budget || f16c_dialect::verify::verify(&c.graph).is_err() {
            return false;
        }
        *calls += 1;
        if fails(&c) {
            *best = c;
            true
        } else {
            false
        }
    };
    // One output.
    if best.graph.outputs().len() > 1 {
        for &o in best.graph.outputs().to_vec().iter() {
            let mut c = best.clone();
            c.graph.set_outputs(vec![o]);
            c.graph.remove_dead_nodes();
            if attempt(c, &mut best, &mut calls) {
                break;
            }
        }
    }
    // The graph cut after one op: the earliest op whose value alone still fails.
    for id in best.graph.topo_order().expect("acyclic") {
        if best.graph.op(id).is_constant() || matches!(best.graph.op(id), Op::Arg(_)) || best.graph.tensor_ty(id).is_none() || best.graph.outputs() == [id] {
            continue;
        }
        let mut c = best.clone();
        c.graph.set_outputs(vec![id]);
        c.graph.remove_dead_nodes();
        if attempt(c, &mut best, &mut calls) {
            break;
        }
    }
    // The graph cut before an op: an op's value replaced by a new input holding the
    // reference's value of it, so that what computed it drops out.
    let mut progress = true;
    while progress && calls < budget {
        progress = false;
        let Ok((values, _)) = reference_values(&best.graph, &best.inputs) else { break };
        for id in best.graph.topo_order().expect("acyclic") {
            let op = best.graph.op(id);
            if op.is_constant() || matches!(op, Op::Arg(_)) || best.graph.outputs().contains(&id) {
                continue;
            }
            let (Some(ty), Some(value)) = (best.graph.tensor_ty(id).cloned(), values.get(&id)) else { continue };
            let mut c = best.clone();
            let arg = c.graph.add_input(ty, loc());
            c.graph.replace_all_uses(id, arg);
            c.graph.remove_dead_nodes();
            c.inputs.push(value.clone());
            if attempt(c, &mut best, &mut calls) {
                progress = true;
                break;
            }
        }
    }
    // Bypass ops: an output moved to an earlier value, or an op replaced by an operand of its type.
    let mut progress = true;
    while progress && calls < budget {
        progress = false;
        let order = best.graph.topo_order().expect("acyclic");
        for &id in order.iter().rev() {
            if best.graph.op(id).is_constant() || matches!(best.graph.op(id), Op::Arg(_)) {
                continue;
            }
            let ty = best.graph.ty(id).clone();
            let candidates: Vec<NodeId> = best.graph.operands(id).into_iter().filter(|&o| *best.graph.ty(o) == ty).collect();
            for o in candidates {
                let mut c = best.clone();
                c.graph.replace_all_uses(id, o);
                let outs: Vec<NodeId> = c.graph.outputs().iter().map(|&x| if x == id { o } else { x }).collect();
                if outs.iter().any(|&x| matches!(c.graph.op(x), Op::Arg(_))) {
                    continue;
                }
                c.graph.set_outputs(outs);
                c.graph.remove_dead_nodes();
                if attempt(c, &mut best, &mut calls) {
                    progress = true;
                    break;
                }
            }
            if progress {
                break;
            }
        }
    }
    // Plain elements: inputs, then constants, in halving chunks.
    for k in 0..best.inputs.len() {
        let n = best.inputs[k].len();
        let mut chunk = n;
        while chunk >= 1 && calls < budget {
            let mut start = 0;
            while start < n && calls < budget {
                let mut c = best.clone();
                let t = &c.inputs[k];
                let mut v = t.to_f32_vec();
                let end = (start + chunk).min(n);
                if v[start..end].iter().all(|&x| x == 1.0) {
                    start = end;
                    continue;
                }
                v[start..end].iter_mut().for_each(|x| *x = 1.0);
                c.inputs[k] = cast(&Tensor::from_f32(t.shape().to_vec(), v).expect("sized"), t.dtype());
                attempt(c, &mut best, &mut calls);
                start = end;
            }
            chunk /= 2;
        }
    }
    let constants: Vec<NodeId> = best.graph.node_ids().filter(|&id| matches!(best.graph.op(id), Op::Const(t) if t.dtype().is_float() && t.len() > 1)).collect();
    for id in constants {
        let Op::Const(t) = best.graph.op(id).clone() else { continue };
        let mut c = best.clone();
        let plain = cast(&Tensor::from_f32(t.shape().to_vec(), vec![1.0; t.len()]).expect("sized"), t.dtype());
        c.graph.node_mut(id).op = Op::Const(plain);
        attempt(c, &mut best, &mut calls);
    }
    best
}

/// Writes a reproducer: `repro.mlir`, `in<k>.npy` and `README` with the commands that show the
/// disagreement.
pub fn save_reproducer(dir: &std::path::Path, case: &DiffCase, backend: DiffBackend, message: &str) -> std::io::Result<()> {
    use f16c_dialect::export::{print_module, PrintOptions};
    std::fs::create_dir_all(dir)?;
    let m = f16c_dialect::Module { functions: vec![case.graph.clone()] };
    let text = print_module(&m, PrintOptions::default()).map_err(|d| std::io::Error::other(d.to_string()))?;
    std::fs::write(dir.join("repro.mlir"), text)?;
    let mut args = String::new();
    for (k, t) in case.inputs.iter().enumerate() {
        let p = dir.join(format!("in{k}.npy"));
        f16c_runtime::npy::write(&p, t).map_err(|e| std::io::Error::other(e.to_string()))?;
        args.push_str(&format!(" --input in{k}.npy"));
    }
    let readme = format!(
        "{} disagrees with the reference interpreter:\n{message}\n\n  f16c run repro.mlir --target=reference{args}\n  f16c run repro.mlir {}{args}\n",
        backend.name(),
        backend.flags()
    );
    std::fs::write(dir.join("README"), readme)
}

// ---------------------------------------------------------------- campaign

/// Counts of one backend over a campaign.
#[derive(Debug, Default, Clone)]
pub struct BackendCounts {
    /// Graphs it ran.
    pub graphs: u64,
    /// Results compared with the reference and found in agreement.
    pub compared: u64,
    /// Results the contract promises nothing about.
    pub skipped: u64,
    /// Graphs it refused (legality), by kind of message.
    pub refused: u64,
    /// Graphs it got wrong.
    pub failed: u64,
}

/// One disagreement found, shrunk.
#[derive(Debug)]
pub struct DiffFinding {
    /// The seed of the generated graph.
    pub seed: u64,
    /// Which backend (or "generator", "round trip", "reference").
    pub what: String,
    /// The message.
    pub message: String,
    /// Where the reproducer was written.
    pub dir: std::path::PathBuf,
}

/// What a differential campaign did.
#[derive(Debug, Default)]
pub struct DiffReport {
    /// Graphs generated.
    pub graphs: u64,
    /// Per backend.
    pub backends: Vec<(DiffBackend, BackendCounts)>,
    /// Refusal kinds seen, with counts.
    pub refusals: std::collections::BTreeMap<String, u64>,
    /// Disagreements (the first of each kind shrunk and saved).
    pub findings: Vec<DiffFinding>,
}

impl DiffReport {
    /// A table of the counts, then the findings.
    pub fn table(&self) -> String {
        let mut s = format!("{} graphs\n\n| backend | graphs run | results compared | not comparable (contract) | refused | disagreements |\n|---|---|---|---|---|---|\n", self.graphs);
        for (b, c) in &self.backends {
            s.push_str(&format!("| {} | {} | {} | {} | {} | {} |\n", b.name(), c.graphs, c.compared, c.skipped, c.refused, c.failed));
        }
        for (kind, n) in &self.refusals {
            s.push_str(&format!("\nrefused {n}×: {kind}"));
        }
        for f in &self.findings {
            s.push_str(&format!("\n\nFINDING seed {} on {}: {}\n  reproducer: {}", f.seed, f.what, f.message.lines().next().unwrap_or(""), f.dir.display()));
        }
        s.push('\n');
        s
    }
}

/// Runs generated graphs from `seed` on `backends` for `seconds`; disagreements are shrunk
/// (at most `shrink_budget` runs each) and saved under `out`.
pub fn campaign(seconds: f64, seed: u64, backends: &[DiffBackend], out: &std::path::Path, shrink_budget: usize) -> DiffReport {
    let start = std::time::Instant::now();
    let mut report = DiffReport { backends: backends.iter().map(|&b| (b, BackendCounts::default())).collect(), ..DiffReport::default() };
    let mut kinds = std::collections::HashSet::new();
    let mut next = seed;
    let batch = if backends.contains(&DiffBackend::Aarch64) { 16 } else { 1 };
    while start.elapsed().as_secs_f64() < seconds {
        let mut cases = Vec::new();
        for _ in 0..batch {
            let s = next;
            next += 1;
            report.graphs += 1;
            let case = generate(s);
            let early = f16c_dialect::verify::verify(&case.graph).map_err(|d| ("generator", d.to_string())).and_then(|_| round_trip(&case.graph).map_err(|e| ("round trip", e)));
            let early = early.and_then(|_| reference_values(&case.graph, &case.inputs).map_err(|e| ("reference", e)));
            match early {
                Ok((values, want)) => cases.push((s, case, values, want)),
                Err((what, message)) => {
                    if kinds.insert(format!("{what}:{}", crate::fuzz::error_kind(&message))) {
                        let dir = out.join(format!("seed-{s}"));
                        let _ = save_reproducer(&dir, &case, DiffBackend::Jit(1), &message);
                        report.findings.push(DiffFinding { seed: s, what: what.into(), message, dir });
                    }
                }
            }
        }
        let aarch64: Vec<Result<Vec<Tensor>, String>> = if backends.contains(&DiffBackend::Aarch64) {
            let graphs: Vec<(&Graph, &[Tensor])> = cases.iter().map(|(_, c, _, _)| (&c.graph, c.inputs.as_slice())).collect();
            run_aarch64(&graphs)
        } else {
            Vec::new()
        };
        let mut aarch64 = aarch64.into_iter();
        for (s, case, values, want) in &cases {
            let arm = if backends.contains(&DiffBackend::Aarch64) { aarch64.next() } else { None };
            for (b, counts) in report.backends.iter_mut() {
                let ran = match (*b, &arm) {
                    (DiffBackend::Aarch64, Some(r)) => match r {
                        Ok(t) => Ran::Results(t.clone()),
                        Err(e) => classify(e.clone()),
                    },
                    _ => run_on(*b, &case.graph, &case.inputs),
                };
                counts.graphs += 1;
                match verdict(*b, &case.graph, values, want, ran) {
                    Verdict::Agrees { compared, skipped } => {
                        counts.compared += compared as u64;
                        counts.skipped += skipped as u64;
                    }
                    Verdict::Refused(e) => {
                        counts.refused += 1;
                        *report.refusals.entry(format!("{}: {}", b.name(), crate::fuzz::error_kind(&e))).or_default() += 1;
                    }
                    Verdict::Fails(message) => {
                        counts.failed += 1;
                        if !kinds.insert(format!("{}:{}", b.name(), crate::fuzz::error_kind(&message))) {
                            continue;
                        }
                        let backend = *b;
                        let small = shrink(case, |c| failure(backend, c).is_some(), shrink_budget);
                        let message = failure(backend, &small).unwrap_or(message);
                        let dir = out.join(format!("seed-{s}-{}", b.name().replace(['/', ' ', '(', ')'], "_")));
                        let _ = save_reproducer(&dir, &small, backend, &message);
                        report.findings.push(DiffFinding { seed: *s, what: b.name(), message, dir });
                    }
                }
            }
        }
    }
    report
}
