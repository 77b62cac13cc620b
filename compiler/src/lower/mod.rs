//! Target-independent lowering: from a verified (mixed-precision) graph to a [`Program`] of
//! kernels over planned buffers.
//!
//! A kernel is one of five families, each described by data that every backend reads:
//! - [`Contraction`]: matmul, conv2d, depthwise conv2d, transpose conv2d, with an optional
//!   elementwise epilogue (bias add, batch-norm affine, clamp, residual add) fused in;
//! - [`Elementwise`]: a fused tree of elementwise ops (unary, binary, clamp, select, cast,
//!   comparisons) over one iteration space, operands broadcast by stride 0;
//! - [`Reduction`]: reduce_* and argmax along one axis;
//! - [`Pool`]: max and average pooling;
//! - [`CopyKernel`] and [`Gather`]: data movement. Transpose, slice, tile, pad and concat are strided
//!   copies (pad first fills the output); reshape is a view of its input's buffer and costs
//!   nothing.
//!
//! A float cast whose neighbour can round at its store or convert at its load is folded into it
//! (`fold.rs`): into the pooling that produces the cast's input, and, where the backend asks for
//! it ([`LowerOptions`]), into a copy (a transpose that converts).
//!
//! Every value a kernel reads or writes is a [`BufferId`]: a function argument, a constant
//! (its bytes travel with the program), or an intermediate placed in one arena by
//! [`plan::plan`] by liveness. The plan reports its peak and the liveness lower bound.
//!
//! Numerics are those of the graph's types: an op whose result is f16 rounds to f16 once, even
//! inside a fused kernel, so fusion never changes results (DESIGN.md, "Numerics").

pub mod plan;
mod expand;
mod fold;
mod print;

use f16c_dialect::{BinaryOp, DType, Graph, Location, NodeId, Op, ReduceKind, Tensor, TensorType, UnaryOp};
use std::collections::{HashMap, HashSet};

pub use plan::BufferPlan;

/// A buffer of the program.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BufferId(pub usize);

/// Where a buffer's memory comes from.
#[derive(Clone, Debug, PartialEq)]
pub enum BufferKind {
    /// Function argument `k` (the caller's memory, read only).
    Input(usize),
    /// A constant: these bytes, little-endian.
    Constant(ConstBytes),
    /// An intermediate in the arena (offset given by the plan).
    Intermediate,
}

/// A constant's little-endian bytes: its tensor's elements, shared with the graph it was
/// lowered from (lowering copies no weight: a `check --fix` probe lowered a copy of every one),
/// or bytes of their own. Cloning shares them.
#[derive(Clone, Debug)]
pub enum ConstBytes {
    /// A tensor's elements, whose memory is their little-endian bytes.
    Elements(std::sync::Arc<f16c_dialect::Data>),
    /// Bytes.
    Bytes(std::sync::Arc<Vec<u8>>),
}

impl ConstBytes {
    /// No bytes (a slot whose constant lives elsewhere).
    pub fn empty() -> ConstBytes {
        ConstBytes::Bytes(std::sync::Arc::new(Vec::new()))
    }

    /// `t`'s elements, shared where memory holds them as little-endian bytes (else converted).
    pub fn of(t: &Tensor) -> ConstBytes {
        match t.data().le_bytes() {
            std::borrow::Cow::Borrowed(_) => ConstBytes::Elements(t.shared_data().clone()),
            std::borrow::Cow::Owned(bytes) => ConstBytes::Bytes(std::sync::Arc::new(bytes)),
        }
    }
}

impl std::ops::Deref for ConstBytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            ConstBytes::Elements(data) => match data.le_bytes() {
                std::borrow::Cow::Borrowed(bytes) => bytes,
                std::borrow::Cow::Owned(_) => unreachable!("ConstBytes::of keeps only elements that are their bytes"),
            },
            ConstBytes::Bytes(bytes) => bytes,
        }
    }
}

impl PartialEq for ConstBytes {
    fn eq(&self, other: &ConstBytes) -> bool {
        **self == **other
    }
}

/// A buffer: its kind and size.
#[derive(Clone, Debug, PartialEq)]
pub struct Buffer {
    /// Where the memory comes from.
    pub kind: BufferKind,
    /// Size in bytes.
    pub bytes: usize,
}

/// A tensor operand of a kernel: a buffer read (or written) as `ty`.
#[derive(Clone, Debug, PartialEq)]
pub struct Operand {
    /// The buffer.
    pub buffer: BufferId,
    /// Its element type and shape.
    pub ty: TensorType,
}

/// One op of a fused elementwise expression.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum EwKind {
    /// A unary op (negate with its zero points folded: floats have none).
    Unary(UnaryOp),
    /// A binary op (`mul`'s shift is in [`EwOp::shift`]).
    Binary(BinaryOp),
    /// Clamp to `[min, max]`.
    Clamp {
        /// Lower bound.
        min: f64,
        /// Upper bound.
        max: f64,
    },
    /// `select(pred, a, b)`.
    Select,
    /// Element type conversion.
    Cast,
    /// `tosa.rescale` of `(x, multiplier, shift)`, zero points in [`EwOp::zp`]
    /// (`semantics::rescale_value`).
    Rescale(f16c_dialect::RescaleAttrs),
}

/// An elementwise op inside a fused expression: its arguments are expression values (inputs
/// first, then earlier ops), its result has type `dtype` (rounded once).
#[derive(Clone, Debug, PartialEq)]
pub struct EwOp {
    /// What it computes.
    pub kind: EwKind,
    /// Argument value indices.
    pub args: Vec<usize>,
    /// Result element type.
    pub dtype: DType,
    /// Integer `mul` shift; integer negate zero points `(input, output)`.
    pub shift: i64,
    /// Integer negate zero points.
    pub zp: (i64, i64),
}

/// The 16-bit float type (bf16 or f16) every value `v` of an expression or a rows kernel is a
/// value of, if any: `v` is of that type, or an f32 that is an exact copy of one (a cast from
/// it, its negation or absolute value); `dtype` gives a value's type, `op` the elementwise op
/// computing it (none for an input or a reduction). A function of such a value has at most
/// 65,536 arguments (a bf16 or fp16 GELU's `erf(cast(x · 1/√2))`, a softmax's
/// `exp(cast(x − max))`), which a backend may look up rather than compute.
pub fn holds_half<'a>(v: usize, dtype: &dyn Fn(usize) -> DType, op: &dyn Fn(usize) -> Option<&'a EwOp>) -> Option<DType> {
    match (dtype(v), op(v)) {
        (d @ (DType::BF16 | DType::F16), _) => Some(d),
        (DType::F32, Some(computed)) if matches!(computed.kind, EwKind::Cast | EwKind::Unary(UnaryOp::Negate | UnaryOp::Abs)) => holds_half(computed.args[0], dtype, op),
        _ => None,
    }
}

/// A fused elementwise expression over an iteration space.
///
/// Values `0..inputs.len()` are the inputs, value `inputs.len() + i` is `ops[i]`'s result;
/// the last op's value is stored to `output`.
#[derive(Clone, Debug, PartialEq)]
pub struct Expr {
    /// Input element types.
    pub inputs: Vec<DType>,
    /// The ops in evaluation order.
    pub ops: Vec<EwOp>,
}

impl Expr {
    /// The element type of value `v`.
    pub fn dtype(&self, v: usize) -> DType {
        if v < self.inputs.len() {
            self.inputs[v]
        } else {
            self.ops[v - self.inputs.len()].dtype
        }
    }

    /// The element types of `op`'s data arguments: its arguments' types, except for `select`,
    /// whose type is that of its data operands, not of its predicate.
    pub fn arg_types(&self, op: &EwOp) -> Vec<DType> {
        let types: Vec<DType> = op.args.iter().map(|&a| self.dtype(a)).collect();
        if matches!(op.kind, EwKind::Select) {
            types[1..].to_vec()
        } else {
            types
        }
    }

    /// The 16-bit float type every value `v` takes is a value of ([`holds_half`]).
    pub fn holds_half(&self, v: usize) -> Option<DType> {
        let n = self.inputs.len();
        holds_half(v, &|v| self.dtype(v), &|v| v.checked_sub(n).and_then(|i| self.ops.get(i)))
    }

    /// The element type of the result.
    pub fn result_dtype(&self) -> DType {
        self.ops.last().map_or(self.inputs[0], |o| o.dtype)
    }

    /// Whether the expression is exactly SiLU of its first input, all f32: `x · sigmoid(x)`
    /// (either operand order), reading no other input.
    pub fn is_silu(&self) -> bool {
        self.silu_type() == Some(DType::F32)
    }

    /// The type of every value where the expression is exactly SiLU of its only input, all of
    /// one type: `x · sigmoid(x)` (either operand order), each op rounded to that type.
    pub fn silu_type(&self) -> Option<DType> {
        let n = self.inputs.len();
        let [sig, mul] = self.ops.as_slice() else { return None };
        let d = *self.inputs.first()?;
        (n == 1
            && sig.kind == EwKind::Unary(UnaryOp::Sigmoid)
            && sig.args == [0]
            && mul.kind == EwKind::Binary(BinaryOp::Mul)
            && (mul.args == [0, n] || mul.args == [n, 0])
            && sig.dtype == d
            && mul.dtype == d)
            .then_some(d)
    }

    /// True when every value is a float computed in f32 (f32, f16, bf16): such an expression
    /// can run four lanes at a time.
    pub fn is_f32_domain(&self) -> bool {
        let f = |d: DType| matches!(d, DType::F32 | DType::F16 | DType::BF16);
        self.inputs.iter().all(|&d| f(d)) && self.ops.iter().all(|o| f(o.dtype))
    }
}

/// An input of an elementwise kernel with its element strides over the iteration space
/// (0 where it broadcasts).
#[derive(Clone, Debug, PartialEq)]
pub struct Strided {
    /// The buffer.
    pub buffer: BufferId,
    /// Element type.
    pub dtype: DType,
    /// Element stride per dimension of the iteration space.
    pub strides: Vec<usize>,
    /// The rows of `buffer` are picked by a table of row indices (an elementwise kernel's
    /// input only: a gather folded into its reader, [`fold::fold_gathers`]): the element at
    /// offset `o` of the strided view is element `o % len` of row `(r / w) · k + indices[r]`
    /// of `buffer`, where `r = o / len`.
    pub rows: Option<RowLookup>,
}

/// How an elementwise input reads a gather's result from the gather's values
/// ([`Strided::rows`]): the gather `[n, w, len]` of `values [n, k, len]` by constant indices
/// `[n, w]`, every one in range (checked when it was folded).
#[derive(Clone, Debug, PartialEq)]
pub struct RowLookup {
    /// The indices (a constant `[n, w]`).
    pub indices: BufferId,
    /// Their type (i32 or i64).
    pub dtype: DType,
    /// Values per row.
    pub len: usize,
    /// Batches.
    pub n: usize,
    /// Indices per batch.
    pub w: usize,
    /// Rows of the values per batch.
    pub k: usize,
}

/// A fused elementwise kernel. The iteration space is `shape` (dimensions that are contiguous
/// for every operand are merged); the output is dense row-major.
#[derive(Clone, Debug, PartialEq)]
pub struct Elementwise {
    /// Iteration space.
    pub shape: Vec<usize>,
    /// Inputs, in expression order.
    pub inputs: Vec<Strided>,
    /// The expression.
    pub expr: Expr,
    /// The output buffer.
    pub output: BufferId,
}

/// Which contraction.
#[derive(Clone, Debug, PartialEq)]
pub enum ContractionKind {
    /// `C[b] = A[b] · B[b]`, `A` is `[batch, m, k]`, `B` is `[batch, k, n]`.
    MatMul,
    /// NHWC conv2d as a GEMM: rows are output pixels, columns output channels, `k` is
    /// `(ky, kx, c)`. The weight (OHWI) is `B` transposed.
    Conv(ConvGeometry),
    /// Depthwise conv2d (weight `[KH, KW, C, M]`): each of the `C·M` output channels reduces
    /// over its own `k = KH·KW` taps of one input channel (a batched GEMV, not one GEMM).
    Depthwise(ConvGeometry),
    /// Transpose conv2d (weight OHWI): each input pixel scatters into a window of outputs, so an
    /// output gathers the taps whose stride-aligned positions reach it.
    TransposeConv(ConvGeometry),
}

/// Convolution geometry (all static).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConvGeometry {
    /// Batch.
    pub n: usize,
    /// Input height, width, channels.
    pub ih: usize,
    /// Input width.
    pub iw: usize,
    /// Input channels.
    pub ic: usize,
    /// Output height.
    pub oh: usize,
    /// Output width.
    pub ow: usize,
    /// Output channels.
    pub oc: usize,
    /// Kernel height.
    pub kh: usize,
    /// Kernel width.
    pub kw: usize,
    /// Stride `[y, x]`.
    pub stride: [usize; 2],
    /// Dilation `[y, x]` (1 for transpose conv).
    pub dilation: [usize; 2],
    /// Padding `[top, bottom, left, right]` (output padding for transpose conv).
    pub pad: [usize; 4],
}

/// An elementwise epilogue fused into a contraction: value 0 of `expr` is the contraction's
/// result (after bias, rounded to its type); the other inputs are read at the output element's
/// coordinates.
#[derive(Clone, Debug, PartialEq)]
pub struct Epilogue {
    /// The expression (input 0 is the contraction result).
    pub expr: Expr,
    /// Inputs 1.. with strides over the output's `[rows, cols]` view: `row_strides` over the
    /// row dimensions (`rows_shape`), `col_stride` along the columns.
    pub inputs: Vec<EpilogueInput>,
    /// The dimensions rows decompose into (batch, m for matmul; n, oh, ow for conv).
    pub rows_shape: Vec<usize>,
}

/// An extra input of an [`Epilogue`].
#[derive(Clone, Debug, PartialEq)]
pub struct EpilogueInput {
    /// The buffer.
    pub buffer: BufferId,
    /// Element type.
    pub dtype: DType,
    /// Element strides over [`Epilogue::rows_shape`].
    pub row_strides: Vec<usize>,
    /// Element stride along the columns.
    pub col_stride: usize,
}

/// How a matrix operand is laid out in memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MatrixLayout {
    /// Element `(r, c)` at `r * cols + c`.
    RowMajor,
    /// Element `(r, c)` at `c * rows + r` (a conv weight in OHWI is a column-major `B`: each
    /// output channel's `(ky, kx, ic)` taps are contiguous). Tensor-core fragments load either.
    ColMajor,
}

/// A contraction kernel: `out[rows, cols] = Σ_k A[row, k] · B[k, col] (+ bias[col])`,
/// accumulated in [`Contraction::acc`] (f64 for f64 data), rounded once to the contraction's
/// type, then the epilogue. How a backend tiles it (register blocks, tensor-core fragments) is
/// the backend's choice; the description states only what is computed and how operands are laid
/// out.
#[derive(Clone, Debug, PartialEq)]
pub struct Contraction {
    /// Which contraction (and its geometry).
    pub kind: ContractionKind,
    /// Batch count (matmul), 1 otherwise.
    pub batch: usize,
    /// Rows of the output per batch.
    pub m: usize,
    /// Columns of the output.
    pub n: usize,
    /// Reduction length.
    pub k: usize,
    /// The accumulator type: TOSA's `acc_type` on convolutions, `f16c.acc_type` on a matmul
    /// (written by insert-casts), else f32 (f64 for f64 data, i32 for integer data).
    pub acc: DType,
    /// The activation input.
    pub a: Operand,
    /// Element stride between rows of `A` when `A` is a plain matrix (matmul: `k`); `None` for
    /// convolutions, whose rows are gathered from the input by [`ConvGeometry`] (implicit
    /// im2col).
    pub a_row_stride: Option<usize>,
    /// The second input (weight or activation).
    pub b: Operand,
    /// How `B` (`k × n` per batch) is laid out: row-major for matmul and depthwise weights,
    /// column-major for conv and transpose-conv weights (OHWI).
    pub b_layout: MatrixLayout,
    /// Whether `b` is a constant (backends pre-pack it).
    pub b_constant: bool,
    /// The bias (convolutions), one value or one per column.
    pub bias: Option<Operand>,
    /// The output buffer and its type (the type of the last epilogue op when there is one).
    pub out: Operand,
    /// The contraction's own result type before the epilogue.
    pub result: DType,
    /// A fused elementwise epilogue.
    pub epilogue: Option<Epilogue>,
    /// The zero points of `a` and `b` (integer contractions; 0 for floats).
    pub zp: (i64, i64),
    /// A convolution with padding whose constant weight holds an inf or NaN, or whose weight
    /// is computed at run time ([`padding_meets_non_finite_weight`]): code must skip the padding rather than multiply its
    /// zeros (with finite weights, multiplying them changes nothing: a sum that starts at +0
    /// never becomes −0, and adding ±0 leaves it as it is).
    pub padding_hazard: bool,
    /// Where a matmul's A, its B (computed at run time) and its output lie in their buffers
    /// when a copy beside it (an attention's head transposes) was folded in
    /// ([`fold::fold_views`]); `None`: dense, as the operand's type says.
    pub views: Views,
    /// (A convolution with padding) its input as the concatenation, along the channels, of
    /// these parts (each dense `[n, h, w, c_i]`), where the copy that concatenated them was
    /// folded in ([`fold::fold_concats`]): `a` then names the first part's buffer with the whole
    /// input's type, and the backend pads the parts into one input. Empty: `a` is the input.
    pub a_parts: Vec<Operand>,
}

/// [`Contraction::views`]: a [`View`] per operand that has one.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Views {
    /// A as `[batch][m][k]` (its `col` is 1).
    pub a: Option<View>,
    /// B as `[batch][k][n]` (row-major B only; its `col` is 1).
    pub b: Option<View>,
    /// The output as `[batch][m][n]` (its `col` is 1).
    pub out: Option<View>,
}

impl Views {
    /// Whether any operand has a view.
    pub fn any(&self) -> bool {
        self.a.is_some() || self.b.is_some() || self.out.is_some()
    }
}

/// A `[batch][rows][cols]` matrix inside a buffer: element `(b, i, j)` at
/// `offset + b·batch + i·row + j·col`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct View {
    /// The element at `(0, 0, 0)`.
    pub offset: usize,
    /// Element stride between batches.
    pub batch: usize,
    /// Element stride between rows.
    pub row: usize,
    /// Element stride between columns.
    pub col: usize,
}

/// A reduction along one axis: input viewed as `[outer, len, inner]`.
#[derive(Clone, Debug, PartialEq)]
pub struct Reduction {
    /// Which reduction (`None`: argmax).
    pub kind: Option<ReduceKind>,
    /// Input.
    pub input: Operand,
    /// Output.
    pub output: Operand,
    /// Product of the dimensions before the axis.
    pub outer: usize,
    /// The axis length.
    pub len: usize,
    /// Product of the dimensions after the axis.
    pub inner: usize,
}

/// Max or average pooling, NHWC.
#[derive(Clone, Debug, PartialEq)]
pub struct Pool {
    /// Average (else max).
    pub avg: bool,
    /// Input `[n, ih, iw, c]`.
    pub input: Operand,
    /// Output `[n, oh, ow, c]`.
    pub output: Operand,
    /// Window `[y, x]`.
    pub kernel: [usize; 2],
    /// Stride `[y, x]`.
    pub stride: [usize; 2],
    /// Padding `[top, bottom, left, right]`.
    pub pad: [usize; 4],
    /// Input and output zero points of an integer average (`semantics::int_average`).
    pub zp: (i64, i64),
}

/// One strided copy: `dst[dst_offset + Σ i_d·dst_strides_d] = src[src_offset + Σ i_d·src_strides_d]`
/// for every index of `shape` (offsets and strides in elements; a negative source stride walks
/// a dimension backwards, as `tosa.reverse` does).
#[derive(Clone, Debug, PartialEq)]
pub struct Move {
    /// Source buffer.
    pub src: BufferId,
    /// Source offset.
    pub src_offset: usize,
    /// Source strides.
    pub src_strides: Vec<isize>,
    /// Destination offset.
    pub dst_offset: usize,
    /// Destination strides.
    pub dst_strides: Vec<isize>,
    /// The index space.
    pub shape: Vec<usize>,
}

/// A data-movement kernel: optionally fill the output with one value, then strided copies.
/// The copies convert their elements when `source` is not the output's element type (a float
/// cast folded into the copy, [`fold`]); else they copy bits.
#[derive(Clone, Debug, PartialEq)]
pub struct CopyKernel {
    /// The output.
    pub output: Operand,
    /// The element type of every move's source.
    pub source: DType,
    /// Fill the whole output first with this element (pad), read from a buffer.
    pub fill: Option<BufferId>,
    /// The copies.
    pub moves: Vec<Move>,
}

impl CopyKernel {
    /// Whether the copy converts its elements (`source` is not the output's element type).
    pub fn converts(&self) -> bool {
        self.source != self.output.ty.dtype
    }
}

/// `tosa.gather`: `out[b, j, :] = values[b, indices[b, j], :]`.
#[derive(Clone, Debug, PartialEq)]
pub struct Gather {
    /// Values `[n, k, c]` (a scatter's values_in).
    pub values: Operand,
    /// Indices `[n, w]` (i32 or i64); where `index_sum` is given, their type only (their
    /// buffer is never written nor read).
    pub indices: Operand,
    /// A scatter's input `[n, w, c]`, whose rows replace the values' rows at the indices (the
    /// last of repeated indices wins); `None` for a gather.
    pub scatter: Option<Operand>,
    /// Output: `[n, w, c]` for a gather, `[n, k, c]` for a scatter.
    pub output: Operand,
    /// The indices computed as they are read instead of loaded (a gather only; see
    /// [`IndexSum`]).
    pub index_sum: Option<IndexSum>,
}

/// Indices that a gather computes where it reads them: each the sum, wrapping in the indices'
/// type, of parts read through their strides over `shape`, whose row-major order is the
/// indices' order. torch-mlir's bilinear upsampling, after canonicalize, adds a row part to a
/// column part, two broadcast vectors; stored, the sum was four bytes per value written by a
/// kernel of its own and read back by the gather (a U-Net: twelve such kernels, the JIT's twelve
/// milliseconds of 105).
#[derive(Clone, Debug, PartialEq)]
pub struct IndexSum {
    /// The iteration space (collapsed as an elementwise kernel's is).
    pub shape: Vec<usize>,
    /// The parts, each of the indices' type.
    pub parts: Vec<Strided>,
}

impl IndexSum {
    /// The rows of `shape` (all but its last dimension).
    pub fn rows(&self) -> usize {
        self.shape[..self.shape.len().saturating_sub(1)].iter().product()
    }

    /// The length of a row (the last dimension).
    pub fn inner(&self) -> usize {
        self.shape.last().copied().unwrap_or(1)
    }
}

/// The work items of a gather whose indices are summed as they are read ([`Gather::sum_run`]):
/// `rows` whole rows of the sum's space per item where a row is at most a run, else `cols`
/// columns of one row; `segments` items per row (`1` for whole rows); `items` in all.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SumRun {
    /// Rows per work item.
    pub rows: usize,
    /// Columns per work item (the whole row, or a part).
    pub cols: usize,
    /// Work items per row.
    pub segments: usize,
    /// Work items.
    pub items: usize,
}

impl Gather {
    /// Indices a CPU work item of a gather (not a scatter) takes, all range-checked before its
    /// copies: enough for about [`GATHER_RUN_VALUES`] values (a U-Net's upsampling, one value
    /// per index, ran one index per item and spent more on the item loop and the check's branch
    /// than on the copy), at least one (an embedding lookup's rows of 768 stay one per item,
    /// shared among the threads).
    pub fn run(&self) -> usize {
        let c = self.values.ty.shape.last().copied().unwrap_or(1).max(1);
        (GATHER_RUN_VALUES / c).max(1)
    }

    /// Where the indices are summed as they are read: about [`Gather::run`] indices per work
    /// item in whole rows of the sum's space (the rows' parts found once per row), or a part
    /// of one row where a row is longer.
    pub fn sum_run(&self) -> Option<SumRun> {
        let s = self.index_sum.as_ref()?;
        let (run, inner) = (self.run(), s.inner().max(1));
        let (rows, cols) = if inner <= run { (run / inner, inner) } else { (1, run) };
        let segments = inner.div_ceil(cols);
        Some(SumRun { rows, cols, segments, items: s.rows().div_ceil(rows) * segments })
    }

    /// [`Gather::run`] (or [`Gather::sum_run`]) in words, for the CPU backends' plans.
    pub fn run_in_words(&self) -> String {
        if let (Some(s), Some(r)) = (&self.index_sum, self.sum_run()) {
            let take = if r.segments == 1 { format!("{} row(s) of {} indices", r.rows, r.cols) } else { format!("{} indices of a row", r.cols) };
            return format!("{take} per work item, each index the sum of {} parts computed as it is read, all range-checked before the copies", s.parts.len());
        }
        match self.run() {
            1 => "an index per work item, range-checked before its copy".to_string(),
            n => format!("a run of {n} indices per work item, all range-checked before the copies"),
        }
    }
}

/// The values a CPU gather's work item copies ([`Gather::run`]).
pub const GATHER_RUN_VALUES: usize = 256;

/// A value of a [`Rows`] kernel: an input (`0..inputs.len()`), then one per stage.
pub type RowValue = usize;

/// An input of a [`Rows`] kernel.
#[derive(Clone, Debug, PartialEq)]
pub struct RowInput {
    /// The buffer.
    pub buffer: BufferId,
    /// Element type.
    pub dtype: DType,
    /// One row of `len` values (else one value per row).
    pub full: bool,
    /// Each row reads its own (else every row reads the same, broadcast over the rows).
    pub per_row: bool,
}

/// One step of a [`Rows`] kernel, run for every row in order.
#[derive(Clone, Debug, PartialEq)]
pub enum RowStage {
    /// One elementwise op (`op.args` are [`RowValue`]s), over the row when `full`, else on
    /// the row's scalars.
    Map {
        /// The op.
        op: EwOp,
        /// Over the whole row.
        full: bool,
    },
    /// A reduction of a full value along the row, into the row's scalar of type `dtype`.
    Reduce {
        /// Which reduction.
        kind: ReduceKind,
        /// Its argument.
        arg: RowValue,
        /// Result type (accumulated as the reference does, rounded once).
        dtype: DType,
    },
}

/// Row-wise fused ops: reductions along the last axis together with the elementwise ops that
/// use their results (softmax, layer norm, log-softmax), one pass per stage over a row that
/// stays in this thread's scratch. Values are `[rows, len]` ("full") or `[rows, 1]`; the last
/// stage is the only result, `[rows, len]`, written to `output`. Stages compute in the
/// graph's order with the graph's rounding, so the result is the unfused graph's, bit for bit.
#[derive(Clone, Debug, PartialEq)]
pub struct Rows {
    /// Number of rows (product of the leading dimensions).
    pub rows: usize,
    /// Row length (the last dimension).
    pub len: usize,
    /// Inputs.
    pub inputs: Vec<RowInput>,
    /// Stages in order; value `inputs.len() + i` is stage `i`'s result.
    pub stages: Vec<RowStage>,
    /// Element types of the stages' results.
    pub dtypes: Vec<DType>,
    /// The result buffer (the last stage's value).
    pub output: BufferId,
}

impl Rows {
    /// The end of the run of elementwise stages that contains stage `si`: the next reduction
    /// at or after it, or the end (a backend may compute a run in one loop over the row).
    pub fn run_end(&self, si: usize) -> usize {
        (si..self.stages.len()).find(|&e| matches!(self.stages[e], RowStage::Reduce { .. })).unwrap_or(self.stages.len())
    }

    /// Whether value `v` (a stage's result) is the kernel's result or is read by a stage from
    /// `from` on: what a run computing it must leave in memory.
    pub fn read_after(&self, v: RowValue, from: usize) -> bool {
        v == self.inputs.len() + self.stages.len() - 1
            || self.stages[from..].iter().any(|st| match st {
                RowStage::Reduce { arg, .. } => *arg == v,
                RowStage::Map { op, .. } => op.args.contains(&v),
            })
    }

    /// The element type of row value `v`.
    pub fn dtype(&self, v: RowValue) -> DType {
        match self.inputs.get(v) {
            Some(input) => input.dtype,
            None => self.dtypes[v - self.inputs.len()],
        }
    }

    /// The 16-bit float type every value row value `v` takes is a value of ([`holds_half`]).
    pub fn holds_half(&self, v: RowValue) -> Option<DType> {
        let n = self.inputs.len();
        let op = |v: RowValue| match v.checked_sub(n).and_then(|s| self.stages.get(s)) {
            Some(RowStage::Map { op, .. }) => Some(op),
            _ => None,
        };
        holds_half(v, &|v| self.dtype(v), &op)
    }

    /// The softmax this kernel is, stage for stage, if it is one: `m = reduce_max(x)`,
    /// `e = exp(x - m)`, `s = reduce_sum(e)`, `y = e · reciprocal(s)`, all f32, `x` a full row
    /// of its own per row; optionally then PyTorch's all-masked test (after `canonicalize`):
    /// `select(m == a, b, y)` with `a` and `b` one value for every row. A backend may run it
    /// as one routine of these stages (the same values, the sum in index order).
    pub fn softmax(&self) -> Option<Softmax> {
        let f32_full_row = |v: RowValue| self.inputs.get(v).is_some_and(|i| i.full && i.per_row && i.dtype == DType::F32);
        let one_value = |v: RowValue| self.inputs.get(v).is_some_and(|i| !i.full && !i.per_row && i.dtype == DType::F32);
        let map = |si: usize, kind: EwKind, args: &[RowValue], full: bool| {
            matches!(self.stages.get(si), Some(RowStage::Map { op, full: f }) if op.kind == kind && op.args == args && *f == full && op.dtype == self.dtypes[si])
        };
        let n = self.inputs.len();
        let x = 0;
        let core = matches!(self.stages.first(), Some(RowStage::Reduce { kind: ReduceKind::Max, arg: 0, dtype: DType::F32 }))
            && f32_full_row(x)
            && map(1, EwKind::Binary(BinaryOp::Sub), &[x, n], true)
            && map(2, EwKind::Unary(UnaryOp::Exp), &[n + 1], true)
            && matches!(self.stages.get(3), Some(RowStage::Reduce { kind: ReduceKind::Sum, arg, dtype: DType::F32 }) if *arg == n + 2)
            && map(4, EwKind::Unary(UnaryOp::Reciprocal), &[n + 3], false)
            && map(5, EwKind::Binary(BinaryOp::Mul), &[n + 2, n + 4], true)
            && self.dtypes[..6].iter().all(|&d| d == DType::F32);
        if !core {
            return self.softmax_low(DType::BF16).or_else(|| self.softmax_low(DType::F16));
        }
        // The f32 softmax, or (one more stage) its result rounded to bf16.
        let rounded = |si: usize| {
            matches!(self.stages.get(si), Some(RowStage::Map { op, full: true }) if op.kind == EwKind::Cast && op.args == [n + si - 1] && op.dtype == DType::BF16)
                && self.stages.len() == si + 1
        };
        let form = |si: usize| if rounded(si) { Some(SoftmaxForm::F32ToBf16) } else { (self.stages.len() == si).then_some(SoftmaxForm::F32) };
        match self.stages.len() {
            6 | 7 if n == 1 => form(6).map(|form| Softmax { masked: None, form }),
            8 | 9 if n == 3 && one_value(1) && one_value(2) => {
                let test = map(6, EwKind::Binary(BinaryOp::Equal), &[n, 1], false) && map(7, EwKind::Select, &[n + 6, 2, n + 5], true) && self.dtypes[7] == DType::F32;
                form(8).filter(|_| test).map(|form| Softmax { masked: Some((1, 2)), form })
            }
            _ => None,
        }
    }

    /// [`Rows::softmax`] as the precision pass leaves it in bf16 or fp16 (`low`): the maximum
    /// and the subtraction in the low type, the rest in f32 from the difference widened, the
    /// result rounded to the low type: `m = max(x)`, `d = low(x - m)`, `e = exp(f32(d))`,
    /// `y = low(e · (1 / Σ e))`; with the all-masked test `m == a` (a scalar of the low type;
    /// wherever the graph's order puts it) selecting `b` (an f32 scalar) before the rounding.
    fn softmax_low(&self, low: DType) -> Option<Softmax> {
        let n = self.inputs.len();
        let input = |v: RowValue, full: bool, d: DType| self.inputs.get(v).is_some_and(|i| i.full == full && i.per_row == full && i.dtype == d);
        let map = |si: usize, kind: EwKind, args: &[RowValue], full: bool, d: DType| {
            matches!(self.stages.get(si), Some(RowStage::Map { op, full: f }) if op.kind == kind && op.args == args && *f == full && op.dtype == d && self.dtypes[si] == d)
        };
        let masked = match (n, self.stages.len()) {
            (1, 8) => false,
            (3, 10) if input(1, false, low) && input(2, false, DType::F32) => true,
            _ => return None,
        };
        // The all-masked test wherever the graph's order put it; the other stages in order.
        let test = (0..self.stages.len()).find(|&si| map(si, EwKind::Binary(BinaryOp::Equal), &[n, 1], false, DType::I1));
        if masked != test.is_some() {
            return None;
        }
        let order: Vec<usize> = (0..self.stages.len()).filter(|&si| Some(si) != test).collect();
        let (at, v) = (|k: usize| order[k], |k: usize| n + order[k]);
        let last = order.len() - 1;
        let ok = input(0, true, low)
            && at(0) == 0
            && matches!(self.stages[0], RowStage::Reduce { kind: ReduceKind::Max, arg: 0, dtype } if dtype == low)
            && map(at(1), EwKind::Binary(BinaryOp::Sub), &[0, v(0)], true, low)
            && map(at(2), EwKind::Cast, &[v(1)], true, DType::F32)
            && map(at(3), EwKind::Unary(UnaryOp::Exp), &[v(2)], true, DType::F32)
            && matches!(self.stages[at(4)], RowStage::Reduce { kind: ReduceKind::Sum, arg, dtype: DType::F32 } if arg == v(3))
            && map(at(5), EwKind::Unary(UnaryOp::Reciprocal), &[v(4)], false, DType::F32)
            && map(at(6), EwKind::Binary(BinaryOp::Mul), &[v(3), v(5)], true, DType::F32)
            && test.is_none_or(|t| map(at(7), EwKind::Select, &[n + t, 2, v(6)], true, DType::F32))
            && map(at(last), EwKind::Cast, &[v(last - 1)], true, low);
        let form = if low == DType::BF16 { SoftmaxForm::Bf16 } else { SoftmaxForm::F16 };
        ok.then_some(Softmax { masked: masked.then_some((1, 2)), form })
    }

    /// Whether value `v` is a full row (not a scalar per row).
    pub fn full(&self, v: RowValue) -> bool {
        match v.checked_sub(self.inputs.len()) {
            None => self.inputs[v].full,
            Some(si) => matches!(self.stages[si], RowStage::Map { full: true, .. }),
        }
    }
}

/// A [`Rows`] kernel that is a softmax ([`Rows::softmax`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Softmax {
    /// The all-masked test's inputs `(a, b)`: where a row's maximum equals `a`'s value, the
    /// row's result is `b`'s value.
    pub masked: Option<(RowValue, RowValue)>,
    /// Its types.
    pub form: SoftmaxForm,
}

/// The types of a [`Softmax`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SoftmaxForm {
    /// All f32.
    F32,
    /// All f32, the result rounded to bf16 (a bf16 model's attention whose scores stay f32).
    F32ToBf16,
    /// As the precision pass leaves it in bf16 ([`Rows::softmax`]): bf16 rows in and out, the
    /// maximum and the difference in bf16, `a` a bf16 scalar.
    Bf16,
    /// The same in IEEE fp16.
    F16,
}

/// A kernel family with its description.
// A program has tens of kernels: boxing the large variant would save nothing that matters.
#[allow(clippy::large_enum_variant, reason = "kernels are built once per program and read in place; boxing the contraction buys nothing")]
#[derive(Clone, Debug, PartialEq)]
pub enum KernelKind {
    /// Matmul and convolutions.
    Contraction(Contraction),
    /// Fused elementwise ops.
    Elementwise(Elementwise),
    /// Reductions and argmax.
    Reduction(Reduction),
    /// Pooling.
    Pool(Pool),
    /// Strided copies (transpose, slice, tile, pad, concat).
    Copy(CopyKernel),
    /// Gather.
    Gather(Gather),
    /// Row-wise fused reductions and elementwise ops.
    Rows(Rows),
}

/// A kernel: what it computes, which graph ops it covers, where they came from.
#[derive(Clone, Debug, PartialEq)]
pub struct Kernel {
    /// A name for printed code: `k3_matmul`.
    pub name: String,
    /// The description.
    pub kind: KernelKind,
    /// The graph ops it implements, in order.
    pub nodes: Vec<NodeId>,
    /// The location of its main op (for runtime errors).
    pub location: Location,
    /// The main op's MLIR name.
    pub op_name: &'static str,
}

impl Kernel {
    /// Buffers the kernel reads.
    pub fn reads(&self) -> Vec<BufferId> {
        match &self.kind {
            KernelKind::Contraction(c) => {
                let mut r = vec![c.a.buffer, c.b.buffer];
                r.extend(c.a_parts.iter().skip(1).map(|p| p.buffer));
                r.extend(c.bias.as_ref().map(|b| b.buffer));
                if let Some(e) = &c.epilogue {
                    r.extend(e.inputs.iter().map(|i| i.buffer));
                }
                r
            }
            KernelKind::Elementwise(e) => e.inputs.iter().flat_map(|i| std::iter::once(i.buffer).chain(i.rows.as_ref().map(|l| l.indices))).collect(),
            KernelKind::Reduction(r) => vec![r.input.buffer],
            KernelKind::Pool(p) => vec![p.input.buffer],
            KernelKind::Copy(c) => c.moves.iter().map(|m| m.src).chain(c.fill).collect(),
            KernelKind::Gather(g) => match &g.index_sum {
                Some(sum) => std::iter::once(g.values.buffer).chain(sum.parts.iter().map(|p| p.buffer)).collect(),
                None => [Some(&g.values), Some(&g.indices), g.scatter.as_ref()].into_iter().flatten().map(|o| o.buffer).collect(),
            },
            KernelKind::Rows(r) => r.inputs.iter().map(|i| i.buffer).collect(),
        }
    }

    /// The buffer the kernel writes.
    pub fn writes(&self) -> BufferId {
        match &self.kind {
            KernelKind::Contraction(c) => c.out.buffer,
            KernelKind::Elementwise(e) => e.output,
            KernelKind::Reduction(r) => r.output.buffer,
            KernelKind::Pool(p) => p.output.buffer,
            KernelKind::Copy(c) => c.output.buffer,
            KernelKind::Gather(g) => g.output.buffer,
            KernelKind::Rows(r) => r.output,
        }
    }
}

/// A lowered function: kernels in execution order over buffers.
#[derive(Clone, Debug, PartialEq)]
pub struct Program {
    /// The function's name.
    pub name: String,
    /// All buffers.
    pub buffers: Vec<Buffer>,
    /// Argument buffers and types, in order.
    pub inputs: Vec<Operand>,
    /// Result buffers and types, in order.
    pub outputs: Vec<Operand>,
    /// Kernels in execution order.
    pub kernels: Vec<Kernel>,
    /// Where every intermediate lives.
    pub plan: BufferPlan,
}

impl Program {
    /// Bytes of constants (weights) the program carries.
    pub fn constant_bytes(&self) -> usize {
        self.buffers.iter().filter(|b| matches!(b.kind, BufferKind::Constant(_))).map(|b| b.bytes).sum()
    }
}

/// Why a graph cannot be lowered.
#[derive(Debug, thiserror::Error)]
#[error("{location}: error: '{op}' cannot be lowered: {message}")]
pub struct LowerError {
    /// The op's location.
    pub location: Location,
    /// The op.
    pub op: &'static str,
    /// Why.
    pub message: String,
}

/// What a backend lets the lowering give it, beyond what every backend runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LowerOptions {
    /// Fold a float cast into the copy beside it (a [`Copy`] that converts): worth it where a
    /// conversion is an instruction, not where it is a software routine that only the cast
    /// kernel runs a vector at a time.
    pub converting_copies: bool,
    /// Let an elementwise group that reads a contraction's result more than once (SiLU's
    /// `x · sigmoid(x)`) be its epilogue: worth it where the backend finishes a tile's outputs
    /// with the epilogue's math in vectors (the LLVM CPU backends), not where a math-heavy
    /// epilogue runs slower than the elementwise kernel would (the JIT's staged finish:
    /// EfficientNet-B0 16.5 → 24 ms).
    pub multi_read_epilogues: bool,
    /// Keep exp, tanh, erf and sigmoid out of contraction epilogues: the JIT computes them
    /// sixteen lanes wide in an elementwise kernel (a runtime call per block of a row), four
    /// in a GEMM tile's finish.
    pub plain_epilogues: bool,
    /// Even so, let an f32 matmul or convolution (depthwise too) take an epilogue with one
    /// sigmoid, erf, tanh or exp of its own value or of a value the epilogue computes from it
    /// (SiLU's `x · sigmoid(x)`, reading it twice; a gate's `sigmoid(x)`; GELU's
    /// `x · (erf(x / √2) + 1) / 2`): the JIT finishes a block of such a GEMM's tiles, or a
    /// depthwise convolution's row, at a time, the math by the runtime's sixteen-lane loop.
    pub wide_math_epilogues: bool,
    /// Fold a copy that only moves a matmul's A or run-time B into place, or only moves its
    /// output, into the matmul ([`fold::fold_views`]): the backend reads and writes operands
    /// through [`View`]s.
    pub contraction_views: bool,
    /// Fold a copy that only concatenates a padded convolution's input along its channels into
    /// the convolution ([`fold::fold_concats`]): the backend pads the parts into one input.
    pub concatenated_inputs: bool,
}

/// Lowers a verified graph (run the verifier first: lowering relies on its shape checks) with
/// the default [`LowerOptions`].
pub fn lower(g: &Graph) -> Result<Program, LowerError> {
    lower_with(g, LowerOptions::default())
}

/// Lowers a verified graph; a float cast is folded into the pooling that produces its input
/// and, as `options` allow, into the copy beside it.
pub fn lower_with(g: &Graph, options: LowerOptions) -> Result<Program, LowerError> {
    // A program is one straight line of kernels: control flow runs above it (the JIT compiles
    // each straight-line piece and each region as programs of their own, `f16c-jit`).
    if let Some(id) = g.node_ids().find(|&id| g.op(id).is_control_flow()) {
        return Err(LowerError {
            location: g.location(id),
            op: g.op(id).mlir_name(),
            message: "control flow is not supported by compiled artifacts yet: the JIT (--target=x86_64, the default) and the reference interpreter run it".into(),
        });
    }
    // tosa.resize, tosa.table and tosa.conv3d become ops every backend has first (`expand.rs`).
    let expanded;
    let g = if expand::needed(g) {
        expanded = expand::expand(g)?;
        &expanded
    } else {
        g
    };
    let mut program = Lowering::new(g, options).run()?;
    let hazards: Vec<bool> = program.kernels.iter().map(|k| matches!(&k.kind, KernelKind::Contraction(c) if padding_meets_non_finite_weight(&program, c))).collect();
    for (k, hazard) in program.kernels.iter_mut().zip(hazards) {
        if let KernelKind::Contraction(c) = &mut k.kind {
            c.padding_hazard = hazard;
        }
    }
    Ok(program)
}

/// Row-major element strides.
pub fn dense_strides(shape: &[usize]) -> Vec<usize> {
    let mut s = vec![1; shape.len()];
    for i in (0..shape.len().saturating_sub(1)).rev() {
        s[i] = s[i + 1] * shape[i + 1];
    }
    s
}

/// Strides with which a tensor of `shape` is read when broadcast to `out` (TOSA broadcasting:
/// equal ranks, size-1 dimensions stretch).
pub fn broadcast_strides(shape: &[usize], out: &[usize]) -> Vec<usize> {
    let dense = dense_strides(shape);
    let lead = out.len() - shape.len();
    (0..out.len()).map(|d| if d < lead || shape[d - lead] == 1 { 0 } else { dense[d - lead] }).collect()
}

/// An element stride: `usize`, or `isize` where a dimension may be walked backwards.
pub trait Stride: std::marker::Copy + PartialEq + std::fmt::Debug {
    /// The stride as an i64 (what generated code multiplies by).
    fn get(self) -> i64;
    /// The stride times a dimension's length.
    fn times(self, n: usize) -> Self;
    /// The stride of a dimension of size 1 that stands for none.
    fn zero() -> Self;
}

impl Stride for usize {
    fn get(self) -> i64 {
        self as i64
    }
    fn times(self, n: usize) -> Self {
        self * n
    }
    fn zero() -> Self {
        0
    }
}

impl Stride for isize {
    fn get(self) -> i64 {
        self as i64
    }
    fn times(self, n: usize) -> Self {
        self * n as isize
    }
    fn zero() -> Self {
        0
    }
}

/// Merges adjacent dimensions that are contiguous for every stride list and drops size-1
/// dimensions. Returns the new shape and strides (at least one dimension).
pub fn collapse<S: Stride>(shape: &[usize], strides: &[Vec<S>]) -> (Vec<usize>, Vec<Vec<S>>) {
    let keep: Vec<usize> = (0..shape.len()).filter(|&d| shape[d] != 1).collect();
    let mut out_shape: Vec<usize> = Vec::new();
    let mut out_strides: Vec<Vec<S>> = vec![Vec::new(); strides.len()];
    for &d in &keep {
        let mergeable = !out_shape.is_empty()
            && strides.iter().enumerate().all(|(i, s)| *out_strides[i].last().expect("same length") == s[d].times(shape[d]));
        if mergeable {
            *out_shape.last_mut().expect("not empty") *= shape[d];
            for (i, s) in strides.iter().enumerate() {
                *out_strides[i].last_mut().expect("not empty") = s[d];
            }
        } else {
            out_shape.push(shape[d]);
            for (i, s) in strides.iter().enumerate() {
                out_strides[i].push(s[d]);
            }
        }
    }
    if out_shape.is_empty() {
        out_shape.push(1);
        for s in &mut out_strides {
            s.push(S::zero());
        }
    }
    (out_shape, out_strides)
}

/// An elementwise group fused into a contraction's epilogue.
struct Fusion {
    /// The value the group reads (the contraction, or the last reshape of it).
    value: NodeId,
    /// Reshapes between the contraction and the group.
    views: Vec<NodeId>,
    /// The group.
    members: Vec<NodeId>,
}

struct Lowering<'g> {
    g: &'g Graph,
    buffers: Vec<Buffer>,
    /// The buffer holding each node's value (views share their input's).
    of: HashMap<NodeId, BufferId>,
    kernels: Vec<Kernel>,
    options: LowerOptions,
}

impl<'g> Lowering<'g> {
    fn new(g: &'g Graph, options: LowerOptions) -> Self {
        Lowering { g, buffers: Vec::new(), of: HashMap::new(), kernels: Vec::new(), options }
    }

    fn ty(&self, id: NodeId) -> TensorType {
        self.g.tensor_ty(id).expect("data values are tensors").clone()
    }

    /// The operands of `id` that carry data (not zero points or shifts), in order.
    fn data_inputs(&self, id: NodeId) -> Vec<NodeId> {
        let side = self.g.op(id).side_operands();
        self.g.operands(id).into_iter().enumerate().filter(|(slot, _)| !side.contains(slot)).map(|(_, o)| o).collect()
    }

    /// The data operands of `members` defined outside them, each once, in first-use order.
    fn outside_inputs(&self, members: &[NodeId]) -> Vec<NodeId> {
        let mut inputs: Vec<NodeId> = Vec::new();
        for &m in members {
            for o in self.data_inputs(m) {
                if !members.contains(&o) && !inputs.contains(&o) {
                    inputs.push(o);
                }
            }
        }
        inputs
    }

    /// The value of operand `slot` of `id` when it is a constant zero point or shift (its first
    /// element); 0 otherwise.
    fn side_scalar(&self, id: NodeId, slot: usize) -> i64 {
        match self.g.operands(id).get(slot).map(|&o| self.g.op(o)) {
            Some(Op::Const(t)) => t.to_i64_vec().first().copied().unwrap_or(0),
            _ => 0,
        }
    }

    fn operand(&self, id: NodeId) -> Operand {
        Operand { buffer: self.of[&id], ty: self.ty(id) }
    }

    fn new_buffer(&mut self, kind: BufferKind, bytes: usize) -> BufferId {
        self.buffers.push(Buffer { kind, bytes });
        BufferId(self.buffers.len() - 1)
    }

    fn intermediate(&mut self, id: NodeId) -> BufferId {
        let b = self.new_buffer(BufferKind::Intermediate, self.ty(id).byte_size());
        self.of.insert(id, b);
        b
    }

    fn error(&self, id: NodeId, message: impl Into<String>) -> LowerError {
        LowerError { location: self.g.location(id), op: self.g.op(id).mlir_name(), message: message.into() }
    }

    fn push(&mut self, kind: KernelKind, nodes: Vec<NodeId>) {
        let main = nodes.iter().copied().find(|&n| self.g.op(n).is_contraction()).unwrap_or(nodes[0]);
        let op_name = self.g.op(main).mlir_name();
        let name = match kind {
            KernelKind::Rows(_) => format!("k{}_rows_{}", self.kernels.len(), self.g.op(main).short_name()),
            _ => format!("k{}_{}", self.kernels.len(), self.g.op(main).short_name()),
        };
        self.kernels.push(Kernel { name, kind, nodes, location: self.g.location(main), op_name });
    }

    fn run(mut self) -> Result<Program, LowerError> {
        let g = self.g;
        let order = g.topo_order().expect("verified graphs are acyclic");
        let outputs: HashSet<NodeId> = g.outputs().iter().copied().collect();
        let regions = self.row_regions(&order, &outputs);
        let mut region_of: HashMap<NodeId, usize> = HashMap::new();
        for (r, members) in regions.iter().enumerate() {
            region_of.extend(members.iter().map(|&m| (m, r)));
        }
        let groups = self.elementwise_groups(&order, &outputs, &region_of);
        // A contraction with a fused epilogue runs where the epilogue's root is: every input of
        // the group is ready there. The reshapes between them are never materialized.
        let fusions = self.epilogue_candidates(&order, &groups, &outputs);
        let mut at_root: HashMap<NodeId, NodeId> = HashMap::new();
        let mut skip: HashSet<NodeId> = HashSet::new();
        for (&c, f) in &fusions {
            at_root.insert(*f.members.last().expect("groups are not empty"), c);
            skip.insert(c);
            skip.extend(f.views.iter().copied());
            skip.extend(f.members.iter().copied());
        }
        for &id in &order {
            if let Some(&c) = at_root.get(&id) {
                self.contraction(c, fusions.get(&c))?;
                continue;
            }
            if skip.contains(&id) {
                continue;
            }
            if let Some(&r) = region_of.get(&id) {
                // A region runs where its result is: every input is ready there.
                if regions[r].last() == Some(&id) {
                    self.rows(&regions[r]);
                }
                continue;
            }
            match g.op(id) {
                Op::Arg(k) => {
                    let b = self.new_buffer(BufferKind::Input(*k), self.ty(id).byte_size());
                    self.of.insert(id, b);
                }
                Op::Const(t) => {
                    let b = self.new_buffer(BufferKind::Constant(ConstBytes::of(t)), t.byte_size());
                    self.of.insert(id, b);
                }
                Op::ConstShape(_) => {}
                Op::Reshape | Op::Identity => {
                    let src = self.of[&g.operands(id)[0]];
                    self.of.insert(id, src);
                }
                op if op.is_contraction() => self.contraction(id, None)?,
                op if op.is_elementwise() => {
                    let members = groups.get(&id).cloned().unwrap_or_else(|| vec![id]);
                    if members.last() == Some(&id) {
                        self.elementwise(&members);
                    }
                }
                Op::Reduce { kind, axis } => self.reduction(id, Some(*kind), *axis),
                Op::ArgMax { axis } => self.reduction(id, None, *axis),
                Op::MaxPool2d(p) | Op::AvgPool2d(p) => {
                    let input = self.operand(g.operands(id)[0]);
                    let output = Operand { buffer: self.intermediate(id), ty: self.ty(id) };
                    let avg = matches!(g.op(id), Op::AvgPool2d(_));
                    let zp = if avg { (self.side_scalar(id, 1), self.side_scalar(id, 2)) } else { (0, 0) };
                    self.push(KernelKind::Pool(Pool { avg, input, output, kernel: p.kernel, stride: p.stride, pad: p.pad, zp }), vec![id]);
                }
                Op::Transpose { .. } | Op::Slice | Op::Pad | Op::Concat { .. } | Op::Tile | Op::Reverse { .. } => self.copy(id),
                Op::Gather | Op::Scatter => {
                    let ops = g.operands(id);
                    let (values, indices) = (self.operand(ops[0]), self.operand(ops[1]));
                    if !matches!(indices.ty.dtype, DType::I32 | DType::I64) {
                        return Err(self.error(id, "indices must be i32 or i64"));
                    }
                    let scatter = ops.get(2).map(|&o| self.operand(o));
                    let output = Operand { buffer: self.intermediate(id), ty: self.ty(id) };
                    self.push(KernelKind::Gather(Gather { values, indices, scatter, output, index_sum: None }), vec![id]);
                }
                op => return Err(self.error(id, format!("no lowering for {}", op.mlir_name()))),
            }
        }
        let inputs = g.inputs().iter().map(|&a| self.operand(a)).collect();
        let outputs: Vec<Operand> = g.outputs().iter().map(|&o| self.operand(o)).collect();
        fold::fold_casts(&mut self.kernels, &self.buffers, &outputs, self.options);
        fold::fold_index_sums(&mut self.kernels, &self.buffers, &outputs);
        fold::fold_gathers(&mut self.kernels, &self.buffers, &outputs);
        if self.options.contraction_views {
            fold::fold_views(&mut self.kernels, &self.buffers, &outputs);
        }
        if self.options.concatenated_inputs {
            fold::fold_concats(&mut self.kernels, &self.buffers, &outputs);
        }
        let plan = plan::plan(&self.buffers, &self.kernels, &outputs);
        Ok(Program { name: g.name.clone(), buffers: self.buffers, inputs, outputs, kernels: self.kernels, plan })
    }

    /// Fusion groups of elementwise ops, keyed by every member, members in evaluation order
    /// (the root last). A node joins its operand's group when that operand is elementwise,
    /// has the same shape, is not a function result, and every other user of it is in the
    /// group already (one user, or several that join first: GELU's `x · (erf(x/√2) + 1) / 2`
    /// reads `x` twice): the group's intermediates are then used nowhere else and never need
    /// a buffer, and no path leaves the group and comes back.
    fn elementwise_groups(&self, order: &[NodeId], outputs: &HashSet<NodeId>, regions: &HashMap<NodeId, usize>) -> HashMap<NodeId, Vec<NodeId>> {
        let g = self.g;
        let position: HashMap<NodeId, usize> = order.iter().enumerate().map(|(i, &n)| (n, i)).collect();
        let mut groups: HashMap<NodeId, Vec<NodeId>> = HashMap::new();
        for &id in order {
            if !g.op(id).is_elementwise() || regions.contains_key(&id) {
                continue;
            }
            let joinable = |o: NodeId| {
                g.op(o).is_elementwise() && !regions.contains_key(&o) && !outputs.contains(&o) && g.tensor_ty(o).map(|t| &t.shape) == g.tensor_ty(id).map(|t| &t.shape)
            };
            let mut members: Vec<NodeId> = vec![id];
            let mut inside: HashSet<NodeId> = HashSet::from([id]);
            // Operands of the members whose users are all members join, until none does (an
            // operand read twice joins once the group holds both its readers).
            loop {
                let next = members.iter().flat_map(|&m| g.operands(m)).find(|&o| !inside.contains(&o) && joinable(o) && g.users(o).iter().all(|(u, _)| inside.contains(u)));
                let Some(o) = next else { break };
                for m in groups.remove(&o).unwrap_or_else(|| vec![o]) {
                    if inside.insert(m) {
                        members.push(m);
                    }
                }
            }
            members.sort_by_key(|m| position[m]);
            for &m in &members {
                groups.insert(m, members.clone());
            }
        }
        groups
    }

    /// Row regions: a reduction along the last axis together with the elementwise ops and
    /// further last-axis reductions connected to it over the same rows (softmax, layer norm),
    /// each a set of nodes in evaluation order whose only value used outside is the last one,
    /// a full `[rows, len]` tensor. Such a set is convex (every member reaches the last one),
    /// so it can run as one kernel where its last node is. Inputs from outside must broadcast
    /// per row or over all rows; a region that does not fit is left to the other kernels.
    fn row_regions(&self, order: &[NodeId], outputs: &HashSet<NodeId>) -> Vec<Vec<NodeId>> {
        let g = self.g;
        let float = |d: DType| matches!(d, DType::F32 | DType::F16 | DType::BF16 | DType::F64);
        let reduces = |k: &ReduceKind| matches!(k, ReduceKind::Sum | ReduceKind::Max | ReduceKind::Min | ReduceKind::Prod);
        let mut taken: HashSet<NodeId> = HashSet::new();
        let mut regions = Vec::new();
        for &seed in order {
            let Op::Reduce { kind, axis } = g.op(seed) else { continue };
            let in_shape = self.ty(g.operands(seed)[0]).shape.clone();
            // A reduction of a reduction's per-row scalar (only possible over rows of one
            // element, where a scalar and a full row have the same shape) is no row stage: a
            // reduce_min of a reduce_max of [N, 1] panicked every backend (found by the
            // differential tester).
            let of_reduce = |id: NodeId| matches!(g.op(g.operands(id)[0]), Op::Reduce { .. });
            if taken.contains(&seed) || !reduces(kind) || *axis + 1 != in_shape.len() || of_reduce(seed) {
                continue;
            }
            let (outer, len) = (&in_shape[..*axis], in_shape[*axis]);
            let fits = |id: NodeId| -> bool {
                let Some(t) = g.tensor_ty(id) else { return false };
                if t.shape.len() != outer.len() + 1 || t.shape[..outer.len()] != *outer {
                    return false;
                }
                let last = t.shape[outer.len()];
                // A per-row test of floats (safe softmax's all-masked row) may join, as a
                // boolean scalar of its row.
                let per_row_test = t.dtype == DType::I1
                    && last == 1
                    && matches!(g.op(id), Op::Binary(b) if b.is_comparison())
                    && g.operands(id).iter().all(|&o| g.tensor_ty(o).is_some_and(|t| float(t.dtype)));
                if !float(t.dtype) && !per_row_test {
                    return false;
                }
                let per_row_pred = |o: NodeId| g.tensor_ty(o).is_some_and(|p| p.dtype == DType::I1 && p.shape.last() == Some(&1));
                match g.op(id) {
                    Op::Reduce { kind, axis } => {
                        reduces(kind) && *axis == outer.len() && last == 1 && self.ty(g.operands(id)[0]).shape.last() == Some(&len) && !of_reduce(id)
                    }
                    // A select of full rows by a per-row boolean (its test's own row).
                    Op::Select => last == len && per_row_pred(g.operands(id)[0]),
                    op => op.is_elementwise() && (last == len || last == 1),
                }
            };
            // Grow over operands and users that fit. Not over a cast of a value that something
            // else reads too (a layer norm's f32 result, read by the next residual add, cast to
            // bf16 for the next matmul): the region could give only one of the two, and lost
            // itself; the cast stays a kernel of its own.
            let mut set: HashSet<NodeId> = HashSet::from([seed]);
            let mut stack = vec![seed];
            while let Some(n) = stack.pop() {
                let users = g.users(n);
                let shared = users.len() > 1;
                let users = users.into_iter().map(|(u, _)| u).filter(|&u| !(shared && matches!(g.op(u), Op::Cast)));
                let neighbours: Vec<NodeId> = self.data_inputs(n).into_iter().chain(users).collect();
                for m in neighbours {
                    if !set.contains(&m) && !taken.contains(&m) && fits(m) {
                        set.insert(m);
                        stack.push(m);
                    }
                }
            }
            // Outside inputs must have the same rank and leading dimensions all the rows' or
            // all 1.
            let input_fits = |o: NodeId| {
                let t = self.ty(o);
                t.shape.len() == outer.len() + 1
                    && (t.shape[..outer.len()] == *outer || t.shape[..outer.len()].iter().all(|&d| d == 1))
                    && (t.shape[outer.len()] == len || t.shape[outer.len()] == 1)
            };
            // Elementwise ops chain row computations one after another (a residual add joins
            // one layer norm's result to the next one's input): keep the first full result
            // after the seed that is used outside and what it depends on, not the whole chain
            // (whose shrinking would keep only its last link, and no other seed's).
            let reach = |from: NodeId, next: &dyn Fn(NodeId) -> Vec<NodeId>, set: &HashSet<NodeId>| {
                let mut seen = HashSet::from([from]);
                let mut stack = vec![from];
                while let Some(n) = stack.pop() {
                    for m in next(n) {
                        if set.contains(&m) && seen.insert(m) {
                            stack.push(m);
                        }
                    }
                }
                seen
            };
            let after_seed = reach(seed, &|n| g.users(n).into_iter().map(|(u, _)| u).collect(), &set);
            let first_result = order.iter().copied().find(|&m| {
                after_seed.contains(&m)
                    && !matches!(g.op(m), Op::Reduce { .. })
                    && g.tensor_ty(m).is_some_and(|t| t.shape.last() == Some(&len))
                    && (outputs.contains(&m) || g.users(m).iter().any(|(u, _)| !set.contains(u)))
            });
            if let Some(root) = first_result {
                set = reach(root, &|n| self.data_inputs(n), &set);
            }
            let members = loop {
                // Shrink until one member (the last) is used outside.
                let members = loop {
                    let members: Vec<NodeId> = order.iter().copied().filter(|n| set.contains(n)).collect();
                    let escaping: Vec<NodeId> = members
                        .iter()
                        .copied()
                        .filter(|&m| outputs.contains(&m) || g.users(m).iter().any(|(u, _)| !set.contains(u)))
                        .collect();
                    if escaping.len() <= 1 {
                        break (escaping.len() == 1 && escaping[0] == *members.last().expect("not empty")).then_some(members);
                    }
                    for e in &escaping[..escaping.len() - 1] {
                        set.remove(e);
                    }
                };
                let Some(members) = members else { break None };
                // A member reading an outside input that does not fit (an attention mask
                // broadcast over heads but not over rows, added to the scores before the
                // softmax) leaves, and its result becomes the input: the rest still runs as one
                // kernel.
                let misfits: Vec<NodeId> = members.iter().copied().filter(|&m| self.data_inputs(m).into_iter().any(|o| !set.contains(&o) && !input_fits(o))).collect();
                if misfits.is_empty() {
                    break Some(members);
                }
                if misfits.contains(&seed) {
                    break None;
                }
                for m in misfits {
                    set.remove(&m);
                }
            };
            let Some(members) = members else { continue };
            let root = *members.last().expect("not empty");
            let has_reduce = members.iter().any(|&m| matches!(g.op(m), Op::Reduce { .. }));
            let full_root = !matches!(g.op(root), Op::Reduce { .. }) && self.ty(root).shape.last() == Some(&len);
            if has_reduce && full_root && self.outside_inputs(&members).into_iter().all(input_fits) {
                taken.extend(members.iter().copied());
                regions.push(members);
            }
        }
        regions
    }

    /// Lowers a row region (see [`Self::row_regions`]).
    fn rows(&mut self, members: &[NodeId]) {
        let g = self.g;
        let root = *members.last().expect("regions are not empty");
        let shape = self.ty(root).shape.clone();
        let (outer, len) = (&shape[..shape.len() - 1], shape[shape.len() - 1]);
        let outside = self.outside_inputs(members);
        let mut value_of: HashMap<NodeId, RowValue> = outside.iter().enumerate().map(|(i, &o)| (o, i)).collect();
        let inputs: Vec<RowInput> = outside
            .iter()
            .map(|&o| {
                let t = self.ty(o);
                RowInput { buffer: self.of[&o], dtype: t.dtype, full: t.shape.last() == Some(&len), per_row: t.shape[..outer.len()] == *outer }
            })
            .collect();
        let (mut stages, mut dtypes) = (Vec::new(), Vec::new());
        for &m in members {
            let args: Vec<RowValue> = self.data_inputs(m).iter().map(|o| value_of[o]).collect();
            let dtype = self.ty(m).dtype;
            stages.push(match g.op(m) {
                Op::Reduce { kind, .. } => RowStage::Reduce { kind: *kind, arg: args[0], dtype },
                _ => RowStage::Map { op: self.ew_op(m, args), full: self.ty(m).shape.last() == Some(&len) },
            });
            dtypes.push(dtype);
            value_of.insert(m, inputs.len() + stages.len() - 1);
        }
        let output = self.intermediate(root);
        let rows = outer.iter().product();
        self.push(KernelKind::Rows(Rows { rows, len, inputs, stages, dtypes, output }), members.to_vec());
    }

    /// Elementwise groups that can become the epilogue of the contraction feeding them: the
    /// contraction's result (through reshapes that keep the last dimension) is used by this
    /// group only (once, or any number of times where [`LowerOptions::multi_read_epilogues`]
    /// allows: SiLU's `x · sigmoid(x)` reads it twice), and the group iterates over exactly
    /// the contraction's elements with the same innermost dimension. Keyed by the contraction.
    fn epilogue_candidates(&self, order: &[NodeId], groups: &HashMap<NodeId, Vec<NodeId>>, outputs: &HashSet<NodeId>) -> HashMap<NodeId, Fusion> {
        let g = self.g;
        let mut out = HashMap::new();
        for &id in order {
            let Some(cols) = self.contraction_cols(id) else { continue };
            // Integer contractions run on a plain path with no epilogue.
            if !self.ty(g.operands(id)[0]).dtype.is_float() {
                continue;
            }
            let (mut value, mut views) = (id, Vec::new());
            loop {
                let mut users: Vec<NodeId> = g.users(value).into_iter().map(|(u, _)| u).collect();
                users.dedup();
                if users.is_empty() || outputs.contains(&value) {
                    break;
                }
                let u = users[0];
                if users.len() == 1 && matches!(g.op(u), Op::Reshape) && self.ty(u).shape.last() == Some(&cols) {
                    views.push(u);
                    value = u;
                    continue;
                }
                if let Some(members) = groups.get(&u).filter(|_| g.op(u).is_elementwise()) {
                    let same_space = self.ty(u).num_elements() == self.ty(id).num_elements() && self.ty(u).shape.last() == Some(&cols);
                    let reads = members.iter().flat_map(|&m| g.operands(m)).filter(|&o| o == value).count();
                    let math = |m: &NodeId| matches!(g.op(*m), Op::Unary(UnaryOp::Exp | UnaryOp::Tanh | UnaryOp::Erf | UnaryOp::Sigmoid));
                    // A depthwise convolution's only when it is SiLU of its value (the JIT runs
                    // that as one runtime call on each finished row).
                    let silu = members.len() == 2
                        && members.iter().any(|&m| matches!(g.op(m), Op::Unary(UnaryOp::Sigmoid)) && g.operands(m) == [value])
                        && members.iter().any(|&m| matches!(g.op(m), Op::Binary(BinaryOp::Mul)) && g.operands(m).contains(&value) && g.operands(m).iter().any(|o| members.contains(o)));
                    let wide = self.options.wide_math_epilogues
                        && (matches!(g.op(id), Op::MatMul | Op::Conv2d(_)) || (matches!(g.op(id), Op::DepthwiseConv2d(_)) && silu))
                        && self.ty(id).dtype == DType::F32
                        && members.iter().all(|&m| self.ty(m).dtype == DType::F32)
                        && {
                            // Of the value itself (SiLU's sigmoid) or of one computed from it in
                            // the group (GELU's erf of x / √2, its tanh form's tanh).
                            let maths: Vec<&NodeId> = members.iter().filter(|m| math(m)).collect();
                            maths.len() == 1 && g.operands(*maths[0]).first().is_some_and(|a| *a == value || members.contains(a))
                        };
                    let only_this_group = users.iter().all(|u| members.contains(u)) && (reads == 1 || self.options.multi_read_epilogues || wide);
                    let allowed = !(self.options.plain_epilogues && members.iter().any(math)) || wide;
                    // A group fuses into one contraction only (a residual add of two convs).
                    let root = members.last().expect("groups are not empty");
                    let claimed = out.values().any(|f: &Fusion| f.members.last() == Some(root));
                    if same_space && only_this_group && allowed && !claimed {
                        out.insert(id, Fusion { value, views, members: members.clone() });
                    }
                }
                break;
            }
        }
        out
    }

    /// The accumulator type of contraction `id` whose inputs are `input`.
    fn accumulator(&self, id: NodeId, input: DType) -> DType {
        let default = match input {
            DType::F64 => DType::F64,
            d if d.is_int() => DType::I32,
            _ => DType::F32,
        };
        let op = self.g.op(id);
        op.conv_acc().unwrap_or_else(|| self.g.node(id).attr("f16c.acc_type").and_then(DType::from_mlir).unwrap_or(default))
    }

    /// The number of output columns of a contraction whose output is a `[rows, cols]` matrix
    /// (matmul, conv2d, depthwise conv2d: NHWC pixels by channels), if `id` is one.
    fn contraction_cols(&self, id: NodeId) -> Option<usize> {
        match self.g.op(id) {
            Op::MatMul | Op::Conv2d(_) | Op::DepthwiseConv2d(_) => self.ty(id).shape.last().copied(),
            _ => None,
        }
    }

    /// The elementwise op of node `m` with argument values `args`.
    fn ew_op(&self, m: NodeId, args: Vec<usize>) -> EwOp {
        let g = self.g;
        let scalar = |slot: usize| self.side_scalar(m, slot);
        let (kind, shift, zp) = match g.op(m) {
            Op::Unary(u) => {
                let zp = if *u == UnaryOp::Negate { (scalar(1), scalar(2)) } else { (0, 0) };
                (EwKind::Unary(*u), 0, zp)
            }
            Op::Binary(b) => (EwKind::Binary(*b), if *b == BinaryOp::Mul { scalar(2) } else { 0 }, (0, 0)),
            Op::Clamp { min, max } => (EwKind::Clamp { min: *min, max: *max }, 0, (0, 0)),
            Op::Select => (EwKind::Select, 0, (0, 0)),
            Op::Cast => (EwKind::Cast, 0, (0, 0)),
            Op::Rescale(r) => (EwKind::Rescale(*r), 0, (scalar(3), scalar(4))),
            other => unreachable!("{} is not elementwise", other.mlir_name()),
        };
        EwOp { kind, args, dtype: self.ty(m).dtype, shift, zp }
    }

    /// Builds the expression of an elementwise group. `first_input` (the contraction result for
    /// an epilogue) becomes input 0. Returns the expression and its input nodes.
    fn expression(&self, members: &[NodeId], first_input: Option<NodeId>) -> (Expr, Vec<NodeId>) {
        let mut inputs: Vec<NodeId> = first_input.into_iter().collect();
        inputs.extend(self.outside_inputs(members).into_iter().filter(|o| Some(*o) != first_input));
        let mut value_of: HashMap<NodeId, usize> = inputs.iter().enumerate().map(|(i, &n)| (n, i)).collect();
        let mut ops = Vec::new();
        for &m in members {
            let args: Vec<usize> = self.data_inputs(m).iter().map(|o| value_of[o]).collect();
            ops.push(self.ew_op(m, args));
            value_of.insert(m, inputs.len() + ops.len() - 1);
        }
        let input_types = inputs.iter().map(|&i| self.ty(i).dtype).collect();
        (Expr { inputs: input_types, ops }, inputs)
    }

    fn elementwise(&mut self, members: &[NodeId]) {
        let root = *members.last().expect("groups are not empty");
        let (expr, input_nodes) = self.expression(members, None);
        let shape = self.ty(root).shape.clone();
        let mut strides: Vec<Vec<usize>> = input_nodes.iter().map(|&i| broadcast_strides(&self.ty(i).shape, &shape)).collect();
        strides.push(dense_strides(&shape));
        let (shape, mut strides) = collapse(&shape, &strides);
        strides.pop();
        let inputs = input_nodes
            .iter()
            .zip(strides)
            .map(|(&n, strides)| Strided { buffer: self.of[&n], dtype: self.ty(n).dtype, strides, rows: None })
            .collect();
        let output = self.intermediate(root);
        self.push(KernelKind::Elementwise(Elementwise { shape, inputs, expr, output }), members.to_vec());
    }

    /// Lowers a contraction (with its fused epilogue group, if any).
    fn contraction(&mut self, id: NodeId, fusion: Option<&Fusion>) -> Result<(), LowerError> {
        let g = self.g;
        let ops = g.operands(id);
        let (a, b) = (self.operand(ops[0]), self.operand(ops[1]));
        let out_ty = self.ty(id);
        let is_const = |n: NodeId| matches!(g.op(n), Op::Const(_));
        let geometry = |attrs_stride: [usize; 2], dilation: [usize; 2], pad: [usize; 4], kh: usize, kw: usize| {
            let (&[n, ih, iw, ic], &[_, oh, ow, oc]) = (a.ty.shape.as_slice(), out_ty.shape.as_slice()) else {
                return None;
            };
            Some(ConvGeometry { n, ih, iw, ic, oh, ow, oc, kh, kw, stride: attrs_stride, dilation, pad })
        };
        let bad_shape = || self.error(id, "operand shapes are not those of the op");
        let (kind, batch, m, n, k, bias) = match g.op(id) {
            Op::MatMul => {
                let (&[batch, m, k], &[_, _, n]) = (a.ty.shape.as_slice(), b.ty.shape.as_slice()) else { return Err(bad_shape()) };
                (ContractionKind::MatMul, batch, m, n, k, None)
            }
            Op::Conv2d(c) => {
                let w = &b.ty.shape;
                let geo = geometry(c.stride, c.dilation, c.pad, w[1], w[2]).ok_or_else(bad_shape)?;
                let (m, n, k) = (geo.n * geo.oh * geo.ow, geo.oc, geo.kh * geo.kw * geo.ic);
                (ContractionKind::Conv(geo), 1, m, n, k, Some(self.operand(ops[2])))
            }
            Op::DepthwiseConv2d(c) => {
                let w = &b.ty.shape;
                let geo = geometry(c.stride, c.dilation, c.pad, w[0], w[1]).ok_or_else(bad_shape)?;
                let (m, n, k) = (geo.n * geo.oh * geo.ow, geo.oc, geo.kh * geo.kw);
                (ContractionKind::Depthwise(geo), 1, m, n, k, Some(self.operand(ops[2])))
            }
            Op::TransposeConv2d(c) => {
                let w = &b.ty.shape;
                let geo = geometry(c.stride, [1, 1], c.out_pad, w[1], w[2]).ok_or_else(bad_shape)?;
                let (m, n, k) = (geo.n * geo.oh * geo.ow, geo.oc, geo.kh * geo.kw * geo.ic);
                (ContractionKind::TransposeConv(geo), 1, m, n, k, Some(self.operand(ops[2])))
            }
            _ => unreachable!("called on contractions"),
        };
        let b_constant = is_const(ops[1]);
        let acc = self.accumulator(id, a.ty.dtype);
        let zp_slots = g.op(id).side_operands();
        let zp = (self.side_scalar(id, zp_slots[0]), self.side_scalar(id, zp_slots[1]));
        let a_row_stride = matches!(kind, ContractionKind::MatMul).then_some(k);
        let b_layout = match kind {
            ContractionKind::MatMul | ContractionKind::Depthwise(_) => MatrixLayout::RowMajor,
            ContractionKind::Conv(_) | ContractionKind::TransposeConv(_) => MatrixLayout::ColMajor,
        };
        let mut nodes = vec![id];
        let (out, epi) = match fusion {
            None => (Operand { buffer: self.intermediate(id), ty: out_ty.clone() }, None),
            Some(Fusion { value, views, members }) => {
                let root = *members.last().expect("groups are not empty");
                let (expr, input_nodes) = self.expression(members, Some(*value));
                // Rows decompose into the output's leading dimensions as the group sees them.
                let group_shape = self.ty(root).shape.clone();
                let rows_shape = group_shape[..group_shape.len() - 1].to_vec();
                let inputs = input_nodes[1..]
                    .iter()
                    .map(|&i| {
                        let s = broadcast_strides(&self.ty(i).shape, &group_shape);
                        EpilogueInput {
                            buffer: self.of[&i],
                            dtype: self.ty(i).dtype,
                            row_strides: s[..s.len() - 1].to_vec(),
                            col_stride: *s.last().expect("rank >= 1"),
                        }
                    })
                    .collect();
                nodes.extend(views.iter().chain(members).copied());
                let out_ty = self.ty(root);
                (Operand { buffer: self.intermediate(root), ty: out_ty }, Some(Epilogue { expr, inputs, rows_shape }))
            }
        };
        let result = out_ty.dtype;
        self.push(
            KernelKind::Contraction(Contraction { kind, batch, m, n, k, acc, a, a_row_stride, b, b_layout, b_constant, bias, out, result, epilogue: epi, zp, padding_hazard: false, views: Views::default(), a_parts: Vec::new() }),
            nodes,
        );
        Ok(())
    }

    fn reduction(&mut self, id: NodeId, kind: Option<ReduceKind>, axis: usize) {
        let input = self.operand(self.g.operands(id)[0]);
        let shape = &input.ty.shape;
        let (outer, len, inner) =
            (shape[..axis].iter().product(), shape[axis], shape[axis + 1..].iter().product());
        let output = Operand { buffer: self.intermediate(id), ty: self.ty(id) };
        self.push(KernelKind::Reduction(Reduction { kind, input, output, outer, len, inner }), vec![id]);
    }

    fn copy(&mut self, id: NodeId) {
        let g = self.g;
        let ops = g.operands(id);
        let out_ty = self.ty(id);
        let dst = dense_strides(&out_ty.shape);
        let shape_value = |n: NodeId| -> Vec<i64> {
            match g.op(n) {
                Op::ConstShape(s) => s.clone(),
                _ => Vec::new(),
            }
        };
        let src_ty = self.ty(ops[0]);
        let src_dense = dense_strides(&src_ty.shape);
        let mut fill = None;
        let moves = match g.op(id) {
            Op::Transpose { perms } => {
                let src_strides = perms.iter().map(|&p| src_dense[p]).collect();
                vec![self.make_move(ops[0], 0, src_strides, 0, dst.clone(), out_ty.shape.clone())]
            }
            Op::Slice => {
                let start = shape_value(ops[1]);
                let offset = start.iter().zip(&src_dense).map(|(&s, &st)| s as usize * st).sum();
                vec![self.make_move(ops[0], offset, src_dense.clone(), 0, dst.clone(), out_ty.shape.clone())]
            }
            Op::Tile => {
                // out viewed as [m0, d0, m1, d1, ...]: the multiple index has source stride 0.
                let mut shape = Vec::new();
                let (mut src_s, mut dst_s) = (Vec::new(), Vec::new());
                for (d, &len) in src_ty.shape.iter().enumerate() {
                    let mult = out_ty.shape[d] / len.max(1);
                    shape.extend([mult, len]);
                    src_s.extend([0, src_dense[d]]);
                    dst_s.extend([len * dst[d], dst[d]]);
                }
                vec![self.make_move(ops[0], 0, src_s, 0, dst_s, shape)]
            }
            Op::Pad => {
                let padding = shape_value(ops[1]);
                fill = Some(self.of[&ops[2]]);
                let offset = (0..src_ty.rank()).map(|d| padding[2 * d] as usize * dst[d]).sum();
                vec![self.make_move(ops[0], 0, src_dense.clone(), offset, dst.clone(), src_ty.shape.clone())]
            }
            Op::Concat { axis } => {
                let mut at = 0;
                let mut moves = Vec::new();
                for &p in &ops {
                    let pt = self.ty(p);
                    moves.push(self.make_move(p, 0, dense_strides(&pt.shape), at * dst[*axis], dst.clone(), pt.shape.clone()));
                    at += pt.shape[*axis];
                }
                moves
            }
            Op::Reverse { axis } => {
                // Walks `axis` backwards from its last element.
                let mut src_strides: Vec<isize> = src_dense.iter().map(|&x| x as isize).collect();
                src_strides[*axis] = -src_strides[*axis];
                let offset = (src_ty.shape[*axis].max(1) - 1) * src_dense[*axis];
                let dst = dst.iter().map(|&x| x as isize).collect();
                vec![self.make_signed_move(ops[0], offset, src_strides, 0, dst, out_ty.shape.clone())]
            }
            _ => unreachable!("called on data movement"),
        };
        let output = Operand { buffer: self.intermediate(id), ty: out_ty.clone() };
        self.push(KernelKind::Copy(CopyKernel { output, source: out_ty.dtype, fill, moves }), vec![id]);
    }

    fn make_move(&self, src: NodeId, src_offset: usize, src_strides: Vec<usize>, dst_offset: usize, dst_strides: Vec<usize>, shape: Vec<usize>) -> Move {
        let signed = |v: Vec<usize>| v.into_iter().map(|x| x as isize).collect();
        self.make_signed_move(src, src_offset, signed(src_strides), dst_offset, signed(dst_strides), shape)
    }

    fn make_signed_move(&self, src: NodeId, src_offset: usize, src_strides: Vec<isize>, dst_offset: usize, dst_strides: Vec<isize>, shape: Vec<usize>) -> Move {
        let (shape, s) = collapse(&shape, &[src_strides, dst_strides]);
        let mut s = s.into_iter();
        let (src_strides, dst_strides) = (s.next().expect("two"), s.next().expect("two"));
        Move { src: self.of[&src], src_offset, src_strides, dst_offset, dst_strides, shape }
    }
}

/// Whether convolution `c` has padding and an inf or NaN in its constant weight, or a weight
/// computed at run time (which may hold one). TOSA skips the
/// padding, so such a weight can only give a finite result where it meets real pixels; code
/// that multiplies the padding's zeros instead (a packed GEMM, tensor-core tiles) would turn
/// 0 × inf into NaN, and must not run such a convolution.
pub fn padding_meets_non_finite_weight(program: &Program, c: &Contraction) -> bool {
    let ContractionKind::Conv(g) = &c.kind else { return false };
    // A weight computed at run time may hold an inf or a NaN: that is a hazard too.
    let padded = g.pad.iter().any(|&p| p > 0);
    if !matches!(program.buffers[c.b.buffer.0].kind, BufferKind::Constant(_)) {
        return padded && c.b.ty.dtype.is_float();
    }
    padded && !is_finite_constant(program, c.b.buffer, c.b.ty.dtype)
}

/// True when `buffer` is a constant of `dtype` without inf or NaN (always for integers): a
/// backend may widen its values without the special cases. Read on the stored bits, without
/// decoding: an all-ones exponent is inf or NaN.
pub fn is_finite_constant(program: &Program, buffer: BufferId, dtype: DType) -> bool {
    let BufferKind::Constant(bytes) = &program.buffers[buffer.0].kind else { return false };
    match bytes {
        // A weight's elements, shared by every probe of `check --fix`: scanned once.
        ConstBytes::Elements(of) => f16c_core::memo::number_of(of, f16c_core::memo::what(&format!("finite as {dtype:?}"), &[]), || is_finite_bytes(bytes, dtype) as u8 as f64) != 0.0,
        ConstBytes::Bytes(_) => is_finite_bytes(bytes, dtype),
    }
}

fn is_finite_bytes(bytes: &[u8], dtype: DType) -> bool {
    // Word by word, without an early exit, so that the loop is a vector one.
    fn non_finite<const N: usize>(bytes: &[u8], mask: u64, word: impl Fn([u8; N]) -> u64) -> bool {
        bytes.chunks_exact(N).fold(false, |any, e| any | (word(e.try_into().expect("N bytes")) & mask == mask))
    }
    !match dtype {
        DType::F32 => non_finite(bytes, 0x7f80_0000, |e| u32::from_le_bytes(e) as u64),
        DType::F16 => non_finite(bytes, 0x7c00, |e| u16::from_le_bytes(e) as u64),
        DType::BF16 => non_finite(bytes, 0x7f80, |e| u16::from_le_bytes(e) as u64),
        DType::F64 => non_finite(bytes, 0x7ff0_0000_0000_0000, u64::from_le_bytes),
        _ => false,
    }
}

/// The first element of constant `buffer` of float `dtype`, as f32 (exact for f32, f16 and
/// bf16), when it is finite: an epilogue input broadcast to every row and column (a ReLU6
/// bound) reads only that element, and a backend may emit it as an immediate.
pub fn constant_scalar(program: &Program, buffer: BufferId, dtype: DType) -> Option<f32> {
    let BufferKind::Constant(bytes) = &program.buffers[buffer.0].kind else { return None };
    let half_bits = || bytes.get(..2).map(|b| u16::from_le_bytes([b[0], b[1]]));
    let v = match dtype {
        DType::F32 => f32::from_le_bytes(bytes.get(..4)?.try_into().ok()?),
        DType::F16 => half::f16::from_bits(half_bits()?).to_f32(),
        DType::BF16 => half::bf16::from_bits(half_bits()?).to_f32(),
        _ => return None,
    };
    v.is_finite().then_some(v)
}

/// The constant tensor a buffer holds, decoded (for backends that pre-pack weights).
pub fn constant_tensor(program: &Program, op: &Operand) -> Option<Tensor> {
    match &program.buffers[op.buffer.0].kind {
        BufferKind::Constant(bytes) => {
            let data = f16c_dialect::Data::from_le_bytes(op.ty.dtype, bytes)?;
            Tensor::new(op.ty.shape.clone(), data).ok()
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn collapse_merges_contiguous_dims_and_keeps_broadcasts() {
        // [2,3,4] with a dense input and a [1,3,1]-broadcast one.
        let dense = dense_strides(&[2, 3, 4]);
        let b = broadcast_strides(&[1, 3, 1], &[2, 3, 4]);
        let (shape, s) = collapse(&[2, 3, 4], &[dense.clone(), b]);
        assert_eq!(shape, vec![2, 3, 4]);
        assert_eq!(s[1], vec![0, 1, 0]);
        let (shape, s) = collapse(&[2, 3, 4], &[dense.clone(), dense]);
        assert_eq!((shape, s[0].clone()), (vec![24], vec![1]));
    }
}
