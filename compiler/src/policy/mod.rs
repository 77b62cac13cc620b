//! Precision policy: which ops may run in fp16/bf16, by list, level, file and target.
//!
//! An op falls into one of three lists (DESIGN.md, "Precision policy"):
//! - **low**: runs in the low type (fp16 or bf16) with f32 accumulation: the contractions;
//! - **follow**: takes the precision of its inputs, the widest one when they differ (f16 and
//!   bf16 together give f32): data movement, clamp, min/max, add/sub/mul, select, comparisons,
//!   sigmoid, tanh and the exact reductions (max, min, argmax);
//! - **fp32**: stays in f32 (overflow or large-sum risk): exp, pow, log, erf, reciprocal,
//!   rsqrt, reduce_sum, reduce_product, avg_pool2d.
//!
//! An op in no list stays f32 (rule `unlisted`): removing an op from a list is how a policy
//! file says "never lower this".
//!
//! Levels set the starting lists: `O0` changes nothing at all, `O1` is the lists above, `O2`
//! puts only the contractions in the low list (everything else unlisted), `O3` puts every op in
//! the low list. A policy file (TOML) starts from a level and edits the lists, globally and per
//! target:
//!
//! ```toml
//! base = "O1"            # O0 | O1 | O2 | O3
//! safe-range = 2048.0    # calibration: activations above this stay f32 (default 65504/16)
//! [fp32]
//! add = ["tanh"]         # moves tanh to the fp32 list
//! [follow]
//! remove = ["sigmoid"]   # sigmoid is now unlisted (f32)
//! [low]
//! ops = ["matmul"]       # replaces the whole list
//! [target.sm_70.fp32]
//! add = ["sigmoid"]      # only when compiling for sm_70
//! ```
//!
//! Single ops are pinned with `[[op]]` tables (what `f16c check --fix` writes): the op's MLIR
//! name and where it is, as `at = "LINE:COL"` in the model file (the file's name is not part of
//! the key, so the same export re-applies them under any path) or `name = "..."` for an op with
//! a named location; `precision` is `f32`, `f16` or `bf16`, as the `f16c.precision` attribute;
//! `why` is for the reader:
//!
//! ```toml
//! [[op]]
//! op = "tosa.matmul"
//! at = "17:10"
//! precision = "f32"
//! why = "goes non-finite in f16 (max |f32| 9.1e4)"
//! ```
//!
//! [`Policy::to_toml`] prints the effective policy in this same format (with `ops = [...]` for
//! every list), so `f16c compile --print-policy` output is itself a policy file.


pub use crate::target::Target;

use f16c_dialect::DType;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

/// The three policy lists.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Category {
    /// Runs in the low type.
    Low,
    /// Takes the precision of its inputs.
    Follow,
    /// Stays f32.
    Fp32,
}

impl Category {
    /// The list's name in policy files and reports.
    pub fn name(self) -> &'static str {
        match self {
            Category::Low => "low",
            Category::Follow => "follow",
            Category::Fp32 => "fp32",
        }
    }
}

/// Optimisation levels of the policy.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    /// Nothing changes.
    O0,
    /// The default lists.
    O1,
    /// Only contractions low.
    O2,
    /// Everything low that the target can run ("pure fp16").
    O3,
}

impl Level {
    /// Parses `O0`..`O3`.
    pub fn parse(s: &str) -> Option<Level> {
        match s {
            "O0" => Some(Level::O0),
            "O1" => Some(Level::O1),
            "O2" => Some(Level::O2),
            "O3" => Some(Level::O3),
            _ => None,
        }
    }
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{self:?}")
    }
}

/// `--precision`: the low type, or none.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Precision {
    /// IEEE binary16.
    Fp16,
    /// bfloat16.
    Bf16,
    /// Nothing is lowered (the same as `O0`).
    Fp32,
}

impl Precision {
    /// The spellings `--precision` accepts.
    pub const NAMES: &'static [&'static str] = &["fp16", "bf16", "fp32"];

    /// Parses `fp16`, `bf16`, `fp32`.
    pub fn parse(s: &str) -> Option<Precision> {
        match s {
            "fp16" => Some(Precision::Fp16),
            "bf16" => Some(Precision::Bf16),
            "fp32" => Some(Precision::Fp32),
            _ => None,
        }
    }

    /// The element type low ops get; `None` for fp32.
    pub fn low_dtype(self) -> Option<DType> {
        match self {
            Precision::Fp16 => Some(DType::F16),
            Precision::Bf16 => Some(DType::BF16),
            Precision::Fp32 => None,
        }
    }

    /// The command-line spelling.
    pub fn name(self) -> &'static str {
        match self {
            Precision::Fp16 => "fp16",
            Precision::Bf16 => "bf16",
            Precision::Fp32 => "fp32",
        }
    }
}

/// Every op name (without dialect prefix) a policy may mention.
pub const OP_NAMES: &[&str] = &[
    "conv2d", "depthwise_conv2d", "transpose_conv2d", "conv3d", "matmul", "add", "sub", "mul", "negate", "abs", "clamp",
    "maximum", "minimum", "exp", "log", "rsqrt", "reciprocal", "tanh", "sigmoid", "erf", "ceil", "floor", "sin", "cos", "pow", "reduce_sum",
    "reduce_max", "reduce_min", "reduce_product", "argmax", "max_pool2d", "avg_pool2d", "reshape", "transpose",
    "slice", "pad", "concat", "tile", "select", "equal", "greater", "greater_equal", "gather", "bitwise_and",
    "bitwise_or", "bitwise_xor", "bitwise_not", "logical_and", "logical_or", "logical_xor", "logical_not",
    "logical_left_shift", "logical_right_shift", "arithmetic_right_shift", "clz", "intdiv", "identity", "reverse", "resize", "table", "rescale", "scatter",
];

const CONTRACTIONS: &[&str] = &["conv2d", "depthwise_conv2d", "transpose_conv2d", "conv3d", "matmul"];
const FOLLOW: &[&str] = &[
    "reshape", "transpose", "slice", "pad", "concat", "tile", "clamp", "maximum", "minimum", "max_pool2d", "add",
    "sub", "mul", "negate", "abs", "select", "equal", "greater", "greater_equal", "sigmoid", "tanh", "reduce_max",
    "reduce_min", "argmax", "gather", "ceil", "floor", "identity", "reverse", "resize", "scatter",
];
const FP32: &[&str] =
    &["exp", "pow", "log", "erf", "sin", "cos", "reciprocal", "rsqrt", "reduce_sum", "reduce_product", "avg_pool2d"];

/// Problems with a policy: a bad level, file or op name.
#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    /// The file could not be read.
    #[error("cannot read policy file '{path}': {source}")]
    Read {
        /// The path.
        path: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The file is not valid TOML for a policy (the message has the line and column).
    #[error("policy file '{path}': {message}")]
    Parse {
        /// The path.
        path: String,
        /// TOML's message, with position.
        message: String,
    },
    /// A wrong value in a valid file.
    #[error("policy file '{path}': {message}")]
    Invalid {
        /// The path.
        path: String,
        /// What is wrong.
        message: String,
    },
}

/// The effective policy: level, low type, lists, calibration threshold.
#[derive(Clone, Debug, PartialEq)]
pub struct Policy {
    /// Where the lists started from.
    pub level: Level,
    /// The low type (`None`: nothing is lowered).
    pub low: Option<DType>,
    /// The target whose legality applies.
    pub target: Target,
    /// Ops to lists; ops not here are unlisted (f32).
    pub lists: BTreeMap<String, Category>,
    /// Calibration: an op whose activation magnitude exceeds this stays f32.
    pub safe_range: f64,
    /// `O1`/`O2`/... or the policy file's path.
    pub source: String,
    /// Single ops pinned to a type (`[[op]]` tables), in file order.
    pub ops: Vec<OpOverride>,
}

/// One `[[op]]` table: an op, found by its MLIR name and location, pinned to a type.
#[derive(Clone, Debug, PartialEq, serde::Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OpOverride {
    /// The op's MLIR name (`tosa.matmul`).
    pub op: String,
    /// `LINE:COL` of the op in the model file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<String>,
    /// The name of the op's named location (instead of `at`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// `f32`, `f16` or `bf16`.
    pub precision: String,
    /// Why (for the reader; `f16c check --fix` says what it measured).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
}

impl OpOverride {
    /// The key of an op at `location`: its name when it has one, else `LINE:COL`; `None` when
    /// the location is unknown (such an op cannot be pinned by a policy file).
    pub fn key(op: &str, location: &f16c_dialect::Location, precision: DType, why: Option<String>) -> Option<OpOverride> {
        let (at, name) = match (&location.name, &location.file) {
            (Some(n), _) => (None, Some(n.clone())),
            (None, Some((_, line, col))) => (Some(format!("{line}:{col}")), None),
            (None, None) => return None,
        };
        Some(OpOverride { op: op.to_string(), at, name, precision: precision.to_string(), why })
    }

    /// True when this table names the op `op` at `location`.
    pub fn matches(&self, op: &str, location: &f16c_dialect::Location) -> bool {
        if self.op != op {
            return false;
        }
        match (&self.name, &self.at) {
            (Some(n), _) => location.name.as_deref() == Some(n.as_str()),
            (None, Some(at)) => location.file.as_ref().is_some_and(|(_, line, col)| *at == format!("{line}:{col}")),
            (None, None) => false,
        }
    }

    /// The type asked for.
    pub fn dtype(&self) -> Option<DType> {
        match self.precision.as_str() {
            "f32" => Some(DType::F32),
            "f16" => Some(DType::F16),
            "bf16" => Some(DType::BF16),
            _ => None,
        }
    }
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct ListEdit {
    ops: Option<Vec<String>>,
    #[serde(default)]
    add: Vec<String>,
    #[serde(default)]
    remove: Vec<String>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct Edits {
    low: Option<ListEdit>,
    follow: Option<ListEdit>,
    fp32: Option<ListEdit>,
    #[serde(rename = "safe-range")]
    safe_range: Option<f64>,
}

// The top level spells out the fields of `Edits` (serde's `flatten` would lose the line and
// column of errors).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PolicyFile {
    base: Option<String>,
    low: Option<ListEdit>,
    follow: Option<ListEdit>,
    fp32: Option<ListEdit>,
    #[serde(rename = "safe-range")]
    safe_range: Option<f64>,
    #[serde(default)]
    target: BTreeMap<String, Edits>,
    #[serde(default)]
    op: Vec<OpOverride>,
}

impl Policy {
    /// The policy of a level for a precision and target.
    pub fn level(level: Level, precision: Precision, target: Target) -> Policy {
        let mut lists = BTreeMap::new();
        let mut put = |names: &[&str], c: Category| {
            for n in names {
                lists.insert(n.to_string(), c);
            }
        };
        match level {
            Level::O0 => {}
            Level::O1 => {
                put(CONTRACTIONS, Category::Low);
                put(FOLLOW, Category::Follow);
                put(FP32, Category::Fp32);
            }
            Level::O2 => put(CONTRACTIONS, Category::Low),
            Level::O3 => put(OP_NAMES, Category::Low),
        }
        let low = if level == Level::O0 { None } else { precision.low_dtype() };
        Policy { level, low, target, lists, safe_range: default_safe_range(low), source: level.to_string(), ops: Vec::new() }
    }

    /// `--policy=O0|O1|O2|O3|<file.toml>`.
    pub fn from_spec(spec: &str, precision: Precision, target: Target) -> Result<Policy, PolicyError> {
        match Level::parse(spec) {
            Some(level) => Ok(Policy::level(level, precision, target)),
            None => Policy::from_file(Path::new(spec), precision, target),
        }
    }

    /// Reads a TOML policy file.
    pub fn from_file(path: &Path, precision: Precision, target: Target) -> Result<Policy, PolicyError> {
        let p = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| PolicyError::Read { path: p.clone(), source })?;
        Policy::from_toml(&text, &p, precision, target)
    }

    /// Parses the text of a policy file (`path` names it in errors).
    pub fn from_toml(text: &str, path: &str, precision: Precision, target: Target) -> Result<Policy, PolicyError> {
        let invalid = |message: String| PolicyError::Invalid { path: path.to_string(), message };
        let file: PolicyFile =
            toml::from_str(text).map_err(|e| PolicyError::Parse { path: path.to_string(), message: e.to_string().trim_end().to_string() })?;
        let base = file.base.as_deref().unwrap_or("O1");
        let level = Level::parse(base).ok_or_else(|| invalid(format!("base = \"{base}\" is not one of O0, O1, O2, O3")))?;
        let mut policy = Policy::level(level, precision, target);
        policy.source = path.to_string();
        let top = Edits { low: file.low, follow: file.follow, fp32: file.fp32, safe_range: file.safe_range };
        policy.apply(&top).map_err(&invalid)?;
        for (k, o) in file.op.iter().enumerate() {
            let which = format!("[[op]] #{} ({})", k + 1, o.op);
            if o.dtype().is_none() {
                return Err(invalid(format!("{which}: precision = \"{}\" is not one of \"f32\", \"f16\", \"bf16\"", o.precision)));
            }
            if o.at.is_none() == o.name.is_none() {
                return Err(invalid(format!("{which}: give exactly one of at = \"LINE:COL\" and name = \"...\"")));
            }
            if let Some(at) = &o.at {
                let ok = at.split_once(':').is_some_and(|(l, c)| l.parse::<u32>().is_ok() && c.parse::<u32>().is_ok());
                if !ok {
                    return Err(invalid(format!("{which}: at = \"{at}\" is not LINE:COL")));
                }
            }
        }
        policy.ops = file.op;
        for (name, edits) in &file.target {
            let t = Target::parse(name).ok_or_else(|| invalid(format!("[target.{name}]: unknown target (targets: {})", Target::NAMES.join(", "))))?;
            if t == target {
                policy.apply(edits).map_err(|m| invalid(format!("[target.{name}]: {m}")))?;
            }
        }
        Ok(policy)
    }

    fn apply(&mut self, edits: &Edits) -> Result<(), String> {
        let known = |n: &String| -> Result<(), String> {
            if OP_NAMES.contains(&n.as_str()) {
                Ok(())
            } else {
                Err(format!("unknown op '{n}' (ops are named without 'tosa.': {})", OP_NAMES.join(", ")))
            }
        };
        for (cat, edit) in [(Category::Low, &edits.low), (Category::Follow, &edits.follow), (Category::Fp32, &edits.fp32)] {
            let Some(edit) = edit else { continue };
            if let Some(ops) = &edit.ops {
                self.lists.retain(|_, c| *c != cat);
                for n in ops {
                    known(n)?;
                    self.lists.insert(n.clone(), cat);
                }
            }
            for n in &edit.add {
                known(n)?;
                self.lists.insert(n.clone(), cat);
            }
            for n in &edit.remove {
                known(n)?;
                if self.lists.get(n) == Some(&cat) {
                    self.lists.remove(n);
                }
            }
        }
        if let Some(r) = edits.safe_range {
            if r.is_nan() || r <= 0.0 {
                return Err(format!("safe-range = {r} must be a positive number"));
            }
            self.safe_range = r;
        }
        Ok(())
    }

    /// The list of an op (by its name without dialect prefix); `None` if unlisted.
    pub fn category(&self, op_name: &str) -> Option<Category> {
        self.lists.get(op_name).copied()
    }

    /// The type an `[[op]]` table pins the op `op` at `location` to (the first that matches).
    pub fn op_override(&self, op: &str, location: &f16c_dialect::Location) -> Option<&OpOverride> {
        self.ops.iter().find(|o| o.matches(op, location))
    }

    /// True when the policy lowers nothing (`O0` or `--precision=fp32`).
    pub fn is_identity(&self) -> bool {
        self.low.is_none()
    }

    /// The effective policy as a policy file (`--print-policy`).
    pub fn to_toml(&self) -> String {
        let mut s = String::from("# f16c effective precision policy (a valid policy file)\n");
        s.push_str(&format!("# source: {}\n", self.source));
        s.push_str(&format!(
            "# precision: {}, target: {}\n",
            self.low.map_or("fp32 (nothing is lowered)".to_string(), |d| d.to_string()),
            self.target
        ));
        s.push_str(&format!("base = \"{}\"\n", self.level));
        s.push_str(&format!("safe-range = {:?}\n", self.safe_range));
        for cat in [Category::Low, Category::Follow, Category::Fp32] {
            let ops: Vec<String> = self.lists.iter().filter(|(_, c)| **c == cat).map(|(n, _)| format!("\"{n}\"")).collect();
            s.push_str(&format!("\n[{}]\nops = [{}]\n", cat.name(), ops.join(", ")));
        }
        let unlisted: Vec<&str> = OP_NAMES.iter().copied().filter(|n| !self.lists.contains_key(*n)).collect();
        s.push_str(&format!("\n# unlisted (stay f32): {}\n", if unlisted.is_empty() { "none".to_string() } else { unlisted.join(", ") }));
        for o in &self.ops {
            s.push_str("\n[[op]]\n");
            s.push_str(&toml::to_string(o).expect("plain strings serialise"));
        }
        s
    }
}

/// Default calibration threshold: the largest finite value of the low type over 16, so that an
/// activation seen on calibration data has 16x headroom before it overflows.
pub fn default_safe_range(low: Option<DType>) -> f64 {
    match low {
        Some(DType::BF16) => f64::from(half::bf16::MAX) / 16.0,
        _ => f64::from(half::f16::MAX) / 16.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn printed_policy_reads_back_as_the_same_policy() {
        let file = "base = \"O1\"\n[fp32]\nadd = [\"tanh\"]\n[follow]\nremove = [\"sigmoid\"]\n[target.sm_70.low]\nremove = [\"matmul\"]\n";
        let p = Policy::from_toml(file, "p.toml", Precision::Fp16, Target::parse("sm_70").unwrap()).unwrap();
        assert_eq!(p.category("tanh"), Some(Category::Fp32));
        assert_eq!(p.category("sigmoid"), None);
        assert_eq!(p.category("matmul"), None);
        let again = Policy::from_toml(&p.to_toml(), "p.toml", Precision::Fp16, p.target).unwrap();
        assert_eq!(again, p);
    }

    #[test]
    fn op_tables_pin_ops_by_name_and_line_and_read_back() {
        let file = "base = \"O1\"\n[[op]]\nop = \"tosa.matmul\"\nat = \"19:11\"\nprecision = \"f32\"\nwhy = \"overflows\"\n[[op]]\nop = \"tosa.add\"\nname = \"encoder/add\"\nprecision = \"bf16\"\n";
        let p = Policy::from_toml(file, "p.toml", Precision::Fp16, Target::Reference).unwrap();
        let at = |line, col| f16c_dialect::Location::file("any/path/net.mlir", line, col);
        assert_eq!(p.op_override("tosa.matmul", &at(19, 11)).and_then(OpOverride::dtype), Some(DType::F32));
        assert!(p.op_override("tosa.matmul", &at(19, 12)).is_none());
        assert!(p.op_override("tosa.conv2d", &at(19, 11)).is_none());
        let named = f16c_dialect::Location { file: None, name: Some("encoder/add".into()) };
        assert_eq!(p.op_override("tosa.add", &named).and_then(OpOverride::dtype), Some(DType::BF16));
        let again = Policy::from_toml(&p.to_toml(), "p.toml", Precision::Fp16, Target::Reference).unwrap();
        assert_eq!(again.ops, p.ops);
        for (bad, says) in [
            ("[[op]]\nop = \"tosa.add\"\nat = \"3:4\"\nprecision = \"f8\"", "precision = \"f8\""),
            ("[[op]]\nop = \"tosa.add\"\nprecision = \"f32\"", "exactly one of at"),
            ("[[op]]\nop = \"tosa.add\"\nat = \"3\"\nprecision = \"f32\"", "at = \"3\" is not LINE:COL"),
            ("[[op]]\nop = \"tosa.add\"\nat = \"3:4\"\nprecision = \"f32\"\ncolour = 1", "colour"),
        ] {
            let e = Policy::from_toml(bad, "p.toml", Precision::Fp16, Target::Reference).unwrap_err().to_string();
            assert!(e.contains(says), "{e}");
        }
    }

    #[test]
    fn bad_files_are_reported_with_their_position() {
        let e = Policy::from_toml("base = \"O9\"", "p.toml", Precision::Fp16, Target::Reference).unwrap_err();
        assert!(e.to_string().contains("base = \"O9\""), "{e}");
        let e = Policy::from_toml("[fp32]\nadd = [\"fft2d\"]", "p.toml", Precision::Fp16, Target::Reference).unwrap_err();
        assert!(e.to_string().contains("unknown op 'fft2d'"), "{e}");
        let e = Policy::from_toml("[fp32]\nadd = 3", "p.toml", Precision::Fp16, Target::Reference).unwrap_err();
        assert!(e.to_string().contains("line 2"), "{e}");
        let e = Policy::from_toml("colour = \"red\"", "p.toml", Precision::Fp16, Target::Reference).unwrap_err();
        assert!(e.to_string().contains("colour"), "{e}");
    }
}
