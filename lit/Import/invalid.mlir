// Every import error is a located diagnostic (checked with -verify-diagnostics).
// RUN: %f16c opt %s -split-input-file -verify-diagnostics

func.func @unsupported_op(%a: tensor<1x8x8xf32>) -> tensor<1x8x5xf32> {
  // expected-error@+1 {{'tosa.rfft2d' is not supported by f16c (FFTs are outside f16c's scope}}
  %0, %1 = tosa.rfft2d %a : (tensor<1x8x8xf32>) -> (tensor<1x8x5xf32>, tensor<1x8x5xf32>)
  return %0 : tensor<1x8x5xf32>
}

// -----

// expected-error@+1 {{'tosa.variable' is not supported by f16c (variables are state kept between calls}}
tosa.variable @v = dense<0.0> : tensor<4xf32>
func.func @stateful(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error@+1 {{'tosa.variable_write' is not supported by f16c (variables are state kept between calls}}
  tosa.variable_write @v, %a : tensor<4xf32>
  return %a : tensor<4xf32>
}

// -----

// expected-error@+1 {{argument #0 of '@dynamic_argument': dynamic shape 'tensor<?x4xf32>' is not supported by f16c}}
func.func @dynamic_argument(%a: tensor<?x4xf32>) -> tensor<?x4xf32> {
  return %a : tensor<?x4xf32>
}

// -----

func.func @dynamic_result(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error@+1 {{'tosa.abs' result: dynamic shape 'tensor<*xf32>' is not supported}}
  %0 = tosa.abs %a : (tensor<4xf32>) -> tensor<*xf32>
  return %a : tensor<4xf32>
}

// -----

// expected-error@+1 {{'tosa.variable' is not supported by f16c}}
tosa.variable @w = dense<0> : tensor<4xi4>
// expected-error@+1 {{element type 'i4' in 'tensor<4xi4>' is not supported by f16c}}
func.func @element_type(%a: tensor<4xi4>) -> tensor<4xi4> {
  // An unsupported op next to an unsupported type is reported too, in the same run.
  // expected-error@+2 {{'tosa.variable_read' result: element type 'i4' in 'tensor<4xi4>' is not supported by f16c}}
  // expected-error@+1 {{'tosa.variable_read' is not supported by f16c}}
  %b = tosa.variable_read @w : tensor<4xi4>
  return %b : tensor<4xi4>
}

// -----

func.func @multi_result(%a: tensor<1x4x4xf32>) -> tensor<1x4x3xf32> {
  // expected-error@+1 {{'tosa.rfft2d' is not supported by f16c}}
  %0, %1 = tosa.rfft2d %a : (tensor<1x4x4xf32>) -> (tensor<1x4x3xf32>, tensor<1x4x3xf32>)
  return %0 : tensor<1x4x3xf32>
}

// -----

func.func @nan_ignore(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error@+1 {{'tosa.maximum' with nan_mode IGNORE is not supported by f16c}}
  %0 = tosa.maximum %a, %a {nan_mode = IGNORE} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// expected-error@+1 {{function '@declaration' has no body}}
func.func private @declaration(%a: tensor<4xf32>) -> tensor<4xf32>

// -----

func.func @missing_resource() -> tensor<2xf32> {
  // expected-error@+1 {{resource 'nowhere' is not in the file's dialect_resources section}}
  %0 = "tosa.const"() <{values = dense_resource<nowhere> : tensor<2xf32>}> : () -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

// MLIR's own parser and verifier errors come through with their locations.
func.func @parse_error(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error@+1 {{custom op 'tosa.bogus' is unknown}}
  %0 = tosa.bogus %a : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @verifier_error(%a: tensor<4xf32>, %b: tensor<3xf32>) -> tensor<4xf32> {
  // expected-error@+1 {{'tosa.add' op}}
  %0 = tosa.add %a, %b : (tensor<4xf32>, tensor<3xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// expected-error@+1 {{argument #0 of '@shape_argument': function arguments must be ranked tensors, not '!tosa.shape<2>'}}
func.func @shape_argument(%s: !tosa.shape<2>) -> tensor<2xf32> {
  %0 = "tosa.const"() <{values = dense<1.0> : tensor<2xf32>}> : () -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @calls(%a: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{'func.call' is not supported by f16c}}
  %0 = func.call @calls(%a) : (tensor<2xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @bitwise_on_float(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error@+1 {{'tosa.bitwise_not' op needs an integer type, has f32}}
  %0 = tosa.bitwise_not %a : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @custom(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error@+1 {{'tosa.custom' is not supported by f16c (a custom op names an implementation-defined operator}}
  %0 = tosa.custom %a {domain_name = "vendor", implementation_attrs = "", operator_name = "fancy"} : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @cond_if_region_type(%c: tensor<i1>, %a: tensor<4xf32>) -> tensor<4xf32> {
  // An error inside a region is located at the op inside.
  %0 = tosa.cond_if %c (%x = %a) : tensor<i1> (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%x: tensor<4xf32>):
    // expected-error@+1 {{'tosa.cast' result: element type 'i4' in 'tensor<4xi4>' is not supported by f16c}}
    %1 = tosa.cast %x : (tensor<4xf32>) -> tensor<4xi4>
    %2 = tosa.cast %1 : (tensor<4xi4>) -> tensor<4xf32>
    tosa.yield %2 : tensor<4xf32>
  } else {
  ^bb0(%x: tensor<4xf32>):
    tosa.yield %x : tensor<4xf32>
  }
  return %0 : tensor<4xf32>
}
