// A small quantized block as a quantized export writes it, by hand from the TOSA 1.0
// specification (torch-mlir is not available where this was written): quantize the f32 input
// (mul by 16, cast to i8, which rounds and saturates), an i8 conv2d with an input zero point
// and an i32 bias, a per-channel rescale back to i8 with double rounding, max and average
// pooling on i8 with zero points, and dequantize. The JIT on one and two threads, the LLVM
// x86-64 backend and AArch64 (under qemu) print what the reference interpreter prints.
// RUN: %f16c run %s --input %inputs/x_1x8x8x8_f32.npy > %t.jit
// RUN: %f16c run %s --input %inputs/x_1x8x8x8_f32.npy --target=reference > %t.ref
// RUN: %f16c run %s --input %inputs/x_1x8x8x8_f32.npy --threads=2 > %t.jit2
// RUN: diff %t.jit %t.ref
// RUN: diff %t.jit2 %t.ref
// RUN: FileCheck %s --input-file=%t.jit
// RUN: %f16c run %s --input %inputs/x_1x8x8x8_f32.npy --backend=llvm > %t.llvm
// RUN: diff %t.llvm %t.ref
// RUN: %f16c run %s --input %inputs/x_1x8x8x8_f32.npy --target=aarch64 > %t.a64
// RUN: diff %t.a64 %t.ref
// CHECK: result #0: tensor<1x2x2x4xf32> = [
// CHECK: result #1: tensor<1x2x2x4xi8> = [

func.func @quantized(%x: tensor<1x8x8x8xf32>) -> (tensor<1x2x2x4xf32>, tensor<1x2x2x4xi8>) {
  %q = "tosa.const"() <{values = dense<16.0> : tensor<1x1x1x1xf32>}> : () -> tensor<1x1x1x1xf32>
  %sh = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %xs = tosa.mul %x, %q, %sh : (tensor<1x8x8x8xf32>, tensor<1x1x1x1xf32>, tensor<1xi8>) -> tensor<1x8x8x8xf32>
  %xq = tosa.cast %xs : (tensor<1x8x8x8xf32>) -> tensor<1x8x8x8xi8>
  %w = "tosa.const"() <{values = dense<[-127, -90, -53, -16, 21, 58, 95, -123, -86, -49, -12, 25, 62, 99, -119, -82, -45, -8, 29, 66, 103, -115, -78, -41, -4, 33, 70, 107, -111, -74, -37, 0, 37, 74, 111, -107, -70, -33, 4, 41, 78, 115, -103, -66, -29, 8, 45, 82, 119, -99, -62, -25, 12, 49, 86, 123, -95, -58, -21, 16, 53, 90, 127, -91, -54, -17, 20, 57, 94, -124, -87, -50, -13, 24, 61, 98, -120, -83, -46, -9, 28, 65, 102, -116, -79, -42, -5, 32, 69, 106, -112, -75, -38, -1, 36, 73, 110, -108, -71, -34, 3, 40, 77, 114, -104, -67, -30, 7, 44, 81, 118, -100, -63, -26, 11, 48, 85, 122, -96, -59, -22, 15, 52, 89, 126, -92, -55, -18, 19, 56, 93, -125, -88, -51, -14, 23, 60, 97, -121, -84, -47, -10, 27, 64, 101, -117, -80, -43, -6, 31, 68, 105, -113, -76, -39, -2, 35, 72, 109, -109, -72, -35, 2, 39, 76, 113, -105, -68, -31, 6, 43, 80, 117, -101, -64, -27, 10, 47, 84, 121, -97, -60, -23, 14, 51, 88, 125, -93, -56, -19, 18, 55, 92, -126, -89, -52, -15, 22, 59, 96, -122, -85, -48, -11, 26, 63, 100, -118, -81, -44, -7, 30, 67, 104, -114, -77, -40, -3, 34, 71, 108, -110, -73, -36, 1, 38, 75, 112, -106, -69, -32, 5, 42, 79, 116, -102, -65, -28, 9, 46, 83, 120, -98, -61, -24, 13, 50, 87, 124, -94, -57, -20, 17, 54, 91, -127, -90, -53, -16, 21, 58, 95, -123, -86, -49, -12, 25, 62, 99, -119, -82, -45, -8, 29, 66, 103, -115, -78, -41, -4, 33, 70, 107, -111, -74, -37, 0, 37]> : tensor<288xi8>}> : () -> tensor<288xi8>
  %wshape = tosa.const_shape {values = dense<[4, 3, 3, 8]> : tensor<4xindex>} : () -> !tosa.shape<4>
  %w4 = tosa.reshape %w, %wshape : (tensor<288xi8>, !tosa.shape<4>) -> tensor<4x3x3x8xi8>
  %b = "tosa.const"() <{values = dense<[100, -200, 300, -400]> : tensor<4xi32>}> : () -> tensor<4xi32>
  %xz = "tosa.const"() <{values = dense<-2> : tensor<1xi8>}> : () -> tensor<1xi8>
  %wz = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %c = tosa.conv2d %xq, %w4, %b, %xz, %wz {acc_type = i32, dilation = array<i64: 1, 1>, pad = array<i64: 1, 1, 1, 1>, stride = array<i64: 1, 1>} : (tensor<1x8x8x8xi8>, tensor<4x3x3x8xi8>, tensor<4xi32>, tensor<1xi8>, tensor<1xi8>) -> tensor<1x8x8x4xi32>
  %m = "tosa.const"() <{values = dense<[1518500250, 1300000000, 2000000000, 1100000000]> : tensor<4xi32>}> : () -> tensor<4xi32>
  %s = "tosa.const"() <{values = dense<[42, 41, 43, 40]> : tensor<4xi8>}> : () -> tensor<4xi8>
  %iz = "tosa.const"() <{values = dense<0> : tensor<1xi32>}> : () -> tensor<1xi32>
  %oz = "tosa.const"() <{values = dense<3> : tensor<1xi8>}> : () -> tensor<1xi8>
  %r = tosa.rescale %c, %m, %s, %iz, %oz {input_unsigned = false, output_unsigned = false, per_channel = true, rounding_mode = DOUBLE_ROUND, scale32 = true} : (tensor<1x8x8x4xi32>, tensor<4xi32>, tensor<4xi8>, tensor<1xi32>, tensor<1xi8>) -> tensor<1x8x8x4xi8>
  %mp = tosa.max_pool2d %r {kernel = array<i64: 2, 2>, pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 2, 2>} : (tensor<1x8x8x4xi8>) -> tensor<1x4x4x4xi8>
  %pz = "tosa.const"() <{values = dense<3> : tensor<1xi8>}> : () -> tensor<1xi8>
  %ap = tosa.avg_pool2d %mp, %pz, %pz {acc_type = i32, kernel = array<i64: 3, 3>, pad = array<i64: 1, 0, 1, 0>, stride = array<i64: 2, 2>} : (tensor<1x4x4x4xi8>, tensor<1xi8>, tensor<1xi8>) -> tensor<1x2x2x4xi8>
  %f = tosa.cast %ap : (tensor<1x2x2x4xi8>) -> tensor<1x2x2x4xf32>
  %dq = "tosa.const"() <{values = dense<0.0625> : tensor<1x1x1x1xf32>}> : () -> tensor<1x1x1x1xf32>
  %y = tosa.mul %f, %dq, %sh : (tensor<1x2x2x4xf32>, tensor<1x1x1x1xf32>, tensor<1xi8>) -> tensor<1x2x2x4xf32>
  return %y, %ap : tensor<1x2x2x4xf32>, tensor<1x2x2x4xi8>
}
