//! `fold-batch-norm`: fold per-channel affine ops that follow a convolution into its weights
//! and bias.
//!
//! torch-mlir writes an inference batch norm as four elementwise ops on the convolution's
//! result: `sub` the running mean, `mul` by `rsqrt(var + eps)`, `mul` by γ, `add` β, each with a
//! constant that varies only along the channel axis (`canonicalize` has already sunk the NCHW
//! transposes below them and folded the `rsqrt`). Such a chain is `y ↦ a·y + d` per output
//! channel, so `conv(x, W, b)` followed by it equals `conv(x, a·W, a·b + d)`: the chain
//! disappears. What it saves is largest in fp16, where every op of the chain rounds to fp16
//! (four roundings per element, and four epilogue ops, for one): IREE, TensorRT and ONNX
//! Runtime fold batch norm the same way.
//!
//! Folded: `tosa.add`, `tosa.sub` (either operand order) and `tosa.mul` with a constant f32
//! operand of the result's rank whose dimensions are all 1 but the last (the channel axis of
//! NHWC), which is 1 or the channel count, following a `tosa.conv2d`, `tosa.conv3d`,
//! `tosa.transpose_conv2d` or `tosa.depthwise_conv2d` with f32 result and accumulator, constant
//! weights and bias, and a zero weight zero point; the convolution's result (and each folded
//! op's but the last) must have that op as its only user. Not folded: an op with an
//! `f16c.precision` override (the user chose its precision apart from the convolution's), and a
//! chain whose folded weights or bias would not be finite, or whose scale is 0 or not finite.
//!
//! Numerics: this reassociates f32 arithmetic, as every compiler that folds batch norm does, so
//! f32 results differ from the unfolded graph by rounding (a few ulp); the precision passes,
//! the reference interpreter and every backend then see the folded graph, so backends stay
//! bit-identical to the reference. The f32 weights are computed in f64 and rounded once. The
//! folded convolution keeps its location and attributes and takes the last folded op's
//! calibration range. `--no-fold-batch-norm` on the command line turns the pass off.
//!
//! ```mlir
//! %0 = tosa.conv2d %x, %w, %b, %zp, %zp {...} : (...) -> tensor<1x8x8x16xf32>
//! %1 = tosa.sub %0, %mean : (tensor<1x8x8x16xf32>, tensor<1x1x1x16xf32>) -> tensor<1x8x8x16xf32>
//! %2 = tosa.mul %1, %scale, %shift : (tensor<1x8x8x16xf32>, tensor<1x1x1x16xf32>, tensor<1xi8>) -> tensor<1x8x8x16xf32>
//! // becomes
//! %2 = tosa.conv2d %x, %w2, %b2, %zp, %zp {...} : (...) -> tensor<1x8x8x16xf32>
//! ```

use super::attrs;
use crate::pass::registry::PassInfo;
use crate::pass::{Pass, Statistic};
use f16c_dialect::{BinaryOp, DType, Data, Diagnostic, Diagnostics, Graph, Module, NodeId, Op, Tensor, ValueType};

/// Registry entry.
pub const INFO: PassInfo = PassInfo {
    name: "fold-batch-norm",
    type_name: "FoldBatchNorm",
    summary: "Fold per-channel add/sub/mul by constants after a convolution into its weights and bias",
    options: &[],
    create: |_| Ok(Box::new(FoldBatchNorm::default())),
};

/// The pass.
#[derive(Default)]
pub struct FoldBatchNorm {
    convolutions: u64,
    ops: u64,
}

/// `y ↦ scale[c]·y + shift[c]` for every output channel `c`, in f64.
struct Affine {
    scale: Vec<f64>,
    shift: Vec<f64>,
}

impl Affine {
    fn identity(channels: usize) -> Affine {
        Affine { scale: vec![1.0; channels], shift: vec![0.0; channels] }
    }

    /// Follows the map by `op` with the per-channel constant `k`; `conv_first` says whether the
    /// convolution's side is the op's first operand (it matters for `sub` only).
    fn then(&mut self, op: BinaryOp, k: &[f64], conv_first: bool) {
        let k_at = |c: usize| if k.len() == 1 { k[0] } else { k[c] };
        for c in 0..self.scale.len() {
            let k = k_at(c);
            match (op, conv_first) {
                (BinaryOp::Add, _) => self.shift[c] += k,
                (BinaryOp::Sub, true) => self.shift[c] -= k,
                (BinaryOp::Sub, false) => {
                    self.scale[c] = -self.scale[c];
                    self.shift[c] = k - self.shift[c];
                }
                (BinaryOp::Mul, _) => {
                    self.scale[c] *= k;
                    self.shift[c] *= k;
                }
                _ => unreachable!("only add, sub and mul are folded"),
            }
        }
    }
}

/// The elements of an f32 constant operand, if it is one.
fn f32_constant(g: &Graph, id: NodeId) -> Option<&[f32]> {
    match g.op(id) {
        Op::Const(t) => match t.data() {
            Data::F32(v) => Some(v),
            _ => None,
        },
        _ => None,
    }
}

/// Where a convolution's output channel sits in its weights: weight element `i` (flat index)
/// belongs to channel `(i / stride) % channels`; returns `(stride, channels)`.
fn weight_channels(op: &Op, weight_shape: &[usize]) -> (usize, usize) {
    match op {
        // [KH, KW, C, M]: output channel c·M + m is the two innermost indices.
        Op::DepthwiseConv2d(_) => (1, weight_shape[weight_shape.len() - 2..].iter().product()),
        // [OC, ..., IC]: the channel is the outermost index.
        _ => (weight_shape[1..].iter().product::<usize>().max(1), weight_shape[0]),
    }
}

impl FoldBatchNorm {
    /// If `e` (a user of `from`) is a foldable op, its kind, constant and operand order.
    fn foldable(g: &Graph, from: NodeId, e: NodeId, channels: usize) -> Option<(BinaryOp, &[f32], bool)> {
        let Op::Binary(op @ (BinaryOp::Add | BinaryOp::Sub | BinaryOp::Mul)) = *g.op(e) else { return None };
        if g.node(e).attr(attrs::PRECISION).is_some() || g.ty(e) != g.ty(from) {
            return None;
        }
        let operands = g.operands(e);
        let conv_first = operands[0] == from;
        let other = operands[if conv_first { 1 } else { 0 }];
        if other == from {
            return None;
        }
        let k = f32_constant(g, other)?;
        let shape = &g.tensor_ty(other)?.shape;
        let (last, outer) = shape.split_last()?;
        let per_channel = outer.iter().all(|&d| d == 1) && (*last == 1 || *last == channels);
        (per_channel && shape.len() == g.tensor_ty(from)?.shape.len() && k.iter().all(|v| v.is_finite())).then_some((op, k, conv_first))
    }

    /// Folds the chain after convolution `conv`, if there is one; returns how many ops it folded.
    fn fold(g: &mut Graph, conv: NodeId) -> usize {
        // Checked before the op is cloned: every node passes here, weights included.
        if g.op(conv).conv_acc() != Some(DType::F32) {
            return 0;
        }
        let op = g.op(conv).clone();
        let Some(out) = g.tensor_ty(conv).cloned() else { return 0 };
        let operands = g.operands(conv);
        let (Some(w), Some(b)) = (f32_constant(g, operands[1]), f32_constant(g, operands[2])) else { return 0 };
        let weight_zero = match g.op(operands[4]) {
            Op::Const(t) => t.to_f64_vec().iter().all(|&v| v == 0.0),
            _ => false,
        };
        let channels = *out.shape.last().unwrap_or(&0);
        if out.dtype != DType::F32 || !weight_zero || channels == 0 || !(b.len() == 1 || b.len() == channels) {
            return 0;
        }
        let mut affine = Affine::identity(channels);
        let (mut last, mut folded) = (conv, 0);
        loop {
            let users = g.users(last);
            if users.len() != 1 || g.outputs().contains(&last) {
                break;
            }
            let Some((kind, k, conv_first)) = Self::foldable(g, last, users[0].0, channels) else { break };
            let k: Vec<f64> = k.iter().map(|&v| v as f64).collect();
            affine.then(kind, &k, conv_first);
            last = users[0].0;
            folded += 1;
        }
        if folded == 0 || affine.scale.iter().any(|&s| s == 0.0 || !s.is_finite()) {
            return 0;
        }
        let weight_shape = g.tensor_ty(operands[1]).expect("tensor weights").shape.clone();
        let (stride, count) = weight_channels(&op, &weight_shape);
        let w2: Vec<f32> = w.iter().enumerate().map(|(i, &v)| (v as f64 * affine.scale[(i / stride) % count]) as f32).collect();
        let b2: Vec<f32> = (0..channels).map(|c| (b[if b.len() == 1 { 0 } else { c }] as f64 * affine.scale[c] + affine.shift[c]) as f32).collect();
        if !w2.iter().chain(&b2).all(|v| v.is_finite()) {
            return 0;
        }
        let tensor = |shape: Vec<usize>, v: Vec<f32>| Tensor::from_f32(shape, v).expect("shape from the original");
        let mut new_operands = operands.clone();
        new_operands[1] = g.add_constant(tensor(weight_shape, w2), g.location(operands[1]));
        new_operands[2] = g.add_constant(tensor(vec![channels], b2), g.location(operands[2]));
        let folded_conv = g.add_node(op, ValueType::Tensor(out), &new_operands, g.location(conv));
        g.node_mut(folded_conv).attrs = g.node(conv).attrs.clone();
        // The folded convolution's result is the last op's: so is its calibration range.
        let range = g.node(last).attr(attrs::MAX_ABS).map(str::to_string);
        let node = g.node_mut(folded_conv);
        node.remove_attr(attrs::MAX_ABS);
        if let Some(range) = range {
            node.set_attr(attrs::MAX_ABS, range);
        }
        g.replace_all_uses(last, folded_conv);
        folded
    }
}

impl Pass for FoldBatchNorm {
    fn info(&self) -> &'static PassInfo {
        &INFO
    }

    fn run(&mut self, module: &mut Module, _diagnostics: &mut Vec<Diagnostic>) -> Result<bool, Diagnostics> {
        (self.convolutions, self.ops) = (0, 0);
        for g in &mut module.functions {
            let order = g.topo_order().expect("verified graph is acyclic");
            for id in order {
                if g.contains(id) {
                    let n = Self::fold(g, id);
                    self.convolutions += (n > 0) as u64;
                    self.ops += n as u64;
                }
            }
            g.remove_dead_nodes();
        }
        Ok(self.ops > 0)
    }

    fn statistics(&self) -> Vec<Statistic> {
        vec![
            Statistic { name: "convolutions-folded-into", value: self.convolutions, description: "Convolutions that absorbed the ops after them" },
            Statistic { name: "ops-folded", value: self.ops, description: "add/sub/mul ops folded into a convolution's weights and bias" },
        ]
    }
}
