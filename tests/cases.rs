//! Graph builders shared by the parity tests of every backend (the JIT's in `integration/jit.rs`,
//! the NVPTX backend's in `integration/nvptx.rs`) and by `f16c-gpu-cases`, which writes them out
//! for `scripts/gpu-check`.

use f16c_dialect::{BinaryOp, Conv3dAttrs, ConvAttrs, DType, Data, Graph, Location, NodeId, Op, ReduceKind, Region, Rounding, Tensor, TensorType, TransposeConvAttrs, UnaryOp, ValueType};
use half::{bf16, f16};

pub fn loc() -> Location {
    Location::unknown()
}

/// A deterministic pseudo-random source (no dependency, same values on every machine).
pub struct Rng(pub u64);

impl Rng {
    #[allow(clippy::should_implement_trait, reason = "a generator's step, not an Iterator (it never ends)")]
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        self.0 >> 11
    }
    pub fn uniform(&mut self, lo: f32, hi: f32) -> f32 {
        lo + (hi - lo) * (self.next() as f64 / (1u64 << 53) as f64) as f32
    }
}

pub fn random(ty: &TensorType, rng: &mut Rng, lo: f32, hi: f32) -> Tensor {
    let v: Vec<f32> = (0..ty.num_elements()).map(|_| rng.uniform(lo, hi)).collect();
    let data = match ty.dtype {
        DType::F32 => Data::F32(v),
        DType::F16 => Data::F16(v.into_iter().map(f16::from_f32).collect()),
        DType::BF16 => Data::BF16(v.into_iter().map(bf16::from_f32).collect()),
        DType::I1 => Data::I1(v.into_iter().map(|x| x > 0.0).collect()),
        d if d.is_int() => Data::from_i64(v.into_iter().map(|x| x as i64).collect(), d),
        d => panic!("no random {d}"),
    };
    Tensor::new(ty.shape.clone(), data).unwrap()
}

pub fn tensor_ty(d: DType, shape: &[usize]) -> ValueType {
    ValueType::Tensor(TensorType::new(d, shape))
}

pub fn constant(g: &mut Graph, t: Tensor) -> NodeId {
    let ty = ValueType::Tensor(t.ty());
    g.add_node(Op::Const(t), ty, &[], loc())
}

pub fn zero(g: &mut Graph, d: DType) -> NodeId {
    constant(g, Tensor::splat(&TensorType::new(d, [1]), 0.0))
}

/// One elementwise op on `[2, n]` operands (the second operand broadcast as `[1, n]` or
/// `[2, 1]` in turn) in dtype `d`.
pub fn elementwise_graph(op: &Op, d: DType, n: usize, broadcast: usize) -> Graph {
    let mut g = Graph::new("ew");
    let shape = [2, n];
    let other = match broadcast {
        1 => [1, n],
        2 => [2, 1],
        _ => [2, n],
    };
    let a = g.add_input(TensorType::new(d, shape), loc());
    let result_d = match op {
        Op::Binary(b) if b.is_comparison() => DType::I1,
        _ => d,
    };
    let out = match op {
        Op::Unary(UnaryOp::Negate) => {
            let (z1, z2) = (zero(&mut g, d), zero(&mut g, d));
            g.add_node(op.clone(), tensor_ty(d, &shape), &[a, z1, z2], loc())
        }
        Op::Unary(_) | Op::Clamp { .. } => g.add_node(op.clone(), tensor_ty(d, &shape), &[a], loc()),
        Op::Binary(b) => {
            let x = g.add_input(TensorType::new(d, other), loc());
            let mut operands = vec![a, x];
            if *b == BinaryOp::Mul {
                operands.push(constant(&mut g, Tensor::new(vec![1], Data::I8(vec![0])).unwrap()));
            }
            g.add_node(op.clone(), tensor_ty(result_d, &shape), &operands, loc())
        }
        Op::Select => {
            let p = g.add_input(TensorType::new(DType::I1, other), loc());
            let x = g.add_input(TensorType::new(d, shape), loc());
            g.add_node(Op::Select, tensor_ty(d, &shape), &[p, a, x], loc())
        }
        _ => unreachable!(),
    };
    g.add_output(out);
    g
}

/// `[batch, m, k] × [batch, k, n]` in `dtype`, both operands arguments.
pub fn matmul_graph(batch: usize, m: usize, k: usize, n: usize, dtype: DType) -> Graph {
    let mut g = Graph::new("matmul");
    let a = g.add_input(TensorType::new(dtype, [batch, m, k]), loc());
    let b = g.add_input(TensorType::new(dtype, [batch, k, n]), loc());
    let (z1, z2) = (zero(&mut g, dtype), zero(&mut g, dtype));
    let o = g.add_node(Op::MatMul, tensor_ty(dtype, &[batch, m, n]), &[a, b, z1, z2], loc());
    g.add_output(o);
    g
}

pub fn conv_graph(op: &str, d: DType, n: usize, c: usize, o: usize, fused: bool) -> (Graph, usize) {
    let mut rng = Rng((n * 31 + c) as u64);
    let mut g = Graph::new(op);
    let (h, w) = (n.min(9), n);
    // conv3d: depth 4, two depth taps, one plane of front padding, depth stride 2.
    let (depth, kd) = (4, 2);
    // Two images for the dilated depthwise convolution (its rows are cached per image).
    let batch = if op == "depthwise_dilated" { 2 } else { 1 };
    let x = g.add_input(TensorType::new(d, if op == "conv3d" { vec![1, depth, h, w, c] } else { vec![batch, h, w, c] }), loc());
    let (kh, kw) = (3, 2);
    let (weight_shape, oc) = match op {
        "depthwise" | "depthwise_dilated" => (vec![kh, kw, c, 1], c),
        "depthwise_strided" => (vec![kh, kw, c, 2], 2 * c),
        "conv3d" => (vec![o, kd, kh, kw, c], o),
        _ => (vec![o, kh, kw, c], o),
    };
    let weight = constant(&mut g, random(&TensorType::new(d, weight_shape), &mut rng, -1.0, 1.0));
    let bias = constant(&mut g, random(&TensorType::new(d, [oc]), &mut rng, -1.0, 1.0));
    let (z1, z2) = (zero(&mut g, d), zero(&mut g, d));
    let (node, out_shape, k) = match op {
        "conv" => {
            let a = ConvAttrs { pad: [1, 1, 0, 1], stride: [1, 2], dilation: [1, 1], acc: DType::F32 };
            let (oh, ow) = (h + 2 - kh + 1, (w + 1 - kw) / 2 + 1);
            (Op::Conv2d(a), vec![1, oh, ow, oc], kh * kw * c)
        }
        "conv3d" => {
            let a = Conv3dAttrs { pad: [1, 0, 1, 1, 0, 1], stride: [2, 1, 2], dilation: [1, 1, 1], acc: DType::F32 };
            let (od, oh, ow) = ((depth + 1 - kd) / 2 + 1, h + 2 - kh + 1, (w + 1 - kw) / 2 + 1);
            (Op::Conv3d(a), vec![1, od, oh, ow, oc], kd * kh * kw * c)
        }
        "depthwise" => {
            let a = ConvAttrs { pad: [1, 1, 1, 0], stride: [1, 1], dilation: [1, 1], acc: DType::F32 };
            (Op::DepthwiseConv2d(a), vec![1, h, w, oc], kh * kw)
        }
        "depthwise_dilated" => {
            // Rows two apart, padding that keeps the height.
            let a = ConvAttrs { pad: [2, 2, 1, 0], stride: [1, 1], dilation: [2, 1], acc: DType::F32 };
            (Op::DepthwiseConv2d(a), vec![batch, h, w, oc], kh * kw)
        }
        "depthwise_strided" => {
            // Channel multiplier 2, stride 2, a dilated width, uneven padding (bottom and right
            // padding make the strides divide the padded extents, as TOSA requires).
            let (pb, pr) = (h % 2, (w + 1) % 2);
            let a = ConvAttrs { pad: [1, pb, 2, pr], stride: [2, 2], dilation: [1, 2], acc: DType::F32 };
            let (oh, ow) = ((h + 1 + pb - kh) / 2 + 1, (w + 2 + pr - (kw - 1) * 2 - 1) / 2 + 1);
            (Op::DepthwiseConv2d(a), vec![1, oh, ow, oc], kh * kw)
        }
        _ => {
            let a = TransposeConvAttrs { out_pad: [0, 0, 0, 0], stride: [2, 1], acc: DType::F32 };
            ((Op::TransposeConv2d(a)), vec![1, (h - 1) * 2 + kh, w - 1 + kw, oc], kh * kw * c)
        }
    };
    let mut y = g.add_node(node, tensor_ty(d, &out_shape), &[x, weight, bias, z1, z2], loc());
    if fused {
        // A residual add, a per-channel scale (a batch norm's), a ReLU6 as clamp and one as
        // maximum/minimum with one-element constants, as torch-mlir writes it, in the epilogue.
        let r = g.add_input(TensorType::new(d, out_shape.clone()), loc());
        y = g.add_node(Op::Binary(BinaryOp::Add), tensor_ty(d, &out_shape), &[y, r], loc());
        let rank = out_shape.len();
        let per_channel: Vec<usize> = (0..rank).map(|i| if i + 1 == rank { oc } else { 1 }).collect();
        let scale = constant(&mut g, random(&TensorType::new(d, per_channel), &mut rng, 0.5, 1.5));
        let shift = constant(&mut g, Tensor::new(vec![1], Data::I8(vec![0])).unwrap());
        y = g.add_node(Op::Binary(BinaryOp::Mul), tensor_ty(d, &out_shape), &[y, scale, shift], loc());
        y = g.add_node(Op::Clamp { min: 0.0, max: 6.0 }, tensor_ty(d, &out_shape), &[y], loc());
        let one = TensorType::new(d, vec![1; rank]);
        let (lo, hi) = (Tensor::splat(&one, 0.25), Tensor::splat(&one, 4.5));
        let (lo, hi) = (constant(&mut g, lo), constant(&mut g, hi));
        y = g.add_node(Op::Binary(BinaryOp::Maximum), tensor_ty(d, &out_shape), &[y, lo], loc());
        y = g.add_node(Op::Binary(BinaryOp::Minimum), tensor_ty(d, &out_shape), &[y, hi], loc());
    }
    g.add_output(y);
    (g, k)
}

/// Softmax `[rows, n]` as torch-mlir writes it: max, subtract, exp, sum, reciprocal, multiply.
pub fn softmax(g: &mut Graph, x: NodeId, d: DType, rows: usize, n: usize) -> NodeId {
    let (full, one) = (tensor_ty(d, &[rows, n]), tensor_ty(d, &[rows, 1]));
    let shift = constant(g, Tensor::new(vec![1], Data::I8(vec![0])).unwrap());
    let m = g.add_node(Op::Reduce { kind: ReduceKind::Max, axis: 1 }, one.clone(), &[x], loc());
    let s = g.add_node(Op::Binary(BinaryOp::Sub), full.clone(), &[x, m], loc());
    let e = g.add_node(Op::Unary(UnaryOp::Exp), full.clone(), &[s], loc());
    let sum = g.add_node(Op::Reduce { kind: ReduceKind::Sum, axis: 1 }, one.clone(), &[e], loc());
    let r = g.add_node(Op::Unary(UnaryOp::Reciprocal), one, &[sum], loc());
    g.add_node(Op::Binary(BinaryOp::Mul), full, &[e, r, shift], loc())
}

/// Layer norm `[rows, n]` after a residual add, as torch-mlir writes it; with `f64_variance`
/// the variance is computed in f64 between casts (torch's `var`), as in attention_tiny.
#[allow(clippy::too_many_arguments, reason = "a case's shape, types and values")]
pub fn layer_norm(g: &mut Graph, x: NodeId, res: NodeId, d: DType, rows: usize, n: usize, f64_variance: bool, rng: &mut Rng) -> NodeId {
    let (full, one) = (tensor_ty(d, &[rows, n]), tensor_ty(d, &[rows, 1]));
    let shift = constant(g, Tensor::new(vec![1], Data::I8(vec![0])).unwrap());
    let scalar = |g: &mut Graph, d: DType, v: f64| {
        let data = match d {
            DType::F64 => Data::F64(vec![v]),
            DType::F32 => Data::F32(vec![v as f32]),
            DType::F16 => Data::F16(vec![f16::from_f64(v)]),
            _ => Data::BF16(vec![bf16::from_f64(v)]),
        };
        constant(g, Tensor::new(vec![1, 1], data).unwrap())
    };
    let h = g.add_node(Op::Binary(BinaryOp::Add), full.clone(), &[x, res], loc());
    let inv_n = scalar(g, d, 1.0 / n as f64);
    let sum = g.add_node(Op::Reduce { kind: ReduceKind::Sum, axis: 1 }, one.clone(), &[h], loc());
    let mean = g.add_node(Op::Binary(BinaryOp::Mul), one.clone(), &[sum, inv_n, shift], loc());
    let var = if f64_variance {
        let (full64, one64) = (tensor_ty(DType::F64, &[rows, n]), tensor_ty(DType::F64, &[rows, 1]));
        let h64 = g.add_node(Op::Cast, full64.clone(), &[h], loc());
        let s64 = g.add_node(Op::Reduce { kind: ReduceKind::Sum, axis: 1 }, one64.clone(), &[h64], loc());
        let inv64 = scalar(g, DType::F64, 1.0 / n as f64);
        let m64 = g.add_node(Op::Binary(BinaryOp::Mul), one64.clone(), &[s64, inv64, shift], loc());
        let c64 = g.add_node(Op::Binary(BinaryOp::Sub), full64.clone(), &[h64, m64], loc());
        let sq = g.add_node(Op::Binary(BinaryOp::Mul), full64, &[c64, c64, shift], loc());
        let v64 = g.add_node(Op::Reduce { kind: ReduceKind::Sum, axis: 1 }, one64.clone(), &[sq], loc());
        let v64 = g.add_node(Op::Binary(BinaryOp::Mul), one64, &[v64, inv64, shift], loc());
        g.add_node(Op::Cast, one.clone(), &[v64], loc())
    } else {
        let c = g.add_node(Op::Binary(BinaryOp::Sub), full.clone(), &[h, mean], loc());
        let sq = g.add_node(Op::Binary(BinaryOp::Mul), full.clone(), &[c, c, shift], loc());
        let v = g.add_node(Op::Reduce { kind: ReduceKind::Sum, axis: 1 }, one.clone(), &[sq], loc());
        g.add_node(Op::Binary(BinaryOp::Mul), one.clone(), &[v, inv_n, shift], loc())
    };
    let eps = scalar(g, d, 1e-5);
    let ve = g.add_node(Op::Binary(BinaryOp::Add), one.clone(), &[var, eps], loc());
    let r = g.add_node(Op::Unary(UnaryOp::Rsqrt), one, &[ve], loc());
    let c = g.add_node(Op::Binary(BinaryOp::Sub), full.clone(), &[h, mean], loc());
    let y = g.add_node(Op::Binary(BinaryOp::Mul), full.clone(), &[c, r, shift], loc());
    let gamma = random(&TensorType::new(d, [1, n]), rng, 0.5, 1.5);
    let gamma = constant(g, gamma);
    let beta = random(&TensorType::new(d, [1, n]), rng, -0.5, 0.5);
    let beta = constant(g, beta);
    let y = g.add_node(Op::Binary(BinaryOp::Mul), full.clone(), &[y, gamma, shift], loc());
    g.add_node(Op::Binary(BinaryOp::Add), full, &[y, beta], loc())
}

/// How a backend's result is compared with the reference interpreter's.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Tolerance {
    /// Bit for bit (any NaN equals any NaN).
    Exact,
    /// Math functions (exp, log, tanh, erf, pow): within the backend's math tolerance.
    Math,
    /// A contraction over `k` terms: a different accumulation order (and, for a low-precision
    /// result, one ulp of its rounding).
    Contraction(usize),
}

/// Contractions accumulate in another order (and with FMA on the JIT: one rounding per step
/// instead of two): the difference from the reference's multiply-then-add is at most K·2⁻²⁴
/// relative to Σ|a·b|, so measured against the output's peak a few ulp of f32 per term
/// (DESIGN.md, "Numerics"); a result in a low type may also round one ulp the other way (2⁻⁷
/// covers bf16's).
pub fn contraction_tolerance(k: usize, low: bool) -> f64 {
    4.0 * k as f64 * f32::EPSILON as f64 + if low { 2f64.powi(-7) } else { 0.0 }
}

/// Equal bits, except that any NaN equals any NaN (IEEE leaves payloads to the hardware).
pub fn same_bits(a: &Tensor, b: &Tensor) -> Result<(), String> {
    if a.ty() != b.ty() {
        return Err(format!("types differ: {} vs {}", a.ty(), b.ty()));
    }
    for (i, (p, q)) in a.to_f64_vec().iter().zip(b.to_f64_vec()).enumerate() {
        if !((p.is_nan() && q.is_nan()) || p.to_bits() == q.to_bits()) {
            return Err(format!("element {i}: {p:e} vs reference {q:e}"));
        }
    }
    Ok(())
}

/// [`same_bits`], with NaNs' signs and payloads compared too: the canonical NaN the reference's
/// `maximum`/`minimum` give where others would pass an input's NaN on.
pub fn same_bits_and_nans(a: &Tensor, b: &Tensor) -> Result<(), String> {
    same_bits(a, b)?;
    for (i, (p, q)) in a.to_f64_vec().iter().zip(b.to_f64_vec()).enumerate() {
        if p.to_bits() != q.to_bits() {
            return Err(format!("element {i}: NaN bits {:#x} vs reference {:#x}", p.to_bits(), q.to_bits()));
        }
    }
    Ok(())
}

/// At most `ulps` units in the last place of the element type apart (NaN equals NaN; +0 and
/// −0 are the same point). For math functions computed by another C library than the
/// reference's.
pub fn within_ulps(a: &Tensor, b: &Tensor, ulps: u64) -> Result<(), String> {
    if a.ty() != b.ty() {
        return Err(format!("types differ: {} vs {}", a.ty(), b.ty()));
    }
    // The element's bits, mapped so that adjacent values of the type are adjacent integers.
    let ordered = |x: f64| -> i64 {
        let (bits, width) = match a.dtype() {
            DType::F16 => (f16::from_f64(x).to_bits() as i64, 16),
            DType::BF16 => (bf16::from_f64(x).to_bits() as i64, 16),
            DType::F32 => ((x as f32).to_bits() as i64, 32),
            _ => (x.to_bits() as i64, 64),
        };
        let sign = if width == 64 { i64::MIN } else { 1i64 << (width - 1) };
        if bits & sign != 0 { -(bits & !sign) } else { bits }
    };
    for (i, (p, q)) in a.to_f64_vec().iter().zip(b.to_f64_vec()).enumerate() {
        if !((p.is_nan() && q.is_nan()) || ordered(*p).abs_diff(ordered(q)) <= ulps) {
            return Err(format!("element {i}: {p:e} vs reference {q:e} (more than {ulps} ulp apart)"));
        }
    }
    Ok(())
}

/// One parity case: a graph, its inputs and how its results compare.
pub struct Case {
    /// A unique name (usable as a file name).
    pub name: String,
    /// The graph.
    pub graph: Graph,
    /// Inputs, one per argument.
    pub inputs: Vec<Tensor>,
    /// How to compare.
    pub tolerance: Tolerance,
}

impl Case {
    /// What is wrong with a backend's results for this case (nothing: they match): bit for bit,
    /// math functions within `math_ulps` (0: bit for bit), contractions within the reduction
    /// tolerance.
    pub fn failures(&self, got: Result<Vec<Tensor>, String>, want: &[Tensor], math_ulps: u64) -> Vec<String> {
        let got = match got {
            Ok(g) => g,
            Err(e) => return vec![format!("{}: {e}", self.name)],
        };
        got.iter()
            .zip(want)
            .filter_map(|(a, b)| {
                let r = match self.tolerance {
                    Tolerance::Math if math_ulps > 0 => within_ulps(a, b, math_ulps),
                    Tolerance::Exact | Tolerance::Math => same_bits(a, b),
                    Tolerance::Contraction(k) => {
                        let tol = contraction_tolerance(k, a.dtype().is_low_float());
                        let err = crate::max_rel_to_peak(a, b);
                        if err <= tol { Ok(()) } else { Err(format!("error {err:e} > {tol:e}")) }
                    }
                };
                r.err().map(|e| format!("{}: {e}", self.name))
            })
            .collect()
    }
}

/// Every unary op on floats.
pub const FLOAT_UNARY: [UnaryOp; 13] = [
    UnaryOp::Negate,
    UnaryOp::Abs,
    UnaryOp::Exp,
    UnaryOp::Log,
    UnaryOp::Rsqrt,
    UnaryOp::Reciprocal,
    UnaryOp::Tanh,
    UnaryOp::Sigmoid,
    UnaryOp::Erf,
    UnaryOp::Ceil,
    UnaryOp::Floor,
    UnaryOp::Sin,
    UnaryOp::Cos,
];

/// Every elementwise op of the parity suites: the unary ops, the binary ops (comparisons
/// included), a clamp and select.
pub fn elementwise_ops() -> Vec<Op> {
    let mut ops: Vec<Op> = FLOAT_UNARY
        .into_iter()
        .map(Op::Unary)
        .collect();
    ops.extend(
        [BinaryOp::Add, BinaryOp::Sub, BinaryOp::Mul, BinaryOp::Maximum, BinaryOp::Minimum, BinaryOp::Pow, BinaryOp::Equal, BinaryOp::Greater, BinaryOp::GreaterEqual]
            .into_iter()
            .map(Op::Binary),
    );
    ops.push(Op::Clamp { min: -1.0, max: 6.0 });
    ops.push(Op::Select);
    ops
}

/// `reduce_<kind>` of a `d` tensor of `shape` along `axis` (kept as size 1).
pub fn reduce_graph(kind: ReduceKind, d: DType, shape: &[usize], axis: usize) -> Graph {
    let mut out_shape = shape.to_vec();
    out_shape[axis] = 1;
    let mut g = Graph::new("reduce");
    let x = g.add_input(TensorType::new(d, shape), loc());
    let r = g.add_node(Op::Reduce { kind, axis }, tensor_ty(d, &out_shape), &[x], loc());
    g.add_output(r);
    g
}

/// `argmax` of a `d` tensor of `shape` along `axis` (removed), as i32.
pub fn argmax_graph(d: DType, shape: &[usize], axis: usize) -> Graph {
    let mut g = Graph::new("argmax");
    let x = g.add_input(TensorType::new(d, shape), loc());
    let reduced: Vec<usize> = shape.iter().enumerate().filter(|&(i, _)| i != axis).map(|(_, &s)| s).collect();
    let r = g.add_node(Op::ArgMax { axis }, tensor_ty(DType::I32, &reduced), &[x], loc());
    g.add_output(r);
    g
}

/// Every float type the parity cases run in.
pub const FLOATS: [DType; 3] = [DType::F32, DType::F16, DType::BF16];

fn inputs_for(g: &Graph, rng: &mut Rng, lo: f32, hi: f32) -> Vec<Tensor> {
    g.inputs().iter().map(|&i| random(g.tensor_ty(i).unwrap(), rng, lo, hi)).collect()
}

/// Matmuls whose B is an input (computed at run time, as attention's keys and values are):
/// the CPU backends pack B per run, the LLVM one whole panels of a row-major B a row per vector
/// (two rows interleaved in bf16 pairs), and the last panel of a B whose columns do not fill
/// it (197 = 6 · 32 + 5 on AVX-512, 40, 31) element by element, with zeros past the end; the
/// tiles' columns past `n` are masked off. f32, fp16 and bf16; `k` even and odd.
pub fn run_time_b_cases() -> Vec<Case> {
    let mut rng = Rng(0x5eed_b);
    let mut cases = Vec::new();
    for d in [DType::F32, DType::F16, DType::BF16] {
        for (m, k, n) in [(13, 64, 197), (5, 6, 40), (3, 64, 64), (14, 9, 31), (12, 33, 48)] {
            let graph = matmul_graph(2, m, k, n, d);
            let inputs = inputs_for(&graph, &mut rng, -1.0, 1.0);
            cases.push(Case { name: format!("run_time_b_{d}_{m}x{k}x{n}"), graph, inputs, tolerance: Tolerance::Contraction(k) });
        }
    }
    cases
}

fn dname(d: DType) -> String {
    d.to_string()
}

/// A function that adds a case with random inputs in `[lo, hi]` to `cases`.
fn adder(cases: &mut Vec<Case>) -> impl FnMut(String, Graph, &mut Rng, f32, f32, Tolerance) + '_ {
    move |name, graph, rng, lo, hi, tolerance| {
        let inputs = inputs_for(&graph, rng, lo, hi);
        cases.push(Case { name, graph, inputs, tolerance });
    }
}

/// Every elementwise op in f32, f16 and bf16 at each size of `sizes` (binary ops and select at 17
/// with a broadcast operand), through `add`.
fn elementwise_cases(sizes: &[usize], rng: &mut Rng, add: &mut impl FnMut(String, Graph, &mut Rng, f32, f32, Tolerance)) {
    let math = |op: &Op| matches!(op, Op::Unary(UnaryOp::Exp | UnaryOp::Log | UnaryOp::Tanh | UnaryOp::Sigmoid | UnaryOp::Erf | UnaryOp::Sin | UnaryOp::Cos) | Op::Binary(BinaryOp::Pow));
    for op in &elementwise_ops() {
        for d in FLOATS {
            for &n in sizes {
                let bc = if matches!(op, Op::Binary(_) | Op::Select) && n == 17 { 1 } else { 0 };
                let g = elementwise_graph(op, d, n, bc);
                let tol = if math(op) { Tolerance::Math } else { Tolerance::Exact };
                // Positive inputs for log, rsqrt and pow (a negative base is NaN on both sides).
                let lo = if matches!(op, Op::Unary(UnaryOp::Log | UnaryOp::Rsqrt) | Op::Binary(BinaryOp::Pow)) { 0.01 } else { -8.0 };
                add(format!("{}_{}_n{n}_bc{bc}", op.mlir_name().trim_start_matches("tosa."), dname(d)), g, rng, lo, 8.0, tol);
            }
        }
    }
}

/// TOSA's integer and boolean ops (bitwise, shifts, clz and intdiv on i32, the shifts on i8
/// too, the logical ops on i1; i8 table, resize and pooling, i32 max pooling, rescale) at each size of
/// `sizes` (binary elementwise ones at 17 with a broadcast operand). Bit for bit.
pub fn integer_cases(sizes: &[usize]) -> Vec<Case> {
    let mut rng = Rng(79);
    let mut cases = Vec::new();
    let arith = |round| Op::Binary(BinaryOp::ShiftRightArith { round });
    let ops = [
        (Op::Binary(BinaryOp::BitwiseAnd), DType::I32),
        (Op::Binary(BinaryOp::BitwiseOr), DType::I32),
        (Op::Binary(BinaryOp::BitwiseXor), DType::I32),
        (Op::Unary(UnaryOp::BitwiseNot), DType::I32),
        (Op::Unary(UnaryOp::Clz), DType::I32),
        (Op::Binary(BinaryOp::IntDiv), DType::I32),
        (Op::Binary(BinaryOp::ShiftLeft), DType::I32),
        (Op::Binary(BinaryOp::ShiftRightLogical), DType::I32),
        (arith(false), DType::I32),
        (arith(true), DType::I32),
        (Op::Binary(BinaryOp::ShiftLeft), DType::I8),
        (Op::Binary(BinaryOp::ShiftRightLogical), DType::I8),
        (arith(true), DType::I8),
        (Op::Binary(BinaryOp::ShiftLeft), DType::I16),
        (Op::Binary(BinaryOp::ShiftRightLogical), DType::I16),
        (arith(true), DType::I16),
        (Op::Binary(BinaryOp::BitwiseXor), DType::I16),
        (Op::Unary(UnaryOp::BitwiseNot), DType::I16),
        (Op::Binary(BinaryOp::LogicalAnd), DType::I1),
        (Op::Binary(BinaryOp::LogicalOr), DType::I1),
        (Op::Binary(BinaryOp::LogicalXor), DType::I1),
        (Op::Unary(UnaryOp::LogicalNot), DType::I1),
    ];
    for &n in sizes {
        for (i, &(scale, offset, border, bilinear)) in RESIZES.iter().enumerate() {
            for d in [DType::I8, DType::I16] {
                let out_d = match (d, bilinear) {
                    (DType::I8, true) => DType::I32,
                    (DType::I16, true) => DType::I48,
                    _ => d,
                };
                let g = resize_graph(d, out_d, [1, 5, 7, n.min(17)], scale, offset, border, bilinear);
                let (lo, hi) = int_bounds(d);
                let inputs = inputs_for(&g, &mut rng, lo, hi);
                cases.push(Case { name: format!("resize{i}_{}_{d}_n{n}", if bilinear { "bilinear" } else { "nearest" }), graph: g, inputs, tolerance: Tolerance::Exact });
            }
        }
    }
    for &n in sizes {
        // Integer pooling: i8 max and average (zero points 3 in, -2 out), with padding so that
        // windows hold different counts, and i32 max.
        for (d, avg) in [(DType::I8, false), (DType::I8, true), (DType::I32, false), (DType::I16, false), (DType::I16, true)] {
            let c = n.min(17);
            let mut g = Graph::new("pool");
            let x = g.add_input(TensorType::new(d, [1, 6, 7, c]), loc());
            let attrs = f16c_dialect::PoolAttrs { kernel: [2, 3], stride: [2, 1], pad: [1, 0, 1, 1], acc: avg.then_some(DType::I32) };
            let op = if avg { Op::AvgPool2d(attrs) } else { Op::MaxPool2d(attrs) };
            let mut operands = vec![x];
            if avg {
                operands.push(constant(&mut g, Tensor::new(vec![1], Data::from_i64(vec![3], d)).unwrap()));
                operands.push(constant(&mut g, Tensor::new(vec![1], Data::from_i64(vec![-2], d)).unwrap()));
            }
            let y = g.add_node(op, tensor_ty(d, &[1, 3, 7, c]), &operands, loc());
            g.add_output(y);
            let (lo, hi) = int_bounds(d);
            let inputs = inputs_for(&g, &mut rng, lo, hi);
            cases.push(Case { name: format!("{}_pool_{d}_n{n}", if avg { "avg" } else { "max" }), graph: g, inputs, tolerance: Tolerance::Exact });
        }
        // Rescales: i8 -> i8 per channel with double rounding and zero points, i8 -> i32, i32 ->
        // i8 with an unsigned output, unsigned i8 -> i32; multipliers in [2^30, 2^31), shifts
        // around 31 (and the out-of-range 1 and 70, clamped); the last one's result feeds an add.
        let c = n.min(17);
        // With 16-bit multipliers (scale32 = false): i16 -> i8 per channel, i48 -> i16.
        let variants = [
            (DType::I8, DType::I8, Rounding::Double, true, false, false, true),
            (DType::I8, DType::I32, Rounding::Single, false, false, false, true),
            (DType::I32, DType::I8, Rounding::Double, true, false, true, true),
            (DType::I16, DType::I8, Rounding::Single, true, false, false, false),
            (DType::I48, DType::I16, Rounding::Single, false, false, false, false),
            (DType::I8, DType::I32, Rounding::Inexact, true, true, false, true),
        ];
        for (k, &(din, dout, rounding, per_channel, input_unsigned, output_unsigned, scale32)) in variants.iter().enumerate() {
            let attrs = f16c_dialect::RescaleAttrs { scale32, rounding, per_channel, input_unsigned, output_unsigned };
            let channels = if per_channel { c } else { 1 };
            let mut g = Graph::new("rescale");
            let x = g.add_input(TensorType::new(din, [2, c]), loc());
            let (m_lo, m_hi, m_d) = if scale32 { (1073741824.0, 2147483000.0, DType::I32) } else { (16384.0, 32767.0, DType::I16) };
            let m: Vec<i64> = (0..channels).map(|_| rng.uniform(m_lo, m_hi) as i64).collect();
            let sh: Vec<i8> = (0..channels).map(|i| match i { 0 if channels > 2 => 1, 1 if channels > 2 => 70, _ => rng.uniform(20.0, 45.0) as i8 }).collect();
            let m = constant(&mut g, Tensor::new(vec![channels], Data::from_i64(m, m_d)).unwrap());
            let sh = constant(&mut g, Tensor::new(vec![channels], Data::I8(sh)).unwrap());
            let zp = |g: &mut Graph, d: DType, v: i64| constant(g, f16c_dialect::semantics::cast(&Tensor::new(vec![1], Data::I64(vec![v])).unwrap(), d));
            let (zi, zo) = (zp(&mut g, din, if din == DType::I8 { -3 } else { 0 }), zp(&mut g, dout, if dout == DType::I8 { 5 } else { 0 }));
            let mut y = g.add_node(Op::Rescale(attrs), tensor_ty(dout, &[2, c]), &[x, m, sh, zi, zo], loc());
            if k == variants.len() - 1 {
                let one = constant(&mut g, Tensor::new(vec![1, 1], Data::I32(vec![7])).unwrap());
                y = g.add_node(Op::Binary(BinaryOp::Add), tensor_ty(dout, &[2, c]), &[y, one], loc());
            }
            g.add_output(y);
            let (lo, hi) = int_bounds(din);
            let inputs = inputs_for(&g, &mut rng, lo, hi);
            cases.push(Case { name: format!("rescale{k}_{din}_to_{dout}_n{n}"), graph: g, inputs, tolerance: Tolerance::Exact });
        }
        // Table lookups, with a table given at run time and one that is a constant: i8 (256
        // entries) and i16 (513 entries, interpolated, an i32 result).
        for (d, entries, out_d) in [(DType::I8, 256, DType::I8), (DType::I16, 513, DType::I32)] {
            for constant_table in [false, true] {
                let mut g = Graph::new("table");
                let x = g.add_input(TensorType::new(d, [2, n]), loc());
                let table_ty = TensorType::new(d, [entries]);
                let (lo, hi) = int_bounds(d);
                let table = if constant_table { constant(&mut g, random(&table_ty, &mut rng, lo, hi)) } else { g.add_input(table_ty, loc()) };
                let y = g.add_node(Op::Table, tensor_ty(out_d, &[2, n]), &[x, table], loc());
                g.add_output(y);
                let inputs = inputs_for(&g, &mut rng, lo, hi);
                cases.push(Case { name: format!("table_{d}_n{n}_const{}", constant_table as u8), graph: g, inputs, tolerance: Tolerance::Exact });
            }
        }
    }
    for (op, d) in &ops {
        for &n in sizes {
            let bc = if matches!(op, Op::Binary(_)) && n == 17 { 1 } else { 0 };
            let g = elementwise_graph(op, *d, n, bc);
            // Integers over their whole range (their bits), booleans half true; shift amounts
            // and divisors mostly small: 0..=31 with some outside it (taken modulo 32) and, for
            // intdiv, zeros (which give 0).
            let (lo, hi) = int_bounds(*d);
            let mut inputs = inputs_for(&g, &mut rng, lo, hi);
            if matches!(op, Op::Binary(b) if b.is_shift() || *b == BinaryOp::IntDiv) {
                let ty = g.tensor_ty(g.inputs()[1]).expect("a tensor").clone();
                inputs[1] = random(&ty, &mut rng, -3.0, 40.0);
            }
            let name = format!("{}_{}_n{n}_bc{bc}", op.mlir_name().trim_start_matches("tosa."), dname(*d));
            let name = if matches!(op, Op::Binary(BinaryOp::ShiftRightArith { round: true })) { format!("{name}_round") } else { name };
            cases.push(Case { name, graph: g, inputs, tolerance: Tolerance::Exact });
        }
    }
    cases
}

/// Bounds for random values of an integer type: its range (i32 and i48 a little inside it),
/// i1 as ±1.
fn int_bounds(d: DType) -> (f32, f32) {
    match d {
        DType::I32 => (-2.0e9, 2.0e9),
        DType::I48 => (-1.0e14, 1.0e14),
        DType::I1 => (-1.0, 1.0),
        d => {
            let (lo, hi) = d.int_range();
            (lo as f32, hi as f32 + 0.99)
        }
    }
}

/// Integer contractions (i8 × i8 → i32, with zero points and an i32 bias): matmul, conv2d
/// with padding, stride and dilation, depthwise conv2d with a channel multiplier, at each size
/// of `sizes` (channels or columns). Bit for bit, on every backend.
pub fn integer_contraction_cases(sizes: &[usize]) -> Vec<Case> {
    let mut rng = Rng(81);
    let mut cases = Vec::new();
    let i8s = |g: &mut Graph, v: i8| constant(g, Tensor::new(vec![1], Data::I8(vec![v])).unwrap());
    for &n in sizes {
        let c = n.min(33);
        // matmul [2, 5, c] x [2, c, 7], weight constant or an input.
        for constant_b in [false, true] {
            let mut g = Graph::new("matmul_i8");
            let a = g.add_input(TensorType::new(DType::I8, [2, 5, c]), loc());
            let bt = TensorType::new(DType::I8, [2, c, 7]);
            let b = if constant_b { let t = random(&bt, &mut rng, -128.0, 127.99); constant(&mut g, t) } else { g.add_input(bt, loc()) };
            let (za, zb) = (i8s(&mut g, -3), i8s(&mut g, if constant_b { 2 } else { 0 }));
            let o = g.add_node(Op::MatMul, tensor_ty(DType::I32, &[2, 5, 7]), &[a, b, za, zb], loc());
            g.add_output(o);
            let inputs = inputs_for(&g, &mut rng, -128.0, 127.99);
            cases.push(Case { name: format!("matmul_i8_c{c}_const{}", constant_b as u8), graph: g, inputs, tolerance: Tolerance::Exact });
        }
        for depthwise in [false, true] {
            let mut g = Graph::new("conv_i8");
            let x = g.add_input(TensorType::new(DType::I8, [1, 6, 7, c]), loc());
            let attrs = ConvAttrs { pad: [1, 0, 2, 1], stride: [2, 1], dilation: [1, 2], acc: DType::I32 };
            let (oh, ow) = ((6 + 1 - 3) / 2 + 1, (7 + 3 - 5) + 1);
            let (wshape, oc) = if depthwise { (vec![3, 3, c, 2], 2 * c) } else { (vec![5, 3, 3, c], 5) };
            let w = random(&TensorType::new(DType::I8, wshape), &mut rng, -128.0, 127.99);
            let w = constant(&mut g, w);
            let bias = random(&TensorType::new(DType::I32, [oc]), &mut rng, -1000.0, 1000.0);
            let bias = constant(&mut g, bias);
            let (zx, zw) = (i8s(&mut g, 5), i8s(&mut g, 0));
            let op = if depthwise { Op::DepthwiseConv2d(attrs) } else { Op::Conv2d(attrs) };
            let o = g.add_node(op, tensor_ty(DType::I32, &[1, oh, ow, oc]), &[x, w, bias, zx, zw], loc());
            g.add_output(o);
            let inputs = inputs_for(&g, &mut rng, -128.0, 127.99);
            cases.push(Case { name: format!("{}_i8_c{c}", if depthwise { "depthwise" } else { "conv" }), graph: g, inputs, tolerance: Tolerance::Exact });
        }
        // Transpose conv2d with output padding and a stride, zero points on both sides.
        let mut g = Graph::new("transpose_i8");
        let x = g.add_input(TensorType::new(DType::I8, [1, 3, 4, c]), loc());
        let w = constant(&mut g, random(&TensorType::new(DType::I8, [5, 3, 2, c]), &mut rng, -128.0, 127.99));
        let bias = constant(&mut g, random(&TensorType::new(DType::I32, [5]), &mut rng, -1000.0, 1000.0));
        let (zx, zw) = (i8s(&mut g, -2), i8s(&mut g, 3));
        let attrs = TransposeConvAttrs { out_pad: [0, 1, 1, 0], stride: [2, 1], acc: DType::I32 };
        let o = g.add_node(Op::TransposeConv2d(attrs), tensor_ty(DType::I32, &[1, 8, 6, 5]), &[x, w, bias, zx, zw], loc());
        g.add_output(o);
        let inputs = inputs_for(&g, &mut rng, -128.0, 127.99);
        cases.push(Case { name: format!("transpose_i8_c{c}"), graph: g, inputs, tolerance: Tolerance::Exact });
        // i16 × i8 conv2d and i16 × i16 matmul accumulating in i48 (TOSA's 16-bit extension).
        let mut g = Graph::new("conv_i16");
        let x = g.add_input(TensorType::new(DType::I16, [1, 5, 6, c]), loc());
        let attrs = ConvAttrs { pad: [1, 1, 0, 1], stride: [1, 2], dilation: [1, 1], acc: DType::I48 };
        let w = constant(&mut g, random(&TensorType::new(DType::I8, [4, 3, 2, c]), &mut rng, -128.0, 127.99));
        let bias = constant(&mut g, random(&TensorType::new(DType::I48, [4]), &mut rng, -1.0e6, 1.0e6));
        let zx = constant(&mut g, Tensor::new(vec![1], Data::I16(vec![0])).unwrap());
        let zw = i8s(&mut g, 0);
        let o = g.add_node(Op::Conv2d(attrs), tensor_ty(DType::I48, &[1, 5, 3, 4]), &[x, w, bias, zx, zw], loc());
        g.add_output(o);
        let inputs = inputs_for(&g, &mut rng, -32768.0, 32767.99);
        cases.push(Case { name: format!("conv_i16_c{c}"), graph: g, inputs, tolerance: Tolerance::Exact });
        let mut g = Graph::new("matmul_i16");
        let a = g.add_input(TensorType::new(DType::I16, [1, 3, c]), loc());
        let b = g.add_input(TensorType::new(DType::I16, [1, c, 5]), loc());
        let z = constant(&mut g, Tensor::new(vec![1], Data::I16(vec![0])).unwrap());
        let o = g.add_node(Op::MatMul, tensor_ty(DType::I48, &[1, 3, 5]), &[a, b, z, z], loc());
        g.add_output(o);
        let inputs = inputs_for(&g, &mut rng, -32768.0, 32767.99);
        cases.push(Case { name: format!("matmul_i16_c{c}"), graph: g, inputs, tolerance: Tolerance::Exact });
        // conv3d with depth padding (filled with the input zero point), stride and dilation.
        let mut g = Graph::new("conv3d_i8");
        let x = g.add_input(TensorType::new(DType::I8, [1, 5, 4, 3, c]), loc());
        let attrs = Conv3dAttrs { pad: [2, 1, 1, 0, 0, 1], stride: [2, 1, 1], dilation: [2, 1, 1], acc: DType::I32 };
        let w = random(&TensorType::new(DType::I8, [3, 2, 2, 2, c]), &mut rng, -128.0, 127.99);
        let w = constant(&mut g, w);
        let bias = random(&TensorType::new(DType::I32, [3]), &mut rng, -1000.0, 1000.0);
        let bias = constant(&mut g, bias);
        let (zx, zw) = (i8s(&mut g, -7), i8s(&mut g, 0));
        let (od, oh, ow) = ((5 + 3 - 3) / 2 + 1, 4 + 1 - 2 + 1, 3 + 1 - 2 + 1);
        let o = g.add_node(Op::Conv3d(attrs), tensor_ty(DType::I32, &[1, od, oh, ow, 3]), &[x, w, bias, zx, zw], loc());
        g.add_output(o);
        let inputs = inputs_for(&g, &mut rng, -128.0, 127.99);
        cases.push(Case { name: format!("conv3d_i8_c{c}"), graph: g, inputs, tolerance: Tolerance::Exact });
    }
    cases
}

/// The sizes around CPU vector widths that [`parity_cases`] leaves out (4 f32 or 8 fp16 lanes
/// of NEON, 8 f32 of AVX2, and one more or less): every elementwise op at 3, 8, 9, 15 and 33
/// elements, for the CPU backends' vector loops and their tails.
pub fn vector_edge_cases() -> Vec<Case> {
    let mut rng = Rng(78);
    let mut cases = Vec::new();
    let mut add = adder(&mut cases);
    elementwise_cases(&[3, 8, 9, 15, 33], &mut rng, &mut add);
    drop(add);
    cases.extend(integer_cases(&[3, 8, 9, 15, 33]));
    cases
}

/// TOSA's maximum and minimum on signed zeros, NaN and infinities (`a >= b ? a : b`, NaN if
/// either is: of equal values the first, which gives a zero result its sign), in every float
/// type: the elementwise ops, clamp at 0, reductions along either axis and max pooling, each
/// on inputs made of those values. Bit-exact.
pub fn special_value_cases() -> Vec<Case> {
    let (nan, inf) = (f32::NAN, f32::INFINITY);
    let a = [-0.0, 0.0, -0.0, 0.0, nan, 1.0, inf, -inf, 1.0, -1.0, 0.5, -0.0, 3.0, -2.0, 0.0, nan];
    let b = [0.0, -0.0, -0.0, 0.0, 1.0, nan, -inf, inf, 1.0, -1.0, -0.0, 0.25, 3.0, -7.0, -5.0, nan];
    // Rows ending in a tie of zeros, a NaN, all negative, zeros first.
    let grid = [-0.0, 0.0, -1.0, -2.0, 0.0, -0.0, -3.0, -inf, -1.0, -0.0, 0.0, -0.0, nan, 0.0, 1.0, 2.0];
    let tensor = |d: DType, shape: &[usize], v: &[f32]| f16c_dialect::semantics::cast(&Tensor::from_f32(shape.to_vec(), v.to_vec()).expect("sized"), d);
    let mut cases = Vec::new();
    for d in FLOATS {
        let dn = dname(d);
        for op in [Op::Binary(BinaryOp::Maximum), Op::Binary(BinaryOp::Minimum)] {
            let g = elementwise_graph(&op, d, 8, 0);
            cases.push(Case { name: format!("special_{}_{dn}", op.mlir_name().trim_start_matches("tosa.")), graph: g, inputs: vec![tensor(d, &[2, 8], &a), tensor(d, &[2, 8], &b)], tolerance: Tolerance::Exact });
        }
        let g = elementwise_graph(&Op::Clamp { min: 0.0, max: 6.0 }, d, 8, 0);
        cases.push(Case { name: format!("special_clamp_{dn}"), graph: g, inputs: vec![tensor(d, &[2, 8], &a)], tolerance: Tolerance::Exact });
        for kind in [ReduceKind::Max, ReduceKind::Min] {
            for axis in 0..2 {
                let g = reduce_graph(kind, d, &[4, 4], axis);
                cases.push(Case { name: format!("special_reduce_{kind:?}_{dn}_axis{axis}").to_lowercase(), graph: g, inputs: vec![tensor(d, &[4, 4], &grid)], tolerance: Tolerance::Exact });
            }
        }
        let mut g = Graph::new("pool");
        // Sixteen channels (one AVX-512 vector, two of eight lanes), each the grid shifted:
        // every window meets NaN, zeros of both signs and infinities in some channel.
        let x = g.add_input(TensorType::new(d, [1, 4, 4, 16]), loc());
        let attrs = f16c_dialect::PoolAttrs { kernel: [2, 2], stride: [2, 2], pad: [0, 0, 0, 0], acc: None };
        let y = g.add_node(Op::MaxPool2d(attrs), tensor_ty(d, &[1, 2, 2, 16]), &[x], loc());
        g.add_output(y);
        let channels: Vec<f32> = (0..16 * 16).map(|i| grid[(i / 16 + 5 * (i % 16)) % 16]).collect();
        cases.push(Case { name: format!("special_max_pool_{dn}"), graph: g, inputs: vec![tensor(d, &[1, 4, 4, 16], &channels)], tolerance: Tolerance::Exact });
        // A convolution whose input holds NaN and infinities, into the fused residual add and
        // ReLU6s (clamp, maximum/minimum with one-element constants) on 32 channels: NaN
        // pixels stay NaN, infinite ones clamp, in vectors and at the edges alike.
        let (g, k) = conv_graph("conv", d, 16, 8, 32, true);
        let mut rng = Rng(79);
        let inputs: Vec<Tensor> = g
            .inputs()
            .iter()
            .enumerate()
            .map(|(i, &x)| {
                let ty = g.tensor_ty(x).expect("tensor inputs").clone();
                let mut v: Vec<f32> = (0..ty.num_elements()).map(|_| rng.uniform(-1.0, 1.0)).collect();
                for (at, special) in [(5 * 8 + 2, nan), (20 * 8, inf), (41 * 8 + 7, -inf), (77 * 8 + 3, nan)] {
                    let n = v.len();
                    v[(at + i * 13) % n] = special;
                }
                tensor(d, &ty.shape, &v)
            })
            .collect();
        cases.push(Case { name: format!("special_conv_epilogue_{dn}"), graph: g, inputs, tolerance: Tolerance::Contraction(k) });
        // A 1×1 convolution by ones (one exact product per output: bit-exact) on 32 channels,
        // into clamps whose bounds f16 does not hold: one that rounds to a neighbour, one past
        // f16's range, one that rounds to zero. Vectors of f16 clamp to the rounded bounds,
        // which must give the bits of the clamp in f32 rounded. The same clamps read in f32 (a
        // cast after them, fused into the convolution's epilogue) show the clamp's own rounding,
        // which the f16 store would otherwise redo.
        let values = [-0.3, -0.2998, -0.3003, 2.7, 2.699, 2.703, inf, -inf, nan, 0.0, -0.0, 1e-3, -1e-3, 7e4, 5.0, -5.0];
        for (i, (min, max)) in [(-0.3, 1e30), (1e-9, 2.7), (-1e30, -1e-9), (-1e30, 2.7)].into_iter().enumerate() {
            let mut g = Graph::new("conv_clamp");
            let x = g.add_input(TensorType::new(d, [1, 4, 4, 1]), loc());
            let w = constant(&mut g, Tensor::splat(&TensorType::new(d, [32, 1, 1, 1]), 1.0));
            let b = constant(&mut g, Tensor::splat(&TensorType::new(d, [32]), 0.0));
            let (z1, z2) = (zero(&mut g, d), zero(&mut g, d));
            let attrs = ConvAttrs { pad: [0; 4], stride: [1, 1], dilation: [1, 1], acc: DType::F32 };
            let y = g.add_node(Op::Conv2d(attrs), tensor_ty(d, &[1, 4, 4, 32]), &[x, w, b, z1, z2], loc());
            let y = g.add_node(Op::Clamp { min, max }, tensor_ty(d, &[1, 4, 4, 32]), &[y], loc());
            let mut widened = g.clone();
            g.add_output(y);
            cases.push(Case { name: format!("special_conv_clamp{i}_{dn}"), graph: g, inputs: vec![tensor(d, &[1, 4, 4, 1], &values)], tolerance: Tolerance::Exact });
            if d != DType::F32 {
                let y = widened.add_node(Op::Cast, tensor_ty(DType::F32, &[1, 4, 4, 32]), &[y], loc());
                widened.add_output(y);
                cases.push(Case { name: format!("special_conv_clamp{i}_{dn}_read_in_f32"), graph: widened, inputs: vec![tensor(d, &[1, 4, 4, 1], &values)], tolerance: Tolerance::Exact });
            }
        }
        // Products (one per output: exact) of 2^-14-sized inputs and 2^-9..2^-13 weights, about
        // f16's smallest subnormal, into ReLU6 as maximum/minimum with one-element constants,
        // the bound second and first. A product that rounds to −0 in f16 stays −0 through
        // `maximum(y, 0)` (of equal values the first) and becomes +0 through `maximum(0, y)`;
        // ties round to even. A 1×1 convolution and a depthwise one, bit-exact.
        let tiny: Vec<f32> = (0..16).map(|i| [1.0, -1.0, 1.5, -1.5, 0.75, -0.75, 2.0, -0.5][i % 8] * 2f32.powi(-14)).collect();
        let nans = [nan, -nan, f32::from_bits(0x7fd0_2000), -inf, inf, f32::from_bits(0xffa0_4000), 3.0, -2.0];
        let weights: Vec<f32> = (0..32).map(|c| if c % 2 == 0 { 1.0 } else { -1.0 } * 2f32.powi(-9 - (c as i32 / 2) % 5) * if c % 4 < 2 { 1.0 } else { 1.5 }).collect();
        // The same ReLU6s as a clamp (bounds f16 holds, and one past its range), and each
        // read in f32 too (a cast after it, which fp16 contractions fold into one rounding
        // and widening of the staged results).
        for depthwise in [false, true] {
            for relu in ["", "_bound_first", "_clamp", "_clamp_wide"] {
                let mut g = Graph::new("conv_relu6");
                let (ic, wshape) = if depthwise { (32, [1, 1, 32, 1]) } else { (1, [32, 1, 1, 1]) };
                let x = g.add_input(TensorType::new(d, [1, 4, 4, ic]), loc());
                let w = constant(&mut g, f16c_dialect::semantics::cast(&Tensor::from_f32(wshape.to_vec(), weights.clone()).expect("sized"), d));
                let b = constant(&mut g, Tensor::splat(&TensorType::new(d, [32]), 0.0));
                let (z1, z2) = (zero(&mut g, d), zero(&mut g, d));
                let attrs = ConvAttrs { pad: [0; 4], stride: [1, 1], dilation: [1, 1], acc: DType::F32 };
                let op = if depthwise { Op::DepthwiseConv2d(attrs) } else { Op::Conv2d(attrs) };
                let shape = [1, 4, 4, 32];
                let mut y = g.add_node(op, tensor_ty(d, &shape), &[x, w, b, z1, z2], loc());
                match relu {
                    "_clamp" => y = g.add_node(Op::Clamp { min: 0.0, max: 6.0 }, tensor_ty(d, &shape), &[y], loc()),
                    "_clamp_wide" => y = g.add_node(Op::Clamp { min: -0.0, max: 3.4e38 }, tensor_ty(d, &shape), &[y], loc()),
                    _ => {
                        for (kind, bound) in [(BinaryOp::Maximum, 0.0), (BinaryOp::Minimum, 6.0)] {
                            let k = constant(&mut g, Tensor::splat(&TensorType::new(d, [1, 1, 1, 1]), bound));
                            let operands = if relu == "_bound_first" { [k, y] } else { [y, k] };
                            y = g.add_node(Op::Binary(kind), tensor_ty(d, &shape), &operands, loc());
                        }
                    }
                }
                let mut wide = g.clone();
                g.add_output(y);
                let y = wide.add_node(Op::Cast, tensor_ty(DType::F32, &shape), &[y], loc());
                wide.add_output(y);
                let name = format!("special_{}_relu6_tiny{relu}_{dn}", if depthwise { "depthwise" } else { "conv" });
                for (graph, read) in [(g, ""), (wide, "_read_in_f32")] {
                    let input: Vec<f32> = (0..16 * ic).map(|i| tiny[(i / ic + i % ic) % 16]).collect();
                    cases.push(Case { name: format!("{name}{read}"), graph: graph.clone(), inputs: vec![tensor(d, &[1, 4, 4, ic], &input)], tolerance: Tolerance::Exact });
                    // NaNs of either sign and with a payload, infinities: the ReLU6's result is
                    // the reference's one canonical NaN wherever the input is NaN.
                    let input: Vec<f32> = (0..16 * ic).map(|i| nans[(i / ic + i % ic) % 8]).collect();
                    cases.push(Case { name: format!("{}{read}", name.replace("_tiny", "_nan")), graph, inputs: vec![tensor(d, &[1, 4, 4, ic], &input)], tolerance: Tolerance::Exact });
                }
            }
        }
    }
    cases
}

/// `tosa.resize` parameters (scale, offset, border, bilinear) the parity suites run: 2x
/// half-pixel upsampling as torch-mlir writes it for `interpolate(scale_factor=2)`, 2x
/// align-corners upsampling, 1/2 downsampling, and a 3/2 scale with an offset.
pub const RESIZES: [([i64; 4], [i64; 2], [i64; 2], bool); 6] = [
    ([4, 2, 4, 2], [-1, -1], [1, 1], true),
    ([4, 2, 4, 2], [-1, -1], [1, 1], false),
    ([2, 1, 2, 1], [0, 0], [0, 0], true),
    ([1, 2, 1, 2], [0, 0], [0, 0], false),
    ([3, 2, 3, 2], [1, 1], [-1, 1], true),
    ([3, 2, 3, 2], [1, 1], [-1, 1], false),
];

/// A `tosa.resize` of an NHWC input of `shape` and type `d` to `out_d` (the output size from
/// the verifier's rule).
pub fn resize_graph(d: DType, out_d: DType, shape: [usize; 4], scale: [i64; 4], offset: [i64; 2], border: [i64; 2], bilinear: bool) -> Graph {
    let (oh, ow) = f16c_dialect::verify::resize_extent(shape[1], shape[2], &scale, &offset, &border).expect("valid resize parameters");
    let mut g = Graph::new("resize");
    let x = g.add_input(TensorType::new(d, shape), loc());
    let mut shape_node = |v: &[i64]| g.add_node(Op::ConstShape(v.to_vec()), ValueType::Shape(v.len()), &[], loc());
    let (s, o, b) = (shape_node(&scale), shape_node(&offset), shape_node(&border));
    let y = g.add_node(Op::Resize { bilinear }, tensor_ty(out_d, &[shape[0], oh, ow, shape[3]]), &[x, s, o, b], loc());
    g.add_output(y);
    g
}

/// The parity suite every GPU-style backend compiles (and, on a GPU, runs): each op family in
/// f32, f16 and bf16 at sizes that hit WMMA tile edges (15/16/17, 33, a large odd one).
pub fn parity_cases() -> Vec<Case> {
    let mut rng = Rng(77);
    let mut cases = Vec::new();
    let mut add = adder(&mut cases);
    elementwise_cases(&[1, 7, 16, 17, 1031], &mut rng, &mut add);
    for d in FLOATS {
        for n in [1, 17, 33] {
            let shape = [2, n, 5];
            for axis in 0..3 {
                for kind in [ReduceKind::Sum, ReduceKind::Max, ReduceKind::Min, ReduceKind::Prod] {
                    let g = reduce_graph(kind, d, &shape, axis);
                    add(format!("reduce_{kind:?}_{}_n{n}_axis{axis}", dname(d)).to_lowercase(), g, &mut rng, -2.0, 2.0, Tolerance::Exact);
                }
                add(format!("argmax_{}_n{n}_axis{axis}", dname(d)), argmax_graph(d, &shape, axis), &mut rng, -2.0, 2.0, Tolerance::Exact);
            }
        }
        for n in [7, 17] {
            for avg in [false, true] {
                let mut g = Graph::new("pool");
                // 19 channels: runs of a vector (two of eight lanes, or one of sixteen) and the
                // rest after, channel by channel; windows inside the input and clipped by it.
                let ch = if n == 7 { 19 } else { 5 };
                let x = g.add_input(TensorType::new(d, [1, n, n, ch]), loc());
                let attrs = f16c_dialect::PoolAttrs { kernel: [2, 3], stride: [2, 1], pad: [1, 0, 1, 1], acc: if avg { Some(DType::F32) } else { None } };
                let (oh, ow) = ((n + 1 - 2) / 2 + 1, n + 2 - 3 + 1);
                let op = if avg { Op::AvgPool2d(attrs) } else { Op::MaxPool2d(attrs) };
                let mut operands = vec![x];
                if avg {
                    operands.push(zero(&mut g, d));
                    operands.push(zero(&mut g, d));
                }
                let y = g.add_node(op.clone(), tensor_ty(d, &[1, oh, ow, ch]), &operands, loc());
                g.add_output(y);
                add(format!("{}_pool_{}_n{n}", if avg { "avg" } else { "max" }, dname(d)), g, &mut rng, -2.0, 2.0, Tolerance::Exact);
                // An f32 pool whose result is cast to the low type, as the O1 policy leaves an
                // average pool: the lowering folds the cast into the pool's store.
                if d != DType::F32 {
                    let mut g = Graph::new("pool_cast");
                    let x = g.add_input(TensorType::new(DType::F32, [1, n, n, ch]), loc());
                    let mut operands = vec![x];
                    if avg {
                        operands.push(zero(&mut g, DType::F32));
                        operands.push(zero(&mut g, DType::F32));
                    }
                    let y = g.add_node(op, tensor_ty(DType::F32, &[1, oh, ow, ch]), &operands, loc());
                    let y = g.add_node(Op::Cast, tensor_ty(d, &[1, oh, ow, ch]), &[y], loc());
                    g.add_output(y);
                    add(format!("{}_pool_f32_to_{}_n{n}", if avg { "avg" } else { "max" }, dname(d)), g, &mut rng, -2.0, 2.0, Tolerance::Exact);
                }
            }
        }
        // Matmuls at WMMA tile edges, with a weight and between activations, and a larger one
        // that spans several blocks and k tiles.
        for (m, k, n) in [(1, 1, 1), (3, 7, 9), (15, 16, 17), (16, 16, 16), (17, 33, 15), (33, 17, 16), (65, 70, 129), (130, 96, 200)] {
            for constant_b in [false, true] {
                let mut g = Graph::new("matmul");
                let a = g.add_input(TensorType::new(d, [2, m, k]), loc());
                let b = if constant_b { constant(&mut g, random(&TensorType::new(d, [2, k, n]), &mut rng, -1.0, 1.0)) } else { g.add_input(TensorType::new(d, [2, k, n]), loc()) };
                let (z1, z2) = (zero(&mut g, d), zero(&mut g, d));
                let o = g.add_node(Op::MatMul, tensor_ty(d, &[2, m, n]), &[a, b, z1, z2], loc());
                g.add_output(o);
                add(format!("matmul_{}_{m}x{k}x{n}_const{}", dname(d), constant_b as u8), g, &mut rng, -1.0, 1.0, Tolerance::Contraction(k));
            }
        }
        for n in [7, 16, 17] {
            for (op, fused) in [("conv", false), ("conv", true), ("depthwise", false), ("depthwise", true), ("depthwise_strided", true), ("depthwise_dilated", true), ("transpose", false), ("conv3d", false), ("conv3d", true)] {
                // 8 channels at n = 16: whole 16-byte chunks, so tensor cores stage them as vectors.
                let (g, k) = conv_graph(op, d, n, if n == 16 { 8 } else { n.min(10) }, 7, fused);
                add(format!("{op}{}_{}_n{n}", if fused { "_fused" } else { "" }, dname(d)), g, &mut rng, -1.0, 1.0, Tolerance::Contraction(k));
            }
            // 32 output channels fill every CPU register tile, so the fused epilogue runs a
            // vector at a time there (7 channels always take the edge path).
            let (g, k) = conv_graph("conv", d, n, if n == 16 { 8 } else { n.min(10) }, 32, true);
            add(format!("conv_fused_wide_{}_n{n}", dname(d)), g, &mut rng, -1.0, 1.0, Tolerance::Contraction(k));
        }
        // 8 output pixels (one CPU row block) by 576 channels (72 panels of 8): the JIT splits
        // the columns into 16 groups of 5 panels, so the last group has none.
        let (g, k) = conv_graph("conv", d, 4, 8, 576, true);
        add(format!("conv_fused_576_{}_n4", dname(d)), g, &mut rng, -1.0, 1.0, Tolerance::Contraction(k));
        for n in [7, 16, 33, 1031] {
            for variant in ["softmax", "layer_norm"] {
                let mut g = Graph::new(variant);
                let x = g.add_input(TensorType::new(d, [3, n]), loc());
                let y = if variant == "softmax" {
                    softmax(&mut g, x, d, 3, n)
                } else {
                    let res = g.add_input(TensorType::new(d, [3, n]), loc());
                    layer_norm(&mut g, x, res, d, 3, n, false, &mut rng)
                };
                g.add_output(y);
                let tol = if variant == "softmax" { Tolerance::Math } else { Tolerance::Exact };
                add(format!("{variant}_{}_n{n}", dname(d)), g, &mut rng, -3.0, 3.0, tol);
            }
        }
        // Data movement: transpose, reverse, gather, scatter.
        for n in [1, 17] {
            let t = |s: &[usize]| tensor_ty(d, s);
            let mut g = Graph::new("transpose");
            let x = g.add_input(TensorType::new(d, [2, 3, n]), loc());
            let o = g.add_node(Op::Transpose { perms: vec![2, 0, 1] }, t(&[n, 2, 3]), &[x], loc());
            g.add_output(o);
            add(format!("transpose_{}_n{n}", dname(d)), g, &mut rng, -2.0, 2.0, Tolerance::Exact);
            // The last two dimensions swapped, both long enough at n = 17 for register tiles
            // (17 rows: two bands of eight and one row; 9 columns: a tile and one overlapping
            // it), as written and with a float cast before or after it, which a backend may fold
            // into the copy (a transpose that converts).
            for (i, (from, to)) in [(d, d), (DType::F32, d), (d, DType::F32)].into_iter().enumerate() {
                if i > 0 && from == to {
                    continue;
                }
                let mut g = Graph::new("transpose_last2");
                let x = g.add_input(TensorType::new(from, [2, 9, n]), loc());
                let x = if from == d { x } else { g.add_node(Op::Cast, t(&[2, 9, n]), &[x], loc()) };
                let y = g.add_node(Op::Transpose { perms: vec![0, 2, 1] }, t(&[2, n, 9]), &[x], loc());
                let y = if to == d { y } else { g.add_node(Op::Cast, tensor_ty(to, &[2, n, 9]), &[y], loc()) };
                g.add_output(y);
                add(format!("transpose_last2_{}_{}_{}_n{n}", dname(from), dname(d), dname(to)), g, &mut rng, -2.0, 2.0, Tolerance::Exact);
            }
            for axis in 0..3 {
                let mut g = Graph::new("reverse");
                let x = g.add_input(TensorType::new(d, [2, 3, n]), loc());
                let o = g.add_node(Op::Reverse { axis }, t(&[2, 3, n]), &[x], loc());
                g.add_output(o);
                add(format!("reverse_{}_n{n}_axis{axis}", dname(d)), g, &mut rng, -2.0, 2.0, Tolerance::Exact);
            }
            for (i, &(scale, offset, border, bilinear)) in RESIZES.iter().enumerate() {
                let g = resize_graph(d, d, [2, 5, 7, n], scale, offset, border, bilinear);
                add(format!("resize{i}_{}_{}_n{n}", if bilinear { "bilinear" } else { "nearest" }, dname(d)), g, &mut rng, -2.0, 2.0, Tolerance::Exact);
            }
            let mut g = Graph::new("gather");
            let v = g.add_input(TensorType::new(d, [2, 5, n]), loc());
            let idx = constant(&mut g, Tensor::new(vec![2, 3], Data::I32(vec![4, 0, 2, 1, 1, 3])).unwrap());
            let o = g.add_node(Op::Gather, t(&[2, 3, n]), &[v, idx], loc());
            g.add_output(o);
            add(format!("gather_{}_n{n}", dname(d)), g, &mut rng, -2.0, 2.0, Tolerance::Exact);
            // Two gathers of rows read only by an interpolation `a + (b − a)·w` (a bilinear
            // upsampling's form): at n = 17 the reader picks the rows from the values itself
            // (the gathers fold into it: vectors of a row and the rest one at a time).
            let mut g = Graph::new("gather_lerp");
            let v = g.add_input(TensorType::new(d, [1, 6, n]), loc());
            let i0 = constant(&mut g, Tensor::new(vec![1, 8], Data::I32(vec![0, 0, 1, 2, 2, 3, 5, 4])).unwrap());
            let i1 = constant(&mut g, Tensor::new(vec![1, 8], Data::I32(vec![1, 0, 2, 3, 1, 4, 5, 5])).unwrap());
            let a = g.add_node(Op::Gather, t(&[1, 8, n]), &[v, i0], loc());
            let b = g.add_node(Op::Gather, t(&[1, 8, n]), &[v, i1], loc());
            let w = constant(&mut g, Tensor::from_f32(vec![1, 8, 1], vec![0.25, 0.75, 0.5, 0.125, 1.0, 0.0, 0.375, 0.625]).unwrap());
            let w = if d == DType::F32 { w } else { g.add_node(Op::Cast, t(&[1, 8, 1]), &[w], loc()) };
            let shift = constant(&mut g, Tensor::new(vec![1], Data::I8(vec![0])).unwrap());
            let diff = g.add_node(Op::Binary(BinaryOp::Sub), t(&[1, 8, n]), &[b, a], loc());
            let m = g.add_node(Op::Binary(BinaryOp::Mul), t(&[1, 8, n]), &[diff, w, shift], loc());
            let o = g.add_node(Op::Binary(BinaryOp::Add), t(&[1, 8, n]), &[a, m], loc());
            g.add_output(o);
            add(format!("gather_lerp_{}_n{n}", dname(d)), g, &mut rng, -2.0, 2.0, Tolerance::Exact);
            // Scatter with a repeated index (the last row wins) and rows left as they were.
            let mut g = Graph::new("scatter");
            let v = g.add_input(TensorType::new(d, [2, 5, n]), loc());
            let idx = constant(&mut g, Tensor::new(vec![2, 3], Data::I32(vec![4, 0, 4, 1, 1, 3])).unwrap());
            let x = g.add_input(TensorType::new(d, [2, 3, n]), loc());
            let o = g.add_node(Op::Scatter, t(&[2, 5, n]), &[v, idx, x], loc());
            g.add_output(o);
            add(format!("scatter_{}_n{n}", dname(d)), g, &mut rng, -2.0, 2.0, Tolerance::Exact);
        }
    }
    drop(add);
    cases.push(safe_softmax_case());
    cases.push(row_extremes_case());
    cases.push(long_row_extremes_case());
    cases.extend(special_value_cases());
    cases.extend(integer_cases(&[1, 7, 16, 17, 1031]));
    cases.extend(integer_contraction_cases(&[1, 7, 16, 17]));
    cases
}

/// `tosa.cond_if` and `tosa.while_loop` around elementwise work at each size of `sizes`, in
/// f32, f16, bf16 and i32: a branch chosen by an i1 input (then: x + a captured y; else: x·x),
/// and a loop adding the captured y to an accumulator while a counter is below an input limit
/// (0 to 4 iterations). Bit for bit on the interpreter and the JIT.
pub fn control_flow_cases(sizes: &[usize]) -> Vec<Case> {
    let mut rng = Rng(83);
    let mut cases = Vec::new();
    let scalar = |d: DType| TensorType::new(d, Vec::<usize>::new());
    for d in [DType::F32, DType::F16, DType::BF16, DType::I32] {
        for &n in sizes {
            let t = TensorType::new(d, [2, n]);
            let shift = |g: &mut Graph| constant(g, Tensor::new(vec![1], Data::I8(vec![0])).unwrap());
            // then: a + y (y captured); else: a · a.
            let mut then = Graph::new("then");
            let a = then.add_input(t.clone(), loc());
            let y = then.add_input(t.clone(), loc());
            let s = then.add_node(Op::Binary(BinaryOp::Add), tensor_ty(d, &[2, n]), &[a, y], loc());
            then.add_output(s);
            let mut otherwise = Graph::new("else");
            let a = otherwise.add_input(t.clone(), loc());
            let sh = shift(&mut otherwise);
            let m = otherwise.add_node(Op::Binary(BinaryOp::Mul), tensor_ty(d, &[2, n]), &[a, a, sh], loc());
            otherwise.add_output(m);
            let mut g = Graph::new("cond_if");
            let c = g.add_input(scalar(DType::I1), loc());
            let x = g.add_input(t.clone(), loc());
            let y = g.add_input(t.clone(), loc());
            let op = Op::CondIf { then: Box::new(Region { graph: then, args: 1 }), otherwise: Box::new(Region { graph: otherwise, args: 1 }) };
            let cf = g.add_node(op, ValueType::Results(vec![t.clone()]), &[c, x, y], loc());
            let r = g.add_node(Op::Result(0), tensor_ty(d, &[2, n]), &[cf], loc());
            g.add_output(r);
            let (lo, hi) = if d == DType::I32 { (-40000.0, 40000.0) } else { (-3.0, 3.0) };
            for branch in [true, false] {
                let mut inputs = inputs_for(&g, &mut rng, lo, hi);
                inputs[0] = Tensor::new(Vec::<usize>::new(), Data::I1(vec![branch])).unwrap();
                cases.push(Case { name: format!("cond_if_{d}_n{n}_{branch}"), graph: g.clone(), inputs, tolerance: Tolerance::Exact });
            }
            // while i < limit: i + 1, acc + y (limit and y captured).
            let counter = scalar(DType::I32);
            let mut cond = Graph::new("cond");
            let i = cond.add_input(counter.clone(), loc());
            cond.add_input(t.clone(), loc());
            let limit = cond.add_input(counter.clone(), loc());
            let go = cond.add_node(Op::Binary(BinaryOp::Greater), tensor_ty(DType::I1, &[]), &[limit, i], loc());
            cond.add_output(go);
            let mut body = Graph::new("body");
            let i = body.add_input(counter.clone(), loc());
            let acc = body.add_input(t.clone(), loc());
            let y = body.add_input(t.clone(), loc());
            let one = constant(&mut body, Tensor::new(Vec::<usize>::new(), Data::I32(vec![1])).unwrap());
            let j = body.add_node(Op::Binary(BinaryOp::Add), tensor_ty(DType::I32, &[]), &[i, one], loc());
            let next = body.add_node(Op::Binary(BinaryOp::Add), tensor_ty(d, &[2, n]), &[acc, y], loc());
            body.add_output(j);
            body.add_output(next);
            let mut g = Graph::new("while_loop");
            let limit = g.add_input(counter.clone(), loc());
            let x = g.add_input(t.clone(), loc());
            let y = g.add_input(t.clone(), loc());
            let zero = constant(&mut g, Tensor::new(Vec::<usize>::new(), Data::I32(vec![0])).unwrap());
            let op = Op::WhileLoop { cond: Box::new(Region { graph: cond, args: 2 }), body: Box::new(Region { graph: body, args: 2 }) };
            let cf = g.add_node(op, ValueType::Results(vec![counter.clone(), t.clone()]), &[zero, x, limit, y], loc());
            let r0 = g.add_node(Op::Result(0), tensor_ty(DType::I32, &[]), &[cf], loc());
            let r1 = g.add_node(Op::Result(1), tensor_ty(d, &[2, n]), &[cf], loc());
            g.add_output(r0);
            g.add_output(r1);
            let mut inputs = inputs_for(&g, &mut rng, lo, hi);
            inputs[0] = Tensor::new(Vec::<usize>::new(), Data::I32(vec![(n % 5) as i32])).unwrap();
            cases.push(Case { name: format!("while_loop_{d}_n{n}"), graph: g, inputs, tolerance: Tolerance::Exact });
        }
    }
    cases
}

/// The contract's f32 `exp`, `tanh`, `erf` and `sigmoid` ([`f16c_core::math`]), which every CPU
/// backend emits inline, on every 4099th f32 (about a million inputs: every binade, both
/// signs, zeros, infinities, subnormals, NaNs with payloads), vector lanes and tails alike.
/// Bit-exact, NaN payloads included (compare with [`same_bits_and_nans`]); the reference's
/// results are checked against the Rust definitions here first.
pub fn math_function_cases() -> Vec<Case> {
    let n = (u32::MAX / 4099) as usize / 2 + 1;
    let bits: Vec<f32> = (0..2 * n as u32).map(|i| f32::from_bits(i.wrapping_mul(4099))).collect();
    let x = Tensor::new(vec![2, n], Data::F32(bits.clone())).unwrap();
    let defined: [(UnaryOp, fn(f32) -> f32); 4] = [
        (UnaryOp::Exp, f16c_core::math::exp_f32),
        (UnaryOp::Tanh, f16c_core::math::tanh_f32),
        (UnaryOp::Erf, f16c_core::math::erf_f32),
        (UnaryOp::Sigmoid, f16c_core::math::sigmoid_f32),
    ];
    defined
        .into_iter()
        .map(|(op, f)| {
            let graph = elementwise_graph(&Op::Unary(op), DType::F32, n, 0);
            let want = f16c_dialect::reference::run(&graph, std::slice::from_ref(&x)).unwrap();
            let direct = Tensor::new(vec![2, n], Data::F32(bits.iter().map(|&v| f(v)).collect())).unwrap();
            same_bits_and_nans(&want[0], &direct).unwrap_or_else(|e| panic!("{op:?}: the reference against the definition: {e}"));
            Case { name: format!("math_{op:?}").to_lowercase(), graph, inputs: vec![x.clone()], tolerance: Tolerance::Exact }
        })
        .chain([UnaryOp::Erf, UnaryOp::Exp, UnaryOp::Sigmoid].into_iter().flat_map(|op| [DType::BF16, DType::F16].map(|d| of_half_case(op, d, DType::F32))))
        .chain([DType::BF16, DType::F16].map(|d| of_half_case(UnaryOp::Sigmoid, d, d)))
        .collect()
}

/// `op(cast(x))` of every value `x` of the 16-bit float type `d` (all 65,536 patterns, NaNs,
/// infinities and subnormals included) widened to f32, as a bf16 or fp16 GELU computes its erf
/// and a softmax its exp, where `compute` is f32 (or `op(x)` in `d` itself, as an fp16 or bf16
/// SiLU computes its sigmoid, where `compute` is `d`): the LLVM CPU backends look these up in a
/// table ([`f16c_compiler::lower::Expr::holds_half`]); rows of 32,771 so that the last few of
/// each row take the one-value path and the rest the vector one (the tables' ends and the
/// infinities among both).
fn of_half_case(op: UnaryOp, d: DType, compute: DType) -> Case {
    let n = 32_771;
    let bits: Vec<u16> = (0..=u16::MAX).chain((0..2 * n - 65_536).map(|i| 0x4080 - 3 + i as u16)).collect();
    let mut bits = bits;
    // The vector path's values where the scalar one takes the tail, and the other way round:
    // the ends of the erf and exp tables in both types, infinities, -0.
    // (The sigmoid tables end where the exp ones do, mirrored: 104 and -89.)
    for (tail, special) in [(n - 1, 0x4080), (n - 2, 0x42b2), (n - 3, 0xc2d0), (n - 4, 0x4400), (n - 5, 0x5590), (n - 6, 0x42d0), (n - 7, 0xd590), (2 * n - 1, 0xff80), (2 * n - 2, 0x7f80), (2 * n - 3, 0x8000), (2 * n - 4, 0xd680), (2 * n - 5, 0xfc00), (2 * n - 6, 0xc2b2), (2 * n - 7, 0x5680)] {
        bits.swap(tail, special);
    }
    let data = match d {
        DType::BF16 => Data::BF16(bits.into_iter().map(bf16::from_bits).collect()),
        _ => Data::F16(bits.into_iter().map(f16::from_bits).collect()),
    };
    let x = Tensor::new(vec![2, n], data).unwrap();
    let mut g = Graph::new("of_half");
    let a = g.add_input(TensorType::new(d, [2, n]), loc());
    let y = if compute == d {
        g.add_node(Op::Unary(op), tensor_ty(d, &[2, n]), &[a], loc())
    } else {
        let wide = g.add_node(Op::Cast, tensor_ty(compute, &[2, n]), &[a], loc());
        g.add_node(Op::Unary(op), tensor_ty(compute, &[2, n]), &[wide], loc())
    };
    g.add_output(y);
    let name = if compute == d { format!("math_{op:?}_in_{d}") } else { format!("math_{op:?}_of_{d}") };
    Case { name: name.to_lowercase(), graph: g, inputs: vec![x], tolerance: Tolerance::Exact }
}

/// PyTorch's safe softmax (`tests/data/safe_softmax.mlir`, canonicalized: one row kernel with a
/// per-row test and a select) on rows that are all -inf, partly -inf, hold a NaN or are all
/// equal.
pub fn safe_softmax_case() -> Case {
    let path = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("data/safe_softmax.mlir");
    let (mut m, _) = f16c_dialect::import::parse_file(&path).expect("the file parses");
    let mut pm = f16c_compiler::pass::PassManager::new();
    pm.add(f16c_compiler::pass::registry::create("canonicalize", "").expect("a pass"));
    pm.run(&mut m, &mut std::io::sink()).expect("canonicalize runs");
    let mut x: Vec<f32> = (0..70).map(|i| ((i * 37) % 23) as f32 / 7.0 - 1.5).collect();
    x[7..14].fill(f32::NEG_INFINITY);
    x[35 + 2 * 7 + 3] = f32::NAN;
    x[35 + 3 * 7..35 + 3 * 7 + 4].fill(f32::NEG_INFINITY);
    x[28..35].fill(0.0);
    let input = Tensor::new(vec![1, 2, 5, 7], Data::F32(x)).unwrap();
    Case { name: "safe_softmax_f32".into(), graph: m.functions.remove(0), inputs: vec![input], tolerance: Tolerance::Math }
}

/// [`safe_softmax_case`]'s graph over eleven rows of 45 (two sixteen-value blocks and a tail;
/// groups of four and of eight and a ragged one), with and without the all-masked test: the
/// JIT runs both on the runtime's softmax loop. Rows: all -inf (masked: zeros; unmasked: NaN),
/// a NaN in the first block (later blocks pass its lane), in the second or in the tail, a maximum of zero with -0 first (its sign is the first
/// zero's), +inf, values far below the maximum (exp underflows to zero and subnormals), all
/// equal, ordinary ones.
pub fn long_softmax_cases() -> Vec<Case> {
    let path = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("data/safe_softmax.mlir");
    let text = std::fs::read_to_string(&path).expect("the file reads").replace("1x2x5x7", "1x1x11x45").replace("1x2x5x1", "1x1x11x1");
    let plain = {
        // Without the test: the select's false operand is the result.
        let lines: Vec<&str> = text.lines().filter(|l| !["%6 =", "%7 =", "%8 =", "%9 ="].iter().any(|p| l.trim_start().starts_with(p))).collect();
        lines.join("\n").replace("return %9", "return %5")
    };
    let (len, rows) = (45, 11);
    let mut x: Vec<f32> = (0..rows * len).map(|i| ((i * 37) % 23) as f32 / 7.0 - 1.5).collect();
    let row = |r: usize| -> std::ops::Range<usize> { r * len..(r + 1) * len };
    let r1 = row(1);
    x[r1].fill(f32::NEG_INFINITY);
    x[2 * len + 20] = f32::NAN;
    x[3 * len + 40] = f32::NAN;
    x[9 * len + 2] = f32::NAN;
    let r4 = row(4);
    x[r4.clone()].iter_mut().enumerate().for_each(|(i, v)| *v = -1.0 - i as f32);
    x[4 * len + 17] = -0.0;
    x[4 * len + 3] = 0.0;
    x[4 * len + 42] = -0.0;
    x[5 * len + 9] = f32::INFINITY;
    let r6 = row(6);
    x[r6].iter_mut().enumerate().for_each(|(i, v)| *v = if i == 30 { 10.0 } else { -95.0 - i as f32 });
    let r7 = row(7);
    x[r7].fill(2.5);
    x[8 * len..8 * len + 30].fill(f32::NEG_INFINITY);
    let input = Tensor::new(vec![1, 1, rows, len], Data::F32(x)).unwrap();
    let canonical = |source: &str| {
        let mut m = f16c_dialect::import::parse_module(source, "long_softmax.mlir").expect("the text parses");
        let mut pm = f16c_compiler::pass::PassManager::new();
        pm.add(f16c_compiler::pass::registry::create("canonicalize", "").expect("a pass"));
        pm.run(&mut m, &mut std::io::sink()).expect("canonicalize runs");
        m.functions.remove(0)
    };
    vec![
        Case { name: "long_safe_softmax_f32".into(), graph: canonical(&text), inputs: vec![input.clone()], tolerance: Tolerance::Exact },
        Case { name: "long_softmax_f32".into(), graph: canonical(&plain), inputs: vec![input], tolerance: Tolerance::Exact },
    ]
}

/// torch-mlir's layer norm (`tests/data/layer_norm_f64.mlir`: the variance in f64) over six rows
/// of 37 (a group of four and a ragged one; a tail after the four-lane loop): ordinary rows, a
/// constant row (variance zero), rows of large and tiny values, a row with an infinity and one
/// with a NaN.
pub fn layer_norm_case() -> Case {
    let path = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("data/layer_norm_f64.mlir");
    let (mut m, _) = f16c_dialect::import::parse_file(&path).expect("the file parses");
    let mut x: Vec<f32> = (0..6 * 37).map(|i| ((i * 53) % 29) as f32 / 5.0 - 2.5).collect();
    x[37..74].fill(0.75);
    x[74..111].iter_mut().enumerate().for_each(|(i, v)| *v = 3.0e4 + i as f32 * 17.0);
    x[111..148].iter_mut().enumerate().for_each(|(i, v)| *v = (i as f32 - 18.0) * 1.0e-6);
    x[148 + 5] = f32::INFINITY;
    x[185 + 36] = f32::NAN;
    let input = Tensor::new(vec![6, 37], Data::F32(x)).unwrap();
    Case { name: "layer_norm_f64".into(), graph: m.functions.remove(0), inputs: vec![input], tolerance: Tolerance::Math }
}

/// A row kernel's maximum and minimum (`tests/data/row_extremes.mlir`: `x · max · min` per row,
/// so that the sign of a zero extreme shows)
/// on rows whose extreme is a zero of either sign first (a later lane before an earlier one, or
/// in the tail), a NaN, all -inf: the sign of a zero extreme is the first one's, whatever the lanes did.
pub fn row_extremes_case() -> Case {
    let path = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("data/row_extremes.mlir");
    let (mut m, _) = f16c_dialect::import::parse_file(&path).expect("the file parses");
    let (n, inf, nan) = (-1.0f32, f32::INFINITY, f32::NAN);
    let rows: [[f32; 9]; 6] = [
        [-0.0, 0.0, n, -2.0, -3.0, -4.0, -5.0, -6.0, -7.0],
        [0.0, -0.0, n, -2.0, -3.0, -4.0, -5.0, -6.0, -7.0],
        [n, -2.0, -3.0, 0.0, -0.0, -4.0, -5.0, -6.0, -7.0],
        [1.0, 2.0, nan, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0],
        [-inf; 9],
        [1.0, 2.0, 3.0, -0.0, 0.0, 4.0, 5.0, 6.0, -0.0],
    ];
    let input = Tensor::new(vec![6, 9], Data::F32(rows.concat())).unwrap();
    Case { name: "row_extremes_f32".into(), graph: m.functions.remove(0), inputs: vec![input], tolerance: Tolerance::Exact }
}

/// [`row_extremes_case`] on rows of 37, long enough for the LLVM backends' eight chains
/// (`Ir::reduce_extremum`, element `j` into chain `j % 8`, the last five in the tail): zeros of
/// both signs where a later chain holds the first one, zeros only in the tail, a NaN in the
/// tail, all -inf, and a positive maximum beside a zero minimum.
pub fn long_row_extremes_case() -> Case {
    let path = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("data/row_extremes.mlir");
    let text = std::fs::read_to_string(&path).expect("the file reads").replace("6x9", "6x37");
    let mut m = f16c_dialect::import::parse_module(&text, "row_extremes_37").expect("the text parses");
    const L: usize = 37;
    let negatives = |r: usize| -> Vec<f32> { (0..L).map(|j| -1.0 - ((j * 7 + r * 3) % 11) as f32).collect() };
    let positives = |r: usize| -> Vec<f32> { (0..L).map(|j| 1.0 + ((j * 5 + r) % 13) as f32).collect() };
    let with = |mut v: Vec<f32>, at: &[(usize, f32)]| {
        for &(j, x) in at {
            v[j] = x;
        }
        v
    };
    let rows = [
        with(negatives(0), &[(6, 0.0), (9, -0.0)]),
        with(negatives(1), &[(20, 0.0), (9, -0.0), (33, 0.0)]),
        with(negatives(2), &[(34, -0.0), (35, 0.0)]),
        with(positives(3), &[(30, f32::NAN)]),
        vec![f32::NEG_INFINITY; L],
        with(positives(5), &[(13, -0.0), (5, 0.0), (36, -0.0)]),
    ];
    let input = Tensor::new(vec![6, L], Data::F32(rows.concat())).unwrap();
    Case { name: "row_extremes_37_f32".into(), graph: m.functions.remove(0), inputs: vec![input], tolerance: Tolerance::Exact }
}
