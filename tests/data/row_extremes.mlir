func.func @forward(%x: tensor<6x9xf32>) -> tensor<6x9xf32> {
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %0 = tosa.reduce_max %x {axis = 1 : i32} : (tensor<6x9xf32>) -> tensor<6x1xf32>
  %1 = tosa.mul %x, %0, %shift : (tensor<6x9xf32>, tensor<6x1xf32>, tensor<1xi8>) -> tensor<6x9xf32>
  %2 = tosa.reduce_min %x {axis = 1 : i32} : (tensor<6x9xf32>) -> tensor<6x1xf32>
  %3 = tosa.mul %1, %2, %shift : (tensor<6x9xf32>, tensor<6x1xf32>, tensor<1xi8>) -> tensor<6x9xf32>
  return %3 : tensor<6x9xf32>
}
