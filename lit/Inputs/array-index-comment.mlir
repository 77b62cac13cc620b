func.func @f(%x: tensor<1x4x4x1xf32>) -> tensor<1x2x2x1xf32> {
  %y = tosa.max_pool2d %x {kernel = array<i64: 2, 2>, pad = array<i64: 0, 0, 0, 0>, stride = array // a comment
  < index: 2, 2>} : (tensor<1x4x4x1xf32>) -> tensor<1x2x2x1xf32>
  return %y : tensor<1x2x2x1xf32>
}
