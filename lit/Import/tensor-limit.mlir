// Static shapes that MLIR accepts but no machine could hold are located errors before anything
// of their size is allocated (issue 14's reproducers: a splat constant with a dimension of
// 2^63-1 used to panic with "capacity overflow", a 10^10-element constant and huge tile/pad
// results made f16c allocate tens of GB). The limit is per tensor, 8 GiB by default, set with
// --max-tensor-bytes=N or F16C_MAX_TENSOR_BYTES.
// RUN: not %f16c opt %s -split-input-file 2>&1 | FileCheck %s
// RUN: not %f16c opt %S/../Inputs/x2_f32.npy --max-tensor-bytes=0 2>&1 | FileCheck %s --check-prefix=ZERO
// RUN: not %f16c opt %s -split-input-file --max-tensor-bytes=100000000000000000000000 2>&1 | FileCheck %s --check-prefix=BIG
// The limit moves both ways: a real model fails under a tiny one, by flag or environment.
// RUN: not %f16c opt %models/mlp_small.tosa.mlir --max-tensor-bytes=1000 2>&1 | FileCheck %s --check-prefix=SMALL
// RUN: env F16C_MAX_TENSOR_BYTES=1000 not %f16c opt %models/mlp_small.tosa.mlir 2>&1 | FileCheck %s --check-prefix=SMALL
// RUN: %f16c opt %models/mlp_small.tosa.mlir --max-tensor-bytes=100000 -o /dev/null
// SMALL: error: {{.*}}more than f16c's limit of 1000 bytes per tensor
// ZERO: error: invalid value '0' for '--max-tensor-bytes <N>'
// BIG: error: invalid value '100000000000000000000000' for '--max-tensor-bytes <N>'

// CHECK: tensor-limit.mlir:[[# @LINE + 2]]:8: error: 'tosa.const' result: 'tensor<9223372036854775807xf32>' is 36893488147419103228 bytes (34359738368.0 GiB), more than f16c's limit of 8589934592 bytes per tensor (raise it with --max-tensor-bytes=N or F16C_MAX_TENSOR_BYTES)
func.func @splat(%x: tensor<2xf32>) -> tensor<9223372036854775807xf32> {
  %c = "tosa.const"() <{values = dense<1.0> : tensor<9223372036854775807xf32>}> : () -> tensor<9223372036854775807xf32>
  return %c : tensor<9223372036854775807xf32>
}

// -----

// CHECK: tensor-limit.mlir:[[# @LINE + 3]]:8: error: 'tosa.tile' result: 'tensor<1048576x1048576xf32>' is 4398046511104 bytes (4096.0 GiB), more than f16c's limit
func.func @tile(%x: tensor<1x1xf32>) -> tensor<1048576x1048576xf32> {
  %m = tosa.const_shape {values = dense<[1048576, 1048576]> : tensor<2xindex>} : () -> !tosa.shape<2>
  %t = tosa.tile %x, %m : (tensor<1x1xf32>, !tosa.shape<2>) -> tensor<1048576x1048576xf32>
  return %t : tensor<1048576x1048576xf32>
}

// -----

// An argument too: f16c would allocate it for the run.
// CHECK: tensor-limit.mlir:[[# @LINE + 1]]:{{[0-9]+}}: error: argument #0 of '@arg': 'tensor<4294967296x4xf32>' is 68719476736 bytes (64.0 GiB), more than f16c's limit
func.func @arg(%x: tensor<4294967296x4xf32>) -> tensor<4294967296x4xf32> {
  return %x : tensor<4294967296x4xf32>
}
