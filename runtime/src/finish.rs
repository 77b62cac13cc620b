//! [`Libcall::FinishTilesF32`](f16c_core::abi::Libcall): a JIT GEMM's f32 tiles finished into
//! its output rows — the bias, the bounds (a ReLU, a clamp), canonical NaNs and SiLU that
//! [`DepthwiseParams`] names — sixteen lanes at a time on AVX-512, where the generated finish
//! works four lanes at a time (3.9 ms of ResNet-50's JIT run). Every value is what the
//! generated finish computes: `tile + bias` (one f32 addition), then each bound in order, then
//! NaNs made canonical, then `x · (1 / (1 + exp_f32(-x)))`.

use f16c_core::abi::tiles::{TILE_COLS, TILE_ROWS};
use f16c_core::abi::DepthwiseParams;

/// Value (`r`, `c`) of the tiles: tile row `r` of panel `c / 8`, column `c % 8`.
///
/// # Safety
/// The tiles of the call's contract.
unsafe fn tile_value(tiles: *const u8, tiles_stride: usize, r: usize, c: usize) -> f32 {
    let at = (c / TILE_COLS) * tiles_stride + ((r / TILE_ROWS) * TILE_ROWS * TILE_COLS + (r % TILE_ROWS) * TILE_COLS + c % TILE_COLS) * 4;
    // SAFETY: the caller's.
    unsafe { *tiles.add(at).cast::<f32>() }
}

/// The finish of one value, element by element (the definition; the fallback on a CPU without
/// AVX-512F, and the tests' reference).
pub(crate) fn finish_one(x: f32, c: usize, p: &DepthwiseParams, bias: Option<&[f32]>) -> f32 {
    let mut x = x;
    if let Some(bias) = bias {
        x += bias[c];
    }
    for i in 0..(p.bounds as usize).min(DepthwiseParams::MAX_BOUNDS) {
        let t = p.thresholds[i];
        let hit = match p.bound_tests >> (2 * i) & 3 {
            DepthwiseParams::LESS => x < t,
            DepthwiseParams::GREATER => x > t,
            DepthwiseParams::LESS_EQUAL => x <= t,
            _ => x >= t,
        };
        if hit {
            x = p.bound_values[i];
        }
    }
    if p.canonical != 0 && x.is_nan() {
        x = f32::NAN;
    }
    if p.silu != 0 {
        x *= f16c_core::math::sigmoid_f32(x);
    }
    x
}

/// The libcall: see [`f16c_core::abi::Libcall::FinishTilesF32`].
///
/// # Safety
/// `tiles` holds `panels` panels of `micro_panels` f32 tiles (`tiles_stride` bytes apart);
/// `out` has `rows` rows of `cols` writable f32, `out_stride` apart; `p` is readable and its
/// `bias`, where not 0, the address of `cols` f32; `rows ≤ 4 · micro_panels`, `cols ≤ 8 ·
/// panels`.
#[allow(clippy::too_many_arguments, reason = "the libcall's C signature")]
pub unsafe fn finish_tiles_f32(tiles: *const u8, tiles_stride: usize, out: *mut f32, out_stride: usize, rows: usize, cols: usize, p: &DepthwiseParams) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx512f") {
        // SAFETY: the caller's; the CPU has AVX-512F.
        unsafe { avx512(tiles, tiles_stride, out, out_stride, rows, cols, p) };
        return;
    }
    // SAFETY: the caller's.
    let bias = (p.bias != 0).then(|| unsafe { std::slice::from_raw_parts(p.bias as *const f32, cols) });
    for r in 0..rows {
        for c in 0..cols {
            // SAFETY: the caller's.
            unsafe { *out.add(r * out_stride + c) = finish_one(tile_value(tiles, tiles_stride, r, c), c, p, bias) };
        }
    }
}

/// Sixteen columns at a time (two panels' tile rows joined), the last under a mask.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn avx512(tiles: *const u8, tiles_stride: usize, out: *mut f32, out_stride: usize, rows: usize, cols: usize, p: &DepthwiseParams) {
    use std::arch::x86_64::*;
    let bounds = (p.bounds as usize).min(DepthwiseParams::MAX_BOUNDS);
    let tests: [(__m512, __m512, u64); DepthwiseParams::MAX_BOUNDS] = std::array::from_fn(|i| (_mm512_set1_ps(p.thresholds[i]), _mm512_set1_ps(p.bound_values[i]), p.bound_tests >> (2 * i) & 3));
    let bias = p.bias as *const f32;
    let row_bytes = TILE_COLS * 4;
    for r in 0..rows {
        let tile_row = (r / TILE_ROWS) * TILE_ROWS * TILE_COLS * 4 + (r % TILE_ROWS) * row_bytes;
        let mut c0 = 0;
        while c0 < cols {
            let lanes = (cols - c0).min(16);
            let mask: __mmask16 = if lanes == 16 { 0xffff } else { (1u16 << lanes) - 1 };
            // SAFETY: the tile rows of panels c0 / 8 and (where a column of it is live) the
            // next exist (the contract); bias and out under the mask of live columns.
            unsafe {
                let lo = _mm256_loadu_ps(tiles.add((c0 / TILE_COLS) * tiles_stride + tile_row).cast());
                let hi = if lanes > TILE_COLS { _mm256_loadu_ps(tiles.add((c0 / TILE_COLS + 1) * tiles_stride + tile_row).cast()) } else { _mm256_setzero_ps() };
                let mut x = crate::ukernel::tiles::avx512::join(lo, hi);
                if !bias.is_null() {
                    x = _mm512_add_ps(x, _mm512_maskz_loadu_ps(mask, bias.add(c0)));
                }
                for &(t, b, test) in &tests[..bounds] {
                    x = bound16(x, t, b, test);
                }
                if p.canonical != 0 {
                    x = canonical16(x);
                }
                if p.silu != 0 {
                    x = silu16(x);
                }
                _mm512_mask_storeu_ps(out.add(r * out_stride + c0), mask, x);
            }
            c0 += 16;
        }
    }
}

/// `x test t ? b : x` on sixteen lanes, the test a [`DepthwiseParams`] bound code (false where
/// `x` is NaN): a bound of the finishes ([`avx512`] here and the depthwise row loop's).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[inline]
pub(crate) fn bound16(x: std::arch::x86_64::__m512, t: std::arch::x86_64::__m512, b: std::arch::x86_64::__m512, test: u64) -> std::arch::x86_64::__m512 {
    use std::arch::x86_64::*;
    let m = match test {
        DepthwiseParams::LESS => _mm512_cmp_ps_mask::<_CMP_LT_OQ>(x, t),
        DepthwiseParams::GREATER => _mm512_cmp_ps_mask::<_CMP_GT_OQ>(x, t),
        DepthwiseParams::LESS_EQUAL => _mm512_cmp_ps_mask::<_CMP_LE_OQ>(x, t),
        _ => _mm512_cmp_ps_mask::<_CMP_GE_OQ>(x, t),
    };
    _mm512_mask_blend_ps(m, x, b)
}

/// Every NaN lane of `x` f32's canonical NaN.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[inline]
pub(crate) fn canonical16(x: std::arch::x86_64::__m512) -> std::arch::x86_64::__m512 {
    use std::arch::x86_64::*;
    _mm512_mask_blend_ps(_mm512_cmp_ps_mask::<_CMP_UNORD_Q>(x, x), x, _mm512_set1_ps(f32::NAN))
}

/// SiLU of sixteen lanes, `x · (1 / (1 + exp(-x)))` with the runtime's sixteen-lane exp
/// (`exp_f32`'s bits).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[inline]
pub(crate) fn silu16(x: std::arch::x86_64::__m512) -> std::arch::x86_64::__m512 {
    use std::arch::x86_64::*;
    let minus = _mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(x), _mm512_set1_epi32(i32::MIN)));
    _mm512_mul_ps(x, _mm512_div_ps(_mm512_set1_ps(1.0), _mm512_add_ps(_mm512_set1_ps(1.0), crate::libcalls::exp_avx512(minus))))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_values::uniform;

    /// Every column count around one and two vectors, rows across micro-panels, with and
    /// without a bias, bounds of every test, canonical NaNs and SiLU: the call's bits are the
    /// element-by-element definition's (NaNs, infinities and zeros among the tiles).
    #[test]
    fn finished_tiles_are_the_definitions_bits() {
        let mut next = uniform(11);
        let specials = [f32::from_bits(0x7fa0_0001), f32::from_bits(0xffc0_1234), f32::INFINITY, f32::NEG_INFINITY, 0.0, -0.0, 95.0, -95.0];
        for (rows, micro_panels) in [(1, 1), (4, 1), (7, 2), (12, 3), (13, 4)] {
            for cols in [1usize, 5, 8, 9, 16, 17, 24, 31, 40] {
                let panels = cols.div_ceil(TILE_COLS);
                let tiles_stride = micro_panels * TILE_ROWS * TILE_COLS * 4 + 64;
                let mut tiles: Vec<f32> = (0..panels * tiles_stride / 4).map(|_| next() * 8.0).collect();
                for (i, &x) in specials.iter().enumerate() {
                    let at = (i * 37) % tiles.len();
                    tiles[at] = x;
                }
                let bias: Vec<f32> = (0..cols).map(|_| next()).collect();
                for finish in 0..5 {
                    let mut p = DepthwiseParams::default();
                    use DepthwiseParams as P;
                    match finish {
                        1 => p.bias = bias.as_ptr() as u64,
                        // A ReLU6 as maximum and minimum after the bias, NaNs canonical.
                        2 => (p.bias, p.bounds, p.bound_tests, p.canonical, p.thresholds, p.bound_values) = (bias.as_ptr() as u64, 2, P::LESS | P::GREATER << 2, 1, [0.0, 6.0, 0.0, 0.0], [0.0, 6.0, 0.0, 0.0]),
                        // Every test, signed zeros as thresholds and bounds.
                        3 => (p.bounds, p.bound_tests, p.thresholds, p.bound_values) = (4, P::GREATER_EQUAL | P::LESS_EQUAL << 2 | P::LESS << 4 | P::GREATER << 6, [3.0, -2.0, -0.0, 0.0], [1.25, -0.0, 0.0, -0.0]),
                        4 => (p.bias, p.silu) = (bias.as_ptr() as u64, 1),
                        _ => {}
                    }
                    let want: Vec<f32> = (0..rows * cols)
                        .map(|i| {
                            // SAFETY: rows ≤ 4 · micro_panels and cols ≤ 8 · panels.
                            let t = unsafe { tile_value(tiles.as_ptr().cast(), tiles_stride, i / cols, i % cols) };
                            finish_one(t, i % cols, &p, (p.bias != 0).then_some(&bias[..]))
                        })
                        .collect();
                    // A row stride wider than the columns: the gaps must stay untouched.
                    let stride = cols + 3;
                    let mut got = vec![f32::from_bits(0x7f80_0042); rows * stride];
                    // SAFETY: the operands as the contract has them.
                    unsafe { finish_tiles_f32(tiles.as_ptr().cast(), tiles_stride, got.as_mut_ptr(), stride, rows, cols, &p) };
                    let case = format!("rows={rows} cols={cols} finish={finish}");
                    for r in 0..rows {
                        for c in 0..stride {
                            let g = got[r * stride + c];
                            if c < cols {
                                let w = want[r * cols + c];
                                // (SiLU's product of two NaNs is either: the contract fixes no payload there.)
                                let same = g.to_bits() == w.to_bits() || (p.silu != 0 && g.is_nan() && w.is_nan());
                                assert!(same, "{case}: ({r}, {c}) = {g:e} ({:#x}), want {w:e} ({:#x})", g.to_bits(), w.to_bits());
                            } else {
                                assert_eq!(g.to_bits(), 0x7f80_0042, "{case}: wrote past the row at ({r}, {c})");
                            }
                        }
                    }
                }
            }
        }
    }
}
