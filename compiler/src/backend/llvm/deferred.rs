//! bf16 rounding of f32 lanes on the bits, kept out of LLVM's optimiser.
//!
//! On a CPU without a bit-faithful f32 → bf16 instruction, each vector of lanes rounds in ten
//! integer instructions (the carry for nearest-even, the NaN kept quiet, the select). A bf16
//! convolution network has a couple of thousand such vectors in its tiles' epilogues, and the
//! `default<O3>` pipeline, which can do nothing with them but carry them through every pass,
//! took 1.5× as long on a bf16 module as on the same fp16 one (fp16's rounding is one `fptrunc`
//! that code generation expands).
//!
//! So a CPU module calls `f16c.bf16.rne.v<N>` instead: a declaration without side effects
//! (LLVM may hoist, merge or drop the call like any pure instruction) that the optimiser sees
//! as one instruction. After the pipeline, [`define`] gives each declaration its body (the
//! same instructions [`rne_lanes`] emits inline) and the always-inliner puts it back in every
//! caller, before code generation: the machine code computes what the inline form did, lane
//! for lane (the parity suites compare the bits).

use super::Built;
use inkwell::attributes::{Attribute, AttributeLoc};
use inkwell::builder::Builder;
use inkwell::module::{Linkage, Module};
use inkwell::passes::PassBuilderOptions;
use inkwell::targets::TargetMachine;
use inkwell::types::{IntType, VectorType};
use inkwell::values::VectorValue;

/// The name of the rounding of `n` lanes, before [`define`]: `f16c.bf16.rne.v16`.
const PREFIX: &str = "f16c.bf16.rne.v";

/// bf16 rounding to nearest even on the bits of f32 lanes `x`, emitted inline at `b`: `<n x
/// i32>` whose top halves are the bf16 values (a NaN stays a quiet NaN), the low halves
/// whatever the carry left. `i32` is the context's `i32` type.
pub fn rne_lanes<'ctx>(b: &Builder<'ctx>, i32: IntType<'ctx>, x: VectorValue<'ctx>) -> VectorValue<'ctx> {
    let n = x.get_type().get_size();
    let k = |c: u64| VectorType::const_vector(&vec![i32.const_int(c, false); n as usize]);
    let bits = b.build_bit_cast(x, i32.vec_type(n), "").built().into_vector_value();
    let lsb = b.build_and(b.build_right_shift(bits, k(16), false, "").built(), k(1), "").built();
    let rounded = b.build_int_add(bits, b.build_int_add(lsb, k(0x7fff), "").built(), "").built();
    let quiet = b.build_or(bits, k(0x0040_0000), "").built();
    let nan = b.build_float_compare(inkwell::FloatPredicate::UNO, x, x, "").built();
    b.build_select(nan, quiet, rounded, "").built().into_vector_value()
}

/// [`rne_lanes`] of `x` as a call of the module's `f16c.bf16.rne.v<N>` (declared on first
/// use), for [`define`] to fill in after optimisation.
pub fn call<'ctx>(module: &Module<'ctx>, b: &Builder<'ctx>, i32: IntType<'ctx>, x: VectorValue<'ctx>) -> VectorValue<'ctx> {
    let n = x.get_type().get_size();
    let name = format!("{PREFIX}{n}");
    let f = module.get_function(&name).unwrap_or_else(|| {
        let f = module.add_function(&name, i32.vec_type(n).fn_type(&[x.get_type().into()], false), None);
        let cx = module.get_context();
        // memory(none) (value 0: no memory effects), and nothing else a pure function does.
        for kind in ["memory", "nounwind", "willreturn", "nosync", "nofree", "speculatable"] {
            f.add_attribute(AttributeLoc::Function, cx.create_enum_attribute(Attribute::get_named_enum_kind_id(kind), 0));
        }
        f
    });
    b.build_call(f, &[x.into()], "").built().try_as_basic_value().basic().expect("the rounding returns lanes").into_vector_value()
}

/// Gives every declared `f16c.bf16.rne.v<N>` of `module` its body ([`rne_lanes`]) and inlines
/// them into their callers (LLVM's always-inliner, which then drops them). A module without
/// them is left as it is.
pub fn define(module: &Module<'_>, tm: &TargetMachine) -> Result<(), String> {
    let cx = module.get_context();
    let b = cx.create_builder();
    let always = cx.create_enum_attribute(Attribute::get_named_enum_kind_id("alwaysinline"), 0);
    let mut any = false;
    for f in module.get_functions().filter(|f| f.count_basic_blocks() == 0 && f.get_name().to_bytes().starts_with(PREFIX.as_bytes())) {
        let entry = cx.append_basic_block(f, "entry");
        b.position_at_end(entry);
        let x = f.get_nth_param(0).expect("one parameter").into_vector_value();
        let r = rne_lanes(&b, cx.i32_type(), x);
        b.build_return(Some(&r)).built();
        f.set_linkage(Linkage::Internal);
        f.add_attribute(AttributeLoc::Function, always);
        any = true;
    }
    if !any {
        return Ok(());
    }
    module.run_passes("always-inline", tm, PassBuilderOptions::create()).map_err(|e| format!("LLVM inlining failed: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::llvm::machine::{self, MachineSpec};
    use inkwell::context::Context;
    use inkwell::AddressSpace;

    /// `void f(float *x, i32 *out)`: 16 lanes of `x` rounded by [`call`] (`deferred`) or
    /// [`rne_lanes`], stored to `out`.
    fn module<'ctx>(cx: &'ctx Context, deferred: bool) -> Module<'ctx> {
        let m = cx.create_module("m");
        let ptr = cx.ptr_type(AddressSpace::default());
        let f = m.add_function("f", cx.void_type().fn_type(&[ptr.into(), ptr.into()], false), None);
        let b = cx.create_builder();
        b.position_at_end(cx.append_basic_block(f, "entry"));
        let lanes = cx.f32_type().vec_type(16);
        let x = b.build_load(lanes, f.get_nth_param(0).unwrap().into_pointer_value(), "").built().into_vector_value();
        let r = if deferred { call(&m, &b, cx.i32_type(), x) } else { rne_lanes(&b, cx.i32_type(), x) };
        b.build_store(f.get_nth_param(1).unwrap().into_pointer_value(), r).built();
        b.build_return(None).built();
        m
    }

    /// `f` of `m` (optimised) on `x`, run by LLVM's JIT.
    fn run(m: &Module<'_>, x: &[f32; 16]) -> [u32; 16] {
        let ee = m.create_jit_execution_engine(inkwell::OptimizationLevel::None).unwrap();
        let mut out = [0u32; 16];
        // SAFETY: `f` reads 16 floats from its first argument and writes 16 words to its second.
        unsafe {
            let f = ee.get_function::<unsafe extern "C" fn(*const f32, *mut u32)>("f").unwrap();
            f.call(x.as_ptr(), out.as_mut_ptr());
        }
        out
    }

    #[test]
    fn the_deferred_rounding_is_the_inline_one_after_optimisation() {
        let host = inkwell::targets::TargetMachine::get_default_triple();
        let spec = MachineSpec { triple: "x86_64-unknown-linux-gnu", cpu: "x86-64".into(), features: String::new() };
        let tm = machine::machine(&spec).unwrap();
        let cx = Context::create();
        let deferred = module(&cx, true);
        assert!(deferred.print_to_string().to_string().contains("call <16 x i32> @f16c.bf16.rne.v16"));
        machine::optimize(&deferred, &tm).unwrap();
        let text = deferred.print_to_string().to_string();
        assert!(!text.contains("f16c.bf16.rne"), "the rounding is defined, inlined and dropped:\n{text}");
        if !host.as_str().to_string_lossy().starts_with("x86_64") {
            return;
        }
        let inline = module(&cx, false);
        machine::optimize(&inline, &tm).unwrap();
        // Ties to even both ways, a carry into the exponent, the largest finite value rounding
        // to infinity, subnormals, infinities, NaNs (quiet and signalling), signed zeros.
        let x = [1.0 + 2f32.powi(-8), 1.0 + 3.0 * 2f32.powi(-8), 1.0 + 2f32.powi(-9), 2.0 - 2f32.powi(-9), f32::MAX, 1e-40, -1e-40, f32::MIN_POSITIVE, f32::INFINITY, f32::NEG_INFINITY, f32::NAN, f32::from_bits(0x7f80_0001), -0.0, 0.0, -3.14159, 65504.0];
        let (got, want) = (run(&deferred, &x), run(&inline, &x));
        assert_eq!(got, want);
        for (v, bits) in x.iter().zip(got) {
            let top = (bits >> 16) as u16;
            if v.is_nan() {
                assert_eq!(top, (v.to_bits() >> 16) as u16 | 0x40, "{v}: a quiet NaN");
            } else {
                assert_eq!(top, half::bf16::from_f32(*v).to_bits(), "{v}: to nearest even");
            }
        }
    }
}
