//! Bad input gets located diagnostics, never a panic.

use f16c_dialect::import::parse_module;

fn first_error(src: &str) -> String {
    parse_module(src, "bad.mlir").expect_err("import must fail").0[0].to_string()
}

#[test]
fn truncated_file_is_a_located_parse_error() {
    let full = std::fs::read_to_string(f16c_tests::model_path("cnn_small.tosa.mlir")).unwrap();
    for cut in [10, full.len() / 3, full.len() / 2, full.len() - 5] {
        let e = first_error(&full[..cut]);
        assert!(e.starts_with("bad.mlir:"), "{e}");
        assert!(e.contains(": error: "), "{e}");
    }
}

#[test]
fn unsupported_op_dynamic_shape_and_element_type_are_reported_together() {
    let src = "func.func @f(%a: tensor<1x8x8xf32>, %b: tensor<?xf32>) -> tensor<1x8x5xf32> {\n  %0, %1 = tosa.rfft2d %a : (tensor<1x8x8xf32>) -> (tensor<1x8x5xf32>, tensor<1x8x5xf32>)\n  return %0 : tensor<1x8x5xf32>\n}\n";
    let d = parse_module(src, "bad.mlir").err().unwrap();
    let all = d.to_string();
    assert!(all.contains("bad.mlir:2:12: error: 'tosa.rfft2d' is not supported by f16c (FFTs"), "{all}");
    assert!(all.contains("dynamic shape 'tensor<?xf32>' is not supported"), "{all}");
}

#[test]
fn garbage_bytes_do_not_panic() {
    for src in ["", "\u{0}\u{1}\u{2}", "module {", "}}}}", "func.func @f() { return }", "\"tosa.const\"()"] {
        let _ = parse_module(src, "g.mlir");
    }
}
