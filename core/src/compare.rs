//! Comparing a result with a reference tensor: the error measure used by `f16c run --compare`
//! and by the test suite.

use crate::Tensor;

/// Two tensors of different shapes cannot be compared.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("cannot compare shape {got:?} with reference shape {reference:?}")]
pub struct ShapeMismatch {
    /// The result's shape.
    pub got: Vec<usize>,
    /// The reference's shape.
    pub reference: Vec<usize>,
}

/// How far a result is from a reference.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Error {
    /// Largest |result - reference| (infinite where exactly one of the two is NaN; positions
    /// where both are NaN agree).
    pub max_abs: f64,
    /// Largest |reference|.
    pub peak: f64,
}

impl Error {
    /// `max_abs` relative to the reference's peak magnitude.
    pub fn relative_to_peak(&self) -> f64 {
        self.max_abs / self.peak.max(f64::MIN_POSITIVE)
    }
}

/// Measures `got` against `reference`; their shapes must match.
pub fn compare(got: &Tensor, reference: &Tensor) -> Result<Error, ShapeMismatch> {
    if got.shape() != reference.shape() {
        return Err(ShapeMismatch { got: got.shape().to_vec(), reference: reference.shape().to_vec() });
    }
    Ok(compare_values(&got.to_f64_vec(), &reference.to_f64_vec()))
}

/// [`compare`] of values already read (as many of each).
pub fn compare_values(got: &[f64], reference: &[f64]) -> Error {
    let peak = reference.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    let max_abs = got.iter().zip(reference).fold(0.0f64, |m, (p, q)| match (p.is_nan(), q.is_nan()) {
        (true, true) => m,
        (false, false) => m.max((p - q).abs()),
        _ => f64::INFINITY,
    });
    Error { max_abs, peak }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nan_mismatch_is_infinite_and_shapes_must_match() {
        let a = Tensor::from_f32(vec![2], vec![1.0, f32::NAN]).unwrap();
        let b = Tensor::from_f32(vec![2], vec![2.0, 1.0]).unwrap();
        assert_eq!(compare(&a, &b).unwrap().max_abs, f64::INFINITY);
        let e = compare(&b, &Tensor::from_f32(vec![2], vec![1.0, 1.0]).unwrap()).unwrap();
        assert_eq!((e.max_abs, e.peak, e.relative_to_peak()), (1.0, 1.0, 1.0));
        assert!(compare(&a, &Tensor::from_f32(vec![1], vec![1.0]).unwrap()).is_err());
    }
}
