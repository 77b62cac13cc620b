//! A private scratch directory, removed with everything in it when dropped: where the compiler
//! links shared objects and the runtime hands files to tools (the C driver under qemu).

use std::path::{Path, PathBuf};

/// A fresh directory under the system's temporary directory.
pub struct TempDir(PathBuf);

impl TempDir {
    /// Creates `f16c-<what>-<pid>-<n>-<nanos>`.
    pub fn new(what: &str) -> std::io::Result<TempDir> {
        static COUNTER: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.subsec_nanos());
        let dir = std::env::temp_dir().join(format!("f16c-{what}-{}-{n}-{nanos}", std::process::id()));
        std::fs::create_dir_all(&dir)?;
        Ok(TempDir(dir))
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
