// f16c compile --target=sm_XX --emit=ptx prints the PTX of every kernel (one per lowered kernel),
// after a header with each launch's grid, block and shared memory. Each target gets the PTX ISA
// version it needs; matmul/conv2d with f16 (bf16 from sm_80) inputs run on tensor cores (WMMA
// m16n16k16, f32 accumulation), double-buffered through shared memory.
// RUN: %f16c compile %s --target=sm_70 --emit=ptx | FileCheck %s --check-prefixes=CHECK,SM70
// RUN: %f16c compile %s --target=sm_75 --emit=ptx | FileCheck %s --check-prefixes=CHECK,SM75
// RUN: %f16c compile %s --target=sm_80 --emit=ptx | FileCheck %s --check-prefixes=CHECK,SM80
// RUN: %f16c compile %s --target=sm_86 --emit=ptx | FileCheck %s --check-prefixes=CHECK,SM86
// RUN: %f16c compile %s --target=sm_89 --emit=ptx | FileCheck %s --check-prefixes=CHECK,SM89
// RUN: %f16c compile %s --target=sm_90 --emit=ptx | FileCheck %s --check-prefixes=CHECK,SM90

// CHECK: // function @mm for sm_{{[0-9]+}}: 2 kernels, 2 launches
// CHECK-NEXT: //   f16c_k0_matmul grid [2, 2, 3] block [128, 1, 1] shared 20480 B
// CHECK-NEXT: //   f16c_k1_add grid [{{[0-9]+}}, 1, 1] block [128, 1, 1] shared 0 B
// SM70: .version 6.3
// SM70-NEXT: .target sm_70
// SM75: .version 6.3
// SM75-NEXT: .target sm_75
// SM80: .version 7.0
// SM80-NEXT: .target sm_80
// SM86: .version 7.1
// SM86-NEXT: .target sm_86
// SM89: .version 7.8
// SM89-NEXT: .target sm_89
// SM90: .version 7.8
// SM90-NEXT: .target sm_90

// CHECK-LABEL: .visible .entry f16c_k0_matmul(
// CHECK: .maxntid 128
// CHECK: wmma.load.a.sync.aligned.row.m16n16k16.shared.f16
// CHECK: wmma.load.b.sync.aligned.row.m16n16k16.shared.f16
// CHECK: wmma.mma.sync.aligned.row.row.m16n16k16.f32.f32
// CHECK: wmma.store.d.sync.aligned.row.m16n16k16.shared.f32
// CHECK: bar.sync 0;
// The epilogue rounds once to f16 from the f32 accumulator.
// CHECK: cvt.rn.f16.f32
// CHECK: st.global.b16

// The two f16 adds are one elementwise kernel, two elements per thread in a grid-stride loop:
// each add rounds once, and native half2 arithmetic gives the same bits as f32 then one rounding.
// CHECK-LABEL: .visible .entry f16c_k1_add(
// CHECK: .maxntid 128
// CHECK: ld.global.b32
// CHECK: add.rn.f16x2
// CHECK: add.rn.f16x2
// CHECK: st.global.b32
func.func @mm(%a: tensor<3x100x70xf16>, %b: tensor<3x70x90xf16>, %c: tensor<3x100x90xf16>) -> tensor<3x100x90xf16> {
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf16>}> : () -> tensor<1xf16>
  %0 = tosa.matmul %a, %b, %zp, %zp : (tensor<3x100x70xf16>, tensor<3x70x90xf16>, tensor<1xf16>, tensor<1xf16>) -> tensor<3x100x90xf16>
  %1 = tosa.add %0, %0 : (tensor<3x100x90xf16>, tensor<3x100x90xf16>) -> tensor<3x100x90xf16>
  %2 = tosa.add %1, %c : (tensor<3x100x90xf16>, tensor<3x100x90xf16>) -> tensor<3x100x90xf16>
  return %2 : tensor<3x100x90xf16>
}
