//! The passes, one per file. Each file opens with what the pass does and exports its registry
//! entry as `INFO`.

pub mod assign_precision;
pub mod canonicalize;
pub mod fold_batch_norm;
pub mod insert_casts;

use f16c_dialect::{DType, Graph, NodeId, Op};

/// Attribute names f16c reads and writes on ops.
pub mod attrs {
    /// User override: `f16c.precision = "f32" | "f16" | "bf16"`.
    pub const PRECISION: &str = "f16c.precision";
    /// Decision of `assign-precision`, consumed by `insert-casts`.
    pub const ASSIGNED: &str = "f16c.assigned";
    /// The rule that decided an op's precision (kept for the report).
    pub const RULE: &str = "f16c.rule";
    /// Calibration: the largest magnitude the op's result took on calibration inputs.
    pub const MAX_ABS: &str = "f16c.max_abs";
    /// Accumulator type of `tosa.matmul` (convolutions have TOSA's own `acc_type`).
    pub const ACC_TYPE: &str = "f16c.acc_type";
}

/// Operand positions that hold float tensors of the op's compute type: every float tensor
/// operand except shape operands, for every op but casts (whose input may be any type). In a
/// verified graph they all share one element type.
pub fn typed_operands(g: &Graph, id: NodeId) -> Vec<usize> {
    let op = g.op(id);
    if matches!(op, Op::Cast | Op::Arg(_) | Op::Const(_) | Op::ConstShape(_)) {
        return Vec::new();
    }
    g.operands(id)
        .iter()
        .enumerate()
        .filter(|(p, o)| !op.shape_operands().contains(p) && g.tensor_ty(**o).is_some_and(|t| t.dtype.is_float()))
        .map(|(p, _)| p)
        .collect()
}

/// [`typed_operands`] without zero points and shifts: the operands that carry data.
pub fn data_operands(g: &Graph, id: NodeId) -> Vec<usize> {
    let side = g.op(id).side_operands();
    typed_operands(g, id).into_iter().filter(|p| !side.contains(p)).collect()
}

/// The float type an op computes in: its result type, or for ops with a non-float result
/// (comparisons, argmax) the type of its float operands. `None` if it computes in no float type.
pub fn compute_dtype(g: &Graph, id: NodeId) -> Option<DType> {
    let t = g.tensor_ty(id)?;
    if t.dtype.is_float() {
        return Some(t.dtype);
    }
    let ops = g.operands(id);
    typed_operands(g, id).first().and_then(|&p| g.tensor_ty(ops[p])).map(|t| t.dtype)
}

/// True for a conversion that loses nothing (every value of `from` is exact in `to`).
pub fn is_exact_conversion(from: DType, to: DType) -> bool {
    from == to
        || matches!((from, to), (DType::F16 | DType::BF16, DType::F32 | DType::F64) | (DType::F32, DType::F64))
}

/// The widest of two compute types, as PyTorch promotes: equal types stay, f16 with bf16 gives
/// f32, anything with f32 gives f32.
pub fn widest(a: DType, b: DType) -> DType {
    if a == b {
        a
    } else if a == DType::F64 || b == DType::F64 {
        DType::F64
    } else {
        DType::F32
    }
}
