//! Backends: from a lowered [`Program`] to an [`Artifact`] a runtime can load. Backends return
//! artifacts; they never run them (Cranelift's codegen/module/jit/object split, IREE's
//! iree-compile/iree-run-module split).
//!
//! ## The interface
//! A [`Backend`] names itself, says which [`Target`] it generates code for (and so, through
//! [`Target::info`], what that hardware runs), answers per kernel whether it can compile it
//! and how it will run it ([`Backend::configure`]: legality from data in the backend's
//! `legal.rs`, the kernel's plan as a [`KernelConfig`]), prints the text forms it knows
//! (`--emit=clif|asm|...`) and produces the loadable artifact. [`lookup`] maps a target to its
//! backend and tells "compiled out of this build" apart from "not implemented".
//!
//! The driver ([`crate::driver`]) calls [`check_legal`] on the whole program before any code
//! is emitted, so an unsupported kernel is a located error naming the op and the target, and
//! emission code never has to reject anything.
//!
//! ## What backends share
//! - [`layout`]: the buffer table (the program's buffers, one packed-constant slot and one
//!   temporary per kernel), the arena plan including temporaries, and its translation into the
//!   artifact's flat slot table. The runtime's executor reads exactly that table.
//! - the CPU kernel ABI and the libcall list: [`f16c_core::abi`], shared with the runtime.
//! - the schedule: [`f16c_core::artifact::Step`], one call of a kernel function over work
//!   items, which the executor splits across threads.
//! - one error type, [`BackendError`], carrying the location, op and backend.
//!
//! ## Adding a backend
//! 1. Give the target a row in [`crate::target::TARGETS`] (what the hardware runs, as data).
//! 2. Create `backend/<name>/` with `mod.rs` (a unit struct implementing [`Backend`]), `legal.rs`
//!    (a table of what the hardware supports and `fn legal(&Kernel)` reading it), the plans
//!    (`configure`: each kernel's decisions as data, made before emission; the LLVM CPU
//!    backend's `plan.rs` is the model) and the emission code, one file per kernel family.
//!    Emission may assume legality and only reads the plans.
//! 3. Build the buffer table with [`layout::Layout`] and describe the result with
//!    [`layout::Layout::manifest`]; put the code in the artifact in a [`CodeFormat`] the runtime
//!    can load (a new format needs a loader in `f16c-runtime`).
//! 4. Register it in [`lookup`], behind a Cargo feature if it needs a heavy dependency.
//! 5. Add `lit/Target/<NAME>/` tests of its text forms and a parity test against the reference
//!    interpreter.

#[cfg(feature = "cranelift")]
pub mod bands;
pub mod cranelift;
pub mod cpu;
pub mod layout;
#[cfg(any(feature = "cranelift", feature = "llvm"))]
pub mod link;
#[cfg(feature = "llvm")]
pub mod llvm;
#[cfg(feature = "llvm")]
pub mod llvm_cpu;
#[cfg(feature = "nvptx")]
pub mod nvptx;
pub mod pack;

use crate::lower::{Kernel, LowerOptions, Program};
use crate::target::{Target, TargetInfo};
use f16c_core::artifact::{Artifact, CodeFormat};
use f16c_dialect::{Diagnostic, Location};
use std::fmt;

/// A text or binary form a backend can print (`--emit=FORM`), besides the artifact.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Emit {
    /// Cranelift IR.
    Clif,
    /// Target assembly.
    Asm,
    /// A relocatable object file.
    Obj,
    /// LLVM IR.
    Llvm,
    /// PTX.
    Ptx,
    /// A standalone shared object with a plain C entry point and the weights inside.
    Lib,
    /// The C header of [`Emit::Lib`].
    Header,
}

impl Emit {
    /// Every form, in `--help` order.
    pub const ALL: [Emit; 7] = [Emit::Clif, Emit::Asm, Emit::Obj, Emit::Llvm, Emit::Ptx, Emit::Lib, Emit::Header];

    /// The `--emit` spelling.
    pub fn name(self) -> &'static str {
        match self {
            Emit::Clif => "clif",
            Emit::Asm => "asm",
            Emit::Obj => "obj",
            Emit::Llvm => "llvm",
            Emit::Ptx => "ptx",
            Emit::Lib => "lib",
            Emit::Header => "header",
        }
    }

    /// Parses an `--emit` spelling.
    pub fn parse(s: &str) -> Option<Emit> {
        Emit::ALL.into_iter().find(|e| e.name() == s)
    }

    /// True for forms that are text.
    pub fn is_text(self) -> bool {
        !matches!(self, Emit::Obj | Emit::Lib)
    }
}

/// Why a kernel cannot be compiled by a backend (what its legality table does not cover).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unsupported(pub String);

impl fmt::Display for Unsupported {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// What went wrong in a backend.
#[derive(Debug, thiserror::Error)]
pub enum BackendErrorKind {
    /// The kernel is outside what the backend's legality table covers.
    #[error("{0}")]
    Unsupported(Unsupported),
    /// The code generator failed (a bug of f16c, reported rather than panicking).
    #[error("code generation failed: {0}")]
    Codegen(String),
    /// An external tool (the linker) failed or is missing.
    #[error("{0}")]
    Tool(String),
    /// This backend cannot print this form.
    #[error("cannot emit {0}")]
    Form(&'static str),
}

/// A backend error: where (the op of the kernel concerned, when there is one), which backend,
/// and what.
#[derive(Debug)]
pub struct BackendError {
    /// The op's location (unknown for program-level errors).
    pub location: Location,
    /// The op's MLIR name (empty for program-level errors).
    pub op: &'static str,
    /// The backend's name.
    pub backend: &'static str,
    /// What went wrong.
    pub kind: BackendErrorKind,
}

impl BackendError {
    /// An error about one kernel.
    pub fn at(kernel: &Kernel, backend: &'static str, kind: BackendErrorKind) -> Self {
        BackendError { location: kernel.location.clone(), op: kernel.op_name, backend, kind }
    }

    /// An error about the whole program.
    pub fn program(backend: &'static str, kind: BackendErrorKind) -> Self {
        BackendError { location: Location::unknown(), op: "", backend, kind }
    }

    /// A code generation failure (a bug of f16c, reported rather than panicking), in `kernel`
    /// when there is one.
    pub fn codegen(backend: &'static str, kernel: Option<&Kernel>, message: String) -> Self {
        match kernel {
            Some(k) => BackendError::at(k, backend, BackendErrorKind::Codegen(message)),
            None => BackendError::program(backend, BackendErrorKind::Codegen(message)),
        }
    }

    /// The message without the location (what a [`Diagnostic`] shows).
    pub fn message(&self) -> String {
        match (&self.kind, self.op) {
            (BackendErrorKind::Unsupported(u), op) => format!("'{op}' is not supported by {}: {u}", self.backend),
            (k, "") => format!("{}: {k}", self.backend),
            (k, op) => format!("'{op}': {}: {k}", self.backend),
        }
    }

    /// As a located diagnostic, rendered like every other f16c error.
    pub fn to_diagnostic(&self) -> Diagnostic {
        Diagnostic::error(self.location.clone(), self.message())
    }
}

impl fmt::Display for BackendError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.to_diagnostic())
    }
}

impl std::error::Error for BackendError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.kind)
    }
}

/// Result alias of backends.
pub type BackendResult<T> = Result<T, BackendError>;

/// One code generator. Everything target-specific a driver needs goes through this.
pub trait Backend: Sync {
    /// `"cranelift-x86_64"`, ...: used in errors and `--help`.
    fn name(&self) -> &'static str;
    /// The target it generates code for.
    fn target(&self) -> Target;
    /// What that target runs, as data.
    fn info(&self) -> &'static TargetInfo {
        self.target().info()
    }
    /// What the lowering may give it beyond what every backend runs (default: nothing).
    fn lowering(&self) -> LowerOptions {
        LowerOptions::default()
    }
    /// Can this kernel of `program` be compiled, and how will it run? Called on every kernel
    /// before any code is emitted (an `Err` is a located error naming the op and the target):
    /// the backend's plan of the kernel, from the same function its emitter reads (a backend
    /// whose plans depend on the whole program plans it and takes this kernel's: call
    /// [`Backend::configure_all`] for many kernels).
    fn configure(&self, program: &Program, kernel: &Kernel) -> Result<KernelConfig, Unsupported>;
    /// [`Backend::configure`] of every kernel of `program`, in order, with every plan
    /// (`f16c compile --emit=kernels`): a backend that plans as it builds the program's code
    /// builds it once to say.
    fn configure_all(&self, program: &Program) -> Vec<Result<KernelConfig, Unsupported>> {
        program.kernels.iter().map(|k| self.configure(program, k)).collect()
    }
    /// Whether each kernel of `program` can be compiled, in order ([`check_legal`]): the
    /// outcome of [`Backend::configure_all`] without the plans, which a backend whose plans
    /// cost a planning pass of the whole program answers without making them (its compile
    /// plans the program anyway).
    fn legal_all(&self, program: &Program) -> Vec<Result<(), Unsupported>> {
        self.configure_all(program).into_iter().map(|c| c.map(|_| ())).collect()
    }
    /// The forms [`Backend::emit`] can print.
    fn forms(&self) -> &'static [Emit];
    /// The code format of its artifacts.
    fn code_format(&self) -> CodeFormat;
    /// Prints one form of a (legal) program's code.
    fn emit(&self, program: &Program, form: Emit) -> BackendResult<Vec<u8>>;
    /// Compiles a (legal) program to a loadable artifact.
    fn artifact(&self, program: &Program) -> BackendResult<Artifact>;

    /// [`Backend::artifact`] of a program that goes away after: its constants may move into
    /// the artifact's constants section instead of being copied (the weights not held twice).
    fn artifact_taking(&self, program: &mut Program) -> BackendResult<Artifact> {
        self.artifact(program)
    }
}

/// Whether this machine has AVX-512 (F, BW, DQ, VL): what both x86-64 backends' 16-lane code
/// needs.
pub fn host_has_avx512() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::is_x86_feature_detected as has;
        has!("avx512f") && has!("avx512bw") && has!("avx512dq") && has!("avx512vl")
    }
    #[cfg(not(target_arch = "x86_64"))]
    false
}

/// Whether this machine has AVX2, FMA and F16C: what the runtime's AVX2 loops need.
pub fn host_has_avx2_f16c() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::is_x86_feature_detected as has;
        has!("avx2") && has!("fma") && has!("f16c")
    }
    #[cfg(not(target_arch = "x86_64"))]
    false
}

/// Whether this machine has AVX-512 and AVX512-BF16 (`VDPBF16PS`): what both x86-64 backends'
/// bf16 pair code needs (the JIT's runtime loops, `--cpu=x86-64-v4+bf16`).
pub fn host_has_avx512_bf16() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        host_has_avx512() && std::arch::is_x86_feature_detected!("avx512bf16")
    }
    #[cfg(not(target_arch = "x86_64"))]
    false
}

/// How a backend runs one kernel ([`Backend::configure`]), decided before any code is emitted.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KernelConfig {
    /// The plan in words (`--emit=kernels`, the artifact's kernel plans, `f16c-run
    /// --profile`), where the backend decides something worth showing.
    pub plan: Option<String>,
}

impl KernelConfig {
    /// A kernel planned as `text` says.
    pub fn planned(text: String) -> KernelConfig {
        KernelConfig { plan: Some(text) }
    }
}

/// Checks every kernel of `program` on `backend` in one pass ([`Backend::legal_all`]); every
/// kernel it cannot compile is reported.
pub fn check_legal(backend: &dyn Backend, program: &Program) -> Result<(), Vec<BackendError>> {
    let errors: Vec<BackendError> = program
        .kernels
        .iter()
        .zip(backend.legal_all(program))
        .filter_map(|(k, c)| c.err().map(|u| BackendError::at(k, backend.name(), BackendErrorKind::Unsupported(u))))
        .collect();
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors)
    }
}

/// Why no backend was found for a target.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LookupError {
    /// The backend exists but this build left it out (a disabled Cargo feature).
    #[error("the {backend} backend for {target} is not compiled into this build (rebuild f16c with the Cargo feature '{feature}')")]
    CompiledOut {
        /// The target.
        target: Target,
        /// The backend's name.
        backend: &'static str,
        /// The feature that enables it.
        feature: &'static str,
    },
    /// No backend generates code for this target yet.
    #[error("code generation for {target} is not implemented yet (the precision passes and --emit=mlir|report|dot|kernels work for it)")]
    NotImplemented {
        /// The target.
        target: Target,
    },
    /// The reference interpreter runs graphs; it has no code generator.
    #[error("the reference target is the interpreter ('f16c run --target=reference'); it generates no code")]
    Interpreter,
}

/// The backend that generates code for `target`.
pub fn lookup(target: Target) -> Result<&'static dyn Backend, LookupError> {
    match target {
        Target::Reference => Err(LookupError::Interpreter),
        #[cfg(feature = "cranelift")]
        Target::X86_64 => Ok(&cranelift::CRANELIFT),
        #[cfg(not(feature = "cranelift"))]
        Target::X86_64 => Err(LookupError::CompiledOut { target, backend: "cranelift-x86_64", feature: "cranelift" }),
        #[cfg(feature = "nvptx")]
        Target::Sm(sm) => nvptx::backend(sm).map(|b| b as &dyn Backend).ok_or(LookupError::NotImplemented { target }),
        #[cfg(not(feature = "nvptx"))]
        Target::Sm(_) => Err(LookupError::CompiledOut { target, backend: "nvptx", feature: "nvptx" }),
        #[cfg(feature = "llvm")]
        Target::Aarch64 { bf16 } => Ok(llvm_cpu::aarch64(bf16)),
        #[cfg(not(feature = "llvm"))]
        Target::Aarch64 { .. } => Err(LookupError::CompiledOut { target, backend: "llvm-aarch64", feature: "llvm" }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookup_tells_missing_backends_apart() {
        #[cfg(feature = "nvptx")]
        assert_eq!(lookup(Target::Sm(70)).map(|b| (b.name(), b.target())).ok(), Some(("nvptx", Target::Sm(70))));
        #[cfg(feature = "llvm")]
        assert_eq!(lookup(Target::Aarch64 { bf16: true }).map(|b| (b.name(), b.target())).ok(), Some(("llvm-aarch64", Target::Aarch64 { bf16: true })));
        assert!(matches!(lookup(Target::Reference), Err(LookupError::Interpreter)));
        #[cfg(feature = "cranelift")]
        assert_eq!(lookup(Target::X86_64).map(|b| b.name()).ok(), Some("cranelift-x86_64"));
        #[cfg(not(feature = "cranelift"))]
        assert!(matches!(lookup(Target::X86_64), Err(LookupError::CompiledOut { .. })));
    }
}
