//! Targets, and what each one's hardware runs, as data.
//!
//! A [`Target`] names where code will run; [`Target::info`] gives its [`TargetInfo`]: the
//! low-precision types it computes in, its matrix-multiply-accumulate (tensor-core) shapes and
//! its native vector width. `assign-precision` reads the low types (bf16 has no tensor-core
//! support before sm_80, and AArch64 has bf16 arithmetic only with `+bf16`); backends read the
//! rest when they check kernel legality. Nothing else hard-codes a target.

use f16c_dialect::DType;
use std::fmt;

/// A compilation target.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Target {
    /// The reference interpreter (every type).
    Reference,
    /// x86-64: the Cranelift JIT and ahead-of-time shared objects (fp16 and bf16 emulated).
    X86_64,
    /// An NVIDIA GPU, `sm_<N>`.
    Sm(u32),
    /// AArch64 with fp16 NEON; `bf16` when `+bf16` was asked for.
    Aarch64 {
        /// The `+bf16` extension.
        bf16: bool,
    },
}

/// One matrix-multiply-accumulate shape a target runs natively: `m × n × k` with `a`, `b` inputs
/// accumulated in one of `acc` (WMMA m16n16k16 on NVIDIA tensor cores).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MmaShape {
    /// Rows of the tile.
    pub m: usize,
    /// Columns of the tile.
    pub n: usize,
    /// Reduction depth of one instruction.
    pub k: usize,
    /// Element type of A and B.
    pub input: DType,
    /// Accumulator types.
    pub acc: &'static [DType],
}

/// What a target's hardware runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TargetInfo {
    /// The target's name.
    pub name: &'static str,
    /// Low-precision float types it computes in (f32 and f64 always).
    pub low_types: &'static [DType],
    /// Its tensor-core (MMA) shapes; empty without tensor cores.
    pub mma: &'static [MmaShape],
    /// Bits of its native vectors (0: none, the interpreter).
    pub vector_bits: usize,
}

const F16_ONLY: &[DType] = &[DType::F16];
const F16_BF16: &[DType] = &[DType::F16, DType::BF16];
const F32_F16: &[DType] = &[DType::F32, DType::F16];
const WMMA_F16: &[MmaShape] = &[MmaShape { m: 16, n: 16, k: 16, input: DType::F16, acc: F32_F16 }];
const WMMA_F16_BF16: &[MmaShape] = &[
    MmaShape { m: 16, n: 16, k: 16, input: DType::F16, acc: F32_F16 },
    MmaShape { m: 16, n: 16, k: 16, input: DType::BF16, acc: &[DType::F32] },
];

/// Every target's description.
pub const TARGETS: &[(Target, TargetInfo)] = &[
    (Target::Reference, TargetInfo { name: "reference", low_types: F16_BF16, mma: &[], vector_bits: 0 }),
    // Cranelift's SIMD is 128-bit; fp16/bf16 are stored narrow and computed in f32.
    (Target::X86_64, TargetInfo { name: "x86_64", low_types: F16_BF16, mma: &[], vector_bits: 128 }),
    (Target::Sm(70), TargetInfo { name: "sm_70", low_types: F16_ONLY, mma: WMMA_F16, vector_bits: 32 }),
    (Target::Sm(75), TargetInfo { name: "sm_75", low_types: F16_ONLY, mma: WMMA_F16, vector_bits: 32 }),
    (Target::Sm(80), TargetInfo { name: "sm_80", low_types: F16_BF16, mma: WMMA_F16_BF16, vector_bits: 32 }),
    (Target::Sm(86), TargetInfo { name: "sm_86", low_types: F16_BF16, mma: WMMA_F16_BF16, vector_bits: 32 }),
    (Target::Sm(89), TargetInfo { name: "sm_89", low_types: F16_BF16, mma: WMMA_F16_BF16, vector_bits: 32 }),
    (Target::Sm(90), TargetInfo { name: "sm_90", low_types: F16_BF16, mma: WMMA_F16_BF16, vector_bits: 32 }),
    // NEON with +fullfp16: 8 f16 lanes in 128 bits.
    (Target::Aarch64 { bf16: false }, TargetInfo { name: "aarch64", low_types: F16_ONLY, mma: &[], vector_bits: 128 }),
    (Target::Aarch64 { bf16: true }, TargetInfo { name: "aarch64+bf16", low_types: F16_BF16, mma: &[], vector_bits: 128 }),
];

impl Target {
    /// Every target name.
    pub const NAMES: &'static [&'static str] =
        &["reference", "x86_64", "sm_70", "sm_75", "sm_80", "sm_86", "sm_89", "sm_90", "aarch64", "aarch64+bf16"];

    /// Parses a target name (`sm_70`, `aarch64+bf16`, ...).
    pub fn parse(s: &str) -> Option<Target> {
        let s = if s == "x86-64" { "x86_64" } else { s };
        TARGETS.iter().find(|(_, i)| i.name == s).map(|(t, _)| *t)
    }

    /// What the target runs.
    pub fn info(self) -> &'static TargetInfo {
        &TARGETS.iter().find(|(t, _)| *t == self).expect("every Target value has a row").1
    }

    /// Whether the target can run ops in this type (f32 and f64 always).
    pub fn supports(self, dtype: DType) -> bool {
        !dtype.is_low_float() || self.info().low_types.contains(&dtype)
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.info().name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_parses_and_prints_back_and_has_a_row() {
        assert_eq!(Target::NAMES.len(), TARGETS.len());
        for n in Target::NAMES {
            let t = Target::parse(n).unwrap();
            assert_eq!(&t.to_string(), n);
        }
        assert!(Target::parse("sm_61").is_none());
        assert!(!Target::parse("sm_75").unwrap().supports(DType::BF16));
        assert!(Target::parse("sm_80").unwrap().supports(DType::BF16));
        assert!(!Target::parse("aarch64").unwrap().supports(DType::BF16));
        // bf16 tensor cores from sm_80 only.
        assert!(Target::Sm(75).info().mma.iter().all(|s| s.input != DType::BF16));
        assert!(Target::Sm(80).info().mma.iter().any(|s| s.input == DType::BF16));
    }
}

/// An x86-64 instruction-set level (`--cpu`): the psABI's levels, and v4 with AVX512-BF16.
/// Parsed once, where the command line or the Python options are read; its facts are here
/// ([`X86Level::requires`], [`X86Level::fma`], [`X86Level::avx512`], [`X86Level::bf16_pairs`],
/// the LLVM backend's [`X86Level::machine`]), and the backends read them (the Cranelift
/// backend's `X86_LEVELS` are these facts in its terms).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum X86Level {
    /// SSE4.2, POPCNT: no FMA, no AVX.
    V2,
    /// AVX2, FMA, F16C, BMI.
    V3,
    /// AVX-512 F/BW/DQ/VL.
    V4,
    /// And AVX512-BF16 (`VDPBF16PS`).
    V4Bf16,
}

impl X86Level {
    /// Every level, lowest first.
    pub const ALL: [X86Level; 4] = [X86Level::V2, X86Level::V3, X86Level::V4, X86Level::V4Bf16];

    /// Its `--cpu` spelling.
    pub fn name(self) -> &'static str {
        match self {
            X86Level::V2 => "x86-64-v2",
            X86Level::V3 => "x86-64-v3",
            X86Level::V4 => "x86-64-v4",
            X86Level::V4Bf16 => "x86-64-v4+bf16",
        }
    }

    /// The CPU features (the runtime's names, as in an artifact's `requires`) that code
    /// compiled for this level may use, and so requires.
    pub const fn requires(self) -> &'static [&'static str] {
        // Each level's features follow the lower level's: a level requires a prefix.
        const FEATURES: [&str; 17] = [
            "sse3", "ssse3", "sse41", "sse42", "popcnt", // v2
            "avx", "avx2", "fma", "bmi1", "bmi2", "lzcnt", "f16c", // v3
            "avx512f", "avx512bw", "avx512dq", "avx512vl", // v4
            "avx512bf16",
        ];
        let n = match self {
            X86Level::V2 => 5,
            X86Level::V3 => 12,
            X86Level::V4 => 16,
            X86Level::V4Bf16 => 17,
        };
        FEATURES.split_at(n).0
    }

    /// Fused multiply-add (from v3).
    pub const fn fma(self) -> bool {
        !matches!(self, X86Level::V2)
    }

    /// AVX-512 F/BW/DQ/VL: 32 registers of sixteen f32 (from v4).
    pub const fn avx512(self) -> bool {
        matches!(self, X86Level::V4 | X86Level::V4Bf16)
    }

    /// bf16 pairs summed into f32 in one instruction (`VDPBF16PS`).
    pub const fn bf16_pairs(self) -> bool {
        matches!(self, X86Level::V4Bf16)
    }

    /// The LLVM backend's machine for this level; `None` for v2 (its micro-kernel assumes FMA).
    pub const fn machine(self) -> Option<CpuMachine> {
        let (cpu, features, gemm) = match self {
            X86Level::V2 => return None,
            // 16 ymm registers: 6 × 2 accumulators, two B vectors, one broadcast A.
            X86Level::V3 => ("x86-64-v3", "", GemmShape { mr: 6, nr: 16, lanes: 8 }),
            // 32 zmm registers: 12 × 2 accumulators of sixteen f32, two B vectors, one
            // broadcast A.
            X86Level::V4 => ("x86-64-v4", "-prefer-256-bit", GemmShape { mr: 12, nr: 32, lanes: 16 }),
            X86Level::V4Bf16 => ("x86-64-v4", "+avx512bf16,-prefer-256-bit", GemmShape { mr: 12, nr: 32, lanes: 16 }),
        };
        // The same 24 accumulators as 6 × 4: half the A rows per step, twice the B vectors;
        // and 6 × 2 where the columns do not fill four vectors.
        let gemm_wide = if self.avx512() { Some(GemmShape { mr: 6, nr: 64, lanes: 16 }) } else { None };
        let gemm_long = if self.avx512() { Some(GemmShape { mr: 6, nr: 32, lanes: 16 }) } else { None };
        // And 8 × 3 where it fills the matrix exactly.
        let gemm_exact = if self.avx512() { Some(GemmShape { mr: 8, nr: 48, lanes: 16 }) } else { None };
        Some(CpuMachine {
            triple: "x86_64-unknown-linux-gnu",
            cpu,
            features,
            requires: self.requires(),
            native_bf16: false,
            gemm,
            gemm_wide,
            gemm_long,
            gemm_exact,
            fmlal: false,
            fp16_fma: false,
            fma_by_element: false,
            dot_bf16: self.bf16_pairs(),
        })
    }

    /// This machine's level: the highest whose features it has.
    pub fn host() -> X86Level {
        use crate::backend::{host_has_avx2_f16c, host_has_avx512, host_has_avx512_bf16};
        if host_has_avx512_bf16() {
            X86Level::V4Bf16
        } else if host_has_avx512() {
            X86Level::V4
        } else if host_has_avx2_f16c() {
            X86Level::V3
        } else {
            X86Level::V2
        }
    }
}

impl fmt::Display for X86Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What `--cpu` names: an x86-64 level, or this machine's (`native`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Cpu {
    /// This machine's level ([`X86Level::host`]).
    Native,
    /// That level.
    Level(X86Level),
}

impl Cpu {
    /// Every spelling `--cpu` takes.
    pub fn names() -> Vec<&'static str> {
        std::iter::once("native").chain(X86Level::ALL.iter().map(|l| l.name())).collect()
    }

    /// The `--cpu` spelling `s`, if it is one.
    pub fn parse(s: &str) -> Option<Cpu> {
        if s == "native" {
            return Some(Cpu::Native);
        }
        X86Level::ALL.into_iter().find(|l| l.name() == s).map(Cpu::Level)
    }

    /// The level it stands for on this machine.
    pub fn level(self) -> X86Level {
        match self {
            Cpu::Native => X86Level::host(),
            Cpu::Level(l) => l,
        }
    }
}

impl fmt::Display for Cpu {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Cpu::Native => f.write_str("native"),
            Cpu::Level(l) => f.write_str(l.name()),
        }
    }
}

/// What `--backend` names: the code generator of an x86-64 (or AArch64) target.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BackendName {
    /// The Cranelift JIT (x86-64's default).
    Cranelift,
    /// LLVM, ahead of time.
    Llvm,
}

impl BackendName {
    /// Every spelling `--backend` takes.
    pub const NAMES: [&'static str; 2] = ["cranelift", "llvm"];

    /// The `--backend` spelling `s`, if it is one.
    pub fn parse(s: &str) -> Option<BackendName> {
        match s {
            "cranelift" => Some(BackendName::Cranelift),
            "llvm" => Some(BackendName::Llvm),
            _ => None,
        }
    }
}

impl fmt::Display for BackendName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            BackendName::Cranelift => "cranelift",
            BackendName::Llvm => "llvm",
        })
    }
}

#[cfg(test)]
mod level_tests {
    use super::*;

    /// Each x86-64 level's facts: what it requires grows level by level (code for a level runs
    /// wherever a higher one's does), FMA from v3, AVX-512 from v4, bf16 pairs at v4+bf16 only;
    /// the LLVM machines agree with them and v2 has none.
    #[test]
    fn x86_levels_grow_and_their_machines_agree() {
        for w in X86Level::ALL.windows(2) {
            assert!(w[0] < w[1] && w[0].requires().iter().all(|f| w[1].requires().contains(f)), "{} → {}", w[0], w[1]);
        }
        for level in X86Level::ALL {
            assert_eq!(level.fma(), level.requires().contains(&"fma"), "{level}");
            assert_eq!(level.avx512(), level.requires().contains(&"avx512f"), "{level}");
            assert_eq!(level.bf16_pairs(), level.requires().contains(&"avx512bf16"), "{level}");
            match level.machine() {
                None => assert_eq!(level, X86Level::V2),
                Some(m) => {
                    assert_eq!((m.requires, m.dot_bf16), (level.requires(), level.bf16_pairs()), "{level}");
                    assert_eq!(m.gemm.lanes, if level.avx512() { 16 } else { 8 }, "{level}");
                }
            }
        }
    }

    #[test]
    fn cpu_spellings_round_trip_and_native_is_a_level() {
        for name in Cpu::names() {
            assert_eq!(Cpu::parse(name).map(|c| c.to_string()).as_deref(), Some(name));
        }
        assert_eq!(Cpu::parse("x86-64-v9"), None);
        assert!(X86Level::ALL.contains(&Cpu::Native.level()));
        assert_eq!(BackendName::parse("llvm"), Some(BackendName::Llvm));
        assert_eq!(BackendName::parse("gcc"), None);
    }
}

/// The register tile of a machine's contraction micro-kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GemmShape {
    /// Rows of the output tile.
    pub mr: usize,
    /// Columns of the output tile (a multiple of `lanes`).
    pub nr: usize,
    /// f32 lanes of a vector register.
    pub lanes: usize,
}

impl GemmShape {
    /// The fewest rows a matrix has for [`CpuMachine::gemm_wide`] or [`CpuMachine::gemm_long`]
    /// to be taken.
    pub const WIDE_MIN_ROWS: usize = 128;
}

/// What the LLVM CPU backend compiles for: one row per x86-64 level ([`X86Level::machine`])
/// and per AArch64 target ([`aarch64_machine`]).
#[derive(Clone, Copy, Debug)]
pub struct CpuMachine {
    /// The LLVM triple.
    pub triple: &'static str,
    /// The LLVM CPU name.
    pub cpu: &'static str,
    /// LLVM target features.
    pub features: &'static str,
    /// The features the runtime checks before loading the code (the runtime's names).
    pub requires: &'static [&'static str],
    /// f32 → bf16 is one instruction.
    pub native_bf16: bool,
    /// The contraction micro-kernel's register tile.
    pub gemm: GemmShape,
    /// The tile for matrices of at least [`GemmShape::WIDE_MIN_ROWS`] rows whose columns fill its
    /// panels, where the machine has one: the same accumulators in fewer rows and more vectors
    /// per row, so that a step reads half the A rows (on AVX-512, 6 × 64 beside 12 × 32: the
    /// k = 3072 products of BERT-base 6.05 → 5.55 ms, ResNet-50 78.9 → 75.2 ms at one thread;
    /// the 64-row matrices of GPT-2 and Llama ran 2–3 % slower on it, hence the floor).
    pub gemm_wide: Option<GemmShape>,
    /// The tile for matrices of at least [`GemmShape::WIDE_MIN_ROWS`] rows whose columns do not
    /// fill [`CpuMachine::gemm_wide`]'s panels, where the machine has one: [`CpuMachine::gemm`]'s
    /// panels in half its rows (on AVX-512, 6 × 32 beside 12 × 32: six of A's strided rows per
    /// step instead of twelve; why it is faster is not established — in L1 both run at the FMA
    /// rate — but it is on every such product measured: the U-Net's 32-channel convolutions
    /// 48.6 → 48.0 ms, EfficientNet-B0's convolutions 9.41 →
    /// 9.03 ms, the Whisper encoder's 1500 × 1500 × 64 products 65.7 → 64.6 ms, ViT-S/16's
    /// 197-row ones 0.33 → 0.30 ms each, at one thread; bf16 pairs and fp16 within noise).
    pub gemm_long: Option<GemmShape>,
    /// The tile for matrices it fills exactly (rows and columns multiples of its own), where
    /// [`CpuMachine::gemm_wide`] does not, where the machine has one: on AVX-512, 8 × 48 (the
    /// same 24 accumulators; three B vectors and eight A rows a step). BERT-base's 128 rows
    /// were 22 tiles of six, 132 rows computed: its matmuls 212.6 → 206.0 ms in f32, 111.2 →
    /// 108.5 in bf16; GPT-2's 64 rows (8 × 32 before) 107.0 → 106.1; EfficientNet-B0's
    /// 3136 × 144 convolutions 0.426 → 0.378 ms each, at one thread.
    pub gemm_exact: Option<GemmShape>,
    /// fp16 × fp16 accumulates into f32 in one instruction (AArch64 `FMLAL`, `+fp16fml`).
    pub fmlal: bool,
    /// Native fp16 fused multiply-add (AArch64 `+fullfp16`): `--accumulate=f16` uses it.
    pub fp16_fma: bool,
    /// Multiply-adds take one operand from a lane of a vector register (AArch64 `FMLA` by
    /// element): the micro-kernel loads a run of A values along `k` as one vector instead of
    /// one value per step.
    pub fma_by_element: bool,
    /// bf16 × bf16 pairs summed into f32 in one instruction (x86 AVX512-BF16 `VDPBF16PS`):
    /// bf16 contractions run on it.
    pub dot_bf16: bool,
}

impl CpuMachine {
    /// Loads and stores of some lanes of a vector under a mask are native (AVX-512's mask
    /// registers, for every element size): a tile's columns past a matrix's last one are
    /// masked off rather than the ones inside finished one at a time.
    pub fn masked_lanes(&self) -> bool {
        self.requires.contains(&"avx512bw")
    }

    /// Loads and stores of some lanes of a vector of `d` values under a mask are native:
    /// AVX-512's mask registers for every type ([`CpuMachine::masked_lanes`]), or AVX's
    /// `vmaskmovps` for f32 (its 16-bit counterpart does not exist: LLVM would load those one
    /// element at a time).
    pub fn masks(&self, d: DType) -> bool {
        self.masked_lanes() || d == DType::F32 && self.requires.contains(&"avx")
    }

    /// `y · 2^k` with one rounding is one instruction (AVX-512 `vscalefps`, what LLVM makes of
    /// `llvm.ldexp`): the contract's `exp` scales by it rather than by two built powers of two
    /// (the same bits: both round the exact product once).
    pub fn scales_in_one(&self) -> bool {
        self.requires.contains(&"avx512f")
    }
}

/// The LLVM backend's AArch64 machine: ARMv8.2-A with fp16 arithmetic, or (`bf16`) ARMv8.6-A
/// with its bf16 conversions too. 32 NEON registers: 8 × 2 accumulators of four f32, the B
/// row, the A values.
pub const fn aarch64_machine(bf16: bool) -> CpuMachine {
    let (features, requires): (&str, &[&str]) = if bf16 { ("+neon,+fullfp16,+fp16fml,+bf16", &["fp16", "fhm", "bf16"]) } else { ("+neon,+fullfp16,+fp16fml", &["fp16", "fhm"]) };
    CpuMachine {
        triple: "aarch64-unknown-linux-gnu",
        cpu: "generic",
        features,
        requires,
        native_bf16: bf16,
        gemm: GemmShape { mr: 8, nr: 8, lanes: 4 },
        gemm_wide: None,
        gemm_long: None,
        gemm_exact: None,
        fmlal: true,
        fp16_fma: true,
        fma_by_element: true,
        dot_bf16: false,
    }
}
