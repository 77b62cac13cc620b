//! The compile cache of `f16c run`: the artifact a run compiled, kept under a key made of the
//! input file's bytes, every option that changes the compiled program (a policy file's
//! contents too) and the compiler's own build, so that running the same model again loads the
//! artifact instead of importing and compiling it.
//!
//! Where: `$F16C_CACHE_DIR`, else `$XDG_CACHE_HOME/f16c`, else `$HOME/.cache/f16c`. One file per
//! entry, written to a temporary name and renamed (two runs at once never see half a file); a
//! hit refreshes the entry's time, and the oldest entries go when the cache holds more than
//! [`LIMIT_BYTES`]. A file that does not read back as an artifact is compiled again. Nothing is
//! kept that a run does not need: reading or writing the cache failing is a warning, never an
//! error. `--no-cache` (or `F16C_NO_CACHE=1`) bypasses it.

use clap::ArgMatches;
use std::path::{Path, PathBuf};

/// The cache's size above which the least recently used entries are removed.
pub const LIMIT_BYTES: u64 = 4 << 30;

/// Options of `f16c run` that do not change the compiled program.
const NOT_IN_KEY: &[&str] = &["input", "inputs", "outputs", "compare", "threads", "no-cache", "profile"];

/// The cache directory, if caching is on and one can be named.
pub struct Cache {
    dir: PathBuf,
}

impl Cache {
    /// The cache, unless `F16C_NO_CACHE` is set or no directory can be named.
    pub fn open() -> Option<Cache> {
        if std::env::var_os("F16C_NO_CACHE").is_some_and(|v| !v.is_empty() && v != "0") {
            return None;
        }
        let env = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty()).map(PathBuf::from);
        let dir = env("F16C_CACHE_DIR").or_else(|| env("XDG_CACHE_HOME").map(|d| d.join("f16c"))).or_else(|| env("HOME").map(|h| h.join(".cache").join("f16c")))?;
        Some(Cache { dir })
    }

    fn path(&self, key: &str) -> PathBuf {
        self.dir.join(format!("{key}.f16c"))
    }

    /// The content hash of the file at `path` ([`hash128_reader`]), remembered under the file's
    /// identity and times (its canonical path, device, inode, size, and modification and change
    /// times to the nanosecond), so that running an unchanged model again does not read it all
    /// to find its key (GPT-2's 1.3 GB: half a second). Any write to the file changes its change
    /// time, so a hash is never reused for other contents; remembering is best effort.
    pub fn content_hash(&self, path: &Path) -> std::io::Result<u128> {
        use std::os::unix::fs::MetadataExt;
        let meta = std::fs::metadata(path)?;
        let identity = format!(
            "{}|{}|{}|{}|{}.{}|{}.{}",
            std::fs::canonicalize(path)?.display(),
            meta.dev(),
            meta.ino(),
            meta.size(),
            meta.mtime(),
            meta.mtime_nsec(),
            meta.ctime(),
            meta.ctime_nsec()
        );
        let entry = self.dir.join("hashes").join(format!("{:032x}", hash128(identity.as_bytes())));
        if let Some(h) = std::fs::read_to_string(&entry).ok().and_then(|s| u128::from_str_radix(s.trim(), 16).ok()) {
            return Ok(h);
        }
        let h = hash128_reader(std::fs::File::open(path)?)?;
        let remember = || -> std::io::Result<()> {
            let dir = entry.parent().expect("an entry has a directory");
            std::fs::create_dir_all(dir)?;
            let tmp = dir.join(format!(".{}.tmp", std::process::id()));
            std::fs::write(&tmp, format!("{h:032x}\n"))?;
            std::fs::rename(&tmp, &entry)
        };
        let _ = remember();
        Ok(h)
    }

    /// The artifact file stored under `key`, if any, refreshing the entry's time.
    pub fn get(&self, key: &str) -> Option<PathBuf> {
        let path = self.path(key);
        let f = std::fs::File::options().append(true).open(&path).ok()?;
        let _ = f.set_modified(std::time::SystemTime::now());
        Some(path)
    }

    /// Stores `artifact` under `key` and trims the cache; a failure is a warning. The stored
    /// file, where it was stored.
    pub fn put(&self, key: &str, artifact: &f16c_core::artifact::Artifact) -> Option<PathBuf> {
        match self.try_put(key, |path| artifact.write_file(path)) {
            Ok(()) => Some(self.path(key)),
            Err(e) => {
                eprintln!("warning: f16c run: cannot store the compiled model in the cache {}: {e} (--no-cache turns it off)", self.dir.display());
                None
            }
        }
    }

    /// Writes an entry through `write` (given a temporary path, renamed into place after).
    fn try_put(&self, key: &str, write: impl FnOnce(&Path) -> std::io::Result<()>) -> std::io::Result<()> {
        std::fs::create_dir_all(&self.dir)?;
        let tmp = self.dir.join(format!(".{key}.{}.tmp", std::process::id()));
        if let Err(e) = write(&tmp) {
            let _ = std::fs::remove_file(&tmp);
            return Err(e);
        }
        std::fs::rename(&tmp, self.path(key))?;
        self.trim(LIMIT_BYTES)
    }

    /// Removes the least recently used entries until the cache holds at most `limit` bytes.
    fn trim(&self, limit: u64) -> std::io::Result<()> {
        let mut entries: Vec<(std::time::SystemTime, u64, PathBuf)> = std::fs::read_dir(&self.dir)?
            .flatten()
            .filter(|e| e.path().extension().is_some_and(|x| x == "f16c"))
            .filter_map(|e| {
                let meta = e.metadata().ok()?;
                Some((meta.modified().ok()?, meta.len(), e.path()))
            })
            .collect();
        let mut total: u64 = entries.iter().map(|e| e.1).sum();
        entries.sort();
        for (_, len, path) in entries {
            if total <= limit {
                break;
            }
            std::fs::remove_file(&path)?;
            total -= len;
        }
        Ok(())
    }
}

/// The cache key of compiling a source whose [`hash128`] is `source` with the options in `m`:
/// 32 hex digits.
pub fn key(source: u128, m: &ArgMatches) -> String {
    let mut settings = String::new();
    let mut ids: Vec<&str> = m.ids().map(|id| id.as_str()).filter(|id| !NOT_IN_KEY.contains(id)).collect();
    ids.sort_unstable();
    for id in ids {
        let Ok(Some(values)) = m.try_get_raw(id) else { continue };
        for v in values {
            let v = v.to_string_lossy();
            settings.push_str(&format!("{id}={v}\n"));
            // A policy file: its contents, not its name.
            if v.ends_with(".toml") {
                if let Ok(text) = std::fs::read(Path::new(&*v)) {
                    settings.push_str(&format!("{:032x}\n", hash128(&text)));
                }
            }
        }
    }
    settings.push_str(&build_identity());
    format!("{:032x}", source ^ hash128(settings.as_bytes()).rotate_left(64))
}

/// This compiler's build: its version and its executable's size and time, so that a rebuilt
/// f16c never loads what an older one compiled.
fn build_identity() -> String {
    let exe = std::env::current_exe().ok().and_then(|p| std::fs::metadata(p).ok());
    let (len, time) = exe.map_or((0, 0), |m| (m.len(), m.modified().ok().and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok()).map_or(0, |d| d.as_nanos())));
    format!("f16c {} {len} {time}", env!("CARGO_PKG_VERSION"))
}

/// A 128-bit hash of `bytes` (see [`Hasher`]).
pub fn hash128(bytes: &[u8]) -> u128 {
    let mut h = Hasher::new();
    h.update(bytes);
    h.finish()
}

/// A 128-bit hash of everything `r` reads, in 8 MiB chunks (a model is never held whole).
pub fn hash128_reader(mut r: impl std::io::Read) -> std::io::Result<u128> {
    let mut h = Hasher::new();
    let mut buf = vec![0u8; 8 << 20];
    loop {
        match r.read(&mut buf) {
            Ok(0) => return Ok(h.finish()),
            Ok(n) => h.update(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

const P1: u64 = 0x9E37_79B1_85EB_CA87;
const P2: u64 = 0xC2B2_AE3D_27D4_EB4F;
const P3: u64 = 0x1656_67B1_9E37_79F9;

/// A 128-bit hash, not cryptographic: four multiply-rotate lanes over 8-byte words (several
/// GB/s, so that keying a 1 GB model costs a fraction of a second), fed in any pieces.
pub struct Hasher {
    lanes: [u64; 4],
    /// The bytes of an unfinished 32-byte block.
    pending: Vec<u8>,
    len: u64,
}

impl Default for Hasher {
    fn default() -> Hasher {
        Hasher::new()
    }
}

impl Hasher {
    pub fn new() -> Hasher {
        Hasher { lanes: [P1, P2, P1.rotate_left(17), P2.rotate_left(29)], pending: Vec::with_capacity(32), len: 0 }
    }

    fn mix(h: u64, w: u64, p: u64) -> u64 {
        (h ^ w.wrapping_mul(p)).rotate_left(31).wrapping_mul(P3)
    }

    fn block(&mut self, b: &[u8]) {
        for (i, lane) in self.lanes.iter_mut().enumerate() {
            let w = u64::from_le_bytes(b[8 * i..8 * i + 8].try_into().expect("8 bytes"));
            *lane = Self::mix(*lane, w, if i % 2 == 0 { P1 } else { P2 });
        }
    }

    pub fn update(&mut self, mut bytes: &[u8]) {
        self.len += bytes.len() as u64;
        if !self.pending.is_empty() {
            let take = (32 - self.pending.len()).min(bytes.len());
            self.pending.extend_from_slice(&bytes[..take]);
            bytes = &bytes[take..];
            if self.pending.len() < 32 {
                return;
            }
            let block = std::mem::take(&mut self.pending);
            self.block(&block);
        }
        let mut chunks = bytes.chunks_exact(32);
        for ch in &mut chunks {
            self.block(ch);
        }
        self.pending.extend_from_slice(chunks.remainder());
    }

    pub fn finish(mut self) -> u128 {
        let pending = std::mem::take(&mut self.pending);
        for (i, &byte) in pending.iter().enumerate() {
            self.lanes[0] = Self::mix(self.lanes[0], byte as u64 | ((i as u64) << 8), P2);
        }
        let len = self.len;
        let fin = |x: u64, y: u64| {
            let mut h = x ^ y.rotate_left(23) ^ len.wrapping_mul(P2);
            h ^= h >> 33;
            h = h.wrapping_mul(P1);
            h ^= h >> 29;
            h.wrapping_mul(P2) ^ (h >> 32)
        };
        let [a, b, c, d] = self.lanes;
        ((fin(a, c) as u128) << 64) | fin(b, d) as u128
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hash_sees_every_byte_and_the_length() {
        let base: Vec<u8> = (0..1000u32).map(|i| (i * 7) as u8).collect();
        let h = hash128(&base);
        for i in [0, 31, 32, 500, 991, 999] {
            let mut v = base.clone();
            v[i] ^= 1;
            assert_ne!(hash128(&v), h, "byte {i}");
        }
        assert_ne!(hash128(&base[..999]), h);
        let mut longer = base.clone();
        longer.push(0);
        assert_ne!(hash128(&longer), h);
        assert_eq!(hash128(&base), h);
        // In pieces, as a file is read: the same hash.
        let mut pieces = Hasher::new();
        for piece in base.chunks(13) {
            pieces.update(piece);
        }
        assert_eq!(pieces.finish(), h);
        assert_eq!(hash128_reader(&base[..]).unwrap(), h);
    }

    #[test]
    fn the_oldest_entries_go_first() {
        let dir = std::env::temp_dir().join(format!("f16c-cache-test-{}", std::process::id()));
        let c = Cache { dir: dir.clone() };
        for (k, age) in [("a", 30), ("b", 20), ("c", 10)] {
            c.try_put(k, |p| std::fs::write(p, [0u8; 100])).unwrap();
            let f = std::fs::File::options().append(true).open(c.path(k)).unwrap();
            f.set_modified(std::time::SystemTime::now() - std::time::Duration::from_secs(age)).unwrap();
        }
        assert!(c.get("a").is_some()); // used now: the newest
        c.trim(200).unwrap();
        assert!(c.get("b").is_none() && c.get("a").is_some() && c.get("c").is_some());
        let _ = std::fs::remove_dir_all(dir);
    }
}
