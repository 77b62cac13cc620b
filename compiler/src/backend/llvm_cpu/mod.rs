//! The LLVM CPU backend: the shared LLVM emitter ([`crate::backend::llvm`]) compiled ahead of
//! time for a CPU, one function per kernel in the CPU kernel ABI of [`f16c_core::abi`], linked
//! into a shared object that the runtime's one CPU executor runs. Generic over the target: a
//! [`CpuMachine`] row (triple, CPU, features, what the runtime checks) is all that differs.
//!
//! - `--target=x86_64 --backend=llvm` ([`X86_64`]): `x86-64-v3` (AVX2, FMA, F16C: fp16 held in
//!   memory and converted with `vcvtph2ps`/`vcvtps2ph`).
//! - `--target=aarch64` ([`AARCH64`]): ARMv8.2-A `+neon,+fullfp16,+fp16fml`; f16 + − × ÷ √ run
//!   as native half arithmetic where LLVM narrows the contract's widen/compute/round (exact:
//!   DESIGN.md "Numerics"). `--target=aarch64+bf16` ([`AARCH64_BF16`]) adds `+bf16` (`bfcvt`).
//!
//! Math functions go through the runtime's `rt` table (bit-identical to the reference), bf16
//! rounding and f64 → f16/bf16 need no compiler runtime. Besides the artifact, [`library`]
//! builds a standalone C library: the same kernels behind a plain C entry point, weights inside,
//! math from the C library (`--emit=lib|header`).
//!
//! Every kernel's plan is made before any code is emitted ([`plan`]); matmuls and convolutions
//! run on the machine row's packed register-blocked micro-kernel ([`gemm`]: 12 × 32 in AVX-512
//! lanes, 6 × 16 in AVX2's, 8 × 8 NEON tiles (FMLAL or fp16 accumulators) on AArch64), depthwise
//! convolutions on [`depthwise`]'s channel vectors; other contractions take a 4×4 register tile
//! per work item ([`super::llvm::families::TILE`]).

pub mod depthwise;
pub mod gemm;
pub mod library;
pub mod plan;

use std::collections::HashMap;
use super::bands;
use super::layout::{CodeInfo, Constants, Layout, Pack};
use super::llvm::expr::LaneRules;
use super::llvm::families::Items;
use super::llvm::machine::{self, MachineSpec};
use super::llvm::parts;
use super::llvm::{Built, Ir, MathImpl};
use super::{Backend, BackendError, BackendErrorKind, BackendResult, Emit, Unsupported};
use crate::backend::cpu::{AStaging, GemmPlan, Multiply, WidenB};
use plan::{ItemsForm, KernelPlan};
use crate::lower::{Kernel, KernelKind, Program};
use crate::target::{Cpu, Target, X86Level};
use f16c_core::artifact::{Artifact, CodeFormat, Step};
use f16c_dialect::DType;
use inkwell::context::Context;
use inkwell::values::{FunctionValue, IntValue, PointerValue};

/// Prefix of every kernel symbol.
pub const SYMBOL_PREFIX: &str = "f16c_";

pub use crate::target::CpuMachine;

/// The LLVM CPU backend for one target.
#[derive(Debug)]
pub struct LlvmCpuBackend {
    /// The target.
    pub target: Target,
    /// The backend's name in errors and manifests.
    pub name: &'static str,
    /// What the code is compiled for.
    pub machine: CpuMachine,
}

/// The machine of x86-64 level `level` (one that has one).
const fn x86_machine(level: X86Level) -> CpuMachine {
    match level.machine() {
        Some(m) => m,
        None => panic!("the LLVM backend has no machine for x86-64-v2"),
    }
}

/// x86-64 ahead of time (`--target=x86_64 --backend=llvm`).
pub static X86_64: LlvmCpuBackend = LlvmCpuBackend { target: Target::X86_64, name: "llvm-x86_64", machine: x86_machine(X86Level::V3) };

/// x86-64 with AVX-512 (`x86-64-v4`: AVX-512 F/BW/DQ/VL).
pub static X86_64_V4: LlvmCpuBackend = LlvmCpuBackend { target: Target::X86_64, name: "llvm-x86_64", machine: x86_machine(X86Level::V4) };

/// `x86-64-v4` with AVX512-BF16 (Cooper Lake, Sapphire Rapids, Zen 4 and later): bf16
/// contractions multiply bf16 pairs into f32 (`VDPBF16PS`, twice the f32 FMA's products per
/// instruction).
pub static X86_64_V4_BF16: LlvmCpuBackend = LlvmCpuBackend { target: Target::X86_64, name: "llvm-x86_64", machine: x86_machine(X86Level::V4Bf16) };

/// The LLVM x86-64 backend for a level (`native`: this machine's, [`X86Level::host`], at
/// least `x86-64-v3`); `None` for `x86-64-v2`, which it has no machine for (its micro-kernel
/// assumes FMA).
pub fn x86_64(cpu: Cpu) -> Option<&'static LlvmCpuBackend> {
    let level = match cpu {
        Cpu::Native => X86Level::host().max(X86Level::V3),
        Cpu::Level(l) => l,
    };
    match level {
        X86Level::V2 => None,
        X86Level::V3 => Some(&X86_64),
        X86Level::V4 => Some(&X86_64_V4),
        X86Level::V4Bf16 => Some(&X86_64_V4_BF16),
    }
}

/// AArch64 with fp16 arithmetic (ARMv8.2-A).
pub static AARCH64: LlvmCpuBackend = LlvmCpuBackend { target: Target::Aarch64 { bf16: false }, name: "llvm-aarch64", machine: crate::target::aarch64_machine(false) };

/// AArch64 with fp16 and bf16 (ARMv8.6-A `+bf16`).
pub static AARCH64_BF16: LlvmCpuBackend = LlvmCpuBackend { target: Target::Aarch64 { bf16: true }, name: "llvm-aarch64", machine: crate::target::aarch64_machine(true) };

/// The backend for an AArch64 target.
pub fn aarch64(bf16: bool) -> &'static LlvmCpuBackend {
    if bf16 {
        &AARCH64_BF16
    } else {
        &AARCH64
    }
}

/// A compiled program: the manifest (buffer table and schedule), the constants, and the one
/// code form asked for (the optimised LLVM IR, the assembly, or a relocatable ELF object: each
/// is only made when asked for, since code generation is most of a compilation's time; for
/// [`Emit::Lib`], the objects of the module's parts, to be linked together).
pub struct Compiled {
    /// The artifact's description of the layout and schedule.
    pub manifest: f16c_core::artifact::Manifest,
    /// The artifact's constants section, to put together.
    pub constants: Constants,
    /// The code, in the form asked for: one text or object, or the parts' objects.
    pub code: Vec<Vec<u8>>,
}

/// What [`LlvmCpuBackend::compile`] builds besides the kernels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Output {
    /// The kernels, exported, for the runtime's executor (the artifact).
    Kernels,
    /// The standalone C library ([`library`]): kernels internal, weights and the C entry point
    /// inside.
    Library,
}

impl LlvmCpuBackend {
    fn codegen(&self, kernel: Option<&Kernel>, message: String) -> BackendError {
        BackendError::codegen(self.name, kernel, message)
    }

    /// Compiles a (legal) program. [`Emit::Lib`] of the kernels is compiled in `jobs` parts in
    /// parallel ([`parts`]; 0: `--jobs`, else this machine's cores for a big program).
    pub fn compile(&self, program: &Program, output: Output, form: Emit, jobs: usize) -> BackendResult<Compiled> {
        let codegen = |k: Option<&Kernel>, m: String| self.codegen(k, m);
        let cx = Context::create();
        let mut ir = Ir::new(&cx, &program.name, MathImpl::RuntimeTable);
        ir.native_bf16 = self.machine.native_bf16;
        ir.ldexp_in_one = self.machine.scales_in_one();
        ir.defer_bf16 = true;
        let mut layout = Layout::new(program);
        let mut schedule = Schedule::default();
        let emitting = std::time::Instant::now();
        // Every kernel's plan first, then each kernel's code as its plan says.
        let plans: Vec<KernelPlan> = program.kernels.iter().map(|kernel| self.plan(program, kernel)).collect();
        // An elementwise kernel writes over its input only where its code is explicit vectors:
        // LLVM's loop vectoriser checks that a loop's output and input do not overlap and runs
        // its scalar loop where they do (the Whisper encoder's GELU kernels ran ten times slower).
        // A contraction's tiles (and a depthwise convolution's pixels) read each epilogue
        // input's element in the finish that writes the output's, in one work item: their
        // output may take a residual's place.
        layout.apart = plans.iter().map(|p| !matches!(p, KernelPlan::Items(forms) if forms.iter().all(|f| matches!(f, ItemsForm::ElementwiseRows { lanes: Some(_), .. }))) && !matches!(p, KernelPlan::Gemm(_) | KernelPlan::Depthwise { .. })).collect();
        for (k, (kernel, plan)) in program.kernels.iter().zip(&plans).enumerate() {
            let name = format!("{SYMBOL_PREFIX}{}", kernel.name);
            let failed = |m: String| codegen(Some(kernel), m);
            let mut emit = Emitter { ir: &mut ir, schedule: &mut schedule, layout: &mut layout, k, name };
            match (plan, &kernel.kind) {
                (KernelPlan::Rows(vectors), KernelKind::Rows(r)) => {
                    // Rows a few at a time, their reductions' chains interleaved; the rows'
                    // temporaries are the thread's scratch.
                    emit.layout.scratch(Ir::rows_group_temp_bytes(r));
                    let cost = (r.rows * r.len * (r.stages.len() + 1)) as f64;
                    let name = emit.name.clone();
                    emit.schedule.add(emit.ir, name, Ir::rows_groups(r), cost, k, |ir, g, params| ir.rows_group(r, g, params.scratch, vectors)).map_err(failed)?;
                }
                (&KernelPlan::Depthwise { lanes, f16_acc }, KernelKind::Contraction(c)) => {
                    let cost = 2.0 * (c.batch * c.m * c.n * c.k) as f64;
                    let name = emit.name.clone();
                    emit.schedule.add(emit.ir, name, depthwise::work(c, lanes), cost, k, |ir, i, _| depthwise::item(ir, c, lanes, f16_acc, i)).map_err(failed)?;
                }
                (KernelPlan::Gemm(g), KernelKind::Contraction(c)) => emit.gemm(&self.machine, g, c).map_err(failed)?,
                (KernelPlan::Items(forms), KernelKind::Contraction(c)) if !c.a_parts.is_empty() => {
                    // A concatenation folded into a convolution these loops run: made first.
                    let mut c = c.clone();
                    c.a.buffer = crate::lower::BufferId(emit.concatenate(&c.a_parts).map_err(failed)?);
                    c.a_parts.clear();
                    emit.items(forms, &KernelKind::Contraction(c), self.machine.gemm.lanes).map_err(failed)?
                }
                (KernelPlan::Items(forms), kind) => emit.items(forms, kind, self.machine.gemm.lanes).map_err(failed)?,
                (plan, _) => return Err(failed(format!("plan {plan:?} made for another kind of kernel"))),
            }
        }
        // Attention's scores, softmax and products band by band (the same items, reordered).
        let banded = self.bands(program);
        for band in &banded {
            // The products' widened probabilities are read by the band's tiles only: a window.
            let mut band = band.clone();
            if band.widens_products_a {
                if let Some(&(slot, per_row)) = schedule.widened_a.get(&(band.first + 2)) {
                    band.windows.push(f16c_core::artifact::Window { slot, bytes: band.rows * per_row });
                }
            }
            let band = &band;
            bands::interleave(&mut schedule.steps, band);
            layout.together.push((band.first, band.first + 2));
        }
        schedule.finish_bodies(&ir);
        compiler_runtime(&mut ir);
        crate::timing::record("llvm emit", 0, emitting.elapsed());
        let info = CodeInfo { target: self.target.info().name, backend: self.name, format: CodeFormat::ElfSharedObject, requires: self.machine.requires.iter().map(|s| s.to_string()).collect() };
        let (mut manifest, constants) = crate::timing::phase("layout (arena plan, slots)", || {
            layout.finish(program);
            layout.manifest(program, info, schedule.symbols, schedule.steps)
        });
        for (k, info) in manifest.kernels.iter_mut().enumerate() {
            info.plan = describe_banded(program, k, &plans[k], banded.iter().find(|b| (b.first..b.first + 3).contains(&k)));
        }
        let constants = if output == Output::Library {
            // A library carries its weights: those the runtime would widen at load, widened now.
            let bytes = manifest.widen_constants(&constants.into_bytes(program));
            library::entry(&mut ir, program, &manifest, &bytes, &schedule.functions).map_err(|m| codegen(None, m))?;
            Constants::owned(bytes)
        } else {
            constants
        };
        let m = &self.machine;
        let spec = MachineSpec { triple: m.triple, cpu: m.cpu.to_string(), features: m.features.to_string() };
        crate::timing::phase("llvm verify", || ir.verify()).map_err(|m| codegen(None, m))?;
        if form == Emit::Lib && output == Output::Kernels {
            // Objects to be linked: the module in parts, compiled in parallel (a library's
            // kernels are internal, called by its entry point: one part).
            let Ir { module, .. } = ir;
            let code = parts::objects(module, &spec, jobs).map_err(|m| codegen(None, m))?;
            return Ok(Compiled { manifest, constants, code });
        }
        let tm = machine::machine(&spec).map_err(|m| codegen(None, m))?;
        machine::optimize(&ir.module, &tm).map_err(|m| codegen(None, m))?;
        let code = match form {
            Emit::Llvm => ir.text().into_bytes(),
            Emit::Asm => machine::assembly(&ir.module, &tm).map_err(|m| codegen(None, m))?.into_bytes(),
            Emit::Obj | Emit::Lib => machine::object(&ir.module, &tm).map_err(|m| codegen(None, m))?,
            other => return Err(BackendError::program(self.name, BackendErrorKind::Form(other.name()))),
        };
        Ok(Compiled { manifest, constants, code: vec![code] })
    }
}

/// Kernel `k`'s plan in words, and the band it runs in (if any).
fn describe_banded(program: &Program, k: usize, plan: &KernelPlan, band: Option<&bands::Band>) -> String {
    let kernel = &program.kernels[k];
    match band {
        Some(b) => format!("{}; {}", plan.describe(kernel, b.widens_products_a && k == b.first + 2), bands::describe(program, b)),
        None => plan.describe(kernel, false),
    }
}

/// What emitting one kernel's steps touches: the module, the schedule of steps, the buffer
/// table (its temporaries), the kernel's index and symbol.
struct Emitter<'a, 'ctx> {
    ir: &'a mut Ir<'ctx>,
    schedule: &'a mut Schedule<'ctx>,
    layout: &'a mut Layout,
    k: usize,
    name: String,
}

impl<'ctx> Emitter<'_, 'ctx> {
    /// A step of this kernel: function `{name}{suffix}` over `work` items.
    fn step(&mut self, suffix: &str, work: usize, cost: f64, body: impl FnOnce(&mut Ir<'ctx>, IntValue<'ctx>, &Params<'ctx>) -> Result<(), String>) -> Result<(), String> {
        self.schedule.add(self.ir, format!("{}{suffix}", self.name), work, cost, self.k, body)
    }

    /// A contraction on the micro-kernel as `plan` says: B packed (at compile time, or per run
    /// by a first step) and widened once per run if planned, A padded or widened once per run
    /// if planned, then the tiles.
    fn gemm(&mut self, machine: &CpuMachine, plan: &GemmPlan, c: &crate::lower::Contraction) -> Result<(), String> {
        let (k, shape, pairs) = (self.k, plan.tile, plan.multiply == Multiply::Bf16Pairs);
        let cost = 2.0 * (c.batch * c.m * c.n * c.k) as f64;
        let mut c = c.clone();
        let mut packed = match plan.b.run_time {
            Some(dt) => {
                // B computed at run time (an attention's keys and values): packed per run, a
                // panel per work item, in the type the tiles read.
                let panels = c.n.div_ceil(shape.nr);
                let batches = gemm::b_batches(&c);
                let rows = gemm::packed_k(&c, pairs);
                let slot = self.layout.temporary(k, batches * panels * rows * shape.nr * dt.byte_size());
                let elements = (batches * panels * rows * shape.nr) as f64;
                let b = c.clone();
                self.step("_pack_b", batches * panels, elements, |ir, item, _| {
                    gemm::pack_panel(ir, &b, shape, (slot, dt), pairs, item);
                    Ok(())
                })?;
                c.b.ty.dtype = dt;
                slot
            }
            None => {
                let bytes = gemm::packed_bytes(&c, shape);
                let pc = c.clone();
                let pack = Pack(std::sync::Arc::new(move |src: &[u8], dst: &mut [u8]| gemm::pack(src, dst, &pc, shape, pairs)));
                self.layout.replace_constant_packed(k, c.b.buffer, bytes, pack)
            }
        };
        // fp16/bf16 operands the tiles would widen over and over: a constant's by the runtime
        // when it loads the artifact, one computed at run time once per run into a temporary.
        match plan.b.widen {
            WidenB::No => {}
            WidenB::AtLoad => {
                self.layout.widen_at_load(packed, c.b.ty.dtype);
                c.b.ty.dtype = DType::F32;
            }
            WidenB::PerRun => {
                let elements = self.layout.buffers[packed].bytes / c.b.ty.dtype.byte_size();
                packed = self.widen("_widen_b", (packed, c.b.ty.dtype), elements)?;
                c.b.ty.dtype = DType::F32;
            }
            WidenB::PerChunk => return Err(format!("{}: B widened a chunk at a time is not a plan of this backend", self.name)),
        }
        let (mut a_slack, mut skipped) = (0, crate::backend::cpu::SkippedPadding::default());
        match &plan.a.staging {
            AStaging::Padded { geometry: g, dtype, slack, skipped: padding } => {
                // Padded (and widened) in one step, a padded row per work item.
                (a_slack, skipped) = (*slack, *padding);
                let padded = self.layout.temporary(k, (g.n * g.ih * g.iw * g.ic + a_slack) * dtype.byte_size());
                let elements = (g.n * g.ih * g.iw * g.ic) as f64;
                let (pc, pg, dt) = (c.clone(), g.clone(), *dtype);
                self.step("_pad_a", g.n * g.ih, elements, |ir, r, _| {
                    gemm::pad_row(ir, &pc, &pg, (padded, dt), r);
                    Ok(())
                })?;
                c.a = crate::lower::Operand { buffer: crate::lower::BufferId(padded), ty: f16c_dialect::TensorType::new(*dtype, [g.n, g.ih, g.iw, g.ic]) };
                c.a_parts.clear();
                c.kind = crate::lower::ContractionKind::Conv(g.clone());
            }
            AStaging::Widened => {
                if c.views.a.is_some() {
                    return Err(format!("{}: an A read through a view cannot be widened in rows", self.name));
                }
                let len = c.k;
                let wide = self.widen_rows("_widen_a", (c.a.buffer.0, c.a.ty.dtype), c.a.ty.num_elements() / len.max(1), len)?;
                self.schedule.widened_a.insert(k, (wide, len * 4));
                c.a.buffer = crate::lower::BufferId(wide);
                c.a.ty.dtype = DType::F32;
            }
            AStaging::AsIs => {}
            AStaging::WidenedPerRowBlock { .. } => return Err(format!("{}: A widened per row block is not a plan of this backend", self.name)),
        }
        let rows_fastest = plan.work.rows_fastest;
        self.step("", plan.work.items, cost, |ir, t, _| gemm::tile(ir, machine, &c, (packed, a_slack, skipped), (pairs, rows_fastest), t))
    }

    /// A step concatenating `parts` (each dense `[.., c_i]`, of one type) along their last
    /// dimension into a new temporary of the kernel, a pixel per work item; returns its slot.
    fn concatenate(&mut self, parts: &[crate::lower::Operand]) -> Result<usize, String> {
        let dtype = parts[0].ty.dtype;
        let channels: Vec<usize> = parts.iter().map(|p| *p.ty.shape.last().expect("a part has channels")).collect();
        let width: usize = channels.iter().sum();
        let pixels = parts[0].ty.num_elements() / channels[0].max(1);
        let whole = self.layout.temporary(self.k, pixels * width * dtype.byte_size());
        self.step("_concat_a", pixels, (pixels * width) as f64, |ir, p, _| {
            let sources: Vec<_> = parts.iter().zip(&channels).map(|(part, &n)| (ir.buffer(part.buffer.0), n)).collect();
            let (dst, at) = (ir.buffer(whole), ir.muli(p, width));
            gemm::copy_parts(ir, &sources, p, (dst, at), (dtype, dtype));
            Ok(())
        })?;
        Ok(whole)
    }

    /// A step converting the `elements` values of type `from` in slot `src` to f32 in a new
    /// temporary of the kernel; returns the temporary's slot.
    fn widen(&mut self, suffix: &str, (src, from): (usize, DType), elements: usize) -> Result<usize, String> {
        let wide = self.layout.temporary(self.k, elements * 4);
        self.step(suffix, elements, elements as f64, |ir, i, _| {
            let (s, d) = (ir.buffer(src), ir.buffer(wide));
            let v = ir.load(from, s, i);
            ir.store(DType::F32, d, i, v);
            Ok(())
        })?;
        Ok(wide)
    }

    /// [`Emitter::widen`] of `rows` rows of `len` values, a row per work item, sixteen lanes
    /// at a time (F16C's `vcvtph2ps` on x86: converted one at a time, an attention's
    /// probabilities took a fifth of its products' time to widen). A's rows: a band's are
    /// whole work items.
    fn widen_rows(&mut self, suffix: &str, (src, from): (usize, DType), rows: usize, len: usize) -> Result<usize, String> {
        const LANES: usize = 16;
        let wide = self.layout.temporary(self.k, rows * len * 4);
        let full = len / LANES * LANES;
        self.step(suffix, rows, (rows * len) as f64, |ir, r, _| {
            let (s, d) = (ir.buffer(src), ir.buffer(wide));
            let first = ir.muli(r, len);
            let (zero, end, step) = (ir.i64(0), ir.i64(full as i64), ir.i64(LANES as i64));
            ir.for_range(zero, end, step, |ir, j| {
                let at = ir.add(first, j);
                let v = ir.load_lanes(from, s, at, LANES as u32);
                ir.store_lanes(DType::F32, d, at, v);
            });
            ir.for_n(full, len, |ir, j| {
                let at = ir.add(first, j);
                let v = ir.load(from, s, at);
                ir.store(DType::F32, d, at, v);
            });
            Ok(())
        })?;
        Ok(wide)
    }

    /// Plain loops of work items ([`Items::of`]), each in its planned form.
    fn items(&mut self, forms: &[ItemsForm], kind: &KernelKind, lanes: usize) -> Result<(), String> {
        for (items, form) in Items::of(kind).into_iter().zip(forms) {
            let (suffix, cost) = (&items.suffix(), items.cost());
            match (*form, items) {
                (ItemsForm::PoolLanes { lanes }, Items::Pool(p)) => {
                    // An output pixel's channels a vector at a time.
                    self.step(suffix, Ir::pool_lanes_work(p, lanes), cost, |ir, i, _| ir.pool_lanes(p, i, lanes))?;
                }
                (ItemsForm::ElementwiseRows { rows, .. }, Items::Elementwise(e) | Items::Pairs(e)) => {
                    // A row along the last dimension per work item (vectorised).
                    self.step(suffix, rows, cost, |ir, r, _| ir.elementwise_row(e, r, lanes))?;
                }
                (ItemsForm::ReductionLanes { lanes }, Items::Reduction(r)) => {
                    // Neighbouring outputs a vector at a time.
                    self.step(suffix, Ir::reduction_lanes_work(r, lanes), cost, |ir, i, _| ir.reduction_lanes(r, i, lanes))?;
                }
                (ItemsForm::TransposeTiles, Items::Move(copy, m)) => {
                    // A band of tiles transposed in registers per work item.
                    self.step(suffix, Ir::transpose_bands(copy, m), cost, |ir, t, _| {
                        ir.transpose_band(copy, m, t);
                        Ok(())
                    })?;
                }
                (ItemsForm::CopyRows, Items::Move(copy, m)) => {
                    // A row of the move per work item.
                    self.step(suffix, Ir::copy_rows(copy, m), cost, |ir, r, _| {
                        ir.copy_row(copy, m, r);
                        Ok(())
                    })?;
                }
                (ItemsForm::GatherRuns, Items::Gather(g)) if g.index_sum.is_some() => {
                    let items = g.sum_run().map_or(0, |r| r.items);
                    self.step(suffix, items, cost, |ir, item, params| {
                        ir.gather_sum_run(g, item, |ir| {
                            let code = ir.i32(f16c_core::abi::Status::IndexOutOfRange as i32);
                            ir.b.build_store(params.status, code).built();
                        })
                    })?;
                }
                (ItemsForm::GatherRuns, Items::Gather(g)) => {
                    let total = g.indices.ty.num_elements();
                    self.step(suffix, total.div_ceil(g.run()), cost, |ir, r, params| {
                        ir.gather_run(g, r, g.run(), |ir| {
                            let code = ir.i32(f16c_core::abi::Status::IndexOutOfRange as i32);
                            ir.b.build_store(params.status, code).built();
                        })
                    })?;
                }
                (ItemsForm::Plain, items) => {
                    self.step(suffix, items.work(), cost, |ir, i, params| {
                        ir.item(items, i, params.scratch, |ir| {
                            let code = ir.i32(f16c_core::abi::Status::IndexOutOfRange as i32);
                            ir.b.build_store(params.status, code).built();
                        })
                    })?;
                }
                (form, items) => return Err(format!("planned {form:?} for {items:?}")),
            }
        }
        Ok(())
    }
}


/// The kernel functions of a program as they are emitted, with their symbols and the steps
/// that call them.
///
/// Kernels that differ only in their buffers (the twelve layers of a BERT, the blocks of a
/// ResNet stage) are compiled once: each step's function `name` is a small wrapper that copies
/// its buffers' addresses from the program's table into a table of its own and calls a body
/// that reads only that table; bodies whose IR is the same text are one function. A body
/// called once is inlined into its wrapper (the code is what it was before); a shared one is
/// kept out of line.
#[derive(Default)]
struct Schedule<'ctx> {
    functions: Vec<FunctionValue<'ctx>>,
    symbols: Vec<String>,
    steps: Vec<Step>,
    /// Each distinct body, by its IR text (with a neutral name), and how many wrappers call it.
    bodies: HashMap<String, (FunctionValue<'ctx>, usize)>,
    /// Each kernel's A widened to f32 in a temporary (`AStaging::Widened`): the slot and its
    /// bytes per row of A (a band's window of it, where the kernel runs in bands).
    widened_a: HashMap<usize, (usize, usize)>,
}

impl<'ctx> Schedule<'ctx> {
    /// Emits function `name` ([`items_function`], through a shared body where one is alike)
    /// and a step that calls it once over `work` items of kernel `kernel`.
    fn add(
        &mut self,
        ir: &mut Ir<'ctx>,
        name: String,
        work: usize,
        cost: f64,
        kernel: usize,
        body: impl FnOnce(&mut Ir<'ctx>, IntValue<'ctx>, &Params<'ctx>) -> Result<(), String>,
    ) -> Result<(), String> {
        let body_name = format!("{name}_body");
        ir.local_slots = Some(Vec::new());
        let emitted = items_function(ir, &body_name, body);
        let slots = ir.local_slots.take().expect("set above");
        let f = emitted?;
        let text = inkwell::values::AnyValue::print_to_string(&f).to_string().replacen(&format!("@{body_name}("), "@body(", 1);
        let shared = match self.bodies.get_mut(&text) {
            Some((g, uses)) => {
                // SAFETY: the function was just built, and nothing refers to it.
                unsafe { f.delete() };
                *uses += 1;
                *g
            }
            None => {
                f.set_linkage(inkwell::module::Linkage::Internal);
                self.bodies.insert(text, (f, 1));
                f
            }
        };
        self.functions.push(wrapper(ir, &name, shared, &slots));
        self.symbols.push(name);
        self.steps.push(Step { function: self.symbols.len() - 1, work, cost, kernel, launch: None, interleave: None });
        Ok(())
    }

    /// Marks the bodies: inlined where one wrapper calls it, kept out of line where several do.
    fn finish_bodies(&self, ir: &Ir<'ctx>) {
        for (f, uses) in self.bodies.values() {
            let kind = if *uses == 1 { "alwaysinline" } else { "noinline" };
            let id = inkwell::attributes::Attribute::get_named_enum_kind_id(kind);
            f.add_attribute(inkwell::attributes::AttributeLoc::Function, ir.cx.create_enum_attribute(id, 0));
        }
    }
}

/// The step function `name` (the CPU kernel ABI): copies the addresses of `slots` from the
/// program's buffer table into a table of its own and calls `body` with it.
fn wrapper<'ctx>(ir: &mut Ir<'ctx>, name: &str, body: FunctionValue<'ctx>, slots: &[usize]) -> FunctionValue<'ctx> {
    let (f, [bufs, begin, end, scratch, rt]) = entry(ir, name);
    ir.begin_function(f, bufs.into_pointer_value());
    let p = ir.ptr_ty();
    let table = ir.b.build_alloca(p.array_type(slots.len().max(1) as u32), "table").built();
    for (i, &slot) in slots.iter().enumerate() {
        let from = ir.gep(p.into(), bufs.into_pointer_value(), ir.i64(slot as i64));
        let address = ir.b.build_load(p, from, "").built();
        ir.b.build_store(ir.gep(p.into(), table, ir.i64(i as i64)), address).built();
    }
    let args: Vec<inkwell::values::BasicMetadataValueEnum> = vec![table.into(), begin.into(), end.into(), scratch.into(), rt.into()];
    let code = ir.b.build_call(body, &args, "").built().try_as_basic_value().basic().expect("an i32 result");
    ir.b.build_return(Some(&code)).built();
    f
}

/// Defines, hidden inside the object, the compiler-runtime conversion LLVM's x86 code generator
/// may call on its own: it legalises a bf16 operation it formed while optimising (a maximum of
/// two bf16 values, say) by widening and calling `__truncsfbf2`, which a shared object loaded
/// into any process cannot count on finding. The definition rounds as everything else does.
fn compiler_runtime(ir: &mut Ir<'_>) {
    let f32t = ir.cx.f32_type();
    let f = ir.module.add_function("__truncsfbf2", ir.cx.bf16_type().fn_type(&[f32t.into()], false), None);
    f.as_global_value().set_visibility(inkwell::GlobalVisibility::Hidden);
    let bufs = ir.ptr_ty().const_null();
    ir.begin_function(f, bufs);
    let x = f.get_nth_param(0).expect("one parameter").into_float_value();
    let r = ir.to_low(x, DType::BF16).expect("f32 rounds without a libcall");
    ir.b.build_return(Some(&r)).built();
}

/// What a CPU kernel body gets besides its work item.
struct Params<'ctx> {
    /// The status variable: set it to a non-zero [`f16c_core::abi::Status`] and the function
    /// returns it (later items still run: they write disjoint outputs, and the run fails as a
    /// whole).
    status: PointerValue<'ctx>,
    /// This thread's scratch memory.
    scratch: PointerValue<'ctx>,
}

/// A CPU kernel `i32 name(bufs, begin, end, scratch, rt)`: `body(i)` for every work item
/// `begin <= i < end`.
fn items_function<'ctx>(ir: &mut Ir<'ctx>, name: &str, body: impl FnOnce(&mut Ir<'ctx>, IntValue<'ctx>, &Params<'ctx>) -> Result<(), String>) -> Result<FunctionValue<'ctx>, String> {
    let (f, [bufs, begin, end, scratch, rt]) = entry(ir, name);
    ir.begin_function(f, bufs.into_pointer_value());
    ir.set_rt(rt.into_pointer_value());
    let status = ir.var(ir.i32(0).into());
    let params = Params { status: status.pointer(), scratch: scratch.into_pointer_value() };
    let mut result = Ok(());
    let one = ir.i64(1);
    ir.for_range(begin.into_int_value(), end.into_int_value(), one, |ir, i| result = body(ir, i, &params));
    let code = ir.get(status);
    ir.b.build_return(Some(&code)).built();
    result.map(|()| f)
}

/// Declares `i32 name(ptr, i64, i64, ptr, ptr)` (the CPU kernel ABI).
fn entry<'ctx>(ir: &mut Ir<'ctx>, name: &str) -> (FunctionValue<'ctx>, [inkwell::values::BasicValueEnum<'ctx>; 5]) {
    let (p, i) = (ir.ptr_ty(), ir.cx.i64_type());
    let ty = ir.cx.i32_type().fn_type(&[p.into(), i.into(), i.into(), p.into(), p.into()], false);
    let f = ir.module.add_function(name, ty, None);
    let params: Vec<_> = f.get_params();
    (f, [params[0], params[1], params[2], params[3], params[4]])
}

impl Backend for LlvmCpuBackend {
    fn name(&self) -> &'static str {
        self.name
    }

    fn target(&self) -> Target {
        self.target
    }

    fn lowering(&self) -> crate::lower::LowerOptions {
        // fcvtn/fcvtl and vcvtps2ph/vcvtph2ps: a conversion costs an instruction in a copy.
        // Matmul operands through views: an attention's head transposes are folded in.
        crate::lower::LowerOptions { converting_copies: true, multi_read_epilogues: true, plain_epilogues: false, wide_math_epilogues: false, contraction_views: true, concatenated_inputs: true }
    }

    /// Legal but for reductions between floats and integers; the plan is [`LlvmCpuBackend::plan`]'s
    /// (with the band an attention chain runs in).
    fn configure(&self, program: &Program, kernel: &Kernel) -> Result<super::KernelConfig, Unsupported> {
        match &kernel.kind {
            KernelKind::Reduction(r) if r.kind.is_some() && r.input.ty.dtype.is_float() != r.output.ty.dtype.is_float() => {
                Err(Unsupported(format!("a reduction from {} to {}", r.input.ty.dtype, r.output.ty.dtype)))
            }
            _ => Ok(super::KernelConfig { plan: self.describe(program, kernel) }),
        }
    }

    fn forms(&self) -> &'static [Emit] {
        &[Emit::Llvm, Emit::Asm, Emit::Obj, Emit::Lib, Emit::Header]
    }

    fn code_format(&self) -> CodeFormat {
        CodeFormat::ElfSharedObject
    }

    fn emit(&self, program: &Program, form: Emit) -> BackendResult<Vec<u8>> {
        if form == Emit::Header {
            return Ok(library::header(program, self.target).into_bytes());
        }
        let output = if form == Emit::Lib { Output::Library } else { Output::Kernels };
        let c = self.compile(program, output, form, 0)?;
        Ok(if form == Emit::Lib { self.link(&c.code)? } else { c.code.concat() })
    }

    fn artifact(&self, program: &Program) -> BackendResult<Artifact> {
        self.artifact_in(program, 0)
    }

    fn artifact_taking(&self, program: &mut Program) -> BackendResult<Artifact> {
        let c = self.compile(program, Output::Kernels, Emit::Lib, 0)?;
        let code = self.link(&c.code)?;
        Ok(Artifact { manifest: c.manifest, code, constants: c.constants.into_bytes_taking(program) })
    }
}

impl LlvmCpuBackend {
    /// How this backend runs `kernel` of `program`, in words, where it decides something: what
    /// [`LlvmCpuBackend::compile`] does, read from the same functions (`--emit=kernels`, the
    /// artifact's kernel plans, `f16c-run --profile`).
    pub fn describe(&self, program: &Program, kernel: &Kernel) -> Option<String> {
        let plan = self.plan(program, kernel);
        let Some(k) = program.kernels.iter().position(|x| std::ptr::eq(x, kernel)) else { return Some(plan.describe(kernel, false)) };
        let band = self.bands(program).into_iter().find(|b| (b.first..b.first + 3).contains(&k));
        Some(describe_banded(program, k, &plan, band.as_ref()))
    }

    /// The attention chains this backend runs in bands ([`bands`]): both matmuls on the GEMM
    /// tiles, the products' left operand read as it is or (fp16/bf16) widened by a step that
    /// runs band by band too; a band's rows a multiple of both tiles' rows and of
    /// the rows kernel's group (`super::llvm::families::row_group`), so that each kernel's items for a
    /// band are consecutive.
    fn bands(&self, program: &Program) -> Vec<bands::Band> {
        let m = &self.machine;
        let on_tiles = |c: &crate::lower::Contraction, _products: bool| gemm::applies(program, c) && !gemm::rows_fastest(m, c);
        bands::chains(program, on_tiles)
            .into_iter()
            .filter_map(|chain| {
                let tiles = |k: usize| match &program.kernels[k].kind {
                    KernelKind::Contraction(c) => gemm::shape(m, c).mr,
                    _ => 1,
                };
                let group = match &program.kernels[chain.first + 1].kind {
                    KernelKind::Rows(r) => super::llvm::families::row_group(r),
                    _ => super::llvm::families::ROW_GROUP,
                };
                let rows = bands::lcm(bands::lcm(tiles(chain.first), tiles(chain.first + 2)), group);
                let widens = matches!(&program.kernels[chain.first + 2].kind, KernelKind::Contraction(c) if gemm::widens_a(m, c, gemm::packs_at_run_time(program, c)));
                chain.band(rows).map(|b| bands::Band { widens_products_a: widens, ..b })
            })
            .collect()
    }

    /// The [`LaneRules`] of this machine's modules.
    fn lane_rules(&self) -> LaneRules {
        LaneRules { math: MathImpl::RuntimeTable, native_bf16: self.machine.native_bf16 }
    }

    /// The artifact, its kernels compiled in `jobs` parts in parallel (0: the default; the
    /// code computes the same for any number).
    pub fn artifact_in(&self, program: &Program, jobs: usize) -> BackendResult<Artifact> {
        let c = self.compile(program, Output::Kernels, Emit::Lib, jobs)?;
        let code = self.link(&c.code)?;
        Ok(Artifact { manifest: c.manifest, code, constants: c.constants.into_bytes(program) })
    }

    /// Links objects of this target into a shared object.
    fn link(&self, objects: &[Vec<u8>]) -> BackendResult<Vec<u8>> {
        super::link::shared_object(objects).map_err(|m| BackendError::program(self.name, BackendErrorKind::Tool(m)))
    }
}

