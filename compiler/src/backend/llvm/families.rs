//! Kernel family bodies for one work item, generic over the target. A target decides how work
//! items map onto hardware (one GPU thread each in a grid-stride loop, a `begin..end` loop on a
//! CPU) and calls these; each computes its outputs in the reference's order, so everything but
//! contractions (and the math functions of [`super::MathImpl`]) is bit-identical to the
//! reference interpreter.
//!
//! | family | work item | [`Items::work`] |
//! |---|---|---|
//! | elementwise | one output element | elements |
//! | reduction | one `(outer, inner)` output, a sequential loop along the axis | `outer·inner` |
//! | pool | one output element, the window clipped to the input | elements |
//! | copy | one element of one move (a fill is its own step) | elements of the move |
//! | gather | one output element (the index is checked) | elements |
//! | matmul, conv2d (SIMT) | a 4×4 register tile of outputs, `Σ_k` in index order | tiles |
//! | depthwise, transpose conv | one output element, its taps in the reference's order | `batch·m·n` |
//! | rows | one row shared by a group of threads ([`RowShare`]), stages in order, full values in a per-row temporary | rows |

use super::expr::LaneRules;
use super::{Built, Ir, Var};

/// Rows and columns of the output tile a register-blocked contraction work item computes.
pub const TILE: usize = 4;
use crate::lower::{Contraction, ContractionKind, CopyKernel, Elementwise, Epilogue, EwKind, Gather, KernelKind, Pool, Reduction, RowStage, RowValue, Rows};
use f16c_dialect::{DType, ReduceKind};
use inkwell::types::{BasicTypeEnum, VectorType};
use inkwell::values::{BasicValue, BasicValueEnum, IntValue, PointerValue, VectorValue};
use inkwell::IntPredicate;

/// Where a contraction tile lies ([`Ir::tile_at`]).
pub struct TileAt<'ctx> {
    /// The batch.
    pub bi: IntValue<'ctx>,
    /// The first row.
    pub row0: IntValue<'ctx>,
    /// The first column.
    pub col0: IntValue<'ctx>,
    /// The tile's rows, clamped to the matrix (rows past it compute and are not stored).
    pub rows: Vec<IntValue<'ctx>>,
}

/// An A row of a matmul or conv2d tile ([`Ir::contraction_rows`]).
#[derive(Clone, Copy)]
pub struct ARow<'ctx> {
    /// The address of A at `k` = 0 (a matmul, or a conv without padding, whose values along
    /// `k` are [`KStep::offset`] elements from it).
    start: Option<PointerValue<'ctx>>,
    /// A padded conv row's image, top input row and left input column (before the taps).
    image: IntValue<'ctx>,
    y0: IntValue<'ctx>,
    x0: IntValue<'ctx>,
}

/// The input window of a pooling output pixel ([`Ir::pool_window`]).
struct PoolWindow<'ctx> {
    /// The image's first element.
    in_base: IntValue<'ctx>,
    /// The window's top row and left column (before clipping).
    y0: IntValue<'ctx>,
    x0: IntValue<'ctx>,
    /// The window's rows and columns inside the input, `[lo, hi)` from `y0` and `x0`.
    ky: (IntValue<'ctx>, IntValue<'ctx>),
    kx: (IntValue<'ctx>, IntValue<'ctx>),
    /// Elements per input row, and per pixel.
    row: usize,
    c: usize,
}

/// One step along a matmul's or conv2d's `k` ([`Ir::contraction_k`]).
#[derive(Clone, Copy)]
pub struct KStep<'ctx> {
    /// The index along `k`.
    pub kk: IntValue<'ctx>,
    /// Where `A[row, kk]` is, from [`ARow::start`] (rows with a start only).
    pub(crate) offset: IntValue<'ctx>,
}

/// One loop of work items of a kernel, and which body computes an item: what a target that
/// runs a kernel one item per thread (NVPTX SIMT) or per loop iteration (CPU) needs to know.
/// [`Items::of`] makes the choices once (two elements per item where they pair up, register
/// tiles for matmul and conv2d); [`Ir::item`] emits the body.
#[derive(Clone, Copy, Debug)]
pub enum Items<'k> {
    /// One output element of a fused elementwise kernel.
    Elementwise(&'k Elementwise),
    /// Two adjacent output elements ([`Ir::pairable`]).
    Pairs(&'k Elementwise),
    /// One `(outer, inner)` output of a reduction.
    Reduction(&'k Reduction),
    /// One output element of a pooling kernel.
    Pool(&'k Pool),
    /// One output element of a gather.
    Gather(&'k Gather),
    /// A register tile of a matmul or conv2d ([`Ir::contraction_tile_item`]).
    Tiles(&'k Contraction),
    /// One output of a depthwise or transpose convolution.
    Outputs(&'k Contraction),
    /// One row of a rows kernel (in its temporary).
    Rows(&'k Rows),
    /// The fill of a copy kernel's output.
    Fill(&'k CopyKernel),
    /// One element of move `.1` of a copy kernel.
    Move(&'k CopyKernel, usize),
}

impl<'k> Items<'k> {
    /// The loops of `kind`, in order: one, except for a copy (its fill, then one per move).
    pub fn of(kind: &'k KernelKind) -> Vec<Items<'k>> {
        match kind {
            KernelKind::Elementwise(e) if Ir::pairable(e) => vec![Items::Pairs(e)],
            KernelKind::Elementwise(e) => vec![Items::Elementwise(e)],
            KernelKind::Reduction(r) => vec![Items::Reduction(r)],
            KernelKind::Pool(p) => vec![Items::Pool(p)],
            KernelKind::Gather(g) => vec![Items::Gather(g)],
            KernelKind::Contraction(c) if Ir::tileable(c) => vec![Items::Tiles(c)],
            KernelKind::Contraction(c) => vec![Items::Outputs(c)],
            KernelKind::Rows(r) => vec![Items::Rows(r)],
            KernelKind::Copy(c) => c.fill.map(|_| Items::Fill(c)).into_iter().chain((0..c.moves.len()).map(|m| Items::Move(c, m))).collect(),
        }
    }

    /// How many items.
    pub fn work(&self) -> usize {
        match *self {
            Items::Elementwise(e) => e.shape.iter().product(),
            Items::Pairs(e) => e.shape.iter().product::<usize>() / 2,
            Items::Reduction(r) => r.outer * r.inner,
            Items::Pool(p) => p.output.ty.num_elements(),
            Items::Gather(g) => g.output.ty.num_elements(),
            Items::Tiles(c) => c.batch * c.m.div_ceil(TILE) * c.n.div_ceil(TILE),
            Items::Outputs(c) => c.batch * c.m * c.n,
            Items::Rows(r) => r.rows,
            Items::Fill(c) => c.output.ty.num_elements(),
            Items::Move(c, m) => c.moves[m].shape.iter().product(),
        }
    }

    /// A rough operation count of the whole loop (the CPU executor threads what pays).
    pub fn cost(&self) -> f64 {
        let work = self.work() as f64;
        match *self {
            Items::Elementwise(e) | Items::Pairs(e) => (e.shape.iter().product::<usize>() * (e.expr.ops.len() + 1)) as f64,
            Items::Reduction(r) => (r.outer * r.len * r.inner) as f64,
            Items::Tiles(c) | Items::Outputs(c) => 2.0 * (c.batch * c.m * c.n * c.k) as f64,
            Items::Rows(r) => (r.rows * r.len * (r.stages.len() + 1)) as f64,
            _ => work,
        }
    }

    /// The suffix of the loop's function name (copies have several loops).
    pub fn suffix(&self) -> String {
        match *self {
            Items::Fill(_) => "_0".into(),
            Items::Move(c, m) => format!("_{}", m + c.fill.is_some() as usize),
            _ => String::new(),
        }
    }
}

/// The shortest last dimension [`Ir::elementwise_row`] takes a row of.
pub const ELEMENTWISE_ROW_MIN: usize = 8;

/// Independent chains of a row's float maximum or minimum ([`Ir::reduce_extremum`]).
pub const EXTREMUM_CHAINS: usize = 8;

/// Whether a row's reduction of `kind` over `len` values of `d` runs in
/// [`EXTREMUM_CHAINS`] chains ([`Ir::reduce_extremum`]): a float maximum or minimum of a row
/// long enough to fill them twice.
pub fn extremum_in_chains(kind: ReduceKind, d: DType, len: usize) -> bool {
    d.is_float() && matches!(kind, ReduceKind::Max | ReduceKind::Min) && len >= 2 * EXTREMUM_CHAINS
}

/// Lanes of a vector chain of [`Ir::reduce_extremum_lanes`].
pub const EXTREMUM_LANES: usize = 16;
/// Vector chains of [`Ir::reduce_extremum_lanes`] (an f32 compare's latency over its
/// throughput).
pub const EXTREMUM_VECTORS: usize = 4;
/// Elements per step of [`Ir::reduce_extremum_lanes`].
pub const EXTREMUM_BLOCK: usize = EXTREMUM_LANES * EXTREMUM_VECTORS;

/// Whether a row's reduction of `kind` over `len` values of `d` (f32, or f16/bf16 widened
/// exactly as they are loaded), when they lie in memory in that type, runs in vector chains
/// ([`Ir::reduce_extremum_lanes`]) in a group of rows.
pub fn extremum_in_lanes(kind: ReduceKind, d: DType, len: usize) -> bool {
    matches!(d, DType::F32 | DType::F16 | DType::BF16) && matches!(kind, ReduceKind::Max | ReduceKind::Min) && len >= 2 * EXTREMUM_BLOCK
}

/// The loops over the row a rows kernel's elementwise stages take: one per run of them between
/// reductions that has a full stage ([`Ir::rows_with`]).
pub fn row_loops(r: &Rows) -> usize {
    let mut loops = 0;
    let mut si = 0;
    while si < r.stages.len() {
        let end = r.run_end(si);
        loops += usize::from(r.stages[si..end].iter().any(|st| matches!(st, RowStage::Map { full: true, .. })));
        si = end + 1;
    }
    loops
}

/// Rows a CPU thread computes together ([`Ir::rows_group`]), unless [`row_group`] takes more.
pub const ROW_GROUP: usize = 4;

/// Rows a CPU thread computes together where they are long and many ([`row_group`]): each row's
/// sum is a chain of dependent adds, so four rows' chains side by side waited on the adds'
/// latency; twelve keep both adders busy (the Whisper encoder's softmaxes over 1,500 keys:
/// 46.3 → 44.7 ms at one thread; its layer norms 4.6 → 4.5 ms).
pub const ROW_GROUP_LONG: usize = 12;

/// Rows a CPU thread computes together where they are long but too few for [`ROW_GROUP_LONG`]
/// ([`row_group`]): eight, whose sums still go side by side in a vector (a whole one of f64 on
/// AVX-512, half of one of f32 — [`RowVectors::of`]), where four rows' sums were four scalar
/// chains. BERT-base's 128 rows of 768 are sixteen groups, which share out evenly among two
/// threads: its rows kernels 4.51 → 4.14 ms at one thread, ViT-S/16's (197 rows of 384) 3.62 →
/// 3.35, GPT-2's (64 rows) 1.94 → 1.76.
pub const ROW_GROUP_MID: usize = 8;

/// The rows of a rows kernel a CPU thread computes together: [`ROW_GROUP_LONG`] for rows of at
/// least 256 elements where there are at least 64 such groups, [`ROW_GROUP_MID`] for such rows
/// where there are at least eight groups of it, else [`ROW_GROUP`] (short rows gain nothing, and
/// fewer groups share out worse among threads).
pub fn row_group(r: &Rows) -> usize {
    if r.len >= 256 && r.rows >= 64 * ROW_GROUP_LONG {
        ROW_GROUP_LONG
    } else if r.len >= 256 && r.rows >= 8 * ROW_GROUP_MID {
        ROW_GROUP_MID
    } else {
        ROW_GROUP
    }
}

/// Where a group of rows of a rows kernel uses vectors ([`Ir::rows_group`], decided by the
/// CPU backend's plan with [`RowVectors::of`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RowVectors {
    /// The machine's f32 lanes.
    pub lanes: usize,
    /// The first stages of the runs of elementwise stages computed `lanes` elements at a time:
    /// every full stage of the run an op that [`LaneRules::op`] computes on f32 lanes (f32,
    /// f16 and bf16 values, rounded lane by lane; a function of 16-bit values looked up, a
    /// `vgatherdps` per vector), or a select on the row's scalar condition. (The contract's
    /// `exp` then takes AVX-512's `vscalefps` directly, where the loop vectoriser widened
    /// `llvm.ldexp` through two conversions and a NaN select, and bf16 runs, which it left
    /// scalar, are vectors.)
    pub runs: Vec<usize>,
    /// The sums computed side by side, the group's rows in the lanes of one vector: f32 sums
    /// of f32 values over rows at least `lanes` long, the group filling more than half of a
    /// vector (or a group of [`ROW_GROUP_MID`] half of one). Blocks of `lanes` elements of each row are transposed in registers so that lane
    /// `q` adds row `q`'s elements in index order (the bits of a chain per row) at one vector
    /// add per block column, where a chain per row took one scalar add per element.
    pub sums: Vec<usize>,
    /// The machine loads and stores under a mask every type the tails touch
    /// ([`crate::target::CpuMachine::masks`]): a vector run's last `len % lanes` elements and a
    /// side-by-side sum's go as one more vector under a mask (the others zero:
    /// adding +0 to a sum from +0 changes nothing), and a maximum's or minimum's last elements
    /// as whole vectors and one under a mask (the others its start, ±∞), its chains then folded
    /// in vectors, halving the lanes each step, where each row took one scalar compare and
    /// select per element of its tail and per lane (a row of 1,500 lost a fifth of its time
    /// there; every lane holds what the scalar code computes, and a maximum's value does not
    /// depend on the order it was found in).
    pub masked_tails: bool,
}

impl RowVectors {
    /// The vectors a group of [`row_group`] rows of `r` uses on a machine of `lanes` f32 lanes
    /// whose lanes follow `rules` (and which loads and stores under a mask where `masked`).
    pub fn of(r: &Rows, rules: &LaneRules, lanes: usize, masked: bool) -> RowVectors {
        let n_in = r.inputs.len();
        let group = row_group(r);
        let mut v = RowVectors { lanes, masked_tails: masked, ..RowVectors::default() };
        if lanes < 2 || r.len < lanes {
            return v;
        }
        let mut si = 0;
        while si < r.stages.len() {
            if let RowStage::Reduce { kind, arg, .. } = r.stages[si] {
                // f32 sums in one vector of `lanes`; f64 sums in up to two of `lanes / 2`
                // (a group of twelve rows on AVX-512: eight and four).
                // More than half of the vectors' lanes, or [`ROW_GROUP_MID`]'s eight rows in
                // half of one.
                let fits = |per: usize, most: usize| per >= 2 && per.is_power_of_two() && group.div_ceil(per) <= most && (2 * group > group.div_ceil(per) * per || (group >= ROW_GROUP_MID && 2 * group == per));
                let d = r.dtype(arg);
                let typed = (d == DType::F32 && fits(lanes, 1)) || (d == DType::F64 && fits(lanes / 2, 2));
                if kind == ReduceKind::Sum && typed && (arg >= n_in || r.inputs[arg].full) {
                    v.sums.push(si);
                }
                si += 1;
                continue;
            }
            let end = r.run_end(si);
            let fulls = r.stages[si..end].iter().any(|st| matches!(st, RowStage::Map { full: true, .. }));
            // A value in f32 lanes: f32, or f16/bf16 rounded lane by lane (kept as f32 in the
            // row's temporary, widened exactly as an input is loaded).
            let lane = |d: DType| rules.stored(d);
            let in_lanes = r.stages[si..end].iter().enumerate().all(|(e, st)| match st {
                // A select on a row's scalar condition (PyTorch's all-masked test) picks a vector.
                RowStage::Map { op, full: true } if op.kind == EwKind::Select => !r.full(op.args[0]) && lane(r.dtypes[si + e]) && op.args[1..].iter().all(|&a| lane(r.dtype(a))),
                RowStage::Map { op, full: true } => {
                    let types: Vec<DType> = op.args.iter().map(|&a| r.dtype(a)).collect();
                    lane(r.dtypes[si + e]) && types.iter().all(|&d| lane(d)) && rules.op(op, &types)
                }
                _ => true,
            });
            if fulls && in_lanes {
                v.runs.push(si);
            }
            si = end;
        }
        v
    }
}

impl<'ctx> Ir<'ctx> {
    /// An integer type of `bytes` bytes (bit copies never convert).
    fn bits(&self, bytes: usize) -> inkwell::types::BasicTypeEnum<'ctx> {
        match bytes {
            1 => self.cx.i8_type().into(),
            2 => self.cx.i16_type().into(),
            4 => self.cx.i32_type().into(),
            _ => self.cx.i64_type().into(),
        }
    }

    /// Copies element `from` of `src` to element `to` of `dst`: as bits when `types` are one
    /// type, else converted (`(source, destination)`, floats: rounded once, to nearest even).
    pub(crate) fn copy_element(&mut self, types: (DType, DType), src: PointerValue<'ctx>, from: IntValue<'ctx>, dst: PointerValue<'ctx>, to: IntValue<'ctx>) {
        if types.0 != types.1 {
            let v = self.load(types.0, src, from);
            let v = self.round_to(types.1, v);
            self.store(types.1, dst, to, v);
            return;
        }
        let t = self.bits(types.0.byte_size());
        let v = self.b.build_load(t, self.gep(t, src, from), "").built();
        self.b.build_store(self.gep(t, dst, to), v).built();
    }

    // -----------------------------------------------------------------------------------------
    // Elementwise
    // -----------------------------------------------------------------------------------------

    /// Where `input` of an elementwise kernel holds element `at` of its strided view: `at`, or
    /// for rows picked by a table ([`crate::lower::Strided::rows`]) element `at % len` of the
    /// values' row that the table gives row `at / len` (division and remainder by constants;
    /// a row kernel asks once per row, at its first element).
    pub fn input_element(&mut self, input: &crate::lower::Strided, at: IntValue<'ctx>) -> IntValue<'ctx> {
        let Some(l) = &input.rows else { return at };
        let r = self.divi(at, l.len);
        let table = self.buffer(l.indices.0);
        let index = self.load(l.dtype, table, r).into_int_value();
        let row = if l.n == 1 { index } else { self.add(self.muli(self.divi(r, l.w), l.k), index) };
        self.add(self.muli(row, l.len), self.remi(at, l.len))
    }

    /// Output element `i` of a fused elementwise kernel.
    pub fn elementwise_item(&mut self, e: &Elementwise, i: IntValue<'ctx>) -> Result<(), String> {
        let mut args = Vec::with_capacity(e.inputs.len());
        for input in &e.inputs {
            let at = self.strided_offset(i, &e.shape, &input.strides);
            let at = self.input_element(input, at);
            let base = self.buffer(input.buffer.0);
            args.push(self.load(input.dtype, base, at));
        }
        let v = self.eval(&e.expr, args)?;
        let out = self.buffer(e.output.0);
        self.store(e.expr.result_dtype(), out, i, v);
        Ok(())
    }

    /// Rows of an elementwise kernel for [`Ir::elementwise_row`]: its leading dimensions, when
    /// it has more than one and a row of at least [`ELEMENTWISE_ROW_MIN`] elements (a
    /// broadcast input: the dimensions did not collapse into one), else `None`.
    pub fn elementwise_rows(e: &Elementwise) -> Option<usize> {
        let rank = e.shape.len();
        (rank >= 2 && e.shape[rank - 1] >= ELEMENTWISE_ROW_MIN).then(|| e.shape[..rank - 1].iter().product())
    }

    /// Row `r` of an elementwise kernel ([`Ir::elementwise_rows`]): each input's offset computed
    /// once per row, then the row along the last dimension, where the inputs step by their last
    /// strides (0 for a broadcast value, 1 for a contiguous one). With `lanes` > 1 and every
    /// value in f32 lanes ([`super::expr::LaneRules::elementwise`]), `lanes` elements at a time as vectors
    /// (a broadcast value splat once per row) and the rest one by one: each lane computes
    /// what the scalar evaluation does. (Per element, the offsets' divisions and remainders
    /// kept an SE block's channel scale scalar, 36 cycles per 16 elements; a row loop of 32
    /// left to LLVM was unrolled into scalars.)
    pub fn elementwise_row(&mut self, e: &Elementwise, r: IntValue<'ctx>, lanes: usize) -> Result<(), String> {
        let rank = e.shape.len();
        let len = e.shape[rank - 1];
        // (A row picked by a table lies whole in one row of the values: `fold_gathers`.)
        let starts: Vec<(PointerValue<'ctx>, IntValue<'ctx>, i64)> = e
            .inputs
            .iter()
            .map(|input| {
                let start = self.strided_offset(r, &e.shape[..rank - 1], &input.strides[..rank - 1]);
                (self.buffer(input.buffer.0), self.input_element(input, start), input.strides[rank - 1] as i64)
            })
            .collect();
        let out = self.buffer(e.output.0);
        let first = self.muli(r, len);
        let mut failure = Ok(());
        let whole = if lanes > 1 && self.lane_rules().elementwise(e) { len / lanes * lanes } else { 0 };
        if whole > 0 {
            let vty = self.cx.f32_type().vec_type(lanes as u32);
            let splats: Vec<Option<VectorValue<'ctx>>> = e
                .inputs
                .iter()
                .zip(&starts)
                .map(|(input, &(base, start, step))| {
                    (step == 0).then(|| {
                        let one = self.load(input.dtype, base, start).into_float_value();
                        self.splat(vty, one)
                    })
                })
                .collect();
            let step = self.i64(lanes as i64);
            self.for_range(self.i64(0), self.i64(whole as i64), step, |ir, j| {
                let args = e
                    .inputs
                    .iter()
                    .zip(&starts)
                    .zip(&splats)
                    .map(|((input, &(base, start, _)), splat)| splat.unwrap_or_else(|| ir.load_lanes(input.dtype, base, ir.add(start, j), lanes as u32)).into())
                    .collect();
                match ir.eval(&e.expr, args) {
                    Ok(v) => ir.store_lanes(e.expr.result_dtype(), out, ir.add(first, j), v.into_vector_value()),
                    Err(m) => failure = Err(m),
                }
            });
        }
        self.for_n(whole, len, |ir, j| {
            let args = e.inputs.iter().zip(&starts).map(|(input, &(base, start, step))| ir.load(input.dtype, base, ir.add(start, ir.mul(j, ir.i64(step))))).collect();
            match ir.eval(&e.expr, args) {
                Ok(v) => ir.store(e.expr.result_dtype(), out, ir.add(first, j), v),
                Err(m) => failure = Err(m),
            }
        });
        failure
    }

    /// Can an elementwise kernel run as [`Ir::elementwise_pair`]? Every value computes in f32
    /// and the result is 16-bit (two of them fill 32 bits: `half2`, `bf16x2`), the innermost
    /// dimension is even, and every input is contiguous or broadcast along it, at even offsets.
    pub fn pairable(e: &Elementwise) -> bool {
        let rank = e.shape.len();
        e.expr.is_f32_domain()
            && matches!(e.expr.result_dtype(), DType::F16 | DType::BF16)
            && e.shape[rank - 1].is_multiple_of(2)
            && e.inputs.iter().all(|i| i.strides[rank - 1] == 0 || (i.strides[rank - 1] == 1 && i.strides[..rank - 1].iter().all(|s| s % 2 == 0)))
    }

    /// Output elements `2i` and `2i + 1` of a [`Ir::pairable`] elementwise kernel: two scalar
    /// evaluations whose loads and stores are adjacent and aligned to the pair, which LLVM's
    /// SLP vectorizer turns into one `half2`/`bf16x2` operation where the target has it (every
    /// op still rounds once per element: the results are the scalar ones).
    pub fn elementwise_pair(&mut self, e: &Elementwise, i: IntValue<'ctx>) -> Result<(), String> {
        let rank = e.shape.len();
        let first = self.muli(i, 2);
        let mut args = [Vec::new(), Vec::new()];
        for input in &e.inputs {
            // (Both elements of a pair lie in one row: rows are of even length.)
            let at = self.strided_offset(first, &e.shape, &input.strides);
            let at = self.input_element(input, at);
            let base = self.buffer(input.buffer.0);
            let inner = input.strides[rank - 1];
            for (k, args) in args.iter_mut().enumerate() {
                let align = if k == 0 && inner == 1 { 2 * input.dtype.byte_size() } else { input.dtype.byte_size() };
                args.push(self.load_aligned(input.dtype, base, self.addi(at, (k * inner) as i64), align as u32));
            }
        }
        let out = self.buffer(e.output.0);
        let d = e.expr.result_dtype();
        for (k, args) in args.into_iter().enumerate() {
            let v = self.eval(&e.expr, args)?;
            let ty = self.storage(d);
            let p = self.gep(ty, out, self.addi(first, k as i64));
            let s = self.narrow(d, v);
            let st = self.b.build_store(p, s).built();
            st.set_alignment(if k == 0 { 2 * d.byte_size() as u32 } else { d.byte_size() as u32 }).expect("a power of two");
        }
        Ok(())
    }

    // -----------------------------------------------------------------------------------------
    // Reductions: sequential along the axis (the reference's order)
    // -----------------------------------------------------------------------------------------

    /// Output `i` (`outer·inner` of them) of a reduction or argmax.
    pub fn reduction_item(&mut self, r: &Reduction, i: IntValue<'ctx>) -> Result<(), String> {
        let (din, dout) = (r.input.ty.dtype, r.output.ty.dtype);
        let (src, dst) = (self.buffer(r.input.buffer.0), self.buffer(r.output.buffer.0));
        let (o, ii) = (self.divi(i, r.inner), self.remi(i, r.inner));
        let at0 = self.add(self.muli(o, r.len * r.inner), ii);
        let value = match r.kind {
            Some(kind) => {
                if din.is_float() != dout.is_float() {
                    return Err(format!("reduction from {din} to {dout} is not supported"));
                }
                let acc = self.var(self.reduce_init(kind, din));
                let inner = r.inner;
                self.for_n(0, r.len, |ir, k| {
                    let at = ir.add(at0, ir.muli(k, inner));
                    let x = ir.load(din, src, at);
                    let next = ir.reduce_step(kind, ir.get(acc), x);
                    ir.set(acc, next);
                });
                let v = self.get(acc);
                self.round_to(dout, v)
            }
            None => self.argmax(din, src, at0, r.len, r.inner).into(),
        };
        self.store(dout, dst, i, value);
        Ok(())
    }

    /// Work items of [`Ir::reduction_lanes`]: `outer` × blocks of `lanes` inner outputs.
    pub fn reduction_lanes_work(r: &Reduction, lanes: usize) -> usize {
        r.outer * r.inner.div_ceil(lanes)
    }

    /// Item `i` of a reduction that runs in lanes ([`super::expr::LaneRules::reduction`]): `lanes` neighbouring outputs, each
    /// lane the reference's sequence along the axis (the same steps as [`Ir::reduction_item`],
    /// one vector step per value of the axis, so the same bits); the last block of a row is
    /// pulled back to end at its last output (its overlap computes and stores the same values).
    pub fn reduction_lanes(&mut self, r: &Reduction, i: IntValue<'ctx>, lanes: usize) -> Result<(), String> {
        let (din, dout) = (r.input.ty.dtype, r.output.ty.dtype);
        let kind = r.kind.ok_or("an argmax does not run in lanes")?;
        let (src, dst) = (self.buffer(r.input.buffer.0), self.buffer(r.output.buffer.0));
        let blocks = r.inner.div_ceil(lanes);
        let (o, blk) = (self.divi(i, blocks), self.remi(i, blocks));
        let ii = self.smin(self.muli(blk, lanes), self.i64((r.inner - lanes) as i64));
        let at0 = self.add(self.muli(o, r.len * r.inner), ii);
        let vty = self.cx.f32_type().vec_type(lanes as u32);
        let init = self.reduce_init(kind, din).into_float_value();
        let acc = self.var(self.splat(vty, init).into());
        let inner = r.inner;
        self.for_n(0, r.len, |ir, k| {
            let x = ir.load_lanes(din, src, ir.add(at0, ir.muli(k, inner)), lanes as u32);
            let next = ir.reduce_step(kind, ir.get(acc), x.into());
            ir.set(acc, next);
        });
        let v = self.get(acc);
        let v = self.round_to(dout, v).into_vector_value();
        self.store_lanes(dout, dst, self.add(self.muli(o, r.inner), ii), v);
        Ok(())
    }

    /// Index of the first maximum (the first NaN wins), as the reference computes it.
    fn argmax(&mut self, d: DType, src: PointerValue<'ctx>, at0: IntValue<'ctx>, len: usize, inner: usize) -> IntValue<'ctx> {
        let first = self.load(d, src, at0);
        let best = self.var(self.i64(0).into());
        let best_v = self.var(first);
        self.for_n(0, len, |ir, k| {
            let cur = ir.load(d, src, ir.add(at0, ir.muli(k, inner)));
            let bv = ir.get(best_v);
            let take = if d.is_float() {
                let (c, b) = (cur.into_float_value(), bv.into_float_value());
                let f = |p| ir.b.build_float_compare(p, c, b, "").built();
                let b_nan = ir.b.build_float_compare(inkwell::FloatPredicate::UNO, b, b, "").built();
                let c_nan = ir.b.build_float_compare(inkwell::FloatPredicate::UNO, c, c, "").built();
                let gt = f(inkwell::FloatPredicate::OGT);
                let t = ir.b.build_or(c_nan, gt, "").built();
                let not_b_nan = ir.b.build_not(b_nan, "").built();
                ir.and(t, not_b_nan)
            } else {
                ir.icmp(IntPredicate::SGT, cur.into_int_value(), bv.into_int_value())
            };
            let nb = ir.select(take, k, ir.get(best).into_int_value());
            let nv = ir.select(take, cur, bv);
            ir.set(best, nb);
            ir.set(best_v, nv);
        });
        self.get(best).into_int_value()
    }

    // -----------------------------------------------------------------------------------------
    // Pooling: the window clipped to the input (max ignores padding, average divides by the
    // in-bounds count)
    // -----------------------------------------------------------------------------------------

    /// The input window of output pixel `pixel` of a pooling kernel (NHWC).
    fn pool_window(&self, p: &Pool, pixel: IntValue<'ctx>) -> Result<PoolWindow<'ctx>, String> {
        let ow = p.output.ty.shape.get(2).copied().ok_or("pooling input must be NHWC")?;
        self.pool_window_at(p, self.divi(pixel, ow), self.remi(pixel, ow))
    }

    /// The input window of output pixel `ox` of output row `row` (`n · oh + oy`).
    fn pool_window_at(&self, p: &Pool, row: IntValue<'ctx>, ox: IntValue<'ctx>) -> Result<PoolWindow<'ctx>, String> {
        let c = Self::pool_channels(p)?;
        let (&[_, ih, iw, _], &[_, oh, _, _]) = (p.input.ty.shape.as_slice(), p.output.ty.shape.as_slice()) else {
            return Err("pooling input must be NHWC".into());
        };
        let oy = self.remi(row, oh);
        let b = self.divi(row, oh);
        let y0 = self.addi(self.muli(oy, p.stride[0]), -(p.pad[0] as i64));
        let x0 = self.addi(self.muli(ox, p.stride[1]), -(p.pad[2] as i64));
        let (ky_lo, ky_hi) = self.clip(y0, p.kernel[0], ih);
        let (kx_lo, kx_hi) = self.clip(x0, p.kernel[1], iw);
        Ok(PoolWindow { in_base: self.muli(b, ih * iw * c), y0, x0, ky: (ky_lo, ky_hi), kx: (kx_lo, kx_hi), row: iw * c, c })
    }

    /// The channels of a pooling kernel's (NHWC, not i1) input.
    fn pool_channels(p: &Pool) -> Result<usize, String> {
        if p.input.ty.dtype == DType::I1 {
            return Err("pooling is not defined on i1".into());
        }
        match (p.input.ty.shape.as_slice(), p.output.ty.shape.len()) {
            (&[_, _, _, c], 4) => Ok(c),
            _ => Err("pooling input must be NHWC".into()),
        }
    }

    /// `body(ir, at)` for each pixel of `w` in the window, in order, `at` its channel 0.
    fn pool_taps(&mut self, w: &PoolWindow<'ctx>, mut body: impl FnMut(&mut Self, IntValue<'ctx>)) {
        let one = self.i64(1);
        self.for_range(w.ky.0, w.ky.1, one, |ir, ky| {
            let row = ir.add(w.in_base, ir.muli(ir.add(w.y0, ky), w.row));
            ir.for_range(w.kx.0, w.kx.1, one, |ir, kx| {
                let at = ir.add(row, ir.muli(ir.add(w.x0, kx), w.c));
                body(ir, at);
            });
        });
    }

    /// Output element `i` of a pooling kernel (NHWC).
    pub fn pool_item(&mut self, p: &Pool, i: IntValue<'ctx>) -> Result<(), String> {
        let (din, dout) = (p.input.ty.dtype, p.output.ty.dtype);
        let c = Self::pool_channels(p)?;
        let w = self.pool_window(p, self.divi(i, c))?;
        let (src, dst) = (self.buffer(p.input.buffer.0), self.buffer(p.output.buffer.0));
        let ch = self.remi(i, c);
        let (ky_lo, ky_hi, kx_lo, kx_hi) = (w.ky.0, w.ky.1, w.kx.0, w.kx.1);
        let int = !din.is_float();
        let init: BasicValueEnum = match (int, p.avg) {
            (true, true) => self.i64(0).into(),
            (true, false) => self.i64(din.int_range().0).into(),
            (false, true) => self.domain(din).into_float_type().const_float(0.0).into(),
            (false, false) => self.domain(din).into_float_type().const_float(f64::NEG_INFINITY).into(),
        };
        let acc = self.var(init);
        let one = self.i64(1);
        self.pool_taps(&w, |ir, at| {
            let (v, a) = (ir.load(din, src, ir.add(at, ch)), ir.get(acc));
            let n: BasicValueEnum = match (int, p.avg) {
                (true, true) => ir.add(a.into_int_value(), ir.addi(v.into_int_value(), -p.zp.0)).into(),
                (true, false) => ir.smax(a.into_int_value(), v.into_int_value()).into(),
                (false, true) => ir.b.build_float_add(a.into_float_value(), v.into_float_value(), "").built().into(),
                (false, false) => ir.fmax(a.into_float_value(), v.into_float_value()).into(),
            };
            ir.set(acc, n);
        });
        if int {
            let mut v = self.get(acc).into_int_value();
            if p.avg {
                let count = self.smax(self.mul(self.sub(ky_hi, ky_lo), self.sub(kx_hi, kx_lo)), one);
                v = self.int_average(v, count, p.zp.1, dout);
            }
            self.store(dout, dst, i, v.into());
            return Ok(());
        }
        let t = self.domain(din).into_float_type();
        let mut v = self.get(acc).into_float_value();
        if p.avg {
            let count = self.mul(self.sub(ky_hi, ky_lo), self.sub(kx_hi, kx_lo));
            let count = self.smax(count, one);
            let cnt = self.b.build_signed_int_to_float(count, t, "").built();
            v = self.b.build_float_div(v, cnt, "").built();
        }
        let v = self.round_to(dout, v.into());
        self.store(dout, dst, i, v);
        Ok(())
    }

    /// Whether [`Ir::pool_lanes`] can pool `p`: float data whose result rounds lane by lane.
    pub fn pools_in_lanes(&self, p: &Pool) -> bool {
        Self::pools_in_lanes_by(&self.lane_rules(), p)
    }

    /// [`Ir::pools_in_lanes`] by a module's rules (what `--emit=kernels` says before any IR).
    pub fn pools_in_lanes_by(rules: &super::expr::LaneRules, p: &Pool) -> bool {
        matches!(p.input.ty.dtype, DType::F32 | DType::F16 | DType::BF16) && rules.rounds(p.output.ty.dtype) && Self::pool_channels(p).is_ok()
    }

    /// Work items of [`Ir::pool_lanes`]: an output row's channels in runs of `lanes`.
    pub fn pool_lanes_work(p: &Pool, lanes: usize) -> usize {
        let (c, ow) = (p.input.ty.shape[3], p.output.ty.shape[2]);
        p.output.ty.num_elements() / (c * ow).max(1) * c.div_ceil(lanes)
    }

    /// Item `item` of a float pooling kernel ([`Ir::pools_in_lanes`]): `lanes` channels of
    /// each pixel of one output row in f32 lanes, each lane summing (or taking the maximum) in
    /// window order and dividing as [`Ir::pool_item`] does for its channel; a pixel's last
    /// run, when the channels do not fill it, channel by channel.
    pub fn pool_lanes(&mut self, p: &Pool, item: IntValue<'ctx>, lanes: usize) -> Result<(), String> {
        let mut result = Ok(());
        let (c, ow) = (p.input.ty.shape[3], p.output.ty.shape[2]);
        let runs = c.div_ceil(lanes);
        let (row, ch0) = (self.divi(item, runs), self.muli(self.remi(item, runs), lanes));
        self.for_n(0, ow, |ir, ox| result = ir.pool_pixel_lanes(p, (row, ox), ch0, lanes));
        result
    }

    /// Channels `ch0..ch0 + lanes` of output pixel `ox` of output row `row` ([`Ir::pool_lanes`]).
    fn pool_pixel_lanes(&mut self, p: &Pool, (row, ox): (IntValue<'ctx>, IntValue<'ctx>), ch0: IntValue<'ctx>, lanes: usize) -> Result<(), String> {
        let (din, dout, c, ow) = (p.input.ty.dtype, p.output.ty.dtype, p.input.ty.shape[3], p.output.ty.shape[2]);
        let pixel = self.add(self.muli(row, ow), ox);
        let lanes_body = |ir: &mut Self| -> Result<(), String> {
            let w = ir.pool_window_at(p, row, ox)?;
            let (src, dst) = (ir.buffer(p.input.buffer.0), ir.buffer(p.output.buffer.0));
            let f32v = ir.cx.f32_type().vec_type(lanes as u32);
            let init = ir.splat(f32v, ir.f32(if p.avg { 0.0 } else { f32::NEG_INFINITY }));
            let nan = ir.splat(f32v, ir.f32(f32::NAN));
            let acc = ir.var(init.into());
            let tap = |ir: &mut Self, at: IntValue<'ctx>| {
                let v = ir.load_lanes(din, src, ir.add(at, ch0), lanes as u32);
                let a = ir.get(acc).into_vector_value();
                let n = if p.avg { ir.b.build_float_add(a, v, "").built().into() } else { ir.tosa_select_any(inkwell::FloatPredicate::OGE, a, v, nan) };
                ir.set(acc, n);
            };
            // A window inside the input (every pixel but the edges') in loops of the kernel's
            // constant size, which LLVM unrolls; the same taps in the same order.
            let zero = ir.i64(0);
            let whole = [(w.ky, p.kernel[0]), (w.kx, p.kernel[1])].into_iter().fold(ir.cx.bool_type().const_all_ones(), |all, ((lo, hi), k)| {
                let from_zero = ir.icmp(IntPredicate::EQ, lo, zero);
                ir.and(all, ir.and(from_zero, ir.icmp(IntPredicate::EQ, hi, ir.i64(k as i64))))
            });
            ir.if_else(
                whole,
                |ir| {
                    ir.for_n(0, p.kernel[0], |ir, ky| {
                        let row = ir.add(w.in_base, ir.muli(ir.add(w.y0, ky), w.row));
                        ir.for_n(0, p.kernel[1], |ir, kx| tap(ir, ir.add(row, ir.muli(ir.add(w.x0, kx), w.c))));
                    })
                },
                |ir| ir.pool_taps(&w, tap),
            );
            let mut v = ir.get(acc).into_vector_value();
            if p.avg {
                let count = ir.smax(ir.mul(ir.sub(w.ky.1, w.ky.0), ir.sub(w.kx.1, w.kx.0)), ir.i64(1));
                let count = ir.b.build_signed_int_to_float(count, ir.cx.f32_type(), "").built();
                v = ir.b.build_float_div(v, ir.splat(f32v, count), "").built();
            }
            let v = ir.round_to(dout, v.into()).into_vector_value();
            ir.store_lanes(dout, dst, ir.add(ir.muli(pixel, c), ch0), v);
            Ok(())
        };
        if c.is_multiple_of(lanes) {
            return lanes_body(self);
        }
        let full = self.icmp(IntPredicate::SLE, self.addi(ch0, lanes as i64), self.i64(c as i64));
        let (a, b) = self.if_else(full, lanes_body, |ir| {
            let mut result = Ok(());
            let first = ir.add(ir.muli(pixel, c), ch0);
            ir.for_range(first, ir.muli(ir.addi(pixel, 1), c), ir.i64(1), |ir, i| result = ir.pool_item(p, i));
            result
        });
        a.and(b)
    }

    /// `semantics::int_average` for a window sum `acc` over `count` (≥ 1) pixels, both i64.
    fn int_average(&self, acc: IntValue<'ctx>, count: IntValue<'ctx>, out_zp: i64, d: DType) -> IntValue<'ctx> {
        let i64t = self.cx.i64_type();
        let no_poison = self.cx.bool_type().const_zero();
        // reciprocal_scale: k = 64 - clz(count - 1), multiplier = ((2^30 + 1) << k) / count.
        let lz = self.intrinsic("llvm.ctlz.i64", i64t.into(), &[self.addi(count, -1).into(), no_poison.into()]).into_int_value();
        let k = self.sub(self.i64(64), lz);
        let num = self.b.build_left_shift(self.i64((1 << 30) + 1), k, "").built();
        let m = self.b.build_int_signed_div(num, count, "").built();
        // apply_scale_32: (acc · multiplier + 2^(shift − 1)) >> shift, shift = 30 + k.
        let round = self.b.build_left_shift(self.i64(1), self.addi(k, 29), "").built();
        let r = self.add(self.mul(acc, m), round);
        let r = self.b.build_right_shift(r, self.addi(k, 30), true, "").built();
        let (lo, hi) = d.int_range();
        self.smin(self.smax(self.addi(r, out_zp), self.i64(lo)), self.i64(hi))
    }

    /// The valid window offsets `[lo, hi)` of a window of `k` starting at `start` over `0..len`.
    fn clip(&self, start: IntValue<'ctx>, k: usize, len: usize) -> (IntValue<'ctx>, IntValue<'ctx>) {
        let lo = self.smax(self.sub(self.i64(0), start), self.i64(0));
        let hi = self.smin(self.sub(self.i64(len as i64), start), self.i64(k as i64));
        (lo, self.smax(hi, lo))
    }

    // -----------------------------------------------------------------------------------------
    // Data movement: bit copies, never a rounding
    // -----------------------------------------------------------------------------------------

    /// Element `i` of a copy kernel's fill (`mv`: `None`) or of its move `mv`.
    fn copy_item(&mut self, c: &CopyKernel, mv: Option<usize>, i: IntValue<'ctx>) {
        let dst = self.buffer(c.output.buffer.0);
        match mv {
            None => {
                let fill = self.buffer(c.fill.expect("a fill step has a fill value").0);
                let d = c.output.ty.dtype;
                self.copy_element((d, d), fill, self.i64(0), dst, i);
            }
            Some(m) => {
                let m = &c.moves[m];
                let src = self.buffer(m.src.0);
                let from = self.addi(self.strided_offset(i, &m.shape, &m.src_strides), m.src_offset as i64);
                let to = self.addi(self.strided_offset(i, &m.shape, &m.dst_strides), m.dst_offset as i64);
                self.copy_element((c.source, c.output.ty.dtype), src, from, dst, to);
            }
        }
    }

    /// Rows of move `m` of a copy kernel: its elements grouped along the last dimension.
    pub fn copy_rows(c: &CopyKernel, m: usize) -> usize {
        let shape = &c.moves[m].shape;
        shape[..shape.len().saturating_sub(1)].iter().product()
    }

    /// Row `r` of move `m` ([`Ir::copy_rows`]): its elements along the last dimension, the
    /// source and destination offsets computed once per row and stepped by their strides
    /// (one address computation per row instead of per element).
    pub fn copy_row(&mut self, c: &CopyKernel, m: usize, r: IntValue<'ctx>) {
        let mv = &c.moves[m];
        let outer = mv.shape.len().saturating_sub(1);
        let len = mv.shape.get(outer).copied().unwrap_or(1);
        let (src, dst) = (self.buffer(mv.src.0), self.buffer(c.output.buffer.0));
        let from = self.addi(self.strided_offset(r, &mv.shape[..outer], &mv.src_strides[..outer]), mv.src_offset as i64);
        let to = self.addi(self.strided_offset(r, &mv.shape[..outer], &mv.dst_strides[..outer]), mv.dst_offset as i64);
        let step = |s: &[isize]| s.get(outer).copied().unwrap_or(0) as i64;
        let (src_step, dst_step) = (step(&mv.src_strides), step(&mv.dst_strides));
        self.for_n(0, len, |ir, j| {
            let (f, t) = (ir.add(from, ir.mul(j, ir.i64(src_step))), ir.add(to, ir.mul(j, ir.i64(dst_step))));
            ir.copy_element((c.source, c.output.ty.dtype), src, f, dst, t);
        });
    }

    /// Side of the square tiles [`Ir::transpose_band`] transposes in registers: a row of the
    /// narrower of the copy's element types fills 16 bytes (8 f16, 4 f32).
    pub fn transpose_tile(c: &CopyKernel) -> usize {
        16 / c.source.byte_size().min(c.output.ty.dtype.byte_size()).clamp(1, 16)
    }

    /// Whether move `m` of `c` transposes its last two dimensions, both at least a tile long
    /// ([`Ir::transpose_tile`]; the source contiguous along the first, the destination along
    /// the second), with any conversion done on whole vectors: [`Ir::transpose_band`] can copy it.
    pub fn transposes_in_tiles(&self, c: &CopyKernel, m: usize) -> bool {
        Self::transposes_in_tiles_by(&self.lane_rules(), c, m)
    }

    /// [`Ir::transposes_in_tiles`] by a module's rules (what `--emit=kernels` says before any IR).
    pub fn transposes_in_tiles_by(rules: &super::expr::LaneRules, c: &CopyKernel, m: usize) -> bool {
        let (mv, l) = (&c.moves[m], Self::transpose_tile(c));
        let r = mv.shape.len();
        let float = |d: DType| matches!(d, DType::F32 | DType::F16 | DType::BF16);
        let converts = !c.converts() || float(c.source) && rules.rounds(c.output.ty.dtype);
        r >= 2 && mv.shape[r - 2] >= l && mv.shape[r - 1] >= l && mv.src_strides[r - 2] == 1 && mv.dst_strides[r - 1] == 1 && converts
    }

    /// Work items of [`Ir::transpose_band`]: bands of a tile's destination rows.
    pub fn transpose_bands(c: &CopyKernel, m: usize) -> usize {
        let shape = &c.moves[m].shape;
        let r = shape.len();
        shape[..r - 2].iter().product::<usize>() * shape[r - 2].div_ceil(Self::transpose_tile(c))
    }

    /// Band `t` of move `m` ([`Ir::transposes_in_tiles`]): a tile's destination rows, tile by
    /// tile — a tile's vectors loaded along the source's contiguous dimension, transposed with
    /// shuffles (log2 of the tile's side rounds of interleaving) and stored along the
    /// destination's; the last tile of a row overlaps the one before it. A last band shorter
    /// than a tile copies its rows one element at a time.
    pub fn transpose_band(&mut self, c: &CopyKernel, m: usize, t: IntValue<'ctx>) {
        let l = Self::transpose_tile(c);
        let mv = &c.moves[m];
        let r = mv.shape.len();
        let (a, b) = (mv.shape[r - 2], mv.shape[r - 1]);
        let bands = a.div_ceil(l);
        let (outer, band) = (self.divi(t, bands), self.remi(t, bands));
        let i0 = self.muli(band, l);
        let (src, dst) = (self.buffer(mv.src.0), self.buffer(c.output.buffer.0));
        let from = self.addi(self.strided_offset(outer, &mv.shape[..r - 2], &mv.src_strides[..r - 2]), mv.src_offset as i64);
        let to = self.addi(self.strided_offset(outer, &mv.shape[..r - 2], &mv.dst_strides[..r - 2]), mv.dst_offset as i64);
        let (from, to) = (self.add(from, i0), self.add(to, self.mul(i0, self.i64(mv.dst_strides[r - 2] as i64))));
        let (src_step, dst_step) = (mv.src_strides[r - 1] as i64, mv.dst_strides[r - 2] as i64);
        let types = (c.source, c.output.ty.dtype);
        let whole_band = |ir: &mut Self| {
            let tile = |ir: &mut Self, j0: IntValue<'ctx>| {
                let rows: Vec<VectorValue<'ctx>> = (0..l)
                    .map(|j| {
                        let at = ir.add(from, ir.mul(ir.addi(j0, j as i64), ir.i64(src_step)));
                        ir.tile_vector(types, true, ir.load_vector(ir.storage_vector(types.0, l as u32), src, at, types.0.byte_size() as u32))
                    })
                    .collect();
                for (i, row) in ir.transpose_vectors(rows).into_iter().enumerate() {
                    let v = ir.tile_vector(types, false, row);
                    let p = ir.gep(ir.storage(types.1), dst, ir.add(ir.add(to, ir.i64(i as i64 * dst_step)), j0));
                    ir.b.build_store(p, v).built().set_alignment(types.1.byte_size() as u32).expect("a power of two");
                }
            };
            ir.for_n(0, b / l, |ir, j| {
                let j0 = ir.muli(j, l);
                tile(ir, j0)
            });
            if b % l != 0 {
                tile(ir, ir.i64((b - l) as i64));
            }
        };
        if a.is_multiple_of(l) {
            return whole_band(self);
        }
        let full = self.icmp(IntPredicate::SLE, self.addi(i0, l as i64), self.i64(a as i64));
        self.if_else(full, whole_band, |ir| {
            let rows = ir.i64((a % l) as i64);
            ir.for_range(ir.i64(0), rows, ir.i64(1), |ir, i| {
                let row = ir.add(ir.muli(outer, a), ir.add(i0, i));
                ir.copy_row(c, m, row);
            });
        });
    }

    /// A vector of `n` elements of `d`'s storage type.
    fn storage_vector(&self, d: DType, n: u32) -> VectorType<'ctx> {
        match self.storage(d) {
            BasicTypeEnum::FloatType(t) => t.vec_type(n),
            BasicTypeEnum::IntType(t) => t.vec_type(n),
            t => unreachable!("elements are stored as floats or integers, not {t}"),
        }
    }

    /// A tile's vector converted where the copy converts: loaded vectors (`loaded`) when the
    /// source is the wider type, transposed ones otherwise, so that the shuffles move the
    /// narrower elements.
    fn tile_vector(&self, (from, to): (DType, DType), loaded: bool, v: VectorValue<'ctx>) -> VectorValue<'ctx> {
        if from == to || loaded != (from.byte_size() > to.byte_size()) {
            return v;
        }
        let wide = self.f32_lanes(v);
        if to == DType::F32 {
            return wide;
        }
        self.to_low_lanes(wide, to)
    }

    /// The transpose of the square matrix whose rows are `rows` (a power-of-two count, each as
    /// long): each round interleaves row `i` with row `i + n/2`, low halves into row `2i`, high
    /// halves into row `2i + 1`; log2 n rounds transpose.
    fn transpose_vectors(&self, mut rows: Vec<VectorValue<'ctx>>) -> Vec<VectorValue<'ctx>> {
        let n = rows.len();
        let i32t = self.cx.i32_type();
        let zip = |half: usize| -> Vec<_> { (0..n / 2).flat_map(|k| [k + half, k + half + n]).map(|x| i32t.const_int(x as u64, false)).collect() };
        let (lo, hi) = (VectorType::const_vector(&zip(0)), VectorType::const_vector(&zip(n / 2)));
        for _ in 0..n.trailing_zeros() {
            let mut next = Vec::with_capacity(n);
            for i in 0..n / 2 {
                let (x, y) = (rows[i], rows[i + n / 2]);
                next.push(self.b.build_shuffle_vector(x, y, lo, "").built());
                next.push(self.b.build_shuffle_vector(x, y, hi, "").built());
            }
            rows = next;
        }
        rows
    }

    /// Item `i` of `items`. A gather index out of range calls `fail` (and writes nothing); a
    /// row works in `temp` (this row's temporary, [`Ir::rows_temp_bytes`] bytes).
    pub fn item(&mut self, items: Items, i: IntValue<'ctx>, temp: PointerValue<'ctx>, fail: impl FnOnce(&mut Self)) -> Result<(), String> {
        match items {
            Items::Elementwise(e) => self.elementwise_item(e, i),
            Items::Pairs(e) => self.elementwise_pair(e, i),
            Items::Reduction(r) => self.reduction_item(r, i),
            Items::Pool(p) => self.pool_item(p, i),
            Items::Gather(g) => self.gather_item(g, i, fail),
            Items::Tiles(c) => self.contraction_tile_item(c, i),
            Items::Outputs(c) => self.contraction_item(c, i),
            Items::Rows(r) => self.rows_item(r, i, temp),
            Items::Fill(c) => {
                self.copy_item(c, None, i);
                Ok(())
            }
            Items::Move(c, m) => {
                self.copy_item(c, Some(m), i);
                Ok(())
            }
        }
    }

    /// Run `r` of a gather (no scatter): indices `r·run..(r + 1)·run` (of all `n·w`), each
    /// copying its row of `c` values. Every index of the run is range-checked first, in a loop
    /// without branches; an out-of-range one calls `fail` and the run writes nothing (as
    /// [`Ir::gather_item`] writes nothing for its element).
    pub fn gather_run(&mut self, g: &Gather, r: IntValue<'ctx>, run: usize, fail: impl FnOnce(&mut Self)) -> Result<(), String> {
        let (&[_, k, c], &[_, w]) = (g.values.ty.shape.as_slice(), g.indices.ty.shape.as_slice()) else {
            return Err("gather takes [N,K,C] values and [N,W] indices".into());
        };
        let total = g.indices.ty.num_elements();
        let (vals, out) = (self.buffer(g.values.buffer.0), self.buffer(g.output.buffer.0));
        let lo = self.muli(r, run);
        let hi = self.smin(self.addi(lo, run as i64), self.i64(total as i64));
        let one = self.i64(1);
        let bad = self.var(self.cx.bool_type().const_zero().into());
        self.for_range(lo, hi, one, |ir, p| {
            let index = ir.gather_index(g, p, None);
            ir.note_out_of_range(bad, index, k);
        });
        self.branch_on_bad(bad, fail, |ir| {
            ir.for_range(lo, hi, one, |ir, p| {
                let index = ir.gather_index(g, p, None);
                ir.gather_copy(g, (vals, out), p, index, (k, c, w));
            });
        });
        Ok(())
    }

    /// Work item `item` of a gather whose indices are summed as they are read
    /// ([`Gather::sum_run`]): its rows (or part of a row) of the sum's space, each row's parts
    /// found once, every index checked before any value is copied as [`Ir::gather_run`] does.
    pub fn gather_sum_run(&mut self, g: &Gather, item: IntValue<'ctx>, fail: impl FnOnce(&mut Self)) -> Result<(), String> {
        let (&[_, k, c], &[_, w], Some(sum), Some(r)) = (g.values.ty.shape.as_slice(), g.indices.ty.shape.as_slice(), &g.index_sum, g.sum_run()) else {
            return Err("gather takes [N,K,C] values and [N,W] indices, summed as read".into());
        };
        let (vals, out) = (self.buffer(g.values.buffer.0), self.buffer(g.output.buffer.0));
        let (rank, inner) = (sum.shape.len(), sum.inner());
        let (rb, seg) = (self.divi(item, r.segments), self.remi(item, r.segments));
        let row0 = self.muli(rb, r.rows);
        let row1 = self.smin(self.addi(row0, r.rows as i64), self.i64(sum.rows() as i64));
        let col0 = self.muli(seg, r.cols);
        let col1 = self.smin(self.addi(col0, r.cols as i64), self.i64(inner as i64));
        let one = self.i64(1);
        // Each part's first element in row `row`.
        let row_bases = |ir: &mut Self, row: IntValue<'ctx>| -> Vec<IntValue<'ctx>> { sum.parts.iter().map(|p| ir.strided_offset(row, &sum.shape[..rank - 1], &p.strides[..rank - 1])).collect() };
        let bad = self.var(self.cx.bool_type().const_zero().into());
        self.for_range(row0, row1, one, |ir, row| {
            let bases = row_bases(ir, row);
            ir.for_range(col0, col1, one, |ir, j| {
                let index = ir.gather_index(g, j, Some(&bases));
                ir.note_out_of_range(bad, index, k);
            });
        });
        self.branch_on_bad(bad, fail, |ir| {
            ir.for_range(row0, row1, one, |ir, row| {
                let bases = row_bases(ir, row);
                let first = ir.muli(row, inner);
                ir.for_range(col0, col1, one, |ir, j| {
                    let index = ir.gather_index(g, j, Some(&bases));
                    let p = ir.add(first, j);
                    ir.gather_copy(g, (vals, out), p, index, (k, c, w));
                });
            });
        });
        Ok(())
    }

    /// Index `p` of a gather's indices, widened to i64: loaded, or (summed as read) the sum of
    /// its parts wrapped to the indices' type. With `row`, `p` is a column of the sum's space
    /// and `row` each part's first element of its row.
    fn gather_index(&mut self, g: &Gather, p: IntValue<'ctx>, row: Option<&[IntValue<'ctx>]>) -> IntValue<'ctx> {
        let d = g.indices.ty.dtype;
        let Some(sum) = &g.index_sum else {
            let idx = self.buffer(g.indices.buffer.0);
            return self.load(d, idx, p).into_int_value();
        };
        let mut acc: Option<IntValue<'ctx>> = None;
        for (i, part) in sum.parts.iter().enumerate() {
            let at = match row {
                Some(bases) => self.add(bases[i], self.muli(p, part.strides[sum.shape.len() - 1])),
                None => self.strided_offset(p, &sum.shape, &part.strides),
            };
            let base = self.buffer(part.buffer.0);
            let v = self.load(d, base, at).into_int_value();
            acc = Some(match acc {
                Some(a) => self.add(a, v),
                None => v,
            });
        }
        let v = acc.expect("a sum has parts");
        if d == DType::I32 {
            let narrow = self.b.build_int_truncate(v, self.cx.i32_type(), "").built();
            self.b.build_int_s_extend(narrow, self.cx.i64_type(), "").built()
        } else {
            v
        }
    }

    /// `bad |= !(0 <= index < k)`.
    fn note_out_of_range(&mut self, bad: Var<'ctx>, index: IntValue<'ctx>, k: usize) {
        let out_of_range = self.b.build_not(self.in_range(index, k), "").built();
        let any = self.b.build_or(self.get(bad).into_int_value(), out_of_range, "").built();
        self.set(bad, any.into());
    }

    /// Calls `fail` where `bad` is set, else runs `copy`; continues after both.
    fn branch_on_bad(&mut self, bad: Var<'ctx>, fail: impl FnOnce(&mut Self), copy: impl FnOnce(&mut Self)) {
        let f = self.func();
        let (err_bb, ok_bb, join) = (self.cx.append_basic_block(f, "bad_index"), self.cx.append_basic_block(f, "indices_ok"), self.cx.append_basic_block(f, "gathered"));
        self.b.build_conditional_branch(self.get(bad).into_int_value(), err_bb, ok_bb).built();
        self.b.position_at_end(err_bb);
        fail(self);
        self.b.build_unconditional_branch(join).built();
        self.b.position_at_end(ok_bb);
        copy(self);
        self.b.build_unconditional_branch(join).built();
        self.b.position_at_end(join);
    }

    /// Copies the values' row `index` (checked) of batch `p / w` to output row `p` (`c` values).
    fn gather_copy(&mut self, g: &Gather, (vals, out): (PointerValue<'ctx>, PointerValue<'ctx>), p: IntValue<'ctx>, index: IntValue<'ctx>, (k, c, w): (usize, usize, usize)) {
        let d = g.values.ty.dtype;
        let row = self.add(self.muli(self.divi(p, w), k), index);
        if c == 1 {
            self.copy_element((d, d), vals, row, out, p);
        } else {
            let (from, to) = (self.muli(row, c), self.muli(p, c));
            self.for_range(self.i64(0), self.i64(c as i64), self.i64(1), |ir, ch| {
                let (from, to) = (ir.add(from, ch), ir.add(to, ch));
                ir.copy_element((d, d), vals, from, out, to);
            });
        }
    }

    /// Output element `i` of a gather; an out-of-range index calls `fail` (and writes nothing).
    pub fn gather_item(&mut self, g: &Gather, i: IntValue<'ctx>, fail: impl FnOnce(&mut Self)) -> Result<(), String> {
        let (&[_, k, c], &[_, _]) = (g.values.ty.shape.as_slice(), g.indices.ty.shape.as_slice()) else {
            return Err("gather takes [N,K,C] values and [N,W] indices".into());
        };
        let w = g.indices.ty.shape[1];
        let (vals, out) = (self.buffer(g.values.buffer.0), self.buffer(g.output.buffer.0));
        if let Some(input) = &g.scatter {
            let idx = self.buffer(g.indices.buffer.0);
            // Output element i of a scatter: the last w with indices[n, w] = k gives the row,
            // else values_in's element is kept. Every index of the batch is range-checked.
            let (row, ch) = (self.divi(i, c), self.remi(i, c));
            let (b, kk) = (self.divi(row, k), self.remi(row, k));
            let first = self.muli(b, w);
            let last = self.var(self.i64(-1).into());
            let bad = self.var(self.cx.bool_type().const_zero().into());
            let one = self.i64(1);
            self.for_range(self.i64(0), self.i64(w as i64), one, |ir, j| {
                let index = ir.load(g.indices.ty.dtype, idx, ir.add(first, j)).into_int_value();
                let out_of_range = ir.b.build_not(ir.in_range(index, k), "").built();
                let any = ir.b.build_or(ir.get(bad).into_int_value(), out_of_range, "").built();
                ir.set(bad, any.into());
                let hit = ir.icmp(IntPredicate::EQ, index, kk);
                let l = ir.select(hit, j, ir.get(last).into_int_value());
                ir.set(last, l);
            });
            let f = self.func();
            let (err_bb, ok_bb) = (self.cx.append_basic_block(f, "bad_index"), self.cx.append_basic_block(f, "index_ok"));
            self.b.build_conditional_branch(self.get(bad).into_int_value(), err_bb, ok_bb).built();
            self.b.position_at_end(err_bb);
            fail(self);
            let join = self.cx.append_basic_block(f, "scattered");
            self.b.build_unconditional_branch(join).built();
            self.b.position_at_end(ok_bb);
            let last = self.get(last).into_int_value();
            let found = self.icmp(IntPredicate::SGE, last, self.i64(0));
            let inp = self.buffer(input.buffer.0);
            let src = self.select(found, inp, vals).into_pointer_value();
            let from_input = self.add(self.muli(self.add(first, last), c), ch);
            let from = self.select(found, from_input, i).into_int_value();
            let d = g.values.ty.dtype;
            self.copy_element((d, d), src, from, out, i);
            self.b.build_unconditional_branch(join).built();
            self.b.position_at_end(join);
            return Ok(());
        }
        let item = self.divi(i, c);
        let ch = self.remi(i, c);
        let index = self.gather_index(g, item, None);
        let bad = self.b.build_not(self.in_range(index, k), "").built();
        let f = self.func();
        let (err_bb, ok_bb) = (self.cx.append_basic_block(f, "bad_index"), self.cx.append_basic_block(f, "index_ok"));
        self.b.build_conditional_branch(bad, err_bb, ok_bb).built();
        self.b.position_at_end(err_bb);
        fail(self);
        let join = self.cx.append_basic_block(f, "gathered");
        self.b.build_unconditional_branch(join).built();
        self.b.position_at_end(ok_bb);
        let row = self.add(self.muli(self.divi(item, w), k), index);
        let from = self.add(self.muli(row, c), ch);
        let d = g.values.ty.dtype;
        self.copy_element((d, d), vals, from, out, i);
        self.b.build_unconditional_branch(join).built();
        self.b.position_at_end(join);
        Ok(())
    }

    // -----------------------------------------------------------------------------------------
    // Contractions, one output element per work item (SIMT)
    // -----------------------------------------------------------------------------------------

    /// Output element `i` (`batch·m·n` of them) of a depthwise or transpose convolution,
    /// accumulated along its taps in the accumulator's domain in the reference's order, then
    /// [`Ir::contraction_finish`]. Matmul and conv2d use [`Ir::contraction_tile_item`].
    pub fn contraction_item(&mut self, c: &Contraction, i: IntValue<'ctx>) -> Result<(), String> {
        let (da, db) = (c.a.ty.dtype, c.b.ty.dtype);
        let (a, b) = (self.buffer(c.a.buffer.0), self.buffer(c.b.buffer.0));
        let grow = self.divi(i, c.n);
        let col = self.remi(i, c.n);
        let acc_d = c.acc;
        let acc = self.var(self.reduce_init(f16c_dialect::ReduceKind::Sum, acc_d));
        // Integers: (x − x_zp)·(w − w_zp) summed in i64 (exact), as the reference does.
        let (za, zb) = c.zp;
        let mac = |ir: &mut Self, x: BasicValueEnum<'ctx>, w: BasicValueEnum<'ctx>| {
            if !acc_d.is_float() {
                let (x, w) = (ir.addi(x.into_int_value(), -za), ir.addi(w.into_int_value(), -zb));
                let s = ir.add(ir.get(acc).into_int_value(), ir.mul(x, w));
                ir.set(acc, s.into());
                return;
            }
            let x = ir.convert(da, acc_d, x).expect("float to float");
            let w = ir.convert(db, acc_d, w).expect("float to float");
            let p = ir.b.build_float_mul(x.into_float_value(), w.into_float_value(), "").built();
            let s = ir.b.build_float_add(ir.get(acc).into_float_value(), p, "").built();
            ir.set(acc, s.into());
        };
        match &c.kind {
            // Float matmul and conv2d run as register tiles (contraction_tile_item); integer
            // ones here, one output at a time.
            ContractionKind::MatMul => {
                let bi = self.divi(grow, c.m);
                let (a0, b0) = (self.muli(grow, c.k), self.add(self.muli(bi, c.k * c.n), col));
                self.for_n(0, c.k, |ir, kk| {
                    let xv = ir.load(da, a, ir.add(a0, kk));
                    let wv = ir.load(db, b, ir.add(b0, ir.muli(kk, c.n)));
                    mac(ir, xv, wv);
                });
            }
            ContractionKind::Conv(g) => {
                // OHWI: output channel col's row of kh·kw·ic, taps in the reference's order.
                let ic = g.ic;
                self.depthwise_taps(g, grow, |ir, tap, pix| {
                    let (x0, w0) = (ir.muli(pix, ic), ir.addi(ir.muli(col, c.k), (tap * ic) as i64));
                    ir.for_n(0, ic, |ir, ci| {
                        let xv = ir.load(da, a, ir.add(x0, ci));
                        let wv = ir.load(db, b, ir.add(w0, ci));
                        mac(ir, xv, wv);
                    });
                });
            }
            ContractionKind::Depthwise(g) => {
                let mult = g.oc / g.ic.max(1);
                let ci = self.divi(col, mult);
                self.depthwise_taps(g, grow, |ir, tap, pix| {
                    let xv = ir.load(da, a, ir.add(ir.muli(pix, g.ic), ci));
                    let wv = ir.load(db, b, ir.addi(col, (tap * g.oc) as i64));
                    mac(ir, xv, wv);
                });
            }
            ContractionKind::TransposeConv(g) => {
                // Output (oy, ox) gathers the inputs (iy, ix) whose taps ky = oy − pad − iy·stride
                // fall inside the kernel.
                let (ox, oy, bi) = (self.remi(grow, g.ow), self.remi(self.divi(grow, g.ow), g.oh), self.divi(grow, g.ow * g.oh));
                let g2 = g.clone();
                self.for_n(0, g.ih, |ir, iy| {
                    let ky = ir.sub(ir.addi(oy, -(g2.pad[0] as i64)), ir.muli(iy, g2.stride[0]));
                    let g3 = g2.clone();
                    ir.if_then(ir.in_range(ky, g2.kh), |ir| {
                        ir.for_n(0, g3.iw, |ir, ix| {
                            let kx = ir.sub(ir.addi(ox, -(g3.pad[2] as i64)), ir.muli(ix, g3.stride[1]));
                            let g4 = g3.clone();
                            ir.if_then(ir.in_range(kx, g3.kw), |ir| {
                                let pix = ir.add(ir.muli(ir.add(ir.muli(bi, g4.ih), iy), g4.iw), ix);
                                let xbase = ir.muli(pix, g4.ic);
                                let wbase = ir.muli(ir.add(ir.muli(ir.add(ir.muli(col, g4.kh), ky), g4.kw), kx), g4.ic);
                                ir.for_n(0, g4.ic, |ir, ci| {
                                    let xv = ir.load(da, a, ir.add(xbase, ci));
                                    let wv = ir.load(db, b, ir.add(wbase, ci));
                                    mac(ir, xv, wv);
                                });
                            });
                        });
                    });
                });
            }
        }
        let v = self.get(acc);
        self.contraction_finish(c, v, grow, col)
    }

    /// For output pixel `p` of a depthwise convolution, `body(tap, pixel)` for each tap
    /// (`ky · kw + kx`) in the reference's order whose input pixel lies inside the image (TOSA
    /// skips the padding); `pixel` is the input pixel's index over `n · ih · iw`.
    pub fn depthwise_taps(&mut self, g: &crate::lower::ConvGeometry, p: IntValue<'ctx>, mut body: impl FnMut(&mut Self, usize, IntValue<'ctx>)) {
        let (ox, oy, bi) = (self.remi(p, g.ow), self.remi(self.divi(p, g.ow), g.oh), self.divi(p, g.ow * g.oh));
        for ky in 0..g.kh {
            let y = self.addi(self.muli(oy, g.stride[0]), (ky * g.dilation[0]) as i64 - g.pad[0] as i64);
            for kx in 0..g.kw {
                let x = self.addi(self.muli(ox, g.stride[1]), (kx * g.dilation[1]) as i64 - g.pad[2] as i64);
                let inside = self.and(self.in_range(y, g.ih), self.in_range(x, g.iw));
                self.if_then(inside, |ir| {
                    let pix = ir.add(ir.muli(ir.add(ir.muli(bi, g.ih), y), g.iw), x);
                    body(ir, ky * g.kw + kx, pix);
                });
            }
        }
    }

    /// Can a contraction run as [`Ir::contraction_tile_item`]? Matmuls and conv2d (implicit
    /// im2col); depthwise and transpose convolutions run one output per work item.
    pub fn tileable(c: &Contraction) -> bool {
        matches!(c.kind, ContractionKind::MatMul | ContractionKind::Conv(_)) && c.acc.is_float()
    }

    /// Output tile `t` of a matmul or conv2d: a `TILE × TILE` block of outputs accumulated in
    /// registers (each `k` step loads `TILE` values of A and of B for `TILE²` multiply-adds),
    /// each output summed along `k` in index order, then [`Ir::contraction_finish`]. Rows and
    /// columns past the edge compute on clamped addresses and are not stored.
    pub fn contraction_tile_item(&mut self, c: &Contraction, t: IntValue<'ctx>) -> Result<(), String> {
        let (da, db) = (c.a.ty.dtype, c.b.ty.dtype);
        let b = self.buffer(c.b.buffer.0);
        let TileAt { bi, row0, col0, rows } = self.tile_at(c, t, (TILE, TILE));
        let cols: Vec<IntValue> = (0..TILE).map(|j| self.smin(self.addi(col0, j as i64), self.i64(c.n as i64 - 1))).collect();
        let init = self.reduce_init(f16c_dialect::ReduceKind::Sum, c.acc);
        let acc: Vec<Var<'ctx>> = (0..TILE * TILE).map(|_| self.var(init)).collect();
        let a_rows = self.contraction_rows(c, &rows, bi);
        // B's rows lie `b_row` elements apart (a view's rows, else `n`).
        let b_row = c.views.b.map_or(c.n, |v| v.row);
        let b_first = self.contraction_b_row(c, bi, self.i64(0));
        let b_col_base: Vec<IntValue> = cols
            .iter()
            .map(|&col| match c.b_layout {
                crate::lower::MatrixLayout::RowMajor => self.add(b_first, col),
                crate::lower::MatrixLayout::ColMajor => self.muli(col, c.k),
            })
            .collect();
        self.contraction_k(c, |ir, step| {
            let kk = step.kk;
            let avals: Vec<(BasicValueEnum, Option<IntValue>)> = a_rows
                .iter()
                .map(|row| {
                    let (v, inside) = ir.contraction_a(c, row, &step);
                    (ir.convert(da, c.acc, v).expect("float to float"), inside)
                })
                .collect();
            let bvals: Vec<BasicValueEnum> = b_col_base
                .iter()
                .map(|&base| {
                    let at = match c.b_layout {
                        crate::lower::MatrixLayout::RowMajor => ir.add(base, ir.muli(kk, b_row)),
                        crate::lower::MatrixLayout::ColMajor => ir.add(base, kk),
                    };
                    let v = ir.load(db, b, at);
                    ir.convert(db, c.acc, v).expect("float to float")
                })
                .collect();
            for (r, (av, inside)) in avals.iter().enumerate() {
                for (j, bv) in bvals.iter().enumerate() {
                    let v = acc[r * TILE + j];
                    let p = ir.b.build_float_mul(av.into_float_value(), bv.into_float_value(), "").built();
                    let s = ir.b.build_float_add(ir.get(v).into_float_value(), p, "").built();
                    let s = ir.accumulate(*inside, s.into(), ir.get(v));
                    ir.set(v, s);
                }
            }
        });
        self.contraction_tile_finish(c, bi, row0, col0, (TILE, TILE), |ir, r, j| ir.get(acc[r * TILE + j]))
    }

    /// Where output tile `t` (of `batch × ⌈m/mr⌉ × ⌈n/nr⌉`, columns fastest) of `c` lies.
    pub fn tile_at(&self, c: &Contraction, t: IntValue<'ctx>, (mr, nr): (usize, usize)) -> TileAt<'ctx> {
        self.tile_in_order(c, t, (mr, nr), false)
    }

    /// [`Ir::tile_at`], or with `rows_fastest` the tiles of a column panel one after the
    /// other (`batch × ⌈n/nr⌉ × ⌈m/mr⌉`): each panel of B is read once, while it is in cache.
    pub fn tile_in_order(&self, c: &Contraction, t: IntValue<'ctx>, (mr, nr): (usize, usize), rows_fastest: bool) -> TileAt<'ctx> {
        let (tiles_m, tiles_n) = (c.m.div_ceil(mr), c.n.div_ceil(nr));
        let (tm, tn, rest) = if rows_fastest {
            let tm = self.remi(t, tiles_m);
            let rest = self.divi(t, tiles_m);
            (tm, self.remi(rest, tiles_n), self.divi(rest, tiles_n))
        } else {
            let tn = self.remi(t, tiles_n);
            let rest = self.divi(t, tiles_n);
            (self.remi(rest, tiles_m), tn, rest)
        };
        let bi = if rows_fastest { rest } else { self.divi(rest, tiles_m) };
        let (row0, col0) = (self.muli(tm, mr), self.muli(tn, nr));
        let rows = (0..mr).map(|r| self.smin(self.addi(row0, r as i64), self.i64(c.m as i64 - 1))).collect();
        TileAt { bi, row0, col0, rows }
    }

    /// [`Ir::contraction_finish`] for every output of the `mr × nr` tile at (`row0`, `col0`) of
    /// batch `bi` that lies inside the matrix; `value(r, j)` is its accumulator.
    pub fn contraction_tile_finish(
        &mut self,
        c: &Contraction,
        bi: IntValue<'ctx>,
        row0: IntValue<'ctx>,
        col0: IntValue<'ctx>,
        (mr, nr): (usize, usize),
        value: impl Fn(&mut Self, usize, usize) -> BasicValueEnum<'ctx>,
    ) -> Result<(), String> {
        for r in 0..mr {
            let row = self.addi(row0, r as i64);
            for j in 0..nr {
                let col = self.addi(col0, j as i64);
                let ok = self.and(self.in_range(row, c.m), self.in_range(col, c.n));
                let mut failure = Ok(());
                self.if_then(ok, |ir| {
                    let x = value(ir, r, j);
                    let grow = ir.add(ir.muli(bi, c.m), row);
                    failure = ir.contraction_finish(c, x, grow, col);
                });
                failure?;
            }
        }
        Ok(())
    }

    /// Where row `kk` of batch `bb` of a row-major B starts: in the matrix, or where its view
    /// says (a view's rows are contiguous).
    pub fn contraction_b_row(&self, c: &Contraction, bb: IntValue<'ctx>, kk: IntValue<'ctx>) -> IntValue<'ctx> {
        match c.views.b {
            Some(v) => self.view_at(v, bb, kk),
            None => self.muli(self.add(self.muli(bb, c.k), kk), c.n),
        }
    }

    /// Where row `i` of batch `b` of a matrix read or written through view `v` starts.
    pub fn view_at(&self, v: crate::lower::View, b: IntValue<'ctx>, i: IntValue<'ctx>) -> IntValue<'ctx> {
        self.addi(self.add(self.muli(b, v.batch), self.muli(i, v.row)), v.offset as i64)
    }

    /// What an A row of a matmul or conv2d needs along `k`, for tile rows `rows` (clamped to
    /// the matrix) of batch `bi`: where the row starts, or for a padded conv the row's image
    /// and top-left input pixel (implicit im2col).
    pub fn contraction_rows(&mut self, c: &Contraction, rows: &[IntValue<'ctx>], bi: IntValue<'ctx>) -> Vec<ARow<'ctx>> {
        let zero = self.i64(0);
        let (a, ty) = (self.buffer(c.a.buffer.0), self.storage(c.a.ty.dtype));
        // An address, not an index: the index arithmetic of a row and of a step would be
        // factored into one multiplication per row and step.
        let at = |ir: &Self, i: IntValue<'ctx>| ir.gep(ty, a, i);
        rows.iter()
            .map(|&row| match &c.kind {
                ContractionKind::Conv(g) => {
                    let (ox, oy, image) = (self.remi(row, g.ow), self.remi(self.divi(row, g.ow), g.oh), self.divi(row, g.ow * g.oh));
                    let y0 = self.addi(self.muli(oy, g.stride[0]), -(g.pad[0] as i64));
                    let x0 = self.addi(self.muli(ox, g.stride[1]), -(g.pad[2] as i64));
                    let start = (g.pad == [0; 4]).then(|| at(self, self.muli(self.add(self.muli(self.add(self.muli(image, g.ih), y0), g.iw), x0), g.ic)));
                    ARow { start, image, y0, x0 }
                }
                _ => {
                    let start = match c.views.a {
                        Some(v) => self.view_at(v, bi, row),
                        None => {
                            let stride = c.a_row_stride.unwrap_or(c.k);
                            self.add(self.muli(bi, c.m * stride), self.muli(row, stride))
                        }
                    };
                    ARow { start: Some(at(self, start)), image: zero, y0: zero, x0: zero }
                }
            })
            .collect()
    }

    /// `body` for each step along `k` of a matmul or conv2d, in index order. A conv without
    /// padding loops over its kernel rows (or taps), then the values of a row (a tap's input
    /// channels), so that A's offset is the row's offset plus the step: no division per step,
    /// one addition per row.
    pub fn contraction_k(&mut self, c: &Contraction, body: impl FnMut(&mut Self, KStep<'ctx>)) {
        self.contraction_k_over(c, None, body);
    }

    /// [`Ir::contraction_k`] over kernel rows `ky` only ([`Ir::contraction_runs_over`]).
    pub fn contraction_k_over(&mut self, c: &Contraction, ky: Option<(IntValue<'ctx>, IntValue<'ctx>)>, mut body: impl FnMut(&mut Self, KStep<'ctx>)) {
        if self.contraction_runs_over(c, 1, ky, |ir, step, _| body(ir, step)).is_none() {
            self.for_n(0, c.k, |ir, kk| body(ir, KStep { kk, offset: kk }));
        }
    }

    /// The kernel rows `[lo, hi)` of convolution `c`, read from its copy zero-padded once per
    /// run, that meet an input row for at least one of the tile rows `first..=last` (rows of
    /// A, in order): its input's first `zero_rows.0` and last `zero_rows.1` rows are the
    /// padding. A kernel row outside reads zeros for every row of the tile, and leaving its
    /// products out changes no bit (with finite weights, [`Contraction::padding_hazard`], a sum
    /// that starts at +0 never becomes −0, and adding ±0 leaves it as it is). All of them
    /// where the rows span two images. `None` for a matmul or a convolution without such rows.
    pub fn kernel_rows_inside(&self, c: &Contraction, zero_rows: (usize, usize), (first, last): (IntValue<'ctx>, IntValue<'ctx>)) -> Option<(IntValue<'ctx>, IntValue<'ctx>)> {
        let ContractionKind::Conv(g) = &c.kind else { return None };
        if zero_rows == (0, 0) || g.pad != [0; 4] {
            return None;
        }
        let (top, inside) = (zero_rows.0 as i64, (g.ih - zero_rows.0 - zero_rows.1) as i64);
        let (sy, dy) = (g.stride[0], g.dilation[0]);
        let oy = |r: IntValue<'ctx>| self.remi(self.divi(r, g.ow), g.oh);
        let (oy_a, oy_b) = (oy(first), oy(last));
        let same = self.icmp(IntPredicate::EQ, self.divi(first, g.ow * g.oh), self.divi(last, g.ow * g.oh));
        // ⌈max(v, 0) / dy⌉, at most kh.
        let rows_below = |v: IntValue<'ctx>| {
            let v = self.smax(v, self.i64(0));
            self.smin(self.divi(self.addi(v, dy as i64 - 1), dy), self.i64(g.kh as i64))
        };
        // Kernel row ky reads input row oy·sy + ky·dy: below `top` for every row from the last's
        // (the lowest) up, at or past `top + inside` for every row from the first's down.
        let lo = rows_below(self.sub(self.i64(top), self.muli(oy_b, sy)));
        let hi = self.smax(rows_below(self.sub(self.i64(top + inside), self.muli(oy_a, sy))), lo);
        let lo = self.select(same, lo, self.i64(0)).into_int_value();
        let hi = self.select(same, hi, self.i64(g.kh as i64)).into_int_value();
        Some((lo, hi))
    }

    /// `body(ir, step, len)` for runs of `len` ≤ `run` steps along `k` from `step`, in index
    /// order, whose A values lie next to each other (a matmul row; a kernel row's taps, or a
    /// tap's channels, of a conv without padding), for [`Ir::contraction_a_run`]. `None` where
    /// the values are not (a padded convolution): use [`Ir::contraction_k`].
    pub fn contraction_runs(&mut self, c: &Contraction, run: usize, body: impl FnMut(&mut Self, KStep<'ctx>, usize)) -> Option<()> {
        self.contraction_runs_over(c, run, None, body)
    }

    /// [`Ir::contraction_runs`], for a convolution without padding over kernel rows `ky`
    /// `[lo, hi)` only where given ([`Ir::kernel_rows_inside`]; all of them where not).
    pub fn contraction_runs_over(&mut self, c: &Contraction, run: usize, ky: Option<(IntValue<'ctx>, IntValue<'ctx>)>, mut body: impl FnMut(&mut Self, KStep<'ctx>, usize)) -> Option<()> {
        // `len`-step runs from `first` while they fit in `n`, then one shorter run.
        let runs = |ir: &mut Self, n: usize, kk0: IntValue<'ctx>, at: IntValue<'ctx>, body: &mut dyn FnMut(&mut Self, KStep<'ctx>, usize)| {
            ir.for_n(0, n / run, |ir, i| {
                let i = ir.muli(i, run);
                body(ir, KStep { kk: ir.add(kk0, i), offset: ir.add(at, i) }, run);
            });
            if !n.is_multiple_of(run) {
                let i = ir.i64((n - n % run) as i64);
                body(ir, KStep { kk: ir.add(kk0, i), offset: ir.add(at, i) }, n % run);
            }
        };
        match &c.kind {
            // Undilated along x, a kernel row's taps lie next to each other: one run of
            // kw × ic values (9 for a 3 × 3 kernel on 3 channels, not three runs of 3).
            ContractionKind::Conv(g) if g.pad == [0; 4] && g.dilation[1] == 1 => {
                let kernel_row = |ir: &mut Self, ky: IntValue<'ctx>| {
                    let at = ir.muli(ky, g.dilation[0] * g.iw * g.ic);
                    runs(ir, g.kw * g.ic, ir.muli(ky, g.kw * g.ic), at, &mut body);
                };
                match ky {
                    Some((lo, hi)) => {
                        let one = self.i64(1);
                        self.for_range(lo, hi, one, kernel_row);
                    }
                    None => self.for_n(0, g.kh, kernel_row),
                }
            }
            ContractionKind::Conv(g) if g.pad == [0; 4] => {
                let tap_at = |ir: &mut Self, tap: IntValue<'ctx>| {
                    let (ky, kx) = (ir.divi(tap, g.kw), ir.remi(tap, g.kw));
                    let at = ir.muli(ir.add(ir.muli(ky, g.dilation[0] * g.iw), ir.muli(kx, g.dilation[1])), g.ic);
                    runs(ir, g.ic, ir.muli(tap, g.ic), at, &mut body);
                };
                match ky {
                    Some((lo, hi)) => {
                        let (lo, hi, one) = (self.muli(lo, g.kw), self.muli(hi, g.kw), self.i64(1));
                        self.for_range(lo, hi, one, tap_at);
                    }
                    None => self.for_n(0, g.kh * g.kw, tap_at),
                }
            }
            ContractionKind::Conv(_) => return None,
            _ => {
                let zero = self.i64(0);
                runs(self, c.k, zero, zero, &mut body);
            }
        }
        Some(())
    }

    /// `lanes` values of A from `A[row, step.kk]` along `k`, as stored (a run of
    /// [`Ir::contraction_runs`]; lanes past the run may read past A's end, which the caller
    /// must allow).
    pub fn contraction_a_run(&mut self, c: &Contraction, row: &ARow<'ctx>, step: &KStep<'ctx>, lanes: u32) -> VectorValue<'ctx> {
        let da = c.a.ty.dtype;
        let start = row.start.expect("runs are of rows with a start");
        let ty = self.storage(da).into_float_type().vec_type(lanes);
        let v = self.load_vector(ty, start, step.offset, da.byte_size() as u32);
        // Volatile: all `lanes` in one load, which LLVM would otherwise split into the lanes
        // the run uses (a vector and a scalar load for three).
        v.as_instruction_value().expect("a load").set_volatile(true).expect("a load");
        v
    }

    /// `A[row, kk]` of a matmul or conv2d in A's domain, and, for a conv whose weight makes it
    /// matter ([`Contraction::padding_hazard`]), whether it lies inside the image: in the
    /// padding the value is 0 (the address is clamped, the value selected) and the caller must
    /// then leave its sum alone ([`Ir::accumulate`]), as TOSA skips padding rather than
    /// multiplying it: 0 × an infinite weight would be NaN.
    pub fn contraction_a(&mut self, c: &Contraction, row: &ARow<'ctx>, step: &KStep<'ctx>) -> (BasicValueEnum<'ctx>, Option<IntValue<'ctx>>) {
        let (da, a) = (c.a.ty.dtype, self.buffer(c.a.buffer.0));
        let (ContractionKind::Conv(g), None) = (&c.kind, row.start) else {
            // A matmul, or a conv without padding: every tap is inside the image (the
            // verifier checked the output size).
            let start = row.start.expect("rows without a start are a padded conv's");
            return (self.load(da, start, step.offset), None);
        };
        let kk = step.kk;
        let ci = self.remi(kk, g.ic);
        let kx = self.remi(self.divi(kk, g.ic), g.kw);
        let ky = self.divi(kk, g.ic * g.kw);
        let y = self.add(row.y0, self.muli(ky, g.dilation[0]));
        let x = self.add(row.x0, self.muli(kx, g.dilation[1]));
        let ok = self.and(self.in_range(y, g.ih), self.in_range(x, g.iw));
        let pix = self.add(self.muli(self.add(self.muli(row.image, g.ih), y), g.iw), x);
        let at = self.add(self.muli(pix, g.ic), ci);
        let safe = self.select(ok, at, self.i64(0)).into_int_value();
        let v = self.load(da, a, safe);
        let zero = v.get_type().into_float_type().const_zero();
        (self.select(ok, v, zero.into()), c.padding_hazard.then_some(ok))
    }

    /// `sum` where `inside` holds (or there is no padding), else `previous`: a sum that a tap in
    /// the padding leaves as it was. Scalars or vectors.
    pub fn accumulate(&self, inside: Option<IntValue<'ctx>>, sum: BasicValueEnum<'ctx>, previous: BasicValueEnum<'ctx>) -> BasicValueEnum<'ctx> {
        match inside {
            Some(ok) => self.select(ok, sum, previous),
            None => sum,
        }
    }

    /// Bias add (in the accumulator's domain), the one rounding to the contraction's type, the
    /// fused epilogue and the store, for the output at global row `grow` (over all batches) and
    /// column `col`. Shared by every contraction strategy (SIMT, tensor cores).
    pub fn contraction_finish(&mut self, c: &Contraction, acc: BasicValueEnum<'ctx>, grow: IntValue<'ctx>, col: IntValue<'ctx>) -> Result<(), String> {
        self.finish_at(c, acc, grow, col, None, None)
    }

    /// Can [`Ir::contraction_finish_lanes`] finish `c`? f32 or f16 accumulators and results
    /// (bf16 where the machine rounds it natively), a float bias, epilogue inputs that are
    /// float and contiguous or constant along the columns, and epilogue ops that
    /// [`Ir::ew_in_lanes`] computes on vectors.
    pub fn contraction_finishes_in_lanes(&self, c: &Contraction) -> bool {
        let stored = |d: DType| matches!(d, DType::F32 | DType::F16 | DType::BF16);
        let epilogue_ok = c.epilogue.as_ref().is_none_or(|e| {
            e.inputs.iter().all(|i| stored(i.dtype) && i.col_stride <= 1) && e.expr.ops.iter().all(|op| self.ew_in_lanes(op, &e.expr.arg_types(op)))
        });
        matches!(c.acc, DType::F32 | DType::F16) && self.rounds_lanes(c.result) && self.rounds_lanes(c.out.ty.dtype) && c.bias.as_ref().is_none_or(|b| stored(b.ty.dtype)) && epilogue_ok
    }

    /// [`Ir::contraction_finish`] for the outputs at columns `col ..` of global row `grow`, one
    /// per lane of `acc` (the accumulators in f32), every one inside the matrix: each lane
    /// computes and stores exactly what the scalar finish does for its column. Only for a
    /// contraction of [`Ir::contraction_finishes_in_lanes`].
    pub fn contraction_finish_lanes(&mut self, c: &Contraction, acc: VectorValue<'ctx>, grow: IntValue<'ctx>, col: IntValue<'ctx>) -> Result<(), String> {
        self.finish_at(c, acc.into(), grow, col, Some(acc.get_type().get_size()), None)
    }

    /// [`Ir::contraction_finish_lanes`] of the first `count` lanes only (a vector that the
    /// matrix's last column ends in): their inputs read and their results stored under a
    /// mask, the other lanes' elements untouched.
    pub fn contraction_finish_first_lanes(&mut self, c: &Contraction, acc: VectorValue<'ctx>, grow: IntValue<'ctx>, col: IntValue<'ctx>, count: IntValue<'ctx>) -> Result<(), String> {
        let n = acc.get_type().get_size();
        let mask = self.first_lanes(n, count);
        self.finish_at(c, acc.into(), grow, col, Some(n), Some(mask))
    }

    /// The finish of one output (`lanes`: `None`) or of `lanes` consecutive columns.
    /// `mask`: the lanes to read inputs for and store (all, for `None`).
    fn finish_at(&mut self, c: &Contraction, acc: BasicValueEnum<'ctx>, grow: IntValue<'ctx>, col: IntValue<'ctx>, lanes: Option<u32>, mask: Option<VectorValue<'ctx>>) -> Result<(), String> {
        let mut x = acc;
        if let Some(bias) = &c.bias {
            let base = self.buffer(bias.buffer.0);
            let per_column = bias.ty.num_elements() != 1;
            let at = if per_column { col } else { self.i64(0) };
            let bv = self.operand(bias.ty.dtype, base, at, lanes, per_column, mask);
            let bv = self.convert(bias.ty.dtype, c.acc, bv)?;
            x = match (x, bv) {
                (BasicValueEnum::VectorValue(a), BasicValueEnum::VectorValue(b)) => self.b.build_float_add(a, b, "").built().into(),
                (BasicValueEnum::FloatValue(a), BasicValueEnum::FloatValue(b)) => self.b.build_float_add(a, b, "").built().into(),
                (a, b) => self.add(a.into_int_value(), b.into_int_value()).into(),
            };
        }
        let x = self.convert(c.acc, c.result, x)?;
        let mut v = self.round_to(c.result, x);
        if let Some(Epilogue { expr, inputs, rows_shape }) = &c.epilogue {
            let mut args = vec![v];
            for input in inputs {
                let row_off = self.strided_offset(grow, rows_shape, &input.row_strides);
                let at = self.add(row_off, self.muli(col, input.col_stride));
                let base = self.buffer(input.buffer.0);
                args.push(self.operand(input.dtype, base, at, lanes, input.col_stride != 0, mask));
            }
            v = self.eval(expr, args)?;
        }
        let out = self.buffer(c.out.buffer.0);
        let at = match c.views.out {
            Some(view) => {
                let (bi, row) = (self.divi(grow, c.m), self.remi(grow, c.m));
                self.add(self.view_at(view, bi, row), col)
            }
            None => self.add(self.muli(grow, c.n), col),
        };
        match (v, mask) {
            (BasicValueEnum::VectorValue(v), Some(mask)) => self.store_lanes_masked(c.out.ty.dtype, out, at, v, mask),
            (BasicValueEnum::VectorValue(v), None) => self.store_lanes(c.out.ty.dtype, out, at, v),
            _ => self.store(c.out.ty.dtype, out, at, v),
        }
        Ok(())
    }

    /// Element `at` of a `d` buffer in its domain: one value (`lanes`: `None`), `lanes`
    /// consecutive ones (`per_lane`), or one value in every lane.
    fn operand(&mut self, d: DType, base: PointerValue<'ctx>, at: IntValue<'ctx>, lanes: Option<u32>, per_lane: bool, mask: Option<VectorValue<'ctx>>) -> BasicValueEnum<'ctx> {
        match lanes {
            Some(_) if per_lane && mask.is_some() => self.load_lanes_masked(d, base, at, mask.expect("checked")).into(),
            Some(n) if per_lane => self.load_lanes(d, base, at, n).into(),
            Some(n) => {
                let one = self.load(d, base, at).into_float_value();
                self.splat(self.cx.f32_type().vec_type(n), one).into()
            }
            None => self.load(d, base, at),
        }
    }

    /// `in_lanes` where `inside` holds (always, for `None`) and `edge` elsewhere, for a
    /// contraction whose finish runs in lanes; `edge` everywhere for one whose does not.
    pub fn finish_in_lanes_inside(
        &mut self,
        c: &Contraction,
        inside: Option<IntValue<'ctx>>,
        in_lanes: impl FnOnce(&mut Self) -> Result<(), String>,
        edge: impl FnOnce(&mut Self) -> Result<(), String>,
    ) -> Result<(), String> {
        if !self.contraction_finishes_in_lanes(c) {
            return edge(self);
        }
        match inside {
            None => in_lanes(self),
            Some(cond) => {
                let (a, b) = self.if_else(cond, in_lanes, edge);
                a.and(b)
            }
        }
    }

    // -----------------------------------------------------------------------------------------
    // Row regions (softmax, layer norm): one row per work item, stages in order
    // -----------------------------------------------------------------------------------------

    /// Bytes of per-row temporary a rows kernel needs (its full intermediate values, in their
    /// compute type).
    pub fn rows_temp_bytes(r: &Rows) -> usize {
        rows_slots(r).iter().flatten().map(|&(off, t)| off + (r.len * t.byte_size()).next_multiple_of(16)).max().unwrap_or(0)
    }

    /// Row `row` of a rows kernel, computed by one thread (reductions in index order); `temp`
    /// is this row's temporary ([`Ir::rows_temp_bytes`]).
    pub fn rows_item(&mut self, r: &Rows, row: IntValue<'ctx>, temp: PointerValue<'ctx>) -> Result<(), String> {
        let (zero, one) = (self.i64(0), self.i64(1));
        let mut reduce = |ir: &mut Self, kind: ReduceKind, d: DType, load: &dyn Fn(&mut Self, IntValue<'ctx>) -> BasicValueEnum<'ctx>| {
            if extremum_in_chains(kind, d, r.len) {
                ir.reduce_extremum(kind, d, r.len, load)
            } else {
                ir.reduce_sequential(kind, d, r.len, load)
            }
        };
        self.rows_with(r, row, temp, RowShare { start: zero, step: one, reduce: &mut reduce, vectors: None })
    }

    /// Bytes of scratch [`Ir::rows_group`] needs: a row's temporary per row of the group, each
    /// 64-byte aligned.
    pub fn rows_group_temp_bytes(r: &Rows) -> usize {
        row_group(r) * Ir::rows_temp_bytes(r).next_multiple_of(64)
    }

    /// Work items of [`Ir::rows_group`] for `r`.
    pub fn rows_groups(r: &Rows) -> usize {
        r.rows.div_ceil(row_group(r))
    }

    /// Rows `n·g ..` of a rows kernel, `n` ([`row_group`]) at a time in one thread: each row's
    /// elementwise stages as [`Ir::rows_item`] runs them, and the rows' reductions in one loop,
    /// each row's in index order (its own chain: the same bits), so that the rows' chains
    /// overlap instead of waiting on one add (or compare) per element. A group past the last
    /// row repeats the last row, which writes the same values again. `scratch`:
    /// [`Ir::rows_group_temp_bytes`]. Where `vectors` says, runs of elementwise stages go
    /// several elements at a time and sums side by side.
    pub fn rows_group(&mut self, r: &Rows, g: IntValue<'ctx>, scratch: PointerValue<'ctx>, vectors: &RowVectors) -> Result<(), String> {
        let group = row_group(r);
        let first = self.muli(g, group);
        let last = self.i64(r.rows as i64 - 1);
        let rows: Vec<IntValue<'ctx>> = (0..group).map(|q| self.smin(self.addi(first, q as i64), last)).collect();
        let stride = Ir::rows_temp_bytes(r).next_multiple_of(64);
        let temps: Vec<PointerValue<'ctx>> = (0..group).map(|q| self.byte_offset(scratch, self.i64((q * stride) as i64))).collect();
        let (zero, one) = (self.i64(0), self.i64(1));
        let mut unused = |ir: &mut Self, kind: ReduceKind, d: DType, load: &dyn Fn(&mut Self, IntValue<'ctx>) -> BasicValueEnum<'ctx>| ir.reduce_sequential(kind, d, r.len, load);
        self.rows_many(r, &rows, &temps, RowShare { start: zero, step: one, reduce: &mut unused, vectors: Some(vectors) })
    }

    /// A float maximum or minimum of `len` elements `load(j)`, bit for bit what
    /// [`Ir::reduce_sequential`] gives, in [`EXTREMUM_CHAINS`] independent chains (element `j`
    /// into chain `j % EXTREMUM_CHAINS`) combined at the end: the sequential chain waits on a
    /// compare and two selects per element, which was half of a softmax row's time. Any NaN
    /// gives the canonical NaN either way, and a non-zero extremum has one bit pattern; only
    /// for a zero extremum does the order decide (the first of +0 and -0 wins), so then the
    /// row is scanned again in order.
    pub fn reduce_extremum(&mut self, kind: ReduceKind, d: DType, len: usize, load: &dyn Fn(&mut Self, IntValue<'ctx>) -> BasicValueEnum<'ctx>) -> BasicValueEnum<'ctx> {
        let chains: Vec<Var<'ctx>> = (0..EXTREMUM_CHAINS).map(|_| self.var(self.reduce_init(kind, d))).collect();
        let blocks = len / EXTREMUM_CHAINS;
        self.for_range(self.i64(0), self.i64(blocks as i64), self.i64(1), |ir, b| {
            let first = ir.muli(b, EXTREMUM_CHAINS);
            for (u, &chain) in chains.iter().enumerate() {
                let x = load(ir, ir.addi(first, u as i64));
                let next = ir.reduce_step(kind, ir.get(chain), x);
                ir.set(chain, next);
            }
        });
        for j in blocks * EXTREMUM_CHAINS..len {
            let chain = chains[j % EXTREMUM_CHAINS];
            let x = load(self, self.i64(j as i64));
            let next = self.reduce_step(kind, self.get(chain), x);
            self.set(chain, next);
        }
        let mut r = self.get(chains[0]);
        for &chain in &chains[1..] {
            r = self.reduce_step(kind, r, self.get(chain));
        }
        let result = self.var(r);
        let rf = r.into_float_value();
        let zero = self.b.build_float_compare(inkwell::FloatPredicate::OEQ, rf, rf.get_type().const_float(0.0), "").built();
        self.if_then(zero, |ir| {
            let s = ir.reduce_sequential(kind, d, len, load);
            ir.set(result, s);
        });
        self.get(result)
    }

    /// [`Ir::reduce_extremum`] of `len` contiguous values of `t` (f32, f16, bf16: widened
    /// exactly) at element `at` of `base`, in
    /// [`EXTREMUM_VECTORS`] vector chains of [`EXTREMUM_LANES`] lanes (element `j` of each
    /// block of [`EXTREMUM_BLOCK`] into lane `j % EXTREMUM_LANES` of chain `j / EXTREMUM_LANES`),
    /// the rest of the row and then every lane folded into one scalar chain: the same value
    /// for the same reasons (a NaN stays in its lane, a non-zero extremum has one bit pattern,
    /// a zero one is found again in order), at a sixteenth of the compares and selects. With
    /// `masked` ([`RowVectors::masked_tails`]) the rest of the row goes into the chains too,
    /// whole vectors and one under a mask, and the chains fold in vectors
    /// ([`Ir::fold_extremum_lanes`]).
    pub fn reduce_extremum_lanes(
        &mut self,
        kind: ReduceKind,
        len: usize,
        (base, at, t): (PointerValue<'ctx>, IntValue<'ctx>, DType),
        load: &dyn Fn(&mut Self, IntValue<'ctx>) -> BasicValueEnum<'ctx>,
        masked: bool,
    ) -> BasicValueEnum<'ctx> {
        let pred = if kind == ReduceKind::Max { inkwell::FloatPredicate::OGE } else { inkwell::FloatPredicate::OLE };
        let vty = self.cx.f32_type().vec_type(EXTREMUM_LANES as u32);
        let init = self.reduce_init(kind, DType::F32).into_float_value();
        let nan = self.splat(vty, self.cx.f32_type().const_float(f64::NAN));
        let chains: Vec<Var<'ctx>> = (0..EXTREMUM_VECTORS).map(|_| self.var(self.splat(vty, init).into())).collect();
        let blocks = len / EXTREMUM_BLOCK;
        self.for_range(self.i64(0), self.i64(blocks as i64), self.i64(1), |ir, b| {
            let first = ir.muli(b, EXTREMUM_BLOCK);
            for (u, &chain) in chains.iter().enumerate() {
                let x = ir.load_lanes(t, base, ir.add(at, ir.addi(first, (u * EXTREMUM_LANES) as i64)), EXTREMUM_LANES as u32);
                let next = ir.tosa_select_any(pred, ir.get(chain).into_vector_value(), x, nan);
                ir.set(chain, next);
            }
        });
        let r = if masked {
            // The rest: whole vectors, then the last elements under a mask (the others ±∞).
            let starts = (blocks * EXTREMUM_BLOCK..len).step_by(EXTREMUM_LANES);
            for (u, j) in starts.enumerate() {
                let chain = chains[u % EXTREMUM_VECTORS];
                let at_j = self.add(at, self.i64(j as i64));
                let x = if j + EXTREMUM_LANES <= len {
                    self.load_lanes(t, base, at_j, EXTREMUM_LANES as u32)
                } else {
                    let mask = self.first_lanes(EXTREMUM_LANES as u32, self.i64((len - j) as i64));
                    let x = self.load_lanes_masked(t, base, at_j, mask);
                    self.b.build_select(mask, x, self.splat(vty, init), "").built().into_vector_value()
                };
                let next = self.tosa_select_any(pred, self.get(chain).into_vector_value(), x, nan);
                self.set(chain, next);
            }
            let vectors: Vec<VectorValue<'ctx>> = chains.iter().map(|&c| self.get(c).into_vector_value()).collect();
            self.fold_extremum_lanes(kind, vectors)
        } else {
            let mut r: BasicValueEnum<'ctx> = init.into();
            for j in blocks * EXTREMUM_BLOCK..len {
                let x = load(self, self.i64(j as i64));
                r = self.reduce_step(kind, r, x);
            }
            for &chain in &chains {
                let v = self.get(chain).into_vector_value();
                for lane in 0..EXTREMUM_LANES {
                    let x = self.b.build_extract_element(v, self.i64(lane as i64), "").built();
                    r = self.reduce_step(kind, r, x);
                }
            }
            r
        };
        let result = self.var(r);
        let rf = r.into_float_value();
        let zero = self.b.build_float_compare(inkwell::FloatPredicate::OEQ, rf, rf.get_type().const_float(0.0), "").built();
        self.if_then(zero, |ir| {
            let s = ir.reduce_sequential(kind, DType::F32, len, load);
            ir.set(result, s);
        });
        self.get(result)
    }

    /// The maximum or minimum of the lanes of `vectors` (as [`Ir::reduce_step`] finds it): the
    /// vectors pairwise, then the lanes of the one left, half against half until one lane.
    fn fold_extremum_lanes(&mut self, kind: ReduceKind, mut vectors: Vec<VectorValue<'ctx>>) -> BasicValueEnum<'ctx> {
        while vectors.len() > 1 {
            let pairs: Vec<VectorValue<'ctx>> = vectors.chunks(2).map(|p| if let [a, b] = p { self.reduce_step(kind, (*a).into(), (*b).into()).into_vector_value() } else { p[0] }).collect();
            vectors = pairs;
        }
        let mut v = vectors[0];
        let i32t = self.cx.i32_type();
        while v.get_type().get_size() > 1 {
            let half = v.get_type().get_size() / 2;
            let lanes = |from: u32| VectorType::const_vector(&(from..from + half).map(|x| i32t.const_int(u64::from(x), false)).collect::<Vec<_>>());
            let low = self.b.build_shuffle_vector(v, v, lanes(0), "").built();
            let high = self.b.build_shuffle_vector(v, v, lanes(half), "").built();
            v = self.reduce_step(kind, low.into(), high.into()).into_vector_value();
        }
        self.b.build_extract_element(v, self.i64(0), "").built()
    }

    /// A reduction of each of a group's rows, `len` contiguous values of the type each place
    /// says (base, first element, stored type), in the domain of `d`: maxima and minima in
    /// chains of their own per row ([`Ir::reduce_extremum_lanes`], [`Ir::reduce_extremum`]: a
    /// maximum's chain waits on a compare and two selects), sums side by side in vectors of
    /// `side` lanes where the plan says so ([`Ir::sums_side_by_side`]), else the rows' chains
    /// interleaved in one loop, each row's in index order. `masked`: [`RowVectors::masked_tails`].
    fn rows_reduce_group(&mut self, kind: ReduceKind, d: DType, places: &[(PointerValue<'ctx>, IntValue<'ctx>, DType)], len: usize, side: Option<usize>, masked: bool) -> Vec<BasicValueEnum<'ctx>> {
        if extremum_in_chains(kind, d, len) {
            return places
                .iter()
                .map(|&(base, at0, t)| {
                    let load = move |ir: &mut Self, j: IntValue<'ctx>| ir.load(t, base, ir.add(at0, j));
                    if t == d && extremum_in_lanes(kind, d, len) {
                        self.reduce_extremum_lanes(kind, len, (base, at0, t), &load, masked)
                    } else {
                        self.reduce_extremum(kind, d, len, &load)
                    }
                })
                .collect();
        }
        if let Some(lanes) = side {
            let rows: Vec<(PointerValue<'ctx>, IntValue<'ctx>)> = places.iter().map(|&(base, at, _)| (base, at)).collect();
            return self.sums_side_by_side(d, &rows, len, lanes, masked);
        }
        let accs: Vec<Var<'ctx>> = places.iter().map(|_| self.var(self.reduce_init(kind, d))).collect();
        self.for_n(0, len, |ir, j| {
            for (&(base, at0, t), &acc) in places.iter().zip(&accs) {
                let x = ir.load(t, base, ir.add(at0, j));
                let next = ir.reduce_step(kind, ir.get(acc), x);
                ir.set(acc, next);
            }
        });
        accs.iter().map(|&acc| self.get(acc)).collect()
    }

    /// The sums of `len` contiguous values of `d` (f32, or f64 on half as many lanes) at each
    /// of `rows` (base, first element), each in index order from +0 ([`RowVectors::sums`]):
    /// blocks of `n` elements of every row (`n` the lanes of `d` in a vector of the machine's
    /// `lanes` f32; rows past the last: poison lanes, never read) transposed in registers, so
    /// that column `i` holds each row's element `i` of the block in the row's lane and one
    /// vector add per column steps every row's chain, `n` rows to a vector (the vectors' chains
    /// side by side in one loop); the last `len % n` elements row by row, or with `masked` as
    /// one more block under a mask (its other columns +0, which leave a sum from +0 as it is:
    /// such a sum is never -0).
    fn sums_side_by_side(&mut self, d: DType, rows: &[(PointerValue<'ctx>, IntValue<'ctx>)], len: usize, lanes: usize, masked: bool) -> Vec<BasicValueEnum<'ctx>> {
        let (ft, n) = if d == DType::F64 { (self.cx.f64_type(), lanes / 2) } else { (self.cx.f32_type(), lanes) };
        let bytes = d.byte_size() as u32;
        let vty = ft.vec_type(n as u32);
        let groups: Vec<&[(PointerValue<'ctx>, IntValue<'ctx>)]> = rows.chunks(n).collect();
        let accs: Vec<Var<'ctx>> = groups.iter().map(|_| self.var(vty.const_zero().into())).collect();
        let blocks = len / n;
        let add_block = |ir: &mut Self, j0: IntValue<'ctx>, mask: Option<VectorValue<'ctx>>| {
            for (group, &acc) in groups.iter().zip(&accs) {
                let block: Vec<VectorValue<'ctx>> = (0..n)
                    .map(|q| match (group.get(q), mask) {
                        (Some(&(base, at)), None) => ir.load_vector(vty, base, ir.add(at, j0), bytes),
                        (Some(&(base, at)), Some(mask)) => ir.load_vector_masked(vty, base, ir.add(at, j0), bytes, mask),
                        (None, _) => vty.get_poison(),
                    })
                    .collect();
                let mut sum = ir.get(acc).into_vector_value();
                for column in ir.transpose_vectors(block) {
                    sum = ir.b.build_float_add(sum, column, "").built();
                }
                ir.set(acc, sum.into());
            }
        };
        self.for_range(self.i64(0), self.i64(blocks as i64), self.i64(1), |ir, b| {
            let j0 = ir.muli(b, n);
            add_block(ir, j0, None);
        });
        let mut from = blocks * n;
        if masked && from < len {
            let mask = self.first_lanes(n as u32, self.i64((len - from) as i64));
            add_block(self, self.i64(from as i64), Some(mask));
            from = len;
        }
        let totals: Vec<VectorValue<'ctx>> = accs.iter().map(|&a| self.get(a).into_vector_value()).collect();
        let sums: Vec<Var<'ctx>> = (0..rows.len()).map(|q| self.var(self.b.build_extract_element(totals[q / n], self.i64((q % n) as i64), "").built())).collect();
        self.for_n(from, len, |ir, j| {
            for (&(base, at), &a) in rows.iter().zip(&sums) {
                let x = ir.load(d, base, ir.add(at, j)).into_float_value();
                let next = ir.b.build_float_add(ir.get(a).into_float_value(), x, "").built();
                ir.set(a, next.into());
            }
        });
        sums.iter().map(|&a| self.get(a)).collect()
    }

    /// `len` elements `load(j)` reduced in index order (the reference's), in the domain of `d`.
    pub fn reduce_sequential(&mut self, kind: ReduceKind, d: DType, len: usize, load: &dyn Fn(&mut Self, IntValue<'ctx>) -> BasicValueEnum<'ctx>) -> BasicValueEnum<'ctx> {
        let acc = self.var(self.reduce_init(kind, d));
        self.for_n(0, len, |ir, j| {
            let x = load(ir, j);
            let next = ir.reduce_step(kind, ir.get(acc), x);
            ir.set(acc, next);
        });
        self.get(acc)
    }

    /// Row `row` of a rows kernel, computed by the threads sharing it as `share` says: each
    /// computes the full elementwise stages at `start, start + step, ...` and the scalar stages
    /// redundantly; reductions go through `share.reduce`.
    pub fn rows_with(&mut self, r: &Rows, row: IntValue<'ctx>, temp: PointerValue<'ctx>, share: RowShare<'_, 'ctx>) -> Result<(), String> {
        self.rows_many(r, &[row], &[temp], share)
    }

    /// [`Ir::rows_with`] for the rows `rows` (each with its temporary in `temps`): one row goes
    /// through `share`; several are computed by this thread, their reductions interleaved in
    /// one loop, each row's in index order.
    fn rows_many(&mut self, r: &Rows, rows: &[IntValue<'ctx>], temps: &[PointerValue<'ctx>], share: RowShare<'_, 'ctx>) -> Result<(), String> {
        let n_in = r.inputs.len();
        let last = n_in + r.stages.len() - 1;
        let dtypes: Vec<DType> = (0..=last).map(|v| if v < n_in { r.inputs[v].dtype } else { r.dtypes[v - n_in] }).collect();
        let slots = rows_slots(r);
        let bases: Vec<PointerValue> = r.inputs.iter().map(|i| self.buffer(i.buffer.0)).collect();
        let out = self.buffer(r.output.0);
        let len = r.len;
        let row_ats: Vec<IntValue<'ctx>> = rows.iter().map(|&row| self.muli(row, len)).collect();
        // Where full value `v` of row `q` lives: (base, first index, element type as stored).
        let place = |ir: &mut Self, q: usize, v: RowValue| -> (PointerValue<'ctx>, IntValue<'ctx>, DType) {
            if v == last {
                (out, row_ats[q], dtypes[v])
            } else if v < n_in {
                (bases[v], if r.inputs[v].per_row { row_ats[q] } else { ir.i64(0) }, dtypes[v])
            } else {
                let (off, t) = slots[v].expect("full values have a slot");
                (ir.byte_offset(temps[q], ir.i64(off as i64)), ir.i64(0), t)
            }
        };
        let mut scalars: Vec<Vec<Option<BasicValueEnum>>> = vec![vec![None; last + 1]; rows.len()];
        for (q, &row) in rows.iter().enumerate() {
            for (k, input) in r.inputs.iter().enumerate().filter(|(_, i)| !i.full) {
                let at = if input.per_row { row } else { self.i64(0) };
                scalars[q][k] = Some(self.load(input.dtype, bases[k], at));
            }
        }
        // A run of elementwise stages (up to the next reduction) is one loop over the row: its
        // scalar stages first (they read scalars only), then every full stage element by
        // element, a value going to memory only where a later reduction or stage reads it, or
        // it is the result.
        let mut si = 0;
        while si < r.stages.len() {
            let v = n_in + si;
            let stage = &r.stages[si];
            match stage {
                RowStage::Reduce { kind, arg, dtype } if rows.len() == 1 => {
                    let (base, at0, t) = place(self, 0, *arg);
                    let load = move |ir: &mut Self, j: IntValue<'ctx>| ir.load(t, base, ir.add(at0, j));
                    let a = (share.reduce)(self, *kind, dtypes[*arg], &load);
                    scalars[0][v] = Some(self.round_to(*dtype, a));
                }
                RowStage::Reduce { kind, arg, dtype } => {
                    let places: Vec<(PointerValue<'ctx>, IntValue<'ctx>, DType)> = (0..rows.len()).map(|q| place(self, q, *arg)).collect();
                    let side = share.vectors.filter(|vs| vs.sums.contains(&si)).map(|vs| vs.lanes);
                    let masked = share.vectors.is_some_and(|vs| vs.masked_tails);
                    for (q, a) in self.rows_reduce_group(*kind, dtypes[*arg], &places, len, side, masked).into_iter().enumerate() {
                        scalars[q][v] = Some(self.round_to(*dtype, a));
                    }
                }
                RowStage::Map { .. } => {
                    let run_end = r.run_end(si);
                    let read_after = |x: RowValue| read_after_its_run(r, x);
                    let in_register = |x: RowValue| dtypes[x].is_float();
                    let mut fulls: Vec<(RowValue, &crate::lower::EwOp)> = Vec::new();
                    for (e, st) in r.stages.iter().enumerate().take(run_end).skip(si) {
                        let RowStage::Map { op, full } = st else { unreachable!("the run ends at a reduction") };
                        if *full {
                            fulls.push((n_in + e, op));
                            continue;
                        }
                        let types: Vec<DType> = op.args.iter().map(|&a| dtypes[a]).collect();
                        for row_scalars in scalars.iter_mut() {
                            let args: Vec<BasicValueEnum> = op.args.iter().map(|&a| row_scalars[a].expect("scalar arguments come first")).collect();
                            row_scalars[n_in + e] = Some(self.ew_of(op, &args, &types, r.holds_half(op.args[0]))?);
                        }
                    }
                    let in_memory = |a: RowValue| if a < n_in { r.inputs[a].full } else { a < n_in + si && matches!(r.stages[a - n_in], RowStage::Map { full: true, .. }) };
                    let lanes = share.vectors.map_or(1, |vs| vs.lanes);
                    let whole = if share.vectors.is_some_and(|vs| vs.runs.contains(&si)) { len / lanes * lanes } else { 0 };
                    // Element `j` of every full stage of the run for row `q`, or with `vector`
                    // the `lanes` elements from `j`, each lane what the scalar code computes.
                    let step = |ir: &mut Self, q: usize, j: IntValue<'ctx>, width: Width<'ctx>| -> Result<(), String> {
                            let row_scalars = &scalars[q];
                            let vector = width != Width::One;
                            let vty = ir.cx.f32_type().vec_type(lanes as u32);
                            let mut here: Vec<Option<BasicValueEnum<'ctx>>> = vec![None; last + 1];
                            for &(fv, op) in &fulls {
                                let types: Vec<DType> = op.args.iter().map(|&a| dtypes[a]).collect();
                                let select = vector && op.kind == EwKind::Select;
                                let mut args = Vec::with_capacity(op.args.len());
                                for (n, &a) in op.args.iter().enumerate() {
                                    args.push(match (here[a], in_memory(a)) {
                                        (Some(x), _) => x,
                                        (None, true) => {
                                            let (base, at0, t) = place(ir, q, a);
                                            ir.load_width(t, base, ir.add(at0, j), lanes, width)
                                        }
                                        // (A select's condition stays the row's scalar.)
                                        (None, false) if !vector || select && n == 0 => row_scalars[a].expect("a scalar argument"),
                                        (None, false) => ir.splat(vty, row_scalars[a].expect("a scalar argument").into_float_value()).into(),
                                    });
                                }
                                let y = if select { ir.select(args[0].into_int_value(), args[1], args[2]) } else { ir.ew_of(op, &args, &types, r.holds_half(op.args[0]))? };
                                if !vector && !in_register(fv) {
                                    // Through memory, as stored and read back.
                                    let (obase, oat, ot) = place(ir, q, fv);
                                    ir.store(ot, obase, ir.add(oat, j), y);
                                    here[fv] = Some(ir.load(ot, obase, ir.add(oat, j)));
                                    continue;
                                }
                                if !vector && y.get_type() != ir.storage(if dtypes[fv] == DType::F64 { DType::F64 } else { DType::F32 }) {
                                    return Err(format!("row value {fv} of type {} computed as {}", dtypes[fv], y.get_type()));
                                }
                                if read_after(fv) {
                                    let (obase, oat, ot) = place(ir, q, fv);
                                    ir.store_width(ot, obase, ir.add(oat, j), y, width);
                                }
                                here[fv] = Some(y);
                            }
                            Ok(())
                        };
                    let mut failure = Ok(());
                    // The whole vectors of two rows in one loop, their steps side by side: a
                    // step's chain (an exp's is twenty operations long) waits on latency,
                    // and the other row's fills the gaps that the scheduler's window could
                    // not reach across iterations (the Whisper encoder's softmax rows).
                    let all: Vec<usize> = (0..rows.len()).collect();
                    for pair in all.chunks(2).filter(|_| whole > 0) {
                        self.for_range(self.i64(0), self.i64(whole as i64), self.i64(lanes as i64), |ir, j| {
                            for &q in pair {
                                if let Err(e) = step(ir, q, j, Width::Lanes) {
                                    failure = Err(e);
                                }
                            }
                        });
                    }
                    for q in 0..rows.len() {
                        // The last elements: one vector under a mask, or one at a time.
                        if whole > 0 && whole < len && share.vectors.is_some_and(|vs| vs.masked_tails) {
                            let mask = self.first_lanes(lanes as u32, self.i64((len - whole) as i64));
                            step(self, q, self.i64(whole as i64), Width::Masked(mask))?;
                        } else {
                            let start = if whole > 0 { self.i64(whole as i64) } else { share.start };
                            self.for_range(start, self.i64(len as i64), share.step, |ir, j| {
                                if let Err(e) = step(ir, q, j, Width::One) {
                                    failure = Err(e);
                                }
                            });
                        }
                    }
                    failure?;
                    si = run_end;
                    continue;
                }
            }
            si += 1;
        }
        Ok(())
    }
}

/// How many elements a step of a rows kernel's elementwise run computes: one, the machine's
/// lanes, or the lanes where a mask holds (a row's last elements).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Width<'ctx> {
    One,
    Lanes,
    Masked(VectorValue<'ctx>),
}

impl<'ctx> Ir<'ctx> {
    /// The elements of `base` (stored as `t`) a step of `width` reads from `at`, in f32 lanes
    /// of `lanes` (masked-off lanes zero), or the one element.
    fn load_width(&mut self, t: DType, base: PointerValue<'ctx>, at: IntValue<'ctx>, lanes: usize, width: Width<'ctx>) -> BasicValueEnum<'ctx> {
        match width {
            Width::One => self.load(t, base, at),
            Width::Lanes => self.load_lanes(t, base, at, lanes as u32).into(),
            Width::Masked(mask) => self.load_lanes_masked(t, base, at, mask).into(),
        }
    }

    /// Stores what a step of `width` computed, `y`, as `t` from element `at` of `base`.
    fn store_width(&mut self, t: DType, base: PointerValue<'ctx>, at: IntValue<'ctx>, y: BasicValueEnum<'ctx>, width: Width<'ctx>) {
        match width {
            Width::One => self.store(t, base, at, y),
            Width::Lanes => self.store_lanes(t, base, at, y.into_vector_value()),
            Width::Masked(mask) => self.store_lanes_masked(t, base, at, y.into_vector_value(), mask),
        }
    }
}

/// How the threads of a rows kernel share a row: this thread's elements `start, start + step,
/// ...` of every full elementwise stage, and how a reduction of the row is computed (it is called
/// by every sharing thread with the same arguments and must return the same value to each; it
/// must also make the row's earlier writes visible first).
pub struct RowShare<'a, 'ctx> {
    /// This thread's first element.
    pub start: IntValue<'ctx>,
    /// The distance to its next one.
    pub step: IntValue<'ctx>,
    /// Reduces the row (`load(j)` reads element `j`) in the domain of the given type.
    #[allow(clippy::type_complexity, reason = "a callback used in one place, clearer spelled out than named")]
    pub reduce: &'a mut dyn FnMut(&mut Ir<'ctx>, ReduceKind, DType, &dyn Fn(&mut Ir<'ctx>, IntValue<'ctx>) -> BasicValueEnum<'ctx>) -> BasicValueEnum<'ctx>,
    /// Where this thread, computing whole rows one element after the next (`start` 0, `step`
    /// 1), uses vectors.
    pub vectors: Option<&'a RowVectors>,
}

/// Whether value `v` of `r` (a stage's) is read after the run of elementwise stages that
/// computes it, or is the result: only such values go to memory.
fn read_after_its_run(r: &Rows, v: RowValue) -> bool {
    r.read_after(v, r.run_end(v - r.inputs.len()))
}

/// Where each full intermediate value of a rows kernel that is read after its run lives in a
/// row's temporary: (byte offset, type as stored: f32, or f64 for f64 values).
fn rows_slots(r: &Rows) -> Vec<Option<(usize, DType)>> {
    let n_in = r.inputs.len();
    let last = n_in + r.stages.len() - 1;
    let mut slots = vec![None; last + 1];
    let mut bytes = 0;
    for (v, slot) in slots.iter_mut().enumerate().take(last).skip(n_in) {
        // A float value read only within its run stays in a register.
        if matches!(r.stages[v - n_in], RowStage::Map { full: true, .. }) && (read_after_its_run(r, v) || !r.dtypes[v - n_in].is_float()) {
            let t = if r.dtypes[v - n_in] == DType::F64 { DType::F64 } else { DType::F32 };
            *slot = Some((bytes, t));
            bytes += (r.len * t.byte_size()).next_multiple_of(16);
        }
    }
    slots
}
