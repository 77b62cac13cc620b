//! f16 results rounded and narrowed by the runtime, a block at a time.
//!
//! Cranelift has no F16C: rounding an f32 to f16 and packing its bits takes about 25
//! instructions per four values in software ([`Fx::f32_to_f16`]), which a convolution with few
//! input channels pays for every output. A contraction with an f16 result therefore stores
//! its finished values as f32 into scratch (a [`Staging`] area) and has the runtime's
//! `NarrowF16` (F16C `vcvtps2ph`, eight values per instruction) round and narrow a block of
//! them in one call.
//!
//! The runtime rounds to nearest even, as the reference does, so the last rounding of the
//! value's chain need not be done in software first: it is *deferred* ([`Deferral`]) to the
//! narrowing. That is exact when nothing reads the rounded value but the store, or only a run
//! of `maximum`/`minimum` against constant f16 bounds (a ReLU6): such an op is evaluated on the
//! unrounded value against the bound's rounding threshold instead of the bound
//! ([`thresholds`]), which picks the same operand as the reference does on the rounded value,
//! down to the sign of a zero. Where the threshold rounds to the bound itself (every bound but
//! a zero) the op is x86's `maxps`/`minps` with the threshold. The reference's op gives the
//! canonical NaN where the value is NaN; the runtime's `NarrowF16Canonical` does that at the
//! narrowing, for every value of the block at once, instead of a compare and blend per vector.

use super::emit::{lanes, mem, Fx};
use crate::lower::{EwKind, Expr};
use cranelift_codegen::ir::condcodes::FloatCC;
use cranelift_codegen::ir::{InstBuilder, Value};
use f16c_core::abi::Libcall;
use f16c_dialect::{BinaryOp, DType};
use half::f16;

/// Which rounding of a contraction's finish the narrowing does instead.
#[derive(Clone, Debug, PartialEq)]
pub struct Deferral {
    /// The epilogue op whose rounding is deferred; `None`: the contraction's own (the result
    /// stored as it is, or read only by the bounds).
    pub op: Option<usize>,
    /// The `maximum`/`minimum`/`clamp` ops between it and the store, evaluated on the
    /// unrounded value (in the chain's order from the store back).
    pub bounds: Vec<Bound>,
    /// The expression's last op is a cast of the f16 value to f32 (`widen`): the staged values
    /// are rounded to f16 and stored widened (`RoundF16`), not narrowed, and that cast is
    /// skipped.
    pub widen: bool,
}

/// A `maximum` or `minimum` of the deferred value's chain with a constant f16 bound (a
/// `clamp` is two: its maximum, then its minimum).
#[derive(Clone, Debug, PartialEq)]
pub struct Bound {
    /// The op (an index into the epilogue's ops).
    pub op: usize,
    /// A maximum (else a minimum).
    pub max: bool,
    /// The chain is its first operand (else its second).
    pub chain_first: bool,
    /// The bound (an f16 value).
    pub value: f32,
}

/// The rounding that narrowing an f16 result can do in place of the last rounding of its
/// value: `expr` is the expression (a contraction's fused epilogue, value 0 its result, which
/// the kernel rounds to `result`; or an elementwise kernel's, `result` `None`: value 0 is an
/// input), `scalars` the constant value of each input that is one (values 1..). `None` when
/// the last rounding must happen in software (the result is neither f16 nor an f16 value cast
/// to f32 last, or the rounded value is read by anything but the store and constant bounds).
pub fn deferral(result: Option<DType>, expr: Option<&Expr>, scalars: &[Option<f32>]) -> Option<Deferral> {
    let result = result.unwrap_or(DType::F32);
    let Some(expr) = expr else {
        return (result == DType::F16).then(|| Deferral { op: None, bounds: Vec::new(), widen: false });
    };
    if !expr.is_f32_domain() {
        return None;
    }
    let inputs = expr.inputs.len();
    let mut uses = vec![0usize; inputs + expr.ops.len()];
    for op in &expr.ops {
        for &a in &op.args {
            uses[a] += 1;
        }
    }
    let mut at = inputs + expr.ops.len() - 1;
    // An f16 value cast to f32 last, read by nothing else: the chain ends at the cast's
    // argument, and the staged values are stored rounded but wide.
    let widen = match expr.ops.last() {
        Some(last) if last.kind == EwKind::Cast && last.dtype == DType::F32 && expr.arg_types(last) == [DType::F16] && uses[last.args[0]] == 1 => {
            at = last.args[0];
            true
        }
        _ if expr.result_dtype() == DType::F16 => false,
        _ => return None,
    };
    // A constant f16 bound: the value of an epilogue input that is one.
    let bound = |v: usize| (1..inputs).contains(&v).then(|| scalars.get(v - 1).copied().flatten()).flatten().filter(|_| expr.inputs[v] == DType::F16);
    // A clamp's bound as an f16 value: one past f16's range is ±inf there (f16 values
    // clamped at it are clamped at ±inf), one between f16 values is none.
    let clamp_bound = |v: f64| {
        let v = v as f32;
        if v.abs() >= super::softfloat::F16_OVERFLOW {
            Some(v.signum() * f32::INFINITY)
        } else {
            (f16::from_f32(v).to_f32().to_bits() == v.to_bits()).then_some(v)
        }
    };
    let mut bounds = Vec::new();
    loop {
        if at < inputs {
            return (at == 0 && result == DType::F16).then_some(Deferral { op: None, bounds, widen });
        }
        let i = at - inputs;
        let op = &expr.ops[i];
        let types = expr.arg_types(op);
        if op.dtype != DType::F16 {
            return None;
        }
        let all_f16 = types.iter().all(|&t| t == DType::F16);
        let max = op.kind == EwKind::Binary(BinaryOp::Maximum);
        let chain = match (op.kind, op.args.as_slice()) {
            (EwKind::Binary(BinaryOp::Maximum | BinaryOp::Minimum), &[a, b]) if all_f16 => match (bound(a), bound(b)) {
                (None, Some(value)) => {
                    bounds.push(Bound { op: i, max, chain_first: true, value });
                    a
                }
                (Some(value), None) => {
                    bounds.push(Bound { op: i, max, chain_first: false, value });
                    b
                }
                _ => return None,
            },
            (EwKind::Clamp { min, max }, &[a]) if all_f16 => {
                // max(x, lo), then min(·, hi): pushed from the store back.
                let (lo, hi) = (clamp_bound(min)?, clamp_bound(max)?);
                bounds.push(Bound { op: i, max: false, chain_first: true, value: hi });
                bounds.push(Bound { op: i, max: true, chain_first: true, value: lo });
                a
            }
            _ if Fx::ew_rounds(op, &types) && types.iter().all(|&t| matches!(t, DType::F16 | DType::F32)) => {
                return Some(Deferral { op: Some(i), bounds, widen });
            }
            _ => return None,
        };
        if uses[chain] != 1 {
            return None;
        }
        at = chain;
    }
}

/// The least f32 that rounds to an f16 value at or above `k`, and the greatest that rounds to
/// one at or below it (`k` an f16 value, not NaN; −0 and +0 compare equal, as in the
/// reference's `maximum`). Found by bisection over the f32 values in order.
pub fn thresholds(k: f32) -> (f32, f32) {
    // f32 bits to a key in numeric order (−0 just below +0), and back.
    let key = |x: f32| {
        let b = x.to_bits();
        if b >> 31 == 1 { -((b & 0x7fff_ffff) as i64) - 1 } else { b as i64 }
    };
    let value = |k: i64| if k < 0 { f32::from_bits((-(k + 1)) as u32 | 0x8000_0000) } else { f32::from_bits(k as u32) };
    let rounded = |k: i64| f16::from_f32(value(k)).to_f32();
    let (lowest, highest) = (key(f32::NEG_INFINITY), key(f32::INFINITY));
    // The first key in `lo..hi` where `p` holds (`p` false, then true), or `hi`.
    let first = |mut lo: i64, mut hi: i64, p: &dyn Fn(i64) -> bool| {
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if p(mid) { hi = mid } else { lo = mid + 1 }
        }
        lo
    };
    // One past the last key where none holds (nothing rounds above +inf).
    let at_or_above = first(lowest, highest + 1, &|x| rounded(x) >= k);
    let above = first(lowest, highest + 1, &|x| rounded(x) > k);
    (value(at_or_above), value(above - 1))
}

impl Bound {
    /// The bound applied to the unrounded value `x` as `x at t ? v : x` (a compare with NaN
    /// fails): `(at, t, v)`. Where the threshold `t` rounds to the bound itself (every bound
    /// but a zero, whose threshold rounds to the other zero), `v` is `t` and the test is `<`
    /// for a maximum, `>` for a minimum (x86's `maxps t, x` / `minps t, x`); otherwise `v` is
    /// the bound and the test is the threshold's side of it.
    pub fn unrounded(&self) -> (FloatCC, f32, f32) {
        let (at_or_above, at_or_below) = thresholds(self.value);
        // max(x, k) keeps x where round(x) ≥ k; max(k, x) keeps k where k ≥ round(x), i.e.
        // round(x) ≤ k; min mirrors them.
        let (cc, t) = if self.max == self.chain_first { (FloatCC::GreaterThanOrEqual, at_or_above) } else { (FloatCC::LessThanOrEqual, at_or_below) };
        if f16::from_f32(t).to_bits() == f16::from_f32(self.value).to_bits() {
            return (if self.max { FloatCC::LessThan } else { FloatCC::GreaterThan }, t, t);
        }
        // The bound where `x` is a number on its side of the threshold (`x cc t` when the
        // bound comes first; when the chain does, where `x cc t` fails).
        let at_bound = match (self.chain_first, cc) {
            (false, cc) => cc,
            (true, FloatCC::GreaterThanOrEqual) => FloatCC::LessThan,
            (true, _) => FloatCC::GreaterThan,
        };
        (at_bound, t, self.value)
    }
}

impl Fx<'_> {
    /// The reference's `maximum`/`minimum` of the rounded `x` and the f16 bound `b`, computed
    /// on `x` before it is rounded (see the module's description and [`Bound::unrounded`]), but
    /// NaN with `x`'s payload where `x` is NaN: the staging of a deferral with bounds narrows
    /// with `NarrowF16Canonical`, which gives the canonical NaN the reference's op does.
    pub fn bound_unrounded(&mut self, b: &Bound, x: Value) -> Value {
        let (at_bound, t, v) = b.unrounded();
        let max = b.max;
        let ty = self.b.func.dfg.value_type(x);
        let r = if v.to_bits() == t.to_bits() {
            // The threshold rounds to the bound itself (every bound but a zero, whose
            // threshold rounds to the other zero): where the reference takes the bound, take
            // the threshold, `x < t ? t : x` for the maximum and `t < x ? t : x` for the
            // minimum (equal values give either), which the narrowing then rounds to the
            // bound. These give `x` where it is NaN, and are x86's `maxps t, x` / `minps t, x`.
            let t = self.f(ty, t);
            let (p, q) = if max { (x, t) } else { (t, x) };
            let less = self.b.ins().fcmp(FloatCC::LessThan, p, q);
            if ty.is_vector() {
                let mask = self.b.ins().bitcast(ty, lanes(), less);
                self.b.ins().bitselect(mask, t, x)
            } else {
                self.b.ins().select(less, t, x)
            }
        } else {
            // The bound where `x` is a number on its side of the threshold, else `x`.
            let t = self.f(ty, t);
            let at_bound = self.b.ins().fcmp(at_bound, x, t);
            if ty.is_vector() && b.value.to_bits() == 0 {
                // A +0 bound (a ReLU's) is all zero bits: clear the lanes that take it.
                let mask = self.b.ins().bitcast(ty, lanes(), at_bound);
                self.b.ins().band_not(x, mask)
            } else {
                let bound = self.f(ty, b.value);
                self.sel(at_bound, bound, x)
            }
        };
        self.same_nans(x, r);
        r
    }
}

/// An f32 staging area in scratch for f16 results: finished values are stored at element
/// offsets, then [`Staging::narrow`] has the runtime round and narrow a run of them.
#[derive(Clone, Copy)]
pub struct Staging {
    /// Where the staged f32 values start (in scratch).
    pub base: Value,
    /// Every NaN narrows to the canonical one (`NarrowF16Canonical`): the staged values are a
    /// deferral's with bounds, whose NaNs the reference makes canonical and
    /// [`Fx::bound_unrounded`] leaves as they are.
    pub canonical: bool,
    /// The output is f32: the values are rounded to f16 and stored widened (`RoundF16`).
    pub widen: bool,
}

impl Staging {
    /// The staging of values finished with `deferral` (or without one).
    pub fn new(base: Value, deferral: Option<&Deferral>) -> Staging {
        Staging { base, canonical: deferral.is_some_and(|d| !d.bounds.is_empty()), widen: deferral.is_some_and(|d| d.widen) }
    }

    /// Stores `v` (f32, or f32x4 for four consecutive elements) at element `at`.
    pub fn put(&self, fx: &mut Fx, at: Value, v: Value) {
        let p = fx.addr(self.base, at, 4);
        fx.b.ins().store(mem(), v, p, 0);
    }

    /// Rounds and narrows `n` staged values from element `from` into f16 element `to` of `out`
    /// (rounds them into f32 element `to` where the output is f32).
    pub fn narrow(&self, fx: &mut Fx, from: Value, out: Value, to: Value, n: Value) {
        let src = fx.addr(self.base, from, 4);
        if self.widen {
            let dst = fx.addr(out, to, 4);
            let canonical = fx.i(self.canonical as i64);
            fx.libcall(Libcall::RoundF16, &[src, dst, n, canonical]);
        } else {
            let dst = fx.addr(out, to, 2);
            fx.libcall(if self.canonical { Libcall::NarrowF16Canonical } else { Libcall::NarrowF16 }, &[src, dst, n]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lower::EwOp;

    /// f32 values around every f16 value's rounding boundaries (and a sweep of others).
    fn probes() -> Vec<f32> {
        let mut v = Vec::new();
        for h in 0..=u16::MAX {
            let x = f16::from_bits(h).to_f32();
            if x.is_nan() {
                continue;
            }
            let b = x.to_bits();
            for d in [0u32, 1, 0xfff, 0x1000, 0x1001, 0x2000] {
                v.push(f32::from_bits(b.wrapping_add(d)));
                v.push(f32::from_bits(b.wrapping_sub(d)));
            }
        }
        v.extend([1e-10f32, -1e-10, 65519.0, 65520.0, -65520.0, f32::MAX, f32::MIN, 0.0, -0.0].iter());
        v.retain(|x| !x.is_nan());
        v
    }

    #[test]
    fn thresholds_decide_as_the_rounded_value_does() {
        let round = |x: f32| f16::from_f32(x).to_f32();
        let probes = probes();
        for k in [0.0f32, -0.0, 6.0, 1.0, -1.0, 65504.0, -65504.0, f32::INFINITY, f32::NEG_INFINITY, 5.960_464_5e-8, 6.103_515_6e-5, 0.333_251_95] {
            assert_eq!(round(k).to_bits(), k.to_bits(), "{k} is an f16 value");
            let (lo, hi) = thresholds(k);
            for &x in &probes {
                assert_eq!(round(x) >= k, x >= lo, "round({x:e}) >= {k}: threshold {lo:e}");
                assert_eq!(round(x) <= k, x <= hi, "round({x:e}) <= {k}: threshold {hi:e}");
            }
        }
        // Ties go to even: 6 + 2^-9 is halfway between 6 and 6 + 2^-8 and rounds to 6.
        assert_eq!(thresholds(6.0).1, 6.0 + 2f32.powi(-9));
        assert_eq!(thresholds(0.0).0, -(2f32.powi(-25)));
    }

    fn op(kind: EwKind, args: &[usize]) -> EwOp {
        EwOp { kind, dtype: DType::F16, args: args.to_vec(), shift: 0, zp: (0, 0) }
    }

    #[test]
    fn the_last_rounding_is_deferred_through_constant_bounds_only() {
        let max = EwKind::Binary(BinaryOp::Maximum);
        let min = EwKind::Binary(BinaryOp::Minimum);
        let add = EwKind::Binary(BinaryOp::Add);
        let f16s = |n: usize| vec![DType::F16; n];
        // No epilogue: the contraction's own rounding.
        assert_eq!(deferral(Some(DType::F16), None, &[]), Some(Deferral { op: None, bounds: vec![], widen: false }));
        assert_eq!(deferral(Some(DType::F32), None, &[]), None);
        // ReLU6 as min(max(x, 0), 6): both bounds, then the contraction's rounding.
        let relu6 = Expr { inputs: f16s(3), ops: vec![op(max, &[0, 1]), op(min, &[3, 2])] };
        let d = deferral(Some(DType::F16), Some(&relu6), &[Some(0.0), Some(6.0)]).expect("deferred");
        assert_eq!(d.op, None);
        assert_eq!(d.bounds, vec![Bound { op: 1, max: false, chain_first: true, value: 6.0 }, Bound { op: 0, max: true, chain_first: true, value: 0.0 }]);
        // A bound read from memory, not a constant: the rounding stays.
        assert_eq!(deferral(Some(DType::F16), Some(&relu6), &[None, Some(6.0)]), None);
        // An elementwise kernel's input is not rounded by it: nothing to defer past bounds.
        assert_eq!(deferral(None, Some(&relu6), &[Some(0.0), Some(6.0)]), None);
        // A residual add last: its rounding.
        let residual = Expr { inputs: f16s(2), ops: vec![op(add, &[0, 1])] };
        assert_eq!(deferral(Some(DType::F16), Some(&residual), &[None]), Some(Deferral { op: Some(0), bounds: vec![], widen: false }));
        // The rounded value read twice (x + max(x, 0)): nothing is deferred past the max.
        let twice = Expr { inputs: f16s(2), ops: vec![op(max, &[0, 1]), op(add, &[2, 0])] };
        assert_eq!(deferral(Some(DType::F16), Some(&twice), &[Some(0.0)]), Some(Deferral { op: Some(1), bounds: vec![], widen: false }));
        let reread = Expr { inputs: f16s(2), ops: vec![op(add, &[0, 0]), op(max, &[2, 1]), op(add, &[3, 2]), op(max, &[4, 1])] };
        assert_eq!(deferral(Some(DType::F16), Some(&reread), &[Some(0.0)]), Some(Deferral { op: Some(2), bounds: vec![Bound { op: 3, max: true, chain_first: true, value: 0.0 }], widen: false }));
        // The bound first: max(0, x).
        let flipped = Expr { inputs: f16s(2), ops: vec![op(max, &[1, 0])] };
        assert_eq!(deferral(Some(DType::F16), Some(&flipped), &[Some(0.0)]).expect("deferred").bounds, vec![Bound { op: 0, max: true, chain_first: false, value: 0.0 }]);
        // A clamp at bounds f16 holds (or past its range: ±inf), read in f32: two bounds,
        // rounded and widened at the store.
        let clamp = |min: f64, max: f64| EwOp { kind: EwKind::Clamp { min, max }, dtype: DType::F16, args: vec![0], shift: 0, zp: (0, 0) };
        let cast = EwOp { kind: EwKind::Cast, dtype: DType::F32, args: vec![1], shift: 0, zp: (0, 0) };
        let wide = Expr { inputs: f16s(1), ops: vec![clamp(0.0, 3.4e38), cast.clone()] };
        let bounds = vec![Bound { op: 0, max: false, chain_first: true, value: f32::INFINITY }, Bound { op: 0, max: true, chain_first: true, value: 0.0 }];
        assert_eq!(deferral(Some(DType::F16), Some(&wide), &[]), Some(Deferral { op: None, bounds, widen: true }));
        // A bound between f16 values: rounded in software.
        let between = Expr { inputs: f16s(1), ops: vec![clamp(-0.3, 6.0), cast] };
        assert_eq!(deferral(Some(DType::F16), Some(&between), &[]), None);
    }
}
