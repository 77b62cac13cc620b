//! The graph verifier reports every violation, located, not just the first.

use f16c_dialect::verify::verify;
use f16c_dialect::{BinaryOp, DType, Graph, Location, Op, TensorType, ValueType};

#[test]
fn verifier_reports_all_violations_with_locations() {
    let f32t = |s: &[usize]| ValueType::Tensor(TensorType::new(DType::F32, s.to_vec()));
    let mut g = Graph::new("broken");
    let x = g.add_input(TensorType::new(DType::F32, [2, 3]), Location::file("m.mlir", 1, 1));
    // Wrong: a transpose whose perms are not a permutation.
    let t = g.add_node(Op::Transpose { perms: vec![0, 0] }, f32t(&[2, 2]), &[x], Location::file("m.mlir", 2, 3));
    // Wrong: an add whose operand does not broadcast to the result.
    let a = g.add_node(Op::Binary(BinaryOp::Add), f32t(&[2, 3]), &[t, x], Location::file("m.mlir", 3, 3));
    // Wrong: a reshape that changes the element count.
    let s = g.add_node(Op::ConstShape(vec![7]), ValueType::Shape(1), &[], Location::unknown());
    let r = g.add_node(Op::Reshape, f32t(&[7]), &[a, s], Location::file("m.mlir", 4, 3));
    g.add_output(r);
    let d = verify(&g).expect_err("three violations");
    let text = d.to_string();
    assert!(text.contains("m.mlir:2:3: error: 'tosa.transpose' op perms [0, 0] is not a permutation"), "{text}");
    assert!(text.contains("m.mlir:3:3: error: 'tosa.add' op operand #0 tensor<2x2xf32> does not broadcast"), "{text}");
    assert!(text.contains("m.mlir:4:3: error: 'tosa.reshape' op reshapes tensor<2x3xf32> into tensor<7xf32>"), "{text}");
}

#[test]
fn verifier_checks_operand_kinds_and_constant_types() {
    let mut g = Graph::new("kinds");
    let x = g.add_input(TensorType::new(DType::F32, [4]), Location::unknown());
    // A reshape whose shape operand is a tensor, and a constant whose data disagrees with its type.
    let bad_shape = g.add_node(Op::Reshape, ValueType::Tensor(TensorType::new(DType::F32, [4])), &[x, x], Location::unknown());
    let c = f16c_dialect::Tensor::from_f32(vec![2], vec![1.0, 2.0]).unwrap();
    let k = g.add_node(Op::Const(c), ValueType::Tensor(TensorType::new(DType::F16, [2])), &[], Location::unknown());
    g.add_output(bad_shape);
    g.add_output(k);
    let text = verify(&g).unwrap_err().to_string();
    assert!(text.contains("operand #1 must be a !tosa.shape"), "{text}");
    assert!(text.contains("holds tensor<2xf32> data but its type is tensor<2xf16>"), "{text}");
}

#[test]
fn verifier_checks_control_flow_regions_against_their_op() {
    let t = |d: DType, s: &[usize]| TensorType::new(d, s.to_vec());
    let loc = || Location::file("cf.mlir", 5, 3);
    // A then region that takes one f32 and yields it; an else region that yields an f16.
    let region = |yield_f16: bool| {
        let mut r = Graph::new("region");
        let a = r.add_input(t(DType::F32, &[2]), Location::unknown());
        let out = if yield_f16 { r.add_node(Op::Cast, ValueType::Tensor(t(DType::F16, &[2])), &[a], Location::unknown()) } else { a };
        r.add_output(out);
        Box::new(f16c_dialect::Region { graph: r, args: 1 })
    };
    let mut g = Graph::new("cf");
    let c = g.add_input(t(DType::F32, &[]), Location::unknown());
    let x = g.add_input(t(DType::F32, &[2]), Location::unknown());
    let op = Op::CondIf { then: region(false), otherwise: region(true) };
    let cf = g.add_node(op, ValueType::Results(vec![t(DType::F32, &[2])]), &[c, x], loc());
    let r = g.add_node(Op::Result(0), ValueType::Tensor(t(DType::F32, &[2])), &[cf], loc());
    // Using the op's results directly, not through f16c.result, is wrong too.
    let bad = g.add_node(Op::Binary(BinaryOp::Add), ValueType::Tensor(t(DType::F32, &[2])), &[cf, r], loc());
    g.add_output(r);
    g.add_output(bad);
    let text = verify(&g).unwrap_err().to_string();
    assert!(text.contains("cf.mlir:5:3: error: 'tosa.cond_if' op condition must be one i1, not tensor<f32>"), "{text}");
    assert!(text.contains("region #1 yields (tensor<2xf16>), but the op produces (tensor<2xf32>)"), "{text}");
    assert!(text.contains("'tosa.add' op operand #0: only f16c.result takes the results of a control-flow op"), "{text}");
}
