//! One pass per file; each file's `INFO` is its registry entry.

pub mod canonicalize;
