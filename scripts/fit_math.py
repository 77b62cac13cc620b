"""Derives the polynomial coefficients of f16c's own f32 math functions (core/src/math.rs).

    .venv-export/bin/python scripts/fit_math.py      # needs numpy and mpmath

Each approximation is fitted by Lawson-weighted least squares at Chebyshev nodes (near-minimax),
in the variable the f32 code evaluates it in, with the error measured relative to the function,
and the coefficients are printed as f32 bit patterns (what math.rs holds). Then the f32
evaluation is simulated with numpy float32 on a dense grid and its error printed in ulps of the
exact result, so a change of degree can be judged before touching the Rust. The Rust tests
(`core/src/math.rs`) check every 4099th f32; the bounds in its doc comment were measured once
over all 2^32 inputs by running those tests with the sample's step set to 1 (a few minutes in
release mode).
"""
import math

import mpmath
import numpy as np

mpmath.mp.prec = 120


def fit(f, lo, hi, degree, nodes=400, iters=60, centre=0.0):
    """Coefficients c[0..degree] of p(s) = sum c_i (s - centre)^i ≈ f(s) on [lo, hi], relative
    error."""
    k = np.arange(nodes)
    s = (lo + hi) / 2 + (hi - lo) / 2 * np.cos(np.pi * (k + 0.5) / nodes)
    y = np.array([float(f(mpmath.mpf(float(v)))) for v in s])
    a = np.vstack([(s - centre) ** i for i in range(degree + 1)]).T / np.abs(y)[:, None]
    b = y / np.abs(y)
    w = np.ones(nodes) / nodes
    for _ in range(iters):
        sw = np.sqrt(w)
        c, *_ = np.linalg.lstsq(a * sw[:, None], b * sw, rcond=None)
        e = np.abs(a @ c - b)
        w = w * e
        w /= w.sum()
    return c, np.max(np.abs(a @ c - b))


def f32(v):
    return np.float32(v)


def bits(c):
    return ", ".join(f"0x{np.float32(v).view(np.uint32):08x}" for v in c)


def horner(c, s):
    r = np.full_like(s, f32(c[-1]))
    for v in reversed(c[:-1]):
        r = r * s + f32(v)
    return r


def ulps(got, exact):
    exact32 = exact.astype(np.float32)
    step = np.abs(np.spacing(exact32)).astype(np.float64)
    return np.abs(got.astype(np.float64) - exact) / step


def report(name, c, err):
    print(f"{name}: degree {len(c) - 1}, fit error {err:.3e} (2^{math.log2(err):.1f})")
    print(f"  [{bits(c)}]")


# exp: exp(r) = 1 + r + r·c/(2 − c), c = r − r²·P(r²), P ≈ (r·coth(r/2) − 2)/r², |r| ≤ ln2/2.
half = math.log(2) / 2
pe, err = fit(lambda s: (mpmath.sqrt(s) / mpmath.tanh(mpmath.sqrt(s) / 2) - 2) / s if s > 0 else mpmath.mpf(1) / 6, 1e-12, half * half, 1)
report("exp P", pe, err)

# tanh: |x| < TANH_SPLIT: x + x·(s·P(s)), s = x², P ≈ (tanh(x)/x − 1)/s.
TANH_SPLIT = 0.875
pt, err = fit(lambda s: (mpmath.tanh(mpmath.sqrt(s)) / mpmath.sqrt(s) - 1) / s, 1e-12, TANH_SPLIT**2, 6)
report("tanh P", pt, err)

# erf: |x| < 1: x + x·P(s), s = x², P ≈ erf(x)/x − 1.
pf, err = fit(lambda s: mpmath.erf(mpmath.sqrt(s)) / mpmath.sqrt(s) - 1 if s > 0 else 2 / mpmath.sqrt(mpmath.pi) - 1, 0.0, 1.0, 6)
report("erf P (|x| < 1)", pf, err)

# erf: 1 ≤ |x| < 4: 1 − exp(−x²)·R(t − 5/8), t = 1/|x|, R ≈ erfc(x)·exp(x²); centred, so
# that Horner's terms do not cancel.
pr, err = fit(lambda t: mpmath.erfc(1 / t) * mpmath.exp(1 / (t * t)), 0.25, 1.0, 8, centre=0.625)
report("erf R (1 ≤ |x| < 4, in 1/|x| − 5/8)", pr, err)


# Simulated f32 evaluation (numpy float32, no FMA), error in ulps of the exact result.
def sim_exp(x):
    x = x.astype(np.float32)
    xc = np.clip(x, f32(-104), f32(89))
    k = np.round(xc * f32(1.4426950216e00))
    hi = xc - k * f32(6.9314575195e-01)
    lo = k * f32(1.4286067653e-06)
    r = hi - lo
    rr = r * r
    c = r - rr * horner(pe, rr)
    y = f32(1) + ((r * c / (f32(2) - c) - lo) + hi)
    ki = k.astype(np.int32)
    a = ki >> 1
    b = ki - a
    return (y * ((a + 127) << 23).astype(np.uint32).view(np.float32)) * ((b + 127) << 23).astype(np.uint32).view(np.float32)


def sim_tanh(x):
    x = x.astype(np.float32)
    a = np.abs(x)
    s = x * x
    small = x + x * (s * horner(pt, s))
    e = sim_exp(a + a)
    big = np.copysign(f32(1) - f32(2) / (e + f32(1)), x)
    return np.where(a < f32(TANH_SPLIT), small, big)


def sim_erf(x):
    x = x.astype(np.float32)
    a = np.abs(x)
    s = x * x
    small = x + x * horner(pf, s)
    t = f32(1) / a
    big = np.copysign(f32(1) - sim_exp(-(a * a)) * horner(pr, t - f32(0.625)), x)
    return np.where(a < f32(1), small, np.where(a < f32(4), big, np.copysign(f32(1), x)))


rng = np.random.default_rng(1)
with np.errstate(all="ignore"):
    for name, sim, exact, lo, hi in [
        ("exp", sim_exp, np.exp, -87.0, 88.7),
        ("tanh", sim_tanh, np.tanh, -10.0, 10.0),
        ("erf", sim_erf, None, -5.0, 5.0),
    ]:
        x = np.concatenate([rng.uniform(lo, hi, 200000), rng.uniform(-1.5, 1.5, 200000)]).astype(np.float32)
        if exact is None:
            ref = np.array([float(mpmath.erf(float(v))) for v in x[:40000]])
            x = x[:40000]
        else:
            ref = exact(x.astype(np.float64))
        u = ulps(sim(x), ref)
        print(f"simulated f32 {name}: max {u.max():.3f} ulp, mean {u.mean():.3f}")
