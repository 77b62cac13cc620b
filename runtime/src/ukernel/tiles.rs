//! The GEMM's inner loops in native code ([`Libcall::GemmTiles`](f16c_core::abi::Libcall)):
//! x86 AVX2 + FMA, eight f32 lanes per instruction where the Cranelift backend's SIMD has four.
//!
//! The generated code packs A, chooses the reduction chunks and runs the epilogue; per
//! reduction chunk it hands this loop all of a work item's micro-panels of A and panels of B at
//! once. The loop keeps twelve (at least eight) 8-lane accumulators in registers per pass, so
//! that two FMAs can issue every cycle despite their four-cycle latency: three micro-panels
//! against one B panel (12 rows × 8 columns), or, where a work item has one micro-panel (a
//! deep layer at 2 × 2 pixels), one against three panels (4 × 24). One 4 × 8 tile, which is
//! what the generated micro-kernel computes per call, would keep only four. Every element is
//! still one chain of fused multiply-adds in `k` order, from zero or from the tile, exactly as
//! in the generated micro-kernel, so the two give the same bits and the generated code may use
//! either. Each pass also fetches the B panels of the pass after it into cache.
//!
//! The AVX-512 loops ([`Libcall::GemmTilesAvx512`](f16c_core::abi::Libcall), which the
//! compiler chooses for a CPU with AVX-512F) run the same passes sixteen lanes wide: a pair of B panels
//! per vector, the two 8-column halves loaded and joined, so that the layouts and the bits stay
//! the AVX2 loops' (a last odd panel, and one micro-panel against f32 panels, which streams
//! them and gains nothing from wider lanes, stay on the AVX2 loops).
//!
//! The one-row GEMM (a classifier at batch 1, [`Libcall::GemvPanels`](f16c_core::abi::Libcall))
//! has its own loop: one 8-lane accumulator per panel, eight panels at a time.

use f16c_core::abi::tiles::{ACCUMULATE, B_BF16, B_F16, PACKED_A, TILE_COLS, TILE_ROWS};

/// The signature of [`Libcall::GemmTiles`](f16c_core::abi::Libcall).
pub type TilesFn = extern "C" fn(*const u8, u64, *const u8, u64, u64, *mut f32, u64, u64, u64, u64) -> u64;

/// [`Libcall::GemmTiles`](f16c_core::abi::Libcall)'s function, the AVX2 loops (null on
/// another architecture). The libcall table holds it only on a CPU with the features of its
/// row of [`f16c_core::abi::MICRO_KERNELS`].
pub fn avx2_entry() -> usize {
    #[cfg(target_arch = "x86_64")]
    return gemm_tiles::<false> as TilesFn as usize;
    #[cfg(not(target_arch = "x86_64"))]
    0
}

/// [`Libcall::GemmTilesAvx512`](f16c_core::abi::Libcall)'s function, the AVX-512 loops, as
/// [`avx2_entry`].
pub fn avx512_entry() -> usize {
    #[cfg(target_arch = "x86_64")]
    return gemm_tiles::<true> as TilesFn as usize;
    #[cfg(not(target_arch = "x86_64"))]
    0
}

/// The libcall (its contract: [`f16c_core::abi::tiles`]), in AVX-512 where `WIDE`. Only in
/// the table of a CPU with AVX2, FMA and F16C (and AVX-512F for `WIDE`).
#[cfg(target_arch = "x86_64")]
#[allow(clippy::too_many_arguments, reason = "the libcall's C signature (`f16c_core::abi::tiles`)")]
extern "C" fn gemm_tiles<const WIDE: bool>(a: *const u8, a_stride: u64, b: *const u8, b_stride: u64, k: u64, tiles: *mut f32, tiles_stride: u64, micro_panels: u64, panels: u64, flags: u64) -> u64 {
    let call = Call { a, a_stride: a_stride as usize, b, b_stride: b_stride as usize, k: k as usize, tiles: tiles.cast(), tiles_stride: tiles_stride as usize, accumulate: flags & ACCUMULATE != 0 };
    let (m, n) = (micro_panels as usize, panels as usize);
    // SAFETY: the libcall table holds this function only on a CPU with AVX2, FMA and F16C (and
    // AVX-512F for `WIDE`): its row of `MICRO_KERNELS`; the generated code passes pointers and
    // sizes by the libcall's contract.
    unsafe {
        match (WIDE, flags & PACKED_A != 0, flags & (B_F16 | B_BF16)) {
            (true, true, 0) => avx512::all::<true, 0>(&call, m, n),
            (true, true, B_F16) => avx512::all::<true, B_F16>(&call, m, n),
            (true, true, _) => avx512::all::<true, B_BF16>(&call, m, n),
            (true, false, 0) => avx512::all::<false, 0>(&call, m, n),
            (true, false, B_F16) => avx512::all::<false, B_F16>(&call, m, n),
            (true, false, _) => avx512::all::<false, B_BF16>(&call, m, n),
            (false, true, 0) => avx2::all::<true, 0>(&call, m, n),
            (false, true, B_F16) => avx2::all::<true, B_F16>(&call, m, n),
            (false, true, _) => avx2::all::<true, B_BF16>(&call, m, n),
            (false, false, 0) => avx2::all::<false, 0>(&call, m, n),
            (false, false, B_F16) => avx2::all::<false, B_F16>(&call, m, n),
            (false, false, _) => avx2::all::<false, B_BF16>(&call, m, n),
        }
    }
    micro_panels
}

/// [`Libcall::GemmPairsBf16`](f16c_core::abi::Libcall): the AVX512-BF16 loops where this CPU
/// has them, else the same arithmetic element by element.
///
/// # Safety
/// The libcall's contract ([`f16c_core::abi::tiles`]).
#[allow(clippy::too_many_arguments, reason = "the libcall's C signature (`f16c_core::abi::tiles`)")]
pub unsafe fn gemm_pairs_bf16(a: *const u8, a_stride: u64, b: *const u8, b_stride: u64, k: u64, tiles: *mut f32, tiles_stride: u64, micro_panels: u64, panels: u64, flags: u64) -> u64 {
    let call = Call { a, a_stride: a_stride as usize, b, b_stride: b_stride as usize, k: k as usize, tiles: tiles.cast(), tiles_stride: tiles_stride as usize, accumulate: flags & ACCUMULATE != 0 };
    // SAFETY: the caller's.
    unsafe { dot::all(&call, micro_panels as usize, panels as usize) };
    micro_panels
}

/// [`Libcall::GemvPanels`](f16c_core::abi::Libcall)'s function, the AVX2 one-row loop, as
/// [`avx2_entry`].
pub fn gemv_entry() -> usize {
    #[cfg(target_arch = "x86_64")]
    return gemv_panels as GemvFn as usize;
    #[cfg(not(target_arch = "x86_64"))]
    0
}

/// The signature of [`Libcall::GemvPanels`](f16c_core::abi::Libcall).
pub type GemvFn = extern "C" fn(*const f32, *const u8, u64, u64, *mut f32, u64, u64) -> u64;

/// The one-row libcall (its contract: [`f16c_core::abi::tiles`]). Only in the table of a CPU
/// with AVX2, FMA and F16C.
#[cfg(target_arch = "x86_64")]
extern "C" fn gemv_panels(a: *const f32, b: *const u8, b_stride: u64, k: u64, out: *mut f32, panels: u64, flags: u64) -> u64 {
    let (b_stride, k, n) = (b_stride as usize, k as usize, panels as usize);
    // SAFETY: the libcall table holds this function only on a CPU with AVX2, FMA and F16C (its
    // row of `MICRO_KERNELS`); the generated code passes pointers and sizes by the libcall's
    // contract.
    unsafe {
        match flags & (B_F16 | B_BF16) {
            0 => avx2::gemv::<0>(a, b, b_stride, k, out, n),
            B_F16 => avx2::gemv::<B_F16>(a, b, b_stride, k, out, n),
            _ => avx2::gemv::<B_BF16>(a, b, b_stride, k, out, n),
        }
    }
    panels
}

/// One call's operands (strides in bytes).
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
#[derive(Clone, Copy)]
struct Call {
    a: *const u8,
    a_stride: usize,
    b: *const u8,
    b_stride: usize,
    k: usize,
    tiles: *mut u8,
    tiles_stride: usize,
    accumulate: bool,
}

#[cfg(target_arch = "x86_64")]
impl Call {
    /// Row `r < 12` of the micro-panels from `i0` (A packed, or its rows in place): its first
    /// value, and the bytes from one `k` to the next.
    fn a_rows(&self, i0: usize, packed: bool) -> ([*const u8; 12], usize) {
        let panel_bytes = if packed { TILE_ROWS * self.k * 4 } else { TILE_ROWS * self.a_stride };
        let row_step = if packed { 4 } else { self.a_stride };
        let a0 = self.a.wrapping_add(i0 * panel_bytes);
        let rows = std::array::from_fn(|r| a0.wrapping_add((r / TILE_ROWS) * panel_bytes + (r % TILE_ROWS) * row_step));
        (rows, if packed { TILE_ROWS * 4 } else { 4 })
    }

    /// Row `r` of the tile of panel `j` and the micro-panels from `i0`.
    fn tile_row(&self, j: usize, i0: usize, r: usize) -> *mut f32 {
        self.tiles.wrapping_add(j * self.tiles_stride + (i0 * TILE_ROWS + r) * TILE_COLS * 4).cast()
    }

    /// At `k` step `kk` of a pass whose B rows are `row` bytes: one cache line of each of the
    /// next pass's panels per 64 bytes of this pass's, so that the next pass's B is in L1 when
    /// it starts (a prefetch never faults).
    #[inline(always)]
    fn fetch_ahead(&self, ahead: Ahead, kk: usize, row: usize) {
        if (kk * row).is_multiple_of(64) {
            let next = self.b.wrapping_add(ahead.from * self.b_stride);
            for q in 0..ahead.panels {
                // SAFETY: a prefetch only hints; it never faults.
                unsafe { std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(next.wrapping_add(q * self.b_stride + kk * row).cast()) };
            }
        }
    }
}

/// The B panels a pass fetches into cache for the pass after it: `panels` panels from panel
/// `from`, the chunk this call reads of each. A weight too large for the last-level cache
/// (resnet18's deep layers) streams from memory, and the CPU's own prefetcher, which starts
/// over on each panel chunk, left the passes waiting on it.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
#[derive(Clone, Copy)]
struct Ahead {
    from: usize,
    panels: usize,
}

/// `n` split into runs of three and two (one only for `n` = 1): the blocks of micro-panels or
/// panels one pass keeps in registers. No run of one where a run of two can take it, since a
/// pass over one micro-panel and one panel keeps only four accumulators.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
fn runs(n: usize) -> impl Iterator<Item = usize> {
    let (threes, twos, ones) = match (n, n % 3) {
        (0 | 1, _) => (0, 0, n),
        (_, 0) => (n / 3, 0, 0),
        (_, 1) => (n / 3 - 1, 2, 0),
        _ => (n / 3, 1, 0),
    };
    std::iter::repeat_n(3, threes).chain(std::iter::repeat_n(2, twos)).chain(std::iter::repeat_n(1, ones))
}

/// One instruction set's pass: micro-panels `i0 .. i0 + P` against `Q` vectors of `$span`
/// panels each from panel `j0`, in `P · TILE_ROWS × Q` accumulators of type `$v`. `load` and
/// `store` move a row of the `$span` tiles of one vector (their rows' addresses), `load_b` one
/// `k` row of its `$span` B panels, `fma` adds a broadcast A value times a B vector.
#[cfg(target_arch = "x86_64")]
macro_rules! pass {
    ($feature:literal, $v:ty, $span:literal, zero: $zero:expr, fma: $fma:expr, load: $load:expr, load_b: $load_b:expr, store: $store:expr) => {
        /// Micro-panels `i0 .. i0 + P` against `Q` vectors of panels from panel `j0`.
        #[target_feature(enable = $feature)]
        #[inline]
        unsafe fn pass<const P: usize, const Q: usize, const PACKED: bool, const B: u64>(c: &Call, i0: usize, j0: usize, ahead: Ahead) {
            const { assert!(TILE_COLS == 8 && TILE_ROWS == 4 && P * TILE_ROWS * Q <= 12) };
            let (rows, k_step) = c.a_rows(i0, PACKED);
            // Half `h` of vector `q`: panel `j0 + $span · q + h`.
            let panel = |q: usize, h: usize| j0 + $span * q + h;
            let b: [[*const u8; 2]; 3] = std::array::from_fn(|q| [0, 1].map(|h| c.b.wrapping_add(panel(q, h) * c.b_stride)));
            let tile_rows = |q: usize, r: usize| [0, 1].map(|h| c.tile_row(panel(q, h), i0, r));
            let mut acc: [[$v; 3]; 12] = [[$zero; 3]; 12];
            if c.accumulate {
                for (r, accs) in acc.iter_mut().enumerate().take(P * TILE_ROWS) {
                    for (q, v) in accs.iter_mut().enumerate().take(Q) {
                        let [t0, t1] = tile_rows(q, r);
                        // SAFETY: tile rows of the contract.
                        *v = unsafe { $load(t0.cast_const(), t1.cast_const()) };
                    }
                }
            }
            let row = TILE_COLS * if B == 0 { 4 } else { 2 };
            for kk in 0..c.k {
                c.fetch_ahead(ahead, kk, row);
                // SAFETY: each B panel has k rows of 8 values; each A row k values `k_step` apart.
                unsafe {
                    let bv: [$v; 3] = std::array::from_fn(|q| if q < Q { $load_b(b[q][0].add(kk * row), b[q][1].wrapping_add(kk * row)) } else { $zero });
                    for (r, accs) in acc.iter_mut().enumerate().take(P * TILE_ROWS) {
                        let x = *rows[r].add(kk * k_step).cast::<f32>();
                        for (q, v) in accs.iter_mut().enumerate().take(Q) {
                            *v = $fma(x, bv[q], *v);
                        }
                    }
                }
            }
            for (r, accs) in acc.iter().enumerate().take(P * TILE_ROWS) {
                for (q, v) in accs.iter().enumerate().take(Q) {
                    let [t0, t1] = tile_rows(q, r);
                    // SAFETY: tile rows of the contract.
                    unsafe { $store(t0, t1, *v) };
                }
            }
        }
    };
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use super::*;
    use std::arch::x86_64::*;

    /// Every tile: with two or more micro-panels, per B panel, runs of three or two
    /// micro-panels; with one, runs of three or two panels.
    #[target_feature(enable = "avx2,fma,f16c")]
    pub(super) unsafe fn all<const PACKED: bool, const B: u64>(c: &Call, micro_panels: usize, panels: usize) {
        // Prefetch only panel chunks of 4 KiB and more: short ones (an attention's 8 × 32 ×
        // 32 matmuls) are in cache already, and there the prefetches cost 2%.
        let far = c.k * TILE_COLS * if B == 0 { 4 } else { 2 } >= 4096;
        if micro_panels == 1 {
            let mut j = 0;
            for q in runs(panels) {
                // SAFETY (each arm): panels j..j + q and micro-panel 0 exist (the contract).
                let ahead = Ahead { from: j + q, panels: if far { q.min(panels - j - q) } else { 0 } };
                unsafe {
                    match q {
                        3 => pass::<1, 3, PACKED, B>(c, 0, j, ahead),
                        2 => pass::<1, 2, PACKED, B>(c, 0, j, ahead),
                        _ => pass::<1, 1, PACKED, B>(c, 0, j, ahead),
                    }
                }
                j += q;
            }
            return;
        }
        for j in 0..panels {
            let mut i = 0;
            for p in runs(micro_panels) {
                let ahead = Ahead { from: j + 1, panels: usize::from(far && i == 0 && j + 1 < panels) };
                // SAFETY (each arm): micro-panels i..i + p and panel j exist (the contract).
                unsafe {
                    match p {
                        3 => pass::<3, 1, PACKED, B>(c, i, j, ahead),
                        2 => pass::<2, 1, PACKED, B>(c, i, j, ahead),
                        _ => pass::<1, 1, PACKED, B>(c, i, j, ahead),
                    }
                }
                i += p;
            }
        }
    }

    /// Eight `B`-typed values at `p`, widened to f32.
    #[target_feature(enable = "avx2,fma,f16c")]
    #[inline]
    pub(super) unsafe fn load_b<const B: u64>(p: *const u8) -> __m256 {
        // SAFETY: the caller's: eight values of B's type at `p`.
        unsafe {
            match B {
                B_F16 => _mm256_cvtph_ps(_mm_loadu_si128(p.cast())),
                B_BF16 => _mm256_castsi256_ps(_mm256_slli_epi32::<16>(_mm256_cvtepu16_epi32(_mm_loadu_si128(p.cast())))),
                _ => _mm256_loadu_ps(p.cast()),
            }
        }
    }

    /// The one-row GEMM: runs of eight panels (eight accumulators: the FMA latency times two a
    /// cycle), then four, two, one.
    #[target_feature(enable = "avx2,fma,f16c")]
    pub(super) unsafe fn gemv<const B: u64>(a: *const f32, b: *const u8, b_stride: usize, k: usize, out: *mut f32, panels: usize) {
        let mut j = 0;
        while j < panels {
            let q = match panels - j {
                8.. => 8,
                4..=7 => 4,
                2 | 3 => 2,
                _ => 1,
            };
            let (b, out) = (b.wrapping_add(j * b_stride), out.wrapping_add(j * TILE_COLS));
            // SAFETY (each arm): panels j..j + q exist (the contract).
            unsafe {
                match q {
                    8 => gemv_run::<8, B>(a, b, b_stride, k, out),
                    4 => gemv_run::<4, B>(a, b, b_stride, k, out),
                    2 => gemv_run::<2, B>(a, b, b_stride, k, out),
                    _ => gemv_run::<1, B>(a, b, b_stride, k, out),
                }
            }
            j += q;
        }
    }

    /// Panels `0 .. Q` of a one-row GEMM, one accumulator each.
    #[target_feature(enable = "avx2,fma,f16c")]
    #[inline]
    unsafe fn gemv_run<const Q: usize, const B: u64>(a: *const f32, b: *const u8, b_stride: usize, k: usize, out: *mut f32) {
        let row = TILE_COLS * if B == 0 { 4 } else { 2 };
        let mut acc = [_mm256_setzero_ps(); Q];
        for kk in 0..k {
            // SAFETY: A has k values; each B panel k rows of eight.
            unsafe {
                let x = _mm256_broadcast_ss(&*a.add(kk));
                for (q, v) in acc.iter_mut().enumerate() {
                    *v = _mm256_fmadd_ps(x, load_b::<B>(b.add(q * b_stride + kk * row)), *v);
                }
            }
        }
        for (q, v) in acc.iter().enumerate() {
            // SAFETY: panel q's eight sums (the contract).
            unsafe { _mm256_storeu_ps(out.add(q * TILE_COLS), *v) };
        }
    }

    pass!("avx2,fma,f16c", __m256, 1, zero: _mm256_setzero_ps(), fma: |x: f32, b, acc| _mm256_fmadd_ps(_mm256_set1_ps(x), b, acc),
        load: |p0: *const f32, _p1: *const f32| _mm256_loadu_ps(p0), load_b: |p0: *const u8, _p1: *const u8| load_b::<B>(p0),
        store: |p0: *mut f32, _p1: *mut f32, v| _mm256_storeu_ps(p0, v));
}

/// The same loops with sixteen lanes: a pair of B panels (`2 · TILE_COLS` columns) per
/// AVX-512 vector, its two halves loaded and joined, so that the tiles, the packed layouts and
/// every element's chain of fused multiply-adds (in `k` order) are the AVX2 loops' own: three
/// micro-panels against a pair of panels per pass, or one against three pairs (twelve
/// accumulators, as the AVX2 loop's, twice as wide). A last odd panel, and a call with one
/// micro-panel and f32 B (which streams its weights, where the wider lanes gain nothing), go
/// to the AVX2 loops.
#[cfg(target_arch = "x86_64")]
pub(crate) mod avx512 {
    use super::avx2::load_b;
    use super::*;
    use std::arch::x86_64::*;

    /// Every tile: as [`avx2::all`], pairs of panels for panels.
    #[target_feature(enable = "avx512f,avx2,fma,f16c")]
    pub(super) unsafe fn all<const PACKED: bool, const B: u64>(c: &Call, micro_panels: usize, panels: usize) {
        if micro_panels == 1 && B == 0 {
            // One micro-panel (a deep layer at 2 × 2 pixels) streams its f32 B panels once:
            // the AVX2 loop keeps up with that, and its passes fetch half as much ahead
            // (mobilenet ×1.0's 960 × 320 layer took 0.056 ms here, 0.043 ms there).
            // SAFETY: the caller's; the CPU has AVX2, FMA and F16C.
            unsafe { avx2::all::<PACKED, B>(c, micro_panels, panels) };
            return;
        }
        let far = c.k * TILE_COLS * if B == 0 { 4 } else { 2 } >= 4096;
        let pairs = panels / 2;
        if micro_panels == 1 {
            // Up to three pairs of panels against the micro-panel (twelve accumulators).
            let mut j = 0;
            for q in runs(pairs) {
                let ahead = Ahead { from: 2 * (j + q), panels: if far { (2 * q).min(panels - 2 * (j + q)) } else { 0 } };
                // SAFETY (each arm): panels 2j .. 2(j + q) and micro-panel 0 exist (the contract).
                unsafe {
                    match q {
                        3 => pass::<1, 3, PACKED, B>(c, 0, 2 * j, ahead),
                        2 => pass::<1, 2, PACKED, B>(c, 0, 2 * j, ahead),
                        _ => pass::<1, 1, PACKED, B>(c, 0, 2 * j, ahead),
                    }
                }
                j += q;
            }
        }
        for j in (0..pairs).filter(|_| micro_panels > 1) {
            let mut i = 0;
            for p in runs(micro_panels) {
                let ahead = Ahead { from: 2 * j + 2, panels: if far && i == 0 { 2.min(panels - 2 * j - 2) } else { 0 } };
                // SAFETY (each arm): micro-panels i..i + p and panels 2j, 2j + 1 exist.
                unsafe {
                    match p {
                        3 => pass::<3, 1, PACKED, B>(c, i, 2 * j, ahead),
                        2 => pass::<2, 1, PACKED, B>(c, i, 2 * j, ahead),
                        _ => pass::<1, 1, PACKED, B>(c, i, 2 * j, ahead),
                    }
                }
                i += p;
            }
        }
        if panels % 2 == 1 {
            // The last panel alone, by the AVX2 loops.
            let last = panels - 1;
            let rest = Call { b: c.b.wrapping_add(last * c.b_stride), tiles: c.tiles.wrapping_add(last * c.tiles_stride), ..*c };
            // SAFETY: panel `last` exists (the contract); the CPU has AVX2, FMA and F16C.
            unsafe { avx2::all::<PACKED, B>(&rest, micro_panels, 1) };
        }
    }

    /// Eight f32 at `lo` and eight at `hi`, as one vector.
    #[target_feature(enable = "avx512f")]
    #[inline]
    pub(crate) fn join(lo: __m256, hi: __m256) -> __m512 {
        _mm512_castpd_ps(_mm512_insertf64x4::<1>(_mm512_castps_pd(_mm512_castps256_ps512(lo)), _mm256_castps_pd(hi)))
    }

    /// The upper eight f32 of `v`.
    #[target_feature(enable = "avx512f")]
    #[inline]
    fn upper(v: __m512) -> __m256 {
        _mm256_castpd_ps(_mm512_extractf64x4_pd::<1>(_mm512_castps_pd(v)))
    }

    pass!("avx512f,avx2,fma,f16c", __m512, 2, zero: _mm512_setzero_ps(), fma: |x: f32, b, acc| _mm512_fmadd_ps(_mm512_set1_ps(x), b, acc),
        load: |p0: *const f32, p1: *const f32| join(_mm256_loadu_ps(p0), _mm256_loadu_ps(p1)),
        load_b: |p0: *const u8, p1: *const u8| join(load_b::<B>(p0), load_b::<B>(p1)),
        store: |p0: *mut f32, p1: *mut f32, v| {
            _mm256_storeu_ps(p0, _mm512_castps512_ps256(v));
            _mm256_storeu_ps(p1, upper(v));
        });
}

/// The bf16 pair loops ([`Libcall::GemmPairsBf16`](f16c_core::abi::Libcall)): AVX512-BF16
/// `VDPBF16PS`, 32 products per instruction where the f32 loops' FMA has 16, or (a CPU without
/// it, which code that calls them requires never to be: a safety net) the same arithmetic
/// element by element.
///
/// Per call, A's bf16 rows are first gathered into pairs (`[row][k/2]` u32, the pair's value
/// `2q` in the upper half, as B's), [`SUB_K`] values of `k` at a time on the stack;
/// each pass then keeps up to 24 sixteen-lane accumulators: three micro-panels against two
/// pairs of panels, two against three, or one against six, a B vector loaded per pair of
/// panels and `k` pair, each A pair broadcast from memory.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
mod dot {
    use super::*;

    /// Values of `k` converted to A pairs at a time (even).
    pub(super) const SUB_K: usize = 256;
    /// Micro-panels converted at a time.
    const GROUP: usize = 16;

    /// Every tile of the call.
    ///
    /// # Safety
    /// The libcall's contract.
    pub(super) unsafe fn all(c: &Call, micro_panels: usize, panels: usize) {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx512bf16") && std::arch::is_x86_feature_detected!("avx512bw") && std::arch::is_x86_feature_detected!("avx512vl") {
            // SAFETY: the caller's; the CPU has what the loops use.
            unsafe { avx512bf16::all(c, micro_panels, panels) };
            return;
        }
        // SAFETY: the caller's.
        unsafe { scalar(c, micro_panels, panels) };
    }

    /// A's value (micro-panel `i`, row `r`, step `kk`): its bf16 bits.
    ///
    /// # Safety
    /// The contract's A.
    #[inline(always)]
    unsafe fn a_bits(c: &Call, i: usize, r: usize, kk: usize) -> u32 {
        // SAFETY: the caller's.
        u32::from(unsafe { c.a.wrapping_add((i * TILE_ROWS + r) * c.a_stride + kk * 2).cast::<u16>().read_unaligned() })
    }

    /// `VDPBF16PS`'s arithmetic on one lane: the product of bf16 `x` and `y` (exact in f32)
    /// added to `s` with one rounding, subnormal inputs and results zero.
    #[inline(always)]
    fn step(s: f32, x: u32, y: u32) -> f32 {
        let flush = |v: f32| if v.is_subnormal() { 0f32.copysign(v) } else { v };
        let (x, y) = (flush(f32::from_bits(x << 16)), flush(f32::from_bits(y << 16)));
        flush(x.mul_add(y, flush(s)))
    }

    /// [`scalar`], for the tests.
    ///
    /// # Safety
    /// As [`all`].
    #[cfg(test)]
    pub(super) unsafe fn scalar_for_tests(c: &Call, micro_panels: usize, panels: usize) {
        // SAFETY: the caller's.
        unsafe { scalar(c, micro_panels, panels) }
    }

    /// The loops' arithmetic element by element.
    ///
    /// # Safety
    /// As [`all`].
    unsafe fn scalar(c: &Call, micro_panels: usize, panels: usize) {
        for j in 0..panels {
            let b = c.b.wrapping_add(j * c.b_stride).cast::<u16>();
            for i in 0..micro_panels {
                for r in 0..TILE_ROWS {
                    let t = c.tiles.wrapping_add(j * c.tiles_stride + (i * TILE_ROWS + r) * TILE_COLS * 4).cast::<f32>();
                    for col in 0..TILE_COLS {
                        // SAFETY: the contract's tiles, A and B.
                        unsafe {
                            let mut s = if c.accumulate { *t.add(col) } else { 0.0 };
                            for q in 0..c.k / 2 {
                                let pair = b.add((q * TILE_COLS + col) * 2);
                                s = step(s, a_bits(c, i, r, 2 * q), u32::from(*pair.add(1)));
                                s = step(s, a_bits(c, i, r, 2 * q + 1), u32::from(*pair));
                            }
                            *t.add(col) = s;
                        }
                    }
                }
            }
        }
    }

    #[cfg(target_arch = "x86_64")]
    mod avx512bf16 {
        use super::*;
        use std::arch::x86_64::*;

        /// The tiles, [`SUB_K`] values of `k` and [`GROUP`] micro-panels at a time.
        #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512bf16")]
        pub(in super::super) unsafe fn all(c: &Call, micro_panels: usize, panels: usize) {
            let mut pairs = [0u32; GROUP * TILE_ROWS * SUB_K / 2];
            let mut i0 = 0;
            while i0 < micro_panels {
                let group = GROUP.min(micro_panels - i0);
                let mut k0 = 0;
                while k0 < c.k {
                    let kc = SUB_K.min(c.k - k0);
                    // SAFETY: the caller's; `pairs` holds GROUP micro-panels of SUB_K / 2 pairs.
                    unsafe { gather_a(c, i0, group, k0, kc, &mut pairs) };
                    let part = Part { a: pairs.as_ptr(), b_offset: k0 * TILE_COLS * 2, kp: kc / 2, accumulate: c.accumulate || k0 > 0 };
                    // SAFETY: the caller's, for micro-panels i0 .. i0 + group.
                    unsafe { tiles(c, &part, i0, group, panels) };
                    k0 += kc;
                }
                i0 += group;
            }
        }

        /// One sub-chunk's operands: A's pairs (`[row][kp]`: pair `q` of the group's row `r` at
        /// `a + r · kp + q`), the byte offset of its first pair row in each B panel, its pairs,
        /// and whether the tiles' values are its start.
        struct Part {
            a: *const u32,
            b_offset: usize,
            kp: usize,
            accumulate: bool,
        }

        impl Part {
            /// The first pair of each of the twelve rows from micro-panel `i` of the group.
            fn rows(&self, i: usize) -> [*const u32; 12] {
                std::array::from_fn(|r| self.a.wrapping_add((i * TILE_ROWS + r) * self.kp))
            }
        }

        /// A's values `k0 .. k0 + kc` of micro-panels `i0 .. i0 + group` as pairs: each row's
        /// pairs as they lie, the halves of every 32-bit word swapped (value `2q` upper),
        /// sixteen at a time.
        #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512bf16")]
        unsafe fn gather_a(c: &Call, i0: usize, group: usize, k0: usize, kc: usize, pairs: &mut [u32]) {
            let kp = kc / 2;
            for r in 0..group * TILE_ROWS {
                let row = c.a.wrapping_add((i0 * TILE_ROWS + r) * c.a_stride + k0 * 2).cast::<u32>();
                let dst = &mut pairs[r * kp..(r + 1) * kp];
                let mut q = 0;
                while q + 16 <= kp {
                    // SAFETY: the row has kc values from k0; `dst` kp pairs.
                    unsafe { _mm512_storeu_si512(dst.as_mut_ptr().add(q).cast(), _mm512_rol_epi32::<16>(_mm512_loadu_si512(row.add(q).cast()))) };
                    q += 16;
                }
                for (q, d) in dst.iter_mut().enumerate().skip(q) {
                    // SAFETY: as above.
                    *d = unsafe { row.add(q).read_unaligned() }.rotate_left(16);
                }
            }
        }

        /// Every tile of micro-panels `i0 .. i0 + group` for one sub-chunk: per run of two
        /// pairs of panels (one, and a last single panel, at the end), runs of three or two
        /// micro-panels; a single micro-panel takes up to six pairs of panels per pass.
        #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512bf16")]
        unsafe fn tiles(c: &Call, part: &Part, i0: usize, group: usize, panels: usize) {
            let pairs = panels / 2;
            // SAFETY (every call below): the caller's; the passes stay within micro-panels
            // i0 .. i0 + group and panels 0 .. panels.
            unsafe {
                if group == 1 {
                    let mut j = 0;
                    while j < pairs {
                        match pairs - j {
                            6.. => pass::<1, 6>(c, part, i0, 0, 2 * j),
                            5 => pass::<1, 5>(c, part, i0, 0, 2 * j),
                            4 => pass::<1, 4>(c, part, i0, 0, 2 * j),
                            3 => pass::<1, 3>(c, part, i0, 0, 2 * j),
                            2 => pass::<1, 2>(c, part, i0, 0, 2 * j),
                            _ => pass::<1, 1>(c, part, i0, 0, 2 * j),
                        }
                        j += (pairs - j).min(6);
                    }
                } else {
                    let mut j = 0;
                    while j < pairs {
                        let q = (pairs - j).min(2);
                        let mut i = 0;
                        for p in runs(group) {
                            match (p, q) {
                                (3, 2) => pass::<3, 2>(c, part, i0, i, 2 * j),
                                (3, _) => pass::<3, 1>(c, part, i0, i, 2 * j),
                                (2, 2) => pass::<2, 2>(c, part, i0, i, 2 * j),
                                (2, _) => pass::<2, 1>(c, part, i0, i, 2 * j),
                                (_, 2) => pass::<1, 2>(c, part, i0, i, 2 * j),
                                _ => pass::<1, 1>(c, part, i0, i, 2 * j),
                            }
                            i += p;
                        }
                        j += q;
                    }
                }
                if panels % 2 == 1 {
                    let mut i = 0;
                    for p in runs(group) {
                        match p {
                            3 => last::<3>(c, part, i0, i, panels - 1),
                            2 => last::<2>(c, part, i0, i, panels - 1),
                            _ => last::<1>(c, part, i0, i, panels - 1),
                        }
                        i += p;
                    }
                }
            }
        }

        /// Micro-panels `i0 + i .. + P` against `Q` pairs of panels from panel `j0`, in
        /// `4P × Q` (at most 24) accumulators.
        #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512bf16")]
        #[inline]
        unsafe fn pass<const P: usize, const Q: usize>(c: &Call, part: &Part, i0: usize, i: usize, j0: usize) {
            const { assert!(P * TILE_ROWS * Q <= 24 && TILE_COLS == 8) };
            let tile_row = |q: usize, h: usize, r: usize| c.tile_row(j0 + 2 * q + h, i0 + i, r);
            let mut acc = [[_mm512_setzero_ps(); 6]; 12];
            if part.accumulate {
                for (r, accs) in acc.iter_mut().enumerate().take(P * TILE_ROWS) {
                    for (q, v) in accs.iter_mut().enumerate().take(Q) {
                        // SAFETY: tile rows of the contract.
                        *v = unsafe { join(_mm256_loadu_ps(tile_row(q, 0, r)), _mm256_loadu_ps(tile_row(q, 1, r))) };
                    }
                }
            }
            let b: [*const u8; 12] = std::array::from_fn(|x| c.b.wrapping_add((j0 + x) * c.b_stride + part.b_offset));
            let a = part.rows(i);
            for kq in 0..part.kp {
                // SAFETY: each B panel has kp pair rows of 32 bytes from b_offset; A's pairs
                // kp · TILE_ROWS per micro-panel.
                unsafe {
                    let bv: [__m512bh; 6] = std::array::from_fn(|q| {
                        if q < Q {
                            let lo = _mm256_loadu_si256(b[2 * q].add(kq * 32).cast());
                            let hi = _mm256_loadu_si256(b[2 * q + 1].add(kq * 32).cast());
                            std::mem::transmute::<__m512i, __m512bh>(_mm512_inserti64x4::<1>(_mm512_castsi256_si512(lo), hi))
                        } else {
                            std::mem::transmute::<__m512i, __m512bh>(_mm512_setzero_si512())
                        }
                    });
                    for (r, accs) in acc.iter_mut().enumerate().take(P * TILE_ROWS) {
                        let x = *a[r].add(kq);
                        let x = std::mem::transmute::<__m512i, __m512bh>(_mm512_set1_epi32(x as i32));
                        for (q, v) in accs.iter_mut().enumerate().take(Q) {
                            *v = _mm512_dpbf16_ps(*v, bv[q], x);
                        }
                    }
                }
            }
            for (r, accs) in acc.iter().enumerate().take(P * TILE_ROWS) {
                for (q, v) in accs.iter().enumerate().take(Q) {
                    // SAFETY: tile rows of the contract.
                    unsafe {
                        _mm256_storeu_ps(tile_row(q, 0, r), _mm512_castps512_ps256(*v));
                        _mm256_storeu_ps(tile_row(q, 1, r), _mm256_castpd_ps(_mm512_extractf64x4_pd::<1>(_mm512_castps_pd(*v))));
                    }
                }
            }
        }

        /// Micro-panels `i0 + i .. + P` against the single panel `j`, eight lanes.
        #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512bf16")]
        #[inline]
        unsafe fn last<const P: usize>(c: &Call, part: &Part, i0: usize, i: usize, j: usize) {
            let mut acc = [_mm256_setzero_ps(); 12];
            if part.accumulate {
                for (r, v) in acc.iter_mut().enumerate().take(P * TILE_ROWS) {
                    // SAFETY: tile rows of the contract.
                    *v = unsafe { _mm256_loadu_ps(c.tile_row(j, i0 + i, r)) };
                }
            }
            let b = c.b.wrapping_add(j * c.b_stride + part.b_offset);
            let a = part.rows(i);
            for kq in 0..part.kp {
                // SAFETY: as in `pass`.
                unsafe {
                    let bv = std::mem::transmute::<__m256i, __m256bh>(_mm256_loadu_si256(b.add(kq * 32).cast()));
                    for (r, v) in acc.iter_mut().enumerate().take(P * TILE_ROWS) {
                        let x = *a[r].add(kq);
                        *v = _mm256_dpbf16_ps(*v, bv, std::mem::transmute::<__m256i, __m256bh>(_mm256_set1_epi32(x as i32)));
                    }
                }
            }
            for (r, v) in acc.iter().enumerate().take(P * TILE_ROWS) {
                // SAFETY: tile rows of the contract.
                unsafe { _mm256_storeu_ps(c.tile_row(j, i0 + i, r), *v) };
            }
        }

        /// Eight f32 at `lo` and eight at `hi`, as one vector.
        #[target_feature(enable = "avx512f")]
        #[inline]
        fn join(lo: __m256, hi: __m256) -> __m512 {
            _mm512_castpd_ps(_mm512_insertf64x4::<1>(_mm512_castps_pd(_mm512_castps256_ps512(lo)), _mm256_castps_pd(hi)))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_values::uniform;
    use f16c_core::abi::Libcall;
    use half::{bf16, f16};

    /// The GEMM loops this CPU runs, the widest first.
    fn gemm_loops() -> Vec<(&'static str, TilesFn)> {
        crate::libcalls::micro_kernels(&[("avx512", Libcall::GemmTilesAvx512), ("avx2", Libcall::GemmTiles)])
    }

    #[test]
    fn runs_cover_n_in_threes_and_twos() {
        for n in 0..40 {
            let r: Vec<usize> = runs(n).collect();
            assert_eq!(r.iter().sum::<usize>(), n, "{n}: {r:?}");
            assert!(n == 1 || r.iter().all(|&x| x == 2 || x == 3), "{n}: {r:?}");
        }
    }

    /// B as the call reads it by `flags`: f32 values (rounded to f16 or bf16 with `B_F16` or
    /// `B_BF16`) and, for those, their 16-bit encodings.
    fn b_typed(b: Vec<f32>, flags: u64) -> (Vec<f32>, Vec<u16>) {
        match flags & (B_F16 | B_BF16) {
            B_F16 => b.iter().map(|&x| (f16::from_f32(x).to_f32(), f16::from_f32(x).to_bits())).unzip(),
            B_BF16 => b.iter().map(|&x| (bf16::from_f32(x).to_f32(), bf16::from_f32(x).to_bits())).unzip(),
            _ => (b, vec![]),
        }
    }

    /// The operands of one call, as plain vectors.
    struct Case {
        a: Vec<f32>,
        a_stride: usize,
        b: Vec<f32>,
        b16: Vec<u16>,
        k: usize,
        micro_panels: usize,
        panels: usize,
        flags: u64,
    }

    /// What the libcall computes, element by element (`f32::mul_add` is one rounding), into
    /// tiles laid out `[panel][micro-panel][row][col]`.
    fn reference(c: &Case, tiles: &mut [f32]) {
        let packed = c.flags & PACKED_A != 0;
        for j in 0..c.panels {
            for i in 0..c.micro_panels {
                for r in 0..TILE_ROWS {
                    for col in 0..TILE_COLS {
                        let t = &mut tiles[((j * c.micro_panels + i) * TILE_ROWS + r) * TILE_COLS + col];
                        let mut s = if c.flags & ACCUMULATE != 0 { *t } else { 0.0 };
                        for kk in 0..c.k {
                            let x = if packed { c.a[i * TILE_ROWS * c.k + kk * TILE_ROWS + r] } else { c.a[(i * TILE_ROWS + r) * c.a_stride / 4 + kk] };
                            s = x.mul_add(c.b[(j * c.k + kk) * TILE_COLS + col], s);
                        }
                        *t = s;
                    }
                }
            }
        }
    }

    #[test]
    fn native_tiles_are_fused_multiply_add_chains_in_k_order() {
        if gemm_loops().is_empty() {
            eprintln!("no native GEMM tiles on this CPU: nothing to test");
        }
        for (isa, f) in gemm_loops() {
            tiles_match_the_reference(isa, f);
        }
    }

    fn tiles_match_the_reference(isa: &str, f: TilesFn) {
        let mut next = uniform(7);
        // Every run of micro-panels and of panels, one and several k, with and without
        // accumulation, packed A and rows (a stride wider than k), f32, f16 and bf16 B.
        for (micro_panels, panels) in [(1, 1), (1, 2), (1, 3), (1, 4), (1, 5), (1, 7), (1, 13), (2, 1), (3, 2), (4, 1), (5, 3), (7, 1), (2, 4), (4, 7)] {
            for k in [1, 2, 9, 33] {
                for flags in (0..16u64).filter(|f| f & (B_F16 | B_BF16) != B_F16 | B_BF16) {
                    let stride = (k + 3) * 4;
                    let a: Vec<f32> = if flags & PACKED_A != 0 {
                        (0..micro_panels * TILE_ROWS * k).map(|_| next()).collect()
                    } else {
                        (0..micro_panels * TILE_ROWS * stride / 4).map(|_| next()).collect()
                    };
                    let b: Vec<f32> = (0..panels * k * TILE_COLS).map(|_| next()).collect();
                    let (b, b16) = b_typed(b, flags);
                    let case = Case { a, a_stride: stride, b, b16, k, micro_panels, panels, flags };
                    let start: Vec<f32> = (0..panels * micro_panels * TILE_ROWS * TILE_COLS).map(|_| next() * 8.0).collect();
                    let mut want = start.clone();
                    reference(&case, &mut want);
                    let mut got = start.clone();
                    let (bp, b_stride): (*const u8, usize) = if case.b16.is_empty() { (case.b.as_ptr().cast(), k * TILE_COLS * 4) } else { (case.b16.as_ptr().cast(), k * TILE_COLS * 2) };
                    let tiles_stride = micro_panels * TILE_ROWS * TILE_COLS * 4;
                    let done = f(case.a.as_ptr().cast(), stride as u64, bp, b_stride as u64, k as u64, got.as_mut_ptr(), tiles_stride as u64, micro_panels as u64, panels as u64, flags);
                    assert_eq!(done, micro_panels as u64);
                    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                    assert_eq!(bits(&got), bits(&want), "{isa}: micro_panels={micro_panels} panels={panels} k={k} flags={flags}");
                }
            }
        }
    }

    /// The libcall's table entry.
    fn pairs_entry() -> TilesFn {
        // SAFETY: the table entry's signature.
        unsafe { std::mem::transmute::<usize, TilesFn>(crate::libcalls::table()[f16c_core::abi::Libcall::GemmPairsBf16 as usize]) }
    }

    /// B panels `[panel][k][TILE_COLS]` of bf16 bits in the pair layout of `GemmPairsBf16`.
    fn paired(b16: &[u16], panels: usize, k: usize) -> Vec<u16> {
        let mut out = vec![0u16; b16.len()];
        for j in 0..panels {
            for kk in 0..k {
                for col in 0..TILE_COLS {
                    out[j * k * TILE_COLS + (kk / 2) * 2 * TILE_COLS + col * 2 + 1 - kk % 2] = b16[(j * k + kk) * TILE_COLS + col];
                }
            }
        }
        out
    }

    /// One `GemmPairsBf16` call by `f` (or the element-by-element loop where `f` is `None`) on
    /// `a` (bf16 values in f32 rows `stride` bytes apart, passed as bf16 rows) and `b16`, from
    /// `start`.
    fn dot_call(f: Option<TilesFn>, a: &[f32], stride: usize, b16: &[u16], k: usize, (micro_panels, panels): (usize, usize), flags: u64, start: &[f32]) -> Vec<f32> {
        let b = paired(b16, panels, k);
        let a16: Vec<u16> = a.iter().map(|&x| bf16::from_f32(x).to_bits()).collect();
        let (a, stride): (*const u8, usize) = (a16.as_ptr().cast(), stride / 2);
        let mut got = start.to_vec();
        let tiles_stride = micro_panels * TILE_ROWS * TILE_COLS * 4;
        let (bp, b_stride) = (b.as_ptr().cast::<u8>(), k * TILE_COLS * 2);
        match f {
            Some(f) => {
                let done = f(a, stride as u64, bp, b_stride as u64, k as u64, got.as_mut_ptr(), tiles_stride as u64, micro_panels as u64, panels as u64, flags);
                assert_eq!(done, micro_panels as u64);
            }
            None => {
                let call = Call { a, a_stride: stride, b: bp, b_stride, k, tiles: got.as_mut_ptr().cast(), tiles_stride, accumulate: flags & ACCUMULATE != 0 };
                // SAFETY: the operands are laid out by the contract.
                unsafe { dot::scalar_for_tests(&call, micro_panels, panels) };
            }
        }
        got
    }

    #[test]
    fn bf16_pair_tiles_are_the_chains_in_k_order() {
        // Both loops (the AVX512-BF16 one where this CPU has it, by the table's entries, and
        // the element-by-element one everywhere) against the chain of fused multiply-adds:
        // bf16 products are exact, so the bits agree wherever nothing is subnormal. Every
        // pass shape (one to six pairs of panels, a last odd panel, runs of micro-panels, a
        // group of more than sixteen), several sub-chunks of k, with and without accumulation.
        let mut next = uniform(13);
        let loops: [(&str, Option<TilesFn>); 2] = [("libcall", Some(pairs_entry())), ("scalar", None)];
        for (micro_panels, panels) in [(1, 1), (1, 2), (1, 5), (1, 13), (1, 14), (2, 3), (3, 4), (5, 5), (4, 9), (17, 3)] {
            for k in [2, 10, 64, 70, 2 * dot::SUB_K + 6] {
                if micro_panels * panels * k > 40_000 && k > 64 {
                    continue;
                }
                for flags in [ACCUMULATE, 0].map(|f| f | B_BF16) {
                    let stride = (k + 3) * 4;
                    let len = micro_panels * TILE_ROWS * stride / 4;
                    let a: Vec<f32> = (0..len).map(|_| bf16::from_f32(next()).to_f32()).collect();
                    let (b, b16) = b_typed((0..panels * k * TILE_COLS).map(|_| next()).collect(), B_BF16);
                    let start: Vec<f32> = (0..panels * micro_panels * TILE_ROWS * TILE_COLS).map(|_| next() * 8.0).collect();
                    let mut want = start.clone();
                    let case = Case { a: a.clone(), a_stride: stride, b, b16: b16.clone(), k, micro_panels, panels, flags };
                    reference(&case, &mut want);
                    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                    for &(isa, f) in &loops {
                        let got = dot_call(f, &a, stride, &b16, k, (micro_panels, panels), flags, &start);
                        assert_eq!(bits(&got), bits(&want), "{isa}: micro_panels={micro_panels} panels={panels} k={k} flags={flags}");
                    }
                }
            }
        }
    }

    #[test]
    fn bf16_pair_tiles_flush_subnormals_as_the_instruction_does() {
        // Inputs, tile values and sums at and below bf16's smallest normal: the native loop
        // (where this CPU has AVX512-BF16) and the element-by-element one agree bit for bit.
        let f = pairs_entry();
        if !(std::arch::is_x86_feature_detected!("avx512bf16") && std::arch::is_x86_feature_detected!("avx512bw") && std::arch::is_x86_feature_detected!("avx512vl")) {
            eprintln!("no AVX512-BF16 on this CPU: nothing to compare");
            return;
        }
        let mut next = uniform(17);
        let tiny = |x: f32| bf16::from_f32(x * 2f32.powi(-130)).to_f32();
        let (micro_panels, panels, k) = (3, 3, 12);
        let a: Vec<f32> = (0..micro_panels * TILE_ROWS * k).map(|i| if i % 3 == 0 { tiny(next()) } else { bf16::from_f32(next() * 2f32.powi(-64)).to_f32() }).collect();
        let b16: Vec<u16> = (0..panels * k * TILE_COLS).map(|i| bf16::from_f32(if i % 5 == 0 { tiny(next()) } else { next() * 2f32.powi(-62) }).to_bits()).collect();
        let start: Vec<f32> = (0..panels * micro_panels * TILE_ROWS * TILE_COLS).map(|i| if i % 2 == 0 { next() * 1e-38 } else { next() * 1e-37 }).collect();
        assert!(a.iter().any(|x| x.is_subnormal()) && start.iter().any(|x| x.is_subnormal()));
        let flags = ACCUMULATE | B_BF16;
        let stride = k * 4;
        let native = dot_call(Some(f), &a, stride, &b16, k, (micro_panels, panels), flags, &start);
        let scalar = dot_call(None, &a, stride, &b16, k, (micro_panels, panels), flags, &start);
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&native), bits(&scalar));
        // And the flushing mattered: the plain chain gives other bits.
        let mut chain = start.clone();
        let wide: Vec<f32> = b16.iter().map(|&h| bf16::from_bits(h).to_f32()).collect();
        reference(&Case { a, a_stride: stride, b: wide, b16, k, micro_panels, panels, flags }, &mut chain);
        assert_ne!(bits(&chain), bits(&scalar));
    }

    #[test]
    fn native_gemv_sums_are_fused_multiply_add_chains_in_k_order() {
        let Some(&(_, f)) = crate::libcalls::micro_kernels::<GemvFn>(&[("avx2", Libcall::GemvPanels)]).first() else {
            eprintln!("no native one-row GEMM on this CPU: nothing to test");
            return;
        };
        let mut next = uniform(11);
        // Every run length (8, 4, 2, 1) and mixes of them; f32, f16 and bf16 B.
        for panels in [1, 2, 3, 4, 5, 7, 8, 9, 15, 19] {
            for k in [1, 3, 40] {
                for flags in [0, B_F16, B_BF16] {
                    let a: Vec<f32> = (0..k).map(|_| next()).collect();
                    let b: Vec<f32> = (0..panels * k * TILE_COLS).map(|_| next()).collect();
                    let (b, b16) = b_typed(b, flags);
                    let want: Vec<u32> = (0..panels * TILE_COLS)
                        .map(|o| {
                            let (j, col) = (o / TILE_COLS, o % TILE_COLS);
                            (0..k).fold(0f32, |s, kk| a[kk].mul_add(b[(j * k + kk) * TILE_COLS + col], s)).to_bits()
                        })
                        .collect();
                    // One panel more than the call's: the call must not write past its panels.
                    let mut got = vec![f32::NAN; (panels + 1) * TILE_COLS];
                    let (bp, b_stride): (*const u8, usize) = if b16.is_empty() { (b.as_ptr().cast(), k * TILE_COLS * 4) } else { (b16.as_ptr().cast(), k * TILE_COLS * 2) };
                    let done = f(a.as_ptr(), bp, b_stride as u64, k as u64, got.as_mut_ptr(), panels as u64, flags);
                    assert_eq!(done, panels as u64);
                    assert!(got[panels * TILE_COLS..].iter().all(|x| x.is_nan()), "panels={panels} k={k} flags={flags}: wrote past its panels");
                    let got: Vec<u32> = got[..panels * TILE_COLS].iter().map(|x| x.to_bits()).collect();
                    assert_eq!(got, want, "panels={panels} k={k} flags={flags}");
                }
            }
        }
    }
}
