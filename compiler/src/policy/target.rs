//! Targets and which low-precision types each one can run, as data.
//!
//! bf16 has no tensor-core support before sm_80, and AArch64 has bf16 arithmetic only with the
//! `+bf16` extension. Precision assignment reads [`LOW_TYPES`]; it never hard-codes a target.

use f16c_dialect::DType;
use std::fmt;

/// A compilation target.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Target {
    /// The reference interpreter (every type).
    Reference,
    /// The x86-64 Cranelift JIT (fp16 and bf16 emulated).
    X86_64,
    /// An NVIDIA GPU, `sm_<N>`.
    Sm(u32),
    /// AArch64 with fp16 NEON; `bf16` when `+bf16` was asked for.
    Aarch64 {
        /// The `+bf16` extension.
        bf16: bool,
    },
}

/// The low types each target runs, by target name.
pub const LOW_TYPES: &[(&str, &[DType])] = &[
    ("reference", &[DType::F16, DType::BF16]),
    ("x86_64", &[DType::F16, DType::BF16]),
    ("sm_70", &[DType::F16]),
    ("sm_75", &[DType::F16]),
    ("sm_80", &[DType::F16, DType::BF16]),
    ("sm_86", &[DType::F16, DType::BF16]),
    ("sm_89", &[DType::F16, DType::BF16]),
    ("sm_90", &[DType::F16, DType::BF16]),
    ("aarch64", &[DType::F16]),
    ("aarch64+bf16", &[DType::F16, DType::BF16]),
];

impl Target {
    /// Every target name.
    pub const NAMES: &'static [&'static str] =
        &["reference", "x86_64", "sm_70", "sm_75", "sm_80", "sm_86", "sm_89", "sm_90", "aarch64", "aarch64+bf16"];

    /// Parses a target name (`sm_70`, `aarch64+bf16`, ...).
    pub fn parse(s: &str) -> Option<Target> {
        match s {
            "reference" => Some(Target::Reference),
            "x86_64" | "x86-64" => Some(Target::X86_64),
            "aarch64" => Some(Target::Aarch64 { bf16: false }),
            "aarch64+bf16" => Some(Target::Aarch64 { bf16: true }),
            _ => {
                let n: u32 = s.strip_prefix("sm_")?.parse().ok()?;
                Target::NAMES.contains(&s).then_some(Target::Sm(n))
            }
        }
    }

    /// Whether the target can run ops in this type (f32 and f64 always).
    pub fn supports(self, dtype: DType) -> bool {
        if !dtype.is_low_float() {
            return true;
        }
        let name = self.to_string();
        LOW_TYPES.iter().any(|(n, types)| *n == name && types.contains(&dtype))
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Target::Reference => f.write_str("reference"),
            Target::X86_64 => f.write_str("x86_64"),
            Target::Sm(n) => write!(f, "sm_{n}"),
            Target::Aarch64 { bf16: false } => f.write_str("aarch64"),
            Target::Aarch64 { bf16: true } => f.write_str("aarch64+bf16"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_parses_and_prints_back_and_has_a_row() {
        for n in Target::NAMES {
            let t = Target::parse(n).unwrap();
            assert_eq!(&t.to_string(), n);
            assert!(LOW_TYPES.iter().any(|(r, _)| r == n));
        }
        assert!(Target::parse("sm_61").is_none());
        assert!(!Target::parse("sm_75").unwrap().supports(DType::BF16));
        assert!(Target::parse("sm_80").unwrap().supports(DType::BF16));
        assert!(!Target::parse("aarch64").unwrap().supports(DType::BF16));
    }
}
