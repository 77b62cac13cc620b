// Gathers whose indices are sums of broadcast integer vectors, too large to fold into
// constants (the form torch-mlir's bilinear upsampling takes after canonicalize, with the
// parts as arguments here so that a test can also send an index out of range):
//   @rows: indices[r, c] = a[r] + b[c] over 1058 x 62 (whole rows per work item, four columns at a time and two alone);
//   @parts: indices[n, h, c] = a[n, h] + b[c] + z[n] over 2 x 128 x 256, three values per
//   index (a work item takes part of a row).
func.func @rows(%v: tensor<1x4096x1xf32>, %a: tensor<1058x1xi32>, %b: tensor<1x62xi32>) -> tensor<1x65596x1xf32> {
  %s = tosa.add %a, %b : (tensor<1058x1xi32>, tensor<1x62xi32>) -> tensor<1058x62xi32>
  %shape = tosa.const_shape {values = dense<[1, 65596]> : tensor<2xindex>} : () -> !tosa.shape<2>
  %i = tosa.reshape %s, %shape : (tensor<1058x62xi32>, !tosa.shape<2>) -> tensor<1x65596xi32>
  %o = tosa.gather %v, %i : (tensor<1x4096x1xf32>, tensor<1x65596xi32>) -> tensor<1x65596x1xf32>
  return %o : tensor<1x65596x1xf32>
}

func.func @parts(%v: tensor<2x4096x3xf32>, %a: tensor<2x128x1xi32>, %b: tensor<1x1x256xi32>, %z: tensor<2x1x1xi32>) -> tensor<2x32768x3xf32> {
  %ab = tosa.add %a, %b : (tensor<2x128x1xi32>, tensor<1x1x256xi32>) -> tensor<2x128x256xi32>
  %s = tosa.add %ab, %z : (tensor<2x128x256xi32>, tensor<2x1x1xi32>) -> tensor<2x128x256xi32>
  %shape = tosa.const_shape {values = dense<[2, 32768]> : tensor<2xindex>} : () -> !tosa.shape<2>
  %i = tosa.reshape %s, %shape : (tensor<2x128x256xi32>, !tosa.shape<2>) -> tensor<2x32768xi32>
  %o = tosa.gather %v, %i : (tensor<2x4096x3xf32>, tensor<2x32768xi32>) -> tensor<2x32768x3xf32>
  return %o : tensor<2x32768x3xf32>
}
