//! `canonicalize` keeps results bit-identical while shrinking the graph.

use f16c_compiler::pass::{registry, PassManager};
use f16c_dialect::import::parse_file;
use f16c_dialect::Op;
use f16c_dialect::reference;
use f16c_runtime::npy;
use f16c_tests::{model_path, MODELS};

#[test]
fn canonicalize_preserves_model_outputs_bit_for_bit() {
    // All but the rewrite of powers by 2 and 3 into multiplies (its own test, below).
    for name in MODELS {
        let (before, _) = parse_file(&model_path(&format!("{name}.tosa.mlir"))).unwrap();
        let mut after = before.clone();
        let mut pm = PassManager::new();
        pm.add(registry::create("canonicalize", "squares-and-cubes=false").unwrap());
        pm.run(&mut after, &mut std::io::sink()).unwrap();
        let input = npy::read(&model_path(&format!("{name}.input.npy"))).unwrap();
        let a = reference::run(&before.functions[0], std::slice::from_ref(&input)).unwrap();
        let b = reference::run(&after.functions[0], std::slice::from_ref(&input)).unwrap();
        assert_eq!(a[0].data().to_le_bytes(), b[0].data().to_le_bytes(), "{name}: canonicalize changed the result");
        assert!(after.functions[0].len() <= before.functions[0].len(), "{name}: canonicalize grew the graph");
    }
}

#[test]
fn canonicalize_folds_the_constant_pow_in_gelu() {
    let (mut m, _) = parse_file(&model_path("mlp_small.tosa.mlir")).unwrap();
    let count = |m: &f16c_dialect::Module| {
        let g = &m.functions[0];
        g.node_ids().filter(|&n| matches!(g.op(n), Op::Binary(f16c_dialect::BinaryOp::Pow))).count()
    };
    assert_eq!(count(&m), 2);
    let mut pm = PassManager::new();
    let mut kept = m.clone();
    pm.add(registry::create("canonicalize", "").unwrap());
    pm.run(&mut m, &mut std::io::sink()).unwrap();
    assert_eq!(count(&m), 0, "pow(2/pi, 0.5) has constant operands and must fold; pow(x, 3) becomes multiplies");
    let mut pm = PassManager::new();
    pm.add(registry::create("canonicalize", "squares-and-cubes=false").unwrap());
    pm.run(&mut kept, &mut std::io::sink()).unwrap();
    assert_eq!(count(&kept), 1, "without squares-and-cubes, pow(x, 3) stays");
    // x·x·x is what PyTorch computes for x³: the model's output stays as close to PyTorch's
    // f32 output as the pow did (both within a few ulp of the peak).
    let input = npy::read(&model_path("mlp_small.input.npy")).unwrap();
    let torch = npy::read(&model_path("mlp_small.out_f32.npy")).unwrap().to_f64_vec();
    let peak = torch.iter().fold(0f64, |p, x| p.max(x.abs()));
    for (what, module) in [("multiplies", &m), ("pow", &kept)] {
        let out = reference::run(&module.functions[0], std::slice::from_ref(&input)).unwrap()[0].to_f64_vec();
        let err = out.iter().zip(&torch).fold(0f64, |e, (a, b)| e.max((a - b).abs())) / peak;
        assert!(err < 1e-6, "{what}: {err:e} of the peak from PyTorch");
    }
}

#[test]
fn unknown_pass_options_are_rejected() {
    let e = registry::create("canonicalize", "no-such-option=1").err().unwrap().to_string();
    assert!(e.contains("has no option 'no-such-option'"), "{e}");
    let e = registry::create("canonicalize", "max-fold-elements=lots").err().unwrap().to_string();
    assert!(e.contains("not a non-negative integer"), "{e}");
}

#[test]
fn torch_layout_transposes_cancel_around_convolutions() {
    // depthwise_block (a torch-mlir export of an inverted residual block) transposes NCHW↔NHWC
    // around each of its three convolutions; sunk through the batch norms and ReLU6s, the pairs
    // between convolutions cancel, leaving the one after the input and the one before the
    // residual add with the (NCHW) input. cnn_small keeps its input's: the one before its
    // global average pool moves below the pool's sums, where it moves axes of size 1 only and
    // becomes a reshape. Results stay bit-identical (the test above).
    let transposes = |m: &f16c_dialect::Module| {
        let g = &m.functions[0];
        g.node_ids().filter(|&n| matches!(g.op(n), Op::Transpose { .. })).count()
    };
    for (name, before, after) in [("depthwise_block", 6, 2), ("cnn_small", 4, 1)] {
        let (mut m, _) = parse_file(&model_path(&format!("{name}.tosa.mlir"))).unwrap();
        assert_eq!(transposes(&m), before, "{name}");
        let mut pm = PassManager::new();
        pm.add(registry::create("canonicalize", "").unwrap());
        pm.run(&mut m, &mut std::io::sink()).unwrap();
        assert_eq!(transposes(&m), after, "{name}");
    }
}

/// Runs `passes` (name, options) on a copy of `m`.
/// Asserts that the reference gives `after` (a rewrite of `before`) the same result bits.
fn same_reference_bits(before: &f16c_dialect::Graph, after: &f16c_dialect::Graph, inputs: &[f16c_dialect::Tensor]) {
    let a = reference::run(before, inputs).unwrap();
    let b = reference::run(after, inputs).unwrap();
    assert_eq!(a[0].data().to_le_bytes(), b[0].data().to_le_bytes(), "the rewrite changed the result");
}

fn after(m: &f16c_dialect::Module, passes: &[&str]) -> f16c_dialect::Module {
    let mut m = m.clone();
    let mut pm = PassManager::new();
    for p in passes {
        pm.add(registry::create(p, "").unwrap());
    }
    pm.run(&mut m, &mut std::io::sink()).unwrap();
    m
}

#[test]
fn folding_batch_norm_removes_it_and_changes_results_by_rounding_only() {
    // The two convolutional exports write a batch norm (sub, mul, mul, add) after a convolution
    // (depthwise_block after each of its three, cnn_small after one); folded, those ops are
    // gone, and the reference's results stay within f32 rounding of the unfolded graph's. The
    // others have nothing to fold and keep their results bit for bit.
    use f16c_dialect::BinaryOp::{Add, Mul, Sub};
    let affine = |m: &f16c_dialect::Module| {
        let g = &m.functions[0];
        g.node_ids().filter(|&n| matches!(g.op(n), Op::Binary(Add | Sub | Mul))).count()
    };
    for name in MODELS {
        let (parsed, _) = parse_file(&model_path(&format!("{name}.tosa.mlir"))).unwrap();
        let before = after(&parsed, &["canonicalize"]);
        let folded = after(&before, &["fold-batch-norm"]);
        let input = npy::read(&model_path(&format!("{name}.input.npy"))).unwrap();
        let a = reference::run(&before.functions[0], std::slice::from_ref(&input)).unwrap().remove(0).to_f64_vec();
        let b = reference::run(&folded.functions[0], std::slice::from_ref(&input)).unwrap().remove(0).to_f64_vec();
        let scale = a.iter().fold(0f64, |m, v| m.max(v.abs()));
        let worst = a.iter().zip(&b).fold(0f64, |m, (x, y)| m.max((x - y).abs()));
        let batch_norms = match *name {
            "depthwise_block" => 3,
            "cnn_small" => 1,
            _ => 0,
        };
        match batch_norms {
            0 => assert!(folded.same_as(&before) && worst == 0.0, "{name}: nothing to fold, yet the graph changed"),
            n => {
                assert_eq!(affine(&before) - affine(&folded), 4 * n, "{name}: not every batch norm op was folded");
                assert!(worst <= 1e-5 * scale, "{name}: folding moved a result by {worst} (largest |result| {scale})");
            }
        }
    }
}

/// PyTorch's safe softmax (`reduce_all(equal(cast<f64>(x), -inf))` picks all-masked rows)
/// becomes a test of the softmax's own maximum, with the same bits on rows that are all -inf,
/// partly -inf, hold a NaN or are all equal, and the whole softmax becomes one row kernel.
#[test]
fn safe_softmax_tests_the_row_maximum_with_the_same_bits() {
    let (before, _) = parse_file(&std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("data/safe_softmax.mlir")).unwrap();
    let after = after(&before, &["canonicalize"]);
    let g = &after.functions[0];
    assert!(!g.node_ids().any(|n| matches!(g.op(n), Op::Reduce { kind: f16c_dialect::ReduceKind::All, .. } | Op::Cast)), "the f64 test is gone");
    let input = f16c_tests::cases::safe_softmax_case().inputs.remove(0);
    same_reference_bits(&before.functions[0], g, std::slice::from_ref(&input));
    let program = f16c_compiler::lower::lower(g).unwrap();
    assert_eq!(program.kernels.len(), 1, "one row kernel:\n{program}");
}

/// A slice keeping whole rows of a matmul (GPT-2's last position of its language-model head)
/// becomes a matmul of those rows: the same bits on the reference, one row computed.
#[test]
fn the_rows_a_slice_keeps_are_the_only_rows_a_matmul_computes() {
    let text = r#"
func.func @head(%x: tensor<1x16x32xf32>, %wt: tensor<1x32x24xf32>) -> tensor<1x24xf32> {
  %z = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %at = tosa.const_shape {values = dense<[0, 15, 0]> : tensor<3xindex>} : () -> !tosa.shape<3>
  %n = tosa.const_shape {values = dense<[1, 1, 24]> : tensor<3xindex>} : () -> !tosa.shape<3>
  %flat = tosa.const_shape {values = dense<[1, 24]> : tensor<2xindex>} : () -> !tosa.shape<2>
  %0 = tosa.matmul %x, %wt, %z, %z : (tensor<1x16x32xf32>, tensor<1x32x24xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x16x24xf32>
  %1 = tosa.slice %0, %at, %n : (tensor<1x16x24xf32>, !tosa.shape<3>, !tosa.shape<3>) -> tensor<1x1x24xf32>
  %2 = tosa.reshape %1, %flat : (tensor<1x1x24xf32>, !tosa.shape<2>) -> tensor<1x24xf32>
  return %2 : tensor<1x24xf32>
}"#;
    let before = f16c_dialect::import::parse_module(text, "head.mlir").unwrap();
    let canonical = after(&before, &["canonicalize"]);
    let g = &canonical.functions[0];
    let rows: Vec<Vec<usize>> = g.node_ids().filter(|&n| matches!(g.op(n), Op::MatMul)).map(|n| g.tensor_ty(n).unwrap().shape.clone()).collect();
    assert_eq!(rows, vec![vec![1, 1, 24]], "one row of the matmul is computed");
    let values = |n: usize, seed: usize| (0..n).map(|i| ((i * 37 + seed) % 101) as f32 / 7.0 - 7.0).collect::<Vec<f32>>();
    let inputs = [f16c_dialect::Tensor::from_f32(vec![1, 16, 32], values(16 * 32, 0)).unwrap(), f16c_dialect::Tensor::from_f32(vec![1, 32, 24], values(32 * 24, 11)).unwrap()];
    same_reference_bits(&before.functions[0], g, &inputs);
}

/// Squeeze-and-excite as torch-mlir writes it (EfficientNet's 16 blocks): the NCHW transpose
/// moves below the pooling's sums and the scale's multiply and cancels with the one back; the
/// sums add the same values in the same order, so the reference's bits are the same.
#[test]
fn squeeze_and_excite_keeps_no_transpose_and_the_same_bits() {
    let text = r#"
func.func @se(%x: tensor<1x5x6x8xf32>) -> tensor<1x5x6x8xf32> {
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %t = tosa.transpose %x {perms = array<i32: 0, 3, 1, 2>} : (tensor<1x5x6x8xf32>) -> tensor<1x8x5x6xf32>
  %r = tosa.reduce_sum %t {axis = 3 : i32} : (tensor<1x8x5x6xf32>) -> tensor<1x8x5x1xf32>
  %r2 = tosa.reduce_sum %r {axis = 2 : i32} : (tensor<1x8x5x1xf32>) -> tensor<1x8x1x1xf32>
  %s = tosa.sigmoid %r2 : (tensor<1x8x1x1xf32>) -> tensor<1x8x1x1xf32>
  %m = tosa.mul %t, %s, %shift : (tensor<1x8x5x6xf32>, tensor<1x8x1x1xf32>, tensor<1xi8>) -> tensor<1x8x5x6xf32>
  %back = tosa.transpose %m {perms = array<i32: 0, 2, 3, 1>} : (tensor<1x8x5x6xf32>) -> tensor<1x5x6x8xf32>
  return %back : tensor<1x5x6x8xf32>
}"#;
    let before = f16c_dialect::import::parse_module(text, "se.mlir").unwrap();
    let canonical = after(&before, &["canonicalize"]);
    let g = &canonical.functions[0];
    assert!(!g.node_ids().any(|n| matches!(g.op(n), Op::Transpose { .. })), "no transpose is left");
    // Values of mixed magnitude and sign, so that a different summation order would show.
    let values: Vec<f32> = (0..240).map(|i| ((i * 7919 % 241) as f32 - 120.0) * if i % 3 == 0 { 1e3 } else { 1e-2 }).collect();
    let input = f16c_dialect::Tensor::from_f32(vec![1, 5, 6, 8], values).unwrap();
    same_reference_bits(&before.functions[0], g, std::slice::from_ref(&input));
}

/// A U-Net decoder level as torch-mlir exports it (`tests/data/blocks/unet_level.mlir`: NCHW
/// transposes around every convolution, the upsampled value gathered one value per index from
/// an NCHW copy, concatenated with the skip in NCHW): canonicalize gathers whole pixels from the
/// NHWC value and sinks the transposes through the interpolation and the concatenation, so the
/// only transposes left are the input's and the output's; the reference's bits are the same.
#[test]
fn a_unet_level_upsamples_and_concatenates_channels_last_with_the_same_bits() {
    let dir = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("data/blocks");
    let (before, _) = parse_file(&dir.join("unet_level.mlir")).unwrap();
    let canonical = after(&before, &["canonicalize"]);
    let g = &canonical.functions[0];
    let transposes = g.node_ids().filter(|&n| matches!(g.op(n), Op::Transpose { .. })).count();
    assert_eq!(transposes, 2, "only the input's and the output's transposes are left");
    let gathered: Vec<Vec<usize>> = g.node_ids().filter(|&n| matches!(g.op(n), Op::Gather)).map(|n| g.tensor_ty(g.operands(n)[0]).unwrap().shape.clone()).collect();
    assert_eq!(gathered, vec![vec![1, 30, 6]; 4], "four gathers of whole pixels (six channels) from the 5×6 NHWC value");
    let concat_axes: Vec<usize> = g.node_ids().filter_map(|n| match g.op(n) { Op::Concat { axis } => Some(*axis), _ => None }).collect();
    assert_eq!(concat_axes, vec![3], "the skip and the upsampled value concatenated along NHWC's channels");
    let input = npy::read(&dir.join("unet_level.in0.npy")).unwrap();
    same_reference_bits(&before.functions[0], g, std::slice::from_ref(&input));
}

/// A conv1d's activation as torch-mlir writes it (Whisper's stem): the conv2d's NHWC output
/// transposed to NCHW, its unit height dropped by a reshape, a GELU, the height added back
/// and the transpose to NHWC for the next convolution. The reshapes of transposes become
/// transposes of reshapes, which sink through the GELU and cancel: no transpose is left, and
/// the reference's bits are the same.
#[test]
fn a_conv1d_activation_keeps_no_transpose_and_the_same_bits() {
    let text = r#"
func.func @stem(%x: tensor<1x1x6x4xf32>) -> tensor<1x1x6x4xf32> {
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %h = "tosa.const"() <{values = dense<0.70710677> : tensor<1x1x1xf32>}> : () -> tensor<1x1x1xf32>
  %one = "tosa.const"() <{values = dense<1.0> : tensor<1x1x1xf32>}> : () -> tensor<1x1x1xf32>
  %s3 = tosa.const_shape {values = dense<[1, 4, 6]> : tensor<3xindex>} : () -> !tosa.shape<3>
  %s4 = tosa.const_shape {values = dense<[1, 4, 1, 6]> : tensor<4xindex>} : () -> !tosa.shape<4>
  %t = tosa.transpose %x {perms = array<i32: 0, 3, 1, 2>} : (tensor<1x1x6x4xf32>) -> tensor<1x4x1x6xf32>
  %r = tosa.reshape %t, %s3 : (tensor<1x4x1x6xf32>, !tosa.shape<3>) -> tensor<1x4x6xf32>
  %m = tosa.mul %r, %h, %shift : (tensor<1x4x6xf32>, tensor<1x1x1xf32>, tensor<1xi8>) -> tensor<1x4x6xf32>
  %e = tosa.erf %m : (tensor<1x4x6xf32>) -> tensor<1x4x6xf32>
  %a = tosa.add %e, %one : (tensor<1x4x6xf32>, tensor<1x1x1xf32>) -> tensor<1x4x6xf32>
  %g = tosa.mul %r, %a, %shift : (tensor<1x4x6xf32>, tensor<1x4x6xf32>, tensor<1xi8>) -> tensor<1x4x6xf32>
  %b = tosa.reshape %g, %s4 : (tensor<1x4x6xf32>, !tosa.shape<4>) -> tensor<1x4x1x6xf32>
  %back = tosa.transpose %b {perms = array<i32: 0, 2, 3, 1>} : (tensor<1x4x1x6xf32>) -> tensor<1x1x6x4xf32>
  return %back : tensor<1x1x6x4xf32>
}"#;
    let before = f16c_dialect::import::parse_module(text, "stem.mlir").unwrap();
    let canonical = after(&before, &["canonicalize"]);
    let g = &canonical.functions[0];
    assert!(!g.node_ids().any(|n| matches!(g.op(n), Op::Transpose { .. })), "no transpose is left");
    let values: Vec<f32> = (0..24).map(|i| ((i * 7919 % 29) as f32 - 14.0) / 5.0).collect();
    let input = f16c_dialect::Tensor::from_f32(vec![1, 1, 6, 4], values).unwrap();
    same_reference_bits(&before.functions[0], g, std::slice::from_ref(&input));
}

/// torch-mlir's bilinear upsampling (`tests/data/upsample_bilinear.mlir`, exactly as it
/// exports `F.interpolate(x, scale_factor=2, mode="bilinear")`) computes each gather's indices
/// as four coordinate vectors tiled to the output's size, concatenated, multiplied by the
/// strides and summed. Canonicalize (folding off, as for a model too big to fold) makes each
/// index a sum of broadcast products: no concat, no reduction, and the reference computes the
/// same bits, which are PyTorch's within a few ulps.
#[test]
fn upsampling_indices_are_sums_of_broadcasts_with_the_same_bits() {
    let dir = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("data");
    let (before, _) = parse_file(&dir.join("upsample_bilinear.mlir")).unwrap();
    let count = |m: &f16c_dialect::Module, f: fn(&Op) -> bool| {
        let g = &m.functions[0];
        g.node_ids().filter(|&n| f(g.op(n))).count()
    };
    let is_concat = |op: &Op| matches!(op, Op::Concat { .. });
    let is_sum = |op: &Op| matches!(op, Op::Reduce { kind: f16c_dialect::ReduceKind::Sum, .. });
    assert_eq!((count(&before, is_concat), count(&before, is_sum)), (4, 4), "the export's four gathers, each with its concat and sum");
    let mut after = before.clone();
    let mut pm = PassManager::new();
    pm.add(registry::create("canonicalize", "fold-constants=false").unwrap());
    pm.run(&mut after, &mut std::io::sink()).unwrap();
    assert_eq!((count(&after, is_concat), count(&after, is_sum)), (0, 0), "every index became a sum of products");
    assert_eq!(count(&after, |op| matches!(op, Op::Gather)), 4);
    let input = npy::read(&dir.join("upsample_bilinear.input.npy")).unwrap();
    let a = reference::run(&before.functions[0], std::slice::from_ref(&input)).unwrap();
    let b = reference::run(&after.functions[0], std::slice::from_ref(&input)).unwrap();
    assert_eq!(a[0].data().to_le_bytes(), b[0].data().to_le_bytes(), "the rewrite changed the result");
    let torch = npy::read(&dir.join("upsample_bilinear.out_f32.npy")).unwrap().to_f64_vec();
    let err = b[0].to_f64_vec().iter().zip(&torch).fold(0f64, |e, (x, y)| e.max((x - y).abs()));
    assert!(err < 1e-6, "{err:e} from PyTorch");
}
