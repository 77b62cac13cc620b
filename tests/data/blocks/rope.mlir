module {
  func.func @main(%arg0: tensor<1x4x16x32xf32>) -> tensor<1x4x16x32xf32> {
    %0 = "tosa.const"() <{values = dense<[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15]> : tensor<16xi64>}> : () -> tensor<16xi64>
    %1 = tosa.const_shape  {values = dense<[16, 1]> : tensor<2xindex>} : () -> !tosa.shape<2>
    %2 = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
    %3 = tosa.const_shape  {values = dense<[1, 4, 16, 16]> : tensor<4xindex>} : () -> !tosa.shape<4>
    %4 = tosa.const_shape  {values = dense<[0, 0, 0, 16]> : tensor<4xindex>} : () -> !tosa.shape<4>
    %5 = "tosa.const"() <{values = dense<0.000000e+00> : tensor<1xf32>}> : () -> tensor<1xf32>
    %6 = tosa.const_shape  {values = dense<0> : tensor<4xindex>} : () -> !tosa.shape<4>
    %7 = tosa.const_shape  {values = dense<[1, 1, 16, 32]> : tensor<4xindex>} : () -> !tosa.shape<4>
    %8 = "tosa.const"() <{values = dense_resource<torch_tensor_16_torch.float32> : tensor<1x16xf32>}> : () -> tensor<1x16xf32>
    %9 = tosa.cast %0 : (tensor<16xi64>) -> tensor<16xf32>
    %10 = tosa.reshape %9, %1 : (tensor<16xf32>, !tosa.shape<2>) -> tensor<16x1xf32>
    %11 = tosa.mul %10, %8, %2 : (tensor<16x1xf32>, tensor<1x16xf32>, tensor<1xi8>) -> tensor<16x16xf32>
    %12 = tosa.concat %11, %11 {axis = 1 : i32} : (tensor<16x16xf32>, tensor<16x16xf32>) -> tensor<16x32xf32>
    %13 = tosa.slice %arg0, %4, %3 : (tensor<1x4x16x32xf32>, !tosa.shape<4>, !tosa.shape<4>) -> tensor<1x4x16x16xf32>
    %14 = tosa.negate %13, %5, %5 : (tensor<1x4x16x16xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x4x16x16xf32>
    %15 = tosa.slice %arg0, %6, %3 : (tensor<1x4x16x32xf32>, !tosa.shape<4>, !tosa.shape<4>) -> tensor<1x4x16x16xf32>
    %16 = tosa.concat %14, %15 {axis = 3 : i32} : (tensor<1x4x16x16xf32>, tensor<1x4x16x16xf32>) -> tensor<1x4x16x32xf32>
    %17 = tosa.cos %12 : (tensor<16x32xf32>) -> tensor<16x32xf32>
    %18 = tosa.reshape %17, %7 : (tensor<16x32xf32>, !tosa.shape<4>) -> tensor<1x1x16x32xf32>
    %19 = tosa.mul %arg0, %18, %2 : (tensor<1x4x16x32xf32>, tensor<1x1x16x32xf32>, tensor<1xi8>) -> tensor<1x4x16x32xf32>
    %20 = tosa.sin %12 : (tensor<16x32xf32>) -> tensor<16x32xf32>
    %21 = tosa.reshape %20, %7 : (tensor<16x32xf32>, !tosa.shape<4>) -> tensor<1x1x16x32xf32>
    %22 = tosa.mul %16, %21, %2 : (tensor<1x4x16x32xf32>, tensor<1x1x16x32xf32>, tensor<1xi8>) -> tensor<1x4x16x32xf32>
    %23 = tosa.add %19, %22 : (tensor<1x4x16x32xf32>, tensor<1x4x16x32xf32>) -> tensor<1x4x16x32xf32>
    return %23 : tensor<1x4x16x32xf32>
  }
}

{-#
  dialect_resources: {
    builtin: {
      torch_tensor_16_torch.float32: "0x040000000000803F9AF50F3F9BE8A13E8718363ECDCCCC3DC255663DE386013D39AD913C0AD7233C9C44B83B383E4F3B2815E93A6F12833A166A133A60CBA53953773A39"
    }
  }
#-}
