//! Element types and static tensor types, spelled exactly as MLIR spells them.

use std::fmt;

/// An element type f16c understands. Everything else in a model is rejected at import.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DType {
    /// IEEE binary32.
    F32,
    /// IEEE binary16.
    F16,
    /// bfloat16: the top half of an f32.
    BF16,
    /// IEEE binary64 (torch-mlir computes layer-norm variance in it).
    F64,
    /// Boolean.
    I1,
    /// Signless 8-bit integer.
    I8,
    /// Signless 16-bit integer.
    I16,
    /// Signless 32-bit integer.
    I32,
    /// Signless 48-bit integer: TOSA's accumulator of i16 contractions, held in 8 bytes (as
    /// LLVM stores an `i48`), always sign-extended from bit 47.
    I48,
    /// Signless 64-bit integer.
    I64,
}

impl DType {
    /// Every dtype, in a stable order.
    pub const ALL: [DType; 10] = [
        DType::F32,
        DType::F16,
        DType::BF16,
        DType::F64,
        DType::I1,
        DType::I8,
        DType::I16,
        DType::I32,
        DType::I48,
        DType::I64,
    ];

    /// The MLIR spelling (`f32`, `bf16`, `i1`, ...).
    pub fn mlir_name(self) -> &'static str {
        match self {
            DType::F32 => "f32",
            DType::F16 => "f16",
            DType::BF16 => "bf16",
            DType::F64 => "f64",
            DType::I1 => "i1",
            DType::I8 => "i8",
            DType::I16 => "i16",
            DType::I32 => "i32",
            DType::I48 => "i48",
            DType::I64 => "i64",
        }
    }

    /// Parses an MLIR element type spelling.
    pub fn from_mlir(s: &str) -> Option<DType> {
        DType::ALL.into_iter().find(|d| d.mlir_name() == s)
    }

    /// Floating-point types (f16, bf16, f32, f64).
    pub fn is_float(self) -> bool {
        matches!(self, DType::F32 | DType::F16 | DType::BF16 | DType::F64)
    }

    /// The 16-bit float types that f16c lowers precision to.
    pub fn is_low_float(self) -> bool {
        matches!(self, DType::F16 | DType::BF16)
    }

    /// Integer types other than i1.
    pub fn is_int(self) -> bool {
        matches!(self, DType::I8 | DType::I16 | DType::I32 | DType::I48 | DType::I64)
    }

    /// Bytes one element occupies in memory (i1 takes a byte).
    pub fn byte_size(self) -> usize {
        match self {
            DType::I1 | DType::I8 => 1,
            DType::F16 | DType::BF16 | DType::I16 => 2,
            DType::F32 | DType::I32 => 4,
            DType::F64 | DType::I48 | DType::I64 => 8,
        }
    }

    /// Bit width of the element as MLIR counts it.
    pub fn bit_width(self) -> usize {
        match self {
            DType::I1 => 1,
            DType::I48 => 48,
            d => d.byte_size() * 8,
        }
    }

    /// The value range of an integer type (i1: 0..=1).
    pub fn int_range(self) -> (i64, i64) {
        match self {
            DType::I1 => (0, 1),
            DType::I64 => (i64::MIN, i64::MAX),
            d => {
                let bits = d.bit_width() as u32;
                (-(1i64 << (bits - 1)), (1i64 << (bits - 1)) - 1)
            }
        }
    }

    /// `v` wrapped to this integer type's width (two's complement), as i64.
    pub fn wrap(self, v: i64) -> i64 {
        match self {
            DType::I1 => v & 1,
            d => {
                let shift = 64 - d.bit_width() as u32;
                (v << shift) >> shift
            }
        }
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.mlir_name())
    }
}

/// A ranked tensor type with a static shape: `tensor<2x3xf32>`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TensorType {
    /// Element type.
    pub dtype: DType,
    /// Dimensions, outermost first. Empty for a rank-0 tensor.
    pub shape: Vec<usize>,
}

impl TensorType {
    /// Makes a tensor type.
    pub fn new(dtype: DType, shape: impl Into<Vec<usize>>) -> Self {
        TensorType { dtype, shape: shape.into() }
    }

    /// Number of elements.
    pub fn num_elements(&self) -> usize {
        self.shape.iter().product()
    }

    /// Rank (number of dimensions).
    pub fn rank(&self) -> usize {
        self.shape.len()
    }

    /// Bytes the tensor occupies.
    pub fn byte_size(&self) -> usize {
        self.num_elements() * self.dtype.byte_size()
    }

    /// The same shape with another element type.
    pub fn with_dtype(&self, dtype: DType) -> Self {
        TensorType { dtype, shape: self.shape.clone() }
    }
}

impl fmt::Display for TensorType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("tensor<")?;
        for d in &self.shape {
            write!(f, "{d}x")?;
        }
        write!(f, "{}>", self.dtype)
    }
}

/// The type of a value in the graph: a tensor, or a TOSA shape (`!tosa.shape<N>`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum ValueType {
    /// A ranked, statically shaped tensor.
    Tensor(TensorType),
    /// A compile-time shape of the given rank.
    Shape(usize),
    /// The results of a control-flow op (`tosa.cond_if`, `tosa.while_loop`), which `Op::Result`
    /// nodes take apart.
    Results(Vec<TensorType>),
}

impl ValueType {
    /// The tensor type, if this is a tensor.
    pub fn as_tensor(&self) -> Option<&TensorType> {
        match self {
            ValueType::Tensor(t) => Some(t),
            ValueType::Shape(_) | ValueType::Results(_) => None,
        }
    }
}

impl fmt::Display for ValueType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ValueType::Tensor(t) => t.fmt(f),
            ValueType::Shape(n) => write!(f, "!tosa.shape<{n}>"),
            ValueType::Results(ts) => {
                let items: Vec<String> = ts.iter().map(|t| t.to_string()).collect();
                write!(f, "({})", items.join(", "))
            }
        }
    }
}

/// Why a type string was not accepted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TypeParseError {
    /// A `?` dimension or an unranked tensor.
    Dynamic,
    /// An element type f16c does not support.
    UnsupportedElement(String),
    /// Something that is not a tensor or shape type at all.
    NotATensor,
    /// A tensor larger than [`max_tensor_bytes`] (`bytes`: `None` when its size does not
    /// even fit in 128 bits).
    TooLarge {
        /// Its size in bytes.
        bytes: Option<u128>,
        /// The limit it exceeds.
        limit: u64,
    },
}

/// The default of [`max_tensor_bytes`]: 8 GiB.
pub const DEFAULT_MAX_TENSOR_BYTES: u64 = 8 << 30;

/// The limit set by [`set_max_tensor_bytes`] (0: not set).
static MAX_TENSOR_BYTES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// The largest tensor type f16c accepts, in bytes: the value given to
/// [`set_max_tensor_bytes`] (`f16c --max-tensor-bytes=N`, or the binaries' `F16C_MAX_TENSOR_BYTES`
/// through [`crate::settings`]), else [`DEFAULT_MAX_TENSOR_BYTES`]. Every type is checked when it is
/// parsed, before anything of its size is allocated, so a static shape that MLIR accepts but
/// no machine could hold (a splat constant of 2⁶³ elements, a pad to 40 GB) is a located error.
pub fn max_tensor_bytes() -> u64 {
    match MAX_TENSOR_BYTES.load(std::sync::atomic::Ordering::Relaxed) {
        0 => DEFAULT_MAX_TENSOR_BYTES,
        n => n,
    }
}

/// Sets [`max_tensor_bytes`] for this process (0 restores the default).
pub fn set_max_tensor_bytes(bytes: u64) {
    MAX_TENSOR_BYTES.store(bytes, std::sync::atomic::Ordering::Relaxed);
}

impl ValueType {
    /// Parses the MLIR spelling of a type (`tensor<1x3xf32>`, `tensor<f32>`, `!tosa.shape<4>`).
    pub fn parse(s: &str) -> Result<ValueType, TypeParseError> {
        let s = s.trim();
        if let Some(rest) = s.strip_prefix("!tosa.shape<").and_then(|r| r.strip_suffix('>')) {
            return rest.trim().parse().map(ValueType::Shape).map_err(|_| TypeParseError::NotATensor);
        }
        let body = s
            .strip_prefix("tensor<")
            .and_then(|r| r.strip_suffix('>'))
            .ok_or(TypeParseError::NotATensor)?;
        if body.starts_with('*') {
            return Err(TypeParseError::Dynamic);
        }
        // An encoding (`tensor<4xf32, #enc>`) is not something f16c can honour.
        if body.contains(',') {
            return Err(TypeParseError::UnsupportedElement(body.to_string()));
        }
        let mut parts: Vec<&str> = body.split('x').collect();
        let elem = parts.pop().ok_or(TypeParseError::NotATensor)?;
        let mut shape = Vec::with_capacity(parts.len());
        for p in parts {
            if p == "?" {
                return Err(TypeParseError::Dynamic);
            }
            shape.push(p.parse().map_err(|_| TypeParseError::NotATensor)?);
        }
        let dtype = DType::from_mlir(elem).ok_or_else(|| TypeParseError::UnsupportedElement(elem.to_string()))?;
        let bytes = shape.iter().try_fold(dtype.byte_size() as u128, |b, &d: &usize| b.checked_mul(d as u128));
        let limit = max_tensor_bytes();
        if bytes.is_none_or(|b| b > limit as u128) {
            return Err(TypeParseError::TooLarge { bytes, limit });
        }
        Ok(ValueType::Tensor(TensorType { dtype, shape }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integer_ranges_and_wrapping_follow_each_width() {
        assert_eq!(DType::I16.int_range(), (-32768, 32767));
        assert_eq!(DType::I48.int_range(), (-(1 << 47), (1 << 47) - 1));
        assert_eq!(DType::I48.wrap(1 << 47), -(1 << 47));
        assert_eq!(DType::I48.wrap(-1), -1);
        assert_eq!(DType::I16.wrap(65535), -1);
        assert_eq!((DType::I48.byte_size(), DType::I48.bit_width()), (8, 48));
        let d = crate::tensor::Data::from_i64(vec![-(1 << 47), 5, (1 << 47) - 1], DType::I48);
        let bytes = d.to_mlir_bytes();
        assert_eq!(bytes.len(), 18);
        assert_eq!(crate::tensor::Data::from_mlir_bytes(DType::I48, &bytes), Some(d));
    }

    #[test]
    fn parse_and_print_round_trip() {
        for s in ["tensor<1x3x16x16xf32>", "tensor<f64>", "tensor<0x2xi1>", "!tosa.shape<4>", "tensor<7xbf16>"] {
            assert_eq!(ValueType::parse(s).unwrap().to_string(), s);
        }
    }

    #[test]
    fn parse_rejects_what_f16c_cannot_run() {
        assert_eq!(ValueType::parse("tensor<?x3xf32>"), Err(TypeParseError::Dynamic));
        assert_eq!(ValueType::parse("tensor<*xf32>"), Err(TypeParseError::Dynamic));
        assert_eq!(ValueType::parse("tensor<3xi4>"), Err(TypeParseError::UnsupportedElement("i4".into())));
        assert_eq!(ValueType::parse("memref<3xf32>"), Err(TypeParseError::NotATensor));
    }

    #[test]
    fn sizes_beyond_the_limit_or_beyond_128_bits_are_refused() {
        let limit = max_tensor_bytes();
        assert!(ValueType::parse("tensor<1024x1024x1024xf32>").is_ok());
        assert_eq!(ValueType::parse("tensor<100000x100000xf32>"), Err(TypeParseError::TooLarge { bytes: Some(40_000_000_000), limit }));
        let huge = format!("tensor<{0}x{0}x{0}xf32>", u64::MAX);
        assert_eq!(ValueType::parse(&huge), Err(TypeParseError::TooLarge { bytes: None, limit }));
        // An empty tensor is fine whatever its other dimensions.
        assert!(ValueType::parse(&format!("tensor<0x{}xf32>", u64::MAX)).is_ok());
    }
}
