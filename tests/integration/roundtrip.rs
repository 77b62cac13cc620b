//! import → export → import gives the same graph, and export is a fixed point.

use f16c_dialect::export::{print_module, PrintOptions};
use f16c_dialect::import::{parse_file, parse_module};
use f16c_tests::{model_path, MODELS};

#[test]
fn models_round_trip_through_text() {
    for name in MODELS {
        for spelling in ["tosa", "raw.tosa"] {
            let file = format!("{name}.{spelling}.mlir");
            let (m1, _) = parse_file(&model_path(&file)).unwrap();
            let t1 = print_module(&m1, PrintOptions::default()).unwrap();
            let m2 = parse_module(&t1, "roundtrip.mlir").unwrap_or_else(|d| panic!("{file}: re-import failed: {d}"));
            assert!(m1.same_as(&m2), "{file}: import(export(g)) differs from g");
            let t2 = print_module(&m2, PrintOptions::default()).unwrap();
            assert_eq!(t1, t2, "{file}: export is not a fixed point");
        }
    }
}

#[test]
fn locations_survive_the_round_trip() {
    let src = "func.func @f(%a: tensor<2xf32>) -> tensor<2xf32> {\n  %0 = tosa.abs %a : (tensor<2xf32>) -> tensor<2xf32> loc(\"conv1\"(\"net.mlir\":7:3))\n  return %0 : tensor<2xf32>\n}\n";
    let m = parse_module(src, "x.mlir").unwrap();
    let g = &m.functions[0];
    let abs = g.outputs()[0];
    assert_eq!(g.location(abs).name.as_deref(), Some("conv1"));
    assert_eq!(g.location(abs).line(), Some(7));
    let text = print_module(&m, PrintOptions { debug_info: true, ..Default::default() }).unwrap();
    let m2 = parse_module(&text, "y.mlir").unwrap();
    assert_eq!(m2.functions[0].location(m2.functions[0].outputs()[0]).name.as_deref(), Some("conv1"));
}

#[test]
fn f16_bf16_bool_and_int_constants_round_trip() {
    let src = r#"func.func @f() -> (tensor<3xf16>, tensor<2xbf16>, tensor<4xi1>, tensor<2xi32>, tensor<2xf64>) {
  %0 = "tosa.const"() <{values = dense<[1.0, -2.5, 65504.0]> : tensor<3xf16>}> : () -> tensor<3xf16>
  %1 = "tosa.const"() <{values = dense<[1.0, 3.0e38]> : tensor<2xbf16>}> : () -> tensor<2xbf16>
  %2 = "tosa.const"() <{values = dense<[true, false, true, true]> : tensor<4xi1>}> : () -> tensor<4xi1>
  %3 = arith.constant dense<[7, -9]> : tensor<2xi32>
  %4 = "tosa.const"() <{values = dense<0xFFF0000000000000> : tensor<2xf64>}> : () -> tensor<2xf64>
  return %0, %1, %2, %3, %4 : tensor<3xf16>, tensor<2xbf16>, tensor<4xi1>, tensor<2xi32>, tensor<2xf64>
}
"#;
    let m = parse_module(src, "c.mlir").unwrap();
    let t = print_module(&m, PrintOptions::default()).unwrap();
    let m2 = parse_module(&t, "c2.mlir").unwrap();
    assert!(m.same_as(&m2), "{t}");
    let g = &m.functions[0];
    let f16_vals = match g.op(g.outputs()[0]) {
        f16c_dialect::Op::Const(t) => t.to_f64_vec(),
        other => panic!("{other:?}"),
    };
    assert_eq!(f16_vals, vec![1.0, -2.5, 65504.0]);
    match g.op(g.outputs()[4]) {
        f16c_dialect::Op::Const(t) => assert_eq!(t.to_f64_vec(), vec![f64::NEG_INFINITY; 2]),
        other => panic!("{other:?}"),
    }
}
