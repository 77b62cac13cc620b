//! The LLVM CPU backend's plans: how it runs each kernel, decided from the kernel, the program
//! and the machine row before any code is emitted. [`LlvmCpuBackend::compile`] makes every
//! kernel's plan first and then emits what each says; [`KernelPlan::describe`] prints the same
//! plan (`--emit=kernels`, the artifact's kernel plans, `f16c-run --profile`), so what is shown
//! is what runs.

use super::{depthwise, gemm, LlvmCpuBackend};
use crate::backend::llvm::families::{extremum_in_chains, extremum_in_lanes, row_loops, Items, RowVectors, EXTREMUM_CHAINS, EXTREMUM_LANES, EXTREMUM_VECTORS};
use crate::backend::llvm::Ir;
use crate::backend::cpu::{AForm, APlan, AStaging, BPlan, GemmPlan, Multiply, SkippedPadding, WidenB, Work};
use crate::lower::{Kernel, KernelKind, Program};
use f16c_dialect::DType;

/// How one kernel runs.
#[derive(Clone, Debug, PartialEq)]
pub enum KernelPlan {
    /// `row_group` rows of a rows kernel per work item, their reductions' chains interleaved;
    /// runs of elementwise stages and sums in vectors where these say.
    Rows(RowVectors),
    /// A depthwise convolution: `lanes` channels × a run of a row's pixels per work item, in
    /// fp16 accumulators where `f16_acc`.
    Depthwise {
        /// Channels per work item (one vector).
        lanes: usize,
        /// Accumulates in fp16 (`--accumulate=f16` on a CPU with fp16 FMA).
        f16_acc: bool,
    },
    /// A matmul or convolution on the machine's register tile (the plan both CPU backends
    /// read, [`crate::backend::cpu`]; boxed, as the Cranelift backend's is: the other plans
    /// are a few words).
    Gemm(Box<GemmPlan>),
    /// Plain loops of work items, one per part of [`Items::of`], each in its form.
    Items(Vec<ItemsForm>),
}

/// The form of one loop of work items ([`Items`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ItemsForm {
    /// A pooling kernel: `lanes` channels (the machine's f32 vector) of every pixel of an
    /// output row per item.
    PoolLanes {
        /// Channels per vector.
        lanes: usize,
    },
    /// An elementwise kernel: a row along the last dimension per item, `lanes` at a time
    /// where the row's values compute in f32 lanes (else one by one).
    ElementwiseRows {
        /// Rows (items).
        rows: usize,
        /// Vector width, if vectorised.
        lanes: Option<usize>,
    },
    /// A reduction: `lanes` neighbouring outputs per vector, each reduced in index order.
    ReductionLanes {
        /// Outputs per vector.
        lanes: usize,
    },
    /// A move of a copy: a band of tiles transposed in registers per item.
    TransposeTiles,
    /// A move of a copy: a row per item.
    CopyRows,
    /// A gather: a run of indices per item ([`crate::lower::Gather::run`]), all checked before
    /// any is copied.
    GatherRuns,
    /// One element (or pair, or output) per item ([`Ir::item`]).
    Plain,
}

impl LlvmCpuBackend {
    /// The plan of `kernel` (of `program`) on this machine.
    pub fn plan(&self, program: &Program, kernel: &Kernel) -> KernelPlan {
        let m = &self.machine;
        match &kernel.kind {
            KernelKind::Rows(r) => {
                // Under a mask where the machine masks every type the tails read and write (the
                // full inputs and the result; the row's temporaries are f32).
                let mut touched = r.inputs.iter().filter(|i| i.full).map(|i| i.dtype).chain(r.dtypes.last().copied());
                let masked = touched.all(|d| m.masks(d));
                return KernelPlan::Rows(RowVectors::of(r, &self.lane_rules(), m.gemm.lanes, masked));
            }
            KernelKind::Contraction(c) => {
                let lanes = depthwise::lanes(m, c);
                if depthwise::applies(c, lanes) {
                    return KernelPlan::Depthwise { lanes, f16_acc: depthwise::accumulates_f16(m, c) };
                }
                if gemm::applies(program, c) {
                    return KernelPlan::Gemm(Box::new(self.gemm_plan(program, c)));
                }
            }
            _ => {}
        }
        let rules = self.lane_rules();
        let forms = Items::of(&kernel.kind)
            .into_iter()
            .map(|items| match items {
                Items::Pool(p) if Ir::pools_in_lanes_by(&rules, p) => ItemsForm::PoolLanes { lanes: m.gemm.lanes },
                Items::Elementwise(e) | Items::Pairs(e) if Ir::elementwise_rows(e).is_some() => {
                    let rows = Ir::elementwise_rows(e).expect("checked");
                    let len = e.shape[e.shape.len() - 1];
                    let lanes = (rules.elementwise(e) && len >= m.gemm.lanes).then_some(m.gemm.lanes);
                    ItemsForm::ElementwiseRows { rows, lanes }
                }
                Items::Reduction(r) if rules.reduction(r, m.gemm.lanes) => ItemsForm::ReductionLanes { lanes: m.gemm.lanes },
                Items::Move(copy, mv) if Ir::transposes_in_tiles_by(&rules, copy, mv) => ItemsForm::TransposeTiles,
                Items::Move(..) => ItemsForm::CopyRows,
                Items::Gather(g) if g.scatter.is_none() => ItemsForm::GatherRuns,
                _ => ItemsForm::Plain,
            })
            .collect();
        KernelPlan::Items(forms)
    }

    /// The plan of a contraction that runs on the machine's register tile
    /// ([`gemm::applies`]): one chunk (each tile runs the whole reduction), a tile per work
    /// item, A read where it lies (after padding or widening where planned).
    fn gemm_plan(&self, program: &Program, c: &crate::lower::Contraction) -> GemmPlan {
        let m = &self.machine;
        let shape = gemm::shape(m, c);
        let run_time_b = gemm::packs_at_run_time(program, c);
        let multiply = if gemm::dot(m, c, run_time_b) {
            Multiply::Bf16Pairs
        } else if gemm::uses_fmlal(m, c) {
            Multiply::Fp16Fmlal
        } else if gemm::accumulates_f16(m, c) {
            Multiply::Fp16Acc
        } else {
            Multiply::F32Fma
        };
        // The tiles read B in the type it is packed in (a run-time B's may differ).
        let b_at_run_time = run_time_b.then(|| gemm::run_time_b_type(m, c));
        let mut packed = c.clone();
        if let Some(dt) = b_at_run_time {
            packed.b.ty.dtype = dt;
        }
        let widen_b = match (gemm::widens_b(m, &packed, shape, run_time_b), b_at_run_time) {
            (false, _) => WidenB::No,
            (true, None) => WidenB::AtLoad,
            (true, Some(_)) => WidenB::PerRun,
        };
        let a_dtype = if gemm::widens_a(m, c, run_time_b) { DType::F32 } else { c.a.ty.dtype };
        let staging = match gemm::padded_input(c) {
            // A run read as one vector may read past the last pixel's channels.
            Some(geometry) => {
                let skipped = match &c.kind {
                    crate::lower::ContractionKind::Conv(g) => {
                        // Columns on the code path that multiplies one step at a time.
                        let single = multiply == Multiply::F32Fma && !m.fma_by_element;
                        let cols = if single && gemm::edge_pixels(g, shape.mr) { (g.pad[2], g.pad[3]) } else { (0, 0) };
                        SkippedPadding { rows: (g.pad[0], g.pad[1]), cols }
                    }
                    _ => SkippedPadding::default(),
                };
                AStaging::Padded { geometry, dtype: a_dtype, slack: if m.fma_by_element { gemm::a_run(m, c) } else { 0 }, skipped }
            }
            None if a_dtype != c.a.ty.dtype => AStaging::Widened,
            None => AStaging::AsIs,
        };
        // The contraction as the tiles see it (B and A in the types they read).
        let mut seen = packed;
        if widen_b != WidenB::No {
            seen.b.ty.dtype = DType::F32;
        }
        seen.a.ty.dtype = a_dtype;
        let work = Work { rows: shape.mr, panels: 1, items: gemm::work(c, shape), rows_fastest: gemm::rows_fastest(m, &seen) };
        GemmPlan {
            tile: shape,
            multiply,
            micro: None,
            chunks: vec![(0, c.k)],
            b: BPlan { run_time: b_at_run_time, widen: widen_b },
            a: APlan { staging, form: AForm::InPlace },
            work,
        }
    }
}

impl KernelPlan {
    /// The plan in words, for `kernel` (the kernel it was made for); `a_per_band`: a GEMM
    /// whose widening of A runs band by band ([`crate::backend::bands::Band::widens_products_a`]).
    pub fn describe(&self, kernel: &Kernel, a_per_band: bool) -> String {
        match (self, &kernel.kind) {
            (KernelPlan::Rows(vectors), KernelKind::Rows(r)) => {
                // The emitter's tests, on each reduction's argument type.
                let arg_type = |a: usize| if a < r.inputs.len() { r.inputs[a].dtype } else { r.dtypes[a - r.inputs.len()] };
                let extrema = |test: fn(f16c_dialect::ReduceKind, DType, usize) -> bool| r.stages.iter().any(|st| matches!(st, crate::lower::RowStage::Reduce { kind, arg, .. } if test(*kind, arg_type(*arg), r.len)));
                let chains = if extrema(extremum_in_lanes) {
                    format!(", maxima/minima in {EXTREMUM_VECTORS} chains of {EXTREMUM_LANES} lanes{}", if vectors.masked_tails { " folded as vectors" } else { "" })
                } else if extrema(extremum_in_chains) {
                    format!(", maxima/minima in {EXTREMUM_CHAINS} chains")
                } else {
                    String::new()
                };
                let group = crate::backend::llvm::families::row_group(r);
                let lanes = vectors.lanes;
                let sum_stages = r.stages.iter().filter(|st| matches!(st, crate::lower::RowStage::Reduce { kind: f16c_dialect::ReduceKind::Sum, .. })).count();
                let side_types: Vec<DType> = vectors.sums.iter().filter_map(|&si| match r.stages[si] { crate::lower::RowStage::Reduce { arg, .. } => Some(arg_type(arg)), _ => None }).collect();
                let blocks = match (side_types.contains(&DType::F32), side_types.contains(&DType::F64)) {
                    (true, true) => format!("blocks of {lanes} f32 or {} f64 elements", lanes / 2),
                    (false, true) => format!("blocks of {} f64 elements", lanes / 2),
                    _ => format!("blocks of {lanes} elements"),
                };
                let sums = match vectors.sums.len() {
                    0 => "the rows' chains interleaved".to_string(),
                    n => format!("{}sums side by side in the lanes of a vector ({blocks} of each row transposed in registers)", if n == sum_stages { "" } else { "some " }),
                };
                let loops = row_loops(r);
                let vector = match vectors.runs.len() {
                    0 => String::new(),
                    n if n == loops => format!(", {lanes} lanes at a time"),
                    n => format!(" ({n} of them {lanes} lanes at a time)"),
                };
                let tail = r.len % lanes;
                let tails = if vectors.masked_tails && tail != 0 && !(vectors.runs.is_empty() && vectors.sums.is_empty()) { format!(", a row's last {tail} elements under a mask") } else { String::new() };
                format!("{group} rows of {} per work item, each row's sums in index order, {sums}, elementwise stages in {loops} loop{}{vector}{chains}{tails}", r.len, if loops == 1 { "" } else { "s" })
            }
            (KernelPlan::Depthwise { lanes, f16_acc }, KernelKind::Contraction(c)) => {
                format!("depthwise: {lanes} channels × {} pixels of a row per work item, {} accumulators", depthwise::pixels(c), if *f16_acc { "f16" } else { "f32" })
            }
            (KernelPlan::Gemm(g), KernelKind::Contraction(c)) => g.describe(c, None, a_per_band),
            (KernelPlan::Items(forms), kind) => {
                let parts: Vec<String> = Items::of(kind).iter().zip(forms).map(|(items, form)| ItemsForm::describe(*form, items)).collect();
                match kind {
                    KernelKind::Copy(c) if c.fill.is_some() => format!("the output filled an element per work item, then {}", parts[1..].join("; ")),
                    KernelKind::Contraction(c) if !c.a_parts.is_empty() => format!("its input's {} parts concatenated a pixel per work item (a concatenation folded in), then {}", c.a_parts.len(), parts.join("; ")),
                    _ => parts.join("; "),
                }
            }
            (plan, _) => format!("{plan:?}"),
        }
    }
}

impl ItemsForm {
    /// One loop's form in words.
    fn describe(self, items: &Items<'_>) -> String {
        match (self, items) {
            (ItemsForm::PoolLanes { lanes }, _) => format!("{lanes} channels of every pixel of an output row per work item"),
            (ItemsForm::ElementwiseRows { rows, lanes }, Items::Elementwise(e) | Items::Pairs(e)) => {
                let vectors = lanes.map_or(String::new(), |l| format!(", {l} lanes at a time"));
                format!("a row of {} per work item ({rows} rows){vectors}", e.shape[e.shape.len() - 1])
            }
            (ItemsForm::ReductionLanes { lanes }, _) => format!("{lanes} neighbouring outputs per vector, each reduced in index order"),
            (ItemsForm::TransposeTiles, _) => "a band of tiles transposed in registers per work item".to_string(),
            (ItemsForm::CopyRows, _) => "a row per work item".to_string(),
            (ItemsForm::GatherRuns, Items::Gather(g)) => g.run_in_words(),
            (_, Items::Pairs(_)) => "two neighbouring elements per work item".to_string(),
            (_, Items::Reduction(_)) => "one output per work item, reduced in index order".to_string(),
            (_, Items::Pool(_)) => "one output per work item".to_string(),
            (_, Items::Gather(_)) => "one output element per work item".to_string(),
            (_, Items::Outputs(_) | Items::Tiles(_)) => "one output per work item (no micro-kernel for this contraction)".to_string(),
            _ => "one element per work item".to_string(),
        }
    }
}
