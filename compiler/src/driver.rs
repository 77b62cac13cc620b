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
pub fn choose_function(module: &Module, name: Option<&str>) -> Result<usize, String> {
    let fs = &module.functions;
    let index = match name {
        Some(name) => fs.iter().position(|g| g.name == name),
        None if fs.len() == 1 => Some(0),
        None => fs.iter().position(|g| g.name == "forward"),
    };
    index.ok_or_else(|| {
        let names: Vec<&str> = fs.iter().map(|g| g.name.as_str()).collect();
        let named = name.map(|w| format!(" named '{w}'")).unwrap_or_default();
        format!("no function{named} (functions: {}); choose one with --function", names.join(", "))
    })
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
