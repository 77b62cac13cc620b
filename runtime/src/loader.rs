//! Loading artifacts: reading the file, checking that it can run here, and mapping its code.
//!
//! A CPU artifact's code is an ELF shared object exporting one symbol per kernel function. It
//! is written to a private temporary file, `dlopen`ed and the file removed at once (the mapping
//! stays). Before that, the manifest's target and required CPU features are checked against
//! this machine, so an artifact for another target or CPU is a clear error, not a crash.

use crate::exec::{Aligned, Executor};
use crate::{Result, RuntimeError};
use f16c_core::abi::KernelFn;
use f16c_core::artifact::{Artifact, ArtifactError, CodeFormat, Checksum, Header, Manifest, Slot, HEADER_BYTES};
use std::ffi::{CStr, CString};
use std::path::Path;

/// Reads and validates an artifact file.
pub fn read(path: &Path) -> Result<Artifact> {
    let bytes = std::fs::read(path).map_err(|e| RuntimeError::Load(format!("cannot read '{}': {e}", path.display())))?;
    Artifact::from_bytes(&bytes).map_err(|source| RuntimeError::Artifact { path: path.display().to_string(), source })
}

/// Loads an artifact file for running with `threads` threads.
pub fn load_file(path: &Path, threads: usize) -> Result<Executor> {
    load(read(path)?, threads)
}

/// The architecture this runtime was built for, as manifests name targets.
pub const HOST_TARGET: &str = if cfg!(target_arch = "x86_64") { "x86_64" } else if cfg!(target_arch = "aarch64") { "aarch64" } else { "unknown" };

/// A loaded model: CPU code run by the [`Executor`], or PTX run by the GPU executor.
pub enum Loaded {
    /// A CPU artifact.
    Cpu(Executor),
    /// A GPU artifact.
    #[cfg(feature = "cuda")]
    Gpu(crate::cuda::GpuExecutor),
}

impl Loaded {
    /// Runs the model.
    pub fn run(&self, inputs: &[f16c_core::Tensor]) -> Result<Vec<f16c_core::Tensor>> {
        match self {
            Loaded::Cpu(e) => e.run(inputs),
            #[cfg(feature = "cuda")]
            Loaded::Gpu(g) => g.run(inputs),
        }
    }

    /// Runs the model and returns the milliseconds it took: the kernels alone on a GPU (CUDA
    /// events), the whole run on a CPU.
    pub fn run_timed(&self, inputs: &[f16c_core::Tensor]) -> Result<(Vec<f16c_core::Tensor>, f64)> {
        match self {
            Loaded::Cpu(e) => {
                let t = std::time::Instant::now();
                let o = e.run(inputs)?;
                Ok((o, t.elapsed().as_secs_f64() * 1e3))
            }
            #[cfg(feature = "cuda")]
            Loaded::Gpu(g) => g.run_timed(inputs),
        }
    }

    /// The manifest.
    pub fn manifest(&self) -> &f16c_core::artifact::Manifest {
        match self {
            Loaded::Cpu(e) => e.manifest(),
            #[cfg(feature = "cuda")]
            Loaded::Gpu(g) => g.manifest(),
        }
    }
}

/// Loads an artifact file of any target this runtime runs: CPU shared objects for this
/// machine, and (with the `cuda` feature) PTX on the GPU.
///
/// A CPU artifact's constants are read from the file straight into their aligned buffers, one
/// per weight, checksummed on the way: each byte is read once and no copy of the whole file is
/// made (a 400 MB GPT-2 artifact took three: the file, the artifact, the buffers).
pub fn open(path: &Path, threads: usize) -> Result<Loaded> {
    use std::io::{Read, Seek, SeekFrom};
    let io = |e: std::io::Error| RuntimeError::Load(format!("cannot read '{}': {e}", path.display()));
    let bad = |source| RuntimeError::Artifact { path: path.display().to_string(), source };
    let mut file = std::fs::File::open(path).map_err(io)?;
    let file_len = file.metadata().map_err(io)?.len();
    let mut head = vec![0u8; HEADER_BYTES.min(file_len as usize)];
    file.read_exact(&mut head).map_err(io)?;
    let header = Header::parse(&head, file_len).map_err(bad)?;
    let (m, c, k) = (header.lens[0] as usize, header.lens[1] as usize, header.lens[2] as usize);
    let mut manifest_bytes = vec![0u8; m];
    let mut code = vec![0u8; c];
    file.read_exact(&mut manifest_bytes).map_err(io)?;
    file.read_exact(&mut code).map_err(io)?;
    // The whole file at once, checked as `read` checks it: for GPU artifacts, constants that
    // share bytes, and a manifest that does not parse (the checksum, checked first there, tells
    // corruption from a bad manifest).
    let whole = |mut file: std::fs::File| -> Result<Loaded> {
        file.seek(SeekFrom::Start(0)).map_err(io)?;
        let mut bytes = Vec::with_capacity(file_len as usize);
        file.read_to_end(&mut bytes).map_err(io)?;
        load_any(Artifact::from_bytes(&bytes).map_err(bad)?, threads)
    };
    let Some(manifest) = Manifest::from_json(&manifest_bytes).ok().filter(|m| m.validate(k).is_ok()) else { return whole(file) };
    // Constants in file order, each slot's into its own buffer.
    let mut order: Vec<(usize, usize, usize, Option<f16c_core::artifact::Widen>)> =
        manifest.slots.iter().enumerate().filter_map(|(i, s)| if let Slot::Constant { offset, bytes, widen } = *s { Some((offset, bytes, i, widen)) } else { None }).collect();
    order.sort_unstable_by_key(|&(offset, bytes, slot, _)| (offset, bytes, slot));
    let disjoint = order.windows(2).all(|w| w[0].0 + w[0].1 <= w[1].0);
    if manifest.code_format != CodeFormat::ElfSharedObject || !disjoint {
        return whole(file);
    }
    let mut sum = Checksum::new();
    sum.update(&manifest_bytes);
    sum.update(&code);
    let mut constants: Vec<Option<Aligned>> = manifest.slots.iter().map(|_| None).collect();
    let mut at = 0usize;
    let mut gap = Vec::new();
    let mut reader = std::io::BufReader::with_capacity(1 << 16, file);
    for (offset, bytes, slot, widen) in order {
        gap.resize(offset - at, 0);
        reader.read_exact(&mut gap).map_err(io)?;
        sum.update(&gap);
        let mut buffer = Aligned::zeroed(bytes);
        let dst = &mut buffer.bytes_mut()[..bytes];
        reader.read_exact(dst).map_err(io)?;
        sum.update(dst);
        // A weight stored as fp16/bf16 for code that multiplies in f32: widened now, once.
        constants[slot] = Some(buffer.widened(bytes, widen));
        at = offset + bytes;
    }
    gap.resize(k - at, 0);
    reader.read_exact(&mut gap).map_err(io)?;
    sum.update(&gap);
    if sum.finish() != header.checksum {
        return Err(bad(ArtifactError::Checksum { stored: header.checksum, computed: sum.finish() }));
    }
    let (library, functions) = open_code(&manifest, &code)?;
    Ok(Loaded::Cpu(Executor::with_constants(manifest, constants, functions, Box::new(library), threads)?))
}

/// Loads an artifact of any target this runtime runs (see [`open`]).
pub fn load_any(artifact: Artifact, threads: usize) -> Result<Loaded> {
    match artifact.manifest.code_format {
        #[cfg(feature = "cuda")]
        CodeFormat::Ptx => Ok(Loaded::Gpu(crate::cuda::GpuExecutor::new(artifact)?)),
        _ => Ok(Loaded::Cpu(load(artifact, threads)?)),
    }
}

/// Loads an artifact's code and constants.
pub fn load(artifact: Artifact, threads: usize) -> Result<Executor> {
    let (library, functions) = open_code(&artifact.manifest, &artifact.code)?;
    let Artifact { manifest, constants, .. } = artifact;
    Executor::new(manifest, &constants, functions, Box::new(library), threads)
}

/// Checks that a CPU artifact's code can run here and maps it: the library and, per symbol,
/// its function.
fn open_code(m: &Manifest, code: &[u8]) -> Result<(Library, Vec<Option<KernelFn>>)> {
    if m.code_format != CodeFormat::ElfSharedObject {
        return Err(RuntimeError::Load(format!(
            "this artifact is for {} ({:?} code from {}); this runtime runs {HOST_TARGET} shared objects",
            m.target, m.code_format, m.backend
        )));
    }
    if m.target != HOST_TARGET && !(HOST_TARGET == "aarch64" && m.target.starts_with("aarch64")) {
        return Err(RuntimeError::Load(format!("this artifact is for {}; this machine is {HOST_TARGET}", m.target)));
    }
    check_cpu(&m.requires)?;
    let library = Library::open(code)?;
    // Symbols the object keeps local (the GEMM micro-kernel) resolve to `None`; the executor
    // checks that every step's function exists.
    let functions = m.symbols.iter().map(|s| library.symbol(s)).collect();
    Ok((library, functions))
}

/// Checks that this CPU has every feature the code uses (Cranelift's flag names).
pub fn check_cpu(requires: &[String]) -> Result<()> {
    let missing: Vec<&str> = requires.iter().map(String::as_str).filter(|f| feature(f) != Some(true)).collect();
    if missing.is_empty() {
        Ok(())
    } else {
        Err(RuntimeError::Load(format!(
            "this artifact needs CPU features this machine lacks: {} (recompile it on, or for, this machine)",
            missing.join(", ")
        )))
    }
}

/// Whether this CPU has feature `f` (false for one the runtime does not know).
pub fn has_feature(f: &str) -> bool {
    feature(f) == Some(true)
}

/// Whether the runtime knows CPU feature `f` (a Cranelift or LLVM name an artifact may require).
pub fn knows_feature(f: &str) -> bool {
    feature(f).is_some()
}

/// Whether this CPU has feature `f`; `None` for a feature this runtime does not know (an
/// artifact that requires one is refused rather than risking an illegal instruction).
#[cfg(target_arch = "x86_64")]
fn feature(f: &str) -> Option<bool> {
    use std::arch::is_x86_feature_detected as has;
    Some(match f {
        "sse3" => has!("sse3"),
        "ssse3" => has!("ssse3"),
        "sse41" => has!("sse4.1"),
        "sse42" => has!("sse4.2"),
        "popcnt" => has!("popcnt"),
        "avx" => has!("avx"),
        "avx2" => has!("avx2"),
        "fma" => has!("fma"),
        "bmi1" => has!("bmi1"),
        "bmi2" => has!("bmi2"),
        "lzcnt" => has!("lzcnt"),
        "cmpxchg16b" => has!("cmpxchg16b"),
        "f16c" => has!("f16c"),
        "avx512f" => has!("avx512f"),
        "avx512dq" => has!("avx512dq"),
        "avx512vl" => has!("avx512vl"),
        "avx512bitalg" => has!("avx512bitalg"),
        "avx512vbmi" => has!("avx512vbmi"),
        "avx512bw" => has!("avx512bw"),
        "avx512vnni" => has!("avx512vnni"),
        "avx512bf16" => has!("avx512bf16"),
        // Cranelift's name for AVX-VNNI.
        "avx_vnni" => has!("avxvnni"),
        _ => return None,
    })
}

#[cfg(not(target_arch = "x86_64"))]
fn feature(_: &str) -> Option<bool> {
    None
}

/// A `dlopen`ed shared object.
struct Library(*mut libc::c_void);

// SAFETY: the handle is only used to look up symbols (thread-safe in glibc) and to close it once.
unsafe impl Send for Library {}
unsafe impl Sync for Library {}

fn dl_error() -> String {
    // SAFETY: dlerror returns null or a valid C string owned by libc.
    let e = unsafe { libc::dlerror() };
    if e.is_null() {
        "unknown error".into()
    } else {
        // SAFETY: non-null, NUL-terminated.
        unsafe { CStr::from_ptr(e) }.to_string_lossy().into_owned()
    }
}

impl Library {
    /// Maps `code` (an ELF shared object).
    fn open(code: &[u8]) -> Result<Library> {
        static COUNTER: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!("f16c-code-{}-{n}.so", std::process::id()));
        let load = |m: String| RuntimeError::Load(m);
        std::fs::write(&path, code).map_err(|e| load(format!("cannot write the code to {}: {e}", path.display())))?;
        let c = CString::new(path.as_os_str().as_encoded_bytes()).map_err(|_| load("temporary path contains NUL".into()))?;
        // SAFETY: a valid path; the object has no constructors (generated code only).
        let handle = unsafe { libc::dlopen(c.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
        let _ = std::fs::remove_file(&path);
        if handle.is_null() {
            return Err(load(format!("cannot load the artifact's code: {}", dl_error())));
        }
        Ok(Library(handle))
    }

    fn symbol(&self, name: &str) -> Option<KernelFn> {
        let c = CString::new(name).ok()?;
        // SAFETY: a valid handle and name.
        let p = unsafe { libc::dlsym(self.0, c.as_ptr()) };
        // SAFETY: the artifact's kernel symbols are functions with the kernel ABI.
        (!p.is_null()).then(|| unsafe { std::mem::transmute::<*mut libc::c_void, KernelFn>(p) })
    }
}

impl Drop for Library {
    fn drop(&mut self) {
        // SAFETY: opened by dlopen, closed once; no function pointer outlives the executor.
        unsafe { libc::dlclose(self.0) };
    }
}
