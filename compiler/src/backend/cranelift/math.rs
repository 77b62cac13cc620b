//! The contract's f32 `exp`, `tanh` and `erf` ([`f16c_core::math`]) emitted inline, on f32
//! scalars or f32x4 lanes: the same operations in the same order as the Rust definitions (no
//! fused multiply-add, branches as selects), so the same bits, four lanes at a time instead of
//! one libcall per lane.

use super::emit::Fx;
use cranelift_codegen::ir::condcodes::FloatCC;
use cranelift_codegen::ir::{InstBuilder, Value};
use f16c_core::math::{self as m};

impl Fx<'_> {
    /// `c[n]·s^n + … + c[0]`, multiply then add per step ([`m::horner`]).
    fn horner(&mut self, c: &[f32], s: Value) -> Value {
        let ty = self.b.func.dfg.value_type(s);
        let mut r = self.f(ty, c[c.len() - 1]);
        for &k in c[..c.len() - 1].iter().rev() {
            let p = self.b.ins().fmul(r, s);
            let k = self.f(ty, k);
            r = self.b.ins().fadd(p, k);
        }
        r
    }

    /// `x + x` where `x` is NaN, `r` elsewhere (the contract's NaN result: `x` quieted).
    fn nan_passes(&mut self, x: Value, r: Value) -> Value {
        let nan = self.b.ins().fcmp(FloatCC::Unordered, x, x);
        let q = self.b.ins().fadd(x, x);
        self.sel(nan, q, r)
    }

    /// `t` with `x`'s sign bit.
    fn copy_sign(&mut self, t: Value, x: Value) -> Value {
        let ty = self.b.func.dfg.value_type(x);
        let it = if ty.is_vector() { cranelift_codegen::ir::types::I32X4 } else { cranelift_codegen::ir::types::I32 };
        let (tb, xb) = (self.bits_of(t), self.bits_of(x));
        let magnitude = self.k(it, 0x7fff_ffff);
        let sign = self.k(it, 0x8000_0000u32 as i32 as i64);
        let tb = self.b.ins().band(tb, magnitude);
        let xb = self.b.ins().band(xb, sign);
        let r = self.b.ins().bor(tb, xb);
        self.float_of(r)
    }

    /// `v cc bound ? bound : v` (`v` where it is NaN).
    fn clamp_at(&mut self, cc: FloatCC, v: Value, bound: f32) -> Value {
        let ty = self.b.func.dfg.value_type(v);
        let b = self.f(ty, bound);
        let past = self.b.ins().fcmp(cc, v, b);
        self.sel(past, b, v)
    }

    /// `2^n` from the bits of `n + 127` shifted into the exponent (`n` in `[-126, 127]`).
    fn pow2_of(&mut self, n: Value) -> Value {
        let ty = self.b.func.dfg.value_type(n);
        let bias = self.k(ty, 127);
        let e = self.b.ins().iadd(n, bias);
        let e = self.b.ins().ishl_imm_s(e, 23);
        self.float_of(e)
    }

    /// [`m::exp_f32`] without its NaN case.
    fn exp_finite(&mut self, x: Value) -> Value {
        let ty = self.b.func.dfg.value_type(x);
        let xc = self.clamp_at(FloatCC::GreaterThan, x, m::EXP_MAX);
        let xc = self.clamp_at(FloatCC::LessThan, xc, m::EXP_MIN);
        let inv_ln2 = self.f(ty, m::INV_LN2);
        let z = self.b.ins().fmul(xc, inv_ln2);
        let k = self.b.ins().nearest(z);
        let (ln2_hi, ln2_lo) = (self.f(ty, m::LN2_HI), self.f(ty, m::LN2_LO));
        let khi = self.b.ins().fmul(k, ln2_hi);
        let hi = self.b.ins().fsub(xc, khi);
        let lo = self.b.ins().fmul(k, ln2_lo);
        let r = self.b.ins().fsub(hi, lo);
        let rr = self.b.ins().fmul(r, r);
        let p = self.horner(&m::EXP_P, rr);
        let q = self.b.ins().fmul(rr, p);
        let c = self.b.ins().fsub(r, q);
        let rc = self.b.ins().fmul(r, c);
        let two = self.f(ty, 2.0);
        let d = self.b.ins().fsub(two, c);
        let t = self.b.ins().fdiv(rc, d);
        let t = self.b.ins().fsub(t, lo);
        let t = self.b.ins().fadd(t, hi);
        let one = self.f(ty, 1.0);
        let y = self.b.ins().fadd(one, t);
        let it = if ty.is_vector() { cranelift_codegen::ir::types::I32X4 } else { cranelift_codegen::ir::types::I32 };
        let ki = self.b.ins().fcvt_to_sint_sat(it, k);
        let a = self.b.ins().sshr_imm_s(ki, 1);
        let b = self.b.ins().isub(ki, a);
        let (pa, pb) = (self.pow2_of(a), self.pow2_of(b));
        let e = self.b.ins().fmul(y, pa);
        self.b.ins().fmul(e, pb)
    }

    /// [`m::exp_f32`].
    pub fn exp_f32(&mut self, x: Value) -> Value {
        let e = self.exp_finite(x);
        self.nan_passes(x, e)
    }

    /// [`m::tanh_f32`].
    pub fn tanh_f32(&mut self, x: Value) -> Value {
        let ty = self.b.func.dfg.value_type(x);
        let a = self.b.ins().fabs(x);
        let s = self.b.ins().fmul(x, x);
        let p = self.horner(&m::TANH_P, s);
        let sp = self.b.ins().fmul(s, p);
        let asp = self.b.ins().fmul(a, sp);
        let small = self.b.ins().fadd(a, asp);
        let a2 = self.b.ins().fadd(a, a);
        let e = self.exp_finite(a2);
        let one = self.f(ty, 1.0);
        let two = self.f(ty, 2.0);
        let e1 = self.b.ins().fadd(e, one);
        let q = self.b.ins().fdiv(two, e1);
        let big = self.b.ins().fsub(one, q);
        let split = self.f(ty, m::TANH_SPLIT);
        let below = self.b.ins().fcmp(FloatCC::LessThan, a, split);
        let t = self.sel(below, small, big);
        let t = self.copy_sign(t, x);
        self.nan_passes(x, t)
    }

    /// [`m::erf_f32`].
    pub fn erf_f32(&mut self, x: Value) -> Value {
        let ty = self.b.func.dfg.value_type(x);
        let a = self.b.ins().fabs(x);
        let s = self.b.ins().fmul(x, x);
        let p = self.horner(&m::ERF_P, s);
        let ap = self.b.ins().fmul(a, p);
        let small = self.b.ins().fadd(a, ap);
        let one = self.f(ty, 1.0);
        let t = self.b.ins().fdiv(one, a);
        let ns = self.b.ins().fneg(s);
        let e = self.exp_finite(ns);
        let centre = self.f(ty, m::ERF_CENTRE);
        let u = self.b.ins().fsub(t, centre);
        let r = self.horner(&m::ERF_R, u);
        let er = self.b.ins().fmul(e, r);
        let big = self.b.ins().fsub(one, er);
        let lim = self.f(ty, m::ERF_ONE);
        let below_one = self.b.ins().fcmp(FloatCC::LessThan, a, one);
        let below_lim = self.b.ins().fcmp(FloatCC::LessThan, a, lim);
        let far = self.sel(below_lim, big, one);
        let v = self.sel(below_one, small, far);
        let v = self.copy_sign(v, x);
        self.nan_passes(x, v)
    }
}
