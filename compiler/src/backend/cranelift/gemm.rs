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
//! - Each work item of the second step takes [`MC`](super::legal::MC) rows of `A` and walks the reduction in
//!   chunks of about [`KC`] ([`k_chunks`]). Per chunk it packs those rows (converting to f32,
//!   gathering conv windows: an implicit im2col, zero outside the input) into micro-panels
//!   `[kc][MR]` of f32 in this thread's scratch, then multiplies them with the chunk of every
//!   `B` panel of its column group, accumulating into an f32 `C` block in scratch (one `MR ×
//!   NR` tile per micro-panel and panel). Where A's rows already lie in memory as the GEMM's
//!   (a matmul, a 1×1 convolution with stride 1 and no padding: most of a mobilenet) in f32,
//!   or widened so, and every micro-panel is full, nothing is packed: A's rows are read in
//!   place ([`AForm::Rows`]), and the column groups can be one panel wide.
//! - That multiplication is one call of the runtime micro-kernel the options' [`Loops`]
//!   choose (`Libcall::GemmTiles`, x86 AVX2 + FMA: 8 lanes, 12 accumulators, or
//!   `GemmTilesAvx512`; it reads an f16/bf16 B in its type), or, for a CPU without AVX2, the
//!   generated 4×8 micro-kernel per tile (f32x4, 8 accumulators: Cranelift's SIMD is
//!   128-bit). The choice is made here, at compile time; all give the same bits.
//! - After the last chunk, the epilogue adds the bias, rounds once to the contraction's type,
//!   applies the fused elementwise ops (rounding after each, as the graph does), and stores.
//!   Edge tiles use scalar lanes.
//!
//! Accumulation is in f32 in index order of `k`, with FMA: results may differ from the
//! reference interpreter (separate multiply and add) by the reduction tolerance.

use super::conv::{in_range, store_params, store_params_bias, NativeFinish};
use super::emit::{domain, Emitted, Fx};
use super::epilogue::{finish_deferral, store_tile, Bases, Finite, Given, Staged};
use super::legal::{KC, LANES, MC, MR, NR};
use super::lower::{copy_bytes, wide_math, wide_name, Context};
use super::plan::Planner;
use super::narrow::{Deferral, Staging};
#[cfg(doc)]
use super::Loops;
use crate::backend::cpu::{self, AStaging, BPlan, Multiply, WidenB};
use crate::backend::BackendError;
use crate::target::GemmShape;
use crate::lower::{Contraction, ContractionKind, ConvGeometry, Program};
use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::types::{F32, F32X4};
use cranelift_codegen::ir::{InstBuilder, Value};
use f16c_core::abi::{DepthwiseParams, Libcall};
use f16c_dialect::DType;
use super::micro::*;
use super::pack::*;

impl Context<'_> {
    /// A matmul or convolution as `plan` says ([`GemmPlan`], [`Context::gemv`]).
    pub(super) fn gemm(&mut self, c: &Contraction, plan: GemmPlan, finite: Finite) -> Result<(), BackendError> {
        let b_slot = self.gemm_b(c, &plan, finite.weight)?;
        if plan.gemv {
            return self.gemv(c, b_slot, (plan.packed_dt, plan.gemv_loop), finite);
        }
        self.layout.scratch(plan.scratch_bytes);
        // Window rows of a padded or fp16 input: the input padded and widened once per run, a
        // step of its own; the rows read the f32 temporary.
        let mut c = c.clone();
        if let Some(w) = plan.windows.as_ref().filter(|w| w.staged()) {
            c.a.buffer = crate::lower::BufferId(self.pad_input(&c, w)?);
            c.a.ty.dtype = DType::F32;
        }
        let c = &c;
        let (c, cost) = (c.clone(), 2.0 * (c.batch * c.m * c.n * c.k) as f64);
        self.add("", plan.cpu.work.items, cost, move |fx| {
            let bases = Bases::new(fx, &c, b_slot, &finite);
            if let Some(params) = &plan.finish {
                // The native finish's fixed words, once per call (each item its bias address).
                let at = fx.b.ins().iadd_imm_s(fx.scratch, plan.finish_offset as i64);
                store_params(fx, at, params);
            }
            fx.try_for_items(|fx, item| gemm_item(fx, &plan, &c, &bases, item))
        })
    }

    /// Where the compute step reads the packed B: a constant packed at compile time (in its
    /// own type, or widened once per run by a first step into the kernel's temporary), or one
    /// computed at run time, packed by a first step.
    fn gemm_b(&mut self, c: &Contraction, plan: &GemmPlan, b_finite: bool) -> Result<usize, BackendError> {
        let (batch, panels) = (c.batch, plan.panels);
        let panel_elems = c.k * NR;
        let packed_elems = batch * panels * panel_elems;
        let bdt = c.b.ty.dtype;
        if !c.b_constant {
            let b_slot = self.layout.temporary(self.current, packed_elems * 4);
            let (bbuf, c) = (c.b.buffer.0, c.clone());
            self.add("_pack_b", batch * panels, packed_elems as f64, move |fx| {
                let (src, dst) = (fx.buffer(bbuf), fx.buffer(b_slot));
                fx.for_items(|fx, item| {
                    pack_b_panel(fx, &c, src, dst, item);
                });
                Ok(())
            })?;
            return Ok(b_slot);
        }
        // Packed from the program's bytes (little-endian elements): no tensor and no byte copy
        // of the weight on the way (GPT-2's tied embedding is 154 MB).
        if !matches!(&self.program.buffers[c.b.buffer.0].kind, crate::lower::BufferKind::Constant(b) if b.len() == c.b.ty.byte_size()) {
            return Err(self.error("constant weight could not be read"));
        }
        // Packed when the constants section is put together (one weight and its packed copy
        // alive at a time, not every weight and every copy).
        let (pc, pchunks, dot) = (c.clone(), plan.cpu.chunks.clone(), plan.dot());
        let pack = crate::backend::layout::Pack(std::sync::Arc::new(move |bytes: &[u8], dst: &mut [u8]| pack_b_constant(&pc, bytes, dst, &pchunks, dot)));
        let packed_slot = self.layout.replace_constant_packed(self.current, c.b.buffer, packed_elems * bdt.byte_size(), pack);
        if plan.cpu.b.widen != WidenB::PerRun {
            // An f16/bf16 one used by few row blocks stays in its type: the compute step widens
            // one chunk of a panel at a time into scratch, next to the A chunk that uses it, and
            // no f32 copy of the weight is ever made.
            return Ok(packed_slot);
        }
        // Used by many row blocks: widen it once per run into the temporary.
        let b_slot = self.layout.temporary(self.current, packed_elems * 4);
        self.add("_widen_b", batch * panels, packed_elems as f64, move |fx| {
            let (src, dst) = (fx.buffer(packed_slot), fx.buffer(b_slot));
            fx.for_items(|fx, p| {
                let base = fx.b.ins().imul_imm_s(p, panel_elems as i64);
                let (from, to) = (fx.addr(src, base, bdt.byte_size()), fx.addr(dst, base, 4));
                widen_run(fx, bdt, from, to, panel_elems, b_finite);
            });
            Ok(())
        })?;
        Ok(b_slot)
    }
}

/// A GEMM's decisions, made from the contraction and the backend's options before any of its
/// code is emitted; the emitters below only read them, and [`GemmPlan::describe`] prints them.
#[derive(Clone, Debug)]
pub(super) struct GemmPlan {
    /// The decisions both CPU backends plan in one vocabulary ([`cpu::GemmPlan`]): the 4 × 8
    /// tile of the runtime's contract, the runtime micro-kernel (or the generated one), the
    /// reduction's chunks, B's packing and widening, A's staging and form, the work items
    /// (rows: a row block's or a band's; panels: a column group's).
    pub(super) cpu: cpu::GemmPlan,
    /// Row blocks per batch.
    blocks: usize,
    /// B panels of [`NR`] columns.
    panels: usize,
    /// A one-row matmul ([`Context::gemv`]).
    pub(super) gemv: bool,
    /// (A one-row matmul) the runtime's loop it calls (`None`: generated code).
    pub(super) gemv_loop: Option<Libcall>,
    /// B's type as the compute step reads it.
    pub(super) packed_dt: DType,
    /// Micro-panels of [`MR`] rows per row block.
    a_panels: usize,
    /// (A convolution, A read as window rows) A's rows read as window rows of the input,
    /// padded first where it has padding ([`WindowRows`]).
    windows: Option<WindowRows>,
    /// Bytes of an element of A as the micro-kernel reads it.
    a_elem: usize,
    /// Column groups, and B panels per group.
    groups: usize,
    group_panels: usize,
    /// (f16 result, or one the epilogue casts to f32 last) the rounding the narrowing does.
    deferral: Option<Deferral>,
    /// The finished rows are staged in f32 and narrowed by the runtime.
    narrowed: bool,
    /// Every row of the block staged and narrowed in one call.
    stage_block: bool,
    /// Elements between two staged rows.
    stage_stride: usize,
    /// (f32 result) an epilogue op, a sigmoid, erf, tanh or exp of the contraction's value,
    /// computed for the whole block by the runtime's sixteen-lane loop: the op and the libcall.
    wide: Option<(usize, Libcall)>,
    /// (`wide` the sigmoid of a SiLU of the contraction's value) the block's `x` stored as the
    /// result, then made `x · sigmoid(x)` in place by the runtime's SiLU loop: one pass of
    /// generated code over the block instead of two.
    silu: bool,
    /// Scratch offsets of the block's values as that op's argument and as its result (laid out
    /// as the staging area: rows of `stage_stride`).
    arg_offset: usize,
    sig_offset: usize,
    /// Scratch offsets: the f32 C block, one widened B chunk, A's widened band, the staging
    /// area; and the bytes of scratch the kernel takes.
    c_offset: usize,
    wide_offset: usize,
    band_offset: usize,
    stage_offset: usize,
    scratch_bytes: usize,
    /// The tiles finished by the runtime's sixteen-lane loop ([`Libcall::FinishTilesF32`])
    /// where the result is f32 and the epilogue only the bias, bounds or SiLU, with these
    /// parameters (the bias address written at run time) at `finish_offset` in scratch.
    finish: Option<DepthwiseParams>,
    finish_offset: usize,
}

impl GemmPlan {
    pub(super) fn new(cx: &Planner<'_>, kernel: usize, c: &Contraction, finite: &Finite) -> GemmPlan {
        let (batch, m, n, k) = (c.batch, c.m, c.n, c.k);
        let windows = WindowRows::of(c, cx.loops.gemm().is_some());
        let mc = windows.as_ref().map_or_else(|| cx.row_block(kernel, m), |w| w.rows);
        let panels = n.div_ceil(NR);
        let packed_elems = batch * panels * k * NR;
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
        let chunks = match &windows {
            _ if gemv || (m <= MR && k <= ONE_CHUNK_MAX_K) => vec![(0, k)],
            Some(w) => w.chunks(),
            None => k_chunks(&c.kind, k),
        };
        const WIDEN_ONCE_BLOCKS: usize = 4;
        const WIDEN_ONCE_BYTES: usize = 1 << 19;
        // bf16 A and constant B on a host with AVX512-BF16: the runtime multiplies them in
        // bf16 pairs (B packed with its rows interleaved in pairs, read in its type, never
        // widened; every chunk of even length so that no pair straddles two).
        let dot = cx.dot_bf16 && !gemv && c.a.ty.dtype == DType::BF16 && bdt == DType::BF16 && c.b_constant && chunks.iter().all(|(k0, k1)| (k1 - k0) % 2 == 0);
        let widen_once = !dot && (batch * blocks > WIDEN_ONCE_BLOCKS || (batch * blocks > 1 && packed_elems * 4 <= WIDEN_ONCE_BYTES));
        let packed_dt = if c.b_constant && !widen_once { bdt } else { DType::F32 };
        let a_panels = mc.div_ceil(MR).min(m.div_ceil(MR));
        let kc_max = chunks.iter().map(|(k0, k1)| k1 - k0).max().unwrap_or(0);
        // (fp16 A) The span of A a row block reads, widened in one runtime call per block
        // (F16C) so that packing reads f32: packing widened each value in software, three
        // channels per tap for the first conv of an image network.
        let band = (c.a.ty.dtype == DType::F16 && windows.is_none()).then(|| a_band_bound(c, mc, a_panels * MR)).filter(|&n| n <= A_BAND_MAX);
        // A whose rows lie in memory as the GEMM's rows, in f32 (or widened so), every
        // micro-panel full: the micro-kernel reads them in place and nothing is packed.
        // (bf16 pairs) A's bf16 rows in place: the runtime pairs them as it reads them.
        let dot_rows = dot && rows_in_place(c) && m % MR == 0;
        // The micro-kernel, chosen here (the code calls it and has no other path), or none:
        // the generated 4x8 one per tile.
        let micro = if dot { Some(Libcall::GemmPairsBf16) } else { cx.loops.gemm() };
        let a_tail = rows_in_place(c) && m % MR != 0 && !gemv && !dot && c.a.ty.dtype == DType::F32 && micro.is_some();
        // (The runtime loop) A's rows in place but in too few cache sets: packed instead.
        let aliased = micro.is_some() && !dot && rows_alias_in_l1(c.k * 4);
        let a_form = if windows.is_some() || rows_in_place(c) && !aliased && (m % MR == 0 || a_tail) && (c.a.ty.dtype == DType::F32 || band.is_some() || dot_rows) { AForm::Rows } else { AForm::Packed };
        let a_elem = if dot_rows { 2 } else { 4 };
        // Scratch: the packed A chunk (or its last micro-panel), the f32 C block (one MR × NR
        // tile per (panel, micro-panel)) that the chunks accumulate into, then (f16/bf16 B) one
        // widened B chunk, then A's band.
        let c_offset = match a_form {
            AForm::Packed => a_panels * MR * kc_max * 4,
            AForm::Rows if a_tail => MR * kc_max * 4,
            AForm::Rows => 0,
        };
        let wide_offset = c_offset + panels * a_panels * TILE_BYTES;
        let wide_bytes = if packed_dt == DType::F32 { 0 } else { kc_max * NR * 4 };
        let band_offset = wide_offset + wide_bytes;
        let groups = column_groups(batch * blocks, panels, a_form == AForm::Packed || band.is_some() || dot);
        // The AVX-512 loop takes B panels in pairs (a last odd one on the AVX2 loop, at
        // almost the cost of a pair): a group of whole pairs.
        let pairs = micro == Some(Libcall::GemmTilesAvx512) && !dot;
        let group_panels = if pairs { panels.div_ceil(groups).next_multiple_of(2) } else { panels.div_ceil(groups) };
        let groups = panels.div_ceil(group_panels.max(1)).max(1);
        // Then (f16 output) the finished rows of one micro-panel across the column group, in
        // f32, for the runtime to narrow: in one call when the group is every column (the
        // staged rows are then laid out as the output's), else one per row.
        // (Likewise an f16 result that the epilogue casts to f32 last: rounded to f16 and
        // widened by one call.)
        let deferral = finish_deferral(c, finite).filter(|d| c.out.ty.dtype == DType::F16 || d.widen);
        let narrowed = c.out.ty.dtype == DType::F16 || deferral.is_some();
        let stage_offset = band_offset + band.unwrap_or(0) * 4;
        let stage_stride = if groups == 1 { n } else { group_panels * NR };
        // Every row of the block staged (and narrowed in one call) where the group is every
        // column and that takes at most STAGE_BLOCK_MAX bytes: one call per micro-panel made
        // cnn_small's first convolution (8 channels) 1.5× slower in fp16 than in f32.
        let stage_block = groups == 1 && a_panels * MR * n * 4 <= STAGE_BLOCK_MAX;
        let stage_rows = if stage_block { a_panels * MR } else { MR };
        let stage_bytes = if narrowed { stage_rows * stage_stride * 4 } else { 0 };
        // SiLU's sigmoid (or a gate's, a GELU's erf of x...) of an f32 result: the block's
        // values finished up to the op's argument into scratch, the op for all of them in one
        // runtime call, then the finish with the op's values given (the same bits as four
        // lanes at a time, and as a kernel of its own after the GEMM).
        let block_bytes = a_panels * MR * stage_stride * 4;
        let wide = (!narrowed && !gemv && c.out.ty.dtype == DType::F32 && block_bytes <= WIDE_BLOCK_MAX).then(|| wide_epilogue_op(c)).flatten();
        let silu = wide.is_some() && c.epilogue.as_ref().is_some_and(|e| e.expr.is_silu());
        let staged_op = wide.is_some() && !silu;
        let arg_offset = stage_offset + stage_bytes;
        let sig_offset = arg_offset + if staged_op { block_bytes } else { 0 };
        let wide_end = sig_offset + if staged_op { block_bytes } else { 0 };
        // On the AVX-512 loop an f32 result whose epilogue is only the bias, bounds (a ReLU, a
        // clamp) or SiLU is finished by the runtime's sixteen-lane loop, every value what the
        // generated four-lane finish computes (3.9 ms of ResNet-50's JIT run was that finish).
        let native = micro == Some(Libcall::GemmTilesAvx512) && !gemv && !narrowed && !dot && deferral.is_none() && c.bias.as_ref().is_none_or(|b| b.ty.dtype == DType::F32);
        let finish = native
            .then(|| {
                let blank = DepthwiseParams::default();
                if silu {
                    let bare = Contraction { epilogue: None, ..c.clone() };
                    NativeFinish::of(&bare, finite, None, n).map(|f| DepthwiseParams { silu: 1, ..f.params(blank) })
                } else if wide.is_none() {
                    NativeFinish::of(c, finite, None, n).map(|f| f.params(blank))
                } else {
                    None
                }
            })
            .flatten();
        let finish_offset = wide_end.next_multiple_of(8);
        let scratch_end = finish_offset + if finish.is_some() { std::mem::size_of::<DepthwiseParams>() } else { 0 };
        // The plan both CPU backends read.
        let b = BPlan {
            run_time: (!c.b_constant).then_some(DType::F32),
            widen: match () {
                _ if !c.b_constant || bdt == DType::F32 || dot => WidenB::No,
                _ if widen_once => WidenB::PerRun,
                // The runtime's loop reads B in its type; the generated micro-kernel's chunks
                // are widened into scratch.
                _ if micro.is_some() => WidenB::No,
                _ => WidenB::PerChunk,
            },
        };
        let staging = match (&windows, band) {
            (Some(w), _) => match w.padded {
                Some((ih, iw)) => AStaging::Padded { geometry: ConvGeometry { ih, iw, pad: [0; 4], ..w.g.clone() }, dtype: if w.widen { DType::F32 } else { c.a.ty.dtype }, slack: 0, skipped: cpu::SkippedPadding::default() },
                None if w.widen => AStaging::Widened,
                None => AStaging::AsIs,
            },
            (None, Some(bound)) => AStaging::WidenedPerRowBlock { bound },
            (None, None) => AStaging::AsIs,
        };
        let form = match a_form {
            _ if windows.is_some() => cpu::AForm::WindowRows,
            AForm::Packed => cpu::AForm::Packed,
            AForm::Rows if a_tail => cpu::AForm::InPlaceLastPacked,
            AForm::Rows => cpu::AForm::InPlace,
        };
        let cpu = cpu::GemmPlan {
            tile: GemmShape { mr: MR, nr: NR, lanes: LANES },
            multiply: if dot { Multiply::Bf16Pairs } else { Multiply::f32(cx.fma) },
            micro,
            chunks,
            b,
            a: cpu::APlan { staging, form },
            work: cpu::Work { rows: mc, panels: if groups == 1 { 0 } else { group_panels }, items: batch * blocks * groups, rows_fastest: false },
        };
        GemmPlan {
            cpu,
            blocks,
            panels,
            gemv,
            gemv_loop: if gemv { cx.loops.gemv() } else { None },
            packed_dt,
            a_panels,
            windows,
            a_elem,
            groups,
            group_panels,
            deferral,
            narrowed,
            stage_block,
            stage_stride,
            wide,
            silu,
            arg_offset,
            sig_offset,
            c_offset,
            wide_offset,
            band_offset,
            stage_offset,
            scratch_bytes: scratch_end,
            finish,
            finish_offset,
        }
    }

    /// Bf16 A and B multiplied in pairs (`VDPBF16PS`).
    pub(super) fn dot(&self) -> bool {
        self.cpu.multiply == Multiply::Bf16Pairs
    }

    /// Rows of A per work item (a band's rows where the GEMM runs in bands).
    fn mc(&self) -> usize {
        self.cpu.work.rows
    }

    /// How the micro-kernel reads A: packed micro-panels, or rows where they lie.
    fn a_form(&self) -> AForm {
        if self.cpu.a.form == cpu::AForm::Packed { AForm::Packed } else { AForm::Rows }
    }

    /// (Rows in place, `m` not a multiple of [`MR`]) the last micro-panel, which has rows past
    /// `m`, packed on its own (zero rows past `m`) and multiplied by a second call of the
    /// runtime's loop: the other rows stay where they lie instead of the whole of A being
    /// packed per chunk and column group (a ViT's 197 tokens: its GEMMs 1.25× slower).
    fn a_tail(&self) -> bool {
        self.cpu.a.form == cpu::AForm::InPlaceLastPacked
    }

    /// (fp16 A) the bound on the span of A a row block widens at once.
    fn band(&self) -> Option<usize> {
        match self.cpu.a.staging {
            AStaging::WidenedPerRowBlock { bound } => Some(bound),
            _ => None,
        }
    }

    /// The plan in words (`--emit=kernels`, the profile): the shared plan's
    /// ([`cpu::GemmPlan::describe`]), then the block-wide epilogue call.
    pub(super) fn describe(&self, c: &Contraction) -> String {
        let what = self.cpu.micro.and_then(f16c_core::abi::MicroKernel::of).map(|m| m.what);
        let wide_text = match self.wide {
            _ if self.finish.is_some_and(|f| f.silu != 0) => "; the tiles finished as x · sigmoid(x) by the runtime's 16-lane loop".to_string(),
            _ if self.finish.is_some() => "; the tiles finished by the runtime's 16-lane loop".to_string(),
            Some(_) if self.silu => "; the block stored as x, then x · sigmoid(x) in place by the runtime's 16-lane loop".to_string(),
            Some((_, call)) => format!("; the epilogue's {} for the block at once by the runtime's 16-lane loop", wide_name(call)),
            None => String::new(),
        };
        format!("{}{wide_text}", self.cpu.describe(c, what, false))
    }

    /// The C tile of panel `p` and micro-panel `ip` in scratch.
    fn tile_at(&self, fx: &mut Fx, p: Value, ip: Value) -> Value {
        let t = fx.b.ins().imul_imm_s(p, self.a_panels as i64);
        let t = fx.b.ins().iadd(t, ip);
        let t = fx.b.ins().imul_imm_s(t, TILE_BYTES as i64);
        let t = fx.b.ins().iadd_imm_s(t, self.c_offset as i64);
        fx.b.ins().iadd(fx.scratch, t)
    }
}

/// Whether the runtime loop's passes, which read twelve rows of A in place `stride` bytes
/// apart, would find more of them in one set of the L1 data cache than it has ways (64 sets of
/// 64-byte lines, eight ways, on Zen 4 as on most x86 cores): a stride that is a multiple of
/// 4 KiB puts all twelve in one set, and every `k` step then misses. BERT's and GPT-2's
/// 768 × 3072 matmuls (12 KiB rows) ran at 86 GF/s in place and 101 GF/s packed; at six rows
/// a set (`k` = 512, 1536) packing cost more than it saved (ViT-S/16's 197 × 1536 matmuls
/// 2.18 → 2.33 ms).
fn rows_alias_in_l1(stride: usize) -> bool {
    const LINE: usize = 64;
    const SETS: usize = 64;
    const WAYS: usize = 8;
    const PASS_ROWS: usize = 12;
    let mut count = [0usize; SETS];
    for r in 0..PASS_ROWS {
        count[(r * stride / LINE) % SETS] += 1;
    }
    count.iter().any(|&n| n > WAYS)
}

/// A convolution's A read in place ([`GemmPlan::windows`]): the rows of a chunk are one window
/// row's taps of consecutive output pixels, `kw·ic` contiguous values of the (padded) input
/// from each pixel's window, `stride_x·ic` values apart. A row block lies in one output row
/// (`rows` divides the output's width), so its rows are evenly spaced, and a chunk never
/// crosses a window row. Nothing is packed: packing every row block's windows again for each
/// column group cost a U-Net's narrow convolutions (32 and 64 channels) a fifth of their time.
/// f32 A, dilation 1 across, one contraction batch, on a runtime loop.
#[derive(Clone, Debug)]
pub(super) struct WindowRows {
    /// The convolution's geometry.
    g: ConvGeometry,
    /// The padded input's height and width, where the input has padding (padded once per run
    /// into a temporary of the kernel).
    padded: Option<(usize, usize)>,
    /// (fp16 A) the input widened to f32 once per run into a temporary of the kernel (padded
    /// too where it has padding), which the rows then read.
    widen: bool,
    /// Rows per row block: the largest multiple of [`MR`] up to [`MC`] that divides the
    /// output's width (at least [`WINDOW_ROWS_MIN`]).
    rows: usize,
}

/// The fewest rows a row block of [`WindowRows`] takes: narrower blocks (measured from 16 to
/// 64 rows) would call the runtime's loop once per chunk for a few rows.
const WINDOW_ROWS_MIN: usize = 16;

impl WindowRows {
    /// `c`'s window rows, where they apply (`runtime_loop`: the GEMMs call the runtime's loop,
    /// which reads rows in place).
    fn of(c: &Contraction, runtime_loop: bool) -> Option<WindowRows> {
        let ContractionKind::Conv(g) = &c.kind else { return None };
        if !runtime_loop || !matches!(c.a.ty.dtype, DType::F32 | DType::F16) || !c.a_parts.is_empty() || c.batch != 1 || g.dilation[1] != 1 || rows_in_place(c) || c.padding_hazard {
            return None;
        }
        let rows = (1..=MC / MR).rev().map(|i| i * MR).find(|r| g.ow.is_multiple_of(*r)).filter(|&r| r >= WINDOW_ROWS_MIN)?;
        let [top, bottom, left, right] = g.pad;
        let padded = (g.pad != [0; 4]).then_some((g.ih + top + bottom, g.iw + left + right));
        Some(WindowRows { g: g.clone(), padded, widen: c.a.ty.dtype == DType::F16, rows })
    }

    /// Whether a step first writes the input as the rows read it (padded, or widened to f32).
    fn staged(&self) -> bool {
        self.padded.is_some() || self.widen
    }

    /// The input's height and width as the rows read it.
    fn dims(&self) -> (usize, usize) {
        self.padded.unwrap_or((self.g.ih, self.g.iw))
    }

    /// Elements between two rows.
    fn stride(&self) -> usize {
        self.g.stride[1] * self.g.ic
    }

    /// The reduction's chunks: each window row's `kw·ic` values, in pieces of at most [`KC`].
    fn chunks(&self) -> Vec<(usize, usize)> {
        let span = self.g.kw * self.g.ic;
        let parts = span.div_ceil(KC).max(1);
        (0..self.g.kh).flat_map(|ky| (0..parts).map(move |p| (ky * span + span * p / parts, ky * span + span * (p + 1) / parts))).collect()
    }

    /// The element of the (padded) input at which row `r` (an output pixel) reads column `k0`.
    fn row_at(&self, fx: &mut Fx, r: Value, k0: usize) -> Value {
        let g = &self.g;
        let (ih, iw) = self.dims();
        let span = g.kw * g.ic;
        let (ky, off) = (k0 / span, k0 % span);
        let line = fx.b.ins().udiv_imm_s(r, g.ow as i64);
        let ox = fx.b.ins().urem_imm_s(r, g.ow as i64);
        let b = fx.b.ins().udiv_imm_s(line, g.oh as i64);
        let oy = fx.b.ins().urem_imm_s(line, g.oh as i64);
        let y = fx.b.ins().imul_imm_s(oy, g.stride[0] as i64);
        let y = fx.b.ins().iadd_imm_s(y, (ky * g.dilation[0]) as i64);
        let image = fx.b.ins().imul_imm_s(b, ih as i64);
        let y = fx.b.ins().iadd(image, y);
        let x = fx.b.ins().imul_imm_s(ox, g.stride[1] as i64);
        let at = fx.b.ins().imul_imm_s(y, iw as i64);
        let at = fx.b.ins().iadd(at, x);
        let at = fx.b.ins().imul_imm_s(at, g.ic as i64);
        fx.b.ins().iadd_imm_s(at, off as i64)
    }
}

impl Context<'_> {
    /// A step writing `c`'s input as `w` reads it into a new temporary of the kernel: padded
    /// (zeros in the padding) and, from fp16, widened to f32 (the runtime's F16C loop), a row
    /// of the padded input per work item; returns the temporary's slot.
    fn pad_input(&mut self, c: &Contraction, w: &WindowRows) -> Result<usize, BackendError> {
        let g = w.g.clone();
        let (ihp, iwp) = w.dims();
        let widen = w.widen;
        let (row_bytes, in_row_bytes, left) = (iwp * g.ic * 4, g.iw * g.ic * 4, g.pad[2] * g.ic * 4);
        let src_row_bytes = if widen { g.iw * g.ic * 2 } else { in_row_bytes };
        let slot = self.layout.temporary(self.current, g.n * ihp * row_bytes);
        let (src, top) = (c.a.buffer.0, g.pad[0]);
        self.add("_pad_a", g.n * ihp, (g.n * ihp * iwp * g.ic) as f64, move |fx| {
            let (from, to) = (fx.buffer(src), fx.buffer(slot));
            fx.for_items(|fx, r| {
                let image = fx.b.ins().udiv_imm_s(r, ihp as i64);
                let yp = fx.b.ins().urem_imm_s(r, ihp as i64);
                let y = fx.b.ins().iadd_imm_s(yp, -(top as i64));
                let dst = fx.b.ins().imul_imm_s(r, row_bytes as i64);
                let dst = fx.b.ins().iadd(to, dst);
                let inside = in_range(fx, y, g.ih);
                fx.if_or(
                    inside,
                    |fx| {
                        zero_bytes(fx, dst, left);
                        let row = fx.b.ins().imul_imm_s(image, g.ih as i64);
                        let row = fx.b.ins().iadd(row, y);
                        let d = fx.b.ins().iadd_imm_s(dst, left as i64);
                        let s = fx.b.ins().imul_imm_s(row, src_row_bytes as i64);
                        let s = fx.b.ins().iadd(from, s);
                        if widen {
                            let n = fx.i((g.iw * g.ic) as i64);
                            fx.libcall(Libcall::WidenF16, &[s, d, n]);
                        } else {
                            copy_bytes(fx, s, d, in_row_bytes);
                        }
                        let d = fx.b.ins().iadd_imm_s(dst, (left + in_row_bytes) as i64);
                        zero_bytes(fx, d, row_bytes - left - in_row_bytes);
                    },
                    |fx| {
                        zero_bytes(fx, dst, row_bytes);
                    },
                );
            });
            Ok(())
        })?;
        Ok(slot)
    }
}

/// Bytes of one [`MR`] × [`NR`] f32 tile of C.
const TILE_BYTES: usize = MR * NR * 4;

/// One GEMM work item's values: its batch `bi`, first row `row0`, its column group's B panels
/// `p0..p1`, how many of its micro-panels have rows (`live`: the last block is short), and `m`.
struct Item {
    bi: Value,
    row0: Value,
    p0: Value,
    p1: Value,
    live: Value,
    m: Value,
}

/// Work item `item` of a GEMM's compute step: per reduction chunk, A packed (or read in place)
/// and multiplied with the group's B panels into the f32 C block in scratch; then the block
/// finished and stored, or staged and narrowed.
fn gemm_item(fx: &mut Fx, plan: &GemmPlan, c: &Contraction, bases: &Bases, item: Value) -> Emitted {
    let (groups, blocks) = (plan.groups, plan.blocks);
    // item = (bi * blocks + blk) * groups + g: row block `blk` of batch `bi`, B panels
    // `group_panels * g ..` of column group `g`.
    let g = fx.b.ins().urem_imm_s(item, groups as i64);
    let rows_item = fx.b.ins().udiv_imm_s(item, groups as i64);
    let bi = fx.b.ins().udiv_imm_s(rows_item, blocks as i64);
    let blk = fx.b.ins().urem_imm_s(rows_item, blocks as i64);
    let row0 = fx.b.ins().imul_imm_s(blk, plan.mc() as i64);
    let p0 = fx.b.ins().imul_imm_s(g, plan.group_panels as i64);
    let p1 = fx.b.ins().iadd_imm_s(p0, plan.group_panels as i64);
    let all = fx.i(plan.panels as i64);
    let p1 = fx.b.ins().smin(p1, all);
    let m = fx.i(c.m as i64);
    let left = fx.b.ins().isub(m, row0);
    let live = fx.b.ins().iadd_imm_s(left, MR as i64 - 1);
    let live = fx.b.ins().udiv_imm_s(live, MR as i64);
    let most = fx.i(plan.a_panels as i64);
    let live = fx.b.ins().smin(live, most);
    let it = Item { bi, row0, p0, p1, live, m };
    let a = a_source(fx, plan, c, bases.a, &it);
    for (ci, &chunk) in plan.cpu.chunks.iter().enumerate() {
        multiply_chunk(fx, plan, c, bases, &it, a, ci, chunk)?;
    }
    if plan.finish.is_some() {
        return finish_native(fx, plan, c, bases, &it);
    }
    if let Some((op, _)) = plan.wide.filter(|_| plan.silu) {
        return store_silu(fx, plan, c, bases, &it, op);
    }
    if let Some(wide) = plan.wide {
        return store_wide(fx, plan, c, bases, &it, wide);
    }
    if !plan.narrowed {
        return live_panels(fx, plan, &it, &mut |fx, _| fx.i(0), &mut |fx, p, ip, tile, _| {
            let r0 = fx.b.ins().imul_imm_s(ip, MR as i64);
            let r0 = fx.b.ins().iadd(r0, row0);
            let col0 = fx.b.ins().imul_imm_s(p, NR as i64);
            store_tile(fx, c, tile, bi, r0, col0, bases, None, None)
        });
    }
    store_narrowed(fx, plan, c, bases, &it)
}

/// For each B panel `p` of the item's group: `panel(p)` (its result is handed on), then
/// `body(p, ip, tile, ..)` for each micro-panel `ip` with rows.
fn live_panels(fx: &mut Fx, plan: &GemmPlan, it: &Item, panel: &mut dyn FnMut(&mut Fx, Value) -> Value, body: &mut dyn FnMut(&mut Fx, Value, Value, Value, Value) -> Emitted) -> Emitted {
    fx.try_each(it.p0, it.p1, 1, |fx, p| {
        let per_panel = panel(fx, p);
        let zero = fx.i(0);
        fx.try_each(zero, it.live, 1, |fx, ip| {
            let tile = plan.tile_at(fx, p, ip);
            body(fx, p, ip, tile, per_panel)
        })
    })
}

/// Where the item reads A, and its type: A itself, or (fp16 A in a band) the span its row
/// block reads, widened in one runtime call and addressed as A is.
fn a_source(fx: &mut Fx, plan: &GemmPlan, c: &Contraction, a: Value, it: &Item) -> (Value, DType) {
    match plan.band() {
        Some(bound) => {
            let (lo, len) = a_band_ir(fx, c, it.bi, it.row0, plan.a_panels * MR, bound);
            let wide = fx.b.ins().iadd_imm_s(fx.scratch, plan.band_offset as i64);
            let src = fx.addr(a, lo, 2);
            fx.libcall(Libcall::WidenF16, &[src, wide, len]);
            // Indexed as A itself: element `lo` of A is the band's first.
            let back = fx.b.ins().imul_imm_s(lo, 4);
            (fx.b.ins().isub(wide, back), DType::F32)
        }
        None => (a, c.a.ty.dtype),
    }
}

/// Reduction chunk `ci` (`k0..k1`) of the item: A packed (where the plan packs it), then the
/// group's B panels times the block's micro-panels accumulated into the C block, by one call
/// of the plan's micro-kernel or the generated one per tile.
#[allow(clippy::too_many_arguments, reason = "an emitter's IR values, each computed by its caller")]
fn multiply_chunk(fx: &mut Fx, plan: &GemmPlan, c: &Contraction, bases: &Bases, it: &Item, (a_src, a_dt): (Value, DType), ci: usize, (k0, k1): (usize, usize)) -> Emitted {
    let (m, k, panels) = (c.m, c.k, plan.panels);
    let (a_form, packed_dt, scratch) = (plan.a_form(), plan.packed_dt, fx.scratch);
    let Item { bi, row0, .. } = *it;
    if a_form == AForm::Packed {
        pack_a(fx, c, (a_src, a_dt), bi, row0, scratch, (k0, k1), plan.dot(), plan.a_panels);
    }
    let kc = k1 - k0;
    // A constant B is packed chunk by chunk (its panels' chunks in a row), one packed at run
    // time panel by panel.
    let chunk_at = if c.b_constant { ChunkAt::by_chunk(panels, k, (k0, k1)) } else { ChunkAt::by_panel(panels, k, (k0, k1)) };
    // Micro-panel `ip`'s A: packed in scratch, or row `row0 + ip·MR` of batch `bi` from
    // column k0 in place.
    let a_at = |fx: &mut Fx, ip: Value| match a_form {
        AForm::Packed => {
            let aoff = fx.b.ins().imul_imm_s(ip, (MR * kc * 4) as i64);
            fx.b.ins().iadd(scratch, aoff)
        }
        AForm::Rows if plan.windows.is_some() => {
            let w = plan.windows.as_ref().expect("checked");
            let r = fx.b.ins().imul_imm_s(ip, MR as i64);
            let r = fx.b.ins().iadd(r, row0);
            let at = w.row_at(fx, r, k0);
            fx.addr(a_src, at, 4)
        }
        AForm::Rows => {
            let r = fx.b.ins().imul_imm_s(ip, MR as i64);
            let r = fx.b.ins().iadd(r, row0);
            let at = fx.b.ins().imul_imm_s(bi, m as i64);
            let at = fx.b.ins().iadd(at, r);
            let at = fx.b.ins().imul_imm_s(at, k as i64);
            let at = fx.b.ins().iadd_imm_s(at, k0 as i64);
            fx.addr(a_src, at, plan.a_elem)
        }
    };
    // This chunk of panel `p` of B, in its packed type.
    let b_at = |fx: &mut Fx, p: Value| {
        let at = fx.b.ins().imul_imm_s(p, chunk_at.panel as i64);
        let b0 = fx.b.ins().imul_imm_s(bi, chunk_at.batch as i64);
        let at = fx.b.ins().iadd(at, b0);
        let at = fx.b.ins().iadd_imm_s(at, chunk_at.base as i64);
        fx.addr(bases.b, at, packed_dt.byte_size())
    };
    if let Some(lc) = plan.cpu.micro {
        // One call for the group's panels and the block's micro-panels; it reads B in its
        // type.
        use f16c_core::abi::tiles::{ACCUMULATE, PACKED_A};
        // (bf16 pairs: A's bf16 rows, in place or packed as rows.)
        let a_flag = if a_form == AForm::Packed && !plan.dot() { PACKED_A } else { 0 };
        let flags = fx.i((a_flag | b_flag(packed_dt) | if ci > 0 { ACCUMULATE } else { 0 }) as i64);
        let zero = fx.i(0);
        // None for the last groups when the panels run out before them.
        let count = fx.b.ins().isub(it.p1, it.p0);
        let count = fx.b.ins().smax(count, zero);
        let (a, b, tiles) = (a_at(fx, zero), b_at(fx, it.p0), plan.tile_at(fx, it.p0, zero));
        let a_stride = fx.i(match &plan.windows {
            Some(w) => w.stride() * 4,
            None if plan.dot() && a_form == AForm::Packed => kc * 2,
            None => k * plan.a_elem,
        } as i64);
        let b_stride = fx.i((chunk_at.panel * packed_dt.byte_size()) as i64);
        let (kv, tiles_stride) = (fx.i(kc as i64), fx.i((plan.a_panels * TILE_BYTES) as i64));
        if !plan.a_tail() {
            fx.libcall(lc, &[a, a_stride, b, b_stride, kv, tiles, tiles_stride, it.live, count, flags]);
            return Ok(());
        }
        // The micro-panels whose rows all exist in place, then the last one packed.
        let left = fx.b.ins().isub(it.m, row0);
        let full = fx.b.ins().udiv_imm_s(left, MR as i64);
        let full = fx.b.ins().smin(full, it.live);
        fx.libcall(lc, &[a, a_stride, b, b_stride, kv, tiles, tiles_stride, full, count, flags]);
        let tail = fx.b.ins().icmp(IntCC::SignedGreaterThan, it.live, full);
        let packed_flags = fx.i((PACKED_A | b_flag(packed_dt) | if ci > 0 { ACCUMULATE } else { 0 }) as i64);
        fx.if_then(tail, |fx| {
            let r0 = fx.b.ins().imul_imm_s(full, MR as i64);
            let r0 = fx.b.ins().iadd(r0, row0);
            pack_a(fx, c, (a_src, a_dt), bi, r0, scratch, (k0, k1), false, 1);
            let tiles = plan.tile_at(fx, it.p0, full);
            let one = fx.i(1);
            fx.libcall(lc, &[scratch, a_stride, b, b_stride, kv, tiles, tiles_stride, one, count, packed_flags]);
        });
        return Ok(());
    }
    // f32 B in place; f16/bf16 widened into scratch, a panel at a time.
    let b_finite = bases.finite.weight;
    let mut b_chunk = |fx: &mut Fx, p: Value| {
        let b = b_at(fx, p);
        if packed_dt == DType::F32 {
            return b;
        }
        let wide = fx.b.ins().iadd_imm_s(scratch, plan.wide_offset as i64);
        widen_run(fx, packed_dt, b, wide, kc * NR, b_finite);
        wide
    };
    live_panels(fx, plan, it, &mut b_chunk, &mut |fx, _, ip, tile, b| {
        let a = a_at(fx, ip);
        micro_kernel(fx, (a_form, a, k * 4), b, kc, tile, ci > 0);
        Ok(())
    })
}

/// The block's finish by the runtime's sixteen-lane loop ([`GemmPlan::finish`]): the bias
/// address of the group's first column into the parameters (the rest written once per call),
/// then one call for the item's tiles.
fn finish_native(fx: &mut Fx, plan: &GemmPlan, c: &Contraction, bases: &Bases, it: &Item) -> Emitted {
    let (m, n) = (c.m, c.n);
    let at = fx.b.ins().iadd_imm_s(fx.scratch, plan.finish_offset as i64);
    let col0 = fx.b.ins().imul_imm_s(it.p0, NR as i64);
    let bias = match bases.bias {
        Some(b) => fx.addr(b, col0, 4),
        None => fx.i(0),
    };
    store_params_bias(fx, at, bias);
    let zero = fx.i(0);
    let tiles = plan.tile_at(fx, it.p0, zero);
    let tiles_stride = fx.i((plan.a_panels * TILE_BYTES) as i64);
    let panels = fx.b.ins().isub(it.p1, it.p0);
    let rows = fx.b.ins().imul_imm_s(it.live, MR as i64);
    let left = fx.b.ins().isub(it.m, it.row0);
    let rows = fx.b.ins().smin(rows, left);
    let cols = group_width(fx, col0, it.p1, n);
    let first = fx.b.ins().imul_imm_s(it.bi, m as i64);
    let first = fx.b.ins().iadd(first, it.row0);
    let first = fx.b.ins().imul_imm_s(first, n as i64);
    let first = fx.b.ins().iadd(first, col0);
    let out = fx.addr(bases.out, first, 4);
    let n_v = fx.i(n as i64);
    fx.libcall(Libcall::FinishTilesF32, &[tiles, tiles_stride, it.live, panels, out, n_v, rows, cols, at]);
    Ok(())
}

/// The block's finish where the epilogue is SiLU of the contraction's value
/// ([`GemmPlan::silu`]): each tile's `x` (the sum, bias added, rounded) stored as the result,
/// then the block's rows made `x · sigmoid(x)` in place by the runtime's SiLU loop, in one call
/// where the group is every column (its rows follow each other in the output), else one per
/// row. The same bits as [`store_wide`]: the sigmoid is the reference's, the product rounded
/// once.
fn store_silu(fx: &mut Fx, plan: &GemmPlan, c: &Contraction, bases: &Bases, it: &Item, op: usize) -> Emitted {
    let (m, n) = (c.m, c.n);
    let bare = up_to_argument(c, op);
    let Item { bi, row0, p0, p1, live, m: m_v } = *it;
    live_panels(fx, plan, it, &mut |fx, _| fx.i(0), &mut |fx, p, ip, tile, _| {
        let r0 = fx.b.ins().imul_imm_s(ip, MR as i64);
        let r0 = fx.b.ins().iadd(r0, row0);
        let col0 = fx.b.ins().imul_imm_s(p, NR as i64);
        store_tile(fx, &bare, tile, bi, r0, col0, bases, None, None)
    })?;
    let rows = fx.b.ins().imul_imm_s(live, MR as i64);
    let left = fx.b.ins().isub(m_v, row0);
    let rows = fx.b.ins().smin(rows, left);
    let first = fx.b.ins().imul_imm_s(bi, m as i64);
    let first = fx.b.ins().iadd(first, row0);
    if plan.groups == 1 {
        let at = fx.b.ins().imul_imm_s(first, n as i64);
        let at = fx.addr(bases.out, at, 4);
        let count = fx.b.ins().imul_imm_s(rows, n as i64);
        fx.libcall(Libcall::SiluArrayF32, &[at, at, count]);
        return Ok(());
    }
    let origin = fx.b.ins().imul_imm_s(p0, NR as i64);
    let cols = group_width(fx, origin, p1, n);
    let zero = fx.i(0);
    fx.try_each(zero, rows, 1, |fx, r| {
        let row = fx.b.ins().iadd(first, r);
        let at = fx.b.ins().imul_imm_s(row, n as i64);
        let at = fx.b.ins().iadd(at, origin);
        let at = fx.addr(bases.out, at, 4);
        fx.libcall(Libcall::SiluArrayF32, &[at, at, cols]);
        Ok(())
    })
}

/// The block's finish with an epilogue op computed for all of it at once ([`GemmPlan::wide`]):
/// the values up to the op's argument (the contraction's value, bias added and rounded, and
/// the epilogue's ops up to the argument where it computes one: [`up_to_argument`]) staged
/// in scratch as rows of the group's columns, the op by one runtime call into a second area,
/// then each tile finished with the op's values given, and stored.
fn store_wide(fx: &mut Fx, plan: &GemmPlan, c: &Contraction, bases: &Bases, it: &Item, (op, call): (usize, Libcall)) -> Emitted {
    let stride = plan.stage_stride;
    let Item { bi, row0, p0, p1, live, .. } = *it;
    let origin = fx.b.ins().imul_imm_s(p0, NR as i64);
    let arg_base = fx.b.ins().iadd_imm_s(fx.scratch, plan.arg_offset as i64);
    let sig_base = fx.b.ins().iadd_imm_s(fx.scratch, plan.sig_offset as i64);
    // Micro-panel `ip`'s rows in an area: MR rows of `stride` from `base`.
    let rows_at = |fx: &mut Fx, base: Value, ip: Value| {
        let at = fx.b.ins().imul_imm_s(ip, (MR * stride * 4) as i64);
        fx.b.ins().iadd(base, at)
    };
    // The argument: the finish up to it.
    let bare = up_to_argument(c, op);
    let tiles = |fx: &mut Fx, each: &mut dyn FnMut(&mut Fx, Value, Value, Value, Value) -> Emitted| -> Emitted {
        let zero = fx.i(0);
        fx.try_each(zero, live, 1, |fx, ip| {
            let r0 = fx.b.ins().imul_imm_s(ip, MR as i64);
            let r0 = fx.b.ins().iadd(r0, row0);
            fx.try_each(p0, p1, 1, |fx, p| {
                let tile = plan.tile_at(fx, p, ip);
                let col0 = fx.b.ins().imul_imm_s(p, NR as i64);
                each(fx, ip, tile, r0, col0)
            })
        })
    };
    tiles(fx, &mut |fx, ip, tile, r0, col0| {
        let staged = Staged { stage: Staging::new(rows_at(fx, arg_base, ip), None), stride, origin, deferral: None };
        store_tile(fx, &bare, tile, bi, r0, col0, bases, Some(&staged), None)
    })?;
    let count = fx.b.ins().imul_imm_s(live, (MR * stride) as i64);
    fx.libcall(call, &[arg_base, sig_base, count]);
    tiles(fx, &mut |fx, ip, tile, r0, col0| {
        let given = Given { op, base: rows_at(fx, sig_base, ip), stride, origin };
        store_tile(fx, c, tile, bi, r0, col0, bases, None, Some(&given))
    })
}

/// The epilogue op of `c` a GEMM computes for a block at once: its only sigmoid, erf, tanh or
/// exp, of the contraction's own value or of one the epilogue computes before it, in an f32
/// epilogue.
fn wide_epilogue_op(c: &Contraction) -> Option<(usize, Libcall)> {
    let e = c.epilogue.as_ref().filter(|e| e.expr.is_f32_domain())?;
    let maths: Vec<(usize, Libcall)> = e.expr.ops.iter().enumerate().filter_map(|(i, op)| wide_math(op).map(|lc| (i, lc))).collect();
    match maths.as_slice() {
        &[(i, lc)] if matches!(e.expr.ops[i].args.as_slice(), &[a] if a == 0 || a >= e.expr.inputs.len()) && e.expr.ops[i].dtype == DType::F32 && e.expr.arg_types(&e.expr.ops[i]).first() == Some(&DType::F32) => Some((i, lc)),
        _ => None,
    }
}

/// `c` finished up to the argument of its epilogue's op `op` ([`wide_epilogue_op`]): its own
/// value (no epilogue), or its epilogue's ops up to the one computing the argument.
fn up_to_argument(c: &Contraction, op: usize) -> Contraction {
    let epilogue = c.epilogue.as_ref().and_then(|e| {
        let arg = e.expr.ops[op].args[0];
        let computed = arg.checked_sub(e.expr.inputs.len())?;
        let expr = crate::lower::Expr { inputs: e.expr.inputs.clone(), ops: e.expr.ops[..=computed].to_vec() };
        Some(crate::lower::Epilogue { expr, ..e.clone() })
    });
    Contraction { epilogue, ..c.clone() }
}

/// The columns of a column group from its first, `origin`, to panel `p1`'s or the matrix's
/// end, whichever is first: none for the last groups when the panels run out before them.
fn group_width(fx: &mut Fx, origin: Value, p1: Value, n: usize) -> Value {
    let end = fx.b.ins().imul_imm_s(p1, NR as i64);
    let all = fx.i(n as i64);
    let end = fx.b.ins().smin(end, all);
    let width = fx.b.ins().isub(end, origin);
    let zero = fx.i(0);
    fx.b.ins().smax(width, zero)
}

/// The most scratch each of [`GemmPlan::wide`]'s two areas may take.
const WIDE_BLOCK_MAX: usize = 128 << 10;

/// An f16 (or deferred) result: each micro-panel's rows across the group's panels finished
/// into the staging area, then narrowed by the runtime (the whole block's rows in one call
/// where they are staged together).
fn store_narrowed(fx: &mut Fx, plan: &GemmPlan, c: &Contraction, bases: &Bases, it: &Item) -> Emitted {
    let (m, n) = (c.m, c.n);
    let (stage_stride, deferral) = (plan.stage_stride, plan.deferral.as_ref());
    let Item { bi, row0, p0, p1, live, m: m_v } = *it;
    let origin = fx.b.ins().imul_imm_s(p0, NR as i64);
    let stage_base = fx.b.ins().iadd_imm_s(fx.scratch, plan.stage_offset as i64);
    // Of up to `most` rows from `r0`: how many exist, and the output element of the first
    // one's column 0.
    let row_span = |fx: &mut Fx, r0: Value, most: Value| -> (Value, Value) {
        let left = fx.b.ins().isub(m_v, r0);
        let rows = fx.b.ins().smin(most, left);
        let grow = fx.b.ins().imul_imm_s(bi, m as i64);
        let grow = fx.b.ins().iadd(grow, r0);
        (rows, fx.b.ins().imul_imm_s(grow, n as i64))
    };
    // Up to `most` rows from `r0` (those that exist), staged from `stage_base` laid out as the
    // output's (every column), narrowed in one call.
    let narrow_rows = |fx: &mut Fx, r0: Value, most: Value| {
        let (rows, to) = row_span(fx, r0, most);
        let count = fx.b.ins().imul_imm_s(rows, n as i64);
        let zero = fx.i(0);
        Staging::new(stage_base, deferral).narrow(fx, zero, bases.out, to, count);
    };
    let zero = fx.i(0);
    fx.try_each(zero, live, 1, |fx, ip| {
        let r0 = fx.b.ins().imul_imm_s(ip, MR as i64);
        let r0 = fx.b.ins().iadd(r0, row0);
        let base = if plan.stage_block {
            let at = fx.b.ins().imul_imm_s(ip, (MR * stage_stride * 4) as i64);
            fx.b.ins().iadd(stage_base, at)
        } else {
            stage_base
        };
        let staged = Staged { stage: Staging::new(base, deferral), stride: stage_stride, origin, deferral: plan.deferral.clone() };
        fx.try_each(p0, p1, 1, |fx, p| {
            let tile = plan.tile_at(fx, p, ip);
            let col0 = fx.b.ins().imul_imm_s(p, NR as i64);
            store_tile(fx, c, tile, bi, r0, col0, bases, Some(&staged), None)
        })?;
        let mr = fx.i(MR as i64);
        if plan.stage_block {
            // Narrowed with the block's other rows, below.
        } else if plan.groups == 1 {
            narrow_rows(fx, r0, mr);
        } else {
            // The group's columns `origin..min(p1 · NR, n)` of each row (none for the last
            // groups when the panels run out before them).
            let (rows, to) = row_span(fx, r0, mr);
            let width = group_width(fx, origin, p1, n);
            let zero = fx.i(0);
            let to = fx.b.ins().iadd(to, origin);
            fx.each(zero, rows, 1, |fx, r| {
                let from = fx.b.ins().imul_imm_s(r, stage_stride as i64);
                let row = fx.b.ins().imul_imm_s(r, n as i64);
                let to = fx.b.ins().iadd(to, row);
                staged.stage.narrow(fx, from, bases.out, to, width);
            });
        }
        Ok(())
    })?;
    if plan.stage_block {
        let most = fx.b.ins().imul_imm_s(live, MR as i64);
        narrow_rows(fx, row0, most);
    }
    Ok(())
}

/// A plan's words for `c`'s B: packed at compile time in `packed`, or computed and packed (in
/// f32) at run time.
pub(super) fn b_plan(c: &Contraction, packed: DType) -> String {
    if c.b_constant { format!("B packed at compile time ({packed})") } else { "B computed at run time, packed per run (f32)".to_string() }
}

impl Context<'_> {
    /// A matmul with one row (a classifier at batch 1): one work item per [`GEMV_ITEM`] B
    /// panels, so threads split the weight, each element one chain of multiply-adds from zero
    /// over the whole reduction in the micro-kernel's order (so the same bits). The runtime's
    /// native loop ([`Libcall::GemvPanels`](f16c_core::abi::Libcall), eight lanes) computes the
    /// item's panels in one call, reading an fp16 or bf16 weight in its type. Compiled without
    /// it ([`Loops::Generated`]), the generated code takes the item's panels [`GEMV_PANELS`] at a time, two f32x4
    /// accumulators per panel, the eight chains interleaved to hide the FMA latency; panels
    /// are read in place (a bf16 one widened as it is loaded), an fp16 one widened
    /// [`GEMV_KC`] rows at a time into scratch by the runtime ([`widen_run`]). The GEMM would
    /// run one item, three quarters of its 4-row micro-kernel on padding.
    fn gemv(&mut self, c: &Contraction, b_slot: usize, (packed_dt, micro): (DType, Option<Libcall>), finite: Finite) -> Result<(), BackendError> {
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
        let (c, fma) = (c.clone(), self.planner.fma);
        let cost = 2.0 * (batch * n * k) as f64;
        self.add("", batch * groups, cost, move |fx| {
            let bases = Bases::new(fx, &c, b_slot, &finite);
            let tile = fx.scratch;
            let wide = fx.b.ins().iadd_imm_s(fx.scratch, tile_bytes as i64);
            let chunks = fx.b.ins().iadd_imm_s(fx.scratch, (tile_bytes + a_bytes) as i64);
            fx.try_for_items(|fx, item| {
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
                match micro {
                    Some(lc) => {
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
                        fx.libcall(lc, &[a_at, b_at, b_stride, kv, tile, count, flags]);
                    }
                    None => {
                        fx.each_n(0, (GEMV_ITEM / GEMV_PANELS) as i64, 1, |fx, sub| {
                            let off = fx.b.ins().imul_imm_s(sub, GEMV_PANELS as i64);
                            let sums = fx.addr(tile, off, NR * 4);
                            let from = fx.b.ins().iadd(first, off);
                            gemv_panels(fx, (a, a_row), (bases.b, packed_dt, chunks), (from, batch_panels), &c, bases.finite.weight, fma, sums);
                        });
                    }
                }
                // Panel j's values are row j of the scratch tile; one store_tile call in a loop
                // over the panels keeps the epilogue emitted once.
                let r0 = fx.i(0);
                fx.try_each_n(0, GEMV_ITEM as i64, 1, |fx, j| {
                    let p = fx.b.ins().iadd(first, j);
                    let real = fx.b.ins().icmp_imm_s(IntCC::SignedLessThan, p, panels as i64);
                    fx.try_if_then(real, |fx| {
                        let row = fx.addr(tile, j, NR * 4);
                        let col0 = fx.b.ins().imul_imm_s(p, NR as i64);
                        store_tile(fx, &c, row, bi, r0, col0, &bases, None, None)
                    })?;
                    Ok(())
                })?;
                Ok(())
            })
        })
    }
}

/// The generated one-row loop over [`GEMV_PANELS`] panels from `first` (of batch `bi`'s
/// `batch_panels..`), their sums stored at `sums` (panel j at `sums + j · NR · 4`): a panel past
/// the last is computed as the last again (its sums are not stored by the caller). `a[a_row..]`
/// is the f32 A row; an fp16 B is widened [`GEMV_KC`] rows at a time into `chunks`.
#[allow(clippy::too_many_arguments, reason = "an emitter's IR values, each computed by its caller")]
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
/// row blocks (a CNN's deep layers at batch 1: 8×8 pixels are one block of [`MC`](super::legal::MC) rows) still
/// has work for every thread: enough groups for [`PARALLEL_ITEMS`] items, each of at least
/// [`GROUP_MIN_PANELS`] panels where every group prepares the block's A again (packs it, or
/// widens its fp16 rows; one panel groups of an fp16 attention's 8-row matmuls, each widening
/// A again, made the model 15% slower), of [`GROUP_MIN_PANELS_IN_PLACE`] where the
/// micro-kernel reads A's f32 rows in place. The sums are the same whichever item computes
/// them.
fn column_groups(row_items: usize, panels: usize, prepares_a: bool) -> usize {
    let min_panels = if prepares_a { GROUP_MIN_PANELS } else { GROUP_MIN_PANELS_IN_PLACE };
    PARALLEL_ITEMS.div_ceil(row_items.max(1)).min(panels / min_panels).max(1)
}

/// The attention chains the JIT runs in bands ([`crate::backend::bands`]): every float matmul
/// of more than one row runs on the GEMM here, a work item per row block (and column group),
/// and a rows kernel has a work item per [`ROW_GROUP`] rows, so a band may be any row block
/// that divides the rows into whole groups: the largest multiple of [`MR`] up to
/// [`BAND_ROWS_MAX`] that does.
pub fn bands(program: &Program) -> Vec<crate::backend::bands::Band> {
    // (Not where a band would stream a weight from memory again: `bands::b_streams`.)
    let float = |c: &Contraction, _: bool| domain(c.a.ty.dtype) == F32 && domain(c.b.ty.dtype) == F32 && !crate::backend::bands::b_streams(c);
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

/// The fewest B panels a column group holds where A's rows are read in place: the runtime's
/// loop fetches the next pass's B panels while a pass runs, but only within its call, so each
/// group's first panels come from memory unfetched; groups of one pair of panels made
/// EfficientNet-B0's 7 × 7 layers (49 rows, 16 groups) 1.2–1.4× slower than groups of three
/// pairs.
const GROUP_MIN_PANELS_IN_PLACE: usize = 6;

/// Rows of B (`k` steps) per widened chunk of the one-row matmul with an fp16 weight: four
/// panels' chunks take 16 KiB of scratch, in L1 next to the A row.
const GEMV_KC: usize = 128;

/// The most scratch an f16 GEMM result's row block is staged in before one narrowing call.
const STAGE_BLOCK_MAX: usize = 32 << 10;

/// B panels the generated one-row loop computes at a time: 4 × 8 columns, eight independent
/// f32x4 FMA chains.
pub(super) const GEMV_PANELS: usize = 4;

/// B panels per work item of the one-row matmul (a multiple of [`GEMV_PANELS`]): the native
/// loop keeps one 8-lane chain per panel, and eight hide the FMA latency.
pub(super) const GEMV_ITEM: usize = 8;
