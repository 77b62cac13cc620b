//! # f16c-foreign
//!
//! Running standalone libraries (`f16c compile --emit=lib`) through their plain C entry point,
//! for a CPU architecture this process may not be: AArch64 code on an x86-64 machine runs
//! under `qemu-aarch64 -cpu max` (Debian's `qemu-user`), code of the host's own architecture
//! natively. What `f16c run --target=aarch64` and the AArch64 tests use.
//!
//! Rust's standard library for AArch64 is not installed here, so what runs on the emulated
//! CPU is C: a small generic driver (`foreign/c/f16c_driver.c`), built on first use with the
//! architecture's C compiler and cached in the temporary directory, that `dlopen`s each library
//! and calls its `NAME_run_v`. Many runs share one driver process ([`run_many`]), which is
//! what makes a few hundred emulated runs cheap.
//!
//! Tools, each overridable by the process's settings ([`f16c_core::settings`], which the
//! binaries take from the environment variables named here):
//! - the C compiler: `cc` for the host's architecture, `aarch64-linux-gnu-gcc` otherwise
//!   (`F16C_CC_<ARCH>`, e.g. `F16C_CC_AARCH64`);
//! - the emulator for a foreign architecture: `qemu-aarch64 -cpu max -L /usr/aarch64-linux-gnu`
//!   (`F16C_QEMU_AARCH64`, a command line split at spaces).

use f16c_runtime::{npy, Result, RuntimeError};
use f16c_core::abi::c_dtype;
use f16c_core::tempdir::TempDir;
use f16c_core::{Data, Tensor, TensorType};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The driver's source.
const DRIVER: &str = include_str!("../c/f16c_driver.c");

/// The instruction-counting TCG plugin's source.
const PLUGIN: &str = include_str!("../c/f16c_insn_count.c");

/// Link flags of the driver: libraries call the C library's math functions, so libm must be
/// loaded even though the driver itself calls none of them.
const DRIVER_FLAGS: &[&str] = &["-Wl,--no-as-needed", "-lm", "-ldl"];

/// A standalone library and the types of its entry point.
pub struct Library<'a> {
    /// The shared object's bytes.
    pub code: &'a [u8],
    /// The C name of its function ([`Library::code`] defines `<name>_run_v`).
    pub name: &'a str,
    /// The function's argument types (as compiled: fp16 and bf16 cross the boundary as f32).
    pub inputs: &'a [TensorType],
    /// Its result types.
    pub outputs: &'a [TensorType],
}

/// The architecture this process runs on (`x86_64`, `aarch64`).
pub const HOST_ARCH: &str = std::env::consts::ARCH;

fn tool_error(m: String) -> RuntimeError {
    RuntimeError::Tool(m)
}

/// A scratch directory for one use of the tools.
fn scratch() -> Result<TempDir> {
    TempDir::new("foreign").map_err(|e| tool_error(format!("cannot create a temporary directory: {e}")))
}

/// A command line: `set` (from the settings) or `default`, split at spaces.
fn command(set: Option<&str>, default: &str) -> Vec<String> {
    set.unwrap_or(default).split_whitespace().map(String::from).collect()
}

/// The command that runs an executable of `arch` (empty: run it directly).
fn emulator(arch: &str) -> Result<Vec<String>> {
    match arch {
        a if a == HOST_ARCH => Ok(Vec::new()),
        "aarch64" => Ok(command(f16c_core::settings::get().qemu_aarch64.as_deref(), "qemu-aarch64 -cpu max -L /usr/aarch64-linux-gnu")),
        a => Err(tool_error(format!("cannot run {a} code on this {HOST_ARCH} machine"))),
    }
}

/// The driver for `arch`.
fn driver(arch: &str) -> Result<PathBuf> {
    build(arch, "f16c-driver", DRIVER, &["-O2"], DRIVER_FLAGS)
}

/// `source` compiled for `arch` with `flags` (before the source) and `libs` (after it), once
/// per source, compiler and flags, cached in the temporary directory.
fn build(arch: &str, name: &str, source: &str, flags: &[&str], libs: &[&str]) -> Result<PathBuf> {
    let default = if arch == HOST_ARCH { "cc" } else { "aarch64-linux-gnu-gcc" };
    let cc = command(f16c_core::settings::get().cc(arch), default);
    let mut h = std::collections::hash_map::DefaultHasher::new();
    std::hash::Hash::hash(&(source, &cc, arch, flags, libs), &mut h);
    let key = std::hash::Hasher::finish(&h);
    let path = std::env::temp_dir().join(format!("{name}-{arch}-{key:016x}"));
    if path.is_file() {
        return Ok(path);
    }
    let scratch = scratch()?;
    let src = scratch.path().join(format!("{name}.c"));
    std::fs::write(&src, source).map_err(|e| tool_error(format!("cannot write {}: {e}", src.display())))?;
    let exe = scratch.path().join(name);
    let out = Command::new(&cc[0])
        .args(&cc[1..])
        .args(flags)
        .arg("-o")
        .arg(&exe)
        .arg(&src)
        .args(libs)
        .output()
        .map_err(|e| tool_error(format!("cannot run the {arch} C compiler '{}': {e} (install gcc-aarch64-linux-gnu, or set F16C_CC_{})", cc[0], arch.to_uppercase())))?;
    if !out.status.success() {
        return Err(tool_error(format!("the {arch} C compiler '{}' failed on {name}: {}", cc[0], String::from_utf8_lossy(&out.stderr).trim())));
    }
    // Renamed into place, so concurrent first uses never run a half-written file.
    std::fs::rename(&exe, &path).map_err(|e| tool_error(format!("cannot move {name} to {}: {e}", path.display())))?;
    Ok(path)
}

/// Runs `library` once on `inputs` (of its argument types) with code of `arch`.
pub fn run(arch: &str, library: &Library, inputs: &[Tensor]) -> Result<Vec<Tensor>> {
    run_many(arch, &[(library, inputs)]).and_then(|mut r| r.pop().expect("one result per run"))
}

/// Runs every `(library, inputs)` pair in one driver process, in order. The outer error is a
/// tool failure (no compiler, no emulator); each run's own failure is its inner error.
pub fn run_many(arch: &str, runs: &[(&Library, &[Tensor])]) -> Result<Vec<Result<Vec<Tensor>>>> {
    drive(arch, runs, 1, &[]).map(|(results, _)| results)
}

/// The instructions one call of `library` executes on `inputs` under qemu (`arch` must be
/// emulated), counted by a small TCG plugin (`foreign/c/f16c_insn_count.c`, built with the
/// host's C compiler): the difference between a process that calls it three times and one that
/// calls it once, halved, so loading and the driver's own work cancel out.
pub fn count_instructions(arch: &str, library: &Library, inputs: &[Tensor]) -> Result<u64> {
    if arch == HOST_ARCH {
        return Err(tool_error(format!("instructions are counted under qemu; {arch} code runs natively here")));
    }
    let plugin = build(HOST_ARCH, "f16c-insn-count", PLUGIN, &["-O2", "-shared", "-fPIC"], &[])?;
    let mut counts = Vec::new();
    for repeat in [1, 3] {
        let (results, stderr) = drive(arch, &[(library, inputs)], repeat, &["-plugin".into(), plugin.display().to_string()])?;
        results.into_iter().next().expect("one run")?;
        let count = stderr.lines().find_map(|l| l.strip_prefix("f16c-insns: ")?.trim().parse::<u64>().ok());
        counts.push(count.ok_or_else(|| tool_error(format!("the instruction-counting plugin printed no count: {}", stderr.trim())))?);
    }
    Ok(counts[1].saturating_sub(counts[0]) / 2)
}

/// Runs the driver on `runs`, each entry point called `repeat` times, with `extra` arguments
/// for the emulator; returns the results and the process's standard error.
fn drive(arch: &str, runs: &[(&Library, &[Tensor])], repeat: usize, extra: &[String]) -> Result<(Vec<Result<Vec<Tensor>>>, String)> {
    let emulate = emulator(arch)?;
    let driver = driver(arch)?;
    let scratch = scratch()?;
    let write = |path: &Path, bytes: &[u8]| std::fs::write(path, bytes).map_err(|e| tool_error(format!("cannot write {}: {e}", path.display())));
    let mut jobs = String::new();
    for (r, (lib, inputs)) in runs.iter().enumerate() {
        f16c_core::tensor::check_inputs(lib.name, lib.inputs, inputs).map_err(RuntimeError::BadInput)?;
        let so = scratch.path().join(format!("lib{r}.so"));
        write(&so, lib.code)?;
        let mut line = format!("{} {}_run_v {repeat} {} {}", so.display(), lib.name, inputs.len(), lib.outputs.len());
        for (i, t) in inputs.iter().enumerate() {
            let p = scratch.path().join(format!("in{r}_{i}"));
            write(&p, &to_c(t).data().to_le_bytes())?;
            line.push_str(&format!(" {}", p.display()));
        }
        for i in 0..lib.outputs.len() {
            line.push_str(&format!(" {}", scratch.path().join(format!("out{r}_{i}")).display()));
        }
        for o in lib.outputs {
            line.push_str(&format!(" {}", o.num_elements() * c_dtype(o.dtype).byte_size()));
        }
        jobs.push_str(&line);
        jobs.push('\n');
    }
    let list = scratch.path().join("jobs");
    write(&list, jobs.as_bytes())?;
    let mut cmd = match emulate.split_first() {
        Some((exe, args)) => {
            let mut c = Command::new(exe);
            c.args(args).args(extra).arg(&driver);
            c
        }
        None => Command::new(&driver),
    };
    let out = cmd.arg(&list).output().map_err(|e| {
        let what = emulate.first().map_or_else(|| driver.display().to_string(), |e| format!("the emulator '{e}' (install qemu-user, or set F16C_QEMU_AARCH64)"));
        tool_error(format!("cannot run {what}: {e}"))
    })?;
    let lines: Vec<String> = String::from_utf8_lossy(&out.stdout).lines().map(String::from).collect();
    if lines.len() != runs.len() {
        return Err(tool_error(format!(
            "the {arch} driver stopped after {} of {} runs ({}): {}",
            lines.len(),
            runs.len(),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let results = runs
        .iter()
        .zip(&lines)
        .enumerate()
        .map(|(r, ((lib, _), line))| match line.as_str() {
            "ok" => lib.outputs.iter().enumerate().map(|(i, ty)| read_output(&scratch.path().join(format!("out{r}_{i}")), ty)).collect(),
            l => Err(match l.strip_prefix("status ").and_then(|s| s.parse::<i32>().ok()) {
                Some(-1) => RuntimeError::Tool(format!("{}: out of memory", lib.name)),
                Some(s) => RuntimeError::Failed(format!("{}: {}", lib.name, f16c_core::abi::Status::describe(s))),
                None => RuntimeError::Tool(format!("{}: {}", lib.name, l.trim_start_matches("error: "))),
            }),
        })
        .collect();
    Ok((results, stderr))
}

/// `t` in the element type it crosses the C boundary in.
fn to_c(t: &Tensor) -> Tensor {
    if c_dtype(t.dtype()) == t.dtype() {
        t.clone()
    } else {
        Tensor::from_f32(t.shape().to_vec(), t.to_f32_vec()).expect("same shape")
    }
}

fn read_output(path: &Path, ty: &TensorType) -> Result<Tensor> {
    let bytes = std::fs::read(path).map_err(|e| tool_error(format!("cannot read {}: {e}", path.display())))?;
    let data = Data::from_le_bytes(c_dtype(ty.dtype), &bytes).ok_or_else(|| tool_error(format!("{}: {} bytes is not whole elements", path.display(), bytes.len())))?;
    let t = Tensor::new(ty.shape.clone(), data).map_err(|e| tool_error(format!("{}: {e}", path.display())))?;
    // fp16/bf16 results were widened exactly: narrowing them back is exact too.
    Ok(npy::fit(t, ty))
}
