//! The NVIDIA backend: LLVM NVPTX through inkwell, one PTX kernel per lowered kernel (one per
//! move for copies), for `sm_70 sm_75 sm_80 sm_86 sm_89 sm_90`.
//!
//! - Every kernel is `void f16c_<name>(void **bufs, int32_t *status)`: `bufs` is the device
//!   buffer table, one device address per slot of the shared [`Layout`] (the CPU backends' table,
//!   so the artifact's slots mean the same on every target); `status` holds one `i32` per kernel,
//!   which a kernel sets to a non-zero [`f16c_core::abi::Status`] on a run-time error (an
//!   out-of-range gather index) and the runtime turns into a located error.
//! - Contractions whose inputs and accumulator match a row of the target's tensor-core table
//!   (f16 × f16 → f32 everywhere, bf16 × bf16 → f32 from sm_80) run on tensor cores
//!   ([`wmma`]). Row regions (softmax, layer norm) run one block per row ([`rows`]). Other
//!   kernels are SIMT: one thread per work item of
//!   [`crate::backend::llvm::families`] in a grid-stride loop, so they compute exactly what the
//!   reference computes, in its order.
//! - The math functions are f16c's own f32 approximations over `ex2.approx`/`lg2.approx`
//!   ([`MATH_TOLERANCE`]); f64 math is outside the legality table ([`legal`]).
//!
//! The artifact holds the PTX text; the runtime JIT-compiles it with the CUDA driver for the
//! GPU it runs on (PTX for `sm_70` runs on any later GPU).

pub mod legal;
pub mod rows;
pub mod wmma;

use super::layout::{CodeInfo, Layout};
use super::llvm::families::Items;
use super::llvm::machine::{self, MachineSpec};
use super::llvm::{Built, Ir, MathImpl};
use super::{Backend, BackendError, BackendErrorKind, BackendResult, Emit, Unsupported};
use crate::lower::{Kernel, KernelKind, Program};
use crate::target::Target;
use f16c_core::artifact::{Artifact, CodeFormat, Launch, Step};
use inkwell::attributes::AttributeLoc;
use inkwell::context::Context;
use inkwell::values::{FunctionValue, IntValue, PointerValue};

/// The backend's name in errors and manifests.
pub const NAME: &str = "nvptx";

/// Prefix of every kernel symbol.
pub const SYMBOL_PREFIX: &str = "f16c_";

/// Threads per block of SIMT kernels.
pub const SIMT_BLOCK: usize = 128;

/// Most blocks a SIMT grid launches; a grid-stride loop covers the rest.
pub const MAX_BLOCKS: usize = 1 << 16;

/// Tolerance of the GPU math functions against the reference's (Rust `libm`-grade) ones:
/// `|gpu − ref| <= MATH_TOLERANCE.0 · |ref| + MATH_TOLERANCE.1`. The approximations
/// (`backend/llvm/expr.rs`) are built on `ex2.approx.f32` (2 ulp) and `lg2.approx.f32`
/// (absolute error 2^-22.6 near 1); erf is Abramowitz–Stegun 7.1.26 (absolute error 1.5e-7);
/// tanh loses relative accuracy near 0 (absolute error below 1e-7); sin and cos are
/// `sin.approx.f32`/`cos.approx.f32` (absolute error 2^-20.5 over [-100π, 100π], so 8e-7).
/// Every other op of the contract is bit-identical to the reference.
pub const MATH_TOLERANCE: (f64, f64) = (2e-6, 8e-7);

/// The NVPTX calling convention number of `ptx_kernel` (an entry point).
const PTX_KERNEL_CC: u32 = 71;

/// One NVPTX backend per sm target.
pub struct NvptxBackend {
    /// The compute capability: 70 for `sm_70`.
    pub sm: u32,
}

/// The backends of every supported sm.
pub static BACKENDS: [NvptxBackend; 6] =
    [NvptxBackend { sm: 70 }, NvptxBackend { sm: 75 }, NvptxBackend { sm: 80 }, NvptxBackend { sm: 86 }, NvptxBackend { sm: 89 }, NvptxBackend { sm: 90 }];

/// The backend for `sm`, if it is supported.
pub fn backend(sm: u32) -> Option<&'static NvptxBackend> {
    BACKENDS.iter().find(|b| b.sm == sm)
}

/// A compiled program: the PTX, the optimised LLVM IR it came from, the buffer table and the
/// launch list.
pub struct Compiled {
    /// The buffer table (arena planned with the temporaries).
    pub layout: Layout,
    /// Kernel symbols; steps index them.
    pub symbols: Vec<String>,
    /// Launches in execution order.
    pub steps: Vec<Step>,
    /// The optimised LLVM IR.
    pub llvm: String,
    /// The PTX.
    pub ptx: String,
}

impl Compiled {
    /// A comment header for printed forms: kernels, launches, arena, weights.
    pub fn summary(&self, program: &Program, target: Target, comment: &str) -> String {
        use std::fmt::Write;
        let mut s = format!("{comment} function @{} for {target}: {} kernels, {} launches\n", program.name, program.kernels.len(), self.steps.len());
        for st in &self.steps {
            let l = st.launch.expect("GPU steps have a launch");
            let _ = writeln!(s, "{comment}   {} grid {:?} block {:?} shared {} B", self.symbols[st.function], l.grid, l.block, l.shared_bytes);
        }
        let _ = writeln!(s, "{comment} arena {} bytes, weights {} bytes", self.layout.plan.arena_bytes, self.layout.weight_bytes());
        s
    }
}

fn codegen(kernel: Option<&Kernel>, message: String) -> BackendError {
    BackendError::codegen(NAME, kernel, message)
}

/// The machine of `sm`.
pub fn machine_spec(sm: u32) -> MachineSpec {
    MachineSpec { triple: "nvptx64-nvidia-cuda", cpu: format!("sm_{sm}"), features: legal::ptx_isa(sm).to_string() }
}

/// Compiles a (legal) program for `sm`.
pub fn compile(program: &Program, sm: u32) -> BackendResult<Compiled> {
    let target = Target::Sm(sm);
    let cx = Context::create();
    let mut ir = Ir::new(&cx, &program.name, MathImpl::NvptxApprox);
    ir.buffer_space = 1;
    let mut layout = Layout::new(program);
    let mut symbols = Vec::new();
    let mut steps = Vec::new();
    for (k, kernel) in program.kernels.iter().enumerate() {
        if program.buffers[kernel.writes().0].bytes == 0 {
            continue; // an empty result: nothing to compute
        }
        let err = |m: String| codegen(Some(kernel), m);
        let mut add = |symbol: String, launch: Launch, work: usize| {
            symbols.push(symbol);
            steps.push(Step { function: symbols.len() - 1, work, cost: work as f64, kernel: k, launch: Some(launch), interleave: None });
        };
        let name = format!("{SYMBOL_PREFIX}{}", kernel.name);
        match (&kernel.kind, strategy(target, kernel)) {
            (KernelKind::Contraction(c), Strategy::Wmma { shape, tile }) => {
                let (f, bufs, _) = entry(&mut ir, &name, tile.threads());
                ir.begin_function(f, bufs);
                wmma::emit(&mut ir, c, tile, shape, &name).map_err(err)?;
                ir.b.build_return(None).built();
                let launch = Launch { grid: tile.grid(c), block: [tile.threads() as u32, 1, 1], shared_bytes: tile.shared_bytes() as u32 };
                add(name, launch, c.batch * c.m * c.n);
            }
            (KernelKind::Rows(r), _) => {
                let bytes = Ir::rows_temp_bytes(r);
                let temp = (bytes > 0).then(|| (layout.temporary(k, bytes * r.rows), bytes));
                let (f, bufs, _) = entry(&mut ir, &name, rows::THREADS);
                ir.begin_function(f, bufs);
                rows::emit(&mut ir, r, &name, temp).map_err(err)?;
                ir.b.build_return(None).built();
                let launch = Launch { grid: [r.rows.min(MAX_BLOCKS) as u32, 1, 1], block: [rows::THREADS as u32, 1, 1], shared_bytes: rows::SHARED_BYTES as u32 };
                add(name, launch, r.rows);
            }
            // Everything else is SIMT: one thread per work item (two elements for elementwise
            // kernels that pair up into half2/bf16x2, a register tile for contractions off the
            // tensor cores).
            (kind, _) => {
                for items in Items::of(kind) {
                    let (name, work) = (format!("{name}{}", items.suffix()), items.work());
                    simt(&mut ir, &name, work, |ir, i, status| {
                        let no_temp = ir.ptr_ty().const_null();
                        ir.item(items, i, no_temp, |ir| {
                            let at = ir.gep(ir.cx.i32_type().into(), status, ir.i64(k as i64));
                            ir.b.build_store(at, ir.i32(f16c_core::abi::Status::IndexOutOfRange as i32)).built();
                        })
                    })
                    .map_err(err)?;
                    add(name, simt_launch(work), work);
                }
            }
        }
    }
    layout.finish(program);
    let tm = machine::machine(&machine_spec(sm)).map_err(|m| codegen(None, m))?;
    ir.verify().map_err(|m| codegen(None, m))?;
    machine::optimize(&ir.module, &tm).map_err(|m| codegen(None, m))?;
    let llvm = ir.text();
    let ptx = machine::assembly(&ir.module, &tm).map_err(|m| codegen(None, m))?;
    Ok(Compiled { layout, symbols, steps, llvm, ptx })
}

/// How a kernel runs on the GPU: the decision [`compile`] follows and `f16c compile
/// --emit=kernels --target=sm_XX` prints ([`Backend::strategy`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Strategy {
    /// A matmul or conv2d on tensor cores.
    Wmma {
        /// The MMA instruction's shape and types.
        shape: &'static crate::target::MmaShape,
        /// The block's tile.
        tile: wmma::Tile,
    },
    /// One block per row of a row region.
    Rows,
    /// One thread per work item.
    Simt,
}

/// The strategy of `kernel` on `target`.
pub fn strategy(target: Target, kernel: &Kernel) -> Strategy {
    match &kernel.kind {
        // Tensor-core tiles multiply the padding's zeros: not for an inf/NaN weight there.
        KernelKind::Contraction(c) if !c.padding_hazard => match legal::tensor_core_shape(target.info(), kernel) {
            Some(shape) => Strategy::Wmma { shape, tile: wmma::Tile::of(c) },
            None => Strategy::Simt,
        },
        KernelKind::Rows(_) => Strategy::Rows,
        _ => Strategy::Simt,
    }
}

/// [`strategy`] in words: what runs, and for a contraction off the tensor cores, why.
fn describe(target: Target, kernel: &Kernel) -> String {
    match (strategy(target, kernel), &kernel.kind) {
        (Strategy::Wmma { shape, tile }, KernelKind::Contraction(c)) => {
            let (va, vb) = wmma::vector_widths(c);
            format!(
                "tensor cores (WMMA m{}n{}k{}, {} in, f32 accumulate), tile {}x{}: {} warps of {}x{}, {} threads, {} B shared; staged {} / {} elements per load (A / B)",
                shape.m,
                shape.n,
                shape.k,
                shape.input,
                tile.bm,
                tile.bn,
                tile.warps(),
                tile.bm / tile.warps_m,
                tile.bn / tile.warps_n,
                tile.threads(),
                tile.shared_bytes(),
                va,
                vb
            )
        }
        (_, KernelKind::Contraction(c)) => {
            let why = if c.padding_hazard {
                "a weight may be inf or NaN where the padding's zeros would multiply it".to_string()
            } else if !matches!(c.kind, crate::lower::ContractionKind::MatMul | crate::lower::ContractionKind::Conv(_)) {
                "only matmul and conv2d run on tensor cores".to_string()
            } else {
                format!("no tensor-core shape on {target} for {} x {} accumulated in {}", c.a.ty.dtype, c.b.ty.dtype, c.acc)
            };
            format!("SIMT, a register tile of outputs per thread ({why})")
        }
        (Strategy::Rows, _) => format!("one block of {} threads per row", rows::THREADS),
        _ => "SIMT, one thread per output (two for paired f16/bf16 elementwise work)".to_string(),
    }
}

/// The launch of a SIMT kernel over `work` items.
fn simt_launch(work: usize) -> Launch {
    let blocks = work.div_ceil(SIMT_BLOCK).clamp(1, MAX_BLOCKS);
    Launch { grid: [blocks as u32, 1, 1], block: [SIMT_BLOCK as u32, 1, 1], shared_bytes: 0 }
}

/// Declares kernel `name(bufs, status)` with at most `max_threads` threads per block.
fn entry<'ctx>(ir: &mut Ir<'ctx>, name: &str, max_threads: usize) -> (FunctionValue<'ctx>, PointerValue<'ctx>, PointerValue<'ctx>) {
    let p = ir.ptr_ty();
    let f = ir.module.add_function(name, ir.cx.void_type().fn_type(&[p.into(), p.into()], false), None);
    f.set_call_conventions(PTX_KERNEL_CC);
    f.add_attribute(AttributeLoc::Function, ir.cx.create_string_attribute("nvvm.maxntid", &max_threads.to_string()));
    for i in 0..2 {
        let noalias = inkwell::attributes::Attribute::get_named_enum_kind_id("noalias");
        f.add_attribute(AttributeLoc::Param(i), ir.cx.create_enum_attribute(noalias, 0));
    }
    let bufs = f.get_nth_param(0).expect("two parameters").into_pointer_value();
    let status = f.get_nth_param(1).expect("two parameters").into_pointer_value();
    (f, bufs, status)
}

/// A SIMT kernel: `body(i)` for every work item `i < work`, one thread each, in a grid-stride
/// loop.
fn simt<'ctx>(
    ir: &mut Ir<'ctx>,
    name: &str,
    work: usize,
    body: impl FnOnce(&mut Ir<'ctx>, IntValue<'ctx>, PointerValue<'ctx>) -> Result<(), String>,
) -> Result<(), String> {
    let (f, bufs, status) = entry(ir, name, SIMT_BLOCK);
    ir.begin_function(f, bufs);
    let (tid, ntid, ctaid, nctaid) = (sreg(ir, "tid.x"), sreg(ir, "ntid.x"), sreg(ir, "ctaid.x"), sreg(ir, "nctaid.x"));
    let start = ir.add(ir.mul(ctaid, ntid), tid);
    let stride = ir.mul(nctaid, ntid);
    let end = ir.i64(work as i64);
    let mut result = Ok(());
    ir.for_range(start, end, stride, |ir, i| result = body(ir, i, status));
    ir.b.build_return(None).built();
    result
}

/// A special register (`tid.x`, `ctaid.y`, ...) as an i64.
fn sreg<'ctx>(ir: &Ir<'ctx>, name: &str) -> IntValue<'ctx> {
    let v = ir.intrinsic(&format!("llvm.nvvm.read.ptx.sreg.{name}"), ir.cx.i32_type().into(), &[]).into_int_value();
    ir.b.build_int_z_extend(v, ir.cx.i64_type(), "").built()
}

/// `bar.sync 0`: every thread of the block waits here; shared and global writes before it are
/// visible to the block after it.
fn barrier(ir: &Ir) {
    ir.call("llvm.nvvm.barrier.cta.sync.aligned.all", None, &[ir.i32(0).into()]);
}

impl Backend for NvptxBackend {
    fn name(&self) -> &'static str {
        NAME
    }

    fn target(&self) -> Target {
        Target::Sm(self.sm)
    }

    fn configure(&self, _program: &Program, kernel: &Kernel) -> Result<crate::backend::KernelConfig, Unsupported> {
        legal::legal(kernel)?;
        Ok(crate::backend::KernelConfig::planned(describe(Target::Sm(self.sm), kernel)))
    }

    fn forms(&self) -> &'static [Emit] {
        &[Emit::Ptx, Emit::Llvm]
    }

    fn code_format(&self) -> CodeFormat {
        CodeFormat::Ptx
    }

    fn emit(&self, program: &Program, form: Emit) -> BackendResult<Vec<u8>> {
        let compiled = compile(program, self.sm)?;
        Ok(match form {
            Emit::Ptx => (compiled.summary(program, self.target(), "//") + &compiled.ptx).into_bytes(),
            Emit::Llvm => (compiled.summary(program, self.target(), ";") + &compiled.llvm).into_bytes(),
            other => return Err(BackendError::program(NAME, BackendErrorKind::Form(other.name()))),
        })
    }

    fn artifact(&self, program: &Program) -> BackendResult<Artifact> {
        let mut compiled = compile(program, self.sm)?;
        let info = CodeInfo { target: self.target().info().name, backend: NAME, format: CodeFormat::Ptx, requires: Vec::new() };
        let (mut manifest, constants) = compiled.layout.manifest(program, info, compiled.symbols, compiled.steps);
        let constants = constants.into_bytes(program);
        for (info, kernel) in manifest.kernels.iter_mut().zip(&program.kernels) {
            info.plan = match strategy(Target::Sm(self.sm), kernel) {
                Strategy::Wmma { shape, tile } => format!("wmma m{}n{}k{} tile {}x{}", shape.m, shape.n, shape.k, tile.bm, tile.bn),
                Strategy::Simt => "simt".into(),
                Strategy::Rows => "rows".into(),
            };
        }
        Ok(Artifact { manifest, code: compiled.ptx.into_bytes(), constants })
    }
}
