//! What the Cranelift backend's generated code relies on, as data: vector width, GEMM tile
//! sizes, and the runtime functions it calls.

use cranelift_codegen::ir::types::{F32, F64};
use cranelift_codegen::ir::{AbiParam, Signature, Type};
use cranelift_codegen::isa::CallConv;

/// f32 lanes in one vector register (Cranelift's SIMD is 128-bit).
pub const LANES: usize = 4;

/// GEMM micro-kernel rows: 4 rows × 2 vectors = 8 accumulators, 2 B vectors, an A vector and
/// its copy. (6 rows fit the 16 xmm registers on paper, but Cranelift's register allocator
/// spills them once the `k` loop is unrolled.)
pub const MR: usize = 4;
/// GEMM micro-kernel columns (two vectors).
pub const NR: usize = 8;
/// Rows of A packed at a time by one work item (a multiple of [`MR`]): 16 micro-panels, whose
/// packed chunk (`MC × KC × AW` bytes, 256 KiB) stays in L2.
pub const MC: usize = 64;
/// Length of the reduction chunks the GEMM works through one at a time: a packed A micro-panel
/// chunk (`MR × KC × AW` = 16 KiB) and a B one (`KC × NR × 4` = 8 KiB) share L1.
pub const KC: usize = 256;
/// Bytes per packed A value: each is stored broadcast to a whole f32x4, so that the
/// micro-kernel reads it with one plain vector load (a load port, no shuffle) and shares it
/// between the row's two FMAs.
pub const AW: usize = 16;
/// Unrolling of the micro-kernel's `k` loop (a power of two).
pub const KU: usize = 4;

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
