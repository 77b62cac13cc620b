//! `.npy` files (NumPy's array format), read and written with the `npyz` crate.
//!
//! Supported element types: float32, float16, float64, bool, int8, int32, int64, in C order
//! and either byte order. NumPy has no bfloat16: bf16 tensors are written widened to f32
//! (exactly), and [`fit`] rounds an f32 input to a bf16 or f16 argument. A file whose data is
//! followed by stray bytes is refused (it is not what NumPy writes, and usually a truncated or
//! concatenated copy).

use crate::{Result, RuntimeError};
use f16c_core::{DType, Data, Tensor};
use half::f16;
use std::path::Path;

fn npy_err(path: &Path, message: impl Into<String>) -> RuntimeError {
    RuntimeError::Npy { path: path.display().to_string(), message: message.into() }
}

/// Reads a `.npy` file into a tensor.
pub fn read(path: &Path) -> Result<Tensor> {
    let bytes = std::fs::read(path).map_err(|e| npy_err(path, format!("cannot read: {e}")))?;
    from_bytes(&bytes, path)
}

/// Reads the bytes of a `.npy` file (`path` names it in errors).
pub fn from_bytes(bytes: &[u8], path: &Path) -> Result<Tensor> {
    let header_end = screen(bytes).map_err(|m| npy_err(path, m))?;
    let file = npyz::NpyFile::new(bytes).map_err(|e| npy_err(path, format!("not a valid .npy file: {e}")))?;
    if file.order() == npyz::Order::Fortran && file.shape().iter().filter(|&&d| d > 1).count() > 1 {
        return Err(npy_err(path, "Fortran-ordered arrays are not supported (save with np.ascontiguousarray)"));
    }
    let shape: Vec<usize> = file.shape().iter().map(|&d| d as usize).collect();
    let descr = match file.dtype() {
        npyz::DType::Plain(ts) => ts.to_string(),
        other => return Err(npy_err(path, format!("structured dtype {other:?} is not supported"))),
    };
    let kind = descr.trim_start_matches(['<', '>', '|', '=']);
    // The data must end the file: NumPy writes nothing after it.
    let header_end = header_end.unwrap_or(usize::MAX);
    let item: usize = kind.get(1..).and_then(|n| n.parse().ok()).unwrap_or(0);
    let data_end = shape.iter().try_fold(item, |a, &d| a.checked_mul(d)).and_then(|n| n.checked_add(header_end));
    if let Some(end) = data_end.filter(|&e| bytes.len() > e) {
        return Err(npy_err(path, format!("{} stray byte(s) after the array's data (a damaged or concatenated file?)", bytes.len() - end)));
    }
    let bad = |e: std::io::Error| npy_err(path, format!("cannot read the data: {e}"));
    let data = match kind {
        "f4" => Data::F32(file.into_vec::<f32>().map_err(bad)?),
        "f2" => Data::F16(file.into_vec::<f16>().map_err(bad)?),
        "f8" => Data::F64(file.into_vec::<f64>().map_err(bad)?),
        "b1" => Data::I1(file.into_vec::<bool>().map_err(bad)?),
        "i1" => Data::I8(file.into_vec::<i8>().map_err(bad)?),
        "i2" => Data::I16(file.into_vec::<i16>().map_err(bad)?),
        "i4" => Data::I32(file.into_vec::<i32>().map_err(bad)?),
        "i8" => Data::I64(file.into_vec::<i64>().map_err(bad)?),
        _ => return Err(npy_err(path, format!("dtype '{descr}' is not supported (float32, float16, float64, bool, int8, int16, int32, int64)"))),
    };
    Tensor::new(shape, data).map_err(|e| npy_err(path, e.to_string()))
}

/// Where a `.npy` file's header text lies, `(start, length)`, as its length field announces it
/// (a u16 at byte 8 in version 1, a u32 in later versions); `None` without the magic or with
/// the length field cut off.
pub fn header_span(bytes: &[u8]) -> Option<(usize, usize)> {
    if bytes.len() < 10 || &bytes[..6] != b"\x93NUMPY" {
        return None;
    }
    match bytes[6] {
        1 => Some((10, u16::from_le_bytes([bytes[8], bytes[9]]) as usize)),
        _ => bytes.get(8..12).map(|b| (12, u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)),
    }
}

/// Checks what `npyz` would trust before it parses the header: a header with the size its
/// length field announces, a flat `shape` tuple of integers whose element count does not
/// overflow and whose data fits in the file, and no nesting (`npyz`'s header parser takes
/// exponential time on nested tuples, and its element count overflows on large shapes; both
/// found by `f16c-fuzz`). Returns where the data starts.
fn screen(bytes: &[u8]) -> std::result::Result<Option<usize>, String> {
    if bytes.len() < 10 || &bytes[..6] != b"\x93NUMPY" {
        return Ok(None); // npyz reports a bad magic number itself
    }
    let (start, len) = header_span(bytes).ok_or("truncated header")?;
    let header = bytes.get(start..start + len).ok_or_else(|| format!("the header announces {len} bytes, the file has {}", bytes.len() - start.min(bytes.len())))?;
    let header = std::str::from_utf8(header).map_err(|_| "the header is not text".to_string())?;
    let nesting = header.chars().filter(|c| matches!(c, '(' | '[' | '{')).count();
    if nesting > 2 {
        return Err("the header has nested tuples or lists (structured dtypes are not supported)".into());
    }
    let Some(at) = header.find("'shape'") else { return Ok(Some(start + len)) };
    let tuple = header[at..].split_once('(').and_then(|(_, t)| t.split_once(')')).map(|(t, _)| t).ok_or("the header's 'shape' is not a tuple")?;
    // The product of the non-zero dimensions must not overflow either: npyz computes strides.
    let (mut elements, mut strides): (u64, u64) = (1, 1);
    for dim in tuple.split(',').map(str::trim).filter(|d| !d.is_empty()) {
        let n: u64 = dim.parse().map_err(|_| format!("shape dimension '{dim}' is not a non-negative integer"))?;
        strides = strides.checked_mul(n.max(1)).filter(|s| *s <= u64::MAX / 16).ok_or("the shape's element count overflows")?;
        elements *= n; // at most the stride product: no overflow
    }
    let data = (bytes.len() - start - len) as u64;
    if elements > data {
        return Err(format!("the shape announces {elements} elements, the file holds {data} bytes of data"));
    }
    Ok(Some(start + len))
}

/// Writes a tensor as a `.npy` file (version 1.0, little-endian, C order), with the header
/// exactly as NumPy writes it (IREE's reader, for one, rejects the trailing comma some writers
/// put after the last dimension). NumPy has no bf16: a bf16 tensor is written widened to f32,
/// which is exact.
pub fn write(path: &Path, t: &Tensor) -> Result<()> {
    let widened;
    let t = if let Data::BF16(v) = t.data() {
        widened = Tensor::new(t.shape().to_vec(), Data::F32(v.iter().map(|x| x.to_f32()).collect())).expect("same shape");
        &widened
    } else {
        t
    };
    let descr = match t.dtype() {
        DType::F32 => "<f4",
        DType::F16 => "<f2",
        DType::F64 => "<f8",
        DType::I1 => "|b1",
        DType::I8 => "|i1",
        DType::I16 => "<i2",
        DType::I32 => "<i4",
        // NumPy has no 48-bit integer: i48 values are written sign-extended as int64.
        DType::I48 | DType::I64 => "<i8",
        DType::BF16 => unreachable!("widened above"),
    };
    let mut bytes = header(descr, t.shape());
    bytes.extend(t.data().to_le_bytes());
    std::fs::write(path, bytes).map_err(|e| npy_err(path, format!("cannot write: {e}")))
}

/// A version 1.0 `.npy` header: magic, length, and the dict padded with spaces so that the
/// data starts at a multiple of 64 bytes.
fn header(descr: &str, shape: &[usize]) -> Vec<u8> {
    let dims = match shape {
        [d] => format!("({d},)"),
        _ => format!("({})", shape.iter().map(|d| d.to_string()).collect::<Vec<_>>().join(", ")),
    };
    let mut dict = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {dims}, }}");
    // NumPy leaves room for the first dimension to grow to 21 digits in place.
    if let Some(first) = shape.first() {
        dict.push_str(&" ".repeat(21usize.saturating_sub(first.to_string().len())));
    }
    let unpadded = 10 + dict.len() + 1;
    dict.push_str(&" ".repeat(unpadded.next_multiple_of(64) - unpadded));
    dict.push('\n');
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend((dict.len() as u16).to_le_bytes());
    out.extend(dict.as_bytes());
    out
}

/// An f32 tensor given for an f16 or bf16 argument of the same shape, rounded to it (to
/// nearest, ties to even): `f16c-run` takes f32 inputs for any float argument. An int64 tensor
/// whose values fit 48 bits is taken for an i48 argument (NumPy has no int48). Anything else is
/// returned as is (and checked against the argument by the executor).
pub fn fit(t: Tensor, want: &crate::TensorType) -> Tensor {
    match (t.data(), want.dtype) {
        (Data::F32(v), DType::F16) if t.shape() == want.shape.as_slice() => {
            Tensor::new(want.shape.clone(), Data::F16(v.iter().map(|&x| half::f16::from_f32(x)).collect())).expect("same shape")
        }
        (Data::F32(v), DType::BF16) if t.shape() == want.shape.as_slice() => {
            Tensor::new(want.shape.clone(), Data::BF16(v.iter().map(|&x| half::bf16::from_f32(x)).collect())).expect("same shape")
        }
        (Data::I64(v), DType::I48) if t.shape() == want.shape.as_slice() && v.iter().all(|&x| DType::I48.wrap(x) == x) => {
            Tensor::new(want.shape.clone(), Data::I48(v.clone())).expect("same shape")
        }
        _ => t,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_every_writable_dtype() {
        let dir = std::env::temp_dir().join(format!("f16c-npy-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for data in [
            Data::F32(vec![1.5, -2.0, 3.25, 0.0, f32::INFINITY, -0.0]),
            Data::F16(vec![f16::from_f32(0.1); 6]),
            Data::F64(vec![1e300; 6]),
            Data::I1(vec![true, false, true, true, false, false]),
            Data::I8(vec![-128, 127, 0, 1, 2, 3]),
            Data::I16(vec![i16::MIN, 0, 1, 2, 3, i16::MAX]),
            Data::I32(vec![i32::MIN, 0, 1, 2, 3, i32::MAX]),
            Data::I64(vec![i64::MIN, 0, 1, 2, 3, i64::MAX]),
        ] {
            let t = Tensor::new(vec![2, 3], data).unwrap();
            let p = dir.join("x.npy");
            write(&p, &t).unwrap();
            assert_eq!(read(&p).unwrap(), t);
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn bf16_is_written_as_exact_f32_and_f32_inputs_fit_low_arguments() {
        let p = std::env::temp_dir().join(format!("f16c-bf16-{}.npy", std::process::id()));
        let bf = Tensor::new(vec![3], Data::BF16(vec![half::bf16::from_f32(1.5), half::bf16::MAX, half::bf16::from_f32(-0.0)])).unwrap();
        write(&p, &bf).unwrap();
        let back = read(&p).unwrap();
        std::fs::remove_file(&p).unwrap();
        assert_eq!(back.dtype(), DType::F32);
        assert_eq!(fit(back, &bf.ty()), bf);
        let wrong_shape = Tensor::from_f32(vec![2], vec![1.0, 2.0]).unwrap();
        assert_eq!(fit(wrong_shape.clone(), &bf.ty()), wrong_shape);
    }

    #[test]
    fn headers_are_byte_for_byte_numpys() {
        // What numpy 2.4's np.save writes for these shapes and types.
        for (descr, shape, dict) in [
            ("<f4", &[1, 3, 16, 16][..], "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 3, 16, 16), }"),
            ("|i1", &[5][..], "{'descr': '|i1', 'fortran_order': False, 'shape': (5,), }"),
            ("<f2", &[][..], "{'descr': '<f2', 'fortran_order': False, 'shape': (), }"),
            ("|b1", &[2, 3][..], "{'descr': '|b1', 'fortran_order': False, 'shape': (2, 3), }"),
        ] {
            let h = header(descr, shape);
            assert_eq!(h.len(), 128, "{dict}");
            assert_eq!(&h[..10], b"\x93NUMPY\x01\x00\x76\x00");
            let text = std::str::from_utf8(&h[10..]).unwrap();
            assert_eq!(text.trim_end(), dict);
            assert!(text.ends_with('\n'));
        }
    }

    #[test]
    fn trailing_bytes_are_refused() {
        let p = std::env::temp_dir().join(format!("f16c-trailing-{}.npy", std::process::id()));
        write(&p, &Tensor::from_f32(vec![3], vec![1.0, 2.0, 3.0]).unwrap()).unwrap();
        assert!(read(&p).is_ok());
        let mut bytes = std::fs::read(&p).unwrap();
        bytes.extend_from_slice(b"junk");
        std::fs::write(&p, &bytes).unwrap();
        let e = read(&p).unwrap_err().to_string();
        std::fs::remove_file(&p).unwrap();
        assert!(e.contains("4 stray byte(s) after the array's data"), "{e}");
    }

    #[test]
    fn garbage_is_a_clear_error() {
        let p = std::env::temp_dir().join(format!("f16c-garbage-{}.npy", std::process::id()));
        std::fs::write(&p, b"not numpy").unwrap();
        let e = read(&p).unwrap_err().to_string();
        std::fs::remove_file(&p).unwrap();
        assert!(e.contains("not a valid .npy file"), "{e}");
    }
}
