//! The x86-64 backend: every kernel of a [`Program`] becomes one Cranelift function (a wrapper
//! around a body that kernels alike but for their buffers share: `share.rs`).
//!
//! Each function has the signature `(bufs, begin, end, scratch, rt) -> i32`: `bufs` is the
//! table of buffer addresses (the program's buffers, then one temporary per kernel), `begin..end`
//! the work items this call computes (the runtime splits a kernel's items across threads),
//! `scratch` this thread's private memory, `rt` the table of [`legal::Libcall`] functions. A
//! non-zero return is a run-time error of the kernel's op (an out-of-range gather index).
//!
//! fp16 and bf16 live in memory as 16-bit integers and compute in f32 (converted in software,
//! four lanes at a time in loops; [`emit`]). Runs of fp16 values are converted in bulk by the
//! runtime instead, where Cranelift cannot emit the CPU's F16C instructions: weights and input
//! rows widened by `WidenF16`, contraction results staged in f32 and rounded and narrowed by
//! `NarrowF16` ([`narrow`]). Contractions pack their operands into f32 panels (A's rows are
//! read in place where they lie as the GEMM's) and run a 4×8 register-blocked micro-kernel
//! with f32x4 FMA ([`gemm`]); constant weights are packed at compile time, in their own type
//! (an f16 weight keeps two bytes per element).
//!
//! [`compile`] returns the CLIF functions with the buffer [`Layout`] and the schedule (the
//! [`Compiled`] form). From it, the backend prints CLIF and host assembly, writes an object file
//! through `cranelift-object` and links it (with `ld.lld` or the system linker) into the shared
//! object of a loadable artifact; the JIT (`f16c-jit`) compiles the very same functions in
//! process. Either way the runtime's one CPU executor runs them.
//!
//! Kernel legality (what element types each family handles) is data in [`legal`], checked for
//! the whole program before anything is emitted.

pub(crate) mod emit;
mod conv;
mod epilogue;
mod gemm;
mod micro;
mod pack;
pub mod legal;
mod lower;
mod math;
mod plan;
pub(crate) mod narrow;
mod share;
mod softfloat;

pub use share::{BodyKey, CodeCache};

use super::layout::{CodeInfo, Constants, Layout};
use super::{Backend, BackendError, BackendErrorKind, BackendResult, Emit, Unsupported};
use crate::lower::{Kernel, Program};
use crate::target::{Cpu, Target, X86Level};
use cranelift_codegen::ir::{Function, UserFuncName};
use cranelift_codegen::isa::{OwnedTargetIsa, TargetFrontendConfig};
use cranelift_codegen::settings::{self, Configurable};
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext};
use cranelift_module::{Linkage, Module as _};
use f16c_core::artifact::{Artifact, CodeFormat, Step};
use std::fmt::Write;

/// The backend's name in errors and manifests.
pub const NAME: &str = "cranelift-x86_64";

/// Prefix of the exported symbol of each kernel function in a shared object.
pub const SYMBOL_PREFIX: &str = "f16c_";

/// Options of the Cranelift backend: what the code may use of the CPU it runs on. A row of
/// [`X86_LEVELS`] (`--cpu`), or [`Options::host`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Options {
    /// Use fused multiply-add in contractions (the host has FMA3). Without it, contractions
    /// multiply and add separately.
    pub fma: bool,
    /// bf16 GEMMs with constant weights multiply in bf16 pairs (`VDPBF16PS`: the host has
    /// AVX512-BF16; the code then requires it). Same bits as the f32 chain except that
    /// subnormals are flushed to zero ([`f16c_core::abi::tiles`]).
    pub dot_bf16: bool,
    /// The runtime's loops the GEMMs and depthwise convolutions call.
    pub loops: Loops,
}

/// Which of the runtime's micro-kernels ([`f16c_core::abi::MICRO_KERNELS`]) the contractions
/// call, decided when the code is compiled: the code then calls that loop and requires its
/// features, with no other path. All three give the same bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Loops {
    /// None: the generated loops (Cranelift's 128-bit SIMD: a 4x8 GEMM micro-kernel, four
    /// depthwise lanes).
    Generated,
    /// The AVX2 + FMA loops (eight lanes).
    Avx2,
    /// The AVX-512 loops (sixteen lanes; the one-row GEMM's stays AVX2).
    Avx512,
}

impl Loops {
    /// The GEMM's micro-kernel.
    pub fn gemm(self) -> Option<f16c_core::abi::Libcall> {
        use f16c_core::abi::Libcall::*;
        match self {
            Loops::Generated => None,
            Loops::Avx2 => Some(GemmTiles),
            Loops::Avx512 => Some(GemmTilesAvx512),
        }
    }

    /// The one-row GEMM's.
    pub fn gemv(self) -> Option<f16c_core::abi::Libcall> {
        (self != Loops::Generated).then_some(f16c_core::abi::Libcall::GemvPanels)
    }

    /// An fp16 SiLU's ([`f16c_core::abi::Libcall::SiluArrayF16`]: AVX2, FMA and F16C).
    pub fn silu_f16(self) -> Option<f16c_core::abi::Libcall> {
        (self != Loops::Generated).then_some(f16c_core::abi::Libcall::SiluArrayF16)
    }

    /// An fp16 softmax's ([`f16c_core::abi::Libcall::SoftmaxRowsF16`]).
    pub fn softmax_f16(self) -> Option<f16c_core::abi::Libcall> {
        (self != Loops::Generated).then_some(f16c_core::abi::Libcall::SoftmaxRowsF16)
    }

    /// A depthwise convolution's (channel multiplier 1).
    pub fn depthwise(self) -> Option<f16c_core::abi::Libcall> {
        use f16c_core::abi::Libcall::*;
        match self {
            Loops::Generated => None,
            Loops::Avx2 => Some(DepthwiseRow),
            Loops::Avx512 => Some(DepthwiseRowAvx512),
        }
    }
}

/// What each x86-64 level (`--cpu`) lets this backend's code use, in [`X86Level::ALL`]'s order:
/// the level's facts ([`X86Level::fma`], [`X86Level::avx512`], [`X86Level::bf16_pairs`]) in
/// this backend's terms (the runtime's AVX-512 loops from v4, its AVX2 ones with FMA).
pub const X86_LEVELS: [(X86Level, Options); 4] = [level_row(X86Level::V2), level_row(X86Level::V3), level_row(X86Level::V4), level_row(X86Level::V4Bf16)];

/// [`X86_LEVELS`]' row for `level`.
const fn level_row(level: X86Level) -> (X86Level, Options) {
    let loops = if level.avx512() {
        Loops::Avx512
    } else if level.fma() {
        Loops::Avx2
    } else {
        Loops::Generated
    };
    (level, Options { fma: level.fma(), dot_bf16: level.bf16_pairs(), loops })
}

impl Default for Options {
    /// What `--emit` prints without `--cpu`, on every machine: x86-64-v3 (FMA, the AVX2 loops).
    fn default() -> Self {
        X86_LEVELS[1].1
    }
}

impl Options {
    /// What this host runs: its level's ([`X86Level::host`]), FMA only where Cranelift's ISA
    /// for this host has it.
    pub fn host() -> BackendResult<Options> {
        let (_, fma) = host_isa("speed", false)?;
        let o = Options::of(X86Level::host());
        Ok(if fma { o } else { X86_LEVELS[0].1 })
    }

    /// The options of a level.
    pub fn of(level: X86Level) -> Options {
        X86_LEVELS.iter().find(|(l, _)| *l == level).map(|&(_, o)| o).expect("a row per level")
    }

    /// The options of `--cpu` (`native`: [`Options::host`]).
    pub fn for_cpu(cpu: Cpu) -> BackendResult<Options> {
        match cpu {
            Cpu::Native => Options::host(),
            Cpu::Level(l) => Ok(Options::of(l)),
        }
    }
}

/// A compiled program: CLIF functions, the buffer table they address and the calls that run
/// them.
#[derive(Clone, Debug)]
pub struct Compiled {
    /// The buffer table (after [`Layout::finish`]: the arena plan includes the temporaries).
    pub layout: Layout,
    /// The functions, with their names. Functions 0 and 1 are the GEMM micro-kernels (packed
    /// A, A's rows in place: [`micro::AForm`]), which kernels call as `UserExternalName(0, i)`:
    /// a module must declare the functions in this order.
    pub functions: Vec<(String, Function)>,
    /// Per function, a shared body's [`BodyKey`] ([`CodeCache`]'s key); `None` for the
    /// micro-kernels and the kernels (the steps' functions, exported), which come first.
    pub keys: Vec<Option<BodyKey>>,
    /// The first shared body: functions from here on are bodies, called only from inside the
    /// code.
    pub first_body: usize,
    /// Functions whose instruction order is their schedule: compile them without Cranelift's
    /// optimizer (`opt_level=none`), which would reorder and merge their loads. The generated
    /// GEMM micro-kernels are (functions 0 and 1, emitted only where the code calls them:
    /// [`Loops::Generated`]).
    pub keep_order: Vec<usize>,
    /// Calls in execution order.
    pub steps: Vec<Step>,
    /// CPU features the code needs beyond the ISA's own (its runtime calls' instructions).
    pub requires: Vec<String>,
    /// Whether the code calls the runtime's micro-kernels (the manifest then records their
    /// contract's version, [`f16c_core::abi::MICRO_KERNEL_VERSION`]).
    pub calls_micro_kernels: bool,
    /// The attention chains whose steps run in bands ([`crate::backend::bands`]).
    pub bands: Vec<crate::backend::bands::Band>,
    /// Per kernel, how it runs, where the emitter decided something (its contractions).
    pub plans: Vec<Option<String>>,
}

/// Kernel `k`'s plan: how it runs (`plans`, the planner's words), and the band it runs in.
fn plan_of(program: &Program, plans: &[Option<String>], bands: &[crate::backend::bands::Band], k: usize) -> Option<String> {
    let band = bands.iter().find(|b| (b.first..b.first + 3).contains(&k)).map(|b| crate::backend::bands::describe(program, b));
    match (&plans[k], band) {
        (Some(p), Some(b)) => Some(format!("{p}; {b}")),
        (p, b) => p.clone().or(b),
    }
}

/// Every kernel's plan ([`Compiled::plan`]) without building any code: the plans
/// [`compile`] emits from ([`plan::Planner`]), in words.
pub fn plans(program: &Program, options: &Options) -> BackendResult<Vec<Option<String>>> {
    let planner = plan::Planner::new(program, options);
    let mut plans = Vec::with_capacity(program.kernels.len());
    for (k, kernel) in program.kernels.iter().enumerate() {
        let plan = planner.plan(k).map_err(|m| BackendError::at(kernel, NAME, BackendErrorKind::Codegen(m)))?;
        plans.push(Some(plan.describe(&planner, kernel)));
    }
    Ok((0..program.kernels.len()).map(|k| plan_of(program, &plans, &planner.bands, k)).collect())
}

impl Compiled {
    /// Kernel `k`'s plan: how it runs, and the band it runs in.
    pub fn plan(&self, program: &Program, k: usize) -> Option<String> {
        plan_of(program, &self.plans, &self.bands, k)
    }

    /// A comment header: the kernels, the arena (with its liveness lower bound), the weight
    /// bytes and the scratch per thread.
    pub fn summary(&self, program: &Program) -> String {
        let mut s = format!("; function @{}: {} kernels\n", program.name, program.kernels.len());
        for k in &program.kernels {
            let _ = writeln!(s, ";   {} ({} ops)", k.name, k.nodes.len());
        }
        let _ = writeln!(
            s,
            "; arena {} bytes (liveness lower bound {}), weights {} bytes, scratch {} bytes per thread",
            self.layout.plan.arena_bytes,
            self.layout.plan.lower_bound,
            self.layout.weight_bytes(),
            self.layout.scratch_bytes
        );
        s
    }

    /// The CLIF text of every function (what `f16c compile --emit=clif` prints).
    pub fn clif(&self) -> String {
        let mut s = String::new();
        for (name, f) in &self.functions {
            let _ = writeln!(s, "; {name}\n{}", f.display());
        }
        s
    }

    /// The host machine code of every function, as Cranelift prints it (what
    /// `f16c compile --target=x86_64 --emit=asm` shows).
    pub fn disassemble(&self) -> BackendResult<String> {
        let (isa, _) = host_isa("speed", false)?;
        let (as_written, _) = host_isa("none", false)?;
        let mut out = String::new();
        for (i, (name, func)) in self.functions.iter().enumerate() {
            let isa = if self.keep_order.contains(&i) { &as_written } else { &isa };
            let mut ctx = cranelift_codegen::Context::for_function(func.clone());
            ctx.set_disasm(true);
            let code = compile_function(&mut ctx, &**isa, name)?;
            let _ = writeln!(out, "; {name}: {} bytes\n{}", code.code_buffer().len(), code.vcode.as_deref().unwrap_or(""));
        }
        Ok(out)
    }

    /// A relocatable ELF object exporting each kernel function as `f16c_<name>` (position
    /// independent, for a shared object), and the CPU features its code uses.
    pub fn object(&self) -> BackendResult<(Vec<u8>, Vec<String>)> {
        let (isa, _) = host_isa("speed", true)?;
        let (as_written, _) = host_isa("none", true)?;
        let mut requires = isa_features(&*isa);
        for f in &self.requires {
            if !requires.contains(f) {
                requires.push(f.clone());
            }
        }
        let builder = cranelift_object::ObjectBuilder::new(isa, "f16c", cranelift_module::default_libcall_names())
            .map_err(|e| codegen(format!("{e:?}")))?;
        let mut module = cranelift_object::ObjectModule::new(builder);
        // The generated micro-kernels (the first functions, where there are any) are called
        // only from inside the object.
        crate::timing::phase("cranelift codegen", || self.define_functions(&mut module, &*as_written, |i| if self.keep_order.contains(&i) || i >= self.first_body { Linkage::Local } else { Linkage::Export }, None))?;
        let bytes = module.finish().emit().map_err(|e| codegen(format!("writing the object file: {e}")))?;
        Ok((bytes, requires))
    }

    /// Declares and defines every function in `module` (a JIT or an object module) under its
    /// symbol name with `linkage(index)`: functions in [`Compiled::keep_order`] compiled as
    /// written by `as_written`, the others by the module's own ISA. Returns their ids in order.
    pub fn define_functions<M: cranelift_module::Module>(
        &self,
        module: &mut M,
        as_written: &dyn cranelift_codegen::isa::TargetIsa,
        linkage: impl Fn(usize) -> Linkage,
        cache: Option<&CodeCache>,
    ) -> BackendResult<Vec<cranelift_module::FuncId>> {
        let err = |e: cranelift_module::ModuleError| codegen(format!("{e:?}"));
        let mut ids = Vec::with_capacity(self.functions.len());
        for (i, ((_, func), symbol)) in self.functions.iter().zip(self.symbols()).enumerate() {
            ids.push(module.declare_function(&symbol, linkage(i), &func.signature).map_err(err)?);
        }
        // Compiled on every core (each function on its own), defined in order: the code is
        // the same as one function after the other.
        let code = self.compile_all(module.isa(), as_written, &ids, cache)?;
        for ((id, (bytes, align, relocs)), i) in ids.iter().zip(code).zip(0..) {
            if self.keep_order.contains(&i) && !relocs.is_empty() {
                return Err(codegen(format!("{}: a function compiled as written must not call or reference anything", self.functions[i].0)));
            }
            module.define_function_bytes(*id, align, &bytes, &relocs).map_err(err)?;
        }
        Ok(ids)
    }

    /// Machine code of every function (bytes, alignment, relocations), compiled on up to
    /// one thread per core: functions in [`Compiled::keep_order`] by `as_written`
    /// (16-byte aligned), the others by `isa`.
    fn compile_all(
        &self,
        isa: &dyn cranelift_codegen::isa::TargetIsa,
        as_written: &dyn cranelift_codegen::isa::TargetIsa,
        ids: &[cranelift_module::FuncId],
        cache: Option<&CodeCache>,
    ) -> BackendResult<Vec<MachineCode>> {
        // A body's key says everything its code depends on (what it calls included: the
        // micro-kernels, whose ids are the same in every compile), the ISA's flags the rest.
        // (Bodies are compiled by `isa`: only the micro-kernels keep their order.)
        let prefix = cache.map(|_| {
            let isa_flags: Vec<String> = isa.isa_flags().iter().map(ToString::to_string).collect();
            format!("{}\n{}\n", isa.flags(), isa_flags.join(" "))
        });
        let one = |i: usize| -> BackendResult<MachineCode> {
            let (name, func) = &self.functions[i];
            let keep = self.keep_order.contains(&i);
            let isa = if keep { as_written } else { isa };
            let key = prefix.as_ref().zip(self.keys[i]).map(|(p, body)| (p.clone(), body));
            if let (Some(cache), Some(key)) = (cache, &key) {
                if let Some((bytes, align, mut relocs)) = cache.get(key) {
                    // A reference to the function itself names it by its id in this compile.
                    for r in &mut relocs {
                        if let cranelift_module::ModuleRelocTarget::FunctionOffset(_, offset) = r.name {
                            r.name = cranelift_module::ModuleRelocTarget::FunctionOffset(ids[i], offset);
                        }
                    }
                    return Ok((bytes, align, relocs));
                }
            }
            let mut ctx = cranelift_codegen::Context::for_function(func.clone());
            let code = compile_function(&mut ctx, isa, name)?;
            let align = code.buffer.alignment as u64;
            let align = if keep { align.max(16) } else { align };
            let relocs = code.buffer.relocs().iter().map(|r| cranelift_module::ModuleReloc::from_mach_reloc(r, func, ids[i])).collect();
            let code = (code.code_buffer().to_vec(), align, relocs);
            if let (Some(cache), Some(key)) = (cache, key) {
                cache.put(key, &code);
            }
            Ok(code)
        };
        let n = self.functions.len();
        let threads = std::thread::available_parallelism().map_or(1, |t| t.get()).min(n);
        if threads <= 1 {
            return (0..n).map(one).collect();
        }
        // Each thread takes the next function until none is left (their sizes differ widely).
        let next = std::sync::atomic::AtomicUsize::new(0);
        let mut done: Vec<(usize, BackendResult<MachineCode>)> = std::thread::scope(|scope| {
            let workers: Vec<_> = (0..threads)
                .map(|_| {
                    scope.spawn(|| {
                        let mut mine = Vec::new();
                        loop {
                            let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                            if i >= n {
                                break mine;
                            }
                            mine.push((i, one(i)));
                        }
                    })
                })
                .collect();
            workers.into_iter().flat_map(|w| w.join().unwrap_or_else(|p| std::panic::resume_unwind(p))).collect()
        });
        done.sort_by_key(|(i, _)| *i);
        done.into_iter().map(|(_, code)| code).collect()
    }

    /// The names of the exported kernel symbols, in function order (the micro-kernel, which is
    /// not exported, keeps its place so that steps index this list as they index functions).
    pub fn symbols(&self) -> Vec<String> {
        self.functions.iter().map(|(n, _)| format!("{SYMBOL_PREFIX}{n}")).collect()
    }

    /// The loadable artifact: the object linked into a shared object, the manifest and the
    /// constants.
    pub fn artifact(self, program: &Program) -> BackendResult<Artifact> {
        self.artifact_then(program, |c| c.into_bytes(program))
    }

    /// [`Compiled::artifact`], the program's constants moved into the artifact.
    pub fn artifact_taking(self, program: &mut Program) -> BackendResult<Artifact> {
        let (manifest, code, constants) = self.parts(program)?;
        Ok(Artifact { manifest, code, constants: constants.into_bytes_taking(program) })
    }

    fn artifact_then(self, program: &Program, finish: impl FnOnce(Constants) -> Vec<u8>) -> BackendResult<Artifact> {
        let (manifest, code, constants) = self.parts(program)?;
        Ok(Artifact { manifest, code, constants: finish(constants) })
    }

    /// The manifest, the linked code and the constants section to put together.
    fn parts(mut self, program: &Program) -> BackendResult<(f16c_core::artifact::Manifest, Vec<u8>, Constants)> {
        let (object, requires) = self.object()?;
        let code = super::link::shared_object(std::slice::from_ref(&object)).map_err(|m| BackendError::program(NAME, BackendErrorKind::Tool(m)))?;
        let info = CodeInfo { target: "x86_64", backend: NAME, format: CodeFormat::ElfSharedObject, requires };
        let (manifest, constants) = self.manifest(program, info);
        Ok((manifest, code, constants))
    }

    /// The manifest (and constants section) of the compiled program, with each kernel's plan.
    pub fn manifest(&mut self, program: &Program, info: CodeInfo) -> (f16c_core::artifact::Manifest, Constants) {
        let (mut manifest, constants) = self.layout.manifest(program, info, self.symbols(), self.steps.clone());
        if self.calls_micro_kernels {
            manifest.micro_kernels = f16c_core::abi::MICRO_KERNEL_VERSION;
        }
        for (k, kernel) in manifest.kernels.iter_mut().enumerate() {
            kernel.plan = self.plan(program, k).unwrap_or_default();
        }
        (manifest, constants)
    }
}

/// One function's machine code: bytes, alignment, relocations.
type MachineCode = (Vec<u8>, u64, Vec<cranelift_module::ModuleReloc>);

fn codegen(message: String) -> BackendError {
    BackendError::program(NAME, BackendErrorKind::Codegen(message))
}

/// The x86-64 Cranelift backend, at a `--cpu` level (`None`: what `--emit` prints is
/// x86-64-v3's, the code it runs and writes is this machine's).
#[derive(Clone, Copy, Debug, Default)]
pub struct CraneliftBackend {
    /// The level's options.
    pub cpu: Option<Options>,
}

/// The backend without `--cpu`.
pub static CRANELIFT: CraneliftBackend = CraneliftBackend { cpu: None };

/// The backend at each of [`X86_LEVELS`].
static AT_LEVEL: [CraneliftBackend; 4] = [
    CraneliftBackend { cpu: Some(X86_LEVELS[0].1) },
    CraneliftBackend { cpu: Some(X86_LEVELS[1].1) },
    CraneliftBackend { cpu: Some(X86_LEVELS[2].1) },
    CraneliftBackend { cpu: Some(X86_LEVELS[3].1) },
];

/// The backend at `--cpu` (`native`: this machine's options).
pub fn at_level(cpu: Cpu) -> BackendResult<&'static CraneliftBackend> {
    static NATIVE: std::sync::OnceLock<CraneliftBackend> = std::sync::OnceLock::new();
    match cpu {
        Cpu::Native => Options::host().map(|o| NATIVE.get_or_init(|| CraneliftBackend { cpu: Some(o) })),
        Cpu::Level(l) => Ok(&AT_LEVEL[X86_LEVELS.iter().position(|(row, _)| *row == l).expect("a row per level")]),
    }
}

impl CraneliftBackend {
    /// The options of what it prints.
    fn printed(&self) -> Options {
        self.cpu.unwrap_or_default()
    }

    /// The options of the code it writes.
    fn for_code(&self) -> BackendResult<Options> {
        self.cpu.map_or_else(Options::host, Ok)
    }
}

impl Backend for CraneliftBackend {
    fn name(&self) -> &'static str {
        NAME
    }

    /// Legality ([`legal::legal`]), then the kernel's plan. A plan depends on the whole
    /// program (the attention chains that run in bands, the column groups its work items
    /// share), so the program is planned ([`plans`]) and this kernel's plan taken: O(kernels)
    /// per call, where [`Backend::configure_all`] plans every kernel in one pass (what
    /// `--emit=kernels` calls; [`crate::backend::check_legal`] asks [`Backend::legal_all`]).
    fn configure(&self, program: &Program, kernel: &Kernel) -> Result<crate::backend::KernelConfig, Unsupported> {
        legal::legal(kernel)?;
        let index = program.kernels.iter().position(|k| std::ptr::eq(k, kernel));
        Ok(match index {
            Some(i) => self.configure_all(program).swap_remove(i).unwrap_or_default(),
            // A kernel of no program: its legality is all there is to say.
            None => crate::backend::KernelConfig::default(),
        })
    }

    /// The plans of the kernels at the `--cpu` level (without one, x86-64-v3: what `--emit`
    /// prints on every machine), the plans the code is built from, made without building it
    /// ([`plans`]); a program it cannot plan has none.
    fn configure_all(&self, program: &Program) -> Vec<Result<crate::backend::KernelConfig, Unsupported>> {
        let checked: Vec<Result<crate::backend::KernelConfig, Unsupported>> = self.legal_all(program).into_iter().map(|l| l.map(|()| crate::backend::KernelConfig::default())).collect();
        if checked.iter().any(Result::is_err) {
            return checked;
        }
        match plans(program, &self.printed()) {
            Ok(plans) => plans.into_iter().map(|plan| Ok(crate::backend::KernelConfig { plan })).collect(),
            Err(_) => checked,
        }
    }

    /// Legality alone ([`legal::legal`]): the plans are made when the program is compiled.
    fn legal_all(&self, program: &Program) -> Vec<Result<(), Unsupported>> {
        program.kernels.iter().map(legal::legal).collect()
    }

    fn target(&self) -> Target {
        Target::X86_64
    }

    /// A cast between f32 and f16 beside a copy (the input's cast and transpose of an fp16
    /// model) is folded into it: the copy moves the elements into scratch and has the runtime
    /// convert them in bulk ([`lower`]'s `copy`).
    fn lowering(&self) -> crate::lower::LowerOptions {
        crate::lower::LowerOptions { converting_copies: true, multi_read_epilogues: false, plain_epilogues: true, wide_math_epilogues: true, contraction_views: false, concatenated_inputs: false }
    }

    fn forms(&self) -> &'static [Emit] {
        &[Emit::Clif, Emit::Asm, Emit::Obj]
    }

    fn code_format(&self) -> CodeFormat {
        CodeFormat::ElfSharedObject
    }

    fn emit(&self, program: &Program, form: Emit) -> BackendResult<Vec<u8>> {
        // Printed at the `--cpu` level, without one at x86-64-v3, so that the text is the same
        // everywhere.
        let compiled = compile(program, &self.printed())?;
        Ok(match form {
            Emit::Clif => (compiled.summary(program) + &compiled.clif()).into_bytes(),
            Emit::Asm => (compiled.summary(program) + &compiled.disassemble()?).into_bytes(),
            Emit::Obj => compiled.object()?.0,
            other => return Err(BackendError::program(NAME, BackendErrorKind::Form(other.name()))),
        })
    }

    fn artifact(&self, program: &Program) -> BackendResult<Artifact> {
        compile(program, &self.for_code()?)?.artifact(program)
    }

    fn artifact_taking(&self, program: &mut Program) -> BackendResult<Artifact> {
        compile(program, &self.for_code()?)?.artifact_taking(program)
    }
}

/// The host's Cranelift ISA at an `opt_level` (`speed`, or `none` for functions compiled as
/// written), position independent or not, and whether it has FMA.
pub fn host_isa(opt_level: &str, pic: bool) -> BackendResult<(OwnedTargetIsa, bool)> {
    let mut flags = settings::builder();
    let mut set = |k: &str, v: &str| flags.set(k, v).map_err(|e| codegen(format!("cranelift setting {k}: {e}")));
    set("opt_level", opt_level)?;
    // The backend's output is verified in the test suite; skip the verifier at run time.
    set("enable_verifier", "false")?;
    if pic {
        set("is_pic", "true")?;
    }
    let isa_builder = cranelift_native::builder().map_err(|e| codegen(format!("this host is not supported by Cranelift: {e}")))?;
    let isa = isa_builder.finish(settings::Flags::new(flags)).map_err(|e| codegen(e.to_string()))?;
    let fma = isa.isa_flags().iter().any(|f| f.name == "has_fma" && f.as_bool() == Some(true));
    Ok((isa, fma))
}

/// The CPU features an ISA's code may use (its enabled `has_*` flags, without the prefix).
fn isa_features(isa: &dyn cranelift_codegen::isa::TargetIsa) -> Vec<String> {
    isa.isa_flags()
        .iter()
        .filter(|f| f.as_bool() == Some(true))
        .filter_map(|f| f.name.strip_prefix("has_").map(str::to_string))
        .collect()
}

/// Compiles `ctx`'s function for `isa` by hand (where a module does not do it for us).
pub fn compile_function<'c>(
    ctx: &'c mut cranelift_codegen::Context,
    isa: &dyn cranelift_codegen::isa::TargetIsa,
    name: &str,
) -> BackendResult<&'c cranelift_codegen::CompiledCode> {
    let mut ctrl = cranelift_codegen::control::ControlPlane::default();
    ctx.compile(isa, &mut ctrl).map_err(|e| codegen(format!("{name}: {:?}", e.inner)))
}

/// The frontend configuration of x86-64 System V, which the generated functions assume.
pub fn frontend_config() -> TargetFrontendConfig {
    TargetFrontendConfig {
        default_call_conv: emit::CALL_CONV,
        pointer_width: target_lexicon::PointerWidth::U64,
        page_size_align_log2: 12,
    }
}

/// Compiles a lowered program to CLIF. The program must be legal ([`legal::legal`]).
pub fn compile(program: &Program, options: &Options) -> BackendResult<Compiled> {
    let mut cx = lower::Context::new(program, options);
    // The generated micro-kernels, where the GEMMs call no runtime loop (a CPU without AVX2):
    // functions 0 and 1, which the tiles call by index. Elsewhere nothing calls them.
    let generated = if options.loops == Loops::Generated { micro::AForm::ALL.len() } else { 0 };
    for form in &micro::AForm::ALL[..generated] {
        let micro = micro::micro_kernel_function(&mut cx.fctx, options.fma, *form);
        cx.functions.push((form.name().to_string(), micro));
    }
    crate::timing::phase("cranelift build CLIF", || (0..program.kernels.len()).try_for_each(|k| cx.kernel(k)))?;
    let lower::Context { mut layout, functions, mut steps, micro_kernels, planner, plans, .. } = cx;
    let bands = planner.bands;
    // Attention's scores, softmax and products band by band (the same items, reordered).
    for band in &bands {
        crate::backend::bands::interleave(&mut steps, band);
        layout.together.push((band.first, band.first + 2));
    }
    layout.finish(program);
    // The features of the micro-kernels the code calls, each once.
    let mut requires: Vec<String> = Vec::new();
    for f in micro_kernels.iter().filter_map(|&lc| f16c_core::abi::MicroKernel::of(lc)).flat_map(|m| m.requires) {
        if !requires.iter().any(|r| r == f) {
            requires.push(f.to_string());
        }
    }
    let first_body = functions.len();
    let (functions, keys) = crate::timing::phase("cranelift shared bodies", || share::share_bodies(functions, generated));
    let calls_micro_kernels = !micro_kernels.is_empty();
    Ok(Compiled { layout, functions, keys, first_body, keep_order: (0..generated).collect(), steps, requires, calls_micro_kernels, bands, plans })
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
