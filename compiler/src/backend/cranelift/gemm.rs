//! Contractions: matmul and conv2d as a packed GEMM with a register-blocked f32x4 FMA
//! micro-kernel; depthwise and transpose convolutions computed directly.
//!
//! GEMM layout (Goto/BLIS style, specialised to static shapes):
//! - `B` (`K × N`) is packed into panels of [`NR`] columns, `[batch][panel][k][NR]` f32. A
//!   constant `B` is packed at compile time in its own type, chunk by chunk of the reduction
//!   (`[batch][chunk][panel][kc][NR]`, so that a work item streams a chunk's panels in order:
//!   resnet18-style's 9 MB weights of its last convolutions were read in 8 KiB pieces 147 KiB
//!   apart, and it took 5–8% longer); an f32 one is used in place, an
//!   f16/bf16 one is widened panel by panel into the kernel's temporary by a first step
//!   (fp16 by one runtime call per run of values, [`widen_run`]: F16C where the CPU has it). A
//!   `B` computed at run time is packed by that first step.
//! - Each work item of the second step takes [`MC`] rows of `A` and walks the reduction in
//!   chunks of about [`KC`] ([`k_chunks`]). Per chunk it packs those rows (converting to f32,
//!   gathering conv windows: an implicit im2col, zero outside the input) into micro-panels
//!   `[kc][MR]` of f32 in this thread's scratch, then multiplies them with the chunk of every
//!   `B` panel of its column group, accumulating into an f32 `C` block in scratch (one `MR ×
//!   NR` tile per micro-panel and panel). Where A's rows already lie in memory as the GEMM's
//!   (a matmul, a 1×1 convolution with stride 1 and no padding: most of a mobilenet) in f32,
//!   or widened so, and every micro-panel is full, nothing is packed: A's rows are read in
//!   place ([`AForm::Rows`]), and the column groups can be one panel wide.
//! - That multiplication is one call of the runtime's native loop where it has one
//!   (`Libcall::GemmTiles`, x86 AVX2 + FMA: 8 lanes, 12 accumulators; it reads an f16/bf16
//!   B in its type), else, as on a CPU without AVX2, the generated 4×8 micro-kernel per tile
//!   (f32x4, 8 accumulators: Cranelift's SIMD is 128-bit). The choice is made at run time by
//!   the `rt` table's entry, and both give the same bits.
//! - After the last chunk, the epilogue adds the bias, rounds once to the contraction's type,
//!   applies the fused elementwise ops (rounding after each, as the graph does), and stores.
//!   Edge tiles use scalar lanes.
//!
//! Accumulation is in f32 in index order of `k`, with FMA: results may differ from the
//! reference interpreter (separate multiply and add) by the reduction tolerance.

use super::emit::{domain, mem, Fx};
use super::legal::{KC, KU, LANES, MR, NR};
use super::lower::{eval_with, row_offset, Context};
use super::narrow::{deferral, Deferral, Staging};
use crate::backend::BackendError;
use crate::lower::{Contraction, ContractionKind, ConvGeometry, Epilogue, EwKind, MatrixLayout, Program};
use cranelift_codegen::ir::condcodes::{FloatCC, IntCC};
use cranelift_codegen::ir::types::{F32, F32X4, I64};
use cranelift_codegen::ir::{InstBuilder, Value};
use f16c_core::abi::{DepthwiseParams, Libcall};
use f16c_dialect::{BinaryOp, DType};

impl Context<'_> {
    pub fn contraction(&mut self, c: &Contraction) -> Result<(), BackendError> {
        if domain(c.a.ty.dtype) == I64 && domain(c.b.ty.dtype) == I64 {
            return self.integer(c);
        }
        if domain(c.a.ty.dtype) != F32 || domain(c.b.ty.dtype) != F32 {
            return Err(self.error(format!("{} contractions are not supported (f32, f16 and bf16 are)", c.a.ty.dtype)));
        }
        match &c.kind {
            ContractionKind::MatMul | ContractionKind::Conv(_) => self.gemm(c),
            ContractionKind::Depthwise(g) => self.depthwise(c, g.clone()),
            ContractionKind::TransposeConv(g) => self.transpose_conv(c, g.clone()),
        }
    }

    fn gemm(&mut self, c: &Contraction) -> Result<(), BackendError> {
        let (batch, m, n, k) = (c.batch, c.m, c.n, c.k);
        let mc = self.row_block();
        let panels = n.div_ceil(NR);
        let panel_elems = k * NR;
        let packed_elems = batch * panels * panel_elems;
        let bdt = c.b.ty.dtype;
        let blocks = m.div_ceil(mc);
        // A narrow constant B is widened once per run into an f32 temporary when several row
        // blocks would each widen it again: more than a few, or two or more for a copy of at
        // most 512 KiB. A B that one row block uses (the deep layers of a CNN at batch 1) is
        // widened chunk by chunk in scratch, at the same cost, and no f32 copy of it exists:
        // widening every small weight once made mobilenet-v2's fp16 activation peak 3.4× its
        // f32 one.
        let gemv = m == 1 && matches!(c.kind, ContractionKind::MatMul);
        // A GEMM of one micro-panel (a deep layer at 2 × 2 pixels) reuses no B value, so
        // chunking its reduction keeps nothing in cache: one chunk (up to a bound on the
        // scratch it takes), each panel of a constant B one sequential stream across the whole
        // reduction (the sums are the same).
        // The one-row matmul reads its panels whole (it takes no scratch per chunk).
        let chunks = if gemv || (m <= MR && k <= ONE_CHUNK_MAX_K) { vec![(0, k)] } else { k_chunks(&c.kind, k) };
        const WIDEN_ONCE_BLOCKS: usize = 4;
        const WIDEN_ONCE_BYTES: usize = 1 << 19;
        // bf16 A and constant B on a host with AVX512-BF16: the runtime multiplies them in
        // bf16 pairs (B packed with its rows interleaved in pairs, read in its type, never
        // widened; every chunk of even length so that no pair straddles two).
        let dot = self.dot_bf16
            && !gemv
            && c.a.ty.dtype == DType::BF16
            && bdt == DType::BF16
            && c.b_constant
            && chunks.iter().all(|(k0, k1)| (k1 - k0) % 2 == 0);
        self.uses_dot_bf16 |= dot;
        let widen_once = !dot && (batch * blocks > WIDEN_ONCE_BLOCKS || (batch * blocks > 1 && packed_elems * 4 <= WIDEN_ONCE_BYTES));
        // Where the packed B lives: a pre-packed constant in its own type, or the kernel
        // temporary in f32 (computed at run time, or widened once).
        let b_slot;
        // A constant B without inf or NaN widens in three instructions per four values.
        let finite = Finite::of(self.program, c);
        let b_finite = finite.weight;
        if c.b_constant {
            // Packed from the program's bytes (little-endian elements): no tensor and no byte
            // copy of the weight on the way (GPT-2's tied embedding is 154 MB).
            if !matches!(&self.program.buffers[c.b.buffer.0].kind, crate::lower::BufferKind::Constant(b) if b.len() == c.b.ty.byte_size()) {
                return Err(self.error("constant weight could not be read"));
            }
            // Packed when the constants section is put together (one weight and its packed
            // copy alive at a time, not every weight and every copy).
            let (pc, pchunks) = (c.clone(), chunks.clone());
            let pack = crate::backend::layout::Pack(std::sync::Arc::new(move |bytes: &[u8], dst: &mut [u8]| pack_b_constant(&pc, bytes, dst, &pchunks, dot)));
            let packed_slot = self.layout.replace_constant_packed(self.current, c.b.buffer, packed_elems * bdt.byte_size(), pack);
            if bdt == DType::F32 || !widen_once {
                // An f16/bf16 one used by few row blocks stays in its type: the compute step
                // widens one chunk of a panel at a time into scratch, next to the A chunk that
                // uses it, and no f32 copy of the weight is ever made.
                b_slot = packed_slot;
            } else {
                // Used by many row blocks: widen it once per run into the temporary.
                b_slot = self.layout.temporary(self.current, packed_elems * 4);
                self.add("_widen_b", batch * panels, packed_elems as f64, move |fx| {
                    let (src, dst) = (fx.buffer(packed_slot), fx.buffer(b_slot));
                    fx.for_items(|fx, p| {
                        let base = fx.b.ins().imul_imm_s(p, panel_elems as i64);
                        let (from, to) = (fx.addr(src, base, bdt.byte_size()), fx.addr(dst, base, 4));
                        widen_run(fx, bdt, from, to, panel_elems, b_finite);
                        vec![]
                    });
                    Ok(())
                })?;
            }
        } else {
            b_slot = self.layout.temporary(self.current, packed_elems * 4);
            let bbuf = c.b.buffer.0;
            // A column-major B (a conv weight computed at run time, OHWI: `B[kk][o] = W[o][kk]`)
            // is read element by element; a row-major one packs four lanes at a time. The JIT
            // read every B as row-major and mixed output channels up (differential tester).
            let col_major = c.b_layout == MatrixLayout::ColMajor;
            self.add("_pack_b", batch * panels, packed_elems as f64, move |fx| {
                let (src, dst) = (fx.buffer(bbuf), fx.buffer(b_slot));
                fx.for_items(|fx, item| {
                    // item = bi * panels + p; B[bi][k][col] at (bi*K + k)*N + col.
                    let bi = fx.b.ins().udiv_imm_s(item, panels as i64);
                    let p = fx.b.ins().urem_imm_s(item, panels as i64);
                    let col0 = fx.b.ins().imul_imm_s(p, NR as i64);
                    let out0 = fx.b.ins().imul_imm_s(item, panel_elems as i64);
                    let row0 = fx.b.ins().imul_imm_s(bi, (k * n) as i64);
                    let full = fx.b.ins().icmp_imm_s(IntCC::SignedLessThanOrEqual, col0, (n - NR.min(n)) as i64);
                    let full = if n < NR || col_major { fx.b.ins().iconst(cranelift_codegen::ir::types::I8, 0) } else { full };
                    fx.for_n(0, k as i64, 1, &[], |fx, kk, _| {
                        let src_row = fx.b.ins().imul_imm_s(kk, n as i64);
                        let src_row = fx.b.ins().iadd(src_row, row0);
                        let src_at = fx.b.ins().iadd(src_row, col0);
                        let dst_at = fx.b.ins().imul_imm_s(kk, NR as i64);
                        let dst_at = fx.b.ins().iadd(dst_at, out0);
                        fx.if_else(
                            full,
                            |fx| {
                                for v in 0..NR / LANES {
                                    let s = fx.b.ins().iadd_imm_s(src_at, (v * LANES) as i64);
                                    let x = fx.load4(bdt, src, s);
                                    let d = fx.b.ins().iadd_imm_s(dst_at, (v * LANES) as i64);
                                    fx.store4(DType::F32, dst, d, x);
                                }
                                vec![]
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
                                vec![]
                            },
                        );
                        vec![]
                    });
                    vec![]
                });
                Ok(())
            })?;
        }
        // The compute step.
        let packed_dt = if c.b_constant && !widen_once { bdt } else { DType::F32 };
        if gemv {
            return self.gemv(c, b_slot, packed_dt, finite);
        }
        let a_panels = mc.div_ceil(MR).min(m.div_ceil(MR));
        let kc_max = chunks.iter().map(|(k0, k1)| k1 - k0).max().unwrap_or(0);
        // (fp16 A) The span of A a row block reads, widened in one runtime call per block
        // (F16C) so that packing reads f32: packing widened each value in software, three
        // channels per tap for the first conv of an image network.
        let band = (c.a.ty.dtype == DType::F16).then(|| a_band_bound(c, mc, a_panels * MR)).filter(|&n| n <= A_BAND_MAX);
        // A whose rows lie in memory as the GEMM's rows, in f32 (or widened so), every
        // micro-panel full: the micro-kernel reads them in place and nothing is packed.
        // (bf16 pairs) A's bf16 rows in place: the runtime pairs them as it reads them.
        let dot_rows = dot && rows_in_place(c) && m % MR == 0;
        let a_form = if rows_in_place(c) && m % MR == 0 && (c.a.ty.dtype == DType::F32 || band.is_some() || dot_rows) { AForm::Rows } else { AForm::Packed };
        let a_elem = if dot_rows { 2 } else { 4 };
        // Scratch: the packed A chunk, the f32 C block (one MR × NR tile per (panel,
        // micro-panel)) that the chunks accumulate into, then (f16/bf16 B) one widened B chunk,
        // then A's band.
        let c_offset = if a_form == AForm::Packed { a_panels * MR * kc_max * 4 } else { 0 };
        let tile_bytes = MR * NR * 4;
        let wide_offset = c_offset + panels * a_panels * tile_bytes;
        let wide_bytes = if packed_dt == DType::F32 { 0 } else { kc_max * NR * 4 };
        let band_offset = wide_offset + wide_bytes;
        let cost = 2.0 * (batch * m * n * k) as f64;
        let groups = column_groups(batch * blocks, panels, a_form == AForm::Packed || band.is_some() || dot);
        let group_panels = panels.div_ceil(groups);
        // Then (f16 output) the finished rows of one micro-panel across the column group, in
        // f32, for the runtime to narrow: in one call when the group is every column (the
        // staged rows are then laid out as the output's), else one per row.
        // (Likewise an f16 result that the epilogue casts to f32 last: rounded to f16 and
        // widened by one call.)
        let deferral = finish_deferral(c, &finite).filter(|d| c.out.ty.dtype == DType::F16 || d.widen);
        let narrowed = c.out.ty.dtype == DType::F16 || deferral.is_some();
        let stage_offset = band_offset + band.unwrap_or(0) * 4;
        let stage_stride = if groups == 1 { n } else { group_panels * NR };
        // Every row of the block staged (and narrowed in one call) where the group is every
        // column and that takes at most STAGE_BLOCK_MAX bytes: one call per micro-panel made
        // cnn_small's first convolution (8 channels) 1.5× slower in fp16 than in f32.
        let stage_block = groups == 1 && a_panels * MR * n * 4 <= STAGE_BLOCK_MAX;
        let stage_rows = if stage_block { a_panels * MR } else { MR };
        let stage_bytes = if narrowed { stage_rows * stage_stride * 4 } else { 0 };
        self.layout.scratch(stage_offset + stage_bytes);
        let multiply = if dot { "bf16 pairs on VDPBF16PS into f32 (the runtime's loop)".to_string() } else { format!("{} (the runtime's AVX-512 or AVX2 loop, else a generated one)", multiply_plan(self.fma)) };
        let b_text = b_plan(c, bdt, widen_once && bdt != DType::F32);
        let a_text = match (a_form, band.is_some()) {
            (AForm::Rows, true) => "A's rows read in place, widened to f32 per row block",
            (AForm::Rows, false) => "A's rows read in place",
            (AForm::Packed, true) => "A widened to f32 per row block, packed per chunk",
            (AForm::Packed, false) => "A packed per chunk",
        };
        let chunks_text = if chunks.len() > 1 { format!(", k in {} chunks", chunks.len()) } else { String::new() };
        let groups_text = if groups > 1 { format!(", {groups} column groups") } else { String::new() };
        self.plan(format!("tiles {MR}x{NR}, {} rows per work item, {multiply}; {b_text}; {a_text}{chunks_text}{groups_text}", mc.min(m)));
        let c = c.clone();
        self.add("", batch * blocks * groups, cost, move |fx| {
            let bases = Bases::new(fx, &c, b_slot, &finite);
            let (a, bp) = (bases.a, bases.b);
            let scratch = fx.scratch;
            let mut result = Ok(());
            fx.for_items(|fx, item| {
                // item = (bi * blocks + blk) * groups + g: row block `blk` of batch `bi`, B
                // panels `group_panels * g ..` of column group `g`.
                let g = fx.b.ins().urem_imm_s(item, groups as i64);
                let rows_item = fx.b.ins().udiv_imm_s(item, groups as i64);
                let bi = fx.b.ins().udiv_imm_s(rows_item, blocks as i64);
                let blk = fx.b.ins().urem_imm_s(rows_item, blocks as i64);
                let row0 = fx.b.ins().imul_imm_s(blk, mc as i64);
                let p0 = fx.b.ins().imul_imm_s(g, group_panels as i64);
                let p1 = fx.b.ins().iadd_imm_s(p0, group_panels as i64);
                let all = fx.i(panels as i64);
                let p1 = fx.b.ins().smin(p1, all);
                // The C tile of panel `p` and micro-panel `ip`.
                let tile_at = |fx: &mut Fx, p: Value, ip: Value| {
                    let t = fx.b.ins().imul_imm_s(p, a_panels as i64);
                    let t = fx.b.ins().iadd(t, ip);
                    let t = fx.b.ins().imul_imm_s(t, tile_bytes as i64);
                    let t = fx.b.ins().iadd_imm_s(t, c_offset as i64);
                    fx.b.ins().iadd(scratch, t)
                };
                // How many of this block's micro-panels have rows (the last block is short).
                let m_v = fx.i(m as i64);
                let left = fx.b.ins().isub(m_v, row0);
                let live = fx.b.ins().iadd_imm_s(left, MR as i64 - 1);
                let live = fx.b.ins().udiv_imm_s(live, MR as i64);
                let most = fx.i(a_panels as i64);
                let live = fx.b.ins().smin(live, most);
                // For each B panel `p` of the group: `panel(p)` (its result is handed on), then
                // `body(p, ip, tile, ..)` for each micro-panel `ip` with rows.
                let live_panels = |fx: &mut Fx, panel: &mut dyn FnMut(&mut Fx, Value) -> Value, body: &mut dyn FnMut(&mut Fx, Value, Value, Value, Value)| {
                    fx.for_range(p0, p1, 1, &[], |fx, p, _| {
                        let per_panel = panel(fx, p);
                        let zero = fx.i(0);
                        fx.for_range(zero, live, 1, &[], |fx, ip, _| {
                            let tile = tile_at(fx, p, ip);
                            body(fx, p, ip, tile, per_panel);
                            vec![]
                        });
                        vec![]
                    });
                };
                let (a_src, a_dt) = match band {
                    Some(bound) => {
                        let (lo, len) = a_band_ir(fx, &c, bi, row0, a_panels * MR, bound);
                        let wide = fx.b.ins().iadd_imm_s(scratch, band_offset as i64);
                        let src = fx.addr(a, lo, 2);
                        fx.libcall(f16c_core::abi::Libcall::WidenF16, &[src, wide, len]);
                        // Indexed as A itself: element `lo` of A is the band's first.
                        let back = fx.b.ins().imul_imm_s(lo, 4);
                        (fx.b.ins().isub(wide, back), DType::F32)
                    }
                    None => (a, c.a.ty.dtype),
                };
                // The runtime's native loop over micro-panels and panels (null where it has none).
                let native = fx.libcall_entry(f16c_core::abi::Libcall::GemmTiles);
                let has_native = fx.b.ins().icmp_imm_s(IntCC::NotEqual, native, 0);
                for (ci, &(k0, k1)) in chunks.iter().enumerate() {
                    if a_form == AForm::Packed {
                        pack_a(fx, &c, (a_src, a_dt), bi, row0, scratch, (k0, k1), dot, a_panels);
                    }
                    let kc = k1 - k0;
                    // A constant B is packed chunk by chunk (its panels' chunks in a row), one
                    // packed at run time panel by panel.
                    let chunk_at = if c.b_constant { ChunkAt::by_chunk(panels, k, (k0, k1)) } else { ChunkAt::by_panel(panels, k, (k0, k1)) };
                    // Micro-panel `ip`'s A: packed in scratch, or row `row0 + ip·MR` of batch
                    // `bi` from column k0 in place.
                    let a_at = |fx: &mut Fx, ip: Value| match a_form {
                        AForm::Packed => {
                            let aoff = fx.b.ins().imul_imm_s(ip, (MR * kc * 4) as i64);
                            fx.b.ins().iadd(scratch, aoff)
                        }
                        AForm::Rows => {
                            let r = fx.b.ins().imul_imm_s(ip, MR as i64);
                            let r = fx.b.ins().iadd(r, row0);
                            let at = fx.b.ins().imul_imm_s(bi, m as i64);
                            let at = fx.b.ins().iadd(at, r);
                            let at = fx.b.ins().imul_imm_s(at, k as i64);
                            let at = fx.b.ins().iadd_imm_s(at, k0 as i64);
                            fx.addr(a_src, at, a_elem)
                        }
                    };
                    // This chunk of panel `p` of B, in its packed type.
                    let b_at = |fx: &mut Fx, p: Value| {
                        let at = fx.b.ins().imul_imm_s(p, chunk_at.panel as i64);
                        let b0 = fx.b.ins().imul_imm_s(bi, chunk_at.batch as i64);
                        let at = fx.b.ins().iadd(at, b0);
                        let at = fx.b.ins().iadd_imm_s(at, chunk_at.base as i64);
                        fx.addr(bp, at, packed_dt.byte_size())
                    };
                    // One call for the group's panels and the block's micro-panels; it reads
                    // B in its type.
                    let native_call = |fx: &mut Fx| {
                        use f16c_core::abi::tiles::{ACCUMULATE, PACKED_A};
                        // (bf16 pairs: A's bf16 rows, in place or packed as rows.)
                        let a_flag = if a_form == AForm::Packed && !dot { PACKED_A } else { 0 };
                        let flags = fx.i((a_flag | b_flag(packed_dt) | if ci > 0 { ACCUMULATE } else { 0 }) as i64);
                        let zero = fx.i(0);
                        // None for the last groups when the panels run out before them.
                        let count = fx.b.ins().isub(p1, p0);
                        let count = fx.b.ins().smax(count, zero);
                        let (a, b, tiles) = (a_at(fx, zero), b_at(fx, p0), tile_at(fx, p0, zero));
                        let a_stride = fx.i(if dot && a_form == AForm::Packed { kc * 2 } else { k * a_elem } as i64);
                        let b_stride = fx.i((chunk_at.panel * packed_dt.byte_size()) as i64);
                        let (kv, tiles_stride) = (fx.i(kc as i64), fx.i((a_panels * tile_bytes) as i64));
                        let args = [a, a_stride, b, b_stride, kv, tiles, tiles_stride, live, count, flags];
                        if dot {
                            fx.libcall(f16c_core::abi::Libcall::GemmPairsBf16, &args);
                        } else {
                            fx.libcall_at(f16c_core::abi::Libcall::GemmTiles, native, &args);
                        }
                    };
                    if dot {
                        // bf16 pairs have no generated micro-kernel (the code requires
                        // AVX512-BF16).
                        native_call(fx);
                        continue;
                    }
                    fx.if_else(
                        has_native,
                        |fx| {
                            native_call(fx);
                            vec![]
                        },
                        |fx| {
                            // f32 B in place; f16/bf16 widened into scratch, a panel at a time.
                            let mut b_chunk = |fx: &mut Fx, p: Value| {
                                let b = b_at(fx, p);
                                if packed_dt == DType::F32 {
                                    return b;
                                }
                                let wide = fx.b.ins().iadd_imm_s(scratch, wide_offset as i64);
                                widen_run(fx, packed_dt, b, wide, kc * NR, b_finite);
                                wide
                            };
                            live_panels(fx, &mut b_chunk, &mut |fx, _, ip, tile, b| {
                                let a = a_at(fx, ip);
                                micro_kernel(fx, (a_form, a, k * 4), b, kc, tile, ci > 0);
                            });
                            vec![]
                        },
                    );
                }
                if !narrowed {
                    live_panels(fx, &mut |fx, _| fx.i(0), &mut |fx, p, ip, tile, _| {
                        let r0 = fx.b.ins().imul_imm_s(ip, MR as i64);
                        let r0 = fx.b.ins().iadd(r0, row0);
                        let col0 = fx.b.ins().imul_imm_s(p, NR as i64);
                        if let Err(e) = store_tile(fx, &c, tile, bi, r0, col0, &bases, None) {
                            result = Err(e);
                        }
                    });
                    return vec![];
                }
                // f16: each micro-panel's rows across the group's panels, staged, then narrowed
                // (the whole block's rows in one call where they are staged together).
                let origin = fx.b.ins().imul_imm_s(p0, NR as i64);
                let stage_base = fx.b.ins().iadd_imm_s(scratch, stage_offset as i64);
                // Of up to `most` rows from `r0`: how many exist, and the output element of the
                // first one's column 0.
                let row_span = |fx: &mut Fx, r0: Value, most: Value| -> (Value, Value) {
                    let left = fx.b.ins().isub(m_v, r0);
                    let rows = fx.b.ins().smin(most, left);
                    let grow = fx.b.ins().imul_imm_s(bi, m as i64);
                    let grow = fx.b.ins().iadd(grow, r0);
                    (rows, fx.b.ins().imul_imm_s(grow, n as i64))
                };
                // Up to `most` rows from `r0` (those that exist), staged from `stage_base` laid
                // out as the output's (every column), narrowed in one call.
                let narrow_rows = |fx: &mut Fx, r0: Value, most: Value| {
                    let (rows, to) = row_span(fx, r0, most);
                    let count = fx.b.ins().imul_imm_s(rows, n as i64);
                    let zero = fx.i(0);
                    Staging::new(stage_base, deferral.as_ref()).narrow(fx, zero, bases.out, to, count);
                };
                let zero = fx.i(0);
                fx.for_range(zero, live, 1, &[], |fx, ip, _| {
                    let r0 = fx.b.ins().imul_imm_s(ip, MR as i64);
                    let r0 = fx.b.ins().iadd(r0, row0);
                    let base = if stage_block {
                        let at = fx.b.ins().imul_imm_s(ip, (MR * stage_stride * 4) as i64);
                        fx.b.ins().iadd(stage_base, at)
                    } else {
                        stage_base
                    };
                    let staged = Staged { stage: Staging::new(base, deferral.as_ref()), stride: stage_stride, origin, deferral: deferral.clone() };
                    fx.for_range(p0, p1, 1, &[], |fx, p, _| {
                        let tile = tile_at(fx, p, ip);
                        let col0 = fx.b.ins().imul_imm_s(p, NR as i64);
                        if let Err(e) = store_tile(fx, &c, tile, bi, r0, col0, &bases, Some(&staged)) {
                            result = Err(e);
                        }
                        vec![]
                    });
                    let mr = fx.i(MR as i64);
                    if stage_block {
                        // Narrowed with the block's other rows, below.
                    } else if groups == 1 {
                        narrow_rows(fx, r0, mr);
                    } else {
                        // The group's columns `origin..min(p1 · NR, n)` of each row (none
                        // for the last groups when the panels run out before them).
                        let (rows, to) = row_span(fx, r0, mr);
                        let end = fx.b.ins().imul_imm_s(p1, NR as i64);
                        let n_v = fx.i(n as i64);
                        let end = fx.b.ins().smin(end, n_v);
                        let width = fx.b.ins().isub(end, origin);
                        let zero = fx.i(0);
                        let width = fx.b.ins().smax(width, zero);
                        let to = fx.b.ins().iadd(to, origin);
                        fx.for_range(zero, rows, 1, &[], |fx, r, _| {
                            let from = fx.b.ins().imul_imm_s(r, stage_stride as i64);
                            let row = fx.b.ins().imul_imm_s(r, n as i64);
                            let to = fx.b.ins().iadd(to, row);
                            staged.stage.narrow(fx, from, bases.out, to, width);
                            vec![]
                        });
                    }
                    vec![]
                });
                if stage_block {
                    let most = fx.b.ins().imul_imm_s(live, MR as i64);
                    narrow_rows(fx, row0, most);
                }
                vec![]
            });
            result
        })
    }

    /// Depthwise conv2d, directly: one output row (`b`, `oy`) per work item; for each output
    /// pixel, four channels at a time (then one), the taps in the reference's order (`ky`, then
    /// `kx`), multiply then add (rounding each, as the reference does), then [`finish`]: bias,
    /// one rounding, the fused epilogue (batch norm, ReLU6), the store. The taps are unrolled
    /// at constant offsets from one address, and those in the padding skipped, as TOSA does:
    /// the output columns are emitted in runs whose windows have the same columns inside the
    /// image ([`TapClasses`]: at a 3×3 window with padding 1, the first column, the interior,
    /// the last), each with its own taps, and a window row that some output row lacks is
    /// checked once per row. The interior computes [`DEPTHWISE_STRIP`] pixels at a time.
    ///
    /// With channel multiplier 1, where the runtime has the native loop
    /// ([`Libcall::DepthwiseRow`](f16c_core::abi::Libcall): AVX-512 or AVX2, the same bits),
    /// one call computes the row instead: finished, into the output row or the staging area,
    /// where the epilogue is only the bias and constant bounds ([`NativeFinish`]); otherwise
    /// its sums, into the staging area or scratch, which the generated code then finishes
    /// channel vector by channel vector.
    fn depthwise(&mut self, c: &Contraction, g: ConvGeometry) -> Result<(), BackendError> {
        let mult = g.oc / g.ic.max(1);
        let vector_epilogue = c.epilogue.as_ref().is_none_or(|e| e.expr.is_f32_domain());
        let vector = mult == 1 && g.oc >= LANES && domain(c.out.ty.dtype) == F32 && vector_epilogue;
        let finite = Finite::of(self.program, c);
        let w_finite = finite.weight;
        // The window rows and columns each output row and column has inside the image (the
        // others fall in the padding): a column's are fixed in the code of its run of columns,
        // a row's are checked per row where some row lacks one.
        let row_taps = TapClasses::new(g.oh, g.ih, g.kh, g.stride[0], g.dilation[0], g.pad[0]);
        let col_classes = TapClasses::new(g.ow, g.iw, g.kw, g.stride[1], g.dilation[1], g.pad[2]).0;
        // An f16/bf16 input is widened into scratch a row at a time, into a ring of kh rows
        // (`[kh][iw][ic]` f32) tagged with the row each slot holds (`b·ih + y`), so that the
        // rows consecutive output rows share are widened once per call, not once per output
        // row that reads them. With dilation 1 row `key` lives in slot `key mod kh`, which the
        // kh rows of one window never share; a dilated window's rows use slots 0..kh in order
        // (and are widened again for the next output row). f16/bf16 weights are widened once
        // per call, rather than once per tap of every output pixel.
        let widen = c.a.ty.dtype != DType::F32;
        let widen_w = c.b.ty.dtype != DType::F32;
        let row_elems = g.iw * g.ic;
        let ring_bytes = if widen { g.kh * row_elems * 4 } else { 0 };
        let w_elems = g.kh * g.kw * g.oc;
        let w_bytes = if widen_w { w_elems * 4 } else { 0 };
        let tags_bytes = if widen { g.kh * 8 } else { 0 };
        // An f16 output row is staged in f32 and narrowed by one runtime call (an f16 result
        // cast to f32 last: rounded and widened by one call).
        let deferral = finish_deferral(c, &finite).filter(|d| c.out.ty.dtype == DType::F16 || d.widen);
        let narrowed = c.out.ty.dtype == DType::F16 || deferral.is_some();
        let stage_offset = ring_bytes + w_bytes + tags_bytes;
        let stage_bytes = if narrowed { g.ow * g.oc * 4 } else { 0 };
        // The native loop's operands: the window's row addresses, its parameters, an f16/bf16
        // bias widened (where the loop adds it), and (where it leaves the finish to the
        // generated code and no staging area takes them) the row's sums.
        let native_rows = mult == 1;
        let native_finish = native_rows.then(|| NativeFinish::of(c, &finite, deferral.as_ref(), g.oc)).flatten();
        let widen_bias = native_finish.is_some() && c.bias.as_ref().is_some_and(|b| b.ty.dtype != DType::F32);
        let rows_offset = (stage_offset + stage_bytes).next_multiple_of(64);
        let params_offset = rows_offset + g.kh * 8;
        let bias_offset = params_offset + std::mem::size_of::<DepthwiseParams>();
        let sums_offset = bias_offset + if widen_bias { g.oc * 4 } else { 0 };
        let sums_bytes = if narrowed || native_finish.is_some() { 0 } else { g.ow * g.oc * 4 };
        self.layout.scratch(if native_rows { sums_offset + sums_bytes } else { stage_offset + stage_bytes });
        let loop_text = if native_rows {
            format!("a row of {} pixels per work item by the runtime's AVX-512 or AVX2 loop (else a generated one), {}", g.ow, if native_finish.is_some() { "the loop finishing it" } else { "the finish generated" })
        } else {
            format!("a row of {} pixels per work item, channel multiplier {mult}, generated", g.ow)
        };
        let widen_text = match (widen, widen_w) {
            (true, true) => "; input rows widened to f32 into a ring of window rows, weights once per call",
            (true, false) => "; input rows widened to f32 into a ring of window rows",
            (false, true) => "; weights widened to f32 once per call",
            (false, false) => "",
        };
        self.plan(format!("depthwise: {loop_text}{widen_text}"));
        let params = DepthwiseParams {
            kh: g.kh as u64,
            kw: g.kw as u64,
            channels: g.oc as u64,
            in_width: g.iw as u64,
            out_width: g.ow as u64,
            stride: g.stride[1] as u64,
            dilation: g.dilation[1] as u64,
            pad: g.pad[2] as u64,
            bias: 0,
            bounds: 0,
            bound_tests: 0,
            canonical: 0,
            thresholds: [0.0; 4],
            bound_values: [0.0; 4],
        };
        let params = native_finish.as_ref().map_or(params, |f| f.params(params));
        let c = c.clone();
        let cost = 2.0 * (g.n * g.oh * g.ow * g.oc * g.kh * g.kw) as f64;
        self.add("", g.n * g.oh, cost, move |fx| {
            let bases = Bases::new(fx, &c, c.b.buffer.0, &finite);
            let out = bases.out;
            let (w, wd) = if widen_w {
                let wide = fx.b.ins().iadd_imm_s(fx.scratch, ring_bytes as i64);
                widen_run(fx, c.b.ty.dtype, bases.b, wide, w_elems, false);
                (wide, DType::F32)
            } else {
                (bases.b, c.b.ty.dtype)
            };
            let od = c.out.ty.dtype;
            let tags = fx.b.ins().iadd_imm_s(fx.scratch, (ring_bytes + w_bytes) as i64);
            let stage = narrowed.then(|| Staging::new(fx.b.ins().iadd_imm_s(fx.scratch, stage_offset as i64), deferral.as_ref()));
            if widen {
                let none = fx.i(-1);
                for slot in 0..g.kh {
                    fx.b.ins().store(mem(), none, tags, (slot * 8) as i32);
                }
            }
            // The tag of input row `y` of image `b`, and its ring slot (for window row `ky`).
            let row_key = |fx: &mut Fx, b: Value, y: Value| -> Value {
                let key = fx.b.ins().imul_imm_s(b, g.ih as i64);
                fx.b.ins().iadd(key, y)
            };
            let slot_of = |fx: &mut Fx, b: Value, y: Value, ky: Value| -> Value {
                if g.dilation[0] == 1 {
                    let key = row_key(fx, b, y);
                    fx.b.ins().urem_imm_s(key, g.kh as i64)
                } else {
                    ky
                }
            };
            // Where the taps read: the input, or its widened rows.
            let (x, xd) = if widen { (fx.scratch, DType::F32) } else { (bases.a, c.a.ty.dtype) };
            let native = native_rows.then(|| fx.libcall_entry(Libcall::DepthwiseRow));
            let params_at = fx.b.ins().iadd_imm_s(fx.scratch, params_offset as i64);
            if native_rows {
                // The fixed words, then the bias address (0: none, or left to the finish here).
                let bias_word = std::mem::offset_of!(DepthwiseParams, bias) / 8;
                for (i, word) in params.words().into_iter().enumerate().filter(|&(i, _)| i != bias_word) {
                    let word = fx.i(word as i64);
                    fx.b.ins().store(mem(), word, params_at, (8 * i) as i32);
                }
                let bias = match (&native_finish, bases.bias, &c.bias) {
                    (Some(_), Some(bias), Some(b)) if widen_bias => {
                        let wide = fx.b.ins().iadd_imm_s(fx.scratch, bias_offset as i64);
                        widen_run(fx, b.ty.dtype, bias, wide, g.oc, false);
                        wide
                    }
                    (Some(_), Some(bias), _) => bias,
                    _ => fx.i(0),
                };
                fx.b.ins().store(mem(), bias, params_at, (8 * bias_word) as i32);
            }
            let err = std::cell::RefCell::new(Ok(()));
            fx.for_items(|fx, row| {
                let b = fx.b.ins().udiv_imm_s(row, g.oh as i64);
                let oy = fx.b.ins().urem_imm_s(row, g.oh as i64);
                // Window row ky's input row and whether it lies inside the image.
                let window_rows: Vec<(Value, Value)> = (0..g.kh)
                    .map(|ky| {
                        let kyv = fx.i(ky as i64);
                        let y = window_coord(fx, oy, kyv, g.stride[0], g.dilation[0], g.pad[0]);
                        (y, in_range(fx, y, g.ih))
                    })
                    .collect();
                // The byte offset of window row ky's widened row.
                let mut ring_offs = Vec::new();
                if widen {
                    for (ky, &(y, ok_y)) in window_rows.iter().enumerate() {
                        let kyv = fx.i(ky as i64);
                        let slot = slot_of(fx, b, y, kyv);
                        ring_offs.push(fx.b.ins().imul_imm_s(slot, (row_elems * 4) as i64));
                        fx.if_then(ok_y, |fx| {
                            let key = row_key(fx, b, y);
                            let tag = fx.b.ins().imul_imm_s(slot, 8);
                            let tag = fx.b.ins().iadd(tags, tag);
                            let held = fx.b.ins().load(I64, mem(), tag, 0);
                            let stale = fx.b.ins().icmp(IntCC::NotEqual, held, key);
                            fx.if_then(stale, |fx| {
                                let zero = fx.i(0);
                                let src = nhwc_index(fx, &g, b, y, zero, zero);
                                let src = fx.addr(bases.a, src, c.a.ty.dtype.byte_size());
                                let dst = fx.b.ins().iadd(fx.scratch, ring_offs[ky]);
                                widen_run(fx, c.a.ty.dtype, src, dst, row_elems, false);
                                fx.b.ins().store(mem(), key, tag, 0);
                            });
                        });
                    }
                }
                // Window row ky's validity, checked where some output row lacks it (a row
                // whose tap falls in the padding skips it, as TOSA does).
                let zero = fx.i(0);
                let y0 = window_coord(fx, oy, zero, g.stride[0], 1, g.pad[0]);
                let guards: Vec<Option<Value>> = window_rows.iter().enumerate().map(|(ky, &(_, ok))| row_taps.guarded(ky).then_some(ok)).collect();
                // The sums of output channel `o` (four from `o` when `lanes`) of `count`
                // pixels from `ox`, over the window rows this row has and columns `kxs`: for
                // each tap (in the reference's order: `ky`, then `kx`) the weight is loaded
                // once for the pixels, whose sums are independent chains.
                let sums = |fx: &mut Fx, ox: Value, o: Value, count: usize, lanes: bool, kxs: (usize, usize)| -> Vec<Value> {
                    let ch = if mult == 1 { o } else { fx.b.ins().udiv_imm_s(o, mult as i64) };
                    let zero = fx.i(0);
                    let x0 = window_coord(fx, ox, zero, g.stride[1], 1, g.pad[2]);
                    let xi = if widen { nhwc_index(fx, &g, zero, zero, x0, ch) } else { nhwc_index(fx, &g, b, y0, x0, ch) };
                    let xp = fx.addr(x, xi, xd.byte_size());
                    let wp = fx.addr(w, o, wd.byte_size());
                    let init = fx.f(if lanes { F32X4 } else { F32 }, 0.0);
                    let mut acc = vec![init; count];
                    for (ky, guard) in guards.iter().enumerate() {
                        if !row_taps.ever(ky) {
                            continue;
                        }
                        // Window row ky: its ring slot, or `dilation` input rows down.
                        let (xp, row_off) = if widen { (fx.b.ins().iadd(xp, ring_offs[ky]), 0) } else { (xp, ky * g.dilation[0] * g.iw) };
                        let taps = |fx: &mut Fx, acc: &[Value]| -> Vec<Value> {
                            let mut acc = acc.to_vec();
                            for kx in kxs.0..kxs.1 {
                                let w_off = ((ky * g.kw + kx) * g.oc * wd.byte_size()) as i32;
                                let wv = if lanes { fx.load4_checked_at(wd, wp, w_off, w_finite) } else { fx.load_at(wd, wp, w_off) };
                                for (j, acc) in acc.iter_mut().enumerate() {
                                    let x_off = ((row_off + kx * g.dilation[1] + j * g.stride[1]) * g.ic * xd.byte_size()) as i32;
                                    let xv = if lanes { fx.load4_at(xd, xp, x_off) } else { fx.load_at(xd, xp, x_off) };
                                    let p = fx.b.ins().fmul(xv, wv);
                                    *acc = fx.b.ins().fadd(*acc, p);
                                }
                            }
                            acc
                        };
                        acc = match guard {
                            Some(ok) => fx.if_else(*ok, |fx| taps(fx, &acc), |_| acc.clone()),
                            None => taps(fx, &acc),
                        };
                    }
                    acc
                };
                // Output pixel `ox`: its column, its element offset, its epilogue inputs' rows.
                let pixel = |fx: &mut Fx, ox: Value| -> (Value, Value, Vec<Value>) {
                    let pix = fx.b.ins().imul_imm_s(row, g.ow as i64);
                    let pix = fx.b.ins().iadd(pix, ox);
                    let out_base = fx.b.ins().imul_imm_s(pix, g.oc as i64);
                    let row_offs = match &c.epilogue {
                        Some(e) => e.inputs.iter().map(|i| row_offset(fx, pix, &e.rows_shape, &i.row_strides)).collect(),
                        None => Vec::new(),
                    };
                    (ox, out_base, row_offs)
                };
                // Channels from `o` (four, or one) of a pixel, finished and stored.
                let put = |fx: &mut Fx, (ox, out_base, row_offs): &(Value, Value, Vec<Value>), o: Value, acc: Value, lanes: bool, cols: &Columns| {
                    match finish(fx, &c, acc, o, &bases, row_offs, lanes, cols, deferral.as_ref()) {
                        Ok(v) => match stage {
                            // Staged at the pixel's place in the row.
                            Some(stage) => {
                                let at = fx.b.ins().imul_imm_s(*ox, g.oc as i64);
                                let at = fx.b.ins().iadd(at, o);
                                stage.put(fx, at, v);
                            }
                            None => {
                                let at = fx.b.ins().iadd(*out_base, o);
                                if lanes { fx.store4(od, out, at, v) } else { fx.store(od, out, at, v) }
                            }
                        },
                        Err(e) => *err.borrow_mut() = Err(e),
                    }
                };
                // `body` for each output channel `o`: four at a time (`lanes`) where the vector
                // path applies, then one at a time.
                let each_channel = |fx: &mut Fx, body: &mut dyn FnMut(&mut Fx, Value, bool)| {
                    let vec_end = if vector { g.oc - g.oc % LANES } else { 0 };
                    for (from, to, lanes) in [(0, vec_end, true), (vec_end, g.oc, false)] {
                        if from == to {
                            continue;
                        }
                        let step = if lanes { LANES } else { 1 };
                        fx.for_n(from as i64, to as i64, step as i64, &[], |fx, o, _| {
                            body(fx, o, lanes);
                            vec![]
                        });
                    }
                };
                // Every channel of `count` pixels from `ox`, with window columns `kxs`.
                let channels = |fx: &mut Fx, ox: Value, count: usize, kxs: (usize, usize)| {
                    let pixels: Vec<_> = (0..count)
                        .map(|j| {
                            let oxj = fx.b.ins().iadd_imm_s(ox, j as i64);
                            pixel(fx, oxj)
                        })
                        .collect();
                    each_channel(fx, &mut |fx, o, lanes| {
                        let acc = sums(fx, ox, o, count, lanes, kxs);
                        let cols = Columns::load(fx, &c, o, &bases, lanes);
                        for (px, acc) in pixels.iter().zip(acc) {
                            put(fx, px, o, acc, lanes, &cols);
                        }
                    });
                };
                // Output columns by the window columns they have: runs of DEPTHWISE_STRIP
                // pixels where the run is that long (the interior), then single pixels.
                let generated = |fx: &mut Fx| {
                    for class in &col_classes {
                        let len = class.end - class.start;
                        let strip = if len >= DEPTHWISE_STRIP { DEPTHWISE_STRIP } else { 1 };
                        let full = class.start + len / strip * strip;
                        fx.for_n(class.start as i64, full as i64, strip as i64, &[], |fx, ox, _| {
                            channels(fx, ox, strip, class.taps);
                            vec![]
                        });
                        if full < class.end {
                            fx.for_n(full as i64, class.end as i64, 1, &[], |fx, ox, _| {
                                channels(fx, ox, 1, class.taps);
                                vec![]
                            });
                        }
                    }
                    vec![]
                };
                // The native loop's row: finished by the loop itself, or its sums finished
                // here, channel vector by channel vector, pixel by pixel.
                let native_row = |fx: &mut Fx, native: Value| {
                    let rows_at = fx.b.ins().iadd_imm_s(fx.scratch, rows_offset as i64);
                    for (ky, &(y, ok_y)) in window_rows.iter().enumerate() {
                        let p = if widen {
                            fx.b.ins().iadd(fx.scratch, ring_offs[ky])
                        } else {
                            let zero = fx.i(0);
                            let at = nhwc_index(fx, &g, b, y, zero, zero);
                            fx.addr(bases.a, at, 4)
                        };
                        let null = fx.i(0);
                        let p = fx.b.ins().select(ok_y, p, null);
                        fx.b.ins().store(mem(), p, rows_at, (ky * 8) as i32);
                    }
                    // The row's values go where they are stored (staged, or the output's
                    // f32 row), or its sums into scratch to be finished.
                    let sums = match stage {
                        Some(stage) => stage.base,
                        None if native_finish.is_some() => {
                            let at = fx.b.ins().imul_imm_s(row, (g.ow * g.oc) as i64);
                            fx.addr(out, at, 4)
                        }
                        None => fx.b.ins().iadd_imm_s(fx.scratch, sums_offset as i64),
                    };
                    fx.libcall_at(Libcall::DepthwiseRow, native, &[rows_at, w, sums, params_at]);
                    if native_finish.is_some() {
                        return vec![];
                    }
                    each_channel(fx, &mut |fx, o, lanes| {
                        let cols = Columns::load(fx, &c, o, &bases, lanes);
                        fx.for_n(0, g.ow as i64, 1, &[], |fx, ox, _| {
                            let px = pixel(fx, ox);
                            let at = fx.b.ins().imul_imm_s(ox, g.oc as i64);
                            let at = fx.b.ins().iadd(at, o);
                            let acc = if lanes { fx.load4(DType::F32, sums, at) } else { fx.load(DType::F32, sums, at) };
                            put(fx, &px, o, acc, lanes, &cols);
                            vec![]
                        });
                    });
                    vec![]
                };
                match native {
                    Some(native) => {
                        let has_native = fx.b.ins().icmp_imm_s(IntCC::NotEqual, native, 0);
                        fx.if_else(has_native, |fx| native_row(fx, native), generated);
                    }
                    None => {
                        generated(fx);
                    }
                }
                if let Some(stage) = stage {
                    let zero = fx.i(0);
                    let to = fx.b.ins().imul_imm_s(row, (g.ow * g.oc) as i64);
                    let n = fx.i((g.ow * g.oc) as i64);
                    stage.narrow(fx, zero, out, to, n);
                }
                vec![]
            });
            err.into_inner()
        })
    }

    fn transpose_conv(&mut self, c: &Contraction, g: ConvGeometry) -> Result<(), BackendError> {
        if c.epilogue.is_some() {
            return Err(self.error("a transpose convolution with a fused epilogue"));
        }
        let finite = Finite::of(self.program, c);
        self.plan("an output row per work item, its taps gathered (no micro-kernel)".to_string());
        let c = c.clone();
        let cost = 2.0 * (g.n * g.ih * g.iw * g.oc * g.kh * g.kw * g.ic) as f64;
        self.add("", g.n * g.oh, cost, move |fx| {
            let bases = Bases::new(fx, &c, c.b.buffer.0, &finite);
            let (x, w, out) = (bases.a, bases.b, bases.out);
            let (xd, wd, od) = (c.a.ty.dtype, c.b.ty.dtype, c.out.ty.dtype);
            let err = std::cell::RefCell::new(Ok(()));
            fx.for_items(|fx, row| {
                let b = fx.b.ins().udiv_imm_s(row, g.oh as i64);
                let oy = fx.b.ins().urem_imm_s(row, g.oh as i64);
                fx.for_n(0, g.ow as i64, 1, &[], |fx, ox, _| {
                    fx.for_n(0, g.oc as i64, 1, &[], |fx, o, _| {
                        let init = fx.f(F32, 0.0);
                        // Contributions in input order (iy, ix), as the reference adds them.
                        let acc = fx.for_n(0, g.ih as i64, 1, &[init], |fx, iy, acc| {
                            let ky = tap(fx, oy, iy, g.stride[0], g.pad[0]);
                            let ok_y = in_range(fx, ky, g.kh);
                            fx.if_else(
                                ok_y,
                                |fx| {
                                    fx.for_n(0, g.iw as i64, 1, acc, |fx, ix, acc| {
                                        let kx = tap(fx, ox, ix, g.stride[1], g.pad[2]);
                                        let ok_x = in_range(fx, kx, g.kw);
                                        fx.if_else(
                                            ok_x,
                                            |fx| {
                                                let p = fx.b.ins().imul_imm_s(b, g.ih as i64);
                                                let p = fx.b.ins().iadd(p, iy);
                                                let p = fx.b.ins().imul_imm_s(p, g.iw as i64);
                                                let p = fx.b.ins().iadd(p, ix);
                                                let xbase = fx.b.ins().imul_imm_s(p, g.ic as i64);
                                                let q = fx.b.ins().imul_imm_s(o, g.kh as i64);
                                                let q = fx.b.ins().iadd(q, ky);
                                                let q = fx.b.ins().imul_imm_s(q, g.kw as i64);
                                                let q = fx.b.ins().iadd(q, kx);
                                                let wbase = fx.b.ins().imul_imm_s(q, g.ic as i64);
                                                let z = fx.f(F32, 0.0);
                                                let s = fx.for_n(0, g.ic as i64, 1, &[z], |fx, ch, s| {
                                                    let xi = fx.b.ins().iadd(xbase, ch);
                                                    let wi = fx.b.ins().iadd(wbase, ch);
                                                    let xv = fx.load(xd, x, xi);
                                                    let wv = fx.load(wd, w, wi);
                                                    let pr = fx.b.ins().fmul(xv, wv);
                                                    vec![fx.b.ins().fadd(s[0], pr)]
                                                })[0];
                                                vec![fx.b.ins().fadd(acc[0], s)]
                                            },
                                            |_| acc.to_vec(),
                                        )
                                    })
                                },
                                |_| acc.to_vec(),
                            )
                        })[0];
                        // Bias and the one rounding (transpose convolutions take no epilogue).
                        let cols = Columns::load(fx, &c, o, &bases, false);
                        match finish(fx, &c, acc, o, &bases, &[], false, &cols, None) {
                            Ok(v) => {
                                let pix = fx.b.ins().imul_imm_s(row, g.ow as i64);
                                let pix = fx.b.ins().iadd(pix, ox);
                                let at = fx.b.ins().imul_imm_s(pix, g.oc as i64);
                                let at = fx.b.ins().iadd(at, o);
                                fx.store(od, out, at, v);
                            }
                            Err(e) => *err.borrow_mut() = Err(e),
                        }
                        vec![]
                    });
                    vec![]
                });
                vec![]
            });
            err.into_inner()
        })
    }
}

impl Context<'_> {
    /// An integer matmul, conv2d or depthwise conv2d (i8 data, i32 result): one output row per
    /// work item, each output the sum over `k` of `(a − a_zp)·(b − b_zp)` in i64, in the
    /// reference's order, plus the bias, wrapped to the result type; taps in the padding are
    /// skipped. Exact, so bit-identical to the reference. Scalar: no packing, no vectors.
    fn integer(&mut self, c: &Contraction) -> Result<(), BackendError> {
        if c.epilogue.is_some() {
            return Err(self.error("an integer contraction with a fused epilogue"));
        }
        self.plan("an output row per work item, integer multiply-adds (no micro-kernel)".to_string());
        let c = c.clone();
        let cost = (c.batch * c.m * c.n * c.k) as f64;
        self.add("", c.batch * c.m, cost, move |fx| {
            let (a, b, out) = (fx.buffer(c.a.buffer.0), fx.buffer(c.b.buffer.0), fx.buffer(c.out.buffer.0));
            let bias = c.bias.as_ref().map(|o| (fx.buffer(o.buffer.0), o.ty.dtype, o.ty.num_elements()));
            let (da, db) = (c.a.ty.dtype, c.b.ty.dtype);
            let (za, zb) = c.zp;
            // acc + (a[ia] − za)·(b[ib] − zb), the term dropped where `valid` is false.
            let mac = |fx: &mut Fx, acc: Value, ia: Value, ib: Value, valid: Option<Value>| -> Value {
                let ia = match valid {
                    Some(v) => {
                        let zero = fx.i(0);
                        fx.b.ins().select(v, ia, zero)
                    }
                    None => ia,
                };
                let x = fx.load(da, a, ia);
                let x = fx.b.ins().iadd_imm_s(x, -za);
                let w = fx.load(db, b, ib);
                let w = fx.b.ins().iadd_imm_s(w, -zb);
                let p = fx.b.ins().imul(x, w);
                let sum = fx.b.ins().iadd(acc, p);
                match valid {
                    Some(v) => fx.b.ins().select(v, sum, acc),
                    None => sum,
                }
            };
            fx.for_items(|fx, row| {
                fx.for_n(0, c.n as i64, 1, &[], |fx, j, _| {
                    let zero = fx.i(0);
                    let acc = match &c.kind {
                        ContractionKind::MatMul => {
                            // A [batch·m, k] row-major, B [batch][k, n] row-major.
                            let bi = fx.b.ins().udiv_imm_s(row, c.m as i64);
                            let a0 = fx.b.ins().imul_imm_s(row, c.k as i64);
                            let b0 = fx.b.ins().imul_imm_s(bi, (c.k * c.n) as i64);
                            let b0 = fx.b.ins().iadd(b0, j);
                            fx.for_n(0, c.k as i64, 1, &[zero], |fx, kk, acc| {
                                let ia = fx.b.ins().iadd(a0, kk);
                                let ib = fx.b.ins().imul_imm_s(kk, c.n as i64);
                                let ib = fx.b.ins().iadd(b0, ib);
                                vec![mac(fx, acc[0], ia, ib, None)]
                            })[0]
                        }
                        ContractionKind::Conv(g) | ContractionKind::Depthwise(g) => {
                            let depthwise = matches!(c.kind, ContractionKind::Depthwise(_));
                            let g = g.clone();
                            let (nb, oy, ox) = output_pixel(fx, &g, row);
                            // Depthwise: output channel j = channel · M + multiplier.
                            let mult = g.oc / g.ic.max(1);
                            let (channels, ch0) = if depthwise { (1, fx.b.ins().udiv_imm_s(j, mult as i64)) } else { (g.ic, zero) };
                            fx.for_n(0, g.kh as i64, 1, &[zero], |fx, ky, acc| {
                                let iy = window_coord(fx, oy, ky, g.stride[0], g.dilation[0], g.pad[0]);
                                let vy = in_range(fx, iy, g.ih);
                                fx.for_n(0, g.kw as i64, 1, acc, |fx, kx, acc| {
                                    let ix = window_coord(fx, ox, kx, g.stride[1], g.dilation[1], g.pad[2]);
                                    let vx = in_range(fx, ix, g.iw);
                                    let valid = fx.b.ins().band(vy, vx);
                                    let at = nhwc_index(fx, &g, nb, iy, ix, ch0);
                                    let tap = fx.b.ins().imul_imm_s(ky, g.kw as i64);
                                    let tap = fx.b.ins().iadd(tap, kx);
                                    fx.for_n(0, channels as i64, 1, acc, |fx, ch, acc| {
                                        let ia = fx.b.ins().iadd(at, ch);
                                        let ib = if depthwise {
                                            // [KH, KW, C, M] as a row-major taps × (C·M) matrix.
                                            let t = fx.b.ins().imul_imm_s(tap, c.n as i64);
                                            fx.b.ins().iadd(t, j)
                                        } else {
                                            ohwi_index(fx, &g, j, tap, ch)
                                        };
                                        vec![mac(fx, acc[0], ia, ib, Some(valid))]
                                    })
                                })
                            })[0]
                        }
                        ContractionKind::TransposeConv(g) => {
                            // Output (oy, ox) gathers the taps whose input pixel
                            // ((oy − pad − ky) / stride, …) is whole and inside the input.
                            let g = g.clone();
                            let (nb, oy, ox) = output_pixel(fx, &g, row);
                            fx.for_n(0, g.kh as i64, 1, &[zero], |fx, ky, acc| {
                                let (iy, vy) = transpose_coord(fx, oy, ky, g.stride[0], g.pad[0], g.ih);
                                fx.for_n(0, g.kw as i64, 1, acc, |fx, kx, acc| {
                                    let (ix, vx) = transpose_coord(fx, ox, kx, g.stride[1], g.pad[2], g.iw);
                                    let valid = fx.b.ins().band(vy, vx);
                                    let at = nhwc_index(fx, &g, nb, iy, ix, zero);
                                    let tap = fx.b.ins().imul_imm_s(ky, g.kw as i64);
                                    let tap = fx.b.ins().iadd(tap, kx);
                                    fx.for_n(0, g.ic as i64, 1, acc, |fx, ch, acc| {
                                        let ia = fx.b.ins().iadd(at, ch);
                                        let ib = ohwi_index(fx, &g, j, tap, ch);
                                        vec![mac(fx, acc[0], ia, ib, Some(valid))]
                                    })
                                })
                            })[0]
                        }
                    };
                    let acc = match bias {
                        Some((buf, d, len)) => {
                            let at = if len == 1 { fx.i(0) } else { j };
                            let v = fx.load(d, buf, at);
                            fx.b.ins().iadd(acc, v)
                        }
                        None => acc,
                    };
                    let v = fx.round_to(c.result, acc);
                    let at = fx.b.ins().imul_imm_s(row, c.n as i64);
                    let at = fx.b.ins().iadd(at, j);
                    fx.store(c.result, out, at, v);
                    vec![]
                });
                vec![]
            });
            Ok(())
        })
    }
}

/// The batch, y and x of output row `row` (one output pixel) of a convolution `g`.
fn output_pixel(fx: &mut Fx, g: &ConvGeometry, row: Value) -> (Value, Value, Value) {
    let nb = fx.b.ins().udiv_imm_s(row, (g.oh * g.ow) as i64);
    let pix = fx.b.ins().urem_imm_s(row, (g.oh * g.ow) as i64);
    (nb, fx.b.ins().udiv_imm_s(pix, g.ow as i64), fx.b.ins().urem_imm_s(pix, g.ow as i64))
}

/// The element index of output channel `j`'s tap `tap` (`ky·kw + kx`), channel `ch`, in an
/// OHWI weight of `g`: its row of `kh·kw·ic`.
fn ohwi_index(fx: &mut Fx, g: &ConvGeometry, j: Value, tap: Value, ch: Value) -> Value {
    let t = fx.b.ins().imul_imm_s(j, (g.kh * g.kw * g.ic) as i64);
    let t2 = fx.b.ins().imul_imm_s(tap, g.ic as i64);
    let t = fx.b.ins().iadd(t, t2);
    fx.b.ins().iadd(t, ch)
}

/// The element index of `(b, y, x, ch)` in the NHWC input of `g`.
fn nhwc_index(fx: &mut Fx, g: &ConvGeometry, b: Value, y: Value, x: Value, ch: Value) -> Value {
    let p = fx.b.ins().imul_imm_s(b, g.ih as i64);
    let p = fx.b.ins().iadd(p, y);
    let p = fx.b.ins().imul_imm_s(p, g.iw as i64);
    let p = fx.b.ins().iadd(p, x);
    let p = fx.b.ins().imul_imm_s(p, g.ic as i64);
    fx.b.ins().iadd(p, ch)
}

/// `o·stride + k·dilation − pad`: the input coordinate a window tap reads.
fn window_coord(fx: &mut Fx, o: Value, k: Value, stride: usize, dilation: usize, pad: usize) -> Value {
    let a = fx.b.ins().imul_imm_s(o, stride as i64);
    let b = fx.b.ins().imul_imm_s(k, dilation as i64);
    let s = fx.b.ins().iadd(a, b);
    fx.b.ins().iadd_imm_s(s, -(pad as i64))
}

/// Transpose conv: the kernel tap `o − pad − i·stride` that maps input `i` to output `o`.
fn tap(fx: &mut Fx, o: Value, i: Value, stride: usize, pad: usize) -> Value {
    let s = fx.b.ins().imul_imm_s(i, stride as i64);
    let t = fx.b.ins().isub(o, s);
    fx.b.ins().iadd_imm_s(t, -(pad as i64))
}

/// The input coordinate of transpose-conv output `o` and tap `k`, `(o − pad − k) / stride`,
/// and whether it is one: a whole, non-negative quotient below `len`.
fn transpose_coord(fx: &mut Fx, o: Value, k: Value, stride: usize, pad: usize, len: usize) -> (Value, Value) {
    let d = fx.b.ins().isub(o, k);
    let d = fx.b.ins().iadd_imm_s(d, -(pad as i64));
    let q = fx.b.ins().sdiv_imm_s(d, stride as i64);
    let r = fx.b.ins().srem_imm_s(d, stride as i64);
    let non_negative = fx.b.ins().icmp_imm_s(IntCC::SignedGreaterThanOrEqual, d, 0);
    let whole = fx.b.ins().icmp_imm_s(IntCC::Equal, r, 0);
    let inside = in_range(fx, q, len);
    let ok = fx.b.ins().band(non_negative, whole);
    (q, fx.b.ins().band(ok, inside))
}

/// Pixels of a row a depthwise convolution computes together where its run of columns is that
/// long: each weight vector loaded serves them all, and their sums are independent chains.
const DEPTHWISE_STRIP: usize = 4;

/// The output positions along one axis of a convolution by the taps of their window that lie
/// inside the input (the others fall in the padding): runs of positions with the same taps.
struct TapClasses(Vec<TapClass>);

/// Output positions `start..end`, whose windows have taps `taps.0..taps.1` inside the input.
#[derive(Clone, Copy, Debug, PartialEq)]
struct TapClass {
    start: usize,
    end: usize,
    taps: (usize, usize),
}

impl TapClasses {
    /// Output positions `0..outputs` of a window of `len` taps over `size` inputs.
    fn new(outputs: usize, size: usize, len: usize, stride: usize, dilation: usize, pad: usize) -> TapClasses {
        let mut out: Vec<TapClass> = Vec::new();
        for o in 0..outputs {
            let inside = |k: usize| (o * stride + k * dilation).checked_sub(pad).is_some_and(|x| x < size);
            // The input coordinate grows with the tap, so the taps inside are one range.
            let lo = (0..len).find(|&k| inside(k)).unwrap_or(len);
            let hi = (lo..len).find(|&k| !inside(k)).unwrap_or(len);
            match out.last_mut() {
                Some(last) if last.taps == (lo, hi) => last.end = o + 1,
                _ => out.push(TapClass { start: o, end: o + 1, taps: (lo, hi) }),
            }
        }
        TapClasses(out)
    }

    /// Whether some position's window has tap `k` inside.
    fn ever(&self, k: usize) -> bool {
        self.0.iter().any(|c| (c.taps.0..c.taps.1).contains(&k))
    }

    /// Whether tap `k` is inside for some positions and not others (and so must be checked).
    fn guarded(&self, k: usize) -> bool {
        self.ever(k) && self.0.iter().any(|c| !(c.taps.0..c.taps.1).contains(&k))
    }
}

/// `0 <= v < len` as an `i8`.
fn in_range(fx: &mut Fx, v: Value, len: usize) -> Value {
    // One unsigned comparison covers both bounds.
    fx.b.ins().icmp_imm_s(IntCC::UnsignedLessThan, v, len as i64)
}

/// Packs a constant `B` at compile time in its own type, zero padded, chunk by chunk of the
/// reduction (`chunks`: the GEMM's [`k_chunks`], or one for the one-row matmul):
/// `[batch][chunk][panel][k1 - k0][NR]`, so that a work item streams a chunk's panels in order
/// (with one chunk, `[batch][panel][k][NR]`); with `pairs`, each chunk's rows interleaved in pairs
/// for the bf16 pair loops ([`crate::backend::pack`], the packer of both CPU backends).
/// Writes into `dst` (zeroed, of the packed size).
fn pack_b_constant(c: &Contraction, bytes: &[u8], dst: &mut [u8], chunks: &[(usize, usize)], pairs: bool) {
    let (batches, k, n) = (c.batch, c.k, c.n);
    crate::backend::pack::PackB { elem_bytes: c.b.ty.dtype.byte_size(), layout: c.b_layout, batches, k, n, nr: NR, chunks, pairs }.pack_into(bytes, dst)
}

/// A plan's words for the multiply of an f32 contraction.
fn multiply_plan(fma: bool) -> &'static str {
    if fma { "f32 FMA" } else { "f32 multiply and add" }
}

/// A plan's words for `c`'s B: packed at compile time in `packed` (then `widened` to f32 once
/// per run, or not), or computed and packed (in f32) at run time.
fn b_plan(c: &Contraction, packed: DType, widened: bool) -> String {
    match (c.b_constant, widened) {
        (true, false) => format!("B packed at compile time ({packed})"),
        (true, true) => format!("B packed at compile time ({packed}), widened to f32 once per run"),
        (false, _) => "B computed at run time, packed per run (f32)".to_string(),
    }
}

/// The native loops' flag for a packed B of type `d` ([`f16c_core::abi::tiles`]).
fn b_flag(d: DType) -> u64 {
    use f16c_core::abi::tiles::{B_BF16, B_F16};
    match d {
        DType::F16 => B_F16,
        DType::BF16 => B_BF16,
        _ => 0,
    }
}

/// Where chunk `k0..k1` of each panel of a packed B starts: element `base + bi·batch + p·panel`
/// of batch `bi`, panel `p`.
struct ChunkAt {
    base: usize,
    batch: usize,
    panel: usize,
}

impl ChunkAt {
    /// In a constant B packed by [`pack_b_constant`]: `[batch][chunk][panel][k1 - k0][NR]`.
    fn by_chunk(panels: usize, k: usize, (k0, k1): (usize, usize)) -> ChunkAt {
        ChunkAt { base: k0 * panels * NR, batch: k * panels * NR, panel: (k1 - k0) * NR }
    }

    /// In a B packed at run time: `[batch][panel][k][NR]`.
    fn by_panel(panels: usize, k: usize, (k0, _): (usize, usize)) -> ChunkAt {
        ChunkAt { base: k0 * NR, batch: panels * k * NR, panel: k * NR }
    }
}

/// Whether row `r` of the GEMM's `A` is the `k` values at element `r · k` of the A operand
/// (per batch): a matmul's, or a 1×1 convolution's with stride 1 and no padding (NHWC: a
/// pixel's channels).
fn rows_in_place(c: &Contraction) -> bool {
    match &c.kind {
        ContractionKind::MatMul => c.a_row_stride.is_none_or(|s| s == c.k),
        ContractionKind::Conv(g) => c.batch == 1 && g.kh == 1 && g.kw == 1 && g.stride == [1, 1] && g.pad == [0; 4],
        _ => false,
    }
}

/// Packs columns `k0..k1` of rows `row0..row0 + a_panels · MR` of `A` (batch `bi`) into `scratch` as
/// micro-panels `[panel][k1 - k0][MR]` of f32 values, zero for rows past `m` and for conv
/// taps outside the input; or, `raw` (a bf16 A for the bf16 pair loops), as rows
/// `[row][k1 - k0]` of A's own 16-bit values, copied sixteen bytes at a time. For a conv,
/// `k0..k1` is whole taps or part of one tap (see [`k_chunks`]).
#[allow(clippy::too_many_arguments)]
#[allow(clippy::too_many_arguments)]
fn pack_a(fx: &mut Fx, c: &Contraction, (a, ad): (Value, DType), bi: Value, row0: Value, scratch: Value, (k0, k1): (usize, usize), raw: bool, a_panels: usize) {
    let m = c.m;
    let k = k1 - k0;
    fx.for_n(0, (a_panels * MR) as i64, 1, &[], |fx, r, _| {
        let row = fx.b.ins().iadd(row0, r);
        let dbase = if raw {
            // Destination of (r, kk): r * k + kk, two bytes each.
            let at = fx.b.ins().imul_imm_s(r, (k * 2) as i64);
            fx.b.ins().iadd(scratch, at)
        } else {
            // Destination of (r, kk): ((r / MR) * k + kk) * MR + r % MR.
            let pn = fx.b.ins().udiv_imm_s(r, MR as i64);
            let pr = fx.b.ins().urem_imm_s(r, MR as i64);
            let dbase = fx.b.ins().imul_imm_s(pn, (k * MR) as i64);
            let dbase = fx.b.ins().iadd(dbase, pr);
            let dbase = fx.b.ins().imul_imm_s(dbase, 4);
            fx.b.ins().iadd(scratch, dbase)
        };
        let inside = fx.b.ins().icmp_imm_s(IntCC::SignedLessThan, row, m as i64);
        let store_f32 = |fx: &mut Fx, kk: Value, v: Value| {
            let off = fx.b.ins().imul_imm_s(kk, (MR * 4) as i64);
            let p = fx.b.ins().iadd(dbase, off);
            fx.b.ins().store(super::emit::mem(), v, p, 0);
        };
        // `len` values from element `src` of A to columns `dst0..`; zeros to columns `dst0..`.
        let copy = |fx: &mut Fx, src: Value, dst0: usize, len: usize| {
            if raw {
                let from = fx.addr(a, src, 2);
                let to = fx.b.ins().iadd_imm_s(dbase, (dst0 * 2) as i64);
                copy_bytes(fx, from, to, len * 2);
            } else {
                copy_run(fx, ad, a, src, len, |fx, kk, v| {
                    let kk = fx.b.ins().iadd_imm_s(kk, dst0 as i64);
                    store_f32(fx, kk, v)
                });
            }
        };
        let zeros = |fx: &mut Fx, dst0: usize, len: usize| {
            if raw {
                let to = fx.b.ins().iadd_imm_s(dbase, (dst0 * 2) as i64);
                zero_bytes(fx, to, len * 2);
            } else {
                let z = fx.f(F32, 0.0);
                each_short(fx, dst0, dst0 + len, 1, |fx, kk| store_f32(fx, kk, z));
            }
        };
        fx.if_else(
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
                        // row = (n, oy, ox); kk = (ky, kx, c).
                        let ox = fx.b.ins().urem_imm_s(row, g.ow as i64);
                        let t = fx.b.ins().udiv_imm_s(row, g.ow as i64);
                        let oy = fx.b.ins().urem_imm_s(t, g.oh as i64);
                        let nb = fx.b.ins().udiv_imm_s(t, g.oh as i64);
                        // The chunk's taps and, per tap, its channels inside k0..k1 and where
                        // they go.
                        let taps: Vec<(usize, usize, usize, usize)> = (k0 / g.ic..k1.div_ceil(g.ic))
                            .map(|tap| {
                                let c0 = k0.max(tap * g.ic) - tap * g.ic;
                                let c1 = k1.min((tap + 1) * g.ic) - tap * g.ic;
                                (tap, c0, c1, tap * g.ic + c0 - k0)
                            })
                            .collect();
                        // A row whose whole window lies in the image (most of them) copies
                        // every tap from constant offsets of its window's first pixel, with no
                        // test per tap: the first convolution of an image network, three
                        // channels per tap, spent more on those tests than on its copies.
                        let zero = fx.i(0);
                        let y0 = window_coord(fx, oy, zero, g.stride[0], g.dilation[0], g.pad[0]);
                        let x0 = window_coord(fx, ox, zero, g.stride[1], g.dilation[1], g.pad[2]);
                        let (last_y, last_x) = ((g.kh - 1) * g.dilation[0], (g.kw - 1) * g.dilation[1]);
                        let ok = [(y0, g.ih, last_y), (x0, g.iw, last_x)].map(|(v, len, last)| {
                            let low = fx.b.ins().icmp_imm_s(IntCC::SignedGreaterThanOrEqual, v, 0);
                            let high = fx.b.ins().icmp_imm_s(IntCC::SignedLessThan, v, len as i64 - last as i64);
                            fx.b.ins().band(low, high)
                        });
                        let whole = fx.b.ins().band(ok[0], ok[1]);
                        fx.if_else(
                            whole,
                            |fx| {
                                let first = nhwc_index(fx, g, nb, y0, x0, zero);
                                for &(tap, c0, c1, dst0) in &taps {
                                    let (ky, kx) = (tap / g.kw, tap % g.kw);
                                    let at = (ky * g.dilation[0] * g.iw + kx * g.dilation[1]) * g.ic + c0;
                                    let src = fx.b.ins().iadd_imm_s(first, at as i64);
                                    copy(fx, src, dst0, c1 - c0);
                                }
                                vec![]
                            },
                            |fx| {
                                pack_window_checked(fx, g, &taps, (nb, oy, ox), &copy, &zeros);
                                vec![]
                            },
                        );
                    }
                    _ => unreachable!("only GEMM contractions pack A"),
                }
                vec![]
            },
            |fx| {
                if raw {
                    zeros(fx, 0, k);
                } else {
                    let z = fx.f(F32, 0.0);
                    fx.for_n(0, k as i64, 1, &[], |fx, kk, _| {
                        store_f32(fx, kk, z);
                        vec![]
                    });
                }
                vec![]
            },
        );
        vec![]
    });
}

/// [`pack_a`] of one conv row whose window crosses the image's edge: each tap tested, those
/// outside stored as zeros. `taps`: (tap, first and end channel, destination column).
fn pack_window_checked(
    fx: &mut Fx,
    g: &ConvGeometry,
    taps: &[(usize, usize, usize, usize)],
    (nb, oy, ox): (Value, Value, Value),
    copy: &dyn Fn(&mut Fx, Value, usize, usize),
    zeros: &dyn Fn(&mut Fx, usize, usize),
) {
    for &(tap, c0, c1, dst0) in taps {
        let (ky, kx) = (tap / g.kw, tap % g.kw);
        let kyv = fx.i(ky as i64);
        let y = window_coord(fx, oy, kyv, g.stride[0], g.dilation[0], g.pad[0]);
        let ok_y = in_range(fx, y, g.ih);
        let kxv = fx.i(kx as i64);
        let xx = window_coord(fx, ox, kxv, g.stride[1], g.dilation[1], g.pad[2]);
        let ok_x = in_range(fx, xx, g.iw);
        let ok = fx.b.ins().band(ok_y, ok_x);
        fx.if_else(
            ok,
            |fx| {
                let ch = fx.i(c0 as i64);
                let src = nhwc_index(fx, g, nb, y, xx, ch);
                copy(fx, src, dst0, c1 - c0);
                vec![]
            },
            |fx| {
                zeros(fx, dst0, c1 - c0);
                vec![]
            },
        );
    }
}

/// Copies `bytes` bytes from `from` to `to`: sixteen at a time, then eight, four, two.
fn copy_bytes(fx: &mut Fx, from: Value, to: Value, bytes: usize) {
    use cranelift_codegen::ir::types::{I16, I32, I8X16};
    let m = super::emit::mem();
    let vec_end = bytes - bytes % 16;
    each_short(fx, 0, vec_end, 16, |fx, at| {
        let (src, dst) = (fx.b.ins().iadd(from, at), fx.b.ins().iadd(to, at));
        let v = fx.b.ins().load(I8X16, m, src, 0);
        fx.b.ins().store(m, v, dst, 0);
    });
    let mut at = vec_end;
    for (ty, size) in [(I64, 8), (I32, 4), (I16, 2)] {
        if bytes - at >= size {
            let v = fx.b.ins().load(ty, m, from, at as i32);
            fx.b.ins().store(m, v, to, at as i32);
            at += size;
        }
    }
}

/// Stores `bytes` zero bytes at `to` (sixteen at a time, then eight, four, two).
fn zero_bytes(fx: &mut Fx, to: Value, bytes: usize) {
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
const A_BAND_MAX: usize = 1 << 14;

/// The elements `lo..hi` of A that rows `row0..row0 + rows` (batch `bi`) of `c` read, every
/// `k`: whole rows of a matmul; for a conv, the input rows from the first output row's top
/// tap to the last one's bottom tap, every column and channel (clamped to the image). Written
/// once over integers here and once in IR ([`a_band_ir`]): keep the two alike.
fn a_band(c: &Contraction, bi: usize, row0: usize, rows: usize) -> (usize, usize) {
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
fn a_band_bound(c: &Contraction, mc: usize, rows: usize) -> usize {
    let batches = if matches!(c.kind, ContractionKind::Conv(_)) { 1 } else { c.batch };
    (0..batches).flat_map(|bi| (0..c.m).step_by(mc).map(move |row0| (bi, row0))).map(|(bi, row0)| {
        let (lo, hi) = a_band(c, bi, row0, rows);
        hi - lo
    })
    .max()
    .unwrap_or(0)
}

/// [`a_band`] in IR: the band's first element and its length (at most `bound`).
fn a_band_ir(fx: &mut Fx, c: &Contraction, bi: Value, row0: Value, rows: usize, bound: usize) -> (Value, Value) {
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
    fx.for_n(0, vec_end as i64, LANES as i64, &[], |fx, i, _| {
        let v = fx.load4_checked(d, src, i, finite);
        fx.store4(DType::F32, dst, i, v);
        vec![]
    });
    fx.for_n(vec_end as i64, len as i64, 1, &[], |fx, i, _| {
        let v = fx.load(d, src, i);
        fx.store(DType::F32, dst, i, v);
        vec![]
    });
}

/// Reads `len` consecutive elements of `d` from `base[src..]`, converted to f32, handing each to
/// `put(kk, value)` (four at a time, then the rest).
fn copy_run(fx: &mut Fx, d: DType, base: Value, src: Value, len: usize, put: impl Fn(&mut Fx, Value, Value)) {
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
fn each_short(fx: &mut Fx, start: usize, end: usize, step: usize, mut body: impl FnMut(&mut Fx, Value)) {
    if end.saturating_sub(start).div_ceil(step) <= SHORT_TRIPS {
        for kk in (start..end).step_by(step) {
            let kk = fx.i(kk as i64);
            body(fx, kk);
        }
    } else {
        fx.for_n(start as i64, end as i64, step as i64, &[], |fx, kk, _| {
            body(fx, kk);
            vec![]
        });
    }
}

/// The longest reduction a one-micro-panel GEMM walks in one chunk: its packed A and an
/// f16 B panel widened by the generated loop then take 128 and 256 KiB of scratch.
const ONE_CHUNK_MAX_K: usize = 8192;

/// The most steps [`each_short`] unrolls.
const SHORT_TRIPS: usize = 4;

/// The micro-kernel, a function of its own: `(apanel, bpanel, k, tile, accumulate)` computes
/// `tile = (accumulate ? tile : 0) + A·B` for an `MR × NR` tile over `k`, in `MR × NR / 4`
/// f32x4 accumulators. Its [`AForm::Rows`] form takes `(a, stride, bpanel, k, tile,
/// accumulate)` and reads A's rows in place.
///
/// Per `k` step it loads the `NR / 4` B vectors and, per row, the A value, loaded and
/// broadcast (`vmovss` + `vbroadcastss`: a broadcasting load per FMA instead was 5-8% slower
/// on mobilenet ×1.0), which feeds that row's FMAs. x86 `vfmadd213ps` overwrites a
/// multiplicand, so the register allocator copies the A vector for its first FMA (a move the
/// CPU eliminates at rename) and the new accumulator lands in the copy's register. The `k` loop
/// is unrolled [`KU`] times, which lets the allocator rotate the accumulators back into their
/// loop registers without moves.
///
/// Its instruction order is its schedule: the runtime compiles it without Cranelift's
/// optimizer (see [`super::Artifact::keep_order`]), which would hoist every load of an
/// unrolled body above the FMAs. It is separate from the kernels so that nothing else
/// competes for the 16 xmm registers.
pub fn micro_kernel_function(ctx: &mut cranelift_frontend::FunctionBuilderContext, fma: bool, form: AForm) -> cranelift_codegen::ir::Function {
    use cranelift_codegen::ir::{types::I64, BlockArg, Function, UserFuncName};
    let mut func = Function::with_name_signature(UserFuncName::testcase(form.name()), form.signature());
    let mut b = cranelift_frontend::FunctionBuilder::new(&mut func, ctx);
    let m = super::emit::mem();
    let accs = MR * NR / LANES;
    let args = |vals: &[Value]| vals.iter().map(|&v| BlockArg::Value(v)).collect::<Vec<_>>();
    // One k step at `ap`/`bp` (byte offsets `ao`/`bo`): B vectors, then per row its A vector
    // and one FMA per B vector.
    // `rows[r]`: the offset of row r from `ap` (Rows form: `r · stride`, in a register).
    let step = |b: &mut cranelift_frontend::FunctionBuilder, ap: Value, bp: Value, ao: i32, bo: i32, rows: &[Value], acc: &mut [Value]| {
        let bv: Vec<Value> = (0..NR / LANES).map(|v| b.ins().load(F32X4, m, bp, bo + (v * 16) as i32)).collect();
        for r in 0..MR {
            let av = match form {
                AForm::Packed => {
                    let x = b.ins().load(F32, m, ap, ao + (r * 4) as i32);
                    b.ins().splat(F32X4, x)
                }
                AForm::Rows => {
                    let row = match rows.get(r) {
                        Some(&off) if r > 0 => b.ins().iadd(ap, off),
                        _ => ap,
                    };
                    let x = b.ins().load(F32, m, row, ao);
                    b.ins().splat(F32X4, x)
                }
            };
            for (v, &bvec) in bv.iter().enumerate() {
                let i = r * (NR / LANES) + v;
                acc[i] = if fma {
                    b.ins().fma(av, bvec, acc[i])
                } else {
                    let p = b.ins().fmul(av, bvec);
                    b.ins().fadd(acc[i], p)
                };
            }
        }
    };
    let entry = b.create_block();
    b.append_block_params_for_function_params(entry);
    // Two loops, each a header that tests and a body that jumps back: the unrolled one over
    // `k / KU` and the remainder over `k % KU`; then the exit stores the tile. Every loop
    // value is a parameter of the header, which has two predecessors, so each accumulator chain
    // of a body has exactly one use (its jump back). With a second use (a branch to both the
    // loop and the exit), Cranelift would not fold the A loads into `vbroadcastss`.
    let (head, body, rest_head, rest_body, exit) = (b.create_block(), b.create_block(), b.create_block(), b.create_block(), b.create_block());
    for blk in [head, rest_head] {
        for _ in 0..3 {
            b.append_block_param(blk, I64);
        }
        for _ in 0..accs {
            b.append_block_param(blk, F32X4);
        }
    }
    for _ in 0..accs {
        b.append_block_param(exit, F32X4);
    }
    b.switch_to_block(entry);
    let p = b.block_params(entry).to_vec();
    // Packed: (apanel, bpanel, k, tile, accumulate); Rows: (a, stride, bpanel, k, tile,
    // accumulate).
    let (p, rows) = match form {
        AForm::Packed => (p, vec![]),
        AForm::Rows => {
            let stride = p[1];
            let rows = (0..MR).map(|r| if r < 2 { stride } else { b.ins().imul_imm_s(stride, r as i64) }).collect();
            ([&p[..1], &p[2..]].concat(), rows)
        }
    };
    let (apanel, bpanel, k, tile) = (p[0], p[1], p[2], p[3]);
    let accumulate = p[4];
    // Bytes of A per k step.
    let a_step = match form {
        AForm::Packed => MR * 4,
        AForm::Rows => 4,
    };
    let trips = b.ins().ushr_imm_u(k, KU.trailing_zeros() as i64);
    let left = b.ins().band_imm_u(k, (KU - 1) as i64);
    let (from_tile, from_zero) = (b.create_block(), b.create_block());
    b.ins().brif(accumulate, from_tile, &[], from_zero, &[]);
    b.switch_to_block(from_tile);
    let mut start = vec![apanel, bpanel, trips];
    start.extend((0..accs).map(|i| b.ins().load(F32X4, m, tile, (i * 16) as i32)));
    b.ins().jump(head, &args(&start));
    b.switch_to_block(from_zero);
    let zero = b.ins().f32const(0.0);
    let zero = b.ins().splat(F32X4, zero);
    let mut start = vec![apanel, bpanel, trips];
    start.extend(std::iter::repeat_n(zero, accs));
    b.ins().jump(head, &args(&start));

    // A loop: the header branches to the body or to `next` with (ap, bp, acc..); the body runs
    // `steps` k steps and jumps back.
    let lp = |b: &mut cranelift_frontend::FunctionBuilder, head, body, steps: usize, next: &dyn Fn(&[Value]) -> Vec<Value>, next_block| {
        b.switch_to_block(head);
        let p = b.block_params(head).to_vec();
        let out = next(&p);
        b.ins().brif(p[2], body, &[], next_block, &args(&out));
        b.switch_to_block(body);
        let (ap, bp, count) = (p[0], p[1], p[2]);
        let mut acc = p[3..].to_vec();
        for u in 0..steps {
            step(b, ap, bp, (u * a_step) as i32, (u * NR * 4) as i32, &rows, &mut acc);
        }
        let ap = b.ins().iadd_imm_s(ap, (steps * a_step) as i64);
        let bp = b.ins().iadd_imm_s(bp, (steps * NR * 4) as i64);
        let count = b.ins().iadd_imm_s(count, -1);
        let mut again = vec![ap, bp, count];
        again.extend(&acc);
        b.ins().jump(head, &args(&again));
    };
    let to_rest = |p: &[Value]| {
        let mut v = vec![p[0], p[1], left];
        v.extend(&p[3..]);
        v
    };
    lp(&mut b, head, body, KU, &to_rest, rest_head);
    lp(&mut b, rest_head, rest_body, 1, &|p: &[Value]| p[3..].to_vec(), exit);

    b.switch_to_block(exit);
    let p = b.block_params(exit).to_vec();
    for (i, &v) in p.iter().enumerate() {
        b.ins().store(m, v, tile, (i * 16) as i32);
    }
    b.ins().return_(&[]);
    b.seal_all_blocks();
    b.finalize(super::frontend_config());
    func
}

/// Where the micro-kernel reads A.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AForm {
    /// Packed micro-panels `[k][MR]` of f32 (`pack_a`).
    Packed,
    /// A's own f32 rows, `stride` bytes apart (a matmul, a 1×1 convolution with stride 1 and
    /// no padding): nothing is packed.
    Rows,
}

impl AForm {
    /// Both forms, in function order: the artifact's functions 0 and 1.
    pub const ALL: [AForm; 2] = [AForm::Packed, AForm::Rows];

    /// The function's name.
    pub fn name(self) -> &'static str {
        match self {
            AForm::Packed => "gemm_micro_kernel",
            AForm::Rows => "gemm_micro_kernel_rows",
        }
    }

    /// Its index among an artifact's functions.
    fn index(self) -> u32 {
        self as u32
    }

    fn signature(self) -> cranelift_codegen::ir::Signature {
        use cranelift_codegen::ir::{types::I64, AbiParam, Signature};
        let mut sig = Signature::new(cranelift_codegen::isa::CallConv::SystemV);
        let params = match self {
            AForm::Packed => 5,
            AForm::Rows => 6,
        };
        sig.params.extend((0..params).map(|_| AbiParam::new(I64)));
        sig
    }
}

/// Calls the micro-kernel of A's `form`: `tile` = (`accumulate` ? `tile` : 0) + A·B over `k`,
/// A at `a` (packed, or rows `stride` bytes apart).
fn micro_kernel(fx: &mut Fx, (form, a, stride): (AForm, Value, usize), bpanel: Value, k: usize, tile: Value, accumulate: bool) {
    use cranelift_codegen::ir::{ExtFuncData, ExternalName, UserExternalName};
    let sigref = fx.b.import_signature(form.signature());
    let name = fx.b.func.declare_imported_user_function(UserExternalName::new(0, form.index()));
    let f = fx.b.import_function(ExtFuncData { name: ExternalName::user(name), signature: sigref, colocated: true, patchable: false });
    let kv = fx.i(k as i64);
    let flag = fx.i(accumulate as i64);
    let args = match form {
        AForm::Packed => vec![a, bpanel, kv, tile, flag],
        AForm::Rows => vec![a, fx.i(stride as i64), bpanel, kv, tile, flag],
    };
    fx.b.ins().call(f, &args);
}

/// The ranges `k0..k1` of the reduction dimension that the GEMM handles one at a time, so that
/// three micro-panels of packed A (`MR × KC` values, 4 KiB each) and a chunk of a B panel (`KC
/// × NR`, 8 KiB) stay in L1 while the micro-kernel runs. A conv's ranges are whole taps, or parts of one tap
/// when a tap has more than [`KC`] channels, so packing never splits a window at run time.
fn k_chunks(kind: &ContractionKind, k: usize) -> Vec<(usize, usize)> {
    let step = match kind {
        ContractionKind::Conv(g) if g.ic <= KC => (KC / g.ic) * g.ic,
        ContractionKind::Conv(g) => g.ic.div_ceil(g.ic.div_ceil(KC)),
        _ => KC,
    };
    let mut out = Vec::new();
    let mut k0 = 0;
    while k0 < k {
        let k1 = match kind {
            // Never cross a tap boundary inside a split tap.
            ContractionKind::Conv(g) if g.ic > KC => (k0 + step).min((k0 / g.ic + 1) * g.ic),
            _ => (k0 + step).min(k),
        };
        out.push((k0, k1));
        k0 = k1;
    }
    if out.is_empty() {
        // k = 0: one empty range still zeroes the C block.
        out.push((0, 0));
    }
    out
}

impl Context<'_> {
    /// A matmul with one row (a classifier at batch 1): one work item per [`GEMV_ITEM`] B
    /// panels, so threads split the weight, each element one chain of multiply-adds from zero
    /// over the whole reduction in the micro-kernel's order (so the same bits). The runtime's
    /// native loop ([`Libcall::GemvPanels`](f16c_core::abi::Libcall), eight lanes) computes the
    /// item's panels in one call, reading an fp16 or bf16 weight in its type. Where the runtime
    /// has none, the generated code takes the item's panels [`GEMV_PANELS`] at a time, two f32x4
    /// accumulators per panel, the eight chains interleaved to hide the FMA latency; panels
    /// are read in place (a bf16 one widened as it is loaded), an fp16 one widened
    /// [`GEMV_KC`] rows at a time into scratch by the runtime ([`widen_run`]). The GEMM would
    /// run one item, three quarters of its 4-row micro-kernel on padding.
    fn gemv(&mut self, c: &Contraction, b_slot: usize, packed_dt: DType, finite: Finite) -> Result<(), BackendError> {
        let (batch, n, k) = (c.batch, c.n, c.k);
        let panels = n.div_ceil(NR);
        let groups = panels.div_ceil(GEMV_ITEM);
        let panel_elems = k * NR;
        // Scratch: the item's sums, one tile row per panel; then an f16/bf16 A row widened
        // four lanes at a time (once per item, not once per element and panel group).
        let tile_bytes = GEMV_ITEM * NR * 4;
        let widen = c.a.ty.dtype != DType::F32;
        let a_bytes = if widen { k * 4 } else { 0 };
        // Then, for an fp16 B, its widened chunks: GEMV_KC rows of GEMV_PANELS panels.
        let chunk_bytes = if packed_dt == DType::F16 { GEMV_PANELS * GEMV_KC * NR * 4 } else { 0 };
        self.layout.scratch(tile_bytes + a_bytes + chunk_bytes);
        self.plan(format!("one row against {GEMV_ITEM} panels of {NR} columns per work item, {}; {}", multiply_plan(self.fma), b_plan(c, packed_dt, false)));
        let (c, fma) = (c.clone(), self.fma);
        let cost = 2.0 * (batch * n * k) as f64;
        self.add("", batch * groups, cost, move |fx| {
            let bases = Bases::new(fx, &c, b_slot, &finite);
            let tile = fx.scratch;
            let wide = fx.b.ins().iadd_imm_s(fx.scratch, tile_bytes as i64);
            let chunks = fx.b.ins().iadd_imm_s(fx.scratch, (tile_bytes + a_bytes) as i64);
            let mut result = Ok(());
            fx.for_items(|fx, item| {
                let bi = fx.b.ins().udiv_imm_s(item, groups as i64);
                let group = fx.b.ins().urem_imm_s(item, groups as i64);
                let first = fx.b.ins().imul_imm_s(group, GEMV_ITEM as i64);
                let a_row = fx.b.ins().imul_imm_s(bi, k as i64);
                let (a, a_row) = if widen {
                    let src = fx.addr(bases.a, a_row, c.a.ty.dtype.byte_size());
                    widen_run(fx, c.a.ty.dtype, src, wide, k, false);
                    (wide, fx.i(0))
                } else {
                    (bases.a, a_row)
                };
                let batch_panels = fx.b.ins().imul_imm_s(bi, panels as i64);
                let native = fx.libcall_entry(f16c_core::abi::Libcall::GemvPanels);
                let has_native = fx.b.ins().icmp_imm_s(IntCC::NotEqual, native, 0);
                fx.if_else(
                    has_native,
                    |fx| {
                        let a_at = fx.addr(a, a_row, 4);
                        let p = fx.b.ins().iadd(batch_panels, first);
                        let p = fx.b.ins().imul_imm_s(p, panel_elems as i64);
                        let b_at = fx.addr(bases.b, p, packed_dt.byte_size());
                        // The item's panels (the last item's may be fewer).
                        let count = fx.i(panels as i64);
                        let count = fx.b.ins().isub(count, first);
                        let most = fx.i(GEMV_ITEM as i64);
                        let count = fx.b.ins().smin(count, most);
                        let (b_stride, kv, flags) = (fx.i((panel_elems * packed_dt.byte_size()) as i64), fx.i(k as i64), fx.i(b_flag(packed_dt) as i64));
                        fx.libcall_at(f16c_core::abi::Libcall::GemvPanels, native, &[a_at, b_at, b_stride, kv, tile, count, flags]);
                        vec![]
                    },
                    |fx| {
                        fx.for_n(0, (GEMV_ITEM / GEMV_PANELS) as i64, 1, &[], |fx, sub, _| {
                            let off = fx.b.ins().imul_imm_s(sub, GEMV_PANELS as i64);
                            let sums = fx.addr(tile, off, NR * 4);
                            let from = fx.b.ins().iadd(first, off);
                            gemv_panels(fx, (a, a_row), (bases.b, packed_dt, chunks), (from, batch_panels), &c, bases.finite.weight, fma, sums);
                            vec![]
                        });
                        vec![]
                    },
                );
                // Panel j's values are row j of the scratch tile; one store_tile call in a loop
                // over the panels keeps the epilogue emitted once.
                let r0 = fx.i(0);
                fx.for_n(0, GEMV_ITEM as i64, 1, &[], |fx, j, _| {
                    let p = fx.b.ins().iadd(first, j);
                    let real = fx.b.ins().icmp_imm_s(IntCC::SignedLessThan, p, panels as i64);
                    fx.if_then(real, |fx| {
                        let row = fx.addr(tile, j, NR * 4);
                        let col0 = fx.b.ins().imul_imm_s(p, NR as i64);
                        if let Err(e) = store_tile(fx, &c, row, bi, r0, col0, &bases, None) {
                            result = Err(e);
                        }
                    });
                    vec![]
                });
                vec![]
            });
            result
        })
    }
}

/// The generated one-row loop over [`GEMV_PANELS`] panels from `first` (of batch `bi`'s
/// `batch_panels..`), their sums stored at `sums` (panel j at `sums + j · NR · 4`): a panel past
/// the last is computed as the last again (its sums are not stored by the caller). `a[a_row..]`
/// is the f32 A row; an fp16 B is widened [`GEMV_KC`] rows at a time into `chunks`.
#[allow(clippy::too_many_arguments)]
fn gemv_panels(fx: &mut Fx, (a, a_row): (Value, Value), (b, packed_dt, chunks): (Value, DType, Value), (first, batch_panels): (Value, Value), c: &Contraction, finite_b: bool, fma: bool, sums: Value) {
    let (n, k) = (c.n, c.k);
    let panels = n.div_ceil(NR);
    let panel_elems = k * NR;
    let last = fx.i(panels as i64 - 1);
    let starts: Vec<Value> = (0..GEMV_PANELS)
        .map(|j| {
            let p = fx.b.ins().iadd_imm_s(first, j as i64);
            let p = fx.b.ins().smin(p, last);
            let q = fx.b.ins().iadd(batch_panels, p);
            fx.b.ins().imul_imm_s(q, panel_elems as i64)
        })
        .collect();
    let zero = fx.f(F32X4, 0.0);
    let chains = GEMV_PANELS * NR / LANES;
    // Steps `k0 .. end` of the chains, B row `kk` of panel j read at
    // `b[starts[j] + (kk - k0) * NR ..]` as `bd`.
    let steps = |fx: &mut Fx, k0: Value, end: Value, (b, bd, starts): (Value, DType, &[Value]), acc: &[Value]| {
        fx.for_range(k0, end, 1, acc, |fx, kk, acc| {
            let ai = fx.b.ins().iadd(a_row, kk);
            let av = fx.load(DType::F32, a, ai);
            let av = fx.b.ins().splat(F32X4, av);
            let kr = fx.b.ins().isub(kk, k0);
            let row = fx.b.ins().imul_imm_s(kr, NR as i64);
            (0..chains)
                .map(|i| {
                    let (j, v) = (i / (NR / LANES), i % (NR / LANES));
                    let at = fx.b.ins().iadd(starts[j], row);
                    let at = fx.b.ins().iadd_imm_s(at, (v * LANES) as i64);
                    let bv = fx.load4_checked(bd, b, at, finite_b);
                    if fma {
                        fx.b.ins().fma(av, bv, acc[i])
                    } else {
                        let prod = fx.b.ins().fmul(av, bv);
                        fx.b.ins().fadd(acc[i], prod)
                    }
                })
                .collect()
        })
    };
    let acc = if packed_dt == DType::F16 {
        // fp16 B: each chunk of GEMV_KC steps of the panels is widened into scratch in one
        // runtime call per panel (F16C where the CPU has it), then read as f32: the same
        // products in the same order.
        let chunk = |fx: &mut Fx, k0: Value, len: usize, acc: &[Value]| {
            let row0 = fx.b.ins().imul_imm_s(k0, NR as i64);
            let offs: Vec<Value> = (0..GEMV_PANELS)
                .map(|j| {
                    let src = fx.b.ins().iadd(starts[j], row0);
                    let src = fx.addr(b, src, 2);
                    let dst = fx.b.ins().iadd_imm_s(chunks, (j * GEMV_KC * NR * 4) as i64);
                    widen_run(fx, DType::F16, src, dst, len * NR, false);
                    fx.i((j * GEMV_KC * NR) as i64)
                })
                .collect();
            let end = fx.b.ins().iadd_imm_s(k0, len as i64);
            steps(fx, k0, end, (chunks, DType::F32, &offs), acc)
        };
        let full = k / GEMV_KC;
        let acc = fx.for_n(0, full as i64, 1, &vec![zero; chains], |fx, ci, acc| {
            let k0 = fx.b.ins().imul_imm_s(ci, GEMV_KC as i64);
            chunk(fx, k0, GEMV_KC, acc)
        });
        if k % GEMV_KC == 0 {
            acc
        } else {
            let k0 = fx.i((full * GEMV_KC) as i64);
            chunk(fx, k0, k % GEMV_KC, &acc)
        }
    } else {
        let (k0, end) = (fx.i(0), fx.i(k as i64));
        steps(fx, k0, end, (b, packed_dt, &starts), &vec![zero; chains])
    };
    for (i, &x) in acc.iter().enumerate() {
        fx.b.ins().store(super::emit::mem(), x, sums, (i * 16) as i32);
    }
}

/// Column groups a GEMM's work items split B's panels into, so that a contraction with few
/// row blocks (a CNN's deep layers at batch 1: 8×8 pixels are one block of [`MC`] rows) still
/// has work for every thread: enough groups for [`PARALLEL_ITEMS`] items, each of at least
/// [`GROUP_MIN_PANELS`] panels where every group prepares the block's A again (packs it, or
/// widens its fp16 rows), of one panel where the micro-kernel reads A's f32 rows in place (one
/// panel groups of an fp16 attention's 8-row matmuls, each widening A again, made the model
/// 15% slower). The sums are the same whichever item computes them.
fn column_groups(row_items: usize, panels: usize, prepares_a: bool) -> usize {
    let min_panels = if prepares_a { GROUP_MIN_PANELS } else { 1 };
    PARALLEL_ITEMS.div_ceil(row_items.max(1)).min(panels / min_panels).max(1)
}

/// The attention chains the JIT runs in bands ([`crate::backend::bands`]): every float matmul
/// of more than one row runs on the GEMM here, a work item per row block (and column group),
/// and a rows kernel has a work item per [`ROW_GROUP`] rows, so a band may be any row block
/// that divides the rows into whole groups: the largest multiple of [`MR`] up to
/// [`BAND_ROWS_MAX`] that does.
pub fn bands(program: &Program) -> Vec<crate::backend::bands::Band> {
    let float = |c: &Contraction, _: bool| domain(c.a.ty.dtype) == F32 && domain(c.b.ty.dtype) == F32;
    crate::backend::bands::chains(program, float)
        .into_iter()
        .filter_map(|chain| (1..=BAND_ROWS_MAX / MR).rev().map(|i| i * MR).find(|&rows| chain.m % rows == 0 && rows % ROW_GROUP == 0).and_then(|rows| chain.band(rows)))
        .collect()
}

/// Rows a work item of a rows kernel computes together, their sums' chains interleaved
/// (`Context::rows`): a band's rows are a multiple.
pub const ROW_GROUP: usize = 4;

/// The most rows a band of [`bands`] takes: its scores and probabilities (a row of each per
/// key, f32), the C block of its scores and the keys' panels stay in a core's cache (a
/// 1,500-key band of 20 rows: 120 KB each).
const BAND_ROWS_MAX: usize = 32;

/// Work items a contraction should offer the executor's threads.
const PARALLEL_ITEMS: usize = 16;

/// The fewest B panels ([`NR`] columns each) a column group holds.
const GROUP_MIN_PANELS: usize = 16;

/// The buffers a GEMM-style contraction kernel addresses: A, the (packed) B, the output, the
/// bias and the epilogue's inputs.
struct Bases {
    a: Value,
    b: Value,
    out: Value,
    bias: Option<Value>,
    epilogue: Vec<Value>,
    finite: Finite,
}

impl Bases {
    fn new(fx: &mut Fx, c: &Contraction, b_slot: usize, finite: &Finite) -> Bases {
        Bases {
            a: fx.buffer(c.a.buffer.0),
            b: fx.buffer(b_slot),
            out: fx.buffer(c.out.buffer.0),
            bias: c.bias.as_ref().map(|b| fx.buffer(b.buffer.0)),
            epilogue: c.epilogue.iter().flat_map(|e| e.inputs.iter()).map(|i| fx.buffer(i.buffer.0)).collect(),
            finite: finite.clone(),
        }
    }
}

/// What is known of a contraction's constant inputs at compile time: which hold no inf or NaN
/// (their f16 values widen in three instructions: [`Fx::load4_checked`]), and which epilogue
/// inputs are a single value.
#[derive(Clone, Default)]
struct Finite {
    weight: bool,
    bias: bool,
    epilogue: Vec<bool>,
    /// Per epilogue input, its one finite value when it is a constant read at one element for
    /// every row and column (a ReLU6 bound): emitted as an immediate, not loaded and widened
    /// once per value.
    epilogue_scalar: Vec<Option<f32>>,
}

impl Finite {
    fn of(program: &crate::lower::Program, c: &Contraction) -> Finite {
        let finite = |buffer, dtype| crate::lower::is_finite_constant(program, buffer, dtype);
        Finite {
            weight: finite(c.b.buffer, c.b.ty.dtype),
            bias: c.bias.as_ref().is_some_and(|b| finite(b.buffer, b.ty.dtype)),
            epilogue: c.epilogue.iter().flat_map(|e| e.inputs.iter()).map(|i| finite(i.buffer, i.dtype)).collect(),
            epilogue_scalar: c
                .epilogue
                .iter()
                .flat_map(|e| e.inputs.iter())
                .map(|i| if i.col_stride == 0 && i.row_strides.iter().all(|&s| s == 0) { crate::lower::constant_scalar(program, i.buffer, i.dtype) } else { None })
                .collect(),
        }
    }
}

/// Rows of B (`k` steps) per widened chunk of the one-row matmul with an fp16 weight: four
/// panels' chunks take 16 KiB of scratch, in L1 next to the A row.
const GEMV_KC: usize = 128;

/// The most scratch an f16 GEMM result's row block is staged in before one narrowing call.
const STAGE_BLOCK_MAX: usize = 32 << 10;

/// B panels the generated one-row loop computes at a time: 4 × 8 columns, eight independent
/// f32x4 FMA chains.
const GEMV_PANELS: usize = 4;

/// B panels per work item of the one-row matmul (a multiple of [`GEMV_PANELS`]): the native
/// loop keeps one 8-lane chain per panel, and eight hide the FMA latency.
const GEMV_ITEM: usize = 8;

/// Bias, rounding, epilogue and store of one tile (`MR` × `NR` f32 values at `tile`); rows
/// from `r0`, columns from `col0`. A full tile with an f32-domain epilogue is straight-line
/// code ([`store_full_tile`]: the epilogue emitted `MR · NR / LANES` = 8 times); other tiles
/// take loops over rows and vectors, which emit it twice (four lanes, and one lane for a
/// ragged edge), not once per tile value: an fp16 batch-norm epilogue unrolled 40 times made
/// the kernels of a mobilenet 4× slower to compile.
#[allow(clippy::too_many_arguments)]
fn store_tile(fx: &mut Fx, c: &Contraction, tile: Value, bi: Value, r0: Value, col0: Value, bases: &Bases, staged: Option<&Staged>) -> Result<(), String> {
    let (m, n) = (c.m, c.n);
    let od = c.out.ty.dtype;
    let vector_epilogue = c.epilogue.as_ref().is_none_or(|e| e.expr.is_f32_domain());
    // Rows of the tile that exist (the last row block may be ragged).
    let rows = fx.i(MR as i64);
    let m_v = fx.i(m as i64);
    let left = fx.b.ins().isub(m_v, r0);
    let rows = fx.b.ins().smin(rows, left);
    // A full tile (every row exists, every column lies inside) of f32 values is finished in
    // straight-line code: each value read and stored at a constant offset, the column
    // operands loaded once per four columns. mobilenet-v2's 1×1 convolutions with a reduction
    // of 16 or 24 spent more in the loop form of this than in their multiply-adds.
    let unrolled = vector_epilogue && (n + NR) * MR * od.byte_size() <= i32::MAX as usize;
    if unrolled {
        let tall = fx.b.ins().icmp_imm_s(IntCC::SignedGreaterThanOrEqual, left, MR as i64);
        let full = if n % NR == 0 {
            tall
        } else {
            let wide = fx.b.ins().icmp_imm_s(IntCC::SignedLessThanOrEqual, col0, (n - NR.min(n)) as i64);
            let wide = if n < NR { fx.b.ins().iconst(cranelift_codegen::ir::types::I8, 0) } else { wide };
            fx.b.ins().band(tall, wide)
        };
        let (mut inside, mut edges) = (Ok(()), Ok(()));
        fx.if_else(
            full,
            |fx| {
                inside = store_full_tile(fx, c, tile, bi, r0, col0, bases, staged);
                vec![]
            },
            |fx| {
                edges = store_tile_edges(fx, c, tile, bi, r0, col0, bases, staged, rows);
                vec![]
            },
        );
        return inside.and(edges);
    }
    store_tile_edges(fx, c, tile, bi, r0, col0, bases, staged, rows)
}

/// [`store_tile`] for a full tile of lanes: row `r`, columns `v..v + 4` read at `tile + (r ·
/// NR + v) · 4` and stored at constant offsets from the tile's first output.
#[allow(clippy::too_many_arguments)]
fn store_full_tile(fx: &mut Fx, c: &Contraction, tile: Value, bi: Value, r0: Value, col0: Value, bases: &Bases, staged: Option<&Staged>) -> Result<(), String> {
    let (m, n) = (c.m, c.n);
    let od = c.out.ty.dtype;
    let grow0 = fx.b.ins().imul_imm_s(bi, m as i64);
    let grow0 = fx.b.ins().iadd(grow0, r0);
    let first = fx.b.ins().imul_imm_s(grow0, n as i64);
    let first = fx.b.ins().iadd(first, col0);
    let first = fx.addr(bases.out, first, od.byte_size());
    for v in (0..NR).step_by(LANES) {
        let col = fx.b.ins().iadd_imm_s(col0, v as i64);
        let cols = Columns::load(fx, c, col, bases, true);
        for r in 0..MR {
            let grow = fx.b.ins().iadd_imm_s(grow0, r as i64);
            let row_offs = epilogue_row_offsets(fx, c, grow, &cols);
            let value = fx.b.ins().load(F32X4, super::emit::mem(), tile, ((r * NR + v) * 4) as i32);
            let x = finish(fx, c, value, col, bases, &row_offs, true, &cols, staged.and_then(|s| s.deferral.as_ref()))?;
            match staged {
                Some(s) => {
                    let at = fx.b.ins().isub(col, s.origin);
                    let at = fx.b.ins().iadd_imm_s(at, (r * s.stride) as i64);
                    s.stage.put(fx, at, x);
                }
                None => fx.store4_at(od, first, ((r * n + v) * od.byte_size()) as i32, x),
            }
        }
    }
    Ok(())
}

/// The row offsets of `c`'s epilogue inputs at global row `grow` (0 for those [`Columns`]
/// holds, the same for every row).
fn epilogue_row_offsets(fx: &mut Fx, c: &Contraction, grow: Value, cols: &Columns) -> Vec<Value> {
    match &c.epilogue {
        Some(e) => e.inputs.iter().zip(&cols.inputs).map(|(i, hoisted)| if hoisted.is_some() { fx.i(0) } else { row_offset(fx, grow, &e.rows_shape, &i.row_strides) }).collect(),
        None => Vec::new(),
    }
}

/// [`store_tile`] for any tile: the tile's `rows` rows that exist, its columns four at a
/// time where all four lie inside (and the epilogue has lanes), else one at a time.
#[allow(clippy::too_many_arguments)]
fn store_tile_edges(fx: &mut Fx, c: &Contraction, tile: Value, bi: Value, r0: Value, col0: Value, bases: &Bases, staged: Option<&Staged>, rows: Value) -> Result<(), String> {
    let out = bases.out;
    let (m, n) = (c.m, c.n);
    let od = c.out.ty.dtype;
    let vector_epilogue = c.epilogue.as_ref().is_none_or(|e| e.expr.is_f32_domain());
    let err = std::cell::RefCell::new(Ok(()));
    fx.for_n(0, NR as i64, LANES as i64, &[], |fx, v, _| {
        let col = fx.b.ins().iadd(col0, v);
        let full = fx.b.ins().icmp_imm_s(IntCC::SignedLessThanOrEqual, col, (n as i64) - LANES as i64);
        let full = if vector_epilogue { full } else { fx.b.ins().iconst(cranelift_codegen::ir::types::I8, 0) };
        // Finishes and stores the value(s) of tile row `r` at `at`: four lanes from `col`, or one.
        let put = |fx: &mut Fx, r: Value, at: Value, col: Value, lanes: bool, cols: &Columns| {
            let row = fx.b.ins().iadd(r0, r);
            // Global row over all batches, and the epilogue inputs' row offsets.
            let grow = fx.b.ins().imul_imm_s(bi, m as i64);
            let grow = fx.b.ins().iadd(grow, row);
            let row_offs = epilogue_row_offsets(fx, c, grow, cols);
            let value = fx.b.ins().load(if lanes { F32X4 } else { F32 }, super::emit::mem(), at, 0);
            match finish(fx, c, value, col, bases, &row_offs, lanes, cols, staged.and_then(|s| s.deferral.as_ref())) {
                Ok(x) => match staged {
                    Some(s) => {
                        let at = fx.b.ins().imul_imm_s(r, s.stride as i64);
                        let at = fx.b.ins().iadd(at, col);
                        let at = fx.b.ins().isub(at, s.origin);
                        s.stage.put(fx, at, x);
                    }
                    None => {
                        let o = fx.b.ins().imul_imm_s(grow, n as i64);
                        let o = fx.b.ins().iadd(o, col);
                        if lanes { fx.store4(od, out, o, x) } else { fx.store(od, out, o, x) }
                    }
                },
                Err(e) => *err.borrow_mut() = Err(e),
            }
        };
        // Tile value (r, v) at `tile + (r * NR + v) * 4`.
        let tile_at = |fx: &mut Fx, r: Value, v: Value| {
            let t = fx.b.ins().imul_imm_s(r, NR as i64);
            let t = fx.b.ins().iadd(t, v);
            fx.addr(tile, t, 4)
        };
        // Tile column `tv` (four lanes, or one) at output column `col`, for every row: its
        // column operands loaded once.
        let column = |fx: &mut Fx, tv: Value, col: Value, lanes: bool| {
            let cols = Columns::load(fx, c, col, bases, lanes);
            let zero = fx.i(0);
            fx.for_range(zero, rows, 1, &[], |fx, r, _| {
                let at = tile_at(fx, r, tv);
                put(fx, r, at, col, lanes, &cols);
                vec![]
            });
        };
        fx.if_else(
            full,
            |fx| {
                column(fx, v, col, true);
                vec![]
            },
            |fx| {
                fx.for_n(0, LANES as i64, 1, &[], |fx, l, _| {
                    let cl = fx.b.ins().iadd(col, l);
                    let ok = fx.b.ins().icmp_imm_s(IntCC::SignedLessThan, cl, n as i64);
                    fx.if_then(ok, |fx| {
                        let vl = fx.b.ins().iadd(v, l);
                        column(fx, vl, cl, false);
                    });
                    vec![]
                });
                vec![]
            },
        );
        vec![]
    });
    err.into_inner()
}

/// Where [`store_tile`] puts an f16 tile's finished values: row `r`, column `col` of the tile
/// at element `r · stride + col − origin` of `stage`, for the runtime to narrow
/// ([`super::narrow`]).
struct Staged {
    stage: Staging,
    stride: usize,
    origin: Value,
    deferral: Option<Deferral>,
}

/// The operands of a contraction's finish that depend on the column alone: the bias, and each
/// epilogue input that is the same for every row (a batch norm's per-channel constants, a
/// ReLU6's bounds). Loaded (and, from f16/bf16, widened) once per column vector of a tile and
/// reused for its rows, rather than once per value.
struct Columns {
    bias: Option<Value>,
    inputs: Vec<Option<Value>>,
}

impl Columns {
    /// The column operands at `col` (four lanes from `col` when `lanes`).
    fn load(fx: &mut Fx, c: &Contraction, col: Value, bases: &Bases, lanes: bool) -> Columns {
        let bias = match (bases.bias, &c.bias) {
            (Some(bias), Some(b)) => {
                let (bias_len, bd) = (b.ty.num_elements(), b.ty.dtype);
                Some(if bias_len == 1 {
                    let z = fx.i(0);
                    let s = fx.load(bd, bias, z);
                    if lanes {
                        fx.b.ins().splat(F32X4, s)
                    } else {
                        s
                    }
                } else if lanes {
                    fx.load4_checked(bd, bias, col, bases.finite.bias)
                } else {
                    fx.load(bd, bias, col)
                })
            }
            _ => None,
        };
        let inputs = match &c.epilogue {
            Some(e) => e
                .inputs
                .iter()
                .enumerate()
                .map(|(i, input)| {
                    let same_rows = input.row_strides.iter().all(|&s| s == 0);
                    same_rows.then(|| match bases.finite.epilogue_scalar[i] {
                        Some(k) => {
                            let v = fx.f(if lanes { F32X4 } else { F32 }, k);
                            if input.dtype == DType::F16 {
                                fx.mark_f16_grid(v);
                            }
                            v
                        }
                        None => {
                            let zero = fx.i(0);
                            epilogue_input(fx, input, bases.epilogue[i], zero, col, lanes, bases.finite.epilogue[i])
                        }
                    })
                })
                .collect(),
            None => Vec::new(),
        };
        Columns { bias, inputs }
    }
}

/// Epilogue input `input` (at `base`) at row offset `row_off` and column `col` (four lanes from
/// `col` when `lanes`).
fn epilogue_input(fx: &mut Fx, input: &crate::lower::EpilogueInput, base: Value, row_off: Value, col: Value, lanes: bool, finite: bool) -> Value {
    let off = if input.col_stride == 0 { row_off } else {
        let t = fx.b.ins().imul_imm_s(col, input.col_stride as i64);
        fx.b.ins().iadd(row_off, t)
    };
    if !lanes {
        fx.load(input.dtype, base, off)
    } else if input.col_stride == 0 {
        let s = fx.load(input.dtype, base, off);
        fx.b.ins().splat(F32X4, s)
    } else if input.col_stride == 1 {
        fx.load4_checked(input.dtype, base, off, finite)
    } else {
        let mut v = fx.f(F32X4, 0.0);
        for l in 0..LANES {
            let o = fx.b.ins().iadd_imm_s(off, (l * input.col_stride) as i64);
            let s = fx.load(input.dtype, base, o);
            v = fx.b.ins().insertlane(v, s, l as u8);
        }
        v
    }
}

/// What of a depthwise convolution's finish the native row loop ([`DepthwiseParams`]) does
/// itself, where that is all of it: the bias (where the contraction has one), then
/// `maximum`/`minimum` with constant bounds (a ReLU6, as ops or a clamp). On an f32 result they are the reference's ops on the sum (with a
/// NaN-free bound, x86's `maxps`/`minps` with the bound first, then NaNs made canonical, as
/// [`Fx::tosa_max`] does); on a staged f16 one the deferral's bounds on the unrounded sum, as
/// [`Fx::bound_unrounded`] applies them ([`Bound::unrounded`](super::narrow::Bound::unrounded);
/// the narrowing makes NaNs canonical).
#[derive(Clone, Debug, PartialEq)]
struct NativeFinish {
    /// `x test t ? v : x` as (test, t, v), in the order they apply.
    bounds: Vec<(FloatCC, f32, f32)>,
    canonical: bool,
}

impl NativeFinish {
    /// `None` where the epilogue does anything else, or the bias is not one per channel.
    fn of(c: &Contraction, finite: &Finite, deferral: Option<&Deferral>, channels: usize) -> Option<NativeFinish> {
        if c.bias.as_ref().is_some_and(|b| b.ty.num_elements() != channels) {
            return None;
        }
        let ops = c.epilogue.as_ref().map_or(0, |e| e.expr.ops.len());
        let finish = |bounds: Vec<(FloatCC, f32, f32)>, canonical: bool| (bounds.len() <= DepthwiseParams::MAX_BOUNDS).then_some(NativeFinish { bounds, canonical });
        if let Some(d) = deferral {
            // Every op a bound (a clamp is two), or the cast that widens the result.
            let mut bound_ops: Vec<usize> = d.bounds.iter().map(|b| b.op).collect();
            bound_ops.dedup();
            if d.op.is_some() || bound_ops.len() + usize::from(d.widen) != ops {
                return None;
            }
            return finish(d.bounds.iter().rev().map(|b| b.unrounded()).collect(), false);
        }
        if c.result != DType::F32 || c.out.ty.dtype != DType::F32 {
            return None;
        }
        let mut bounds = Vec::new();
        if let Some(e) = &c.epilogue {
            let inputs = e.expr.inputs.len();
            if e.expr.inputs[0] != DType::F32 {
                return None;
            }
            let maximum = |k: f32| (FloatCC::LessThan, k, k);
            let minimum = |k: f32| (FloatCC::GreaterThan, k, k);
            // Each op reads the one before it (the first the sum) as its first operand.
            for (i, op) in e.expr.ops.iter().enumerate() {
                let chain = if i == 0 { 0 } else { inputs + i - 1 };
                let scalar = |v: usize| (1..inputs).contains(&v).then(|| finite.epilogue_scalar[v - 1]).flatten().filter(|k| !k.is_nan() && e.expr.inputs[v] == DType::F32);
                match (op.kind, op.args.as_slice()) {
                    _ if op.dtype != DType::F32 => return None,
                    (EwKind::Binary(BinaryOp::Maximum), &[a, b]) if a == chain => bounds.push(maximum(scalar(b)?)),
                    (EwKind::Binary(BinaryOp::Minimum), &[a, b]) if a == chain => bounds.push(minimum(scalar(b)?)),
                    (EwKind::Clamp { min, max }, &[a]) if a == chain && !min.is_nan() && !max.is_nan() => bounds.extend([maximum(min as f32), minimum(max as f32)]),
                    _ => return None,
                }
            }
        }
        let canonical = !bounds.is_empty();
        finish(bounds, canonical)
    }

    /// `p` with this finish's bounds (its bias address is stored at run time).
    fn params(&self, p: DepthwiseParams) -> DepthwiseParams {
        let mut p = DepthwiseParams { bounds: self.bounds.len() as u64, canonical: u64::from(self.canonical), ..p };
        for (i, &(test, t, v)) in self.bounds.iter().enumerate() {
            let code = match test {
                FloatCC::LessThan => DepthwiseParams::LESS,
                FloatCC::GreaterThan => DepthwiseParams::GREATER,
                FloatCC::LessThanOrEqual => DepthwiseParams::LESS_EQUAL,
                _ => DepthwiseParams::GREATER_EQUAL,
            };
            p.bound_tests |= code << (2 * i);
            p.thresholds[i] = t;
            p.bound_values[i] = v;
        }
        p
    }
}

/// The rounding of [`finish`] that narrowing `c`'s staged f16 result can do instead
/// ([`super::narrow::deferral`]).
fn finish_deferral(c: &Contraction, finite: &Finite) -> Option<Deferral> {
    deferral(Some(c.result), c.epilogue.as_ref().map(|e| &e.expr), &finite.epilogue_scalar)
}

/// Bias add, rounding to the contraction's type, and the fused epilogue for a value at column
/// `col` (four lanes from `col` when `lanes`), with that column's operands `cols`; without the
/// rounding `deferral` leaves to the narrowing of a staged f16 result.
#[allow(clippy::too_many_arguments)]
fn finish(fx: &mut Fx, c: &Contraction, value: Value, col: Value, bases: &Bases, row_offs: &[Value], lanes: bool, cols: &Columns, deferral: Option<&Deferral>) -> Result<Value, String> {
    let x = match cols.bias {
        Some(bv) => fx.b.ins().fadd(value, bv),
        None => value,
    };
    let x = if deferral.is_some_and(|d| d.op.is_none()) { x } else { fx.round_f32(c.result, x) };
    let Some(Epilogue { expr, inputs, .. }) = &c.epilogue else { return Ok(x) };
    let mut args = vec![x];
    for (i, input) in inputs.iter().enumerate() {
        let v = match cols.inputs[i] {
            Some(v) => v,
            None => epilogue_input(fx, input, bases.epilogue[i], row_offs[i], col, lanes, bases.finite.epilogue[i]),
        };
        args.push(v);
    }
    eval_with(fx, expr, args, deferral)
}

#[cfg(test)]
mod tests {
    use super::{TapClass, TapClasses};

    #[test]
    fn tap_classes_of_a_padded_3x3_window() {
        // 4 outputs of a 3-tap window over 4 inputs, padding 1: the first lacks tap 0, the last
        // tap 2, the middle two have all three.
        let c = TapClasses::new(4, 4, 3, 1, 1, 1);
        let want = [TapClass { start: 0, end: 1, taps: (1, 3) }, TapClass { start: 1, end: 3, taps: (0, 3) }, TapClass { start: 3, end: 4, taps: (0, 2) }];
        assert_eq!(c.0, want);
        assert!(c.guarded(0) && !c.guarded(1) && c.guarded(2));
    }

    #[test]
    fn tap_classes_cover_every_output_with_exactly_its_inside_taps() {
        for outputs in 1..7 {
            for size in 1..6 {
                for len in 1..5 {
                    for stride in 1..3 {
                        for dilation in 1..3 {
                            for pad in 0..5 {
                                let c = TapClasses::new(outputs, size, len, stride, dilation, pad);
                                assert_eq!(c.0.first().map(|c| c.start), Some(0));
                                assert!(c.0.windows(2).all(|w| w[0].end == w[1].start && w[0].taps != w[1].taps));
                                assert_eq!(c.0.last().map(|c| c.end), Some(outputs));
                                for class in &c.0 {
                                    for o in class.start..class.end {
                                        for k in 0..len {
                                            let x = (o * stride + k * dilation) as i64 - pad as i64;
                                            let inside = (0..size as i64).contains(&x);
                                            assert_eq!((class.taps.0..class.taps.1).contains(&k), inside, "o={o} k={k} size={size} stride={stride} dilation={dilation} pad={pad}");
                                        }
                                    }
                                }
                                for k in 0..len {
                                    let inside = |o: usize| (0..size as i64).contains(&((o * stride + k * dilation) as i64 - pad as i64));
                                    assert_eq!(c.ever(k), (0..outputs).any(inside));
                                    assert_eq!(c.guarded(k), (0..outputs).any(inside) && !(0..outputs).all(inside));
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}
