// An i8 convolution (with padding and an input zero point) of two quantized values
// concatenated along the channels: the LLVM CPU backends fold the concatenation into the
// convolution and, since their micro-kernel multiplies floats only, concatenate the parts
// first in the convolution's own loops.
func.func @forward(%x: tensor<1x6x7x5xf32>) -> tensor<1x6x7x3xi32> {
  %sh = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %q = "tosa.const"() <{values = dense<16.0> : tensor<1x1x1x1xf32>}> : () -> tensor<1x1x1x1xf32>
  %r = "tosa.const"() <{values = dense<-9.0> : tensor<1x1x1x1xf32>}> : () -> tensor<1x1x1x1xf32>
  %xs = tosa.mul %x, %q, %sh : (tensor<1x6x7x5xf32>, tensor<1x1x1x1xf32>, tensor<1xi8>) -> tensor<1x6x7x5xf32>
  %ys = tosa.mul %x, %r, %sh : (tensor<1x6x7x5xf32>, tensor<1x1x1x1xf32>, tensor<1xi8>) -> tensor<1x6x7x5xf32>
  %xq = tosa.cast %xs : (tensor<1x6x7x5xf32>) -> tensor<1x6x7x5xi8>
  %yq = tosa.cast %ys : (tensor<1x6x7x5xf32>) -> tensor<1x6x7x5xi8>
  %cat = tosa.concat %xq, %yq {axis = 3 : i32} : (tensor<1x6x7x5xi8>, tensor<1x6x7x5xi8>) -> tensor<1x6x7x10xi8>
  %w = "tosa.const"() <{values = dense<[-127, -90, -53, -16, 21, 58, 95, -123, -86, -49, -12, 25, 62, 99, -119, -82, -45, -8, 29, 66, 103, -115, -78, -41, -4, 33, 70, 107, -111, -74, -37, 0, 37, 74, 111, -107, -70, -33, 4, 41, 78, 115, -103, -66, -29, 8, 45, 82, 119, -99, -62, -25, 12, 49, 86, 123, -95, -58, -21, 16, 53, 90, 127, -91, -54, -17, 20, 57, 94, -124, -87, -50, -13, 24, 61, 98, -120, -83, -46, -9, 28, 65, 102, -116, -79, -42, -5, 32, 69, 106, -112, -75, -38, -1, 36, 73, 110, -108, -71, -34, 3, 40, 77, 114, -104, -67, -30, 7, 44, 81, 118, -100, -63, -26, 11, 48, 85, 122, -96, -59, -22, 15, 52, 89, 126, -92, -55, -18, 19, 56, 93, -125, -88, -51, -14, 23, 60, 97, -121, -84, -47, -10, 27, 64, 101, -117, -80, -43, -6, 31, 68, 105, -113, -76, -39, -2, 35, 72, 109, -109, -72, -35, 2, 39, 76, 113, -105, -68, -31, 6, 43, 80, 117, -101, -64, -27, 10, 47, 84, 121, -97, -60, -23, 14, 51, 88, 125, -93, -56, -19, 18, 55, 92, -126, -89, -52, -15, 22, 59, 96, -122, -85, -48, -11, 26, 63, 100, -118, -81, -44, -7, 30, 67, 104, -114, -77, -40, -3, 34, 71, 108, -110, -73, -36, 1, 38, 75, 112, -106, -69, -32, 5, 42, 79, 116, -102, -65, -28, 9, 46, 83, 120, -98, -61, -24, 13, 50, 87, 124, -94, -57, -20, 17, 54, 91, -127, -90, -53, -16, 21, 58, 95, -123, -86, -49, -12, 25, 62, 99, -119]> : tensor<270xi8>}> : () -> tensor<270xi8>
  %wshape = tosa.const_shape {values = dense<[3, 3, 3, 10]> : tensor<4xindex>} : () -> !tosa.shape<4>
  %w4 = tosa.reshape %w, %wshape : (tensor<270xi8>, !tosa.shape<4>) -> tensor<3x3x3x10xi8>
  %b = "tosa.const"() <{values = dense<[100, -200, 300]> : tensor<3xi32>}> : () -> tensor<3xi32>
  %xz = "tosa.const"() <{values = dense<-2> : tensor<1xi8>}> : () -> tensor<1xi8>
  %wz = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %c = tosa.conv2d %cat, %w4, %b, %xz, %wz {acc_type = i32, dilation = array<i64: 1, 1>, pad = array<i64: 1, 1, 1, 1>, stride = array<i64: 1, 1>} : (tensor<1x6x7x10xi8>, tensor<3x3x3x10xi8>, tensor<3xi32>, tensor<1xi8>, tensor<1xi8>) -> tensor<1x6x7x3xi32>
  return %c : tensor<1x6x7x3xi32>
}
