//! What each op computes: the golden definition behind the reference interpreter and constant
//! folding.
//!
//! The numeric contract (DESIGN.md, "Numerics"):
//! - f32, f16 and bf16 values are widened to f32 (exactly), the op computes in f32, and the
//!   result is rounded once to the result type (round to nearest even; overflow gives ±inf,
//!   subnormals are kept, NaN stays NaN). For `+ − × ÷ √` this equals native fp16 arithmetic.
//! - Contractions (matmul, convolutions) and reductions accumulate in f32 (f64 for f64 data),
//!   in a fixed order: the index order of the reduced dimensions.
//! - f64 ops compute in f64; integer ops in i64, wrapping to the result width.
//! - Data movement (reshape, transpose, slice, pad, concat, tile, gather, select) copies bits:
//!   it never rounds.
//!
//! Shapes are not inferred here: the result type comes from the graph, whose verifier has
//! checked it.

use crate::op::{BinaryOp, Conv3dAttrs, ControlLayout, ConvAttrs, Op, PoolAttrs, ReduceKind, RescaleAttrs, Rounding, TransposeConvAttrs, UnaryOp};
use crate::tensor::{Data, Tensor};
use crate::types::{DType, TensorType, ValueType};
use half::{bf16, f16};

/// A runtime value: a tensor, or a shape (the value of a `!tosa.shape`).
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// A tensor.
    Tensor(Tensor),
    /// A shape.
    Shape(Vec<i64>),
    /// The results of a control-flow op.
    Results(Vec<Tensor>),
}

impl Value {
    /// The tensor, if this is one.
    pub fn as_tensor(&self) -> Option<&Tensor> {
        match self {
            Value::Tensor(t) => Some(t),
            Value::Shape(_) | Value::Results(_) => None,
        }
    }
}

/// An op that cannot be evaluated on these operands (an out-of-range gather index, an operand
/// of the wrong kind).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct EvalError(pub String);

type EvalResult<T> = Result<T, EvalError>;

fn err<T>(msg: impl Into<String>) -> EvalResult<T> {
    Err(EvalError(msg.into()))
}

/// Runs a control-flow op laid out as `layout` ([`Op::control_layout`]) on its operand tensors,
/// running region `k` (then/else, cond/body) with `run_region(k, inputs)`: the interpreter runs
/// regions itself, the JIT runs their compiled code. A loop runs until its cond region yields
/// false, however long that takes (its trip count is known only at run time).
pub fn control_flow<E: From<EvalError>>(layout: &ControlLayout, operands: &[Tensor], mut run_region: impl FnMut(usize, &[Tensor]) -> Result<Vec<Tensor>, E>) -> Result<Vec<Tensor>, E> {
    let truth = |t: &Tensor| -> EvalResult<bool> {
        match t.data() {
            Data::I1(v) if v.len() == 1 => Ok(v[0]),
            _ => err(format!("a condition must be one i1, not {}", t.ty())),
        }
    };
    let inputs = &operands[layout.inputs.clone()];
    let caps = layout.captures.clone().map(|r| &operands[r]);
    if !layout.looping {
        let k = if truth(&operands[0])? { 0 } else { 1 };
        let args: Vec<Tensor> = inputs.iter().chain(caps[k]).cloned().collect();
        return run_region(k, &args);
    }
    let mut state = inputs.to_vec();
    let limit = max_loop_iterations();
    for iteration in 0.. {
        if limit.is_some_and(|l| iteration >= l) {
            return Err(EvalError(format!("the loop ran {iteration} iterations, the limit F16C_MAX_LOOP_ITERATIONS sets")).into());
        }
        let args: Vec<Tensor> = state.iter().chain(caps[0]).cloned().collect();
        let c = run_region(0, &args)?;
        if !truth(c.first().ok_or_else(|| EvalError("the cond region yields nothing".into()))?)? {
            return Ok(state);
        }
        let args: Vec<Tensor> = state.into_iter().chain(caps[1].iter().cloned()).collect();
        state = run_region(1, &args)?;
    }
    unreachable!("the loop returns")
}

/// The most iterations a `tosa.while_loop` may run (none unless the process's settings give
/// one, [`f16c_core::settings::Settings::max_loop_iterations`]: a loop runs until its condition
/// is false). The fuzzer's workers set it, so that a mutated loop that never ends is an error
/// rather than a hang.
pub fn max_loop_iterations() -> Option<u64> {
    f16c_core::settings::get().max_loop_iterations
}

/// Evaluates one op on its operand values, producing a value of type `result`.
/// `Op::Arg` cannot be evaluated (the caller binds arguments).
pub fn eval(op: &Op, operands: &[&Value], result: &ValueType) -> EvalResult<Value> {
    match (op, operands) {
        (Op::ConstShape(s), _) => return Ok(Value::Shape(s.clone())),
        (Op::Result(i), [Value::Results(r)]) => {
            return r.get(*i).map(|t| Value::Tensor(t.clone())).ok_or_else(|| EvalError(format!("no result #{i}")));
        }
        (Op::CondIf { .. } | Op::WhileLoop { .. }, _) => return err("control flow runs its regions: the interpreter (reference::run) evaluates it, not one op's semantics"),
        (Op::Result(_), _) => return err("takes the results of a control-flow op"),
        _ => {}
    }
    let out = result.as_tensor().ok_or_else(|| EvalError(format!("{} must produce a tensor", op.mlir_name())))?;
    let t = |i: usize| -> EvalResult<&Tensor> {
        operands
            .get(i)
            .and_then(|v| v.as_tensor())
            .ok_or_else(|| EvalError(format!("{}: operand #{i} must be a tensor", op.mlir_name())))
    };
    let shape = |i: usize| -> EvalResult<&[i64]> {
        match operands.get(i) {
            Some(Value::Shape(s)) => Ok(s),
            _ => err(format!("{}: operand #{i} must be a shape", op.mlir_name())),
        }
    };
    let tensor = match op {
        Op::Arg(i) => return err(format!("argument #{i} has no value")),
        Op::ConstShape(_) | Op::CondIf { .. } | Op::WhileLoop { .. } | Op::Result(_) => unreachable!("handled above"),
        Op::Const(c) => c.clone(),
        Op::Conv2d(a) => conv2d(t(0)?, t(1)?, t(2)?, zp(t(3)?), zp(t(4)?), a, out, false)?,
        Op::DepthwiseConv2d(a) => conv2d(t(0)?, t(1)?, t(2)?, zp(t(3)?), zp(t(4)?), a, out, true)?,
        Op::TransposeConv2d(a) => transpose_conv2d(t(0)?, t(1)?, t(2)?, zp(t(3)?), zp(t(4)?), a, out)?,
        Op::Conv3d(a) => conv3d(t(0)?, t(1)?, t(2)?, zp(t(3)?), zp(t(4)?), a, out)?,
        Op::MatMul => matmul(t(0)?, t(1)?, zp(t(2)?), zp(t(3)?), out)?,
        Op::Unary(u) => {
            let zps = if *u == UnaryOp::Negate { (zp(t(1)?), zp(t(2)?)) } else { (0, 0) };
            unary(*u, t(0)?, zps, out)?
        }
        Op::Binary(b) => {
            let shift = if *b == BinaryOp::Mul { zp(t(2)?) } else { 0 };
            binary(*b, t(0)?, t(1)?, shift, out)?
        }
        Op::Clamp { min, max } => clamp(t(0)?, *min, *max, out),
        Op::Reduce { kind, axis } => reduce(*kind, t(0)?, *axis, out)?,
        Op::ArgMax { axis } => argmax(t(0)?, *axis, out)?,
        Op::MaxPool2d(p) => pool(t(0)?, p, out, false, (0, 0))?,
        Op::AvgPool2d(p) => pool(t(0)?, p, out, true, (zp(t(1)?), zp(t(2)?)))?,
        Op::Reshape => {
            shape(1)?;
            reshape(t(0)?, out)?
        }
        Op::Transpose { perms } => transpose(t(0)?, perms, out)?,
        Op::Slice => slice(t(0)?, shape(1)?, out)?,
        Op::Pad => pad(t(0)?, shape(1)?, t(2)?, out)?,
        Op::Concat { axis } => {
            let parts: Vec<&Tensor> = (0..operands.len()).map(t).collect::<EvalResult<_>>()?;
            concat(&parts, *axis, out)?
        }
        Op::Tile => tile(t(0)?, out)?,
        Op::Cast => cast(t(0)?, out.dtype),
        Op::Select => select(t(0)?, t(1)?, t(2)?, out)?,
        Op::Gather => gather(t(0)?, t(1)?, out)?,
        Op::Scatter => scatter(t(0)?, t(1)?, t(2)?, out)?,
        Op::Identity => t(0)?.clone(),
        Op::Reverse { axis } => reverse(t(0)?, *axis)?,
        Op::Table => table(t(0)?, t(1)?, out)?,
        Op::Rescale(r) => rescale(t(0)?, t(1)?, t(2)?, (zp(t(3)?), zp(t(4)?)), r, out)?,
        Op::Resize { bilinear } => resize(t(0)?, &ResizeParams::new(shape(1)?, shape(2)?)?, *bilinear, out)?,
    };
    Ok(Value::Tensor(tensor))
}

/// The value of a zero-point or shift operand (element 0, as an integer).
fn zp(t: &Tensor) -> i64 {
    t.to_f64_vec().first().copied().unwrap_or(0.0) as i64
}

// ---------------------------------------------------------------------------------------------
// The compute domain: f32 for f32/f16/bf16, f64, i64 for integers, bool.
// ---------------------------------------------------------------------------------------------

enum Num {
    F32(Vec<f32>),
    F64(Vec<f64>),
    Int(Vec<i64>),
    Bool(Vec<bool>),
}

fn widen(t: &Tensor) -> Num {
    match t.data() {
        Data::F32(_) | Data::F16(_) | Data::BF16(_) => Num::F32(t.to_f32_vec()),
        Data::F64(v) => Num::F64(v.clone()),
        Data::I1(v) => Num::Bool(v.clone()),
        _ => Num::Int(t.to_i64_vec()),
    }
}

/// Rounds computed values once into the result type. The domain matches the result's dtype
/// family by construction (the verifier checks element types).
fn narrow(n: Num, ty: &TensorType) -> Tensor {
    let data = match (n, ty.dtype) {
        (Num::F32(v), DType::F32) => Data::F32(v),
        (Num::F32(v), DType::F16) => Data::F16(v.into_iter().map(f16::from_f32).collect()),
        (Num::F32(v), DType::BF16) => Data::BF16(v.into_iter().map(bf16::from_f32).collect()),
        (Num::F64(v), DType::F64) => Data::F64(v),
        (Num::Bool(v), DType::I1) => Data::I1(v),
        (Num::Int(v), d) if d.is_int() => Data::from_i64(v, d),
        (n, d) => {
            // A mismatch means a dtype combination the verifier should have rejected; convert
            // through f64 rather than fail.
            let f: Vec<f64> = match n {
                Num::F32(v) => v.into_iter().map(f64::from).collect(),
                Num::F64(v) => v,
                Num::Int(v) => v.into_iter().map(|x| x as f64).collect(),
                Num::Bool(v) => v.into_iter().map(|x| x as u8 as f64).collect(),
            };
            return cast(&Tensor::new(ty.shape.clone(), Data::F64(f)).expect("same length"), d);
        }
    };
    Tensor::new(ty.shape.clone(), data).expect("op produced as many elements as its type holds")
}

/// Float arithmetic shared by f32 and f64.
trait Real: num_traits::Float + std::iter::Sum + Default + std::fmt::Debug {
    /// The contract's `exp`: f16c's own for f32 ([`f16c_core::math`]), the host's for f64.
    fn exp_(self) -> Self;
    /// The contract's `tanh` (as [`Real::exp_`]).
    fn tanh_(self) -> Self;
    fn erf(self) -> Self;
    fn from_f64(v: f64) -> Self;
}

impl Real for f32 {
    fn exp_(self) -> Self {
        f16c_core::math::exp_f32(self)
    }
    fn tanh_(self) -> Self {
        f16c_core::math::tanh_f32(self)
    }
    fn erf(self) -> Self {
        f16c_core::math::erf_f32(self)
    }
    fn from_f64(v: f64) -> Self {
        v as f32
    }
}

impl Real for f64 {
    fn exp_(self) -> Self {
        self.exp()
    }
    fn tanh_(self) -> Self {
        self.tanh()
    }
    fn erf(self) -> Self {
        libm::erf(self)
    }
    fn from_f64(v: f64) -> Self {
        v
    }
}

/// NaN-propagating maximum and minimum (TOSA `nan_mode = PROPAGATE`).
/// The TOSA specification's `apply_max_s`: NaN if either is NaN, else `a >= b ? a : b`. So
/// of two equal values the first wins, and that decides the sign of a zero result:
/// `max(-0, +0)` is −0, `max(+0, -0)` is +0 (IEEE's `maximum`, which ranks −0 below +0, and
/// Rust's `f32::max`, which leaves it open, are not this). Reductions and pooling fold it in
/// index order from −∞, so their zero result has the sign of the first zero.
fn fmax<T: Real>(a: T, b: T) -> T {
    if a.is_nan() || b.is_nan() {
        T::nan()
    } else if a >= b {
        a
    } else {
        b
    }
}

/// The TOSA specification's `apply_min_s`: NaN if either is NaN, else `a <= b ? a : b`.
fn fmin<T: Real>(a: T, b: T) -> T {
    if a.is_nan() || b.is_nan() {
        T::nan()
    } else if a <= b {
        a
    } else {
        b
    }
}

// ---------------------------------------------------------------------------------------------
// Index maps: every data-movement op and every broadcast is "output element i comes from
// input element map[i]".
// ---------------------------------------------------------------------------------------------

/// Row-major strides.
pub fn strides(shape: &[usize]) -> Vec<usize> {
    let mut s = vec![1; shape.len()];
    for i in (0..shape.len().saturating_sub(1)).rev() {
        s[i] = s[i + 1] * shape[i + 1];
    }
    s
}

/// Calls `f(coords)` for every coordinate of `shape` in row-major order.
fn for_each_coord(shape: &[usize], mut f: impl FnMut(&[usize])) {
    let n: usize = shape.iter().product();
    if n == 0 {
        return;
    }
    let mut c = vec![0; shape.len()];
    for _ in 0..n {
        f(&c);
        for d in (0..shape.len()).rev() {
            c[d] += 1;
            if c[d] < shape[d] {
                break;
            }
            c[d] = 0;
        }
    }
}

/// For every element of `out`, the element of `input` that TOSA broadcasting reads.
fn broadcast_map(input: &[usize], out: &[usize]) -> EvalResult<Vec<usize>> {
    if input.len() != out.len() || input.iter().zip(out).any(|(&i, &o)| i != o && i != 1) {
        return err(format!("cannot broadcast {input:?} to {out:?}"));
    }
    let n: usize = out.iter().product();
    if input == out {
        return Ok((0..n).collect());
    }
    // The offset moves with the output coordinate, an odometer over `out`'s outer dimensions
    // (a broadcast dimension's stride is 0); the innermost dimension is a run of `inner`
    // offsets `last` apart.
    let step: Vec<usize> = strides(input).iter().zip(input).map(|(&s, &d)| if d == 1 { 0 } else { s }).collect();
    let Some((&inner, outer)) = out.split_last() else { return Ok(vec![0]) };
    let last = step[outer.len()];
    let (mut map, mut c, mut at) = (Vec::with_capacity(n), vec![0; outer.len()], 0usize);
    for _ in 0..n.checked_div(inner).unwrap_or(0) {
        map.extend((0..inner).map(|j| at + j * last));
        for d in (0..outer.len()).rev() {
            c[d] += 1;
            at += step[d];
            if c[d] < outer[d] {
                break;
            }
            at -= step[d] * outer[d];
            c[d] = 0;
        }
    }
    Ok(map)
}

fn moved(t: &Tensor, map: &[usize], out: &TensorType) -> Tensor {
    Tensor::new(out.shape.clone(), t.data().gather(map)).expect("map covers the output")
}

// ---------------------------------------------------------------------------------------------
// Elementwise
// ---------------------------------------------------------------------------------------------

fn unary_real<T: Real>(op: UnaryOp, x: T) -> T {
    match op {
        UnaryOp::Negate => -x,
        UnaryOp::Abs => x.abs(),
        UnaryOp::Exp => x.exp_(),
        UnaryOp::Log => x.ln(),
        UnaryOp::Rsqrt => T::one() / x.sqrt(),
        UnaryOp::Reciprocal => T::one() / x,
        UnaryOp::Tanh => x.tanh_(),
        UnaryOp::Sigmoid => T::one() / (T::one() + (-x).exp_()),
        UnaryOp::Erf => x.erf(),
        UnaryOp::Ceil => x.ceil(),
        UnaryOp::Floor => x.floor(),
        UnaryOp::Sin => x.sin(),
        UnaryOp::Cos => x.cos(),
        // The verifier keeps these off floats.
        UnaryOp::BitwiseNot | UnaryOp::LogicalNot | UnaryOp::Clz => T::nan(),
    }
}

fn unary(op: UnaryOp, x: &Tensor, (in_zp, out_zp): (i64, i64), out: &TensorType) -> EvalResult<Tensor> {
    if (op.is_integer_only() || op.is_logical()) && x.dtype().is_float() {
        return err(format!("{} is not defined on {}", Op::Unary(op).mlir_name(), x.dtype()));
    }
    let n = match widen(x) {
        Num::F32(v) => Num::F32(v.into_iter().map(|x| unary_real(op, x)).collect()),
        Num::F64(v) => Num::F64(v.into_iter().map(|x| unary_real(op, x)).collect()),
        Num::Int(v) => Num::Int(match op {
            UnaryOp::Negate => v.into_iter().map(|x| out_zp.wrapping_sub(x.wrapping_sub(in_zp))).collect(),
            UnaryOp::Abs => v.into_iter().map(i64::wrapping_abs).collect(),
            // On the sign-extended value: the low bits are the narrow type's NOT.
            UnaryOp::BitwiseNot => v.into_iter().map(|x| !x).collect(),
            UnaryOp::Clz => v.into_iter().map(|x| clz(x, out.dtype)).collect(),
            _ => return err(format!("{} is not defined on integers", Op::Unary(op).mlir_name())),
        }),
        Num::Bool(v) if op == UnaryOp::LogicalNot => Num::Bool(v.into_iter().map(|x| !x).collect()),
        Num::Bool(_) => return err(format!("{} is not defined on i1", Op::Unary(op).mlir_name())),
    };
    Ok(narrow(n, out))
}

fn binary_real<T: Real>(op: BinaryOp, a: T, b: T) -> T {
    match op {
        BinaryOp::Add => a + b,
        BinaryOp::Sub => a - b,
        BinaryOp::Mul => a * b,
        BinaryOp::Maximum => fmax(a, b),
        BinaryOp::Minimum => fmin(a, b),
        BinaryOp::Pow => a.powf(b),
        BinaryOp::Equal | BinaryOp::Greater | BinaryOp::GreaterEqual => unreachable!("comparisons handled apart"),
        _ => unreachable!("integer and i1 ops are refused on floats before"),
    }
}

fn compare<T: PartialOrd>(op: BinaryOp, a: T, b: T) -> bool {
    match op {
        BinaryOp::Equal => a == b,
        BinaryOp::Greater => a > b,
        _ => a >= b,
    }
}

fn binary(op: BinaryOp, a: &Tensor, b: &Tensor, shift: i64, out: &TensorType) -> EvalResult<Tensor> {
    // Operands of the result's shape are zipped as they are; others through broadcast maps.
    let same = a.shape() == out.shape.as_slice() && b.shape() == out.shape.as_slice();
    let (ma, mb) = if same { (Vec::new(), Vec::new()) } else { (broadcast_map(a.shape(), &out.shape)?, broadcast_map(b.shape(), &out.shape)?) };
    macro_rules! zip {
        ($x:expr, $y:expr, $f:expr) => {
            if same {
                $x.iter().zip($y.iter()).map(|(&p, &q)| $f(p, q)).collect()
            } else {
                ma.iter().zip(&mb).map(|(&i, &j)| $f($x[i], $y[j])).collect()
            }
        };
    }
    let n = match (widen(a), widen(b)) {
        (Num::F32(x), Num::F32(y)) if op.is_comparison() => Num::Bool(zip!(x, y, |p, q| compare(op, p, q))),
        (Num::F64(x), Num::F64(y)) if op.is_comparison() => Num::Bool(zip!(x, y, |p, q| compare(op, p, q))),
        (Num::Int(x), Num::Int(y)) if op.is_comparison() => Num::Bool(zip!(x, y, |p, q| compare(op, p, q))),
        (Num::Bool(x), Num::Bool(y)) if op == BinaryOp::Equal => Num::Bool(zip!(x, y, |p, q| p == q)),
        (Num::Bool(x), Num::Bool(y)) if op.is_logical() => Num::Bool(match op {
            BinaryOp::LogicalAnd => zip!(x, y, |p, q| p && q),
            BinaryOp::LogicalOr => zip!(x, y, |p, q| p || q),
            _ => zip!(x, y, |p: bool, q: bool| p ^ q),
        }),
        (Num::F32(_) | Num::F64(_), _) if op.is_integer_only() || op.is_logical() => {
            return err(format!("{} is not defined on {}", Op::Binary(op).mlir_name(), a.dtype()))
        }
        (Num::F32(x), Num::F32(y)) => Num::F32(zip!(x, y, |p, q| binary_real(op, p, q))),
        (Num::F64(x), Num::F64(y)) => Num::F64(zip!(x, y, |p, q| binary_real(op, p, q))),
        (Num::Int(x), Num::Int(y)) => Num::Int(match op {
            BinaryOp::Add => zip!(x, y, i64::wrapping_add),
            BinaryOp::Sub => zip!(x, y, i64::wrapping_sub),
            BinaryOp::Mul if shift > 0 => zip!(x, y, |p: i64, q: i64| (p.wrapping_mul(q) + (1 << (shift - 1))) >> shift),
            BinaryOp::Mul => zip!(x, y, i64::wrapping_mul),
            BinaryOp::Maximum => zip!(x, y, i64::max),
            BinaryOp::Minimum => zip!(x, y, i64::min),
            // On sign-extended values: the low bits are the narrow type's.
            BinaryOp::BitwiseAnd => zip!(x, y, |p: i64, q: i64| p & q),
            BinaryOp::BitwiseOr => zip!(x, y, |p: i64, q: i64| p | q),
            BinaryOp::BitwiseXor => zip!(x, y, |p: i64, q: i64| p ^ q),
            BinaryOp::ShiftLeft | BinaryOp::ShiftRightLogical | BinaryOp::ShiftRightArith { .. } | BinaryOp::IntDiv => {
                zip!(x, y, |p, q| int_binary(op, p, q, out.dtype))
            }
            _ => return err(format!("{} is not defined on integers", Op::Binary(op).mlir_name())),
        }),
        _ => return err(format!("{}: operands {} and {} do not match", Op::Binary(op).mlir_name(), a.dtype(), b.dtype())),
    };
    Ok(narrow(n, out))
}

/// The shift amount of a TOSA shift: the specification requires `0..=31` and leaves other
/// amounts unpredictable; f16c takes them modulo 32 (the low five bits), in every backend.
pub fn shift_amount(b: i64) -> u32 {
    (b & 31) as u32
}

/// `x`'s bits as an unsigned value of `d`'s width (`x` is sign-extended from it).
fn unsigned_bits(x: i64, d: DType) -> u64 {
    let bits = d.bit_width() as u32;
    if bits >= 64 { x as u64 } else { x as u64 & ((1u64 << bits) - 1) }
}

/// `tosa.clz`: leading zero bits of `x` in `d`'s width.
fn clz(x: i64, d: DType) -> i64 {
    let bits = d.bit_width() as i64;
    unsigned_bits(x, d).leading_zeros() as i64 - (64 - bits)
}

/// The shifts and `intdiv` on sign-extended values of type `d` (the caller wraps the result
/// to `d`). A division by zero, which TOSA leaves unpredictable, gives 0 in every backend.
fn int_binary(op: BinaryOp, p: i64, q: i64, d: DType) -> i64 {
    let s = shift_amount(q);
    match op {
        BinaryOp::ShiftLeft => p << s,
        BinaryOp::ShiftRightLogical => (unsigned_bits(p, d) >> s) as i64,
        BinaryOp::ShiftRightArith { round } => {
            // `round` adds the last bit shifted out; the sum cannot leave the type's range
            // (for s ≥ 1 the shifted value is at most half the maximum).
            let r = p >> s;
            if round && s > 0 && (p >> (s - 1)) & 1 != 0 { r + 1 } else { r }
        }
        BinaryOp::IntDiv if q == 0 => 0,
        BinaryOp::IntDiv => p.wrapping_div(q),
        _ => unreachable!("only shifts and intdiv"),
    }
}

fn clamp(x: &Tensor, min: f64, max: f64, out: &TensorType) -> Tensor {
    let n = match widen(x) {
        Num::F32(v) => {
            let (lo, hi) = (min as f32, max as f32);
            Num::F32(v.into_iter().map(|x| fmin(fmax(x, lo), hi)).collect())
        }
        Num::F64(v) => Num::F64(v.into_iter().map(|x| fmin(fmax(x, min), max)).collect()),
        Num::Int(v) => Num::Int(v.into_iter().map(|x| x.clamp(min as i64, max as i64)).collect()),
        Num::Bool(v) => Num::Bool(v),
    };
    narrow(n, out)
}

fn select(p: &Tensor, a: &Tensor, b: &Tensor, out: &TensorType) -> EvalResult<Tensor> {
    let Data::I1(pred) = p.data() else { return err("tosa.select: the predicate must be i1") };
    let (mp, ma, mb) = (broadcast_map(p.shape(), &out.shape)?, broadcast_map(a.shape(), &out.shape)?, broadcast_map(b.shape(), &out.shape)?);
    let both = Data::concat(&[a.data(), b.data()]);
    let map: Vec<usize> = (0..mp.len()).map(|i| if pred[mp[i]] { ma[i] } else { a.len() + mb[i] }).collect();
    Ok(Tensor::new(out.shape.clone(), both.gather(&map)).expect("map covers the output"))
}

/// TOSA `cast`: float→float rounds to nearest even; float→int rounds to nearest even and
/// saturates (NaN gives 0); int→int wraps; anything→i1 is "not zero".
pub fn cast(x: &Tensor, to: DType) -> Tensor {
    let shape = x.shape().to_vec();
    let data = match (x.data(), to) {
        (d, t) if d.dtype() == t => d.clone(),
        (_, DType::I1) => Data::I1(x.to_f64_vec().into_iter().map(|v| v != 0.0).collect()),
        (Data::F32(v), DType::F16) => {
            // The slice conversion uses the CPU's F16C (VCVTPS2PH) where it has one: same bits.
            use half::slice::HalfFloatSliceExt;
            let mut out = vec![f16::ZERO; v.len()];
            out.convert_from_f32_slice(v);
            Data::F16(out)
        }
        (Data::F32(v), DType::BF16) => Data::BF16(v.iter().map(|&x| bf16::from_f32(x)).collect()),
        (Data::F64(v), DType::F16) => Data::F16(v.iter().map(|&x| f16::from_f64(x)).collect()),
        (Data::F64(v), DType::BF16) => Data::BF16(v.iter().map(|&x| bf16::from_f64(x)).collect()),
        (Data::F64(v), DType::F32) => Data::F32(v.iter().map(|&x| x as f32).collect()),
        (d, DType::F16 | DType::BF16 | DType::F32) if d.dtype().is_float() => {
            // f16/bf16 → wider or other 16-bit float: exact widening to f32 first.
            let w = x.to_f32_vec();
            match to {
                DType::F32 => Data::F32(w),
                DType::F16 => Data::F16(w.into_iter().map(f16::from_f32).collect()),
                _ => Data::BF16(w.into_iter().map(bf16::from_f32).collect()),
            }
        }
        (_, DType::F64) => Data::F64(x.to_f64_vec()),
        (_, DType::F32 | DType::F16 | DType::BF16) => {
            // Integer or bool → float: exact in f64 (|x| < 2^53), then one rounding.
            let w = x.to_f64_vec();
            match to {
                DType::F32 => Data::F32(w.into_iter().map(|v| v as f32).collect()),
                DType::F16 => Data::F16(w.into_iter().map(f16::from_f64).collect()),
                _ => Data::BF16(w.into_iter().map(bf16::from_f64).collect()),
            }
        }
        (d, int) if d.dtype().is_float() => {
            let (lo, hi) = int.int_range();
            let (lo, hi) = (lo as f64, hi as f64);
            let v: Vec<i64> =
                x.to_f64_vec().into_iter().map(|f| if f.is_nan() { 0 } else { f.round_ties_even().clamp(lo, hi) as i64 }).collect();
            int_data(v, int)
        }
        (_, int) => int_data(x.to_i64_vec(), int),
    };
    Tensor::new(shape, data).expect("cast keeps the element count")
}

fn int_data(v: Vec<i64>, dtype: DType) -> Data {
    Data::from_i64(v, if dtype.is_int() { dtype } else { DType::I64 })
}

// ---------------------------------------------------------------------------------------------
// Reductions
// ---------------------------------------------------------------------------------------------

/// Splits `shape` around `axis` into (outer, axis length, inner).
fn around(shape: &[usize], axis: usize) -> EvalResult<(usize, usize, usize)> {
    if axis >= shape.len() {
        return err(format!("axis {axis} is out of range for rank {}", shape.len()));
    }
    Ok((shape[..axis].iter().product(), shape[axis], shape[axis + 1..].iter().product()))
}

fn reduce_lanes<T: Copy>(v: &[T], (outer, len, inner): (usize, usize, usize), init: T, f: impl Fn(T, T) -> T) -> Vec<T> {
    let mut out = Vec::with_capacity(outer * inner);
    for o in 0..outer {
        for i in 0..inner {
            let mut acc = init;
            for k in 0..len {
                acc = f(acc, v[(o * len + k) * inner + i]);
            }
            out.push(acc);
        }
    }
    out
}

fn reduce(kind: ReduceKind, x: &Tensor, axis: usize, out: &TensorType) -> EvalResult<Tensor> {
    let dims = around(x.shape(), axis)?;
    macro_rules! real {
        ($v:expr, $t:ty) => {
            match kind {
                ReduceKind::Sum => reduce_lanes(&$v, dims, 0.0 as $t, |a, b| a + b),
                ReduceKind::Prod => reduce_lanes(&$v, dims, 1.0 as $t, |a, b| a * b),
                ReduceKind::Max => reduce_lanes(&$v, dims, <$t>::NEG_INFINITY, fmax),
                ReduceKind::Min => reduce_lanes(&$v, dims, <$t>::INFINITY, fmin),
                _ => return err("reduce_all/reduce_any take i1"),
            }
        };
    }
    let n = match widen(x) {
        Num::F32(v) => Num::F32(real!(v, f32)),
        Num::F64(v) => Num::F64(real!(v, f64)),
        Num::Int(v) => Num::Int(match kind {
            ReduceKind::Sum => reduce_lanes(&v, dims, 0, i64::wrapping_add),
            ReduceKind::Prod => reduce_lanes(&v, dims, 1, i64::wrapping_mul),
            ReduceKind::Max => reduce_lanes(&v, dims, i64::MIN, i64::max),
            ReduceKind::Min => reduce_lanes(&v, dims, i64::MAX, i64::min),
            _ => return err("reduce_all/reduce_any take i1"),
        }),
        Num::Bool(v) => Num::Bool(match kind {
            ReduceKind::All | ReduceKind::Min | ReduceKind::Prod => reduce_lanes(&v, dims, true, |a, b| a && b),
            _ => reduce_lanes(&v, dims, false, |a, b| a || b),
        }),
    };
    Ok(narrow(n, out))
}

fn argmax(x: &Tensor, axis: usize, out: &TensorType) -> EvalResult<Tensor> {
    let (outer, len, inner) = around(x.shape(), axis)?;
    let v = x.to_f64_vec();
    let mut idx = Vec::with_capacity(outer * inner);
    for o in 0..outer {
        for i in 0..inner {
            let mut best = 0;
            for k in 0..len {
                let (cur, b) = (v[(o * len + k) * inner + i], v[(o * len + best) * inner + i]);
                if b.is_nan() {
                    break; // the first NaN wins (PROPAGATE)
                }
                if cur.is_nan() || cur > b {
                    best = k;
                }
            }
            idx.push(best as i64);
        }
    }
    Tensor::new(out.shape.clone(), int_data(idx, out.dtype)).map_err(|e| EvalError(e.to_string()))
}

// ---------------------------------------------------------------------------------------------
// Contractions: inputs widened, products and sums in the accumulator domain, one rounding.
// ---------------------------------------------------------------------------------------------

/// Accumulator arithmetic (f32, f64, i64).
trait Acc: Copy + Default + std::ops::Add<Output = Self> + std::ops::Mul<Output = Self> + std::ops::Sub<Output = Self> {
    fn from_i64(v: i64) -> Self;
}
impl Acc for f32 {
    fn from_i64(v: i64) -> Self {
        v as f32
    }
}
impl Acc for f64 {
    fn from_i64(v: i64) -> Self {
        v as f64
    }
}
impl Acc for i64 {
    fn from_i64(v: i64) -> Self {
        v
    }
}

/// Widens the operands of a contraction to one domain and runs `$body` with them bound as
/// slices of that domain's type.
macro_rules! contraction {
    ([$($x:ident),+], $out:expr, $body:expr) => {{
        $(let $x = widen($x);)+
        let n = match ($($x,)+) {
            ($(Num::F32($x),)+) => Num::F32($body),
            ($(Num::F64($x),)+) => Num::F64($body),
            ($(Num::Int($x),)+) => Num::Int($body),
            _ => return err("contraction operands must share one element type family"),
        };
        Ok(narrow(n, $out))
    }};
}

fn matmul(a: &Tensor, b: &Tensor, a_zp: i64, b_zp: i64, out: &TensorType) -> EvalResult<Tensor> {
    let (&[n, h, c], &[_, _, w]) = (a.shape(), b.shape()) else { return err("tosa.matmul takes rank-3 operands") };
    // Each output sums over `k` in order. Up to ROWS rows of A at once, each with its own
    // outputs: a row of B is read once for all of them (a transformer's weights were read
    // again for every token).
    #[allow(clippy::too_many_arguments, reason = "a convolution's geometry and zero points, as the reference computes it")]
    #[inline(always)]
    fn mm<T: Acc>(a: &[T], b: &[T], n: usize, h: usize, c: usize, w: usize, az: T, bz: T) -> Vec<T> {
        const ROWS: usize = 8;
        let mut out = vec![T::default(); n * h * w];
        for bi in 0..n {
            for y0 in (0..h).step_by(ROWS) {
                let rows = ROWS.min(h - y0);
                let block = &mut out[(bi * h + y0) * w..(bi * h + y0 + rows) * w];
                for k in 0..c {
                    let brow = &b[(bi * c + k) * w..(bi * c + k + 1) * w];
                    for (r, row) in block.chunks_mut(w.max(1)).enumerate() {
                        let av = a[(bi * h + y0 + r) * c + k] - az;
                        for (o, &bv) in row.iter_mut().zip(brow) {
                            *o = *o + av * (bv - bz);
                        }
                    }
                }
            }
        }
        out
    }
    /// [`mm`] compiled for AVX-512 where the CPU has it (the same operations in the same order).
    #[allow(clippy::too_many_arguments, reason = "a convolution's geometry and zero points, as the reference computes it")]
    fn dispatch<T: Acc>(a: &[T], b: &[T], n: usize, h: usize, c: usize, w: usize, az: T, bz: T) -> Vec<T> {
        #[cfg(target_arch = "x86_64")]
        {
            #[target_feature(enable = "avx512f")]
            #[allow(clippy::too_many_arguments, reason = "a convolution's geometry and zero points, as the reference computes it")]
            fn wide<T: Acc>(a: &[T], b: &[T], n: usize, h: usize, c: usize, w: usize, az: T, bz: T) -> Vec<T> {
                mm(a, b, n, h, c, w, az, bz)
            }
            if std::arch::is_x86_feature_detected!("avx512f") {
                // SAFETY: the CPU has AVX-512F.
                return unsafe { wide(a, b, n, h, c, w, az, bz) };
            }
        }
        mm(a, b, n, h, c, w, az, bz)
    }
    contraction!([a, b], out, dispatch(&a, &b, n, h, c, w, Acc::from_i64(a_zp), Acc::from_i64(b_zp)))
}

struct ConvGeom {
    n: usize,
    ih: usize,
    iw: usize,
    ic: usize,
    oh: usize,
    ow: usize,
    oc: usize,
    kh: usize,
    kw: usize,
}

#[allow(clippy::too_many_arguments, reason = "a convolution's geometry and zero points, as the reference computes it")]
fn conv2d(x: &Tensor, w: &Tensor, bias: &Tensor, x_zp: i64, w_zp: i64, a: &ConvAttrs, out: &TensorType, depthwise: bool) -> EvalResult<Tensor> {
    let (&[n, ih, iw, ic], &[oh, ow, oc]) = (x.shape(), &out.shape[1..]) else { return err("convolution input must be NHWC") };
    let (kh, kw) = if depthwise { (w.shape()[0], w.shape()[1]) } else { (w.shape()[1], w.shape()[2]) };
    let g = ConvGeom { n, ih, iw, ic, oh, ow, oc, kh, kw };
    // Each output sums its taps in (ky, kx, c) order, padded taps skipped; the loops run over
    // an output pixel's channels innermost (the weights laid out tap-major, `w - wz` taken
    // once), which keeps every output's order and makes the loop a vector one.
    #[allow(clippy::too_many_arguments, reason = "a convolution's geometry and zero points, as the reference computes it")]
    #[inline(always)]
    fn run<T: Acc>(x: &[T], w: &[T], bias: &[T], g: &ConvGeom, a: &ConvAttrs, xz: T, wz: T, depthwise: bool) -> Vec<T> {
        let taps = g.kh * g.kw;
        // wt[(tap * ic + c) * oc + o] (dense) or wt[tap * oc + o] (depthwise: already so).
        let wt: Vec<T> = if depthwise {
            w.iter().map(|&v| v - wz).collect()
        } else {
            let mut wt = vec![T::default(); taps * g.ic * g.oc];
            for o in 0..g.oc {
                for t in 0..taps {
                    for c in 0..g.ic {
                        wt[(t * g.ic + c) * g.oc + o] = w[(o * taps + t) * g.ic + c] - wz;
                    }
                }
            }
            wt
        };
        let mult = if depthwise { g.oc / g.ic.max(1) } else { 0 };
        let mut out = vec![T::default(); g.n * g.oh * g.ow * g.oc];
        // Up to PIXELS output pixels of a row at once, each with its own accumulators: a row of
        // weights is read once for all of them (it was read again for every pixel, a 3 × 3 ×
        // 256 × 256 convolution's 2.4 MB of weights per pixel from the caches).
        const PIXELS: usize = 8;
        let mut xs = vec![T::default(); PIXELS * g.ic];
        for b in 0..g.n {
            for oy in 0..g.oh {
                for ox0 in (0..g.ow).step_by(PIXELS) {
                    let np = PIXELS.min(g.ow - ox0);
                    let at = ((b * g.oh + oy) * g.ow + ox0) * g.oc;
                    let acc = &mut out[at..at + np * g.oc];
                    for ky in 0..g.kh {
                        let Some(y) = window_input(oy, ky, a.stride[0], a.dilation[0], a.pad[0], g.ih) else { continue };
                        for kx in 0..g.kw {
                            // The pixels whose tap is inside the input (the others skip it).
                            let mut inside = [false; PIXELS];
                            for (p, inside) in inside.iter_mut().enumerate().take(np) {
                                let Some(xx) = window_input(ox0 + p, kx, a.stride[1], a.dilation[1], a.pad[2], g.iw) else { continue };
                                *inside = true;
                                let base = ((b * g.ih + y) * g.iw + xx) * g.ic;
                                for (v, &xv) in xs[p * g.ic..(p + 1) * g.ic].iter_mut().zip(&x[base..base + g.ic]) {
                                    *v = xv - xz;
                                }
                            }
                            let t = ky * g.kw + kx;
                            if depthwise {
                                let wrow = &wt[t * g.oc..(t + 1) * g.oc];
                                for p in (0..np).filter(|&p| inside[p]) {
                                    let acc = &mut acc[p * g.oc..(p + 1) * g.oc];
                                    for (c, &xv) in xs[p * g.ic..(p + 1) * g.ic].iter().enumerate() {
                                        let (o0, o1) = (c * mult, (c + 1) * mult);
                                        for (acc, &wv) in acc[o0..o1].iter_mut().zip(&wrow[o0..o1]) {
                                            *acc = *acc + xv * wv;
                                        }
                                    }
                                }
                            } else {
                                for c in 0..g.ic {
                                    let wrow = &wt[(t * g.ic + c) * g.oc..(t * g.ic + c + 1) * g.oc];
                                    for p in (0..np).filter(|&p| inside[p]) {
                                        let xv = xs[p * g.ic + c];
                                        for (acc, &wv) in acc[p * g.oc..(p + 1) * g.oc].iter_mut().zip(wrow) {
                                            *acc = *acc + xv * wv;
                                        }
                                    }
                                }
                            }
                        }
                    }
                    for acc in acc.chunks_mut(g.oc.max(1)) {
                        for (o, acc) in acc.iter_mut().enumerate() {
                            *acc = *acc + if bias.len() == 1 { bias[0] } else { bias[o] };
                        }
                    }
                }
            }
        }
        out
    }
    /// [`run`] compiled for AVX-512 where the CPU has it: the same operations in the same
    /// order (Rust never fuses a multiply and an add), on sixteen lanes instead of SSE2's four.
    #[allow(clippy::too_many_arguments, reason = "a convolution's geometry and zero points, as the reference computes it")]
    fn dispatch<T: Acc>(x: &[T], w: &[T], bias: &[T], g: &ConvGeom, a: &ConvAttrs, xz: T, wz: T, depthwise: bool) -> Vec<T> {
        #[cfg(target_arch = "x86_64")]
        {
            #[target_feature(enable = "avx512f")]
            #[allow(clippy::too_many_arguments, reason = "a convolution's geometry and zero points, as the reference computes it")]
            fn wide<T: Acc>(x: &[T], w: &[T], bias: &[T], g: &ConvGeom, a: &ConvAttrs, xz: T, wz: T, depthwise: bool) -> Vec<T> {
                run(x, w, bias, g, a, xz, wz, depthwise)
            }
            if std::arch::is_x86_feature_detected!("avx512f") {
                // SAFETY: the CPU has AVX-512F.
                return unsafe { wide(x, w, bias, g, a, xz, wz, depthwise) };
            }
        }
        run(x, w, bias, g, a, xz, wz, depthwise)
    }
    contraction!([x, w, bias], out, dispatch(&x, &w, &bias, &g, a, Acc::from_i64(x_zp), Acc::from_i64(w_zp), depthwise))
}

/// The input coordinate window tap `k` of output `o` reads along one axis,
/// `o·stride + k·dilation − pad`, if it lies inside `0..len` (else the tap is in the padding).
pub fn window_input(o: usize, k: usize, stride: usize, dilation: usize, pad: usize, len: usize) -> Option<usize> {
    (o * stride + k * dilation).checked_sub(pad).filter(|&p| p < len)
}

/// `tosa.conv3d`. Each output sums its taps over `(ky, kx, kd, c)`, in that order (TOSA leaves
/// the order open; this is the order of the conv2d that lowering turns a conv3d into, with depth
/// and channels merged, so that every backend can match the reference bit for bit). Taps in the
/// padding are skipped.
fn conv3d(x: &Tensor, w: &Tensor, bias: &Tensor, x_zp: i64, w_zp: i64, a: &Conv3dAttrs, out: &TensorType) -> EvalResult<Tensor> {
    let (&[n, id, ih, iw, ic], &[od, oh, ow, oc], &[_, kd, kh, kw, _]) = (x.shape(), &out.shape[1..], w.shape()) else {
        return err("tosa.conv3d takes an NDHWC input and an ODHWI weight");
    };
    let input = [id, ih, iw];
    let (outs, kernel) = ([od, oh, ow], [kd, kh, kw]);
    #[allow(clippy::too_many_arguments, reason = "a convolution's geometry and zero points, as the reference computes it")]
    fn run<T: Acc>(x: &[T], w: &[T], bias: &[T], [n, ic, oc]: [usize; 3], input: [usize; 3], outs: [usize; 3], kernel: [usize; 3], a: &Conv3dAttrs, xz: T, wz: T) -> Vec<T> {
        let at = |axis: usize, o: usize, k: usize| window_input(o, k, a.stride[axis], a.dilation[axis], a.pad[2 * axis], input[axis]);
        let [id, ih, iw] = input;
        let [kd, kh, kw] = kernel;
        let mut out = Vec::with_capacity(n * outs.iter().product::<usize>() * oc);
        for b in 0..n {
            for oz in 0..outs[0] {
                for oy in 0..outs[1] {
                    for ox in 0..outs[2] {
                        for o in 0..oc {
                            let mut acc = T::default();
                            for ky in 0..kh {
                                let Some(y) = at(1, oy, ky) else { continue };
                                for kx in 0..kw {
                                    let Some(xx) = at(2, ox, kx) else { continue };
                                    for kz in 0..kd {
                                        let Some(z) = at(0, oz, kz) else { continue };
                                        let base = (((b * id + z) * ih + y) * iw + xx) * ic;
                                        let wbase = (((o * kd + kz) * kh + ky) * kw + kx) * ic;
                                        for c in 0..ic {
                                            acc = acc + (x[base + c] - xz) * (w[wbase + c] - wz);
                                        }
                                    }
                                }
                            }
                            out.push(acc + if bias.len() == 1 { bias[0] } else { bias[o] });
                        }
                    }
                }
            }
        }
        out
    }
    let dims = [n, ic, oc];
    contraction!([x, w, bias], out, run(&x, &w, &bias, dims, input, outs, kernel, a, Acc::from_i64(x_zp), Acc::from_i64(w_zp)))
}

fn transpose_conv2d(x: &Tensor, w: &Tensor, bias: &Tensor, x_zp: i64, w_zp: i64, a: &TransposeConvAttrs, out: &TensorType) -> EvalResult<Tensor> {
    let (&[n, ih, iw, ic], &[oh, ow, oc]) = (x.shape(), &out.shape[1..]) else { return err("convolution input must be NHWC") };
    let g = ConvGeom { n, ih, iw, ic, oh, ow, oc, kh: w.shape()[1], kw: w.shape()[2] };
    fn run<T: Acc>(x: &[T], w: &[T], bias: &[T], g: &ConvGeom, a: &TransposeConvAttrs, xz: T, wz: T) -> Vec<T> {
        let mut acc = vec![T::default(); g.n * g.oh * g.ow * g.oc];
        for b in 0..g.n {
            for iy in 0..g.ih {
                for ix in 0..g.iw {
                    for ky in 0..g.kh {
                        let oy = (iy * a.stride[0] + ky) as isize + a.out_pad[0] as isize;
                        for kx in 0..g.kw {
                            let ox = (ix * a.stride[1] + kx) as isize + a.out_pad[2] as isize;
                            if oy < 0 || oy >= g.oh as isize || ox < 0 || ox >= g.ow as isize {
                                continue;
                            }
                            for o in 0..g.oc {
                                let mut s = T::default();
                                for c in 0..g.ic {
                                    s = s + (x[((b * g.ih + iy) * g.iw + ix) * g.ic + c] - xz) * (w[((o * g.kh + ky) * g.kw + kx) * g.ic + c] - wz);
                                }
                                let at = ((b * g.oh + oy as usize) * g.ow + ox as usize) * g.oc + o;
                                acc[at] = acc[at] + s;
                            }
                        }
                    }
                }
            }
        }
        for (i, v) in acc.iter_mut().enumerate() {
            let o = i % g.oc;
            *v = *v + if bias.len() == 1 { bias[0] } else { bias[o] };
        }
        acc
    }
    contraction!([x, w, bias], out, run(&x, &w, &bias, &g, a, Acc::from_i64(x_zp), Acc::from_i64(w_zp)))
}


/// TOSA's `reciprocal_scale(count)`: `(multiplier, shift)` with `multiplier / 2^shift ≈ 1 /
/// count`, `k = 32 − clz(count − 1)`, `multiplier = ((2^30 + 1) << k) / count`, `shift = 30 + k`.
pub fn reciprocal_scale(count: i64) -> (i64, i64) {
    let k = 64 - ((count - 1) as u64).leading_zeros() as i64;
    ((((1i64 << 30) + 1) << k) / count, 30 + k)
}

/// The integer `avg_pool2d` result of a window sum `acc` (of `value − input_zp`) over `count`
/// pixels: `apply_scale_32(acc, multiplier, shift)` (round half up), plus the output zero
/// point, clipped to `d`.
pub fn int_average(acc: i64, count: i64, out_zp: i64, d: DType) -> i64 {
    let (m, s) = reciprocal_scale(count.max(1));
    let (lo, hi) = d.int_range();
    (((acc * m + (1 << (s - 1))) >> s) + out_zp).clamp(lo, hi)
}

/// Calls `f` once per output element of a pooling, in output order, with the input indices its
/// window covers in window order (taps in the padding skipped).
fn pool_windows(p: &PoolAttrs, [n, ih, iw, c, oh, ow]: [usize; 6], mut f: impl FnMut(&[usize])) {
    let mut taps = Vec::with_capacity(p.kernel[0] * p.kernel[1]);
    for b in 0..n {
        for oy in 0..oh {
            for ox in 0..ow {
                for ch in 0..c {
                    taps.clear();
                    for ky in 0..p.kernel[0] {
                        let y = (oy * p.stride[0] + ky) as isize - p.pad[0] as isize;
                        for kx in 0..p.kernel[1] {
                            let xx = (ox * p.stride[1] + kx) as isize - p.pad[2] as isize;
                            if y >= 0 && y < ih as isize && xx >= 0 && xx < iw as isize {
                                taps.push(((b * ih + y as usize) * iw + xx as usize) * c + ch);
                            }
                        }
                    }
                    f(&taps);
                }
            }
        }
    }
}

/// Pooling: floats sum (or take the TOSA maximum) in window order and divide by the count of
/// real pixels; integers follow TOSA 1.0: max from the type's minimum, average of
/// `value − input_zp` through [`int_average`].
fn pool(x: &Tensor, p: &PoolAttrs, out: &TensorType, avg: bool, (in_zp, out_zp): (i64, i64)) -> EvalResult<Tensor> {
    let (&[n, ih, iw, c], &[oh, ow, _]) = (x.shape(), &out.shape[1..]) else { return err("pooling input must be NHWC") };
    let dims = [n, ih, iw, c, oh, ow];
    fn run<T: Real>(x: &[T], p: &PoolAttrs, dims: [usize; 6], avg: bool) -> Vec<T> {
        let mut out = Vec::new();
        pool_windows(p, dims, |taps| {
            let acc = taps.iter().fold(if avg { T::zero() } else { T::neg_infinity() }, |a, &i| if avg { a + x[i] } else { fmax(a, x[i]) });
            out.push(if avg { acc / T::from_f64(taps.len().max(1) as f64) } else { acc });
        });
        out
    }
    let num = match widen(x) {
        Num::F32(v) => Num::F32(run(&v, p, dims, avg)),
        Num::F64(v) => Num::F64(run(&v, p, dims, avg)),
        Num::Int(v) => {
            let mut res = Vec::new();
            pool_windows(p, dims, |taps| {
                res.push(if avg {
                    int_average(taps.iter().map(|&i| v[i] - in_zp).sum(), taps.len() as i64, out_zp, out.dtype)
                } else {
                    taps.iter().map(|&i| v[i]).fold(out.dtype.int_range().0, i64::max)
                })
            });
            Num::Int(res)
        }
        Num::Bool(_) => return err("pooling is not defined on i1"),
    };
    Ok(narrow(num, out))
}

// ---------------------------------------------------------------------------------------------
// Data movement
// ---------------------------------------------------------------------------------------------

fn reshape(x: &Tensor, out: &TensorType) -> EvalResult<Tensor> {
    x.reshaped(out.shape.clone()).map_err(|e| EvalError(e.to_string()))
}

fn transpose(x: &Tensor, perms: &[usize], out: &TensorType) -> EvalResult<Tensor> {
    let st = strides(x.shape());
    if perms.len() != st.len() {
        return err("tosa.transpose: perms and rank differ");
    }
    let mut map = Vec::with_capacity(out.num_elements());
    for_each_coord(&out.shape, |c| map.push(c.iter().zip(perms).map(|(&i, &p)| i * st[p]).sum()));
    Ok(moved(x, &map, out))
}

fn reverse(x: &Tensor, axis: usize) -> EvalResult<Tensor> {
    let shape = x.shape();
    if axis >= shape.len() {
        return err(format!("tosa.reverse: axis {axis} is out of range for rank {}", shape.len()));
    }
    let st = strides(shape);
    let mut map = Vec::with_capacity(x.len());
    for_each_coord(shape, |c| {
        map.push(c.iter().enumerate().map(|(d, &i)| if d == axis { shape[d] - 1 - i } else { i } * st[d]).sum())
    });
    Ok(moved(x, &map, &x.ty()))
}

/// One value of `tosa.rescale` (TOSA 1.0): `x − input_zp` (both zero-extended when the input
/// is unsigned), `apply_scale_32` with multiplier `m` and shift `s` (round half up; with
/// double rounding and `s > 31` a first rounding at bit 30), truncated to i32, plus the output
/// zero point, clipped to the output type (its unsigned range when the output is unsigned).
/// The specification requires `2 <= s <= 62`; f16c clamps other shifts into that range, in
/// every backend. Products wrap in i64, as in every backend.
pub fn rescale_value(x: i64, m: i64, s: i64, (in_zp, out_zp): (i64, i64), r: &RescaleAttrs, din: DType, dout: DType) -> i64 {
    let v = if r.input_unsigned { unsigned_bits(x, din) as i64 } else { x } - rescale_input_zp(r, din, in_zp);
    let s = s.clamp(2, 62);
    let mut round = 1i64 << (s - 1);
    if r.rounding == Rounding::Double && s > 31 {
        round += if v >= 0 { 1 << 30 } else { -(1 << 30) };
    }
    let scaled = (v.wrapping_mul(m).wrapping_add(round) >> s) as i32 as i64;
    let (lo, hi, zp) = rescale_output(r, dout, out_zp);
    (scaled + zp).clamp(lo, hi)
}

/// The input zero point of a rescale as subtracted: zero-extended for an unsigned input.
pub fn rescale_input_zp(r: &RescaleAttrs, din: DType, in_zp: i64) -> i64 {
    if r.input_unsigned { unsigned_bits(in_zp, din) as i64 } else { in_zp }
}

/// The clip range and output zero point of a rescale: `(lo, hi, zp)`, unsigned ones for an
/// unsigned output.
pub fn rescale_output(r: &RescaleAttrs, dout: DType, out_zp: i64) -> (i64, i64, i64) {
    if r.output_unsigned {
        (0, unsigned_bits(-1, dout) as i64, unsigned_bits(out_zp, dout) as i64)
    } else {
        let (lo, hi) = dout.int_range();
        (lo, hi, out_zp)
    }
}

fn rescale(x: &Tensor, m: &Tensor, s: &Tensor, zps: (i64, i64), r: &RescaleAttrs, out: &TensorType) -> EvalResult<Tensor> {
    let (xs, ms, ss) = (x.to_i64_vec(), m.to_i64_vec(), s.to_i64_vec());
    let c = if r.per_channel { x.shape().last().copied().unwrap_or(1) } else { 1 };
    if ms.len() != c || ss.len() != c || x.dtype().is_float() {
        return err("tosa.rescale: needs integer data and one multiplier and shift per channel (or one)");
    }
    let v = xs.iter().enumerate().map(|(i, &e)| rescale_value(e, ms[i % c], ss[i % c], zps, r, x.dtype(), out.dtype)).collect();
    Ok(narrow(Num::Int(v), out))
}

/// `tosa.table`: on i8 `table[x + 128]`; on i16 TOSA's `apply_lookup_s` into 513 entries,
/// interpolated, with an i32 result: [`table_i16`].
fn table(x: &Tensor, table: &Tensor, out: &TensorType) -> EvalResult<Tensor> {
    match (x.data(), table.data()) {
        (Data::I8(v), _) if table.len() == 256 => {
            let map: Vec<usize> = v.iter().map(|&e| (e as i16 + 128) as usize).collect();
            Ok(moved(table, &map, out))
        }
        (Data::I16(v), Data::I16(t)) if t.len() == 513 => {
            let r = v.iter().map(|&e| table_i16(t, e) as i64).collect();
            Tensor::new(out.shape.clone(), Data::from_i64(r, out.dtype)).map_err(|e| EvalError(e.to_string()))
        }
        _ => err("tosa.table: needs an i8 input and 256 entries, or an i16 input and 513"),
    }
}

/// TOSA 1.0 `apply_lookup_s` for an i16 value: entry `(x + 32768) >> 7` and the next,
/// interpolated by the low 7 bits, `(base << 7) + (next − base) · fraction`. The specification
/// requires the slope to fit i16; f16c computes it in i32 whatever it is (wrapping), as every
/// backend does.
pub fn table_i16(table: &[i16], x: i16) -> i32 {
    let index = ((x as i32 + 32768) >> 7) as usize;
    let fraction = x as i32 & 0x7f;
    let (base, next) = (table[index] as i32, table[index + 1] as i32);
    (base << 7).wrapping_add((next - base).wrapping_mul(fraction))
}

/// The scale and offset of a `tosa.resize` (the border only decides the output size).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ResizeParams {
    /// `[y_n, y_d, x_n, x_d]`.
    pub scale: [i64; 4],
    /// `[y, x]`.
    pub offset: [i64; 2],
}

/// Where output coordinate `o` of a resize reads along one axis: the two neighbouring input
/// coordinates and the remainder `r` (the interpolation weight is `r / scale_n`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ResizeTap {
    /// `max(floor(y / n), 0)`.
    pub i0: usize,
    /// `min(floor(y / n) + 1, len - 1)`.
    pub i1: usize,
    /// `y - floor(y / n) · n`, in `0..n`.
    pub r: i64,
}

impl ResizeParams {
    /// From the scale and offset operands.
    pub fn new(scale: &[i64], offset: &[i64]) -> EvalResult<Self> {
        match (<[i64; 4]>::try_from(scale), <[i64; 2]>::try_from(offset)) {
            (Ok(scale), Ok(offset)) if scale[0] > 0 && scale[2] > 0 => Ok(ResizeParams { scale, offset }),
            _ => err("tosa.resize: needs a positive scale of 4 values and an offset of 2"),
        }
    }

    /// The TOSA 1.0 pseudo-code's `iy0, iy1, ry` (axis 0) or `ix0, ix1, rx` (axis 1) for output
    /// coordinate `o` of an input axis of `len`. The specification's ranges keep `floor(y/n)`
    /// in `-1..len`; both taps are clamped into the input besides, so that no parameters read
    /// outside it.
    pub fn tap(&self, axis: usize, o: usize, len: usize) -> ResizeTap {
        let (n, d) = (self.scale[2 * axis], self.scale[2 * axis + 1]);
        let y = o as i64 * d + self.offset[axis];
        let i = y.div_euclid(n);
        let last = len as i64 - 1;
        ResizeTap { i0: i.clamp(0, last) as usize, i1: (i + 1).clamp(0, last) as usize, r: y - i * n }
    }

    /// Nearest neighbour: `i1` when `r / n >= 1/2` (`2 r >= n`, exactly), else `i0`.
    pub fn nearest(&self, axis: usize, t: ResizeTap) -> usize {
        if 2 * t.r >= self.scale[2 * axis] { t.i1 } else { t.i0 }
    }

    /// Bilinear weights of the two taps for float data, `(1 - dy, dy)` with `dy = r / n`
    /// computed in f32 (f64 for f64 data).
    fn weights<T: Real>(&self, axis: usize, t: ResizeTap) -> (T, T) {
        let dy = T::from_f64(t.r as f64) / T::from_f64(self.scale[2 * axis] as f64);
        (T::from_f64(1.0) - dy, dy)
    }

    /// [`ResizeParams::weights`] in f32, for code that computes the interpolation itself.
    pub fn weights_f32(&self, axis: usize, t: ResizeTap) -> (f32, f32) {
        self.weights(axis, t)
    }

    /// [`ResizeParams::weights`] in f64.
    pub fn weights_f64(&self, axis: usize, t: ResizeTap) -> (f64, f64) {
        self.weights(axis, t)
    }
}

/// `tosa.resize` as the specification computes it: nearest neighbour copies; bilinear sums
/// `v00·(1−dy)·(1−dx) + v01·(1−dy)·dx + v10·dy·(1−dx) + v11·dy·dx` left to right, for floats in
/// f32 (f64) rounded once, for i8 in integers with the weights `n − r` and `r` (an i32 result
/// scaled by `y_n · x_n`).
fn resize(x: &Tensor, p: &ResizeParams, bilinear: bool, out: &TensorType) -> EvalResult<Tensor> {
    let (&[n, ih, iw, c], &[_, oh, ow, _]) = (x.shape(), &out.shape[..]) else { return err("tosa.resize: the input and result must be NHWC") };
    let at = |b: usize, y: usize, xx: usize, ch: usize| ((b * ih + y) * iw + xx) * c + ch;
    let mut map = Vec::with_capacity(out.num_elements());
    let mut taps = Vec::with_capacity(out.num_elements());
    for b in 0..n {
        for oy in 0..oh {
            let ty = p.tap(0, oy, ih);
            for ox in 0..ow {
                let tx = p.tap(1, ox, iw);
                for ch in 0..c {
                    map.push(at(b, p.nearest(0, ty), p.nearest(1, tx), ch));
                    taps.push((ty, tx, [at(b, ty.i0, tx.i0, ch), at(b, ty.i0, tx.i1, ch), at(b, ty.i1, tx.i0, ch), at(b, ty.i1, tx.i1, ch)]));
                }
            }
        }
    }
    if !bilinear {
        return Ok(moved(x, &map, out));
    }
    fn interpolate<T: Real>(v: &[T], p: &ResizeParams, taps: &[(ResizeTap, ResizeTap, [usize; 4])]) -> Vec<T> {
        taps.iter()
            .map(|&(ty, tx, [a, b, c, d])| {
                let ((y0, y1), (x0, x1)) = (p.weights::<T>(0, ty), p.weights::<T>(1, tx));
                v[a] * y0 * x0 + v[b] * y0 * x1 + v[c] * y1 * x0 + v[d] * y1 * x1
            })
            .collect()
    }
    let num = match widen(x) {
        Num::F32(v) => Num::F32(interpolate(&v, p, &taps)),
        Num::F64(v) => Num::F64(interpolate(&v, p, &taps)),
        Num::Int(v) => Num::Int(
            taps.iter()
                .map(|&(ty, tx, [a, b, c, d])| {
                    let (y0, y1, x0, x1) = (p.scale[0] - ty.r, ty.r, p.scale[2] - tx.r, tx.r);
                    v[a] * y0 * x0 + v[b] * y0 * x1 + v[c] * y1 * x0 + v[d] * y1 * x1
                })
                .collect(),
        ),
        Num::Bool(_) => return err("tosa.resize: bilinear is not defined on i1"),
    };
    Ok(narrow(num, out))
}

fn slice(x: &Tensor, start: &[i64], out: &TensorType) -> EvalResult<Tensor> {
    let st = strides(x.shape());
    if start.len() != st.len() {
        return err("tosa.slice: start and rank differ");
    }
    let mut map = Vec::with_capacity(out.num_elements());
    for_each_coord(&out.shape, |c| map.push(c.iter().zip(start).zip(&st).map(|((&i, &s), &k)| (i + s as usize) * k).sum()));
    Ok(moved(x, &map, out))
}

fn pad(x: &Tensor, padding: &[i64], fill: &Tensor, out: &TensorType) -> EvalResult<Tensor> {
    let st = strides(x.shape());
    if padding.len() != 2 * st.len() || fill.dtype() != x.dtype() {
        return err("tosa.pad: padding must have two entries a dimension and pad_const the input's type");
    }
    let mut map = Vec::with_capacity(out.num_elements());
    for_each_coord(&out.shape, |c| {
        let mut at = Some(0usize);
        for (d, &i) in c.iter().enumerate() {
            let src = i as i64 - padding[2 * d];
            if src < 0 || src >= x.shape()[d] as i64 {
                at = None;
                break;
            }
            at = at.map(|a| a + src as usize * st[d]);
        }
        map.push(at);
    });
    Ok(Tensor::new(out.shape.clone(), x.data().gather_or(&map, fill.data())).expect("map covers the output"))
}

fn concat(parts: &[&Tensor], axis: usize, out: &TensorType) -> EvalResult<Tensor> {
    let datas: Vec<&Data> = parts.iter().map(|t| t.data()).collect();
    let all = Data::concat(&datas);
    let (mut offsets, mut base) = (Vec::new(), 0);
    for t in parts {
        offsets.push(base);
        base += t.len();
    }
    let mut map = Vec::with_capacity(out.num_elements());
    for_each_coord(&out.shape, |c| {
        let mut k = c[axis];
        let mut p = 0;
        while k >= parts[p].shape()[axis] {
            k -= parts[p].shape()[axis];
            p += 1;
        }
        let st = strides(parts[p].shape());
        let idx: usize = c.iter().enumerate().map(|(d, &i)| if d == axis { k } else { i } * st[d]).sum();
        map.push(offsets[p] + idx);
    });
    Ok(Tensor::new(out.shape.clone(), all.gather(&map)).expect("map covers the output"))
}

fn tile(x: &Tensor, out: &TensorType) -> EvalResult<Tensor> {
    let st = strides(x.shape());
    let mut map = Vec::with_capacity(out.num_elements());
    for_each_coord(&out.shape, |c| map.push(c.iter().zip(x.shape()).zip(&st).map(|((&i, &d), &s)| (i % d) * s).sum()));
    Ok(moved(x, &map, out))
}

fn gather(values: &Tensor, indices: &Tensor, out: &TensorType) -> EvalResult<Tensor> {
    let (&[n, k, c], &[_, w]) = (values.shape(), indices.shape()) else { return err("tosa.gather takes [N,K,C] values and [N,W] indices") };
    let idx = indices.to_i64_vec();
    let mut map = Vec::with_capacity(n * w * c);
    for b in 0..n {
        for j in 0..w {
            let i = idx[b * w + j];
            if i < 0 || i as usize >= k {
                return err(format!("tosa.gather: index {i} is out of range [0, {k})"));
            }
            map.extend((0..c).map(|ch| (b * k + i as usize) * c + ch));
        }
    }
    Ok(moved(values, &map, out))
}

/// `tosa.scatter`: the specification requires distinct indices and leaves repeats
/// unpredictable; f16c writes the rows in order, so the last `w` wins, in every backend.
fn scatter(values: &Tensor, indices: &Tensor, input: &Tensor, out: &TensorType) -> EvalResult<Tensor> {
    let (&[n, k, c], &[_, w]) = (values.shape(), indices.shape()) else { return err("tosa.scatter takes [N,K,C] values_in and [N,W] indices") };
    let idx = indices.to_i64_vec();
    // Element j of `values`, or element `len + j` of `input`.
    let mut map: Vec<usize> = (0..n * k * c).collect();
    for b in 0..n {
        for j in 0..w {
            let i = idx[b * w + j];
            if i < 0 || i as usize >= k {
                return err(format!("tosa.scatter: index {i} is out of range [0, {k})"));
            }
            for ch in 0..c {
                map[(b * k + i as usize) * c + ch] = values.len() + (b * w + j) * c + ch;
            }
        }
    }
    let both = Data::concat(&[values.data(), input.data()]);
    Ok(Tensor::new(out.shape.clone(), both.gather(&map)).expect("map covers the output"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f32t(shape: &[usize], v: &[f32]) -> Value {
        Value::Tensor(Tensor::from_f32(shape.to_vec(), v.to_vec()).unwrap())
    }

    fn run(op: Op, operands: &[Value], out: TensorType) -> Tensor {
        let refs: Vec<&Value> = operands.iter().collect();
        match eval(&op, &refs, &ValueType::Tensor(out)).unwrap() {
            Value::Tensor(t) => t,
            Value::Shape(_) | Value::Results(_) => panic!("expected a tensor"),
        }
    }

    #[test]
    fn f16_add_rounds_once_to_nearest_even() {
        // 2049 is not an f16; 2048 + 1 in f32 is 2049, which rounds to 2048 (ties to even).
        let a = Value::Tensor(Tensor::new(vec![1], Data::F16(vec![f16::from_f32(2048.0)])).unwrap());
        let b = Value::Tensor(Tensor::new(vec![1], Data::F16(vec![f16::from_f32(1.0)])).unwrap());
        let t = run(Op::Binary(BinaryOp::Add), &[a, b], TensorType::new(DType::F16, [1]));
        assert_eq!(t.data(), &Data::F16(vec![f16::from_f32(2048.0)]));
    }

    #[test]
    fn bf16_mul_rounds_once_to_nearest_even() {
        // bf16 keeps 8 significant bits: (1 + 2^-7) * 1.5 = 1.5 + 3*2^-8 lies exactly halfway
        // between 1.5 + 2^-7 (odd last bit) and 1.5 + 2^-6 (even): the tie goes to even.
        // Truncation would give 1.5 + 2^-7.
        let a = Value::Tensor(Tensor::new(vec![1], Data::BF16(vec![bf16::from_f32(1.0 + 1.0 / 128.0)])).unwrap());
        let b = Value::Tensor(Tensor::new(vec![1], Data::BF16(vec![bf16::from_f32(1.5)])).unwrap());
        let shift = Value::Tensor(Tensor::new(vec![1], Data::I8(vec![0])).unwrap());
        let t = run(Op::Binary(BinaryOp::Mul), &[a, b, shift], TensorType::new(DType::BF16, [1]));
        assert_eq!(t.data(), &Data::BF16(vec![bf16::from_f32(1.5 + 1.0 / 64.0)]));
    }

    #[test]
    fn f16_overflow_gives_infinity() {
        let a = Value::Tensor(Tensor::new(vec![1], Data::F16(vec![f16::MAX])).unwrap());
        let t = run(Op::Binary(BinaryOp::Add), &[a.clone(), a], TensorType::new(DType::F16, [1]));
        assert_eq!(t.data(), &Data::F16(vec![f16::INFINITY]));
    }

    fn ints(d: DType, v: &[i64]) -> Value {
        let data = match d {
            DType::I8 => Data::I8(v.iter().map(|&x| x as i8).collect()),
            _ => Data::I32(v.iter().map(|&x| x as i32).collect()),
        };
        Value::Tensor(Tensor::new(vec![v.len()], data).unwrap())
    }

    fn int_op(op: BinaryOp, d: DType, a: &[i64], b: &[i64]) -> Vec<i64> {
        let t = run(Op::Binary(op), &[ints(d, a), ints(d, b)], TensorType::new(d, [a.len()]));
        t.to_f64_vec().into_iter().map(|x| x as i64).collect()
    }

    /// The shifts, computed by hand from the TOSA 1.0 pseudo-code: `logical_left_shift`
    /// truncates to the type's width, `logical_right_shift` shifts the type's bits as unsigned,
    /// `arithmetic_right_shift` shifts the sign in and with `round` adds the last bit shifted
    /// out (`(x >> (s - 1)) & 1`, for s > 0). Amounts outside 0..=31 are taken modulo 32.
    #[test]
    fn shifts_follow_the_tosa_specification() {
        let (i8_, i32_) = (DType::I8, DType::I32);
        assert_eq!(int_op(BinaryOp::ShiftLeft, i8_, &[1, 3, -1, 64, 5], &[7, 6, 4, 1, 9]), vec![-128, -64, -16, -128, 0]);
        assert_eq!(int_op(BinaryOp::ShiftLeft, i32_, &[1, 3, -1, 5], &[31, 30, 31, 33]), vec![i32::MIN as i64, i32::MIN as i64 + (1 << 30), i32::MIN as i64, 10]);
        assert_eq!(int_op(BinaryOp::ShiftRightLogical, i8_, &[-128, -1, 100, -2], &[7, 4, 2, 9]), vec![1, 15, 25, 0]);
        assert_eq!(int_op(BinaryOp::ShiftRightLogical, i32_, &[-1, i32::MIN as i64, 7], &[28, 31, -31]), vec![15, 1, 3]);
        let (floor, round) = (BinaryOp::ShiftRightArith { round: false }, BinaryOp::ShiftRightArith { round: true });
        // -7 >> 1: floor(-3.5) = -4, rounded (ties up) -3; 5 >> 1: 2, rounded 3; 6 >> 2: 1 either way
        // (6 = 0b110, bit 1 is 1: rounded 2); no rounding for a zero shift.
        assert_eq!(int_op(floor, i32_, &[-7, 5, 6, 9, i32::MIN as i64], &[1, 1, 2, 0, 31]), vec![-4, 2, 1, 9, -1]);
        assert_eq!(int_op(round, i32_, &[-7, 5, 6, 9, i32::MIN as i64, i32::MAX as i64], &[1, 1, 2, 0, 31, 1]), vec![-3, 3, 2, 9, -1, 1 << 30]);
        assert_eq!(int_op(round, i8_, &[-128, 127, -1, 3], &[7, 7, 1, 1]), vec![-1, 1, 0, 2]);
    }

    /// `intdiv` truncates toward zero; a zero divisor (unpredictable in TOSA) gives 0 and
    /// i32::MIN / -1 wraps, in every backend.
    #[test]
    fn intdiv_truncates_toward_zero() {
        let min = i32::MIN as i64;
        assert_eq!(int_op(BinaryOp::IntDiv, DType::I32, &[7, -7, 7, -7, 5, min], &[2, 2, -2, -2, 0, -1]), vec![3, -3, -3, 3, 0, min]);
    }

    #[test]
    fn clz_counts_leading_zeros_of_the_32_bits() {
        let t = run(Op::Unary(UnaryOp::Clz), &[ints(DType::I32, &[0, 1, -1, 0x0000_8000, i32::MAX as i64])], TensorType::new(DType::I32, [5]));
        assert_eq!(t.to_f64_vec(), vec![32.0, 31.0, 0.0, 16.0, 1.0]);
    }

    #[test]
    fn reverse_flips_one_axis() {
        let x = f32t(&[2, 3], &[1., 2., 3., 4., 5., 6.]);
        let t = run(Op::Reverse { axis: 1 }, std::slice::from_ref(&x), TensorType::new(DType::F32, [2, 3]));
        assert_eq!(t.to_f32_vec(), vec![3., 2., 1., 6., 5., 4.]);
        let t = run(Op::Reverse { axis: 0 }, std::slice::from_ref(&x), TensorType::new(DType::F32, [2, 3]));
        assert_eq!(t.to_f32_vec(), vec![4., 5., 6., 1., 2., 3.]);
        let t = run(Op::Identity, &[x], TensorType::new(DType::F32, [2, 3]));
        assert_eq!(t.to_f32_vec(), vec![1., 2., 3., 4., 5., 6.]);
    }

    /// `tosa.resize` by hand from the TOSA 1.0 pseudo-code: a 2x2 image, scale 2/1 on both
    /// axes (3x3 out). Bilinear halves between neighbours; nearest takes the upper neighbour at
    /// r/n = 1/2; i8 bilinear gives i32 scaled by y_n · x_n = 4.
    #[test]
    fn resize_follows_the_tosa_specification() {
        let scale = Value::Shape(vec![2, 1, 2, 1]);
        let zero2 = Value::Shape(vec![0, 0]);
        let x = Value::Tensor(Tensor::from_f32(vec![1, 2, 2, 1], vec![1., 2., 3., 4.]).unwrap());
        let ops = [x, scale, zero2.clone(), zero2];
        let t = run(Op::Resize { bilinear: true }, &ops, TensorType::new(DType::F32, [1, 3, 3, 1]));
        assert_eq!(t.to_f32_vec(), vec![1., 1.5, 2., 2., 2.5, 3., 3., 3.5, 4.]);
        let t = run(Op::Resize { bilinear: false }, &ops, TensorType::new(DType::F32, [1, 3, 3, 1]));
        assert_eq!(t.to_f32_vec(), vec![1., 2., 2., 3., 4., 4., 3., 4., 4.]);
        let mut ops = ops;
        ops[0] = Value::Tensor(Tensor::new(vec![1, 2, 2, 1], Data::I8(vec![1, 2, 3, 4])).unwrap());
        let t = run(Op::Resize { bilinear: true }, &ops, TensorType::new(DType::I32, [1, 3, 3, 1]));
        assert_eq!(t.data(), &Data::I32(vec![4, 6, 8, 8, 10, 12, 12, 14, 16]));
        // Downscale by 2 (scale 1/2) with offset 1: y = 2 oy + 1, with n = 1 whole rows 1 and 3
        // of a 4-row input ((4 - 1) · 1 − 1 + 0 = 2 = 2 · (2 − 1) rows out).
        let x = Value::Tensor(Tensor::from_f32(vec![1, 4, 1, 1], vec![10., 20., 30., 40.]).unwrap());
        let ops = [x, Value::Shape(vec![1, 2, 1, 1]), Value::Shape(vec![1, 0]), Value::Shape(vec![0, 0])];
        let t = run(Op::Resize { bilinear: true }, &ops, TensorType::new(DType::F32, [1, 2, 1, 1]));
        assert_eq!(t.to_f32_vec(), vec![20., 40.]);
    }

    /// `tosa.table` on i8 reads `table[x + 128]`: -128 the first entry, 127 the last.
    #[test]
    fn table_reads_at_x_plus_128() {
        let table: Vec<i8> = (0..256).map(|i| (255 - i) as u8 as i8).collect();
        let x = Value::Tensor(Tensor::new(vec![4], Data::I8(vec![-128, -1, 0, 127])).unwrap());
        let t = Value::Tensor(Tensor::new(vec![256], Data::I8(table)).unwrap());
        let r = run(Op::Table, &[x, t], TensorType::new(DType::I8, [4]));
        // Entries 0, 127, 128, 255 hold 255, 128, 127, 0 as i8: -1, -128, 127, 0.
        assert_eq!(r.data(), &Data::I8(vec![-1, -128, 127, 0]));
    }

    /// Integer pooling by hand from the TOSA 1.0 pseudo-code: max over the window; average as
    /// `apply_scale_32(Σ(v − in_zp), reciprocal_scale(count))` + out_zp, which rounds 2.5 up to
    /// 3 and 2.25 down to 2 but -2.5 down to -3 (the multiplier is a little above 1/count).
    #[test]
    fn integer_pooling_follows_the_tosa_specification() {
        let attrs = PoolAttrs { kernel: [2, 2], stride: [2, 2], pad: [0, 0, 0, 0], acc: Some(DType::I32) };
        let x = |v: [i8; 4]| Value::Tensor(Tensor::new(vec![1, 2, 2, 1], Data::I8(v.to_vec())).unwrap());
        let zp = |z: i8| Value::Tensor(Tensor::new(vec![1], Data::I8(vec![z])).unwrap());
        let out = TensorType::new(DType::I8, [1, 1, 1, 1]);
        let avg = |v: [i8; 4], zi: i8, zo: i8| run(Op::AvgPool2d(attrs.clone()), &[x(v), zp(zi), zp(zo)], out.clone()).to_f64_vec()[0];
        assert_eq!(avg([1, 2, 3, 4], 0, 0), 3.0);
        assert_eq!(avg([1, 2, 3, 3], 0, 0), 2.0);
        assert_eq!(avg([-1, -2, -3, -4], 0, 0), -3.0);
        // (v − 1) = [0, 1, 2, 3]: 1.5 → 2, then + (−1).
        assert_eq!(avg([1, 2, 3, 4], 1, -1), 1.0);
        // Clipped to i8.
        assert_eq!(avg([120, 120, 120, 120], 0, 100), 127.0);
        assert_eq!(super::reciprocal_scale(1), ((1 << 30) + 1, 30));
        assert_eq!(super::reciprocal_scale(3), ((((1i64 << 30) + 1) << 2) / 3, 32));
        let max = run(Op::MaxPool2d(PoolAttrs { acc: None, ..attrs }), &[x([-128, -3, 5, -7])], out);
        assert_eq!(max.to_f64_vec(), vec![5.0]);
    }

    /// `tosa.rescale` by hand from the TOSA 1.0 pseudo-code: multiplier 2^30 with shift 31
    /// halves (round half up: 5 → 3, −7 → −3); double rounding lifts a product just under one
    /// half at shifts above 31; unsigned input and output reinterpret the bits; per-channel
    /// multipliers and shifts follow the last dimension; the output clips to its type.
    #[test]
    fn rescale_follows_the_tosa_specification() {
        let attrs = RescaleAttrs { scale32: true, rounding: Rounding::Single, per_channel: false, input_unsigned: false, output_unsigned: false };
        let t = |d: DType, v: &[i64]| {
            let data = match d {
                DType::I8 => Data::I8(v.iter().map(|&x| x as i8).collect()),
                _ => Data::I32(v.iter().map(|&x| x as i32).collect()),
            };
            Value::Tensor(Tensor::new(vec![v.len()], data).unwrap())
        };
        let go = |r: RescaleAttrs, x: &[i64], m: &[i64], s: &[i64], zi: i64, zo: i64, dout: DType| {
            let ops = [t(DType::I8, x), t(DType::I32, m), t(DType::I8, s), t(DType::I8, &[zi]), t(dout, &[zo])];
            run(Op::Rescale(r), &ops, TensorType::new(dout, [x.len()])).to_i64_vec()
        };
        let half = 1 << 30;
        assert_eq!(go(attrs, &[5, -7, 4], &[half], &[31], 0, 0, DType::I8), vec![3, -3, 2]);
        assert_eq!(go(attrs, &[5, -7], &[half], &[31], 1, 10, DType::I32), vec![12, 6]);
        // 511 / 2^10 · 127: 63.4 → 63; −1 · 0.499 → −0.499 → 0.
        assert_eq!(go(attrs, &[-1, 127], &[511], &[10], 0, 0, DType::I32), vec![0, 63]);
        // 1 · (511 · 2^22) / 2^32 = 0.499: single rounding gives 0; double rounding (shift 32 >
        // 31) adds 2^30 more to the rounding term and gives 1; INEXACT rounds as single.
        let double = RescaleAttrs { rounding: Rounding::Double, ..attrs };
        let inexact = RescaleAttrs { rounding: Rounding::Inexact, ..attrs };
        assert_eq!(go(attrs, &[1], &[511 << 22], &[32], 0, 0, DType::I32), vec![0]);
        assert_eq!(go(inexact, &[1], &[511 << 22], &[32], 0, 0, DType::I32), vec![0]);
        assert_eq!(go(double, &[1], &[511 << 22], &[32], 0, 0, DType::I32), vec![1]);
        // Unsigned in: -1 is 255; unsigned out: 200 is stored as the bits of 200.
        let unsigned = RescaleAttrs { input_unsigned: true, output_unsigned: true, ..attrs };
        assert_eq!(go(unsigned, &[-1, 100], &[half], &[30], 0, 0, DType::I8), vec![-1, 100]);
        assert_eq!(go(RescaleAttrs { input_unsigned: true, ..attrs }, &[-1], &[half], &[30], 0, 0, DType::I32), vec![255]);
        // Per channel (the last dimension): doubling and halving; clipping to i8.
        let per = RescaleAttrs { per_channel: true, ..attrs };
        assert_eq!(go(per, &[100, 100], &[half, half], &[29, 31], 0, 0, DType::I8), vec![127, 50]);
    }

    /// `tosa.scatter` writes input rows at their indices; a repeated index keeps the last row.
    #[test]
    fn scatter_writes_rows_and_the_last_repeat_wins() {
        let values = f32t(&[1, 4, 2], &[0., 1., 2., 3., 4., 5., 6., 7.]);
        let idx = Value::Tensor(Tensor::new(vec![1, 3], Data::I32(vec![2, 0, 2])).unwrap());
        let input = f32t(&[1, 3, 2], &[10., 11., 20., 21., 30., 31.]);
        let t = run(Op::Scatter, &[values.clone(), idx, input.clone()], TensorType::new(DType::F32, [1, 4, 2]));
        assert_eq!(t.to_f32_vec(), vec![20., 21., 2., 3., 30., 31., 6., 7.]);
        let bad = Value::Tensor(Tensor::new(vec![1, 3], Data::I32(vec![0, 4, 1])).unwrap());
        let refs = [&values, &bad, &input];
        assert!(eval(&Op::Scatter, &refs, &ValueType::Tensor(TensorType::new(DType::F32, [1, 4, 2]))).is_err());
    }

    #[test]
    fn broadcasting_add() {
        let t = run(Op::Binary(BinaryOp::Add), &[f32t(&[2, 1], &[1., 2.]), f32t(&[1, 3], &[10., 20., 30.])], TensorType::new(DType::F32, [2, 3]));
        assert_eq!(t.to_f32_vec(), vec![11., 21., 31., 12., 22., 32.]);
    }

    /// The broadcast index map against its definition: each output coordinate's element of
    /// the input, broadcast dimensions read at 0.
    #[test]
    fn broadcast_maps_by_definition() {
        for (input, out) in [(vec![2, 1, 3], vec![2, 4, 3]), (vec![1, 1], vec![3, 5]), (vec![3, 1], vec![3, 4]), (vec![2, 0], vec![2, 0]), (vec![5], vec![5]), (vec![4, 1, 1, 2], vec![4, 3, 2, 2]), (vec![2, 3], vec![2, 3]), (vec![], vec![])] {
            let st = strides(&input);
            let mut want = Vec::new();
            for_each_coord(&out, |c| want.push(c.iter().zip(&input).zip(&st).map(|((&x, &d), &s)| if d == 1 { 0 } else { x * s }).sum::<usize>()));
            assert_eq!(broadcast_map(&input, &out).unwrap(), want, "{input:?} to {out:?}");
        }
    }

    #[test]
    fn pow_of_negative_base_with_integer_exponent() {
        let t = run(Op::Binary(BinaryOp::Pow), &[f32t(&[1], &[-2.0]), f32t(&[1], &[3.0])], TensorType::new(DType::F32, [1]));
        assert_eq!(t.to_f32_vec(), vec![-8.0]);
    }

    /// TOSA's `apply_max_s`/`apply_min_s`, computed by hand: NaN if either operand is NaN, else
    /// the first of equal values, so zeros keep the first operand's sign.
    #[test]
    fn maximum_and_minimum_follow_the_tosa_specification() {
        let bits = |x: f32| x.to_bits();
        assert_eq!(bits(fmax(-0.0f32, 0.0)), bits(-0.0));
        assert_eq!(bits(fmax(0.0f32, -0.0)), bits(0.0));
        assert_eq!(bits(fmin(-0.0f32, 0.0)), bits(-0.0));
        assert_eq!(bits(fmin(0.0f32, -0.0)), bits(0.0));
        assert!(fmax(f32::NAN, 1.0).is_nan() && fmax(1.0, f32::NAN).is_nan() && fmin(f32::NAN, f32::NEG_INFINITY).is_nan());
        assert_eq!(fmax(f32::NEG_INFINITY, -1.0), -1.0);
        // clamp(-0, 0, 6) = min(max(-0, 0), 6) = -0; a reduction keeps the first zero's sign.
        let t = |v: Vec<f32>| Tensor::from_f32(vec![v.len()], v).unwrap();
        let out = TensorType::new(DType::F32, [4]);
        let c = clamp(&t(vec![-0.0, 0.0, -1.0, 7.0]), 0.0, 6.0, &out);
        assert_eq!(c.to_f32_vec().iter().map(|x| x.to_bits()).collect::<Vec<_>>(), [(-0.0f32).to_bits(), 0, 0, 6.0f32.to_bits()]);
        let r = reduce(ReduceKind::Max, &t(vec![-1.0, -0.0, 0.0, -2.0]), 0, &TensorType::new(DType::F32, [1])).unwrap();
        assert_eq!(r.to_f32_vec()[0].to_bits(), (-0.0f32).to_bits());
    }

    #[test]
    fn matmul_batched() {
        let a = f32t(&[1, 2, 2], &[1., 2., 3., 4.]);
        let b = f32t(&[1, 2, 1], &[5., 6.]);
        let z = f32t(&[1], &[0.]);
        let t = run(Op::MatMul, &[a, b, z.clone(), z], TensorType::new(DType::F32, [1, 2, 1]));
        assert_eq!(t.to_f32_vec(), vec![17., 39.]);
    }

    #[test]
    fn conv2d_with_padding_and_bias() {
        // 1x3x3x1 input of ones, 3x3 kernel of ones, pad 1: corners see 4, edges 6, centre 9.
        let x = f32t(&[1, 3, 3, 1], &[1.; 9]);
        let w = f32t(&[1, 3, 3, 1], &[1.; 9]);
        let bias = f32t(&[1], &[0.5]);
        let z = f32t(&[1], &[0.]);
        let a = ConvAttrs { pad: [1, 1, 1, 1], stride: [1, 1], dilation: [1, 1], acc: DType::F32 };
        let t = run(Op::Conv2d(a), &[x, w, bias, z.clone(), z], TensorType::new(DType::F32, [1, 3, 3, 1]));
        assert_eq!(t.to_f32_vec(), vec![4.5, 6.5, 4.5, 6.5, 9.5, 6.5, 4.5, 6.5, 4.5]);
    }

    #[test]
    fn transpose_and_slice_and_pad() {
        let x = f32t(&[2, 3], &[0., 1., 2., 3., 4., 5.]);
        let t = run(Op::Transpose { perms: vec![1, 0] }, std::slice::from_ref(&x), TensorType::new(DType::F32, [3, 2]));
        assert_eq!(t.to_f32_vec(), vec![0., 3., 1., 4., 2., 5.]);
        let s = run(Op::Slice, &[x.clone(), Value::Shape(vec![0, 1]), Value::Shape(vec![2, 2])], TensorType::new(DType::F32, [2, 2]));
        assert_eq!(s.to_f32_vec(), vec![1., 2., 4., 5.]);
        let p = run(Op::Pad, &[x, Value::Shape(vec![0, 0, 1, 0]), f32t(&[1], &[9.])], TensorType::new(DType::F32, [2, 4]));
        assert_eq!(p.to_f32_vec(), vec![9., 0., 1., 2., 9., 3., 4., 5.]);
    }

    #[test]
    fn cast_float_to_int_rounds_half_to_even_and_saturates() {
        let x = Tensor::from_f32(vec![5], vec![2.5, 3.5, -2.5, 1e10, f32::NAN]).unwrap();
        assert_eq!(cast(&x, DType::I32).to_i64_vec(), vec![2, 4, -2, i32::MAX as i64, 0]);
    }

    #[test]
    fn avg_pool_excludes_padding() {
        let x = f32t(&[1, 2, 2, 1], &[1., 2., 3., 4.]);
        let z = f32t(&[1], &[0.]);
        let p = PoolAttrs { kernel: [2, 2], stride: [2, 2], pad: [1, 1, 1, 1], acc: Some(DType::F32) };
        let t = run(Op::AvgPool2d(p), &[x, z.clone(), z], TensorType::new(DType::F32, [1, 2, 2, 1]));
        assert_eq!(t.to_f32_vec(), vec![1., 2., 3., 4.]);
    }
}
