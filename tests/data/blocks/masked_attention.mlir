module {
  func.func @main(%arg0: tensor<1x2x8x16xf32>, %arg1: tensor<1x2x8x16xf32>, %arg2: tensor<1x2x8x16xf32>, %arg3: tensor<1x1x8x8xi1>) -> tensor<1x2x8x16xf32> {
    %0 = "tosa.const"() <{values = dense<0.000000e+00> : tensor<1x2x8x8xf32>}> : () -> tensor<1x2x8x8xf32>
    %1 = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
    %2 = tosa.const_shape  {values = dense<[2, 8, 16]> : tensor<3xindex>} : () -> !tosa.shape<3>
    %3 = tosa.const_shape  {values = dense<[2, 16, 8]> : tensor<3xindex>} : () -> !tosa.shape<3>
    %4 = "tosa.const"() <{values = dense<0.000000e+00> : tensor<1xf32>}> : () -> tensor<1xf32>
    %5 = tosa.const_shape  {values = dense<[1, 2, 8, 8]> : tensor<4xindex>} : () -> !tosa.shape<4>
    %6 = tosa.const_shape  {values = dense<[2, 8, 8]> : tensor<3xindex>} : () -> !tosa.shape<3>
    %7 = tosa.const_shape  {values = dense<[1, 2, 8, 16]> : tensor<4xindex>} : () -> !tosa.shape<4>
    %8 = "tosa.const"() <{values = dense<0.000000e+00> : tensor<1x1x1x1xf32>}> : () -> tensor<1x1x1x1xf32>
    %9 = "tosa.const"() <{values = dense<0xFF800000> : tensor<1x1x1x1xf32>}> : () -> tensor<1x1x1x1xf32>
    %10 = "tosa.const"() <{values = dense<5.000000e-01> : tensor<1x1x1x1xf32>}> : () -> tensor<1x1x1x1xf32>
    %11 = "tosa.const"() <{values = dense<0xFFF0000000000000> : tensor<1x1x1x1xf64>}> : () -> tensor<1x1x1x1xf64>
    %12 = tosa.select %arg3, %8, %9 : (tensor<1x1x8x8xi1>, tensor<1x1x1x1xf32>, tensor<1x1x1x1xf32>) -> tensor<1x1x8x8xf32>
    %13 = tosa.mul %arg0, %10, %1 : (tensor<1x2x8x16xf32>, tensor<1x1x1x1xf32>, tensor<1xi8>) -> tensor<1x2x8x16xf32>
    %14 = tosa.transpose %arg1 {perms = array<i32: 0, 1, 3, 2>} : (tensor<1x2x8x16xf32>) -> tensor<1x2x16x8xf32>
    %15 = tosa.mul %14, %10, %1 : (tensor<1x2x16x8xf32>, tensor<1x1x1x1xf32>, tensor<1xi8>) -> tensor<1x2x16x8xf32>
    %16 = tosa.reshape %13, %2 : (tensor<1x2x8x16xf32>, !tosa.shape<3>) -> tensor<2x8x16xf32>
    %17 = tosa.reshape %15, %3 : (tensor<1x2x16x8xf32>, !tosa.shape<3>) -> tensor<2x16x8xf32>
    %18 = tosa.matmul %16, %17, %4, %4 : (tensor<2x8x16xf32>, tensor<2x16x8xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<2x8x8xf32>
    %19 = tosa.reshape %18, %5 : (tensor<2x8x8xf32>, !tosa.shape<4>) -> tensor<1x2x8x8xf32>
    %20 = tosa.add %19, %12 : (tensor<1x2x8x8xf32>, tensor<1x1x8x8xf32>) -> tensor<1x2x8x8xf32>
    %21 = tosa.reduce_max %20 {axis = 3 : i32} : (tensor<1x2x8x8xf32>) -> tensor<1x2x8x1xf32>
    %22 = tosa.sub %20, %21 : (tensor<1x2x8x8xf32>, tensor<1x2x8x1xf32>) -> tensor<1x2x8x8xf32>
    %23 = tosa.exp %22 : (tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
    %24 = tosa.reduce_sum %23 {axis = 3 : i32} : (tensor<1x2x8x8xf32>) -> tensor<1x2x8x1xf32>
    %25 = tosa.reciprocal %24 : (tensor<1x2x8x1xf32>) -> tensor<1x2x8x1xf32>
    %26 = tosa.mul %23, %25, %1 : (tensor<1x2x8x8xf32>, tensor<1x2x8x1xf32>, tensor<1xi8>) -> tensor<1x2x8x8xf32>
    %27 = tosa.cast %20 : (tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf64>
    %28 = tosa.equal %27, %11 : (tensor<1x2x8x8xf64>, tensor<1x1x1x1xf64>) -> tensor<1x2x8x8xi1>
    %29 = tosa.reduce_all %28 {axis = 3 : i32} : (tensor<1x2x8x8xi1>) -> tensor<1x2x8x1xi1>
    %30 = tosa.select %29, %0, %26 : (tensor<1x2x8x1xi1>, tensor<1x2x8x8xf32>, tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
    %31 = tosa.reshape %30, %6 : (tensor<1x2x8x8xf32>, !tosa.shape<3>) -> tensor<2x8x8xf32>
    %32 = tosa.reshape %arg2, %2 : (tensor<1x2x8x16xf32>, !tosa.shape<3>) -> tensor<2x8x16xf32>
    %33 = tosa.matmul %31, %32, %4, %4 : (tensor<2x8x8xf32>, tensor<2x8x16xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<2x8x16xf32>
    %34 = tosa.reshape %33, %7 : (tensor<2x8x16xf32>, !tosa.shape<4>) -> tensor<1x2x8x16xf32>
    return %34 : tensor<1x2x8x16xf32>
  }
}
