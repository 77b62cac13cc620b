//! The one table of passes: names, summaries and typed options. It drives `--help`, pipeline
//! parsing and the names in IR dumps and timing reports.

use super::{Pass, PassOptions, Result};
use crate::transforms;

/// The type of a pass option.
#[derive(Clone, Copy, Debug)]
pub enum OptionKind {
    /// `true` or `false`.
    Bool,
    /// A non-negative integer.
    UInt,
    /// One of these words.
    Enum(&'static [&'static str]),
    /// A finite floating-point number.
    Float,
    /// Free text.
    Text,
}

impl OptionKind {
    /// Checks a value's spelling.
    pub fn check(self, value: &str) -> std::result::Result<(), String> {
        match self {
            OptionKind::Bool if value == "true" || value == "false" => Ok(()),
            OptionKind::Bool => Err(format!("'{value}' is not true or false")),
            OptionKind::UInt => value.parse::<u64>().map(|_| ()).map_err(|_| format!("'{value}' is not a non-negative integer")),
            OptionKind::Enum(words) if words.contains(&value) => Ok(()),
            OptionKind::Enum(words) => Err(format!("'{value}' is not one of {}", words.join(", "))),
            OptionKind::Float => match value.parse::<f64>() {
                Ok(f) if f.is_finite() => Ok(()),
                _ => Err(format!("'{value}' is not a number")),
            },
            OptionKind::Text => Ok(()),
        }
    }

    /// How `--help` shows the type.
    pub fn describe(self) -> String {
        match self {
            OptionKind::Bool => "bool".into(),
            OptionKind::UInt => "uint".into(),
            OptionKind::Enum(w) => w.join("|"),
            OptionKind::Float => "number".into(),
            OptionKind::Text => "string".into(),
        }
    }
}

/// One option of a pass.
#[derive(Debug)]
pub struct PassOption {
    /// kebab-case name.
    pub name: &'static str,
    /// Its type.
    pub kind: OptionKind,
    /// The default value, spelled as on the command line.
    pub default: &'static str,
    /// One line for `--help`.
    pub summary: &'static str,
}

/// A registry entry.
pub struct PassInfo {
    /// kebab-case name: the flag (`--canonicalize`) and the file (`transforms/canonicalize.rs`).
    pub name: &'static str,
    /// CamelCase type name, as printed in IR dumps and timing reports.
    pub type_name: &'static str,
    /// One line for `--help`.
    pub summary: &'static str,
    /// Typed options.
    pub options: &'static [PassOption],
    /// Makes the pass from checked options (fails on values that only the pass can check, such
    /// as a policy file or a regex).
    pub create: fn(&PassOptions) -> Result<Box<dyn Pass>>,
}

impl std::fmt::Debug for PassInfo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name)
    }
}

/// Every pass f16c has.
pub static REGISTRY: &[PassInfo] =
    &[transforms::canonicalize::INFO, transforms::fold_batch_norm::INFO, transforms::assign_precision::INFO, transforms::insert_casts::INFO];

/// Looks a pass up by its flag name.
pub fn lookup(name: &str) -> Option<&'static PassInfo> {
    REGISTRY.iter().find(|p| p.name == name)
}

/// Makes a pass from its name and option text (`"max-fold-elements=64"`).
pub fn create(name: &str, options: &str) -> Result<Box<dyn Pass>> {
    let info = lookup(name).ok_or_else(|| {
        let known: Vec<&str> = REGISTRY.iter().map(|p| p.name).collect();
        super::PassError::Usage(format!("unknown pass '{name}' (passes: {})", known.join(", ")))
    })?;
    (info.create)(&PassOptions::parse(info, options)?)
}

/// A help text listing every pass and its options.
pub fn help() -> String {
    let mut s = String::from("Passes (run in the order given; options as --pass=\"key=value ...\"):\n");
    for p in REGISTRY {
        s.push_str(&format!("  --{:<24} {}\n", p.name, p.summary));
        for o in p.options {
            s.push_str(&format!("      {}=<{}>  {} (default: {})\n", o.name, o.kind.describe(), o.summary, o.default));
        }
    }
    s
}
