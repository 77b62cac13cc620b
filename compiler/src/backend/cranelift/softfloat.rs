//! fp16 and bf16 in software (DESIGN.md, "Numerics"), for a target that has neither: exact
//! widening, round-to-nearest-even narrowing, overflow to inf, subnormals kept, NaN quieted with
//! its payload's top bits. The same code serves one lane (`I32`) and four (`I32X4`): every
//! function reads the lane count from its argument's type.
//!
//! The tests below compile each conversion and compare it, bit for bit, with the `half` crate
//! (the reference interpreter's arithmetic) on every f16 and bf16 value and on f32 values
//! around every rounding boundary.

use super::emit::{lanes, Fx};
use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::types::{F32, F32X4, I32, I32X4};
use cranelift_codegen::ir::InstBuilder;
use cranelift_codegen::ir::Value;

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

    /// f16 bits (low 16 bits of each i32 lane) to f32, exactly.
    pub fn f16_to_f32(&mut self, h: Value) -> Value {
        let ty = self.b.func.dfg.value_type(h);
        let (m7fff, m8000, m3ff) = (self.k(ty, 0x7fff), self.k(ty, 0x8000), self.k(ty, 0x3ff));
        let abs = self.b.ins().band(h, m7fff);
        let o = self.b.ins().ishl_imm_s(abs, 13);
        let exp_mask = self.k(ty, 0x0f80_0000);
        let exp = self.b.ins().band(o, exp_mask);
        let rebias = self.k(ty, 0x3800_0000);
        let o = self.b.ins().iadd(o, rebias);
        // Inf/NaN: exponent all ones; NaN gets the quiet bit.
        let infnan = self.b.ins().iadd(o, rebias);
        let man = self.b.ins().band(h, m3ff);
        let zero = self.k(ty, 0);
        let is_nan = self.b.ins().icmp(IntCC::NotEqual, man, zero);
        let quiet = self.k(ty, 0x0040_0000);
        let q = self.sel(is_nan, quiet, zero);
        let infnan = self.b.ins().bor(infnan, q);
        // Subnormal: renormalise through a float subtraction (exact).
        let one_exp = self.k(ty, 0x0080_0000);
        let s = self.b.ins().iadd(o, one_exp);
        let sf = self.float_of(s);
        let magic = self.k(ty, 0x3880_0000);
        let mf = self.float_of(magic);
        let sub = self.b.ins().fsub(sf, mf);
        let sub = self.bits_of(sub);
        let is_infnan = self.b.ins().icmp(IntCC::Equal, exp, exp_mask);
        let is_sub = self.b.ins().icmp(IntCC::Equal, exp, zero);
        let r = self.sel(is_sub, sub, o);
        let r = self.sel(is_infnan, infnan, r);
        let sign = self.b.ins().band(h, m8000);
        let sign = self.b.ins().ishl_imm_s(sign, 16);
        let r = self.b.ins().bor(r, sign);
        self.float_of(r)
    }

    /// f32 to f16 bits (in an i32 lane), rounding to nearest even.
    pub fn f32_to_f16(&mut self, v: Value) -> Value {
        let x = self.bits_of(v);
        let ty = self.b.func.dfg.value_type(x);
        let sign_mask = self.k(ty, 0x8000_0000u32 as i32 as i64);
        let sign = self.b.ins().band(x, sign_mask);
        let a = self.b.ins().bxor(x, sign);
        // Normal numbers: rebias, round to nearest even, shift.
        let t = self.b.ins().ushr_imm_s(a, 13);
        let one = self.k(ty, 1);
        let odd = self.b.ins().band(t, one);
        let bias = self.k(ty, (0xC800_0FFFu32 as i32) as i64);
        let n = self.b.ins().iadd(a, bias);
        let n = self.b.ins().iadd(n, odd);
        let n = self.b.ins().ushr_imm_s(n, 13);
        // Subnormals and zero: let the FPU round by adding 0.5 (its ulp is the f16 subnormal's).
        let magic = self.k(ty, 0x3f00_0000);
        let af = self.float_of(a);
        let mf = self.float_of(magic);
        let s = self.b.ins().fadd(af, mf);
        let s = self.bits_of(s);
        let s = self.b.ins().isub(s, magic);
        // Overflow gives inf; NaN stays NaN (quiet, top payload bits kept).
        let m3ff = self.k(ty, 0x3ff);
        let payload = self.b.ins().band(t, m3ff);
        let q = self.k(ty, 0x7e00);
        let nan = self.b.ins().bor(payload, q);
        let inf = self.k(ty, 0x7c00);
        let f32_inf = self.k(ty, 0x7f80_0000);
        let is_nan = self.b.ins().icmp(IntCC::SignedGreaterThan, a, f32_inf);
        let big = self.k(ty, 0x4780_0000);
        let is_big = self.b.ins().icmp(IntCC::SignedGreaterThanOrEqual, a, big);
        let small = self.k(ty, 0x3880_0000);
        let is_small = self.b.ins().icmp(IntCC::SignedLessThan, a, small);
        let special = self.sel(is_nan, nan, inf);
        let r = self.sel(is_small, s, n);
        let r = self.sel(is_big, special, r);
        let sign = self.b.ins().ushr_imm_s(sign, 16);
        self.b.ins().bor(r, sign)
    }

    /// bf16 bits (low 16 bits of each lane) to f32: the top half of an f32 (NaN quieted).
    pub fn bf16_to_f32(&mut self, h: Value) -> Value {
        let ty = self.b.func.dfg.value_type(h);
        let x = self.b.ins().ishl_imm_s(h, 16);
        let abs_mask = self.k(ty, 0x7fff_ffff);
        let abs = self.b.ins().band(x, abs_mask);
        let inf = self.k(ty, 0x7f80_0000);
        let is_nan = self.b.ins().icmp(IntCC::SignedGreaterThan, abs, inf);
        let quiet = self.k(ty, 0x0040_0000);
        let xq = self.b.ins().bor(x, quiet);
        let r = self.sel(is_nan, xq, x);
        self.float_of(r)
    }

    /// f32 to bf16 bits, rounding to nearest even (NaN quieted).
    pub fn f32_to_bf16(&mut self, v: Value) -> Value {
        let x = self.bits_of(v);
        let ty = self.b.func.dfg.value_type(x);
        let hi = self.b.ins().ushr_imm_s(x, 16);
        let one = self.k(ty, 1);
        let odd = self.b.ins().band(hi, one);
        let half = self.k(ty, 0x7fff);
        let r = self.b.ins().iadd(x, half);
        let r = self.b.ins().iadd(r, odd);
        let r = self.b.ins().ushr_imm_s(r, 16);
        let abs_mask = self.k(ty, 0x7fff_ffff);
        let abs = self.b.ins().band(x, abs_mask);
        let inf = self.k(ty, 0x7f80_0000);
        let is_nan = self.b.ins().icmp(IntCC::SignedGreaterThan, abs, inf);
        let quiet = self.k(ty, 0x40);
        let nan = self.b.ins().bor(hi, quiet);
        self.sel(is_nan, nan, r)
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
        let mut fctx = FunctionBuilderContext::new();
        let func = build_function("convert", &mut fctx, |fx: &mut Fx| {
            let (src, dst) = (fx.buffer(0), fx.buffer(1));
            fx.for_items(|fx, item| {
                if lanes {
                    let at = fx.b.ins().imul_imm_s(item, 4);
                    let v = fx.load4(from, src, at);
                    fx.store4(to, dst, at, v);
                } else {
                    let v = fx.load(from, src, item);
                    fx.store(to, dst, item, v);
                }
                vec![]
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

    /// A 16-bit format: its dtype, widening and (reference) narrowing.
    type Format = (DType, fn(u16) -> f32, fn(f32) -> u16);

    #[test]
    fn narrowing_rounds_to_nearest_even_like_half() {
        for lanes in [false, true] {
            let cases: [Format; 2] = [
                (DType::F16, |h| f16::from_bits(h).to_f32(), |x| f16::from_f32(x).to_bits()),
                (DType::BF16, |h| bf16::from_bits(h).to_f32(), |x| bf16::from_f32(x).to_bits()),
            ];
            for (d, widen, narrow) in cases {
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
}
