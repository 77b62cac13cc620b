//! Depthwise convolution on a CPU, vectorised across channels. NHWC keeps a pixel's channels
//! contiguous in the input, the weight and the output, so a work item is one output pixel and
//! one block of `lanes` channels: for each tap in the reference's order (`ky`, then `kx`) it
//! loads a vector of input channels and one of weights, multiplies and adds into an f32 vector
//! (multiply then add, as the reference does: each output is the reference's sequence, bit for
//! bit), then [`Ir::contraction_finish`] per channel. When the channels do not fill the last
//! block, that block starts `lanes` before the end (overlapping the one before it) and stores
//! only the channels no other block stores. With `--accumulate=f16` on a machine with fp16
//! arithmetic, the vectors are eight fp16 lanes with FMA (the fast mode). (The shared per-output code computes one channel
//! at a time with scalar loads under the taps' bounds checks, which nothing vectorises.)

use crate::backend::llvm::{Built, Ir, Var};
use crate::lower::{Contraction, ContractionKind};
use f16c_dialect::DType;
use inkwell::values::IntValue;
use inkwell::IntPredicate;

/// Whether `c` runs here with vectors of `lanes` f32: a depthwise convolution with one output
/// channel per input channel, at least `lanes` of them, and float data.
pub fn applies(c: &Contraction, lanes: usize) -> bool {
    let float = |d: DType| matches!(d, DType::F32 | DType::F16 | DType::BF16);
    match &c.kind {
        ContractionKind::Depthwise(g) => {
            g.oc == g.ic && g.oc >= lanes && float(c.a.ty.dtype) && float(c.b.ty.dtype) && matches!(c.acc, DType::F32 | DType::F16)
        }
        _ => false,
    }
}

/// Work items: output pixels × channel blocks.
pub fn work(c: &Contraction, lanes: usize) -> usize {
    c.m * c.n.div_ceil(lanes)
}

/// Whether `c` accumulates in fp16 on `machine` (`--accumulate=f16`: eight lanes of fp16 FMA).
pub fn accumulates_f16(machine: &super::CpuMachine, c: &Contraction) -> bool {
    machine.fp16_fma && c.acc == DType::F16 && c.a.ty.dtype == DType::F16 && c.b.ty.dtype == DType::F16
}

/// The vector width `c` runs with on `machine`: f32 lanes, or eight fp16 lanes when it
/// accumulates in fp16.
pub fn lanes(machine: &super::CpuMachine, c: &Contraction) -> usize {
    if accumulates_f16(machine, c) {
        8
    } else {
        machine.gemm.lanes
    }
}

/// Item `i` of `c`: pixel `i / blocks`, channel block `i % blocks`; in fp16 vectors with FMA
/// when `f16_acc`.
pub fn item<'ctx>(ir: &mut Ir<'ctx>, c: &Contraction, lanes: usize, f16_acc: bool, i: IntValue<'ctx>) -> Result<(), String> {
    let ContractionKind::Depthwise(g) = &c.kind else { return Err("not a depthwise convolution".into()) };
    let (da, db) = (c.a.ty.dtype, c.b.ty.dtype);
    let (a, b) = (ir.buffer(c.a.buffer.0), ir.buffer(c.b.buffer.0));
    let blocks = g.oc.div_ceil(lanes);
    let (p, blk) = (ir.divi(i, blocks), ir.remi(i, blocks));
    // The block's first channel, pulled back so that the last block ends at the last channel.
    let c0 = ir.smin(ir.muli(blk, lanes), ir.i64((g.oc - lanes) as i64));
    let f32v = ir.cx.f32_type().vec_type(lanes as u32);
    let h8 = ir.cx.f16_type().vec_type(8);
    let acc: Var<'ctx> = ir.var(if f16_acc { h8.const_zero().into() } else { f32v.const_zero().into() });
    let vector = |ir: &mut Ir<'ctx>, d: DType, base, at| {
        if f16_acc {
            ir.load_vector(h8, base, at, 2)
        } else {
            ir.load_lanes(d, base, at, lanes as u32)
        }
    };
    ir.depthwise_taps(g, p, |ir, tap, pix| {
        let xv = vector(ir, da, a, ir.add(ir.muli(pix, g.ic), c0));
        let wv = vector(ir, db, b, ir.addi(c0, (tap * g.oc) as i64));
        let sum = if f16_acc {
            ir.intrinsic("llvm.fma.v8f16", h8.into(), &[xv.into(), wv.into(), ir.get(acc)])
        } else {
            let prod = ir.b.build_float_mul(xv, wv, "").built();
            ir.b.build_float_add(ir.get(acc).into_vector_value(), prod, "").built().into()
        };
        ir.set(acc, sum);
    });
    // The sums in f32 (which holds every fp16 value).
    let sums = |ir: &mut Ir<'ctx>| {
        let v = ir.get(acc).into_vector_value();
        ir.f32_lanes(v)
    };
    // Channels below `first` belong to the block before (only the last block overlaps it).
    let first = ir.muli(blk, lanes);
    let channels = |ir: &mut Ir<'ctx>| -> Result<(), String> {
        let mut failure = Ok(());
        for j in 0..lanes {
            let ch = ir.addi(c0, j as i64);
            let mine = ir.icmp(IntPredicate::SGE, ch, first);
            ir.if_then(mine, |ir| {
                let v = sums(ir);
                let x = ir.b.build_extract_element(v, ir.i64(j as i64), "").built();
                if let Err(e) = ir.contraction_finish(c, x, p, ch) {
                    failure = Err(e);
                }
            });
        }
        failure
    };
    // A block of its own channels finishes as a vector (every block, when the channels fill
    // whole blocks).
    let in_lanes = |ir: &mut Ir<'ctx>| {
        let v = sums(ir);
        ir.contraction_finish_lanes(c, v, p, c0)
    };
    let own = (!g.oc.is_multiple_of(lanes)).then(|| ir.icmp(IntPredicate::EQ, c0, first));
    ir.finish_in_lanes_inside(c, own, in_lanes, channels)
}
