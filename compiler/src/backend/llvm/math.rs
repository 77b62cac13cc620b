//! The contract's f32 `exp`, `tanh` and `erf` ([`f16c_core::math`]) emitted inline for the CPU
//! targets: the same operations in the same order as the Rust definitions (plain `fmul`/`fadd`,
//! which LLVM does not fuse without a `contract` flag; branches as selects), so the same bits,
//! and loops that the vectoriser can widen (a libcall per element it cannot).

use super::{Built, Ir};
use f16c_core::math::{self as m};
use inkwell::values::{FloatValue, IntValue};
use inkwell::FloatPredicate;

impl<'ctx> Ir<'ctx> {
    /// `c[n]·s^n + … + c[0]`, multiply then add per step ([`m::horner`]).
    fn horner(&self, c: &[f32], s: FloatValue<'ctx>) -> FloatValue<'ctx> {
        let mut r = self.f32(c[c.len() - 1]);
        for &k in c[..c.len() - 1].iter().rev() {
            let p = self.b.build_float_mul(r, s, "").built();
            r = self.b.build_float_add(p, self.f32(k), "").built();
        }
        r
    }

    fn fsel(&self, cond: IntValue<'ctx>, a: FloatValue<'ctx>, b: FloatValue<'ctx>) -> FloatValue<'ctx> {
        self.select(cond, a, b).into_float_value()
    }

    fn fcmp(&self, p: FloatPredicate, a: FloatValue<'ctx>, b: FloatValue<'ctx>) -> IntValue<'ctx> {
        self.b.build_float_compare(p, a, b, "").built()
    }

    /// `x + x` where `x` is NaN, `r` elsewhere.
    fn nan_passes(&self, x: FloatValue<'ctx>, r: FloatValue<'ctx>) -> FloatValue<'ctx> {
        let nan = self.fcmp(FloatPredicate::UNO, x, x);
        let q = self.b.build_float_add(x, x, "").built();
        self.fsel(nan, q, r)
    }

    /// `2^n` from its bits (`n` in `[-126, 127]`).
    fn pow2_bits(&self, n: IntValue<'ctx>) -> FloatValue<'ctx> {
        let e = self.b.build_int_add(n, self.i32(127), "").built();
        let e = self.b.build_left_shift(e, self.i32(23), "").built();
        self.b.build_bit_cast(e, self.cx.f32_type(), "").built().into_float_value()
    }

    /// [`m::exp_f32`] without its NaN case.
    fn exp_finite(&self, x: FloatValue<'ctx>) -> FloatValue<'ctx> {
        let b = &self.b;
        let over = self.fcmp(FloatPredicate::OGT, x, self.f32(m::EXP_MAX));
        let xc = self.fsel(over, self.f32(m::EXP_MAX), x);
        let under = self.fcmp(FloatPredicate::OLT, xc, self.f32(m::EXP_MIN));
        let xc = self.fsel(under, self.f32(m::EXP_MIN), xc);
        let z = b.build_float_mul(xc, self.f32(m::INV_LN2), "").built();
        let k = self.fintr("roundeven", &[z]);
        let khi = b.build_float_mul(k, self.f32(m::LN2_HI), "").built();
        let hi = b.build_float_sub(xc, khi, "").built();
        let lo = b.build_float_mul(k, self.f32(m::LN2_LO), "").built();
        let r = b.build_float_sub(hi, lo, "").built();
        let rr = b.build_float_mul(r, r, "").built();
        let p = self.horner(&m::EXP_P, rr);
        let q = b.build_float_mul(rr, p, "").built();
        let c = b.build_float_sub(r, q, "").built();
        let rc = b.build_float_mul(r, c, "").built();
        let d = b.build_float_sub(self.f32(2.0), c, "").built();
        let t = b.build_float_div(rc, d, "").built();
        let t = b.build_float_sub(t, lo, "").built();
        let t = b.build_float_add(t, hi, "").built();
        let y = b.build_float_add(self.f32(1.0), t, "").built();
        // k is an integer in [-150, 128], NaN only where x is (that lane is replaced): made 0
        // there, a plain conversion vectorises (`vcvttps2dq`) where the saturating one was
        // taken apart lane by lane (`vcvttss2si` and two tests each).
        let ordered = self.fcmp(FloatPredicate::ORD, k, k);
        let k0 = self.fsel(ordered, k, self.f32(0.0));
        let ki = b.build_float_to_signed_int(k0, self.cx.i32_type(), "").built();
        let a = b.build_right_shift(ki, self.i32(1), true, "").built();
        let rest = b.build_int_sub(ki, a, "").built();
        let e = b.build_float_mul(y, self.pow2_bits(a), "").built();
        b.build_float_mul(e, self.pow2_bits(rest), "").built()
    }

    /// [`m::exp_f32`].
    pub fn contract_exp(&self, x: FloatValue<'ctx>) -> FloatValue<'ctx> {
        let e = self.exp_finite(x);
        self.nan_passes(x, e)
    }

    /// [`m::tanh_f32`].
    pub fn contract_tanh(&self, x: FloatValue<'ctx>) -> FloatValue<'ctx> {
        let b = &self.b;
        let a = self.fintr("fabs", &[x]);
        let s = b.build_float_mul(x, x, "").built();
        let p = self.horner(&m::TANH_P, s);
        let sp = b.build_float_mul(s, p, "").built();
        let asp = b.build_float_mul(a, sp, "").built();
        let small = b.build_float_add(a, asp, "").built();
        let e = self.exp_finite(b.build_float_add(a, a, "").built());
        let e1 = b.build_float_add(e, self.f32(1.0), "").built();
        let q = b.build_float_div(self.f32(2.0), e1, "").built();
        let big = b.build_float_sub(self.f32(1.0), q, "").built();
        let below = self.fcmp(FloatPredicate::OLT, a, self.f32(m::TANH_SPLIT));
        let t = self.fsel(below, small, big);
        let t = self.fintr("copysign", &[t, x]);
        self.nan_passes(x, t)
    }

    /// [`m::erf_f32`].
    pub fn contract_erf(&self, x: FloatValue<'ctx>) -> FloatValue<'ctx> {
        let b = &self.b;
        let one = self.f32(1.0);
        let a = self.fintr("fabs", &[x]);
        let s = b.build_float_mul(x, x, "").built();
        let p = self.horner(&m::ERF_P, s);
        let ap = b.build_float_mul(a, p, "").built();
        let small = b.build_float_add(a, ap, "").built();
        let t = b.build_float_div(one, a, "").built();
        let e = self.exp_finite(b.build_float_neg(s, "").built());
        let u = b.build_float_sub(t, self.f32(m::ERF_CENTRE), "").built();
        let r = self.horner(&m::ERF_R, u);
        let er = b.build_float_mul(e, r, "").built();
        let big = b.build_float_sub(one, er, "").built();
        let below_one = self.fcmp(FloatPredicate::OLT, a, one);
        let below_lim = self.fcmp(FloatPredicate::OLT, a, self.f32(m::ERF_ONE));
        let far = self.fsel(below_lim, big, one);
        let v = self.fsel(below_one, small, far);
        let v = self.fintr("copysign", &[v, x]);
        self.nan_passes(x, v)
    }
}
