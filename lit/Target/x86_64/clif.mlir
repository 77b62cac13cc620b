// f16c compile --target=x86_64 --emit=clif prints the Cranelift IR of every kernel.
// RUN: %f16c compile %s --target=x86_64 --precision=fp32 --emit=clif | FileCheck %s
// RUN: %f16c compile %s --target=x86_64 --precision=fp32 --emit=clif --cpu=x86-64-v2 | FileCheck %s --check-prefix=GEN
// RUN: %f16c compile %s --target=x86_64 --precision=fp32 --emit=clif --cpu=x86-64-v4 | FileCheck %s --check-prefix=V4
// RUN: not %f16c compile %s --target=sm_70 --emit=clif 2>&1 | FileCheck %s --check-prefix=TARGET
// TARGET: error: --emit=clif: nvptx does not produce it (it emits ptx, llvm)

// The add + clamp + add that consume the matmul become its epilogue: one kernel.
// CHECK: ; function @fused: 1 kernels
// CHECK-NEXT: ;   k0_matmul (4 ops)
// CHECK-NEXT: ; arena {{[0-9]+}} bytes (liveness lower bound {{[0-9]+}}), weights 0 bytes

// At x86-64-v3 the GEMMs call the runtime's AVX2 loop: no generated micro-kernel is emitted
// (x86-64-v2's is, below).
// CHECK-NOT: function %gemm_micro_kernel

// B is computed at run time, so a first step packs it into f32 panels, widening f16 four
// lanes at a time in software.
// Each kernel is a wrapper under its name: it copies its buffers' addresses from the program's
// table (v0) into a table on its stack and calls the kernel's body, which reads only that
// table (v0+0, +8, ...), so that kernels alike but for their buffers share one body.
// CHECK-LABEL: function %k0_matmul(i64, i64, i64, i64, i64) -> i32 system_v {
// CHECK: [[LOCAL:v[0-9]+]] = stack_addr.i64 ss0
// CHECK: [[ADDRESS:v[0-9]+]] = load.i64 notrap aligned readonly v0+{{[0-9]+}}
// CHECK-NEXT: store notrap aligned [[ADDRESS]], [[LOCAL]]+{{[0-9]+}}
// CHECK: call fn0([[LOCAL]], v1, v2, v3, v4)
// CHECK-NEXT: return

// CHECK-LABEL: function %k0_matmul_pack_b_body(i64, i64, i64, i64, i64) -> i32 system_v {
// CHECK: uload16x4
// CHECK: return

// The micro-kernel (a function of its own, printed first) accumulates with f32x4 fused
// multiply-adds. The epilogue rounds the product to f16, then adds, clamps and adds, rounding
// after each but the last. The clamp is TOSA's maximum and minimum (keep the first of equal
// values, NaN if either is) with NaN-free bounds: `x < 0 ? 0 : x` (x86's maxps), then the
// canonical NaN where x is NaN, and `6 < y ? 6 : y` (minps) on that, whose NaN is already the
// canonical one. The results are stored as f32 into scratch and the runtime's NarrowF16
// (table entry 17, at byte 136) rounds them to nearest even and packs them, a block of rows
// per call, not four lanes at a time in software.
// Each reduction chunk's tiles are one call of the runtime's loop chosen at compile time: at
// x86-64-v3 (what --emit prints without --cpu) the AVX2 one (GemmTiles, table entry 18, at
// byte 144: A, its stride, B, B's panel stride, k, the tiles, their panel stride,
// micro-panels, panels, flags; 2 = packed A), at x86-64-v4 the AVX-512 one
// (GemmTilesAvx512, entry 28, byte 224), and at x86-64-v2 none: the generated micro-kernel
// (function 0) per tile, with a separate multiply and add (no FMA).
// CHECK-LABEL: function %k0_matmul_body(i64, i64, i64, i64, i64) -> i32 system_v {
// CHECK: [[TILES:v[0-9]+]] = load.i64 notrap aligned readonly v4+144
// CHECK: call_indirect sig{{[0-9]+}}, [[TILES]]({{.*}}v{{[0-9]+}} = 2
// CHECK-NOT: call fn0(
// CHECK: splat.f32x4
// V4-LABEL: function %k0_matmul_body(i64, i64, i64, i64, i64) -> i32 system_v {
// V4: [[TILES:v[0-9]+]] = load.i64 notrap aligned readonly v4+224
// V4: call_indirect sig{{[0-9]+}}, [[TILES]]({{.*}}v{{[0-9]+}} = 2
// V4-LABEL: function %k0_sigmoid_body(
// GEN-LABEL: function %gemm_micro_kernel(i64, i64, i64, i64, i64) system_v {
// GEN-NOT: fma
// GEN: fmul
// GEN: fadd
// GEN-LABEL: function %k0_matmul_body(i64, i64, i64, i64, i64) -> i32 system_v {
// GEN-NOT: v4+144
// GEN: call fn0(
// GEN-LABEL: function %k0_sigmoid_body(
// CHECK: fadd
// CHECK: [[LT:v[0-9]+]] = fcmp lt [[X:v[0-9]+]], [[ZERO:v[0-9]+]]
// CHECK-NEXT: [[LTF:v[0-9]+]] = bitcast.f32x4 little [[LT]]
// CHECK-NEXT: [[MAX:v[0-9]+]] = bitselect [[LTF]], [[ZERO]], [[X]]
// CHECK-NEXT: [[NAN:v[0-9]+]] = fcmp uno [[X]], [[X]]
// CHECK: [[Y:v[0-9]+]] = bitselect [[NAN]], v{{[0-9]+}}, [[MAX]]
// CHECK-NEXT: [[GT:v[0-9]+]] = fcmp lt [[SIX:v[0-9]+]], [[Y]]
// CHECK-NEXT: [[GTF:v[0-9]+]] = bitcast.f32x4 little [[GT]]
// CHECK-NEXT: bitselect [[GTF]], [[SIX]], [[Y]]
// CHECK-NOT: unarrow
// CHECK: [[NARROW:v[0-9]+]] = load.i64 notrap aligned readonly v4+136
// CHECK-NEXT: call_indirect sig{{[0-9]+}}, [[NARROW]](
// CHECK: return
func.func @fused(%a: tensor<1x9x8xf16>, %b: tensor<1x8x13xf16>, %c: tensor<1x9x13xf16>) -> tensor<1x9x13xf16> {
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf16>}> : () -> tensor<1xf16>
  %0 = tosa.matmul %a, %b, %zp, %zp : (tensor<1x9x8xf16>, tensor<1x8x13xf16>, tensor<1xf16>, tensor<1xf16>) -> tensor<1x9x13xf16>
  %1 = tosa.add %c, %c : (tensor<1x9x13xf16>, tensor<1x9x13xf16>) -> tensor<1x9x13xf16>
  %2 = tosa.clamp %1 {min_val = 0.0 : f16, max_val = 6.0 : f16} : (tensor<1x9x13xf16>) -> tensor<1x9x13xf16>
  %3 = tosa.add %0, %2 : (tensor<1x9x13xf16>, tensor<1x9x13xf16>) -> tensor<1x9x13xf16>
  return %3 : tensor<1x9x13xf16>
}

// An elementwise chain on its own: one kernel, bf16 widened by a 16-bit shift.
// CHECK: ; function @chain: 1 kernels
// CHECK-NEXT: ;   k0_sigmoid (2 ops)
// CHECK-LABEL: function %k0_sigmoid_body(i64, i64, i64, i64, i64) -> i32 system_v {
// CHECK: uload16x4
// CHECK: ishl
// The exponential is the contract's own (core/src/math.rs), inline on the four lanes: no call.
// CHECK: nearest
// CHECK: fdiv
// CHECK: fcvt_to_sint_sat.i32x4
// CHECK-NOT: call_indirect
// CHECK: return
func.func @chain(%a: tensor<3x17xbf16>) -> tensor<3x17xbf16> {
  %0 = tosa.sigmoid %a : (tensor<3x17xbf16>) -> tensor<3x17xbf16>
  %1 = tosa.abs %0 : (tensor<3x17xbf16>) -> tensor<3x17xbf16>
  return %1 : tensor<3x17xbf16>
}

// A softmax over the last axis is one row kernel that calls the runtime's softmax loop
// (SoftmaxRowsF32, table entry 30 at byte 240) once per work item of four rows: the item's
// first row's addresses, the rows left (at most four), the row length, no mask.
// CHECK: ; function @softmax: 1 kernels
// CHECK-NEXT: ;   k0_rows_reduce_max (6 ops)
// CHECK-LABEL: function %k0_rows_reduce_max_body(i64, i64, i64, i64, i64) -> i32 system_v {
// CHECK: smin
// CHECK: [[SOFTMAX:v[0-9]+]] = load.i64 notrap aligned readonly v4+240
// CHECK: call_indirect {{.*}}, [[SOFTMAX]]({{.*}}) ; v{{[0-9]+}} = 10, v{{[0-9]+}} = 0, v{{[0-9]+}} = 0
// CHECK-NOT: fadd
// CHECK: return
func.func @softmax(%x: tensor<4x10xf32>) -> tensor<4x10xf32> {
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %0 = tosa.reduce_max %x {axis = 1 : i32} : (tensor<4x10xf32>) -> tensor<4x1xf32>
  %1 = tosa.sub %x, %0 : (tensor<4x10xf32>, tensor<4x1xf32>) -> tensor<4x10xf32>
  %2 = tosa.exp %1 : (tensor<4x10xf32>) -> tensor<4x10xf32>
  %3 = tosa.reduce_sum %2 {axis = 1 : i32} : (tensor<4x10xf32>) -> tensor<4x1xf32>
  %4 = tosa.reciprocal %3 : (tensor<4x1xf32>) -> tensor<4x1xf32>
  %5 = tosa.mul %2, %4, %shift : (tensor<4x10xf32>, tensor<4x1xf32>, tensor<1xi8>) -> tensor<4x10xf32>
  return %5 : tensor<4x10xf32>
}

// A row kernel of other stages (a softmax scaled after) runs in Cranelift's loops: per row a
// max pass (four lanes, then the lanes combined; a zero maximum rescans the row in order for
// its sign), a subtract pass, the exp pass (the runtime's sixteen-lane ExpArrayF32, one call
// per row), a sum pass in index order and a scaling pass, with the row in scratch.
// CHECK: ; function @scaled_softmax: 1 kernels
// CHECK-NEXT: ;   k0_rows_reduce_max (7 ops)
// CHECK-LABEL: function %k0_rows_reduce_max_body(i64, i64, i64, i64, i64) -> i32 system_v {
// CHECK: fcmp.f32x4 ge
// CHECK: fcmp ge
// CHECK: fcmp eq {{.*}} ; v{{[0-9]+}} = 0.0
// CHECK: fcmp.f32 ge
// CHECK: call_indirect
// CHECK: fadd.f32
// CHECK: fdiv
// CHECK: fmul
// CHECK: return
func.func @scaled_softmax(%x: tensor<4x10xf32>) -> tensor<4x10xf32> {
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %two = "tosa.const"() <{values = dense<2.0> : tensor<1x1xf32>}> : () -> tensor<1x1xf32>
  %0 = tosa.reduce_max %x {axis = 1 : i32} : (tensor<4x10xf32>) -> tensor<4x1xf32>
  %1 = tosa.sub %x, %0 : (tensor<4x10xf32>, tensor<4x1xf32>) -> tensor<4x10xf32>
  %2 = tosa.exp %1 : (tensor<4x10xf32>) -> tensor<4x10xf32>
  %3 = tosa.reduce_sum %2 {axis = 1 : i32} : (tensor<4x10xf32>) -> tensor<4x1xf32>
  %4 = tosa.reciprocal %3 : (tensor<4x1xf32>) -> tensor<4x1xf32>
  %5 = tosa.mul %2, %4, %shift : (tensor<4x10xf32>, tensor<4x1xf32>, tensor<1xi8>) -> tensor<4x10xf32>
  %6 = tosa.mul %5, %two, %shift : (tensor<4x10xf32>, tensor<1x1xf32>, tensor<1xi8>) -> tensor<4x10xf32>
  return %6 : tensor<4x10xf32>
}

// A one-row matmul with a constant fp16 weight (a classifier at batch 1) widens its A row
// (300 values, `WidenF16`, table byte 128). Then one call of the runtime's one-row loop
// (GemvPanels, table entry 19, at byte 152: A, B, B's panel stride 4800 bytes, k = 300, the
// sums, the item's panels, flags 4 = fp16 B) computes the work item's panels. At x86-64-v2
// the generated loop widens the weight, 128 rows (1024 values) of each of four panels at a
// time, into scratch by one call to the runtime each (F16C where the CPU has it), and
// multiplies in f32 from scratch; the last 44 rows are a shorter chunk.
// CHECK: ; function @classifier: 1 kernels
// CHECK-LABEL: function %k0_matmul_body(i64, i64, i64, i64, i64) -> i32 system_v {
// CHECK: call_indirect {{.*}} = 300
// CHECK: [[GEMV:v[0-9]+]] = load.i64 notrap aligned readonly v4+152
// CHECK: call_indirect sig{{[0-9]+}}, [[GEMV]]({{.*}}) ; v{{[0-9]+}} = 4800, v{{[0-9]+}} = 300, v{{[0-9]+}} = 4
// CHECK-NOT: = 1024
// CHECK: return
// GEN: ; function @classifier: 1 kernels
// GEN-LABEL: function %k0_matmul_body(i64, i64, i64, i64, i64) -> i32 system_v {
// GEN: call_indirect {{.*}} = 300
// GEN-NOT: v4+152
// GEN-COUNT-4: call_indirect {{.*}} = 1024
// GEN: fmul
// GEN-COUNT-4: call_indirect {{.*}} = 352
// GEN: fmul
// GEN: return
func.func @classifier(%a: tensor<1x1x300xf16>) -> tensor<1x1x40xf16> {
  %w = "tosa.const"() <{values = dense<0.25> : tensor<1x300x40xf16>}> : () -> tensor<1x300x40xf16>
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf16>}> : () -> tensor<1xf16>
  %0 = tosa.matmul %a, %w, %zp, %zp : (tensor<1x1x300xf16>, tensor<1x300x40xf16>, tensor<1xf16>, tensor<1xf16>) -> tensor<1x1x40xf16>
  return %0 : tensor<1x1x40xf16>
}

// Two matmuls of the same shapes on different buffers: two kernels, one body.
// CHECK: ; function @twice: 2 kernels
// CHECK-LABEL: function %k0_matmul(i64, i64, i64, i64, i64) -> i32 system_v {
// CHECK: fn0 = colocated u0:[[$BODY:[0-9]+]] sig0
// CHECK-LABEL: function %k1_matmul(i64, i64, i64, i64, i64) -> i32 system_v {
// CHECK: fn0 = colocated u0:[[$BODY]] sig0
// CHECK: call fn0(
// CHECK-LABEL: function %k0_matmul_body(
// CHECK-NOT: function %k1_matmul_body(
func.func @twice(%a: tensor<1x8x8xf32>, %b: tensor<1x8x8xf32>, %c: tensor<1x8x8xf32>, %d: tensor<1x8x8xf32>) -> (tensor<1x8x8xf32>, tensor<1x8x8xf32>) {
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %0 = tosa.matmul %a, %b, %zp, %zp : (tensor<1x8x8xf32>, tensor<1x8x8xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x8x8xf32>
  %1 = tosa.matmul %c, %d, %zp, %zp : (tensor<1x8x8xf32>, tensor<1x8x8xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x8x8xf32>
  return %0, %1 : tensor<1x8x8xf32>, tensor<1x8x8xf32>
}
