//! The libcall table generated CPU code calls through (`rt`, [`f16c_core::abi::Libcall`]): the
//! same Rust functions the reference interpreter uses, so results are bit-identical.

use f16c_core::abi::Libcall;
use half::{bf16, f16};

/// Defines each libcall as an `extern "C"` function and the table of their addresses, in one
/// list so that a libcall and its table entry cannot drift apart.
/// The entries after `optional:` are addresses, null where the runtime has no code for this CPU
/// (the micro-kernels of [`f16c_core::abi::MICRO_KERNELS`], by the features their rows require).
macro_rules! libcalls {
    ($($lc:ident => |$($x:ident: $t:ty),+| -> $r:ty $body:block),+ $(,)? ; optional: $($opt:ident => $at:expr),* $(,)?) => {
        /// The table, in [`Libcall::ALL`] order.
        pub fn table() -> Vec<usize> {
            Libcall::ALL
                .iter()
                .map(|lc| match lc {
                    $(Libcall::$lc => {
                        extern "C" fn f($($x: $t),+) -> $r $body
                        f as extern "C" fn($($t),+) -> $r as usize
                    })+
                    $(Libcall::$opt => $at,)*
                })
                .collect()
        }
    };
}

libcalls! {
    ExpF32 => |x: f32| -> f32 { f16c_core::math::exp_f32(x) },
    LogF32 => |x: f32| -> f32 { x.ln() },
    TanhF32 => |x: f32| -> f32 { f16c_core::math::tanh_f32(x) },
    ErfF32 => |x: f32| -> f32 { f16c_core::math::erf_f32(x) },
    PowF32 => |x: f32, y: f32| -> f32 { x.powf(y) },
    ExpF64 => |x: f64| -> f64 { x.exp() },
    LogF64 => |x: f64| -> f64 { x.ln() },
    TanhF64 => |x: f64| -> f64 { x.tanh() },
    ErfF64 => |x: f64| -> f64 { libm::erf(x) },
    PowF64 => |x: f64, y: f64| -> f64 { x.powf(y) },
    F64ToF16 => |x: f64| -> f32 { f16::from_f64(x).to_f32() },
    F64ToBf16 => |x: f64| -> f32 { bf16::from_f64(x).to_f32() },
    SinF32 => |x: f32| -> f32 { x.sin() },
    CosF32 => |x: f32| -> f32 { x.cos() },
    SinF64 => |x: f64| -> f64 { x.sin() },
    CosF64 => |x: f64| -> f64 { x.cos() },
    WidenF16 => |src: *const f16, dst: *mut f32, n: u64| -> u64 {
        // SAFETY: the generated code passes `n` readable f16 at `src` and `n` writable f32 at
        // `dst`, not overlapping (the Libcall's contract).
        let (src, dst) = unsafe { (std::slice::from_raw_parts(src, n as usize), std::slice::from_raw_parts_mut(dst, n as usize)) };
        widen_f16(src, dst);
        n
    },
    NarrowF16 => |src: *const f32, dst: *mut f16, n: u64| -> u64 {
        // SAFETY: the generated code passes `n` readable f32 at `src` and `n` writable f16 at
        // `dst`, not overlapping (the Libcall's contract).
        let (src, dst) = unsafe { (std::slice::from_raw_parts(src, n as usize), std::slice::from_raw_parts_mut(dst, n as usize)) };
        narrow_f16(src, dst);
        n
    },
    NarrowF16Canonical => |src: *const f32, dst: *mut f16, n: u64| -> u64 {
        // SAFETY: as NarrowF16's.
        let (src, dst) = unsafe { (std::slice::from_raw_parts(src, n as usize), std::slice::from_raw_parts_mut(dst, n as usize)) };
        narrow_f16_canonical(src, dst);
        n
    },
    RoundF16 => |src: *const f32, dst: *mut f32, n: u64, canonical: u64| -> u64 {
        // SAFETY: the generated code passes `n` readable f32 at `src` and `n` writable f32 at
        // `dst`, not overlapping (the Libcall's contract).
        let (src, dst) = unsafe { (std::slice::from_raw_parts(src, n as usize), std::slice::from_raw_parts_mut(dst, n as usize)) };
        round_f16(src, dst, canonical != 0);
        n
    },
    ExpArrayF32 => |src: *const f32, dst: *mut f32, n: u64| -> u64 {
        // SAFETY: the generated code passes `n` readable f32 at `src` and `n` writable f32 at
        // `dst`, not overlapping (the Libcall's contract).
        let (src, dst) = unsafe { (std::slice::from_raw_parts(src, n as usize), std::slice::from_raw_parts_mut(dst, n as usize)) };
        exp_array(src, dst);
        n
    },
    SigmoidArrayF32 => |src: *const f32, dst: *mut f32, n: u64| -> u64 {
        // SAFETY: as ExpArrayF32's.
        let (src, dst) = unsafe { (std::slice::from_raw_parts(src, n as usize), std::slice::from_raw_parts_mut(dst, n as usize)) };
        sigmoid_array(src, dst);
        n
    },
    ErfArrayF32 => |src: *const f32, dst: *mut f32, n: u64| -> u64 {
        // SAFETY: as ExpArrayF32's.
        let (src, dst) = unsafe { (std::slice::from_raw_parts(src, n as usize), std::slice::from_raw_parts_mut(dst, n as usize)) };
        map_wide(src, dst, f16c_core::math::erf_f32);
        n
    },
    TanhArrayF32 => |src: *const f32, dst: *mut f32, n: u64| -> u64 {
        // SAFETY: as ExpArrayF32's.
        let (src, dst) = unsafe { (std::slice::from_raw_parts(src, n as usize), std::slice::from_raw_parts_mut(dst, n as usize)) };
        map_wide(src, dst, f16c_core::math::tanh_f32);
        n
    },
    GemmPairsBf16 => |a: *const u8, a_stride: u64, b: *const u8, b_stride: u64, k: u64, tiles: *mut f32, tiles_stride: u64, micro_panels: u64, panels: u64, flags: u64| -> u64 {
        // SAFETY: the generated code passes pointers and sizes by the libcall's contract.
        unsafe { crate::ukernel::tiles::gemm_pairs_bf16(a, a_stride, b, b_stride, k, tiles, tiles_stride, micro_panels, panels, flags) }
    },
    SiluArrayF32 => |src: *const f32, dst: *mut f32, n: u64| -> u64 {
        // SAFETY: the generated code passes `n` elements at `src` and at `dst`, the same or not
        // overlapping (the Libcall's contract).
        unsafe { map_in_place_or_apart(src, dst, n as usize, |x: f32| x * sigmoid(x)) };
        n
    },
    SiluArrayBf16 => |src: *const u16, dst: *mut u16, n: u64| -> u64 {
        // SAFETY: as SiluArrayF32's.
        unsafe { map_in_place_or_apart(src, dst, n as usize, silu_bf16) };
        n
    },
    SoftmaxRowsF32 => |x: *const f32, y: *mut f32, rows: u64, len: u64, mask: *const f32, fill: *const f32| -> u64 {
        let n = (rows * len) as usize;
        // SAFETY: the generated code passes `rows · len` readable f32 at `x` and as many
        // writable f32 at `y`, not overlapping, and `mask` and `fill` each null or one
        // readable f32 (the Libcall's contract).
        let (x, y, masked) = unsafe {
            let masked = (!mask.is_null() && !fill.is_null()).then(|| (*mask, *fill));
            (std::slice::from_raw_parts(x, n), std::slice::from_raw_parts_mut(y, n), masked)
        };
        softmax_rows(x, y, len as usize, masked);
        rows
    },
    SoftmaxRowsBf16 => |x: *const u8, y: *mut u16, rows: u64, len: u64, mask: *const u8, fill: *const f32, scratch: *mut f32, flags: u64| -> u64 {
        // SAFETY: the generated code passes the operands by the Libcall's contract.
        unsafe { softmax_rows_low::<Bf16>(x, y, rows, len, mask, fill, scratch, flags) }
    },
    FinishTilesF32 => |tiles: *const u8, tiles_stride: u64, micro_panels: u64, panels: u64, out: *mut f32, out_stride: u64, rows: u64, cols: u64, p: *const f16c_core::abi::DepthwiseParams| -> u64 {
        debug_assert!(rows <= micro_panels * 4 && cols <= panels * 8);
        // SAFETY: the generated code passes the operands by the Libcall's contract.
        unsafe { crate::finish::finish_tiles_f32(tiles, tiles_stride as usize, out, out_stride as usize, rows as usize, cols as usize, &*p) };
        rows
    },
    ;
    optional:
    GemmTiles => micro_kernel(Libcall::GemmTiles, crate::ukernel::tiles::avx2_entry),
    GemmTilesAvx512 => micro_kernel(Libcall::GemmTilesAvx512, crate::ukernel::tiles::avx512_entry),
    GemvPanels => micro_kernel(Libcall::GemvPanels, crate::ukernel::tiles::gemv_entry),
    DepthwiseRow => micro_kernel(Libcall::DepthwiseRow, crate::ukernel::depthwise::avx2_entry),
    DepthwiseRowAvx512 => micro_kernel(Libcall::DepthwiseRowAvx512, crate::ukernel::depthwise::avx512_entry),
    SiluArrayF16 => micro_kernel(Libcall::SiluArrayF16, silu_f16_entry),
    SoftmaxRowsF16 => micro_kernel(Libcall::SoftmaxRowsF16, || softmax_rows_f16 as SoftmaxLowFn as usize),
}

/// The signature of [`Libcall::SoftmaxRowsBf16`] and [`Libcall::SoftmaxRowsF16`].
type SoftmaxLowFn = extern "C" fn(*const u8, *mut u16, u64, u64, *const u8, *const f32, *mut f32, u64) -> u64;

/// [`Libcall::SoftmaxRowsF16`]: [`Libcall::SoftmaxRowsBf16`]'s rows with fp16 in place of bf16
/// (the table holds it on a CPU with F16C, which its row conversions use).
extern "C" fn softmax_rows_f16(x: *const u8, y: *mut u16, rows: u64, len: u64, mask: *const u8, fill: *const f32, scratch: *mut f32, flags: u64) -> u64 {
    // SAFETY: the generated code passes the operands by the Libcall's contract.
    unsafe { softmax_rows_low::<Fp16>(x, y, rows, len, mask, fill, scratch, flags) }
}

/// The softmax libcalls into a 16-bit type `L` ([`Libcall::SoftmaxRowsBf16`],
/// [`Libcall::SoftmaxRowsF16`]): `rows` rows of `len` values of `x` (of `L`, or f32 with
/// [`f16c_core::abi::SOFTMAX_F32_INPUT`]) into `y`, the rows' exp values in `scratch`; `mask`
/// (of `x`'s type) and `fill` null or the all-masked test's values. Returns `rows`.
///
/// # Safety
/// `rows · len` readable values at `x`, as many writable ones at `y` and writable f32 at
/// `scratch`, none overlapping; `mask` and `fill` each null or one readable value.
#[allow(clippy::too_many_arguments, reason = "the libcall's C signature")]
unsafe fn softmax_rows_low<L: LowFloat>(x: *const u8, y: *mut u16, rows: u64, len: u64, mask: *const u8, fill: *const f32, scratch: *mut f32, flags: u64) -> u64 {
    let n = (rows * len) as usize;
    let f32_input = flags as i64 & f16c_core::abi::SOFTMAX_F32_INPUT != 0;
    // SAFETY: the caller's.
    unsafe {
        let (y, e) = (std::slice::from_raw_parts_mut(y, n), std::slice::from_raw_parts_mut(scratch, n));
        let fill = (!mask.is_null() && !fill.is_null()).then(|| *fill);
        if f32_input {
            let masked = fill.map(|f| (*mask.cast::<f32>(), f));
            softmax_rows_to_low::<L, f32>(std::slice::from_raw_parts(x.cast::<f32>(), n), |xr, er| er.copy_from_slice(xr), false, y, e, len as usize, masked);
        } else {
            let masked = fill.map(|f| (L::widen(*mask.cast::<L::Stored>()), f));
            softmax_rows_to_low::<L, L::Stored>(std::slice::from_raw_parts(x.cast::<L::Stored>(), n), L::widen_row, true, y, e, len as usize, masked);
        }
    }
    rows
}

/// [`Libcall::SiluArrayF16`]'s function (null on another architecture; the table holds it only
/// on a CPU with AVX2, FMA and F16C).
fn silu_f16_entry() -> usize {
    #[cfg(target_arch = "x86_64")]
    return silu_array_f16 as extern "C" fn(*const u16, *mut u16, u64) -> u64 as usize;
    #[cfg(not(target_arch = "x86_64"))]
    0
}

/// [`Libcall::SiluArrayF16`]: whole blocks by [`silu_f16_blocks`] in the widest vectors this
/// CPU has, the rest one by one with `half`'s conversions (the same roundings).
#[cfg(target_arch = "x86_64")]
extern "C" fn silu_array_f16(src: *const u16, dst: *mut u16, n: u64) -> u64 {
    let n = n as usize;
    // SAFETY: the table holds this function only on a CPU with AVX2, FMA and F16C; the
    // generated code passes `n` elements at `src` and at `dst`, the same or not overlapping.
    let done = unsafe {
        if std::arch::is_x86_feature_detected!("avx512f") {
            silu_f16_avx512(src, dst, n)
        } else {
            silu_f16_avx2(src, dst, n)
        }
    };
    for i in done..n {
        // SAFETY: as above; element `i` is read before it is written.
        unsafe { *dst.add(i) = silu_f16(*src.add(i)) };
    }
    n as u64
}

/// SiLU of an fp16 value as the reference computes it in fp16: `s = f16(sigmoid(x))`, then
/// `f16(x · s)`.
fn silu_f16(h: u16) -> u16 {
    let x = f16::from_bits(h).to_f32();
    let s = f16::from_f32(sigmoid(x)).to_f32();
    f16::from_f32(x * s).to_bits()
}

/// [`silu_f16_blocks`] compiled for AVX-512 (the sigmoid sixteen lanes at a time).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx2,fma,f16c")]
unsafe fn silu_f16_avx512(src: *const u16, dst: *mut u16, n: usize) -> usize {
    // SAFETY: the caller's.
    unsafe { silu_f16_blocks(src, dst, n) }
}

/// [`silu_f16_blocks`] compiled for AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn silu_f16_avx2(src: *const u16, dst: *mut u16, n: usize) -> usize {
    // SAFETY: the caller's.
    unsafe { silu_f16_blocks(src, dst, n) }
}

/// Values of a block of [`silu_f16_blocks`].
#[cfg(target_arch = "x86_64")]
const SILU_F16_BLOCK: usize = 64;

/// The whole blocks of [`SILU_F16_BLOCK`] fp16 values of [`silu_f16`]: each block widened
/// by F16C into f32 (exactly), the contract's sigmoid over the block (a loop LLVM vectorises),
/// rounded to f16 and back, the product rounded to f16 (`vcvtps2ph` to nearest even, as
/// `half`); returns how many values it computed. A block is read whole before it is written
/// (in place or apart). (The same conversions as [`widen_f16`], [`round_f16_in_place`] and
/// [`narrow_f16`], inline: calling those per block, in five passes, ran EfficientNet-B0's
/// largest SiLU 0.77 → 0.91–1.38 ms.)
///
/// # Safety
/// AVX2, FMA and F16C; `n` elements at `src` and `dst`, the same or not overlapping.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn silu_f16_blocks(src: *const u16, dst: *mut u16, n: usize) -> usize {
    use std::arch::x86_64::*;
    let whole = n - n % SILU_F16_BLOCK;
    let (mut x, mut s) = ([0f32; SILU_F16_BLOCK], [0f32; SILU_F16_BLOCK]);
    for b in (0..whole).step_by(SILU_F16_BLOCK) {
        // SAFETY: b + SILU_F16_BLOCK <= n elements at `src` and `dst`; unaligned loads and
        // stores of eight values within the block arrays.
        unsafe {
            for i in (0..SILU_F16_BLOCK).step_by(8) {
                _mm256_storeu_ps(x.as_mut_ptr().add(i), _mm256_cvtph_ps(_mm_loadu_si128(src.add(b + i).cast::<__m128i>())));
            }
            for (s, &x) in s.iter_mut().zip(&x) {
                *s = sigmoid(x);
            }
            for i in (0..SILU_F16_BLOCK).step_by(8) {
                let s = _mm256_cvtph_ps(_mm256_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(_mm256_loadu_ps(s.as_ptr().add(i))));
                let y = _mm256_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(_mm256_mul_ps(_mm256_loadu_ps(x.as_ptr().add(i)), s));
                _mm_storeu_si128(dst.add(b + i).cast::<__m128i>(), y);
            }
        }
    }
    whole
}

/// Micro-kernel `lc`'s entry ([`f16c_core::abi::MICRO_KERNELS`]): `entry()` where this CPU has
/// every feature its row requires, else null (code that calls it requires them too, and the
/// loader refuses it on such a CPU).
fn micro_kernel(lc: Libcall, entry: fn() -> usize) -> usize {
    if available(lc) {
        entry()
    } else {
        0
    }
}

/// The entries of `(name, libcall)` micro-kernels this CPU runs, as functions of type `F` (for
/// tests that run each loop against its contract).
#[cfg(test)]
pub(crate) fn micro_kernels<F: Copy>(of: &[(&'static str, Libcall)]) -> Vec<(&'static str, F)> {
    assert_eq!(std::mem::size_of::<F>(), std::mem::size_of::<usize>());
    let table = table();
    of.iter()
        .filter(|&&(_, lc)| table[lc as usize] != 0)
        // SAFETY: the caller names `F` as the libcalls' signature (a function pointer).
        .map(|&(isa, lc)| (isa, unsafe { std::mem::transmute_copy::<usize, F>(&table[lc as usize]) }))
        .collect()
}

/// Whether this CPU runs micro-kernel `lc` (a libcall of [`f16c_core::abi::MICRO_KERNELS`]).
pub fn available(lc: Libcall) -> bool {
    f16c_core::abi::MicroKernel::of(lc).is_some_and(|m| m.requires.iter().all(|f| crate::loader::has_feature(f)))
}

/// `dst[i] = src[i]` widened: F16C (`vcvtph2ps`, eight per instruction) where the CPU has it,
/// else `half`'s software conversion; the same values either way (exact, NaN made quiet).
fn widen_f16(src: &[f16], dst: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    let f16c: Option<F16cBlocks<f16, f32>> = Some(widen_f16_blocks_f16c);
    #[cfg(not(target_arch = "x86_64"))]
    let f16c = None;
    convert(src, dst, f16c, f16::to_f32);
}

/// An F16C conversion of a slice's whole blocks of eight, returning how many it converted
/// (unsafe: the CPU must have F16C).
type F16cBlocks<S, D> = unsafe fn(&[S], &mut [D]) -> usize;

/// `dst[i] = one(src[i])`, the whole blocks of eight by `f16c` where there is one for this
/// architecture and the CPU has F16C.
fn convert<S: Copy, D>(src: &[S], dst: &mut [D], f16c: Option<F16cBlocks<S, D>>, one: impl Fn(S) -> D) {
    let mut done = 0;
    if let Some(blocks) = f16c.filter(|_| has_f16c()) {
        // SAFETY: the CPU has F16C (and so AVX), which `blocks` needs and nothing more.
        done = unsafe { blocks(src, dst) };
    }
    for (d, s) in dst[done..].iter_mut().zip(&src[done..]) {
        *d = one(*s);
    }
}

/// Whether this CPU has x86's F16C.
fn has_f16c() -> bool {
    #[cfg(target_arch = "x86_64")]
    return std::arch::is_x86_feature_detected!("f16c");
    #[cfg(not(target_arch = "x86_64"))]
    false
}

/// The whole blocks of eight of [`widen_f16`] on a CPU with F16C; returns how many values it
/// widened. (`half`'s own slice conversion calls a function per eight values, through stack
/// copies: slower than the software conversion it replaces.)
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx,f16c")]
unsafe fn widen_f16_blocks_f16c(src: &[f16], dst: &mut [f32]) -> usize {
    use std::arch::x86_64::{__m128i, _mm256_cvtph_ps, _mm256_storeu_ps, _mm_loadu_si128};
    let n = src.len().min(dst.len());
    let whole = n - n % 8;
    for i in (0..whole).step_by(8) {
        // SAFETY: i + 8 <= n elements of each slice; unaligned loads and stores.
        unsafe {
            let h = _mm_loadu_si128(src.as_ptr().add(i).cast::<__m128i>());
            _mm256_storeu_ps(dst.as_mut_ptr().add(i), _mm256_cvtph_ps(h));
        }
    }
    whole
}

/// `dst[i] = src[i]` rounded to f16, to nearest even: F16C (`vcvtps2ph`, eight per
/// instruction, rounding by its immediate whatever MXCSR says) where the CPU has it, else
/// `half`'s software conversion; the same bits either way (NaN made quiet, its top payload
/// bits kept).
fn narrow_f16(src: &[f32], dst: &mut [f16]) {
    #[cfg(target_arch = "x86_64")]
    let f16c: Option<F16cBlocks<f32, f16>> = Some(narrow_f16_blocks_f16c);
    #[cfg(not(target_arch = "x86_64"))]
    let f16c = None;
    convert(src, dst, f16c, f16::from_f32);
}

/// f16's canonical quiet NaN: `f32::NAN` narrowed.
const CANONICAL_NAN_F16: u16 = 0x7e00;

/// [`narrow_f16`], with every NaN the canonical one.
fn narrow_f16_canonical(src: &[f32], dst: &mut [f16]) {
    #[cfg(target_arch = "x86_64")]
    let f16c: Option<F16cBlocks<f32, f16>> = Some(narrow_f16_canonical_blocks_f16c);
    #[cfg(not(target_arch = "x86_64"))]
    let f16c = None;
    convert(src, dst, f16c, |x| if x.is_nan() { f16::from_bits(CANONICAL_NAN_F16) } else { f16::from_f32(x) });
}

/// The whole blocks of eight of [`narrow_f16_canonical`] on a CPU with F16C: `vcvtps2ph`,
/// keeping the largest magnitude's bits; only if that is a NaN's (rare: a block of values
/// without NaN costs two instructions more per eight, not a compare and blend), a second pass
/// replaces the NaN lanes.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx,f16c")]
unsafe fn narrow_f16_canonical_blocks_f16c(src: &[f32], dst: &mut [f16]) -> usize {
    use std::arch::x86_64::*;
    let n = src.len().min(dst.len());
    let whole = n - n % 8;
    let (nan, magnitude, inf) = (_mm_set1_epi16(CANONICAL_NAN_F16 as i16), _mm_set1_epi16(0x7fff), _mm_set1_epi16(0x7c00));
    let mut most = _mm_setzero_si128();
    for i in (0..whole).step_by(8) {
        // SAFETY: i + 8 <= n elements of each slice; unaligned loads and stores.
        unsafe {
            let h = _mm256_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(_mm256_loadu_ps(src.as_ptr().add(i)));
            most = _mm_max_epu16(most, _mm_and_si128(h, magnitude));
            _mm_storeu_si128(dst.as_mut_ptr().add(i).cast::<__m128i>(), h);
        }
    }
    // A magnitude's bits above inf's are a NaN's (a signed 16-bit compare: they are positive).
    if _mm_movemask_epi8(_mm_cmpgt_epi16(most, inf)) != 0 {
        for i in (0..whole).step_by(8) {
            // SAFETY: as above.
            unsafe {
                let at = dst.as_mut_ptr().add(i).cast::<__m128i>();
                let h = _mm_loadu_si128(at);
                let m = _mm_cmpgt_epi16(_mm_and_si128(h, magnitude), inf);
                _mm_storeu_si128(at, _mm_blendv_epi8(h, nan, m));
            }
        }
    }
    whole
}

/// `dst[i] = src[i]` rounded to f16 and widened back ([`narrow_f16`]'s bits, exactly widened),
/// every NaN `f32::NAN` where `canonical`.
fn round_f16(src: &[f32], dst: &mut [f32], canonical: bool) {
    #[cfg(target_arch = "x86_64")]
    let f16c: Option<F16cBlocks<f32, f32>> = Some(if canonical { round_f16_blocks_f16c::<true> } else { round_f16_blocks_f16c::<false> });
    #[cfg(not(target_arch = "x86_64"))]
    let f16c = None;
    convert(src, dst, f16c, |x| if canonical && x.is_nan() { f32::NAN } else { f16::from_f32(x).to_f32() });
}

/// The whole blocks of eight of [`round_f16`] on a CPU with F16C: `vcvtps2ph` then `vcvtph2ps`,
/// and with `CANONICAL` the NaN lanes (those unordered with themselves) replaced.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx,f16c")]
unsafe fn round_f16_blocks_f16c<const CANONICAL: bool>(src: &[f32], dst: &mut [f32]) -> usize {
    use std::arch::x86_64::*;
    let n = src.len().min(dst.len());
    let whole = n - n % 8;
    let nan = _mm256_set1_ps(f32::NAN);
    for i in (0..whole).step_by(8) {
        // SAFETY: i + 8 <= n elements of each slice; unaligned loads and stores.
        unsafe {
            let x = _mm256_loadu_ps(src.as_ptr().add(i));
            let mut r = _mm256_cvtph_ps(_mm256_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(x));
            if CANONICAL {
                r = _mm256_blendv_ps(r, nan, _mm256_cmp_ps::<_CMP_UNORD_Q>(x, x));
            }
            _mm256_storeu_ps(dst.as_mut_ptr().add(i), r);
        }
    }
    whole
}

/// The whole blocks of eight of [`narrow_f16`] on a CPU with F16C; returns how many values it
/// narrowed.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx,f16c")]
unsafe fn narrow_f16_blocks_f16c(src: &[f32], dst: &mut [f16]) -> usize {
    use std::arch::x86_64::{__m128i, _MM_FROUND_TO_NEAREST_INT, _mm_storeu_si128, _mm256_cvtps_ph, _mm256_loadu_ps};
    let n = src.len().min(dst.len());
    let whole = n - n % 8;
    for i in (0..whole).step_by(8) {
        // SAFETY: i + 8 <= n elements of each slice; unaligned loads and stores.
        unsafe {
            let x = _mm256_loadu_ps(src.as_ptr().add(i));
            _mm_storeu_si128(dst.as_mut_ptr().add(i).cast::<__m128i>(), _mm256_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(x));
        }
    }
    whole
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The table's SiLU, in place and not, gives `x · sigmoid(x)` with the reference's sigmoid
    /// bit for bit on a spread of f32 values (NaN, infinities, zeros, large of either sign).
    #[test]
    fn the_silu_loop_gives_the_definitions_bits() {
        let f = table()[Libcall::SiluArrayF32 as usize];
        // SAFETY: the table's SiluArrayF32 entry has this signature (the macro defines it so).
        let call = unsafe { std::mem::transmute::<usize, extern "C" fn(*const f32, *mut f32, u64) -> u64>(f) };
        let mut x: Vec<f32> = (0..4099u32).map(|i| f32::from_bits(i.wrapping_mul(1_046_527))).collect();
        x.extend([f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 0.0, -0.0, 88.0, -88.0, 1e-40, 20.5, -20.5]);
        let want: Vec<f32> = x.iter().map(|&v| v * (1.0 / (1.0 + f16c_core::math::exp_f32(-v)))).collect();
        // The same bits, any NaN for a NaN (the contract does not fix a NaN's payload).
        let check = |got: &[f32], how: &str| {
            for ((g, w), v) in got.iter().zip(&want).zip(&x) {
                assert!(g.to_bits() == w.to_bits() || (g.is_nan() && w.is_nan()), "{how}: silu({v:e} = {:#x}) = {g:e}, want {w:e}", v.to_bits());
            }
        };
        let mut out = vec![0f32; x.len()];
        assert_eq!(call(x.as_ptr(), out.as_mut_ptr(), x.len() as u64), x.len() as u64);
        check(&out, "out of place");
        let mut inplace = x.clone();
        call(inplace.as_ptr(), inplace.as_mut_ptr(), inplace.len() as u64);
        check(&inplace, "in place");
    }

    /// The fp16 SiLU loop (where this CPU has it) gives, for every fp16 value, in place and
    /// not, the reference's bits: the sigmoid rounded to fp16 by `half`, the product rounded to
    /// fp16 by `half` (a NaN for a NaN); a count that is not a multiple of its block.
    #[test]
    fn the_f16_silu_loop_gives_the_references_bits() {
        if table()[Libcall::SiluArrayF16 as usize] == 0 {
            eprintln!("no fp16 SiLU loop on this CPU: nothing to test");
            return;
        }
        silu_low_loop_gives_the_references_bits!(Libcall::SiluArrayF16, f16, (0..=u16::MAX).chain(0..37));
    }

    /// The body of the two SiLU loop tests: libcall `$lc` of the 16-bit type `$t` on the bits
    /// `$values`, in place and not, against `half`'s roundings of the sigmoid and the product.
    macro_rules! silu_low_loop_gives_the_references_bits {
        ($lc:expr, $t:ty, $values:expr) => {{
            // SAFETY: the table's entry has this signature (the macro defines it so).
            let call = unsafe { std::mem::transmute::<usize, extern "C" fn(*const u16, *mut u16, u64) -> u64>(table()[$lc as usize]) };
            let x: Vec<u16> = $values.collect();
            let want: Vec<$t> = x
                .iter()
                .map(|&h| {
                    let v = <$t>::from_bits(h).to_f32();
                    let s = <$t>::from_f32(1.0 / (1.0 + f16c_core::math::exp_f32(-v)));
                    <$t>::from_f32(v * s.to_f32())
                })
                .collect();
            let check = |got: &[u16], how: &str| {
                for ((&g, w), &v) in got.iter().zip(&want).zip(&x) {
                    let g = <$t>::from_bits(g);
                    assert!(g.to_bits() == w.to_bits() || (g.is_nan() && w.is_nan()), "{how}: silu({v:#06x}) = {:#06x}, want {:#06x}", g.to_bits(), w.to_bits());
                }
            };
            let mut out = vec![0u16; x.len()];
            assert_eq!(call(x.as_ptr(), out.as_mut_ptr(), x.len() as u64), x.len() as u64);
            check(&out, "out of place");
            let mut inplace = x.clone();
            call(inplace.as_ptr(), inplace.as_mut_ptr(), inplace.len() as u64);
            check(&inplace, "in place");
        }};
    }
    use silu_low_loop_gives_the_references_bits;

    /// The bf16 SiLU loop gives, for every bf16 value, in place and not, the reference's bits:
    /// the sigmoid rounded to bf16 by `half`, the product rounded to bf16 by `half` (a NaN for
    /// a NaN); and its rounding is `half`'s for f32 patterns around every rounding boundary.
    #[test]
    fn the_bf16_silu_loop_gives_the_references_bits() {
        silu_low_loop_gives_the_references_bits!(Libcall::SiluArrayBf16, bf16, 0..=u16::MAX);
        for hi in (0..=u16::MAX).step_by(7) {
            for lo in [0u32, 1, 0x7fff, 0x8000, 0x8001, 0xffff, 0x4000, 0xc000] {
                let v = f32::from_bits(u32::from(hi) << 16 | lo);
                assert_eq!(bf16_bits(v), bf16::from_f32(v).to_bits(), "{:#010x}", v.to_bits());
            }
        }
    }

    /// `rows` rows of `len` values `value(random)`: the first row all -inf, and (from three
    /// rows) a NaN in the third and every third value of the second -inf.
    fn softmax_rows_case(rows: usize, len: usize, seed: &mut u64, value: impl Fn(u64) -> f32) -> Vec<f32> {
        let mut x: Vec<f32> = (0..rows * len)
            .map(|_| {
                *seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                value(*seed >> 33)
            })
            .collect();
        x[..len].fill(f32::NEG_INFINITY);
        if rows > 2 {
            x[2 * len + len / 2] = f32::NAN;
            x[len..2 * len].iter_mut().step_by(3).for_each(|v| *v = f32::NEG_INFINITY);
        }
        x
    }

    /// The AVX-512 `exp` (where this CPU has it) gives `exp_f32`'s bits on every f32 of the
    /// binades `[64, 128)` and `[-128, -64)` (where results overflow, are subnormal or underflow
    /// to zero: `vscalefps` in place of two multiplications), on every 257th f32 elsewhere, and
    /// on NaNs, infinities and zeros.
    #[test]
    #[cfg(target_arch = "x86_64")]
    fn the_avx512_exp_gives_exp_f32s_bits() {
        if !std::arch::is_x86_feature_detected!("avx512f") {
            eprintln!("no AVX-512 on this CPU: nothing to test");
            return;
        }
        let edges = [0.0f32, -0.0, f32::INFINITY, f32::NEG_INFINITY, f32::NAN, -f32::NAN, f32::from_bits(0x7fa0_0001), f32::MIN_POSITIVE, 88.72283, 88.72284, -103.97208, -103.9721];
        let binades = (0x4280_0000u32..0x4300_0000).chain(0xc280_0000..0xc300_0000);
        let inputs: Vec<f32> = binades.chain((0..=u32::MAX / 257).map(|i| i * 257)).map(f32::from_bits).chain(edges).collect();
        let mut got = vec![0f32; inputs.len()];
        for (x, y) in inputs.chunks(4096).zip(got.chunks_mut(4096)) {
            // SAFETY: the CPU has AVX-512F (checked above).
            unsafe { super::exp_row_avx512(x, 0.0, y) };
        }
        for (&x, &g) in inputs.iter().zip(&got) {
            // (`x - 0` is `x`, bit for bit, a NaN's payload included.)
            let want = f16c_core::math::exp_f32(x);
            assert_eq!(g.to_bits(), want.to_bits(), "exp({x:e}) = {x:?} bits {:#x}", x.to_bits());
        }
    }

    /// The table's softmax loop (the widest vectors this CPU has) gives, for rows of every
    /// length around its sixteen-value blocks and groups of every size, the bits of the
    /// stages computed one by one as the reference does: the maximum folded from -inf in index
    /// order, `exp(x - m)`, the sum from +0 in index order, `e · (1 / s)`, the masked fill.
    #[test]
    fn the_softmax_loop_gives_the_stage_by_stage_bits() {
        let f = table()[Libcall::SoftmaxRowsF32 as usize];
        // SAFETY: the table's SoftmaxRowsF32 entry has this signature (the macro defines it so).
        let call = unsafe { std::mem::transmute::<usize, extern "C" fn(*const f32, *mut f32, u64, u64, *const f32, *const f32) -> u64>(f) };
        let tosa_max = |a: f32, b: f32| if a.is_nan() || b.is_nan() { f32::NAN } else if a >= b { a } else { b };
        let mut seed = 7u64;
        for len in [1usize, 5, 15, 16, 17, 33, 64, 197] {
            for rows in [1usize, 3, 4, 8, 9, 13] {
                let x = softmax_rows_case(rows, len, &mut seed, |s| (s % 2000) as f32 / 97.0 - 10.0);
                for masked in [None, Some((f32::NEG_INFINITY, 0.0f32))] {
                    let mut want = vec![0f32; x.len()];
                    for (xr, wr) in x.chunks(len).zip(want.chunks_mut(len)) {
                        let m = xr.iter().fold(f32::NEG_INFINITY, |a, &b| tosa_max(a, b));
                        let e: Vec<f32> = xr.iter().map(|&v| f16c_core::math::exp_f32(v - m)).collect();
                        let s = e.iter().fold(0.0f32, |a, &b| a + b);
                        let r = 1.0 / s;
                        for (w, &ev) in wr.iter_mut().zip(&e) {
                            *w = match masked {
                                Some((mask, fill)) if m == mask => fill,
                                _ => ev * r,
                            };
                        }
                    }
                    let mut got = vec![1f32; x.len()];
                    let (mask_value, fill_value) = masked.unwrap_or_default();
                    let (mask, fill): (*const f32, *const f32) = if masked.is_some() { (&mask_value, &fill_value) } else { (std::ptr::null(), std::ptr::null()) };
                    assert_eq!(call(x.as_ptr(), got.as_mut_ptr(), rows as u64, len as u64, mask, fill), rows as u64);
                    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                    assert_eq!(bits(&got), bits(&want), "{rows} rows of {len}, masked {masked:?}");
                }
            }
        }
    }

    /// The table's bf16 softmax loop gives, for rows of every length around its sixteen-value
    /// blocks and groups of every size, the bits of the stages computed one by one as the
    /// reference does (`half`'s rounding): `m`, `bf16(x - m)` (of bf16 input; `x - m` of f32),
    /// its `exp` in f32, the sum from +0 in index order, `bf16(e · (1 / s))`, the masked fill
    /// rounded to bf16; rows of -inf, NaN and ties included.
    #[test]
    fn the_bf16_softmax_loop_gives_the_stage_by_stage_bits() {
        softmax_low_loop_gives_the_stage_by_stage_bits!(Libcall::SoftmaxRowsBf16, bf16);
    }

    /// The same of the fp16 softmax loop (where this CPU has it), with fp16 in place of bf16
    /// (results down to fp16's subnormals and zero).
    #[test]
    fn the_f16_softmax_loop_gives_the_stage_by_stage_bits() {
        if table()[Libcall::SoftmaxRowsF16 as usize] == 0 {
            eprintln!("no fp16 softmax loop on this CPU: nothing to test");
            return;
        }
        softmax_low_loop_gives_the_stage_by_stage_bits!(Libcall::SoftmaxRowsF16, f16);
    }

    /// The body of the two tests above, for the libcall `$lc` of the 16-bit type `$t`.
    macro_rules! softmax_low_loop_gives_the_stage_by_stage_bits {
        ($lc:expr, $t:ty) => {{
            let f = table()[$lc as usize];
            // SAFETY: the table's entry has this signature (the macro defines it so).
            let call = unsafe { std::mem::transmute::<usize, extern "C" fn(*const u8, *mut u16, u64, u64, *const u8, *const f32, *mut f32, u64) -> u64>(f) };
            let tosa_max = |a: f32, b: f32| if a.is_nan() || b.is_nan() { f32::NAN } else if a >= b { a } else { b };
            let round = |v: f32| <$t>::from_f32(v);
            let mut seed = 11u64;
            for len in [1usize, 5, 15, 16, 17, 33, 64, 197] {
                for rows in [1usize, 3, 4, 8, 9, 13] {
                    let x: Vec<$t> = softmax_rows_case(rows, len, &mut seed, |s| (s % 4000) as f32 / 37.0 - 50.0).into_iter().map(round).collect();
                    // The same values as f32 too (the f32 softmax rounded to the low type).
                    let x32: Vec<f32> = x.iter().map(|v| v.to_f32()).collect();
                    for (masked, f32_input) in [(None, false), (Some((<$t>::NEG_INFINITY, 0.0f32)), false), (None, true), (Some((<$t>::NEG_INFINITY, 0.0f32)), true)] {
                        let mut want = vec![<$t>::ZERO; x.len()];
                        for (xr, wr) in x.chunks(len).zip(want.chunks_mut(len)) {
                            let m = xr.iter().fold(f32::NEG_INFINITY, |a, &b| tosa_max(a, b.to_f32()));
                            let d = |v: $t| if f32_input { v.to_f32() - m } else { round(v.to_f32() - m).to_f32() };
                            let e: Vec<f32> = xr.iter().map(|&v| f16c_core::math::exp_f32(d(v))).collect();
                            let s = e.iter().fold(0.0f32, |a, &b| a + b);
                            let r = 1.0 / s;
                            for (w, &ev) in wr.iter_mut().zip(&e) {
                                *w = match masked {
                                    Some((mask, fill)) if m == mask.to_f32() => round(fill),
                                    _ => round(ev * r),
                                };
                            }
                        }
                        let mut got = vec![<$t>::ONE; x.len()];
                        let mut scratch = vec![0f32; x.len()];
                        let (mask_value, fill_value) = masked.unwrap_or((<$t>::ZERO, 0.0));
                        let mask32 = mask_value.to_f32();
                        let mask: *const u8 = match (masked, f32_input) {
                            (None, _) => std::ptr::null(),
                            (Some(_), false) => (&mask_value as *const $t).cast(),
                            (Some(_), true) => (&mask32 as *const f32).cast(),
                        };
                        let fill: *const f32 = if masked.is_some() { &fill_value } else { std::ptr::null() };
                        let (xp, flags): (*const u8, u64) = if f32_input { (x32.as_ptr().cast(), f16c_core::abi::SOFTMAX_F32_INPUT as u64) } else { (x.as_ptr().cast(), 0) };
                        let n = call(xp, got.as_mut_ptr().cast(), rows as u64, len as u64, mask, fill, scratch.as_mut_ptr(), flags);
                        assert_eq!(n, rows as u64);
                        let bits = |v: &[$t]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                        assert_eq!(bits(&got), bits(&want), "{rows} rows of {len}, masked {masked:?}, f32 input {f32_input}");
                    }
                }
            }
        }};
    }
    use softmax_low_loop_gives_the_stage_by_stage_bits;

    /// The table's WidenF16 entry, called as generated code calls it.
    fn widen_entry() -> extern "C" fn(*const f16, *mut f32, u64) -> u64 {
        let f = table()[Libcall::WidenF16 as usize];
        // SAFETY: the table's WidenF16 entry has this signature (the macro defines it so).
        unsafe { std::mem::transmute::<usize, extern "C" fn(*const f16, *mut f32, u64) -> u64>(f) }
    }

    /// The wide exp, sigmoid, erf and tanh loops give the scalar contract's bits (the exp by
    /// [`f16c_core::math::exp_f32`], the sigmoid as the reference writes it) on a spread of
    /// every kind of f32: one bit pattern in 251, NaNs, infinities, zeros, the clamp bounds.
    #[test]
    fn the_wide_math_loops_give_the_scalar_bits() {
        let mut src: Vec<f32> = (0..=u32::MAX / 251).map(|i| f32::from_bits(i.wrapping_mul(251))).collect();
        src.extend([f32::NAN, -f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 0.0, -0.0, 88.7, 89.0, -103.9, -104.0, -87.3]);
        let call = |lc: Libcall, src: &[f32]| {
            // SAFETY: both entries have this signature (the macro defines them so).
            let f = unsafe { std::mem::transmute::<usize, extern "C" fn(*const f32, *mut f32, u64) -> u64>(table()[lc as usize]) };
            let mut dst = vec![0f32; src.len()];
            assert_eq!(f(src.as_ptr(), dst.as_mut_ptr(), src.len() as u64), src.len() as u64);
            dst
        };
        let (exp, sigmoid) = (call(Libcall::ExpArrayF32, &src), call(Libcall::SigmoidArrayF32, &src));
        let (erf, tanh) = (call(Libcall::ErfArrayF32, &src), call(Libcall::TanhArrayF32, &src));
        for (i, &x) in src.iter().enumerate() {
            let want_exp = f16c_core::math::exp_f32(x);
            let want_sigmoid = 1.0 / (1.0 + f16c_core::math::exp_f32(-x));
            assert_eq!(exp[i].to_bits(), want_exp.to_bits(), "exp({x:e}) ({:#x})", x.to_bits());
            assert_eq!(sigmoid[i].to_bits(), want_sigmoid.to_bits(), "sigmoid({x:e}) ({:#x})", x.to_bits());
            assert_eq!(erf[i].to_bits(), f16c_core::math::erf_f32(x).to_bits(), "erf({x:e}) ({:#x})", x.to_bits());
            assert_eq!(tanh[i].to_bits(), f16c_core::math::tanh_f32(x).to_bits(), "tanh({x:e}) ({:#x})", x.to_bits());
        }
    }

    #[test]
    fn widening_in_bulk_gives_half_s_bits_for_every_f16() {
        // Every bit pattern (NaNs with their payloads, subnormals, ±0, ±inf), in calls of
        // 1..=7 values (all through the scalar tail), then of 8..=23 (eight-lane blocks, then
        // a tail), at shifting offsets.
        let all: Vec<f16> = (0..=u16::MAX).map(f16::from_bits).collect();
        for lengths in [1..=7, 8..=23] {
            let mut dst = vec![0f32; all.len()];
            let (mut at, mut lens) = (0, lengths.clone().cycle());
            while at < all.len() {
                let n = lens.next().expect("cycles").min(all.len() - at);
                assert_eq!(widen_entry()(all[at..].as_ptr(), dst[at..].as_mut_ptr(), n as u64), n as u64);
                at += n;
            }
            for (h, w) in all.iter().zip(&dst) {
                assert_eq!(w.to_bits(), h.to_f32().to_bits(), "f16 bits {:#06x}", h.to_bits());
            }
        }
    }

    /// The table's NarrowF16 entry, called as generated code calls it.
    fn narrow_entry() -> extern "C" fn(*const f32, *mut f16, u64) -> u64 {
        narrowing(Libcall::NarrowF16)
    }

    /// The table's NarrowF16 or NarrowF16Canonical entry.
    fn narrowing(lc: Libcall) -> extern "C" fn(*const f32, *mut f16, u64) -> u64 {
        assert!(matches!(lc, Libcall::NarrowF16 | Libcall::NarrowF16Canonical));
        let f = table()[lc as usize];
        // SAFETY: both entries have this signature (the macro defines them so).
        unsafe { std::mem::transmute::<usize, extern "C" fn(*const f32, *mut f16, u64) -> u64>(f) }
    }

    #[test]
    fn narrowing_in_bulk_gives_half_s_bits() {
        // Every f16 value and the f32 values around it: each of the 2^16 top halves of the f32
        // bit patterns with low halves at and around the f16 rounding boundaries (ties at
        // 0x1000, the values either side, 0 and all ones), which covers ties to even in every
        // binade, f16 subnormals and underflow, overflow to inf at 65520, ±0, ±inf, and quiet
        // and signalling NaNs with payloads; in calls of 1..=7 values (the scalar tail), then
        // of 8..=23 (eight-lane blocks, then a tail).
        let lows = [0u32, 1, 0x0fff, 0x1000, 0x1001, 0x1fff, 0x2000, 0x2001, 0x8000, 0xefff, 0xf000, 0xf001, 0xffff];
        let all: Vec<f32> = (0..=u16::MAX as u32).flat_map(|hi| lows.iter().map(move |&lo| f32::from_bits(hi << 16 | lo))).collect();
        // NarrowF16Canonical gives the same bits but for NaNs, which all become f32::NAN's.
        let canonical = |x: f32| if x.is_nan() { f16::from_f32(f32::NAN) } else { f16::from_f32(x) };
        for (lc, expected) in [(Libcall::NarrowF16, f16::from_f32 as fn(f32) -> f16), (Libcall::NarrowF16Canonical, canonical)] {
            for lengths in [1..=7, 8..=23] {
                let mut dst = vec![f16::ZERO; all.len()];
                let (mut at, mut lens) = (0, lengths.clone().cycle());
                while at < all.len() {
                    let n = lens.next().expect("cycles").min(all.len() - at);
                    assert_eq!(narrowing(lc)(all[at..].as_ptr(), dst[at..].as_mut_ptr(), n as u64), n as u64);
                    at += n;
                }
                for (x, h) in all.iter().zip(&dst) {
                    assert_eq!(h.to_bits(), expected(*x).to_bits(), "{lc:?}, f32 bits {:#010x}", x.to_bits());
                }
            }
        }
    }

    #[test]
    fn rounding_in_bulk_gives_half_s_bits_widened() {
        // The values of the narrowing test, rounded to f16 and widened back, NaNs kept as
        // `half` keeps them or all made f32::NAN, in calls of 1..=7 and 8..=23 values.
        let lows = [0u32, 1, 0x0fff, 0x1000, 0x1001, 0x1fff, 0x2000, 0x8000, 0xf000, 0xffff];
        let all: Vec<f32> = (0..=u16::MAX as u32).flat_map(|hi| lows.iter().map(move |&lo| f32::from_bits(hi << 16 | lo))).collect();
        let f = table()[Libcall::RoundF16 as usize];
        // SAFETY: the table's RoundF16 entry has this signature (the macro defines it so).
        let round = unsafe { std::mem::transmute::<usize, extern "C" fn(*const f32, *mut f32, u64, u64) -> u64>(f) };
        for canonical in [false, true] {
            for lengths in [1..=7, 8..=23] {
                let mut dst = vec![0f32; all.len()];
                let (mut at, mut lens) = (0, lengths.clone().cycle());
                while at < all.len() {
                    let n = lens.next().expect("cycles").min(all.len() - at);
                    assert_eq!(round(all[at..].as_ptr(), dst[at..].as_mut_ptr(), n as u64, canonical as u64), n as u64);
                    at += n;
                }
                for (x, r) in all.iter().zip(&dst) {
                    let want = if canonical && x.is_nan() { f32::NAN } else { f16::from_f32(*x).to_f32() };
                    assert_eq!(r.to_bits(), want.to_bits(), "canonical {canonical}, f32 bits {:#010x}", x.to_bits());
                }
            }
        }
    }

    #[test]
    fn narrowing_nothing_writes_nothing() {
        let mut dst = [f16::ONE; 1];
        assert_eq!(narrow_entry()([].as_ptr(), dst.as_mut_ptr(), 0), 0);
        assert_eq!(dst, [f16::ONE]);
    }

    #[test]
    fn widening_nothing_writes_nothing() {
        let mut dst = [7f32; 1];
        assert_eq!(widen_entry()([].as_ptr(), dst.as_mut_ptr(), 0), 0);
        assert_eq!(dst, [7.0]);
    }
}

/// `dst[i] = exp_f32(src[i])`, in the widest vectors this CPU has: on AVX-512 the softmax's
/// [`exp_row_avx512`] (`x - 0` is `x`, bit for bit), else [`map_wide`].
fn exp_array(src: &[f32], dst: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx512f") {
        // SAFETY: the CPU has AVX-512F (checked above).
        return unsafe { exp_row_avx512(src, 0.0, dst) };
    }
    map_wide(src, dst, f16c_core::math::exp_f32);
}

/// `dst[i] = sigmoid(src[i])`, as [`exp_array`].
fn sigmoid_array(src: &[f32], dst: &mut [f32]) {
    map_wide(src, dst, sigmoid);
}

/// `dst[i] = f(src[i])` for `n` elements ([`map_wide`]), in place where `dst` is `src`.
///
/// # Safety
/// `n` readable elements at `src` and `n` writable ones at `dst`, which is `src` or does not
/// overlap it.
unsafe fn map_in_place_or_apart<T: Copy>(src: *const T, dst: *mut T, n: usize, f: impl Fn(T) -> T + Copy) {
    if std::ptr::eq(src, dst) {
        // SAFETY: the caller's: `n` readable and writable elements at `dst`.
        map_wide_in_place(unsafe { std::slice::from_raw_parts_mut(dst, n) }, f);
    } else {
        // SAFETY: the caller's: not overlapping.
        let (src, dst) = unsafe { (std::slice::from_raw_parts(src, n), std::slice::from_raw_parts_mut(dst, n)) };
        map_wide(src, dst, f);
    }
}

/// The bits of `x` rounded to bf16 as `half` rounds it (to nearest even; a NaN keeps its top
/// payload bits and becomes quiet), in selects LLVM vectorises.
#[inline(always)]
fn bf16_bits(x: f32) -> u16 {
    let b = x.to_bits();
    let nan = b & 0x7fff_ffff > 0x7f80_0000;
    let up = b & 0x8000 != 0 && b & 0x1_7fff != 0;
    let rounded = (b >> 16) + u32::from(up);
    (if nan { (b >> 16) | 0x40 } else { rounded }) as u16
}

/// SiLU of a bf16 value as the reference computes it in bf16 ([`Libcall::SiluArrayBf16`]).
#[inline(always)]
fn silu_bf16(x: u16) -> u16 {
    let widen = |h: u16| f32::from_bits(u32::from(h) << 16);
    let x = widen(x);
    bf16_bits(x * widen(bf16_bits(sigmoid(x))))
}

/// The reference's sigmoid, `1 / (1 + exp_f32(-x))`.
#[inline(always)]
fn sigmoid(x: f32) -> f32 {
    f16c_core::math::sigmoid_f32(x)
}

/// Returns `$avx512` on a CPU with AVX-512F, else `$avx2` on one with AVX2 (calls of one loop
/// compiled for each, `#[target_feature]` functions); falls through elsewhere, to the plain
/// loop after it. The runtime's "widest vectors this CPU has".
macro_rules! widest {
    ($avx512:expr, $avx2:expr) => {
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx512f") {
                // SAFETY: the CPU has AVX-512F (checked above).
                return unsafe { $avx512 };
            }
            if std::arch::is_x86_feature_detected!("avx2") {
                // SAFETY: the CPU has AVX2 (checked above).
                return unsafe { $avx2 };
            }
        }
    };
}

/// The softmax of the rows of `len` values of `x` into `y` ([`Libcall::SoftmaxRowsF32`]),
/// compiled for the widest vectors this CPU has.
fn softmax_rows(x: &[f32], y: &mut [f32], len: usize, masked: Option<(f32, f32)>) {
    widest!(softmax_avx512(x, y, len, masked), softmax_avx2(x, y, len, masked));
    softmax_loop(x, y, len, masked);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn softmax_avx512(x: &[f32], y: &mut [f32], len: usize, masked: Option<(f32, f32)>) {
    // SAFETY: this function's AVX-512F.
    softmax_loop_with(x, y, len, masked, |xr, m, yr| unsafe { exp_row_avx512(xr, m, yr) });
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn softmax_avx2(x: &[f32], y: &mut [f32], len: usize, masked: Option<(f32, f32)>) {
    softmax_loop(x, y, len, masked);
}

/// `y[i] = exp_f32(x[i] - m)` sixteen lanes at a time ([`exp_avx512`]), the last `len % 16`
/// under a mask.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn exp_row_avx512(x: &[f32], m: f32, y: &mut [f32]) {
    use std::arch::x86_64::*;
    let n = x.len().min(y.len());
    let mv = _mm512_set1_ps(m);
    let mut i = 0;
    while i < n {
        let lanes = (n - i).min(16);
        let mask: __mmask16 = if lanes == 16 { 0xffff } else { (1u16 << lanes) - 1 };
        // SAFETY: lanes `i .. i + lanes` are within both slices; the others are masked off.
        unsafe {
            let v = _mm512_maskz_loadu_ps(mask, x.as_ptr().add(i));
            _mm512_mask_storeu_ps(y.as_mut_ptr().add(i), mask, exp_avx512(_mm512_sub_ps(v, mv)));
        }
        i += 16;
    }
}

/// [`f16c_core::math::exp_f32`] of sixteen lanes, step for step (no fused multiply-add), but
/// `y · 2^k` in one `vscalefps` where it multiplies by two built powers of two: both round
/// the exact product once (the LLVM backend's AVX-512 `exp` makes the same substitution;
/// `the_avx512_exp_gives_exp_f32s_bits` checks it where results are subnormal or overflow).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
pub(crate) fn exp_avx512(x: std::arch::x86_64::__m512) -> std::arch::x86_64::__m512 {
    use f16c_core::math as m;
    use std::arch::x86_64::*;
    let k1 = _mm512_set1_ps;
    let (max, min) = (k1(m::EXP_MAX), k1(m::EXP_MIN));
    let above = _mm512_cmp_ps_mask::<_CMP_GT_OQ>(x, max);
    let below = _mm512_cmp_ps_mask::<_CMP_LT_OQ>(x, min);
    let xc = _mm512_mask_mov_ps(_mm512_mask_mov_ps(x, below, min), above, max);
    let k = _mm512_roundscale_ps::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(_mm512_mul_ps(xc, k1(m::INV_LN2)));
    let hi = _mm512_sub_ps(xc, _mm512_mul_ps(k, k1(m::LN2_HI)));
    let lo = _mm512_mul_ps(k, k1(m::LN2_LO));
    let r = _mm512_sub_ps(hi, lo);
    let rr = _mm512_mul_ps(r, r);
    let p = _mm512_add_ps(_mm512_mul_ps(k1(m::EXP_P[1]), rr), k1(m::EXP_P[0]));
    let c = _mm512_sub_ps(r, _mm512_mul_ps(rr, p));
    let q = _mm512_div_ps(_mm512_mul_ps(r, c), _mm512_sub_ps(k1(2.0), c));
    let y = _mm512_add_ps(k1(1.0), _mm512_add_ps(_mm512_sub_ps(q, lo), hi));
    let e = _mm512_scalef_ps(y, k);
    let nan = _mm512_cmp_ps_mask::<_CMP_UNORD_Q>(x, x);
    _mm512_mask_add_ps(e, nan, x, x)
}

/// A 16-bit float type's roundings of rows of f32 values, as the softmax loop into it needs them.
trait LowFloat {
    /// A value as it is stored (its 16 bits).
    type Stored: Copy;
    /// The value of `h`, exactly.
    fn widen(h: Self::Stored) -> f32;
    /// `dst[i]` the value of `src[i]`.
    fn widen_row(src: &[Self::Stored], dst: &mut [f32]);
    /// `x` rounded to nearest even, as `half` rounds it (its bits).
    fn round(x: f32) -> u16;
    /// Each value of `v` rounded to the type (and kept as the f32 it is).
    fn round_row(v: &mut [f32]);
    /// `dst[i]` the bits of `src[i] · r` rounded to the type (`src` is the caller's scratch,
    /// which this may overwrite).
    fn narrow_row(src: &mut [f32], r: f32, dst: &mut [u16]);
}

/// bf16: [`bf16_bits`] and [`widen_bf16`], element by element in selects LLVM vectorises.
struct Bf16;

impl LowFloat for Bf16 {
    type Stored = u16;
    #[inline(always)]
    fn widen(h: u16) -> f32 {
        widen_bf16(h)
    }
    #[inline(always)]
    fn widen_row(src: &[u16], dst: &mut [f32]) {
        for (w, &h) in dst.iter_mut().zip(src) {
            *w = widen_bf16(h);
        }
    }
    #[inline(always)]
    fn round(x: f32) -> u16 {
        bf16_bits(x)
    }
    #[inline(always)]
    fn round_row(v: &mut [f32]) {
        for w in v.iter_mut() {
            *w = widen_bf16(bf16_bits(*w));
        }
    }
    #[inline(always)]
    fn narrow_row(src: &mut [f32], r: f32, dst: &mut [u16]) {
        for (d, &w) in dst.iter_mut().zip(src.iter()) {
            *d = bf16_bits(w * r);
        }
    }
}

/// IEEE fp16: F16C's `vcvtps2ph` and `vcvtph2ps` eight values at a time ([`round_f16_in_place`],
/// [`narrow_f16`]: `half`'s rounding), the rest by `half`.
struct Fp16;

impl LowFloat for Fp16 {
    type Stored = f16;
    #[inline(always)]
    fn widen(h: f16) -> f32 {
        h.to_f32()
    }
    #[inline(always)]
    fn widen_row(src: &[f16], dst: &mut [f32]) {
        widen_f16(src, dst);
    }
    #[inline(always)]
    fn round(x: f32) -> u16 {
        f16::from_f32(x).to_bits()
    }
    #[inline(always)]
    fn round_row(v: &mut [f32]) {
        round_f16_in_place(v);
    }
    #[inline(always)]
    fn narrow_row(src: &mut [f32], r: f32, dst: &mut [u16]) {
        for w in src.iter_mut() {
            *w *= r;
        }
        // SAFETY: `f16` is a transparent `u16`.
        narrow_f16(src, unsafe { std::slice::from_raw_parts_mut(dst.as_mut_ptr().cast::<f16>(), dst.len()) });
    }
}

/// `v[i]` rounded to f16 and widened back, in place: F16C eight at a time where the CPU has
/// it, `half` for the rest.
fn round_f16_in_place(v: &mut [f32]) {
    let mut done = 0;
    #[cfg(target_arch = "x86_64")]
    if has_f16c() {
        // SAFETY: the CPU has F16C (and so AVX).
        done = unsafe { round_f16_in_place_f16c(v) };
    }
    for w in &mut v[done..] {
        *w = f16::from_f32(*w).to_f32();
    }
}

/// The whole blocks of eight of [`round_f16_in_place`] on a CPU with F16C; returns how many.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx,f16c")]
unsafe fn round_f16_in_place_f16c(v: &mut [f32]) -> usize {
    use std::arch::x86_64::*;
    let whole = v.len() - v.len() % 8;
    for i in (0..whole).step_by(8) {
        // SAFETY: i + 8 <= len; unaligned loads and stores.
        unsafe {
            let p = v.as_mut_ptr().add(i);
            _mm256_storeu_ps(p, _mm256_cvtph_ps(_mm256_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(_mm256_loadu_ps(p))));
        }
    }
    whole
}

/// The softmax of rows into a 16-bit float type `L` ([`Libcall::SoftmaxRowsBf16`],
/// [`Libcall::SoftmaxRowsF16`]), compiled for the widest vectors this CPU has.
fn softmax_rows_to_low<L: LowFloat, X: Copy>(x: &[X], widen: impl Fn(&[X], &mut [f32]) + Copy, round_difference: bool, y: &mut [u16], e: &mut [f32], len: usize, masked: Option<(f32, f32)>) {
    widest!(softmax_low_avx512::<L, X>(x, widen, round_difference, y, e, len, masked), softmax_low_avx2::<L, X>(x, widen, round_difference, y, e, len, masked));
    softmax_low_loop::<L, X>(x, widen, round_difference, y, e, len, masked);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn softmax_low_avx512<L: LowFloat, X: Copy>(x: &[X], widen: impl Fn(&[X], &mut [f32]) + Copy, round_difference: bool, y: &mut [u16], e: &mut [f32], len: usize, masked: Option<(f32, f32)>) {
    softmax_low_loop::<L, X>(x, widen, round_difference, y, e, len, masked);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn softmax_low_avx2<L: LowFloat, X: Copy>(x: &[X], widen: impl Fn(&[X], &mut [f32]) + Copy, round_difference: bool, y: &mut [u16], e: &mut [f32], len: usize, masked: Option<(f32, f32)>) {
    softmax_low_loop::<L, X>(x, widen, round_difference, y, e, len, masked);
}

/// [`softmax_rows_to_low`] itself, as [`softmax_loop`]: per row the values widened into `e`
/// (`widen`), their maximum, `exp(x - m)` (the difference rounded to the low type where
/// `round_difference`) into `e`; the group's sums; then `low(e · (1 / s))` or the all-masked
/// fill.
#[inline(always)]
fn softmax_low_loop<L: LowFloat, X: Copy>(x: &[X], widen: impl Fn(&[X], &mut [f32]) + Copy, round_difference: bool, y: &mut [u16], e: &mut [f32], len: usize, masked: Option<(f32, f32)>) {
    if len == 0 {
        return;
    }
    let groups = x.chunks(SOFTMAX_GROUP * len).zip(y.chunks_mut(SOFTMAX_GROUP * len)).zip(e.chunks_mut(SOFTMAX_GROUP * len));
    for ((xs, ys), es) in groups {
        let rows = xs.len() / len;
        let mut maxima = [0f32; SOFTMAX_GROUP];
        for ((m, xr), er) in maxima.iter_mut().zip(xs.chunks_exact(len)).zip(es.chunks_exact_mut(len)) {
            widen(xr, er);
            *m = row_max(er);
            if round_difference {
                for w in er.iter_mut() {
                    *w -= *m;
                }
                L::round_row(er);
                for w in er.iter_mut() {
                    *w = f16c_core::math::exp_f32(*w);
                }
            } else {
                for w in er.iter_mut() {
                    *w = f16c_core::math::exp_f32(*w - *m);
                }
            }
        }
        let sums = group_sums(es, len, rows);
        for (((yr, er), &m), &s) in ys.chunks_exact_mut(len).zip(es.chunks_exact_mut(len)).zip(&maxima).zip(&sums) {
            match masked {
                Some((mask, fill)) if m == mask => yr.fill(L::round(fill)),
                _ => L::narrow_row(er, 1.0 / s, yr),
            }
        }
    }
}

/// A bf16 value's bits widened to the f32 it is (exactly).
#[inline(always)]
fn widen_bf16(h: u16) -> f32 {
    f32::from_bits(u32::from(h) << 16)
}

/// Rows whose sums [`softmax_loop`] takes side by side (independent chains).
const SOFTMAX_GROUP: usize = 8;

/// [`softmax_rows`] itself: per row its maximum and `exp(x - m)` into `y` (vectorised: the
/// contract's functions are straight-line f32), then the group's sums, each in index order,
/// then `y · (1 / s)` or the all-masked fill.
#[inline(always)]
fn softmax_loop(x: &[f32], y: &mut [f32], len: usize, masked: Option<(f32, f32)>) {
    softmax_loop_with(x, y, len, masked, |xr, m, yr| {
        for (e, &v) in yr.iter_mut().zip(xr) {
            *e = f16c_core::math::exp_f32(v - m);
        }
    });
}

/// [`softmax_loop`] with `exp_row(x, m, y)` computing `y[i] = exp_f32(x[i] - m)`.
#[inline(always)]
fn softmax_loop_with(x: &[f32], y: &mut [f32], len: usize, masked: Option<(f32, f32)>, exp_row: impl Fn(&[f32], f32, &mut [f32])) {
    if len == 0 {
        return;
    }
    for (xs, ys) in x.chunks(SOFTMAX_GROUP * len).zip(y.chunks_mut(SOFTMAX_GROUP * len)) {
        let rows = xs.len() / len;
        let mut maxima = [0f32; SOFTMAX_GROUP];
        for ((m, xr), yr) in maxima.iter_mut().zip(xs.chunks_exact(len)).zip(ys.chunks_exact_mut(len)) {
            *m = row_max(xr);
            exp_row(xr, *m, yr);
        }
        let sums = group_sums(ys, len, rows);
        for ((yr, &m), &s) in ys.chunks_exact_mut(len).zip(&maxima).zip(&sums) {
            match masked {
                Some((mask, fill)) if m == mask => yr.fill(fill),
                _ => {
                    let r = 1.0 / s;
                    for e in yr.iter_mut() {
                        *e *= r;
                    }
                }
            }
        }
    }
}

/// [`row_sums`] of the group's `rows` rows (at most [`SOFTMAX_GROUP`]).
#[inline(always)]
fn group_sums(ys: &[f32], len: usize, rows: usize) -> [f32; SOFTMAX_GROUP] {
    match rows {
        8 => row_sums::<8>(ys, len),
        7 => row_sums::<7>(ys, len),
        6 => row_sums::<6>(ys, len),
        5 => row_sums::<5>(ys, len),
        4 => row_sums::<4>(ys, len),
        3 => row_sums::<3>(ys, len),
        2 => row_sums::<2>(ys, len),
        _ => row_sums::<1>(ys, len),
    }
}

/// The sums of the first `N` rows of `len` values of `ys`, each from +0 in index order (the
/// reference's), the rows' chains side by side.
#[inline(always)]
#[allow(clippy::needless_range_loop, reason = "the rows' chains interleaved: element `j` of every row, then `j + 1`")]
fn row_sums<const N: usize>(ys: &[f32], len: usize) -> [f32; SOFTMAX_GROUP] {
    let mut s = [0f32; SOFTMAX_GROUP];
    let rows: [&[f32]; N] = std::array::from_fn(|q| &ys[q * len..(q + 1) * len]);
    for j in 0..len {
        for q in 0..N {
            s[q] += rows[q][j];
        }
    }
    s
}

/// TOSA's maximum of a row (NaN if any is NaN, the canonical one; else the largest, the first
/// of equal values): sixteen lanes, each keeping its largest value and whether it saw a NaN
/// (a compare and a select per value, which vectorise), then folded. The value is the same in
/// any order but for the sign of a zero maximum, which is then found again in index order (as
/// the reference folds from -inf).
#[inline(always)]
fn row_max(x: &[f32]) -> f32 {
    let max = |a: f32, b: f32| if a.is_nan() || b.is_nan() { f32::NAN } else if a >= b { a } else { b };
    let mut lanes = [f32::NEG_INFINITY; 16];
    let mut nan = [0u32; 16];
    let chunks = x.chunks_exact(16);
    let rest = chunks.remainder();
    for c in chunks {
        for l in 0..16 {
            let v = c[l];
            nan[l] |= u32::from(v.is_nan());
            lanes[l] = if lanes[l] >= v { lanes[l] } else { v };
        }
    }
    if nan.iter().any(|&n| n != 0) {
        return f32::NAN;
    }
    let m = lanes.iter().chain(rest).fold(f32::NEG_INFINITY, |a, &b| max(a, b));
    if m == 0.0 {
        x.iter().fold(f32::NEG_INFINITY, |a, &b| max(a, b))
    } else {
        m
    }
}

/// `dst[i] = f(src[i])`, compiled for the widest vectors this CPU has: `f` is straight-line f32
/// arithmetic with selects (the contract's functions; on bf16 bits, their rounding), which LLVM
/// vectorises without changing a bit (no fast-math, no FMA contraction).
#[inline(always)]
fn map_wide<T: Copy>(src: &[T], dst: &mut [T], f: impl Fn(T) -> T + Copy) {
    widest!(map_avx512(src, dst, f), map_avx2(src, dst, f));
    map_loop(src, dst, f);
}

/// `v[i] = f(v[i])`, compiled for the widest vectors this CPU has ([`map_wide`] in place).
#[inline(always)]
fn map_wide_in_place<T: Copy>(v: &mut [T], f: impl Fn(T) -> T + Copy) {
    widest!(map_in_place_avx512(v, f), map_in_place_avx2(v, f));
    map_in_place_loop(v, f);
}

#[inline(always)]
fn map_in_place_loop<T: Copy>(v: &mut [T], f: impl Fn(T) -> T) {
    for x in v.iter_mut() {
        *x = f(*x);
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn map_in_place_avx512<T: Copy>(v: &mut [T], f: impl Fn(T) -> T) {
    map_in_place_loop(v, f);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn map_in_place_avx2<T: Copy>(v: &mut [T], f: impl Fn(T) -> T) {
    map_in_place_loop(v, f);
}

/// The loop itself, inlined into each instruction set's function so that each is compiled for it.
#[inline(always)]
fn map_loop<T: Copy>(src: &[T], dst: &mut [T], f: impl Fn(T) -> T) {
    for (y, &x) in dst.iter_mut().zip(src) {
        *y = f(x);
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn map_avx512<T: Copy>(src: &[T], dst: &mut [T], f: impl Fn(T) -> T) {
    map_loop(src, dst, f);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn map_avx2<T: Copy>(src: &[T], dst: &mut [T], f: impl Fn(T) -> T) {
    map_loop(src, dst, f);
}
