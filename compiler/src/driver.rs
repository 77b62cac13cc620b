//! The compile driver: the one place that builds f16c's pipeline. The command line, the JIT and
//! the benchmark all call it; nothing else assembles passes or picks a backend (MLIR's
//! `PassPipelineRegistration`, IREE's `iree-compile` driver).
//!
//! ```text
//! parse ─▶ [calibrate] ─▶ canonicalize ─▶ fold-batch-norm ─▶ assign-precision ─▶ insert-casts   (prepare)
//!       ─▶ verify ─▶ lower ─▶ legality of every kernel ─▶ backend            (lower, artifact, emit)
//! ```
//! Every user-facing failure comes back as located [`Diagnostics`], rendered by the caller
//! against the source exactly like import errors.

use crate::backend::{self, Backend, Emit, LookupError};
use crate::lower::{self, LowerOptions, Program};
use crate::pass::{registry, PassError, PassManager, Statistic};
use crate::policy::Precision;
use crate::target::{BackendName, Cpu, Target};
use f16c_core::artifact::Artifact;
use f16c_dialect::{Diagnostic, Diagnostics, Graph, Location, Module, Tensor};

/// What to compile for and how.
#[derive(Clone, Debug)]
pub struct Options {
    /// Whose legality applies and which backend generates code.
    pub target: Target,
    /// The low type (`fp32`: nothing lowered).
    pub precision: Precision,
    /// `O0`..`O3` or a policy file.
    pub policy: String,
    /// Ops whose location matches stay f32.
    pub keep_f32: Option<String>,
    /// Arguments and results take the low type (else they stay f32).
    pub io_low: bool,
    /// An op the target cannot run in the low type is an error, not an f32 fallback.
    pub strict: bool,
    /// Run the precision passes even for fp32: the report and `check` read their annotations.
    /// Otherwise an fp32 compilation lowers the graph as written.
    pub annotate_fp32: bool,
    /// fp16 matmuls and convolutions may accumulate in fp16 (`--accumulate=f16`, a fast mode
    /// outside the numeric contract: AArch64 runs it as 8-lane FMLA; the report marks it).
    pub f16_accumulate: bool,
    /// Fold the per-channel add/sub/mul after a convolution (batch norm) into its weights and
    /// bias (`fold-batch-norm`; on by default, `--no-fold-batch-norm` on the command line).
    pub fold_batch_norm: bool,
}

impl Options {
    /// f32 (nothing lowered) for `target`, policy O1.
    pub fn new(target: Target) -> Options {
        Options { target, precision: Precision::Fp32, policy: "O1".into(), keep_f32: None, io_low: false, strict: false, annotate_fp32: false, f16_accumulate: false, fold_batch_norm: true }
    }

    /// The same with another precision.
    pub fn with_precision(mut self, precision: Precision) -> Options {
        self.precision = precision;
        self
    }

    /// The option text of `assign-precision` for these options.
    pub fn assign_precision_options(&self) -> String {
        let io = if self.io_low { "low" } else { "f32" };
        let mut o = format!("precision={} policy={} target={} io-types={io}", self.precision.name(), self.policy, self.target);
        if let Some(re) = &self.keep_f32 {
            o.push_str(&format!(" keep-f32={re}"));
        }
        if self.strict {
            o.push_str(" strict=true");
        }
        o
    }
}

/// What [`prepare`] hands back besides the transformed module.
pub struct Prepared {
    /// Warnings and remarks the passes produced.
    pub notes: Vec<Diagnostic>,
    /// The precision passes' counters.
    pub stats: Vec<(&'static str, Vec<Statistic>)>,
}

/// The standard pipeline before lowering: annotate calibration ranges (when `calibration` is
/// not empty), canonicalize, fold-batch-norm (unless turned off), then assign-precision and
/// insert-casts.
pub fn prepare(module: &mut Module, options: &Options, calibration: &[Tensor]) -> Result<Prepared, PassError> {
    run_prepare(module, options, calibration, |_| {})
}

/// [`prepare`], also returning the module after canonicalize and fold-batch-norm, before
/// precision assignment: what the report and `check` compare with (the precision passes keep
/// the ids of the ops they retype). Only callers that need it pay for the copy.
pub fn prepare_beside_f32(module: &mut Module, options: &Options, calibration: &[Tensor]) -> Result<(Module, Prepared), PassError> {
    let mut before = None;
    let prepared = run_prepare(module, options, calibration, |m| before = Some(m.clone()))?;
    Ok((before.expect("set after canonicalize"), prepared))
}

fn run_prepare(module: &mut Module, options: &Options, calibration: &[Tensor], after_canonicalize: impl FnOnce(&Module)) -> Result<Prepared, PassError> {
    if !calibration.is_empty() {
        for g in &mut module.functions {
            crate::calibrate::annotate(g, calibration)
                .map_err(|e| PassError::Diagnostics(Diagnostics::single(Diagnostic::error(Location::unknown(), e.to_string()))))?;
        }
    }
    let mut canon = PassManager::new();
    canon.add(registry::create("canonicalize", "")?);
    if options.fold_batch_norm {
        canon.add(registry::create("fold-batch-norm", "")?);
    }
    let mut notes = canon.run(module, &mut std::io::sink())?;
    after_canonicalize(module);
    let mut pm = PassManager::new();
    if options.precision != Precision::Fp32 || options.annotate_fp32 {
        pm.add(registry::create("assign-precision", &options.assign_precision_options())?);
        pm.add(registry::create("insert-casts", if options.f16_accumulate { "accumulate=f16" } else { "" })?);
    }
    notes.extend(pm.run(module, &mut std::io::sink())?);
    Ok(Prepared { notes, stats: pm.statistics() })
}

/// The function a command works on: the one named, else the only one, else `forward`.
pub fn choose_function(module: &Module, name: Option<&str>) -> Result<usize, NoFunction> {
    let fs = &module.functions;
    let index = match name {
        Some(name) => fs.iter().position(|g| g.name == name),
        None if fs.len() == 1 => Some(0),
        None => fs.iter().position(|g| g.name == "forward"),
    };
    index.ok_or_else(|| NoFunction { named: name.map(str::to_string), functions: fs.iter().map(|g| g.name.clone()).collect() })
}

/// No function to work on ([`choose_function`]): none of that name, none by default, or none
/// at all. Its `Display` names the command line's `--function`; another front end says how it
/// chooses one with [`NoFunction::message`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NoFunction {
    /// The name asked for, if any.
    pub named: Option<String>,
    /// The module's functions.
    pub functions: Vec<String>,
}

impl NoFunction {
    /// The message, `choose` saying how to choose a function (`--function`, `function=NAME`).
    pub fn message(&self, choose: &str) -> String {
        if self.functions.is_empty() {
            return "the module defines no function (nothing to compile: a 'func.func' is expected)".into();
        }
        let named = self.named.as_ref().map(|w| format!(" named '{w}'")).unwrap_or_default();
        format!("no function{named} (functions: {}); choose one with {choose}", self.functions.join(", "))
    }
}

impl std::fmt::Display for NoFunction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message("--function"))
    }
}

/// A module through the standard pipeline ([`prepare`]) and the function to compile chosen
/// in it ([`choose_function`]): what every front end (the command line, the JIT's `Model`, the
/// Python module, the benchmark) has before it lowers the function for its backend
/// ([`Compilation::lower`], or the JIT's staged path for a function with control flow).
pub struct Compilation {
    /// The prepared module.
    pub module: Module,
    /// The module after canonicalize and fold-batch-norm, before precision assignment, where
    /// [`compile`] was asked to keep it (the report and `check` compare with it).
    pub before: Option<Module>,
    /// The chosen function's index (the same in both: the passes keep every function).
    pub function: usize,
    /// The passes' notes and counters.
    pub prepared: Prepared,
}

impl Compilation {
    /// The chosen function, prepared.
    pub fn graph(&self) -> &Graph {
        &self.module.functions[self.function]
    }

    /// The chosen function before precision assignment, if kept.
    pub fn graph_before(&self) -> Option<&Graph> {
        self.before.as_ref().map(|m| &m.functions[self.function])
    }

    /// Lowers the chosen function for `backend` ([`lower_for`]).
    pub fn lower(&self, backend: &dyn Backend) -> Result<Program, Diagnostics> {
        lower_for(self.graph(), backend)
    }
}

/// Why [`compile`] stopped.
#[derive(Debug, thiserror::Error)]
pub enum CompileError {
    /// Located problems in the model (render them against its source).
    #[error(transparent)]
    Diagnostics(Diagnostics),
    /// No function of that name, or none to choose by default (the message names the module's
    /// functions).
    #[error("{0}")]
    Function(NoFunction),
    /// A malformed option (a policy file, a pattern).
    #[error("{0}")]
    Usage(String),
}

impl From<PassError> for CompileError {
    fn from(e: PassError) -> CompileError {
        match e {
            PassError::Diagnostics(d) => CompileError::Diagnostics(d),
            PassError::Usage(m) => CompileError::Usage(m),
        }
    }
}

/// Chooses the function (`function`, else the only one, else `forward`), then runs the
/// standard pipeline on `module` ([`prepare`]; with `keep_before`, [`prepare_beside_f32`]):
/// the one call before lowering.
pub fn compile(mut module: Module, options: &Options, function: Option<&str>, calibration: &[Tensor], keep_before: bool) -> Result<Compilation, CompileError> {
    let function = choose_function(&module, function).map_err(CompileError::Function)?;
    let (before, prepared) = if keep_before {
        let (before, prepared) = prepare_beside_f32(&mut module, options, calibration)?;
        (Some(before), prepared)
    } else {
        (None, prepare(&mut module, options, calibration)?)
    };
    Ok(Compilation { module, before, function, prepared })
}

/// Verifies and lowers one function for any backend.
pub fn lower(g: &Graph) -> Result<Program, Diagnostics> {
    lower_with(g, LowerOptions::default())
}

/// Verifies and lowers one function with a backend's [`LowerOptions`].
pub fn lower_with(g: &Graph, options: LowerOptions) -> Result<Program, Diagnostics> {
    f16c_dialect::verify::verify(g)?;
    crate::timing::phase("lower", || lower::lower_with(g, options)).map_err(|e| Diagnostics::single(Diagnostic::error(e.location.clone(), format!("'{}' cannot be lowered: {}", e.op, e.message))))
}

/// The backend for `target`, as a diagnostic when there is none.
pub fn backend_for(target: Target) -> Result<&'static dyn Backend, Diagnostics> {
    backend::lookup(target).map_err(|e: LookupError| Diagnostics::single(Diagnostic::error(Location::unknown(), e.to_string())))
}

/// Lowers `g` and checks every kernel against the backend's legality (all failures reported).
pub fn lower_for(g: &Graph, backend: &dyn Backend) -> Result<Program, Diagnostics> {
    let program = lower_with(g, backend.lowering())?;
    backend::check_legal(backend, &program).map_err(|errors| Diagnostics(errors.iter().map(|e| e.to_diagnostic()).collect()))?;
    Ok(program)
}

/// The backend called `name` for `target` (`None`: the target's default, [`backend::lookup`]).
/// Only x86-64 has a choice today: Cranelift (the default) or LLVM, each for the CPU level
/// `cpu` (Cranelift: without one what `--emit` prints is x86-64-v3's and the code is this
/// machine's; LLVM: `native` when `None`, and it has no x86-64-v2); LLVM is also the (only)
/// backend of AArch64.
pub fn backend_named(target: Target, name: Option<BackendName>, cpu: Option<Cpu>) -> Result<&'static dyn Backend, Diagnostics> {
    let error = |m: String| Err(Diagnostics::single(Diagnostic::error(Location::unknown(), m)));
    if cpu.is_some() && target != Target::X86_64 {
        return error(format!("--cpu chooses an x86-64 level, not one of {target}"));
    }
    match (target, name, cpu) {
        (Target::X86_64, None | Some(BackendName::Cranelift), Some(cpu)) => backend::cranelift::at_level(cpu).map(|b| b as &dyn Backend).map_err(|e| Diagnostics::single(e.to_diagnostic())),
        (_, None, _) => backend_for(target),
        #[cfg(feature = "llvm")]
        (Target::X86_64, Some(BackendName::Llvm), _) => match backend::llvm_cpu::x86_64(cpu.unwrap_or(Cpu::Native)) {
            Some(b) => Ok(b),
            None => {
                let levels: Vec<&str> = crate::target::X86Level::ALL[1..].iter().map(|l| l.name()).collect();
                error(format!("--cpu={}: --backend=llvm compiles for native, {}", cpu.map_or(String::new(), |c| c.to_string()), levels.join(", ")))
            }
        },
        #[cfg(feature = "llvm")]
        (Target::Aarch64 { .. }, Some(BackendName::Llvm), _) => backend_for(target),
        (Target::X86_64, Some(BackendName::Cranelift), _) => backend_for(target),
        (t, Some(n), _) => Err(Diagnostics::single(Diagnostic::error(
            Location::unknown(),
            format!("--backend={n}: {t} has no such backend (--backend chooses between cranelift and llvm for x86_64)"),
        ))),
    }
}

/// A standalone C library of one function (`--emit=lib`): the shared object, the C name its
/// entry points start with, and the argument and result types as compiled.
#[cfg(feature = "llvm")]
pub struct CLibrary {
    /// The shared object.
    pub code: Vec<u8>,
    /// `NAME` of `NAME_run` and `NAME_run_v`.
    pub name: String,
    /// Argument types.
    pub inputs: Vec<f16c_dialect::TensorType>,
    /// Result types.
    pub outputs: Vec<f16c_dialect::TensorType>,
}

/// Compiles `g` to a standalone C library with `backend` (an LLVM CPU backend).
#[cfg(feature = "llvm")]
pub fn c_library(g: &Graph, backend: &dyn Backend) -> Result<CLibrary, Diagnostics> {
    let program = lower_for(g, backend)?;
    let code = backend.emit(&program, Emit::Lib).map_err(|e| Diagnostics::single(e.to_diagnostic()))?;
    let types = |ops: &[crate::lower::Operand]| ops.iter().map(|o| o.ty.clone()).collect();
    Ok(CLibrary { code, name: backend::llvm_cpu::library::c_name(&program.name), inputs: types(&program.inputs), outputs: types(&program.outputs) })
}

/// Compiles `g` to a loadable artifact for `target`.
pub fn artifact(g: &Graph, target: Target) -> Result<Artifact, Diagnostics> {
    artifact_with(g, backend_for(target)?)
}

/// Compiles `g` to a loadable artifact with `backend`.
pub fn artifact_with(g: &Graph, backend: &dyn Backend) -> Result<Artifact, Diagnostics> {
    artifact_of_owned(lower_for(g, backend)?, backend)
}

/// Compiles a program [`lower_for`] made for `backend` to a loadable artifact, the program's
/// weights moved into it (the graph may be gone: the program holds its own copy of each).
pub fn artifact_of_owned(mut program: Program, backend: &dyn Backend) -> Result<Artifact, Diagnostics> {
    crate::timing::phase(format!("backend {}", backend.name()), || backend.artifact_taking(&mut program)).map_err(|e| Diagnostics::single(e.to_diagnostic()))
}

/// Prints one code form of `g` for `target`.
pub fn emit(g: &Graph, target: Target, form: Emit) -> Result<Vec<u8>, Diagnostics> {
    emit_with(g, backend_for(target)?, form)
}

/// Prints one code form of `g` with `backend`.
pub fn emit_with(g: &Graph, backend: &dyn Backend, form: Emit) -> Result<Vec<u8>, Diagnostics> {
    if !backend.forms().contains(&form) {
        let forms: Vec<&str> = backend.forms().iter().map(|f| f.name()).collect();
        return Err(Diagnostics::single(Diagnostic::error(
            Location::unknown(),
            format!("--emit={}: {} does not produce it (it emits {})", form.name(), backend.name(), forms.join(", ")),
        )));
    }
    let program = lower_for(g, backend)?;
    crate::timing::phase(format!("backend {}", backend.name()), || backend.emit(&program, form)).map_err(|e| Diagnostics::single(e.to_diagnostic()))
}

#[cfg(test)]
mod tests {
    use super::*;

    const TWO: &str = r#"
func.func @first(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = tosa.exp %x : (tensor<4xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}
func.func @second(%a: tensor<2x3xf32>, %b: tensor<1x3x4xf32>) -> tensor<1x2x4xf32> {
  %s = tosa.const_shape {values = dense<[1, 2, 3]> : tensor<3xindex>} : () -> !tosa.shape<3>
  %a3 = tosa.reshape %a, %s : (tensor<2x3xf32>, !tosa.shape<3>) -> tensor<1x2x3xf32>
  %z = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %m = tosa.matmul %a3, %b, %z, %z : (tensor<1x2x3xf32>, tensor<1x3x4xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x2x4xf32>
  return %m : tensor<1x2x4xf32>
}
"#;

    fn module() -> Module {
        f16c_dialect::import::parse_module(TWO, "two.mlir").unwrap()
    }

    fn casts(g: &Graph) -> usize {
        g.node_ids().filter(|&id| matches!(g.op(id), f16c_dialect::Op::Cast)).count()
    }

    #[test]
    fn compile_chooses_the_function_then_prepares_the_module() {
        let options = Options::new(Target::Reference).with_precision(Precision::Fp16);
        // Two functions and neither is `forward`: the choice is the caller's, and the message
        // names both; nothing was prepared.
        match compile(module(), &options, None, &[], false) {
            Err(CompileError::Function(m)) => assert!(m.to_string().contains("first, second") && m.to_string().contains("--function"), "{m}"),
            other => panic!("expected a function error, got {:?}", other.err()),
        }
        match compile(module(), &options, Some("third"), &[], false) {
            Err(CompileError::Function(m)) => assert!(m.to_string().contains("named 'third'"), "{m}"),
            other => panic!("expected a function error, got {:?}", other.err()),
        }
        // The matmul runs in fp16 between casts; the module before precision assignment, kept
        // on request, has none, and the same function is chosen in both.
        let c = compile(module(), &options, Some("second"), &[], true).unwrap();
        assert_eq!((c.function, c.graph().name.as_str()), (1, "second"));
        let before = c.graph_before().expect("kept");
        assert_eq!((before.name.as_str(), casts(before)), ("second", 0));
        assert!(casts(c.graph()) > 0, "the prepared matmul has its casts");
        assert!(compile(module(), &options, Some("first"), &[], false).unwrap().before.is_none());
        // An empty module says so rather than listing no functions.
        let empty = f16c_dialect::import::parse_module("", "empty.mlir").unwrap();
        match compile(empty, &options, None, &[], false) {
            Err(CompileError::Function(m)) => assert!(m.to_string().contains("defines no function"), "{m}"),
            other => panic!("expected a function error, got {:?}", other.err()),
        }
        // A malformed option is a usage error, not a diagnostic.
        let bad = Options { policy: "O9".into(), ..options };
        assert!(matches!(compile(module(), &bad, Some("first"), &[], false), Err(CompileError::Usage(_))), "policy O9");
    }

    /// The JIT's one-kernel `configure` gives the plan `configure_all` gives that kernel (its
    /// plans need the whole program; it had stated legality only), and `check_legal` passes.
    #[cfg(feature = "cranelift")]
    #[test]
    fn the_jit_configures_one_kernel_with_its_plan() {
        let backend = &crate::backend::cranelift::CRANELIFT;
        let c = compile(module(), &Options::new(Target::X86_64), Some("second"), &[], false).unwrap();
        let program = c.lower(backend).unwrap();
        let all = backend.configure_all(&program);
        assert_eq!(all.len(), program.kernels.len());
        let mut planned = 0;
        for (k, whole) in program.kernels.iter().zip(all) {
            let one = backend.configure(&program, k).unwrap();
            assert_eq!(one, whole.unwrap(), "{}", k.name);
            planned += usize::from(one.plan.is_some());
        }
        assert!(planned > 0, "the matmul has a plan");
        crate::backend::check_legal(backend, &program).unwrap();
    }
}
