//! Dense tensors: the values of constants, of the reference interpreter and of the runtime.
//!
//! Elements are stored in their own type (an f16 tensor holds `half::f16`, two bytes each), so a
//! weight converted to fp16 really takes half the memory.

use crate::types::{DType, TensorType};
use half::{bf16, f16};

/// Element storage, one variant per [`DType`].
#[derive(Clone, Debug, PartialEq)]
#[allow(missing_docs, reason = "one variant per element type, named as the type")]
pub enum Data {
    F32(Vec<f32>),
    F16(Vec<f16>),
    BF16(Vec<bf16>),
    F64(Vec<f64>),
    I1(Vec<bool>),
    I8(Vec<i8>),
    I16(Vec<i16>),
    I32(Vec<i32>),
    /// i48 values, sign-extended from bit 47.
    I48(Vec<i64>),
    I64(Vec<i64>),
}

/// Applies `$body` to the vector inside any [`Data`] variant, rebuilding the same variant.
macro_rules! map_data {
    ($data:expr, $v:ident => $body:expr) => {
        match $data {
            Data::F32($v) => Data::F32($body),
            Data::F16($v) => Data::F16($body),
            Data::BF16($v) => Data::BF16($body),
            Data::F64($v) => Data::F64($body),
            Data::I1($v) => Data::I1($body),
            Data::I8($v) => Data::I8($body),
            Data::I16($v) => Data::I16($body),
            Data::I32($v) => Data::I32($body),
            Data::I48($v) => Data::I48($body),
            Data::I64($v) => Data::I64($body),
        }
    };
}

impl Data {
    /// The element type.
    pub fn dtype(&self) -> DType {
        match self {
            Data::F32(_) => DType::F32,
            Data::F16(_) => DType::F16,
            Data::BF16(_) => DType::BF16,
            Data::F64(_) => DType::F64,
            Data::I1(_) => DType::I1,
            Data::I8(_) => DType::I8,
            Data::I16(_) => DType::I16,
            Data::I32(_) => DType::I32,
            Data::I48(_) => DType::I48,
            Data::I64(_) => DType::I64,
        }
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        match self {
            Data::F32(v) => v.len(),
            Data::F16(v) => v.len(),
            Data::BF16(v) => v.len(),
            Data::F64(v) => v.len(),
            Data::I1(v) => v.len(),
            Data::I8(v) => v.len(),
            Data::I16(v) => v.len(),
            Data::I32(v) => v.len(),
            Data::I48(v) => v.len(),
            Data::I64(v) => v.len(),
        }
    }

    /// True when there are no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Integer (or i1) data of `dtype` from i64 values, each wrapped to the type's width.
    pub fn from_i64(v: Vec<i64>, dtype: DType) -> Data {
        match dtype {
            DType::I1 => Data::I1(v.into_iter().map(|x| x & 1 != 0).collect()),
            DType::I8 => Data::I8(v.into_iter().map(|x| x as i8).collect()),
            DType::I16 => Data::I16(v.into_iter().map(|x| x as i16).collect()),
            DType::I32 => Data::I32(v.into_iter().map(|x| x as i32).collect()),
            DType::I48 => Data::I48(v.into_iter().map(|x| DType::I48.wrap(x)).collect()),
            DType::I64 => Data::I64(v),
            f => panic!("Data::from_i64: {f} is not an integer type"),
        }
    }

    /// True when every element has the bits of the first (no copy; stops at the first that
    /// differs, so a real weight is rejected after a few elements). Empty data is not a splat.
    pub fn is_splat(&self) -> bool {
        fn same<T, B: PartialEq>(v: &[T], bits: impl Fn(&T) -> B) -> bool {
            v.first().is_some_and(|f| v.iter().all(|x| bits(x) == bits(f)))
        }
        match self {
            Data::F32(v) => same(v, |x| x.to_bits()),
            Data::F16(v) => same(v, |x| x.to_bits()),
            Data::BF16(v) => same(v, |x| x.to_bits()),
            Data::F64(v) => same(v, |x| x.to_bits()),
            Data::I1(v) => same(v, |&x| x),
            Data::I8(v) => same(v, |&x| x),
            Data::I16(v) => same(v, |&x| x),
            Data::I32(v) => same(v, |&x| x),
            Data::I48(v) | Data::I64(v) => same(v, |&x| x),
        }
    }

    /// `n` copies of the first element (a splat's values; `n` zero gives empty data).
    pub fn repeat_first(&self, n: usize) -> Data {
        map_data!(self, v => if n == 0 { Vec::new() } else { vec![v[0]; n] })
    }

    /// A new vector whose element `i` is `self[index[i]]`: every data-movement op is one of these.
    pub fn gather(&self, index: &[usize]) -> Data {
        map_data!(self, v => index.iter().map(|&i| v[i]).collect())
    }

    /// Like [`Data::gather`], with `None` meaning "take element 0 of `fill`" (padding).
    pub fn gather_or(&self, index: &[Option<usize>], fill: &Data) -> Data {
        match (self, fill) {
            (Data::F32(v), Data::F32(f)) => Data::F32(index.iter().map(|i| i.map_or(f[0], |i| v[i])).collect()),
            (Data::F16(v), Data::F16(f)) => Data::F16(index.iter().map(|i| i.map_or(f[0], |i| v[i])).collect()),
            (Data::BF16(v), Data::BF16(f)) => Data::BF16(index.iter().map(|i| i.map_or(f[0], |i| v[i])).collect()),
            (Data::F64(v), Data::F64(f)) => Data::F64(index.iter().map(|i| i.map_or(f[0], |i| v[i])).collect()),
            (Data::I1(v), Data::I1(f)) => Data::I1(index.iter().map(|i| i.map_or(f[0], |i| v[i])).collect()),
            (Data::I8(v), Data::I8(f)) => Data::I8(index.iter().map(|i| i.map_or(f[0], |i| v[i])).collect()),
            (Data::I16(v), Data::I16(f)) => Data::I16(index.iter().map(|i| i.map_or(f[0], |i| v[i])).collect()),
            (Data::I32(v), Data::I32(f)) => Data::I32(index.iter().map(|i| i.map_or(f[0], |i| v[i])).collect()),
            (Data::I48(v), Data::I48(f)) => Data::I48(index.iter().map(|i| i.map_or(f[0], |i| v[i])).collect()),
            (Data::I64(v), Data::I64(f)) => Data::I64(index.iter().map(|i| i.map_or(f[0], |i| v[i])).collect()),
            _ => panic!("gather_or: fill dtype {} differs from data dtype {}", fill.dtype(), self.dtype()),
        }
    }

    /// Concatenates pieces of one dtype, in order.
    pub fn concat(parts: &[&Data]) -> Data {
        macro_rules! cat {
            ($var:ident) => {{
                let mut out = Vec::new();
                for p in parts {
                    match p {
                        Data::$var(x) => out.extend_from_slice(x),
                        other => panic!("concat: mixed dtypes {} and {}", parts[0].dtype(), other.dtype()),
                    }
                }
                Data::$var(out)
            }};
        }
        match parts.first().expect("concat of no parts") {
            Data::F32(_) => cat!(F32),
            Data::F16(_) => cat!(F16),
            Data::BF16(_) => cat!(BF16),
            Data::F64(_) => cat!(F64),
            Data::I1(_) => cat!(I1),
            Data::I8(_) => cat!(I8),
            Data::I16(_) => cat!(I16),
            Data::I32(_) => cat!(I32),
            Data::I48(_) => cat!(I48),
            Data::I64(_) => cat!(I64),
        }
    }

    /// [`Data::to_le_bytes`] without a copy where memory holds the elements so (every type but
    /// i48, on a little-endian host): comparing or hashing a model's weights need not allocate
    /// and fill a second copy of them.
    pub fn le_bytes(&self) -> std::borrow::Cow<'_, [u8]> {
        fn view<T>(v: &[T]) -> &[u8] {
            // SAFETY: `T` is a primitive number, bool, or `half`'s transparent u16 wrapper: no
            // padding, every byte initialised; u8 has alignment 1.
            unsafe { std::slice::from_raw_parts(v.as_ptr().cast::<u8>(), std::mem::size_of_val(v)) }
        }
        if cfg!(target_endian = "big") {
            return self.to_le_bytes().into();
        }
        match self {
            Data::F32(v) => view(v).into(),
            Data::F16(v) => view(v).into(),
            Data::BF16(v) => view(v).into(),
            Data::F64(v) => view(v).into(),
            Data::I1(v) => view(v).into(),
            Data::I8(v) => view(v).into(),
            Data::I16(v) => view(v).into(),
            Data::I32(v) => view(v).into(),
            Data::I64(v) => view(v).into(),
            Data::I48(_) => self.to_le_bytes().into(),
        }
    }

    /// `n` zero elements of `dtype`.
    pub fn zeroed(dtype: DType, n: usize) -> Data {
        match dtype {
            DType::F32 => Data::F32(vec![0.0; n]),
            DType::F16 => Data::F16(vec![f16::ZERO; n]),
            DType::BF16 => Data::BF16(vec![bf16::ZERO; n]),
            DType::F64 => Data::F64(vec![0.0; n]),
            DType::I1 => Data::I1(vec![false; n]),
            DType::I8 => Data::I8(vec![0; n]),
            DType::I16 => Data::I16(vec![0; n]),
            DType::I32 => Data::I32(vec![0; n]),
            DType::I48 => Data::I48(vec![0; n]),
            DType::I64 => Data::I64(vec![0; n]),
        }
    }

    /// The elements' memory as little-endian bytes to write into, where any bytes are valid
    /// elements in [`Data::from_le_bytes`]' layout (floats, i8..i32 and i64 on a little-endian
    /// host; not i1 or i48): decoding a weight straight into its tensor, without a byte copy.
    pub fn le_bytes_mut(&mut self) -> Option<&mut [u8]> {
        fn view<T>(v: &mut [T]) -> &mut [u8] {
            // SAFETY: `T` is a primitive number or `half`'s transparent u16 wrapper, for which
            // every bit pattern is a value; u8 has alignment 1.
            unsafe { std::slice::from_raw_parts_mut(v.as_mut_ptr().cast::<u8>(), std::mem::size_of_val(v)) }
        }
        if cfg!(target_endian = "big") {
            return None;
        }
        match self {
            Data::F32(v) => Some(view(v)),
            Data::F16(v) => Some(view(v)),
            Data::BF16(v) => Some(view(v)),
            Data::F64(v) => Some(view(v)),
            Data::I8(v) => Some(view(v)),
            Data::I16(v) => Some(view(v)),
            Data::I32(v) => Some(view(v)),
            Data::I64(v) => Some(view(v)),
            Data::I1(_) | Data::I48(_) => None,
        }
    }

    /// Little-endian bytes of the elements (i1 as one byte each).
    pub fn to_le_bytes(&self) -> Vec<u8> {
        // One fixed-size copy per element into a buffer of the final size (a `flat_map`
        // collect grows byte by byte: most of a compile's time on a big model's weights).
        fn le<T: Copy, const N: usize>(v: &[T], bytes: impl Fn(T) -> [u8; N]) -> Vec<u8> {
            let mut out = vec![0u8; v.len() * N];
            for (o, &x) in out.chunks_exact_mut(N).zip(v) {
                o.copy_from_slice(&bytes(x));
            }
            out
        }
        match self {
            Data::F32(v) => le(v, f32::to_le_bytes),
            Data::F16(v) => le(v, |x: f16| x.to_bits().to_le_bytes()),
            Data::BF16(v) => le(v, |x: bf16| x.to_bits().to_le_bytes()),
            Data::F64(v) => le(v, f64::to_le_bytes),
            Data::I1(v) => v.iter().map(|&b| b as u8).collect(),
            Data::I8(v) => v.iter().map(|&x| x as u8).collect(),
            Data::I16(v) => le(v, i16::to_le_bytes),
            Data::I32(v) => le(v, i32::to_le_bytes),
            Data::I48(v) | Data::I64(v) => le(v, i64::to_le_bytes),
        }
    }

    /// Little-endian bytes as MLIR's dense elements store them: as [`Data::to_le_bytes`], except
    /// i48 in 6 bytes.
    pub fn to_mlir_bytes(&self) -> Vec<u8> {
        match self {
            Data::I48(v) => v.iter().flat_map(|x| x.to_le_bytes().into_iter().take(6)).collect(),
            d => d.to_le_bytes(),
        }
    }

    /// Decodes bytes laid out as [`Data::to_mlir_bytes`] writes them.
    pub fn from_mlir_bytes(dtype: DType, bytes: &[u8]) -> Option<Data> {
        if dtype != DType::I48 {
            return Data::from_le_bytes(dtype, bytes);
        }
        if !bytes.len().is_multiple_of(6) {
            return None;
        }
        Some(Data::I48(bytes.chunks_exact(6).map(|c| DType::I48.wrap(c.iter().rev().fold(0i64, |v, &b| v << 8 | b as i64))).collect()))
    }

    /// Bytes of one element in [`Data::to_mlir_bytes`]' layout.
    pub fn mlir_element_size(dtype: DType) -> usize {
        if dtype == DType::I48 { 6 } else { dtype.byte_size() }
    }

    /// Decodes little-endian bytes (i1: one byte each, non-zero is true). `None` if the length is
    /// not a whole number of elements.
    pub fn from_le_bytes(dtype: DType, bytes: &[u8]) -> Option<Data> {
        let size = dtype.byte_size();
        if !bytes.len().is_multiple_of(size) {
            return None;
        }
        let chunks = bytes.chunks_exact(size);
        Some(match dtype {
            DType::F32 => Data::F32(chunks.map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect()),
            DType::F16 => Data::F16(chunks.map(|c| f16::from_bits(u16::from_le_bytes(c.try_into().unwrap()))).collect()),
            DType::BF16 => Data::BF16(chunks.map(|c| bf16::from_bits(u16::from_le_bytes(c.try_into().unwrap()))).collect()),
            DType::F64 => Data::F64(chunks.map(|c| f64::from_le_bytes(c.try_into().unwrap())).collect()),
            DType::I1 => Data::I1(bytes.iter().map(|&b| b != 0).collect()),
            DType::I8 => Data::I8(bytes.iter().map(|&b| b as i8).collect()),
            DType::I16 => Data::I16(chunks.map(|c| i16::from_le_bytes(c.try_into().unwrap())).collect()),
            DType::I32 => Data::I32(chunks.map(|c| i32::from_le_bytes(c.try_into().unwrap())).collect()),
            DType::I48 => Data::I48(chunks.map(|c| DType::I48.wrap(i64::from_le_bytes(c.try_into().unwrap()))).collect()),
            DType::I64 => Data::I64(chunks.map(|c| i64::from_le_bytes(c.try_into().unwrap())).collect()),
        })
    }
}

/// A dense tensor: shape plus typed elements in row-major order.
///
/// Tensors are values that never change once made, so a clone shares the elements (a graph's
/// copy for a `check --fix` probe, a lowered program's constants) rather than copying them.
#[derive(Clone, Debug, PartialEq)]
pub struct Tensor {
    shape: Vec<usize>,
    data: std::sync::Arc<Data>,
}

/// A tensor whose element count does not match its shape.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{len} elements do not fill shape {shape:?}")]
pub struct ShapeMismatch {
    /// The shape asked for.
    pub shape: Vec<usize>,
    /// The number of elements given.
    pub len: usize,
}

impl Tensor {
    /// Makes a tensor; the element count must match the shape.
    pub fn new(shape: impl Into<Vec<usize>>, data: Data) -> Result<Tensor, ShapeMismatch> {
        Tensor::from_shared(shape, std::sync::Arc::new(data))
    }

    /// An f32 tensor.
    pub fn from_f32(shape: impl Into<Vec<usize>>, values: Vec<f32>) -> Result<Tensor, ShapeMismatch> {
        Tensor::new(shape, Data::F32(values))
    }

    /// A tensor of `ty` with every element equal to `value` (converted, rounding to nearest even).
    pub fn splat(ty: &TensorType, value: f64) -> Tensor {
        let n = ty.num_elements();
        let data = match ty.dtype {
            DType::F32 => Data::F32(vec![value as f32; n]),
            DType::F16 => Data::F16(vec![f16::from_f64(value); n]),
            DType::BF16 => Data::BF16(vec![bf16::from_f64(value); n]),
            DType::F64 => Data::F64(vec![value; n]),
            DType::I1 => Data::I1(vec![value != 0.0; n]),
            DType::I8 => Data::I8(vec![value as i8; n]),
            DType::I16 => Data::I16(vec![value as i16; n]),
            DType::I32 => Data::I32(vec![value as i32; n]),
            DType::I48 => Data::I48(vec![(value as i64).clamp(DType::I48.int_range().0, DType::I48.int_range().1); n]),
            DType::I64 => Data::I64(vec![value as i64; n]),
        };
        Tensor { shape: ty.shape.clone(), data: std::sync::Arc::new(data) }
    }

    /// The shape.
    pub fn shape(&self) -> &[usize] {
        &self.shape
    }

    /// The element storage.
    pub fn data(&self) -> &Data {
        &self.data
    }

    /// Takes the element storage.
    pub fn into_data(self) -> Data {
        std::sync::Arc::try_unwrap(self.data).unwrap_or_else(|shared| (*shared).clone())
    }

    /// A tensor of shared elements; their count must match the shape.
    pub fn from_shared(shape: impl Into<Vec<usize>>, data: std::sync::Arc<Data>) -> Result<Tensor, ShapeMismatch> {
        let shape = shape.into();
        if shape.iter().product::<usize>() != data.len() {
            return Err(ShapeMismatch { shape, len: data.len() });
        }
        Ok(Tensor { shape, data })
    }

    /// The elements, shared: what a lowered program's constant keeps of its tensor.
    pub fn shared_data(&self) -> &std::sync::Arc<Data> {
        &self.data
    }

    /// The element type.
    pub fn dtype(&self) -> DType {
        self.data.dtype()
    }

    /// The tensor type.
    pub fn ty(&self) -> TensorType {
        TensorType::new(self.dtype(), self.shape.clone())
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.data.len()
    }

    /// True when the tensor has no elements.
    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    /// Bytes of element storage.
    pub fn byte_size(&self) -> usize {
        self.len() * self.dtype().byte_size()
    }

    /// The same elements under another shape with the same element count.
    pub fn reshaped(&self, shape: impl Into<Vec<usize>>) -> Result<Tensor, ShapeMismatch> {
        Tensor::from_shared(shape, self.data.clone())
    }

    /// Every element as f64 (exact for every dtype but i64 beyond 2^53).
    pub fn to_f64_vec(&self) -> Vec<f64> {
        match &*self.data {
            Data::F32(v) => v.iter().map(|&x| x as f64).collect(),
            Data::F16(v) => v.iter().map(|x| x.to_f64()).collect(),
            Data::BF16(v) => v.iter().map(|x| x.to_f64()).collect(),
            Data::F64(v) => v.clone(),
            Data::I1(v) => v.iter().map(|&x| x as u8 as f64).collect(),
            Data::I8(v) => v.iter().map(|&x| x as f64).collect(),
            Data::I16(v) => v.iter().map(|&x| x as f64).collect(),
            Data::I32(v) => v.iter().map(|&x| x as f64).collect(),
            Data::I48(v) | Data::I64(v) => v.iter().map(|&x| x as f64).collect(),
        }
    }

    /// Every element widened to f32 (exact for f16/bf16; rounds f64).
    pub fn to_f32_vec(&self) -> Vec<f32> {
        match &*self.data {
            Data::F32(v) => v.clone(),
            Data::F16(v) => v.iter().map(|x| x.to_f32()).collect(),
            Data::BF16(v) => v.iter().map(|x| x.to_f32()).collect(),
            _ => self.to_f64_vec().into_iter().map(|x| x as f32).collect(),
        }
    }

    /// Every element as i64 (floats truncate toward zero; for integer and bool data only).
    pub fn to_i64_vec(&self) -> Vec<i64> {
        match &*self.data {
            Data::I1(v) => v.iter().map(|&x| x as i64).collect(),
            Data::I8(v) => v.iter().map(|&x| x as i64).collect(),
            Data::I16(v) => v.iter().map(|&x| x as i64).collect(),
            Data::I32(v) => v.iter().map(|&x| x as i64).collect(),
            Data::I48(v) | Data::I64(v) => v.clone(),
            _ => self.to_f64_vec().into_iter().map(|x| x as i64).collect(),
        }
    }

    /// True when every element has the same bits (printed as a splat `dense<v>`).
    pub fn is_splat(&self) -> bool {
        self.data.is_splat() || self.data.is_empty()
    }
}

/// Checks that `given` match a function's argument types in count, shape and element type,
/// with errors that say which input and what was expected. The reference interpreter and the
/// runtime's executor both call it: nothing past the boundary sees a wrongly sized buffer.
pub fn check_inputs(function: &str, expected: &[TensorType], given: &[Tensor]) -> Result<(), String> {
    if given.len() != expected.len() {
        let each: Vec<String> = expected.iter().enumerate().map(|(k, t)| format!("#{k} {t}")).collect();
        return Err(format!("'@{function}' takes {} input(s), {} given (expected, in order: {})", expected.len(), given.len(), each.join(", ")));
    }
    for (k, (want, t)) in expected.iter().zip(given).enumerate() {
        if t.ty() != *want {
            return Err(format!(
                "input #{k} of '@{function}' must be {want}, got {} (shape {:?}, element type {})",
                t.ty(),
                t.shape(),
                t.dtype()
            ));
        }
    }
    Ok(())
}

impl Tensor {
    /// The elements as text, each in its own type's natural form: integers as integers,
    /// booleans as `true`/`false`, floats as the shortest decimal that reads back the same.
    pub fn elements_text(&self) -> String {
        let items: Vec<String> = match &*self.data {
            Data::I1(v) => v.iter().map(|b| b.to_string()).collect(),
            Data::I8(_) | Data::I16(_) | Data::I32(_) | Data::I48(_) | Data::I64(_) => self.to_i64_vec().iter().map(|x| x.to_string()).collect(),
            Data::F64(v) => v.iter().map(|x| format!("{x:?}")).collect(),
            _ => self.to_f32_vec().iter().map(|x| format!("{x:?}")).collect(),
        };
        format!("[{}]", items.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Data of every type with values whose bytes differ (so a wrong order or width shows).
    fn every_type() -> Vec<Data> {
        let v = [1.5f64, -2.25, 1e-3, 65504.0, -0.0];
        vec![
            Data::F32(v.iter().map(|&x| x as f32).collect()),
            Data::F16(v.iter().map(|&x| f16::from_f64(x)).collect()),
            Data::BF16(v.iter().map(|&x| bf16::from_f64(x)).collect()),
            Data::F64(v.to_vec()),
            Data::I1(vec![true, false, true]),
            Data::I8(vec![-3, 7, 127]),
            Data::I16(vec![-300, 7, 32000]),
            Data::I32(vec![-300_000, 7, 1 << 30]),
            Data::I48(vec![-(1 << 40), 7, 1 << 46]),
            Data::I64(vec![-(1 << 60), 7, 1 << 62]),
        ]
    }

    #[test]
    fn byte_views_are_the_little_endian_bytes() {
        for d in every_type() {
            assert_eq!(&*d.le_bytes(), d.to_le_bytes().as_slice(), "{:?}", d.dtype());
            // Written through the mutable view, the bytes decode to the same elements.
            let mut z = Data::zeroed(d.dtype(), d.len());
            match z.le_bytes_mut() {
                Some(out) => {
                    out.copy_from_slice(&d.to_le_bytes());
                    assert_eq!(z, d, "{:?}", d.dtype());
                }
                None => assert!(matches!(d.dtype(), DType::I1 | DType::I48)),
            }
        }
    }
}
