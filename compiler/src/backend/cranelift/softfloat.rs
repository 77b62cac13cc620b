//! fp16 and bf16 in software (DESIGN.md, "Numerics"), for a target that has neither: exact
//! widening, round-to-nearest-even narrowing, overflow to inf, subnormals kept, NaN quieted with
//! its payload's top bits. The same code serves one lane (`I32`) and four (`I32X4`): every
//! function reads the lane count from its argument's type.
//!
//! The tests below compile each conversion and compare it, bit for bit, with the `half` crate
//! (the reference interpreter's arithmetic) on every f16 and bf16 value and on f32 values
//! around every rounding boundary.

use super::emit::{lanes, Fx};
use cranelift_codegen::ir::condcodes::{FloatCC, IntCC};
use cranelift_codegen::ir::types::{F32, F32X4, I32, I32X4};
use cranelift_codegen::ir::InstBuilder;
use cranelift_codegen::ir::Value;

/// The least f32 magnitude that rounds to f16's infinity (to nearest even).
pub const F16_OVERFLOW: f32 = 65520.0;

impl Fx<'_> {
    /// The bits of an f32 (or f32x4) value as i32 (i32x4).
    pub(super) fn bits_of(&mut self, v: Value) -> Value {
        let ty = if self.b.func.dfg.value_type(v).is_vector() { I32X4 } else { I32 };
        self.b.ins().bitcast(ty, lanes(), v)
    }

    /// An i32 (i32x4) value's bits as f32 (f32x4).
    pub(super) fn float_of(&mut self, v: Value) -> Value {
        let ty = if self.b.func.dfg.value_type(v).is_vector() { F32X4 } else { F32 };
        self.b.ins().bitcast(ty, lanes(), v)
    }

    /// f16 bits (low 16 bits of each i32 lane) to f32, exactly: the exponent and fraction
    /// shifted into place and scaled by 2^112 in one float multiply, which rebiases normal
    /// numbers and normalises subnormals exactly; inf and NaN (quieted) are set apart.
    pub fn f16_to_f32(&mut self, h: Value) -> Value {
        let ty = self.b.func.dfg.value_type(h);
        let m7fff = self.k(ty, 0x7fff);
        let abs = self.b.ins().band(h, m7fff);
        let o = self.b.ins().ishl_imm_s(abs, 13);
        let of = self.float_of(o);
        let fty = self.b.func.dfg.value_type(of);
        let scale = self.f(fty, f32::from_bits(0x7780_0000)); // 2^112
        let finite = self.b.ins().fmul(of, scale);
        let finite = self.bits_of(finite);
        // Inf and NaN: exponent all ones, NaN with the quiet bit.
        let inf16 = self.k(ty, 0x7c00);
        let is_infnan = self.b.ins().icmp(IntCC::SignedGreaterThanOrEqual, abs, inf16);
        let is_nan = self.b.ins().icmp(IntCC::SignedGreaterThan, abs, inf16);
        let (inf, qnan) = (self.k(ty, 0x7f80_0000), self.k(ty, 0x7fc0_0000));
        let top = self.sel(is_nan, qnan, inf);
        let infnan = self.b.ins().bor(o, top);
        let r = self.sel(is_infnan, infnan, finite);
        let m8000 = self.k(ty, 0x8000);
        let sign = self.b.ins().band(h, m8000);
        let sign = self.b.ins().ishl_imm_s(sign, 16);
        let r = self.b.ins().bor(r, sign);
        let r = self.float_of(r);
        self.mark_f16_grid(r);
        r
    }

    /// Finite f16 bits, sign-extended to each i32 lane, to f32: shifted left 13, the sign's
    /// copies land in bits 28..31 and the exponent and fraction in place; clearing bits 28..30
    /// and scaling by 2^112 rebiases normal numbers and normalises subnormals exactly. Wrong
    /// for inf and NaN, which the caller has ruled out.
    pub fn f16_to_f32_finite(&mut self, h: Value) -> Value {
        let ty = self.b.func.dfg.value_type(h);
        let x = self.b.ins().ishl_imm_s(h, 13);
        let keep = self.k(ty, 0x8fff_e000u32 as i32 as i64);
        let x = self.b.ins().band(x, keep);
        let x = self.float_of(x);
        let fty = self.b.func.dfg.value_type(x);
        let scale = self.f(fty, f32::from_bits(0x7780_0000)); // 2^112
        let r = self.b.ins().fmul(x, scale);
        self.mark_f16_grid(r);
        r
    }

    /// An f32 (f32x4) value rounded to f16 precision, staying f32: exactly
    /// `f16_to_f32(f32_to_f16(v))`, in float arithmetic (eleven instructions). Adding and
    /// subtracting C = 2^(e+13), where 2^e is |v|'s exponent raised to at least 2^-14, makes the
    /// FPU round |v| to a multiple of f16's quantum at that exponent (2^(e-10), and 2^-24 for
    /// f16 subnormals), to nearest even. |v| ≥ 65520 (which rounds up past f16's largest
    /// value) is inf; there C may have overflowed, which does not matter, and a NaN fails the
    /// comparison and passes through the FPU quieted. Clearing the 13 low fraction bits
    /// changes no f16 value and gives NaN the payload it keeps through f16.
    pub fn round_f16_in_f32(&mut self, v: Value) -> Value {
        if self.on_f16_grid(v) {
            return v;
        }
        let x = self.bits_of(v);
        let ty = self.b.func.dfg.value_type(x);
        let fty = self.b.func.dfg.value_type(v);
        let abs_mask = self.k(ty, 0x7fff_ffff);
        let a = self.b.ins().band(x, abs_mask);
        let exp_mask = self.k(ty, 0x7f80_0000);
        let e = self.b.ins().band(a, exp_mask);
        let lo = self.k(ty, 0x3880_0000);
        let e = self.b.ins().smax(e, lo);
        let thirteen = self.k(ty, 13 << 23);
        let c = self.b.ins().iadd(e, thirteen);
        let c = self.float_of(c);
        let af = self.float_of(a);
        let s = self.b.ins().fadd(af, c);
        let s = self.b.ins().fsub(s, c);
        let limit = self.f(fty, F16_OVERFLOW);
        let big = self.b.ins().fcmp(FloatCC::GreaterThanOrEqual, af, limit);
        let s = self.bits_of(s);
        let inf = self.k(ty, 0x7f80_0000);
        let s = self.sel(big, inf, s);
        let keep = self.k(ty, 0x7fff_e000);
        let s = self.b.ins().band(s, keep);
        let sign = self.b.ins().bxor(x, a);
        let r = self.b.ins().bor(s, sign);
        let r = self.float_of(r);
        self.mark_f16_grid(r);
        r
    }

    /// f32 to f16 bits (in an i32 lane), rounding to nearest even: [`Fx::round_f16_in_f32`]
    /// (nothing to do for a value known to be an f16 value), then the bits of the rounded
    /// value. Scaling it by 2^-112 moves f16's exponent range onto f32's and f16 subnormals
    /// onto f32 subnormals (exactly: they are multiples of 2^-24), so its bits shifted right
    /// 13 are the f16 bits; inf and NaN, which the scaling keeps, are rebased from f32's
    /// all-ones exponent to f16's: `p - 0x38000` for them (p ≥ 0x3fc00), and an unsigned
    /// minimum picks it, since for finite values (p < 0x7c00) the subtraction wraps around.
    pub fn f32_to_f16(&mut self, v: Value) -> Value {
        let y = self.round_f16_in_f32(v);
        let x = self.bits_of(y);
        let ty = self.b.func.dfg.value_type(x);
        let fty = self.b.func.dfg.value_type(y);
        let abs_mask = self.k(ty, 0x7fff_ffff);
        let a = self.b.ins().band(x, abs_mask);
        let af = self.float_of(a);
        let scale = self.f(fty, f32::from_bits(0x0780_0000)); // 2^-112
        let scaled = self.b.ins().fmul(af, scale);
        let scaled = self.bits_of(scaled);
        let p = self.b.ins().ushr_imm_s(scaled, 13);
        let rebase = self.k(ty, 0x3_8000);
        let rebased = self.b.ins().isub(p, rebase);
        let p = self.b.ins().umin(p, rebased);
        let sign = self.b.ins().ushr_imm_s(x, 16);
        let m8000 = self.k(ty, 0x8000);
        let sign = self.b.ins().band(sign, m8000);
        self.b.ins().bor(p, sign)
    }

    /// An f32 (f32x4) value rounded to bf16 precision, staying f32: exactly
    /// `bf16_to_f32(f32_to_bf16(v))`, on the bits (round to nearest even carries into the
    /// exponent, so overflow gives inf; NaN is quieted and keeps its top payload bits).
    pub fn round_bf16_in_f32(&mut self, v: Value) -> Value {
        let x = self.bits_of(v);
        let ty = self.b.func.dfg.value_type(x);
        let hi = self.b.ins().ushr_imm_s(x, 16);
        let one = self.k(ty, 1);
        let odd = self.b.ins().band(hi, one);
        let half = self.k(ty, 0x7fff);
        let r = self.b.ins().iadd(x, half);
        let r = self.b.ins().iadd(r, odd);
        let r = self.quiet_if_nan(x, r);
        let top = self.k(ty, 0xffff_0000u32 as i32 as i64);
        let r = self.b.ins().band(r, top);
        self.float_of(r)
    }

    /// bf16 bits (low 16 bits of each lane) to f32: the top half of an f32 (NaN quieted).
    pub fn bf16_to_f32(&mut self, h: Value) -> Value {
        let x = self.b.ins().ishl_imm_s(h, 16);
        let r = self.quiet_if_nan(x, x);
        self.float_of(r)
    }

    /// For f32 bits `x` (i32 or i32x4): `x` with the quiet bit set where it is a NaN, and
    /// `otherwise` elsewhere.
    fn quiet_if_nan(&mut self, x: Value, otherwise: Value) -> Value {
        let ty = self.b.func.dfg.value_type(x);
        let abs_mask = self.k(ty, 0x7fff_ffff);
        let abs = self.b.ins().band(x, abs_mask);
        let inf = self.k(ty, 0x7f80_0000);
        let is_nan = self.b.ins().icmp(IntCC::SignedGreaterThan, abs, inf);
        let quiet = self.k(ty, 0x0040_0000);
        let nan = self.b.ins().bor(x, quiet);
        self.sel(is_nan, nan, otherwise)
    }

    /// f32 to bf16 bits, rounding to nearest even (NaN quieted): the top half of
    /// [`Fx::round_bf16_in_f32`]'s bits.
    pub fn f32_to_bf16(&mut self, v: Value) -> Value {
        let r = self.round_bf16_in_f32(v);
        let r = self.bits_of(r);
        self.b.ins().ushr_imm_s(r, 16)
    }
}

#[cfg(test)]
mod tests {
    use super::super::{build_function, host_isa};
    use super::Fx;
    use cranelift_codegen::ir::InstBuilder;
    use cranelift_frontend::FunctionBuilderContext;
    use cranelift_jit::{JITBuilder, JITModule};
    use cranelift_module::{Linkage, Module};
    use f16c_core::abi::KernelFn;
    use f16c_dialect::DType;
    use half::{bf16, f16};

    /// A kernel converting `from` elements of buffer 0 into `to` elements of buffer 1, one
    /// element per work item, or four per item (`lanes`).
    fn converter(from: DType, to: DType, lanes: bool) -> (JITModule, KernelFn) {
        rounding_converter(from, None, to, lanes, false)
    }

    /// `converter`, rounding each value to the precision of `round` in between (in f32), and
    /// loading four lanes as known-finite values when `finite`.
    fn rounding_converter(from: DType, round: Option<DType>, to: DType, lanes: bool, finite: bool) -> (JITModule, KernelFn) {
        let mut fctx = FunctionBuilderContext::new();
        let func = build_function("convert", &mut fctx, |fx: &mut Fx| {
            let (src, dst) = (fx.buffer(0), fx.buffer(1));
            fx.for_items(|fx, item| {
                if lanes {
                    let at = fx.b.ins().imul_imm_s(item, 4);
                    let v = fx.load4_checked(from, src, at, finite);
                    let v = round.map_or(v, |d| fx.round_f32(d, v));
                    fx.store4(to, dst, at, v);
                } else {
                    let v = fx.load(from, src, item);
                    let v = round.map_or(v, |d| fx.round_f32(d, v));
                    fx.store(to, dst, item, v);
                }
            });
            Ok(())
        })
        .unwrap();
        let (isa, _) = host_isa("speed", false).unwrap();
        let mut module = JITModule::new(JITBuilder::with_isa(isa, cranelift_module::default_libcall_names()));
        let id = module.declare_function("convert", Linkage::Local, &func.signature).unwrap();
        let mut ctx = module.make_context();
        ctx.func = func;
        module.define_function(id, &mut ctx).unwrap();
        module.finalize_definitions().unwrap();
        // SAFETY: built with the kernel signature.
        let f = unsafe { std::mem::transmute::<*const u8, KernelFn>(module.get_finalized_function(id)) };
        (module, f)
    }

    /// Runs a converter over `input` (raw little-endian elements) into `out`.
    fn run<I, O>(f: KernelFn, input: &[I], out: &mut [O], lanes: bool) {
        let table = [input.as_ptr() as *mut u8, out.as_mut_ptr() as *mut u8];
        let work = if lanes { input.len() / 4 } else { input.len() } as u64;
        // SAFETY: both buffers hold `input.len()` elements; the kernel touches no other memory.
        let status = unsafe { f(table.as_ptr(), 0, work, std::ptr::null_mut(), std::ptr::null()) };
        assert_eq!(status, 0);
    }

    /// f32 values around every rounding boundary of a 16-bit format: each representable value
    /// of the narrow format widened, its neighbours one f32 ulp away, the midpoints to the next
    /// value and their neighbours, plus the f32 specials.
    fn boundary_f32s(widen: impl Fn(u16) -> f32) -> Vec<f32> {
        let mut v = vec![f32::MAX, f32::MIN_POSITIVE, 1.0e-45, f32::INFINITY, f32::NAN, f32::from_bits(0x7f80_0001), 65520.0, 65519.99];
        for h in 0..=u16::MAX {
            let (x, y) = (widen(h), widen(h.wrapping_add(1)));
            let mid = ((x as f64 + y as f64) / 2.0) as f32;
            for c in [x, mid] {
                if c.is_finite() {
                    v.extend([c, f32::from_bits(c.to_bits() + 1), f32::from_bits(c.to_bits().wrapping_sub(1)), -c]);
                }
            }
        }
        v.truncate(v.len() / 4 * 4);
        v
    }

    #[test]
    fn widening_is_exact_for_every_f16_and_bf16_value() {
        let all: Vec<u16> = (0..=u16::MAX).collect();
        for lanes in [false, true] {
            for (d, widen) in [(DType::F16, (|h| f16::from_bits(h).to_f32()) as fn(u16) -> f32), (DType::BF16, |h| bf16::from_bits(h).to_f32())] {
                let (_m, f) = converter(d, DType::F32, lanes);
                let mut out = vec![0u32; all.len()];
                run(f, &all, &mut out, lanes);
                for (&h, &got) in all.iter().zip(&out) {
                    assert_eq!(got, widen(h).to_bits(), "{d} {h:#06x} (lanes: {lanes})");
                }
            }
        }
    }

    #[test]
    fn widening_known_finite_values_is_exact() {
        for (d, widen) in [(DType::F16, (|h| f16::from_bits(h).to_f32()) as fn(u16) -> f32), (DType::BF16, |h| bf16::from_bits(h).to_f32())] {
            let finite: Vec<u16> = (0..=u16::MAX).filter(|&h| widen(h).is_finite()).collect();
            let finite = &finite[..finite.len() / 4 * 4];
            let (_m, f) = rounding_converter(d, None, DType::F32, true, true);
            let mut out = vec![0u32; finite.len()];
            run(f, finite, &mut out, true);
            for (&h, &got) in finite.iter().zip(&out) {
                assert_eq!(got, widen(h).to_bits(), "{d} {h:#06x}");
            }
        }
    }

    #[test]
    fn narrowing_a_value_known_to_be_f16_packs_its_bits() {
        // Widened f16 values stored back: every bit pattern (NaNs come back quieted, as
        // through `half`).
        let all: Vec<u16> = (0..=u16::MAX).collect();
        for lanes in [false, true] {
            let (_m, f) = converter(DType::F16, DType::F16, lanes);
            let mut out = vec![0u16; all.len()];
            run(f, &all, &mut out, lanes);
            for (&h, &got) in all.iter().zip(&out) {
                assert_eq!(got, f16::from_f32(f16::from_bits(h).to_f32()).to_bits(), "{h:#06x} (lanes: {lanes})");
            }
            // Values rounded in f32 first, then stored.
            let xs = boundary_f32s(|h| f16::from_bits(h).to_f32());
            let (_m, f) = rounding_converter(DType::F32, Some(DType::F16), DType::F16, lanes, false);
            let mut out = vec![0u16; xs.len()];
            run(f, &xs, &mut out, lanes);
            for (&x, &got) in xs.iter().zip(&out) {
                assert_eq!(got, f16::from_f32(x).to_bits(), "from {x:e} ({:#010x}, lanes: {lanes})", x.to_bits());
            }
        }
    }

    /// A 16-bit format: its dtype, widening and (reference) narrowing.
    type Format = (DType, fn(u16) -> f32, fn(f32) -> u16);

    /// f16 and bf16, converted by `half` (the reference interpreter's arithmetic).
    fn formats() -> [Format; 2] {
        [
            (DType::F16, |h| f16::from_bits(h).to_f32(), |x| f16::from_f32(x).to_bits()),
            (DType::BF16, |h| bf16::from_bits(h).to_f32(), |x| bf16::from_f32(x).to_bits()),
        ]
    }

    #[test]
    fn narrowing_rounds_to_nearest_even_like_half() {
        for lanes in [false, true] {
            for (d, widen, narrow) in formats() {
                let xs = boundary_f32s(widen);
                let (_m, f) = converter(DType::F32, d, lanes);
                let mut out = vec![0u16; xs.len()];
                run(f, &xs, &mut out, lanes);
                for (&x, &got) in xs.iter().zip(&out) {
                    assert_eq!(got, narrow(x), "{d} from {x:e} ({:#010x}, lanes: {lanes})", x.to_bits());
                }
            }
        }
    }

    #[test]
    fn rounding_in_f32_equals_narrowing_then_widening() {
        for lanes in [false, true] {
            for (d, widen, narrow) in formats() {
                let mut xs = boundary_f32s(widen);
                // NaNs with payloads in the bits f16 drops and keeps, signalling and quiet,
                // and huge values (whose exponent the rounding clamps).
                xs.extend([0x7f80_0001u32, 0xffa0_1fff, 0x7fc0_2000, 0xff80_4001, 0x7f7f_ffff, 0x7000_0000, 0x4780_0000, 0x477f_f000].map(f32::from_bits));
                xs.truncate(xs.len() / 4 * 4);
                let (_m, f) = rounding_converter(DType::F32, Some(d), DType::F32, lanes, false);
                let mut out = vec![0u32; xs.len()];
                run(f, &xs, &mut out, lanes);
                for (&x, &got) in xs.iter().zip(&out) {
                    let want = widen(narrow(x)).to_bits();
                    assert_eq!(got, want, "{d} rounding {x:e} ({:#010x}, lanes: {lanes}): {got:#010x}", x.to_bits());
                }
            }
        }
    }
}
