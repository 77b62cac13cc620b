//! The JIT GEMM's operands in memory: B panels packed at run time (and constant ones when the
//! constants section is put together), A micro-panels packed per reduction chunk (a matmul's
//! rows, a convolution's windows: an implicit im2col) or read as a band widened from fp16,
//! and the small copy and zeroing loops they use ([`super::gemm`] plans and calls them).

use super::conv::{in_range, nhwc_index, window_coord};
use super::emit::Fx;
use super::legal::{LANES, MR, NR};
use super::lower::copy_bytes;
#[cfg(doc)]
use super::Loops;
use crate::lower::{Contraction, ContractionKind, ConvGeometry, MatrixLayout};
use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::types::{F32, I64};
use cranelift_codegen::ir::{InstBuilder, Value};
use f16c_dialect::DType;

/// Packs panel `item` (`bi · panels + p`) of a B computed at run time into the temporary at
/// `dst`, in f32: `[batch][panel][k][NR]`, zero past `n`. A column-major B (a conv weight
/// computed at run time, OHWI: `B[kk][o] = W[o][kk]`) is read element by element; a row-major
/// one four lanes at a time. (The JIT read every B as row-major and mixed output channels up:
/// the differential tester.)
pub(super) fn pack_b_panel(fx: &mut Fx, c: &Contraction, src: Value, dst: Value, item: Value) {
    let (k, n, bdt) = (c.k, c.n, c.b.ty.dtype);
    let panels = n.div_ceil(NR);
    let col_major = c.b_layout == MatrixLayout::ColMajor;
    // item = bi * panels + p; B[bi][k][col] at (bi*K + k)*N + col.
    let bi = fx.b.ins().udiv_imm_s(item, panels as i64);
    let p = fx.b.ins().urem_imm_s(item, panels as i64);
    let col0 = fx.b.ins().imul_imm_s(p, NR as i64);
    let out0 = fx.b.ins().imul_imm_s(item, (k * NR) as i64);
    let row0 = fx.b.ins().imul_imm_s(bi, (k * n) as i64);
    let full = fx.b.ins().icmp_imm_s(IntCC::SignedLessThanOrEqual, col0, (n - NR.min(n)) as i64);
    let full = if n < NR || col_major { fx.b.ins().iconst(cranelift_codegen::ir::types::I8, 0) } else { full };
    fx.each_n(0, k as i64, 1, |fx, kk| {
        let src_row = fx.b.ins().imul_imm_s(kk, n as i64);
        let src_row = fx.b.ins().iadd(src_row, row0);
        let src_at = fx.b.ins().iadd(src_row, col0);
        let dst_at = fx.b.ins().imul_imm_s(kk, NR as i64);
        let dst_at = fx.b.ins().iadd(dst_at, out0);
        fx.if_or(
            full,
            |fx| {
                for v in 0..NR / LANES {
                    let s = fx.b.ins().iadd_imm_s(src_at, (v * LANES) as i64);
                    let x = fx.load4(bdt, src, s);
                    let d = fx.b.ins().iadd_imm_s(dst_at, (v * LANES) as i64);
                    fx.store4(DType::F32, dst, d, x);
                }
            },
            |fx| {
                for j in 0..NR {
                    // Clamp the column so the load stays in bounds; zero past N.
                    let col = fx.b.ins().iadd_imm_s(col0, j as i64);
                    let last = fx.i(n as i64 - 1);
                    let cc = fx.b.ins().smin(col, last);
                    let s = if col_major {
                        let s = fx.b.ins().imul_imm_s(cc, k as i64);
                        fx.b.ins().iadd(s, kk)
                    } else {
                        let s = fx.b.ins().isub(src_at, col0);
                        fx.b.ins().iadd(s, cc)
                    };
                    let x = fx.load(bdt, src, s);
                    let z = fx.f(F32, 0.0);
                    let inside = fx.b.ins().icmp_imm_s(IntCC::SignedLessThan, col, n as i64);
                    let x = fx.b.ins().select(inside, x, z);
                    let d = fx.b.ins().iadd_imm_s(dst_at, j as i64);
                    fx.store(DType::F32, dst, d, x);
                }
            },
        );
    });
}

/// Packs a constant `B` at compile time in its own type, zero padded, chunk by chunk of the
/// reduction (`chunks`: the GEMM's [`k_chunks`], or one for the one-row matmul):
/// `[batch][chunk][panel][k1 - k0][NR]`, so that a work item streams a chunk's panels in order
/// (with one chunk, `[batch][panel][k][NR]`); with `pairs`, each chunk's rows interleaved in pairs
/// for the bf16 pair loops ([`crate::backend::pack`], the packer of both CPU backends).
/// Writes into `dst` (zeroed, of the packed size).
pub(super) fn pack_b_constant(c: &Contraction, bytes: &[u8], dst: &mut [u8], chunks: &[(usize, usize)], pairs: bool) {
    let (batches, k, n) = (c.batch, c.k, c.n);
    crate::backend::pack::PackB { elem_bytes: c.b.ty.dtype.byte_size(), layout: c.b_layout, batches, k, n, nr: NR, chunks, pairs }.pack_into(bytes, dst)
}

/// The native loops' flag for a packed B of type `d` ([`f16c_core::abi::tiles`]).
pub(super) fn b_flag(d: DType) -> u64 {
    use f16c_core::abi::tiles::{B_BF16, B_F16};
    match d {
        DType::F16 => B_F16,
        DType::BF16 => B_BF16,
        _ => 0,
    }
}

/// Where chunk `k0..k1` of each panel of a packed B starts: element `base + bi·batch + p·panel`
/// of batch `bi`, panel `p`.
pub(super) struct ChunkAt {
    pub(super) base: usize,
    pub(super) batch: usize,
    pub(super) panel: usize,
}

impl ChunkAt {
    /// In a constant B packed by [`pack_b_constant`]: `[batch][chunk][panel][k1 - k0][NR]`.
    pub(super) fn by_chunk(panels: usize, k: usize, (k0, k1): (usize, usize)) -> ChunkAt {
        ChunkAt { base: k0 * panels * NR, batch: k * panels * NR, panel: (k1 - k0) * NR }
    }

    /// In a B packed at run time: `[batch][panel][k][NR]`.
    pub(super) fn by_panel(panels: usize, k: usize, (k0, _): (usize, usize)) -> ChunkAt {
        ChunkAt { base: k0 * NR, batch: panels * k * NR, panel: k * NR }
    }
}

/// Whether row `r` of the GEMM's `A` is the `k` values at element `r · k` of the A operand
/// (per batch): a matmul's, or a 1×1 convolution's with stride 1 and no padding (NHWC: a
/// pixel's channels).
pub(super) fn rows_in_place(c: &Contraction) -> bool {
    match &c.kind {
        ContractionKind::MatMul => c.a_row_stride.is_none_or(|s| s == c.k),
        ContractionKind::Conv(g) => c.batch == 1 && g.kh == 1 && g.kw == 1 && g.stride == [1, 1] && g.pad == [0; 4],
        _ => false,
    }
}

/// Packs columns `k0..k1` of rows `row0..row0 + a_panels · MR` of `A` (batch `bi`) into `scratch`:
/// as micro-panels `[panel][k1 - k0][MR]` of f32 values ([`pack_a_panels`]), or, `raw` (a bf16 A
/// for the bf16 pair loops), as rows `[row][k1 - k0]` of A's own 16-bit values
/// ([`pack_a_rows`]). For a conv, `k0..k1` is whole taps or part of one tap (see [`k_chunks`]).
#[allow(clippy::too_many_arguments, reason = "an emitter's IR values, each computed by its caller")]
pub(super) fn pack_a(fx: &mut Fx, c: &Contraction, (a, ad): (Value, DType), bi: Value, row0: Value, scratch: Value, (k0, k1): (usize, usize), raw: bool, a_panels: usize) {
    if raw {
        pack_a_rows(fx, c, a, bi, row0, scratch, (k0, k1), a_panels * MR);
    } else {
        pack_a_panels(fx, c, (a, ad), bi, row0, scratch, (k0, k1), a_panels);
    }
}

/// A conv chunk's taps and, per tap, its channels inside `k0..k1` and the column they go to:
/// `(tap, first channel, end channel, destination column)`.
pub(super) fn chunk_taps(g: &ConvGeometry, (k0, k1): (usize, usize)) -> Vec<(usize, usize, usize, usize)> {
    (k0 / g.ic..k1.div_ceil(g.ic))
        .map(|tap| {
            let c0 = k0.max(tap * g.ic) - tap * g.ic;
            let c1 = k1.min((tap + 1) * g.ic) - tap * g.ic;
            (tap, c0, c1, tap * g.ic + c0 - k0)
        })
        .collect()
}

/// A conv chunk's copies for a window inside the image, `(offset from the window's first
/// element, destination column, length)`: its taps' runs, those that continue each other in A
/// and in the panel merged (a row of taps with dilation 1, all channels each: the first
/// convolution of an image network copies seven runs of 21 values, not 49 of three).
pub(super) fn window_runs(g: &ConvGeometry, taps: &[(usize, usize, usize, usize)]) -> Vec<(usize, usize, usize)> {
    let mut runs: Vec<(usize, usize, usize)> = Vec::new();
    for &(tap, c0, c1, dst0) in taps {
        let (ky, kx) = (tap / g.kw, tap % g.kw);
        let at = (ky * g.dilation[0] * g.iw + kx * g.dilation[1]) * g.ic + c0;
        match runs.last_mut() {
            Some((src, dst, len)) if *src + *len == at && *dst + *len == dst0 => *len += c1 - c0,
            _ => runs.push((at, dst0, c1 - c0)),
        }
    }
    runs
}

/// Conv output row `row`'s batch and its window's first input coordinates `(nb, y0, x0)`
/// (outside the image where the window crosses its edge).
pub(super) fn window_of(fx: &mut Fx, g: &ConvGeometry, row: Value) -> (Value, Value, Value) {
    // row = (n, oy, ox).
    let ox = fx.b.ins().urem_imm_s(row, g.ow as i64);
    let t = fx.b.ins().udiv_imm_s(row, g.ow as i64);
    let oy = fx.b.ins().urem_imm_s(t, g.oh as i64);
    let nb = fx.b.ins().udiv_imm_s(t, g.oh as i64);
    let zero = fx.i(0);
    let y0 = window_coord(fx, oy, zero, g.stride[0], g.dilation[0], g.pad[0]);
    let x0 = window_coord(fx, ox, zero, g.stride[1], g.dilation[1], g.pad[2]);
    (nb, y0, x0)
}

/// The input coordinates `(y, x)` that tap `tap` of the window starting at `(y0, x0)` reads,
/// and whether they lie inside the image.
pub(super) fn tap_input(fx: &mut Fx, g: &ConvGeometry, (y0, x0): (Value, Value), tap: usize) -> (Value, Value, Value) {
    let (ky, kx) = (tap / g.kw, tap % g.kw);
    let y = fx.b.ins().iadd_imm_s(y0, (ky * g.dilation[0]) as i64);
    let x = fx.b.ins().iadd_imm_s(x0, (kx * g.dilation[1]) as i64);
    let (ok_y, ok_x) = (in_range(fx, y, g.ih), in_range(fx, x, g.iw));
    (fx.b.ins().band(ok_y, ok_x), y, x)
}

/// Whether the window starting at `(y0, x0)` lies inside the image.
pub(super) fn window_inside(fx: &mut Fx, g: &ConvGeometry, y0: Value, x0: Value) -> Value {
    let (last_y, last_x) = ((g.kh - 1) * g.dilation[0], (g.kw - 1) * g.dilation[1]);
    let ok = [(y0, g.ih, last_y), (x0, g.iw, last_x)].map(|(v, len, last)| {
        let low = fx.b.ins().icmp_imm_s(IntCC::SignedGreaterThanOrEqual, v, 0);
        let high = fx.b.ins().icmp_imm_s(IntCC::SignedLessThan, v, len as i64 - last as i64);
        fx.b.ins().band(low, high)
    });
    fx.b.ins().band(ok[0], ok[1])
}

/// [`pack_a`] as micro-panels `[panel][k1 - k0][MR]` of f32 values, zero for rows past `m` and
/// for conv taps outside the input. Where a micro-panel's `MR` rows all read a run of A (a
/// matmul's rows; a conv tap inside the image for every row) it copies four values of each
/// row at a time and transposes them in registers ([`copy_panel`]): one scalar store per
/// value was the largest cost of ResNet-50's 3×3 convolutions after the multiply. A panel
/// whose rows' windows all lie inside the image (most of them) copies every run of taps
/// ([`window_runs`]) from constant offsets of its rows' first pixels, with no test per tap:
/// the first convolution of an image network, three channels per tap, spent more on those
/// tests than on its copies. The other
/// rows go one at a time ([`copy_lane`]).
#[allow(clippy::too_many_arguments, reason = "an emitter's IR values, each computed by its caller")]
pub(super) fn pack_a_panels(fx: &mut Fx, c: &Contraction, (a, ad): (Value, DType), bi: Value, row0: Value, scratch: Value, (k0, k1): (usize, usize), a_panels: usize) {
    const { assert!(MR == LANES, "the in-register transpose is 4×4") };
    let (m, k) = (c.m, k1 - k0);
    fx.each_n(0, a_panels as i64, 1, |fx, p| {
        let at = fx.b.ins().imul_imm_s(p, (k * MR * 4) as i64);
        let panel = fx.b.ins().iadd(scratch, at);
        let first = fx.b.ins().imul_imm_s(p, MR as i64);
        let first = fx.b.ins().iadd(row0, first);
        let rows: [Value; MR] = std::array::from_fn(|i| fx.b.ins().iadd_imm_s(first, i as i64));
        let inside = rows.map(|r| fx.b.ins().icmp_imm_s(IntCC::SignedLessThan, r, m as i64));
        // Row `first + i`'s lane of the panel.
        let lane_at = |fx: &mut Fx, i: Value| {
            let at = fx.b.ins().imul_imm_s(i, 4);
            fx.b.ins().iadd(panel, at)
        };
        match &c.kind {
            ContractionKind::MatMul => {
                let src_of = |fx: &mut Fx, row: Value| {
                    let s = fx.b.ins().imul_imm_s(bi, m as i64);
                    let s = fx.b.ins().iadd(s, row);
                    let s = fx.b.ins().imul_imm_s(s, c.k as i64);
                    fx.b.ins().iadd_imm_s(s, k0 as i64)
                };
                // Rows run in order: the last one inside means all are.
                fx.if_or(
                    inside[MR - 1],
                    |fx| {
                        let srcs = rows.map(|r| src_of(fx, r));
                        copy_panel(fx, (a, ad), srcs, panel, 0, k);
                    },
                    |fx| {
                        fx.each_n(0, MR as i64, 1, |fx, i| {
                            let row = fx.b.ins().iadd(first, i);
                            let ok = fx.b.ins().icmp_imm_s(IntCC::SignedLessThan, row, m as i64);
                            let lane = lane_at(fx, i);
                            let src = src_of(fx, row);
                            copy_lane(fx, (a, ad), ok, src, lane, 0, k);
                        });
                    },
                );
            }
            ContractionKind::Conv(g) => {
                let taps = chunk_taps(g, (k0, k1));
                let windows = rows.map(|r| window_of(fx, g, r));
                let mut whole = inside[MR - 1];
                for &(_, y0, x0) in &windows {
                    let w = window_inside(fx, g, y0, x0);
                    whole = fx.b.ins().band(whole, w);
                }
                fx.if_or(
                    whole,
                    |fx| {
                        let zero = fx.i(0);
                        let firsts = windows.map(|(nb, y0, x0)| nhwc_index(fx, g, nb, y0, x0, zero));
                        for (at, dst0, len) in window_runs(g, &taps) {
                            let srcs = firsts.map(|f| fx.b.ins().iadd_imm_s(f, at as i64));
                            copy_panel(fx, (a, ad), srcs, panel, dst0, len);
                        }
                    },
                    |fx| {
                        // Tap by tap: the panel's rows together where the tap is inside the
                        // image for all of them, else one at a time.
                        for &(tap, c0, c1, dst0) in &taps {
                            let ch = fx.i(c0 as i64);
                            let tap_of = |fx: &mut Fx, (nb, y0, x0): (Value, Value, Value), inside: Value| {
                                let (ok, y, x) = tap_input(fx, g, (y0, x0), tap);
                                let ok = fx.b.ins().band(ok, inside);
                                (ok, nhwc_index(fx, g, nb, y, x, ch))
                            };
                            let at: [(Value, Value); MR] = std::array::from_fn(|i| tap_of(fx, windows[i], inside[i]));
                            let mut all = at[0].0;
                            for &(ok, _) in &at[1..] {
                                all = fx.b.ins().band(all, ok);
                            }
                            fx.if_or(
                                all,
                                |fx| {
                                    copy_panel(fx, (a, ad), at.map(|(_, src)| src), panel, dst0, c1 - c0);
                                },
                                |fx| {
                                    fx.each_n(0, MR as i64, 1, |fx, i| {
                                        let row = fx.b.ins().iadd(first, i);
                                        let ok = fx.b.ins().icmp_imm_s(IntCC::SignedLessThan, row, m as i64);
                                        let window = window_of(fx, g, row);
                                        let (ok, src) = tap_of(fx, window, ok);
                                        let lane = lane_at(fx, i);
                                        copy_lane(fx, (a, ad), ok, src, lane, dst0, c1 - c0);
                                    });
                                },
                            );
                        }
                    },
                );
            }
            _ => unreachable!("only GEMM contractions pack A"),
        }
    });
}

/// Columns `dst0..dst0 + len` of the micro-panel at `panel` from the runs of `len` elements of
/// A at `srcs`, one per row: four columns at a time as a vector load per row, a 4×4 transpose
/// ([`Fx::transpose4`]) and four vector stores; the last `len % 4` columns value by value.
pub(super) fn copy_panel(fx: &mut Fx, (a, ad): (Value, DType), srcs: [Value; MR], panel: Value, dst0: usize, len: usize) {
    let m = super::emit::mem();
    let e = ad.byte_size();
    let ptrs = srcs.map(|s| fx.addr(a, s, e));
    let vec_end = len - len % LANES;
    let column = |fx: &mut Fx, kk: Value| {
        let at = fx.b.ins().imul_imm_s(kk, (MR * 4) as i64);
        fx.b.ins().iadd(panel, at)
    };
    each_short(fx, 0, vec_end, LANES, |fx, kk| {
        let rows = ptrs.map(|p| {
            let q = fx.addr(p, kk, e);
            fx.load4_at(ad, q, 0)
        });
        let cols = fx.transpose4(rows);
        let to = column(fx, kk);
        for (j, v) in cols.into_iter().enumerate() {
            fx.b.ins().store(m, v, to, ((dst0 + j) * MR * 4) as i32);
        }
    });
    each_short(fx, vec_end, len, 1, |fx, kk| {
        let to = column(fx, kk);
        for (i, &p) in ptrs.iter().enumerate() {
            let q = fx.addr(p, kk, e);
            let v = fx.load_at(ad, q, 0);
            fx.b.ins().store(m, v, to, ((dst0 * MR + i) * 4) as i32);
        }
    });
}

/// Columns `dst0..dst0 + len` of one row's lane (at `lane`, stride `MR` values) of a
/// micro-panel: from the run of A at `src` where `ok`, else zeros.
pub(super) fn copy_lane(fx: &mut Fx, (a, ad): (Value, DType), ok: Value, src: Value, lane: Value, dst0: usize, len: usize) {
    let store = |fx: &mut Fx, kk: Value, v: Value| {
        let at = fx.b.ins().imul_imm_s(kk, (MR * 4) as i64);
        let p = fx.b.ins().iadd(lane, at);
        fx.b.ins().store(super::emit::mem(), v, p, (dst0 * MR * 4) as i32);
    };
    fx.if_or(
        ok,
        |fx| {
            copy_run(fx, ad, a, src, len, store);
        },
        |fx| {
            let z = fx.f(F32, 0.0);
            each_short(fx, 0, len, 1, |fx, kk| store(fx, kk, z));
        },
    );
}

/// [`pack_a`] as rows `[row][k1 - k0]` of A's own 16-bit values (a bf16 A for the bf16 pair
/// loops), copied sixteen bytes at a time; zeros for rows past `m` and for conv taps outside
/// the input.
#[allow(clippy::too_many_arguments, reason = "an emitter's IR values, each computed by its caller")]
pub(super) fn pack_a_rows(fx: &mut Fx, c: &Contraction, a: Value, bi: Value, row0: Value, scratch: Value, (k0, k1): (usize, usize), rows: usize) {
    let m = c.m;
    let k = k1 - k0;
    fx.each_n(0, rows as i64, 1, |fx, r| {
        let row = fx.b.ins().iadd(row0, r);
        // Destination of (r, kk): r * k + kk, two bytes each.
        let at = fx.b.ins().imul_imm_s(r, (k * 2) as i64);
        let dbase = fx.b.ins().iadd(scratch, at);
        let inside = fx.b.ins().icmp_imm_s(IntCC::SignedLessThan, row, m as i64);
        // `len` values from element `src` of A to columns `dst0..`; zeros to columns `dst0..`.
        let copy = |fx: &mut Fx, src: Value, dst0: usize, len: usize| {
            let from = fx.addr(a, src, 2);
            let to = fx.b.ins().iadd_imm_s(dbase, (dst0 * 2) as i64);
            copy_bytes(fx, from, to, len * 2);
        };
        let zeros = |fx: &mut Fx, dst0: usize, len: usize| {
            let to = fx.b.ins().iadd_imm_s(dbase, (dst0 * 2) as i64);
            zero_bytes(fx, to, len * 2);
        };
        fx.if_or(
            inside,
            |fx| {
                match &c.kind {
                    ContractionKind::MatMul => {
                        let src = fx.b.ins().imul_imm_s(bi, m as i64);
                        let src = fx.b.ins().iadd(src, row);
                        let src = fx.b.ins().imul_imm_s(src, c.k as i64);
                        let src = fx.b.ins().iadd_imm_s(src, k0 as i64);
                        copy(fx, src, 0, k);
                    }
                    ContractionKind::Conv(g) => {
                        let taps = chunk_taps(g, (k0, k1));
                        let (nb, y0, x0) = window_of(fx, g, row);
                        let whole = window_inside(fx, g, y0, x0);
                        fx.if_or(
                            whole,
                            |fx| {
                                let zero = fx.i(0);
                                let first = nhwc_index(fx, g, nb, y0, x0, zero);
                                for (at, dst0, len) in window_runs(g, &taps) {
                                    let src = fx.b.ins().iadd_imm_s(first, at as i64);
                                    copy(fx, src, dst0, len);
                                }
                            },
                            |fx| {
                                for &(tap, c0, c1, dst0) in &taps {
                                    let (ok, y, x) = tap_input(fx, g, (y0, x0), tap);
                                    fx.if_or(
                                        ok,
                                        |fx| {
                                            let ch = fx.i(c0 as i64);
                                            let src = nhwc_index(fx, g, nb, y, x, ch);
                                            copy(fx, src, dst0, c1 - c0);
                                        },
                                        |fx| {
                                            zeros(fx, dst0, c1 - c0);
                                        },
                                    );
                                }
                            },
                        );
                    }
                    _ => unreachable!("only GEMM contractions pack A"),
                }
            },
            |fx| {
                zeros(fx, 0, k);
            },
        );
    });
}

/// Stores `bytes` zero bytes at `to` (sixteen at a time, then eight, four, two).
pub(super) fn zero_bytes(fx: &mut Fx, to: Value, bytes: usize) {
    use cranelift_codegen::ir::types::{I16, I32, I8X16};
    let m = super::emit::mem();
    let vec_end = bytes - bytes % 16;
    let zv = fx.k(I8X16, 0);
    each_short(fx, 0, vec_end, 16, |fx, at| {
        let dst = fx.b.ins().iadd(to, at);
        fx.b.ins().store(m, zv, dst, 0);
    });
    let mut at = vec_end;
    for (ty, size) in [(I64, 8), (I32, 4), (I16, 2)] {
        if bytes - at >= size {
            let z = fx.b.ins().iconst(ty, 0);
            fx.b.ins().store(m, z, to, at as i32);
            at += size;
        }
    }
}

/// The most A elements a row block's band may hold ([`a_band_bound`]): 64 KiB of f32 scratch.
pub(super) const A_BAND_MAX: usize = 1 << 14;

/// The elements `lo..hi` of A that rows `row0..row0 + rows` (batch `bi`) of `c` read, every
/// `k`: whole rows of a matmul; for a conv, the input rows from the first output row's top
/// tap to the last one's bottom tap, every column and channel (clamped to the image). Written
/// once over integers here and once in IR ([`a_band_ir`]): keep the two alike.
pub(super) fn a_band(c: &Contraction, bi: usize, row0: usize, rows: usize) -> (usize, usize) {
    let last = (row0 + rows).min(c.m) - 1;
    match &c.kind {
        ContractionKind::Conv(g) => {
            let image_row = |r: usize, dy: isize| {
                let (nb, oy) = (r / g.ow / g.oh, r / g.ow % g.oh);
                let y = (oy * g.stride[0]) as isize - g.pad[0] as isize + dy;
                (nb * g.ih + y.clamp(0, g.ih as isize) as usize) * g.iw * g.ic
            };
            let lo = image_row(row0, 0);
            (lo, image_row(last, ((g.kh - 1) * g.dilation[0] + 1) as isize).max(lo))
        }
        _ => ((bi * c.m + row0) * c.k, (bi * c.m + last + 1) * c.k),
    }
}

/// The largest band ([`a_band`]) of a row block of `rows` rows of `c`.
pub(super) fn a_band_bound(c: &Contraction, mc: usize, rows: usize) -> usize {
    let batches = if matches!(c.kind, ContractionKind::Conv(_)) { 1 } else { c.batch };
    (0..batches).flat_map(|bi| (0..c.m).step_by(mc).map(move |row0| (bi, row0))).map(|(bi, row0)| {
        let (lo, hi) = a_band(c, bi, row0, rows);
        hi - lo
    })
    .max()
    .unwrap_or(0)
}

/// [`a_band`] in IR: the band's first element and its length (at most `bound`).
pub(super) fn a_band_ir(fx: &mut Fx, c: &Contraction, bi: Value, row0: Value, rows: usize, bound: usize) -> (Value, Value) {
    let last = fx.b.ins().iadd_imm_s(row0, rows as i64);
    let m = fx.i(c.m as i64);
    let last = fx.b.ins().smin(last, m);
    let last = fx.b.ins().iadd_imm_s(last, -1);
    let (lo, hi) = match &c.kind {
        ContractionKind::Conv(g) => {
            let image_row = |fx: &mut Fx, r: Value, dy: i64| {
                let t = fx.b.ins().udiv_imm_s(r, g.ow as i64);
                let nb = fx.b.ins().udiv_imm_s(t, g.oh as i64);
                let oy = fx.b.ins().urem_imm_s(t, g.oh as i64);
                let y = fx.b.ins().imul_imm_s(oy, g.stride[0] as i64);
                let y = fx.b.ins().iadd_imm_s(y, dy - g.pad[0] as i64);
                let (zero, ih) = (fx.i(0), fx.i(g.ih as i64));
                let y = fx.b.ins().smax(y, zero);
                let y = fx.b.ins().smin(y, ih);
                let at = fx.b.ins().imul_imm_s(nb, g.ih as i64);
                let at = fx.b.ins().iadd(at, y);
                fx.b.ins().imul_imm_s(at, (g.iw * g.ic) as i64)
            };
            let lo = image_row(fx, row0, 0);
            let hi = image_row(fx, last, ((g.kh - 1) * g.dilation[0] + 1) as i64);
            (lo, fx.b.ins().smax(hi, lo))
        }
        _ => {
            let base = fx.b.ins().imul_imm_s(bi, c.m as i64);
            let first = fx.b.ins().iadd(base, row0);
            let end = fx.b.ins().iadd(base, last);
            let end = fx.b.ins().iadd_imm_s(end, 1);
            (fx.b.ins().imul_imm_s(first, c.k as i64), fx.b.ins().imul_imm_s(end, c.k as i64))
        }
    };
    // Never past the scratch the bound reserved, should the two computations ever differ.
    let len = fx.b.ins().isub(hi, lo);
    let bound = fx.i(bound as i64);
    (lo, fx.b.ins().smin(len, bound))
}

/// Widens `len` consecutive `d` elements at `src` into f32 at `dst`: fp16 in one runtime call,
/// bf16 four at a time, then the rest; `finite`: the values hold no inf or NaN.
pub(super) fn widen_run(fx: &mut Fx, d: DType, src: Value, dst: Value, len: usize, finite: bool) {
    if d == DType::F16 {
        // One runtime call: F16C converts eight values per instruction where the CPU has it,
        // Cranelift's software widening takes several per four.
        let n = fx.i(len as i64);
        fx.libcall(f16c_core::abi::Libcall::WidenF16, &[src, dst, n]);
        return;
    }
    let vec_end = len - len % LANES;
    fx.each_n(0, vec_end as i64, LANES as i64, |fx, i| {
        let v = fx.load4_checked(d, src, i, finite);
        fx.store4(DType::F32, dst, i, v);
    });
    fx.each_n(vec_end as i64, len as i64, 1, |fx, i| {
        let v = fx.load(d, src, i);
        fx.store(DType::F32, dst, i, v);
    });
}

/// Reads `len` consecutive elements of `d` from `base[src..]`, converted to f32, handing each to
/// `put(kk, value)` (four at a time, then the rest).
pub(super) fn copy_run(fx: &mut Fx, d: DType, base: Value, src: Value, len: usize, put: impl Fn(&mut Fx, Value, Value)) {
    let vec_end = len - len % LANES;
    each_short(fx, 0, vec_end, LANES, |fx, kk| {
        let at = fx.b.ins().iadd(src, kk);
        let v = fx.load4(d, base, at);
        for l in 0..LANES {
            let x = fx.b.ins().extractlane(v, l as u8);
            let kl = fx.b.ins().iadd_imm_s(kk, l as i64);
            put(fx, kl, x);
        }
    });
    each_short(fx, vec_end, len, 1, |fx, kk| {
        let at = fx.b.ins().iadd(src, kk);
        let v = fx.load(d, base, at);
        put(fx, kk, v);
    });
}

/// `body(kk)` for `kk` in `(start..end).step_by(step)`: unrolled, `kk` a constant, when that
/// is at most [`SHORT_TRIPS`] steps, else a loop. Packing the first convolution of an image
/// network (three channels per tap) spent more on loop control than on its copies.
pub(super) fn each_short(fx: &mut Fx, start: usize, end: usize, step: usize, mut body: impl FnMut(&mut Fx, Value)) {
    if end.saturating_sub(start).div_ceil(step) <= SHORT_TRIPS {
        for kk in (start..end).step_by(step) {
            let kk = fx.i(kk as i64);
            body(fx, kk);
        }
    } else {
        fx.each_n(start as i64, end as i64, step as i64, |fx, kk| {
            body(fx, kk);
        });
    }
}

/// The most steps [`each_short`] unrolls.
pub(super) const SHORT_TRIPS: usize = 4;
