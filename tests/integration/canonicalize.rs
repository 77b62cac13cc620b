//! `canonicalize` keeps results bit-identical while shrinking the graph.

use f16c_compiler::pass::{registry, PassManager};
use f16c_dialect::import::parse_file;
use f16c_dialect::Op;
use f16c_dialect::reference;
use f16c_runtime::npy;
use f16c_tests::{model_path, MODELS};

#[test]
fn canonicalize_preserves_model_outputs_bit_for_bit() {
    for name in MODELS {
        let (before, _) = parse_file(&model_path(&format!("{name}.tosa.mlir"))).unwrap();
        let mut after = before.clone();
        let mut pm = PassManager::new();
        pm.add(registry::create("canonicalize", "").unwrap());
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
    pm.add(registry::create("canonicalize", "").unwrap());
    pm.run(&mut m, &mut std::io::sink()).unwrap();
    assert_eq!(count(&m), 1, "pow(2/pi, 0.5) has constant operands and must fold; pow(x, 3) must stay");
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
    // residual add with the (NCHW) input. Results stay bit-identical (the test above).
    let transposes = |m: &f16c_dialect::Module| {
        let g = &m.functions[0];
        g.node_ids().filter(|&n| matches!(g.op(n), Op::Transpose { .. })).count()
    };
    for (name, before, after) in [("depthwise_block", 6, 2), ("cnn_small", 4, 2)] {
        let (mut m, _) = parse_file(&model_path(&format!("{name}.tosa.mlir"))).unwrap();
        assert_eq!(transposes(&m), before, "{name}");
        let mut pm = PassManager::new();
        pm.add(registry::create("canonicalize", "").unwrap());
        pm.run(&mut m, &mut std::io::sink()).unwrap();
        assert_eq!(transposes(&m), after, "{name}");
    }
}
