//! Elementwise ops under the numeric contract (DESIGN.md "Numerics"), in LLVM IR: arguments
//! arrive in their compute domain (f32 for f32/f16/bf16), the op computes there, and the result
//! is rounded once to its type (`fptrunc` + `fpext` for f16 and bf16, which is exact round to
//! nearest even). The same semantics as the Cranelift emitter (`backend/cranelift/emit.rs`) and
//! the reference interpreter; floating-point ops carry no fast-math flags, so LLVM neither
//! reassociates nor contracts `a·b + c` into an FMA.
//!
//! Math functions (exp, log, tanh, erf, pow) go through the target's [`MathImpl`].

use super::math::HalfTable;
use super::{Built, Ir, MathImpl};
use crate::lower::{EwKind, EwOp, Expr};
use f16c_core::abi::Libcall;
use f16c_dialect::{BinaryOp, DType, ReduceKind, UnaryOp};
use inkwell::values::{BasicValueEnum, FloatMathValue, FloatValue, IntValue, VectorValue};
use inkwell::{FloatPredicate, IntPredicate};

/// What decides which values a machine computes on f32 lanes (vectors of domain values): its
/// math and whether it rounds bf16 natively. The emitters ask through [`Ir`]; the CPU
/// backend's plan text asks directly, without a module.
#[derive(Clone, Copy, Debug)]
pub struct LaneRules {
    /// How the machine computes the math functions.
    pub math: MathImpl,
    /// Whether it rounds f32 to bf16 natively.
    pub native_bf16: bool,
}

impl LaneRules {
    /// Whether f32 lanes round to `d` lane by lane ([`Ir::round_to`]): f32, f16, and bf16 on a
    /// CPU (natively, or on the bits in vector integer arithmetic: [`Ir::to_low_lanes`]) or on a
    /// machine with native bf16.
    pub fn rounds(&self, d: DType) -> bool {
        d == DType::F32 || d == DType::F16 || d == DType::BF16 && (self.native_bf16 || self.math == MathImpl::RuntimeTable)
    }

    /// Which ops [`Ir::ew`] computes on f32 lanes: float add, subtract, multiply, maximum,
    /// minimum, clamp, float-to-float casts, negate, abs, reciprocal, rsqrt, floor and ceil,
    /// and on the CPU the contract's exp, tanh, erf and sigmoid ([`Ir::contract_exp`]), on
    /// values of the types that [`LaneRules::rounds`].
    pub fn op(&self, op: &EwOp, arg_types: &[DType]) -> bool {
        let kind = match op.kind {
            EwKind::Binary(b) => matches!(b, BinaryOp::Add | BinaryOp::Sub | BinaryOp::Mul | BinaryOp::Maximum | BinaryOp::Minimum),
            EwKind::Clamp { .. } | EwKind::Cast => true,
            EwKind::Unary(u) => match u {
                UnaryOp::Negate | UnaryOp::Abs | UnaryOp::Reciprocal | UnaryOp::Rsqrt | UnaryOp::Floor | UnaryOp::Ceil => true,
                UnaryOp::Exp | UnaryOp::Tanh | UnaryOp::Erf | UnaryOp::Sigmoid => self.math == MathImpl::RuntimeTable,
                _ => false,
            },
            _ => false,
        };
        kind && self.rounds(op.dtype) && arg_types.iter().all(|&d| self.rounds(d))
    }

    /// A float type stored as f32, f16 or bf16 that lanes round to.
    pub fn stored(&self, d: DType) -> bool {
        matches!(d, DType::F32 | DType::F16 | DType::BF16) && self.rounds(d)
    }

    /// Whether every value of an elementwise kernel lies in f32 lanes: float inputs stored as
    /// f32, f16 or bf16 and ops of [`LaneRules::op`] ([`Ir::elementwise_row`]'s vectors).
    pub fn elementwise(&self, e: &crate::lower::Elementwise) -> bool {
        e.inputs.iter().all(|i| self.stored(i.dtype)) && self.stored(e.expr.result_dtype()) && e.expr.ops.iter().all(|op| self.op(op, &e.expr.arg_types(op)))
    }

    /// Whether a reduction runs as [`Ir::reduction_lanes`] with vectors of `lanes`: a float sum,
    /// product, maximum or minimum of f32, f16 or bf16 values along an axis with at least
    /// `lanes` contiguous outputs beside each other (`inner`), e.g. a global average pool's
    /// sums over the rows and columns of an NHWC image.
    pub fn reduction(&self, r: &crate::lower::Reduction, lanes: usize) -> bool {
        let kind = r.kind.is_some_and(|k| matches!(k, ReduceKind::Sum | ReduceKind::Prod | ReduceKind::Max | ReduceKind::Min));
        lanes > 1 && kind && self.stored(r.input.ty.dtype) && self.stored(r.output.ty.dtype) && r.inner >= lanes
    }
}

/// Is `d` computed in f32 (f32, f16, bf16)?
fn in_f32(d: DType) -> bool {
    matches!(d, DType::F32 | DType::F16 | DType::BF16)
}

impl<'ctx> Ir<'ctx> {
    /// Evaluates a fused expression on its input values (domain values); returns the last
    /// op's value (the input when there are no ops).
    pub fn eval(&mut self, expr: &Expr, inputs: Vec<BasicValueEnum<'ctx>>) -> Result<BasicValueEnum<'ctx>, String> {
        let mut values = inputs;
        for op in &expr.ops {
            let args: Vec<BasicValueEnum> = op.args.iter().map(|&a| values[a]).collect();
            let types = expr.arg_types(op);
            let v = self.ew_of(op, &args, &types, expr.holds_half(op.args[0]))?;
            values.push(v);
        }
        Ok(*values.last().expect("an expression has at least one value"))
    }

    /// One elementwise op: computes in the domain of its (data) argument type, then rounds to
    /// `op.dtype`.
    pub fn ew(&mut self, op: &EwOp, args: &[BasicValueEnum<'ctx>], arg_types: &[DType]) -> Result<BasicValueEnum<'ctx>, String> {
        if let Some(BasicValueEnum::VectorValue(_)) = args.first() {
            let lanes: Vec<VectorValue> = args.iter().map(|a| a.into_vector_value()).collect();
            return self.ew_lanes(op, &lanes, arg_types);
        }
        let d = arg_types.first().copied().unwrap_or(op.dtype);
        let r = match op.kind {
            EwKind::Cast => self.convert(d, op.dtype, args[0])?,
            EwKind::Select => self.select(args[0].into_int_value(), args[1], args[2]),
            EwKind::Clamp { min, max } => self.clamp(d, args[0], min, max),
            EwKind::Unary(u) => self.unary(u, d, args[0], op.zp)?,
            EwKind::Binary(b) => self.binary(b, d, args[0], args[1], op.shift)?,
            EwKind::Rescale(r) => self.rescale(&r, d, op.dtype, args, op.zp).into(),
        };
        Ok(self.round_to(op.dtype, r))
    }

    /// [`Ir::ew`], where `held` is the 16-bit float type the op's first argument holds values
    /// of ([`Expr::holds_half`], [`crate::lower::Rows::holds_half`]): on a CPU, whose math is
    /// the contract's, an f32 `erf` of bf16 or fp16 values, or `exp` or `sigmoid` of bf16 ones,
    /// or a bf16 `sigmoid`, is looked up ([`Ir::lookup_half`]). (The `exp` of fp16 values, a softmax's, measured slower looked
    /// up than computed: ViT-S/16's fp16 softmaxes 4.3–4.6 → 4.7–5.3 ms, each value converted
    /// to its fp16 bits first.)
    pub fn ew_of(&mut self, op: &EwOp, args: &[BasicValueEnum<'ctx>], arg_types: &[DType], held: Option<DType>) -> Result<BasicValueEnum<'ctx>, String> {
        let table = match (HalfTable::of(op), held) {
            _ if self.math != MathImpl::RuntimeTable => None,
            (Some(f), Some(t)) if arg_types == [DType::F32] && (t == DType::BF16 || f == HalfTable::Erf) => Some((f, t)),
            // A sigmoid in bf16 (a SiLU's): its argument is a bf16 value. (In fp16, looked up
            // measured no faster than computed: EfficientNet-B0 fp16 13.67 → 13.73 ms, its
            // epilogues bound by the fp16 roundings around the sigmoid.)
            (Some(HalfTable::Sigmoid), Some(DType::BF16)) if arg_types == [DType::BF16] => Some((HalfTable::Sigmoid, DType::BF16)),
            _ => None,
        };
        match table {
            Some((f, t)) => {
                let r = self.lookup_half(f, t, args[0]);
                Ok(self.round_to(op.dtype, r))
            }
            None => self.ew(op, args, arg_types),
        }
    }

    /// Which ops [`Ir::ew`] computes on f32 lanes ([`LaneRules::op`]).
    pub fn ew_in_lanes(&self, op: &EwOp, arg_types: &[DType]) -> bool {
        self.lane_rules().op(op, arg_types)
    }

    /// Whether f32 lanes round to `d` lane by lane ([`LaneRules::rounds`]).
    pub fn rounds_lanes(&self, d: DType) -> bool {
        self.lane_rules().rounds(d)
    }

    /// This module's [`LaneRules`].
    pub fn lane_rules(&self) -> LaneRules {
        LaneRules { math: self.math, native_bf16: self.native_bf16 }
    }

    /// [`Ir::ew`] on f32 lanes, for the ops of [`Ir::ew_in_lanes`]: each lane computes what
    /// the scalar op computes.
    fn ew_lanes(&mut self, op: &EwOp, args: &[VectorValue<'ctx>], arg_types: &[DType]) -> Result<BasicValueEnum<'ctx>, String> {
        let (x, b) = (args[0], &self.b);
        let r: BasicValueEnum = match op.kind {
            // Float to float: the domain value is the same; the rounding below does the rest.
            EwKind::Cast => x.into(),
            EwKind::Binary(BinaryOp::Add) => b.build_float_add(x, args[1], "").built().into(),
            EwKind::Binary(BinaryOp::Sub) => b.build_float_sub(x, args[1], "").built().into(),
            EwKind::Binary(BinaryOp::Mul) => b.build_float_mul(x, args[1], "").built().into(),
            EwKind::Clamp { .. } | EwKind::Binary(BinaryOp::Maximum | BinaryOp::Minimum) => return Ok(self.select_lanes(op, args, arg_types).into()),
            EwKind::Unary(UnaryOp::Negate) => b.build_float_neg(x, "").built().into(),
            EwKind::Unary(UnaryOp::Abs) => self.lane_intr("fabs", &[x.into()]),
            EwKind::Unary(UnaryOp::Floor) => self.lane_intr("floor", &[x.into()]),
            EwKind::Unary(UnaryOp::Ceil) => self.lane_intr("ceil", &[x.into()]),
            EwKind::Unary(UnaryOp::Reciprocal) => b.build_float_div(self.splat(x.get_type(), self.f32(1.0)), x, "").built().into(),
            EwKind::Unary(UnaryOp::Rsqrt) => {
                let s = self.lane_intr("sqrt", &[x.into()]).into_vector_value();
                b.build_float_div(self.splat(x.get_type(), self.f32(1.0)), s, "").built().into()
            }
            EwKind::Unary(UnaryOp::Exp) if self.math == MathImpl::RuntimeTable => self.contract_exp(x.into()),
            EwKind::Unary(UnaryOp::Tanh) if self.math == MathImpl::RuntimeTable => self.contract_tanh(x.into()),
            EwKind::Unary(UnaryOp::Erf) if self.math == MathImpl::RuntimeTable => self.contract_erf(x.into()),
            EwKind::Unary(UnaryOp::Sigmoid) if self.math == MathImpl::RuntimeTable => self.contract_sigmoid(x.into()),
            _ => return Err(format!("{:?} is not computed on vectors", op.kind)),
        };
        Ok(self.round_to(op.dtype, r))
    }

    /// Maximum, minimum and clamp on f32 lanes. Of f16 values to f16, they compare and select
    /// in `half` lanes (eight per NEON register, no f32 round trips): the result is one of the
    /// arguments or NaN, so comparing the exact f16 values gives the same bits. A clamp bound
    /// f16 does not hold is rounded to f16 first (to ±inf past its range): rounding is
    /// monotonic, so of an f16 `x` the f32 clamp rounded equals the clamp to the rounded
    /// bounds, except for the sign of a zero when the bound rounds to zero (such bounds keep
    /// the f32 compare). Of bf16 values to bf16 the same holds: they compare in f32 lanes to
    /// the rounded bounds and skip the rounding after (bf16 rounds on the bits on a CPU: ten
    /// instructions a vector, a ReLU's clamp in every bf16 convolution's finish).
    fn select_lanes(&mut self, op: &EwOp, args: &[VectorValue<'ctx>], arg_types: &[DType]) -> VectorValue<'ctx> {
        let low = op.dtype;
        let round = |v: f64| -> f64 {
            match low {
                DType::F16 => half::f16::from_f32(v as f32).to_f64(),
                DType::BF16 => half::bf16::from_f32(v as f32).to_f64(),
                _ => v as f32 as f64,
            }
        };
        let usable = |v: f64| {
            let (v, r) = (v as f32 as f64, round(v));
            v.is_nan() || r == v || r != 0.0
        };
        let bounds_ok = match op.kind {
            EwKind::Clamp { min, max } => usable(min) && usable(max),
            _ => true,
        };
        let exact = bounds_ok && matches!(low, DType::F16 | DType::BF16) && arg_types.iter().all(|&d| d == low);
        let in_f16 = exact && low == DType::F16;
        let wide = args[0].get_type();
        let ty = if in_f16 { self.cx.f16_type().vec_type(wide.get_size()) } else { wide };
        let narrow = |ir: &Self, v: VectorValue<'ctx>| if in_f16 { ir.b.build_float_trunc(v, ty, "").built() } else { v };
        let splat = |ir: &Self, v: f64| {
            let v = if exact { round(v) } else { v as f32 as f64 };
            ir.splat(ty, ty.get_element_type().into_float_type().const_float(v))
        };
        let nan = splat(self, f64::NAN);
        let x = narrow(self, args[0]);
        let r = match op.kind {
            EwKind::Clamp { min, max } => {
                let y = self.tosa_select_any(FloatPredicate::OGE, x, splat(self, min), nan).into_vector_value();
                self.tosa_select_any(FloatPredicate::OLE, y, splat(self, max), nan)
            }
            EwKind::Binary(BinaryOp::Maximum) => self.tosa_select_any(FloatPredicate::OGE, x, narrow(self, args[1]), nan),
            _ => self.tosa_select_any(FloatPredicate::OLE, x, narrow(self, args[1]), nan),
        }
        .into_vector_value();
        if in_f16 {
            self.b.build_float_ext(r, wide, "").built()
        } else if exact {
            r
        } else {
            self.round_to(op.dtype, r.into()).into_vector_value()
        }
    }

    /// Rounds a domain value to `d` (f16/bf16: to nearest even; i8/i32: wraps). f32 lanes round
    /// lane by lane (f16, or bf16 on a machine with native bf16).
    pub fn round_to(&mut self, d: DType, v: BasicValueEnum<'ctx>) -> BasicValueEnum<'ctx> {
        if let (BasicValueEnum::VectorValue(x), true) = (v, d.is_low_float()) {
            if d == DType::BF16 {
                return self.round_bf16_in_f32(v);
            }
            let n = self.to_low_lanes(x, d);
            return self.b.build_float_ext(n, x.get_type(), "").built().into();
        }
        match d {
            DType::F16 | DType::BF16 => {
                let f = v.into_float_value();
                if d == DType::BF16 && f.get_type() == self.cx.f32_type() {
                    return self.round_bf16_in_f32(v);
                }
                let n = self.to_low(f, d).expect("an f32 value rounds without a libcall");
                self.b.build_float_ext(n, f.get_type(), "").built().into()
            }
            DType::I8 | DType::I16 | DType::I32 => {
                let n = self.b.build_int_truncate(v.into_int_value(), self.storage(d).into_int_type(), "").built();
                self.b.build_int_s_extend(n, self.cx.i64_type(), "").built().into()
            }
            DType::I48 => {
                let high = self.b.build_left_shift(v.into_int_value(), self.i64(16), "").built();
                self.b.build_right_shift(high, self.i64(16), true, "").built().into()
            }
            _ => v,
        }
    }

    /// TOSA's maximum: NaN if either is NaN, else `a >= b ? a : b` (of equal values the first,
    /// so the sign of a zero result is `a`'s; LLVM's `maximum` would rank −0 below +0).
    pub fn fmax(&self, a: FloatValue<'ctx>, b: FloatValue<'ctx>) -> FloatValue<'ctx> {
        self.tosa_select(FloatPredicate::OGE, a, b)
    }

    /// TOSA's minimum: NaN if either is NaN, else `a <= b ? a : b`.
    pub fn fmin(&self, a: FloatValue<'ctx>, b: FloatValue<'ctx>) -> FloatValue<'ctx> {
        self.tosa_select(FloatPredicate::OLE, a, b)
    }

    /// `a` where `a <pred> b` holds, else `b`, and NaN when either is NaN.
    fn tosa_select(&self, pred: FloatPredicate, a: FloatValue<'ctx>, b: FloatValue<'ctx>) -> FloatValue<'ctx> {
        self.tosa_select_any(pred, a, b, self.fconst(a, f64::NAN)).into_float_value()
    }

    /// [`Ir::tosa_select`] on floats or on float vectors lane by lane (`nan` of their type).
    pub(super) fn tosa_select_any<T: FloatMathValue<'ctx> + Copy>(&self, pred: FloatPredicate, a: T, b: T, nan: T) -> BasicValueEnum<'ctx> {
        let keep = self.b.build_float_compare(pred, a, b, "").built();
        let r = self.b.build_select(keep, a, b, "").built();
        let unordered = self.b.build_float_compare(FloatPredicate::UNO, a, b, "").built();
        self.b.build_select(unordered, nan.as_basic_value_enum(), r, "").built()
    }

    /// A float constant of `f`'s type.
    fn fconst(&self, like: FloatValue<'ctx>, v: f64) -> FloatValue<'ctx> {
        like.get_type().const_float(v)
    }

    fn clamp(&self, d: DType, x: BasicValueEnum<'ctx>, min: f64, max: f64) -> BasicValueEnum<'ctx> {
        if d.is_float() {
            let x = x.into_float_value();
            let (lo, hi) = if d == DType::F64 { (min, max) } else { (min as f32 as f64, max as f32 as f64) };
            let y = self.fmax(x, self.fconst(x, lo));
            self.fmin(y, self.fconst(x, hi)).into()
        } else if d == DType::I1 {
            x
        } else {
            let y = self.smax(x.into_int_value(), self.i64(min as i64));
            self.smin(y, self.i64(max as i64)).into()
        }
    }

    fn unary(&mut self, u: UnaryOp, d: DType, x: BasicValueEnum<'ctx>, (in_zp, out_zp): (i64, i64)) -> Result<BasicValueEnum<'ctx>, String> {
        if d.is_int() {
            let x = x.into_int_value();
            return match u {
                UnaryOp::Negate => Ok(self.sub(self.i64(out_zp), self.addi(x, -in_zp)).into()),
                UnaryOp::Abs => {
                    let neg = self.sub(self.i64(0), x);
                    Ok(self.smax(x, neg).into())
                }
                UnaryOp::BitwiseNot => Ok(self.b.build_not(x, "").built().into()),
                UnaryOp::Clz => {
                    let u = self.low_bits(x, d);
                    let i64t = self.cx.i64_type();
                    let c = self.intrinsic("llvm.ctlz.i64", i64t.into(), &[u.into(), self.cx.bool_type().const_zero().into()]);
                    Ok(self.addi(c.into_int_value(), d.bit_width() as i64 - 64).into())
                }
                _ => Err(format!("{} is not defined on integers", f16c_dialect::Op::Unary(u).mlir_name())),
            };
        }
        if d == DType::I1 {
            // An LLVM i1: not flips it.
            return match u {
                UnaryOp::LogicalNot => Ok(self.b.build_not(x.into_int_value(), "").built().into()),
                _ => Err("elementwise arithmetic is not defined on i1".into()),
            };
        }
        if u.is_integer_only() || u.is_logical() {
            return Err(format!("{} is not defined on floats", f16c_dialect::Op::Unary(u).mlir_name()));
        }
        let x = x.into_float_value();
        let f64_ = d == DType::F64;
        let lc = |a: Libcall, b: Libcall| if f64_ { b } else { a };
        let one = self.fconst(x, 1.0);
        Ok(match u {
            UnaryOp::Negate => self.b.build_float_neg(x, "").built(),
            UnaryOp::Abs => self.fintr("fabs", &[x]),
            UnaryOp::Exp => self.math(lc(Libcall::ExpF32, Libcall::ExpF64), &[x])?,
            UnaryOp::Log => self.math(lc(Libcall::LogF32, Libcall::LogF64), &[x])?,
            UnaryOp::Tanh => self.math(lc(Libcall::TanhF32, Libcall::TanhF64), &[x])?,
            UnaryOp::Erf => self.math(lc(Libcall::ErfF32, Libcall::ErfF64), &[x])?,
            UnaryOp::Sin => self.math(lc(Libcall::SinF32, Libcall::SinF64), &[x])?,
            UnaryOp::BitwiseNot | UnaryOp::LogicalNot | UnaryOp::Clz => unreachable!("refused on floats above"),
            UnaryOp::Ceil => self.fintr("ceil", &[x]),
            UnaryOp::Floor => self.fintr("floor", &[x]),
            UnaryOp::Cos => self.math(lc(Libcall::CosF32, Libcall::CosF64), &[x])?,
            UnaryOp::Rsqrt => {
                let s = self.fintr("sqrt", &[x]);
                self.b.build_float_div(one, s, "").built()
            }
            UnaryOp::Reciprocal => self.b.build_float_div(one, x, "").built(),
            UnaryOp::Sigmoid => {
                let n = self.b.build_float_neg(x, "").built();
                let e = self.math(lc(Libcall::ExpF32, Libcall::ExpF64), &[n])?;
                let den = self.b.build_float_add(one, e, "").built();
                self.b.build_float_div(one, den, "").built()
            }
        }
        .into())
    }

    fn binary(&mut self, op: BinaryOp, d: DType, a: BasicValueEnum<'ctx>, b: BasicValueEnum<'ctx>, shift: i64) -> Result<BasicValueEnum<'ctx>, String> {
        if op.is_comparison() {
            return Ok(if d.is_float() {
                let p = match op {
                    BinaryOp::Equal => FloatPredicate::OEQ,
                    BinaryOp::Greater => FloatPredicate::OGT,
                    _ => FloatPredicate::OGE,
                };
                self.b.build_float_compare(p, a.into_float_value(), b.into_float_value(), "").built().into()
            } else {
                let p = match op {
                    BinaryOp::Equal => IntPredicate::EQ,
                    BinaryOp::Greater => IntPredicate::SGT,
                    _ => IntPredicate::SGE,
                };
                self.icmp(p, a.into_int_value(), b.into_int_value()).into()
            });
        }
        if d == DType::I1 {
            let (a, b) = (a.into_int_value(), b.into_int_value());
            return match op {
                BinaryOp::LogicalAnd => Ok(self.b.build_and(a, b, "").built().into()),
                BinaryOp::LogicalOr => Ok(self.b.build_or(a, b, "").built().into()),
                BinaryOp::LogicalXor => Ok(self.b.build_xor(a, b, "").built().into()),
                _ => Err("arithmetic is not defined on i1".into()),
            };
        }
        if !d.is_float() {
            let (a, b) = (a.into_int_value(), b.into_int_value());
            return Ok(match op {
                BinaryOp::BitwiseAnd => self.b.build_and(a, b, "").built(),
                BinaryOp::BitwiseOr => self.b.build_or(a, b, "").built(),
                BinaryOp::BitwiseXor => self.b.build_xor(a, b, "").built(),
                BinaryOp::Add => self.add(a, b),
                BinaryOp::Sub => self.sub(a, b),
                BinaryOp::Mul if shift > 0 => {
                    let p = self.addi(self.mul(a, b), 1 << (shift - 1));
                    self.b.build_right_shift(p, self.i64(shift), true, "").built()
                }
                BinaryOp::Mul => self.mul(a, b),
                BinaryOp::Maximum => self.smax(a, b),
                BinaryOp::Minimum => self.smin(a, b),
                // The amount modulo 32, as the reference takes it (`semantics::shift_amount`).
                BinaryOp::ShiftLeft => self.b.build_left_shift(a, self.and(b, self.i64(31)), "").built(),
                BinaryOp::ShiftRightLogical => self.b.build_right_shift(self.low_bits(a, d), self.and(b, self.i64(31)), false, "").built(),
                BinaryOp::ShiftRightArith { round } => {
                    let s = self.and(b, self.i64(31));
                    // (a + 2^(s-1)) >> s adds the last bit shifted out; 2^(s-1) is 0 for s = 0.
                    let a = if round {
                        let p = self.b.build_left_shift(self.i64(1), s, "").built();
                        let half = self.b.build_right_shift(p, self.i64(1), false, "").built();
                        self.add(a, half)
                    } else {
                        a
                    };
                    self.b.build_right_shift(a, s, true, "").built()
                }
                BinaryOp::IntDiv => {
                    // x / 0 gives 0 (the reference's choice; sdiv by 0 is undefined).
                    let zero = self.icmp(IntPredicate::EQ, b, self.i64(0));
                    let d = self.select(zero, self.i64(1), b).into_int_value();
                    let q = self.b.build_int_signed_div(a, d, "").built();
                    self.select(zero, self.i64(0), q).into_int_value()
                }
                _ => return Err(format!("{} is not defined on integers", f16c_dialect::Op::Binary(op).mlir_name())),
            }
            .into());
        }
        if op.is_integer_only() || op.is_logical() {
            return Err(format!("{} is not defined on floats", f16c_dialect::Op::Binary(op).mlir_name()));
        }
        let (a, b) = (a.into_float_value(), b.into_float_value());
        Ok(match op {
            BinaryOp::Add => self.b.build_float_add(a, b, "").built(),
            BinaryOp::Sub => self.b.build_float_sub(a, b, "").built(),
            BinaryOp::Mul => self.b.build_float_mul(a, b, "").built(),
            BinaryOp::Maximum => self.fmax(a, b),
            BinaryOp::Minimum => self.fmin(a, b),
            BinaryOp::Pow => self.math(if d == DType::F64 { Libcall::PowF64 } else { Libcall::PowF32 }, &[a, b])?,
            _ => unreachable!("comparisons are handled above"),
        }
        .into())
    }

    /// `semantics::rescale_value` on i64 domain values `[x, multiplier, shift]`.
    fn rescale(&self, r: &f16c_dialect::RescaleAttrs, din: DType, dout: DType, args: &[BasicValueEnum<'ctx>], (in_zp, out_zp): (i64, i64)) -> IntValue<'ctx> {
        use f16c_dialect::semantics::{rescale_input_zp, rescale_output};
        let (x, m, s) = (args[0].into_int_value(), args[1].into_int_value(), args[2].into_int_value());
        let x = if r.input_unsigned { self.low_bits(x, din) } else { x };
        let v = self.addi(x, -rescale_input_zp(r, din, in_zp));
        let s = self.smin(self.smax(s, self.i64(2)), self.i64(62));
        let mut round = self.b.build_left_shift(self.i64(1), self.addi(s, -1), "").built();
        if r.rounding == f16c_dialect::Rounding::Double {
            // Above shift 31, 2^30 more toward the sign of v.
            let big = self.icmp(IntPredicate::SGT, s, self.i64(31));
            let pos = self.icmp(IntPredicate::SGE, v, self.i64(0));
            let extra = self.select(pos, self.i64(1 << 30), self.i64(-(1 << 30))).into_int_value();
            let extra = self.select(big, extra, self.i64(0)).into_int_value();
            round = self.add(round, extra);
        }
        let p = self.b.build_right_shift(self.add(self.mul(v, m), round), s, true, "").built();
        // To i32, as the specification's result is.
        let p = self.b.build_int_truncate(p, self.cx.i32_type(), "").built();
        let p = self.b.build_int_s_extend(p, self.cx.i64_type(), "").built();
        let (lo, hi, zp) = rescale_output(r, dout, out_zp);
        self.smin(self.smax(self.addi(p, zp), self.i64(lo)), self.i64(hi))
    }

    /// The bits of a sign-extended integer of type `d` as an unsigned value of its width.
    fn low_bits(&self, x: IntValue<'ctx>, d: DType) -> IntValue<'ctx> {
        match d.bit_width() {
            64 => x,
            n => self.and(x, self.i64((1i64 << n) - 1)),
        }
    }

    /// Converts a domain value of type `from` to the domain of `to` (rounding to `to` is the
    /// caller's [`Ir::round_to`], except from f64, which rounds to f16/bf16 once, directly).
    pub fn convert(&mut self, from: DType, to: DType, x: BasicValueEnum<'ctx>) -> Result<BasicValueEnum<'ctx>, String> {
        if from == to {
            return Ok(x);
        }
        let (f32t, f64t) = (self.cx.f32_type(), self.cx.f64_type());
        let b = &self.b;
        Ok(match (from, to) {
            (_, DType::I1) if from.is_float() => {
                let x = x.into_float_value();
                b.build_float_compare(FloatPredicate::UNE, x, self.fconst(x, 0.0), "").built().into()
            }
            (_, DType::I1) => self.icmp(IntPredicate::NE, x.into_int_value(), self.i64(0)).into(),
            (f, t) if in_f32(f) && in_f32(t) => x,
            (f, DType::F64) if in_f32(f) => b.build_float_ext(x.into_float_value(), f64t, "").built().into(),
            (DType::F64, DType::F32) => b.build_float_trunc(x.into_float_value(), f32t, "").built().into(),
            (DType::F64, t) if t.is_low_float() => {
                // One rounding, straight from f64 (never through f32).
                let n = self.to_low(x.into_float_value(), t)?;
                if t == DType::BF16 { self.bf16_to_f32(n.into()) } else { self.b.build_float_ext(n, f32t, "").built().into() }
            }
            (f, t) if !f.is_float() && t.is_float() => {
                let wide = if f == DType::I1 { b.build_int_z_extend(x.into_int_value(), self.cx.i64_type(), "").built() } else { x.into_int_value() };
                let v = b.build_signed_int_to_float(wide, f64t, "").built();
                self.convert(DType::F64, to, v.into())?
            }
            (f, t) if f.is_float() && !t.is_float() => {
                let v = if f == DType::F64 { x.into_float_value() } else { b.build_float_ext(x.into_float_value(), f64t, "").built() };
                let (lo, hi) = t.int_range();
                let (lo, hi) = (lo as f64, hi as f64);
                let r = self.fintr("roundeven", &[v]);
                let r = self.fmax(r, self.f64(lo));
                let r = self.fmin(r, self.f64(hi));
                // Saturating: NaN gives 0, as the reference does.
                self.intrinsic("llvm.fptosi.sat.i64.f64", self.cx.i64_type().into(), &[r.into()])
            }
            (DType::I1, _) => b.build_int_z_extend(x.into_int_value(), self.cx.i64_type(), "").built().into(),
            (f, t) if !f.is_float() && !t.is_float() => x,
            _ => return Err(format!("no conversion from {from} to {to}")),
        })
    }

    /// The identity of a reduction in the domain of `d`.
    pub fn reduce_init(&self, kind: ReduceKind, d: DType) -> BasicValueEnum<'ctx> {
        if d.is_float() {
            let t = self.domain(d).into_float_type();
            let v = match kind {
                ReduceKind::Sum => 0.0,
                ReduceKind::Prod => 1.0,
                ReduceKind::Max => f64::NEG_INFINITY,
                _ => f64::INFINITY,
            };
            t.const_float(v).into()
        } else if d == DType::I1 {
            let one = matches!(kind, ReduceKind::All | ReduceKind::Min | ReduceKind::Prod);
            self.cx.bool_type().const_int(one as u64, false).into()
        } else {
            self.i64(match kind {
                ReduceKind::Sum => 0,
                ReduceKind::Prod => 1,
                ReduceKind::Max => i64::MIN,
                _ => i64::MAX,
            })
            .into()
        }
    }

    /// One step of a reduction (of floats also on vectors of f32 lanes, lane by lane).
    pub fn reduce_step(&self, kind: ReduceKind, acc: BasicValueEnum<'ctx>, v: BasicValueEnum<'ctx>) -> BasicValueEnum<'ctx> {
        if let BasicValueEnum::VectorValue(a) = acc {
            let x = v.into_vector_value();
            let nan = self.splat(a.get_type(), a.get_type().get_element_type().into_float_type().const_float(f64::NAN));
            return match kind {
                ReduceKind::Sum => self.b.build_float_add(a, x, "").built().into(),
                ReduceKind::Prod => self.b.build_float_mul(a, x, "").built().into(),
                ReduceKind::Max => self.tosa_select_any(FloatPredicate::OGE, a, x, nan),
                _ => self.tosa_select_any(FloatPredicate::OLE, a, x, nan),
            };
        }
        if acc.is_float_value() {
            let (a, x) = (acc.into_float_value(), v.into_float_value());
            return match kind {
                ReduceKind::Sum => self.b.build_float_add(a, x, "").built(),
                ReduceKind::Prod => self.b.build_float_mul(a, x, "").built(),
                ReduceKind::Max => self.fmax(a, x),
                _ => self.fmin(a, x),
            }
            .into();
        }
        let (a, x) = (acc.into_int_value(), v.into_int_value());
        if a.get_type().get_bit_width() == 1 {
            return match kind {
                ReduceKind::All | ReduceKind::Min | ReduceKind::Prod => self.and(a, x),
                _ => self.b.build_or(a, x, "").built(),
            }
            .into();
        }
        match kind {
            ReduceKind::Sum => self.add(a, x),
            ReduceKind::Prod => self.mul(a, x),
            ReduceKind::Max => self.smax(a, x),
            _ => self.smin(a, x),
        }
        .into()
    }

    /// A math function of the contract, as the target computes it.
    pub fn math(&mut self, lc: Libcall, args: &[FloatValue<'ctx>]) -> Result<FloatValue<'ctx>, String> {
        match self.math {
            MathImpl::NvptxApprox => self.nvptx_math(lc, args),
            // The contract's own f32 functions, inline ([`f16c_core::math`]).
            MathImpl::RuntimeTable if lc == Libcall::ExpF32 => Ok(self.scalar_math(Self::contract_exp, args[0])),
            MathImpl::RuntimeTable if lc == Libcall::TanhF32 => Ok(self.scalar_math(Self::contract_tanh, args[0])),
            MathImpl::RuntimeTable if lc == Libcall::ErfF32 => Ok(self.scalar_math(Self::contract_erf, args[0])),
            MathImpl::RuntimeTable => {
                let args: Vec<BasicValueEnum> = args.iter().map(|&a| a.into()).collect();
                Ok(self.libcall(lc, &args)?.into_float_value())
            }
        }
    }

    /// The NVPTX approximations (f32 only; the NVPTX legality table rejects f64 math).
    fn nvptx_math(&mut self, lc: Libcall, args: &[FloatValue<'ctx>]) -> Result<FloatValue<'ctx>, String> {
        let x = args[0];
        Ok(match lc {
            Libcall::ExpF32 => self.approx_exp(x),
            Libcall::LogF32 => {
                let l = self.ex2_lg2("llvm.nvvm.lg2.approx.f", x);
                self.b.build_float_mul(l, self.f32(std::f32::consts::LN_2), "").built()
            }
            Libcall::TanhF32 => self.approx_tanh(x),
            Libcall::ErfF32 => self.approx_erf(x),
            Libcall::PowF32 => self.approx_pow(x, args[1]),
            // sin.approx/cos.approx: absolute error at most 2^-20.5 over [-100π, 100π].
            Libcall::SinF32 => self.ex2_lg2("llvm.nvvm.sin.approx.f", x),
            Libcall::CosF32 => self.ex2_lg2("llvm.nvvm.cos.approx.f", x),
            other => return Err(format!("{other:?} has no NVPTX implementation (f64 math is outside the NVPTX legality table)")),
        })
    }

    fn ex2_lg2(&self, name: &str, x: FloatValue<'ctx>) -> FloatValue<'ctx> {
        self.intrinsic(name, self.cx.f32_type().into(), &[x.into()]).into_float_value()
    }

    fn fma(&self, a: FloatValue<'ctx>, b: FloatValue<'ctx>, c: FloatValue<'ctx>) -> FloatValue<'ctx> {
        self.fintr("fma", &[a, b, c])
    }

    /// `2^k` for an integer `k` in `[-126, 127]` (i32), built from its bits.
    fn pow2(&self, k: IntValue<'ctx>) -> FloatValue<'ctx> {
        let bits = self.b.build_left_shift(self.b.build_int_add(k, self.i32(127), "").built(), self.i32(23), "").built();
        self.b.build_bit_cast(bits, self.cx.f32_type(), "").built().into_float_value()
    }

    /// `exp(x)`: Cody–Waite reduction `x = n·ln2 + r`, `|r| <= ln2/2`, then `2^n · ex2(r·log2 e)`
    /// (the scale in two factors so that results near the overflow and underflow limits are
    /// right).
    fn approx_exp(&self, x: FloatValue<'ctx>) -> FloatValue<'ctx> {
        const LN2_HI: f32 = f32::from_bits(0x3f31_7200);
        const LN2_LO: f32 = f32::from_bits(0x35bf_be8e);
        let b = &self.b;
        let t = b.build_float_mul(x, self.f32(std::f32::consts::LOG2_E), "").built();
        let n = self.fintr("roundeven", &[t]);
        let n = self.fmin(self.fmax(n, self.f32(-252.0)), self.f32(254.0));
        let r = self.fma(n, self.f32(-LN2_HI), x);
        let r = self.fma(n, self.f32(-LN2_LO), r);
        let p = self.ex2_lg2("llvm.nvvm.ex2.approx.f32", b.build_float_mul(r, self.f32(std::f32::consts::LOG2_E), "").built());
        let ni = self.intrinsic("llvm.fptosi.sat.i32.f32", self.cx.i32_type().into(), &[n.into()]).into_int_value();
        let half = b.build_right_shift(ni, self.i32(1), true, "").built();
        let rest = b.build_int_sub(ni, half, "").built();
        let y = b.build_float_mul(p, self.pow2(half), "").built();
        b.build_float_mul(y, self.pow2(rest), "").built()
    }

    /// `tanh(x) = sign(x)·(1 − 2/(exp(2|x|) + 1))`; 1 beyond |x| = 9, `x` below 2^-12.
    fn approx_tanh(&self, x: FloatValue<'ctx>) -> FloatValue<'ctx> {
        let b = &self.b;
        let ax = self.fintr("fabs", &[x]);
        let e = self.approx_exp(b.build_float_mul(ax, self.f32(2.0), "").built());
        let den = b.build_float_add(e, self.f32(1.0), "").built();
        let q = b.build_float_div(self.f32(2.0), den, "").built();
        let t = b.build_float_sub(self.f32(1.0), q, "").built();
        let big = b.build_float_compare(FloatPredicate::OGT, ax, self.f32(9.0), "").built();
        let t = self.select(big, self.f32(1.0), t).into_float_value();
        let t = self.fintr("copysign", &[t, x]);
        let tiny = b.build_float_compare(FloatPredicate::OLT, ax, self.f32(1.0 / 4096.0), "").built();
        self.select(tiny, x, t).into_float_value()
    }

    /// `erf(x)`: Abramowitz–Stegun 7.1.26 (absolute error below 1.5e-7) on |x|, sign restored.
    fn approx_erf(&self, x: FloatValue<'ctx>) -> FloatValue<'ctx> {
        const P: f32 = 0.327_591_1;
        const A: [f32; 5] = [0.254_829_6, -0.284_496_74, 1.421_413_7, -1.453_152_1, 1.061_405_4];
        let b = &self.b;
        let ax = self.fintr("fabs", &[x]);
        let den = self.fma(ax, self.f32(P), self.f32(1.0));
        let t = b.build_float_div(self.f32(1.0), den, "").built();
        let mut poly = self.f32(A[4]);
        for &a in A[..4].iter().rev() {
            poly = self.fma(poly, t, self.f32(a));
        }
        let poly = b.build_float_mul(poly, t, "").built();
        let sq = b.build_float_mul(ax, ax, "").built();
        let e = self.approx_exp(b.build_float_neg(sq, "").built());
        let y = b.build_float_sub(self.f32(1.0), b.build_float_mul(poly, e, "").built(), "").built();
        self.fintr("copysign", &[y, x])
    }

    /// `pow(a, b) = 2^(b·log2|a|)` with the sign and special cases of C's `powf`: `pow(x, 0)` and
    /// `pow(1, y)` are 1, a negative base needs an integer exponent (else NaN) and takes the
    /// sign of an odd one.
    fn approx_pow(&self, a: FloatValue<'ctx>, e: FloatValue<'ctx>) -> FloatValue<'ctx> {
        let bd = &self.b;
        let aa = self.fintr("fabs", &[a]);
        let l = self.ex2_lg2("llvm.nvvm.lg2.approx.f", aa);
        let r = self.ex2_lg2("llvm.nvvm.ex2.approx.f32", bd.build_float_mul(e, l, "").built());
        let integer = bd.build_float_compare(FloatPredicate::OEQ, self.fintr("roundeven", &[e]), e, "").built();
        let ei = self.intrinsic("llvm.fptosi.sat.i64.f32", self.cx.i64_type().into(), &[e.into()]).into_int_value();
        let odd_bit = bd.build_and(ei, self.i64(1), "").built();
        let small = bd.build_float_compare(FloatPredicate::OLT, self.fintr("fabs", &[e]), self.f32(16_777_216.0), "").built();
        let odd = self.and(self.and(integer, small), self.icmp(IntPredicate::NE, odd_bit, self.i64(0)));
        let bits = bd.build_bit_cast(a, self.cx.i32_type(), "").built().into_int_value();
        let negative = self.icmp(IntPredicate::SLT, bits, self.i32(0));
        let signed = self.select(odd, bd.build_float_neg(r, "").built(), r).into_float_value();
        // A zero base takes the sign rule too (-0 to an odd power is -0), not the NaN rule.
        let zero = bd.build_float_compare(FloatPredicate::OEQ, aa, self.f32(0.0), "").built();
        let neg_result = self.select(bd.build_or(integer, zero, "").built(), signed, self.f32(f32::NAN)).into_float_value();
        let y = self.select(negative, neg_result, r).into_float_value();
        let one = self.f32(1.0);
        let e_zero = bd.build_float_compare(FloatPredicate::OEQ, e, self.f32(0.0), "").built();
        let a_one = bd.build_float_compare(FloatPredicate::OEQ, a, one, "").built();
        let y = self.select(a_one, one, y).into_float_value();
        self.select(e_zero, one, y).into_float_value()
    }
}
