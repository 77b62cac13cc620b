//! The x86-64 JIT: compiles a Cranelift [`Artifact`] to machine code in this process and runs it.
//!
//! A [`Model`] owns the code, its constants (stored as the artifact packed them: fp16 weights
//! take two bytes per element) and the schedule. Each [`Model::run`] checks its inputs at the
//! boundary, allocates one arena for the buffer plan and one scratch area per thread, and calls
//! the kernels in order; large kernels are split across threads by work item. A `Model` is
//! `Send + Sync`: runs share only immutable code and constants, so several threads may run one
//! model at once.
//!
//! ```no_run
//! use f16c_runtime::jit::{CompileOptions, Model};
//! use f16c_runtime::Tensor;
//! let model = Model::compile_file("net.mlir".as_ref(), &CompileOptions::fp16()).unwrap();
//! let x = Tensor::from_f32(vec![1, 16], vec![0.5; 16]).unwrap();
//! let y = model.run(&[x]).unwrap();
//! ```

use crate::{Result, RuntimeError};
use cranelift_codegen::settings::{self, Configurable};
use cranelift_jit::{JITBuilder, JITModule};
use cranelift_module::{Linkage, Module as _};
use f16c_compiler::backend::cranelift::{self as backend, legal::Libcall, Artifact};
use f16c_compiler::lower::{self, BufferKind, Operand};
use f16c_compiler::pass::{registry, PassError, PassManager};
use f16c_dialect::{Data, Diagnostics, Graph, Tensor};
use half::{bf16, f16};
use std::path::Path;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// A kernel function: `(bufs, begin, end, scratch, rt) -> status`.
type KernelFn = unsafe extern "C" fn(*const *mut u8, u64, u64, *mut u8, *const usize) -> i32;

/// Steps cheaper than this many operations run on one thread (spawning costs more).
const PARALLEL_MIN_COST: f64 = 2.0e5;

/// How to compile a model for the JIT.
#[derive(Clone, Debug)]
pub struct CompileOptions {
    /// `fp32` (nothing lowered), `fp16` or `bf16`.
    pub precision: String,
    /// `O0`..`O3` or a policy file.
    pub policy: String,
    /// Worker threads for large kernels (1: none).
    pub threads: usize,
    /// The function to compile (default: the only one, or `forward`).
    pub function: Option<String>,
}

impl Default for CompileOptions {
    fn default() -> Self {
        CompileOptions { precision: "fp32".into(), policy: "O1".into(), threads: default_threads(), function: None }
    }
}

impl CompileOptions {
    /// fp16 with the default policy (O1).
    pub fn fp16() -> Self {
        CompileOptions { precision: "fp16".into(), ..Self::default() }
    }

    /// bf16 with the default policy (O1).
    pub fn bf16() -> Self {
        CompileOptions { precision: "bf16".into(), ..Self::default() }
    }
}

/// The machine's available parallelism.
pub fn default_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// 64-byte aligned memory.
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Line([u8; 64]);

struct Aligned(Vec<Line>);

impl Aligned {
    fn zeroed(bytes: usize) -> Aligned {
        Aligned(vec![Line([0; 64]); bytes.div_ceil(64).max(1)])
    }
    fn from_bytes(b: &[u8]) -> Aligned {
        let mut a = Aligned::zeroed(b.len());
        a.bytes_mut()[..b.len()].copy_from_slice(b);
        a
    }
    fn ptr(&self) -> *mut u8 {
        self.0.as_ptr() as *mut u8
    }
    fn bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: `Line` is 64 plain bytes; the vector holds `len * 64` initialised bytes.
        unsafe { std::slice::from_raw_parts_mut(self.0.as_mut_ptr() as *mut u8, self.0.len() * 64) }
    }
}

/// How long each stage of a compilation took.
#[derive(Clone, Debug, Default)]
pub struct CompileTimes {
    /// Parsing and verifying the MLIR.
    pub parse: Duration,
    /// canonicalize, assign-precision, insert-casts.
    pub passes: Duration,
    /// Lowering and CLIF generation.
    pub lower: Duration,
    /// Cranelift: CLIF to machine code.
    pub codegen: Duration,
}

/// A compiled model, ready to run. `Send + Sync`.
pub struct Model {
    /// Owns the code memory; never used after compilation (hence the mutex: `JITModule` is
    /// `Send` but not `Sync`).
    _module: Mutex<JITModule>,
    functions: Vec<KernelFn>,
    artifact: Artifact,
    /// Constant memory per table slot.
    constants: Vec<Option<Aligned>>,
    threads: usize,
    /// Compile-time breakdown (`bench`).
    pub times: CompileTimes,
}

// SAFETY: the function pointers point into code owned by `_module`, which lives as long as the
// model and is never modified after `finalize_definitions`; constants are immutable after
// construction. Runs allocate their own mutable memory.
unsafe impl Send for Model {}
unsafe impl Sync for Model {}

/// The libcall table, in [`Libcall::ALL`] order: the same Rust functions the reference
/// interpreter uses, so results are bit-identical.
fn libcall_table() -> Vec<usize> {
    extern "C" fn exp_f32(x: f32) -> f32 {
        x.exp()
    }
    extern "C" fn log_f32(x: f32) -> f32 {
        x.ln()
    }
    extern "C" fn tanh_f32(x: f32) -> f32 {
        x.tanh()
    }
    extern "C" fn erf_f32(x: f32) -> f32 {
        libm::erff(x)
    }
    extern "C" fn pow_f32(x: f32, y: f32) -> f32 {
        x.powf(y)
    }
    extern "C" fn exp_f64(x: f64) -> f64 {
        x.exp()
    }
    extern "C" fn log_f64(x: f64) -> f64 {
        x.ln()
    }
    extern "C" fn tanh_f64(x: f64) -> f64 {
        x.tanh()
    }
    extern "C" fn erf_f64(x: f64) -> f64 {
        libm::erf(x)
    }
    extern "C" fn pow_f64(x: f64, y: f64) -> f64 {
        x.powf(y)
    }
    extern "C" fn f64_to_f16(x: f64) -> f32 {
        f16::from_f64(x).to_f32()
    }
    extern "C" fn f64_to_bf16(x: f64) -> f32 {
        bf16::from_f64(x).to_f32()
    }
    Libcall::ALL
        .iter()
        .map(|lc| match lc {
            Libcall::ExpF32 => exp_f32 as extern "C" fn(f32) -> f32 as usize,
            Libcall::LogF32 => log_f32 as extern "C" fn(f32) -> f32 as usize,
            Libcall::TanhF32 => tanh_f32 as extern "C" fn(f32) -> f32 as usize,
            Libcall::ErfF32 => erf_f32 as extern "C" fn(f32) -> f32 as usize,
            Libcall::PowF32 => pow_f32 as extern "C" fn(f32, f32) -> f32 as usize,
            Libcall::ExpF64 => exp_f64 as extern "C" fn(f64) -> f64 as usize,
            Libcall::LogF64 => log_f64 as extern "C" fn(f64) -> f64 as usize,
            Libcall::TanhF64 => tanh_f64 as extern "C" fn(f64) -> f64 as usize,
            Libcall::ErfF64 => erf_f64 as extern "C" fn(f64) -> f64 as usize,
            Libcall::PowF64 => pow_f64 as extern "C" fn(f64, f64) -> f64 as usize,
            Libcall::F64ToF16 => f64_to_f16 as extern "C" fn(f64) -> f32 as usize,
            Libcall::F64ToBf16 => f64_to_bf16 as extern "C" fn(f64) -> f32 as usize,
        })
        .collect()
}

/// The standard pipeline before lowering: canonicalize, then (unless `fp32`) assign-precision
/// and insert-casts with the options' precision and policy for the `x86_64` target.
pub fn prepare(module: &mut f16c_dialect::Module, options: &CompileOptions) -> Result<()> {
    let mut pm = PassManager::new();
    let usage = |e: PassError| RuntimeError::BadInput(e.to_string());
    pm.add(registry::create("canonicalize", "").map_err(usage)?);
    if options.precision != "fp32" {
        let opts = format!("precision={} policy={} target=x86_64", options.precision, options.policy);
        pm.add(registry::create("assign-precision", &opts).map_err(usage)?);
        pm.add(registry::create("insert-casts", "").map_err(usage)?);
    }
    match pm.run(module, &mut std::io::sink()) {
        Ok(_) => Ok(()),
        Err(PassError::Diagnostics(d)) => Err(RuntimeError::Invalid(d)),
        Err(e) => Err(usage(e)),
    }
}

/// The host's Cranelift ISA, optimising for speed, and whether it has FMA.
fn host_isa() -> Result<(cranelift_codegen::isa::OwnedTargetIsa, bool)> {
    host_isa_at("speed")
}

/// The host ISA at a Cranelift `opt_level` (`speed`, or `none` for [`Artifact::keep_order`]).
fn host_isa_at(opt_level: &str) -> Result<(cranelift_codegen::isa::OwnedTargetIsa, bool)> {
    let mut flags = settings::builder();
    let set = |f: &mut settings::Builder, k: &str, v: &str| f.set(k, v).map_err(|e| RuntimeError::Jit(format!("cranelift setting {k}: {e}")));
    set(&mut flags, "opt_level", opt_level)?;
    // The backend's output is verified in the test suite; skip the verifier at run time.
    set(&mut flags, "enable_verifier", "false")?;
    let isa_builder = cranelift_native::builder().map_err(|e| RuntimeError::Jit(format!("this host is not supported by Cranelift: {e}")))?;
    let isa = isa_builder.finish(settings::Flags::new(flags)).map_err(|e| RuntimeError::Jit(e.to_string()))?;
    let fma = isa.isa_flags().iter().any(|f| f.name == "has_fma" && f.as_bool() == Some(true));
    Ok((isa, fma))
}

/// The host machine code of every function of `artifact`, as Cranelift prints it (what
/// `f16c compile --target=x86_64 --emit=asm` shows).
pub fn disassemble(artifact: &Artifact) -> Result<String> {
    use std::fmt::Write;
    let (isa, _) = host_isa()?;
    let (as_written, _) = host_isa_at("none")?;
    let mut out = String::new();
    for (i, (name, func)) in artifact.functions.iter().enumerate() {
        let isa = if artifact.keep_order.contains(&i) { &as_written } else { &isa };
        let mut ctx = cranelift_codegen::Context::for_function(func.clone());
        ctx.set_disasm(true);
        let code = compile_with(&mut ctx, &**isa, name)?;
        let _ = writeln!(out, "; {name}: {} bytes\n{}", code.code_buffer().len(), code.vcode.as_deref().unwrap_or(""));
    }
    Ok(out)
}

/// Compiles `ctx`'s function for `isa` by hand (where the module does not do it for us).
fn compile_with<'c>(
    ctx: &'c mut cranelift_codegen::Context,
    isa: &dyn cranelift_codegen::isa::TargetIsa,
    name: &str,
) -> Result<&'c cranelift_codegen::CompiledCode> {
    let mut ctrl = cranelift_codegen::control::ControlPlane::default();
    ctx.compile(isa, &mut ctrl).map_err(|e| RuntimeError::Jit(format!("{name}: {:?}", e.inner)))
}

/// Backend options for this host.
pub fn host_options() -> Result<backend::Options> {
    let (_, fma) = host_isa()?;
    Ok(backend::Options { fma })
}

impl Model {
    /// Compiles a model file (MLIR text) for this host.
    pub fn compile_file(path: &Path, options: &CompileOptions) -> Result<Model> {
        let source = std::fs::read_to_string(path)
            .map_err(|e| RuntimeError::BadInput(format!("cannot read '{}': {e}", path.display())))?;
        Model::compile_source(&source, &path.display().to_string(), options)
    }

    /// Compiles MLIR text for this host. Errors are rendered diagnostics.
    pub fn compile_source(source: &str, file: &str, options: &CompileOptions) -> Result<Model> {
        let t0 = Instant::now();
        let render = |d: Diagnostics| RuntimeError::Compile(d.render(Some(source)));
        let mut module = f16c_dialect::import::parse_module(source, file).map_err(render)?;
        let parse = t0.elapsed();
        let t1 = Instant::now();
        prepare(&mut module, options).map_err(|e| match e {
            RuntimeError::Invalid(d) => render(d),
            e => e,
        })?;
        let passes = t1.elapsed();
        let index = match &options.function {
            Some(name) => module.functions.iter().position(|g| &g.name == name),
            None if module.functions.len() == 1 => Some(0),
            None => module.functions.iter().position(|g| g.name == "forward"),
        }
        .ok_or_else(|| RuntimeError::BadInput(format!("{file}: no function to run (name one with --function)")))?;
        let mut model = Model::compile_graph(&module.functions[index], options.threads)?;
        model.times.parse = parse;
        model.times.passes = passes;
        Ok(model)
    }

    /// Compiles one verified function for this host.
    pub fn compile_graph(g: &Graph, threads: usize) -> Result<Model> {
        f16c_dialect::verify::verify(g)?;
        let t0 = Instant::now();
        let program = lower::lower(g).map_err(|e| RuntimeError::Compile(e.to_string()))?;
        let options = host_options()?;
        let artifact = backend::compile(&program, &options).map_err(|e| RuntimeError::Compile(e.to_string()))?;
        let lower_time = t0.elapsed();
        let mut model = Model::from_artifact(artifact, threads)?;
        model.times.lower = lower_time;
        Ok(model)
    }

    /// Compiles an artifact's functions to machine code.
    pub fn from_artifact(artifact: Artifact, threads: usize) -> Result<Model> {
        let t0 = Instant::now();
        let (isa, _) = host_isa()?;
        let (as_written, _) = host_isa_at("none")?;
        let builder = JITBuilder::with_isa(isa, cranelift_module::default_libcall_names());
        let mut module = JITModule::new(builder);
        let jit = |e: cranelift_module::ModuleError| RuntimeError::Jit(format!("{e:?}"));
        let mut ids = Vec::new();
        for (i, (name, func)) in artifact.functions.iter().enumerate() {
            let id = module.declare_function(name, Linkage::Local, &func.signature).map_err(jit)?;
            let mut ctx = module.make_context();
            ctx.func = func.clone();
            if artifact.keep_order.contains(&i) {
                // Compiled on its own at opt_level=none; it calls nothing, so it has no
                // relocations to carry over.
                let code = compile_with(&mut ctx, &*as_written, name)?;
                if !code.buffer.relocs().is_empty() {
                    return Err(RuntimeError::Jit(format!("{name}: a function compiled as written must not call or reference anything")));
                }
                let align = (code.buffer.alignment as u64).max(16);
                let bytes = code.code_buffer().to_vec();
                module.define_function_bytes(id, align, &bytes, &[]).map_err(jit)?;
            } else {
                module.define_function(id, &mut ctx).map_err(jit)?;
            }
            ids.push(id);
        }
        module.finalize_definitions().map_err(jit)?;
        let functions = ids
            .iter()
            .map(|&id| {
                let p = module.get_finalized_function(id);
                // SAFETY: every function was built with `Fx::signature`, which is `KernelFn`'s.
                unsafe { std::mem::transmute::<*const u8, KernelFn>(p) }
            })
            .collect();
        let constants = artifact
            .buffers
            .iter()
            .zip(&artifact.used)
            .map(|(b, &used)| match &b.kind {
                BufferKind::Constant(bytes) if used => Some(Aligned::from_bytes(bytes)),
                _ => None,
            })
            .collect();
        let codegen = t0.elapsed();
        Ok(Model {
            _module: Mutex::new(module),
            functions,
            artifact,
            constants,
            threads: threads.max(1),
            times: CompileTimes { codegen, ..CompileTimes::default() },
        })
    }

    /// The artifact this model runs (its program, plan and CLIF).
    pub fn artifact(&self) -> &Artifact {
        &self.artifact
    }

    /// Bytes of weights the model holds.
    pub fn weight_bytes(&self) -> usize {
        self.artifact.weight_bytes()
    }

    /// The function's argument types.
    pub fn inputs(&self) -> &[Operand] {
        &self.artifact.program.inputs
    }

    /// Sets the number of threads used by later runs.
    pub fn set_threads(&mut self, threads: usize) {
        self.threads = threads.max(1);
    }

    /// Runs the model. Inputs must match the function's arguments in count, shape and type.
    pub fn run(&self, inputs: &[Tensor]) -> Result<Vec<Tensor>> {
        let program = &self.artifact.program;
        if inputs.len() != program.inputs.len() {
            return Err(RuntimeError::BadInput(format!(
                "'@{}' takes {} input(s), {} given",
                program.name,
                program.inputs.len(),
                inputs.len()
            )));
        }
        for (k, (want, t)) in program.inputs.iter().zip(inputs).enumerate() {
            if t.ty() != want.ty {
                return Err(RuntimeError::BadInput(format!(
                    "input #{k} of '@{}' must be {}, got {} (shape {:?}, element type {})",
                    program.name,
                    want.ty,
                    t.ty(),
                    t.shape(),
                    t.dtype()
                )));
            }
        }
        let plan = &self.artifact.plan;
        let arena = Aligned::zeroed(plan.arena_bytes);
        let n = self.artifact.buffers.len();
        let mut table: Vec<*mut u8> = vec![std::ptr::null_mut(); self.artifact.table_len()];
        for (slot, b) in self.artifact.buffers.iter().enumerate() {
            table[slot] = match &b.kind {
                BufferKind::Input(k) => data_ptr(inputs[*k].data()),
                BufferKind::Constant(_) => self.constants[slot].as_ref().map_or(std::ptr::null_mut(), Aligned::ptr),
                // SAFETY (offset): the plan places every buffer inside `arena_bytes`.
                BufferKind::Intermediate => plan.offset(lower::BufferId(slot)).map_or(std::ptr::null_mut(), |o| unsafe { arena.ptr().add(o) }),
            };
        }
        for k in 0..program.kernels.len() {
            if let Some(o) = plan.temp_offset(n, k) {
                // SAFETY: as above.
                table[n + k] = unsafe { arena.ptr().add(o) };
            }
        }
        let rt = libcall_table();
        let scratch_bytes = self.artifact.scratch_bytes;
        let mut scratch: Vec<Aligned> = vec![Aligned::zeroed(scratch_bytes)];
        for step in &self.artifact.steps {
            let f = self.functions[step.function];
            let threads = if step.cost >= PARALLEL_MIN_COST { self.threads.min(step.work) } else { 1 };
            while scratch.len() < threads {
                scratch.push(Aligned::zeroed(scratch_bytes));
            }
            let status = if threads <= 1 {
                // SAFETY: the table holds a valid address for every buffer the function uses,
                // each of the size the program says (inputs were checked above).
                unsafe { f(table.as_ptr(), 0, step.work as u64, scratch[0].ptr(), rt.as_ptr()) }
            } else {
                let chunk = step.work.div_ceil(threads);
                let table = SendPtr(table.as_ptr());
                let rtp = SendPtr(rt.as_ptr());
                std::thread::scope(|s| {
                    let handles: Vec<_> = (1..threads)
                        .map(|t| {
                            let sp = SendPtr(scratch[t].ptr() as *const u8);
                            let (b, e) = (t * chunk, ((t + 1) * chunk).min(step.work));
                            s.spawn(move || {
                                let (table, rtp, sp) = (table, rtp, sp);
                                // SAFETY: as above; work items write disjoint output elements.
                                unsafe { f(table.0, b as u64, e as u64, sp.0 as *mut u8, rtp.0) }
                            })
                        })
                        .collect();
                    // SAFETY: as above.
                    let first = unsafe { f(table.0, 0, chunk.min(step.work) as u64, scratch[0].ptr(), rtp.0) };
                    handles.into_iter().map(|h| h.join().unwrap_or(-1)).fold(first, |a, b| if a != 0 { a } else { b })
                })
            };
            if status != 0 {
                let k = &program.kernels[step.kernel];
                return Err(RuntimeError::Eval {
                    location: k.location.clone(),
                    op: k.op_name,
                    message: match status {
                        1 => "an index is out of range".to_string(),
                        s => format!("kernel '{}' failed (status {s})", k.name),
                    },
                });
            }
        }
        program
            .outputs
            .iter()
            .map(|o| {
                let p = table[o.buffer.0];
                let bytes = o.ty.byte_size();
                // SAFETY: the output's slot holds `bytes` bytes (its type's size).
                let slice = unsafe { std::slice::from_raw_parts(p as *const u8, bytes) };
                let data = Data::from_le_bytes(o.ty.dtype, slice).expect("whole elements");
                Ok(Tensor::new(o.ty.shape.clone(), data).expect("type's element count"))
            })
            .collect()
    }
}

#[derive(Clone, Copy)]
struct SendPtr<T>(*const T);
// SAFETY: used only to hand read-only tables and per-thread scratch to scoped threads.
unsafe impl<T> Send for SendPtr<T> {}

/// The address of a tensor's elements (the generated code reads them in place).
fn data_ptr(d: &Data) -> *mut u8 {
    match d {
        Data::F32(v) => v.as_ptr() as *mut u8,
        Data::F16(v) => v.as_ptr() as *mut u8,
        Data::BF16(v) => v.as_ptr() as *mut u8,
        Data::F64(v) => v.as_ptr() as *mut u8,
        // `bool` is one byte holding 0 or 1, as the code reads i1.
        Data::I1(v) => v.as_ptr() as *mut u8,
        Data::I8(v) => v.as_ptr() as *mut u8,
        Data::I32(v) => v.as_ptr() as *mut u8,
        Data::I64(v) => v.as_ptr() as *mut u8,
    }
}
