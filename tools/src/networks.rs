//! The networks `f16c bench` builds besides the test models: a resnet18-style network (NHWC,
//! batch norm folded) and mobilenet-v2-style networks written the way torch-mlir exports
//! torchvision's MobileNetV2 (NCHW with transposes around every convolution, batch norm as
//! separate ops, ReLU6 as `maximum`/`minimum` with constant tensors). Both take a 3×64×64 input
//! and hold deterministic pseudo-random weights of the real networks' shapes.

use f16c_dialect::{BinaryOp, ConvAttrs, DType, Graph, Location, Module, NodeId, Op, PoolAttrs, Tensor, TensorType, UnaryOp, ValueType};

/// A deterministic pseudo-random tensor with values in `[-scale, scale]`.
pub fn random(ty: &TensorType, seed: u64, scale: f32) -> Tensor {
    let mut s = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    let v: Vec<f32> = (0..ty.num_elements())
        .map(|_| {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((s >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0) * scale
        })
        .collect();
    let t = Tensor::from_f32(ty.shape.clone(), v).expect("sized");
    f16c_dialect::semantics::cast(&t, ty.dtype)
}

fn loc() -> Location {
    Location::unknown()
}

fn f32_ty(shape: &[usize]) -> TensorType {
    TensorType::new(DType::F32, shape.to_vec())
}

/// Output size and `(top, bottom)` padding of a "same" window: `ceil(h / stride)` outputs. TOSA
/// wants the window to tile the padded input exactly, so odd total padding puts the extra row
/// on top (what PyTorch's symmetric padding computes when the last row goes unused).
fn same(h: usize, k: usize, stride: usize) -> (usize, usize, usize) {
    let oh = h.div_ceil(stride);
    let total = (oh - 1) * stride + k - h;
    (oh, total - total / 2, total / 2)
}

/// Graph building with fresh weights from a running seed.
struct Builder {
    g: Graph,
    seed: u64,
}

impl Builder {
    fn new(input: &[usize]) -> (Self, NodeId) {
        let mut g = Graph::new("forward");
        let x = g.add_input(f32_ty(input), loc());
        (Builder { g, seed: 0 }, x)
    }

    fn shape(&self, x: NodeId) -> Vec<usize> {
        self.g.tensor_ty(x).expect("tensor").shape.clone()
    }

    fn node(&mut self, op: Op, shape: &[usize], operands: &[NodeId]) -> NodeId {
        self.g.add_node(op, ValueType::Tensor(f32_ty(shape)), operands, loc())
    }

    fn constant(&mut self, t: Tensor) -> NodeId {
        let ty = ValueType::Tensor(t.ty());
        self.g.add_node(Op::Const(t), ty, &[], loc())
    }

    /// Fresh weights of `shape` in `[-scale, scale]`.
    fn weights(&mut self, shape: &[usize], scale: f32) -> NodeId {
        self.seed += 1;
        self.constant(random(&f32_ty(shape), self.seed, scale))
    }

    /// Fresh values of `shape` in `[lo, hi]`.
    fn uniform(&mut self, shape: &[usize], lo: f32, hi: f32) -> NodeId {
        self.seed += 1;
        let t = random(&f32_ty(shape), self.seed, 1.0);
        let v = t.to_f32_vec().iter().map(|x| lo + (x + 1.0) / 2.0 * (hi - lo)).collect();
        self.constant(Tensor::from_f32(shape.to_vec(), v).expect("sized"))
    }

    fn splat(&mut self, shape: &[usize], value: f64) -> NodeId {
        self.constant(Tensor::splat(&f32_ty(shape), value))
    }

    fn binary(&mut self, op: BinaryOp, a: NodeId, b: NodeId) -> NodeId {
        let shape = broadcast(&self.shape(a), &self.shape(b));
        let operands = if op == BinaryOp::Mul {
            let shift = self.constant(Tensor::splat(&TensorType::new(DType::I8, [1]), 0.0));
            vec![a, b, shift]
        } else {
            vec![a, b]
        };
        self.node(Op::Binary(op), &shape, &operands)
    }

    fn reshape(&mut self, x: NodeId, shape: &[usize]) -> NodeId {
        let s = self.g.add_node(Op::ConstShape(shape.iter().map(|&d| d as i64).collect()), ValueType::Shape(shape.len()), &[], loc());
        self.node(Op::Reshape, shape, &[x, s])
    }

    fn transpose(&mut self, x: NodeId, perms: [usize; 4]) -> NodeId {
        let s = self.shape(x);
        let shape: Vec<usize> = perms.iter().map(|&p| s[p]).collect();
        self.node(Op::Transpose { perms: perms.to_vec() }, &shape, &[x])
    }

    /// An NHWC convolution (`depthwise`: one filter per channel, `cout` = channels) with a
    /// He-scaled weight and the given bias.
    fn conv(&mut self, x: NodeId, cout: usize, k: usize, stride: usize, depthwise: bool, bias: NodeId) -> NodeId {
        let [n, h, w, cin] = self.shape(x)[..] else { unreachable!("NHWC") };
        let fan_in = if depthwise { k * k } else { k * k * cin };
        let scale = (2.0 / fan_in as f32).sqrt();
        let (oh, top, bottom) = same(h, k, stride);
        let (ow, left, right) = same(w, k, stride);
        let attrs = ConvAttrs { pad: [top, bottom, left, right], stride: [stride; 2], dilation: [1, 1], acc: DType::F32 };
        let z = self.splat(&[1], 0.0);
        if depthwise {
            let weight = self.weights(&[k, k, cin, 1], scale);
            self.node(Op::DepthwiseConv2d(attrs), &[n, oh, ow, cin], &[x, weight, bias, z, z])
        } else {
            let weight = self.weights(&[cout, k, k, cin], scale);
            self.node(Op::Conv2d(attrs), &[n, oh, ow, cout], &[x, weight, bias, z, z])
        }
    }
}

fn broadcast(a: &[usize], b: &[usize]) -> Vec<usize> {
    a.iter().zip(b).map(|(&x, &y)| x.max(y)).collect()
}

/// Builds a resnet18-style network (NHWC, batch norm folded into conv biases) for a 3×64×64
/// input: the 7×7 stem, max pool, four stages of two basic blocks (64..512 channels, projection
/// shortcuts), global average pool and a 10-way classifier: resnet18's layer structure and
/// about its weight count.
pub fn resnet18() -> Module {
    let (mut b, x) = Builder::new(&[1, 64, 64, 3]);
    let conv = |b: &mut Builder, x: NodeId, cout: usize, k: usize, stride: usize, relu: bool| {
        b.seed += 1;
        let bias = b.constant(random(&f32_ty(&[cout]), b.seed + 1000, 0.1));
        let y = b.conv(x, cout, k, stride, false, bias);
        let shape = b.shape(y);
        if relu { b.node(Op::Clamp { min: 0.0, max: f32::MAX as f64 }, &shape, &[y]) } else { y }
    };
    let block = |b: &mut Builder, x: NodeId, cout: usize, stride: usize| {
        let cin = b.shape(x)[3];
        let y = conv(b, x, cout, 3, stride, true);
        let y = conv(b, y, cout, 3, 1, false);
        // Projection shortcut: 1×1, or 3×3 where it also halves the size (a 1×1 window
        // cannot tile an even input at stride 2 in TOSA's exact-division rule).
        let short = match (stride, cin == cout) {
            (1, true) => x,
            (1, false) => conv(b, x, cout, 1, 1, false),
            _ => conv(b, x, cout, 3, stride, false),
        };
        let s = b.binary(BinaryOp::Add, y, short);
        let shape = b.shape(s);
        b.node(Op::Clamp { min: 0.0, max: f32::MAX as f64 }, &shape, &[s])
    };
    let mut y = conv(&mut b, x, 64, 7, 2, true);
    let pool = PoolAttrs { kernel: [3, 3], stride: [2, 2], pad: [1, 0, 1, 0], acc: None };
    y = b.node(Op::MaxPool2d(pool), &[1, 16, 16, 64], &[y]);
    for (c, s) in [(64, 1), (128, 2), (256, 2), (512, 2)] {
        y = block(&mut b, y, c, s);
        y = block(&mut b, y, c, 1);
    }
    let z = b.splat(&[1], 0.0);
    let avg = PoolAttrs { kernel: [2, 2], stride: [2, 2], pad: [0; 4], acc: Some(DType::F32) };
    y = b.node(Op::AvgPool2d(avg), &[1, 1, 1, 512], &[y, z, z]);
    y = b.reshape(y, &[1, 1, 512]);
    let w = b.constant(random(&f32_ty(&[1, 512, 10]), 99, 0.05));
    y = b.node(Op::MatMul, &[1, 1, 10], &[y, w, z, z]);
    let bias = b.constant(random(&f32_ty(&[1, 1, 10]), 98, 0.1));
    y = b.binary(BinaryOp::Add, y, bias);
    b.g.add_output(y);
    Module { functions: vec![b.g] }
}

/// torchvision's `_make_divisible(v, 8)`: channel counts of a width multiplier.
fn divisible(v: f64) -> usize {
    let d = 8.0;
    let mut n = ((v + d / 2.0) / d).floor() * d;
    n = n.max(d);
    if n < 0.9 * v {
        n += d;
    }
    n as usize
}

/// Builds torchvision's MobileNetV2 at width multiplier `width` for a 1×3×64×64 NCHW input,
/// 1000 classes, as torch-mlir writes it in TOSA: each convolution (bias-free) between an
/// NCHW→NHWC and an NHWC→NCHW transpose, each batch norm as `add(eps, var)`, `rsqrt`, `sub`,
/// `reshape`, `mul`, `mul`, `add` with per-channel `1×C×1×1` constants, ReLU6 as `maximum`
/// and `minimum` with `1×1×1×1` constants, inverted residual blocks (1×1 expand, 3×3
/// depthwise at stride 1 or 2, 1×1 project, residual add where shapes allow), and the
/// classifier as global average pool, reshape, matmul and bias add.
pub fn mobilenet_v2(width: f64) -> Module {
    let (mut b, x) = Builder::new(&[1, 3, 64, 64]);
    let eps = b.splat(&[1], 1e-5);
    let zero = b.splat(&[1, 1, 1, 1], 0.0);
    let six = b.splat(&[1, 1, 1, 1], 6.0);
    // conv → batch norm → (ReLU6), in NCHW around an NHWC convolution.
    let unit = |b: &mut Builder, x: NodeId, cout: usize, k: usize, stride: usize, depthwise: bool, relu6: bool| {
        let t = b.transpose(x, [0, 2, 3, 1]);
        let channels = if depthwise { b.shape(t)[3] } else { cout };
        let bias = b.splat(&[channels], 0.0);
        let y = b.conv(t, cout, k, stride, depthwise, bias);
        let y = b.transpose(y, [0, 3, 1, 2]);
        let c = channels;
        let var = b.uniform(&[c], 0.5, 1.0);
        let mean = b.weights(&[1, c, 1, 1], 0.2);
        let gamma = b.uniform(&[1, c, 1, 1], 0.5, 1.0);
        let beta = b.weights(&[1, c, 1, 1], 0.2);
        let v = b.binary(BinaryOp::Add, eps, var);
        let r = b.node(Op::Unary(UnaryOp::Rsqrt), &[c], &[v]);
        let centred = b.binary(BinaryOp::Sub, y, mean);
        let r = b.reshape(r, &[1, c, 1, 1]);
        let y = b.binary(BinaryOp::Mul, centred, r);
        let y = b.binary(BinaryOp::Mul, y, gamma);
        let y = b.binary(BinaryOp::Add, y, beta);
        if relu6 {
            let y = b.binary(BinaryOp::Maximum, y, zero);
            b.binary(BinaryOp::Minimum, y, six)
        } else {
            y
        }
    };
    let mut channels = divisible(32.0 * width);
    let mut y = unit(&mut b, x, channels, 3, 2, false, true);
    for (t, c, n, s) in [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1)] {
        let out = divisible(c as f64 * width);
        for i in 0..n {
            let stride = if i == 0 { s } else { 1 };
            let hidden = channels * t;
            let mut z = y;
            if t != 1 {
                z = unit(&mut b, z, hidden, 1, 1, false, true);
            }
            z = unit(&mut b, z, hidden, 3, stride, true, true);
            z = unit(&mut b, z, out, 1, 1, false, false);
            y = if stride == 1 && channels == out { b.binary(BinaryOp::Add, y, z) } else { z };
            channels = out;
        }
    }
    let last = divisible(1280.0 * width.max(1.0));
    y = unit(&mut b, y, last, 1, 1, false, true);
    let [_, _, h, w] = b.shape(y)[..] else { unreachable!("NCHW") };
    let t = b.transpose(y, [0, 2, 3, 1]);
    let z = b.splat(&[1], 0.0);
    let avg = PoolAttrs { kernel: [h, w], stride: [h, w], pad: [0; 4], acc: Some(DType::F32) };
    let pooled = b.node(Op::AvgPool2d(avg), &[1, 1, 1, last], &[t, z, z]);
    let pooled = b.transpose(pooled, [0, 3, 1, 2]);
    let flat = b.reshape(pooled, &[1, 1, last]);
    let weight = b.weights(&[1, last, 1000], (1.0 / last as f32).sqrt());
    let logits = b.node(Op::MatMul, &[1, 1, 1000], &[flat, weight, z, z]);
    let logits = b.reshape(logits, &[1, 1000]);
    let bias = b.weights(&[1, 1000], 0.05);
    let out = b.binary(BinaryOp::Add, logits, bias);
    b.g.add_output(out);
    Module { functions: vec![b.g] }
}

/// `text` with every hex f32 constant (`dense<"0x..."> : tensor<AxBxf32>`, how MLIR's printer
/// writes large constants) spelled as a nested decimal list, `dense<[[0.25, -1.5e-02], ...]>`,
/// the way torch-mlir's exports write weights. Each value is the shortest decimal that reads
/// back to its f32.
pub fn decimal_weights(text: &str) -> String {
    let mut out = String::with_capacity(text.len() * 2);
    let mut rest = text;
    while let Some(at) = rest.find("dense<\"0x") {
        out.push_str(&rest[..at]);
        rest = &rest[at..];
        let hex_start = "dense<\"0x".len();
        let Some(close) = rest[hex_start..].find("\">").map(|c| c + hex_start) else { break };
        let hex = &rest[hex_start..close];
        let after = &rest[close + 2..];
        let dims: Option<Vec<usize>> = after
            .strip_prefix(" : tensor<")
            .and_then(|t| t.split_once("xf32>"))
            .and_then(|(d, _)| d.split('x').map(|n| n.parse().ok()).collect());
        match dims.filter(|d| hex.len() == 8 * d.iter().product::<usize>()) {
            Some(dims) => {
                let values: Vec<f32> = (0..hex.len() / 8)
                    .map(|i| {
                        let bits = u32::from_str_radix(&hex[8 * i..8 * i + 8], 16).expect("hex digits");
                        f32::from_bits(bits.swap_bytes())
                    })
                    .collect();
                out.push_str("dense<");
                nested(&mut out, &values, &dims);
                out.push('>');
            }
            None => out.push_str(&rest[..close + 2]),
        }
        rest = &rest[close + 2..];
    }
    out.push_str(rest);
    out
}

/// Appends `values` as a list nested by `dims`.
fn nested(out: &mut String, values: &[f32], dims: &[usize]) {
    out.push('[');
    let inner: usize = dims[1..].iter().product();
    for (i, chunk) in values.chunks(inner.max(1)).enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        if dims.len() > 1 {
            nested(out, chunk, &dims[1..]);
        } else {
            // MLIR's float literal needs a '.': "1e-7" is not one, "1.0e-7" is.
            let s = format!("{:e}", chunk[0]);
            if s.contains('.') || !s.contains('e') { out.push_str(&s) } else { out.push_str(&s.replacen('e', ".0e", 1)) }
        }
    }
    out.push(']');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_constants_become_decimal_with_the_same_bits() {
        let values = [0.25f32, -1.5e-7, 3.0, f32::MIN_POSITIVE, -0.0, 1.0e-45];
        let hex: String = values.iter().map(|v| format!("{:08X}", v.to_bits().swap_bytes())).collect();
        let decimal = decimal_weights(&format!("dense<\"0x{hex}\"> : tensor<3x2xf32>"));
        assert_eq!(decimal, "dense<[[2.5e-1, -1.5e-7], [3.0e0, 1.1754944e-38], [-0.0e0, 1.0e-45]]> : tensor<3x2xf32>");
        let source = format!("func.func @f() -> tensor<3x2xf32> {{\n  %0 = \"tosa.const\"() <{{values = {decimal}}}> : () -> tensor<3x2xf32>\n  return %0 : tensor<3x2xf32>\n}}\n");
        let module = f16c_dialect::import::parse_module(&source, "t.mlir").unwrap();
        let g = &module.functions[0];
        let read = g.node_ids().find_map(|n| if let Op::Const(t) = g.op(n) { Some(t.clone()) } else { None }).unwrap();
        assert_eq!(read.to_f32_vec().iter().map(|v| v.to_bits()).collect::<Vec<_>>(), values.map(f32::to_bits));
        // Anything else is left as it is.
        for other in ["dense<\"0x0000\"> : tensor<1xf16>", "dense<\"0x00\"> : tensor<2xf32>", "dense<[1.0]> : tensor<1xf32>"] {
            assert_eq!(decimal_weights(other), other);
        }
    }

    #[test]
    fn channel_rounding_follows_torchvision() {
        assert_eq!([divisible(32.0 * 0.5), divisible(16.0 * 0.5), divisible(24.0 * 0.5), divisible(320.0 * 0.5)], [16, 8, 16, 160]);
        assert_eq!(divisible(1280.0), 1280);
    }

    #[test]
    fn networks_verify_and_have_the_real_weight_counts() {
        for (m, lo, hi) in [(mobilenet_v2(1.0), 3_400_000, 3_600_000), (mobilenet_v2(0.5), 1_900_000, 2_100_000), (resnet18(), 12_000_000, 13_000_000)] {
            let g = &m.functions[0];
            f16c_dialect::verify::verify(g).unwrap_or_else(|d| panic!("{d}"));
            let weights: usize = g.node_ids().filter_map(|n| if let Op::Const(t) = &g.node(n).op { Some(t.len()) } else { None }).sum();
            assert!((lo..hi).contains(&weights), "{weights} weights");
        }
    }
}
