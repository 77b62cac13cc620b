//! What `f16c run` and `f16c-run` do with a model's results: write them to `.npy` files, or
//! print them (each element type in its own form), and compare them with reference files.

use crate::{compare, npy, Result, RuntimeError, Tensor};
use std::path::Path;

/// Writes `outputs` to `paths` (one per result) or, with no paths, prints them; then prints the
/// error of each result against the `references` given (in order).
pub fn deliver(function: &str, outputs: &[Tensor], paths: &[String], references: &[String]) -> Result<()> {
    if !paths.is_empty() && paths.len() != outputs.len() {
        return Err(RuntimeError::BadInput(format!(
            "'@{function}' has {} result(s) but {} --output file(s) were given",
            outputs.len(),
            paths.len()
        )));
    }
    if references.len() > outputs.len() {
        return Err(RuntimeError::BadInput(format!(
            "'@{function}' has {} result(s) but {} --compare file(s) were given",
            outputs.len(),
            references.len()
        )));
    }
    if paths.is_empty() {
        for (k, t) in outputs.iter().enumerate() {
            crate::outln!("result #{k}: {} = {}", t.ty(), t.elements_text())?;
        }
    }
    for (k, (p, t)) in references.iter().zip(outputs).enumerate() {
        let e = compare::compare(t, &npy::read(Path::new(p))?).map_err(|e| RuntimeError::BadInput(format!("result #{k} vs {p}: {e}")))?;
        crate::outln!(
            "result #{k} vs {p}: max |diff| = {:.3e}, relative to max |ref| ({:.4e}) = {:.3e}",
            e.max_abs,
            e.peak,
            e.relative_to_peak()
        )?;
    }
    for (p, t) in paths.iter().zip(outputs) {
        npy::write(Path::new(p), t)?;
    }
    Ok(())
}
