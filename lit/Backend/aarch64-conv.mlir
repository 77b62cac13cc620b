// The LLVM CPU backend's convolutions and pools on cnn_small (3x3 convolutions with padding, a
// 2x2 average pool): the padded input is written once per run (a _pad_a step, each row one
// constant-length copy: vector loads and stores), so the tiles read it at addresses linear in
// the row and the tap, with no bounds test per value; a run of A values along k (a kernel row's
// three taps of three channels lie next to each other) is one vector load per row, each value
// multiplying from its lane (FMLA by element, lanes 0 to 3 of four f32, 0 to 7 of eight f16);
// the pool computes a pixel's channels in vectors, an output row per work item. The 16 x 16
// transpose before the sums moves square tiles through registers (4 x 4 in f32: four vector
// loads, two rounds of zip1/zip2, four vector stores; 8 x 8 in f16). In fp16 the casts beside the copies and the pool are folded
// into them: the input transpose converts f32 planes to interleaved f16 (fcvtn, st3), the pool
// rounds its result to f16 as it stores it, and the last transpose widens its tiles (fcvtl).
// RUN: %f16c compile %models/cnn_small.tosa.mlir --target=aarch64 --precision=fp32 --emit=asm | FileCheck %s
// RUN: %f16c compile %models/cnn_small.tosa.mlir --target=aarch64 --accumulate=f16 --emit=asm | FileCheck %s --check-prefix=ACC16
// CHECK-LABEL: f16c_k1_conv2d_pad_a:
// CHECK: ldp q{{[0-9]+}}, q{{[0-9]+}}, [x{{[0-9]+}}
// CHECK-LABEL: f16c_k1_conv2d:
// CHECK-DAG: fmla v{{[0-9]+}}.4s, v{{[0-9]+}}.4s, v{{[0-9]+}}.s[3]
// CHECK-DAG: fmla v{{[0-9]+}}.4s, v{{[0-9]+}}.4s, v{{[0-9]+}}.s[1]
// CHECK-DAG: fmla v{{[0-9]+}}.4s, v{{[0-9]+}}.4s, v{{[0-9]+}}.s[2]
// CHECK-LABEL: f16c_k2_avg_pool2d:
// CHECK: fadd v{{[0-9]+}}.4s, v{{[0-9]+}}.4s, v{{[0-9]+}}.4s
// CHECK-LABEL: f16c_k3_conv2d_pad_a:
// CHECK-LABEL: f16c_k4_transpose_0:
// CHECK-COUNT-4: ldr q{{[0-9]+}}
// CHECK: zip1 v{{[0-9]+}}.4s, v{{[0-9]+}}.4s, v{{[0-9]+}}.4s
// CHECK: zip2 v{{[0-9]+}}.4s, v{{[0-9]+}}.4s, v{{[0-9]+}}.4s
// The fp16-accumulating tile takes its A values from lanes too; its ReLU (a clamp whose upper
// bound, FLT_MAX, f16 rounds to infinity) compares in half lanes.
// ACC16-LABEL: f16c_k0_transpose_0:
// ACC16: fcvtn2 v{{[0-9]+}}.8h, v{{[0-9]+}}.4s
// ACC16: st3 { v{{[0-9]+}}.8h, v{{[0-9]+}}.8h, v{{[0-9]+}}.8h }
// ACC16-LABEL: f16c_k1_conv2d:
// ACC16-DAG: fmla v{{[0-9]+}}.8h, v{{[0-9]+}}.8h, v{{[0-9]+}}.h[2]
// ACC16-DAG: fmla v{{[0-9]+}}.8h, v{{[0-9]+}}.8h, v{{[0-9]+}}.h[7]
// ACC16-DAG: fcmge v{{[0-9]+}}.8h, v{{[0-9]+}}.8h, #0.0
// ACC16-LABEL: f16c_k2_avg_pool2d:
// ACC16: fcvtn v{{[0-9]+}}.4h, v{{[0-9]+}}.4s
// ACC16-LABEL: f16c_k4_transpose_0:
// ACC16: zip1 v{{[0-9]+}}.8h, v{{[0-9]+}}.8h, v{{[0-9]+}}.8h
// ACC16: fcvtl v{{[0-9]+}}.4s, v{{[0-9]+}}.4h
