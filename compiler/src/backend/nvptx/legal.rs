//! What the NVPTX backend compiles, as data, read before anything is emitted.
//!
//! - [`PTX_ISA`]: the PTX ISA version each `sm` target is compiled with (the oldest that has
//!   everything f16c emits for it: WMMA `.aligned` forms from 6.3, bf16 WMMA from 7.0).
//! - The tensor-core table is the target's [`crate::target::TargetInfo::mma`] rows (WMMA
//!   m16n16k16: f16 × f16 → f32 on every target, bf16 × bf16 → f32 from sm_80);
//!   [`tensor_core_shape`] picks the row a contraction runs on, or none (SIMT).
//! - [`UNSUPPORTED`]: what the backend rejects, with why.

use crate::backend::Unsupported;
use crate::lower::{ContractionKind, EwKind, Expr, Kernel, KernelKind, RowStage};
use crate::target::{MmaShape, TargetInfo};
use f16c_dialect::{BinaryOp, DType, UnaryOp};

/// `(sm, PTX ISA feature)`: the ISA version each target is compiled with.
pub const PTX_ISA: &[(u32, &str)] = &[(70, "+ptx63"), (75, "+ptx63"), (80, "+ptx70"), (86, "+ptx71"), (89, "+ptx78"), (90, "+ptx78")];

/// The kernels the backend cannot compile, and why.
pub const UNSUPPORTED: &[(&str, &str)] = &[
    ("f64 exp, log, tanh, erf, pow, sigmoid", "the GPU math functions are f32 approximations; keep such ops in f32"),
];

/// The PTX ISA feature of `sm`.
pub fn ptx_isa(sm: u32) -> &'static str {
    PTX_ISA.iter().find(|(s, _)| *s == sm).map_or("+ptx78", |(_, f)| f)
}

/// The tensor-core shape a contraction runs on: a matmul or conv2d whose two inputs are the
/// shape's input type, accumulated in f32 (an f16 accumulator would round differently from the
/// reference's; an fp16 contraction allowed to accumulate in f16, `--accumulate=f16`, still
/// gets f32 here: more accurate at the same speed). Others run as SIMT code.
pub fn tensor_core_shape(info: &TargetInfo, kernel: &Kernel) -> Option<&'static MmaShape> {
    let KernelKind::Contraction(c) = &kernel.kind else { return None };
    if !matches!(c.kind, ContractionKind::MatMul | ContractionKind::Conv(_)) || !matches!(c.acc, DType::F32 | DType::F16) {
        return None;
    }
    // The grid's y and z dimensions hold at most 65535 blocks.
    if c.m.div_ceil(super::wmma::Tile::of(c).bm) > 65_535 || c.batch > 65_535 {
        return None;
    }
    let (a, b) = (c.a.ty.dtype, c.b.ty.dtype);
    info.mma.iter().find(|s| s.input == a && s.input == b && s.acc.contains(&DType::F32))
}

fn math_in_f64(expr: &Expr) -> bool {
    expr.ops.iter().any(|op| {
        let d = expr.arg_types(op).first().copied().unwrap_or(op.dtype);
        d == DType::F64 && is_math(op.kind)
    })
}

fn is_math(kind: EwKind) -> bool {
    matches!(
        kind,
        EwKind::Unary(UnaryOp::Exp | UnaryOp::Log | UnaryOp::Tanh | UnaryOp::Erf | UnaryOp::Sigmoid | UnaryOp::Sin | UnaryOp::Cos) | EwKind::Binary(BinaryOp::Pow)
    )
}

/// Can this kernel be compiled for NVPTX?
pub fn legal(kernel: &Kernel) -> Result<(), Unsupported> {
    let f64_math = || Err(Unsupported(format!("{} (f64 math: {})", UNSUPPORTED[0].0, UNSUPPORTED[0].1)));
    match &kernel.kind {
        KernelKind::Elementwise(e) if math_in_f64(&e.expr) => f64_math(),
        KernelKind::Contraction(c) if c.epilogue.as_ref().is_some_and(|e| math_in_f64(&e.expr)) => f64_math(),
        // (Its lowering folds no copy into a matmul: `LowerOptions::contraction_views`.)
        KernelKind::Contraction(c) if c.views.any() => Err(Unsupported("a matmul reading or writing an operand through a view (the LLVM CPU backends do)".into())),
        // (Nor a concatenation into a convolution: `LowerOptions::concatenated_inputs`.)
        KernelKind::Contraction(c) if !c.a_parts.is_empty() => Err(Unsupported("a convolution padding a concatenation of its input's parts (the LLVM CPU backends do)".into())),
        KernelKind::Reduction(r) if r.kind.is_some() && r.input.ty.dtype.is_float() != r.output.ty.dtype.is_float() => {
            Err(Unsupported(format!("a reduction from {} to {}", r.input.ty.dtype, r.output.ty.dtype)))
        }
        KernelKind::Rows(r) => {
            let n_in = r.inputs.len();
            let f64_math_stage = r.stages.iter().any(|s| match s {
                RowStage::Map { op, .. } => is_math(op.kind) && op.args.first().is_some_and(|&a| (if a < n_in { r.inputs[a].dtype } else { r.dtypes[a - n_in] }) == DType::F64),
                RowStage::Reduce { .. } => false,
            });
            if f64_math_stage {
                f64_math()
            } else {
                Ok(())
            }
        }
        _ => Ok(()),
    }
}
