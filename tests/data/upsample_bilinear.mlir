module {
  func.func @forward(%arg0: tensor<1x3x5x4xf32>) -> tensor<1x3x10x8xf32> {
    %0 = "tosa.const"() <{values = dense<[[60, 20, 4, 1]]> : tensor<1x4xi32>}> : () -> tensor<1x4xi32>
    %cst = arith.constant dense<[[[0]], [[1]], [[2]]]> : tensor<3x1x1xi64>
    %1 = "tosa.const"() <{values = dense<[0, 1, 2, 3, 4, 5, 6, 7, 8, 9]> : tensor<10xi64>}> : () -> tensor<10xi64>
    %2 = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
    %3 = tosa.const_shape  {values = dense<[10, 1]> : tensor<2xindex>} : () -> !tosa.shape<2>
    %4 = "tosa.const"() <{values = dense<[0, 1, 2, 3, 4, 5, 6, 7]> : tensor<8xi64>}> : () -> tensor<8xi64>
    %5 = tosa.const_shape  {values = dense<[1, 3, 1, 1, 1]> : tensor<5xindex>} : () -> !tosa.shape<5>
    %6 = tosa.const_shape  {values = dense<[1, 1, 10, 1, 1]> : tensor<5xindex>} : () -> !tosa.shape<5>
    %7 = tosa.const_shape  {values = dense<[1, 1, 1, 8, 1]> : tensor<5xindex>} : () -> !tosa.shape<5>
    %8 = tosa.const_shape  {values = dense<[1, 3, 10, 8, 1]> : tensor<5xindex>} : () -> !tosa.shape<5>
    %9 = tosa.const_shape  {values = dense<[1, 1, 10, 8, 1]> : tensor<5xindex>} : () -> !tosa.shape<5>
    %10 = tosa.const_shape  {values = dense<[1, 3, 1, 8, 1]> : tensor<5xindex>} : () -> !tosa.shape<5>
    %11 = tosa.const_shape  {values = dense<[1, 3, 10, 1, 1]> : tensor<5xindex>} : () -> !tosa.shape<5>
    %12 = tosa.const_shape  {values = dense<[1, 60, 1]> : tensor<3xindex>} : () -> !tosa.shape<3>
    %13 = tosa.const_shape  {values = dense<[240, 4]> : tensor<2xindex>} : () -> !tosa.shape<2>
    %14 = tosa.const_shape  {values = dense<[1, 240]> : tensor<2xindex>} : () -> !tosa.shape<2>
    %15 = tosa.const_shape  {values = dense<[1, 3, 10, 8]> : tensor<4xindex>} : () -> !tosa.shape<4>
    %16 = tosa.const_shape  {values = dense<[1, 1, 1, 8]> : tensor<4xindex>} : () -> !tosa.shape<4>
    %17 = tosa.const_shape  {values = dense<[1, 1, 10, 1]> : tensor<4xindex>} : () -> !tosa.shape<4>
    %18 = "tosa.const"() <{values = dense<5.000000e-01> : tensor<1xf32>}> : () -> tensor<1xf32>
    %19 = "tosa.const"() <{values = dense<0.000000e+00> : tensor<1x1xf32>}> : () -> tensor<1x1xf32>
    %20 = "tosa.const"() <{values = dense<1> : tensor<1x1xi32>}> : () -> tensor<1x1xi32>
    %21 = "tosa.const"() <{values = dense<-9223372036854775808> : tensor<1x1xi64>}> : () -> tensor<1x1xi64>
    %22 = "tosa.const"() <{values = dense<4> : tensor<1x1xi64>}> : () -> tensor<1x1xi64>
    %23 = "tosa.const"() <{values = dense<0.000000e+00> : tensor<1xf32>}> : () -> tensor<1xf32>
    %24 = "tosa.const"() <{values = dense<1> : tensor<1xi32>}> : () -> tensor<1xi32>
    %25 = "tosa.const"() <{values = dense<-9223372036854775808> : tensor<1xi64>}> : () -> tensor<1xi64>
    %26 = "tosa.const"() <{values = dense<3> : tensor<1xi64>}> : () -> tensor<1xi64>
    %27 = "tosa.const"() <{values = dense<0> : tensor<1x1x1x1x1xi32>}> : () -> tensor<1x1x1x1x1xi32>
    %28 = "tosa.const"() <{values = dense<0> : tensor<1x1x1xi32>}> : () -> tensor<1x1x1xi32>
    %29 = "tosa.const"() <{values = dense<3> : tensor<1x1x1xi32>}> : () -> tensor<1x1x1xi32>
    %30 = "tosa.const"() <{values = dense<0> : tensor<1x1xi32>}> : () -> tensor<1x1xi32>
    %31 = "tosa.const"() <{values = dense<5> : tensor<1x1xi32>}> : () -> tensor<1x1xi32>
    %32 = "tosa.const"() <{values = dense<0> : tensor<1xi32>}> : () -> tensor<1xi32>
    %33 = "tosa.const"() <{values = dense<4> : tensor<1xi32>}> : () -> tensor<1xi32>
    %34 = tosa.cast %1 : (tensor<10xi64>) -> tensor<10xf32>
    %35 = tosa.add %34, %18 : (tensor<10xf32>, tensor<1xf32>) -> tensor<10xf32>
    %36 = tosa.mul %35, %18, %2 : (tensor<10xf32>, tensor<1xf32>, tensor<1xi8>) -> tensor<10xf32>
    %37 = tosa.sub %36, %18 : (tensor<10xf32>, tensor<1xf32>) -> tensor<10xf32>
    %38 = tosa.clamp %37 {max_val = 3.40282347E+38 : f32, min_val = 0.000000e+00 : f32} : (tensor<10xf32>) -> tensor<10xf32>
    %39 = tosa.reshape %38, %3 : (tensor<10xf32>, !tosa.shape<2>) -> tensor<10x1xf32>
    %40 = tosa.floor %39 : (tensor<10x1xf32>) -> tensor<10x1xf32>
    %41 = tosa.ceil %39 : (tensor<10x1xf32>) -> tensor<10x1xf32>
    %42 = tosa.greater %19, %39 : (tensor<1x1xf32>, tensor<10x1xf32>) -> tensor<10x1xi1>
    %43 = tosa.select %42, %41, %40 : (tensor<10x1xi1>, tensor<10x1xf32>, tensor<10x1xf32>) -> tensor<10x1xf32>
    %44 = tosa.cast %43 : (tensor<10x1xf32>) -> tensor<10x1xi64>
    %45 = tosa.cast %44 : (tensor<10x1xi64>) -> tensor<10x1xi32>
    %46 = tosa.add %45, %20 : (tensor<10x1xi32>, tensor<1x1xi32>) -> tensor<10x1xi32>
    %47 = tosa.cast %46 : (tensor<10x1xi32>) -> tensor<10x1xi64>
    %48 = tosa.maximum %47, %21 : (tensor<10x1xi64>, tensor<1x1xi64>) -> tensor<10x1xi64>
    %49 = tosa.minimum %48, %22 : (tensor<10x1xi64>, tensor<1x1xi64>) -> tensor<10x1xi64>
    %50 = tosa.cast %4 : (tensor<8xi64>) -> tensor<8xf32>
    %51 = tosa.add %50, %18 : (tensor<8xf32>, tensor<1xf32>) -> tensor<8xf32>
    %52 = tosa.mul %51, %18, %2 : (tensor<8xf32>, tensor<1xf32>, tensor<1xi8>) -> tensor<8xf32>
    %53 = tosa.sub %52, %18 : (tensor<8xf32>, tensor<1xf32>) -> tensor<8xf32>
    %54 = tosa.clamp %53 {max_val = 3.40282347E+38 : f32, min_val = 0.000000e+00 : f32} : (tensor<8xf32>) -> tensor<8xf32>
    %55 = tosa.floor %54 : (tensor<8xf32>) -> tensor<8xf32>
    %56 = tosa.ceil %54 : (tensor<8xf32>) -> tensor<8xf32>
    %57 = tosa.greater %23, %54 : (tensor<1xf32>, tensor<8xf32>) -> tensor<8xi1>
    %58 = tosa.select %57, %56, %55 : (tensor<8xi1>, tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
    %59 = tosa.cast %58 : (tensor<8xf32>) -> tensor<8xi64>
    %60 = tosa.cast %59 : (tensor<8xi64>) -> tensor<8xi32>
    %61 = tosa.add %60, %24 : (tensor<8xi32>, tensor<1xi32>) -> tensor<8xi32>
    %62 = tosa.cast %61 : (tensor<8xi32>) -> tensor<8xi64>
    %63 = tosa.maximum %62, %25 : (tensor<8xi64>, tensor<1xi64>) -> tensor<8xi64>
    %64 = tosa.minimum %63, %26 : (tensor<8xi64>, tensor<1xi64>) -> tensor<8xi64>
    %65 = tosa.cast %cst : (tensor<3x1x1xi64>) -> tensor<3x1x1xi32>
    %66 = tosa.add %65, %29 : (tensor<3x1x1xi32>, tensor<1x1x1xi32>) -> tensor<3x1x1xi32>
    %67 = tosa.greater %28, %65 : (tensor<1x1x1xi32>, tensor<3x1x1xi32>) -> tensor<3x1x1xi1>
    %68 = tosa.select %67, %66, %65 : (tensor<3x1x1xi1>, tensor<3x1x1xi32>, tensor<3x1x1xi32>) -> tensor<3x1x1xi32>
    %69 = tosa.cast %44 : (tensor<10x1xi64>) -> tensor<10x1xi32>
    %70 = tosa.add %69, %31 : (tensor<10x1xi32>, tensor<1x1xi32>) -> tensor<10x1xi32>
    %71 = tosa.greater %30, %69 : (tensor<1x1xi32>, tensor<10x1xi32>) -> tensor<10x1xi1>
    %72 = tosa.select %71, %70, %69 : (tensor<10x1xi1>, tensor<10x1xi32>, tensor<10x1xi32>) -> tensor<10x1xi32>
    %73 = tosa.cast %59 : (tensor<8xi64>) -> tensor<8xi32>
    %74 = tosa.add %73, %33 : (tensor<8xi32>, tensor<1xi32>) -> tensor<8xi32>
    %75 = tosa.greater %32, %73 : (tensor<1xi32>, tensor<8xi32>) -> tensor<8xi1>
    %76 = tosa.select %75, %74, %73 : (tensor<8xi1>, tensor<8xi32>, tensor<8xi32>) -> tensor<8xi32>
    %77 = tosa.reshape %68, %5 : (tensor<3x1x1xi32>, !tosa.shape<5>) -> tensor<1x3x1x1x1xi32>
    %78 = tosa.reshape %72, %6 : (tensor<10x1xi32>, !tosa.shape<5>) -> tensor<1x1x10x1x1xi32>
    %79 = tosa.reshape %76, %7 : (tensor<8xi32>, !tosa.shape<5>) -> tensor<1x1x1x8x1xi32>
    %80 = tosa.tile %27, %8 : (tensor<1x1x1x1x1xi32>, !tosa.shape<5>) -> tensor<1x3x10x8x1xi32>
    %81 = tosa.tile %77, %9 : (tensor<1x3x1x1x1xi32>, !tosa.shape<5>) -> tensor<1x3x10x8x1xi32>
    %82 = tosa.tile %78, %10 : (tensor<1x1x10x1x1xi32>, !tosa.shape<5>) -> tensor<1x3x10x8x1xi32>
    %83 = tosa.tile %79, %11 : (tensor<1x1x1x8x1xi32>, !tosa.shape<5>) -> tensor<1x3x10x8x1xi32>
    %84 = tosa.concat %80, %81, %82, %83 {axis = 4 : i32} : (tensor<1x3x10x8x1xi32>, tensor<1x3x10x8x1xi32>, tensor<1x3x10x8x1xi32>, tensor<1x3x10x8x1xi32>) -> tensor<1x3x10x8x4xi32>
    %85 = tosa.reshape %arg0, %12 : (tensor<1x3x5x4xf32>, !tosa.shape<3>) -> tensor<1x60x1xf32>
    %86 = tosa.reshape %84, %13 : (tensor<1x3x10x8x4xi32>, !tosa.shape<2>) -> tensor<240x4xi32>
    %87 = tosa.mul %86, %0, %2 : (tensor<240x4xi32>, tensor<1x4xi32>, tensor<1xi8>) -> tensor<240x4xi32>
    %88 = tosa.reduce_sum %87 {axis = 1 : i32} : (tensor<240x4xi32>) -> tensor<240x1xi32>
    %89 = tosa.reshape %88, %14 : (tensor<240x1xi32>, !tosa.shape<2>) -> tensor<1x240xi32>
    %90 = tosa.gather %85, %89 : (tensor<1x60x1xf32>, tensor<1x240xi32>) -> tensor<1x240x1xf32>
    %91 = tosa.reshape %90, %15 : (tensor<1x240x1xf32>, !tosa.shape<4>) -> tensor<1x3x10x8xf32>
    %92 = tosa.cast %64 : (tensor<8xi64>) -> tensor<8xi32>
    %93 = tosa.add %92, %33 : (tensor<8xi32>, tensor<1xi32>) -> tensor<8xi32>
    %94 = tosa.greater %32, %92 : (tensor<1xi32>, tensor<8xi32>) -> tensor<8xi1>
    %95 = tosa.select %94, %93, %92 : (tensor<8xi1>, tensor<8xi32>, tensor<8xi32>) -> tensor<8xi32>
    %96 = tosa.reshape %95, %7 : (tensor<8xi32>, !tosa.shape<5>) -> tensor<1x1x1x8x1xi32>
    %97 = tosa.tile %96, %11 : (tensor<1x1x1x8x1xi32>, !tosa.shape<5>) -> tensor<1x3x10x8x1xi32>
    %98 = tosa.concat %80, %81, %82, %97 {axis = 4 : i32} : (tensor<1x3x10x8x1xi32>, tensor<1x3x10x8x1xi32>, tensor<1x3x10x8x1xi32>, tensor<1x3x10x8x1xi32>) -> tensor<1x3x10x8x4xi32>
    %99 = tosa.reshape %98, %13 : (tensor<1x3x10x8x4xi32>, !tosa.shape<2>) -> tensor<240x4xi32>
    %100 = tosa.mul %99, %0, %2 : (tensor<240x4xi32>, tensor<1x4xi32>, tensor<1xi8>) -> tensor<240x4xi32>
    %101 = tosa.reduce_sum %100 {axis = 1 : i32} : (tensor<240x4xi32>) -> tensor<240x1xi32>
    %102 = tosa.reshape %101, %14 : (tensor<240x1xi32>, !tosa.shape<2>) -> tensor<1x240xi32>
    %103 = tosa.gather %85, %102 : (tensor<1x60x1xf32>, tensor<1x240xi32>) -> tensor<1x240x1xf32>
    %104 = tosa.reshape %103, %15 : (tensor<1x240x1xf32>, !tosa.shape<4>) -> tensor<1x3x10x8xf32>
    %105 = tosa.cast %49 : (tensor<10x1xi64>) -> tensor<10x1xi32>
    %106 = tosa.add %105, %31 : (tensor<10x1xi32>, tensor<1x1xi32>) -> tensor<10x1xi32>
    %107 = tosa.greater %30, %105 : (tensor<1x1xi32>, tensor<10x1xi32>) -> tensor<10x1xi1>
    %108 = tosa.select %107, %106, %105 : (tensor<10x1xi1>, tensor<10x1xi32>, tensor<10x1xi32>) -> tensor<10x1xi32>
    %109 = tosa.reshape %108, %6 : (tensor<10x1xi32>, !tosa.shape<5>) -> tensor<1x1x10x1x1xi32>
    %110 = tosa.tile %109, %10 : (tensor<1x1x10x1x1xi32>, !tosa.shape<5>) -> tensor<1x3x10x8x1xi32>
    %111 = tosa.concat %80, %81, %110, %83 {axis = 4 : i32} : (tensor<1x3x10x8x1xi32>, tensor<1x3x10x8x1xi32>, tensor<1x3x10x8x1xi32>, tensor<1x3x10x8x1xi32>) -> tensor<1x3x10x8x4xi32>
    %112 = tosa.reshape %111, %13 : (tensor<1x3x10x8x4xi32>, !tosa.shape<2>) -> tensor<240x4xi32>
    %113 = tosa.mul %112, %0, %2 : (tensor<240x4xi32>, tensor<1x4xi32>, tensor<1xi8>) -> tensor<240x4xi32>
    %114 = tosa.reduce_sum %113 {axis = 1 : i32} : (tensor<240x4xi32>) -> tensor<240x1xi32>
    %115 = tosa.reshape %114, %14 : (tensor<240x1xi32>, !tosa.shape<2>) -> tensor<1x240xi32>
    %116 = tosa.gather %85, %115 : (tensor<1x60x1xf32>, tensor<1x240xi32>) -> tensor<1x240x1xf32>
    %117 = tosa.reshape %116, %15 : (tensor<1x240x1xf32>, !tosa.shape<4>) -> tensor<1x3x10x8xf32>
    %118 = tosa.concat %80, %81, %110, %97 {axis = 4 : i32} : (tensor<1x3x10x8x1xi32>, tensor<1x3x10x8x1xi32>, tensor<1x3x10x8x1xi32>, tensor<1x3x10x8x1xi32>) -> tensor<1x3x10x8x4xi32>
    %119 = tosa.reshape %118, %13 : (tensor<1x3x10x8x4xi32>, !tosa.shape<2>) -> tensor<240x4xi32>
    %120 = tosa.mul %119, %0, %2 : (tensor<240x4xi32>, tensor<1x4xi32>, tensor<1xi8>) -> tensor<240x4xi32>
    %121 = tosa.reduce_sum %120 {axis = 1 : i32} : (tensor<240x4xi32>) -> tensor<240x1xi32>
    %122 = tosa.reshape %121, %14 : (tensor<240x1xi32>, !tosa.shape<2>) -> tensor<1x240xi32>
    %123 = tosa.gather %85, %122 : (tensor<1x60x1xf32>, tensor<1x240xi32>) -> tensor<1x240x1xf32>
    %124 = tosa.reshape %123, %15 : (tensor<1x240x1xf32>, !tosa.shape<4>) -> tensor<1x3x10x8xf32>
    %125 = tosa.cast %59 : (tensor<8xi64>) -> tensor<8xf32>
    %126 = tosa.sub %54, %125 : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
    %127 = tosa.clamp %126 {max_val = 1.000000e+00 : f32, min_val = 0.000000e+00 : f32} : (tensor<8xf32>) -> tensor<8xf32>
    %128 = tosa.sub %104, %91 : (tensor<1x3x10x8xf32>, tensor<1x3x10x8xf32>) -> tensor<1x3x10x8xf32>
    %129 = tosa.reshape %127, %16 : (tensor<8xf32>, !tosa.shape<4>) -> tensor<1x1x1x8xf32>
    %130 = tosa.mul %128, %129, %2 : (tensor<1x3x10x8xf32>, tensor<1x1x1x8xf32>, tensor<1xi8>) -> tensor<1x3x10x8xf32>
    %131 = tosa.add %91, %130 : (tensor<1x3x10x8xf32>, tensor<1x3x10x8xf32>) -> tensor<1x3x10x8xf32>
    %132 = tosa.sub %124, %117 : (tensor<1x3x10x8xf32>, tensor<1x3x10x8xf32>) -> tensor<1x3x10x8xf32>
    %133 = tosa.mul %132, %129, %2 : (tensor<1x3x10x8xf32>, tensor<1x1x1x8xf32>, tensor<1xi8>) -> tensor<1x3x10x8xf32>
    %134 = tosa.add %117, %133 : (tensor<1x3x10x8xf32>, tensor<1x3x10x8xf32>) -> tensor<1x3x10x8xf32>
    %135 = tosa.cast %44 : (tensor<10x1xi64>) -> tensor<10x1xf32>
    %136 = tosa.sub %39, %135 : (tensor<10x1xf32>, tensor<10x1xf32>) -> tensor<10x1xf32>
    %137 = tosa.clamp %136 {max_val = 1.000000e+00 : f32, min_val = 0.000000e+00 : f32} : (tensor<10x1xf32>) -> tensor<10x1xf32>
    %138 = tosa.sub %134, %131 : (tensor<1x3x10x8xf32>, tensor<1x3x10x8xf32>) -> tensor<1x3x10x8xf32>
    %139 = tosa.reshape %137, %17 : (tensor<10x1xf32>, !tosa.shape<4>) -> tensor<1x1x10x1xf32>
    %140 = tosa.mul %138, %139, %2 : (tensor<1x3x10x8xf32>, tensor<1x1x10x1xf32>, tensor<1xi8>) -> tensor<1x3x10x8xf32>
    %141 = tosa.add %131, %140 : (tensor<1x3x10x8xf32>, tensor<1x3x10x8xf32>) -> tensor<1x3x10x8xf32>
    return %141 : tensor<1x3x10x8xf32>
  }
}
