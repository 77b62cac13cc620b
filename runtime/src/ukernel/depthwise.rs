//! The depthwise convolution's taps in native code ([`Libcall::DepthwiseRow`](f16c_core::abi::Libcall)):
//! x86 AVX-512 (sixteen f32 lanes) or AVX2 (eight), where the Cranelift backend's SIMD has four.
//!
//! The generated code hands this loop one output row: the input rows of its window (in place,
//! or widened from f16 into its scratch), the weights, where the row goes, and what of the
//! finish the loop does itself (the bias and a ReLU6's bounds, which the compiler hands over
//! where that is all the epilogue does; otherwise the generated code finishes the sums). The
//! loop computes four output pixels that have the same window columns inside the image at
//! once, two vectors of channels each (eight accumulators: the add latency times the two adds
//! a cycle), loading each weight vector once for the four. Every sum is the reference's chain:
//! from +0, per tap in order (`ky`, then `kx`), the product rounded, then added; taps in the
//! padding skipped. Both instruction sets and the generated loop give the same bits.

use f16c_core::abi::DepthwiseParams as Params;

/// The signature of [`Libcall::DepthwiseRow`](f16c_core::abi::Libcall).
pub type RowFn = extern "C" fn(*const *const f32, *const f32, *mut f32, *const Params) -> u64;

/// [`Libcall::DepthwiseRow`](f16c_core::abi::Libcall)'s function, the AVX2 loop (null on
/// another architecture). The libcall table holds it only on a CPU with the features of its
/// row of [`f16c_core::abi::MICRO_KERNELS`].
pub fn avx2_entry() -> usize {
    #[cfg(target_arch = "x86_64")]
    return row_avx2 as RowFn as usize;
    #[cfg(not(target_arch = "x86_64"))]
    0
}

/// [`Libcall::DepthwiseRowAvx512`](f16c_core::abi::Libcall)'s function, the AVX-512 loop, as
/// [`avx2_entry`].
pub fn avx512_entry() -> usize {
    #[cfg(target_arch = "x86_64")]
    return row_avx512 as RowFn as usize;
    #[cfg(not(target_arch = "x86_64"))]
    0
}

/// The libcall on a CPU with AVX-512F (its contract: [`Params`]).
#[cfg(target_arch = "x86_64")]
extern "C" fn row_avx512(rows: *const *const f32, w: *const f32, out: *mut f32, p: *const Params) -> u64 {
    // SAFETY: the libcall table holds this function only on a CPU with AVX-512F; the generated code
    // passes pointers by the libcall's contract.
    unsafe {
        let p = &*p;
        avx512::row(std::slice::from_raw_parts(rows, p.kh as usize), w, out, p);
        p.out_width
    }
}

/// The libcall on a CPU with AVX2 (its contract: [`Params`]).
#[cfg(target_arch = "x86_64")]
extern "C" fn row_avx2(rows: *const *const f32, w: *const f32, out: *mut f32, p: *const Params) -> u64 {
    // SAFETY: the libcall table holds this function only on a CPU with AVX2; the generated code
    // passes pointers by the libcall's contract.
    unsafe {
        let p = &*p;
        avx2::row(std::slice::from_raw_parts(rows, p.kh as usize), w, out, p);
        p.out_width
    }
}

/// Output pixels `ox .. ox + count` of a row, whose windows all have columns `kx0 .. kx1`
/// inside the image.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Run {
    ox: usize,
    count: usize,
    kx0: usize,
    kx1: usize,
}

/// The window columns `kx0 .. kx1` of output pixel `ox` that fall inside the image.
fn inside(p: &Params, ox: usize) -> (usize, usize) {
    let (d, kw) = (p.dilation.max(1) as i64, p.kw as i64);
    // Input column x0 + kx · d for window column kx.
    let x0 = ox as i64 * p.stride as i64 - p.pad as i64;
    let ceil_div = |a: i64| if d == 1 { a } else { (a + d - 1) / d };
    let kx0 = if x0 >= 0 { 0 } else { ceil_div(-x0) }.min(kw);
    let room = p.in_width as i64 - x0;
    let kx1 = if room <= 0 { 0 } else { ceil_div(room) }.clamp(kx0, kw);
    (kx0 as usize, kx1 as usize)
}

/// The row's pixels in runs of at most `most` that share their inside columns.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
fn runs(p: &Params, most: usize) -> impl Iterator<Item = Run> + '_ {
    let ow = p.out_width as usize;
    let mut ox = 0;
    std::iter::from_fn(move || {
        if ox >= ow {
            return None;
        }
        let (kx0, kx1) = inside(p, ox);
        let mut count = 1;
        while count < most && ox + count < ow && inside(p, ox + count) == (kx0, kx1) {
            count += 1;
        }
        let run = Run { ox, count, kx0, kx1 };
        ox += count;
        Some(run)
    })
}

/// One instruction set's loop: `$v` vectors of `LANES` f32 and their operations, `$mask` the
/// lanes a channel tail keeps.
#[cfg(target_arch = "x86_64")]
macro_rules! row_loop {
    ($isa:ident, $feature:literal, $v:ty, $lanes:literal, $mask:ty,
     zero: $zero:expr, splat: $splat:expr, load: $load:expr, store: $store:expr, mul: $mul:expr, add: $add:expr,
     pick: $pick:expr, canonical: $canonical:expr, silu: $silu:expr,
     mask: $mk:expr, load_masked: $mload:expr, store_masked: $mstore:expr) => {
        mod $isa {
            use super::*;
            use std::arch::x86_64::*;

            const LANES: usize = $lanes;
            /// Pixels per pass.
            const PIXELS: usize = 4;

            /// The whole row.
            #[target_feature(enable = $feature)]
            pub(super) unsafe fn row(rows: &[*const f32], w: *const f32, out: *mut f32, p: &Params) {
                for run in runs(p, PIXELS) {
                    // SAFETY (each arm): the caller's.
                    unsafe {
                        match run.count {
                            4 => channels::<4>(rows, w, out, p, run),
                            3 => channels::<3>(rows, w, out, p, run),
                            2 => channels::<2>(rows, w, out, p, run),
                            _ => channels::<1>(rows, w, out, p, run),
                        }
                    }
                }
            }

            /// Every channel of the run's `P` pixels: two vectors at a time, then one, then the
            /// tail's lanes.
            #[target_feature(enable = $feature)]
            #[inline]
            unsafe fn channels<const P: usize>(rows: &[*const f32], w: *const f32, out: *mut f32, p: &Params, run: Run) {
                let c = p.channels as usize;
                let mut ch = 0;
                // SAFETY (each call): channels ch .. ch + V · LANES exist (the tail's masked).
                unsafe {
                    while ch + 2 * LANES <= c {
                        block::<P, 2>(rows, w, out, p, run, ch, None);
                        ch += 2 * LANES;
                    }
                    if ch + LANES <= c {
                        block::<P, 1>(rows, w, out, p, run, ch, None);
                        ch += LANES;
                    }
                    if ch < c {
                        block::<P, 1>(rows, w, out, p, run, ch, Some($mk(c - ch)));
                    }
                }
            }

            /// `V` vectors of channels from `ch` (the lanes `mask` keeps of the last one) of
            /// the run's `P` pixels: the sums, then the finish the parameters name.
            #[target_feature(enable = $feature)]
            #[inline]
            #[allow(clippy::too_many_arguments, reason = "a block's operands, passed to an inlined helper of the row loop")]
            unsafe fn block<const P: usize, const V: usize>(rows: &[*const f32], w: *const f32, out: *mut f32, p: &Params, run: Run, ch: usize, mask: Option<$mask>) {
                let (c, kw, s, d) = (p.channels as usize, p.kw as usize, p.stride as usize, p.dilation as usize);
                let ld = |at: *const f32, v: usize| -> $v {
                    // SAFETY: the caller's: the lanes read exist.
                    unsafe {
                        match mask {
                            Some(m) if v + 1 == V => $mload(at, m),
                            _ => $load(at),
                        }
                    }
                };
                let mut acc = [[$zero; V]; P];
                for (ky, &row) in rows.iter().enumerate() {
                    if row.is_null() {
                        continue;
                    }
                    for kx in run.kx0..run.kx1 {
                        let wp = w.wrapping_add((ky * kw + kx) * c + ch);
                        let wv: [$v; V] = std::array::from_fn(|v| ld(wp.wrapping_add(v * LANES), v));
                        for (j, acc) in acc.iter_mut().enumerate() {
                            // Input column (ox + j) · s + kx · d - pad: inside (the run's kx).
                            let ix = (run.ox + j) * s + kx * d - p.pad as usize;
                            let xp = row.wrapping_add(ix * c + ch);
                            for (v, a) in acc.iter_mut().enumerate() {
                                *a = $add(*a, $mul(ld(xp.wrapping_add(v * LANES), v), wv[v]));
                            }
                        }
                    }
                }
                let bias = p.bias as *const f32;
                let bias: Option<[$v; V]> = (!bias.is_null()).then(|| std::array::from_fn(|v| ld(bias.wrapping_add(ch + v * LANES), v)));
                let bounds_len = (p.bounds as usize).min(p.bound_values.len());
                let bounds: [($v, $v, u64); 4] = std::array::from_fn(|i| ($splat(p.thresholds[i]), $splat(p.bound_values[i]), p.bound_tests >> (2 * i) & 3));
                for (j, acc) in acc.iter().enumerate() {
                    let op = out.wrapping_add((run.ox + j) * c + ch);
                    for (v, &a) in acc.iter().enumerate() {
                        let mut x = a;
                        if let Some(bias) = bias {
                            x = $add(x, bias[v]);
                        }
                        for &(t, b, test) in &bounds[..bounds_len] {
                            x = $pick(x, t, b, test);
                        }
                        if p.canonical != 0 {
                            x = $canonical(x);
                        }
                        if p.silu != 0 {
                            x = $silu(x);
                        }
                        let at = op.wrapping_add(v * LANES);
                        // SAFETY: the pixel's values (the contract); the tail's lanes masked.
                        unsafe {
                            match mask {
                                Some(m) if v + 1 == V => $mstore(at, m, x),
                                _ => $store(at, x),
                            }
                        }
                    }
                }
            }
        }
    };
}

#[cfg(target_arch = "x86_64")]
row_loop!(avx512, "avx512f", __m512, 16, __mmask16,
    zero: _mm512_setzero_ps(), splat: _mm512_set1_ps, load: _mm512_loadu_ps, store: _mm512_storeu_ps, mul: _mm512_mul_ps, add: _mm512_add_ps,
    pick: crate::finish::bound16, canonical: crate::finish::canonical16, silu: crate::finish::silu16,
    mask: |n: usize| ((1u32 << n) - 1) as __mmask16,
    load_masked: |at: *const f32, m: __mmask16| _mm512_maskz_loadu_ps(m, at),
    store_masked: |at: *mut f32, m: __mmask16, v: __m512| _mm512_mask_storeu_ps(at, m, v));

#[cfg(target_arch = "x86_64")]
row_loop!(avx2, "avx2", __m256, 8, __m256i,
    zero: _mm256_setzero_ps(), splat: _mm256_set1_ps, load: _mm256_loadu_ps, store: _mm256_storeu_ps, mul: _mm256_mul_ps, add: _mm256_add_ps,
    pick: |x: __m256, t: __m256, b: __m256, test: u64| {
        let m = match test {
            0 => _mm256_cmp_ps::<_CMP_LT_OQ>(x, t),
            1 => _mm256_cmp_ps::<_CMP_GT_OQ>(x, t),
            2 => _mm256_cmp_ps::<_CMP_LE_OQ>(x, t),
            _ => _mm256_cmp_ps::<_CMP_GE_OQ>(x, t),
        };
        _mm256_blendv_ps(x, b, m)
    },
    canonical: |x: __m256| _mm256_blendv_ps(x, _mm256_set1_ps(f32::NAN), _mm256_cmp_ps::<_CMP_UNORD_Q>(x, x)),
    // Lane by lane (the compiler asks this loop for it only where the AVX-512 one is absent:
    // never, as it chooses; the contract holds either way).
    silu: |x: __m256| {
        let mut lanes = [0f32; 8];
        // SAFETY: eight f32 in `lanes`.
        unsafe { _mm256_storeu_ps(lanes.as_mut_ptr(), x) };
        for v in &mut lanes {
            *v *= f16c_core::math::sigmoid_f32(*v);
        }
        // SAFETY: as above.
        unsafe { _mm256_loadu_ps(lanes.as_ptr()) }
    },
    mask: |n: usize| _mm256_cmpgt_epi32(_mm256_set1_epi32(n as i32), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7)),
    load_masked: |at: *const f32, m: __m256i| _mm256_maskload_ps(at, m),
    store_masked: |at: *mut f32, m: __m256i, v: __m256| _mm256_maskstore_ps(at, m, v));

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_values::uniform;
    use f16c_core::abi::Libcall;

    /// The loops this CPU runs, the widest first.
    fn loops() -> Vec<(&'static str, RowFn)> {
        crate::libcalls::micro_kernels(&[("avx512", Libcall::DepthwiseRowAvx512), ("avx2", Libcall::DepthwiseRow)])
    }

    /// Parameters with no bias and no bounds.
    fn params(kw: usize, channels: usize, in_width: usize, out_width: usize, stride: usize, dilation: usize, pad: usize) -> Params {
        let u = |x: usize| x as u64;
        Params { kh: 3, kw: u(kw), channels: u(channels), in_width: u(in_width), out_width: u(out_width), stride: u(stride), dilation: u(dilation), pad: u(pad), ..Params::default() }
    }

    /// The contract, tap by tap, then the finish: `rows[ky]` None for a row in the padding.
    fn reference(rows: &[Option<Vec<f32>>], w: &[f32], bias: Option<&[f32]>, p: &Params) -> Vec<f32> {
        let (c, ow) = (p.channels as usize, p.out_width as usize);
        let mut out = vec![0f32; ow * c];
        for ox in 0..ow {
            for ch in 0..c {
                let mut s = 0f32;
                for (ky, row) in rows.iter().enumerate() {
                    let Some(row) = row else { continue };
                    for kx in 0..p.kw as usize {
                        let ix = (ox * p.stride as usize + kx * p.dilation as usize) as i64 - p.pad as i64;
                        if (0..p.in_width as i64).contains(&ix) {
                            s += row[ix as usize * c + ch] * w[(ky * p.kw as usize + kx) * c + ch];
                        }
                    }
                }
                // The finish, as the tile finish defines it (`finish::finish_one`).
                let s = crate::finish::finish_one(s, ch, p, bias);
                out[ox * c + ch] = s;
            }
        }
        out
    }

    #[test]
    fn runs_group_pixels_with_the_same_inside_columns() {
        // 3 taps, padding 1, 6 outputs over 6 inputs: the first lacks tap 0, the last tap 2.
        let p = params(3, 1, 6, 6, 1, 1, 1);
        let want = [Run { ox: 0, count: 1, kx0: 1, kx1: 3 }, Run { ox: 1, count: 4, kx0: 0, kx1: 3 }, Run { ox: 5, count: 1, kx0: 0, kx1: 2 }];
        assert_eq!(runs(&p, 4).collect::<Vec<_>>(), want);
        // Stride 2 over an even width: only the first pixel lacks a tap.
        let p = params(3, 1, 8, 4, 2, 1, 1);
        assert_eq!(runs(&p, 4).collect::<Vec<_>>(), [Run { ox: 0, count: 1, kx0: 1, kx1: 3 }, Run { ox: 1, count: 3, kx0: 0, kx1: 3 }]);
    }

    #[test]
    fn inside_columns_are_those_in_the_image() {
        for (kw, stride, dilation, pad, in_width) in [(3, 1, 1, 1, 4), (5, 2, 2, 4, 7), (3, 1, 3, 5, 2), (4, 3, 2, 0, 9), (1, 1, 1, 0, 1)] {
            let ow = (in_width + 2 * pad - (kw - 1) * dilation - 1) / stride + 1;
            let p = params(kw, 1, in_width, ow, stride, dilation, pad);
            for ox in 0..ow {
                let want: Vec<usize> = (0..kw).filter(|&kx| (0..in_width as i64).contains(&((ox * stride + kx * dilation) as i64 - pad as i64))).collect();
                let (kx0, kx1) = inside(&p, ox);
                assert_eq!((kx0..kx1).collect::<Vec<_>>(), want, "kw={kw} stride={stride} dilation={dilation} pad={pad} in_width={in_width} ox={ox}");
            }
        }
    }

    #[test]
    fn native_depthwise_rows_are_the_reference_chains() {
        if loops().is_empty() {
            eprintln!("no native depthwise loop on this CPU: nothing to test");
        }
        for (isa, f) in loops() {
            row_matches_the_reference(isa, f);
        }
    }

    fn row_matches_the_reference(isa: &str, f: RowFn) {
        let mut next = uniform(5);
        // A NaN with a payload, infinities and zeros of both signs among the inputs (an inf
        // times a zero weight makes a NaN, a product of zeros a signed zero).
        let specials = [f32::from_bits(0x7fa0_0001), f32::from_bits(0xffc0_1234), f32::INFINITY, f32::NEG_INFINITY, 0.0, -0.0];
        // Channel counts around one and two vectors of either instruction set (tails masked),
        // strides, dilations and paddings that leave pixels with different inside columns,
        // and a window row in the padding; no finish, a bias, and ReLU6 bounds either way
        // round, NaNs canonical or kept; SiLU after a bias or alone.
        for channels in [1, 3, 8, 15, 16, 17, 24, 32, 33, 40, 72] {
            for (kw, stride, dilation, pad, in_width) in [(3, 1, 1, 1, 9), (3, 2, 1, 1, 9), (3, 2, 1, 1, 8), (5, 1, 2, 4, 7), (1, 1, 1, 0, 5), (3, 1, 1, 0, 3)] {
                for finish in 0..6 {
                    let out_width = (in_width + 2 * pad - (kw - 1) * dilation - 1) / stride + 1;
                    let mut p = params(kw, channels, in_width, out_width, stride, dilation, pad);
                    let mut rows: Vec<Option<Vec<f32>>> = (0..3).map(|ky| (ky != 1 || channels % 2 == 0).then(|| (0..in_width * channels).map(|_| next() * 4.0).collect())).collect();
                    let mut w: Vec<f32> = (0..3 * kw * channels).map(|_| next()).collect();
                    if let Some(row) = rows[0].as_mut() {
                        let len = row.len();
                        for (i, &x) in specials.iter().enumerate() {
                            row[(i * 7) % len] = x;
                        }
                    }
                    let last = w.len() - 1;
                    w[channels.min(last)] = 0.0;
                    w[0] = -0.0;
                    let bias: Vec<f32> = (0..channels).map(|_| next()).collect();
                    if (1..5).contains(&finish) {
                        p.bias = bias.as_ptr() as u64;
                    }
                    // A ReLU6 as maximum and minimum, NaNs canonical; then every test, zeros of
                    // either sign as thresholds and bounds, NaNs kept.
                    use Params as P;
                    match finish {
                        2 => (p.bounds, p.bound_tests, p.canonical, p.thresholds, p.bound_values) = (2, P::LESS | P::GREATER << 2, 1, [0.0, 6.0, 0.0, 0.0], [0.0, 6.0, 0.0, 0.0]),
                        3 => {
                            // Thresholds some sums equal, so that `<` and `<=` differ.
                            let sums = reference(&rows, &w, Some(&bias), &p);
                            let sum_at = |i: usize| sums[i..].iter().copied().find(|x| !x.is_nan()).unwrap_or(1.5);
                            let (t0, t1) = (sum_at(sums.len() / 3), sum_at(sums.len() / 2));
                            (p.bounds, p.bound_tests, p.canonical, p.thresholds, p.bound_values) = (4, P::GREATER_EQUAL | P::LESS_EQUAL << 2 | P::LESS << 4 | P::GREATER << 6, 0, [t0, t1, -0.0, 0.0], [1.25, -0.0, 0.0, -0.0]);
                        }
                        // SiLU after a bias (NaNs kept), and alone after NaNs made canonical.
                        4 => p.silu = 1,
                        5 => (p.silu, p.canonical) = (1, 1),
                        _ => {}
                    }
                    let want = reference(&rows, &w, (p.bias != 0).then_some(&bias[..]), &p);
                    let ptrs: Vec<*const f32> = rows.iter().map(|r| r.as_ref().map_or(std::ptr::null(), |r| r.as_ptr())).collect();
                    // One pixel more than the row's: the call must not write past it.
                    let mut got = vec![f32::from_bits(0x7f80_0042); (out_width + 1) * channels];
                    let done = f(ptrs.as_ptr(), w.as_ptr(), got.as_mut_ptr(), &p);
                    assert_eq!(done, out_width as u64);
                    let case = format!("{isa}: channels={channels} kw={kw} stride={stride} dilation={dilation} pad={pad} in_width={in_width} finish={finish}");
                    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                    assert!(bits(&got[out_width * channels..]).iter().all(|&b| b == 0x7f80_0042), "{case}: wrote past the row");
                    assert_eq!(bits(&got[..out_width * channels]), bits(&want), "{case}");
                }
            }
        }
    }
}
