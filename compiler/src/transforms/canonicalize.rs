//! `canonicalize`: simplify the graph without changing what it computes.
//!
//! Rewrites, applied until nothing changes (at most [`MAX_ROUNDS`] rounds):
//! - **fold constants**: an op whose operands are all constants is evaluated with the op
//!   semantics (the same code as the reference interpreter, so folding is exact under the
//!   numeric contract) and replaced by a constant, if its result has at most
//!   `max-fold-elements` elements. This turns `tosa.pow(2/π, 0.5)`, weight transposes and
//!   shapes computed from constants into plain constants. An op whose folded result would be
//!   at least 65,536 elements and more than eight times its operands' (a tile or broadcast
//!   of a few values) is not folded: it costs less computed where it is read than stored in
//!   the artifact and in memory (a small U-Net's upsampling indices were 42 MB of tiled
//!   constants).
//! - **identities**: a reshape to its input's shape and a transpose by the identity
//!   permutation are dropped.
//! - **chains**: reshape of reshape becomes one reshape; transpose of transpose becomes one
//!   transpose by the composed permutation (or nothing, if that is the identity).
//! - **transposes sink through elementwise ops and reductions**: `E(transpose(x, P), c)`
//!   becomes `transpose(E(x, transpose(c, P⁻¹)), P)` when the elementwise op `E`'s data
//!   operands are transposes by the same `P` (each used by nothing else, or only by ops that
//!   can all follow: SiLU's `x · sigmoid(x)`), constants (their transpose folds) or small
//!   values (at most an eighth of the result, such as a squeeze-and-excite scale with one
//!   value per channel: they take the inverse transpose). A reduction of a transposed value,
//!   `reduce(transpose(x, P), a)`, becomes `transpose(reduce(x, P[a]), P)`: each output sums
//!   the same values in the same order, and the transpose moves the smaller result
//!   (EfficientNet's 16 squeeze-and-excite poolings transposed their whole input to NCHW to
//!   sum it). A concatenation of transposes by the same `P` becomes the transpose of the
//!   concatenation along `P[axis]` (a U-Net's skip and upsampled values, NHWC both, were
//!   transposed to NCHW to be concatenated). A transpose that moves only axes of size 1 becomes a reshape. Sunk far enough, a
//!   transpose meets its inverse and both disappear: this
//!   removes the NCHW↔NHWC transposes torch-mlir writes around every convolution, whose batch
//!   norm and activation then sit next to the convolution (and fuse into its epilogue). The
//!   values are moved, never recomputed differently, so results are bit-identical.
//! - **reshapes of transposes**: a reshape that only adds or drops dimensions of size 1, of a
//!   transpose nothing else reads, becomes a transpose of a reshape, so that the transpose can
//!   sink on (torch-mlir's conv1d is a conv2d over a unit height between an NCHW transpose and a
//!   reshape dropping the height).
//! - **splats shrink**: a splat constant (every element the same) that `tosa.select` or a
//!   binary op broadcasts keeps at full size only the dimensions no other operand gives; the
//!   rest become 1 (`select(dense<true> : 1x6x1500x1500, a, b)` with full-size `a` reads a
//!   `1x1x1x1` constant). The artifact and the run's memory then hold one value, not millions.
//!   Splats read by other ops keep their size.
//! - **safe softmax's all-masked test**: `reduce_all(equal(cast<f64>(x), -inf), axis)` (what
//!   PyTorch's `_safe_softmax` exports to, next to every attention softmax) becomes
//!   `equal(reduce_max(x, axis), -inf)` in `x`'s type: a row is all `-inf` exactly when its
//!   maximum is (a NaN makes both false; the cast to f64 is exact). CSE then shares the
//!   softmax's own `reduce_max`, and the test and the `select` after it join the softmax's row
//!   kernel instead of reading and writing the scores three more times.
//! - **rows of a matmul**: a slice that keeps whole rows of a matmul's result (every batch,
//!   every column), where nothing else reads the matmul, slices the matmul's left operand
//!   instead: GPT-2's language-model head multiplies all 64 positions by its 768×50257 weight
//!   and keeps the last row (a third of the model's time). Each output row is its own row of
//!   the left operand times the weight, so the reference's bits are the same; a backend may
//!   run the fewer rows on another contraction path (its own f32 summation order).
//! - **squares and cubes**: `pow(x, c)` with `c` a splat constant of exactly 2 or 3 (GPT-2's
//!   tanh GELU writes `x³` so) becomes `x · x` or `(x · x) · x`, rounded after each multiply:
//!   what PyTorch computes for these exponents (ATen's pow by a scalar 2 or 3 multiplies), and
//!   two multiplies where the host's `powf` is a call per element (GPT-2 small's GELUs took 34
//!   of its 244 ms). The one rewrite here that may change bits: the product can differ from
//!   `powf`'s correctly rounded power by an ulp, towards the exporter's own result. The
//!   multiplies carry `f16c.pow = "2"` or `"3"`, and precision assignment treats them as the
//!   `pow` (kept f32 at O1).
//! - **unit reshape pairs around elementwise ops cancel**: `reshape(E(reshape(x), c))` where
//!   the outer reshape only adds or drops leading dimensions of size 1, gives `x`'s shape
//!   back, and nothing else reads `E` becomes `E(x, reshape(c))` at `x`'s shape (the other
//!   operands' reshapes likewise add or drop leading ones; one of a constant folds away). A
//!   reshape without its pair stays (inside a softmax it would split the row kernel). torch-mlir writes a
//!   linear layer's bias add between `reshape`s to 2-D and back (`matmul` → `[128, 3072]` →
//!   `add` → `[1, 128, 3072]` → GELU); with the add on the matmul's own shape, the add and the
//!   GELU after it are one group of elementwise ops and the matmul's epilogue. The pair may
//!   also be a chain apart: `reshape(E_n(…E_1(reshape(x), c_1)…, c_n))`, each `E_i` read only
//!   by the next and its other operands constants, loses its reshapes a step per round (the
//!   Whisper encoder's first GELU: computed on its convolution's value reshaped to 3-D and
//!   reshaped back for the last multiply, which reads the value at 4-D; at one shape, the GELU
//!   is the convolution's epilogue instead of two elementwise kernels). The same values, so
//!   results are bit-identical.
//! - **gather indices as sums**: `reduce_sum(mul(concat(p_0, …, p_{k-1}), s), axis)` on
//!   integers, the concat along the last axis of parts one wide there, `s` a constant along
//!   that axis (a reshape keeping the last axis may stand between the concat and the
//!   multiply), becomes `p_0·s_0 + … + p_{k-1}·s_{k-1}` (a stride of one without a shift
//!   multiplies by nothing), each part read through the tile that made it where that tile
//!   only broadcasts. torch-mlir computes every gather index of a bilinear upsampling so (four
//!   coordinate vectors tiled to the output's size, concatenated, times the strides, summed):
//!   a small U-Net's index math took half its run (LLVM two threads 92 → 35 ms). Integer
//!   adds and multiplies wrap, so the same bits.
//! - **gathers of whole pixels**: a gather of single values from an NHWC value transposed to
//!   NCHW and flattened (torch-mlir's bilinear upsampling: `gather(reshape(transpose(x)) :
//!   [1, C·H·W, 1], i)`) whose indices, evaluated at compile time, keep each value's channel
//!   (`i[c, o] = c·H·W + f(o)`) becomes a gather of all `C` channels of each pixel from `x` as it
//!   lies, by the `OH·OW` indices `f`, transposed to NCHW after (the transpose then sinks through
//!   the interpolation and the concatenation to the next convolution). The same values, so
//!   results are bit-identical.
//! - **CSE**: identical ops on identical operands (constants included) are merged.
//! - **DCE**: ops no function result depends on are removed.
//!
//! Preconditions: a verified graph. Postconditions: a verified graph computing bit-identical
//! results (but for squares and cubes, above). Options: `max-fold-elements` (default 1048576),
//! `fold-constants` (default true), `sink-transposes` (default true, needs `fold-constants`),
//! `squares-and-cubes` (default true), `cse` (default true).
//!
//! ```mlir
//! %s = tosa.const_shape {values = dense<[2, 3]> : tensor<2xindex>} : () -> !tosa.shape<2>
//! %0 = tosa.reshape %arg0, %s : (tensor<2x3xf32>, !tosa.shape<2>) -> tensor<2x3xf32>
//! %1 = tosa.transpose %0 {perms = array<i32: 1, 0>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
//! %2 = tosa.transpose %1 {perms = array<i32: 1, 0>} : (tensor<3x2xf32>) -> tensor<2x3xf32>
//! return %2
//! // becomes
//! return %arg0
//! ```

use crate::pass::registry::{OptionKind, PassInfo, PassOption};
use crate::pass::{Pass, PassOptions};
use f16c_dialect::semantics::{eval, Value};
use f16c_dialect::{Diagnostic, Diagnostics, Graph, Module, NodeId, Op, TensorType, ValueType};
use std::collections::HashMap;

/// Upper bound on rewrite rounds (each round applies every rewrite once over the graph).
pub const MAX_ROUNDS: usize = 16;

/// Registry entry.
pub const INFO: PassInfo = PassInfo {
    name: "canonicalize",
    type_name: "Canonicalize",
    summary: "Fold constants, drop identity reshapes/transposes, merge chains, shrink broadcast splats, CSE and DCE",
    options: &[
        PassOption {
            name: "max-fold-elements",
            kind: OptionKind::UInt,
            default: "1048576",
            summary: "Largest result (in elements) that constant folding materialises",
        },
        PassOption { name: "fold-constants", kind: OptionKind::Bool, default: "true", summary: "Evaluate ops whose operands are all constants" },
        PassOption { name: "cse", kind: OptionKind::Bool, default: "true", summary: "Merge identical ops on identical operands" },
        PassOption {
            name: "squares-and-cubes",
            kind: OptionKind::Bool,
            default: "true",
            summary: "Compute pow by a constant 2 or 3 as multiplies, as PyTorch does (may change bits by an ulp)",
        },
        PassOption {
            name: "sink-transposes",
            kind: OptionKind::Bool,
            default: "true",
            summary: "Move transposes below elementwise ops, so that inverse pairs cancel",
        },
    ],
    create: |o| Ok(Box::new(Canonicalize::new(o))),
};

/// The pass.
pub struct Canonicalize {
    max_fold_elements: usize,
    fold_constants: bool,
    sink_transposes: bool,
    squares_and_cubes: bool,
    cse: bool,
}

impl Canonicalize {
    /// Makes the pass from its options.
    pub fn new(o: &PassOptions) -> Self {
        Canonicalize {
            max_fold_elements: o.uint("max-fold-elements") as usize,
            fold_constants: o.flag("fold-constants"),
            sink_transposes: o.flag("sink-transposes") && o.flag("fold-constants"),
            squares_and_cubes: o.flag("squares-and-cubes"),
            cse: o.flag("cse"),
        }
    }

    fn round(&self, g: &mut Graph) -> bool {
        let mut changed = false;
        let order = g.topo_order().expect("verified graph is acyclic");
        for id in order {
            if !g.contains(id) {
                continue;
            }
            changed |= self.fold(g, id)
                || simplify(g, id)
                || shrink_splats(g, id)
                || all_masked_rows(g, id)
                || rows_of_matmul(g, id)
                || sum_of_concatenated_parts(g, id)
                || unit_reshape_above_elementwise(g, id)
                || (self.squares_and_cubes && square_or_cube(g, id))
                || (self.sink_transposes
                    && (self.sink_transpose(g, id)
                        || self.sink_transpose_below_reduce(g, id)
                        || sink_transpose_below_concat(g, id)
                        || gather_channels_last(g, id)));
        }
        if self.cse {
            changed |= cse(g);
        }
        changed |= g.remove_dead_nodes() > 0;
        changed
    }

    /// Replaces `id` by a constant if all its operands are constants.
    fn fold(&self, g: &mut Graph, id: NodeId) -> bool {
        let op = g.op(id);
        if !self.fold_constants || op.is_constant() || matches!(op, Op::Arg(_)) {
            return false;
        }
        let operands = g.operands(id);
        if !operands.iter().all(|&o| g.op(o).is_constant()) {
            return false;
        }
        if g.tensor_ty(id).is_some_and(|t| t.num_elements() > self.max_fold_elements) {
            return false;
        }
        if expands(g, id, &operands) {
            return false;
        }
        let values: Vec<Value> = operands
            .iter()
            .map(|&o| match g.op(o) {
                Op::Const(t) => Value::Tensor(t.clone()),
                Op::ConstShape(s) => Value::Shape(s.clone()),
                _ => unreachable!("checked: constant"),
            })
            .collect();
        let refs: Vec<&Value> = values.iter().collect();
        // An op that cannot be evaluated (say, an out-of-range gather index) is left for the
        // runtime to report.
        let Ok(v) = eval(g.op(id), &refs, g.ty(id)) else { return false };
        let new_op = match v {
            Value::Tensor(t) => Op::Const(t),
            Value::Shape(s) => Op::ConstShape(s),
            Value::Results(_) => return false,
        };
        let ty = g.ty(id).clone();
        let folded = g.add_node(new_op, ty, &[], g.location(id));
        g.replace_all_uses(id, folded);
        true
    }

    /// Whether transpose `x`, read by several ops, may sink through each of them: every user
    /// is a reduction, or an elementwise op (not a rescale) of `x`'s size whose other data
    /// operands are constants, small values ([`Canonicalize::follows`]), `x` itself, or other
    /// such users of `x` (SiLU's `x · sigmoid(x)`), or values about to be transposes by the
    /// same permutation ([`Canonicalize::becomes_transposed`]): once the first user has moved `x` below
    /// itself, the next sees transposes only, and `x` goes unused. A user that could not
    /// follow would leave `x` behind and add a transpose.
    fn sinks_with_all_users(&self, g: &Graph, x: NodeId) -> bool {
        let Op::Transpose { perms } = g.op(x) else { return false };
        let users: Vec<NodeId> = g.users(x).into_iter().map(|(u, _)| u).collect();
        if g.outputs().contains(&x) || users.len() > 4 {
            return false;
        }
        let Some(full) = g.tensor_ty(x).map(|t| t.num_elements()) else { return false };
        users.iter().all(|&u| {
            let op = g.op(u);
            if g.outputs().contains(&u) {
                return false;
            }
            if matches!(op, Op::Reduce { .. }) {
                return true;
            }
            if !op.is_elementwise() || matches!(op, Op::Rescale(_)) || g.tensor_ty(u).map(|t| t.num_elements()) != Some(full) {
                return false;
            }
            let operands = g.operands(u);
            (0..operands.len()).filter(|p| !op.side_operands().contains(p)).all(|pos| {
                let o = operands[pos];
                o == x || users.contains(&o) || self.follows(g, o, full) || self.becomes_transposed(g, o, perms, full, BECOMES_TRANSPOSED_DEPTH)
            })
        })
    }

    /// Whether `o` is, or will be once the transposes below it have sunk, a transpose by
    /// `perms` of a value of `full` elements: such a transpose, or an elementwise op of that
    /// size (at most `depth` deep) whose data operands all are or [`Canonicalize::follows`].
    /// A bilinear interpolation `a + (b − a)·w` reads `a` twice: when the transpose above `a`
    /// sinks, `(b − a)·w` is about to sink too.
    fn becomes_transposed(&self, g: &Graph, o: NodeId, perms: &[usize], full: usize, depth: usize) -> bool {
        let op = g.op(o);
        if let Op::Transpose { perms: p } = op {
            return p == perms;
        }
        if depth == 0 || !op.is_elementwise() || matches!(op, Op::Rescale(_)) || g.outputs().contains(&o) || g.tensor_ty(o).map(|t| t.num_elements()) != Some(full) {
            return false;
        }
        let operands = g.operands(o);
        (0..operands.len()).filter(|p| !op.side_operands().contains(p)).all(|pos| {
            let d = operands[pos];
            self.follows(g, d, full) || self.becomes_transposed(g, d, perms, full, depth - 1)
        })
    }

    /// Whether operand `o` of an elementwise op whose output has `full` elements may take a
    /// transpose of its own when a transpose sinks below the op: a constant (the transpose
    /// folds), or a value at most an eighth of the output's size (a squeeze-and-excite scale
    /// broadcast over the pixels: a transpose of a few values).
    fn follows(&self, g: &Graph, o: NodeId, full: usize) -> bool {
        match g.op(o) {
            Op::Const(t) => t.len() <= self.max_fold_elements,
            Op::Transpose { .. } => false,
            _ => g.tensor_ty(o).is_some_and(|t| t.num_elements() * 8 <= full),
        }
    }

    /// `reduce(transpose(x, P), axis)` at `id` becomes `transpose(reduce(x, P[axis]), P)`
    /// (see the module comment) when the transpose has no other user, or users that all
    /// follow: the transpose then moves a reduced tensor. Each output sums the same values in
    /// the same order, so results are bit-identical.
    fn sink_transpose_below_reduce(&self, g: &mut Graph, id: NodeId) -> bool {
        let Op::Reduce { kind, axis } = *g.op(id) else { return false };
        let x = g.operands(id)[0];
        let Op::Transpose { perms } = g.op(x) else { return false };
        let perms = perms.clone();
        let only_here = read_only_by(g, x, id);
        if !(only_here || self.sinks_with_all_users(g, x)) || axis >= perms.len() {
            return false;
        }
        let (Some(inner_ty), Some(out)) = (g.tensor_ty(g.operands(x)[0]).cloned(), g.tensor_ty(id).cloned()) else { return false };
        let inner = g.operands(x)[0];
        let mut shape = inner_ty.shape.clone();
        shape[perms[axis]] = 1;
        g.node_mut(id).op = Op::Reduce { kind, axis: perms[axis] };
        g.set_operand(id, 0, inner);
        g.node_mut(id).ty = ValueType::Tensor(TensorType::new(out.dtype, shape));
        transpose_below(g, id, perms, out);
        true
    }

    /// Moves the transposes feeding the elementwise op `id` below it (see the module comment).
    /// The rewrite is in place: `id` keeps its op, attributes and location, takes the
    /// untransposed operands and shape, and a new transpose after it takes over its users, so
    /// later ops of the same sweep see that transpose and the rewrite moves down a chain in one
    /// round.
    fn sink_transpose(&self, g: &mut Graph, id: NodeId) -> bool {
        // Rescale's per-channel parameters follow the last dimension: it does not commute
        // with a transpose. Zero points and `mul`'s shift stay where they are.
        let op = g.op(id);
        if !op.is_elementwise() || matches!(op, Op::Rescale(_)) {
            return false;
        }
        let operands = g.operands(id);
        let data: Vec<usize> = (0..operands.len()).filter(|p| !op.side_operands().contains(p)).collect();
        let Some(out) = g.tensor_ty(id).cloned() else { return false };
        let mut perms: Option<Vec<usize>> = None;
        for &pos in &data {
            let x = operands[pos];
            match g.op(x) {
                // A transposed operand that `id` broadcasts would make the moved transpose
                // bigger than the one it replaces.
                Op::Transpose { perms: p } => {
                    let only_here = read_only_by(g, x, id);
                    let full = g.tensor_ty(x).is_some_and(|t| t.shape == out.shape);
                    if !(only_here || self.sinks_with_all_users(g, x)) || !full || perms.as_ref().is_some_and(|q| q != p) {
                        return false;
                    }
                    perms = Some(p.clone());
                }
                _ if self.follows(g, x, out.num_elements()) && g.tensor_ty(x).is_some_and(|t| t.rank() == out.rank()) => {}
                _ => return false,
            }
        }
        let Some(perms) = perms else { return false };
        if perms.len() != out.rank() {
            return false;
        }
        let mut inverse = vec![0; perms.len()];
        for (i, &p) in perms.iter().enumerate() {
            inverse[p] = i;
        }
        let loc = g.location(id);
        for &pos in &data {
            let x = operands[pos];
            let inner = match g.op(x) {
                Op::Transpose { .. } => g.operands(x)[0],
                _ => {
                    let c = g.tensor_ty(x).expect("a tensor operand").clone();
                    let shape = inverse.iter().map(|&i| c.shape[i]).collect::<Vec<_>>();
                    let ty = ValueType::Tensor(TensorType::new(c.dtype, shape));
                    g.add_node(Op::Transpose { perms: inverse.clone() }, ty, &[x], loc.clone())
                }
            };
            g.set_operand(id, pos, inner);
        }
        let shape = inverse.iter().map(|&i| out.shape[i]).collect::<Vec<_>>();
        g.node_mut(id).ty = ValueType::Tensor(TensorType::new(out.dtype, shape));
        transpose_below(g, id, perms, out);
        true
    }
}

/// `concat(transpose(x_0, P), …, transpose(x_k, P), axis)` at `id` becomes
/// `transpose(concat(x_0, …, x_k, P[axis]), P)` when every operand is a transpose by the same
/// `P` that nothing else reads: a U-Net's skip connection and its upsampled input, both NHWC
/// values torch-mlir transposes to NCHW to concatenate them, are then concatenated as they lie
/// and the transpose meets the next convolution's inverse one. The same values, moved.
fn sink_transpose_below_concat(g: &mut Graph, id: NodeId) -> bool {
    let Op::Concat { axis } = *g.op(id) else { return false };
    let operands = g.operands(id);
    let Some(out) = g.tensor_ty(id).cloned() else { return false };
    let mut perms: Option<Vec<usize>> = None;
    for &x in &operands {
        let Op::Transpose { perms: p } = g.op(x) else { return false };
        if !read_only_by(g, x, id) || perms.as_ref().is_some_and(|q| q != p) {
            return false;
        }
        perms = Some(p.clone());
    }
    let Some(perms) = perms else { return false };
    if perms.len() != out.rank() || axis >= perms.len() {
        return false;
    }
    for (pos, &x) in operands.iter().enumerate() {
        let inner = g.operands(x)[0];
        g.set_operand(id, pos, inner);
    }
    let mut shape = vec![0; perms.len()];
    for (i, &p) in perms.iter().enumerate() {
        shape[p] = out.shape[i];
    }
    g.node_mut(id).op = Op::Concat { axis: perms[axis] };
    g.node_mut(id).ty = ValueType::Tensor(TensorType::new(out.dtype, shape));
    transpose_below(g, id, perms, out);
    true
}

/// The NCHW → NHWC permutation torch-mlir's convolutions write before their input, and the
/// NHWC → NCHW one after their output.
const TO_NCHW: [usize; 4] = [0, 3, 1, 2];

/// A gather of single values from an NHWC value transposed to NCHW and flattened, whose
/// indices (computed from constants) keep each value's channel, at `id`, becomes a gather of
/// whole pixels (all their channels) from the NHWC value as it lies, transposed to NCHW after:
/// torch-mlir's bilinear upsampling, `gather(reshape(transpose(x)) : [1, C·H·W, 1], i)` with
/// `i[c, o] = c·H·W + f(o)` and every user a reshape to `[1, C, OH, OW]`, becomes
/// `transpose(reshape(gather(reshape(x) : [1, H·W, C], f)))`. Each index then copies `C`
/// neighbouring values instead of one, and the transpose after it sinks through the
/// interpolation and the concatenation to meet the next convolution's (a U-Net's upsampling
/// ran as NHWC → NCHW transposes, gathers of one value per index and NCHW → NHWC transposes).
/// The indices are evaluated at compile time (they depend on the static shapes only) and
/// checked for every channel; `f` is stored (`OH·OW` values). The same values are moved, so
/// results are bit-identical.
fn gather_channels_last(g: &mut Graph, id: NodeId) -> bool {
    if !matches!(g.op(id), Op::Gather) {
        return false;
    }
    let [values, indices] = g.operands(id)[..] else { return false };
    let (Some(v_ty), Some(out)) = (g.tensor_ty(values).cloned(), g.tensor_ty(id).cloned()) else { return false };
    if v_ty.shape.len() != 3 || v_ty.shape[0] != 1 || v_ty.shape[2] != 1 || !matches!(g.op(values), Op::Reshape) {
        return false;
    }
    let y = g.operands(values)[0];
    let Op::Transpose { perms } = g.op(y) else { return false };
    if perms[..] != TO_NCHW {
        return false;
    }
    let x = g.operands(y)[0];
    let Some(x_ty) = g.tensor_ty(x).cloned() else { return false };
    let [1, h, w, c] = x_ty.shape[..] else { return false };
    let wn = out.shape[1];
    if c < 2 || wn % c != 0 {
        return false;
    }
    // The output's spatial shape, from its users (each a reshape to [1, C, OH, OW]).
    let users: Vec<NodeId> = g.users(id).into_iter().map(|(u, _)| u).collect();
    let mut spatial: Option<(usize, usize)> = None;
    for &u in &users {
        let Some(t) = g.tensor_ty(u) else { return false };
        let [1, uc, oh, ow] = t.shape[..] else { return false };
        if !matches!(g.op(u), Op::Reshape) || uc != c || oh * ow * c != wn || spatial.is_some_and(|s| s != (oh, ow)) {
            return false;
        }
        spatial = Some((oh, ow));
    }
    let Some((oh, ow)) = spatial else { return false };
    if g.outputs().contains(&id) {
        return false;
    }
    let mut budget = CONSTANT_NODES;
    let Some(Value::Tensor(idx)) = constant_value(g, indices, &mut HashMap::new(), &mut budget) else { return false };
    let idx = idx.to_i64_vec();
    let (s, plane) = (oh * ow, (h * w) as i64);
    let f: Vec<i64> = idx[..s].to_vec();
    let keeps_channel = idx.len() == wn
        && f.iter().all(|&v| (0..plane).contains(&v))
        && (0..c).all(|ch| idx[ch * s..(ch + 1) * s].iter().zip(&f).all(|(&v, &fv)| v == fv + ch as i64 * plane));
    if !keeps_channel {
        return false;
    }
    let loc = g.location(id);
    let i_ty = g.tensor_ty(indices).expect("a gather's indices are a tensor").dtype;
    let pixels = add_reshape(g, x, TensorType::new(x_ty.dtype, vec![1, h * w, c]), loc.clone());
    let f = f16c_dialect::Tensor::new(vec![1, s], f16c_dialect::Data::from_i64(f, i_ty)).expect("OH·OW indices");
    let f = g.add_constant(f, loc.clone());
    let gathered = g.add_node(Op::Gather, ValueType::Tensor(TensorType::new(out.dtype, vec![1, s, c])), &[pixels, f], loc.clone());
    let nhwc = add_reshape(g, gathered, TensorType::new(out.dtype, vec![1, oh, ow, c]), loc.clone());
    let nchw = g.add_node(Op::Transpose { perms: TO_NCHW.to_vec() }, ValueType::Tensor(TensorType::new(out.dtype, vec![1, c, oh, ow])), &[nhwc], loc);
    for u in users {
        g.replace_all_uses(u, nchw);
    }
    true
}

/// At most this many ops are evaluated by one [`constant_value`].
const CONSTANT_NODES: usize = 256;

/// The value of `id` where it is computed from constants only (every op evaluated with the
/// op semantics, as [`Canonicalize::fold`] would, but kept out of the graph); `None` where an
/// argument feeds it, an op cannot be evaluated, or more than `budget` ops would be.
fn constant_value(g: &Graph, id: NodeId, memo: &mut HashMap<NodeId, Value>, budget: &mut usize) -> Option<Value> {
    if let Some(v) = memo.get(&id) {
        return Some(v.clone());
    }
    let v = match g.op(id) {
        Op::Const(t) => Value::Tensor(t.clone()),
        Op::ConstShape(s) => Value::Shape(s.clone()),
        Op::Arg(_) => return None,
        op => {
            *budget = budget.checked_sub(1)?;
            let mut values = Vec::new();
            for o in g.operands(id) {
                values.push(constant_value(g, o, memo, budget)?);
            }
            let refs: Vec<&Value> = values.iter().collect();
            eval(op, &refs, g.ty(id)).ok()?
        }
    };
    memo.insert(id, v.clone());
    Some(v)
}

/// A reshape of `x` to `ty` (its shape operand a new `tosa.const_shape`), at `loc`.
fn add_reshape(g: &mut Graph, x: NodeId, ty: TensorType, loc: f16c_dialect::Location) -> NodeId {
    let shape = g.add_node(Op::ConstShape(ty.shape.iter().map(|&d| d as i64).collect()), ValueType::Shape(ty.rank()), &[], loc.clone());
    g.add_node(Op::Reshape, ValueType::Tensor(ty), &[x, shape], loc)
}

/// Whether `id` is the only op that reads `x`, and `x` is no function result: a rewrite at
/// `id` may then take `x`'s place.
fn read_only_by(g: &Graph, x: NodeId, id: NodeId) -> bool {
    g.users(x).iter().all(|&(u, _)| u == id) && !g.outputs().contains(&x)
}

/// How deep [`Canonicalize::becomes_transposed`] looks.
const BECOMES_TRANSPOSED_DEPTH: usize = 4;

/// Puts a transpose by `perms` (of type `out`) after `id`, which already computes the
/// untransposed value: every use of `id` (results included) moves to the transpose, which then
/// reads `id`.
fn transpose_below(g: &mut Graph, id: NodeId, perms: Vec<usize>, out: TensorType) {
    let t = g.add_node(Op::Transpose { perms }, ValueType::Tensor(out), &[id], g.location(id));
    g.replace_all_uses(id, t);
    g.set_operand(t, 0, id);
}

/// Shrinks the splat constants the broadcasting op `id` reads (see the module comment): each
/// dimension that another data operand already gives at full size becomes 1, so a
/// `dense<0.0> : tensor<1x6x1500x1500xf32>` mask beside full-size scores is stored as one value
/// (in the IR, the lowered program, the artifact and memory), and the kernel reads it as a
/// broadcast operand. The values each output element sees are the same bits, so results are
/// bit-identical. Only `tosa.select` and the binary ops broadcast every data operand this way.
fn shrink_splats(g: &mut Graph, id: NodeId) -> bool {
    let op = g.op(id);
    if !matches!(op, Op::Binary(_) | Op::Select) {
        return false;
    }
    let Some(out) = g.tensor_ty(id).cloned() else { return false };
    let operands = g.operands(id);
    let data: Vec<usize> = (0..operands.len()).filter(|p| !op.side_operands().contains(p)).collect();
    let shapes: Vec<Option<Vec<usize>>> = operands.iter().map(|&o| g.tensor_ty(o).map(|t| t.shape.clone())).collect();
    let mut changed = false;
    for &pos in &data {
        let Op::Const(t) = g.op(operands[pos]) else { continue };
        if t.len() <= 1 || t.shape().len() != out.rank() || !t.is_splat() {
            continue;
        }
        // A dimension may shrink when another data operand has it at the output's size.
        let given_elsewhere = |d: usize| data.iter().any(|&q| q != pos && shapes[q].as_ref().is_some_and(|s| s.len() == out.rank() && s[d] == out.shape[d]));
        let shape: Vec<usize> = t.shape().iter().enumerate().map(|(d, &n)| if given_elsewhere(d) { 1 } else { n }).collect();
        if shape == t.shape() {
            continue;
        }
        let n = shape.iter().product();
        let small = f16c_dialect::Tensor::new(shape, t.data().repeat_first(n)).expect("the element count is the shape's product");
        let loc = g.location(operands[pos]);
        let c = g.add_constant(small, loc);
        g.set_operand(id, pos, c);
        changed = true;
    }
    changed
}

/// `reduce_all(equal(cast<f64>(x), -inf), axis)` at `id` becomes `equal(reduce_max(x, axis),
/// -inf)` (see the module comment); `x` a float tensor, `-inf` a splat constant either side.
fn all_masked_rows(g: &mut Graph, id: NodeId) -> bool {
    use f16c_dialect::{BinaryOp, DType, ReduceKind};
    let Op::Reduce { kind: ReduceKind::All, axis } = *g.op(id) else { return false };
    let eq = g.operands(id)[0];
    if !matches!(g.op(eq), Op::Binary(BinaryOp::Equal)) || g.users(eq).len() != 1 {
        return false;
    }
    let ops = g.operands(eq);
    let neg_inf = |g: &Graph, n: NodeId| matches!(g.op(n), Op::Const(t) if t.is_splat() && !t.is_empty() && t.to_f64_vec()[0] == f64::NEG_INFINITY);
    let (cast, c) = match (neg_inf(g, ops[0]), neg_inf(g, ops[1])) {
        (false, true) => (ops[0], ops[1]),
        (true, false) => (ops[1], ops[0]),
        _ => return false,
    };
    if !matches!(g.op(cast), Op::Cast) || g.tensor_ty(cast).map(|t| t.dtype) != Some(DType::F64) {
        return false;
    }
    let x = g.operands(cast)[0];
    let (Some(xt), Some(ct), Some(rt)) = (g.tensor_ty(x).cloned(), g.tensor_ty(c).cloned(), g.tensor_ty(id).cloned()) else { return false };
    if !matches!(xt.dtype, DType::F32 | DType::F16 | DType::BF16) {
        return false;
    }
    let loc = g.location(id);
    let max_ty = TensorType::new(xt.dtype, rt.shape.clone());
    let max = g.add_node(Op::Reduce { kind: ReduceKind::Max, axis }, ValueType::Tensor(max_ty), &[x], loc.clone());
    let inf = g.add_constant(f16c_dialect::Tensor::splat(&TensorType::new(xt.dtype, ct.shape.clone()), f64::NEG_INFINITY), g.location(c));
    let test = g.add_node(Op::Binary(BinaryOp::Equal), ValueType::Tensor(rt), &[max, inf], loc);
    g.replace_all_uses(id, test);
    true
}

/// `slice(matmul(a, b), [0, r, 0], [n, z, cols])` at `id`, taking whole rows of a matmul
/// that nothing else reads, becomes `matmul(slice(a, [0, r, 0], [n, z, k]), b)` (see the module
/// comment): an output row depends on its row of `a` only, so the rows kept are computed
/// alone and the others not at all.
fn rows_of_matmul(g: &mut Graph, id: NodeId) -> bool {
    if !matches!(g.op(id), Op::Slice) {
        return false;
    }
    let (mm, start, size) = (g.operands(id)[0], g.operands(id)[1], g.operands(id)[2]);
    let (Op::MatMul, Op::ConstShape(start), Op::ConstShape(size)) = (g.op(mm), g.op(start), g.op(size)) else { return false };
    let (start, size) = (start.clone(), size.clone());
    let a = g.operands(mm)[0];
    let (Some(out), Some(at)) = (g.tensor_ty(mm).cloned(), g.tensor_ty(a).cloned()) else { return false };
    let (&[batch, rows, cols], &[_, _, k]) = (&out.shape[..], &at.shape[..]) else { return false };
    let whole = |d: usize, n: usize| start[d] == 0 && size[d] == n as i64;
    if start.len() != 3 || size.len() != 3 || !whole(0, batch) || !whole(2, cols) || size[1] >= rows as i64 || size[1] < 1 {
        return false;
    }
    if g.users(mm).len() != 1 || g.outputs().contains(&mm) {
        return false;
    }
    let loc = g.location(id);
    let from = g.add_node(Op::ConstShape(vec![0, start[1], 0]), ValueType::Shape(3), &[], loc.clone());
    let len = g.add_node(Op::ConstShape(vec![batch as i64, size[1], k as i64]), ValueType::Shape(3), &[], loc.clone());
    let a_rows = TensorType::new(at.dtype, [batch, size[1] as usize, k]);
    let sliced = g.add_node(Op::Slice, ValueType::Tensor(a_rows), &[a, from, len], loc);
    // The matmul itself (its attributes and location) takes the rows and gives the slice's type.
    g.set_operand(mm, 0, sliced);
    g.node_mut(mm).ty = ValueType::Tensor(TensorType::new(out.dtype, [batch, size[1] as usize, cols]));
    g.replace_all_uses(id, mm);
    true
}

/// Whether folding `id` would expand its constant operands into a much larger constant: a
/// result of at least [`EXPANSION_MIN`] elements and more than [`EXPANSION_RATIO`] times the
/// elements of all its operands together (a tile or a broadcast of a few values). Such a
/// value is cheaper computed when it is read than stored: torch-mlir's bilinear upsampling
/// tiles four index vectors of 64 values to 524,288 each, per gather.
fn expands(g: &Graph, id: NodeId, operands: &[NodeId]) -> bool {
    let Some(out) = g.tensor_ty(id).map(|t| t.num_elements()) else { return false };
    let given: usize = operands.iter().filter_map(|&o| g.tensor_ty(o)).map(|t| t.num_elements()).sum();
    out >= EXPANSION_MIN && out > EXPANSION_RATIO * given.max(1)
}

/// The smallest folded result [`expands`] considers.
const EXPANSION_MIN: usize = 1 << 16;

/// How many times its operands' elements a folded result may hold before [`expands`] keeps
/// the op.
const EXPANSION_RATIO: usize = 8;

/// `reduce_sum(mul(concat(p_0, …, p_{k-1}), s), axis)` at `id`, on integers, the concat along
/// `axis` (the last) of parts one wide there and `s` a constant varying along that axis only
/// (a reshape that keeps the last axis may stand between the concat and the multiply), becomes
/// `p_0·s_0 + … + p_{k-1}·s_{k-1}`, each part read through the tile that made it where that
/// tile only broadcasts (see the module comment). torch-mlir computes every gather index of a
/// bilinear upsampling so: four coordinate vectors tiled to the output's size, concatenated,
/// multiplied by the strides and summed; the sum is then one elementwise kernel of broadcast
/// operands instead of a concat, a multiply and a reduction over four times the output.
/// Integer adds and multiplies wrap, so the sum in another order is the same bits.
fn sum_of_concatenated_parts(g: &mut Graph, id: NodeId) -> bool {
    use f16c_dialect::{BinaryOp, ReduceKind};
    let Op::Reduce { kind: ReduceKind::Sum, axis } = *g.op(id) else { return false };
    let m = g.operands(id)[0];
    let (Some(r_ty), Some(m_ty)) = (g.tensor_ty(id).cloned(), g.tensor_ty(m).cloned()) else { return false };
    // (At most 32 bits: the strides pass through f64 exactly.)
    let narrow_int = matches!(m_ty.dtype, f16c_dialect::DType::I8 | f16c_dialect::DType::I16 | f16c_dialect::DType::I32);
    if !narrow_int || axis + 1 != m_ty.rank() || !matches!(g.op(m), Op::Binary(BinaryOp::Mul)) {
        return false;
    }
    let ops = g.operands(m);
    let (x, s, shift) = match (g.op(ops[0]), g.op(ops[1])) {
        (_, Op::Const(_)) => (ops[0], ops[1], ops[2]),
        (Op::Const(_), _) => (ops[1], ops[0], ops[2]),
        _ => return false,
    };
    let k = m_ty.shape[axis];
    let Op::Const(strides) = g.op(s) else { return false };
    let along_axis = strides.shape().len() == m_ty.rank() && strides.shape().iter().enumerate().all(|(d, &n)| n == 1 || (d == axis && n == k));
    if !along_axis || g.tensor_ty(x).map(|t| &t.shape) != Some(&m_ty.shape) {
        return false;
    }
    let strides = strides.clone();
    // The concat, read directly or through a reshape that keeps the last axis.
    let c = if matches!(g.op(x), Op::Reshape) { g.operands(x)[0] } else { x };
    let Some(c_ty) = g.tensor_ty(c).cloned() else { return false };
    let Op::Concat { axis: c_axis } = *g.op(c) else { return false };
    let parts = g.operands(c);
    if c_axis + 1 != c_ty.rank() || c_ty.shape[c_axis] != k || parts.len() != k || c_ty.dtype != m_ty.dtype {
        return false;
    }
    let mut part_shape = c_ty.shape.clone();
    part_shape[c_axis] = 1;
    // A part, or what its tile broadcasts (same rank, each dimension 1 or the part's).
    let broadcast_source = |g: &Graph, p: NodeId| -> NodeId {
        if !matches!(g.op(p), Op::Tile) {
            return p;
        }
        let y = g.operands(p)[0];
        let fits = g.tensor_ty(y).is_some_and(|t| t.rank() == part_shape.len() && t.shape.iter().zip(&part_shape).all(|(&a, &b)| a == 1 || a == b));
        if fits { y } else { p }
    };
    let loc = g.location(id);
    let values = strides.to_f64_vec();
    let unshifted = matches!(g.op(shift), Op::Const(t) if t.to_f64_vec().iter().all(|&v| v == 0.0));
    let mut sum: Option<(NodeId, Vec<usize>)> = None;
    for (i, &p) in parts.iter().enumerate() {
        let p = broadcast_source(g, p);
        let Some(shape) = g.tensor_ty(p).map(|t| t.shape.clone()) else { return false };
        let stride = values[if strides.len() == 1 { 0 } else { i }];
        // (A stride of one with no shift multiplies by nothing.)
        let term = if stride == 1.0 && unshifted {
            p
        } else {
            let scalar = f16c_dialect::Tensor::splat(&TensorType::new(m_ty.dtype, vec![1; part_shape.len()]), stride);
            let sc = g.add_constant(scalar, loc.clone());
            g.add_node(Op::Binary(BinaryOp::Mul), ValueType::Tensor(TensorType::new(m_ty.dtype, shape.clone())), &[p, sc, shift], loc.clone())
        };
        sum = Some(match sum {
            None => (term, shape),
            Some((acc, acc_shape)) => {
                let both: Vec<usize> = acc_shape.iter().zip(&shape).map(|(&a, &b)| a.max(b)).collect();
                (g.add_node(Op::Binary(BinaryOp::Add), ValueType::Tensor(TensorType::new(m_ty.dtype, both.clone())), &[acc, term], loc.clone()), both)
            }
        });
    }
    let Some((mut acc, acc_shape)) = sum else { return false };
    if acc_shape != part_shape {
        let multiples: Vec<i64> = acc_shape.iter().zip(&part_shape).map(|(&a, &b)| (b / a) as i64).collect();
        let mult = g.add_node(Op::ConstShape(multiples), ValueType::Shape(part_shape.len()), &[], loc.clone());
        acc = g.add_node(Op::Tile, ValueType::Tensor(TensorType::new(m_ty.dtype, part_shape.clone())), &[acc, mult], loc.clone());
    }
    if part_shape != r_ty.shape {
        acc = add_reshape(g, acc, r_ty, loc);
    }
    g.replace_all_uses(id, acc);
    true
}

/// `shape` without its leading ones.
fn without_leading_ones(shape: &[usize]) -> &[usize] {
    let first = shape.iter().position(|&d| d != 1).unwrap_or(shape.len());
    &shape[first..]
}

/// `shape` with leading ones added or dropped to `rank` dimensions (`None` if a dimension to
/// drop is not 1).
fn to_rank(shape: &[usize], rank: usize) -> Option<Vec<usize>> {
    if shape.len() >= rank {
        let cut = shape.len() - rank;
        shape[..cut].iter().all(|&d| d == 1).then(|| shape[cut..].to_vec())
    } else {
        Some(std::iter::repeat_n(1, rank - shape.len()).chain(shape.iter().copied()).collect())
    }
}

/// How many elementwise ops [`leads_to_pair`] looks through (a GELU's chain is four).
const UNIT_RESHAPE_CHAIN: usize = 8;

/// Whether `x`, a data operand of an elementwise op of shape `shape` that a reshape to `to`
/// reads, is a reshape from `to` (the pair that cancels), or leads to one through at most
/// `depth` elementwise ops of `shape`, each read only there and each with constants for its
/// other data operands ([`unit_reshape_above_elementwise`] moves the reshape above each in
/// turn; a second computed operand would need a reshape of its own, which nothing cancels).
fn leads_to_pair(g: &Graph, x: NodeId, shape: &[usize], to: &[usize], depth: usize) -> bool {
    let op = g.op(x);
    if matches!(op, Op::Reshape) {
        return g.tensor_ty(g.operands(x)[0]).is_some_and(|t| t.shape == to);
    }
    if depth == 0 || !op.is_elementwise() || matches!(op, Op::Rescale(_)) || g.outputs().contains(&x) || g.users(x).len() != 1 || g.tensor_ty(x).is_none_or(|t| t.shape != shape) {
        return false;
    }
    let operands = g.operands(x);
    let computed: Vec<NodeId> = (0..operands.len()).filter(|p| !op.side_operands().contains(p)).map(|p| operands[p]).filter(|&o| !g.op(o).is_constant()).collect();
    matches!(computed[..], [y] if leads_to_pair(g, y, shape, to, depth - 1))
}

/// `reshape(E(..))` at `id`, a reshape that only adds or drops leading ones of the elementwise
/// op `E` it reads, where nothing else reads `E`, becomes `E(..)` at the reshape's shape with
/// each data operand reshaped the same way (see the module comment). In place: `E` keeps its
/// op, attributes and location.
fn unit_reshape_above_elementwise(g: &mut Graph, id: NodeId) -> bool {
    if !matches!(g.op(id), Op::Reshape) {
        return false;
    }
    let e = g.operands(id)[0];
    // Rescale's per-channel parameters are not broadcast operands. (Checked before the op is
    // cloned: a constant's clone is a copy of its weight.)
    if !g.op(e).is_elementwise() || matches!(g.op(e), Op::Rescale(_)) || g.outputs().contains(&e) || g.users(e).len() != 1 {
        return false;
    }
    let op = g.op(e).clone();
    let (Some(from), Some(to)) = (g.tensor_ty(e).cloned(), g.tensor_ty(id).cloned()) else { return false };
    if without_leading_ones(&from.shape) != without_leading_ones(&to.shape) {
        return false;
    }
    let operands = g.operands(e);
    let data: Vec<usize> = (0..operands.len()).filter(|p| !op.side_operands().contains(p)).collect();
    // Only toward a pair: an operand that is itself a reshape from the target shape (which
    // then cancels), or a chain of elementwise ops that leads to one (the reshape moves up a
    // step per round until it cancels: a GELU computed on a convolution's value reshaped, whose
    // last multiply reads the value as it was). A lone reshape stays where it is: moved into
    // the middle of a softmax or a layer norm, it would split the row kernel.
    if !data.iter().any(|&pos| leads_to_pair(g, operands[pos], &from.shape, &to.shape, UNIT_RESHAPE_CHAIN)) {
        return false;
    }
    let mut shapes = Vec::with_capacity(data.len());
    for &pos in &data {
        let Some(t) = g.tensor_ty(operands[pos]) else { return false };
        let Some(shape) = to_rank(&t.shape, to.rank()) else { return false };
        shapes.push((pos, TensorType::new(t.dtype, shape)));
    }
    let loc = g.location(e);
    for (pos, ty) in shapes {
        let x = operands[pos];
        let r = add_reshape(g, x, ty, loc.clone());
        g.set_operand(e, pos, r);
    }
    g.node_mut(e).ty = ValueType::Tensor(TensorType::new(from.dtype, to.shape.clone()));
    g.replace_all_uses(id, e);
    true
}

/// The attribute marking a multiply that computes a `pow` ([`square_or_cube`]): the power.
pub const POW_ATTR: &str = "f16c.pow";

/// `pow(x, 2)` at `id` becomes `x · x`, `pow(x, 3)` `(x · x) · x` (see the module comment): a
/// float `x` of the result's type, the exponent a splat constant.
fn square_or_cube(g: &mut Graph, id: NodeId) -> bool {
    use f16c_dialect::BinaryOp;
    if !matches!(g.op(id), Op::Binary(BinaryOp::Pow)) {
        return false;
    }
    let (x, e) = (g.operands(id)[0], g.operands(id)[1]);
    let Op::Const(t) = g.op(e) else { return false };
    let power = match t.is_splat().then(|| t.to_f64_vec().first().copied()).flatten() {
        Some(p) if p == 2.0 || p == 3.0 => p,
        _ => return false,
    };
    let (Some(xt), Some(rt)) = (g.tensor_ty(x).cloned(), g.tensor_ty(id).cloned()) else { return false };
    if xt != rt || !xt.dtype.is_float() {
        return false;
    }
    let loc = g.location(id);
    let shift = g.add_constant(f16c_dialect::Tensor::splat(&TensorType::new(f16c_dialect::DType::I8, [1]), 0.0), loc.clone());
    // Marked, so that precision assignment treats them as the pow they compute (the fp32
    // list at O1: a cube overflows fp16 from 40).
    let mul = |g: &mut Graph, a: NodeId, b: NodeId| {
        let m = g.add_node(Op::Binary(BinaryOp::Mul), ValueType::Tensor(rt.clone()), &[a, b, shift], loc.clone());
        g.node_mut(m).set_attr(POW_ATTR, format!("\"{power}\""));
        m
    };
    let square = mul(g, x, x);
    let result = if power == 3.0 { mul(g, square, x) } else { square };
    g.replace_all_uses(id, result);
    true
}

/// A transpose that moves only axes of size 1 (the other axes keep their order) moves no
/// element: it becomes a reshape (no copy).
fn moves_unit_axes_only(g: &mut Graph, id: NodeId, perms: &[usize]) -> bool {
    let (Some(input), Some(out)) = (g.tensor_ty(g.operands(id)[0]).cloned(), g.tensor_ty(id).cloned()) else { return false };
    let kept: Vec<usize> = perms.iter().copied().filter(|&p| input.shape[p] != 1).collect();
    if kept.windows(2).any(|w| w[0] > w[1]) {
        return false;
    }
    let reshape = add_reshape(g, g.operands(id)[0], out, g.location(id));
    g.replace_all_uses(id, reshape);
    true
}

/// Identity and chain rewrites at `id`.
fn simplify(g: &mut Graph, id: NodeId) -> bool {
    // (Only these ops are cloned below: a constant's clone is a copy of its weight.)
    if !matches!(g.op(id), Op::Reshape | Op::Transpose { .. } | Op::Identity) {
        return false;
    }
    let operands = g.operands(id);
    match g.op(id).clone() {
        Op::Reshape | Op::Transpose { .. } | Op::Identity if g.ty(operands[0]) == g.ty(id) && is_identity(g.op(id)) => {
            g.replace_all_uses(id, operands[0]);
            true
        }
        Op::Reshape => {
            let src = operands[0];
            if matches!(g.op(src), Op::Reshape) {
                let inner = g.operands(src)[0];
                g.set_operand(id, 0, inner);
                return true;
            }
            transpose_above_unit_reshape(g, id)
        }
        Op::Transpose { perms: outer } => {
            let src = operands[0];
            let Op::Transpose { perms: inner } = g.op(src).clone() else { return moves_unit_axes_only(g, id, &outer) };
            let x = g.operands(src)[0];
            let composed: Vec<usize> = outer.iter().map(|&p| inner[p]).collect();
            if composed.iter().enumerate().all(|(i, &p)| i == p) {
                g.replace_all_uses(id, x);
            } else {
                g.node_mut(id).op = Op::Transpose { perms: composed };
                g.set_operand(id, 0, x);
            }
            true
        }
        _ => false,
    }
}

/// `reshape(transpose(x, P))` at `id`, where the reshape only adds or drops dimensions of size
/// 1, nothing else reads the transpose and only elementwise ops or transposes read the reshape,
/// becomes `transpose(reshape(x), Q)`: `x` takes the
/// reshape's rank with its own dimensions of more than one element, in its order, where the
/// result has its, and `Q` puts them in the result's order. The transpose then moves on through
/// the elementwise ops below (torch-mlir writes a conv1d as a conv2d over a unit height, NHWC,
/// between a transpose to NCHW and a reshape dropping the height: Whisper's stem's GELUs sat
/// between four transposes that now cancel). The same elements in the same order, moved once.
fn transpose_above_unit_reshape(g: &mut Graph, id: NodeId) -> bool {
    let t = g.operands(id)[0];
    let Op::Transpose { perms } = g.op(t) else { return false };
    let perms = perms.clone();
    let x = g.operands(t)[0];
    let (Some(x_ty), Some(t_ty), Some(out)) = (g.tensor_ty(x).cloned(), g.tensor_ty(t).cloned(), g.tensor_ty(id).cloned()) else { return false };
    let only_here = read_only_by(g, t, id);
    // Only where the transpose can go on: into elementwise ops, or into another transpose.
    // (Moved in front of a matmul it gains nothing, and its copy would be scheduled later: an
    // attention's key transpose between the softmax and the product, out of its bands.)
    let onward = g.users(id).iter().all(|&(u, _)| g.op(u).is_elementwise() || matches!(g.op(u), Op::Transpose { .. })) && !g.outputs().contains(&id);
    let wide = |shape: &[usize]| shape.iter().copied().filter(|&d| d != 1).collect::<Vec<_>>();
    if !only_here || !onward || wide(&t_ty.shape) != wide(&out.shape) || t_ty.shape == out.shape {
        return false;
    }
    // The transpose's wide axes in its (the result's) order, each by the axis of `x` it is.
    let from: Vec<usize> = (0..t_ty.rank()).filter(|&i| t_ty.shape[i] != 1).map(|i| perms[i]).collect();
    let mut in_x_order = from.clone();
    in_x_order.sort_unstable();
    // Where the result's wide axes are; `x`'s go there, in `x`'s order.
    let slots: Vec<usize> = (0..out.rank()).filter(|&i| out.shape[i] != 1).collect();
    let mut shape = vec![1; out.rank()];
    for (slot, &a) in slots.iter().zip(&in_x_order) {
        shape[*slot] = x_ty.shape[a];
    }
    // Result axis slots[j] is x's axis from[j], which sits at slots[position of from[j]].
    let mut q = vec![usize::MAX; out.rank()];
    for (j, &slot) in slots.iter().enumerate() {
        let k = in_x_order.iter().position(|&a| a == from[j]).expect("a wide axis of x");
        q[slot] = slots[k];
    }
    let mut units = (0..out.rank()).filter(|i| !slots.contains(i));
    for v in q.iter_mut().filter(|v| **v == usize::MAX) {
        *v = units.next().expect("as many unit axes on both sides");
    }
    let loc = g.location(id);
    let r = add_reshape(g, x, TensorType::new(out.dtype, shape), loc.clone());
    let new = g.add_node(Op::Transpose { perms: q }, ValueType::Tensor(out), &[r], loc);
    g.replace_all_uses(id, new);
    true
}

/// A reshape or `tosa.identity` always qualifies when types match (checked by the caller); a
/// transpose only with the identity permutation.
fn is_identity(op: &Op) -> bool {
    match op {
        Op::Transpose { perms } => perms.iter().enumerate().all(|(i, &p)| i == p),
        _ => true,
    }
}

/// Merges identical nodes: same op (attributes and constant data included), same result type,
/// same operands, same discardable attributes. Constants are keyed by a fingerprint of their
/// bytes and compared byte for byte only when fingerprints agree, so a model's weights are
/// neither formatted nor copied into keys.
fn cse(g: &mut Graph) -> bool {
    let mut seen: HashMap<(String, u64), Vec<NodeId>> = HashMap::new();
    let mut changed = false;
    for id in g.topo_order().expect("verified graph is acyclic") {
        if matches!(g.op(id), Op::Arg(_)) {
            continue;
        }
        let node = g.node(id);
        let key = match &node.op {
            Op::Const(t) => (format!("const {} {:?}", t.ty(), node.attrs), fingerprint(&t.data().le_bytes())),
            op => (format!("{op:?} {} {:?} {:?}", node.ty, g.operands(id), node.attrs), 0),
        };
        let same = |g: &Graph, other: NodeId| match (g.op(id), g.op(other)) {
            (Op::Const(a), Op::Const(b)) => a.data().le_bytes() == b.data().le_bytes(),
            _ => true,
        };
        let candidates = seen.entry(key).or_default();
        match candidates.iter().copied().find(|&c| same(g, c)) {
            Some(first) => {
                g.replace_all_uses(id, first);
                changed = true;
            }
            None => candidates.push(id),
        }
    }
    changed
}

/// A 64-bit fingerprint of `bytes` (FxHash-style, four independent lanes of eight bytes, so
/// that the multiplications overlap): fast on large weights (GPT-2's 0.5 GB in every round);
/// equal fingerprints are confirmed by comparing the bytes.
fn fingerprint(bytes: &[u8]) -> u64 {
    const K: u64 = 0x517c_c1b7_2722_0a95;
    let step = |h: u64, w: u64| (h.rotate_left(5) ^ w).wrapping_mul(K);
    let word = |w: &[u8]| u64::from_le_bytes(w.try_into().expect("eight bytes"));
    let mut lanes = [bytes.len() as u64, 1, 2, 3];
    let mut blocks = bytes.chunks_exact(32);
    for b in &mut blocks {
        for (l, h) in lanes.iter_mut().enumerate() {
            *h = step(*h, word(&b[l * 8..l * 8 + 8]));
        }
    }
    let mut h = lanes.iter().fold(0u64, |acc, &l| step(acc, l));
    for &b in blocks.remainder() {
        h = step(h, b as u64);
    }
    h
}

impl Pass for Canonicalize {
    fn info(&self) -> &'static PassInfo {
        &INFO
    }

    fn run(&mut self, module: &mut Module, _diagnostics: &mut Vec<Diagnostic>) -> Result<bool, Diagnostics> {
        let mut changed = false;
        for g in &mut module.functions {
            for _ in 0..MAX_ROUNDS {
                if !self.round(g) {
                    break;
                }
                changed = true;
            }
        }
        Ok(changed)
    }
}

