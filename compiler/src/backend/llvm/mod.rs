//! Shared LLVM IR emission through inkwell (Debian's LLVM 22), generic over the target: the
//! NVPTX backend uses it today, the LLVM CPU backend (AArch64, x86-64 ahead of time) will
//! (Cranelift's `pulley_shared`, MLIR's `Conversion/LLVMCommon`).
//!
//! - [`Ir`]: one module being built, with the pieces every kernel needs: typed loads and stores
//!   that convert between storage types (`half`, `bfloat`, `float`, ...) and compute domains,
//!   counted loops and conditionals (loop variables live in allocas that `mem2reg` promotes),
//!   intrinsic declarations, and the buffer table.
//! - [`expr`]: the elementwise ops under the numeric contract (DESIGN.md "Numerics"): widen to
//!   f32, compute, round once to the result type. `fptrunc` is round-to-nearest-even on every
//!   LLVM target, so one rounding is one `fptrunc`.
//! - [`families`]: the bodies of the kernel families for one work item (an output element, a
//!   reduction lane, a row), which a target wraps in its own iteration (a grid-stride loop of
//!   GPU threads, a `begin..end` loop of CPU work items).
//! - [`machine`]: target machines, the optimisation pipeline, and text/object output.
//!
//! Compute domains: f32, f16 and bf16 values compute in `float`; f64 in `double`; i8/i32/i64 in
//! `i64` (wrapped to their width after each op, as the reference does); i1 in `i1`.

pub mod deferred;
pub mod expr;
pub mod families;
pub mod machine;
mod math;
pub mod parts;

use f16c_dialect::DType;
use crate::lower::Stride;
use inkwell::basic_block::BasicBlock;
use inkwell::builder::Builder;
use inkwell::context::Context;
use inkwell::module::Module;
use inkwell::types::{BasicMetadataTypeEnum, BasicType, BasicTypeEnum, VectorType};
use inkwell::values::{BasicMetadataValueEnum, BasicValue, BasicValueEnum, FloatValue, FunctionValue, IntValue, PointerValue, VectorValue};
use inkwell::{AddressSpace, IntPredicate};
use std::collections::HashMap;

/// Builder results: a builder error means the builder was not positioned or an operand had the
/// wrong type, which is a bug of the emitter, never a property of the user's model.
pub(crate) trait Built<T> {
    fn built(self) -> T;
}

impl<T> Built<T> for Result<T, inkwell::builder::BuilderError> {
    fn built(self) -> T {
        self.expect("the emitter positions the builder and passes operands of the declared types")
    }
}

/// How a target computes the math functions of the contract (exp, log, tanh, erf, pow) and the
/// conversions LLVM would otherwise lower to compiler-runtime calls.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MathImpl {
    /// f16c's own f32 approximations on top of the GPU's `ex2.approx`/`lg2.approx` (NVPTX): not
    /// bit-identical to the reference, within the NVPTX backend's `MATH_TOLERANCE`. Every
    /// conversion is a native `cvt`.
    NvptxApprox,
    /// The runtime's functions through the CPU ABI's `rt` table ([`f16c_core::abi::Libcall`]):
    /// the reference interpreter's own, so results are bit-identical. f32 → bf16 is rounded in
    /// integer arithmetic and f64 → f16/bf16 goes through `rt` (a CPU without native bf16 would
    /// otherwise call `__truncsfbf2`, which a loaded shared object cannot count on).
    RuntimeTable,
}

/// A module being built, with the function currently emitted.
pub struct Ir<'ctx> {
    /// The LLVM context.
    pub cx: &'ctx Context,
    /// The module.
    pub module: Module<'ctx>,
    /// The builder.
    pub b: Builder<'ctx>,
    /// How math functions are computed.
    pub math: MathImpl,
    /// The address space buffers live in (NVPTX: 1, global memory, so loads and stores are
    /// `ld.global`/`st.global` rather than generic).
    pub buffer_space: u16,
    /// The CPU converts f32 to bf16 in one instruction (AArch64 `+bf16`: `bfcvt`), so f32 →
    /// bf16 is LLVM's `fptrunc` rather than integer rounding.
    pub native_bf16: bool,
    /// bf16 lanes round through [`deferred::call`] (filled in after optimisation) rather than
    /// inline: CPU modules, whose pipeline [`machine::optimize`] and [`parts`] finish.
    pub defer_bf16: bool,
    /// `y · 2^k` is `llvm.ldexp`, one instruction on this CPU ([`crate::target::CpuMachine::scales_in_one`]),
    /// rather than two multiplications by powers of two built from their bits.
    pub ldexp_in_one: bool,
    func: Option<FunctionValue<'ctx>>,
    entry: Option<BasicBlock<'ctx>>,
    /// The buffer table parameter of the current function.
    bufs: Option<PointerValue<'ctx>>,
    /// The libcall table parameter of the current function (CPU kernels).
    rt: Option<PointerValue<'ctx>>,
    /// Buffer addresses loaded once per function.
    buffers: HashMap<usize, PointerValue<'ctx>>,
    /// When set, the function's buffer table is its own: [`Ir::buffer`] gives each buffer it
    /// is asked for the next entry (recorded here, in order of first use) instead of reading
    /// the program's table at the buffer's slot, so that kernels alike but for their buffers
    /// emit the same function (the CPU backends compile it once).
    pub local_slots: Option<Vec<usize>>,
}

/// A mutable variable of the function being built (an alloca that `mem2reg` promotes).
#[derive(Clone, Copy)]
pub struct Var<'ctx> {
    ptr: PointerValue<'ctx>,
    ty: BasicTypeEnum<'ctx>,
}

impl<'ctx> Var<'ctx> {
    /// The variable's address (for code that stores into it through a pointer).
    pub fn pointer(&self) -> PointerValue<'ctx> {
        self.ptr
    }
}

impl<'ctx> Ir<'ctx> {
    /// An empty module for `triple` with `data_layout`.
    pub fn new(cx: &'ctx Context, name: &str, math: MathImpl) -> Self {
        Ir { cx, module: cx.create_module(name), b: cx.create_builder(), math, buffer_space: 0, native_bf16: false, defer_bf16: false, ldexp_in_one: false, func: None, entry: None, bufs: None, rt: None, buffers: HashMap::new(), local_slots: None }
    }

    /// Starts function `f`: positions the builder in a new entry block; `bufs` is its buffer
    /// table parameter (one address per slot of the layout).
    pub fn begin_function(&mut self, f: FunctionValue<'ctx>, bufs: PointerValue<'ctx>) {
        let entry = self.cx.append_basic_block(f, "entry");
        self.b.position_at_end(entry);
        self.func = Some(f);
        self.entry = Some(entry);
        self.bufs = Some(bufs);
        self.rt = None;
        self.buffers.clear();
    }

    /// The libcall table of the current (CPU) function.
    pub fn set_rt(&mut self, rt: PointerValue<'ctx>) {
        self.rt = Some(rt);
    }

    /// The LLVM type of a libcall's C parameter or result type.
    pub fn c_type(&self, c: f16c_core::abi::CType) -> BasicTypeEnum<'ctx> {
        use f16c_core::abi::CType;
        match c {
            CType::F32 => self.cx.f32_type().into(),
            CType::F64 => self.cx.f64_type().into(),
            CType::Ptr => self.ptr_ty().into(),
            CType::U64 => self.cx.i64_type().into(),
        }
    }

    /// Calls libcall `lc` through the `rt` table.
    pub fn libcall(&mut self, lc: f16c_core::abi::Libcall, args: &[BasicValueEnum<'ctx>]) -> Result<BasicValueEnum<'ctx>, String> {
        let rt = self.rt.ok_or("a libcall outside a CPU kernel")?;
        let (params, ret) = lc.c_types();
        let params: Vec<BasicMetadataTypeEnum> = params.iter().map(|&c| self.c_type(c).into()).collect();
        let fn_ty = self.c_type(ret).fn_type(&params, false);
        let at = self.gep(self.ptr_ty().into(), rt, self.i64((lc.table_offset() / 8) as i64));
        let f = self.b.build_load(self.ptr_ty(), at, "").built().into_pointer_value();
        let args: Vec<BasicMetadataValueEnum> = args.iter().map(|&a| a.into()).collect();
        Ok(self.b.build_indirect_call(fn_ty, f, &args, "").built().try_as_basic_value().basic().expect("libcalls return a value"))
    }

    /// `v` (f32, or f64) rounded once to the low type `d`, in its storage type (`half`,
    /// `bfloat`).
    pub fn to_low(&mut self, v: FloatValue<'ctx>, d: DType) -> Result<FloatValue<'ctx>, String> {
        let low = self.storage(d).into_float_type();
        let is_f64 = v.get_type() == self.cx.f64_type();
        if self.math == MathImpl::NvptxApprox {
            return Ok(self.b.build_float_trunc(v, low, "").built());
        }
        if is_f64 {
            // One rounding, by the runtime's conversion; its f32 result is exact in `d`.
            let lc = if d == DType::F16 { f16c_core::abi::Libcall::F64ToF16 } else { f16c_core::abi::Libcall::F64ToBf16 };
            let w = self.libcall(lc, &[v.into()])?.into_float_value();
            return self.to_low(w, d);
        }
        if d == DType::F16 || self.native_bf16 {
            return Ok(self.b.build_float_trunc(v, low, "").built());
        }
        let bits = self.bf16_rne_bits(v.into()).into_int_value();
        let hi = self.b.build_right_shift(bits, self.i32(16), false, "").built();
        let h = self.b.build_int_truncate(hi, self.cx.i16_type(), "").built();
        Ok(self.b.build_bit_cast(h, low, "").built().into_float_value())
    }

    /// f32 lanes rounded to `d` (f16 or bf16, to nearest even), in `d`'s storage type. bf16 on a
    /// CPU without native bf16 rounds on the bits, lane by lane in vector integer arithmetic (as
    /// [`Ir::to_low`] does one value): LLVM's vector `fptrunc` to bf16 would call
    /// `__truncsfbf2` per lane, and scalarising kept every bf16 kernel out of vectors.
    pub fn to_low_lanes(&self, v: VectorValue<'ctx>, d: DType) -> VectorValue<'ctx> {
        let n = v.get_type().get_size();
        let low = self.storage(d).into_float_type().vec_type(n);
        if d != DType::BF16 || !self.bf16_on_bits() {
            return self.b.build_float_trunc(v, low, "").built();
        }
        let chosen = self.bf16_rne_bits(v.into()).into_vector_value();
        self.top_halves_as_bf16(chosen)
    }

    /// The top 16 bits of each `i32` lane, as bf16 lanes.
    fn top_halves_as_bf16(&self, bits: VectorValue<'ctx>) -> VectorValue<'ctx> {
        let n = bits.get_type().get_size();
        let k16 = VectorType::const_vector(&vec![self.cx.i32_type().const_int(16, false); n as usize]);
        let hi = self.b.build_right_shift(bits, k16, false, "").built();
        let h = self.b.build_int_truncate(hi, self.cx.i16_type().vec_type(n), "").built();
        self.b.build_bit_cast(h, self.storage(DType::BF16).into_float_type().vec_type(n), "").built().into_vector_value()
    }

    /// Domain lanes (f32 lanes already rounded to `d`) in `d`'s storage: exact, so bf16 on the
    /// bits is the top half of each lane (a shift and a truncation; rounding again would give
    /// the same bits for four more instructions a vector, in every bf16 kernel's store).
    pub fn narrow_lanes(&self, v: VectorValue<'ctx>, d: DType) -> VectorValue<'ctx> {
        if d != DType::BF16 || !self.bf16_on_bits() {
            return self.to_low_lanes(v, d);
        }
        let bits = self.b.build_bit_cast(v, self.cx.i32_type().vec_type(v.get_type().get_size()), "").built().into_vector_value();
        self.top_halves_as_bf16(bits)
    }

    /// An f32 value or f32 lanes rounded to bf16 and back, exactly what [`Ir::to_low`] or
    /// [`Ir::to_low_lanes`] then [`Ir::bf16_to_f32`] give, in one mask where
    /// [`Ir::bf16_on_bits`] (the rounded bits' low half cleared, not shifted down and back up:
    /// a sixth of the instructions for LLVM to combine, in every bf16 epilogue and kernel).
    pub fn round_bf16_in_f32(&mut self, v: BasicValueEnum<'ctx>) -> BasicValueEnum<'ctx> {
        if !self.bf16_on_bits() {
            let low = match v {
                BasicValueEnum::VectorValue(x) => self.to_low_lanes(x, DType::BF16).into(),
                _ => self.to_low(v.into_float_value(), DType::BF16).expect("an f32 value rounds without a libcall").into(),
            };
            return self.bf16_to_f32(low);
        }
        let chosen = self.bf16_rne_bits(v);
        let (mask, f32t): (BasicValueEnum, BasicTypeEnum) = match chosen {
            BasicValueEnum::VectorValue(c) => {
                let n = c.get_type().get_size();
                (VectorType::const_vector(&vec![self.i32(-65536); n as usize]).into(), self.cx.f32_type().vec_type(n).into())
            }
            _ => (self.i32(-65536).into(), self.cx.f32_type().into()),
        };
        let top: BasicValueEnum = match (chosen, mask) {
            (BasicValueEnum::VectorValue(c), BasicValueEnum::VectorValue(m)) => self.b.build_and(c, m, "").built().into(),
            (c, m) => self.b.build_and(c.into_int_value(), m.into_int_value(), "").built().into(),
        };
        self.b.build_bit_cast(top, f32t, "").built()
    }

    /// bf16 rounding to nearest even on the bits of an f32 value or lanes (`i32` or `<n x i32>`
    /// results): the top half is the bf16 value, a NaN stays a (quiet) NaN; the low half is
    /// whatever the carry left.
    fn bf16_rne_bits(&self, v: BasicValueEnum<'ctx>) -> BasicValueEnum<'ctx> {
        let b = &self.b;
        match v {
            BasicValueEnum::VectorValue(x) if self.defer_bf16 => deferred::call(&self.module, b, self.cx.i32_type(), x).into(),
            BasicValueEnum::VectorValue(x) => deferred::rne_lanes(b, self.cx.i32_type(), x).into(),
            _ => {
                let x = v.into_float_value();
                let bits = b.build_bit_cast(x, self.cx.i32_type(), "").built().into_int_value();
                let lsb = b.build_and(b.build_right_shift(bits, self.i32(16), false, "").built(), self.i32(1), "").built();
                let rounded = b.build_int_add(bits, b.build_int_add(lsb, self.i32(0x7fff), "").built(), "").built();
                let quiet = b.build_or(bits, self.i32(0x0040_0000), "").built();
                let nan = b.build_float_compare(inkwell::FloatPredicate::UNO, x, x, "").built();
                self.select(nan, quiet, rounded)
            }
        }
    }

    /// Whether bf16 converts on the bits here (a CPU without native bf16): LLVM's `fptrunc` to
    /// and `fpext` from `bfloat` are expanded lane by lane there (a libcall per lane to round),
    /// which made a bf16 build several times slower to compile than fp16 and kept its kernels
    /// out of vectors.
    fn bf16_on_bits(&self) -> bool {
        !self.native_bf16 && self.math != MathImpl::NvptxApprox
    }

    /// bf16 values (one, or lanes) as f32, exactly: the 16 bits moved to the top of an f32 (a
    /// zero-extension and a shift, `vpmovzxwd` + `vpslld` for lanes) where
    /// [`Ir::bf16_on_bits`], else `fpext`.
    pub fn bf16_to_f32(&self, v: BasicValueEnum<'ctx>) -> BasicValueEnum<'ctx> {
        let b = &self.b;
        match v {
            BasicValueEnum::VectorValue(x) if self.bf16_on_bits() => {
                let n = x.get_type().get_size();
                let k16 = VectorType::const_vector(&vec![self.cx.i32_type().const_int(16, false); n as usize]);
                let bits = b.build_bit_cast(x, self.cx.i16_type().vec_type(n), "").built().into_vector_value();
                let wide = b.build_int_z_extend(bits, self.cx.i32_type().vec_type(n), "").built();
                let top = b.build_left_shift(wide, k16, "").built();
                b.build_bit_cast(top, self.cx.f32_type().vec_type(n), "").built()
            }
            BasicValueEnum::VectorValue(x) => b.build_float_ext(x, self.cx.f32_type().vec_type(x.get_type().get_size()), "").built().into(),
            _ if self.bf16_on_bits() => {
                let bits = b.build_bit_cast(v, self.cx.i16_type(), "").built().into_int_value();
                let wide = b.build_int_z_extend(bits, self.cx.i32_type(), "").built();
                let top = b.build_left_shift(wide, self.cx.i32_type().const_int(16, false), "").built();
                b.build_bit_cast(top, self.cx.f32_type(), "").built()
            }
            _ => b.build_float_ext(v.into_float_value(), self.cx.f32_type(), "").built().into(),
        }
    }

    /// The function being built.
    pub fn func(&self) -> FunctionValue<'ctx> {
        self.func.expect("begin_function was called")
    }

    /// A generic pointer type.
    pub fn ptr_ty(&self) -> inkwell::types::PointerType<'ctx> {
        self.cx.ptr_type(AddressSpace::default())
    }

    /// An i64 constant.
    pub fn i64(&self, v: i64) -> IntValue<'ctx> {
        self.cx.i64_type().const_int(v as u64, true)
    }

    /// An i32 constant.
    pub fn i32(&self, v: i32) -> IntValue<'ctx> {
        self.cx.i32_type().const_int(v as u64, true)
    }

    /// An f32 constant.
    pub fn f32(&self, v: f32) -> FloatValue<'ctx> {
        self.cx.f32_type().const_float(v as f64)
    }

    /// An f64 constant.
    pub fn f64(&self, v: f64) -> FloatValue<'ctx> {
        self.cx.f64_type().const_float(v)
    }

    /// `a + b` on i64.
    pub fn add(&self, a: IntValue<'ctx>, b: IntValue<'ctx>) -> IntValue<'ctx> {
        self.b.build_int_add(a, b, "").built()
    }

    /// `a + c` on i64.
    pub fn addi(&self, a: IntValue<'ctx>, c: i64) -> IntValue<'ctx> {
        if c == 0 {
            a
        } else {
            self.add(a, self.i64(c))
        }
    }

    /// `a - b` on i64.
    pub fn sub(&self, a: IntValue<'ctx>, b: IntValue<'ctx>) -> IntValue<'ctx> {
        self.b.build_int_sub(a, b, "").built()
    }

    /// `a · b` on i64.
    pub fn mul(&self, a: IntValue<'ctx>, b: IntValue<'ctx>) -> IntValue<'ctx> {
        self.b.build_int_mul(a, b, "").built()
    }

    /// `a · c` on i64.
    pub fn muli(&self, a: IntValue<'ctx>, c: usize) -> IntValue<'ctx> {
        match c {
            0 => self.i64(0),
            1 => a,
            _ => self.mul(a, self.i64(c as i64)),
        }
    }

    /// `a / c` (unsigned).
    pub fn divi(&self, a: IntValue<'ctx>, c: usize) -> IntValue<'ctx> {
        if c == 1 {
            a
        } else {
            self.b.build_int_unsigned_div(a, self.i64(c as i64), "").built()
        }
    }

    /// `a % c` (unsigned).
    pub fn remi(&self, a: IntValue<'ctx>, c: usize) -> IntValue<'ctx> {
        if c == 1 {
            self.i64(0)
        } else {
            self.b.build_int_unsigned_rem(a, self.i64(c as i64), "").built()
        }
    }

    /// Signed comparison of i64 values.
    pub fn icmp(&self, p: IntPredicate, a: IntValue<'ctx>, b: IntValue<'ctx>) -> IntValue<'ctx> {
        self.b.build_int_compare(p, a, b, "").built()
    }

    /// `0 <= v < len` (one unsigned comparison).
    pub fn in_range(&self, v: IntValue<'ctx>, len: usize) -> IntValue<'ctx> {
        self.icmp(IntPredicate::ULT, v, self.i64(len as i64))
    }

    /// `a && b` on i1.
    pub fn and(&self, a: IntValue<'ctx>, b: IntValue<'ctx>) -> IntValue<'ctx> {
        self.b.build_and(a, b, "").built()
    }

    /// `cond ? a : b`.
    pub fn select<V: BasicValue<'ctx>>(&self, cond: IntValue<'ctx>, a: V, b: V) -> BasicValueEnum<'ctx> {
        self.b.build_select(cond, a, b, "").built()
    }

    /// Signed minimum and maximum of i64 values.
    pub fn smin(&self, a: IntValue<'ctx>, b: IntValue<'ctx>) -> IntValue<'ctx> {
        self.select(self.icmp(IntPredicate::SLT, a, b), a, b).into_int_value()
    }

    /// Signed maximum of i64 values.
    pub fn smax(&self, a: IntValue<'ctx>, b: IntValue<'ctx>) -> IntValue<'ctx> {
        self.select(self.icmp(IntPredicate::SGT, a, b), a, b).into_int_value()
    }

    /// The declaration of function `name` (an intrinsic, or a function of the module) with
    /// this signature.
    pub fn declare(&self, name: &str, ret: Option<BasicTypeEnum<'ctx>>, params: &[BasicTypeEnum<'ctx>]) -> FunctionValue<'ctx> {
        if let Some(f) = self.module.get_function(name) {
            return f;
        }
        let params: Vec<BasicMetadataTypeEnum> = params.iter().map(|&t| t.into()).collect();
        let ty = match ret {
            Some(r) => r.fn_type(&params, false),
            None => self.cx.void_type().fn_type(&params, false),
        };
        self.module.add_function(name, ty, None)
    }

    /// Calls `name` (declared with the argument types) and returns its result, if any.
    pub fn call(&self, name: &str, ret: Option<BasicTypeEnum<'ctx>>, args: &[BasicValueEnum<'ctx>]) -> Option<BasicValueEnum<'ctx>> {
        let types: Vec<BasicTypeEnum> = args.iter().map(|a| a.get_type()).collect();
        let f = self.declare(name, ret, &types);
        let args: Vec<BasicMetadataValueEnum> = args.iter().map(|&a| a.into()).collect();
        self.b.build_call(f, &args, "").built().try_as_basic_value().basic()
    }

    /// Calls a value-returning intrinsic.
    pub fn intrinsic(&self, name: &str, ret: BasicTypeEnum<'ctx>, args: &[BasicValueEnum<'ctx>]) -> BasicValueEnum<'ctx> {
        self.call(name, Some(ret), args).expect("a value-returning intrinsic returns a value")
    }

    /// A float intrinsic on one float type: `llvm.<name>.f32(args)`.
    pub fn fintr(&self, name: &str, args: &[FloatValue<'ctx>]) -> FloatValue<'ctx> {
        let ty = args[0].get_type();
        let suffix = if ty == self.cx.f64_type() { "f64" } else { "f32" };
        let args: Vec<BasicValueEnum> = args.iter().map(|&a| a.into()).collect();
        self.intrinsic(&format!("llvm.{name}.{suffix}"), ty.into(), &args).into_float_value()
    }

    /// The address of slot `id` of the buffer table (loaded once per function, in the entry
    /// block).
    pub fn buffer(&mut self, id: usize) -> PointerValue<'ctx> {
        if let Some(&p) = self.buffers.get(&id) {
            return p;
        }
        let here = self.b.get_insert_block().expect("positioned");
        let entry = self.entry.expect("begin_function was called");
        match entry.get_terminator() {
            Some(t) => self.b.position_before(&t),
            None => self.b.position_at_end(entry),
        }
        let bufs = self.bufs.expect("begin_function was called");
        let entry_at = match &mut self.local_slots {
            Some(slots) => {
                slots.push(id);
                slots.len() - 1
            }
            None => id,
        };
        let at = self.gep(self.ptr_ty().into(), bufs, self.i64(entry_at as i64));
        let mut p = self.b.build_load(self.ptr_ty(), at, &format!("buf{entry_at}")).built().into_pointer_value();
        if self.buffer_space != 0 {
            let space = self.cx.ptr_type(AddressSpace::from(self.buffer_space));
            p = self.b.build_address_space_cast(p, space, "").built();
        }
        self.b.position_at_end(here);
        self.buffers.insert(id, p);
        p
    }

    /// `&base[index]` for elements of type `ty`.
    pub fn gep(&self, ty: BasicTypeEnum<'ctx>, base: PointerValue<'ctx>, index: IntValue<'ctx>) -> PointerValue<'ctx> {
        // SAFETY: the index stays inside the buffer: the lowering's shapes bound every index
        // and the runtime allocated every buffer at its full size.
        unsafe { self.b.build_in_bounds_gep(ty, base, &[index], "").built() }
    }

    /// `base + bytes`.
    pub fn byte_offset(&self, base: PointerValue<'ctx>, bytes: IntValue<'ctx>) -> PointerValue<'ctx> {
        self.gep(self.cx.i8_type().into(), base, bytes)
    }

    /// The LLVM type a dtype is stored as.
    pub fn storage(&self, d: DType) -> BasicTypeEnum<'ctx> {
        match d {
            DType::F32 => self.cx.f32_type().into(),
            DType::F16 => self.cx.f16_type().into(),
            DType::BF16 => self.cx.bf16_type().into(),
            DType::F64 => self.cx.f64_type().into(),
            DType::I1 | DType::I8 => self.cx.i8_type().into(),
            DType::I16 => self.cx.i16_type().into(),
            DType::I32 => self.cx.i32_type().into(),
            // i48 in 8 bytes, sign-extended (all 8 written, unlike LLVM's own i48 stores).
            DType::I48 | DType::I64 => self.cx.i64_type().into(),
        }
    }

    /// The LLVM type a dtype computes in (its domain).
    pub fn domain(&self, d: DType) -> BasicTypeEnum<'ctx> {
        match d {
            DType::F32 | DType::F16 | DType::BF16 => self.cx.f32_type().into(),
            DType::F64 => self.cx.f64_type().into(),
            DType::I1 => self.cx.bool_type().into(),
            DType::I8 | DType::I16 | DType::I32 | DType::I48 | DType::I64 => self.cx.i64_type().into(),
        }
    }

    /// Loads element `index` of a `d` buffer, converted to its domain.
    pub fn load(&mut self, d: DType, base: PointerValue<'ctx>, index: IntValue<'ctx>) -> BasicValueEnum<'ctx> {
        let ty = self.storage(d);
        let p = self.gep(ty, base, index);
        let v = self.b.build_load(ty, p, "").built();
        self.widen(d, v)
    }

    /// [`Ir::load`] with a known alignment in bytes (a power of two the address is a multiple of).
    pub fn load_aligned(&mut self, d: DType, base: PointerValue<'ctx>, index: IntValue<'ctx>, align: u32) -> BasicValueEnum<'ctx> {
        let ty = self.storage(d);
        let p = self.gep(ty, base, index);
        let v = self.b.build_load(ty, p, "").built();
        v.as_instruction_value().expect("a load is an instruction").set_alignment(align).expect("a power of two");
        self.widen(d, v)
    }

    /// A vector of `ty` at element `at` of `base` (aligned to its elements only).
    pub fn load_vector(&self, ty: VectorType<'ctx>, base: PointerValue<'ctx>, at: IntValue<'ctx>, align: u32) -> VectorValue<'ctx> {
        let p = self.gep(ty.get_element_type(), base, at);
        let v = self.b.build_load(ty, p, "").built();
        v.as_instruction_value().expect("a load").set_alignment(align).expect("a power of two");
        v.into_vector_value()
    }

    /// Stores vector `v` from element `at` of `base` (elements of `v`'s element type).
    pub fn store_vector(&self, v: VectorValue<'ctx>, base: PointerValue<'ctx>, at: IntValue<'ctx>, align: u32) {
        let p = self.gep(v.get_type().get_element_type(), base, at);
        let s = self.b.build_store(p, v).built();
        s.set_alignment(align).expect("a power of two");
    }

    /// [`Ir::load_vector`] of the lanes where `mask` holds, zero in the others, whose elements
    /// are not read (`llvm.masked.load`: the part of a vector past a matrix's last column).
    pub fn load_vector_masked(&self, ty: VectorType<'ctx>, base: PointerValue<'ctx>, at: IntValue<'ctx>, align: u32, mask: VectorValue<'ctx>) -> VectorValue<'ctx> {
        let p = self.gep(ty.get_element_type(), base, at);
        let name = format!("llvm.masked.load.v{}{}.p0", ty.get_size(), Self::element_suffix(ty));
        self.masked_call(&name, Some(ty.into()), &[p.into(), mask.into(), ty.const_zero().into()], (0, align)).expect("a load returns its value").into_vector_value()
    }

    /// Stores the lanes of `v` where `mask` holds from element `at` (`llvm.masked.store`: the
    /// others' elements are not touched).
    pub fn store_vector_masked(&self, v: VectorValue<'ctx>, base: PointerValue<'ctx>, at: IntValue<'ctx>, align: u32, mask: VectorValue<'ctx>) {
        let ty = v.get_type();
        let p = self.gep(ty.get_element_type(), base, at);
        let name = format!("llvm.masked.store.v{}{}.p0", ty.get_size(), Self::element_suffix(ty));
        self.masked_call(&name, None, &[v.into(), p.into(), mask.into()], (1, align));
    }

    /// Calls the masked memory intrinsic `name` (`llvm.masked.load`/`store`/`gather`) on
    /// `args`, its addresses (argument `addresses.0`) aligned to `addresses.1` bytes: LLVM 22's
    /// form, the alignment an attribute of the addresses rather than an argument.
    pub fn masked_call(&self, name: &str, ret: Option<BasicTypeEnum<'ctx>>, args: &[BasicValueEnum<'ctx>], (addresses, align): (u32, u32)) -> Option<BasicValueEnum<'ctx>> {
        let types: Vec<BasicTypeEnum> = args.iter().map(|a| a.get_type()).collect();
        let f = self.declare(name, ret, &types);
        let args: Vec<BasicMetadataValueEnum> = args.iter().map(|&a| a.into()).collect();
        let call = self.b.build_call(f, &args, "").built();
        let attribute = self.cx.create_enum_attribute(inkwell::attributes::Attribute::get_named_enum_kind_id("align"), u64::from(align));
        call.add_attribute(inkwell::attributes::AttributeLoc::Param(addresses), attribute);
        call.try_as_basic_value().basic()
    }

    /// An intrinsic's name suffix for `ty`'s elements (`f32`, `f16`, `bf16`, `i16`, …).
    fn element_suffix(ty: VectorType<'ctx>) -> String {
        match ty.get_element_type() {
            BasicTypeEnum::IntType(t) => format!("i{}", t.get_bit_width()),
            BasicTypeEnum::FloatType(t) => match t.print_to_string().to_string().as_str() {
                "float" => "f32".into(),
                "half" => "f16".into(),
                "bfloat" => "bf16".into(),
                "double" => "f64".into(),
                other => unreachable!("a vector of {other}"),
            },
            t => unreachable!("a vector of {t:?}"),
        }
    }

    /// The lanes `0..count` of `n`: lane `j` holds where `j < count`.
    pub fn first_lanes(&self, n: u32, count: IntValue<'ctx>) -> VectorValue<'ctx> {
        let iota = VectorType::const_vector(&(0..n).map(|j| self.cx.i64_type().const_int(u64::from(j), false)).collect::<Vec<_>>());
        let i64v = self.cx.i64_type().vec_type(n);
        let one = self.b.build_insert_element(i64v.get_poison(), count, self.i64(0), "").built();
        let counts = self.b.build_shuffle_vector(one, i64v.get_poison(), self.cx.i32_type().vec_type(n).const_zero(), "").built();
        self.b.build_int_compare(IntPredicate::SLT, iota, counts, "").built()
    }

    /// `x` in every lane of `ty`.
    pub fn splat(&self, ty: VectorType<'ctx>, x: FloatValue<'ctx>) -> VectorValue<'ctx> {
        let one = self.b.build_insert_element(ty.get_poison(), x, self.i64(0), "").built();
        let zeros = self.cx.i32_type().vec_type(ty.get_size()).const_zero();
        self.b.build_shuffle_vector(one, ty.get_poison(), zeros, "").built()
    }

    /// `lanes` consecutive elements of a float buffer of `d` (f32, f16, bf16) from element
    /// `at`, in their domain (f32 lanes).
    pub fn load_lanes(&self, d: DType, base: PointerValue<'ctx>, at: IntValue<'ctx>, lanes: u32) -> VectorValue<'ctx> {
        let v = self.load_vector(self.storage(d).into_float_type().vec_type(lanes), base, at, d.byte_size() as u32);
        self.f32_lanes(v)
    }

    /// Float lanes (f32, f16, bf16) as f32 lanes (exactly).
    pub fn f32_lanes(&self, v: VectorValue<'ctx>) -> VectorValue<'ctx> {
        let f32v = self.cx.f32_type().vec_type(v.get_type().get_size());
        if v.get_type() == f32v {
            v
        } else if v.get_type().get_element_type() == self.cx.bf16_type().into() {
            self.bf16_to_f32(v.into()).into_vector_value()
        } else {
            self.b.build_float_ext(v, f32v, "").built()
        }
    }

    /// [`Ir::load_lanes`] of the lanes where `mask` holds (zero elsewhere, not read).
    pub fn load_lanes_masked(&self, d: DType, base: PointerValue<'ctx>, at: IntValue<'ctx>, mask: VectorValue<'ctx>) -> VectorValue<'ctx> {
        let ty = self.storage(d).into_float_type().vec_type(mask.get_type().get_size());
        let v = self.load_vector_masked(ty, base, at, d.byte_size() as u32, mask);
        self.f32_lanes(v)
    }

    /// [`Ir::store_lanes`] of the lanes where `mask` holds (the others' elements untouched).
    pub fn store_lanes_masked(&self, d: DType, base: PointerValue<'ctx>, at: IntValue<'ctx>, v: VectorValue<'ctx>, mask: VectorValue<'ctx>) {
        let v = if d == DType::F32 { v } else { self.narrow_lanes(v, d) };
        self.store_vector_masked(v, base, at, d.byte_size() as u32, mask);
    }

    /// Stores f32 lanes `v`, already rounded to `d` (f32, f16 or bf16), as `d` from element
    /// `at`.
    pub fn store_lanes(&self, d: DType, base: PointerValue<'ctx>, at: IntValue<'ctx>, v: VectorValue<'ctx>) {
        let ty = self.storage(d).into_float_type();
        let v = if d == DType::F32 { v } else { self.narrow_lanes(v, d) };
        let p = self.gep(ty.into(), base, at);
        let s = self.b.build_store(p, v).built();
        s.set_alignment(d.byte_size() as u32).expect("a power of two");
    }

    /// A stored value in its domain.
    pub fn widen(&self, d: DType, v: BasicValueEnum<'ctx>) -> BasicValueEnum<'ctx> {
        let b = &self.b;
        match d {
            DType::BF16 => self.bf16_to_f32(v),
            DType::F16 => b.build_float_ext(v.into_float_value(), self.cx.f32_type(), "").built().into(),
            DType::I1 => self.icmp(IntPredicate::NE, v.into_int_value(), self.cx.i8_type().const_zero()).into(),
            DType::I8 | DType::I16 | DType::I32 => b.build_int_s_extend(v.into_int_value(), self.cx.i64_type(), "").built().into(),
            _ => v,
        }
    }

    /// A domain value in its storage type (already rounded to `d`: the narrowing is exact).
    pub fn narrow(&mut self, d: DType, v: BasicValueEnum<'ctx>) -> BasicValueEnum<'ctx> {
        if d.is_low_float() {
            return self.to_low(v.into_float_value(), d).expect("an f32 value narrows without a libcall").into();
        }
        let b = &self.b;
        match d {
            DType::I1 => b.build_int_z_extend(v.into_int_value(), self.cx.i8_type(), "").built().into(),
            DType::I8 | DType::I16 | DType::I32 => b.build_int_truncate(v.into_int_value(), self.storage(d).into_int_type(), "").built().into(),
            _ => v,
        }
    }

    /// Stores a domain value as element `index` of a `d` buffer.
    pub fn store(&mut self, d: DType, base: PointerValue<'ctx>, index: IntValue<'ctx>, v: BasicValueEnum<'ctx>) {
        let ty = self.storage(d);
        let p = self.gep(ty, base, index);
        let s = self.narrow(d, v);
        self.b.build_store(p, s).built();
    }

    /// A variable initialised to `init` (an alloca in the entry block).
    pub fn var(&mut self, init: BasicValueEnum<'ctx>) -> Var<'ctx> {
        let ty = init.get_type();
        let here = self.b.get_insert_block().expect("positioned");
        let entry = self.entry.expect("begin_function was called");
        match entry.get_first_instruction() {
            Some(i) => self.b.position_before(&i),
            None => self.b.position_at_end(entry),
        }
        let ptr = self.b.build_alloca(ty, "").built();
        self.b.position_at_end(here);
        self.b.build_store(ptr, init).built();
        Var { ptr, ty }
    }

    /// The variable's value.
    pub fn get(&self, v: Var<'ctx>) -> BasicValueEnum<'ctx> {
        self.b.build_load(v.ty, v.ptr, "").built()
    }

    /// Assigns the variable.
    pub fn set(&self, v: Var<'ctx>, x: BasicValueEnum<'ctx>) {
        self.b.build_store(v.ptr, x).built();
    }

    /// `for i in (lo..hi).step_by(step) { body(i) }` on i64 (a signed comparison).
    pub fn for_range(&mut self, lo: IntValue<'ctx>, hi: IntValue<'ctx>, step: IntValue<'ctx>, body: impl FnOnce(&mut Self, IntValue<'ctx>)) {
        let iv = self.var(lo.into());
        let f = self.func();
        let (header, body_bb, exit) = (self.cx.append_basic_block(f, "loop"), self.cx.append_basic_block(f, "body"), self.cx.append_basic_block(f, "done"));
        self.b.build_unconditional_branch(header).built();
        self.b.position_at_end(header);
        let i = self.get(iv).into_int_value();
        let more = self.icmp(IntPredicate::SLT, i, hi);
        self.b.build_conditional_branch(more, body_bb, exit).built();
        self.b.position_at_end(body_bb);
        body(self, i);
        let next = self.add(i, step);
        self.set(iv, next.into());
        self.b.build_unconditional_branch(header).built();
        self.b.position_at_end(exit);
    }

    /// `for i in lo..hi` with constant bounds.
    pub fn for_n(&mut self, lo: usize, hi: usize, body: impl FnOnce(&mut Self, IntValue<'ctx>)) {
        if lo < hi {
            let (l, h, one) = (self.i64(lo as i64), self.i64(hi as i64), self.i64(1));
            self.for_range(l, h, one, body);
        }
    }

    /// `if cond { then() }`.
    pub fn if_then(&mut self, cond: IntValue<'ctx>, then: impl FnOnce(&mut Self)) {
        let f = self.func();
        let (t, join) = (self.cx.append_basic_block(f, "then"), self.cx.append_basic_block(f, "join"));
        self.b.build_conditional_branch(cond, t, join).built();
        self.b.position_at_end(t);
        then(self);
        self.b.build_unconditional_branch(join).built();
        self.b.position_at_end(join);
    }

    /// `then` where `cond` holds, else `otherwise`; returns what each returned.
    pub fn if_else<A, B>(&mut self, cond: IntValue<'ctx>, then: impl FnOnce(&mut Self) -> A, otherwise: impl FnOnce(&mut Self) -> B) -> (A, B) {
        let f = self.func();
        let (t, e, join) = (self.cx.append_basic_block(f, "then"), self.cx.append_basic_block(f, "else"), self.cx.append_basic_block(f, "join"));
        self.b.build_conditional_branch(cond, t, e).built();
        self.b.position_at_end(t);
        let a = then(self);
        self.b.build_unconditional_branch(join).built();
        self.b.position_at_end(e);
        let b = otherwise(self);
        self.b.build_unconditional_branch(join).built();
        self.b.position_at_end(join);
        (a, b)
    }

    /// `Σ coord_d · strides_d` for the row-major coordinates of `index` over `dims`. Dimensions
    /// of one element are skipped and neighbours laid out contiguously (`stride_outer = stride
    /// · dim`) taken as one, so that a dense layout costs one multiplication, not a division
    /// and a remainder per dimension (every row of a convolution's residual input did).
    pub fn strided_offset<S: Stride>(&self, index: IntValue<'ctx>, dims: &[usize], strides: &[S]) -> IntValue<'ctx> {
        let merged = merged_dims(dims, strides);
        let mut off = self.i64(0);
        let mut rest = index;
        for d in (0..merged.len()).rev() {
            let (n, k) = merged[d];
            if k != 0 {
                let c = if d == 0 { rest } else { self.remi(rest, n) };
                off = self.add(off, if k == 1 { c } else { self.mul(c, self.i64(k)) });
            }
            if d > 0 {
                rest = self.divi(rest, n);
            }
        }
        off
    }

    /// The module's LLVM IR text.
    pub fn text(&self) -> String {
        self.module.print_to_string().to_string()
    }

    /// Verifies the module (a failure is a bug of the emitter).
    pub fn verify(&self) -> Result<(), String> {
        self.module.verify().map_err(|e| format!("invalid LLVM IR: {}", e.to_string()))
    }
}

/// `dims` and their `strides` (outermost first) without dimensions of one element, neighbours
/// laid out contiguously (`stride_outer = stride · dim`) merged: the same offsets for every
/// index, in fewer coordinates.
fn merged_dims<S: Stride>(dims: &[usize], strides: &[S]) -> Vec<(usize, i64)> {
    let mut merged: Vec<(usize, i64)> = Vec::with_capacity(dims.len());
    for (&n, s) in dims.iter().zip(strides) {
        let k = s.get();
        match merged.last_mut() {
            _ if n == 1 => {}
            Some((m, outer)) if *outer == k * n as i64 => {
                *m *= n;
                *outer = k;
            }
            _ => merged.push((n, k)),
        }
    }
    merged
}

#[cfg(test)]
mod tests {
    use super::merged_dims;

    /// The offset of `index` over `dims` as [`Ir::strided_offset`](super::Ir::strided_offset)
    /// computes it, from a dimension list.
    fn offset(index: usize, dims: &[(usize, i64)]) -> i64 {
        let (mut rest, mut off) = (index, 0);
        for (d, &(n, k)) in dims.iter().enumerate().rev() {
            let c = if d == 0 { rest } else { rest % n };
            off += c as i64 * k;
            rest /= n;
        }
        off
    }

    #[test]
    fn merged_dimensions_give_every_offset_of_the_unmerged_ones() {
        let cases: [(&[usize], &[isize]); 7] = [
            (&[1, 14, 14, 1], &[200704, 14336, 1024, 1]),
            (&[2, 3, 4], &[12, 4, 1]),
            (&[2, 3, 4], &[0, 0, 1]),
            (&[2, 3, 4], &[24, 4, 1]),
            (&[3, 5], &[-5, 1]),
            (&[3, 5], &[-5, -1]),
            (&[1, 1], &[7, 3]),
        ];
        let expect_len = [1, 1, 2, 2, 2, 1, 0];
        for ((dims, strides), len) in cases.iter().zip(expect_len) {
            let merged = merged_dims(dims, strides);
            assert_eq!(merged.len(), len, "{dims:?} {strides:?} -> {merged:?}");
            let plain: Vec<(usize, i64)> = dims.iter().zip(strides.iter()).map(|(&n, &k)| (n, k as i64)).collect();
            for i in 0..dims.iter().product::<usize>() {
                assert_eq!(offset(i, &merged), offset(i, &plain), "index {i} of {dims:?} {strides:?}");
            }
        }
    }
}
