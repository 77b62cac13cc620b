// f16c compile --emit=kernels --target=x86_64 (the Cranelift JIT) prints, after each
// contraction, how the JIT's emitter runs it: the plan it records from the values it emits
// with (CraneliftBackend::strategies, at the --cpu level: without one x86-64-v3, FMA and the
// runtime's AVX2 loops). Which runtime micro-kernel a contraction calls is decided there, at
// compile time: the AVX2 loops at x86-64-v3, the AVX-512 ones at x86-64-v4 (the one-row loop
// stays AVX2), bf16 pairs on VDPBF16PS at x86-64-v4+bf16, none at x86-64-v2 (the generated
// loops, without FMA). An artifact's kernels carry the same words, which f16c-run --profile
// prints beside each time.
// RUN: %f16c compile %s --function=weight --target=x86_64 --precision=fp32 --emit=kernels | FileCheck %s --check-prefix=W
// RUN: %f16c compile %s --function=weight --target=x86_64 --precision=fp16 --emit=kernels | FileCheck %s --check-prefix=W-F16
// RUN: %f16c compile %s --function=activations --target=x86_64 --precision=fp32 --emit=kernels | FileCheck %s --check-prefix=ACT
// RUN: %f16c compile %s --function=conv --target=x86_64 --precision=fp32 --emit=kernels | FileCheck %s --check-prefix=CONV
// RUN: %f16c compile %s --function=conv_rows --target=x86_64 --precision=fp32 --emit=kernels | FileCheck %s --check-prefix=CONV-ROWS
// RUN: %f16c compile %s --function=conv_rows --target=x86_64 --precision=fp32 --emit=kernels --cpu=x86-64-v2 | FileCheck %s --check-prefix=CONV-ROWS-V2
// RUN: %f16c compile %s --function=conv_rows --target=x86_64 --precision=fp16 --policy=O3 --io-types=low --emit=kernels | FileCheck %s --check-prefix=CONV-ROWS-F16
// RUN: %f16c compile %s --function=row --target=x86_64 --precision=fp32 --emit=kernels | FileCheck %s --check-prefix=ROW
// RUN: %f16c compile %s --function=depthwise --target=x86_64 --precision=fp32 --emit=kernels | FileCheck %s --check-prefix=DW
// RUN: %f16c compile %s --function=depthwise --target=x86_64 --precision=fp16 --emit=kernels | FileCheck %s --check-prefix=DW-F16
// RUN: %f16c compile %s --function=weight --target=x86_64 --precision=fp32 --emit=kernels --cpu=x86-64-v2 | FileCheck %s --check-prefix=W-V2
// RUN: %f16c compile %s --function=weight --target=x86_64 --precision=fp32 --emit=kernels --cpu=x86-64-v4 | FileCheck %s --check-prefix=W-V4
// RUN: %f16c compile %s --function=weight --target=x86_64 --precision=bf16 --emit=kernels --cpu=x86-64-v4+bf16 | FileCheck %s --check-prefix=W-PAIRS
// RUN: %f16c compile %s --function=row --target=x86_64 --precision=fp32 --emit=kernels --cpu=x86-64-v2 | FileCheck %s --check-prefix=ROW-V2
// RUN: %f16c compile %s --function=depthwise --target=x86_64 --precision=fp32 --emit=kernels --cpu=x86-64-v2 | FileCheck %s --check-prefix=DW-V2
// RUN: %f16c compile %s --function=depthwise --target=x86_64 --precision=fp32 --emit=kernels --cpu=x86-64-v4 | FileCheck %s --check-prefix=DW-V4
// RUN: not %f16c compile %s --target=x86_64 --cpu=x86-64-v9 --emit=kernels 2>&1 | FileCheck %s --check-prefix=BAD-CPU
// --function narrows --emit=kernels to one function (without it, every function is shown).
// RUN: %f16c compile %s --function=row --target=x86_64 --emit=kernels | FileCheck %s --check-prefix=ONLY
// ONLY-NOT: program @weight
// ONLY: program @row:
// ONLY-NOT: program @
// BAD-CPU: invalid value 'x86-64-v9' for '--cpu <LEVEL>'
// RUN: %f16c compile %s --function=weight --target=x86_64 --precision=fp32 -o %t.f16c
// RUN: %f16c-run %t.f16c --input %inputs/x_4x64_f32.npy --output %t.npy --profile 2>&1 | FileCheck %s --check-prefix=PROFILE

// A matmul with a constant weight, its f32 rows read where they lie (4 rows: one tile row
// block); its 40 columns are five panels of eight, one column group (a group reading A in
// place takes at least six panels: the runtime's loop fetches B ahead only within a call). In fp16 the weight stays fp16 (one row block widens it chunk by chunk) and the
// rows are widened to f32 per row block, in one column group (each group would widen them).
// W: k{{[0-9]+}}_matmul: contraction matmul batch=1 m=4 n=40 k=64
// W: strategy: tiles 4x8, 4 rows per work item, f32 FMA on the runtime's AVX2 loop (12x8 or 4x24 per pass); B packed at compile time (f32); A read in place{{$}}
// W-F16: strategy: tiles 4x8, 4 rows per work item, f32 FMA on the runtime's AVX2 loop (12x8 or 4x24 per pass); B packed at compile time (f16); A widened to f32 per row block, read in place{{$}}
// W-V2: strategy: tiles 4x8 (4 lanes), 4 rows per work item, f32 multiply and add, generated; B packed at compile time (f32); A read in place{{$}}
// W-V4: strategy: tiles 4x8, 4 rows per work item, f32 FMA on the runtime's AVX-512 loop (12x16 or 4x48 per pass); B packed at compile time (f32)
// W-PAIRS: strategy: {{.*}}bf16 pairs on VDPBF16PS into f32 on the runtime's AVX512-BF16 loop; B packed at compile time (bf16) in pairs of rows
// PROFILE: k{{[0-9]+}}_matmul {{.*}}(tiles 4x8, 4 rows per work item, f32 FMA
func.func @weight(%a: tensor<4x64xf32>) -> tensor<1x4x40xf32> {
  %shape = tosa.const_shape {values = dense<[1, 4, 64]> : tensor<3xindex>} : () -> !tosa.shape<3>
  %r = tosa.reshape %a, %shape : (tensor<4x64xf32>, !tosa.shape<3>) -> tensor<1x4x64xf32>
  %w = "tosa.const"() <{values = dense<0.25> : tensor<1x64x40xf32>}> : () -> tensor<1x64x40xf32>
  %z = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %y = tosa.matmul %r, %w, %z, %z : (tensor<1x4x64xf32>, tensor<1x64x40xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x4x40xf32>
  return %y : tensor<1x4x40xf32>
}

// Both operands computed at run time (attention's Q·Kᵀ): B packed per run, in f32.
// ACT: strategy: tiles 4x8, 24 rows per work item, f32 FMA on the runtime's AVX2 loop (12x8 or 4x24 per pass); B computed at run time, packed per run (f32); A read in place{{$}}
func.func @activations(%a: tensor<2x24x64xf32>, %b: tensor<2x64x24xf32>) -> tensor<2x24x24xf32> {
  %z = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %y = tosa.matmul %a, %b, %z, %z : (tensor<2x24x64xf32>, tensor<2x64x24xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<2x24x24xf32>
  return %y : tensor<2x24x24xf32>
}

// A padded 3 × 3 convolution: its rows are windows of the input, gathered into a packed A
// chunk by chunk of the reduction (implicit im2col): output rows of 8 pixels are too short for
// a row block of window rows (below).
// CONV: k{{[0-9]+}}_conv2d: contraction conv2d batch=1 m=64 n=4 k=72
// CONV: strategy: tiles 4x8, 64 rows per work item, f32 FMA on the runtime's AVX2 loop (12x8 or 4x24 per pass); B packed at compile time (f32); A packed per chunk{{$}}
func.func @conv(%x: tensor<1x8x8x8xf32>) -> tensor<1x8x8x4xf32> {
  %w = "tosa.const"() <{values = dense<0.125> : tensor<4x3x3x8xf32>}> : () -> tensor<4x3x3x8xf32>
  %b = "tosa.const"() <{values = dense<0.0> : tensor<4xf32>}> : () -> tensor<4xf32>
  %z = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %c = tosa.conv2d %x, %w, %b, %z, %z {acc_type = f32, dilation = array<i64: 1, 1>, pad = array<i64: 1, 1, 1, 1>, stride = array<i64: 1, 1>} : (tensor<1x8x8x8xf32>, tensor<4x3x3x8xf32>, tensor<4xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x8x8x4xf32>
  return %c : tensor<1x8x8x4xf32>
}

// Output rows of 16 pixels: a row block is one output row, and each chunk of the reduction
// (a window row's 3 × 8 values) is read in place from the input, padded once per run in a step
// of its own, its rows 8 values apart: nothing is packed. The generated loops (x86-64-v2) pack.
// CONV-ROWS: k{{[0-9]+}}_conv2d: contraction conv2d batch=1 m=64 n=4 k=72
// CONV-ROWS: strategy: tiles 4x8, 16 rows per work item, f32 FMA on the runtime's AVX2 loop (12x8 or 4x24 per pass); B packed at compile time (f32); A padded once per run, read in place as window rows, k in 3 chunks{{$}}
// CONV-ROWS-V2: strategy: tiles 4x8 (4 lanes), 64 rows per work item, f32 multiply and add, generated; B packed at compile time (f32); A packed per chunk{{$}}
// An fp16 input is widened to f32 in the same step that pads it.
// CONV-ROWS-F16: strategy: tiles 4x8, 16 rows per work item, f32 FMA on the runtime's AVX2 loop (12x8 or 4x24 per pass); B packed at compile time (f16), widened to f32 once per run; A padded and widened to f32 once per run, read in place as window rows, k in 3 chunks{{$}}
func.func @conv_rows(%x: tensor<1x4x16x8xf32>) -> tensor<1x4x16x4xf32> {
  %w = "tosa.const"() <{values = dense<0.125> : tensor<4x3x3x8xf32>}> : () -> tensor<4x3x3x8xf32>
  %b = "tosa.const"() <{values = dense<0.0> : tensor<4xf32>}> : () -> tensor<4xf32>
  %z = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %c = tosa.conv2d %x, %w, %b, %z, %z {acc_type = f32, dilation = array<i64: 1, 1>, pad = array<i64: 1, 1, 1, 1>, stride = array<i64: 1, 1>} : (tensor<1x4x16x8xf32>, tensor<4x3x3x8xf32>, tensor<4xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x4x16x4xf32>
  return %c : tensor<1x4x16x4xf32>
}

// A matmul of one row (a classifier at batch 1): the row against several panels per item.
// ROW: strategy: one row against {{[0-9]+}} panels of 8 columns per work item, f32 FMA on the runtime's AVX2 one-row loop; B packed at compile time (f32)
// ROW-V2: strategy: one row against {{[0-9]+}} panels of 8 columns per work item, f32 multiply and add, generated (4 panels at a time); B packed at compile time (f32)
func.func @row(%a: tensor<1x1x64xf32>) -> tensor<1x1x40xf32> {
  %w = "tosa.const"() <{values = dense<0.25> : tensor<1x64x40xf32>}> : () -> tensor<1x64x40xf32>
  %z = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %y = tosa.matmul %a, %w, %z, %z : (tensor<1x1x64xf32>, tensor<1x64x40xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x1x40xf32>
  return %y : tensor<1x1x40xf32>
}

// A depthwise convolution: an output row per work item by the runtime's row loop; in fp16 the
// input rows are widened into a ring of the window's rows and the weights once per call.
// DW: strategy: depthwise: a row of 8 pixels per work item by the runtime's AVX2 loop, the loop finishing it
// DW-V2: strategy: depthwise: a row of 8 pixels per work item, channel multiplier 1, generated
// DW-V4: strategy: depthwise: a row of 8 pixels per work item by the runtime's AVX-512 loop, the loop finishing it
// DW-F16: strategy: depthwise: a row of 8 pixels per work item by the runtime's AVX2 loop, the loop finishing it; input rows widened to f32 into a ring of window rows, weights once per call
func.func @depthwise(%x: tensor<1x8x8x32xf32>) -> tensor<1x8x8x32xf32> {
  %w = "tosa.const"() <{values = dense<0.125> : tensor<3x3x32x1xf32>}> : () -> tensor<3x3x32x1xf32>
  %b = "tosa.const"() <{values = dense<0.0> : tensor<32xf32>}> : () -> tensor<32xf32>
  %z = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %y = tosa.depthwise_conv2d %x, %w, %b, %z, %z {acc_type = f32, dilation = array<i64: 1, 1>, pad = array<i64: 1, 1, 1, 1>, stride = array<i64: 1, 1>} : (tensor<1x8x8x32xf32>, tensor<3x3x32x1xf32>, tensor<32xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x8x8x32xf32>
  return %y : tensor<1x8x8x32xf32>
}

// Row and elementwise kernels have plans too. A softmax is one row kernel, four rows per work
// item, run by the runtime's softmax loop (sixteen lanes, the rows' sums side by side; a row
// kernel of other stages runs them in Cranelift's loops, as the layer norm below); a SiLU
// (contiguous: one row of 1200), in f32 or all in bf16, is one call of the runtime's SiLU loop
// per row (in bf16 each op rounded as the reference rounds it).
// An fp16 cast's row is staged in f32 and narrowed by one runtime call.
// A matmul of 5 rows (a micro-panel and one row): the runtime's loop reads the first four rows
// where they lie and the last, partial micro-panel packed (zero rows past m) by a second call;
// the generated micro-kernel (x86-64-v2) packs all of A.
// RUN: %f16c compile %s --function=tail --target=x86_64 --precision=fp32 --emit=kernels | FileCheck %s --check-prefix=TAIL
// RUN: %f16c compile %s --function=tail --target=x86_64 --precision=fp32 --emit=kernels --cpu=x86-64-v2 | FileCheck %s --check-prefix=TAIL-V2
// TAIL: strategy: tiles 4x8, 5 rows per work item, f32 FMA on the runtime's AVX2 loop (12x8 or 4x24 per pass); B packed at compile time (f32); A read in place, the last micro-panel packed{{$}}
// TAIL-V2: strategy: tiles 4x8 (4 lanes), 5 rows per work item, f32 multiply and add, generated; B packed at compile time (f32); A packed per chunk
func.func @tail(%a: tensor<1x5x64xf32>) -> tensor<1x5x40xf32> {
  %w = "tosa.const"() <{values = dense<0.25> : tensor<1x64x40xf32>}> : () -> tensor<1x64x40xf32>
  %z = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %y = tosa.matmul %a, %w, %z, %z : (tensor<1x5x64xf32>, tensor<1x64x40xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x5x40xf32>
  return %y : tensor<1x5x40xf32>
}

// A layer norm as torch-mlir writes it (the variance in f64): each run of elementwise stages
// between reductions is one loop over the group's rows, an f64 run with the sum after it in the
// same loop, the last (f32) run four lanes at a time; only the f64 row the second run reads
// again is kept in scratch.
// RUN: %f16c compile %s --function=layernorm --target=x86_64 --precision=fp32 --emit=kernels | FileCheck %s --check-prefix=LN
// LN: strategy: 4 rows of 32 per work item, 14 stages (3 reductions), the group's rows interleaved; 3 run(s) of elementwise stages in one loop each, 2 with the reduction after it; 1 intermediate row(s) in scratch
// RUN: %f16c compile %s --function=softmax --target=x86_64 --precision=fp32 --emit=kernels | FileCheck %s --check-prefix=SOFTMAX
// RUN: %f16c compile %s --function=silu --target=x86_64 --precision=fp32 --emit=kernels | FileCheck %s --check-prefix=SILU
// RUN: %f16c compile %s --function=silu --target=x86_64 --precision=bf16 --policy=O3 --io-types=low --emit=kernels | FileCheck %s --check-prefix=SILU-BF16
// RUN: %f16c compile %s --function=silu --target=x86_64 --precision=fp16 --policy=O3 --io-types=low --emit=kernels | FileCheck %s --check-prefix=SILU-F16
// RUN: %f16c compile %s --function=silu --target=x86_64 --cpu=x86-64-v2 --precision=fp16 --policy=O3 --io-types=low --emit=kernels | FileCheck %s --check-prefix=SILU-F16-V2
// RUN: %f16c compile %s --function=weight --target=x86_64 --precision=fp16 --emit=kernels | FileCheck %s --check-prefix=CAST-F16
// SOFTMAX: strategy: 4 rows of 37 per work item, the softmax by the runtime's sixteen-lane loop (each row's sum in index order, the rows' side by side){{$}}
// RUN: %f16c compile %s --function=softmax_bf16 --target=x86_64 --precision=fp32 --emit=kernels | FileCheck %s --check-prefix=SOFTMAX-BF16
// RUN: %f16c compile %s --function=softmax_to_bf16 --target=x86_64 --precision=fp32 --emit=kernels | FileCheck %s --check-prefix=SOFTMAX-TO-BF16
// SOFTMAX-TO-BF16: strategy: 4 rows of 37 per work item, the softmax in f32, the result rounded to bf16, by the runtime's sixteen-lane loop (each row's sum in index order, the rows' side by side){{$}}
// SOFTMAX-BF16: strategy: 4 rows of 37 per work item, the softmax in bf16 (the difference and the result rounded to bf16, the rest in f32) by the runtime's sixteen-lane loop (each row's sum in index order, the rows' side by side); a row whose maximum is the mask value filled{{$}}
// SILU: strategy: a row of 1200 per work item, x · sigmoid(x) in f32 by the runtime's 16-lane loop{{$}}
// SILU-BF16: strategy: a row of 1200 per work item, x · sigmoid(x) in bf16 by the runtime's 16-lane loop{{$}}
// An fp16 SiLU on the runtime's F16C micro-kernel (a CPU with AVX2, FMA and F16C: the code
// then requires them); without them (x86-64-v2), four generated lanes between the runtime's
// widening and rounding.
// SILU-F16: strategy: a row of 1200 per work item, x · sigmoid(x) in f16 by the runtime's F16C loop{{$}}
// SILU-F16-V2: strategy: a row of 1200 per work item, four lanes at a time; 1 f16 input row(s) widened by the runtime; staged in f32, rounded and narrowed by the runtime{{$}}
// CAST-F16: k0_cast: elementwise shape=[256]
// CAST-F16: strategy: a row of 256 per work item, four lanes at a time; staged in f32, rounded and narrowed by the runtime{{$}}
func.func @softmax(%x: tensor<5x37xf32>) -> tensor<5x37xf32> {
  %m = tosa.reduce_max %x {axis = 1 : i32} : (tensor<5x37xf32>) -> tensor<5x1xf32>
  %d = tosa.sub %x, %m : (tensor<5x37xf32>, tensor<5x1xf32>) -> tensor<5x37xf32>
  %e = tosa.exp %d : (tensor<5x37xf32>) -> tensor<5x37xf32>
  %s = tosa.reduce_sum %e {axis = 1 : i32} : (tensor<5x37xf32>) -> tensor<5x1xf32>
  %r = tosa.reciprocal %s : (tensor<5x1xf32>) -> tensor<5x1xf32>
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %y = tosa.mul %e, %r, %shift : (tensor<5x37xf32>, tensor<5x1xf32>, tensor<1xi8>) -> tensor<5x37xf32>
  return %y : tensor<5x37xf32>
}

// The softmax as the precision pass leaves it in bf16 (maximum and difference in bf16, the
// rest in f32, the result rounded to bf16; PyTorch's all-masked test after the product): one
// call of the runtime's bf16 loop per work item.
func.func @softmax_bf16(%x: tensor<5x37xbf16>) -> tensor<5x37xbf16> {
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %mask = "tosa.const"() <{values = dense<0xFF80> : tensor<1x1xbf16>}> : () -> tensor<1x1xbf16>
  %fill = "tosa.const"() <{values = dense<0.0> : tensor<1x1xf32>}> : () -> tensor<1x1xf32>
  %m = tosa.reduce_max %x {axis = 1 : i32} : (tensor<5x37xbf16>) -> tensor<5x1xbf16>
  %d = tosa.sub %x, %m : (tensor<5x37xbf16>, tensor<5x1xbf16>) -> tensor<5x37xbf16>
  %c = tosa.cast %d : (tensor<5x37xbf16>) -> tensor<5x37xf32>
  %e = tosa.exp %c : (tensor<5x37xf32>) -> tensor<5x37xf32>
  %s = tosa.reduce_sum %e {axis = 1 : i32} : (tensor<5x37xf32>) -> tensor<5x1xf32>
  %r = tosa.reciprocal %s : (tensor<5x1xf32>) -> tensor<5x1xf32>
  %p = tosa.mul %e, %r, %shift : (tensor<5x37xf32>, tensor<5x1xf32>, tensor<1xi8>) -> tensor<5x37xf32>
  %t = tosa.equal %m, %mask : (tensor<5x1xbf16>, tensor<1x1xbf16>) -> tensor<5x1xi1>
  %q = tosa.select %t, %fill, %p : (tensor<5x1xi1>, tensor<1x1xf32>, tensor<5x37xf32>) -> tensor<5x37xf32>
  %y = tosa.cast %q : (tensor<5x37xf32>) -> tensor<5x37xbf16>
  return %y : tensor<5x37xbf16>
}

// An f32 softmax whose result is rounded to bf16 (a bf16 BERT's attention): the same loop.
func.func @softmax_to_bf16(%x: tensor<5x37xf32>) -> tensor<5x37xbf16> {
  %m = tosa.reduce_max %x {axis = 1 : i32} : (tensor<5x37xf32>) -> tensor<5x1xf32>
  %d = tosa.sub %x, %m : (tensor<5x37xf32>, tensor<5x1xf32>) -> tensor<5x37xf32>
  %e = tosa.exp %d : (tensor<5x37xf32>) -> tensor<5x37xf32>
  %s = tosa.reduce_sum %e {axis = 1 : i32} : (tensor<5x37xf32>) -> tensor<5x1xf32>
  %r = tosa.reciprocal %s : (tensor<5x1xf32>) -> tensor<5x1xf32>
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %p = tosa.mul %e, %r, %shift : (tensor<5x37xf32>, tensor<5x1xf32>, tensor<1xi8>) -> tensor<5x37xf32>
  %y = tosa.cast %p : (tensor<5x37xf32>) -> tensor<5x37xbf16>
  return %y : tensor<5x37xbf16>
}

func.func @silu(%x: tensor<4x300xf32>) -> tensor<4x300xf32> {
  %s = tosa.sigmoid %x : (tensor<4x300xf32>) -> tensor<4x300xf32>
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %y = tosa.mul %x, %s, %shift : (tensor<4x300xf32>, tensor<4x300xf32>, tensor<1xi8>) -> tensor<4x300xf32>
  return %y : tensor<4x300xf32>
}

func.func @layernorm(%x: tensor<4x32xf32>) -> tensor<4x32xf32> {
  %n64 = "tosa.const"() <{values = dense<3.125e-02> : tensor<1x1xf64>}> : () -> tensor<1x1xf64>
  %n32 = "tosa.const"() <{values = dense<3.125e-02> : tensor<1x1xf32>}> : () -> tensor<1x1xf32>
  %eps = "tosa.const"() <{values = dense<1.0e-05> : tensor<1x1xf32>}> : () -> tensor<1x1xf32>
  %sh = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %c = tosa.cast %x : (tensor<4x32xf32>) -> tensor<4x32xf64>
  %s = tosa.reduce_sum %c {axis = 1 : i32} : (tensor<4x32xf64>) -> tensor<4x1xf64>
  %m = tosa.mul %s, %n64, %sh : (tensor<4x1xf64>, tensor<1x1xf64>, tensor<1xi8>) -> tensor<4x1xf64>
  %d = tosa.sub %c, %m : (tensor<4x32xf64>, tensor<4x1xf64>) -> tensor<4x32xf64>
  %q = tosa.mul %d, %d, %sh : (tensor<4x32xf64>, tensor<4x32xf64>, tensor<1xi8>) -> tensor<4x32xf64>
  %v = tosa.reduce_sum %q {axis = 1 : i32} : (tensor<4x32xf64>) -> tensor<4x1xf64>
  %vm = tosa.mul %v, %n64, %sh : (tensor<4x1xf64>, tensor<1x1xf64>, tensor<1xi8>) -> tensor<4x1xf64>
  %vf = tosa.cast %vm : (tensor<4x1xf64>) -> tensor<4x1xf32>
  %s32 = tosa.reduce_sum %x {axis = 1 : i32} : (tensor<4x32xf32>) -> tensor<4x1xf32>
  %mean = tosa.mul %s32, %n32, %sh : (tensor<4x1xf32>, tensor<1x1xf32>, tensor<1xi8>) -> tensor<4x1xf32>
  %e = tosa.add %vf, %eps : (tensor<4x1xf32>, tensor<1x1xf32>) -> tensor<4x1xf32>
  %r = tosa.rsqrt %e : (tensor<4x1xf32>) -> tensor<4x1xf32>
  %y = tosa.sub %x, %mean : (tensor<4x32xf32>, tensor<4x1xf32>) -> tensor<4x32xf32>
  %z = tosa.mul %y, %r, %sh : (tensor<4x32xf32>, tensor<4x1xf32>, tensor<1xi8>) -> tensor<4x32xf32>
  return %z : tensor<4x32xf32>
}

// A transpose moving at least 64 KiB (an attention's heads back to tokens: 1500 x 6 x 64 f32
// here 256 x 6 x 64) runs a slice of its outermost loop per work item, so the threads share
// it; a smaller one is one work item.
// RUN: %f16c compile %s --function=heads --target=x86_64 --precision=fp32 --emit=kernels | FileCheck %s --check-prefix=HEADS
// RUN: %f16c compile %s --function=small_heads --target=x86_64 --precision=fp32 --emit=kernels | FileCheck %s --check-prefix=SMALL-HEADS
// HEADS: strategy: one of 256 slices of the outermost loop per work item: contiguous runs, 64 bytes at a time{{$}}
// SMALL-HEADS: strategy: one work item: contiguous runs, 64 bytes at a time{{$}}
func.func @heads(%x: tensor<6x256x64xf32>) -> tensor<256x6x64xf32> {
  %y = tosa.transpose %x {perms = array<i32: 1, 0, 2>} : (tensor<6x256x64xf32>) -> tensor<256x6x64xf32>
  return %y : tensor<256x6x64xf32>
}

// A large transpose that converts as it moves (a bf16 model's NCHW input to NHWC: the cast
// folds into the copy) is shared the same way.
// RUN: %f16c compile %s --function=to_nhwc_bf16 --target=x86_64 --precision=fp32 --emit=kernels | FileCheck %s --check-prefix=CONVERT-SLICE
// CONVERT-SLICE: copy 1 moves from f32
// CONVERT-SLICE: strategy: one of 16384 slices of the outermost loop per work item: element by element, the shortest non-contiguous dimension unrolled{{$}}
func.func @to_nhwc_bf16(%x: tensor<1x3x128x128xf32>) -> tensor<1x128x128x3xbf16> {
  %t = tosa.transpose %x {perms = array<i32: 0, 2, 3, 1>} : (tensor<1x3x128x128xf32>) -> tensor<1x128x128x3xf32>
  %y = tosa.cast %t : (tensor<1x128x128x3xf32>) -> tensor<1x128x128x3xbf16>
  return %y : tensor<1x128x128x3xbf16>
}

func.func @small_heads(%x: tensor<6x16x64xf32>) -> tensor<16x6x64xf32> {
  %y = tosa.transpose %x {perms = array<i32: 1, 0, 2>} : (tensor<6x16x64xf32>) -> tensor<16x6x64xf32>
  return %y : tensor<16x6x64xf32>
}

// A slice that is one contiguous run of at least 64 KiB (ResNet-50 drops its activations' last
// row before a strided convolution: 3 MB) is cut into runs of at least 16 KiB, the smallest
// that divides it (here 65536 f32 in 16 of 4096), shared by the threads; a transpose's rows
// are not cut (above).
// RUN: %f16c compile %s --function=contiguous_slice --target=x86_64 --precision=fp32 --emit=kernels | FileCheck %s --check-prefix=RUN-SLICE
// RUN-SLICE: move b0+0 strides=[1] -> +0 strides=[1] shape=[65536]
// RUN-SLICE: strategy: one of 16 slices of the outermost loop per work item: contiguous runs, 64 bytes at a time{{$}}
func.func @contiguous_slice(%x: tensor<1x65x64x16xf32>) -> tensor<1x64x64x16xf32> {
  %start = tosa.const_shape {values = dense<0> : tensor<4xindex>} : () -> !tosa.shape<4>
  %size = tosa.const_shape {values = dense<[1, 64, 64, 16]> : tensor<4xindex>} : () -> !tosa.shape<4>
  %y = tosa.slice %x, %start, %size : (tensor<1x65x64x16xf32>, !tosa.shape<4>, !tosa.shape<4>) -> tensor<1x64x64x16xf32>
  return %y : tensor<1x64x64x16xf32>
}

// A transpose of 32-bit values whose source and destination are contiguous along different
// dimensions, both multiples of four (NCHW -> NHWC), moves 4 x 4 tiles transposed in registers,
// per work item four indices of the destination's contiguous dimension (channels) by every
// index of the source's (pixels); with a dimension not a multiple of four (three channels) it
// moves element by element.
// RUN: %f16c compile %s --function=to_nhwc --target=x86_64 --precision=fp32 --emit=kernels | FileCheck %s --check-prefix=TILES
// TILES: k0_transpose: copy 1 moves
// TILES: strategy: a band of 4 x 256 per work item (4 bands), 4 x 4 tiles transposed in registers{{$}}
// TILES: k1_transpose: copy 1 moves
// TILES: strategy: one work item: element by element, the shortest non-contiguous dimension unrolled{{$}}
func.func @to_nhwc(%x: tensor<1x16x16x16xf32>, %y: tensor<1x3x16x16xf32>) -> (tensor<1x16x16x16xf32>, tensor<1x16x16x3xf32>) {
  %a = tosa.transpose %x {perms = array<i32: 0, 2, 3, 1>} : (tensor<1x16x16x16xf32>) -> tensor<1x16x16x16xf32>
  %b = tosa.transpose %y {perms = array<i32: 0, 2, 3, 1>} : (tensor<1x3x16x16xf32>) -> tensor<1x16x16x3xf32>
  return %a, %b : tensor<1x16x16x16xf32>, tensor<1x16x16x3xf32>
}

// A gather copies about 256 values per work item, on the JIT and the LLVM backend alike: rows
// of 64 values four indices per item, rows of 256 or more (BERT's embedding lookups) one, single
// values runs of 256 (strategy-upsample.test).
// RUN: %f16c compile %s --function=embedding --target=x86_64 --precision=fp32 --emit=kernels | FileCheck %s --check-prefix=ROWS4
// RUN: %f16c compile %s --function=embedding --target=x86_64 --backend=llvm --cpu=x86-64-v4 --precision=fp32 --emit=kernels | FileCheck %s --check-prefix=ROWS4
// ROWS4: strategy: a run of 4 indices per work item, all range-checked before the copies{{$}}
func.func @embedding(%table: tensor<1x100x64xf32>, %ids: tensor<1x8xi32>) -> tensor<1x8x64xf32> {
  %y = tosa.gather %table, %ids : (tensor<1x100x64xf32>, tensor<1x8xi32>) -> tensor<1x8x64xf32>
  return %y : tensor<1x8x64xf32>
}

// A float pool of at most 25 taps unrolls them, four channels at a time, where the window
// lies inside the input (ResNet-50's 3x3 max pool: 0.76 -> 0.22 ms at two threads); a larger
// window (a global average pool of 7x7) loops over its clipped window everywhere.
// RUN: %f16c compile %s --function=pools --target=x86_64 --precision=fp32 --emit=kernels | FileCheck %s --check-prefix=POOL
// POOL: k0_max_pool2d: pool max kernel=[3, 3]
// POOL: strategy: an output row per work item, four channels at a time, window clipped to the input where it crosses the edge, its taps unrolled where it lies inside{{$}}
// POOL: k1_avg_pool2d: pool avg kernel=[7, 7]
// POOL: strategy: an output row per work item, four channels at a time, window clipped to the input{{$}}
func.func @pools(%x: tensor<1x14x14x8xf32>) -> tensor<1x1x1x8xf32> {
  %m = tosa.max_pool2d %x {kernel = array<i64: 3, 3>, pad = array<i64: 1, 0, 1, 0>, stride = array<i64: 2, 2>} : (tensor<1x14x14x8xf32>) -> tensor<1x7x7x8xf32>
  %z = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %a = tosa.avg_pool2d %m, %z, %z {acc_type = f32, kernel = array<i64: 7, 7>, pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 1, 1>} : (tensor<1x7x7x8xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x1x1x8xf32>
  return %a : tensor<1x1x1x8xf32>
}

// A depthwise convolution followed by SiLU (EfficientNet's) takes it as its epilogue: the row
// loop finishes x, one runtime call makes the row x · sigmoid(x) in place (no elementwise
// kernel after it).
// RUN: %f16c compile %s --function=depthwise_silu --target=x86_64 --precision=fp32 --emit=kernels | FileCheck %s --check-prefix=DW-SILU
// DW-SILU: program @depthwise_silu: 1 kernels
// DW-SILU: strategy: depthwise: a row of 8 pixels per work item by the runtime's AVX2 loop, the loop finishing x, SiLU's x · sigmoid(x) by the runtime's 16-lane loop on the row in place{{$}}
// The AVX-512 loop finishes SiLU itself, in its registers (`DepthwiseParams::silu`).
// RUN: %f16c compile %s --function=depthwise_silu --target=x86_64 --precision=fp32 --emit=kernels --cpu=x86-64-v4 | FileCheck %s --check-prefix=DW-SILU-V4
// DW-SILU-V4: strategy: depthwise: a row of 8 pixels per work item by the runtime's AVX-512 loop, the loop finishing SiLU's x · sigmoid(x){{$}}
func.func @depthwise_silu(%x: tensor<1x8x8x32xf32>) -> tensor<1x8x8x32xf32> {
  %w = "tosa.const"() <{values = dense<0.125> : tensor<3x3x32x1xf32>}> : () -> tensor<3x3x32x1xf32>
  %b = "tosa.const"() <{values = dense<0.0> : tensor<32xf32>}> : () -> tensor<32xf32>
  %z = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %y = tosa.depthwise_conv2d %x, %w, %b, %z, %z {acc_type = f32, dilation = array<i64: 1, 1>, pad = array<i64: 1, 1, 1, 1>, stride = array<i64: 1, 1>} : (tensor<1x8x8x32xf32>, tensor<3x3x32x1xf32>, tensor<32xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x8x8x32xf32>
  %s = tosa.sigmoid %y : (tensor<1x8x8x32xf32>) -> tensor<1x8x8x32xf32>
  %o = tosa.mul %y, %s, %shift : (tensor<1x8x8x32xf32>, tensor<1x8x8x32xf32>, tensor<1xi8>) -> tensor<1x8x8x32xf32>
  return %o : tensor<1x8x8x32xf32>
}

// A deep layer's matmul (49 rows: one row block) splits its 40 panels into column groups so
// that the threads have work, each of at least six panels (the runtime's loop fetches B's next
// panels only within a call: one-pair groups waited on memory); the AVX-512 loop takes panels
// in pairs, so there each group is a whole number of pairs (8 panels: 5 groups, not 6 of 7).
// RUN: %f16c compile %s --function=deep --target=x86_64 --precision=fp32 --emit=kernels | FileCheck %s --check-prefix=DEEP
// RUN: %f16c compile %s --function=deep --target=x86_64 --precision=fp32 --emit=kernels --cpu=x86-64-v4 | FileCheck %s --check-prefix=DEEP-V4
// DEEP: strategy: tiles 4x8, 49 rows and 7 panels per work item (6 column groups), f32 FMA on the runtime's AVX2 loop {{.*}}; A read in place, the last micro-panel packed{{$}}
// On the AVX-512 loop an f32 result with only a bias, bounds or SiLU after it is finished by
// the runtime's sixteen-lane loop (`FinishTilesF32`), here the tiles alone.
// DEEP-V4: strategy: tiles 4x8, 49 rows and 8 panels per work item (5 column groups), f32 FMA on the runtime's AVX-512 loop {{.*}}; A read in place, the last micro-panel packed; the tiles finished by the runtime's 16-lane loop{{$}}
func.func @deep(%a: tensor<1x49x64xf32>) -> tensor<1x49x320xf32> {
  %w = "tosa.const"() <{values = dense<0.25> : tensor<1x64x320xf32>}> : () -> tensor<1x64x320xf32>
  %z = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %y = tosa.matmul %a, %w, %z, %z : (tensor<1x49x64xf32>, tensor<1x64x320xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x49x320xf32>
  return %y : tensor<1x49x320xf32>
}

// A matmul → rows kernel → matmul chain runs in bands of rows (each band's intermediate stays
// in cache) unless a band would stream a matmul's weight from memory again: a weight over
// 1 MiB and at least four times the A it multiplies (`bands::b_streams`; 64 tokens against
// 4.5 MiB here, as in a decoder's layers). The LLVM backend runs such a matmul a column panel
// at a time, unbanded, by the same rule.
// RUN: %f16c compile %s --function=chain_cached --target=x86_64 --precision=fp32 --emit=kernels | FileCheck %s --check-prefix=CHAIN-CACHED
// RUN: %f16c compile %s --function=chain_streamed --target=x86_64 --precision=fp32 --emit=kernels | FileCheck %s --check-prefix=CHAIN-STREAMED
// RUN: %f16c compile %s --function=chain_streamed --target=x86_64 --backend=llvm --cpu=x86-64-v4 --precision=fp32 --emit=kernels | FileCheck %s --check-prefix=CHAIN-STREAMED-LLVM
// CHAIN-CACHED: k0_matmul: contraction matmul batch=1 m=64 n=128 k=128
// CHAIN-CACHED: strategy: {{.*}}; 2 bands of 32 rows, interleaved with each other: k0_matmul → k1_rows_reduce_max → k2_matmul
// CHAIN-STREAMED: k0_matmul: contraction matmul batch=1 m=64 n=1536 k=768
// CHAIN-STREAMED-NOT: bands of
// CHAIN-STREAMED-LLVM: k0_matmul: contraction matmul batch=1 m=64 n=1536 k=768
// CHAIN-STREAMED-LLVM: strategy: tiles 8x48 (16 lanes), a tile per work item, a column panel's tiles one after the other, f32 FMA, generated; B packed at compile time (f32); A read in place{{$}}
// CHAIN-STREAMED-LLVM-NOT: bands of
func.func @chain_cached(%x: tensor<1x64x128xf32>) -> tensor<1x64x128xf32> {
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %w1 = "tosa.const"() <{values = dense<0.01> : tensor<1x128x128xf32>}> : () -> tensor<1x128x128xf32>
  %w2 = "tosa.const"() <{values = dense<0.02> : tensor<1x128x128xf32>}> : () -> tensor<1x128x128xf32>
  %s = tosa.matmul %x, %w1, %zp, %zp : (tensor<1x64x128xf32>, tensor<1x128x128xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x64x128xf32>
  %m = tosa.reduce_max %s {axis = 2 : i32} : (tensor<1x64x128xf32>) -> tensor<1x64x1xf32>
  %d = tosa.sub %s, %m : (tensor<1x64x128xf32>, tensor<1x64x1xf32>) -> tensor<1x64x128xf32>
  %e = tosa.exp %d : (tensor<1x64x128xf32>) -> tensor<1x64x128xf32>
  %z = tosa.reduce_sum %e {axis = 2 : i32} : (tensor<1x64x128xf32>) -> tensor<1x64x1xf32>
  %r = tosa.reciprocal %z : (tensor<1x64x1xf32>) -> tensor<1x64x1xf32>
  %p = tosa.mul %e, %r, %shift : (tensor<1x64x128xf32>, tensor<1x64x1xf32>, tensor<1xi8>) -> tensor<1x64x128xf32>
  %o = tosa.matmul %p, %w2, %zp, %zp : (tensor<1x64x128xf32>, tensor<1x128x128xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x64x128xf32>
  return %o : tensor<1x64x128xf32>
}
func.func @chain_streamed(%x: tensor<1x64x768xf32>) -> tensor<1x64x768xf32> {
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %w1 = "tosa.const"() <{values = dense<0.01> : tensor<1x768x1536xf32>}> : () -> tensor<1x768x1536xf32>
  %w2 = "tosa.const"() <{values = dense<0.02> : tensor<1x1536x768xf32>}> : () -> tensor<1x1536x768xf32>
  %s = tosa.matmul %x, %w1, %zp, %zp : (tensor<1x64x768xf32>, tensor<1x768x1536xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x64x1536xf32>
  %m = tosa.reduce_max %s {axis = 2 : i32} : (tensor<1x64x1536xf32>) -> tensor<1x64x1xf32>
  %d = tosa.sub %s, %m : (tensor<1x64x1536xf32>, tensor<1x64x1xf32>) -> tensor<1x64x1536xf32>
  %e = tosa.exp %d : (tensor<1x64x1536xf32>) -> tensor<1x64x1536xf32>
  %z = tosa.reduce_sum %e {axis = 2 : i32} : (tensor<1x64x1536xf32>) -> tensor<1x64x1xf32>
  %r = tosa.reciprocal %z : (tensor<1x64x1xf32>) -> tensor<1x64x1xf32>
  %p = tosa.mul %e, %r, %shift : (tensor<1x64x1536xf32>, tensor<1x64x1xf32>, tensor<1xi8>) -> tensor<1x64x1536xf32>
  %o = tosa.matmul %p, %w2, %zp, %zp : (tensor<1x64x1536xf32>, tensor<1x1536x768xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x64x768xf32>
  return %o : tensor<1x64x768xf32>
}

// A read in place by the runtime's loop takes twelve rows a pass; rows 4 KiB apart (k = 1024
// f32) all fall in one set of the L1 data cache, more than its eight ways, so such an A is
// packed per chunk instead (`rows_alias_in_l1`); rows 2 KiB apart (six a set) stay in place.
// RUN: %f16c compile %s --function=aliased_rows --target=x86_64 --precision=fp32 --emit=kernels | FileCheck %s --check-prefix=ALIASED
// RUN: %f16c compile %s --function=aliased_rows --target=x86_64 --precision=fp32 --emit=kernels --cpu=x86-64-v2 | FileCheck %s --check-prefix=ALIASED-V2
// ALIASED: contraction matmul batch=1 m=24 n=16 k=1024
// ALIASED: strategy: {{.*}}runtime's AVX2 loop {{.*}}; A packed per chunk{{.*}}
// ALIASED: contraction matmul batch=1 m=24 n=16 k=512
// ALIASED: strategy: {{.*}}runtime's AVX2 loop {{.*}}; A read in place{{.*}}
// The generated 4-row tiles (x86-64-v2, no runtime loop) read it in place.
// ALIASED-V2: contraction matmul batch=1 m=24 n=16 k=1024
// ALIASED-V2: strategy: {{.*}}; A read in place{{.*}}
func.func @aliased_rows(%a: tensor<1x24x1024xf32>, %b: tensor<1x24x512xf32>) -> (tensor<1x24x16xf32>, tensor<1x24x16xf32>) {
  %z = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %w = "tosa.const"() <{values = dense<0.5> : tensor<1x1024x16xf32>}> : () -> tensor<1x1024x16xf32>
  %v = "tosa.const"() <{values = dense<0.25> : tensor<1x512x16xf32>}> : () -> tensor<1x512x16xf32>
  %y = tosa.matmul %a, %w, %z, %z : (tensor<1x24x1024xf32>, tensor<1x1024x16xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x24x16xf32>
  %x = tosa.matmul %b, %v, %z, %z : (tensor<1x24x512xf32>, tensor<1x512x16xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x24x16xf32>
  return %y, %x : tensor<1x24x16xf32>, tensor<1x24x16xf32>
}
