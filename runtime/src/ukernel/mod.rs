//! The runtime's micro-kernels: native loops that generated code calls through the libcall
//! table, one row each of [`f16c_core::abi::MICRO_KERNELS`] (what it computes, the CPU
//! features it needs). The compiler chooses one per kernel when it plans it; the table holds a
//! micro-kernel only on a CPU with its features, and the loader refuses code that needs
//! features this CPU lacks.
//!
//! Their contract (layouts, flags, parameters: [`f16c_core::abi::tiles`],
//! [`f16c_core::abi::DepthwiseParams`]) has its own version,
//! [`f16c_core::abi::MICRO_KERNEL_VERSION`], which an artifact whose code calls them records
//! and the executor checks: a change to a micro-kernel changes that version, not the
//! artifact format's.
//!
//! - [`tiles`]: the GEMM's inner loops (AVX2 and AVX-512, and AVX512-BF16 pairs) and the
//!   one-row GEMM;
//! - [`depthwise`]: a depthwise convolution's output row (AVX2 and AVX-512).

pub mod depthwise;
pub mod tiles;
