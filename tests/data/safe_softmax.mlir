func.func @forward(%arg0: tensor<1x2x5x7xf32>) -> tensor<1x2x5x7xf32> {
  %z = "tosa.const"() <{values = dense<0.0> : tensor<1x2x5x7xf32>}> : () -> tensor<1x2x5x7xf32>
  %ninf = "tosa.const"() <{values = dense<0xFFF0000000000000> : tensor<1x1x1x1xf64>}> : () -> tensor<1x1x1x1xf64>
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %0 = tosa.reduce_max %arg0 {axis = 3 : i32} : (tensor<1x2x5x7xf32>) -> tensor<1x2x5x1xf32>
  %1 = tosa.sub %arg0, %0 : (tensor<1x2x5x7xf32>, tensor<1x2x5x1xf32>) -> tensor<1x2x5x7xf32>
  %2 = tosa.exp %1 : (tensor<1x2x5x7xf32>) -> tensor<1x2x5x7xf32>
  %3 = tosa.reduce_sum %2 {axis = 3 : i32} : (tensor<1x2x5x7xf32>) -> tensor<1x2x5x1xf32>
  %4 = tosa.reciprocal %3 : (tensor<1x2x5x1xf32>) -> tensor<1x2x5x1xf32>
  %5 = tosa.mul %2, %4, %shift : (tensor<1x2x5x7xf32>, tensor<1x2x5x1xf32>, tensor<1xi8>) -> tensor<1x2x5x7xf32>
  %6 = tosa.cast %arg0 : (tensor<1x2x5x7xf32>) -> tensor<1x2x5x7xf64>
  %7 = tosa.equal %6, %ninf : (tensor<1x2x5x7xf64>, tensor<1x1x1x1xf64>) -> tensor<1x2x5x7xi1>
  %8 = tosa.reduce_all %7 {axis = 3 : i32} : (tensor<1x2x5x7xi1>) -> tensor<1x2x5x1xi1>
  %9 = tosa.select %8, %z, %5 : (tensor<1x2x5x1xi1>, tensor<1x2x5x7xf32>, tensor<1x2x5x7xf32>) -> tensor<1x2x5x7xf32>
  return %9 : tensor<1x2x5x7xf32>
}
