//! f16c's own f32 `exp`, `tanh` and `erf`: the functions of the numeric contract (the reference
//! interpreter, the runtime's libcall table and every CPU backend compute exactly these bits).
//!
//! They are defined here rather than taken from the host's C library so that they are the same
//! on every host (glibc picks an FMA variant of `expf` on CPUs that have FMA) and so that the
//! code generators can emit them inline on vector lanes: each is straight-line f32 arithmetic
//! (no table, no fused multiply-add, branches as selects), and a backend that performs the same
//! operations in the same order gets the same bits. [`exp_f32`]'s steps are spelled out one per
//! statement for that reason; the emitters (`backend/cranelift/emit.rs`) follow them.
//!
//! Accuracy against the exact result (in ulps of the f32 spacing there), measured once over every
//! f32 (2^32 inputs): `exp` within 0.94, `tanh` within 1.14, `erf` within 1.38 (its worst case
//! just below 1, where `x + x·P(x²)` ends); the tests below check every 4099th f32. NaN in, the same NaN
//! quieted out (`x + x`). The polynomial coefficients are fitted by `scripts/fit_math.py`
//! (near-minimax, relative error).

/// `1/ln 2`, rounded to f32.
pub const INV_LN2: f32 = f32::from_bits(0x3fb8_aa3b);
/// The high part of `ln 2` (16 significant bits: `k · LN2_HI` is exact for |k| ≤ 256).
pub const LN2_HI: f32 = f32::from_bits(0x3f31_7200);
/// `ln 2 − LN2_HI`, rounded to f32.
pub const LN2_LO: f32 = f32::from_bits(0x35bf_be8e);
/// `exp`'s argument is clamped to `[EXP_MIN, EXP_MAX]` first: below, the result is 0 (it is
/// under half the smallest subnormal); above, it is +inf. Within, `k` stays in `[-150, 128]`.
pub const EXP_MIN: f32 = -104.0;
/// See [`EXP_MIN`].
pub const EXP_MAX: f32 = 89.0;
/// `P(s) ≈ (r·coth(r/2) − 2)/s`, `s = r²`, `|r| ≤ ln2/2`.
pub const EXP_P: [f32; 2] = [f32::from_bits(0x3e2a_aaa3), f32::from_bits(0xbb35_8677)];

/// Below this `|x|`, `tanh(|x|) = |x| + |x|·(s·P(s))`, `s = x²`; from it on,
/// `1 − 2/(exp(2|x|) + 1)`; then `x`'s sign.
pub const TANH_SPLIT: f32 = 0.875;
/// `P(s) ≈ (tanh(x)/x − 1)/s` on `s ∈ [0, TANH_SPLIT²]`.
pub const TANH_P: [f32; 7] = [
    f32::from_bits(0xbeaa_aaab),
    f32::from_bits(0x3e08_8865),
    f32::from_bits(0xbd5d_01e2),
    f32::from_bits(0x3cb2_666b),
    f32::from_bits(0xbc0b_403b),
    f32::from_bits(0x3b38_b8e4),
    f32::from_bits(0xba0f_90a1),
];

/// Below `|x| = 1`, `erf(|x|) = |x| + |x|·P(s)`, `s = x²`, `P ≈ erf(x)/x − 1` (then `x`'s sign).
pub const ERF_P: [f32; 7] = [
    f32::from_bits(0x3e03_75d4),
    f32::from_bits(0xbec0_939e),
    f32::from_bits(0x3de7_1679),
    f32::from_bits(0xbcdb_fddd),
    f32::from_bits(0x3baa_15e4),
    f32::from_bits(0xba52_b34a),
    f32::from_bits(0x38a7_068d),
];
/// For `1 ≤ |x| < ERF_ONE`, `erf(|x|) = 1 − exp(−x²)·R(1/|x| − ERF_CENTRE)`, `R ≈ erfc·exp(x²)`.
pub const ERF_R: [f32; 9] = [
    f32::from_bits(0x3e9c_a5de),
    f32::from_bits(0x3ec3_baa9),
    f32::from_bits(0xbe30_8725),
    f32::from_bits(0x3d33_652c),
    f32::from_bits(0x3cbd_aad1),
    f32::from_bits(0xbd43_a605),
    f32::from_bits(0x3d3b_dc07),
    f32::from_bits(0xbc9a_9db1),
    f32::from_bits(0xbc3a_58ff),
];
/// The centre of [`ERF_R`]'s variable (so that Horner's terms do not cancel).
pub const ERF_CENTRE: f32 = 0.625;
/// From this `|x|` on, `erf(x) = ±1` (`erfc(4) < ulp(1)/2`).
pub const ERF_ONE: f32 = 4.0;

/// `c[n]·s^n + … + c[0]` by Horner's rule, one multiply and one add per step (no FMA).
#[inline(always)]
pub fn horner(c: &[f32], s: f32) -> f32 {
    let mut r = c[c.len() - 1];
    for &k in c[..c.len() - 1].iter().rev() {
        r = r * s + k;
    }
    r
}

/// `2^n` for `n` in `[-126, 127]`, from its bits.
#[inline(always)]
pub fn pow2(n: i32) -> f32 {
    f32::from_bits(((n + 127) as u32) << 23)
}

/// `e^x`.
#[inline]
#[allow(clippy::manual_clamp, reason = "the contract's steps spelled out one per statement, as the emitters follow them")]
pub fn exp_f32(x: f32) -> f32 {
    let xc = if x > EXP_MAX {
        EXP_MAX
    } else if x < EXP_MIN {
        EXP_MIN
    } else {
        x
    };
    // x = k·ln2 + r, |r| ≤ ln2/2 (Cody–Waite: hi − lo).
    let k = (xc * INV_LN2).round_ties_even();
    let hi = xc - k * LN2_HI;
    let lo = k * LN2_LO;
    let r = hi - lo;
    // e^r = 1 + r + r·c/(2 − c), c = r − r²·P(r²).
    let rr = r * r;
    let c = r - rr * horner(&EXP_P, rr);
    let y = 1.0 + ((r * c / (2.0 - c) - lo) + hi);
    // y·2^k in two exact-range steps (k/2 and k − k/2 are normal exponents; one rounding).
    // k as an integer, read from the bits of k + 1.5·2^23 (exact: k is integral and |k| ≤ 150),
    // not by `as`, whose saturation LLVM turns into a scalar conversion per lane. (For a NaN
    // the value is meaningless and discarded below.)
    let ki = ((k + 12_582_912.0).to_bits() as i32).wrapping_sub(0x4b40_0000);
    let a = ki >> 1;
    let b = ki - a;
    let e = (y * pow2(a)) * pow2(b);
    if x.is_nan() {
        x + x
    } else {
        e
    }
}

/// `tanh(x)`.
#[inline]
pub fn tanh_f32(x: f32) -> f32 {
    let a = x.abs();
    let s = x * x;
    let small = a + a * (s * horner(&TANH_P, s));
    let e = exp_f32(a + a);
    let big = 1.0 - 2.0 / (e + 1.0);
    let t = if a < TANH_SPLIT { small } else { big };
    if x.is_nan() {
        x + x
    } else {
        t.copysign(x)
    }
}

/// `erf(x)`.
#[inline]
pub fn erf_f32(x: f32) -> f32 {
    let a = x.abs();
    let s = x * x;
    let small = a + a * horner(&ERF_P, s);
    let t = 1.0 / a;
    let e = exp_f32(-s);
    let big = 1.0 - e * horner(&ERF_R, t - ERF_CENTRE);
    let r = if a < 1.0 {
        small
    } else if a < ERF_ONE {
        big
    } else {
        1.0
    };
    if x.is_nan() {
        x + x
    } else {
        r.copysign(x)
    }
}

/// `sigmoid(x) = 1 / (1 + e^−x)`, with the contract's [`exp_f32`]: a negation, the exp, an add
/// and an IEEE division (what every backend computes, and the reference's f32 sigmoid).
#[inline]
pub fn sigmoid_f32(x: f32) -> f32 {
    1.0 / (1.0 + exp_f32(-x))
}

/// A 16-bit float type (bf16 or IEEE fp16) whose values index the tables of [`erf_table`],
/// [`exp_table`] and [`sigmoid_table`]: a function of an f32 that holds such a value has at most 65,536 arguments,
/// which a backend may look up rather than compute.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Half16 {
    /// bf16: an f32's top half.
    Bf16,
    /// IEEE binary16.
    F16,
}

impl Half16 {
    /// The value whose bits are `h`, exactly.
    pub fn to_f32(self, h: u16) -> f32 {
        match self {
            Half16::Bf16 => f32::from_bits(u32::from(h) << 16),
            Half16::F16 => half::f16::from_bits(h).to_f32(),
        }
    }

    /// The bits of `v`, one of this type's values.
    const fn bits(self, v: f32) -> u32 {
        match self {
            Half16::Bf16 => v.to_bits() >> 16,
            Half16::F16 => half::f16::from_f32_const(v).to_bits() as u32,
        }
    }

    /// The last index of [`erf_table`]: [`ERF_ONE`]'s bits, where erf reaches 1 and stays.
    pub const fn erf_last(self) -> u32 {
        self.bits(ERF_ONE)
    }

    /// The last magnitude indices of [`exp_table`]'s halves: [`EXP_MAX`]'s and [`EXP_MIN`]'s
    /// (values of both types).
    pub const fn exp_last(self) -> (u32, u32) {
        (self.bits(EXP_MAX), self.bits(EXP_MIN) & 0x7fff)
    }

    /// The last magnitude indices of [`sigmoid_table`]'s halves: `−EXP_MIN`'s and `EXP_MAX`'s
    /// (sigmoid takes the exp of `−x`, whose clamp is `exp_f32`'s).
    pub const fn sigmoid_last(self) -> (u32, u32) {
        (self.bits(EXP_MIN) & 0x7fff, self.bits(EXP_MAX))
    }
}

const _: () = assert!(
    ERF_ONE.to_bits() & 0xffff == 0 && EXP_MAX.to_bits() & 0xffff == 0 && EXP_MIN.to_bits() & 0xffff == 0 && EXP_MIN < 0.0 && EXP_MAX > 0.0,
    "the tables' ends are bf16 values (and so fp16 ones) on either side of zero"
);

/// [`erf_f32`] at the non-negative values of `t` up to [`ERF_ONE`] (16,513 f32 for bf16,
/// 17,409 for fp16), indexed by their bits: erf is odd here (computed on `|x|`, the sign
/// copied), so `erf_f32(x)` of such a value `x` is the entry at `min(|x|'s bits,
/// t.erf_last())` with `x`'s sign, a NaN aside ([`erf_at`]).
pub fn erf_table(t: Half16) -> Vec<f32> {
    (0..=t.erf_last()).map(|i| erf_f32(t.to_f32(i as u16))).collect()
}

/// [`erf_f32`] of the value of `t` whose bits are `h`, from `table` ([`erf_table`]): what a
/// backend's lookup computes.
pub fn erf_at(table: &[f32], t: Half16, h: u16) -> f32 {
    let x = t.to_f32(h);
    if x.is_nan() {
        x + x
    } else {
        table[u32::from(h & 0x7fff).min(t.erf_last()) as usize].copysign(x)
    }
}

/// [`exp_f32`] at the values of `t` in `[EXP_MIN, EXP_MAX]` (34,180 f32 for bf16, 44,050 for
/// fp16): the non-negative ones from 0, then the negative ones; [`exp_index`] finds a value's
/// entry (exp clamps its argument to that range first).
pub fn exp_table(t: Half16) -> Vec<f32> {
    two_sided_table(t, t.exp_last(), exp_f32)
}

/// `f` at the values of `t` from 0 up to magnitude index `pos`, then from −0 down to magnitude
/// index `neg` (the layout of [`exp_table`] and [`sigmoid_table`], whose functions clamp
/// their arguments at both ends).
fn two_sided_table(t: Half16, (pos, neg): (u32, u32), f: fn(f32) -> f32) -> Vec<f32> {
    let at = |h: u32| f(t.to_f32(h as u16));
    (0..=pos).map(at).chain((0..=neg).map(|i| at(i | 0x8000))).collect()
}

/// The entry of a [`two_sided_table`] with ends `(pos, neg)` for the bits `h` (a value past an
/// end takes the end's entry).
fn two_sided_index((pos, neg): (u32, u32), h: u16) -> usize {
    let magnitude = u32::from(h & 0x7fff);
    if h & 0x8000 == 0 {
        magnitude.min(pos) as usize
    } else {
        (pos + 1 + magnitude.min(neg)) as usize
    }
}

/// The entry of [`exp_table`] for the value of `t` whose bits are `h` (a NaN's entry is some
/// entry: `exp_f32` of a NaN is the NaN itself, quieted).
pub fn exp_index(t: Half16, h: u16) -> usize {
    two_sided_index(t.exp_last(), h)
}

/// [`exp_f32`] of the value of `t` whose bits are `h`, from `table` ([`exp_table`]): its entry,
/// or for a NaN the NaN quieted as `exp_f32` passes it; what a backend's lookup computes.
pub fn exp_at(table: &[f32], t: Half16, h: u16) -> f32 {
    let x = t.to_f32(h);
    if x.is_nan() {
        x + x
    } else {
        table[exp_index(t, h)]
    }
}

/// [`sigmoid_f32`] at the values of `t` in `[−EXP_MAX, −EXP_MIN]` (34,180 f32 for bf16, 44,050
/// for fp16): the non-negative ones from 0, then the negative ones. Outside, `exp_f32(−x)`
/// clamps its argument, so sigmoid is the value at the nearer end: 1 above `−EXP_MIN`, 0 below
/// `−EXP_MAX` ([`sigmoid_index`]).
pub fn sigmoid_table(t: Half16) -> Vec<f32> {
    two_sided_table(t, t.sigmoid_last(), sigmoid_f32)
}

/// The entry of [`sigmoid_table`] for the value of `t` whose bits are `h` (a NaN's entry is
/// some entry: [`sigmoid_at`] passes the NaN).
pub fn sigmoid_index(t: Half16, h: u16) -> usize {
    two_sided_index(t.sigmoid_last(), h)
}

/// [`sigmoid_f32`] of the value of `t` whose bits are `h`, from `table` ([`sigmoid_table`]): its
/// entry, or for a NaN the NaN as `sigmoid_f32` passes it (negated, then quieted by `exp_f32`);
/// what a backend's lookup computes.
pub fn sigmoid_at(table: &[f32], t: Half16, h: u16) -> f32 {
    let x = t.to_f32(h);
    if x.is_nan() {
        -x + -x
    } else {
        table[sigmoid_index(t, h)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Distance in ulps between `got` and the exact `want` (f64), in units of the f32 spacing
    /// at `want`.
    fn ulps(got: f32, want: f64) -> f64 {
        if want.is_nan() {
            return if got.is_nan() { 0.0 } else { f64::INFINITY };
        }
        let w = want as f32;
        if w.is_infinite() {
            return if got == w { 0.0 } else { f64::INFINITY };
        }
        let spacing = f32::from_bits(w.abs().to_bits() + 1) as f64 - w.abs() as f64;
        let spacing = if w.abs() == f32::MAX { f32::MAX as f64 * f32::EPSILON as f64 } else { spacing };
        (got as f64 - want).abs() / spacing.max(f32::from_bits(1) as f64)
    }

    /// Every 4099th f32 (a million inputs over every binade and sign), plus the edges.
    fn inputs() -> impl Iterator<Item = f32> {
        let edges = [0.0, -0.0, 1.0, -1.0, 4.0, -4.0, TANH_SPLIT, -TANH_SPLIT, EXP_MAX, EXP_MIN, 88.72283, 88.72284, -87.33654, -103.97208, -103.9721, f32::INFINITY, f32::NEG_INFINITY, f32::MIN_POSITIVE, f32::from_bits(1)];
        (0..=u32::MAX / 4099).map(|i| f32::from_bits(i * 4099)).chain(edges)
    }

    fn worst(f: fn(f32) -> f32, exact: fn(f64) -> f64) -> (f64, f32) {
        inputs().filter(|x| !x.is_nan()).map(|x| (ulps(f(x), exact(x as f64)), x)).fold((0.0, 0.0), |w, v| if v.0 > w.0 { v } else { w })
    }

    #[test]
    fn exp_is_within_one_ulp_everywhere() {
        let (u, x) = worst(exp_f32, f64::exp);
        assert!(u < 1.0, "exp({x:e}) is {u} ulps off");
        assert_eq!(exp_f32(0.0), 1.0);
        assert_eq!(exp_f32(f32::NEG_INFINITY), 0.0);
        assert_eq!(exp_f32(f32::INFINITY), f32::INFINITY);
        assert_eq!(exp_f32(100.0), f32::INFINITY);
        assert_eq!(exp_f32(-110.0), 0.0);
        assert_eq!(exp_f32(-103.0).to_bits(), ((-103.0f64).exp() as f32).to_bits(), "a subnormal result, rounded once");
    }

    #[test]
    fn tanh_and_erf_are_within_a_little_over_one_ulp_everywhere() {
        let (u, x) = worst(tanh_f32, f64::tanh);
        assert!(u < 1.2, "tanh({x:e}) is {u} ulps off");
        let (u, x) = worst(erf_f32, libm::erf);
        assert!(u < 1.4, "erf({x:e}) is {u} ulps off");
        for (x, y) in [(0.0f32, 0.0f32), (-0.0, -0.0), (30.0, 1.0), (-30.0, -1.0), (f32::INFINITY, 1.0), (f32::NEG_INFINITY, -1.0)] {
            assert_eq!(tanh_f32(x).to_bits(), y.to_bits(), "tanh({x})");
            assert_eq!(erf_f32(x).to_bits(), y.to_bits(), "erf({x})");
        }
    }

    #[test]
    fn nan_comes_back_quieted_with_its_payload() {
        let nan = f32::from_bits(0x7f80_0001);
        for f in [exp_f32, tanh_f32, erf_f32] {
            assert_eq!(f(nan).to_bits(), 0x7fc0_0001);
            assert_eq!(f(-f32::NAN).to_bits(), (-f32::NAN).to_bits());
        }
    }

    /// The tables give `exp_f32`, `erf_f32` and `sigmoid_f32` bit for bit at every bf16 and
    /// every fp16 value, NaNs, infinities, subnormals and the clamped ranges included.
    #[test]
    fn the_16_bit_tables_give_the_functions_at_every_value() {
        for t in [Half16::Bf16, Half16::F16] {
            let (exp, erf, sigmoid) = (exp_table(t), erf_table(t), sigmoid_table(t));
            for h in 0..=u16::MAX {
                let x = t.to_f32(h);
                assert_eq!(exp_at(&exp, t, h).to_bits(), exp_f32(x).to_bits(), "{t:?}: exp of {x} ({h:#06x})");
                assert_eq!(erf_at(&erf, t, h).to_bits(), erf_f32(x).to_bits(), "{t:?}: erf of {x} ({h:#06x})");
                assert_eq!(sigmoid_at(&sigmoid, t, h).to_bits(), sigmoid_f32(x).to_bits(), "{t:?}: sigmoid of {x} ({h:#06x})");
            }
        }
        assert_eq!((sigmoid_table(Half16::Bf16).len(), sigmoid_table(Half16::F16).len()), (34_180, 44_050));
        assert_eq!((exp_table(Half16::Bf16).len(), exp_table(Half16::F16).len()), (34_180, 44_050));
        assert_eq!((erf_table(Half16::Bf16).len(), erf_table(Half16::F16).len()), (16_513, 17_409));
    }
}
