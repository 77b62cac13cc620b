//! Matmul and conv2d with a constant B on a CPU: a register-blocked vector micro-kernel over B
//! packed at compile time (BLIS's packed panels, the shape of IREE's `mmt4d` ukernels).
//!
//! - **Packing**: B (`k × n` per batch, row-major for a matmul, the OHWI weight read
//!   column-major for a conv) becomes panels of [`GemmShape::nr`] columns, `k` rows each,
//!   zero-padded past `n`, in B's own type (an fp16 weight keeps two bytes per element). The
//!   packed weight replaces the original in the buffer table.
//! - **Work item**: an `mr × nr` output tile of one batch. Along `k`, in index order, it loads
//!   one packed B row (`nr` contiguous values: vector loads) and `mr` A values (a conv's
//!   implicit-im2col gather, zeros in the padding, [`Ir::contraction_a`]), and accumulates
//!   `mr · nr/lanes` f32 vectors with fused multiply-adds. Rows past `m` compute on clamped
//!   addresses and are not stored; padded columns are not stored.
//! - **fp16 inputs on AArch64** ([`CpuMachine::fmlal`]): the B row stays `<8 x half>` and A
//!   half, read in runs along `k` like f32's ([`a_run`]), and `FMLAL`/`FMLAL2` by element
//!   widen, multiply and add in one instruction, four lanes each. Elsewhere fp16/bf16 are
//!   widened on load (x86: `vcvtph2ps`) or once per run ([`widens_a`], [`widens_b`]).
//!
//! - **`--accumulate=f16`** on a machine with fp16 arithmetic ([`CpuMachine::fp16_fma`]): an
//!   8 × 16 tile of `<8 x half>` accumulators, `FMLA v.8h` (eight multiply-adds per instruction,
//!   one fp16 rounding per step: a fast mode outside the contract). Elsewhere such a
//!   contraction accumulates in f32 as usual.
//!
//! Numerics: each output is summed in index order with one rounding per step (FMA) where the
//! reference rounds the product too: within the contraction tolerance (DESIGN.md "Numerics"),
//! and bit-identical for fp16 inputs, whose products are exact in f32.

use super::CpuMachine;
use crate::backend::cpu::SkippedPadding;
use crate::backend::llvm::families::{ARow, KStep, TileAt};
use crate::backend::llvm::{Built, Ir, Var};
use crate::lower::{BufferKind, Contraction, ContractionKind, ConvGeometry, MatrixLayout, Program};
use f16c_dialect::DType;
use inkwell::types::VectorType;
use inkwell::values::{IntValue, PointerValue, VectorValue};
use inkwell::IntPredicate;

pub use crate::target::GemmShape;

/// Whether contraction `c` of `program` runs on the micro-kernel: a matmul or conv2d with
/// float inputs, accumulated in f32, or in fp16 where `--accumulate=f16` allowed it (f32 all
/// the same except on [`CpuMachine::fp16_fma`] machines), and B a constant (packed at compile
/// time) or computed at run time (an attention's keys and values: packed per run,
/// [`pack_panel`]).
pub fn applies(program: &Program, c: &Contraction) -> bool {
    let float = |d: DType| matches!(d, DType::F32 | DType::F16 | DType::BF16);
    matches!(c.kind, ContractionKind::MatMul | ContractionKind::Conv(_))
        && (c.acc == DType::F32 || c.acc == DType::F16 && c.a.ty.dtype == DType::F16 && c.b.ty.dtype == DType::F16)
        && float(c.a.ty.dtype)
        && float(c.b.ty.dtype)
        && (packed_source(program, c).is_some() || !matches!(program.buffers[c.b.buffer.0].kind, BufferKind::Constant(_)))
}

/// Whether `c`'s B is computed at run time ([`applies`] holding): packed per run.
pub fn packs_at_run_time(program: &Program, c: &Contraction) -> bool {
    packed_source(program, c).is_none()
}

/// The type a B packed at run time is packed in: its own bf16 for [`dot`], fp16 for fp16
/// accumulation, else f32 (widened as it is packed).
pub fn run_time_b_type(machine: &CpuMachine, c: &Contraction) -> DType {
    if dot(machine, c, true) || accumulates_f16(machine, c) || uses_fmlal(machine, c) {
        c.b.ty.dtype
    } else {
        DType::F32
    }
}

/// Work item `item` (batch `item / panels`, panel `item % panels`) of packing a B computed at
/// run time as [`pack`] lays out a constant one, into slot `dst` of type `dt` (converted
/// exactly: the same type, or f32); `pairs` as for [`pack`]. A row-major B's panels that lie
/// inside the matrix move a row of the panel as one vector (two rows interleaved for pairs);
/// the last panel of a matrix whose columns it does not fill, and a column-major B, element by
/// element.
pub fn pack_panel<'ctx>(ir: &mut Ir<'ctx>, c: &Contraction, shape: GemmShape, (dst, dt): (usize, DType), pairs: bool, item: IntValue<'ctx>) {
    let panels = c.n.div_ceil(shape.nr);
    let (bb, p) = (ir.divi(item, panels), ir.remi(item, panels));
    let first = ir.muli(ir.add(ir.muli(bb, panels), p), packed_k(c, pairs) * shape.nr);
    let whole_panels = c.n / shape.nr;
    if c.b_layout == MatrixLayout::RowMajor && whole_panels > 0 && (dt == c.b.ty.dtype || dt == DType::F32) {
        let whole = ir.icmp(IntPredicate::SLT, p, ir.i64(whole_panels as i64));
        ir.if_else(whole, |ir| pack_rows(ir, c, shape, (dst, dt), pairs, (bb, p, first)), |ir| pack_elements(ir, c, shape, (dst, dt), pairs, (bb, p, first)));
    } else {
        pack_elements(ir, c, shape, (dst, dt), pairs, (bb, p, first));
    }
}

/// [`pack_panel`] of panel `p` of batch `bb` (packed from element `first`) inside a row-major
/// B: each row's `nr` values one vector load (widened to f32 where `dt` is), or with `pairs`
/// rows `2q` and `2q + 1` loaded and interleaved into one vector, `2q`'s values in the upper
/// halves.
fn pack_rows<'ctx>(ir: &mut Ir<'ctx>, c: &Contraction, shape: GemmShape, (dst, dt): (usize, DType), pairs: bool, (bb, p, first): (IntValue<'ctx>, IntValue<'ctx>, IntValue<'ctx>)) {
    let (src, out, db, nr) = (ir.buffer(c.b.buffer.0), ir.buffer(dst), c.b.ty.dtype, shape.nr);
    let ty = ir.storage(db).into_float_type().vec_type(nr as u32);
    let row_at = |ir: &mut Ir<'ctx>, kk: IntValue<'ctx>| ir.add(ir.contraction_b_row(c, bb, kk), ir.muli(p, nr));
    let align = db.byte_size() as u32;
    if pairs {
        let interleave = VectorType::const_vector(&(0..nr).flat_map(|j| [j, nr + j]).map(|i| ir.cx.i32_type().const_int(i as u64, false)).collect::<Vec<_>>());
        ir.for_n(0, c.k / 2, |ir, q| {
            let kk = ir.muli(q, 2);
            let upper = row_at(ir, kk);
            let upper = ir.load_vector(ty, src, upper, align);
            let lower = row_at(ir, ir.addi(kk, 1));
            let lower = ir.load_vector(ty, src, lower, align);
            let pair = ir.b.build_shuffle_vector(lower, upper, interleave, "").built();
            ir.store_vector(pair, out, ir.add(first, ir.muli(kk, nr)), align);
        });
        if !c.k.is_multiple_of(2) {
            // The last row alone, +0 beside each value.
            let upper = row_at(ir, ir.i64(c.k as i64 - 1));
            let upper = ir.load_vector(ty, src, upper, align);
            let pair = ir.b.build_shuffle_vector(ty.const_zero(), upper, interleave, "").built();
            ir.store_vector(pair, out, ir.addi(first, ((c.k - 1) * nr) as i64), align);
        }
    } else {
        ir.for_n(0, c.k, |ir, kk| {
            let at = row_at(ir, kk);
            let row = ir.load_vector(ty, src, at, align);
            let row = if dt == db { row } else { ir.f32_lanes(row) };
            ir.store_vector(row, out, ir.add(first, ir.muli(kk, nr)), dt.byte_size() as u32);
        });
    }
}

/// [`pack_panel`] element by element, zero past `n`.
fn pack_elements<'ctx>(ir: &mut Ir<'ctx>, c: &Contraction, shape: GemmShape, (dst, dt): (usize, DType), pairs: bool, (bb, p, first): (IntValue<'ctx>, IntValue<'ctx>, IntValue<'ctx>)) {
    let (src, out, db) = (ir.buffer(c.b.buffer.0), ir.buffer(dst), c.b.ty.dtype);
    ir.for_n(0, c.k, |ir, kk| {
        let odd = pairs.then(|| ir.remi(kk, 2));
        let row = ir.add(first, ir.muli(odd.map_or(kk, |odd| ir.sub(kk, odd)), shape.nr));
        for j in 0..shape.nr {
            let col = ir.addi(ir.muli(p, shape.nr), j as i64);
            let from = match c.b_layout {
                MatrixLayout::RowMajor => ir.add(ir.contraction_b_row(c, bb, kk), col),
                MatrixLayout::ColMajor => ir.add(ir.muli(col, c.k), kk),
            };
            let inside = ir.icmp(IntPredicate::SLT, col, ir.i64(c.n as i64));
            let safe = ir.select(inside, from, ir.i64(0)).into_int_value();
            let v = ir.load(db, src, safe);
            let v = ir.select(inside, v, v.get_type().const_zero());
            let to = match odd {
                // Element `kk` at `2j + 1` of its pair row, `kk + 1` at `2j`.
                Some(odd) => ir.add(row, ir.sub(ir.i64(2 * j as i64 + 1), odd)),
                None => ir.addi(row, j as i64),
            };
            ir.store(dt, out, to, v);
        }
    });
    if pairs && !c.k.is_multiple_of(2) {
        // The last pair's second row: +0.
        for j in 0..shape.nr {
            let to = ir.addi(first, ((c.k - 1) * shape.nr + 2 * j) as i64);
            let zero = ir.storage(dt).into_float_type().const_zero();
            ir.store(dt, out, to, zero.into());
        }
    }
}

/// The fp16-accumulating tile: eight rows of two `<8 x half>` vectors (16 of the 32 NEON
/// registers), one 8-lane FMLA per row and vector.
const F16_TILE: GemmShape = GemmShape { mr: 8, nr: 16, lanes: 8 };

/// The fp16-accumulating tile for at most eight columns (a 1×1 convolution projecting to few
/// channels), which would leave half of [`F16_TILE`] padding: sixteen rows of one vector.
const F16_TILE_NARROW: GemmShape = GemmShape { mr: 16, nr: 8, lanes: 8 };

/// Whether `c` accumulates in fp16 on this machine (`FMLA v.8h`).
pub fn accumulates_f16(machine: &CpuMachine, c: &Contraction) -> bool {
    machine.fp16_fma && c.acc == DType::F16
}

/// The register tile `c` runs with on `machine`.
pub fn shape(machine: &CpuMachine, c: &Contraction) -> GemmShape {
    if accumulates_f16(machine, c) {
        if c.n <= F16_TILE_NARROW.nr {
            F16_TILE_NARROW
        } else {
            F16_TILE
        }
    } else {
        let fills = |t: GemmShape| c.m.is_multiple_of(t.mr) && c.n.is_multiple_of(t.nr);
        if let Some(exact) = machine.gemm_exact {
            // Unless the wide tile fills the matrix too (measured as fast or faster there).
            let wide_fills = machine.gemm_wide.is_some_and(|w| c.m >= GemmShape::WIDE_MIN_ROWS && fills(w));
            if fills(exact) && !wide_fills {
                return exact;
            }
        }
        match (machine.gemm_wide, machine.gemm_long) {
            (Some(wide), _) if c.m >= GemmShape::WIDE_MIN_ROWS && c.n.is_multiple_of(wide.nr) => wide,
            (_, Some(long)) if c.m >= GemmShape::WIDE_MIN_ROWS => long,
            _ => GemmShape { mr: tile_rows(machine.gemm.mr, c.m), ..machine.gemm },
        }
    }
}

/// How many times the rows the best-fitting tile computes the machine's tile may compute
/// before [`tile_rows`] takes the shorter one: a tile of fewer rows does fewer multiply-adds
/// per load of B, so it has to save more than this.
const ROW_WASTE_MAX: f64 = 1.1;

/// The rows of `c`'s register tile: `m` itself when it is at most the machine's `mr` (one row
/// of tiles reads B once whatever its height); else `mr`, unless `m` is a poor fit for it and
/// a tile of between half and all of `mr` rows leaves fewer rows computed past the edge by
/// more than [`ROW_WASTE_MAX`] (a convolution's last stage: 49 pixels are 60 rows of 12-row
/// tiles, 49 of 7-row ones). Ties go to the taller tile.
pub fn tile_rows(mr: usize, m: usize) -> usize {
    if m <= mr {
        return m.max(1);
    }
    let computed = |r: usize| m.div_ceil(r) * r;
    let best = (mr.div_ceil(2)..=mr).rev().min_by_key(|&r| computed(r)).unwrap_or(mr);
    if computed(mr) as f64 > ROW_WASTE_MAX * computed(best) as f64 {
        best
    } else {
        mr
    }
}

/// B's batches (a matmul's B is per batch; a conv's weight is one).
pub fn b_batches(c: &Contraction) -> usize {
    match c.b_layout {
        MatrixLayout::RowMajor => c.batch,
        MatrixLayout::ColMajor => 1,
    }
}

/// B's bytes, when B is a constant of the expected size.
fn packed_source<'p>(program: &'p Program, c: &Contraction) -> Option<&'p [u8]> {
    match &program.buffers[c.b.buffer.0].kind {
        BufferKind::Constant(bytes) if bytes.len() == b_batches(c) * c.k * c.n * c.b.ty.dtype.byte_size() => Some(bytes),
        _ => None,
    }
}

/// Output tiles of `c`: `batch × ⌈m/mr⌉ × ⌈n/nr⌉`.
pub fn work(c: &Contraction, shape: GemmShape) -> usize {
    c.batch * c.m.div_ceil(shape.mr) * c.n.div_ceil(shape.nr)
}

/// Whether the tiles of `c` run a column panel at a time, its row tiles one after the other
/// ([`Ir::tile_in_order`]), rather than a row of tiles at a time: where B is larger than a
/// core's cache and at least four times the part of A the tiles read (a convolution's last
/// stage, 49 pixels against 9 MB of weights: row by row, every row of tiles streamed all of B
/// from memory again).
pub fn rows_fastest(machine: &CpuMachine, c: &Contraction) -> bool {
    c.m > shape(machine, c).mr && crate::backend::bands::b_streams(c)
}

/// Whether `c` multiplies bf16 pairs on `machine` ([`CpuMachine::dot_bf16`]): bf16 A and B,
/// f32 accumulation, and every run of A values along `k` ([`Ir::contraction_runs`]) of even
/// length from an even step, so that a pair never straddles two runs: a matmul with `k` even
/// or B computed at run time (`run_time_b`: its packed panels end in a padded pair),
/// a convolution whose kernel rows (undilated along x) or taps hold an even number of values
/// and whose padding, if any, may be multiplied (the tiles then read a padded copy).
pub fn dot(machine: &CpuMachine, c: &Contraction, run_time_b: bool) -> bool {
    let pairs = match &c.kind {
        // An odd `k` ends in a pair of A's last value and −0 against B's last row and +0 (the
        // product −0 leaves every sum as it is), where B is packed per run ([`pack_panel`]).
        ContractionKind::MatMul => c.k.is_multiple_of(2) || run_time_b,
        ContractionKind::Conv(g) if g.pad != [0; 4] && c.padding_hazard => false,
        ContractionKind::Conv(g) if g.dilation[1] == 1 => (g.kw * g.ic) % 2 == 0,
        ContractionKind::Conv(g) => g.ic % 2 == 0,
        _ => false,
    };
    machine.dot_bf16 && pairs && c.acc == DType::F32 && c.a.ty.dtype == DType::BF16 && c.b.ty.dtype == DType::BF16
}

/// The rows of B a packed panel holds: `k`, or with `pairs` `k` rounded up to even (an odd
/// `k`'s last pair padded with +0).
pub fn packed_k(c: &Contraction, pairs: bool) -> usize {
    if pairs { c.k.next_multiple_of(2) } else { c.k }
}

/// B packed into panels of `nr` columns: element `((batch · panels + p) · k + kk) · nr + j` is
/// `B[batch][kk][p · nr + j]`, zero past `n`; with `pairs` ([`dot`]), rows `2q` and `2q + 1` of
/// each panel interleaved, `2q`'s value in the upper half of each pair (element `((batch ·
/// panels + p) · k + 2q) · nr + 2j + 1`), as `VDPBF16PS` adds the upper product first.
/// Writes into `dst` ([`packed_bytes`] zero bytes).
pub fn pack(src: &[u8], dst: &mut [u8], c: &Contraction, shape: GemmShape, pairs: bool) {
    packer(c, shape, &[(0, c.k)], pairs).pack_into(src, dst)
}

/// The packing of `c`'s B ([`crate::backend::pack`], one chunk: `[batch][panel][k][nr]`).
fn packer<'c>(c: &Contraction, shape: GemmShape, chunks: &'c [(usize, usize)], pairs: bool) -> crate::backend::pack::PackB<'c> {
    crate::backend::pack::PackB { elem_bytes: c.b.ty.dtype.byte_size(), layout: c.b_layout, batches: b_batches(c), k: c.k, n: c.n, nr: shape.nr, chunks, pairs }
}

/// The bytes of B packed by [`pack`] (`src`: B's bytes, [`packed_source`]).
pub fn packed_bytes(c: &Contraction, shape: GemmShape) -> usize {
    packer(c, shape, &[], false).bytes()
}

/// Whether `c` runs on FMLAL (fp16 A and B, the 8 × 8 tile of four-lane vectors).
pub fn uses_fmlal(machine: &CpuMachine, c: &Contraction) -> bool {
    let GemmShape { mr, nr, lanes } = machine.gemm;
    machine.fmlal && !accumulates_f16(machine, c) && c.a.ty.dtype == DType::F16 && c.b.ty.dtype == DType::F16 && (mr, nr, lanes) == (8, 8, 4)
}

/// Whether `c`'s fp16/bf16 A is widened to f32 once per run, in a step of its own before the
/// tiles (every target but FMLAL's and fp16 accumulation's): converting each A value inside
/// the tile loop costs more than the multiply-adds it feeds (measured on x86-64: fp16 GEMM at
/// 0.28× of f32).
pub fn widens_a(machine: &CpuMachine, c: &Contraction, run_time_b: bool) -> bool {
    c.a.ty.dtype.is_low_float() && !uses_fmlal(machine, c) && !accumulates_f16(machine, c) && !dot(machine, c, run_time_b)
}

/// The most A values along `k` a tile of `c` reads as one vector on a machine with
/// multiply-adds by element: a NEON register's worth, four f32 or eight f16 (FMLAL's and fp16
/// accumulation's A). Eight f16 take one load per row where four took two: cnn_small's
/// 3 × 3 × 3 window rows of 9 values are one load and one of the next, not three.
pub fn a_run(machine: &CpuMachine, c: &Contraction) -> usize {
    if uses_fmlal(machine, c) || accumulates_f16(machine, c) { 8 } else { 4 }
}

/// Output tiles that read each packed fp16/bf16 B value before [`widens_b`] widens B once per
/// run instead of in every tile.
const WIDEN_B_REUSE: usize = 3;

/// Whether `c`'s packed fp16/bf16 B is widened to f32 once per run, in a step of its own
/// before the tiles, where at least [`WIDEN_B_REUSE`] tiles read each value: otherwise every
/// tile converts each B row again (x86-64: two `vcvtph2ps` per 24 FMAs of the 12 × 32 tile,
/// fp16 GEMM at 0.77× of f32 at 1024³). The packed weight stays 16-bit in the artifact.
pub fn widens_b(machine: &CpuMachine, c: &Contraction, shape: GemmShape, run_time_b: bool) -> bool {
    let reuse = c.batch * c.m.div_ceil(shape.mr) / b_batches(c);
    c.b.ty.dtype.is_low_float() && !uses_fmlal(machine, c) && !accumulates_f16(machine, c) && !dot(machine, c, run_time_b) && reuse >= WIDEN_B_REUSE
}

/// The geometry of `c`'s input zero-padded once per run, when `c` is a convolution with
/// padding that may multiply the zeros (no [`Contraction::padding_hazard`]): the tiles then
/// read the padded input at addresses linear in the row and the tap, with no bounds test and
/// no select per value (they were most of a narrow convolution's instructions: cnn_small's
/// 3 → 8 channel conv).
pub fn padded_input(c: &Contraction) -> Option<ConvGeometry> {
    let ContractionKind::Conv(g) = &c.kind else { return None };
    let [top, bottom, left, right] = g.pad;
    (g.pad != [0; 4] && !c.padding_hazard).then(|| ConvGeometry { ih: g.ih + top + bottom, iw: g.iw + left + right, pad: [0; 4], ..g.clone() })
}

/// Row `r` (image, padded y) of `c`'s input padded to `to` ([`padded_input`]) into slot `dst`
/// as `dtype`: zeros in the padding, the input's row (converted) between, each pixel's
/// channels from each of [`Contraction::a_parts`] in turn where the input is their
/// concatenation.
pub fn pad_row<'ctx>(ir: &mut Ir<'ctx>, c: &Contraction, to: &ConvGeometry, (dst, dtype): (usize, DType), r: IntValue<'ctx>) {
    let ContractionKind::Conv(g) = &c.kind else { unreachable!("padded_input() is Some for convolutions only") };
    let (from, src, dst) = (c.a.ty.dtype, ir.buffer(c.a.buffer.0), ir.buffer(dst));
    let (image, y) = (ir.divi(r, to.ih), ir.addi(ir.remi(r, to.ih), -(g.pad[0] as i64)));
    let out = ir.muli(r, to.iw * g.ic);
    let (bytes, byte_ty) = (dtype.byte_size(), ir.cx.i8_type());
    // Element `i` of a `dtype` buffer (the input, when the types are the same) as an address.
    let element = |ir: &Ir<'ctx>, base: PointerValue<'ctx>, i: IntValue<'ctx>| ir.gep(byte_ty.into(), base, ir.muli(i, bytes));
    // `len` elements of the padded row from element `lo`: zero bits are a zero of every type,
    // and a constant-length memset is a few vector stores.
    let zeros = |ir: &mut Ir<'ctx>, lo: usize, len: usize| {
        if len > 0 {
            let at = element(ir, dst, ir.addi(out, lo as i64));
            ir.b.build_memset(at, 1, byte_ty.const_zero(), ir.i64((len * bytes) as i64)).built();
        }
    };
    let (left, row) = (g.pad[2] * g.ic, g.iw * g.ic);
    ir.if_else(
        ir.in_range(y, g.ih),
        |ir| {
            zeros(ir, 0, left);
            let pixel = ir.muli(ir.add(ir.muli(image, g.ih), y), g.iw);
            let at = ir.muli(pixel, g.ic);
            if !c.a_parts.is_empty() {
                // A concatenation folded in: each pixel's channels from each part in turn.
                let parts: Vec<_> = c.a_parts.iter().map(|p| (ir.buffer(p.buffer.0), *p.ty.shape.last().expect("a part has channels"))).collect();
                ir.for_n(0, g.iw, |ir, x| {
                    let (src_pixel, dst_pixel) = (ir.add(pixel, x), ir.add(out, ir.addi(ir.muli(x, g.ic), left as i64)));
                    copy_parts(ir, &parts, src_pixel, (dst, dst_pixel), (from, dtype));
                });
            } else if from == dtype {
                // Same type: the row's bits, one constant-length copy (vector loads and stores),
                // not a trip through f32 (bf16 may round in software).
                let (f, t) = (element(ir, src, at), element(ir, dst, ir.addi(out, left as i64)));
                ir.b.build_memcpy(t, 1, f, 1, ir.i64((row * bytes) as i64)).built();
            } else {
                ir.for_n(0, row, |ir, i| {
                    let (f, t) = (ir.add(at, i), ir.add(out, ir.addi(i, left as i64)));
                    let v = ir.load(from, src, f);
                    ir.store(dtype, dst, t, v);
                });
            }
            zeros(ir, left + row, to.iw * g.ic - left - row);
        },
        |ir| zeros(ir, 0, to.iw * g.ic),
    );
}

/// Pixel `pixel`'s channels of each of `parts` (a buffer and its channels, of type `from`) in
/// turn, to element `to` of `dst` on as `dtype`: their bits, one constant-length copy per part,
/// where the types are the same (vector loads and stores, not a trip through f32), else
/// converted one by one.
pub fn copy_parts<'ctx>(ir: &mut Ir<'ctx>, parts: &[(PointerValue<'ctx>, usize)], pixel: IntValue<'ctx>, (dst, to): (PointerValue<'ctx>, IntValue<'ctx>), (from, dtype): (DType, DType)) {
    let (bytes, byte_ty) = (dtype.byte_size(), ir.cx.i8_type());
    let mut at = to;
    for &(part, n) in parts {
        let first = ir.muli(pixel, n);
        if from == dtype {
            let (f, t) = (ir.gep(byte_ty.into(), part, ir.muli(first, bytes)), ir.gep(byte_ty.into(), dst, ir.muli(at, bytes)));
            ir.b.build_memcpy(t, 1, f, 1, ir.i64((n * bytes) as i64)).built();
        } else {
            ir.for_n(0, n, |ir, i| {
                let v = ir.load(from, part, ir.add(first, i));
                ir.store(dtype, dst, ir.add(at, i), v);
            });
        }
        at = ir.addi(at, n as i64);
    }
}

/// Tile `t` of `c`, B read from the packed panels in slot `packed`, in bf16 pairs where
/// `pairs` (the plan's).
///
/// On a machine with multiply-adds by element, a matmul and a convolution without padding
/// read A a run of up to [`a_run`] values along `k` at a time (one vector load per row and
/// run, each value then taken from its lane); `a_slack` elements past A's end may be read.
/// A convolution read from its copy padded once per run leaves out the padding `skipped`
/// says: the kernel rows that meet the image for no row of the tile
/// ([`Ir::kernel_rows_inside`]), and at an output row's first or last pixels each kernel
/// column's taps in the padding ([`Tile::edge_steps`]).
pub fn tile<'ctx>(ir: &mut Ir<'ctx>, machine: &CpuMachine, c: &Contraction, (packed, a_slack, skipped): (usize, usize, SkippedPadding), (pairs, rows_fastest): (bool, bool), t: IntValue<'ctx>) -> Result<(), String> {
    let shape = shape(machine, c);
    let (mr, nr, lanes) = (shape.mr, shape.nr, shape.lanes);
    let TileAt { bi, row0, col0, rows } = ir.tile_in_order(c, t, (mr, nr), rows_fastest);
    let tn = ir.divi(col0, nr);
    let a_rows = ir.contraction_rows(c, &rows, bi);
    let f16_acc = accumulates_f16(machine, c);
    let acc_ty = if f16_acc { ir.cx.f16_type().vec_type(8) } else { ir.cx.f32_type().vec_type(lanes as u32) };
    let acc: Vec<Var<'ctx>> = (0..mr * (nr / lanes)).map(|_| ir.var(acc_ty.const_zero().into())).collect();
    let b = ir.buffer(packed);
    let b_batch = if b_batches(c) == 1 { ir.i64(0) } else { bi };
    let panel = ir.muli(ir.add(ir.muli(b_batch, c.n.div_ceil(nr)), tn), packed_k(c, pairs) * nr);
    let ky = ir.kernel_rows_inside(c, skipped.rows, (rows[0], rows[mr - 1]));
    let tile = Tile { c, shape, acc, a_rows, b, panel, f16_acc, fmlal: uses_fmlal(machine, c), ky };
    let by_element = machine.fma_by_element && (tile.fmlal || f16_acc || c.a.ty.dtype == DType::F32);
    let ran = if pairs {
        tile.pair_steps(ir)?;
        true
    } else {
        by_element && tile.run_steps(ir, a_run(machine, c), a_slack)
    };
    if !ran {
        match &c.kind {
            ContractionKind::Conv(g) if skipped.cols != (0, 0) => {
                // A tile at an output row's start, at its end, or (the row one tile) both.
                let ow = g.ow;
                if mr == ow {
                    tile.edge_steps(ir, 0, skipped.cols);
                } else {
                    let x0 = ir.remi(row0, ow);
                    let first = ir.icmp(IntPredicate::EQ, x0, ir.i64(0));
                    let last = ir.icmp(IntPredicate::EQ, x0, ir.i64((ow - mr) as i64));
                    ir.if_else(first, |ir| tile.edge_steps(ir, 0, skipped.cols), |ir| {
                        ir.if_else(last, |ir| tile.edge_steps(ir, ow - mr, skipped.cols), |ir| tile.single_steps(ir));
                    });
                }
            }
            _ => tile.single_steps(ir),
        }
    }
    tile.finish(ir, (bi, row0, col0), machine.masked_lanes())
}

/// Whether a convolution of (unpadded) geometry `g` on tiles of `mr` rows can leave out its
/// edge pixels' taps in the padding columns ([`SkippedPadding::cols`]): it has such columns,
/// its tiles never cross output rows (`mr` divides the output width), and the taps of every
/// tile but those at a row's first and last pixels all meet the image.
pub fn edge_pixels(g: &ConvGeometry, mr: usize) -> bool {
    let inside = |x: usize| (0..g.kw).all(|kx| tap_inside(g, x, kx));
    g.pad[2] + g.pad[3] > 0 && mr > 0 && g.ow.is_multiple_of(mr) && (mr..g.ow.saturating_sub(mr)).all(inside)
}

/// Whether kernel column `kx` of output pixel `x` (of geometry `g`, with its padding) meets
/// the image.
fn tap_inside(g: &ConvGeometry, x: usize, kx: usize) -> bool {
    let at = (x * g.stride[1] + kx * g.dilation[1]) as i64 - g.pad[2] as i64;
    (0..g.iw as i64).contains(&at)
}

/// The rows of a tile of `mr` output pixels from pixel `x0` of an output row whose kernel
/// column `kx` meets the image (contiguous: the pixels' taps move across the row together),
/// for the padded copy's geometry `padded` and its padding columns `cols`.
fn pixels_inside(padded: &ConvGeometry, cols: (usize, usize), x0: usize, mr: usize, kx: usize) -> std::ops::Range<usize> {
    let g = ConvGeometry { iw: padded.iw - cols.0 - cols.1, pad: [0, 0, cols.0, cols.1], ..padded.clone() };
    let inside = |r: &usize| tap_inside(&g, x0 + r, kx);
    match (0..mr).find(inside) {
        Some(lo) => lo..(lo..mr).find(|r| !inside(r)).unwrap_or(mr),
        None => 0..0,
    }
}

/// One tile of [`tile`] being emitted: its contraction, register tile and accumulators, the
/// A rows it reads and where its B panel starts.
struct Tile<'a, 'ctx> {
    c: &'a Contraction,
    shape: GemmShape,
    /// `mr` rows of `nr / lanes` accumulator vectors, row-major.
    acc: Vec<Var<'ctx>>,
    a_rows: Vec<ARow<'ctx>>,
    /// The packed B and the first element of this tile's panel.
    b: PointerValue<'ctx>,
    panel: IntValue<'ctx>,
    /// fp16 accumulators ([`accumulates_f16`]); FMLAL ([`uses_fmlal`]).
    f16_acc: bool,
    fmlal: bool,
    /// The kernel rows to run, where some read only padding ([`Ir::kernel_rows_inside`]).
    ky: Option<(IntValue<'ctx>, IntValue<'ctx>)>,
}

impl<'ctx> Tile<'_, 'ctx> {
    /// Accumulator vectors per row.
    fn per_row(&self) -> usize {
        self.shape.nr / self.shape.lanes
    }

    fn f32v(&self, ir: &Ir<'ctx>) -> VectorType<'ctx> {
        ir.cx.f32_type().vec_type(self.shape.lanes as u32)
    }

    fn h8(ir: &Ir<'ctx>) -> VectorType<'ctx> {
        ir.cx.f16_type().vec_type(8)
    }

    /// One B row at step `kk`: `per_row` vectors of the accumulators' type, or for FMLAL the
    /// whole row as one `<8 x half>`.
    fn b_row(&self, ir: &mut Ir<'ctx>, kk: IntValue<'ctx>) -> Vec<VectorValue<'ctx>> {
        let (nr, lanes, db) = (self.shape.nr, self.shape.lanes, self.c.b.ty.dtype);
        let row_at = ir.add(self.panel, ir.muli(kk, nr));
        if self.fmlal {
            return vec![ir.load_vector(Self::h8(ir), self.b, row_at, 2)];
        }
        (0..self.per_row())
            .map(|v| {
                let at = ir.addi(row_at, (v * lanes) as i64);
                let raw = ir.load_vector(ir.storage(db).into_float_type().vec_type(lanes as u32), self.b, at, db.byte_size() as u32);
                if self.f16_acc { raw } else { ir.f32_lanes(raw) }
            })
            .collect()
    }

    /// FMLAL/FMLAL2: the low/high half of the `<8 x half>` B row `brow` times `a8` (one A value
    /// splat, taken by element) into row `r`'s two f32 accumulators, where `inside`.
    fn fmlal_row(&self, ir: &mut Ir<'ctx>, r: usize, brow: VectorValue<'ctx>, a8: VectorValue<'ctx>, inside: Option<IntValue<'ctx>>) {
        let f32v = self.f32v(ir);
        for (v, name) in ["llvm.aarch64.neon.fmlal.v4f32.v8f16", "llvm.aarch64.neon.fmlal2.v4f32.v8f16"].iter().enumerate() {
            let x = self.acc[r * self.per_row() + v];
            let s = ir.intrinsic(name, f32v.into(), &[ir.get(x), brow.into(), a8.into()]);
            let s = ir.accumulate(inside, s, ir.get(x));
            ir.set(x, s);
        }
    }

    /// bf16 pairs: per pair of steps, `per_row` B vectors of sixteen pairs (the packed rows,
    /// interleaved) and each row's two A values as one 32-bit pair, its halves swapped (step
    /// `2q` upper, as B's), broadcast; one VDPBF16PS per accumulator.
    fn pair_steps(&self, ir: &mut Ir<'ctx>) -> Result<(), String> {
        let (c, nr, lanes, per_row) = (self.c, self.shape.nr, self.shape.lanes, self.per_row());
        let bf32 = ir.cx.bf16_type().vec_type(2 * lanes as u32);
        let i32v = ir.cx.i32_type().vec_type(lanes as u32);
        let f32v = self.f32v(ir);
        let ran = ir.contraction_runs_over(c, 2, self.ky, |ir, step, len| {
            debug_assert!(len == 2 || matches!(c.kind, ContractionKind::MatMul), "dot() checked that runs have even lengths");
            let row_at = ir.add(self.panel, ir.muli(step.kk, nr));
            let brow: Vec<VectorValue> = (0..per_row).map(|v| ir.load_vector(bf32, self.b, ir.addi(row_at, (2 * v * lanes) as i64), 2)).collect();
            for (r, row) in self.a_rows.iter().enumerate() {
                let i32t = ir.cx.i32_type();
                let swapped = if len == 2 {
                    let pair = ir.contraction_a_run(c, row, &step, 2);
                    let bits = ir.b.build_bit_cast(pair, i32t, "").built().into_int_value();
                    ir.intrinsic("llvm.fshl.i32", i32t.into(), &[bits.into(), bits.into(), i32t.const_int(16, false).into()]).into_int_value()
                } else {
                    // An odd `k`'s last value, upper, and −0 (against B's padding +0).
                    let a = ir.contraction_a_run(c, row, &step, 1);
                    let bits = ir.b.build_bit_cast(a, ir.cx.i16_type(), "").built().into_int_value();
                    let wide = ir.b.build_int_z_extend(bits, i32t, "").built();
                    let upper = ir.b.build_left_shift(wide, i32t.const_int(16, false), "").built();
                    ir.b.build_or(upper, i32t.const_int(0x8000, false), "").built()
                };
                let one = ir.b.build_insert_element(i32v.get_poison(), swapped, ir.i64(0), "").built();
                let splat = ir.b.build_shuffle_vector(one, i32v.get_poison(), ir.cx.i32_type().vec_type(lanes as u32).const_zero(), "").built();
                let a = ir.b.build_bit_cast(splat, bf32, "").built();
                for (v, bv) in brow.iter().enumerate() {
                    let x = self.acc[r * per_row + v];
                    let s = ir.intrinsic(&format!("llvm.x86.avx512bf16.dpbf16ps.{}", lanes * 32), f32v.into(), &[ir.get(x), (*bv).into(), a]);
                    ir.set(x, s);
                }
            }
        });
        ran.ok_or_else(|| "bf16 pairs on a convolution whose steps do not run in pairs (dot() should have refused it)".into())
    }

    /// Multiply-adds by element: runs of up to `run` A values along `k` read as one vector
    /// each. Whether the contraction's steps run so ([`Ir::contraction_runs`]; else nothing
    /// was emitted).
    fn run_steps(&self, ir: &mut Ir<'ctx>, run: usize, a_slack: usize) -> bool {
        let (c, lanes, per_row) = (self.c, self.shape.lanes, self.per_row());
        let acc_ty = if self.f16_acc { Self::h8(ir) } else { self.f32v(ir) };
        ir.contraction_runs_over(c, run, self.ky, |ir, step, len| {
            let brows: Vec<Vec<VectorValue>> = (0..len).map(|j| self.b_row(ir, ir.addi(step.kk, j as i64))).collect();
            // The whole run's vector where reading past its end is allowed.
            let load = if len < run && a_slack >= run { run } else { len };
            let width = if self.fmlal { 8 } else { lanes };
            let lane = |j: usize| VectorType::const_vector(&vec![ir.cx.i32_type().const_int(j as u64, false); width]);
            for (r, row) in self.a_rows.iter().enumerate() {
                let a = ir.contraction_a_run(c, row, &step, load as u32);
                for (j, brow) in brows.iter().enumerate() {
                    let aj = ir.b.build_shuffle_vector(a, a.get_type().get_poison(), lane(j), "").built();
                    if self.fmlal {
                        self.fmlal_row(ir, r, brow[0], aj, None);
                        continue;
                    }
                    for (v, bv) in brow.iter().enumerate() {
                        let x = self.acc[r * per_row + v];
                        let s = ir.intrinsic(&format!("llvm.fma.v{lanes}{}", if self.f16_acc { "f16" } else { "f32" }), acc_ty.into(), &[aj.into(), (*bv).into(), ir.get(x)]);
                        ir.set(x, s);
                    }
                }
            }
        })
        .is_some()
    }

    /// One step of `k` at a time: each row's A value broadcast (or, for FMLAL, the tile's
    /// eight in one vector), a padded convolution's taps outside the image skipped.
    fn single_steps(&self, ir: &mut Ir<'ctx>) {
        let (c, per_row, h8) = (self.c, self.per_row(), Self::h8(ir));
        ir.contraction_k_over(c, self.ky, |ir, step| {
            let kk = step.kk;
            if self.f16_acc {
                // Fast mode: products and sums in fp16, eight lanes per FMLA.
                let brows = self.b_row(ir, kk);
                for (r, row) in self.a_rows.iter().enumerate() {
                    let (a, inside) = ir.contraction_a(c, row, &step);
                    let a = ir.b.build_float_trunc(a.into_float_value(), ir.cx.f16_type(), "").built();
                    let a8 = ir.splat(h8, a);
                    for (v, brow) in brows.iter().enumerate() {
                        let x = self.acc[r * per_row + v];
                        let s = ir.intrinsic("llvm.fma.v8f16", h8.into(), &[a8.into(), (*brow).into(), ir.get(x)]);
                        let s = ir.accumulate(inside, s, ir.get(x));
                        ir.set(x, s);
                    }
                }
                return;
            }
            if self.fmlal {
                // The tile's eight A values at this k in one vector, so that each FMLAL takes its
                // row's value by element (no broadcast per row).
                let brow = self.b_row(ir, kk)[0];
                let mut avec = h8.get_poison();
                let mut insides = Vec::new();
                for (r, row) in self.a_rows.iter().enumerate() {
                    let (a, inside) = ir.contraction_a(c, row, &step);
                    let a = ir.b.build_float_trunc(a.into_float_value(), ir.cx.f16_type(), "").built();
                    avec = ir.b.build_insert_element(avec, a, ir.i64(r as i64), "").built();
                    insides.push(inside);
                }
                for (r, &inside) in insides.iter().enumerate() {
                    let lane = ir.cx.i32_type().const_int(r as u64, false);
                    let mask = VectorType::const_vector(&[lane; 8]);
                    let a8 = ir.b.build_shuffle_vector(avec, h8.get_poison(), mask, "").built();
                    self.fmlal_row(ir, r, brow, a8, inside);
                }
                return;
            }
            self.f32_step(ir, &step, 0..self.a_rows.len());
        });
    }

    /// Step `step` of the f32 multiply-adds ([`Tile::single_steps`]) for the tile's rows `rows`:
    /// B's row, and each row's A value broadcast into its accumulators.
    fn f32_step(&self, ir: &mut Ir<'ctx>, step: &KStep<'ctx>, rows: std::ops::Range<usize>) {
        let (c, lanes, per_row, f32v) = (self.c, self.shape.lanes, self.per_row(), self.f32v(ir));
        let bvecs = self.b_row(ir, step.kk);
        for (r, row) in self.a_rows.iter().enumerate().skip(rows.start).take(rows.len()) {
            let (a, inside) = ir.contraction_a(c, row, step);
            let a = ir.convert(c.a.ty.dtype, DType::F32, a).expect("float to float").into_float_value();
            let av = ir.splat(f32v, a);
            for (v, bv) in bvecs.iter().enumerate() {
                let x = self.acc[r * per_row + v];
                let s = ir.intrinsic(&format!("llvm.fma.v{lanes}f32"), f32v.into(), &[av.into(), (*bv).into(), ir.get(x)]);
                let s = ir.accumulate(inside, s, ir.get(x));
                ir.set(x, s);
            }
        }
    }

    /// [`Tile::single_steps`] for a convolution's tile of the output row's pixels `x0..x0 +
    /// mr` (at the row's start or end), read from its input padded once per run whose padding
    /// columns are `cols`: each of its kernel rows ([`Tile::ky`]) a kernel column at a time,
    /// each column's steps multiplied into only the rows whose tap meets the image
    /// ([`pixels_inside`]) — in the same order along `k` as the whole run, without the products
    /// of the padding's zeros, which change no sum.
    fn edge_steps(&self, ir: &mut Ir<'ctx>, x0: usize, cols: (usize, usize)) {
        let ContractionKind::Conv(g) = &self.c.kind else { unreachable!("edge pixels are a convolution's") };
        let (lo, hi) = self.ky.unwrap_or((ir.i64(0), ir.i64(g.kh as i64)));
        let one = ir.i64(1);
        let mr = self.a_rows.len();
        ir.for_range(lo, hi, one, |ir, ky| {
            let (row_at, kk_row) = (ir.muli(ky, g.dilation[0] * g.iw * g.ic), ir.muli(ky, g.kw * g.ic));
            for kx in 0..g.kw {
                let rows = pixels_inside(g, cols, x0, mr, kx);
                if rows.is_empty() {
                    continue;
                }
                let (at, kk0) = (ir.addi(row_at, (kx * g.dilation[1] * g.ic) as i64), ir.addi(kk_row, (kx * g.ic) as i64));
                ir.for_n(0, g.ic, |ir, ci| {
                    let step = KStep { kk: ir.add(kk0, ci), offset: ir.add(at, ci) };
                    self.f32_step(ir, &step, rows.clone());
                });
            }
        });
    }

    /// Accumulator `i` in f32 lanes (which hold every fp16 value).
    fn wide(&self, ir: &mut Ir<'ctx>, i: usize) -> VectorValue<'ctx> {
        let v = ir.get(self.acc[i]).into_vector_value();
        ir.f32_lanes(v)
    }

    /// The finish of the tile at `(bi, row0, col0)`: inside the matrix a vector at a time; on
    /// its right or bottom edge ([`Tile::edge_finish`]) only what lies inside (tested only
    /// where `m` or `n` is not a multiple of the tile).
    fn finish(&self, ir: &mut Ir<'ctx>, (bi, row0, col0): (IntValue<'ctx>, IntValue<'ctx>, IntValue<'ctx>), masked_edge: bool) -> Result<(), String> {
        let (c, GemmShape { mr, nr, lanes }, per_row) = (self.c, self.shape, self.per_row());
        let in_lanes = |ir: &mut Ir<'ctx>| -> Result<(), String> {
            for r in 0..mr {
                let grow = ir.add(ir.muli(bi, c.m), ir.addi(row0, r as i64));
                for v in 0..per_row {
                    let x = self.wide(ir, r * per_row + v);
                    ir.contraction_finish_lanes(c, x, grow, ir.addi(col0, (v * lanes) as i64))?;
                }
            }
            Ok(())
        };
        let mut edges = Vec::new();
        if !c.m.is_multiple_of(mr) {
            edges.push(ir.icmp(IntPredicate::SLE, ir.addi(row0, mr as i64), ir.i64(c.m as i64)));
        }
        if !c.n.is_multiple_of(nr) {
            edges.push(ir.icmp(IntPredicate::SLE, ir.addi(col0, nr as i64), ir.i64(c.n as i64)));
        }
        let inside = edges.into_iter().reduce(|a, b| ir.and(a, b));
        ir.finish_in_lanes_inside(c, inside, in_lanes, |ir| self.edge_finish(ir, (bi, row0, col0), masked_edge))
    }

    /// [`Tile::finish`] on the matrix's edge. Where the finish runs in lanes, the rows inside
    /// the matrix finish a vector at a time, as inside tiles do; a vector the matrix's last
    /// column ends in finishes under a mask where `masked_edge` (AVX-512's mask registers),
    /// else its columns inside one at a time, in a loop. (Output by output and unrolled, a
    /// bf16 tile's finish, each output with its inline rounding, was most of a convolution's
    /// code and optimisation time.)
    fn edge_finish(&self, ir: &mut Ir<'ctx>, (bi, row0, col0): (IntValue<'ctx>, IntValue<'ctx>, IntValue<'ctx>), masked_edge: bool) -> Result<(), String> {
        let (c, GemmShape { mr, nr, lanes }, per_row) = (self.c, self.shape, self.per_row());
        if !ir.contraction_finishes_in_lanes(c) {
            return ir.contraction_tile_finish(c, bi, row0, col0, (mr, nr), |ir, r, j| {
                let v = self.wide(ir, r * per_row + j / lanes);
                ir.b.build_extract_element(v, ir.i64((j % lanes) as i64), "").built()
            });
        }
        for r in 0..mr {
            let row = ir.addi(row0, r as i64);
            let ok = ir.icmp(IntPredicate::SLT, row, ir.i64(c.m as i64));
            let mut failure = Ok(());
            ir.if_then(ok, |ir| {
                let grow = ir.add(ir.muli(bi, c.m), row);
                for v in 0..per_row {
                    let col = ir.addi(col0, (v * lanes) as i64);
                    let x = self.wide(ir, r * per_row + v);
                    let done = if c.n.is_multiple_of(nr) {
                        ir.contraction_finish_lanes(c, x, grow, col)
                    } else {
                        let full = ir.icmp(IntPredicate::SLE, ir.addi(col, lanes as i64), ir.i64(c.n as i64));
                        let (a, b) = ir.if_else(full, |ir| ir.contraction_finish_lanes(c, x, grow, col), |ir| {
                            let count = ir.smax(ir.sub(ir.i64(c.n as i64), col), ir.i64(0));
                            if masked_edge {
                                return ir.contraction_finish_first_lanes(c, x, grow, col, count);
                            }
                            let mut done = Ok(());
                            ir.for_range(ir.i64(0), count, ir.i64(1), |ir, j| {
                                let e = ir.b.build_extract_element(x, j, "").built();
                                done = ir.contraction_finish(c, e, grow, ir.add(col, j));
                            });
                            done
                        });
                        a.and(b)
                    };
                    if let Err(e) = done {
                        failure = Err(e);
                    }
                }
            });
            failure?;
        }
        Ok(())
    }
}
