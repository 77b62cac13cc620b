//! Linking object files into a shared object, at compile time, so that the artifact holds
//! code the runtime can `dlopen` without any toolchain.
//!
//! Shared by the CPU backends (Cranelift, LLVM). The object needs nothing from outside but
//! libc's `memcpy`/`memset` (kernels call the runtime only through the `rt` table), so a plain
//! `-shared` link suffices. The linker is the process settings' (`F16C_LINKER` to the binaries,
//! [`f16c_core::settings`]) if set, else the first of `ld.lld-22`, LLVM 22's `ld.lld`,
//! `ld.lld`, `ld` found.

use f16c_core::tempdir::TempDir;
use std::path::Path;
use std::process::Command;

/// Linkers tried in order when the settings name none.
const LINKERS: &[&str] = &["ld.lld-22", "/usr/lib/llvm-22/bin/ld.lld", "ld.lld", "ld"];

fn found(linker: &str) -> bool {
    if linker.contains('/') {
        return Path::new(linker).is_file();
    }
    std::env::var_os("PATH").is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(linker).is_file()))
}

/// Links `objects` into a shared object and returns its bytes.
pub fn shared_object(objects: &[Vec<u8>]) -> Result<Vec<u8>, String> {
    let linker = match f16c_core::settings::get().linker {
        Some(l) => l,
        None => LINKERS
            .iter()
            .find(|l| found(l))
            .map(|l| l.to_string())
            .ok_or_else(|| format!("no linker found to build the shared object (tried {}; set F16C_LINKER)", LINKERS.join(", ")))?,
    };
    let dir = TempDir::new("link").map_err(|e| format!("cannot create a temporary directory: {e}"))?;
    let so = dir.path().join("kernels.so");
    let mut paths = Vec::with_capacity(objects.len());
    for (i, object) in objects.iter().enumerate() {
        let obj = dir.path().join(format!("kernels{i}.o"));
        std::fs::write(&obj, object).map_err(|e| format!("cannot write {}: {e}", obj.display()))?;
        paths.push(obj);
    }
    let out = crate::timing::phase("link", || Command::new(&linker).args(["-shared", "-z", "noexecstack", "-o"]).arg(&so).args(&paths).output())
        .map_err(|e| format!("cannot run the linker '{linker}': {e}"))?;
    if !out.status.success() {
        return Err(format!("the linker '{linker}' failed: {}", String::from_utf8_lossy(&out.stderr).trim()));
    }
    std::fs::read(&so).map_err(|e| format!("cannot read {}: {e}", so.display()))
}
