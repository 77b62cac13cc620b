//! # f16c-dialect: the graph IR of f16c
//!
//! f16c compiles neural-network inference graphs given as MLIR in the TOSA dialect. This crate
//! is the IR everything else in f16c reads and writes, and the only place that talks to MLIR.
//!
//! ## The model
//! A [`Module`] holds functions; each function is a [`Graph`]: a directed acyclic graph whose
//! nodes are operations ([`Op`], a closed enum with typed attributes) and whose edges are
//! operands, numbered in TOSA's operand order. Every node produces one value, so a [`NodeId`]
//! names both an op and its result. Types are static: a [`TensorType`] has a known shape and one
//! of the eight element types of [`DType`]; TOSA's compile-time shapes (`!tosa.shape<N>`) are the
//! other kind of [`ValueType`]. Function arguments are [`Op::Arg`] nodes; results are an ordered
//! list of node ids. Source locations sit beside the nodes (a side table), never inside ops.
//!
//! Constants hold their data ([`Tensor`]) in their own element type: a weight converted to f16
//! takes two bytes an element.
//!
//! ## Text in, text out
//! [`import::parse_module`] parses and verifies MLIR text with MLIR itself, then walks it into a
//! graph; what f16c cannot represent is reported as located [`Diagnostic`]s, rendered the way
//! MLIR renders them. [`export::print_module`] rebuilds real MLIR operations, verifies them with
//! MLIR and prints them with MLIR's printer: the output is valid TOSA that `mlir-opt` accepts.
//!
//! ## Invariants
//! [`verify::verify`] checks the invariants every pass must preserve and reports every
//! violation (see its module documentation for the list).
//!
//! ## Meaning
//! [`semantics`] defines what each op computes, on tensors: the golden definition used by the
//! reference interpreter ([`reference`]) and by constant folding. It implements the numeric
//! contract of f16c: a float op widens its inputs to f32, computes in f32 and rounds once to its
//! result type; contractions accumulate in f32; f64 ops compute in f64.

#![deny(missing_docs)]

pub mod diag;
pub mod export;
pub mod graph;
pub mod import;
mod mlir;
pub mod op;
pub mod reference;
pub mod semantics;
pub mod verify;

/// Element and tensor types live in `f16c-core`, shared with the thin runtime.
pub use f16c_core::types;
/// Dense tensors live in `f16c-core`, shared with the thin runtime.
pub use f16c_core::tensor;

pub use diag::{Diagnostic, Diagnostics, Location, Severity};
pub use graph::{Graph, Module, Node, NodeId};
pub use op::{BinaryOp, Conv3dAttrs, ControlLayout, ConvAttrs, Op, PoolAttrs, ReduceKind, Region, RescaleAttrs, Rounding, TransposeConvAttrs, UnaryOp};
pub use tensor::{Data, Tensor};
pub use types::{DType, TensorType, ValueType};
