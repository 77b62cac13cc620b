//! Backends: from a lowered [`crate::lower::Program`] to an artifact a runtime can load.
//! Backends return artifacts; they never run them.
//!
//! - [`cranelift`]: x86-64, compiled in process by Cranelift (fp16/bf16 emulated in software).

pub mod cranelift;
