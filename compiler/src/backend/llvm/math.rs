//! The contract's f32 `exp`, `tanh` and `erf` ([`f16c_core::math`]) emitted inline for the CPU
//! targets: the same operations in the same order as the Rust definitions (plain `fmul`/`fadd`,
//! which LLVM does not fuse without a `contract` flag; branches as selects), so the same bits,
//! and loops that the vectoriser can widen (a libcall per element it cannot).
//!
//! Each function takes one f32 or a vector of f32 lanes (a fused epilogue finishing a row of a
//! GEMM tile, a row kernel's stage): on a vector every lane computes exactly what the scalar
//! function computes (IEEE operations, selects and `roundeven` are lane by lane).

use super::{Built, Ir};
use f16c_core::math::{self as m};
use f16c_dialect::DType;
use inkwell::module::Linkage;
use inkwell::types::{BasicTypeEnum, VectorType};
use inkwell::values::{BasicValueEnum, FloatValue, PointerValue};
use inkwell::{FloatPredicate, IntPredicate};

/// A contract function that CPU modules look up at bf16 or fp16 arguments
/// ([`Ir::lookup_half`]): a table of its f32 values at the type's values (made by
/// `f16c_core::math`, by the Rust function the reference calls) indexed by their bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HalfTable {
    /// [`m::erf_f32`] ([`m::erf_table`]): odd, so its values at the non-negative values up to
    /// [`m::ERF_ONE`], where it reaches 1 and stays (∞ included); 66–68 KB.
    Erf,
    /// [`m::exp_f32`] ([`m::exp_table`]), which clamps its argument to `[EXP_MIN, EXP_MAX]`:
    /// its values at the non-negative values up to `EXP_MAX`, then at the negative ones down
    /// to `EXP_MIN` (137 KB for bf16, 176 KB for fp16; a softmax reads the second half).
    Exp,
    /// [`m::sigmoid_f32`] ([`m::sigmoid_table`]): the exp of `−x` clamps as `exp` does, so its
    /// values at the non-negative values up to `−EXP_MIN`, then at the negative ones down to
    /// `−EXP_MAX` (137 KB for bf16): a bf16 SiLU's sigmoid, in place of an exp and two
    /// divisions (EfficientNet-B0 bf16 11.8 → 11.4 ms at one thread).
    Sigmoid,
}

impl HalfTable {
    /// The function `op` computes where a table holds it: `erf`, `exp` or `sigmoid`.
    pub fn of(op: &crate::lower::EwOp) -> Option<HalfTable> {
        match op.kind {
            crate::lower::EwKind::Unary(f16c_dialect::UnaryOp::Erf) => Some(HalfTable::Erf),
            crate::lower::EwKind::Unary(f16c_dialect::UnaryOp::Exp) => Some(HalfTable::Exp),
            crate::lower::EwKind::Unary(f16c_dialect::UnaryOp::Sigmoid) => Some(HalfTable::Sigmoid),
            _ => None,
        }
    }
}

/// The table type of a 16-bit float `DType`.
fn half16(t: DType) -> m::Half16 {
    match t {
        DType::BF16 => m::Half16::Bf16,
        DType::F16 => m::Half16::F16,
        other => unreachable!("a table of {other} values"),
    }
}

/// One f32 or a vector of f32 lanes.
type F<'ctx> = BasicValueEnum<'ctx>;

/// `$ir.b.$method(a, b)` on two floats or on two float vectors.
macro_rules! floats {
    ($ir:expr, $method:ident, $a:expr, $b:expr) => {
        match ($a, $b) {
            (BasicValueEnum::FloatValue(a), BasicValueEnum::FloatValue(b)) => $ir.b.$method(a, b, "").built().into(),
            (BasicValueEnum::VectorValue(a), BasicValueEnum::VectorValue(b)) => $ir.b.$method(a, b, "").built().into(),
            (a, b) => unreachable!("float math on {a:?} and {b:?}"),
        }
    };
}

/// `$ir.b.$method(a, b, ..)` on two integers or on two integer vectors.
macro_rules! ints {
    ($ir:expr, $method:ident, $a:expr, $b:expr $(, $extra:expr)?) => {
        match ($a, $b) {
            (BasicValueEnum::IntValue(a), BasicValueEnum::IntValue(b)) => $ir.b.$method(a, b, $($extra,)? "").built().into(),
            (BasicValueEnum::VectorValue(a), BasicValueEnum::VectorValue(b)) => $ir.b.$method(a, b, $($extra,)? "").built().into(),
            (a, b) => unreachable!("integer math on {a:?} and {b:?}"),
        }
    };
}

impl<'ctx> Ir<'ctx> {
    /// The number of lanes of `x`, `None` for a scalar.
    fn lanes_of(x: F<'ctx>) -> Option<u32> {
        match x {
            BasicValueEnum::VectorValue(v) => Some(v.get_type().get_size()),
            _ => None,
        }
    }

    /// The f32 `v`, shaped like `like` (splat across its lanes).
    fn k(&self, like: F<'ctx>, v: f32) -> F<'ctx> {
        let c = self.f32(v);
        match Self::lanes_of(like) {
            Some(n) => VectorType::const_vector(&vec![c; n as usize]).into(),
            None => c.into(),
        }
    }

    /// The i32 `v`, shaped like `like`.
    fn ki(&self, like: F<'ctx>, v: i32) -> F<'ctx> {
        let c = self.i32(v);
        match Self::lanes_of(like) {
            Some(n) => VectorType::const_vector(&vec![c; n as usize]).into(),
            None => c.into(),
        }
    }

    fn fadd(&self, a: F<'ctx>, b: F<'ctx>) -> F<'ctx> {
        floats!(self, build_float_add, a, b)
    }

    fn fsub(&self, a: F<'ctx>, b: F<'ctx>) -> F<'ctx> {
        floats!(self, build_float_sub, a, b)
    }

    fn fmul(&self, a: F<'ctx>, b: F<'ctx>) -> F<'ctx> {
        floats!(self, build_float_mul, a, b)
    }

    fn fdiv(&self, a: F<'ctx>, b: F<'ctx>) -> F<'ctx> {
        floats!(self, build_float_div, a, b)
    }

    fn fcmp(&self, p: FloatPredicate, a: F<'ctx>, b: F<'ctx>) -> F<'ctx> {
        match (a, b) {
            (BasicValueEnum::FloatValue(a), BasicValueEnum::FloatValue(b)) => self.b.build_float_compare(p, a, b, "").built().into(),
            (BasicValueEnum::VectorValue(a), BasicValueEnum::VectorValue(b)) => self.b.build_float_compare(p, a, b, "").built().into(),
            (a, b) => unreachable!("compare of {a:?} and {b:?}"),
        }
    }

    /// `a` where `cond` holds, else `b` (lane by lane for vectors).
    fn fsel(&self, cond: F<'ctx>, a: F<'ctx>, b: F<'ctx>) -> F<'ctx> {
        match cond {
            BasicValueEnum::IntValue(c) => self.b.build_select(c, a, b, "").built(),
            BasicValueEnum::VectorValue(c) => self.b.build_select(c, a, b, "").built(),
            c => unreachable!("select on {c:?}"),
        }
    }

    /// `llvm.<name>` on f32 values or f32 vectors.
    pub(super) fn lane_intr(&self, name: &str, args: &[F<'ctx>]) -> F<'ctx> {
        let suffix = match Self::lanes_of(args[0]) {
            Some(n) => format!("v{n}f32"),
            None => "f32".into(),
        };
        self.intrinsic(&format!("llvm.{name}.{suffix}"), args[0].get_type(), args)
    }

    /// The i32 type shaped like `like`, and the f32 one.
    fn int_like(&self, like: F<'ctx>) -> BasicTypeEnum<'ctx> {
        match Self::lanes_of(like) {
            Some(n) => self.cx.i32_type().vec_type(n).into(),
            None => self.cx.i32_type().into(),
        }
    }

    fn float_like(&self, like: F<'ctx>) -> BasicTypeEnum<'ctx> {
        match Self::lanes_of(like) {
            Some(n) => self.cx.f32_type().vec_type(n).into(),
            None => self.cx.f32_type().into(),
        }
    }

    /// `c[n]·s^n + … + c[0]`, multiply then add per step ([`m::horner`]).
    fn horner(&self, c: &[f32], s: F<'ctx>) -> F<'ctx> {
        let mut r = self.k(s, c[c.len() - 1]);
        for &k in c[..c.len() - 1].iter().rev() {
            let p = self.fmul(r, s);
            r = self.fadd(p, self.k(s, k));
        }
        r
    }

    /// `x + x` where `x` is NaN, `r` elsewhere.
    fn nan_passes(&self, x: F<'ctx>, r: F<'ctx>) -> F<'ctx> {
        let nan = self.fcmp(FloatPredicate::UNO, x, x);
        let q = self.fadd(x, x);
        self.fsel(nan, q, r)
    }

    /// `2^n` from its bits (`n` in `[-126, 127]`, i32 shaped like the result).
    fn pow2_bits(&self, n: F<'ctx>) -> F<'ctx> {
        let e: F = ints!(self, build_int_add, n, self.ki(n, 127));
        let e: F = ints!(self, build_left_shift, e, self.ki(n, 23));
        self.b.build_bit_cast(e, self.float_like(n), "").built()
    }

    /// [`m::exp_f32`] without its NaN case.
    fn exp_finite(&self, x: F<'ctx>) -> F<'ctx> {
        let c = |v: f32| self.k(x, v);
        let over = self.fcmp(FloatPredicate::OGT, x, c(m::EXP_MAX));
        let xc = self.fsel(over, c(m::EXP_MAX), x);
        let under = self.fcmp(FloatPredicate::OLT, xc, c(m::EXP_MIN));
        let xc = self.fsel(under, c(m::EXP_MIN), xc);
        let z = self.fmul(xc, c(m::INV_LN2));
        let k = self.lane_intr("roundeven", &[z]);
        let khi = self.fmul(k, c(m::LN2_HI));
        let hi = self.fsub(xc, khi);
        let lo = self.fmul(k, c(m::LN2_LO));
        let r = self.fsub(hi, lo);
        let rr = self.fmul(r, r);
        let p = self.horner(&m::EXP_P, rr);
        let q = self.fmul(rr, p);
        let cc = self.fsub(r, q);
        let rc = self.fmul(r, cc);
        let d = self.fsub(c(2.0), cc);
        let t = self.fdiv(rc, d);
        let t = self.fsub(t, lo);
        let t = self.fadd(t, hi);
        let y = self.fadd(c(1.0), t);
        if self.ldexp_in_one {
            if let Some(e) = self.scalef_lanes(y, k) {
                return e;
            }
        }
        // k is an integer in [-150, 128], NaN only where x is (that lane is replaced): made 0
        // there, a plain conversion vectorises (`vcvttps2dq`) where the saturating one was
        // taken apart lane by lane (`vcvttss2si` and two tests each).
        let ordered = self.fcmp(FloatPredicate::ORD, k, k);
        let k0 = self.fsel(ordered, k, c(0.0));
        let ki: F = match (k0, self.int_like(x)) {
            (BasicValueEnum::FloatValue(f), BasicTypeEnum::IntType(t)) => self.b.build_float_to_signed_int(f, t, "").built().into(),
            (BasicValueEnum::VectorValue(v), BasicTypeEnum::VectorType(t)) => self.b.build_float_to_signed_int(v, t, "").built().into(),
            (v, t) => unreachable!("conversion of {v:?} to {t:?}"),
        };
        if self.ldexp_in_one {
            // y · 2^k rounded once, as the two steps below round it once (y · 2^(k/2) is exact).
            let name = match Self::lanes_of(x) {
                Some(n) => format!("llvm.ldexp.v{n}f32.v{n}i32"),
                None => "llvm.ldexp.f32.i32".into(),
            };
            return self.intrinsic(&name, y.get_type(), &[y, ki]);
        }
        let a: F = ints!(self, build_right_shift, ki, self.ki(x, 1), true);
        let rest: F = ints!(self, build_int_sub, ki, a);
        let e = self.fmul(y, self.pow2_bits(a));
        self.fmul(e, self.pow2_bits(rest))
    }

    /// `y · 2^k` rounded once for `k` an integral f32 (NaN only in lanes the caller replaces),
    /// where `y` is a vector of 4, 8 or 16 lanes: AVX-512's `vscalefps` on `k` itself, without
    /// the conversions to and from integers that `llvm.ldexp` takes. `None` for a scalar (the
    /// loop vectoriser widens `llvm.ldexp`, not a target's intrinsic).
    fn scalef_lanes(&self, y: F<'ctx>, k: F<'ctx>) -> Option<F<'ctx>> {
        let n = Self::lanes_of(y)?;
        let (name, mask): (&str, inkwell::values::IntValue<'ctx>) = match n {
            16 => ("llvm.x86.avx512.mask.scalef.ps.512", self.cx.i16_type().const_all_ones()),
            8 => ("llvm.x86.avx512.mask.scalef.ps.256", self.cx.i8_type().const_all_ones()),
            4 => ("llvm.x86.avx512.mask.scalef.ps.128", self.cx.i8_type().const_all_ones()),
            _ => return None,
        };
        let zero = y.get_type().const_zero();
        let mut args: Vec<F<'ctx>> = vec![y, k, zero, mask.into()];
        if n == 16 {
            // _MM_FROUND_CUR_DIRECTION: round to nearest even, as every f32 operation here.
            args.push(self.i32(4).into());
        }
        Some(self.intrinsic(name, y.get_type(), &args))
    }

    /// [`m::exp_f32`].
    pub fn contract_exp(&self, x: F<'ctx>) -> F<'ctx> {
        let e = self.exp_finite(x);
        self.nan_passes(x, e)
    }

    /// [`m::tanh_f32`].
    pub fn contract_tanh(&self, x: F<'ctx>) -> F<'ctx> {
        let c = |v: f32| self.k(x, v);
        let a = self.lane_intr("fabs", &[x]);
        let s = self.fmul(x, x);
        let p = self.horner(&m::TANH_P, s);
        let sp = self.fmul(s, p);
        let asp = self.fmul(a, sp);
        let small = self.fadd(a, asp);
        let e = self.exp_finite(self.fadd(a, a));
        let e1 = self.fadd(e, c(1.0));
        let q = self.fdiv(c(2.0), e1);
        let big = self.fsub(c(1.0), q);
        let below = self.fcmp(FloatPredicate::OLT, a, c(m::TANH_SPLIT));
        let t = self.fsel(below, small, big);
        let t = self.lane_intr("copysign", &[t, x]);
        self.nan_passes(x, t)
    }

    /// [`m::erf_f32`].
    pub fn contract_erf(&self, x: F<'ctx>) -> F<'ctx> {
        let c = |v: f32| self.k(x, v);
        let one = c(1.0);
        let a = self.lane_intr("fabs", &[x]);
        let s = self.fmul(x, x);
        let p = self.horner(&m::ERF_P, s);
        let ap = self.fmul(a, p);
        let small = self.fadd(a, ap);
        let t = self.fdiv(one, a);
        let e = self.exp_finite(self.neg(s));
        let u = self.fsub(t, c(m::ERF_CENTRE));
        let r = self.horner(&m::ERF_R, u);
        let er = self.fmul(e, r);
        let big = self.fsub(one, er);
        let below_one = self.fcmp(FloatPredicate::OLT, a, one);
        let below_lim = self.fcmp(FloatPredicate::OLT, a, c(m::ERF_ONE));
        let far = self.fsel(below_lim, big, one);
        let v = self.fsel(below_one, small, far);
        let v = self.lane_intr("copysign", &[v, x]);
        self.nan_passes(x, v)
    }

    /// `f` of f32 values (one, or lanes) that are values of the 16-bit float type `t` (bf16 or
    /// f16, [`Expr::holds_half`]), looked up in the module's table of `f` ([`HalfTable`]) by
    /// their bits in `t` (bf16: the top half of the f32's; f16: the exact `fptrunc`), with the
    /// contract's bits: one gather (`vgatherdps`) for sixteen lanes in place of a division or
    /// two, an `exp` and polynomials (a GELU's erf was most of its matmul epilogue, a
    /// softmax's exp a third of its row kernel). A NaN passes as the contract passes it.
    ///
    /// [`Expr::holds_half`]: crate::lower::Expr::holds_half
    pub fn lookup_half(&self, f: HalfTable, t: DType, x: F<'ctx>) -> F<'ctx> {
        let ty = half16(t);
        let table = self.half_table(f, ty);
        let bits: F = match (t, x) {
            (DType::F16, BasicValueEnum::VectorValue(v)) => {
                let n = v.get_type().get_size();
                let h = self.b.build_float_trunc(v, self.cx.f16_type().vec_type(n), "").built();
                let h = self.b.build_bit_cast(h, self.cx.i16_type().vec_type(n), "").built().into_vector_value();
                self.b.build_int_z_extend(h, self.cx.i32_type().vec_type(n), "").built().into()
            }
            (DType::F16, BasicValueEnum::FloatValue(v)) => {
                let h = self.b.build_float_trunc(v, self.cx.f16_type(), "").built();
                let h = self.b.build_bit_cast(h, self.cx.i16_type(), "").built().into_int_value();
                self.b.build_int_z_extend(h, self.cx.i32_type(), "").built().into()
            }
            _ => {
                let bits: F = self.b.build_bit_cast(x, self.int_like(x), "").built();
                ints!(self, build_right_shift, bits, self.ki(x, 16), false)
            }
        };
        let magnitude: F = ints!(self, build_and, bits, self.ki(x, 0x7fff));
        let below = |v: F<'ctx>, last: u32| -> F<'ctx> {
            let last = self.ki(x, last as i32);
            let inside: F = match (v, last) {
                (BasicValueEnum::IntValue(i), BasicValueEnum::IntValue(l)) => self.b.build_int_compare(IntPredicate::ULT, i, l, "").built().into(),
                (BasicValueEnum::VectorValue(i), BasicValueEnum::VectorValue(l)) => self.b.build_int_compare(IntPredicate::ULT, i, l, "").built().into(),
                (i, l) => unreachable!("compare of {i:?} and {l:?}"),
            };
            self.fsel(inside, v, last)
        };
        let index = match f {
            HalfTable::Erf => below(magnitude, ty.erf_last()),
            HalfTable::Exp | HalfTable::Sigmoid => {
                // Non-negative values from 0, negative ones after them.
                let (pos, neg) = if f == HalfTable::Exp { ty.exp_last() } else { ty.sigmoid_last() };
                let negative = self.fcmp(FloatPredicate::OLT, x, self.k(x, 0.0));
                let low = below(magnitude, neg);
                let low: F = ints!(self, build_int_add, low, self.ki(x, pos as i32 + 1));
                self.fsel(negative, low, below(magnitude, pos))
            }
        };
        let f32t = self.cx.f32_type();
        let v: F = match index {
            BasicValueEnum::IntValue(i) => {
                // SAFETY: `i` is at most the table's last index.
                let at = unsafe { self.b.build_in_bounds_gep(f32t, table, &[i], "") }.built();
                self.b.build_load(f32t, at, "").built()
            }
            BasicValueEnum::VectorValue(i) => {
                let n = i.get_type().get_size();
                let i64v = self.cx.i64_type().vec_type(n);
                let base = self.b.build_ptr_to_int(table, self.cx.i64_type(), "").built();
                let one = self.b.build_insert_element(i64v.get_poison(), base, self.i64(0), "").built();
                let base = self.b.build_shuffle_vector(one, i64v.get_poison(), self.cx.i32_type().vec_type(n).const_zero(), "").built();
                let offset = self.b.build_int_mul(self.b.build_int_z_extend(i, i64v, "").built(), VectorType::const_vector(&vec![self.cx.i64_type().const_int(4, false); n as usize]), "").built();
                let ptrs = self.b.build_int_to_ptr(self.b.build_int_add(base, offset, "").built(), self.ptr_ty().vec_type(n), "").built();
                let all = VectorType::const_vector(&vec![self.cx.bool_type().const_all_ones(); n as usize]);
                let ty = f32t.vec_type(n);
                self.masked_call(&format!("llvm.masked.gather.v{n}f32.v{n}p0"), Some(ty.into()), &[ptrs.into(), all.into(), ty.get_poison().into()], (0, 4)).expect("a gather returns its values")
            }
            v => unreachable!("a table lookup of {v:?}"),
        };
        match f {
            HalfTable::Erf => self.nan_passes(x, self.lane_intr("copysign", &[v, x])),
            HalfTable::Exp => self.nan_passes(x, v),
            // A NaN is negated first, as the sigmoid's exp of −x passes it.
            HalfTable::Sigmoid => self.nan_passes(self.neg(x), v),
        }
    }

    /// The module's table of `f` at the values of `t` ([`Ir::lookup_half`]), made on first use.
    fn half_table(&self, f: HalfTable, t: m::Half16) -> PointerValue<'ctx> {
        let function = match f {
            HalfTable::Erf => "erf",
            HalfTable::Exp => "exp",
            HalfTable::Sigmoid => "sigmoid",
        };
        let name = format!("f16c.{function}.{}", if t == m::Half16::Bf16 { "bf16" } else { "f16" });
        if let Some(g) = self.module.get_global(&name) {
            return g.as_pointer_value();
        }
        let values = match f {
            HalfTable::Erf => m::erf_table(t),
            HalfTable::Exp => m::exp_table(t),
            HalfTable::Sigmoid => m::sigmoid_table(t),
        };
        let f32t = self.cx.f32_type();
        let values: Vec<FloatValue> = values.into_iter().map(|v| f32t.const_float(f64::from(v))).collect();
        let table = f32t.const_array(&values);
        let g = self.module.add_global(table.get_type(), None, &name);
        g.set_initializer(&table);
        g.set_constant(true);
        g.set_linkage(Linkage::Private);
        g.as_pointer_value()
    }

    /// The contract's sigmoid, `1 / (1 + exp(-x))` (the scalar path's operations).
    pub fn contract_sigmoid(&self, x: F<'ctx>) -> F<'ctx> {
        let n = self.neg(x);
        let e = self.contract_exp(n);
        let one = self.k(x, 1.0);
        self.fdiv(one, self.fadd(one, e))
    }

    /// `-x` (a sign flip, as `fneg`).
    fn neg(&self, x: F<'ctx>) -> F<'ctx> {
        match x {
            BasicValueEnum::FloatValue(f) => self.b.build_float_neg(f, "").built().into(),
            BasicValueEnum::VectorValue(v) => self.b.build_float_neg(v, "").built().into(),
            v => unreachable!("negation of {v:?}"),
        }
    }

    /// A scalar f32 through one of the functions above.
    pub fn scalar_math(&self, f: fn(&Self, F<'ctx>) -> F<'ctx>, x: FloatValue<'ctx>) -> FloatValue<'ctx> {
        f(self, x.into()).into_float_value()
    }
}
