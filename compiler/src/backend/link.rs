//! Linking an object file into a shared object, at compile time, so that the artifact holds
//! code the runtime can `dlopen` without any toolchain.
//!
//! Shared by the CPU backends (Cranelift, LLVM). The object needs nothing from outside but
//! libc's `memcpy`/`memset` (kernels call the runtime only through the `rt` table), so a plain
//! `-shared` link suffices. The linker is `$F16C_LINKER` if set, else the
//! first of `ld.lld-22`, LLVM 22's `ld.lld`, `ld.lld`, `ld` found.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Linkers tried in order when `F16C_LINKER` is not set.
const LINKERS: &[&str] = &["ld.lld-22", "/usr/lib/llvm-22/bin/ld.lld", "ld.lld", "ld"];

/// A scratch directory removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new() -> std::io::Result<TempDir> {
        static COUNTER: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.subsec_nanos());
        let dir = std::env::temp_dir().join(format!("f16c-link-{}-{n}-{nanos}", std::process::id()));
        std::fs::create_dir_all(&dir)?;
        Ok(TempDir(dir))
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn found(linker: &str) -> bool {
    if linker.contains('/') {
        return Path::new(linker).is_file();
    }
    std::env::var_os("PATH").is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(linker).is_file()))
}

/// Links `object` into a shared object and returns its bytes.
pub fn shared_object(object: &[u8]) -> Result<Vec<u8>, String> {
    let linker = match std::env::var("F16C_LINKER") {
        Ok(l) if !l.is_empty() => l,
        _ => LINKERS
            .iter()
            .find(|l| found(l))
            .map(|l| l.to_string())
            .ok_or_else(|| format!("no linker found to build the shared object (tried {}; set F16C_LINKER)", LINKERS.join(", ")))?,
    };
    let dir = TempDir::new().map_err(|e| format!("cannot create a temporary directory: {e}"))?;
    let (obj, so) = (dir.0.join("kernels.o"), dir.0.join("kernels.so"));
    std::fs::write(&obj, object).map_err(|e| format!("cannot write {}: {e}", obj.display()))?;
    let out = Command::new(&linker)
        .args(["-shared", "-z", "noexecstack", "-o"])
        .arg(&so)
        .arg(&obj)
        .output()
        .map_err(|e| format!("cannot run the linker '{linker}': {e}"))?;
    if !out.status.success() {
        return Err(format!("the linker '{linker}' failed: {}", String::from_utf8_lossy(&out.stderr).trim()));
    }
    std::fs::read(&so).map_err(|e| format!("cannot read {}: {e}", so.display()))
}
