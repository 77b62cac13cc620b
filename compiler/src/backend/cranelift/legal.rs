//! What the Cranelift backend's generated code relies on, as data: vector width, GEMM tile
//! sizes, and the runtime functions it calls.

use cranelift_codegen::ir::types::{F32, F64};
use cranelift_codegen::ir::{AbiParam, Signature, Type};
use cranelift_codegen::isa::CallConv;

/// f32 lanes in one vector register (Cranelift's SIMD is 128-bit).
pub const LANES: usize = 4;

/// GEMM micro-kernel rows: 6 rows × 2 vectors = 12 accumulators, plus 2 B vectors and one
/// broadcast A value: 15 of x86-64's 16 xmm registers.
pub const MR: usize = 4;
/// GEMM micro-kernel columns (two vectors).
pub const NR: usize = 8;
/// Rows of A packed at a time by one work item (a multiple of [`MR`]): 16 micro-panels, whose
/// packed copy (`MC × K × 4` bytes) stays in L2 for K up to a few thousand.
pub const MC: usize = 64;

/// Functions the generated code calls through the runtime's table (`rt[index]`), so that
/// transcendental results are bit-identical to the reference interpreter's.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[allow(missing_docs)]
pub enum Libcall {
    ExpF32,
    LogF32,
    TanhF32,
    ErfF32,
    PowF32,
    ExpF64,
    LogF64,
    TanhF64,
    ErfF64,
    PowF64,
    /// f64 to f16, rounded once, returned widened to f32.
    F64ToF16,
    /// f64 to bf16, rounded once, returned widened to f32.
    F64ToBf16,
}

impl Libcall {
    /// Every libcall, in table order.
    pub const ALL: [Libcall; 12] = [
        Libcall::ExpF32,
        Libcall::LogF32,
        Libcall::TanhF32,
        Libcall::ErfF32,
        Libcall::PowF32,
        Libcall::ExpF64,
        Libcall::LogF64,
        Libcall::TanhF64,
        Libcall::ErfF64,
        Libcall::PowF64,
        Libcall::F64ToF16,
        Libcall::F64ToBf16,
    ];

    fn types(self) -> (Vec<Type>, Type) {
        use Libcall::*;
        match self {
            ExpF32 | LogF32 | TanhF32 | ErfF32 => (vec![F32], F32),
            PowF32 => (vec![F32, F32], F32),
            ExpF64 | LogF64 | TanhF64 | ErfF64 => (vec![F64], F64),
            PowF64 => (vec![F64, F64], F64),
            F64ToF16 | F64ToBf16 => (vec![F64], F32),
        }
    }

    /// The C signature of the function.
    pub fn signature(self) -> Signature {
        let (params, ret) = self.types();
        let mut s = Signature::new(CallConv::SystemV);
        s.params.extend(params.into_iter().map(AbiParam::new));
        s.returns.push(AbiParam::new(ret));
        s
    }
}
