//! The text of an input model: a file mapped into memory (read-only), or standard input read
//! into a string.
//!
//! A torch-mlir export is mostly its weights' hex (GPT-2 small: 1.3 GB of text for 0.5 GB of
//! f32). Read into a string, that text sat in memory beside the decoded weights; mapped, the
//! pages the import is done with are handed back ([`Source::release`]: the import calls it with
//! each blob's hex once decoded, and the compile with everything once imported), so that the
//! process holds the weights and a window of text, not both. The pages stay in the page cache:
//! a diagnostic that quotes a line reads it again from there.

use anyhow::{bail, Context};
use std::ops::Deref;

/// An input file's text.
pub(crate) enum Source {
    /// Read into memory (standard input, an empty file).
    Text(String),
    /// The file mapped read-only and private, `len` bytes, all valid UTF-8.
    Mapped { ptr: *const u8, len: usize },
}

// SAFETY: the mapping is read-only for its whole life and unmapped only on drop; releasing
// pages ([`Source::release`]) does not change what reading them returns.
unsafe impl Sync for Source {}
unsafe impl Send for Source {}

/// Bytes checked as UTF-8 at a time when a file is opened (each range released after).
const CHECK_CHUNK: usize = 64 << 20;

impl Source {
    /// The text of `path`, mapped. Refuses a file that is not UTF-8, as reading it would.
    pub(crate) fn open(path: &str) -> anyhow::Result<Source> {
        use std::os::fd::AsRawFd;
        let file = std::fs::File::open(path).with_context(|| format!("cannot read '{path}'"))?;
        let meta = file.metadata().with_context(|| format!("cannot read '{path}'"))?;
        if !meta.is_file() || meta.len() == 0 {
            return Ok(Source::Text(std::fs::read_to_string(path).with_context(|| format!("cannot read '{path}'"))?));
        }
        let len = usize::try_from(meta.len()).context("the file is larger than the address space")?;
        // SAFETY: a fresh read-only private mapping of an open file of `len` bytes; the
        // descriptor may close once mapped.
        let ptr = unsafe { libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ, libc::MAP_PRIVATE, file.as_raw_fd(), 0) };
        if ptr == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error()).with_context(|| format!("cannot read '{path}'"));
        }
        let source = Source::Mapped { ptr: ptr.cast::<u8>().cast_const(), len };
        // SAFETY: the mapping just made, `len` bytes; the text is not yet handed out as `str`.
        let bytes = unsafe { std::slice::from_raw_parts(ptr.cast::<u8>().cast_const(), len) };
        let mut at = 0;
        while at < len {
            let end = (at + CHECK_CHUNK).min(len);
            let good = match std::str::from_utf8(&bytes[at..end]) {
                Ok(_) => end,
                // A character cut by the chunk's end: the next chunk starts with it.
                Err(e) if e.error_len().is_none() && end < len && e.valid_up_to() > 0 => at + e.valid_up_to(),
                Err(_) if bytes.starts_with(f16c_core::artifact::MAGIC) => {
                    bail!("'{path}' is a compiled f16c artifact, not MLIR source: run it with 'f16c run {path} --input X.npy' or 'f16c-run {path} --input X.npy' ('f16c-run {path} --info' says what it holds)")
                }
                Err(e) => bail!("cannot read '{path}': it is not UTF-8 text (an invalid byte at offset {}); f16c reads MLIR source", at + e.valid_up_to()),
            };
            source.release_bytes(at, good);
            at = good;
        }
        Ok(source)
    }

    /// Hands the whole pages inside `part` (a slice of this text) back to the system: reading
    /// them again reads the file (from the page cache). Nothing for text read into a string.
    pub(crate) fn release(&self, part: &str) {
        if let Source::Mapped { ptr, len } = self {
            let start = (part.as_ptr() as usize).wrapping_sub(*ptr as usize);
            if start <= *len && part.len() <= *len - start {
                self.release_bytes(start, start + part.len());
            }
        }
    }

    /// [`Source::release`] of bytes `from..to` of the mapping.
    fn release_bytes(&self, from: usize, to: usize) {
        let Source::Mapped { ptr, .. } = self else { return };
        let page = page_size();
        let (first, last) = (from.next_multiple_of(page), to / page * page);
        if first < last {
            // SAFETY: page-aligned whole pages inside the mapping. MADV_DONTNEED on a private
            // read-only file mapping drops the pages; the next read maps the file's again.
            unsafe { libc::madvise(ptr.add(first).cast_mut().cast(), last - first, libc::MADV_DONTNEED) };
        }
    }

    /// Drops the `{-# dialect_resources ... #-}` section at the end of a parsed text (its blobs
    /// are in the module once imported), and, for a mapped file, hands all of it back.
    pub(crate) fn drop_resource_section(&mut self) {
        // (A mapped text keeps its length: finding the section again would read the ops'
        // text once more, and the section costs nothing once its pages are handed back.)
        match self {
            Source::Text(s) => f16c_dialect::import::drop_resource_section(s),
            Source::Mapped { .. } => self.release(self),
        }
    }

    /// A 128-bit hash of the text ([`crate::cache::Hasher`]), a chunk at a time, each chunk of
    /// a mapped file handed back once hashed.
    pub(crate) fn hash128(&self) -> u128 {
        let mut h = crate::cache::Hasher::new();
        for (i, chunk) in self.as_bytes().chunks(CHECK_CHUNK).enumerate() {
            h.update(chunk);
            self.release_bytes(i * CHECK_CHUNK, i * CHECK_CHUNK + chunk.len());
        }
        h.finish()
    }
}

fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if p > 0 { p as usize } else { 4096 }
}

impl Deref for Source {
    type Target = str;

    fn deref(&self) -> &str {
        match self {
            Source::Text(s) => s,
            // SAFETY: checked as UTF-8 when opened; the mapping lives as long as `self`.
            Source::Mapped { ptr, len } => unsafe { std::str::from_utf8_unchecked(std::slice::from_raw_parts(*ptr, *len)) },
        }
    }
}

impl Drop for Source {
    fn drop(&mut self) {
        if let Source::Mapped { ptr, len } = self {
            // SAFETY: the mapping made in `open`, unmapped once.
            unsafe { libc::munmap(ptr.cast_mut().cast(), *len) };
        }
    }
}
