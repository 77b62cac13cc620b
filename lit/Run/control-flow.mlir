// tosa.cond_if and tosa.while_loop, with regions that capture values from the function and
// several results, values computed by hand. The JIT compiles each straight-line piece and each
// region (jit/src/staged.rs); the reference interpreter runs the regions itself.
// RUN: %f16c run %s --function=branch --input %inputs/x2_f32.npy | FileCheck %s --check-prefix=ELSE
// RUN: %f16c run %s --function=branch --input %inputs/x2_f32.npy --target=reference | FileCheck %s --check-prefix=ELSE
// RUN: %f16c run %s --function=branch --input %inputs/f16_2048.npy | FileCheck %s --check-prefix=THEN
// RUN: %f16c run %s --function=branch --input %inputs/f16_2048.npy --target=reference | FileCheck %s --check-prefix=THEN
// RUN: %f16c run %s --function=branch --input %inputs/f16_2048.npy --precision=fp16 --threads=2 | FileCheck %s --check-prefix=THEN
// x = [1.5, -2]: the sum is -0.5, so the else region negates x and yields the zero.
// ELSE: result #0: tensor<2xf32> = [-1.5, 2.0]
// ELSE: result #1: tensor<1xf32> = [0.0]
// x = [2048, 2048]: the then region squares x and yields the sum it captures.
// THEN: result #0: tensor<2xf32> = [4194304.0, 4194304.0]
// THEN: result #1: tensor<1xf32> = [4096.0]
func.func @branch(%x: tensor<2xf32>) -> (tensor<2xf32>, tensor<1xf32>) {
  %s = tosa.reduce_sum %x {axis = 0 : i32} : (tensor<2xf32>) -> tensor<1xf32>
  %z = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %c1 = tosa.greater %s, %z : (tensor<1xf32>, tensor<1xf32>) -> tensor<1xi1>
  %scalar = tosa.const_shape {values = dense<> : tensor<0xindex>} : () -> !tosa.shape<0>
  %c = tosa.reshape %c1, %scalar : (tensor<1xi1>, !tosa.shape<0>) -> tensor<i1>
  %r:2 = tosa.cond_if %c (%a = %x) : tensor<i1> (tensor<2xf32>) -> (tensor<2xf32>, tensor<1xf32>) {
  ^bb0(%a: tensor<2xf32>):
    %m = tosa.mul %a, %a, %shift : (tensor<2xf32>, tensor<2xf32>, tensor<1xi8>) -> tensor<2xf32>
    tosa.yield %m, %s : tensor<2xf32>, tensor<1xf32>
  } else {
  ^bb0(%a: tensor<2xf32>):
    %n = tosa.negate %a, %z, %z : (tensor<2xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<2xf32>
    tosa.yield %n, %z : tensor<2xf32>, tensor<1xf32>
  }
  return %r#0, %r#1 : tensor<2xf32>, tensor<1xf32>
}

// A loop whose trip count depends on the data: i counts from 0 while i < sum(x) (6 for
// x = [1, 2, 3]), adding the captured x to the accumulator each time: 7x.
// RUN: %f16c run %s --function=loop --input %inputs/x3_f32.npy | FileCheck %s --check-prefix=LOOP
// RUN: %f16c run %s --function=loop --input %inputs/x3_f32.npy --target=reference | FileCheck %s --check-prefix=LOOP
// Compiled artifacts do not run control flow yet; a loop limit turns a loop that runs too long
// into an error.
// RUN: not %f16c run %s --function=loop --input %inputs/x3_f32.npy --backend=llvm 2>&1 | FileCheck %s --check-prefix=AOT
// RUN: env F16C_MAX_LOOP_ITERATIONS=3 not %f16c run %s --function=loop --input %inputs/x3_f32.npy 2>&1 | FileCheck %s --check-prefix=LIMIT
// RUN: env F16C_MAX_LOOP_ITERATIONS=3 not %f16c run %s --function=loop --input %inputs/x3_f32.npy --target=reference 2>&1 | FileCheck %s --check-prefix=LIMIT
// AOT: control-flow.mlir:[[@LINE+10]]:10: error: 'tosa.while_loop' cannot be lowered: control flow is not supported by compiled artifacts yet
// LIMIT: the loop ran 3 iterations, the limit F16C_MAX_LOOP_ITERATIONS sets
// LOOP: result #0: tensor<i32> = [6]
// LOOP: result #1: tensor<3xf32> = [7.0, 14.0, 21.0]
func.func @loop(%x: tensor<3xf32>) -> (tensor<i32>, tensor<3xf32>) {
  %s = tosa.reduce_sum %x {axis = 0 : i32} : (tensor<3xf32>) -> tensor<1xf32>
  %scalar = tosa.const_shape {values = dense<> : tensor<0xindex>} : () -> !tosa.shape<0>
  %s0 = tosa.reshape %s, %scalar : (tensor<1xf32>, !tosa.shape<0>) -> tensor<f32>
  %limit = tosa.cast %s0 : (tensor<f32>) -> tensor<i32>
  %zero = "tosa.const"() <{values = dense<0> : tensor<i32>}> : () -> tensor<i32>
  %r:2 = tosa.while_loop (%i = %zero, %acc = %x) : (tensor<i32>, tensor<3xf32>) -> (tensor<i32>, tensor<3xf32>) {
    %go = tosa.greater %limit, %i : (tensor<i32>, tensor<i32>) -> tensor<i1>
    tosa.yield %go : tensor<i1>
  } do {
  ^bb0(%i: tensor<i32>, %acc: tensor<3xf32>):
    %one = "tosa.const"() <{values = dense<1> : tensor<i32>}> : () -> tensor<i32>
    %j = tosa.add %i, %one : (tensor<i32>, tensor<i32>) -> tensor<i32>
    %next = tosa.add %acc, %x : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    tosa.yield %j, %next : tensor<i32>, tensor<3xf32>
  }
  return %r#0, %r#1 : tensor<i32>, tensor<3xf32>
}

// A cond_if nested in a loop body, capturing x from two levels up: on odd iterations of
// i = 0..n-1 (n = 5: i = 1 and 3) the accumulator gains x, so it ends at 3x.
// RUN: %f16c run %s --function=nested --input %inputs/n_i32.npy --input %inputs/x3_f32.npy | FileCheck %s --check-prefix=NESTED
// RUN: %f16c run %s --function=nested --input %inputs/n_i32.npy --input %inputs/x3_f32.npy --target=reference | FileCheck %s --check-prefix=NESTED
// NESTED: result #0: tensor<i32> = [5]
// NESTED: result #1: tensor<3xf32> = [3.0, 6.0, 9.0]
func.func @nested(%n: tensor<i32>, %x: tensor<3xf32>) -> (tensor<i32>, tensor<3xf32>) {
  %zero = "tosa.const"() <{values = dense<0> : tensor<i32>}> : () -> tensor<i32>
  %r:2 = tosa.while_loop (%i = %zero, %acc = %x) : (tensor<i32>, tensor<3xf32>) -> (tensor<i32>, tensor<3xf32>) {
    %go = tosa.greater %n, %i : (tensor<i32>, tensor<i32>) -> tensor<i1>
    tosa.yield %go : tensor<i1>
  } do {
  ^bb0(%i: tensor<i32>, %acc: tensor<3xf32>):
    %one = "tosa.const"() <{values = dense<1> : tensor<i32>}> : () -> tensor<i32>
    %j = tosa.add %i, %one : (tensor<i32>, tensor<i32>) -> tensor<i32>
    %odd = tosa.bitwise_and %i, %one : (tensor<i32>, tensor<i32>) -> tensor<i32>
    %c = tosa.equal %odd, %one : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %next = tosa.cond_if %c (%a = %acc) : tensor<i1> (tensor<3xf32>) -> tensor<3xf32> {
    ^bb0(%a: tensor<3xf32>):
      %s = tosa.add %a, %x : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
      tosa.yield %s : tensor<3xf32>
    } else {
    ^bb0(%a: tensor<3xf32>):
      tosa.yield %a : tensor<3xf32>
    }
    tosa.yield %j, %next : tensor<i32>, tensor<3xf32>
  }
  return %r#0, %r#1 : tensor<i32>, tensor<3xf32>
}
