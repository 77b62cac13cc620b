// torch-mlir's layer norm without its affine part: the variance in f64 (a cast, a sum, a square,
// another sum), the mean in f32. One row kernel: its runs of elementwise stages one loop each on
// the JIT, the f64 sums taken in the same loops.
func.func @forward(%x: tensor<6x37xf32>) -> tensor<6x37xf32> {
  %n64 = "tosa.const"() <{values = dense<2.7027027027027029e-02> : tensor<1x1xf64>}> : () -> tensor<1x1xf64>
  %n32 = "tosa.const"() <{values = dense<2.7027027027027029e-02> : tensor<1x1xf32>}> : () -> tensor<1x1xf32>
  %eps = "tosa.const"() <{values = dense<1.0e-05> : tensor<1x1xf32>}> : () -> tensor<1x1xf32>
  %sh = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %c = tosa.cast %x : (tensor<6x37xf32>) -> tensor<6x37xf64>
  %s = tosa.reduce_sum %c {axis = 1 : i32} : (tensor<6x37xf64>) -> tensor<6x1xf64>
  %m = tosa.mul %s, %n64, %sh : (tensor<6x1xf64>, tensor<1x1xf64>, tensor<1xi8>) -> tensor<6x1xf64>
  %d = tosa.sub %c, %m : (tensor<6x37xf64>, tensor<6x1xf64>) -> tensor<6x37xf64>
  %q = tosa.mul %d, %d, %sh : (tensor<6x37xf64>, tensor<6x37xf64>, tensor<1xi8>) -> tensor<6x37xf64>
  %v = tosa.reduce_sum %q {axis = 1 : i32} : (tensor<6x37xf64>) -> tensor<6x1xf64>
  %vm = tosa.mul %v, %n64, %sh : (tensor<6x1xf64>, tensor<1x1xf64>, tensor<1xi8>) -> tensor<6x1xf64>
  %vf = tosa.cast %vm : (tensor<6x1xf64>) -> tensor<6x1xf32>
  %s32 = tosa.reduce_sum %x {axis = 1 : i32} : (tensor<6x37xf32>) -> tensor<6x1xf32>
  %mean = tosa.mul %s32, %n32, %sh : (tensor<6x1xf32>, tensor<1x1xf32>, tensor<1xi8>) -> tensor<6x1xf32>
  %e = tosa.add %vf, %eps : (tensor<6x1xf32>, tensor<1x1xf32>) -> tensor<6x1xf32>
  %r = tosa.rsqrt %e : (tensor<6x1xf32>) -> tensor<6x1xf32>
  %y = tosa.sub %x, %mean : (tensor<6x37xf32>, tensor<6x1xf32>) -> tensor<6x37xf32>
  %z = tosa.mul %y, %r, %sh : (tensor<6x37xf32>, tensor<6x1xf32>, tensor<1xi8>) -> tensor<6x37xf32>
  return %z : tensor<6x37xf32>
}
