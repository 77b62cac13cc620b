//! The closed set of operations f16c understands, with typed attributes.
//!
//! Operands are not stored in the op: they are the graph's edges, in TOSA's operand order,
//! zero points and shift operands included, so that export gives back what was imported.

use crate::tensor::Tensor;
use crate::types::DType;

/// Convolution attributes (`tosa.conv2d`, `tosa.depthwise_conv2d`).
#[derive(Clone, Debug, PartialEq)]
pub struct ConvAttrs {
    /// Padding `[top, bottom, left, right]`.
    pub pad: [usize; 4],
    /// Stride `[y, x]`.
    pub stride: [usize; 2],
    /// Dilation `[y, x]`.
    pub dilation: [usize; 2],
    /// Accumulator type.
    pub acc: DType,
}

/// `tosa.conv3d` attributes.
#[derive(Clone, Debug, PartialEq)]
pub struct Conv3dAttrs {
    /// Padding `[front, back, top, bottom, left, right]`.
    pub pad: [usize; 6],
    /// Stride `[d, y, x]`.
    pub stride: [usize; 3],
    /// Dilation `[d, y, x]`.
    pub dilation: [usize; 3],
    /// Accumulator type.
    pub acc: DType,
}

/// A region of a control-flow op: a sub-graph whose inputs are the region's block arguments
/// (the first `args`) followed by the values it uses from enclosing graphs (MLIR lets a TOSA
/// region capture them), and whose outputs are what its `tosa.yield` yields.
#[derive(Clone, Debug)]
pub struct Region {
    /// The body.
    pub graph: crate::graph::Graph,
    /// How many of its inputs are block arguments.
    pub args: usize,
}

impl Region {
    /// How many values it captures.
    pub fn captures(&self) -> usize {
        self.graph.inputs().len() - self.args
    }
}

impl PartialEq for Region {
    fn eq(&self, other: &Region) -> bool {
        self.args == other.args && self.graph.same_as(&other.graph)
    }
}

/// Where the operands of a control-flow op are ([`Op::control_layout`]): a `tosa.cond_if`'s
/// condition (operand 0), the inputs (each region's block arguments; a loop's initial values),
/// then the values each region captures, first region first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ControlLayout {
    /// A `tosa.while_loop` (else a `tosa.cond_if`).
    pub looping: bool,
    /// The inputs, as many as the first region's block arguments.
    pub inputs: std::ops::Range<usize>,
    /// What each region captures.
    pub captures: [std::ops::Range<usize>; 2],
}

/// `tosa.transpose_conv2d` attributes.
#[derive(Clone, Debug, PartialEq)]
pub struct TransposeConvAttrs {
    /// Output padding `[top, bottom, left, right]`.
    pub out_pad: [usize; 4],
    /// Stride `[y, x]`.
    pub stride: [usize; 2],
    /// Accumulator type.
    pub acc: DType,
}

/// Pooling attributes (`tosa.max_pool2d`, `tosa.avg_pool2d`).
#[derive(Clone, Debug, PartialEq)]
pub struct PoolAttrs {
    /// Window `[y, x]`.
    pub kernel: [usize; 2],
    /// Stride `[y, x]`.
    pub stride: [usize; 2],
    /// Padding `[top, bottom, left, right]`.
    pub pad: [usize; 4],
    /// Accumulator type (avg_pool2d only; `None` for max_pool2d).
    pub acc: Option<DType>,
}

/// `tosa.rescale` rounding modes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Rounding {
    /// Round half up once.
    Single,
    /// Implementation-defined in TOSA; f16c rounds as [`Rounding::Single`].
    Inexact,
    /// For shifts above 31, a first rounding at bit 30 (TOSA's `double_round`).
    Double,
}

impl Rounding {
    /// The MLIR spelling.
    pub fn name(self) -> &'static str {
        match self {
            Rounding::Single => "SINGLE_ROUND",
            Rounding::Inexact => "INEXACT_ROUND",
            Rounding::Double => "DOUBLE_ROUND",
        }
    }
}

/// `tosa.rescale` attributes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RescaleAttrs {
    /// 32-bit multipliers (else 16-bit).
    pub scale32: bool,
    /// How the scaled value rounds.
    pub rounding: Rounding,
    /// One multiplier and shift per channel (the last dimension), else one for all.
    pub per_channel: bool,
    /// The input's bits are unsigned.
    pub input_unsigned: bool,
    /// The output's bits are unsigned.
    pub output_unsigned: bool,
}

/// One-input elementwise ops.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[allow(missing_docs, reason = "each variant is the TOSA op of its name")]
pub enum UnaryOp {
    /// `tosa.negate` (operands: input, input_zp, output_zp).
    Negate,
    Abs,
    Exp,
    Log,
    Rsqrt,
    Reciprocal,
    Tanh,
    Sigmoid,
    Erf,
    Ceil,
    Floor,
    Sin,
    Cos,
    /// `tosa.bitwise_not`, on integers.
    BitwiseNot,
    /// `tosa.logical_not`, on i1.
    LogicalNot,
    /// `tosa.clz`: leading zero bits of an i32.
    Clz,
}

impl UnaryOp {
    /// True for the ops defined on integers (and not on floats).
    pub fn is_integer_only(self) -> bool {
        matches!(self, UnaryOp::BitwiseNot | UnaryOp::Clz)
    }
    /// True for the ops defined on i1 only.
    pub fn is_logical(self) -> bool {
        self == UnaryOp::LogicalNot
    }
}

/// Two-input elementwise ops with TOSA broadcasting (equal ranks, size-1 dims stretch).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[allow(missing_docs, reason = "each variant is the TOSA op of its name")]
pub enum BinaryOp {
    Add,
    Sub,
    /// `tosa.mul` (operands: input1, input2, shift).
    Mul,
    Maximum,
    Minimum,
    Pow,
    /// Comparisons produce i1.
    Equal,
    Greater,
    GreaterEqual,
    /// `tosa.bitwise_and|or|xor`, on integers.
    BitwiseAnd,
    BitwiseOr,
    BitwiseXor,
    /// `tosa.logical_and|or|xor`, on i1.
    LogicalAnd,
    LogicalOr,
    LogicalXor,
    /// `tosa.logical_left_shift`, on integers: `a << b`, wrapped to the type's width.
    ShiftLeft,
    /// `tosa.logical_right_shift`: `a >> b` with zeros shifted in at the type's width.
    ShiftRightLogical,
    /// `tosa.arithmetic_right_shift`: `a >> b` with the sign shifted in; `round` adds the
    /// last bit shifted out.
    ShiftRightArith {
        /// Round to nearest (ties up) instead of toward −∞.
        round: bool,
    },
    /// `tosa.intdiv`: i32 division truncating toward zero.
    IntDiv,
}

impl BinaryOp {
    /// True for the comparisons, whose result is i1.
    pub fn is_comparison(self) -> bool {
        matches!(self, BinaryOp::Equal | BinaryOp::Greater | BinaryOp::GreaterEqual)
    }
    /// True for the ops defined on integers only (not floats, not i1).
    pub fn is_integer_only(self) -> bool {
        matches!(
            self,
            BinaryOp::BitwiseAnd
                | BinaryOp::BitwiseOr
                | BinaryOp::BitwiseXor
                | BinaryOp::ShiftLeft
                | BinaryOp::ShiftRightLogical
                | BinaryOp::ShiftRightArith { .. }
                | BinaryOp::IntDiv
        )
    }
    /// True for the shifts, whose amount TOSA requires in `0..=31`.
    pub fn is_shift(self) -> bool {
        matches!(self, BinaryOp::ShiftLeft | BinaryOp::ShiftRightLogical | BinaryOp::ShiftRightArith { .. })
    }
    /// True for the ops defined on i1 only.
    pub fn is_logical(self) -> bool {
        matches!(self, BinaryOp::LogicalAnd | BinaryOp::LogicalOr | BinaryOp::LogicalXor)
    }
}

/// Reductions along one axis, keeping it as size 1.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[allow(missing_docs, reason = "each variant is the TOSA reduction of its name")]
pub enum ReduceKind {
    Sum,
    Max,
    Min,
    Prod,
    All,
    Any,
}

/// An operation. Its result type lives on the graph node.
#[derive(Clone, Debug, PartialEq)]
pub enum Op {
    /// The function argument with this index.
    Arg(usize),
    /// A constant tensor (`tosa.const`, tensor-valued `arith.constant`).
    Const(Tensor),
    /// A constant shape (`tosa.const_shape`).
    ConstShape(Vec<i64>),
    /// NHWC input, OHWI weight, bias, input_zp, weight_zp.
    Conv2d(ConvAttrs),
    /// NHWC input, `[KH, KW, C, M]` weight, bias, input_zp, weight_zp.
    DepthwiseConv2d(ConvAttrs),
    /// NHWC input, OHWI weight, bias, input_zp, weight_zp.
    TransposeConv2d(TransposeConvAttrs),
    /// NDHWC input, ODHWI weight, bias, input_zp, weight_zp.
    Conv3d(Conv3dAttrs),
    /// Batched `[N, H, C] x [N, C, W]`, then a_zp, b_zp.
    MatMul,
    /// Elementwise, one input.
    Unary(UnaryOp),
    /// Elementwise, two inputs, broadcasting.
    Binary(BinaryOp),
    /// Clamp to `[min, max]` (floats, or integers held exactly in f64).
    Clamp {
        /// Lower bound.
        min: f64,
        /// Upper bound.
        max: f64,
    },
    /// Reduction along `axis` (kept with size 1).
    Reduce {
        /// Which reduction.
        kind: ReduceKind,
        /// The axis.
        axis: usize,
    },
    /// Index of the first maximum along `axis` (removed from the shape).
    ArgMax {
        /// The axis.
        axis: usize,
    },
    /// Max pooling, NHWC.
    MaxPool2d(PoolAttrs),
    /// Average pooling, NHWC, padding excluded from the divisor; operands input, input_zp, output_zp.
    AvgPool2d(PoolAttrs),
    /// Operands: input, shape.
    Reshape,
    /// Output dim `i` is input dim `perms[i]`.
    Transpose {
        /// The permutation.
        perms: Vec<usize>,
    },
    /// Operands: input, start, size.
    Slice,
    /// Operands: input, padding (`[lo0, hi0, lo1, hi1, ...]`), pad_const.
    Pad,
    /// Concatenation of the operands along `axis`.
    Concat {
        /// The axis.
        axis: usize,
    },
    /// Operands: input, multiples.
    Tile,
    /// Element type conversion.
    Cast,
    /// Operands: i1 predicate, on-true, on-false (broadcasting).
    Select,
    /// Operands: values `[N, K, C]`, indices `[N, W]`.
    Gather,
    /// `tosa.identity`: the input, unchanged.
    Identity,
    /// `tosa.reverse`: the input with `axis` reversed.
    Reverse {
        /// The axis.
        axis: usize,
    },
    /// `tosa.table` on i8: operands input, a 256-entry i8 table read at `x + 128`.
    Table,
    /// `tosa.scatter`: operands values_in `[N, K, C]`, indices `[N, W]`, input `[N, W, C]`;
    /// row `indices[n, w]` of the result is row `w` of the input (the last such `w` when an
    /// index repeats), other rows are values_in's.
    Scatter,
    /// `tosa.rescale`: operands input, multiplier, shift, input_zp, output_zp.
    Rescale(RescaleAttrs),
    /// `tosa.resize` of an NHWC tensor; operands input, scale `[y_n, y_d, x_n, x_d]`, offset
    /// `[y, x]`, border `[y, x]` (shapes).
    Resize {
        /// Bilinear interpolation, else nearest neighbour.
        bilinear: bool,
    },
    /// `tosa.cond_if`: operands the i1 condition, the inputs (each region's arguments), then the
    /// values the then region captures, then those the else region captures. Its value is
    /// [`crate::types::ValueType::Results`].
    CondIf {
        /// Run when the condition is true.
        then: Box<Region>,
        /// Run when it is false.
        otherwise: Box<Region>,
    },
    /// `tosa.while_loop`: operands the initial values (both regions' arguments), then the
    /// values the cond region captures, then those the body captures. The cond region yields
    /// one i1; the body yields the next values; the results are the values when cond is false.
    WhileLoop {
        /// The condition.
        cond: Box<Region>,
        /// The body.
        body: Box<Region>,
    },
    /// Result `i` of a control-flow op (its one operand).
    Result(usize),
}

impl Op {
    /// The MLIR operation name this op imports from and exports to.
    pub fn mlir_name(&self) -> &'static str {
        match self {
            Op::Arg(_) => "func.arg",
            Op::Const(_) => "tosa.const",
            Op::ConstShape(_) => "tosa.const_shape",
            Op::Conv2d(_) => "tosa.conv2d",
            Op::DepthwiseConv2d(_) => "tosa.depthwise_conv2d",
            Op::TransposeConv2d(_) => "tosa.transpose_conv2d",
            Op::Conv3d(_) => "tosa.conv3d",
            Op::MatMul => "tosa.matmul",
            Op::Unary(u) => match u {
                UnaryOp::Negate => "tosa.negate",
                UnaryOp::Abs => "tosa.abs",
                UnaryOp::Exp => "tosa.exp",
                UnaryOp::Log => "tosa.log",
                UnaryOp::Rsqrt => "tosa.rsqrt",
                UnaryOp::Reciprocal => "tosa.reciprocal",
                UnaryOp::Tanh => "tosa.tanh",
                UnaryOp::Sigmoid => "tosa.sigmoid",
                UnaryOp::Erf => "tosa.erf",
                UnaryOp::Ceil => "tosa.ceil",
                UnaryOp::Floor => "tosa.floor",
                UnaryOp::Sin => "tosa.sin",
                UnaryOp::Cos => "tosa.cos",
                UnaryOp::BitwiseNot => "tosa.bitwise_not",
                UnaryOp::LogicalNot => "tosa.logical_not",
                UnaryOp::Clz => "tosa.clz",
            },
            Op::Binary(b) => match b {
                BinaryOp::Add => "tosa.add",
                BinaryOp::Sub => "tosa.sub",
                BinaryOp::Mul => "tosa.mul",
                BinaryOp::Maximum => "tosa.maximum",
                BinaryOp::Minimum => "tosa.minimum",
                BinaryOp::Pow => "tosa.pow",
                BinaryOp::Equal => "tosa.equal",
                BinaryOp::Greater => "tosa.greater",
                BinaryOp::GreaterEqual => "tosa.greater_equal",
                BinaryOp::BitwiseAnd => "tosa.bitwise_and",
                BinaryOp::BitwiseOr => "tosa.bitwise_or",
                BinaryOp::BitwiseXor => "tosa.bitwise_xor",
                BinaryOp::LogicalAnd => "tosa.logical_and",
                BinaryOp::LogicalOr => "tosa.logical_or",
                BinaryOp::LogicalXor => "tosa.logical_xor",
                BinaryOp::ShiftLeft => "tosa.logical_left_shift",
                BinaryOp::ShiftRightLogical => "tosa.logical_right_shift",
                BinaryOp::ShiftRightArith { .. } => "tosa.arithmetic_right_shift",
                BinaryOp::IntDiv => "tosa.intdiv",
            },
            Op::Clamp { .. } => "tosa.clamp",
            Op::Reduce { kind, .. } => match kind {
                ReduceKind::Sum => "tosa.reduce_sum",
                ReduceKind::Max => "tosa.reduce_max",
                ReduceKind::Min => "tosa.reduce_min",
                ReduceKind::Prod => "tosa.reduce_product",
                ReduceKind::All => "tosa.reduce_all",
                ReduceKind::Any => "tosa.reduce_any",
            },
            Op::ArgMax { .. } => "tosa.argmax",
            Op::MaxPool2d(_) => "tosa.max_pool2d",
            Op::AvgPool2d(_) => "tosa.avg_pool2d",
            Op::Reshape => "tosa.reshape",
            Op::Transpose { .. } => "tosa.transpose",
            Op::Slice => "tosa.slice",
            Op::Pad => "tosa.pad",
            Op::Concat { .. } => "tosa.concat",
            Op::Tile => "tosa.tile",
            Op::Cast => "tosa.cast",
            Op::Select => "tosa.select",
            Op::Gather => "tosa.gather",
            Op::Identity => "tosa.identity",
            Op::Reverse { .. } => "tosa.reverse",
            Op::Resize { .. } => "tosa.resize",
            Op::Table => "tosa.table",
            Op::Rescale(_) => "tosa.rescale",
            Op::Scatter => "tosa.scatter",
            Op::CondIf { .. } => "tosa.cond_if",
            Op::WhileLoop { .. } => "tosa.while_loop",
            Op::Result(_) => "f16c.result",
        }
    }

    /// The name without its dialect prefix (`add`, `conv2d`), as policy files and reports use it.
    pub fn short_name(&self) -> &'static str {
        let n = self.mlir_name();
        n.split_once('.').map_or(n, |(_, s)| s)
    }

    /// How many operands the op takes: `(min, max)`; `max` is `None` for variadic ops.
    pub fn arity(&self) -> (usize, Option<usize>) {
        match self {
            Op::Arg(_) | Op::Const(_) | Op::ConstShape(_) => (0, Some(0)),
            Op::Conv2d(_) | Op::DepthwiseConv2d(_) | Op::TransposeConv2d(_) | Op::Conv3d(_) | Op::Rescale(_) => (5, Some(5)),
            Op::MatMul => (4, Some(4)),
            Op::Unary(UnaryOp::Negate) => (3, Some(3)),
            Op::Unary(_) => (1, Some(1)),
            Op::Binary(BinaryOp::Mul) => (3, Some(3)),
            Op::Binary(_) => (2, Some(2)),
            Op::Clamp { .. }
            | Op::Reduce { .. }
            | Op::ArgMax { .. }
            | Op::MaxPool2d(_)
            | Op::Transpose { .. }
            | Op::Cast
            | Op::Identity
            | Op::Reverse { .. } => {
                (1, Some(1))
            }
            Op::AvgPool2d(_) => (3, Some(3)),
            Op::Reshape | Op::Tile | Op::Gather | Op::Table => (2, Some(2)),
            Op::Resize { .. } => (4, Some(4)),
            Op::Slice | Op::Pad | Op::Select | Op::Scatter => (3, Some(3)),
            Op::Concat { .. } | Op::WhileLoop { .. } => (1, None),
            Op::CondIf { .. } => (2, None),
            Op::Result(_) => (1, Some(1)),
        }
    }

    /// Operand positions that must be `!tosa.shape` values.
    pub fn shape_operands(&self) -> &'static [usize] {
        match self {
            Op::Reshape | Op::Tile => &[1],
            Op::Slice => &[1, 2],
            Op::Pad => &[1],
            Op::Resize { .. } => &[1, 2, 3],
            _ => &[],
        }
    }

    /// Operand positions that are zero points or shifts: scalar side inputs that are not data.
    pub fn side_operands(&self) -> &'static [usize] {
        match self {
            Op::Conv2d(_) | Op::DepthwiseConv2d(_) | Op::TransposeConv2d(_) | Op::Conv3d(_) => &[3, 4],
            Op::MatMul => &[2, 3],
            Op::Unary(UnaryOp::Negate) => &[1, 2],
            Op::Binary(BinaryOp::Mul) => &[2],
            Op::AvgPool2d(_) => &[1, 2],
            Op::Rescale(_) => &[3, 4],
            _ => &[],
        }
    }

    /// True for the elementwise ops (one output element from the same element of each data
    /// operand, after broadcasting): what fuses into elementwise kernels and epilogues.
    pub fn is_elementwise(&self) -> bool {
        matches!(self, Op::Unary(_) | Op::Binary(_) | Op::Clamp { .. } | Op::Select | Op::Cast | Op::Rescale(_))
    }

    /// True for constants (tensor or shape).
    pub fn is_constant(&self) -> bool {
        matches!(self, Op::Const(_) | Op::ConstShape(_))
    }

    /// True for `tosa.cond_if` and `tosa.while_loop`.
    pub fn is_control_flow(&self) -> bool {
        matches!(self, Op::CondIf { .. } | Op::WhileLoop { .. })
    }

    /// The regions of a control-flow op, in order (then/else, cond/body); empty for others.
    pub fn regions(&self) -> Vec<&Region> {
        match self {
            Op::CondIf { then, otherwise } => vec![then, otherwise],
            Op::WhileLoop { cond, body } => vec![cond, body],
            _ => Vec::new(),
        }
    }

    /// Where a control-flow op's operands are; `None` for other ops.
    pub fn control_layout(&self) -> Option<ControlLayout> {
        let (first, second, looping) = match self {
            Op::CondIf { then, otherwise } => (then, otherwise, false),
            Op::WhileLoop { cond, body } => (cond, body, true),
            _ => return None,
        };
        let start = usize::from(!looping);
        let inputs = start..start + first.args;
        let first_caps = inputs.end..inputs.end + first.captures();
        let second_caps = first_caps.end..first_caps.end + second.captures();
        Some(ControlLayout { looping, inputs, captures: [first_caps, second_caps] })
    }

    /// True for matmul and the convolutions: the ops that run on tensor cores.
    pub fn is_contraction(&self) -> bool {
        matches!(self, Op::MatMul | Op::Conv2d(_) | Op::DepthwiseConv2d(_) | Op::TransposeConv2d(_) | Op::Conv3d(_))
    }

    /// The `acc_type` attribute of a convolution (matmul keeps its accumulator in the
    /// `f16c.acc_type` node attribute instead).
    pub fn conv_acc(&self) -> Option<DType> {
        match self {
            Op::Conv2d(c) | Op::DepthwiseConv2d(c) => Some(c.acc),
            Op::TransposeConv2d(c) => Some(c.acc),
            Op::Conv3d(c) => Some(c.acc),
            _ => None,
        }
    }

    /// Sets a convolution's `acc_type`; false for other ops.
    pub fn set_conv_acc(&mut self, acc: DType) -> bool {
        match self {
            Op::Conv2d(c) | Op::DepthwiseConv2d(c) => c.acc = acc,
            Op::TransposeConv2d(c) => c.acc = acc,
            Op::Conv3d(c) => c.acc = acc,
            _ => return false,
        }
        true
    }
}

/// Every MLIR op name f16c imports, for `--help` and the README.
pub const SUPPORTED_OPS: &[&str] = &[
    "tosa.const", "tosa.const_shape", "arith.constant", "tosa.conv2d", "tosa.depthwise_conv2d",
    "tosa.transpose_conv2d", "tosa.conv3d", "tosa.matmul", "tosa.add", "tosa.sub", "tosa.mul", "tosa.negate",
    "tosa.abs", "tosa.clamp", "tosa.maximum", "tosa.minimum", "tosa.exp", "tosa.log", "tosa.rsqrt",
    "tosa.reciprocal", "tosa.tanh", "tosa.sigmoid", "tosa.erf", "tosa.ceil", "tosa.floor", "tosa.sin", "tosa.cos", "tosa.pow", "tosa.reduce_sum",
    "tosa.reduce_max", "tosa.reduce_min", "tosa.reduce_product", "tosa.reduce_all", "tosa.reduce_any",
    "tosa.argmax", "tosa.max_pool2d", "tosa.avg_pool2d", "tosa.reshape", "tosa.transpose",
    "tosa.slice", "tosa.pad", "tosa.concat", "tosa.tile", "tosa.cast", "tosa.select", "tosa.equal",
    "tosa.greater", "tosa.greater_equal", "tosa.gather", "tosa.bitwise_and", "tosa.bitwise_or", "tosa.bitwise_xor",
    "tosa.bitwise_not", "tosa.logical_and", "tosa.logical_or", "tosa.logical_xor", "tosa.logical_not",
    "tosa.logical_left_shift", "tosa.logical_right_shift", "tosa.arithmetic_right_shift", "tosa.clz", "tosa.intdiv",
    "tosa.identity", "tosa.reverse", "tosa.resize", "tosa.table", "tosa.rescale", "tosa.scatter",
    "tosa.cond_if", "tosa.while_loop",
];

/// The error for an op f16c does not import, with the reason where it is a decision rather
/// than work not done yet (README "Supported ops").
pub fn unsupported_message(name: &str) -> String {
    let why = match name {
        "tosa.fft2d" | "tosa.rfft2d" => {
            " (FFTs are outside f16c's scope: their complex results come as pairs of real tensors and no inference exporter f16c targets produces them)"
        }
        "tosa.variable" | "tosa.variable_read" | "tosa.variable_write" => {
            " (variables are state kept between calls; f16c compiles stateless inference functions)"
        }
        "tosa.custom" => " (a custom op names an implementation-defined operator that f16c has no definition of)",
        "tosa.cast_to_block_scaled" | "tosa.cast_from_block_scaled" | "tosa.matmul_t_block_scaled" => {
            " (block-scaled MX formats are an extension beyond TOSA 1.0, and f16c has no fp8/fp6/fp4 types)"
        }
        n if n.starts_with("tosa.") && (n.ends_with("_shape") && n != "tosa.const_shape" || n == "tosa.dim") => {
            " (shape arithmetic serves dynamic shapes; f16c compiles static shapes, written as tosa.const_shape)"
        }
        _ => "",
    };
    format!("'{name}' is not supported by f16c{why}")
}
