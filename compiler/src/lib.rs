//! # f16c-compiler: passes over the graph IR
//!
//! A compilation is a pipeline of passes over a [`f16c_dialect::Module`]. Each pass lives in
//! its own file under [`transforms`] and is described once in the registry
//! ([`pass::registry::REGISTRY`]): its flag name (`canonicalize`), its type name
//! (`Canonicalize`), a one-line summary and its typed options. The registry drives `--help`,
//! pipeline parsing and the names printed by `--print-ir-after-all` and `--time-passes`.
//!
//! The [`pass::PassManager`] runs passes in order and verifies the graph after each one; a pass
//! that leaves the graph invalid is named in the error. Passes report user-facing problems as
//! located diagnostics and never panic on user input.

#![deny(missing_docs)]

pub mod backend;
pub mod calibrate;
pub mod check;
pub mod driver;
pub mod lower;
pub mod pass;
pub mod policy;
pub mod report;
pub mod target;
pub mod transforms;

pub use pass::{Pass, PassError, PassManager, PassOptions};
