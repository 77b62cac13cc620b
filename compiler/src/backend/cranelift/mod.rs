//! The x86-64 backend: every kernel of a [`Program`] becomes one Cranelift function.
//!
//! Each function has the signature `(bufs, begin, end, scratch, rt) -> i32`: `bufs` is the
//! table of buffer addresses (the program's buffers, then one temporary per kernel), `begin..end`
//! the work items this call computes (the runtime splits a kernel's items across threads),
//! `scratch` this thread's private memory, `rt` the table of [`legal::Libcall`] functions. A
//! non-zero return is a run-time error of the kernel's op (an out-of-range gather index).
//!
//! fp16 and bf16 live in memory as 16-bit integers and compute in f32 (converted in software,
//! four lanes at a time in loops; [`emit`]). Contractions pack their operands into f32 panels
//! and run a 4×8 register-blocked micro-kernel with f32x4 FMA ([`gemm`]); constant weights are
//! packed at compile time, in their own type (an f16 weight keeps two bytes per element).
//!
//! The backend returns an [`Artifact`]: CLIF functions plus the schedule and memory layout.
//! The runtime (`f16c_runtime::jit`) compiles them to machine code and runs them.

pub mod emit;
mod gemm;
pub mod legal;
mod lower;

use crate::lower::{plan, Buffer, BufferKind, BufferPlan, Program};
use cranelift_codegen::ir::{Function, UserFuncName};
use cranelift_codegen::isa::{CallConv, TargetFrontendConfig};
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext};
use f16c_dialect::Location;
use std::fmt::Write;

/// Options of the Cranelift backend.
#[derive(Clone, Debug)]
pub struct Options {
    /// Use fused multiply-add in contractions (the host has FMA3). Without it, contractions
    /// multiply and add separately.
    pub fma: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options { fma: true }
    }
}

/// Why a kernel could not be compiled.
#[derive(Debug, thiserror::Error)]
#[error("{location}: error: '{op}' is not supported by the x86_64 JIT: {message}")]
pub struct CraneliftError {
    /// The op's location.
    pub location: Location,
    /// The op.
    pub op: &'static str,
    /// Why.
    pub message: String,
}

/// One call of a kernel function over `work` items.
#[derive(Clone, Debug)]
pub struct Step {
    /// Index into [`Artifact::functions`].
    pub function: usize,
    /// Number of work items.
    pub work: usize,
    /// Rough operation count of the whole step: the runtime uses threads only where it pays.
    pub cost: f64,
    /// The kernel it belongs to (for error messages).
    pub kernel: usize,
}

/// What the backend produces: functions, the order to run them, and the memory they use.
#[derive(Clone, Debug)]
pub struct Artifact {
    /// The lowered program.
    pub program: Program,
    /// The buffers the functions address: the program's, then pre-packed constants. A constant
    /// that was replaced by a packed copy is `used = false` and needs no memory.
    pub buffers: Vec<Buffer>,
    /// Which buffers the code reads or writes.
    pub used: Vec<bool>,
    /// The functions, with their names. Function 0 is the GEMM micro-kernel, which kernels call
    /// as `UserExternalName(0, 0)`: a module must declare the functions in this order.
    pub functions: Vec<(String, Function)>,
    /// Functions whose instruction order is their schedule: compile them without Cranelift's
    /// optimizer (`opt_level=none`), which would reorder and merge their loads. The GEMM
    /// micro-kernel is one.
    pub keep_order: Vec<usize>,
    /// Calls in execution order.
    pub steps: Vec<Step>,
    /// The arena plan, including kernel temporaries (slot `buffers.len() + k`).
    pub plan: BufferPlan,
    /// Bytes of private scratch each thread needs.
    pub scratch_bytes: usize,
}

impl Artifact {
    /// Bytes of constant data the code uses (weights as stored, after packing).
    pub fn weight_bytes(&self) -> usize {
        self.buffers
            .iter()
            .zip(&self.used)
            .filter(|(b, &u)| u && matches!(b.kind, BufferKind::Constant(_)))
            .map(|(b, _)| b.bytes)
            .sum()
    }

    /// Slots in the buffer table: buffers, then one temporary per kernel.
    pub fn table_len(&self) -> usize {
        self.buffers.len() + self.program.kernels.len()
    }

    /// The CLIF text of every function (what `f16c compile --emit=clif` prints).
    pub fn clif(&self) -> String {
        let mut s = String::new();
        for (name, f) in &self.functions {
            let _ = writeln!(s, "; {name}\n{}", f.display());
        }
        s
    }
}

/// The frontend configuration of x86-64 System V, which the generated functions assume.
pub fn frontend_config() -> TargetFrontendConfig {
    TargetFrontendConfig {
        default_call_conv: CallConv::SystemV,
        pointer_width: target_lexicon::PointerWidth::U64,
        page_size_align_log2: 12,
    }
}

/// Compiles a lowered program to CLIF.
pub fn compile(program: &Program, options: &Options) -> Result<Artifact, CraneliftError> {
    let mut cx = lower::Context::new(program);
    let micro = gemm::micro_kernel_function(&mut cx.fctx, options.fma);
    cx.functions.push((gemm::MICRO_KERNEL.to_string(), micro));
    for k in 0..program.kernels.len() {
        cx.kernel(k)?;
    }
    let lower::Context { buffers, used, functions, steps, temps, scratch_bytes, .. } = cx;
    let plan = plan::plan_with_temps(&buffers, &program.kernels, &program.outputs, &temps);
    Ok(Artifact { program: program.clone(), buffers, used, functions, keep_order: vec![0], steps, plan, scratch_bytes })
}

/// Builds one kernel function with `body`.
fn build_function(
    name: &str,
    ctx: &mut FunctionBuilderContext,
    body: impl FnOnce(&mut emit::Fx) -> Result<(), String>,
) -> Result<Function, String> {
    let mut func = Function::with_name_signature(UserFuncName::testcase(name), emit::Fx::signature());
    let fb = FunctionBuilder::new(&mut func, ctx);
    let mut fx = emit::Fx::new(fb);
    body(&mut fx)?;
    fx.finish(0);
    Ok(func)
}
