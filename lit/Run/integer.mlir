// The shifts, clz, intdiv and table of TOSA 1.0 on integer inputs, computed by hand from the
// specification's pseudo-code, on the JIT, the reference interpreter and the LLVM x86-64
// backend. Shift amounts outside 0..=31 are taken modulo 32 (33 shifts by 1); a zero divisor
// gives 0 (both left unpredictable by the specification).
// RUN: %f16c run %s --function=shifts --input %inputs/a_6_i32.npy --input %inputs/s_6_i32.npy | FileCheck %s --check-prefix=SHIFT
// RUN: %f16c run %s --function=shifts --input %inputs/a_6_i32.npy --input %inputs/s_6_i32.npy --target=reference | FileCheck %s --check-prefix=SHIFT
// RUN: %f16c run %s --function=shifts --input %inputs/a_6_i32.npy --input %inputs/s_6_i32.npy --backend=llvm | FileCheck %s --check-prefix=SHIFT
// RUN: %f16c run %s --function=div_clz --input %inputs/a_6_i32.npy --input %inputs/s_6_i32.npy | FileCheck %s --check-prefix=DIV
// RUN: %f16c run %s --function=div_clz --input %inputs/a_6_i32.npy --input %inputs/s_6_i32.npy --target=reference | FileCheck %s --check-prefix=DIV
// RUN: %f16c run %s --function=div_clz --input %inputs/a_6_i32.npy --input %inputs/s_6_i32.npy --backend=llvm | FileCheck %s --check-prefix=DIV

// a = [-7, 5, 2^31-1, -2^31, 96, 100], s = [1, 1, 1, 31, 33, 0]
// SHIFT: result #0: tensor<6xi32> = [-14, 10, -2, 0, 192, 100]
// SHIFT: result #1: tensor<6xi32> = [2147483644, 2, 1073741823, 1, 48, 100]
// SHIFT: result #2: tensor<6xi32> = [-4, 2, 1073741823, -1, 48, 100]
// SHIFT: result #3: tensor<6xi32> = [-3, 3, 1073741824, -1, 48, 100]
func.func @shifts(%a: tensor<6xi32>, %s: tensor<6xi32>) -> (tensor<6xi32>, tensor<6xi32>, tensor<6xi32>, tensor<6xi32>) {
  %0 = tosa.logical_left_shift %a, %s : (tensor<6xi32>, tensor<6xi32>) -> tensor<6xi32>
  %1 = tosa.logical_right_shift %a, %s : (tensor<6xi32>, tensor<6xi32>) -> tensor<6xi32>
  %2 = tosa.arithmetic_right_shift %a, %s {round = false} : (tensor<6xi32>, tensor<6xi32>) -> tensor<6xi32>
  %3 = tosa.arithmetic_right_shift %a, %s {round = true} : (tensor<6xi32>, tensor<6xi32>) -> tensor<6xi32>
  return %0, %1, %2, %3 : tensor<6xi32>, tensor<6xi32>, tensor<6xi32>, tensor<6xi32>
}

// DIV: result #0: tensor<6xi32> = [-7, 5, 2147483647, -69273666, 2, 0]
// DIV: result #1: tensor<6xi32> = [0, 29, 1, 0, 25, 25]
// reverse(s) = [0, 33, 31, 1, 1, 1], through identity, or a:
// DIV: result #2: tensor<6xi32> = [-7, 37, 2147483647, -2147483647, 97, 101]
func.func @div_clz(%a: tensor<6xi32>, %s: tensor<6xi32>) -> (tensor<6xi32>, tensor<6xi32>, tensor<6xi32>) {
  %0 = tosa.intdiv %a, %s : (tensor<6xi32>, tensor<6xi32>) -> tensor<6xi32>
  %1 = tosa.clz %a : (tensor<6xi32>) -> tensor<6xi32>
  %r = tosa.reverse %s {axis = 0 : i32} : (tensor<6xi32>) -> tensor<6xi32>
  %i = tosa.identity %r : (tensor<6xi32>) -> tensor<6xi32>
  %2 = tosa.bitwise_or %i, %a : (tensor<6xi32>, tensor<6xi32>) -> tensor<6xi32>
  return %0, %1, %2 : tensor<6xi32>, tensor<6xi32>, tensor<6xi32>
}

// tosa.table on i8: table[x + 128] with table[i] = (7 i mod 256) - 128; x = [1, 2, 3, -1, -2, -3].
// RUN: %f16c run %s --function=table --input %inputs/x123_i8.npy | FileCheck %s --check-prefix=TABLE
// RUN: %f16c run %s --function=table --input %inputs/x123_i8.npy --target=reference | FileCheck %s --check-prefix=TABLE
// RUN: %f16c run %s --function=table --input %inputs/x123_i8.npy --backend=llvm | FileCheck %s --check-prefix=TABLE
// TABLE: result #0: tensor<1x2x3xi8> = [7, 14, 21, -7, -14, -21]
func.func @table(%x: tensor<1x2x3xi8>) -> tensor<1x2x3xi8> {
  %t = "tosa.const"() <{values = dense<[-128, -121, -114, -107, -100, -93, -86, -79, -72, -65, -58, -51, -44, -37, -30, -23, -16, -9, -2, 5, 12, 19, 26, 33, 40, 47, 54, 61, 68, 75, 82, 89, 96, 103, 110, 117, 124, -125, -118, -111, -104, -97, -90, -83, -76, -69, -62, -55, -48, -41, -34, -27, -20, -13, -6, 1, 8, 15, 22, 29, 36, 43, 50, 57, 64, 71, 78, 85, 92, 99, 106, 113, 120, 127, -122, -115, -108, -101, -94, -87, -80, -73, -66, -59, -52, -45, -38, -31, -24, -17, -10, -3, 4, 11, 18, 25, 32, 39, 46, 53, 60, 67, 74, 81, 88, 95, 102, 109, 116, 123, -126, -119, -112, -105, -98, -91, -84, -77, -70, -63, -56, -49, -42, -35, -28, -21, -14, -7, 0, 7, 14, 21, 28, 35, 42, 49, 56, 63, 70, 77, 84, 91, 98, 105, 112, 119, 126, -123, -116, -109, -102, -95, -88, -81, -74, -67, -60, -53, -46, -39, -32, -25, -18, -11, -4, 3, 10, 17, 24, 31, 38, 45, 52, 59, 66, 73, 80, 87, 94, 101, 108, 115, 122, -127, -120, -113, -106, -99, -92, -85, -78, -71, -64, -57, -50, -43, -36, -29, -22, -15, -8, -1, 6, 13, 20, 27, 34, 41, 48, 55, 62, 69, 76, 83, 90, 97, 104, 111, 118, 125, -124, -117, -110, -103, -96, -89, -82, -75, -68, -61, -54, -47, -40, -33, -26, -19, -12, -5, 2, 9, 16, 23, 30, 37, 44, 51, 58, 65, 72, 79, 86, 93, 100, 107, 114, 121]> : tensor<256xi8>}> : () -> tensor<256xi8>
  %0 = tosa.table %x, %t : (tensor<1x2x3xi8>, tensor<256xi8>) -> tensor<1x2x3xi8>
  return %0 : tensor<1x2x3xi8>
}

// tosa.rescale per channel: x = [[1, 2, 3], [-1, -2, -3]] − input_zp 3 = [[-2, -1, 0], [-4, -5, -6]];
// channel 0 multiplies by 2^30 / 2^29 = 2, channel 1 by 3·2^29 / 2^30 = 1.5 (round half up:
// -1.5 → -1, -7.5 → -7), channel 2 by 2^30 / 2^31 = 0.5 (-3 stays -3, 0 → 0); output_zp 100.
// RUN: %f16c run %s --function=rescale --input %inputs/x123_i8.npy | FileCheck %s --check-prefix=RESCALE
// RUN: %f16c run %s --function=rescale --input %inputs/x123_i8.npy --target=reference | FileCheck %s --check-prefix=RESCALE
// RUN: %f16c run %s --function=rescale --input %inputs/x123_i8.npy --backend=llvm | FileCheck %s --check-prefix=RESCALE
// RESCALE: result #0: tensor<1x2x3xi8> = [96, 99, 100, 92, 93, 97]
func.func @rescale(%x: tensor<1x2x3xi8>) -> tensor<1x2x3xi8> {
  %m = "tosa.const"() <{values = dense<[1073741824, 1610612736, 1073741824]> : tensor<3xi32>}> : () -> tensor<3xi32>
  %s = "tosa.const"() <{values = dense<[29, 30, 31]> : tensor<3xi8>}> : () -> tensor<3xi8>
  %iz = "tosa.const"() <{values = dense<3> : tensor<1xi8>}> : () -> tensor<1xi8>
  %oz = "tosa.const"() <{values = dense<100> : tensor<1xi8>}> : () -> tensor<1xi8>
  %0 = tosa.rescale %x, %m, %s, %iz, %oz {input_unsigned = false, output_unsigned = false, per_channel = true, rounding_mode = SINGLE_ROUND, scale32 = true} : (tensor<1x2x3xi8>, tensor<3xi32>, tensor<3xi8>, tensor<1xi8>, tensor<1xi8>) -> tensor<1x2x3xi8>
  return %0 : tensor<1x2x3xi8>
}
