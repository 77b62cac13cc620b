//! Contractions on tensor cores: WMMA m16n16k16 (`llvm.nvvm.wmma.m16n16k16.*`), f16 or bf16
//! inputs, f32 accumulation (MLIR's `WmmaOpsToNvvm`, IREE's LLVMGPU tensor-core pipeline).
//!
//! One block of [`WARPS`] warps computes a `BM × BN` tile of the output; each warp a
//! `32 × 32` sub-tile as 2 × 2 fragments. Along `k`, tiles of `BK` are staged through shared
//! memory, double-buffered: while the warps run the MMAs of tile `t` from one buffer, every
//! thread has already loaded its share of tile `t + 1` from global memory into registers, and
//! stores it into the other buffer afterwards; one barrier per tile separates the two.
//!
//! - `A` is gathered while staging: a matmul reads rows of `A`; a convolution reads the input
//!   through the implicit im2col map (row = output pixel, `k = (ky, kx, c)`), with zeros for
//!   taps in the padding. Rows past `m` and `k` past `K` are zero, so any `M`, `N`, `K` is
//!   exact (predication, not padding of the operands in memory).
//! - `B` is staged in its own layout: row-major for matmul (`wmma.load.b.row`), column-major for
//!   a conv weight in OHWI (`wmma.load.b.col`), so neither is transposed.
//! - Consecutive threads read consecutive `k` of `A` (and of a column-major `B`) or consecutive
//!   columns of a row-major `B`: global loads are coalesced, 16 bytes (8 elements) per load
//!   where the rows hold whole 16-byte chunks ([`vector_widths`]), else 2.
//! - After the last tile the accumulators go to shared memory (`wmma.store.d`), and every thread
//!   finishes outputs: bias, one rounding to the output type, the fused epilogue
//!   ([`crate::backend::llvm::Ir::contraction_finish`], shared with every other strategy).

use super::{barrier, sreg};
use crate::backend::llvm::{Built, Ir, Var};
use crate::lower::{Contraction, ContractionKind, MatrixLayout};
use crate::target::MmaShape;
use f16c_dialect::DType;
use inkwell::types::{BasicType, BasicTypeEnum};
use inkwell::values::BasicValue as _;
use inkwell::values::{BasicValueEnum, IntValue, PointerValue};
use inkwell::AddressSpace;

/// Output rows per block.
pub const BM: usize = 64;
/// Output columns per block.
pub const BN: usize = 64;
/// Depth of one staged `k` tile.
pub const BK: usize = 32;
/// Warps per block (2 × 2, each 32 × 32 of the tile).
pub const WARPS: usize = 4;
/// Threads per block.
pub const THREADS: usize = WARPS * 32;
/// Padding (in elements) of the shared tiles' rows, against bank conflicts; keeps every
/// fragment 32-byte aligned as `wmma.load` requires.
const PAD: usize = 8;
/// Row stride of the staged `A` tile and of a column-major `B` tile (elements).
const LDA: usize = BK + PAD;
/// Row stride of a row-major `B` tile.
const LDB_ROW: usize = BN + PAD;
/// Row stride of the f32 accumulator tile.
const LDC: usize = BN + 4;

/// Elements of one `A` buffer and of one `B` buffer.
const A_TILE: usize = BM * LDA;
const B_TILE: usize = if BK * LDB_ROW > BN * LDA { BK * LDB_ROW } else { BN * LDA };

/// Bytes of static shared memory a block uses.
pub const SHARED_BYTES: usize = 2 * (A_TILE + B_TILE) * 2 + BM * LDC * 4;

/// The grid of a contraction: `(⌈n/BN⌉, ⌈m/BM⌉, batch)`.
pub fn grid(c: &Contraction) -> [u32; 3] {
    [c.n.div_ceil(BN) as u32, c.m.div_ceil(BM) as u32, c.batch as u32]
}

/// The elements of the staged tiles each thread loads per `k` tile (in chunks of [`VECTOR`] or
/// one).
const A_PER_THREAD: usize = BM * BK / THREADS;
const B_PER_THREAD: usize = BK * BN / THREADS;

struct Frag {
    /// LLVM name piece of the input type (`f16`, `bf16`).
    name: &'static str,
}

/// Emits the block body of a tensor-core contraction (the function exists and the builder is
/// in its entry block).
pub fn emit<'ctx>(ir: &mut Ir<'ctx>, c: &Contraction, shape: &MmaShape, kernel_name: &str) -> Result<(), String> {
    debug_assert!(shape.m == 16 && shape.n == 16 && shape.k == 16);
    let frag = Frag { name: if shape.input == DType::BF16 { "bf16" } else { "f16" } };
    let i16t = ir.cx.i16_type();
    let shared = AddressSpace::from(3u16);
    let global = |name: &str, ty: BasicTypeEnum<'ctx>| {
        let g = ir.module.add_global(ty, Some(shared), &format!("{kernel_name}_{name}"));
        g.set_initializer(&ty.const_zero());
        g.set_alignment(128);
        g.set_linkage(inkwell::module::Linkage::Internal);
        g.as_pointer_value()
    };
    let a_s = global("a", i16t.array_type((2 * A_TILE) as u32).into());
    let b_s = global("b", i16t.array_type((2 * B_TILE) as u32).into());
    let c_s = global("c", ir.cx.f32_type().array_type((BM * LDC) as u32).into());

    let tid = sreg(ir, "tid.x");
    let col0 = ir.muli(sreg(ir, "ctaid.x"), BN);
    let row0 = ir.muli(sreg(ir, "ctaid.y"), BM);
    let bi = sreg(ir, "ctaid.z");
    let warp = ir.divi(tid, 32);
    let (warp_r, warp_c) = (ir.divi(warp, 2), ir.remi(warp, 2));

    let a = ir.buffer(c.a.buffer.0);
    let b = ir.buffer(c.b.buffer.0);
    let k_tiles = c.k.div_ceil(BK);
    // Staging moves `VECTOR` elements (16 bytes) per load where the rows allow it, else one.
    let (va, vb) = vector_widths(c);
    let a_regs: Vec<Var> = (0..A_PER_THREAD / va).map(|_| ir.var(chunk_type(ir, va).const_zero())).collect();
    let b_regs: Vec<Var> = (0..B_PER_THREAD / vb).map(|_| ir.var(chunk_type(ir, vb).const_zero())).collect();
    // The tile coordinates of a thread's chunk `e` of A: (row, k), of B: (k, column).
    let a_chunk = |ir: &Ir<'ctx>, e: IntValue<'ctx>| (ir.divi(e, BK / va), ir.muli(ir.remi(e, BK / va), va));
    let b_chunk = |ir: &Ir<'ctx>, e: IntValue<'ctx>| match c.b_layout {
        MatrixLayout::RowMajor => (ir.divi(e, BN / vb), ir.muli(ir.remi(e, BN / vb), vb)),
        MatrixLayout::ColMajor => (ir.muli(ir.remi(e, BK / vb), vb), ir.divi(e, BK / vb)),
    };

    // Global → registers for k tile `t` (an i64 value).
    let load_tile = |ir: &mut Ir<'ctx>, t: IntValue<'ctx>| {
        let k0 = ir.muli(t, BK);
        for (j, reg) in a_regs.iter().enumerate() {
            let e = ir.addi(tid, (j * THREADS) as i64);
            let (r, kk) = a_chunk(ir, e);
            let (row, kg) = (ir.add(row0, r), ir.add(k0, kk));
            let ok = ir.and(ir.in_range(row, c.m), ir.in_range(kg, c.k));
            let v = gather_a(ir, c, a, bi, row, kg, ok, va);
            ir.set(*reg, v);
        }
        for (j, reg) in b_regs.iter().enumerate() {
            let e = ir.addi(tid, (j * THREADS) as i64);
            let (kk, col) = b_chunk(ir, e);
            let (kg, colg) = (ir.add(k0, kk), ir.add(col0, col));
            let ok = ir.and(ir.in_range(kg, c.k), ir.in_range(colg, c.n));
            let at = match c.b_layout {
                MatrixLayout::RowMajor => ir.add(ir.muli(bi, c.k * c.n), ir.add(ir.muli(kg, c.n), colg)),
                MatrixLayout::ColMajor => ir.add(ir.muli(colg, c.k), kg),
            };
            let v = predicated_load(ir, b, at, ok, vb);
            ir.set(*reg, v);
        }
    };
    // Registers → shared buffer `buf` (an i64 value, 0 or 1).
    let store_tile = |ir: &mut Ir<'ctx>, buf: IntValue<'ctx>| {
        let a_base = ir.muli(buf, A_TILE);
        for (j, reg) in a_regs.iter().enumerate() {
            let e = ir.addi(tid, (j * THREADS) as i64);
            let (r, kk) = a_chunk(ir, e);
            let at = ir.add(a_base, ir.add(ir.muli(r, LDA), kk));
            let v = ir.get(*reg);
            store_chunk(ir, a_s, at, v, va);
        }
        let b_base = ir.muli(buf, B_TILE);
        for (j, reg) in b_regs.iter().enumerate() {
            let e = ir.addi(tid, (j * THREADS) as i64);
            let (kk, col) = b_chunk(ir, e);
            let at = match c.b_layout {
                MatrixLayout::RowMajor => ir.add(ir.muli(kk, LDB_ROW), col),
                MatrixLayout::ColMajor => ir.add(ir.muli(col, LDA), kk),
            };
            let at = ir.add(b_base, at);
            let v = ir.get(*reg);
            store_chunk(ir, b_s, at, v, vb);
        }
    };

    let f32t = ir.cx.f32_type();
    let acc: Vec<Vec<Var>> = (0..4).map(|_| (0..8).map(|_| ir.var(f32t.const_zero().into())).collect()).collect();

    let zero = ir.i64(0);
    load_tile(ir, zero);
    store_tile(ir, zero);
    barrier(ir);
    let (lo, hi, one) = (ir.i64(0), ir.i64(k_tiles as i64), ir.i64(1));
    let b_layout = c.b_layout;
    ir.for_range(lo, hi, one, |ir, t| {
        let next = ir.addi(t, 1);
        let has_next = ir.icmp(inkwell::IntPredicate::SLT, next, hi);
        ir.if_then(has_next, |ir| load_tile(ir, next));
        let buf = ir.remi(t, 2);
        for kk in (0..BK).step_by(16) {
            let a_frags: Vec<Vec<BasicValueEnum>> = (0..2)
                .map(|i| {
                    let at = ir.add(ir.muli(buf, A_TILE), ir.addi(ir.muli(ir.addi(ir.muli(warp_r, 32), (i * 16) as i64), LDA), kk as i64));
                    load_frag(ir, &frag, "a.row", a_s, at, LDA)
                })
                .collect();
            let b_frags: Vec<Vec<BasicValueEnum>> = (0..2)
                .map(|j| {
                    let colw = ir.addi(ir.muli(warp_c, 32), (j * 16) as i64);
                    let (at, ld, layout) = match b_layout {
                        MatrixLayout::RowMajor => (ir.add(ir.muli(ir.i64(kk as i64), LDB_ROW), colw), LDB_ROW, "b.row"),
                        MatrixLayout::ColMajor => (ir.addi(ir.muli(colw, LDA), kk as i64), LDA, "b.col"),
                    };
                    let at = ir.add(ir.muli(buf, B_TILE), at);
                    load_frag(ir, &frag, layout, b_s, at, ld)
                })
                .collect();
            for i in 0..2 {
                for j in 0..2 {
                    let cur: Vec<BasicValueEnum> = acc[i * 2 + j].iter().map(|v| ir.get(*v)).collect();
                    let d = mma(ir, &frag, b_layout, &a_frags[i], &b_frags[j], &cur);
                    for (v, x) in acc[i * 2 + j].iter().zip(d) {
                        ir.set(*v, x);
                    }
                }
            }
        }
        ir.if_then(has_next, |ir| {
            let other = ir.remi(next, 2);
            store_tile(ir, other);
        });
        barrier(ir);
    });

    // Accumulators → shared, then each thread finishes outputs of the tile.
    for i in 0..2 {
        for j in 0..2 {
            let r = ir.addi(ir.muli(warp_r, 32), (i * 16) as i64);
            let cc = ir.addi(ir.muli(warp_c, 32), (j * 16) as i64);
            let at = ir.add(ir.muli(r, LDC), cc);
            let p = ir.gep(f32t.into(), c_s, at);
            let mut args: Vec<BasicValueEnum> = vec![p.into()];
            args.extend(acc[i * 2 + j].iter().map(|v| ir.get(*v)));
            args.push(ir.i32(LDC as i32).into());
            ir.call("llvm.nvvm.wmma.m16n16k16.store.d.row.stride.f32.p3", None, &args);
        }
    }
    barrier(ir);
    let mut failure = Ok(());
    ir.for_n(0, BM * BN / THREADS, |ir, j| {
        let e = ir.add(tid, ir.muli(j, THREADS));
        let (r, cc) = (ir.divi(e, BN), ir.remi(e, BN));
        let (row, col) = (ir.add(row0, r), ir.add(col0, cc));
        let ok = ir.and(ir.in_range(row, c.m), ir.in_range(col, c.n));
        ir.if_then(ok, |ir| {
            let v = ir.b.build_load(f32t, ir.gep(f32t.into(), c_s, ir.add(ir.muli(r, LDC), cc)), "").built();
            let grow = ir.add(ir.muli(bi, c.m), row);
            if let Err(e) = ir.contraction_finish(c, v, grow, col) {
                failure = Err(e);
            }
        });
    });
    failure
}

/// Elements per staging load (16 bytes): A's rows must hold whole chunks (a matmul's `k`, a
/// conv's input channels, multiples of 8), and B's contiguous dimension likewise.
pub const VECTOR: usize = 8;

/// The staging widths of A and B for `c`: [`VECTOR`] where every chunk is contiguous and
/// 16-byte aligned in global memory, else 1.
pub fn vector_widths(c: &Contraction) -> (usize, usize) {
    let a = match &c.kind {
        ContractionKind::Conv(g) => g.ic.is_multiple_of(VECTOR),
        _ => c.a_row_stride.unwrap_or(c.k).is_multiple_of(VECTOR) && c.k.is_multiple_of(VECTOR),
    };
    let b = match c.b_layout {
        MatrixLayout::RowMajor => c.n.is_multiple_of(VECTOR),
        MatrixLayout::ColMajor => c.k.is_multiple_of(VECTOR),
    };
    (if a { VECTOR } else { 1 }, if b { VECTOR } else { 1 })
}

/// The register type of a staged chunk of `width` 16-bit elements.
fn chunk_type<'ctx>(ir: &Ir<'ctx>, width: usize) -> BasicTypeEnum<'ctx> {
    if width == 1 {
        ir.cx.i16_type().into()
    } else {
        ir.cx.i16_type().vec_type(width as u32).into()
    }
}

/// `width` 16-bit elements of `base` from `at` when `ok`, else zeros: the load reads from
/// element 0 instead (every buffer has a whole chunk there), so it needs no branch.
fn predicated_load<'ctx>(ir: &mut Ir<'ctx>, base: PointerValue<'ctx>, at: IntValue<'ctx>, ok: IntValue<'ctx>, width: usize) -> BasicValueEnum<'ctx> {
    let ty = chunk_type(ir, width);
    let safe = ir.select(ok, at, ir.i64(0)).into_int_value();
    let v = ir.b.build_load(ty, ir.gep(ir.cx.i16_type().into(), base, safe), "").built();
    v.as_instruction_value().expect("a load").set_alignment((2 * width) as u32).expect("a power of two");
    ir.select(ok, v, ty.const_zero())
}

/// Stores a staged chunk into shared memory at element `at` (16-byte aligned for a vector).
fn store_chunk<'ctx>(ir: &Ir<'ctx>, base: PointerValue<'ctx>, at: IntValue<'ctx>, v: BasicValueEnum<'ctx>, width: usize) {
    let st = ir.b.build_store(ir.gep(ir.cx.i16_type().into(), base, at), v).built();
    st.set_alignment((2 * width) as u32).expect("a power of two");
}

/// Elements `(row, kg..kg + width)` of `A` (16-bit bits), zero outside the matrix and in a
/// conv's padding (a chunk lies within one tap: the channels are a multiple of its width).
#[allow(clippy::too_many_arguments)]
fn gather_a<'ctx>(ir: &mut Ir<'ctx>, c: &Contraction, a: PointerValue<'ctx>, bi: IntValue<'ctx>, row: IntValue<'ctx>, kg: IntValue<'ctx>, ok: IntValue<'ctx>, width: usize) -> BasicValueEnum<'ctx> {
    match &c.kind {
        ContractionKind::Conv(g) => {
            let (ox, oy, n) = (ir.remi(row, g.ow), ir.remi(ir.divi(row, g.ow), g.oh), ir.divi(row, g.ow * g.oh));
            let ci = ir.remi(kg, g.ic);
            let kx = ir.remi(ir.divi(kg, g.ic), g.kw);
            let ky = ir.divi(kg, g.ic * g.kw);
            let y = ir.addi(ir.add(ir.muli(oy, g.stride[0]), ir.muli(ky, g.dilation[0])), -(g.pad[0] as i64));
            let x = ir.addi(ir.add(ir.muli(ox, g.stride[1]), ir.muli(kx, g.dilation[1])), -(g.pad[2] as i64));
            let inside = ir.and(ir.in_range(y, g.ih), ir.in_range(x, g.iw));
            let ok = ir.and(ok, inside);
            let pix = ir.add(ir.muli(ir.add(ir.muli(n, g.ih), y), g.iw), x);
            let at = ir.add(ir.muli(pix, g.ic), ci);
            predicated_load(ir, a, at, ok, width)
        }
        _ => {
            let stride = c.a_row_stride.unwrap_or(c.k);
            let at = ir.add(ir.add(ir.muli(bi, c.m * stride), ir.muli(row, stride)), kg);
            predicated_load(ir, a, at, ok, width)
        }
    }
}

/// The LLVM struct type of an input fragment and its element count.
fn frag_type<'ctx>(ir: &Ir<'ctx>, frag: &Frag) -> (BasicTypeEnum<'ctx>, usize) {
    if frag.name == "bf16" {
        let t = ir.cx.i32_type();
        (ir.cx.struct_type(&[t.into(); 4], false).into(), 4)
    } else {
        let t = ir.cx.f16_type().vec_type(2);
        (ir.cx.struct_type(&[t.into(); 8], false).into(), 8)
    }
}

/// `wmma.load.{a,b}` of a fragment from shared memory at element `at` with leading dimension
/// `ld`; returns its registers.
fn load_frag<'ctx>(ir: &mut Ir<'ctx>, frag: &Frag, which: &str, base: PointerValue<'ctx>, at: IntValue<'ctx>, ld: usize) -> Vec<BasicValueEnum<'ctx>> {
    let (ty, n) = frag_type(ir, frag);
    let p = ir.gep(ir.cx.i16_type().into(), base, at);
    let name = format!("llvm.nvvm.wmma.m16n16k16.load.{which}.stride.{}.p3", frag.name);
    let s = ir.intrinsic(&name, ty, &[p.into(), ir.i32(ld as i32).into()]).into_struct_value();
    (0..n).map(|i| ir.b.build_extract_value(s, i as u32, "").built()).collect()
}

/// One `wmma.mma` with f32 accumulators.
fn mma<'ctx>(ir: &mut Ir<'ctx>, frag: &Frag, b_layout: MatrixLayout, a: &[BasicValueEnum<'ctx>], b: &[BasicValueEnum<'ctx>], c: &[BasicValueEnum<'ctx>]) -> Vec<BasicValueEnum<'ctx>> {
    let f32t = ir.cx.f32_type();
    let out = ir.cx.struct_type(&[f32t.into(); 8], false);
    let layout = if b_layout == MatrixLayout::RowMajor { "row" } else { "col" };
    let name = if frag.name == "bf16" {
        format!("llvm.nvvm.wmma.m16n16k16.mma.row.{layout}.bf16")
    } else {
        format!("llvm.nvvm.wmma.m16n16k16.mma.row.{layout}.f32.f32")
    };
    let args: Vec<BasicValueEnum> = a.iter().chain(b).chain(c).copied().collect();
    let s = ir.intrinsic(&name, out.as_basic_type_enum(), &args).into_struct_value();
    (0..8).map(|i| ir.b.build_extract_value(s, i, "").built()).collect()
}
