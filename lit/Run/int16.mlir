// i16 and i48 (TOSA's 16-bit integer extension), values computed by hand from the TOSA 1.0
// pseudo-code (lit/Inputs/make_npy.py has x), on the JIT, the reference interpreter, the LLVM
// x86-64 backend and AArch64 under qemu.
// x = [-32768, -1, 0, 127, 128, 32767, 1000, -1000]
// RUN: %f16c run %s --function=shifts --input %inputs/x_8_i16.npy | FileCheck %s --check-prefix=SHIFT
// RUN: %f16c run %s --function=shifts --input %inputs/x_8_i16.npy --target=reference | FileCheck %s --check-prefix=SHIFT
// RUN: %f16c run %s --function=shifts --input %inputs/x_8_i16.npy --backend=llvm | FileCheck %s --check-prefix=SHIFT
// RUN: %f16c run %s --function=shifts --input %inputs/x_8_i16.npy --target=aarch64 | FileCheck %s --check-prefix=SHIFT
// Left shift wraps at 16 bits; the logical right shift shifts zeros in at bit 15; the
// arithmetic one rounds by the last bit shifted out.
// SHIFT: result #0: tensor<8xi16> = [0, -2, 0, 254, 256, -2, 2000, -2000]
// SHIFT: result #1: tensor<8xi16> = [16384, 32767, 0, 63, 64, 16383, 500, 32268]
// SHIFT: result #2: tensor<8xi16> = [-4096, 0, 0, 16, 16, 4096, 125, -125]
func.func @shifts(%x: tensor<8xi16>) -> (tensor<8xi16>, tensor<8xi16>, tensor<8xi16>) {
  %one = "tosa.const"() <{values = dense<1> : tensor<1xi16>}> : () -> tensor<1xi16>
  %three = "tosa.const"() <{values = dense<3> : tensor<1xi16>}> : () -> tensor<1xi16>
  %0 = tosa.logical_left_shift %x, %one : (tensor<8xi16>, tensor<1xi16>) -> tensor<8xi16>
  %1 = tosa.logical_right_shift %x, %one : (tensor<8xi16>, tensor<1xi16>) -> tensor<8xi16>
  %2 = tosa.arithmetic_right_shift %x, %three {round = true} : (tensor<8xi16>, tensor<1xi16>) -> tensor<8xi16>
  return %0, %1, %2 : tensor<8xi16>, tensor<8xi16>, tensor<8xi16>
}

// tosa.table on i16: 513 entries table[i] = (i² mod 1000) − 500, entry (x + 32768) >> 7 and the
// next interpolated by x & 127: (base << 7) + (next − base)·fraction, an i32.
// RUN: %f16c run %s --function=table --input %inputs/x_8_i16.npy | FileCheck %s --check-prefix=TABLE
// RUN: %f16c run %s --function=table --input %inputs/x_8_i16.npy --target=reference | FileCheck %s --check-prefix=TABLE
// RUN: %f16c run %s --function=table --input %inputs/x_8_i16.npy --backend=llvm | FileCheck %s --check-prefix=TABLE
// RUN: %f16c run %s --function=table --input %inputs/x_8_i16.npy --target=aarch64 | FileCheck %s --check-prefix=TABLE
// TABLE: result #0: tensor<8xi32> = [-64000, 4097, 4608, -57241, -57728, -45591, 12440, -11560]
func.func @table(%x: tensor<8xi16>) -> tensor<8xi32> {
  %t = "tosa.const"() <{values = dense<[-500, -499, -496, -491, -484, -475, -464, -451, -436, -419, -400, -379, -356, -331, -304, -275, -244, -211, -176, -139, -100, -59, -16, 29, 76, 125, 176, 229, 284, 341, 400, 461, -476, -411, -344, -275, -204, -131, -56, 21, 100, 181, 264, 349, 436, -475, -384, -291, -196, -99, 0, 101, 204, 309, 416, -475, -364, -251, -136, -19, 100, 221, 344, 469, -404, -275, -144, -11, 124, 261, 400, -459, -316, -171, -24, 125, 276, 429, -416, -259, -100, 61, 224, 389, -444, -275, -104, 69, 244, 421, -400, -219, -36, 149, 336, -475, -284, -91, 104, 301, -500, -299, -96, 109, 316, -475, -264, -51, 164, 381, -400, -179, 44, 269, 496, -275, -44, 189, 424, -339, -100, 141, 384, -371, -124, 125, 376, -371, -116, 141, 400, -339, -76, 189, 456, -275, -4, 269, -456, -179, 100, 381, -336, -51, 236, -475, -184, 109, 404, -299, 0, 301, -396, -91, 216, -475, -164, 149, 464, -219, 100, 421, -256, 69, 396, -275, 56, 389, -276, 61, 400, -259, 84, 429, -224, 125, 476, -171, 184, -459, -100, 261, -376, -11, 356, -275, 96, 469, -156, 221, -400, -19, 364, -251, 136, -475, -84, 309, -296, 101, -500, -99, 304, -291, 116, -475, -64, 349, -236, 181, -400, 21, 444, -131, 296, -275, 156, -411, 24, 461, -100, 341, -216, 229, -324, 125, -424, 29, 484, -59, 400, -139, 324, -211, 256, -275, 196, -331, 144, -379, 100, -419, 64, -451, 36, -475, 16, -491, 4, -499, 0, -499, 4, -491, 16, -475, 36, -451, 64, -419, 100, -379, 144, -331, 196, -275, 256, -211, 324, -139, 400, -59, 484, 29, -424, 125, -324, 229, -216, 341, -100, 461, 24, -411, 156, -275, 296, -131, 444, 21, -400, 181, -236, 349, -64, -475, 116, -291, 304, -99, -500, 101, -296, 309, -84, -475, 136, -251, 364, -19, -400, 221, -156, 469, 96, -275, 356, -11, -376, 261, -100, -459, 184, -171, 476, 125, -224, 429, 84, -259, 400, 61, -276, 389, 56, -275, 396, 69, -256, 421, 100, -219, 464, 149, -164, -475, 216, -91, -396, 301, 0, -299, 404, 109, -184, -475, 236, -51, -336, 381, 100, -179, -456, 269, -4, -275, 456, 189, -76, -339, 400, 141, -116, -371, 376, 125, -124, -371, 384, 141, -100, -339, 424, 189, -44, -275, 496, 269, 44, -179, -400, 381, 164, -51, -264, -475, 316, 109, -96, -299, -500, 301, 104, -91, -284, -475, 336, 149, -36, -219, -400, 421, 244, 69, -104, -275, -444, 389, 224, 61, -100, -259, -416, 429, 276, 125, -24, -171, -316, -459, 400, 261, 124, -11, -144, -275, -404, 469, 344, 221, 100, -19, -136, -251, -364, -475, 416, 309, 204, 101, 0, -99, -196, -291, -384, -475, 436, 349, 264, 181, 100, 21, -56, -131, -204, -275, -344, -411, -476, 461, 400, 341, 284, 229, 176, 125, 76, 29, -16, -59, -100, -139, -176, -211, -244, -275, -304, -331, -356, -379, -400, -419, -436, -451, -464, -475, -484, -491, -496, -499, -500, -499, -496, -491, -484, -475, -464, -451, -436, -419, -400, -379, -356]> : tensor<513xi16>}> : () -> tensor<513xi16>
  %0 = tosa.table %x, %t : (tensor<8xi16>, tensor<513xi16>) -> tensor<8xi32>
  return %0 : tensor<8xi32>
}

// An i16 x i8 conv2d accumulating in i48 (weights 100 and -3, bias 5 and 0), then a rescale of
// the i48 values to i16 with a 16-bit multiplier (scale32 = false): (v·16384 + 2^14) >> 15,
// clipped to i16.
// RUN: %f16c run %s --function=conv48 --input %inputs/x_8_i16.npy | FileCheck %s --check-prefix=CONV
// RUN: %f16c run %s --function=conv48 --input %inputs/x_8_i16.npy --target=reference | FileCheck %s --check-prefix=CONV
// RUN: %f16c run %s --function=conv48 --input %inputs/x_8_i16.npy --backend=llvm | FileCheck %s --check-prefix=CONV
// RUN: %f16c run %s --function=conv48 --input %inputs/x_8_i16.npy --target=aarch64 | FileCheck %s --check-prefix=CONV
// CONV: result #0: tensor<1x1x8x2xi48> = [-3276795, 98304, -95, 3, 5, 0, 12705, -381, 12805, -384, 3276705, -98301, 100005, -3000, -99995, 3000]
// CONV: result #1: tensor<1x1x8x2xi16> = [-32768, 32767, -47, 2, 3, 0, 6353, -190, 6403, -192, 32767, -32768, 32767, -1500, -32768, 1500]
func.func @conv48(%x: tensor<8xi16>) -> (tensor<1x1x8x2xi48>, tensor<1x1x8x2xi16>) {
  %s = tosa.const_shape {values = dense<[1, 1, 8, 1]> : tensor<4xindex>} : () -> !tosa.shape<4>
  %x4 = tosa.reshape %x, %s : (tensor<8xi16>, !tosa.shape<4>) -> tensor<1x1x8x1xi16>
  %w = "tosa.const"() <{values = dense<[[[[100]]], [[[-3]]]]> : tensor<2x1x1x1xi8>}> : () -> tensor<2x1x1x1xi8>
  %b = "tosa.const"() <{values = dense<[5, 0]> : tensor<2xi48>}> : () -> tensor<2xi48>
  %xz = "tosa.const"() <{values = dense<0> : tensor<1xi16>}> : () -> tensor<1xi16>
  %wz = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %0 = tosa.conv2d %x4, %w, %b, %xz, %wz {acc_type = i48, dilation = array<i64: 1, 1>, pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 1, 1>} : (tensor<1x1x8x1xi16>, tensor<2x1x1x1xi8>, tensor<2xi48>, tensor<1xi16>, tensor<1xi8>) -> tensor<1x1x8x2xi48>
  %m = "tosa.const"() <{values = dense<16384> : tensor<1xi16>}> : () -> tensor<1xi16>
  %sh = "tosa.const"() <{values = dense<15> : tensor<1xi8>}> : () -> tensor<1xi8>
  %iz = "tosa.const"() <{values = dense<0> : tensor<1xi48>}> : () -> tensor<1xi48>
  %oz = "tosa.const"() <{values = dense<0> : tensor<1xi16>}> : () -> tensor<1xi16>
  %1 = tosa.rescale %0, %m, %sh, %iz, %oz {input_unsigned = false, output_unsigned = false, per_channel = false, rounding_mode = SINGLE_ROUND, scale32 = false} : (tensor<1x1x8x2xi48>, tensor<1xi16>, tensor<1xi8>, tensor<1xi48>, tensor<1xi16>) -> tensor<1x1x8x2xi16>
  return %0, %1 : tensor<1x1x8x2xi48>, tensor<1x1x8x2xi16>
}
