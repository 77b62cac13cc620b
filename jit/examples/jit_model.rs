//! JIT-runs a real model from a Rust program: compile for this host with an fp16 policy, call
//! it with f32 tensors, get f32 tensors back, and print them next to PyTorch's f32 output.
//!
//! cargo run --release -p f16c-jit --example jit_model [MODEL.mlir INPUT.npy REFERENCE.npy]

use f16c_jit::{CompileOptions, Model};
use f16c_runtime::{compare, npy};
use std::path::PathBuf;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let data = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/data/models");
    let args: Vec<PathBuf> = std::env::args().skip(1).map(PathBuf::from).collect();
    let (model_path, input_path, reference_path) = match &args[..] {
        [m, i, r] => (m.clone(), i.clone(), r.clone()),
        _ => (data.join("cnn_small.tosa.mlir"), data.join("cnn_small.input.npy"), data.join("cnn_small.out_f32.npy")),
    };

    // Compile once (fp16 where the O1 policy says it is safe), run as often as needed.
    let model = Model::compile_file(&model_path, &CompileOptions::fp16())?;
    let input = npy::read(&input_path)?;
    let outputs = model.run(&[input])?;

    let reference = npy::read(&reference_path)?;
    let (got, want) = (outputs[0].to_f32_vec(), reference.to_f32_vec());
    println!("{}: fp16 JIT vs PyTorch f32", model_path.display());
    for (i, (g, w)) in got.iter().zip(&want).take(8).enumerate() {
        println!("  [{i}] {g:>12.6} {w:>12.6}");
    }
    let e = compare::compare(&outputs[0], &reference)?;
    println!("max |diff| relative to the peak: {:.3e} ({} weight bytes)", e.relative_to_peak(), model.weight_bytes());
    Ok(())
}
