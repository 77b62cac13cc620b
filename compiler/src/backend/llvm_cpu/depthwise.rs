//! Depthwise convolution on a CPU, vectorised across channels. NHWC keeps a pixel's channels
//! contiguous in the input, the weight and the output, so a work item is a run of [`pixels`]
//! output pixels of a row and one block of `lanes` channels: for each tap in the reference's
//! order (`ky`, then `kx`) it loads the tap's vector of weights once and, per pixel, a vector
//! of input channels, multiplies and adds into that pixel's f32 vector (multiply then add, as
//! the reference does: each output is the reference's sequence, bit for bit; the pixels' sums
//! are independent chains), then finishes each pixel's vector ([`Ir::contraction_finish_lanes`],
//! or [`Ir::contraction_finish`] per channel). When the channels do not fill the last
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

/// At most this many output pixels of a row share a work item: their sums are independent
/// chains (one add after another along the taps would wait on each add's latency) and each
/// tap's weight vector is loaded once for all of them.
pub const PIXELS: usize = 8;

/// The pixels of a work item: the largest count up to [`PIXELS`] that divides the output
/// width (runs never cross a row).
pub fn pixels(c: &Contraction) -> usize {
    match &c.kind {
        ContractionKind::Depthwise(g) => (1..=PIXELS.min(g.ow)).rev().find(|d| g.ow.is_multiple_of(*d)).unwrap_or(1),
        _ => 1,
    }
}

/// Work items: runs of [`pixels`] output pixels × channel blocks.
pub fn work(c: &Contraction, lanes: usize) -> usize {
    c.m / pixels(c) * c.n.div_ceil(lanes)
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

/// Item `i` of `c`: the run of [`pixels`] output pixels `i / blocks`, channel block
/// `i % blocks`; in fp16 vectors with FMA when `f16_acc`. A run whose taps all fall inside the
/// image along the row (every run but those at the left and right edges) loads without
/// per-pixel bounds checks; the others skip the padding per pixel, as the reference does.
pub fn item<'ctx>(ir: &mut Ir<'ctx>, c: &Contraction, lanes: usize, f16_acc: bool, i: IntValue<'ctx>) -> Result<(), String> {
    let ContractionKind::Depthwise(g) = &c.kind else { return Err("not a depthwise convolution".into()) };
    let (da, db) = (c.a.ty.dtype, c.b.ty.dtype);
    let (a, b) = (ir.buffer(c.a.buffer.0), ir.buffer(c.b.buffer.0));
    let (px, blocks) = (pixels(c), g.oc.div_ceil(lanes));
    let (run, blk) = (ir.divi(i, blocks), ir.remi(i, blocks));
    let p0 = ir.muli(run, px);
    let (ox0, oy, bi) = (ir.remi(p0, g.ow), ir.remi(ir.divi(p0, g.ow), g.oh), ir.divi(p0, g.ow * g.oh));
    // The block's first channel, pulled back so that the last block ends at the last channel.
    let c0 = ir.smin(ir.muli(blk, lanes), ir.i64((g.oc - lanes) as i64));
    let f32v = ir.cx.f32_type().vec_type(lanes as u32);
    let h8 = ir.cx.f16_type().vec_type(8);
    let zero = if f16_acc { h8.const_zero().into() } else { f32v.const_zero().into() };
    let accs: Vec<Var<'ctx>> = (0..px).map(|_| ir.var(zero)).collect();
    let vector = |ir: &mut Ir<'ctx>, d: DType, base, at| {
        if f16_acc {
            ir.load_vector(h8, base, at, 2)
        } else {
            ir.load_lanes(d, base, at, lanes as u32)
        }
    };
    let taps = |ir: &mut Ir<'ctx>, checked: bool| {
        for ky in 0..g.kh {
            let y = ir.addi(ir.muli(oy, g.stride[0]), (ky * g.dilation[0]) as i64 - g.pad[0] as i64);
            let inside_y = ir.in_range(y, g.ih);
            ir.if_then(inside_y, |ir| {
                let row = ir.muli(ir.add(ir.muli(bi, g.ih), y), g.iw);
                for kx in 0..g.kw {
                    let tap = ky * g.kw + kx;
                    let wv = vector(ir, db, b, ir.addi(c0, (tap * g.oc) as i64));
                    for (j, &acc) in accs.iter().enumerate() {
                        let x = ir.addi(ir.muli(ox0, g.stride[1]), (j * g.stride[1] + kx * g.dilation[1]) as i64 - g.pad[2] as i64);
                        let add = |ir: &mut Ir<'ctx>| {
                            let xv = vector(ir, da, a, ir.add(ir.muli(ir.add(row, x), g.ic), c0));
                            let sum = if f16_acc {
                                ir.intrinsic("llvm.fma.v8f16", h8.into(), &[xv.into(), wv.into(), ir.get(acc)])
                            } else {
                                let prod = ir.b.build_float_mul(xv, wv, "").built();
                                ir.b.build_float_add(ir.get(acc).into_vector_value(), prod, "").built().into()
                            };
                            ir.set(acc, sum);
                        };
                        if checked {
                            let inside_x = ir.in_range(x, g.iw);
                            ir.if_then(inside_x, add);
                        } else {
                            add(ir);
                        }
                    }
                }
            });
        }
    };
    // Every tap column of the run inside the row: its first pixel's leftmost tap at or right
    // of column 0, its last pixel's rightmost one left of `iw`.
    let first_x = ir.addi(ir.muli(ox0, g.stride[1]), -(g.pad[2] as i64));
    let last_x = ir.addi(first_x, ((px - 1) * g.stride[1] + (g.kw - 1) * g.dilation[1]) as i64);
    let interior = ir.and(ir.icmp(IntPredicate::SGE, first_x, ir.i64(0)), ir.icmp(IntPredicate::SLT, last_x, ir.i64(g.iw as i64)));
    ir.if_else(interior, |ir| taps(ir, false), |ir| taps(ir, true));
    // Channels below `first` belong to the block before (only the last block overlaps it).
    let first = ir.muli(blk, lanes);
    let own = (!g.oc.is_multiple_of(lanes)).then(|| ir.icmp(IntPredicate::EQ, c0, first));
    for (j, &acc) in accs.iter().enumerate() {
        let p = ir.addi(p0, j as i64);
        // The sums in f32 (which holds every fp16 value).
        let sums = |ir: &mut Ir<'ctx>| {
            let v = ir.get(acc).into_vector_value();
            ir.f32_lanes(v)
        };
        let channels = |ir: &mut Ir<'ctx>| -> Result<(), String> {
            let mut failure = Ok(());
            for l in 0..lanes {
                let ch = ir.addi(c0, l as i64);
                let mine = ir.icmp(IntPredicate::SGE, ch, first);
                ir.if_then(mine, |ir| {
                    let v = sums(ir);
                    let x = ir.b.build_extract_element(v, ir.i64(l as i64), "").built();
                    if let Err(e) = ir.contraction_finish(c, x, p, ch) {
                        failure = Err(e);
                    }
                });
            }
            failure
        };
        // A block of its own channels finishes as a vector (every block, when the channels
        // fill whole blocks).
        let in_lanes = |ir: &mut Ir<'ctx>| {
            let v = sums(ir);
            ir.contraction_finish_lanes(c, v, p, c0)
        };
        ir.finish_in_lanes_inside(c, own, in_lanes, channels)?;
    }
    Ok(())
}
