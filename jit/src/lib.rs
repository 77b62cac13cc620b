//! # f16c-jit: compile a model for this x86-64 host and run it, in process
//!
//! The host API. [`Model::compile_file`] runs the compile driver (`f16c_compiler::driver`: the
//! same pipeline as `f16c compile`), compiles the Cranelift backend's functions to machine code
//! in memory, and hands them to the runtime's one CPU executor (`f16c_runtime::exec`), the same
//! one that runs artifacts loaded by `f16c-run`. The JIT therefore sits above both stacks: it
//! needs the compiler to compile and the runtime to run.
//!
//! Inputs and outputs follow the fp32 feed/fetch contract: a model compiled in fp16 still takes
//! and returns f32 tensors (casts happen inside), unless the graph itself says otherwise.
//!
//! ```no_run
//! use f16c_jit::{CompileOptions, Model};
//! use f16c_runtime::Tensor;
//! let model = Model::compile_file("net.mlir".as_ref(), &CompileOptions::fp16()).unwrap();
//! let x = Tensor::from_f32(vec![1, 16], vec![0.5; 16]).unwrap();
//! let y = model.run(&[x]).unwrap();
//! ```

#![deny(missing_docs)]

use cranelift_codegen::isa::{OwnedTargetIsa, TargetIsa};
use cranelift_jit::{ArenaMemoryProvider, JITBuilder, JITModule};
use cranelift_module::Linkage;
use f16c_compiler::backend::cranelift::{self as backend, host_isa};
use f16c_compiler::backend::layout::CodeInfo;
use f16c_compiler::driver;
use f16c_compiler::policy::Precision;
use f16c_compiler::target::{Cpu, Target};
use f16c_core::abi::KernelFn;
use f16c_core::artifact::CodeFormat;
use f16c_dialect::{Diagnostics, Graph, Module};
use f16c_runtime::exec::Executor;
use f16c_runtime::{RuntimeError, Tensor, TensorType};
use std::path::Path;
use std::sync::Mutex;
use std::time::{Duration, Instant};

pub use f16c_runtime::exec::default_threads;

/// Errors of the JIT.
#[derive(Debug, thiserror::Error)]
pub enum JitError {
    /// The model could not be compiled (located diagnostics; render them against the source).
    #[error(transparent)]
    Diagnostics(#[from] Diagnostics),
    /// The model could not be compiled (diagnostics already rendered against the source).
    #[error("{0}")]
    Compile(String),
    /// A bad option, file or function name.
    #[error("{0}")]
    Usage(String),
    /// Running failed (bad inputs, a kernel's run-time error).
    #[error(transparent)]
    Run(#[from] RuntimeError),
    /// A control-flow op could not run (a condition that is not one i1).
    #[error("{0}")]
    ControlFlow(String),
}

impl From<f16c_dialect::semantics::EvalError> for JitError {
    fn from(e: f16c_dialect::semantics::EvalError) -> JitError {
        JitError::ControlFlow(e.0)
    }
}

/// Result alias of the JIT.
pub type Result<T> = std::result::Result<T, JitError>;

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
    /// Fold batch norms (per-channel add/sub/mul after a convolution) into the convolution's
    /// weights and bias: faster, and different from the graph as written by f32 rounding only
    /// (default true; the `fold-batch-norm` pass).
    pub fold_batch_norm: bool,
    /// The x86-64 level the code may use (`--cpu`; `None`: this machine's). Compiling for a
    /// level above this machine's is refused, since the code runs here.
    pub cpu: Option<Cpu>,
}

impl Default for CompileOptions {
    fn default() -> Self {
        CompileOptions { precision: "fp32".into(), policy: "O1".into(), threads: default_threads(), function: None, fold_batch_norm: true, cpu: None }
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

    /// The Cranelift backend's options for [`CompileOptions::cpu`].
    pub fn backend_options(&self) -> Result<backend::Options> {
        backend::Options::for_cpu(self.cpu.unwrap_or(Cpu::Native)).map_err(|e| JitError::Diagnostics(Diagnostics::single(e.to_diagnostic())))
    }

    /// The driver's options for the x86_64 target.
    pub fn driver_options(&self) -> Result<driver::Options> {
        let precision = Precision::parse(&self.precision)
            .ok_or_else(|| JitError::Usage(format!("unknown precision '{}' (fp16, bf16 or fp32)", self.precision)))?;
        Ok(driver::Options {
            policy: self.policy.clone(),
            fold_batch_norm: self.fold_batch_norm,
            ..driver::Options::new(Target::X86_64).with_precision(precision)
        })
    }
}

/// The standard pipeline before lowering (the driver's), for the x86_64 target.
pub fn prepare(module: &mut Module, options: &CompileOptions) -> Result<()> {
    match driver::prepare(module, &options.driver_options()?, &[]) {
        Ok(_) => Ok(()),
        Err(f16c_compiler::PassError::Diagnostics(d)) => Err(JitError::Diagnostics(d)),
        Err(e) => Err(JitError::Usage(e.to_string())),
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

/// The memory a model's runs use besides their inputs and outputs.
#[derive(Clone, Copy, Debug, Default)]
pub struct Memory {
    /// Bytes of the arena (intermediates and kernel temporaries).
    pub arena_bytes: usize,
    /// The liveness lower bound on the arena.
    pub lower_bound: usize,
    /// Bytes of scratch per thread.
    pub scratch_bytes: usize,
}

mod staged;

/// What a model runs: one program on the executor, or stages around control flow.
enum Body {
    Flat(Executor),
    Staged(staged::Staged),
}

/// A compiled model, ready to run. `Send + Sync`.
pub struct Model {
    body: Body,
    /// Compile-time breakdown (`bench`).
    pub times: CompileTimes,
    /// The memory plan (`bench`).
    pub memory: Memory,
}

impl Model {
    /// Compiles a model file (MLIR text) for this host.
    pub fn compile_file(path: &Path, options: &CompileOptions) -> Result<Model> {
        let source = std::fs::read_to_string(path).map_err(|e| JitError::Usage(format!("cannot read '{}': {e}", path.display())))?;
        Model::compile_source(&source, &path.display().to_string(), options)
    }

    /// Compiles MLIR text for this host. Errors are rendered against the source.
    pub fn compile_source(source: &str, file: &str, options: &CompileOptions) -> Result<Model> {
        let render = |d: Diagnostics| JitError::Compile(d.render(Some(source)));
        let t0 = Instant::now();
        let module = f16c_dialect::import::parse_module(source, file).map_err(render)?;
        let parse = t0.elapsed();
        let t1 = Instant::now();
        let compiled = driver::compile(module, &options.driver_options()?, options.function.as_deref(), &[], false).map_err(|e| match e {
            driver::CompileError::Diagnostics(d) => render(d),
            driver::CompileError::Function(m) => JitError::Usage(format!("{file}: {m}")),
            driver::CompileError::Usage(m) => JitError::Usage(m),
        })?;
        let passes = t1.elapsed();
        let backend_options = options.backend_options()?;
        let mut model = Model::compile_graph_with(compiled.graph(), options.threads, &backend_options).map_err(|e| match e {
            JitError::Diagnostics(d) => render(d),
            e => e,
        })?;
        model.times.parse = parse;
        model.times.passes = passes;
        Ok(model)
    }

    /// Compiles one function for this host.
    pub fn compile_graph(g: &Graph, threads: usize) -> Result<Model> {
        let options = backend::Options::host().map_err(|e| Diagnostics::single(e.to_diagnostic()))?;
        Model::compile_graph_with(g, threads, &options)
    }

    /// [`Model::compile_graph`] with the backend's options given (what this host has, less
    /// something: to compare the bf16 pair loops with the f32 ones on one machine).
    pub fn compile_graph_with(g: &Graph, threads: usize, options: &backend::Options) -> Result<Model> {
        Model::compile_graph_cached(g, threads, options, None)
    }

    /// [`Model::compile_graph_with`], reusing the machine code of functions `cache` holds from
    /// earlier compiles and keeping this compile's there (the probes of `f16c check --fix`,
    /// which compile one model in many precisions).
    pub fn compile_graph_cached(g: &Graph, threads: usize, options: &backend::Options, cache: Option<&backend::CodeCache>) -> Result<Model> {
        let t0 = Instant::now();
        if g.node_ids().any(|id| g.op(id).is_control_flow()) {
            let body = Body::Staged(staged::Staged::compile(g, threads)?);
            return Ok(Model { body, times: CompileTimes { lower: t0.elapsed(), ..CompileTimes::default() }, memory: Memory::default() });
        }
        let mut program = driver::lower_for(g, &backend::CRANELIFT)?;
        let diag = |e: f16c_compiler::backend::BackendError| Diagnostics::single(e.to_diagnostic());
        let (isa, _) = host_isa("speed", false).map_err(diag)?;
        let (as_written, _) = host_isa("none", false).map_err(diag)?;
        let mut compiled = backend::compile(&program, options).map_err(diag)?;
        // The code runs here: a level above this machine's would fault in its first loop.
        let missing: Vec<&str> = compiled.requires.iter().map(String::as_str).filter(|f| !f16c_runtime::loader::has_feature(f)).collect();
        if !missing.is_empty() {
            return Err(JitError::Usage(format!("the code needs CPU features this machine lacks: {} (choose a lower --cpu level)", missing.join(", "))));
        }
        let lower = t0.elapsed();
        let t1 = Instant::now();
        let (module, functions) = jit(&compiled, isa, &*as_written, cache)?;
        let info = CodeInfo { target: "x86_64", backend: backend::NAME, format: CodeFormat::ElfSharedObject, requires: compiled.requires.clone() };
        let memory = Memory { arena_bytes: compiled.layout.plan.arena_bytes, lower_bound: compiled.layout.plan.lower_bound, scratch_bytes: compiled.layout.scratch_bytes };
        let (manifest, constants) = compiled.manifest(&program, info);
        drop(compiled);
        // Each weight moves from the program into its own aligned buffer, one at a time (no
        // constants section between): the executor's buffers are the only copy a model keeps.
        // (The pieces come in slot order, as the manifest's constant slots.)
        let mut constant_slots = manifest.slots.iter().enumerate().filter(|(_, s)| matches!(s, f16c_core::artifact::Slot::Constant { .. })).map(|(i, _)| i);
        let mut aligned: Vec<Option<f16c_runtime::exec::Aligned>> = manifest.slots.iter().map(|_| None).collect();
        constants.for_each_taking(&mut program, |_, len, fill| {
            let slot = constant_slots.next().expect("a constant slot per piece");
            let mut buffer = f16c_runtime::exec::Aligned::zeroed(len);
            fill(&mut buffer.bytes_mut()[..len]);
            // A weight stored as fp16/bf16 for code that multiplies in f32 is widened once,
            // as the runtime does when it loads an artifact.
            let widen = if let f16c_core::artifact::Slot::Constant { widen, .. } = manifest.slots[slot] { widen } else { None };
            aligned[slot] = Some(buffer.widened(len, widen));
        });
        drop(program);
        let executor = Executor::with_constants(manifest, aligned, functions, Box::new(Mutex::new(Code(Some(module)))), threads)?;
        Ok(Model { body: Body::Flat(executor), times: CompileTimes { lower, codegen: t1.elapsed(), ..CompileTimes::default() }, memory })
    }

    /// Runs the model. Inputs must match the function's arguments in count, shape and type.
    pub fn run(&self, inputs: &[Tensor]) -> Result<Vec<Tensor>> {
        match &self.body {
            Body::Flat(e) => Ok(e.run(inputs)?),
            Body::Staged(s) => s.run(inputs),
        }
    }

    /// Bytes of weights the model holds (as stored: fp16 weights take two bytes an element).
    pub fn weight_bytes(&self) -> usize {
        match &self.body {
            Body::Flat(e) => e.weight_bytes(),
            Body::Staged(s) => s.weight_bytes(),
        }
    }

    /// The function's argument types.
    pub fn inputs(&self) -> &[TensorType] {
        match &self.body {
            Body::Flat(e) => e.inputs(),
            Body::Staged(s) => s.inputs(),
        }
    }

    /// The executor (manifest, layout, schedule); `None` for a model with control flow, which
    /// runs several (one per straight-line piece and region).
    pub fn executor(&self) -> Option<&Executor> {
        match &self.body {
            Body::Flat(e) => Some(e),
            Body::Staged(_) => None,
        }
    }

    /// Sets the number of threads used by later runs.
    pub fn set_threads(&mut self, threads: usize) {
        match &mut self.body {
            Body::Flat(e) => e.set_threads(threads),
            Body::Staged(s) => s.set_threads(threads),
        }
    }
}

/// Compiles `g` and runs it on every input set, each input fitted to its argument (an f32
/// tensor rounded to an f16 or bf16 argument): the runner of `f16c check --fix`
/// (`f16c_compiler::fix::Runner`), on the command line and in Python. `cache` keeps the
/// machine code of the kernel bodies from one call to the next: a probe compiles only the
/// kernels whose precision it changed.
pub fn run_samples(g: &Graph, samples: &[Vec<Tensor>], threads: usize, cache: &backend::CodeCache) -> std::result::Result<Vec<Vec<Tensor>>, String> {
    let options = backend::Options::host().map_err(|e| e.to_string())?;
    let model = Model::compile_graph_cached(g, threads, &options, Some(cache)).map_err(|e| e.to_string())?;
    samples
        .iter()
        .map(|s| {
            let fitted: Vec<Tensor> = s.iter().zip(model.inputs()).map(|(t, want)| f16c_runtime::npy::fit(t.clone(), want)).collect();
            model.run(&fitted).map_err(|e| e.to_string())
        })
        .collect()
}

/// Address space reserved for one model's code and read-only data (reserved, not committed:
/// pages are committed as the code is written). Keeping a model's code in one region keeps every
/// PC-relative reference between its functions and their constants within ±2 GiB, wherever the
/// process's other libraries sit (a Python process maps its extension modules far apart, and
/// Cranelift's 32-bit relocations then overflowed with per-function allocations).
const CODE_RESERVE: usize = 1 << 30;

/// A model's JIT code, released when the model is dropped (the executor that calls into it goes
/// first: it owns this).
struct Code(Option<JITModule>);

impl Drop for Code {
    fn drop(&mut self) {
        if let Some(module) = self.0.take() {
            // SAFETY: the executor owning this value is being dropped, so no run is in progress
            // and no function pointer into the module is used again.
            unsafe { module.free_memory() };
        }
    }
}

fn jit(compiled: &backend::Compiled, isa: OwnedTargetIsa, as_written: &dyn TargetIsa, cache: Option<&backend::CodeCache>) -> Result<(JITModule, Vec<Option<KernelFn>>)> {
    let diag = |e: f16c_compiler::backend::BackendError| JitError::Diagnostics(Diagnostics::single(e.to_diagnostic()));
    let mut builder = JITBuilder::with_isa(isa, cranelift_module::default_libcall_names());
    let arena = ArenaMemoryProvider::new_with_size(CODE_RESERVE).map_err(|e| JitError::Compile(format!("JIT: cannot reserve {CODE_RESERVE} bytes of address space for code: {e}")))?;
    builder.memory_provider(Box::new(arena));
    let mut module = JITModule::new(builder);
    let ids = compiled.define_functions(&mut module, as_written, |_| Linkage::Local, cache).map_err(diag)?;
    module.finalize_definitions().map_err(|e| JitError::Compile(format!("JIT: {e:?}")))?;
    let functions = ids
        .iter()
        .map(|&id| {
            let p = module.get_finalized_function(id);
            // SAFETY: every function was built with `Fx::signature`, which is `KernelFn`'s (the
            // micro-kernels are never called through these pointers: no step names them).
            Some(unsafe { std::mem::transmute::<*const u8, KernelFn>(p) })
        })
        .collect();
    Ok((module, functions))
}
