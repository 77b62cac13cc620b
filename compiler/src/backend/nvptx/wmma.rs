//! Contractions on tensor cores: WMMA m16n16k16 (`llvm.nvvm.wmma.m16n16k16.*`), f16 or bf16
//! inputs, f32 accumulation (MLIR's `WmmaOpsToNvvm`, IREE's LLVMGPU tensor-core pipeline).
//!
//! One block computes a `bm × bn` tile of the output ([`Tile`]: 64 × 64 with four warps of
//! 32 × 32, or 128 × 128 with eight warps of 64 × 32 where the contraction has enough such
//! blocks to fill the GPU); each warp its sub-tile as 16 × 16 fragments. Along `k`, tiles of
//! `BK` are staged through shared memory, double-buffered: while the warps run the MMAs of tile `t` from one buffer, every
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
//! - After the last tile the accumulators go to shared memory (`wmma.store.d`, reusing the
//!   staging buffers; in two passes of 64 rows for the large tile), and every thread
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

/// Depth of one staged `k` tile.
pub const BK: usize = 32;
/// Padding (in elements) of the shared tiles' rows, against bank conflicts; keeps every
/// fragment 32-byte aligned as `wmma.load` requires.
const PAD: usize = 8;
/// Row stride of the staged `A` tile and of a column-major `B` tile (elements).
const LDA: usize = BK + PAD;

/// A block's tile: `bm × bn` outputs, `warps_m × warps_n` warps, each warp a
/// `bm / warps_m × bn / warps_n` sub-tile of 16 × 16 fragments. Chosen per contraction by
/// [`Tile::of`] (the plan is data, printed by `--emit=kernels`' launch and pinned by tests).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tile {
    /// Output rows per block.
    pub bm: usize,
    /// Output columns per block.
    pub bn: usize,
    /// Warps along the rows.
    pub warps_m: usize,
    /// Warps along the columns.
    pub warps_n: usize,
}

impl Tile {
    /// 64 × 64, four warps of 32 × 32: many blocks for the small and medium contractions of
    /// batch-1 inference.
    pub const SMALL: Tile = Tile { bm: 64, bn: 64, warps_m: 2, warps_n: 2 };
    /// 128 × 128, eight warps of 64 × 32: twice the MMAs per staged byte, for contractions
    /// that still fill the GPU with such blocks.
    pub const LARGE: Tile = Tile { bm: 128, bn: 128, warps_m: 2, warps_n: 4 };
    /// The fewest [`Tile::LARGE`] blocks for which a contraction takes it: two waves of a
    /// 128-SM part (an H100 has 132), so that the larger tile never leaves the GPU idle.
    pub const LARGE_MIN_BLOCKS: usize = 256;

    /// The tile of `c`: [`Tile::LARGE`] for a contraction with at least
    /// [`Tile::LARGE_MIN_BLOCKS`] such blocks whose operands stage in 16-byte chunks (element
    /// by element, its address arithmetic would spill) and whose `B` is row-major (a matmul;
    /// a conv weight's column-major staging at 128 × 128 has not run on a GPU yet), else
    /// [`Tile::SMALL`].
    pub fn of(c: &Contraction) -> Tile {
        let l = Tile::LARGE;
        let blocks = c.m.div_ceil(l.bm) * c.n.div_ceil(l.bn) * c.batch;
        if blocks >= Tile::LARGE_MIN_BLOCKS && vector_widths(c) == (VECTOR, VECTOR) && c.b_layout == MatrixLayout::RowMajor {
            l
        } else {
            Tile::SMALL
        }
    }

    /// Warps per block.
    pub fn warps(&self) -> usize {
        self.warps_m * self.warps_n
    }

    /// Threads per block.
    pub fn threads(&self) -> usize {
        self.warps() * 32
    }

    /// 16 × 16 fragments per warp, along `m` and along `n`.
    fn frags(&self) -> (usize, usize) {
        (self.bm / self.warps_m / 16, self.bn / self.warps_n / 16)
    }

    /// Row stride of a row-major `B` tile.
    fn ldb_row(&self) -> usize {
        self.bn + PAD
    }

    /// Row stride of the f32 accumulator tile.
    fn ldc(&self) -> usize {
        self.bn + 4
    }

    /// Elements of one `A` buffer and of one `B` buffer.
    fn a_tile(&self) -> usize {
        self.bm * LDA
    }

    fn b_tile(&self) -> usize {
        (BK * self.ldb_row()).max(self.bn * LDA)
    }

    /// Bytes of the double-buffered `A` and `B` tiles.
    fn staging_bytes(&self) -> usize {
        2 * (self.a_tile() + self.b_tile()) * 2
    }

    /// Rows of the accumulator tile staged through shared memory at once: the most whole warp
    /// rows whose f32 tile fits in the staging buffers (it reuses them after the last `k`
    /// tile), so the epilogue runs in `bm / c_rows` passes.
    fn c_rows(&self) -> usize {
        let warp_rows = self.bm / self.warps_m;
        let mut rows = self.bm;
        while rows > warp_rows && rows * self.ldc() * 4 > self.staging_bytes() {
            rows -= warp_rows;
        }
        rows
    }

    /// Bytes of static shared memory a block uses.
    pub fn shared_bytes(&self) -> usize {
        self.staging_bytes().max(self.c_rows() * self.ldc() * 4)
    }

    /// The grid of `c`: `(⌈n/bn⌉, ⌈m/bm⌉, batch)`.
    pub fn grid(&self, c: &Contraction) -> [u32; 3] {
        [c.n.div_ceil(self.bn) as u32, c.m.div_ceil(self.bm) as u32, c.batch as u32]
    }
}

struct Frag {
    /// LLVM name piece of the input type (`f16`, `bf16`).
    name: &'static str,
}

/// Emits the block body of a tensor-core contraction (the function exists and the builder is
/// in its entry block).
pub fn emit<'ctx>(ir: &mut Ir<'ctx>, c: &Contraction, tile: Tile, shape: &MmaShape, kernel_name: &str) -> Result<(), String> {
    debug_assert!(shape.m == 16 && shape.n == 16 && shape.k == 16);
    let k = WmmaKernel::new(ir, c, tile, shape, kernel_name);
    let zero = ir.i64(0);
    k.load_tile(ir, zero);
    k.store_tile(ir, zero);
    barrier(ir);
    let (lo, hi, one) = (ir.i64(0), ir.i64(c.k.div_ceil(BK) as i64), ir.i64(1));
    ir.for_range(lo, hi, one, |ir, t| {
        let next = ir.addi(t, 1);
        let has_next = ir.icmp(inkwell::IntPredicate::SLT, next, hi);
        ir.if_then(has_next, |ir| k.load_tile(ir, next));
        let buf = ir.remi(t, 2);
        k.multiply(ir, buf);
        ir.if_then(has_next, |ir| {
            let other = ir.remi(next, 2);
            k.store_tile(ir, other);
        });
        barrier(ir);
    });
    k.finish(ir)
}

/// One WMMA kernel being emitted ([`emit`]): its contraction and tile, the shared buffers, the
/// thread's coordinates, the staging registers and the accumulators.
struct WmmaKernel<'a, 'ctx> {
    c: &'a Contraction,
    tile: Tile,
    frag: Frag,
    /// Fragments per warp, down and across.
    fm: usize,
    fn_: usize,
    threads: usize,
    /// The A and B staging widths ([`vector_widths`]).
    va: usize,
    vb: usize,
    /// Shared memory: the double-buffered A and B tiles; the accumulator tile (the A tiles'
    /// place, reused after the last k tile).
    a_s: PointerValue<'ctx>,
    b_s: PointerValue<'ctx>,
    c_s: PointerValue<'ctx>,
    /// The thread, the block's first column and row, the batch, the warp's sub-tile.
    tid: IntValue<'ctx>,
    col0: IntValue<'ctx>,
    row0: IntValue<'ctx>,
    bi: IntValue<'ctx>,
    warp_row: IntValue<'ctx>,
    warp_col: IntValue<'ctx>,
    /// A and B in global memory.
    a: PointerValue<'ctx>,
    b: PointerValue<'ctx>,
    /// The thread's staged chunks of A and B.
    a_regs: Vec<Var<'ctx>>,
    b_regs: Vec<Var<'ctx>>,
    /// Eight f32 per fragment of the warp's sub-tile, row-major.
    acc: Vec<Vec<Var<'ctx>>>,
}

impl<'a, 'ctx> WmmaKernel<'a, 'ctx> {
    fn new(ir: &mut Ir<'ctx>, c: &'a Contraction, tile: Tile, shape: &MmaShape, kernel_name: &str) -> Self {
        let Tile { bm, bn, warps_n, .. } = tile;
        let threads = tile.threads();
        let (fm, fn_) = tile.frags();
        let (a_per_thread, b_per_thread) = (bm * BK / threads, BK * bn / threads);
        let frag = Frag { name: if shape.input == DType::BF16 { "bf16" } else { "f16" } };
        let i16t = ir.cx.i16_type();
        let shared = AddressSpace::from(3u16);
        // One shared buffer: the double-buffered A and B tiles, reused by the accumulator tile
        // once the last k tile has been multiplied (a barrier separates the two uses).
        let ty: BasicTypeEnum = i16t.array_type((tile.shared_bytes() / 2) as u32).into();
        let g = ir.module.add_global(ty, Some(shared), &format!("{kernel_name}_smem"));
        g.set_initializer(&ty.const_zero());
        g.set_alignment(128);
        g.set_linkage(inkwell::module::Linkage::Internal);
        let smem = g.as_pointer_value();
        let b_s = ir.gep(i16t.into(), smem, ir.i64((2 * tile.a_tile()) as i64));
        let tid = sreg(ir, "tid.x");
        let col0 = ir.muli(sreg(ir, "ctaid.x"), bn);
        let row0 = ir.muli(sreg(ir, "ctaid.y"), bm);
        let bi = sreg(ir, "ctaid.z");
        let warp = ir.divi(tid, 32);
        let (warp_r, warp_c) = (ir.divi(warp, warps_n), ir.remi(warp, warps_n));
        // The first row and column of the warp's sub-tile.
        let (warp_row, warp_col) = (ir.muli(warp_r, fm * 16), ir.muli(warp_c, fn_ * 16));
        let a = ir.buffer(c.a.buffer.0);
        let b = ir.buffer(c.b.buffer.0);
        // Staging moves `VECTOR` elements (16 bytes) per load where the rows allow it, else one.
        let (va, vb) = vector_widths(c);
        let a_regs: Vec<Var> = (0..a_per_thread / va).map(|_| ir.var(chunk_type(ir, va).const_zero())).collect();
        let b_regs: Vec<Var> = (0..b_per_thread / vb).map(|_| ir.var(chunk_type(ir, vb).const_zero())).collect();
        let f32t = ir.cx.f32_type();
        let acc: Vec<Vec<Var>> = (0..fm * fn_).map(|_| (0..8).map(|_| ir.var(f32t.const_zero().into())).collect()).collect();
        WmmaKernel { c, tile, frag, fm, fn_, threads, va, vb, a_s: smem, b_s, c_s: smem, tid, col0, row0, bi, warp_row, warp_col, a, b, a_regs, b_regs, acc }
    }

    /// The tile coordinates of a thread's chunk `e` of A: (row, k).
    fn a_chunk(&self, ir: &Ir<'ctx>, e: IntValue<'ctx>) -> (IntValue<'ctx>, IntValue<'ctx>) {
        (ir.divi(e, BK / self.va), ir.muli(ir.remi(e, BK / self.va), self.va))
    }

    /// The tile coordinates of a thread's chunk `e` of B: (k, column).
    fn b_chunk(&self, ir: &Ir<'ctx>, e: IntValue<'ctx>) -> (IntValue<'ctx>, IntValue<'ctx>) {
        let vb = self.vb;
        match self.c.b_layout {
            MatrixLayout::RowMajor => (ir.divi(e, self.tile.bn / vb), ir.muli(ir.remi(e, self.tile.bn / vb), vb)),
            MatrixLayout::ColMajor => (ir.muli(ir.remi(e, BK / vb), vb), ir.divi(e, BK / vb)),
        }
    }

    /// Global → registers for k tile `t` (an i64 value).
    fn load_tile(&self, ir: &mut Ir<'ctx>, t: IntValue<'ctx>) {
        let c = self.c;
        let k0 = ir.muli(t, BK);
        for (j, reg) in self.a_regs.iter().enumerate() {
            let e = ir.addi(self.tid, (j * self.threads) as i64);
            let (r, kk) = self.a_chunk(ir, e);
            let (row, kg) = (ir.add(self.row0, r), ir.add(k0, kk));
            let ok = ir.and(ir.in_range(row, c.m), ir.in_range(kg, c.k));
            let v = gather_a(ir, c, self.a, self.bi, row, kg, ok, self.va);
            ir.set(*reg, v);
        }
        for (j, reg) in self.b_regs.iter().enumerate() {
            let e = ir.addi(self.tid, (j * self.threads) as i64);
            let (kk, col) = self.b_chunk(ir, e);
            let (kg, colg) = (ir.add(k0, kk), ir.add(self.col0, col));
            let ok = ir.and(ir.in_range(kg, c.k), ir.in_range(colg, c.n));
            let at = match c.b_layout {
                MatrixLayout::RowMajor => ir.add(ir.muli(self.bi, c.k * c.n), ir.add(ir.muli(kg, c.n), colg)),
                MatrixLayout::ColMajor => ir.add(ir.muli(colg, c.k), kg),
            };
            let v = predicated_load(ir, self.b, at, ok, self.vb);
            ir.set(*reg, v);
        }
    }

    /// Registers → shared buffer `buf` (an i64 value, 0 or 1).
    fn store_tile(&self, ir: &mut Ir<'ctx>, buf: IntValue<'ctx>) {
        let a_base = ir.muli(buf, self.tile.a_tile());
        for (j, reg) in self.a_regs.iter().enumerate() {
            let e = ir.addi(self.tid, (j * self.threads) as i64);
            let (r, kk) = self.a_chunk(ir, e);
            let at = ir.add(a_base, ir.add(ir.muli(r, LDA), kk));
            let v = ir.get(*reg);
            store_chunk(ir, self.a_s, at, v, self.va);
        }
        let b_base = ir.muli(buf, self.tile.b_tile());
        for (j, reg) in self.b_regs.iter().enumerate() {
            let e = ir.addi(self.tid, (j * self.threads) as i64);
            let (kk, col) = self.b_chunk(ir, e);
            let at = match self.c.b_layout {
                MatrixLayout::RowMajor => ir.add(ir.muli(kk, self.tile.ldb_row()), col),
                MatrixLayout::ColMajor => ir.add(ir.muli(col, LDA), kk),
            };
            let at = ir.add(b_base, at);
            let v = ir.get(*reg);
            store_chunk(ir, self.b_s, at, v, self.vb);
        }
    }

    /// The k tile in shared buffer `buf` multiplied into the accumulators, sixteen steps of
    /// `k` at a time: the warp's A and B fragments, then one `mma` per fragment pair.
    fn multiply(&self, ir: &mut Ir<'ctx>, buf: IntValue<'ctx>) {
        let (fm, fn_, b_layout) = (self.fm, self.fn_, self.c.b_layout);
        let (a_tile, b_tile, ldb_row) = (self.tile.a_tile(), self.tile.b_tile(), self.tile.ldb_row());
        for kk in (0..BK).step_by(16) {
            let a_frags: Vec<Vec<BasicValueEnum>> = (0..fm)
                .map(|i| {
                    let at = ir.add(ir.muli(buf, a_tile), ir.addi(ir.muli(ir.addi(self.warp_row, (i * 16) as i64), LDA), kk as i64));
                    load_frag(ir, &self.frag, "a.row", self.a_s, at, LDA)
                })
                .collect();
            let b_frags: Vec<Vec<BasicValueEnum>> = (0..fn_)
                .map(|j| {
                    let colw = ir.addi(self.warp_col, (j * 16) as i64);
                    let (at, ld, layout) = match b_layout {
                        MatrixLayout::RowMajor => (ir.add(ir.muli(ir.i64(kk as i64), ldb_row), colw), ldb_row, "b.row"),
                        MatrixLayout::ColMajor => (ir.addi(ir.muli(colw, LDA), kk as i64), LDA, "b.col"),
                    };
                    let at = ir.add(ir.muli(buf, b_tile), at);
                    load_frag(ir, &self.frag, layout, self.b_s, at, ld)
                })
                .collect();
            for (i, a_frag) in a_frags.iter().enumerate() {
                for (j, b_frag) in b_frags.iter().enumerate() {
                    let acc = &self.acc[i * fn_ + j];
                    let cur: Vec<BasicValueEnum> = acc.iter().map(|v| ir.get(*v)).collect();
                    let d = mma(ir, &self.frag, b_layout, a_frag, b_frag, &cur);
                    for (v, x) in acc.iter().zip(d) {
                        ir.set(*v, x);
                    }
                }
            }
        }
    }

    /// Accumulators → shared, then each thread finishes outputs of the tile: in passes of
    /// `c_rows` rows when the whole f32 tile does not fit (each warp stores the fragments of
    /// the pass's rows; whole warps take part or not, as `wmma.store` needs).
    fn finish(&self, ir: &mut Ir<'ctx>) -> Result<(), String> {
        let (c, Tile { bm, bn, .. }, fm, fn_, threads) = (self.c, self.tile, self.fm, self.fn_, self.threads);
        let (ldc, c_rows) = (self.tile.ldc(), self.tile.c_rows());
        let f32t = ir.cx.f32_type();
        let mut failure = Ok(());
        for pass in 0..bm / c_rows {
            let first = (pass * c_rows) as i64;
            for i in 0..fm {
                for j in 0..fn_ {
                    let r = ir.addi(self.warp_row, (i * 16) as i64);
                    let cc = ir.addi(self.warp_col, (j * 16) as i64);
                    let accs: Vec<BasicValueEnum> = self.acc[i * fn_ + j].iter().map(|v| ir.get(*v)).collect();
                    let store = |ir: &mut Ir<'ctx>| {
                        let at = ir.add(ir.muli(ir.addi(r, -first), ldc), cc);
                        let p = ir.gep(f32t.into(), self.c_s, at);
                        let mut args: Vec<BasicValueEnum> = vec![p.into()];
                        args.extend(accs.iter().copied());
                        args.push(ir.i32(ldc as i32).into());
                        ir.call("llvm.nvvm.wmma.m16n16k16.store.d.row.stride.f32.p3", None, &args);
                    };
                    if c_rows == bm {
                        store(ir);
                    } else {
                        let mine = ir.and(ir.icmp(inkwell::IntPredicate::SGE, r, ir.i64(first)), ir.icmp(inkwell::IntPredicate::SLT, r, ir.i64(first + c_rows as i64)));
                        ir.if_then(mine, store);
                    }
                }
            }
            barrier(ir);
            ir.for_n(0, c_rows * bn / threads, |ir, j| {
                let e = ir.add(self.tid, ir.muli(j, threads));
                let (r, cc) = (ir.divi(e, bn), ir.remi(e, bn));
                let (row, col) = (ir.add(self.row0, ir.addi(r, first)), ir.add(self.col0, cc));
                let ok = ir.and(ir.in_range(row, c.m), ir.in_range(col, c.n));
                ir.if_then(ok, |ir| {
                    let v = ir.b.build_load(f32t, ir.gep(f32t.into(), self.c_s, ir.add(ir.muli(r, ldc), cc)), "").built();
                    let grow = ir.add(ir.muli(self.bi, c.m), row);
                    if let Err(e) = ir.contraction_finish(c, v, grow, col) {
                        failure = Err(e);
                    }
                });
            });
            if pass + 1 < bm / c_rows {
                barrier(ir);
            }
        }
        failure
    }
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
#[allow(clippy::too_many_arguments, reason = "an emitter's IR values, each computed by its caller")]
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
