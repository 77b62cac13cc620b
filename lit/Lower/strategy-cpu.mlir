// f16c compile --emit=kernels prints, after each kernel, how the LLVM CPU backends run it
// (LlvmCpuBackend::describe, read from the functions their emitter follows); the artifact's
// kernels carry the same words, which f16c-run --profile prints beside each kernel's time.
// RUN: %f16c compile %s --function=weight --target=x86_64 --backend=llvm --cpu=x86-64-v4 --precision=fp32 --emit=kernels | FileCheck %s --check-prefix=W-V4
// RUN: %f16c compile %s --function=weight --target=x86_64 --backend=llvm --cpu=x86-64-v3 --precision=fp32 --emit=kernels | FileCheck %s --check-prefix=W-V3
// RUN: %f16c compile %s --function=weight --target=x86_64 --backend=llvm --cpu=x86-64-v4+bf16 --precision=bf16 --emit=kernels | FileCheck %s --check-prefix=W-PAIRS
// RUN: %f16c compile %s --function=weight --target=x86_64 --backend=llvm --cpu=x86-64-v4 --precision=bf16 --emit=kernels | FileCheck %s --check-prefix=W-BF16
// RUN: %f16c compile %s --function=weight --target=aarch64 --precision=fp16 --emit=kernels | FileCheck %s --check-prefix=W-A64
// RUN: %f16c compile %s --function=weight --target=aarch64 --precision=fp16 --accumulate=f16 --emit=kernels | FileCheck %s --check-prefix=W-A64ACC
// RUN: %f16c compile %s --function=activations --target=x86_64 --backend=llvm --cpu=x86-64-v4 --precision=fp32 --emit=kernels | FileCheck %s --check-prefix=ACT
// RUN: %f16c compile %s --function=activations --target=x86_64 --backend=llvm --cpu=x86-64-v4+bf16 --precision=bf16 --emit=kernels | FileCheck %s --check-prefix=ACT-PAIRS
// RUN: %f16c compile %s --function=depthwise --target=x86_64 --backend=llvm --cpu=x86-64-v4 --precision=fp32 --emit=kernels | FileCheck %s --check-prefix=DW
// RUN: %f16c compile %s --function=softmax --target=x86_64 --backend=llvm --cpu=x86-64-v4 --precision=fp32 --emit=kernels | FileCheck %s --check-prefix=ROWS
// RUN: %f16c compile %s --function=weight --target=x86_64 --backend=llvm --cpu=x86-64-v4 --precision=fp32 -o %t.f16c
// RUN: %f16c-run %t.f16c --input %inputs/x_4x64_f32.npy --output %t.npy --profile 2>&1 | FileCheck %s --check-prefix=PROFILE

// A matmul with a constant weight: the register-blocked micro-kernel, its tile and multiply
// chosen by the CPU level and the precision. Its 4 rows are a tile of their own, shorter than
// the machine's (12 on AVX-512, 6 on AVX2, 8 on NEON; tile_rows), except with fp16
// accumulators.
// W-V4: k{{[0-9]+}}_matmul: contraction matmul batch=1 m=4 n=40 k=64
// W-V4: strategy: tiles 4x32 (16 lanes), a tile per work item, f32 FMA, generated; B packed at compile time (f32)
// W-V3: strategy: tiles 4x16 (8 lanes), a tile per work item, f32 FMA, generated; B packed at compile time (f32)
// W-PAIRS: strategy: tiles 4x32 (16 lanes), a tile per work item, bf16 pairs on VDPBF16PS into f32, generated; B packed at compile time (bf16)
// W-BF16: strategy: tiles 4x32 (16 lanes), a tile per work item, f32 FMA, generated; B packed at compile time (bf16); A widened to f32 once per run, read in place
// W-A64: strategy: tiles 4x8 (4 lanes), a tile per work item, fp16 FMLAL into f32, generated; B packed at compile time (f16)
// W-A64ACC: strategy: tiles 8x16 (8 lanes), a tile per work item, fp16 FMA, fp16 accumulators, generated; B packed at compile time (f16)
// PROFILE: k{{[0-9]+}}_matmul {{.*}}(tiles 4x32 (16 lanes), a tile per work item, f32 FMA, generated; B packed at compile time (f32); A read in place)
func.func @weight(%a: tensor<4x64xf32>) -> tensor<1x4x40xf32> {
  %shape = tosa.const_shape {values = dense<[1, 4, 64]> : tensor<3xindex>} : () -> !tosa.shape<3>
  %r = tosa.reshape %a, %shape : (tensor<4x64xf32>, !tosa.shape<3>) -> tensor<1x4x64xf32>
  %w = "tosa.const"() <{values = dense<0.25> : tensor<1x64x40xf32>}> : () -> tensor<1x64x40xf32>
  %z = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %y = tosa.matmul %r, %w, %z, %z : (tensor<1x4x64xf32>, tensor<1x64x40xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x4x40xf32>
  return %y : tensor<1x4x40xf32>
}

// Both operands computed at run time (attention's Q·Kᵀ): B packed per run, in the type the
// tiles read.
// ACT: strategy: tiles 12x32 (16 lanes), a tile per work item, f32 FMA, generated; B computed at run time, packed per run (f32)
// ACT-PAIRS: strategy: tiles 12x32 (16 lanes), a tile per work item, bf16 pairs on VDPBF16PS into f32, generated; B computed at run time, packed per run (bf16)
func.func @activations(%a: tensor<2x24x64xf32>, %b: tensor<2x64x24xf32>) -> tensor<2x24x24xf32> {
  %z = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %y = tosa.matmul %a, %b, %z, %z : (tensor<2x24x64xf32>, tensor<2x64x24xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<2x24x24xf32>
  return %y : tensor<2x24x24xf32>
}

// A depthwise convolution: a vector of channels for a run of output pixels of a row (the
// most up to eight that divide the row: 8 of 8 here, 7 of 49 in EfficientNet's last stage),
// each pixel's sum a chain of its own, each tap's weights loaded once for the run.
// DW: strategy: depthwise: 16 channels × 8 pixels of a row per work item, f32 accumulators
// DW-ROW7: strategy: depthwise: 16 channels × 7 pixels of a row per work item, f32 accumulators
// RUN: %f16c compile %s --function=depthwise7 --target=x86_64 --backend=llvm --cpu=x86-64-v4 --precision=fp32 --emit=kernels | FileCheck %s --check-prefix=DW-ROW7
func.func @depthwise7(%x: tensor<1x7x7x32xf32>) -> tensor<1x7x7x32xf32> {
  %w = "tosa.const"() <{values = dense<0.125> : tensor<5x5x32x1xf32>}> : () -> tensor<5x5x32x1xf32>
  %b = "tosa.const"() <{values = dense<0.0> : tensor<32xf32>}> : () -> tensor<32xf32>
  %z = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %y = tosa.depthwise_conv2d %x, %w, %b, %z, %z {acc_type = f32, dilation = array<i64: 1, 1>, pad = array<i64: 2, 2, 2, 2>, stride = array<i64: 1, 1>} : (tensor<1x7x7x32xf32>, tensor<5x5x32x1xf32>, tensor<32xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x7x7x32xf32>
  return %y : tensor<1x7x7x32xf32>
}

func.func @depthwise(%x: tensor<1x8x8x32xf32>) -> tensor<1x8x8x32xf32> {
  %w = "tosa.const"() <{values = dense<0.125> : tensor<3x3x32x1xf32>}> : () -> tensor<3x3x32x1xf32>
  %b = "tosa.const"() <{values = dense<0.0> : tensor<32xf32>}> : () -> tensor<32xf32>
  %z = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %y = tosa.depthwise_conv2d %x, %w, %b, %z, %z {acc_type = f32, dilation = array<i64: 1, 1>, pad = array<i64: 1, 1, 1, 1>, stride = array<i64: 1, 1>} : (tensor<1x8x8x32xf32>, tensor<3x3x32x1xf32>, tensor<32xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x8x8x32xf32>
  return %y : tensor<1x8x8x32xf32>
}

// A softmax's rows, four per work item: each row's sum in index order, the four rows' chains
// interleaved; the elementwise stages in two loops over the row (sub and exp before the sum,
// the scaling after it), sixteen lanes at a time on AVX-512 (every value f32); the maximum in
// eight chains of its own where the row is long enough (37), and in four vector chains of
// sixteen lanes where it fills them twice (a row of 300).
// ROWS: strategy: 4 rows of 37 per work item, each row's sums in index order, the rows' chains interleaved, elementwise stages in 2 loops, 16 lanes at a time, maxima/minima in 8 chains
// ROWS: strategy: 4 rows of 300 per work item, each row's sums in index order, the rows' chains interleaved, elementwise stages in 2 loops, 16 lanes at a time, maxima/minima in 4 chains of 16 lanes
func.func @softmax(%x: tensor<5x37xf32>, %x2: tensor<3x300xf32>) -> (tensor<5x37xf32>, tensor<3x300xf32>) {
  %m = tosa.reduce_max %x {axis = 1 : i32} : (tensor<5x37xf32>) -> tensor<5x1xf32>
  %d = tosa.sub %x, %m : (tensor<5x37xf32>, tensor<5x1xf32>) -> tensor<5x37xf32>
  %e = tosa.exp %d : (tensor<5x37xf32>) -> tensor<5x37xf32>
  %s = tosa.reduce_sum %e {axis = 1 : i32} : (tensor<5x37xf32>) -> tensor<5x1xf32>
  %r = tosa.reciprocal %s : (tensor<5x1xf32>) -> tensor<5x1xf32>
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %y = tosa.mul %e, %r, %shift : (tensor<5x37xf32>, tensor<5x1xf32>, tensor<1xi8>) -> tensor<5x37xf32>
  %m2 = tosa.reduce_max %x2 {axis = 1 : i32} : (tensor<3x300xf32>) -> tensor<3x1xf32>
  %d2 = tosa.sub %x2, %m2 : (tensor<3x300xf32>, tensor<3x1xf32>) -> tensor<3x300xf32>
  %e2 = tosa.exp %d2 : (tensor<3x300xf32>) -> tensor<3x300xf32>
  %s2 = tosa.reduce_sum %e2 {axis = 1 : i32} : (tensor<3x300xf32>) -> tensor<3x1xf32>
  %r2 = tosa.reciprocal %s2 : (tensor<3x1xf32>) -> tensor<3x1xf32>
  %y2 = tosa.mul %e2, %r2, %shift : (tensor<3x300xf32>, tensor<3x1xf32>, tensor<1xi8>) -> tensor<3x300xf32>
  return %y, %y2 : tensor<5x37xf32>, tensor<3x300xf32>
}

// Where rows are long (256 or more) and many (64 groups or more), twelve per work item: on
// AVX-512 their sums side by side in the lanes of one vector (each block of sixteen elements of
// the twelve rows transposed in registers, one vector add per column: each lane is its row's
// chain in index order); on AVX2 (eight lanes) twelve scalar chains, which keep both adders
// busy where four waited on an add's latency.
// RUN: %f16c compile %s --function=long_rows --target=x86_64 --backend=llvm --cpu=x86-64-v4 --precision=fp32 --emit=kernels | FileCheck %s --check-prefix=LONG
// RUN: %f16c compile %s --function=long_rows --target=x86_64 --backend=llvm --cpu=x86-64-v3 --precision=fp32 --emit=kernels | FileCheck %s --check-prefix=LONG-V3
// LONG: strategy: 12 rows of 256 per work item, each row's sums in index order, sums side by side in the lanes of a vector (blocks of 16 elements of each row transposed in registers), elementwise stages in 2 loops, 16 lanes at a time
// LONG-V3: strategy: 12 rows of 256 per work item, each row's sums in index order, the rows' chains interleaved, elementwise stages in 2 loops, 8 lanes at a time
func.func @long_rows(%x: tensor<768x256xf32>) -> tensor<768x256xf32> {
  %m = tosa.reduce_max %x {axis = 1 : i32} : (tensor<768x256xf32>) -> tensor<768x1xf32>
  %d = tosa.sub %x, %m : (tensor<768x256xf32>, tensor<768x1xf32>) -> tensor<768x256xf32>
  %e = tosa.exp %d : (tensor<768x256xf32>) -> tensor<768x256xf32>
  %s = tosa.reduce_sum %e {axis = 1 : i32} : (tensor<768x256xf32>) -> tensor<768x1xf32>
  %r = tosa.reciprocal %s : (tensor<768x1xf32>) -> tensor<768x1xf32>
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %y = tosa.mul %e, %r, %shift : (tensor<768x256xf32>, tensor<768x1xf32>, tensor<1xi8>) -> tensor<768x256xf32>
  return %y : tensor<768x256xf32>
}

// Rows that the vectors do not divide (300 = 18 · 16 + 12): where loads and stores take a mask,
// a row's last elements go as one more vector under a mask (in the elementwise runs and the sums
// side by side) and the maximum's four chains take its tail and fold in vectors — on AVX-512
// for every element size, on AVX2 (`vmaskmovps`) for f32 rows only: fp16 rows there take their
// tails one element at a time.
// RUN: %f16c compile %s --function=tail_rows --target=x86_64 --backend=llvm --cpu=x86-64-v4 --precision=fp32 --emit=kernels | FileCheck %s --check-prefix=TAIL
// RUN: %f16c compile %s --function=tail_rows --target=x86_64 --backend=llvm --cpu=x86-64-v4 --precision=fp16 --policy=O3 --io-types=low --emit=kernels | FileCheck %s --check-prefix=TAIL
// RUN: %f16c compile %s --function=tail_rows --target=x86_64 --backend=llvm --cpu=x86-64-v3 --precision=fp32 --emit=kernels | FileCheck %s --check-prefix=TAIL-V3
// RUN: %f16c compile %s --function=tail_rows --target=x86_64 --backend=llvm --cpu=x86-64-v3 --precision=fp16 --policy=O3 --io-types=low --emit=kernels | FileCheck %s --check-prefix=TAIL-V3-F16
// TAIL: strategy: 12 rows of 300 per work item, {{.*}}, 16 lanes at a time, maxima/minima in 4 chains of 16 lanes folded as vectors, a row's last 12 elements under a mask
// TAIL-V3: strategy: 12 rows of 300 per work item, {{.*}}, 8 lanes at a time, maxima/minima in 4 chains of 16 lanes folded as vectors, a row's last 4 elements under a mask
// TAIL-V3-F16: strategy: 12 rows of 300 per work item, {{.*}}, 8 lanes at a time, maxima/minima in 4 chains of 16 lanes{{$}}
func.func @tail_rows(%x: tensor<768x300xf32>) -> tensor<768x300xf32> {
  %m = tosa.reduce_max %x {axis = 1 : i32} : (tensor<768x300xf32>) -> tensor<768x1xf32>
  %d = tosa.sub %x, %m : (tensor<768x300xf32>, tensor<768x1xf32>) -> tensor<768x300xf32>
  %e = tosa.exp %d : (tensor<768x300xf32>) -> tensor<768x300xf32>
  %s = tosa.reduce_sum %e {axis = 1 : i32} : (tensor<768x300xf32>) -> tensor<768x1xf32>
  %r = tosa.reciprocal %s : (tensor<768x1xf32>) -> tensor<768x1xf32>
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %y = tosa.mul %e, %r, %shift : (tensor<768x300xf32>, tensor<768x1xf32>, tensor<1xi8>) -> tensor<768x300xf32>
  return %y : tensor<768x300xf32>
}

// A matrix of 128 rows or more whose columns fill 64-wide panels runs on AVX-512's wide tile
// (6 × 64: half the A rows per step), also where 8 × 48 would fill it; one that 8 × 48 fills
// and the wide tile does not on that exact tile (the same 24 accumulators: 128 rows are 22
// tiles of six); one whose columns do not on its long tile (6 × 32: the machine's panels in
// half its rows); one of 64 rows, or without AVX-512, on the machine's tile (of 8 rows for 64:
// they fill it).
// RUN: %f16c compile %s --function=tall --target=x86_64 --backend=llvm --cpu=x86-64-v4 --precision=fp32 --emit=kernels | FileCheck %s --check-prefix=TALL-V4
// RUN: %f16c compile %s --function=tall --target=x86_64 --backend=llvm --cpu=x86-64-v3 --precision=fp32 --emit=kernels | FileCheck %s --check-prefix=TALL-V3
// TALL-V4: k0_matmul: contraction matmul batch=1 m=128 n=64 k=32
// TALL-V4: strategy: tiles 6x64 (16 lanes), a tile per work item, f32 FMA
// TALL-V4: k1_matmul: contraction matmul batch=1 m=64 n=64 k=32
// TALL-V4: strategy: tiles 8x32 (16 lanes), a tile per work item, f32 FMA
// TALL-V4: k2_matmul: contraction matmul batch=1 m=128 n=48 k=32
// TALL-V4: strategy: tiles 8x48 (16 lanes), a tile per work item, f32 FMA
// TALL-V4: k3_matmul: contraction matmul batch=1 m=64 n=48 k=32
// TALL-V4: strategy: tiles 8x48 (16 lanes), a tile per work item, f32 FMA
// TALL-V4: k4_matmul: contraction matmul batch=1 m=192 n=192 k=32
// TALL-V4: strategy: tiles 6x64 (16 lanes), a tile per work item, f32 FMA
// TALL-V4: k5_matmul: contraction matmul batch=1 m=130 n=48 k=32
// TALL-V4: strategy: tiles 6x32 (16 lanes), a tile per work item, f32 FMA
// TALL-V3: strategy: tiles 6x16 (8 lanes), a tile per work item, f32 FMA
// TALL-V3: strategy: tiles 6x16 (8 lanes), a tile per work item, f32 FMA
// TALL-V3: strategy: tiles 6x16 (8 lanes), a tile per work item, f32 FMA
// TALL-V3: strategy: tiles 6x16 (8 lanes), a tile per work item, f32 FMA
// TALL-V3: strategy: tiles 6x16 (8 lanes), a tile per work item, f32 FMA
// TALL-V3: strategy: tiles 6x16 (8 lanes), a tile per work item, f32 FMA
func.func @tall(%a: tensor<1x128x32xf32>, %b: tensor<1x64x32xf32>, %c: tensor<1x192x32xf32>, %d: tensor<1x130x32xf32>) -> (tensor<1x128x64xf32>, tensor<1x64x64xf32>, tensor<1x128x48xf32>, tensor<1x64x48xf32>, tensor<1x192x192xf32>, tensor<1x130x48xf32>) {
  %w = "tosa.const"() <{values = dense<0.5> : tensor<1x32x64xf32>}> : () -> tensor<1x32x64xf32>
  %w48 = "tosa.const"() <{values = dense<0.25> : tensor<1x32x48xf32>}> : () -> tensor<1x32x48xf32>
  %z = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %y = tosa.matmul %a, %w, %z, %z : (tensor<1x128x32xf32>, tensor<1x32x64xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x128x64xf32>
  %y2 = tosa.matmul %b, %w, %z, %z : (tensor<1x64x32xf32>, tensor<1x32x64xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x64x64xf32>
  %y3 = tosa.matmul %a, %w48, %z, %z : (tensor<1x128x32xf32>, tensor<1x32x48xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x128x48xf32>
  %y4 = tosa.matmul %b, %w48, %z, %z : (tensor<1x64x32xf32>, tensor<1x32x48xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x64x48xf32>
  %w192 = "tosa.const"() <{values = dense<0.125> : tensor<1x32x192xf32>}> : () -> tensor<1x32x192xf32>
  %y5 = tosa.matmul %c, %w192, %z, %z : (tensor<1x192x32xf32>, tensor<1x32x192xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x192x192xf32>
  %y6 = tosa.matmul %d, %w48, %z, %z : (tensor<1x130x32xf32>, tensor<1x32x48xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x130x48xf32>
  return %y, %y2, %y3, %y4, %y5, %y6 : tensor<1x128x64xf32>, tensor<1x64x64xf32>, tensor<1x128x48xf32>, tensor<1x64x48xf32>, tensor<1x192x192xf32>, tensor<1x130x48xf32>
}

// SiLU after a matmul reads the matmul's result twice: the LLVM backend finishes it in the
// matmul's tiles (the contract's sigmoid on 16 lanes); the JIT takes it as the epilogue of an
// f32 GEMM too (LowerOptions::wide_math_epilogues), the block stored as x and made x · sigmoid(x)
// in place by one runtime call, but keeps it a kernel of its own after an fp16 one, whose staged finish would
// run it slower (LowerOptions::multi_read_epilogues).
// RUN: %f16c compile %s --function=silu --target=x86_64 --backend=llvm --cpu=x86-64-v4 --precision=fp32 --emit=kernels | FileCheck %s --check-prefix=SILU-LLVM
// RUN: %f16c compile %s --function=silu --target=x86_64 --precision=fp32 --emit=kernels | FileCheck %s --check-prefix=SILU-JIT
// RUN: %f16c compile %s --function=silu --target=x86_64 --precision=fp16 --policy=O3 --emit=kernels | FileCheck %s --check-prefix=SILU-JIT-F16
// SILU-LLVM: program @silu: 1 kernels
// SILU-LLVM: epilogue v1 = sigmoid(v0) : f32; v2 = mul(v0, v1) : f32
// SILU-JIT: program @silu: 1 kernels
// SILU-JIT: epilogue v1 = sigmoid(v0) : f32; v2 = mul(v0, v1) : f32
// SILU-JIT: strategy: {{.*}}; the block stored as x, then x · sigmoid(x) in place by the runtime's 16-lane loop
// SILU-JIT-F16: program @silu:
// SILU-JIT-F16: k{{[0-9]+}}_matmul: contraction matmul {{.*}} result=f16 {{.*}} (1 ops)
// SILU-JIT-F16: k{{[0-9]+}}_sigmoid: elementwise
func.func @silu(%a: tensor<1x24x64xf32>) -> tensor<1x24x40xf32> {
  %w = "tosa.const"() <{values = dense<0.25> : tensor<1x64x40xf32>}> : () -> tensor<1x64x40xf32>
  %z = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %y = tosa.matmul %a, %w, %z, %z : (tensor<1x24x64xf32>, tensor<1x64x40xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x24x40xf32>
  %s = tosa.sigmoid %y : (tensor<1x24x40xf32>) -> tensor<1x24x40xf32>
  %o = tosa.mul %y, %s, %shift : (tensor<1x24x40xf32>, tensor<1x24x40xf32>, tensor<1xi8>) -> tensor<1x24x40xf32>
  return %o : tensor<1x24x40xf32>
}

// Attention (scores, softmax, products: three kernels in a row) with 24 query rows per head
// runs band by band on the LLVM backend, four bands of twelve rows, the scores and the
// probabilities in per-thread windows; in fp16 the products' A (the fp16 probabilities) is
// widened to f32 band by band by a step of its own, not once per run over every band.
// RUN: %f16c compile %s --function=attention --target=x86_64 --backend=llvm --cpu=x86-64-v4 --precision=fp32 --emit=kernels | FileCheck %s --check-prefix=BANDS
// RUN: %f16c compile %s --function=attention --target=x86_64 --backend=llvm --cpu=x86-64-v4 --precision=fp16 --emit=kernels | FileCheck %s --check-prefix=BANDS-F16
// BANDS: k{{[0-9]+}}_matmul: contraction matmul batch=2 m=24 n=8 k=36
// BANDS: strategy: tiles 12x32 (16 lanes), a tile per work item, f32 FMA, generated; B computed at run time, packed per run (f32); A read in place; 4 bands of 12 rows, interleaved with each other: {{.*}}, 2 of their intermediates in cache only{{$}}
// BANDS-F16: k{{[0-9]+}}_matmul: contraction matmul batch=2 m=24 n=8 k=36
// BANDS-F16: strategy: {{.*}}; A widened to f32 band by band, read in place; 4 bands of 12 rows, interleaved with each other: {{.*}}, the products' A widened band by band{{$}}
func.func @attention(%q: tensor<2x24x16xf32>, %k: tensor<2x16x36xf32>, %v: tensor<2x36x8xf32>) -> tensor<2x24x8xf32> {
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %s = tosa.matmul %q, %k, %zp, %zp : (tensor<2x24x16xf32>, tensor<2x16x36xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<2x24x36xf32>
  %m = tosa.reduce_max %s {axis = 2 : i32} : (tensor<2x24x36xf32>) -> tensor<2x24x1xf32>
  %d = tosa.sub %s, %m : (tensor<2x24x36xf32>, tensor<2x24x1xf32>) -> tensor<2x24x36xf32>
  %e = tosa.exp %d : (tensor<2x24x36xf32>) -> tensor<2x24x36xf32>
  %z = tosa.reduce_sum %e {axis = 2 : i32} : (tensor<2x24x36xf32>) -> tensor<2x24x1xf32>
  %r = tosa.reciprocal %z : (tensor<2x24x1xf32>) -> tensor<2x24x1xf32>
  %p = tosa.mul %e, %r, %shift : (tensor<2x24x36xf32>, tensor<2x24x1xf32>, tensor<1xi8>) -> tensor<2x24x36xf32>
  %o = tosa.matmul %p, %v, %zp, %zp : (tensor<2x24x36xf32>, tensor<2x36x8xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<2x24x8xf32>
  return %o : tensor<2x24x8xf32>
}
