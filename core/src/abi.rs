//! The CPU kernel ABI: how generated CPU code and the runtime call each other. Defined once here;
//! the Cranelift backend builds its signatures from it, the coming LLVM CPU backend will, and
//! the runtime's executor calls kernels and fills the libcall table by it (the role of IREE's
//! `LLVMCPU/DispatchABI.cpp`).
//!
//! A kernel is a C function
//! ```c
//! int32_t kernel(void *const *bufs, uint64_t begin, uint64_t end, uint8_t *scratch, const void *const *rt);
//! ```
//! - `bufs`: the buffer table, one address per slot of the artifact's layout (the program's
//!   buffers, one packed constant per kernel, one temporary per kernel);
//! - `begin..end`: the work items this call computes (the executor splits a step's items across
//!   threads; items write disjoint outputs);
//! - `scratch`: this thread's private memory (`scratch_bytes` of the manifest, 64-byte aligned);
//! - `rt`: the table of [`Libcall`] functions, in [`Libcall::ALL`] order.
//!
//! It returns a [`Status`] code: 0, or the run-time error of its op.

/// A compiled kernel, as the executor calls it.
pub type KernelFn = unsafe extern "C" fn(*const *mut u8, u64, u64, *mut u8, *const usize) -> i32;

/// What a kernel returns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(i32)]
pub enum Status {
    /// Success.
    Ok = 0,
    /// An index (a gather's) was out of range.
    IndexOutOfRange = 1,
}

impl Status {
    /// The message of a non-zero status code (for a located run-time error).
    pub fn describe(code: i32) -> String {
        match code {
            1 => "an index is out of range".to_string(),
            c => format!("failed with status {c}"),
        }
    }
}

/// A C scalar type of a libcall's parameters and result.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CType {
    /// `float`.
    F32,
    /// `double`.
    F64,
    /// `void *` (and `const void *`).
    Ptr,
    /// `uint64_t`.
    U64,
}

/// Functions the generated code calls through the runtime's table (`rt[index]`), so that
/// transcendental results are bit-identical to the reference interpreter's: the runtime fills
/// the table with the very Rust functions the interpreter uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[allow(missing_docs, reason = "each name says the function: its math on its type; the C signatures are in `c_types`")]
pub enum Libcall {
    ExpF32,
    LogF32,
    TanhF32,
    ErfF32,
    PowF32,
    ExpF64,
    LogF64,
    TanhF64,
    ErfF64,
    PowF64,
    /// f64 to f16, rounded once, returned widened to f32.
    F64ToF16,
    /// f64 to bf16, rounded once, returned widened to f32.
    F64ToBf16,
    SinF32,
    CosF32,
    SinF64,
    CosF64,
    /// `uint64_t f(const uint16_t *src, float *dst, uint64_t n)`: widens `n` f16 values to
    /// f32 (exact; a NaN keeps its payload and becomes quiet, as `half` does), returns `n`.
    /// Bulk widening in one call, where the runtime can use the CPU's conversion instructions
    /// (x86 F16C `vcvtph2ps`), which the Cranelift backend cannot emit.
    WidenF16,
    /// `uint64_t f(const float *src, uint16_t *dst, uint64_t n)`: rounds `n` f32 values to
    /// f16 to nearest even (overflow to inf; a NaN keeps its top payload bits and becomes
    /// quiet, as `half` does), returns `n`. The bulk counterpart of [`Libcall::WidenF16`]
    /// (x86 F16C `vcvtps2ph`): the Cranelift backend stages a block of f32 results and has
    /// them rounded and narrowed in one call rather than in software, value by value.
    NarrowF16,
    /// `uint64_t f(const void *a, uint64_t a_stride, const void *b, uint64_t b_stride, uint64_t
    /// k, float *tiles, uint64_t tiles_stride, uint64_t micro_panels, uint64_t panels, uint64_t
    /// flags)`: the GEMM's inner loops over `micro_panels` micro-panels of A and `panels`
    /// panels of B for one reduction chunk, in the runtime's AVX2 + FMA code (eight lanes,
    /// where Cranelift's SIMD has four), returning `micro_panels`. See [`tiles`] for the
    /// layouts and flags. A micro-kernel ([`MICRO_KERNELS`]): present where the CPU has what
    /// its row requires, and code that calls it requires the same; the compiler chooses it,
    /// [`Libcall::GemmTilesAvx512`] or its own generated micro-kernel when it makes the plan
    /// (all three give the same bits: each element multiply-added in `k` order, fused).
    GemmTiles,
    /// `uint64_t f(const float *a, const void *b, uint64_t b_stride, uint64_t k, float *out,
    /// uint64_t panels, uint64_t flags)`: a one-row GEMM (a classifier at batch 1) over `panels`
    /// panels of B, in the runtime's AVX2 + FMA code, returning `panels`. See [`tiles`] for the
    /// layouts and flags. A micro-kernel ([`MICRO_KERNELS`]), as [`Libcall::GemmTiles`] is.
    GemvPanels,
    /// `uint64_t f(const float *src, uint16_t *dst, uint64_t n)`: [`Libcall::NarrowF16`], but
    /// every NaN becomes f16's canonical quiet NaN (`0x7e00`, the narrowing of `f32::NAN`).
    /// For a staged result whose NaNs the reference makes canonical (a run of
    /// `maximum`/`minimum`), so that the generated code need not replace them, lane by lane,
    /// before staging.
    NarrowF16Canonical,
    /// `uint64_t f(const float *src, float *dst, uint64_t n, uint64_t canonical)`: rounds `n`
    /// f32 values to f16 as [`Libcall::NarrowF16`] does and stores them widened back to f32
    /// (exact), every NaN the canonical one where `canonical` is 1 (as
    /// [`Libcall::NarrowF16Canonical`]). For a staged f16 result cast to f32 at once (an fp16
    /// convolution whose output the next op reads in f32).
    RoundF16,
    /// `uint64_t f(const float *const *rows, const float *w, float *out, const DepthwiseParams
    /// *p)`: one output row of a depthwise convolution with channel multiplier 1, in the
    /// runtime's AVX2 code (eight lanes, where Cranelift's SIMD has four), returning
    /// `p.out_width`: the sums, and the bias and bounds the parameters name. See
    /// [`DepthwiseParams`] for the layouts. A micro-kernel ([`MICRO_KERNELS`]), as
    /// [`Libcall::GemmTiles`] is, with the same bits as [`Libcall::DepthwiseRowAvx512`] and the
    /// generated loop: every sum is the reference's chain, a product rounded and then added,
    /// per tap.
    DepthwiseRow,
    /// `uint64_t f(const float *src, float *dst, uint64_t n)`: `dst[i] = exp(src[i])` for `n`
    /// elements, the contract's own [`crate::math::exp_f32`] (the same bits as the scalar
    /// libcall and the inline code), in the runtime's widest vectors (sixteen lanes on
    /// AVX-512); returns `n`. `src` and `dst` do not overlap. A row kernel's exp stage (the
    /// softmax's) calls it once per row.
    ExpArrayF32,
    /// [`Libcall::GemmTiles`]'s call for bf16 A and B multiplied in pairs along `k`
    /// (AVX512-BF16 `VDPBF16PS`), A as bf16 rows, B packed with its rows interleaved in pairs:
    /// see [`tiles`] for the layouts and flags (`ACCUMULATE`). Always present (an
    /// element-by-element loop with the same bits where the CPU lacks AVX512-BF16); code
    /// that calls it requires `avx512bf16`, and has no other path.
    GemmPairsBf16,
    /// `uint64_t f(const float *src, float *dst, uint64_t n)`: `dst[i] = 1 / (1 + exp(-src[i]))`
    /// for `n` elements, the reference's sigmoid with the contract's [`crate::math::exp_f32`]
    /// (the same bits as the inline code), in the runtime's widest vectors; returns `n`. `src`
    /// and `dst` do not overlap. The JIT's elementwise kernels (SiLU's `x · sigmoid(x)`) call it
    /// a block of a row at a time.
    SigmoidArrayF32,
    /// `uint64_t f(const float *src, float *dst, uint64_t n)`: `dst[i] = erf(src[i])` for `n`
    /// elements, the contract's [`crate::math::erf_f32`] (the same bits as the scalar libcall
    /// and the inline code), in the runtime's widest vectors; returns `n`. `src` and `dst` do
    /// not overlap. The JIT's elementwise kernels (GELU's `erf(x/√2)`) call it a block of a row
    /// at a time, on arguments they computed into scratch.
    ErfArrayF32,
    /// As [`Libcall::ErfArrayF32`], for the contract's [`crate::math::tanh_f32`] (the tanh form
    /// of GELU).
    TanhArrayF32,
    /// [`Libcall::GemmTiles`] in AVX-512 (sixteen lanes: a pair of B panels per vector, the
    /// same layouts and bits).
    GemmTilesAvx512,
    /// [`Libcall::DepthwiseRow`] in AVX-512 (sixteen lanes, the same bits).
    DepthwiseRowAvx512,
    /// `uint64_t f(const float *x, float *y, uint64_t rows, uint64_t len, const float *mask,
    /// const float *fill)`: the softmax of `rows` rows of `len` f32 at `x` into `y` (not
    /// overlapping), stage for stage as the compiler's `Rows::softmax`
    /// describes it and the reference computes it: `m` the row's TOSA maximum, `e = exp(x - m)`
    /// with the contract's [`crate::math::exp_f32`], `s` the sum of `e` in index order from
    /// +0, `y = e · (1 / s)`; where `mask` is not null, a row whose `m` equals `*mask` gets
    /// `*fill` everywhere (PyTorch's all-masked test). In the runtime's widest vectors, the
    /// rows' sums side by side; returns `rows`. The JIT's softmax kernels call it once per
    /// work item (four rows), where Cranelift's four lanes and loops ran it at a third of the
    /// speed.
    SoftmaxRowsF32,
    /// `uint64_t f(const float *src, float *dst, uint64_t n)`: `dst[i] = src[i] · sigmoid(src[i])`
    /// (SiLU, the sigmoid the reference's `1 / (1 + exp(-x))` with the contract's
    /// [`crate::math::exp_f32`], the product rounded once) for `n` elements, in the runtime's
    /// widest vectors; returns `n`. `dst` is `src` (in place) or does not overlap it. The JIT's
    /// depthwise convolutions with a SiLU epilogue call it on each finished output row.
    SiluArrayF32,
    /// `uint64_t f(const uint16_t *src, uint16_t *dst, uint64_t n)`: [`Libcall::SiluArrayF32`]
    /// of bf16 values as the reference computes SiLU in bf16: `s = bf16(sigmoid(x))`, then
    /// `bf16(x · s)` (each widened exactly, computed in f32 and rounded to nearest even; a NaN
    /// stays a quiet NaN), for `n` elements, in the runtime's widest vectors; returns `n`. `dst`
    /// is `src` or does not overlap it. The JIT's bf16 SiLU kernels call it per row, where
    /// Cranelift's four lanes spent most of the time rounding to bf16.
    SiluArrayBf16,
    /// `uint64_t f(const void *x, uint16_t *y, uint64_t rows, uint64_t len, const void *mask,
    /// const float *fill, float *scratch, uint64_t flags)`: the softmax of `rows` rows of `len`
    /// values into bf16 as `Rows::softmax` describes it, stage for stage as the reference
    /// computes it. bf16 `x` and `mask` (flags 0: torch-mlir's softmax with the precision
    /// pass's bf16 ends): `m` the row's TOSA maximum, `d = bf16(x - m)`, `e = exp(d)` in f32
    /// with the contract's [`crate::math::exp_f32`], `s` the sum of `e` in index order from +0,
    /// `y = bf16(e · (1 / s))`. f32 `x` and `mask` ([`SOFTMAX_F32_INPUT`]): the same with
    /// `d = x - m` in f32 ([`Libcall::SoftmaxRowsF32`] rounded to bf16). Where `mask` is not
    /// null, a row whose `m` equals `*mask` gets `bf16(*fill)` everywhere. Every rounding to
    /// nearest even, a NaN a quiet NaN. `scratch` holds `rows · len` f32 (the `e` rows); `y`
    /// does not overlap `x`. In the runtime's widest vectors; returns `rows`. The JIT's bf16
    /// softmax kernels call it once per work item, where Cranelift's four lanes took a Whisper
    /// encoder's bf16 softmax at five times the f32 loop's time.
    SoftmaxRowsBf16,
    /// `uint64_t f(const uint16_t *src, uint16_t *dst, uint64_t n)`: [`Libcall::SiluArrayBf16`]
    /// for IEEE fp16 values: `s = f16(sigmoid(x))`, then `f16(x · s)` (each widened exactly,
    /// computed in f32, rounded to nearest even by F16C's `vcvtps2ph` as `half` rounds; a NaN
    /// stays a NaN), for `n` elements; returns `n`. `dst` is `src` or does not overlap it. A
    /// runtime micro-kernel ([`MICRO_KERNELS`]: AVX2, FMA and F16C): the JIT's fp16 SiLU
    /// kernels call it per row, where Cranelift's four lanes took EfficientNet-B0's fp16 SiLUs
    /// (torch-mlir's `sigmoid` and `mul`, between a convolution and the next) 18.7 of its 33 ms.
    SiluArrayF16,
    /// [`Libcall::SoftmaxRowsBf16`] with IEEE fp16 in place of bf16 (fp16 `x`, `mask` and `y`;
    /// or f32 `x` and `mask` with [`SOFTMAX_F32_INPUT`]), each rounding to nearest even as
    /// `half` rounds. A runtime micro-kernel ([`MICRO_KERNELS`]): the JIT's fp16 softmax kernels
    /// call it once per work item, where its generic rows code took a Whisper encoder's fp16
    /// softmaxes at 4.7 times the f32 loop's time.
    SoftmaxRowsF16,
    /// `uint64_t f(const float *tiles, uint64_t tiles_stride, uint64_t micro_panels, uint64_t
    /// panels, float *out, uint64_t out_stride, uint64_t rows, uint64_t cols, const
    /// DepthwiseParams *finish)`: the f32 tiles of [`Libcall::GemmTiles`]'s layout (panel `j`'s
    /// `micro_panels` tiles from `tiles + j · tiles_stride` bytes) finished into `rows` rows of
    /// `cols` columns of `out`, `out_stride` f32 apart: value (`r`, `c`) is tile row `r` of
    /// panel `c / 8`, column `c % 8`, then `finish`'s bias (`bias[c]`), bounds, canonical NaNs
    /// and SiLU in the order [`DepthwiseParams`] gives them (its other fields unread); returns
    /// `rows`. The JIT's GEMM tile finish in sixteen lanes where Cranelift's four took ResNet-50
    /// 3.9 ms a run.
    FinishTilesF32,
}

/// [`Libcall::SoftmaxRowsBf16`]'s flag: `x` and `mask` are f32, the difference not rounded.
pub const SOFTMAX_F32_INPUT: i64 = 1;

/// A runtime micro-kernel: a native loop that generated code calls through its [`Libcall`].
/// The compiler picks one when it plans a kernel (its `requires` then join the code's); the
/// runtime's table holds it where the CPU has those features, else null.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MicroKernel {
    /// The libcall generated code calls.
    pub libcall: Libcall,
    /// What it computes, in the words of a kernel's plan (`--emit=kernels`, the profile).
    pub what: &'static str,
    /// CPU features it needs (the runtime's names, as in an artifact's `requires`).
    pub requires: &'static [&'static str],
}

/// The version of the micro-kernels' contract ([`MICRO_KERNELS`], [`tiles`], [`DepthwiseParams`]):
/// an artifact whose code calls them records the version it was compiled against
/// ([`crate::artifact::Manifest::micro_kernels`]) and a runtime of another version refuses it.
/// Changing or adding a micro-kernel changes this version, not the artifact format's. 4:
/// [`DepthwiseParams::silu`].
pub const MICRO_KERNEL_VERSION: u32 = 4;

/// The features of the AVX2 loops.
const AVX2: &[&str] = &["avx2", "fma", "f16c"];
/// The features of the AVX-512 loops.
const AVX512: &[&str] = &["avx2", "fma", "f16c", "avx512f"];

/// Every runtime micro-kernel, one row each: what the compiler may choose from and what the
/// runtime provides. A new one is a row here, its [`Libcall`], and its loop in the runtime.
pub const MICRO_KERNELS: [MicroKernel; 8] = [
    MicroKernel { libcall: Libcall::GemmTiles, what: "the runtime's AVX2 loop (12x8 or 4x24 per pass)", requires: AVX2 },
    MicroKernel { libcall: Libcall::GemmTilesAvx512, what: "the runtime's AVX-512 loop (12x16 or 4x48 per pass)", requires: AVX512 },
    MicroKernel { libcall: Libcall::GemvPanels, what: "the runtime's AVX2 one-row loop", requires: AVX2 },
    MicroKernel { libcall: Libcall::DepthwiseRow, what: "the runtime's AVX2 loop", requires: AVX2 },
    MicroKernel { libcall: Libcall::DepthwiseRowAvx512, what: "the runtime's AVX-512 loop", requires: AVX512 },
    MicroKernel { libcall: Libcall::GemmPairsBf16, what: "the runtime's AVX512-BF16 loop", requires: &["avx512bf16"] },
    MicroKernel { libcall: Libcall::SiluArrayF16, what: "the runtime's F16C loop", requires: AVX2 },
    MicroKernel { libcall: Libcall::SoftmaxRowsF16, what: "the runtime's sixteen-lane loop", requires: AVX2 },
];

impl MicroKernel {
    /// The row of `libcall`, if it is a micro-kernel.
    pub fn of(libcall: Libcall) -> Option<&'static MicroKernel> {
        MICRO_KERNELS.iter().find(|m| m.libcall == libcall)
    }
}

/// The operands of [`Libcall::DepthwiseRow`] that are fixed for a kernel call (`uint64_t`
/// fields, then `float` ones, in this order).
///
/// `rows[ky]`, for window row `ky < kh`, is null where that row falls in the padding, else the
/// input row it reads: `in_width` pixels of `channels` f32 each, pixel-major. The weights `w`
/// are `[kh][kw][channels]` f32. The call writes the `channels` f32 values of output pixel
/// `ox < out_width` at `out[ox · channels ..]`.
///
/// Value `c` is a sum from +0: for each tap in order (`ky`, then `kx`) whose row is not null
/// and whose input column `ix = ox · stride + kx · dilation - pad` lies in `0 .. in_width`, it
/// adds `rows[ky][ix · channels + c]` times `w[ky][kx][c]`, the product rounded to f32 before
/// the add (no fused multiply-add: the reference's order and roundings); taps in the padding
/// are skipped, not added as zeros.
///
/// Then, in this order: `bias[c]` is added where `bias` is not null; each of the first
/// `bounds` bounds `i` is applied, `v = v test t ? b : v` with `t = thresholds[i]`, `b =
/// bound_values[i]` and the test in bits `2i .. 2i + 2` of `bound_tests` (0: `<`, 1: `>`, 2:
/// `<=`, 3: `>=`; false where `v` is NaN). A maximum with a bound `b` is `(<, b, b)` (x86's
/// `maxps b, v`), a minimum `(>, b, b)`; a staged f16 result's bounds are applied before its
/// rounding, at thresholds. With `canonical` set every NaN then becomes f32's canonical quiet
/// NaN (`0x7fc00000`). With `silu` set the value `x` so finished is stored as SiLU's
/// `x · sigmoid(x)`, the sigmoid the reference's (`1 / (1 + exp_f32(-x))`, an IEEE division),
/// the product rounded once: an EfficientNet's depthwise convolutions finish in the loop
/// rather than in a second pass over the row.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[allow(missing_docs, reason = "the fields are the contract's operands, documented together above")]
pub struct DepthwiseParams {
    pub kh: u64,
    pub kw: u64,
    pub channels: u64,
    pub in_width: u64,
    pub out_width: u64,
    pub stride: u64,
    pub dilation: u64,
    /// The padding before column 0.
    pub pad: u64,
    /// The address of `channels` f32 biases, or 0.
    pub bias: u64,
    /// How many bounds apply (at most [`DepthwiseParams::MAX_BOUNDS`]).
    pub bounds: u64,
    pub bound_tests: u64,
    /// 1: NaNs become the canonical one; 0: they keep their bits.
    pub canonical: u64,
    /// 1: the finished value becomes `x · sigmoid(x)`; 0: it is stored as it is.
    pub silu: u64,
    pub thresholds: [f32; 4],
    pub bound_values: [f32; 4],
}

impl DepthwiseParams {
    /// The most bounds one call applies.
    pub const MAX_BOUNDS: usize = 4;

    /// The parameters as the call reads them: `uint64_t` words in field order, the `float`
    /// fields two to a word (the first in the low half, as x86-64 lays them out).
    pub fn words(&self) -> [u64; std::mem::size_of::<DepthwiseParams>() / 8] {
        let pair = |f: &[f32; 4], i: usize| u64::from(f[i].to_bits()) | u64::from(f[i + 1].to_bits()) << 32;
        let (t, v) = (&self.thresholds, &self.bound_values);
        [
            self.kh,
            self.kw,
            self.channels,
            self.in_width,
            self.out_width,
            self.stride,
            self.dilation,
            self.pad,
            self.bias,
            self.bounds,
            self.bound_tests,
            self.canonical,
            self.silu,
            pair(t, 0),
            pair(t, 2),
            pair(v, 0),
            pair(v, 2),
        ]
    }
    /// `bound_tests` codes.
    pub const LESS: u64 = 0;
    #[allow(missing_docs, reason = "a comparison's name; the encoding is documented on `DepthwiseParams`")]
    pub const GREATER: u64 = 1;
    #[allow(missing_docs, reason = "a comparison's name; the encoding is documented on `DepthwiseParams`")]
    pub const LESS_EQUAL: u64 = 2;
    #[allow(missing_docs, reason = "a comparison's name; the encoding is documented on `DepthwiseParams`")]
    pub const GREATER_EQUAL: u64 = 3;
}

/// The contract of [`Libcall::GemmTiles`], shared by the code that calls it and the runtime.
///
/// Tile (`j`, `i`), for B panel `j < panels` and A micro-panel `i < micro_panels`, is
/// `TILE_ROWS × TILE_COLS` f32, row-major, at `tiles + j · tiles_stride + i · TILE_ROWS ·
/// TILE_COLS · 4` bytes; it becomes (`ACCUMULATE` ? itself : 0) + Aᵢ·Bⱼ, each element a chain
/// of fused multiply-adds in `k` order. Bⱼ, at `b + j · b_stride` bytes, is `k` rows of
/// `TILE_COLS` values (`[k][TILE_COLS]`: f32, or f16 with `B_F16`, bf16 with `B_BF16`, widened
/// exactly as they are read). Aᵢ is micro-panel `i`: with `PACKED_A`, f32 laid out
/// `[k][TILE_ROWS]` at `a + i · TILE_ROWS · k · 4` bytes; otherwise A's own f32 rows, row `r` of Aᵢ at
/// `a + (i · TILE_ROWS + r) · a_stride` bytes, `k` consecutive values.
///
/// [`Libcall::GemvPanels`] reads B panels the same way (`panels` of them, `b_stride` bytes
/// apart, `B_F16` or `B_BF16` in `flags`, no other flag) and `k` f32 values of A at `a`; it
/// writes panel `j`'s `TILE_COLS` sums, each a chain of fused multiply-adds in `k` order from
/// zero, at `out + j · TILE_COLS · 4` bytes.
///
/// [`Libcall::GemmPairsBf16`] (`k` even) multiplies bf16 values in pairs along `k`
/// (AVX512-BF16 `VDPBF16PS`): Aᵢ is bf16 rows, row `r` at `a + (i · TILE_ROWS + r) · a_stride`
/// bytes, `k` consecutive values; each Bⱼ is `k / 2` rows of `TILE_COLS` pairs
/// (`[k/2][TILE_COLS][2]` bf16), the pair of rows `2q`, `2q + 1` with row `2q`'s value in the
/// upper half. Each element is still one chain in `k` order (a bf16 product is exact in f32,
/// so a fused and a separate multiply-add agree), except that subnormal inputs, tile values and
/// partial sums are zero (of their sign), as that instruction computes them.
pub mod tiles {
    /// Rows of a tile (the GEMM's `MR`).
    pub const TILE_ROWS: usize = 4;
    /// Columns of a tile and of a B panel (the GEMM's `NR`).
    pub const TILE_COLS: usize = 8;
    /// Flag: start from the tiles' values (a later reduction chunk), not from zero.
    pub const ACCUMULATE: u64 = 1;
    /// Flag: A is packed micro-panels, not rows in place.
    pub const PACKED_A: u64 = 2;
    /// Flag: B holds f16 values, not f32.
    pub const B_F16: u64 = 4;
    /// Flag: B holds bf16 values, not f32.
    pub const B_BF16: u64 = 8;
}

impl Libcall {
    /// Every libcall, in table order: `rt[lc as usize]` is `lc`'s function.
    pub const ALL: [Libcall; 37] = [
        Libcall::ExpF32,
        Libcall::LogF32,
        Libcall::TanhF32,
        Libcall::ErfF32,
        Libcall::PowF32,
        Libcall::ExpF64,
        Libcall::LogF64,
        Libcall::TanhF64,
        Libcall::ErfF64,
        Libcall::PowF64,
        Libcall::F64ToF16,
        Libcall::F64ToBf16,
        Libcall::SinF32,
        Libcall::CosF32,
        Libcall::SinF64,
        Libcall::CosF64,
        Libcall::WidenF16,
        Libcall::NarrowF16,
        Libcall::GemmTiles,
        Libcall::GemvPanels,
        Libcall::NarrowF16Canonical,
        Libcall::RoundF16,
        Libcall::DepthwiseRow,
        Libcall::ExpArrayF32,
        Libcall::GemmPairsBf16,
        Libcall::SigmoidArrayF32,
        Libcall::ErfArrayF32,
        Libcall::TanhArrayF32,
        Libcall::GemmTilesAvx512,
        Libcall::DepthwiseRowAvx512,
        Libcall::SoftmaxRowsF32,
        Libcall::SiluArrayF32,
        Libcall::SiluArrayBf16,
        Libcall::SoftmaxRowsBf16,
        Libcall::SiluArrayF16,
        Libcall::SoftmaxRowsF16,
        Libcall::FinishTilesF32,
    ];

    /// The C parameter types and result type.
    pub fn c_types(self) -> (&'static [CType], CType) {
        use CType::*;
        use Libcall::*;
        match self {
            ExpF32 | LogF32 | TanhF32 | ErfF32 | SinF32 | CosF32 => (&[F32], F32),
            PowF32 => (&[F32, F32], F32),
            ExpF64 | LogF64 | TanhF64 | ErfF64 | SinF64 | CosF64 => (&[F64], F64),
            PowF64 => (&[F64, F64], F64),
            F64ToF16 | F64ToBf16 => (&[F64], F32),
            WidenF16 | NarrowF16 | NarrowF16Canonical | ExpArrayF32 | SigmoidArrayF32 | ErfArrayF32 | TanhArrayF32 | SiluArrayF32 | SiluArrayBf16 | SiluArrayF16 => (&[Ptr, Ptr, U64], U64),
            RoundF16 => (&[Ptr, Ptr, U64, U64], U64),
            GemmTiles | GemmTilesAvx512 | GemmPairsBf16 => (&[Ptr, U64, Ptr, U64, U64, Ptr, U64, U64, U64, U64], U64),
            GemvPanels => (&[Ptr, Ptr, U64, U64, Ptr, U64, U64], U64),
            DepthwiseRow | DepthwiseRowAvx512 => (&[Ptr, Ptr, Ptr, Ptr], U64),
            SoftmaxRowsF32 => (&[Ptr, Ptr, U64, U64, Ptr, Ptr], U64),
            SoftmaxRowsBf16 | SoftmaxRowsF16 => (&[Ptr, Ptr, U64, U64, Ptr, Ptr, Ptr, U64], U64),
            FinishTilesF32 => (&[Ptr, U64, U64, U64, Ptr, U64, U64, U64, Ptr], U64),
        }
    }

    /// The byte offset of this libcall's entry in the `rt` table.
    pub fn table_offset(self) -> usize {
        self as usize * std::mem::size_of::<usize>()
    }
}

/// The element type a tensor of `d` crosses a standalone library's plain C entry point in
/// (`f16c compile --emit=lib|header`): fp16 and bf16 as f32 (rounded to nearest even inside on
/// the way in, widened exactly on the way out), every other type as itself.
pub fn c_dtype(d: crate::DType) -> crate::DType {
    if d.is_low_float() {
        crate::DType::F32
    } else {
        d
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn depthwise_params_words_are_the_struct_in_memory() {
        let p = DepthwiseParams { kh: 3, kw: 5, channels: 7, in_width: 9, out_width: 11, stride: 2, dilation: 3, pad: 4, bias: 0x1234_5678, bounds: 3, bound_tests: 0b10_01_11, canonical: 1, silu: 1, thresholds: [1.5, -0.0, 6.0, f32::NAN], bound_values: [0.25, 2.0, -3.0, f32::INFINITY] };
        // SAFETY: a repr(C) struct of u64 and f32 fields, 8-byte aligned, a whole number of words.
        let memory = unsafe { std::slice::from_raw_parts((&p as *const DepthwiseParams).cast::<u64>(), std::mem::size_of::<DepthwiseParams>() / 8) };
        assert_eq!(p.words().as_slice(), memory);
    }

    #[test]
    fn table_order_is_the_discriminant_order() {
        for (i, lc) in Libcall::ALL.iter().enumerate() {
            assert_eq!(*lc as usize, i);
            assert_eq!(lc.table_offset(), i * 8);
        }
    }
}
