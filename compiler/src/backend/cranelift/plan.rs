//! The JIT's plans: every kernel's decisions, made for the whole program before any of its code
//! ([`Planner::plan`]: which loop, which micro-kernel, what is staged, widened or split, how
//! the work is cut into items). [`super::compile`] emits each kernel as its plan says, and
//! [`super::plans`] (`--emit=kernels`, the strategy lit tests) makes the same plans without
//! building any code.

use super::conv::DepthwisePlan;
use super::emit::domain;
use super::epilogue::Finite;
use super::gemm::{b_plan, GemmPlan, GEMV_ITEM, GEMV_PANELS};
use crate::backend::cpu::Multiply;
use super::legal::{LANES, NR};
use super::lower::{how_moved, in_slices, loop_order, split_long_row, Bulk, ElementwisePlan, RowsPlan, TileTranspose, POOL_UNROLLED_TAPS, REDUCE_BLOCK, SPLIT_COPY_MIN_BYTES};
use super::Loops;
use crate::backend::bands::Band;
use crate::lower::{Contraction, ContractionKind, CopyKernel, Elementwise, Kernel, KernelKind, Move, Pool, Program, Reduction, Softmax, SoftmaxForm};
use f16c_dialect::ReduceKind;
use cranelift_codegen::ir::types::{F32, I64, I8};
use f16c_core::abi::Libcall;

/// What every plan of a program is made from: the program, the options' facts, and the
/// attention chains that run in bands.
pub struct Planner<'p> {
    /// The program.
    pub program: &'p Program,
    /// Whether multiply-adds fuse (the host has FMA), as in the GEMM micro-kernel.
    pub fma: bool,
    /// Whether bf16 GEMMs may multiply in bf16 pairs (the host has AVX512-BF16).
    pub dot_bf16: bool,
    /// The runtime's loops the contractions call ([`Loops`]).
    pub loops: Loops,
    /// The attention chains run in bands ([`crate::backend::bands`]): their matmuls take a
    /// band's rows per work item instead of [`super::legal::MC`].
    pub bands: Vec<Band>,
}

/// One kernel's plan: the kind of code its emitter builds and every decision it reads.
pub enum KernelPlan {
    /// A matmul or convolution on the micro-kernel (or, one row, the GEMV loop), and what is
    /// known of its constants.
    Gemm(Box<GemmPlan>, Finite),
    /// A depthwise convolution, directly.
    Depthwise(Box<DepthwisePlan>, Finite),
    /// A transpose convolution: an output row per work item, its taps gathered.
    TransposeConv(Finite),
    /// An integer contraction: an output row per work item, in i64.
    Integer,
    /// An elementwise kernel, run as `split` where a long one-dimensional kernel is split
    /// into rows.
    Elementwise(Box<ElementwisePlan>, Option<Elementwise>),
    /// A reduction.
    Reduction(ReductionPlan),
    /// A rows kernel, generic.
    Rows(Box<RowsPlan>),
    /// A softmax rows kernel, on the runtime's loop.
    Softmax(SoftmaxPlan),
    /// A pooling kernel.
    Pool(PoolPlan),
    /// A copy.
    Copy(CopyPlan),
    /// A gather (or scatter); its runs are the kernel's own ([`crate::lower::Gather::run`]).
    Gather,
}

/// A reduction's plan: an outer index and a block of [`REDUCE_BLOCK`] neighbouring outputs
/// per work item, four lanes at a time where `vector`.
#[derive(Clone, Copy)]
pub struct ReductionPlan {
    /// Outputs four lanes at a time.
    pub vector: bool,
    /// Full blocks per outer index.
    pub full: usize,
    /// Whether a last, short block follows.
    pub rest: bool,
}

impl ReductionPlan {
    fn new(r: &Reduction) -> Result<ReductionPlan, String> {
        let (din, dout) = (r.input.ty.dtype, r.output.ty.dtype);
        if r.kind.is_some() && domain(din) != domain(dout) {
            return Err(format!("reduction from {din} to {dout} is not supported"));
        }
        // Work items: an outer index and a block of REDUCE_BLOCK neighbouring outputs, whose
        // chains (four vectors where the outputs are in lanes) run side by side: one chain of
        // four lanes waited on each add (the squeeze-and-excite means of an EfficientNet-B0
        // took five times the LLVM backend's time), and a batch-1 reduction (one outer index)
        // ran on one thread. Every output is still reduced in index order.
        let f32_domain = domain(din) == F32 && domain(dout) == F32;
        let vector = f32_domain && r.inner >= LANES && r.kind.is_some_and(|k| !matches!(k, ReduceKind::All | ReduceKind::Any));
        let full = if vector { r.inner / REDUCE_BLOCK } else { 0 };
        Ok(ReductionPlan { vector, full, rest: full * REDUCE_BLOCK < r.inner })
    }

    /// Blocks per outer index.
    pub fn blocks(&self) -> usize {
        self.full + usize::from(self.rest)
    }
}

/// A softmax's plan ([`Rows::softmax`]): the runtime's loop and how it is called.
#[derive(Clone, Copy)]
pub struct SoftmaxPlan {
    /// The softmax.
    pub softmax: Softmax,
    /// The libcall.
    pub call: Libcall,
    /// The bytes of an input and of a result value.
    pub bytes: (usize, usize),
    /// Its flags.
    pub flags: i64,
}

impl SoftmaxPlan {
    /// The plan of `softmax` where the code's loops are `loops`; `None` for an fp16 one without
    /// the runtime's fp16 loop (a micro-kernel: the generic rows code runs it).
    fn new(softmax: Softmax, loops: super::Loops) -> Option<SoftmaxPlan> {
        let (call, bytes, flags) = match softmax.form {
            SoftmaxForm::F32 => (Libcall::SoftmaxRowsF32, (4, 4), 0),
            SoftmaxForm::F32ToBf16 => (Libcall::SoftmaxRowsBf16, (4, 2), f16c_core::abi::SOFTMAX_F32_INPUT),
            SoftmaxForm::Bf16 => (Libcall::SoftmaxRowsBf16, (2, 2), 0),
            SoftmaxForm::F16 => (loops.softmax_f16()?, (2, 2), 0),
        };
        Some(SoftmaxPlan { softmax, call, bytes, flags })
    }
}

/// A pooling kernel's plan: an output row per work item.
#[derive(Clone, Copy)]
pub struct PoolPlan {
    /// Integer values.
    pub int: bool,
    /// Four channels at a time.
    pub vector: bool,
    /// A window inside the input has its taps unrolled.
    pub unrolled: bool,
}

impl PoolPlan {
    fn new(p: &Pool) -> Result<PoolPlan, String> {
        let (din, dout) = (p.input.ty.dtype, p.output.ty.dtype);
        if domain(din) == I8 {
            return Err("pooling is not defined on i1".into());
        }
        let (&[_, _, _, c], &[_, _, _, _]) = (p.input.ty.shape.as_slice(), p.output.ty.shape.as_slice()) else {
            return Err("pooling input must be NHWC".into());
        };
        let int = domain(din) == I64;
        let vector = domain(din) == F32 && domain(dout) == F32 && c >= LANES;
        let unrolled = vector && !int && p.kernel[0] * p.kernel[1] <= POOL_UNROLLED_TAPS;
        Ok(PoolPlan { int, vector, unrolled })
    }
}

/// A copy's plan: per move, whether the runtime converts it a run at a time, and the form of
/// the whole.
pub struct CopyPlan {
    /// Per move, its runs converted by the runtime ([`Bulk`]).
    pub bulk: Vec<Option<Bulk>>,
    /// How the work is cut.
    pub form: CopyForm,
}

/// How a copy's work is cut into items.
pub enum CopyForm {
    /// A transpose of 32-bit values: a band of 4 × 4 tiles transposed in registers per item.
    Tiles(TileTranspose),
    /// One move, large enough to share: a slice of its outermost loop (this move, in loop
    /// order) per item.
    Slices(Move),
    /// One work item: the fill, then every move.
    Whole,
}

impl CopyPlan {
    fn new(c: &CopyKernel) -> CopyPlan {
        // An f32 ↔ f16 conversion: runs of the output staged in scratch ([`Bulk`]).
        let bulk: Vec<Option<Bulk>> = c.moves.iter().map(|m| Bulk::of(m, c.source, c.output.ty.dtype)).collect();
        let plain = bulk.iter().all(Option::is_none) && c.fill.is_none();
        let form = match c.moves.as_slice() {
            [m] if plain => {
                // A transpose of 32-bit values whose source and destination are contiguous along
                // different dimensions of multiples of four: 4 x 4 tiles transposed in registers.
                let tiles = (!c.converts() && c.output.ty.dtype.byte_size() == 4).then(|| TileTranspose::of(m)).flatten();
                // One move, large enough to share: a slice of its outermost loop per work item
                // (the transposes around every attention moved 2 MB on one thread; a bf16
                // model's input, converted as it is transposed to NHWC, ran on one too).
                let order = in_slices(loop_order(m), c.output.ty.dtype.byte_size());
                match tiles {
                    Some(t) => CopyForm::Tiles(t),
                    None if order.shape.len() >= 2 && order.shape[0] >= 2 && c.output.ty.byte_size() >= SPLIT_COPY_MIN_BYTES => CopyForm::Slices(order),
                    None => CopyForm::Whole,
                }
            }
            _ => CopyForm::Whole,
        };
        CopyPlan { bulk, form }
    }

    /// The most scratch a move's runtime conversion stages, in elements.
    pub fn staged(&self) -> Option<usize> {
        self.bulk.iter().flatten().map(|b| b.rows * b.inner).max()
    }
}

/// Words of a runtime micro-kernel `lc`, after `joint` (" on ", " by "): none for a libcall
/// that is not one.
fn micro_words(lc: Libcall, joint: &str) -> String {
    f16c_core::abi::MicroKernel::of(lc).map_or_else(String::new, |m| format!("{joint}{}", m.what))
}

impl<'p> Planner<'p> {
    /// The planner of `program` at `options`.
    pub fn new(program: &'p Program, options: &super::Options) -> Self {
        Planner { program, fma: options.fma, dot_bf16: options.dot_bf16, loops: options.loops, bands: super::gemm::bands(program) }
    }

    /// Rows per work item of kernel `k`'s GEMM of `m` rows: a band's where it runs in bands,
    /// else at most [`super::legal::MC`], the rows shared evenly among that many blocks (a
    /// multiple of [`super::legal::MR`]): 197 rows as 52, 52, 52 and 41 rather than 64, 64, 64
    /// and 5, so that each thread's share of the blocks is its share of the rows (two threads
    /// took 128 and 69 rows of a ViT's GEMMs).
    pub fn row_block(&self, k: usize, m: usize) -> usize {
        let (most, mr) = (super::legal::MC, super::legal::MR);
        match self.bands.iter().find(|b| b.first == k || b.first + 2 == k) {
            Some(b) => b.rows,
            None => m.div_ceil(m.div_ceil(most).max(1)).next_multiple_of(mr).clamp(mr, most),
        }
    }

    /// Kernel `k`'s plan, or why it has none (a kernel [`super::legal::legal`] lets through
    /// that this backend cannot run after all: a bug of f16c, reported as such).
    pub fn plan(&self, k: usize) -> Result<KernelPlan, String> {
        Ok(match &self.program.kernels[k].kind {
            KernelKind::Contraction(c) => return self.contraction(k, c),
            KernelKind::Elementwise(e) => {
                let split = split_long_row(e);
                let plan = ElementwisePlan::new(split.as_ref().unwrap_or(e), self.loops.silu_f16());
                KernelPlan::Elementwise(Box::new(plan), split)
            }
            KernelKind::Reduction(r) => KernelPlan::Reduction(ReductionPlan::new(r)?),
            KernelKind::Pool(p) => KernelPlan::Pool(PoolPlan::new(p)?),
            KernelKind::Copy(c) => KernelPlan::Copy(CopyPlan::new(c)),
            KernelKind::Gather(g) => {
                let (&[_, _, _], &[_, _]) = (g.values.ty.shape.as_slice(), g.indices.ty.shape.as_slice()) else {
                    return Err("gather takes [N,K,C] values and [N,W] indices".into());
                };
                KernelPlan::Gather
            }
            KernelKind::Rows(r) => match r.softmax().and_then(|softmax| SoftmaxPlan::new(softmax, self.loops)) {
                Some(plan) => KernelPlan::Softmax(plan),
                None => KernelPlan::Rows(Box::new(RowsPlan::new(r))),
            },
        })
    }

    fn contraction(&self, k: usize, c: &Contraction) -> Result<KernelPlan, String> {
        if domain(c.a.ty.dtype) == I64 && domain(c.b.ty.dtype) == I64 {
            return if c.epilogue.is_some() { Err("an integer contraction with a fused epilogue".into()) } else { Ok(KernelPlan::Integer) };
        }
        if domain(c.a.ty.dtype) != F32 || domain(c.b.ty.dtype) != F32 {
            return Err(format!("{} contractions are not supported (f32, f16 and bf16 are)", c.a.ty.dtype));
        }
        let finite = Finite::of(self.program, c);
        Ok(match &c.kind {
            ContractionKind::MatMul | ContractionKind::Conv(_) => KernelPlan::Gemm(Box::new(GemmPlan::new(self, k, c, &finite)), finite),
            ContractionKind::Depthwise(g) => KernelPlan::Depthwise(Box::new(DepthwisePlan::new(self, c, g.clone(), &finite)), finite),
            ContractionKind::TransposeConv(_) if c.epilogue.is_some() => return Err("a transpose convolution with a fused epilogue".into()),
            ContractionKind::TransposeConv(_) => KernelPlan::TransposeConv(finite),
        })
    }
}

impl KernelPlan {
    /// The runtime micro-kernel the code calls, if any (the code requires its features).
    pub fn micro_kernel(&self) -> Option<Libcall> {
        match self {
            KernelPlan::Gemm(p, _) if p.gemv => p.gemv_loop,
            KernelPlan::Gemm(p, _) => p.cpu.micro,
            KernelPlan::Depthwise(p, _) => p.micro,
            KernelPlan::Elementwise(p, _) => p.micro_kernel(),
            KernelPlan::Softmax(p) => f16c_core::abi::MicroKernel::of(p.call).map(|m| m.libcall),
            _ => None,
        }
    }

    /// The plan in words (`--emit=kernels`, the artifact's kernel plans, `f16c-run --profile`),
    /// of `kernel`, the kernel it was made for.
    pub fn describe(&self, planner: &Planner<'_>, kernel: &Kernel) -> String {
        match (self, &kernel.kind) {
            (KernelPlan::Gemm(p, _), KernelKind::Contraction(c)) if p.gemv => {
                let multiply = match p.gemv_loop {
                    Some(lc) => format!("{}{}", Multiply::f32(planner.fma).words(), micro_words(lc, " on ")),
                    None => format!("{}, generated ({GEMV_PANELS} panels at a time)", Multiply::f32(planner.fma).words()),
                };
                format!("one row against {GEMV_ITEM} panels of {NR} columns per work item, {multiply}; {}", b_plan(c, p.packed_dt))
            }
            (KernelPlan::Gemm(p, _), KernelKind::Contraction(c)) => p.describe(c),
            (KernelPlan::Depthwise(p, _), _) => p.describe(&p.micro.map_or_else(String::new, |lc| micro_words(lc, " "))),
            (KernelPlan::TransposeConv(_), _) => "an output row per work item, its taps gathered (no micro-kernel)".to_string(),
            (KernelPlan::Integer, _) => "an output row per work item, integer multiply-adds (no micro-kernel)".to_string(),
            (KernelPlan::Elementwise(p, _), _) => p.describe(),
            (KernelPlan::Reduction(p), _) if p.vector => {
                format!("an outer index and {REDUCE_BLOCK} neighbouring outputs per work item, {} chains of {LANES} lanes side by side, each output reduced in index order", REDUCE_BLOCK / LANES)
            }
            (KernelPlan::Reduction(_), _) => "an outer index per work item, one output at a time, reduced in index order".to_string(),
            (KernelPlan::Rows(p), KernelKind::Rows(r)) => p.describe(r),
            (KernelPlan::Softmax(p), KernelKind::Rows(r)) => {
                let masked = if p.softmax.masked.is_some() { "; a row whose maximum is the mask value filled" } else { "" };
                let form = match p.softmax.form {
                    SoftmaxForm::F32 => "",
                    SoftmaxForm::F32ToBf16 => "in f32, the result rounded to bf16, ",
                    SoftmaxForm::Bf16 => "in bf16 (the difference and the result rounded to bf16, the rest in f32) ",
                    SoftmaxForm::F16 => "in f16 (the difference and the result rounded to f16, the rest in f32) ",
                };
                format!("{} rows of {} per work item, the softmax {form}by the runtime's sixteen-lane loop (each row's sum in index order, the rows' side by side){masked}", super::gemm::ROW_GROUP, r.len)
            }
            (KernelPlan::Pool(p), _) => format!(
                "an output row per work item, {}, window clipped to the input{}",
                if p.vector { "four channels at a time" } else { "one channel at a time" },
                if p.unrolled { " where it crosses the edge, its taps unrolled where it lies inside" } else { "" }
            ),
            (KernelPlan::Copy(p), KernelKind::Copy(c)) => match &p.form {
                CopyForm::Tiles(t) => format!("a band of 4 x {} per work item ({} bands), 4 x 4 tiles transposed in registers", c.moves[0].shape[t.a], t.bands),
                CopyForm::Slices(order) => format!("one of {} slices of the outermost loop per work item: {}", order.shape[0], how_moved(order, c.converts())),
                CopyForm::Whole => {
                    let moves: Vec<&str> = c.moves.iter().zip(&p.bulk).map(|(m, b)| if b.is_some() { "converted by the runtime a run at a time" } else { how_moved(m, c.converts()) }).collect();
                    format!("one work item{}: {}", if c.fill.is_some() { ", the output filled first" } else { "" }, moves.join("; "))
                }
            },
            (KernelPlan::Gather, KernelKind::Gather(g)) if g.scatter.is_some() => "an output row per work item, its last index found, every index range-checked".to_string(),
            (KernelPlan::Gather, KernelKind::Gather(g)) => g.run_in_words(),
            _ => String::new(),
        }
    }
}
