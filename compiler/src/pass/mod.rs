//! The pass trait, typed pass options, the registry and the pass manager.

pub mod manager;
pub mod registry;

pub use manager::{Instrumentation, PassManager};
pub use registry::{PassInfo, PassOption, REGISTRY};

use f16c_dialect::{Diagnostic, Diagnostics, Module};
use std::collections::BTreeMap;

/// Errors of the compiler layer.
#[derive(Debug, thiserror::Error)]
pub enum PassError {
    /// A pass or option name that is not in the registry, or a malformed option.
    #[error("{0}")]
    Usage(String),
    /// A pass found a problem in the user's model (located diagnostics).
    #[error(transparent)]
    Diagnostics(#[from] Diagnostics),
}

/// Result alias for the compiler layer.
pub type Result<T> = std::result::Result<T, PassError>;

/// A transformation of a module.
pub trait Pass {
    /// The registry entry of this pass (its names and options).
    fn info(&self) -> &'static PassInfo;

    /// Runs the pass. Returns whether anything changed. `diagnostics` collects warnings and
    /// remarks; errors are returned.
    fn run(&mut self, module: &mut Module, diagnostics: &mut Vec<Diagnostic>) -> std::result::Result<bool, Diagnostics>;

    /// Counters of what the last run did (`--pass-statistics`, the precision report), like
    /// LLVM's `STATISTIC`: `(name, value, description)`.
    fn statistics(&self) -> Vec<Statistic> {
        Vec::new()
    }
}

/// One counter of a pass.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Statistic {
    /// kebab-case name (`casts-inserted`).
    pub name: &'static str,
    /// The count.
    pub value: u64,
    /// One line saying what is counted.
    pub description: &'static str,
}

/// Option values of one pass, checked against its declared options.
#[derive(Clone, Debug, Default)]
pub struct PassOptions {
    values: BTreeMap<String, String>,
}

impl PassOptions {
    /// Parses `key=value` pairs separated by spaces or commas, as in `--canonicalize="max-fold-elements=64"`.
    pub fn parse(info: &PassInfo, text: &str) -> Result<PassOptions> {
        let mut values = BTreeMap::new();
        for item in text.split([' ', ',']).filter(|s| !s.is_empty()) {
            let (key, value) = item.split_once('=').unwrap_or((item, "true"));
            let Some(opt) = info.options.iter().find(|o| o.name == key) else {
                let known: Vec<&str> = info.options.iter().map(|o| o.name).collect();
                return Err(PassError::Usage(format!(
                    "pass '{}' has no option '{key}' (options: {})",
                    info.name,
                    if known.is_empty() { "none".to_string() } else { known.join(", ") }
                )));
            };
            opt.kind.check(value).map_err(|why| PassError::Usage(format!("option '{key}' of pass '{}': {why}", info.name)))?;
            values.insert(key.to_string(), value.to_string());
        }
        for o in info.options {
            values.entry(o.name.to_string()).or_insert_with(|| o.default.to_string());
        }
        Ok(PassOptions { values })
    }

    /// A string option (declared options always have a value).
    pub fn string(&self, key: &str) -> &str {
        self.values.get(key).map(String::as_str).unwrap_or_default()
    }

    /// A boolean option.
    pub fn flag(&self, key: &str) -> bool {
        self.string(key) == "true"
    }

    /// A number option (0 if empty).
    pub fn float(&self, key: &str) -> f64 {
        self.string(key).parse().unwrap_or_default()
    }

    /// An unsigned option.
    pub fn uint(&self, key: &str) -> u64 {
        self.string(key).parse().unwrap_or_default()
    }
}
