//! One plan for a matmul or convolution on a CPU register tile, read by both CPU backends (the
//! Cranelift JIT and the LLVM CPU backends): the tile, how it multiplies, whether its code is
//! generated or a runtime micro-kernel the code calls, the reduction's chunks, how B is packed
//! and widened, what is done to A and how the tiles read it, and how the work is cut into items.
//!
//! Each backend makes the plan from its own machine parameters — the LLVM backend from its
//! [`crate::target::CpuMachine`] row (register tiles per ISA, one chunk: the whole reduction
//! per tile, A read where it lies), the JIT from its tile contract with the runtime
//! ([`f16c_core::abi::tiles`]: 4 × 8 C tiles in scratch, reduction chunks of about 256, row
//! blocks of up to 64 rows, the runtime loops its CPU level has) — and its emitter reads it
//! rather than deciding again. [`GemmPlan::describe`] prints it in the same words for both
//! (`--emit=kernels`, the artifact's kernel plans, `f16c-run --profile`), so the two backends'
//! plans of one convolution can be compared line by line. A backend's own finishing decisions
//! (the JIT's staging of fp16 results, its block-wide epilogue calls, its scratch map) stay
//! with it, beside this plan.

use crate::lower::{Contraction, ConvGeometry};
use crate::target::GemmShape;
use f16c_core::abi::Libcall;
use f16c_dialect::DType;

/// A matmul's or convolution's plan on a CPU register tile.
#[derive(Clone, Debug, PartialEq)]
pub struct GemmPlan {
    /// The register tile: `mr × nr` outputs, in vectors of `lanes` f32 (the generated code's;
    /// a runtime micro-kernel's passes are its own, [`f16c_core::abi::MicroKernel::what`]).
    pub tile: GemmShape,
    /// How the tile multiplies and accumulates.
    pub multiply: Multiply,
    /// The runtime micro-kernel the code calls for its tiles (its CPU features required by the
    /// artifact), or `None`: the backend generates the tile's code.
    pub micro: Option<Libcall>,
    /// The reduction's chunks `k0..k1`, in order, covering `0..k`; one (`0..k`) where a tile
    /// runs the whole reduction at once.
    pub chunks: Vec<(usize, usize)>,
    /// B: when it is packed, in which type the tiles read it.
    pub b: BPlan,
    /// A: what is done to it first, how the tiles read it.
    pub a: APlan,
    /// How the tiles are cut into work items.
    pub work: Work,
}

/// How a tile multiplies and accumulates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Multiply {
    /// f32 products and sums, fused (FMA).
    F32Fma,
    /// f32 products and sums, a multiply then an add (a CPU without FMA).
    F32MulAdd,
    /// bf16 pairs summed into f32 (x86 AVX512-BF16 `VDPBF16PS`); B packed in interleaved pairs.
    Bf16Pairs,
    /// fp16 × fp16 into f32 in one instruction (AArch64 `FMLAL`).
    Fp16Fmlal,
    /// fp16 FMA into fp16 accumulators (`--accumulate=f16` on a CPU with fp16 arithmetic).
    Fp16Acc,
}

impl Multiply {
    /// An f32 multiply: fused where the CPU has FMA.
    pub fn f32(fma: bool) -> Multiply {
        if fma { Multiply::F32Fma } else { Multiply::F32MulAdd }
    }

    /// The multiply in words.
    pub fn words(self) -> &'static str {
        match self {
            Multiply::F32Fma => "f32 FMA",
            Multiply::F32MulAdd => "f32 multiply and add",
            Multiply::Bf16Pairs => "bf16 pairs on VDPBF16PS into f32",
            Multiply::Fp16Fmlal => "fp16 FMLAL into f32",
            Multiply::Fp16Acc => "fp16 FMA, fp16 accumulators",
        }
    }
}

/// B's plan.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BPlan {
    /// `Some(dt)`: B is computed at run time (an attention's keys and values) and packed per
    /// run, in `dt`; `None`: a constant, packed at compile time in its own type.
    pub run_time: Option<DType>,
    /// Whether and when a packed fp16/bf16 B is widened to f32 for tiles that multiply in f32.
    pub widen: WidenB,
}

/// When a GEMM's packed fp16/bf16 B is widened to f32 for tiles that multiply in f32.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WidenB {
    /// Not widened apart: the tiles read B as packed (a runtime micro-kernel converts an fp16
    /// or bf16 B as it loads it).
    No,
    /// A constant B: by the runtime when it loads the artifact (16-bit in the file, f32 in
    /// memory; no conversion per run).
    AtLoad,
    /// Once per run, in a step of its own before the tiles.
    PerRun,
    /// A chunk of a panel at a time, into the work item's scratch, next to the A chunk that
    /// uses it (no f32 copy of the weight is made).
    PerChunk,
}

/// A's plan.
#[derive(Clone, Debug, PartialEq)]
pub struct APlan {
    /// What is done to A before the tiles read it.
    pub staging: AStaging,
    /// How the tiles read it.
    pub form: AForm,
}

/// What a GEMM does to A before its tiles read it.
#[derive(Clone, Debug, PartialEq)]
pub enum AStaging {
    /// Nothing.
    AsIs,
    /// Widened to f32 once per run, in a step of its own.
    Widened,
    /// (fp16 A) the span of A a row block reads, widened to f32 by the work item itself (at
    /// most `bound` values, in its scratch).
    WidenedPerRowBlock {
        /// The most values a row block widens.
        bound: usize,
    },
    /// (A convolution) its input padded (and widened to `dtype`) once per run into a
    /// temporary of this geometry, with `slack` elements after it.
    Padded {
        /// The padded input's geometry (no padding left).
        geometry: ConvGeometry,
        /// Its element type (f32 where A is widened).
        dtype: DType,
        /// Elements past the end that a run read as one vector may touch.
        slack: usize,
        /// The padding the tiles leave out.
        skipped: SkippedPadding,
    },
}

/// The padding of a convolution's input padded once per run ([`AStaging::Padded`]) whose
/// products its tiles leave out: zeros times finite weights, which change no sum.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SkippedPadding {
    /// The padding's rows above and below the image (`pad[0]`, `pad[1]`) where a tile runs only
    /// the kernel rows that meet the image for some row of it; `(0, 0)` where every tile runs
    /// them all.
    pub rows: (usize, usize),
    /// The padding's columns left and right of the image (`pad[2]`, `pad[3]`) where the tiles
    /// never cross output rows and a tile at an output row's start or end multiplies, for each
    /// kernel column, only its rows whose tap meets the image; `(0, 0)` where they multiply all.
    pub cols: (usize, usize),
}

/// How the tiles read A.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AForm {
    /// Where it lies: a matmul's rows, a convolution's windows of its input.
    InPlace,
    /// A matmul's rows where they lie but for the last micro-panel (rows past `m`), packed.
    InPlaceLastPacked,
    /// A convolution's rows as window rows of its input (or of the staged input), a chunk of
    /// the reduction per window row.
    WindowRows,
    /// Packed per chunk of the reduction (a convolution's windows gathered: implicit im2col).
    Packed,
}

/// How the tiles are cut into work items.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Work {
    /// Rows of A per work item (at most; the last item of a batch may have fewer).
    pub rows: usize,
    /// B panels of `nr` columns per work item (`0`: all of them; `1` with `rows` the tile's:
    /// a tile per work item).
    pub panels: usize,
    /// Work items.
    pub items: usize,
    /// A column panel's tiles run one after the other (rows fastest), rather than a row of
    /// tiles at a time.
    pub rows_fastest: bool,
}

impl GemmPlan {
    /// The plan in words for `c`, the contraction it was made for: `micro_what`, the words of
    /// its runtime micro-kernel; `a_per_band`, an A widened band by band rather than once per
    /// run (attention run in bands).
    pub fn describe(&self, c: &Contraction, micro_what: Option<&str>, a_per_band: bool) -> String {
        let GemmShape { mr, nr, lanes } = self.tile;
        let mut s = format!("tiles {mr}x{nr}");
        if self.micro.is_none() {
            s.push_str(&format!(" ({lanes} lanes)"));
        }
        let rows = self.work.rows.min(c.m);
        match self.work.panels {
            1 if rows == mr.min(c.m) => s.push_str(", a tile per work item"),
            0 => s.push_str(&format!(", {rows} rows per work item")),
            p => s.push_str(&format!(", {rows} rows and {p} panels per work item ({} column groups)", c.n.div_ceil(nr).div_ceil(p))),
        }
        if self.work.rows_fastest {
            s.push_str(", a column panel's tiles one after the other");
        }
        s.push_str(&format!(", {}", self.multiply.words()));
        match micro_what {
            Some(what) => s.push_str(&format!(" on {what}")),
            None if self.micro.is_none() => s.push_str(", generated"),
            None => {}
        }
        s.push_str("; ");
        match self.b.run_time {
            Some(dt) => s.push_str(&format!("B computed at run time, packed per run ({dt})")),
            None => s.push_str(&format!("B packed at compile time ({})", c.b.ty.dtype)),
        }
        if self.multiply == Multiply::Bf16Pairs {
            s.push_str(" in pairs of rows");
        }
        match self.b.widen {
            WidenB::No => {}
            WidenB::AtLoad => s.push_str(", widened to f32 when loaded"),
            WidenB::PerRun => s.push_str(", widened to f32 once per run"),
            WidenB::PerChunk => s.push_str(", widened to f32 a chunk at a time"),
        }
        let widened = |dtype: DType| if dtype != c.a.ty.dtype { " and widened to f32" } else { "" };
        let staging = match &self.a.staging {
            AStaging::AsIs => String::new(),
            AStaging::Widened if a_per_band => "widened to f32 band by band".to_string(),
            AStaging::Widened => "widened to f32 once per run".to_string(),
            AStaging::WidenedPerRowBlock { .. } => "widened to f32 per row block".to_string(),
            AStaging::Padded { dtype, .. } => {
                let parts = if c.a_parts.is_empty() { String::new() } else { format!(" from its {} parts (a concatenation folded in)", c.a_parts.len()) };
                format!("padded{} once per run{parts}", widened(*dtype))
            }
        };
        let form = match self.a.form {
            AForm::InPlace => "read in place",
            AForm::InPlaceLastPacked => "read in place, the last micro-panel packed",
            AForm::WindowRows => "read in place as window rows",
            AForm::Packed => "packed per chunk",
        };
        if staging.is_empty() {
            s.push_str(&format!("; A {form}"));
        } else {
            s.push_str(&format!("; A {staging}, {form}"));
        }
        if let AStaging::Padded { skipped, .. } = self.a.staging {
            if skipped.rows != (0, 0) {
                s.push_str(", a tile's kernel rows that meet only padding skipped");
            }
            if skipped.cols != (0, 0) {
                s.push_str(", an output row's edge pixels' taps in the padding skipped");
            }
        }
        if self.chunks.len() > 1 {
            s.push_str(&format!(", k in {} chunks", self.chunks.len()));
        }
        let views: Vec<&str> = [(c.views.a, "A"), (c.views.b, "B"), (c.views.out, "the output")].into_iter().filter_map(|(v, name)| v.map(|_| name)).collect();
        if !views.is_empty() {
            s.push_str(&format!("; {} through a view (a copy folded in)", views.join(", ")));
        }
        s
    }
}
