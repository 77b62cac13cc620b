//! The LLVM CPU backend, first step: x86-64 ahead of time through the shared LLVM emitter
//! ([`crate::backend::llvm`]), one function per kernel in the CPU kernel ABI of
//! [`f16c_core::abi`], linked into a shared object that the runtime's one CPU executor runs.
//!
//! What it is for today: it runs the very family bodies the NVPTX backend wraps in GPU threads
//! (elementwise, the paired half2 form, reductions, pooling, copies, gathers, row regions,
//! SIMT contractions and their epilogue) on this machine, so that the parity suite checks them
//! against the reference interpreter bit for bit (`tests/integration/llvm_cpu.rs`). Math
//! functions go through the runtime's `rt` table (bit-identical), bf16 rounding and f64 → f16/
//! bf16 need no compiler runtime.
//!
//! Not yet (issue 12): the AArch64 target, vector and register-blocked contraction code (a
//! contraction here is one output per work item), a `--backend=llvm` spelling on the command
//! line, and the C header. The code is compiled for `x86-64-v3` (AVX2, FMA, F16C).

use super::layout::{CodeInfo, Layout};
use super::llvm::families::Items;
use super::llvm::machine::{self, MachineSpec};
use super::llvm::{Built, Ir, MathImpl};
use super::{Backend, BackendError, BackendErrorKind, BackendResult, Emit, Unsupported};
use crate::lower::{Kernel, KernelKind, Program};
use crate::target::Target;
use f16c_core::artifact::{Artifact, CodeFormat, Step};
use inkwell::context::Context;
use inkwell::values::{FunctionValue, IntValue, PointerValue};

/// The backend's name in errors and manifests.
pub const NAME: &str = "llvm-x86_64";

/// Prefix of every kernel symbol.
pub const SYMBOL_PREFIX: &str = "f16c_";

/// The CPU the code is compiled for, and the features the runtime checks before loading it
/// (the runtime's names).
const CPU: &str = "x86-64-v3";
const REQUIRES: &[&str] = &["sse3", "ssse3", "sse41", "sse42", "popcnt", "avx", "avx2", "fma", "bmi1", "bmi2", "lzcnt", "f16c"];

/// The LLVM x86-64 backend.
pub struct LlvmCpuBackend;

/// A compiled program: the object file, the optimised LLVM IR, the assembly, the buffer
/// table and the schedule.
pub struct Compiled {
    /// The buffer table.
    pub layout: Layout,
    /// Kernel symbols; steps index them.
    pub symbols: Vec<String>,
    /// Calls in execution order.
    pub steps: Vec<Step>,
    /// The optimised LLVM IR.
    pub llvm: String,
    /// Host assembly.
    pub asm: String,
    /// A relocatable ELF object.
    pub object: Vec<u8>,
}

fn codegen(kernel: Option<&Kernel>, message: String) -> BackendError {
    BackendError::codegen(NAME, kernel, message)
}

/// Compiles a (legal) program.
pub fn compile(program: &Program) -> BackendResult<Compiled> {
    let cx = Context::create();
    let mut ir = Ir::new(&cx, &program.name, MathImpl::RuntimeTable);
    let mut layout = Layout::new(program);
    let mut symbols = Vec::new();
    let mut steps = Vec::new();
    for (k, kernel) in program.kernels.iter().enumerate() {
        if let KernelKind::Rows(r) = &kernel.kind {
            // A row's temporary is the thread's scratch.
            layout.scratch(Ir::rows_temp_bytes(r));
        }
        for items in Items::of(&kernel.kind) {
            let name = format!("{SYMBOL_PREFIX}{}{}", kernel.name, items.suffix());
            items_function(&mut ir, &name, |ir, i, params| {
                ir.item(items, i, params.scratch, |ir| {
                    let code = ir.i32(f16c_core::abi::Status::IndexOutOfRange as i32);
                    ir.b.build_store(params.status, code).built();
                })
            })
            .map_err(|m| codegen(Some(kernel), m))?;
            symbols.push(name);
            steps.push(Step { function: symbols.len() - 1, work: items.work(), cost: items.cost(), kernel: k, launch: None });
        }
    }
    compiler_runtime(&mut ir);
    layout.finish(program);
    let spec = MachineSpec { triple: "x86_64-unknown-linux-gnu", cpu: CPU.to_string(), features: String::new() };
    let tm = machine::machine(&spec).map_err(|m| codegen(None, m))?;
    ir.verify().map_err(|m| codegen(None, m))?;
    machine::optimize(&ir.module, &tm).map_err(|m| codegen(None, m))?;
    let llvm = ir.text();
    let asm = machine::assembly(&ir.module, &tm).map_err(|m| codegen(None, m))?;
    let object = machine::object(&ir.module, &tm).map_err(|m| codegen(None, m))?;
    Ok(Compiled { layout, symbols, steps, llvm, asm, object })
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
    let r = ir.to_low(x, f16c_dialect::DType::BF16).expect("f32 rounds without a libcall");
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
fn items_function<'ctx>(ir: &mut Ir<'ctx>, name: &str, body: impl FnOnce(&mut Ir<'ctx>, IntValue<'ctx>, &Params<'ctx>) -> Result<(), String>) -> Result<(), String> {
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
    result
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
        NAME
    }

    fn target(&self) -> Target {
        Target::X86_64
    }

    fn legal(&self, kernel: &Kernel) -> Result<(), Unsupported> {
        match &kernel.kind {
            KernelKind::Contraction(c) if !c.acc.is_float() => Err(Unsupported(format!("integer contractions ({} accumulation)", c.acc))),
            KernelKind::Pool(p) if !p.input.ty.dtype.is_float() => Err(Unsupported("integer pooling".into())),
            KernelKind::Reduction(r) if r.kind.is_some() && r.input.ty.dtype.is_float() != r.output.ty.dtype.is_float() => {
                Err(Unsupported(format!("a reduction from {} to {}", r.input.ty.dtype, r.output.ty.dtype)))
            }
            _ => Ok(()),
        }
    }

    fn forms(&self) -> &'static [Emit] {
        &[Emit::Llvm, Emit::Asm, Emit::Obj]
    }

    fn code_format(&self) -> CodeFormat {
        CodeFormat::ElfSharedObject
    }

    fn emit(&self, program: &Program, form: Emit) -> BackendResult<Vec<u8>> {
        let c = compile(program)?;
        Ok(match form {
            Emit::Llvm => c.llvm.into_bytes(),
            Emit::Asm => c.asm.into_bytes(),
            Emit::Obj => c.object,
            other => return Err(BackendError::program(NAME, BackendErrorKind::Form(other.name()))),
        })
    }

    fn artifact(&self, program: &Program) -> BackendResult<Artifact> {
        let c = compile(program)?;
        let code = super::link::shared_object(&c.object).map_err(|m| BackendError::program(NAME, BackendErrorKind::Tool(m)))?;
        let info = CodeInfo { target: "x86_64", backend: NAME, format: CodeFormat::ElfSharedObject, requires: REQUIRES.iter().map(|s| s.to_string()).collect() };
        let (manifest, constants) = c.layout.manifest(program, info, c.symbols, c.steps);
        Ok(Artifact { manifest, code, constants })
    }
}
