//! # f16c-compiler: from a TOSA graph to an artifact
//!
//! ```text
//! Module ─▶ canonicalize ─▶ assign-precision ─▶ insert-casts ─▶ lower ─▶ legality ─▶ backend ─▶ Artifact
//!           (transforms/, one pass per file)                      (lower/)  (backend/<name>/legal.rs)
//! ```
//! [`driver`] builds that pipeline, the only place that does: the `f16c` command line, the JIT
//! (`f16c-jit`) and `f16c bench` call it. It returns located diagnostics for every user-facing
//! failure.
//!
//! - **Passes.** A compilation is a pipeline of passes over a [`f16c_dialect::Module`]. Each pass
//!   lives in its own file under [`transforms`] and is described once in the registry
//!   ([`pass::registry::REGISTRY`]): its flag name (`canonicalize`), its type name
//!   (`Canonicalize`), a one-line summary and its typed options. The registry drives `--help`,
//!   pipeline parsing and the names printed by `--print-ir-after-all` and `--time-passes`. The
//!   [`pass::PassManager`] verifies the graph after each pass and names the pass that broke it.
//! - **Precision.** [`policy`] holds the lists, levels and files; [`target`] says what each
//!   target runs (low types, tensor-core shapes, vector width), as data that
//!   `assign-precision` reads. [`report`], [`check`] and [`calibrate`] explain and guard the
//!   decisions.
//! - **Lowering.** [`lower`] turns a verified mixed-precision graph into a [`lower::Program`]:
//!   kernels of a few families (contraction, elementwise, reduction, row region, pool, copy,
//!   gather) over planned buffers, described as data every backend reads; `--emit=kernels`
//!   prints it.
//! - **Backends.** [`backend`] holds the [`backend::Backend`] interface, the lookup from target to
//!   backend, the shared buffer layout and the error type; each backend is a folder under it.
//!   Backends return [`f16c_core::artifact::Artifact`]s and never run them: the thin runtime
//!   (`f16c-runtime`) does.
//!
//! ## Adding a backend
//! Describe the target in [`target::TARGETS`]; write `backend/<name>/` with a `legal.rs` table and
//! a [`backend::Backend`] implementation; build its buffer table with
//! [`backend::layout::Layout`]; register it in [`backend::lookup`]; if its code format is new,
//! teach `f16c-runtime`'s loader to map it. The steps, with what each must guarantee, are in
//! [`backend`]'s documentation. Passes, lowering, the driver and the command line need no change:
//! `--target=<name>` reaches the new backend through the lookup.
//!
//! Passes report user-facing problems as located diagnostics and never panic on user input.

#![deny(missing_docs)]

pub mod backend;
pub mod calibrate;
pub mod check;
pub mod driver;
pub mod fix;
pub mod lower;
pub mod pass;
pub mod policy;
pub mod report;
pub mod target;
pub mod timing;
pub mod transforms;

pub use pass::{Pass, PassError, PassManager, PassOptions};
