func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  %c = "tosa.const"() <{values = dense_resource<w> : tensor<2xf32>}> : () -> tensor<2xf32>
  %a = tosa.add %x, %c : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  return %a : tensor<2xf32>
}
{-#
  dialect_resources: {
    builtin: {
      w: "0x0000000é000803F00000040"
    }
  }
#-}
