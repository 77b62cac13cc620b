// The JIT's elementwise kernels compute a row's sigmoid, erf, tanh or exp sixteen lanes wide
// in the runtime (ErfArrayF32 and the others), a block of the row at a time, also where the
// argument is computed (GELU's erf(x/√2): computed four lanes at a time into scratch first):
// the same bits as the reference, rows of 64 and of 70 (a tail of two past the vectors), in
// f32 and fp16.
// RUN: %f16c run %s --function=gelu --target=reference --input %inputs/x_4x64_f32.npy --output %t.gelu.ref.npy
// RUN: %f16c run %s --function=gelu --input %inputs/x_4x64_f32.npy --output %t.gelu.jit.npy
// RUN: cmp %t.gelu.jit.npy %t.gelu.ref.npy
// RUN: %f16c run %s --function=gelu_tanh --target=reference --input %inputs/x_4x64_f32.npy --output %t.tanh.ref.npy
// RUN: %f16c run %s --function=gelu_tanh --input %inputs/x_4x64_f32.npy --output %t.tanh.jit.npy
// RUN: cmp %t.tanh.jit.npy %t.tanh.ref.npy
// RUN: %f16c run %s --function=exp_sigmoid --target=reference --input %inputs/x_4x64_f32.npy --output %t.exp.ref.npy
// RUN: %f16c run %s --function=exp_sigmoid --input %inputs/x_4x64_f32.npy --output %t.exp.jit.npy
// RUN: cmp %t.exp.jit.npy %t.exp.ref.npy
// RUN: %f16c run %s --function=gelu --precision=fp16 --target=reference --input %inputs/x_4x64_f32.npy --output %t.gelu16.ref.npy
// RUN: %f16c run %s --function=gelu --precision=fp16 --input %inputs/x_4x64_f32.npy --output %t.gelu16.jit.npy
// RUN: cmp %t.gelu16.jit.npy %t.gelu16.ref.npy
// A one-dimensional kernel longer than 8192 elements splits into rows (here 2 of 5760), so that
// threads share it; the same bits on two threads.
// RUN: %f16c compile %s --function=silu_long --target=x86_64 --precision=fp32 -o %t.long.f16c
// RUN: %f16c-run %t.long.f16c --info | FileCheck %s --check-prefix=SPLIT
// SPLIT: step 0: k0_sigmoid (f16c_k0_sigmoid), 2 work items
// RUN: %f16c-run %t.long.f16c --threads 2 --input %inputs/x_1x24x24x20_f32.npy --output %t.long.jit.npy
// RUN: %f16c run %s --function=silu_long --target=reference --input %inputs/x_1x24x24x20_f32.npy --output %t.long.ref.npy
// RUN: cmp %t.long.jit.npy %t.long.ref.npy
func.func @silu_long(%x: tensor<1x24x24x20xf32>) -> tensor<1x24x24x20xf32> {
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %s = tosa.sigmoid %x : (tensor<1x24x24x20xf32>) -> tensor<1x24x24x20xf32>
  %o = tosa.mul %x, %s, %shift : (tensor<1x24x24x20xf32>, tensor<1x24x24x20xf32>, tensor<1xi8>) -> tensor<1x24x24x20xf32>
  return %o : tensor<1x24x24x20xf32>
}
func.func @gelu(%x: tensor<4x64xf32>) -> tensor<4x64xf32> {
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %bias = "tosa.const"() <{values = dense<[[0.0, 0.5, -0.25, 1.0, 0.125, -2.0, 0.75, 3.0, 0.0, 0.5, -0.25, 1.0, 0.125, -2.0, 0.75, 3.0, 0.0, 0.5, -0.25, 1.0, 0.125, -2.0, 0.75, 3.0, 0.0, 0.5, -0.25, 1.0, 0.125, -2.0, 0.75, 3.0, 0.0, 0.5, -0.25, 1.0, 0.125, -2.0, 0.75, 3.0, 0.0, 0.5, -0.25, 1.0, 0.125, -2.0, 0.75, 3.0, 0.0, 0.5, -0.25, 1.0, 0.125, -2.0, 0.75, 3.0, 0.0, 0.5, -0.25, 1.0, 0.125, -2.0, 0.75, 3.0]]> : tensor<1x64xf32>}> : () -> tensor<1x64xf32>
  %r = "tosa.const"() <{values = dense<0.707106769> : tensor<1x1xf32>}> : () -> tensor<1x1xf32>
  %one = "tosa.const"() <{values = dense<1.0> : tensor<1x1xf32>}> : () -> tensor<1x1xf32>
  %half = "tosa.const"() <{values = dense<0.5> : tensor<1x1xf32>}> : () -> tensor<1x1xf32>
  %y = tosa.add %x, %bias : (tensor<4x64xf32>, tensor<1x64xf32>) -> tensor<4x64xf32>
  %a = tosa.mul %y, %r, %shift : (tensor<4x64xf32>, tensor<1x1xf32>, tensor<1xi8>) -> tensor<4x64xf32>
  %e = tosa.erf %a : (tensor<4x64xf32>) -> tensor<4x64xf32>
  %p = tosa.add %e, %one : (tensor<4x64xf32>, tensor<1x1xf32>) -> tensor<4x64xf32>
  %h = tosa.mul %half, %p, %shift : (tensor<1x1xf32>, tensor<4x64xf32>, tensor<1xi8>) -> tensor<4x64xf32>
  %g = tosa.mul %y, %h, %shift : (tensor<4x64xf32>, tensor<4x64xf32>, tensor<1xi8>) -> tensor<4x64xf32>
  return %g : tensor<4x64xf32>
}
func.func @gelu_tanh(%x: tensor<4x64xf32>) -> tensor<4x70xf32> {
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %pad = tosa.const_shape {values = dense<[0, 0, 3, 3]> : tensor<4xindex>} : () -> !tosa.shape<4>
  %pv = "tosa.const"() <{values = dense<-1.5> : tensor<1xf32>}> : () -> tensor<1xf32>
  %yp = tosa.pad %x, %pad, %pv : (tensor<4x64xf32>, !tosa.shape<4>, tensor<1xf32>) -> tensor<4x70xf32>
  %bias = "tosa.const"() <{values = dense<[[-0.5, 0.375, 0.125, -0.125, -0.375, 0.5, 0.25, 0.0, -0.25, -0.5, 0.375, 0.125, -0.125, -0.375, 0.5, 0.25, 0.0, -0.25, -0.5, 0.375, 0.125, -0.125, -0.375, 0.5, 0.25, 0.0, -0.25, -0.5, 0.375, 0.125, -0.125, -0.375, 0.5, 0.25, 0.0, -0.25, -0.5, 0.375, 0.125, -0.125, -0.375, 0.5, 0.25, 0.0, -0.25, -0.5, 0.375, 0.125, -0.125, -0.375, 0.5, 0.25, 0.0, -0.25, -0.5, 0.375, 0.125, -0.125, -0.375, 0.5, 0.25, 0.0, -0.25, -0.5, 0.375, 0.125, -0.125, -0.375, 0.5, 0.25]]> : tensor<1x70xf32>}> : () -> tensor<1x70xf32>
  %y = tosa.add %yp, %bias : (tensor<4x70xf32>, tensor<1x70xf32>) -> tensor<4x70xf32>
  %c = "tosa.const"() <{values = dense<0.0447149985> : tensor<1x1xf32>}> : () -> tensor<1x1xf32>
  %k = "tosa.const"() <{values = dense<0.797884583> : tensor<1x1xf32>}> : () -> tensor<1x1xf32>
  %one = "tosa.const"() <{values = dense<1.0> : tensor<1x1xf32>}> : () -> tensor<1x1xf32>
  %half = "tosa.const"() <{values = dense<0.5> : tensor<1x1xf32>}> : () -> tensor<1x1xf32>
  %y2 = tosa.mul %y, %y, %shift : (tensor<4x70xf32>, tensor<4x70xf32>, tensor<1xi8>) -> tensor<4x70xf32>
  %y3 = tosa.mul %y2, %y, %shift : (tensor<4x70xf32>, tensor<4x70xf32>, tensor<1xi8>) -> tensor<4x70xf32>
  %cy3 = tosa.mul %c, %y3, %shift : (tensor<1x1xf32>, tensor<4x70xf32>, tensor<1xi8>) -> tensor<4x70xf32>
  %in = tosa.add %y, %cy3 : (tensor<4x70xf32>, tensor<4x70xf32>) -> tensor<4x70xf32>
  %a = tosa.mul %k, %in, %shift : (tensor<1x1xf32>, tensor<4x70xf32>, tensor<1xi8>) -> tensor<4x70xf32>
  %t = tosa.tanh %a : (tensor<4x70xf32>) -> tensor<4x70xf32>
  %p = tosa.add %t, %one : (tensor<4x70xf32>, tensor<1x1xf32>) -> tensor<4x70xf32>
  %h = tosa.mul %half, %y, %shift : (tensor<1x1xf32>, tensor<4x70xf32>, tensor<1xi8>) -> tensor<4x70xf32>
  %g = tosa.mul %h, %p, %shift : (tensor<4x70xf32>, tensor<4x70xf32>, tensor<1xi8>) -> tensor<4x70xf32>
  return %g : tensor<4x70xf32>
}
func.func @exp_sigmoid(%x: tensor<4x64xf32>) -> tensor<4x64xf32> {
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %s = "tosa.const"() <{values = dense<[[16.0], [-3.0], [0.5], [-40.0]]> : tensor<4x1xf32>}> : () -> tensor<4x1xf32>
  %a = tosa.mul %x, %s, %shift : (tensor<4x64xf32>, tensor<4x1xf32>, tensor<1xi8>) -> tensor<4x64xf32>
  %e = tosa.exp %a : (tensor<4x64xf32>) -> tensor<4x64xf32>
  %g = tosa.sigmoid %e : (tensor<4x64xf32>) -> tensor<4x64xf32>
  %o = tosa.mul %g, %a, %shift : (tensor<4x64xf32>, tensor<4x64xf32>, tensor<1xi8>) -> tensor<4x64xf32>
  return %o : tensor<4x64xf32>
}
