//! What the Cranelift backend supports and relies on, as data: which element types each kernel
//! family handles, the vector width and the GEMM tile sizes. [`legal`] reads the tables; the
//! emission code assumes what it accepted.

use crate::backend::Unsupported;
use crate::lower::{EwKind, Expr, Kernel, KernelKind, RowStage};
use f16c_dialect::{DType, UnaryOp};

/// f32 lanes in one vector register (Cranelift's SIMD is 128-bit).
pub const LANES: usize = 4;

/// GEMM micro-kernel rows: 4 rows × 2 vectors = 8 accumulators, 2 B vectors, an A vector and
/// its copy. (6 rows fit the 16 xmm registers on paper, but Cranelift's register allocator
/// spills them once the `k` loop is unrolled.) The runtime's native loop takes the same tiles
/// (`f16c_core::abi::tiles`).
pub const MR: usize = f16c_core::abi::tiles::TILE_ROWS;
/// GEMM micro-kernel columns (two vectors).
pub const NR: usize = f16c_core::abi::tiles::TILE_COLS;
/// Rows of A packed at a time by one work item (a multiple of [`MR`]): 16 micro-panels, whose
/// packed chunk (`MC × KC × 4` bytes, 64 KiB) stays in L2.
pub const MC: usize = 64;
/// Length of the reduction chunks the GEMM works through one at a time: a packed A micro-panel
/// chunk (`MR × KC × 4` = 4 KiB) and a B one (`KC × NR × 4` = 8 KiB) share L1.
pub const KC: usize = 256;
/// Unrolling of the micro-kernel's `k` loop (a power of two).
pub const KU: usize = 4;

/// Element types the GEMM and the direct convolutions read (f16/bf16 are widened to f32 as
/// they are packed). Integer (i8, i16) contractions take a scalar integer path (`gemm.rs`,
/// `integer`); f64 contractions are not implemented.
pub const CONTRACTION_TYPES: &[DType] = &[DType::F32, DType::F16, DType::BF16];
/// Element types pooling reads.
pub const POOL_TYPES: &[DType] = &[DType::F32, DType::F16, DType::BF16, DType::F64, DType::I8, DType::I16, DType::I32];
/// Unary ops defined on integers (the others are float-only: exp, log, tanh, ...).
pub const INTEGER_UNARY: &[UnaryOp] = &[UnaryOp::Negate, UnaryOp::Abs, UnaryOp::BitwiseNot, UnaryOp::Clz];

/// The compute domain families the emitter distinguishes.
fn is_float(d: DType) -> bool {
    matches!(d, DType::F32 | DType::F16 | DType::BF16 | DType::F64)
}

/// Can every op of a fused elementwise expression be emitted?
fn expr_legal(expr: &Expr) -> Result<(), Unsupported> {
    for op in &expr.ops {
        check_ew(&op.kind, expr.arg_types(op).first().copied().unwrap_or(op.dtype))?;
    }
    Ok(())
}

/// One elementwise op of kind `kind` whose (data) arguments have type `input`.
fn check_ew(kind: &EwKind, input: DType) -> Result<(), Unsupported> {
    let unsupported = |m: String| Err(Unsupported(m));
    match kind {
        EwKind::Unary(u) if input == DType::I1 && !u.is_logical() => unsupported(format!("{} on i1", format!("{u:?}").to_lowercase())),
        EwKind::Unary(u) if !is_float(input) && !INTEGER_UNARY.contains(u) && !u.is_logical() => {
            unsupported(format!("{} on {input} (defined on floats only)", format!("{u:?}").to_lowercase()))
        }
        EwKind::Binary(b) if input == DType::I1 && !b.is_comparison() && !b.is_logical() => unsupported(format!("{} on i1", format!("{b:?}").to_lowercase())),
        EwKind::Binary(f16c_dialect::BinaryOp::Pow) if !is_float(input) => unsupported(format!("pow on {input}")),
        _ => Ok(()),
    }
}

/// Whether the Cranelift backend can compile `kernel`.
pub fn legal(kernel: &Kernel) -> Result<(), Unsupported> {
    let unsupported = |m: String| Err(Unsupported(m));
    match &kernel.kind {
        // The packed im2col multiplies the padding's zeros (0 × inf = NaN where TOSA skips it).
        KernelKind::Contraction(c) if c.padding_hazard => {
            unsupported("a convolution whose padding meets an inf or NaN weight (this backend multiplies the padding's zeros; --backend=llvm skips them as TOSA does)".into())
        }
        // (Its lowering folds no copy into a matmul: `LowerOptions::contraction_views`.)
        KernelKind::Contraction(c) if c.views.any() => unsupported("a matmul reading or writing an operand through a view (the LLVM CPU backends do)".into()),
        // (Nor a concatenation into a convolution: `LowerOptions::concatenated_inputs`.)
        KernelKind::Contraction(c) if !c.a_parts.is_empty() => unsupported("a convolution padding a concatenation of its input's parts (the LLVM CPU backends do)".into()),
        KernelKind::Contraction(c) if c.a.ty.dtype.is_int() && c.b.ty.dtype.is_int() => Ok(()),
        KernelKind::Contraction(c) => {
            for t in [c.a.ty.dtype, c.b.ty.dtype] {
                if !CONTRACTION_TYPES.contains(&t) {
                    return unsupported(format!("{t} contractions (the JIT's contractions read f32, f16 and bf16)"));
                }
            }
            c.epilogue.as_ref().map_or(Ok(()), |e| expr_legal(&e.expr))
        }
        KernelKind::Elementwise(e) => expr_legal(&e.expr),
        KernelKind::Reduction(r) => match r.kind {
            Some(_) if is_float(r.input.ty.dtype) != is_float(r.output.ty.dtype) => {
                unsupported(format!("a reduction from {} to {}", r.input.ty.dtype, r.output.ty.dtype))
            }
            _ => Ok(()),
        },
        KernelKind::Pool(p) if !POOL_TYPES.contains(&p.input.ty.dtype) => unsupported(format!("{} pooling", p.input.ty.dtype)),
        KernelKind::Pool(p) if p.input.ty.rank() != 4 => unsupported("pooling of a tensor that is not NHWC".into()),
        KernelKind::Gather(g) if g.values.ty.rank() != 3 || g.indices.ty.rank() != 2 => unsupported("gather takes [N,K,C] values and [N,W] indices".into()),
        KernelKind::Rows(r) => {
            for stage in &r.stages {
                if let RowStage::Map { op, .. } = stage {
                    let n_in = r.inputs.len();
                    let dtype = |v: usize| if v < n_in { r.inputs[v].dtype } else { r.dtypes[v - n_in] };
                    let first = if matches!(op.kind, EwKind::Select) { op.args.get(1) } else { op.args.first() };
                    check_ew(&op.kind, first.map_or(op.dtype, |&a| dtype(a)))?;
                }
            }
            Ok(())
        }
        KernelKind::Pool(_) | KernelKind::Copy(_) | KernelKind::Gather(_) => Ok(()),
    }
}
