// Attention over two heads as torch-mlir writes it: heads split from the tokens' rows by
// transposes, joined back by one (tests/integration/llvm_cpu.rs, lit/Lower/strategy-views.test).
func.func @forward(%x: tensor<1x24x32xf32>, %kv: tensor<1x36x32xf32>) -> tensor<1x24x32xf32> {
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %s4x = tosa.const_shape {values = dense<[1, 24, 2, 16]> : tensor<4xindex>} : () -> !tosa.shape<4>
  %s4k = tosa.const_shape {values = dense<[1, 36, 2, 16]> : tensor<4xindex>} : () -> !tosa.shape<4>
  %s3q = tosa.const_shape {values = dense<[2, 24, 16]> : tensor<3xindex>} : () -> !tosa.shape<3>
  %s3k = tosa.const_shape {values = dense<[2, 36, 16]> : tensor<3xindex>} : () -> !tosa.shape<3>
  %s3kt = tosa.const_shape {values = dense<[2, 16, 36]> : tensor<3xindex>} : () -> !tosa.shape<3>
  %s4o = tosa.const_shape {values = dense<[1, 2, 24, 16]> : tensor<4xindex>} : () -> !tosa.shape<4>
  %s3o = tosa.const_shape {values = dense<[1, 24, 32]> : tensor<3xindex>} : () -> !tosa.shape<3>
  %qh = tosa.reshape %x, %s4x : (tensor<1x24x32xf32>, !tosa.shape<4>) -> tensor<1x24x2x16xf32>
  %qt = tosa.transpose %qh {perms = array<i32: 0, 2, 1, 3>} : (tensor<1x24x2x16xf32>) -> tensor<1x2x24x16xf32>
  %q = tosa.reshape %qt, %s3q : (tensor<1x2x24x16xf32>, !tosa.shape<3>) -> tensor<2x24x16xf32>
  %kh = tosa.reshape %kv, %s4k : (tensor<1x36x32xf32>, !tosa.shape<4>) -> tensor<1x36x2x16xf32>
  %kt = tosa.transpose %kh {perms = array<i32: 0, 2, 3, 1>} : (tensor<1x36x2x16xf32>) -> tensor<1x2x16x36xf32>
  %k = tosa.reshape %kt, %s3kt : (tensor<1x2x16x36xf32>, !tosa.shape<3>) -> tensor<2x16x36xf32>
  %s = tosa.matmul %q, %k, %zp, %zp : (tensor<2x24x16xf32>, tensor<2x16x36xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<2x24x36xf32>
  %m = tosa.reduce_max %s {axis = 2 : i32} : (tensor<2x24x36xf32>) -> tensor<2x24x1xf32>
  %d = tosa.sub %s, %m : (tensor<2x24x36xf32>, tensor<2x24x1xf32>) -> tensor<2x24x36xf32>
  %e = tosa.exp %d : (tensor<2x24x36xf32>) -> tensor<2x24x36xf32>
  %z = tosa.reduce_sum %e {axis = 2 : i32} : (tensor<2x24x36xf32>) -> tensor<2x24x1xf32>
  %r = tosa.reciprocal %z : (tensor<2x24x1xf32>) -> tensor<2x24x1xf32>
  %p = tosa.mul %e, %r, %shift : (tensor<2x24x36xf32>, tensor<2x24x1xf32>, tensor<1xi8>) -> tensor<2x24x36xf32>
  %vt = tosa.transpose %kh {perms = array<i32: 0, 2, 1, 3>} : (tensor<1x36x2x16xf32>) -> tensor<1x2x36x16xf32>
  %v = tosa.reshape %vt, %s3k : (tensor<1x2x36x16xf32>, !tosa.shape<3>) -> tensor<2x36x16xf32>
  %o = tosa.matmul %p, %v, %zp, %zp : (tensor<2x24x36xf32>, tensor<2x36x16xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<2x24x16xf32>
  %oh = tosa.reshape %o, %s4o : (tensor<2x24x16xf32>, !tosa.shape<4>) -> tensor<1x2x24x16xf32>
  %ot = tosa.transpose %oh {perms = array<i32: 0, 2, 1, 3>} : (tensor<1x2x24x16xf32>) -> tensor<1x24x2x16xf32>
  %y = tosa.reshape %ot, %s3o : (tensor<1x24x2x16xf32>, !tosa.shape<3>) -> tensor<1x24x32xf32>
  return %y : tensor<1x24x32xf32>
}
