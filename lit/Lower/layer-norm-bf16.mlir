// A layer norm kept in f32 between bf16 matmuls (the O1 policy): its result is read by the next
// residual add (f32) and, cast to bf16, by the next matmul. It is one row kernel, its cast a
// kernel of its own: a region may give one value, and grown over the cast it gave none (each
// op of the layer norm then ran as a kernel of its own: 429 kernels for BERT-base in bf16, 236
// now).
// RUN: %f16c compile %s --target=x86_64 --backend=llvm --precision=bf16 --emit=kernels | FileCheck %s --check-prefix=BF16
// RUN: %f16c compile %s --target=x86_64 --precision=bf16 --emit=kernels | FileCheck %s --check-prefix=BF16
// RUN: %f16c compile %s --target=x86_64 --backend=llvm --precision=fp32 --emit=kernels | FileCheck %s --check-prefix=F32
// BF16: program @forward: 5 kernels
// BF16: k{{[0-9]+}}_matmul: contraction matmul batch=1 m=8 n=16 k=16 acc=f32 result=bf16
// BF16: k{{[0-9]+}}_rows_cast: rows rows=8 len=16 stages=11
// BF16: k{{[0-9]+}}_cast: elementwise shape=[128]
// BF16: k{{[0-9]+}}_matmul: contraction matmul batch=1 m=8 n=16 k=16 acc=f32 result=bf16
// F32: program @forward: 3 kernels
// F32: k1_rows_add: rows rows=8 len=16 stages=10
func.func @forward(%a: tensor<1x8x16xf32>, %r: tensor<1x8x16xf32>) -> tensor<1x8x16xf32> {
  %w1 = "tosa.const"() <{values = dense<0.25> : tensor<1x16x16xf32>}> : () -> tensor<1x16x16xf32>
  %w2 = "tosa.const"() <{values = dense<0.125> : tensor<1x16x16xf32>}> : () -> tensor<1x16x16xf32>
  %z = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %c = "tosa.const"() <{values = dense<0.0625> : tensor<1x1x1xf32>}> : () -> tensor<1x1x1xf32>
  %eps = "tosa.const"() <{values = dense<1.0e-5> : tensor<1x1x1xf32>}> : () -> tensor<1x1x1xf32>
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %m1 = tosa.matmul %a, %w1, %z, %z : (tensor<1x8x16xf32>, tensor<1x16x16xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x8x16xf32>
  %h = tosa.add %m1, %r : (tensor<1x8x16xf32>, tensor<1x8x16xf32>) -> tensor<1x8x16xf32>
  %s = tosa.reduce_sum %h {axis = 2 : i32} : (tensor<1x8x16xf32>) -> tensor<1x8x1xf32>
  %mean = tosa.mul %s, %c, %shift : (tensor<1x8x1xf32>, tensor<1x1x1xf32>, tensor<1xi8>) -> tensor<1x8x1xf32>
  %d = tosa.sub %h, %mean : (tensor<1x8x16xf32>, tensor<1x8x1xf32>) -> tensor<1x8x16xf32>
  %d2 = tosa.mul %d, %d, %shift : (tensor<1x8x16xf32>, tensor<1x8x16xf32>, tensor<1xi8>) -> tensor<1x8x16xf32>
  %vs = tosa.reduce_sum %d2 {axis = 2 : i32} : (tensor<1x8x16xf32>) -> tensor<1x8x1xf32>
  %var = tosa.mul %vs, %c, %shift : (tensor<1x8x1xf32>, tensor<1x1x1xf32>, tensor<1xi8>) -> tensor<1x8x1xf32>
  %ve = tosa.add %var, %eps : (tensor<1x8x1xf32>, tensor<1x1x1xf32>) -> tensor<1x8x1xf32>
  %rs = tosa.rsqrt %ve : (tensor<1x8x1xf32>) -> tensor<1x8x1xf32>
  %y = tosa.mul %d, %rs, %shift : (tensor<1x8x16xf32>, tensor<1x8x1xf32>, tensor<1xi8>) -> tensor<1x8x16xf32>
  %m2 = tosa.matmul %y, %w2, %z, %z : (tensor<1x8x16xf32>, tensor<1x16x16xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x8x16xf32>
  %o = tosa.add %m2, %y : (tensor<1x8x16xf32>, tensor<1x8x16xf32>) -> tensor<1x8x16xf32>
  return %o : tensor<1x8x16xf32>
}
