//! The emitter: a thin layer over Cranelift's `FunctionBuilder` with the pieces every kernel
//! family uses: counted loops, typed loads and stores that convert to and from the compute
//! domain, the software fp16/bf16 conversions (scalar and four lanes at a time), and the
//! elementwise ops of the numeric contract.
//!
//! Compute domains: f32, f16 and bf16 values compute in f32 (`F32`, or `F32X4` four lanes at a
//! time); f64 in `F64`; i8/i32/i64 in `I64` (wrapped to their width after each op); i1 in `I8`
//! holding 0 or 1.

use f16c_core::abi::{CType, Libcall};
use crate::lower::{EwKind, EwOp};
use cranelift_codegen::ir::condcodes::{FloatCC, IntCC};
use cranelift_codegen::ir::types::{F32, F32X4, F64, I32, I64, I64X2, I8};
use cranelift_codegen::ir::{AbiParam, BlockArg, InstBuilder, MemFlagsData, SigRef, Signature, Type, Value};
use cranelift_codegen::isa::CallConv;
use cranelift_frontend::FunctionBuilder;
use f16c_dialect::{BinaryOp, DType, UnaryOp};
use std::collections::{HashMap, HashSet};

/// Memory accesses of kernels: buffers never alias what they write, never trap (the runtime
/// checked every size), little-endian.
pub fn mem() -> MemFlagsData {
    MemFlagsData::trusted()
}

/// Vector bitcasts need an explicit lane order.
pub(super) fn lanes() -> MemFlagsData {
    MemFlagsData::new().with_endianness(cranelift_codegen::ir::Endianness::Little)
}

/// The calling convention of every generated function and of the libcalls it calls: x86-64
/// System V, the C ABI of the runtime's `extern "C"` kernels and libcalls on the Linux hosts
/// that load the artifacts (the one place it is decided).
pub const CALL_CONV: CallConv = CallConv::SystemV;

/// The Cranelift signature of a libcall, from its C types ([`f16c_core::abi`]).
pub fn libcall_signature(lc: Libcall) -> Signature {
    let ty = |c: CType| match c {
        CType::F32 => F32,
        CType::F64 => F64,
        CType::Ptr | CType::U64 => I64,
    };
    let (params, ret) = lc.c_types();
    let mut s = Signature::new(CALL_CONV);
    s.params.extend(params.iter().map(|&c| AbiParam::new(ty(c))));
    s.returns.push(AbiParam::new(ty(ret)));
    s
}

/// The compute domain of a dtype.
pub fn domain(d: DType) -> Type {
    match d {
        DType::F32 | DType::F16 | DType::BF16 => F32,
        DType::F64 => F64,
        DType::I1 => I8,
        DType::I8 | DType::I16 | DType::I32 | DType::I48 | DType::I64 => I64,
    }
}

/// A kernel function being built, with its parameters.
pub struct Fx<'a> {
    /// The builder.
    pub b: FunctionBuilder<'a>,
    /// `*const *mut u8`: the buffer table.
    pub bufs: Value,
    /// First work item of this call.
    pub begin: Value,
    /// One past the last work item.
    pub end: Value,
    /// This thread's scratch memory.
    pub scratch: Value,
    /// `*const fn`: the runtime's libcall table.
    pub rt: Value,
    sigs: HashMap<Libcall, SigRef>,
    buffers: HashMap<usize, Value>,
    /// f32 values known to be f16 values (widened, or rounded): narrowing them needs no
    /// rounding, rounding them is the identity.
    f16_grid: HashSet<Value>,
    /// What is known of the NaNs float values (scalars or lanes) may hold: none (a non-NaN
    /// constant), or only the canonical one (a `maximum`'s result). A `maximum`/`minimum`
    /// with a NaN-free second operand then takes fewer instructions (`tosa_pick`).
    nans: HashMap<Value, Nans>,
}

/// What a float value's NaNs can be ([`Fx`]'s `nans`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Nans {
    /// It holds no NaN.
    None,
    /// Any NaN it holds is the canonical quiet NaN, the one TOSA's ops produce here.
    Canonical,
}

/// What emitting something that can fail returns: the reason, for the kernel's error.
pub type Emitted<T = ()> = Result<T, String>;

impl<'a> Fx<'a> {
    /// Starts a kernel function: `(bufs, begin, end, scratch, rt) -> i32` in the entry block.
    pub fn new(mut b: FunctionBuilder<'a>) -> Self {
        let entry = b.create_block();
        b.append_block_params_for_function_params(entry);
        b.switch_to_block(entry);
        let p = b.block_params(entry).to_vec();
        Fx { b, bufs: p[0], begin: p[1], end: p[2], scratch: p[3], rt: p[4], sigs: HashMap::new(), buffers: HashMap::new(), f16_grid: HashSet::new(), nans: HashMap::new() }
    }

    /// The kernel signature ([`f16c_core::abi::KernelFn`]).
    pub fn signature() -> Signature {
        let mut s = Signature::new(CALL_CONV);
        s.params.extend([I64; 5].map(AbiParam::new));
        s.returns.push(AbiParam::new(I32));
        s
    }

    /// Returns `code` (0: success) and seals everything.
    pub fn finish(mut self, code: i32) {
        let c = self.b.ins().iconst(I32, code as i64);
        self.b.ins().return_(&[c]);
        self.b.seal_all_blocks();
        self.b.finalize(super::frontend_config());
    }

    /// Records that `v` (f32 or f32x4) holds f16 values.
    pub fn mark_f16_grid(&mut self, v: Value) {
        self.f16_grid.insert(v);
    }

    /// Whether `v` is known to hold f16 values.
    pub fn on_f16_grid(&self, v: Value) -> bool {
        self.f16_grid.contains(&v)
    }

    /// An i64 constant.
    pub fn i(&mut self, v: i64) -> Value {
        self.b.ins().iconst(I64, v)
    }

    /// A constant of integer type `ty` (splatted for vectors).
    pub fn k(&mut self, ty: Type, v: i64) -> Value {
        if ty.is_vector() {
            // From the constant pool, as [`Fx::f`]'s lanes.
            let lane = ty.lane_type().bytes() as usize;
            let bytes: Vec<u8> = (0..ty.lane_count()).flat_map(|_| v.to_le_bytes()[..lane].to_vec()).collect();
            let c = self.b.func.dfg.constants.insert(bytes.into());
            self.b.ins().vconst(ty, c)
        } else {
            self.b.ins().iconst(ty, v)
        }
    }

    /// An f32 constant (splatted for `F32X4`).
    pub fn f(&mut self, ty: Type, v: f32) -> Value {
        // Lanes come from the constant pool (x86 folds the load into the instruction that
        // uses them) rather than a scalar splatted in the loop.
        let s = if ty.is_vector() {
            let bytes: Vec<u8> = (0..ty.lane_count()).flat_map(|_| v.to_le_bytes()).collect();
            let c = self.b.func.dfg.constants.insert(bytes.into());
            self.b.ins().vconst(ty, c)
        } else {
            self.b.ins().f32const(v)
        };
        if !v.is_nan() {
            self.nans.insert(s, Nans::None);
        }
        s
    }

    /// `cond ? a : b` for a scalar `i8` condition or a lane mask.
    pub fn sel(&mut self, cond: Value, a: Value, b: Value) -> Value {
        if self.b.func.dfg.value_type(a).is_vector() {
            self.b.ins().bitselect(cond, a, b)
        } else {
            self.b.ins().select(cond, a, b)
        }
    }

    /// TOSA's maximum of floats (scalars or lanes): NaN if either is NaN, else `a >= b ? a : b`,
    /// so of equal values the first, which decides the sign of a zero (Cranelift's `fmax`
    /// ranks −0 below +0).
    pub fn tosa_max(&mut self, a: Value, b: Value) -> Value {
        self.tosa_pick(FloatCC::GreaterThanOrEqual, a, b)
    }

    /// TOSA's minimum: NaN if either is NaN, else `a <= b ? a : b`.
    pub fn tosa_min(&mut self, a: Value, b: Value) -> Value {
        self.tosa_pick(FloatCC::LessThanOrEqual, a, b)
    }

    fn tosa_pick(&mut self, cc: FloatCC, a: Value, b: Value) -> Value {
        if self.nans.get(&b) != Some(&Nans::None) {
            let r = self.pick_where(cc, a, b, a, b);
            self.nans.insert(r, Nans::Canonical);
            return r;
        }
        // `b` holds no NaN (a ReLU6's bound): `a < b ? b : a` for the maximum, `b < a ? b :
        // a` for the minimum, which are the same as `a cc b ? a : b` on numbers (of equal
        // values both give `a`) and give `a` where it is NaN. On lanes this is x86's
        // `maxps b, a` / `minps b, a` (Cranelift matches the bitselect of a bitcast compare).
        // Only a NaN `a` that may not be the canonical one still needs replacing by it.
        let ty = self.b.func.dfg.value_type(a);
        let (x, y) = if cc == FloatCC::GreaterThanOrEqual { (a, b) } else { (b, a) };
        let less = self.b.ins().fcmp(FloatCC::LessThan, x, y);
        let r = if ty.is_vector() {
            let mask = self.b.ins().bitcast(ty, lanes(), less);
            self.b.ins().bitselect(mask, b, a)
        } else {
            self.b.ins().select(less, b, a)
        };
        self.nan_of(a, r)
    }

    /// `r`, which is NaN where `x` is and nowhere else, with the canonical NaN where `x` is NaN
    /// (nothing to do where `x` holds none or only that one).
    pub fn nan_of(&mut self, x: Value, r: Value) -> Value {
        let known = self.nans.get(&x).copied();
        let r = match known {
            Some(_) => r,
            None => {
                let ty = self.b.func.dfg.value_type(x);
                let nan = self.b.ins().fcmp(FloatCC::Unordered, x, x);
                let q = self.canonical_nan(ty);
                self.sel(nan, q, r)
            }
        };
        self.nans.insert(r, known.unwrap_or(Nans::Canonical));
        r
    }

    /// Records that `r` is NaN where `x` is, with the same bits.
    pub fn same_nans(&mut self, x: Value, r: Value) {
        if let Some(&n) = self.nans.get(&x) {
            self.nans.insert(r, n);
        }
    }

    /// The canonical quiet NaN in `ty` (f32 or f64, scalar or lanes).
    fn canonical_nan(&mut self, ty: Type) -> Value {
        let q = if ty.lane_type() == F64 { self.b.ins().f64const(f64::NAN) } else { self.b.ins().f32const(f32::NAN) };
        if ty.is_vector() {
            self.b.ins().splat(ty, q)
        } else {
            q
        }
    }

    /// NaN if `x` or `t` is NaN, else `x cc t ? a : b`.
    pub fn pick_where(&mut self, cc: FloatCC, x: Value, t: Value, a: Value, b: Value) -> Value {
        let ty = self.b.func.dfg.value_type(a);
        let keep = self.b.ins().fcmp(cc, x, t);
        let nan = self.b.ins().fcmp(FloatCC::Unordered, x, t);
        let r = self.sel(keep, a, b);
        let q = self.canonical_nan(ty);
        self.sel(nan, q, r)
    }

    /// The base address of buffer `id` (loaded once, in the entry block).
    pub fn buffer(&mut self, id: usize) -> Value {
        if let Some(&v) = self.buffers.get(&id) {
            return v;
        }
        let v = self.b.ins().load(I64, mem().with_readonly(), self.bufs, (id * 8) as i32);
        self.buffers.insert(id, v);
        v
    }

    /// `base + index * size`.
    pub fn addr(&mut self, base: Value, index: Value, size: usize) -> Value {
        let off = if size == 1 { index } else { self.b.ins().imul_imm_s(index, size as i64) };
        self.b.ins().iadd(base, off)
    }

    /// A counted loop `for iv in (start..end).step_by(step)` carrying `carried` values; the body
    /// returns their next values, and the loop returns their final values.
    pub fn for_range(
        &mut self,
        start: Value,
        end: Value,
        step: i64,
        carried: &[Value],
        body: impl FnOnce(&mut Self, Value, &[Value]) -> Vec<Value>,
    ) -> Vec<Value> {
        let header = self.b.create_block();
        let body_block = self.b.create_block();
        let exit = self.b.create_block();
        self.b.append_block_param(header, I64);
        let types: Vec<Type> = carried.iter().map(|&v| self.b.func.dfg.value_type(v)).collect();
        for &t in &types {
            self.b.append_block_param(header, t);
            self.b.append_block_param(exit, t);
        }
        let args: Vec<BlockArg> = std::iter::once(start).chain(carried.iter().copied()).map(BlockArg::Value).collect();
        self.b.ins().jump(header, &args);
        self.b.switch_to_block(header);
        let params = self.b.block_params(header).to_vec();
        let (iv, vals) = (params[0], params[1..].to_vec());
        let more = self.b.ins().icmp(IntCC::SignedLessThan, iv, end);
        let exit_args: Vec<BlockArg> = vals.iter().copied().map(BlockArg::Value).collect();
        self.b.ins().brif(more, body_block, &[], exit, &exit_args);
        self.b.switch_to_block(body_block);
        let next = body(self, iv, &vals);
        let step_v = self.b.ins().iadd_imm_s(iv, step);
        let back: Vec<BlockArg> = std::iter::once(step_v).chain(next).map(BlockArg::Value).collect();
        self.b.ins().jump(header, &back);
        self.b.switch_to_block(exit);
        self.b.block_params(exit).to_vec()
    }

    /// A counted loop `for iv in (start..end).step_by(step)` that carries no values.
    pub fn each(&mut self, start: Value, end: Value, step: i64, body: impl FnOnce(&mut Self, Value)) {
        self.for_range(start, end, step, &[], |fx, iv, _| {
            body(fx, iv);
            Vec::new()
        });
    }

    /// [`Fx::each`] with constant bounds.
    pub fn each_n(&mut self, start: i64, end: i64, step: i64, body: impl FnOnce(&mut Self, Value)) {
        let (s, e) = (self.i(start), self.i(end));
        self.each(s, e, step, body);
    }

    /// The loop over this call's work items `begin..end`.
    pub fn for_items(&mut self, body: impl FnOnce(&mut Self, Value)) {
        let (begin, end) = (self.begin, self.end);
        self.each(begin, end, 1, body);
    }

    /// A loop with constant bounds.
    pub fn for_n(&mut self, start: i64, end: i64, step: i64, carried: &[Value], body: impl FnOnce(&mut Self, Value, &[Value]) -> Vec<Value>) -> Vec<Value> {
        let (s, e) = (self.i(start), self.i(end));
        self.for_range(s, e, step, carried, body)
    }

    /// Runs `then` when `cond` (an `i8`) is non-zero.
    pub fn if_then(&mut self, cond: Value, then: impl FnOnce(&mut Self)) {
        let t = self.b.create_block();
        let join = self.b.create_block();
        self.b.ins().brif(cond, t, &[], join, &[]);
        self.b.switch_to_block(t);
        then(self);
        self.b.ins().jump(join, &[]);
        self.b.switch_to_block(join);
    }

    /// `cond ? then : otherwise`, each branch producing values of the same types.
    pub fn if_else(&mut self, cond: Value, then: impl FnOnce(&mut Self) -> Vec<Value>, otherwise: impl FnOnce(&mut Self) -> Vec<Value>) -> Vec<Value> {
        let (t, e, join) = (self.b.create_block(), self.b.create_block(), self.b.create_block());
        self.b.ins().brif(cond, t, &[], e, &[]);
        self.b.switch_to_block(t);
        let a = then(self);
        for &v in &a {
            let ty = self.b.func.dfg.value_type(v);
            self.b.append_block_param(join, ty);
        }
        let args: Vec<BlockArg> = a.iter().copied().map(BlockArg::Value).collect();
        self.b.ins().jump(join, &args);
        self.b.switch_to_block(e);
        let bvals = otherwise(self);
        let args: Vec<BlockArg> = bvals.iter().copied().map(BlockArg::Value).collect();
        self.b.ins().jump(join, &args);
        self.b.switch_to_block(join);
        self.b.block_params(join).to_vec()
    }

    /// `then` when `cond` (an `i8`) is non-zero, else `otherwise`: branches that produce no
    /// values.
    pub fn if_or(&mut self, cond: Value, then: impl FnOnce(&mut Self), otherwise: impl FnOnce(&mut Self)) {
        self.if_else(
            cond,
            |fx| {
                then(fx);
                Vec::new()
            },
            |fx| {
                otherwise(fx);
                Vec::new()
            },
        );
    }

    /// [`Fx::for_range`] with a body that can fail: the first error is returned (the loop is
    /// still closed, its carried values passed on unchanged, so the function stays well formed).
    pub fn try_for_range(
        &mut self,
        start: Value,
        end: Value,
        step: i64,
        carried: &[Value],
        body: impl FnOnce(&mut Self, Value, &[Value]) -> Emitted<Vec<Value>>,
    ) -> Emitted<Vec<Value>> {
        let mut failed = None;
        let out = self.for_range(start, end, step, carried, |fx, iv, vals| {
            body(fx, iv, vals).unwrap_or_else(|e| {
                failed = Some(e);
                vals.to_vec()
            })
        });
        failed.map_or(Ok(out), Err)
    }

    /// [`Fx::for_n`] with a body that can fail.
    pub fn try_for_n(&mut self, start: i64, end: i64, step: i64, carried: &[Value], body: impl FnOnce(&mut Self, Value, &[Value]) -> Emitted<Vec<Value>>) -> Emitted<Vec<Value>> {
        let (s, e) = (self.i(start), self.i(end));
        self.try_for_range(s, e, step, carried, body)
    }

    /// [`Fx::each`] with a body that can fail.
    pub fn try_each(&mut self, start: Value, end: Value, step: i64, body: impl FnOnce(&mut Self, Value) -> Emitted) -> Emitted {
        self.try_for_range(start, end, step, &[], |fx, iv, _| body(fx, iv).map(|()| Vec::new())).map(|_| ())
    }

    /// [`Fx::each_n`] with a body that can fail.
    pub fn try_each_n(&mut self, start: i64, end: i64, step: i64, body: impl FnOnce(&mut Self, Value) -> Emitted) -> Emitted {
        let (s, e) = (self.i(start), self.i(end));
        self.try_each(s, e, step, body)
    }

    /// [`Fx::for_items`] with a body that can fail.
    pub fn try_for_items(&mut self, body: impl FnOnce(&mut Self, Value) -> Emitted) -> Emitted {
        let (begin, end) = (self.begin, self.end);
        self.try_each(begin, end, 1, body)
    }

    /// [`Fx::if_then`] with a branch that can fail.
    pub fn try_if_then(&mut self, cond: Value, then: impl FnOnce(&mut Self) -> Emitted) -> Emitted {
        let mut result = Ok(());
        self.if_then(cond, |fx| result = then(fx));
        result
    }

    /// [`Fx::if_else`] with branches that produce no values and can fail.
    pub fn try_if_else(&mut self, cond: Value, then: impl FnOnce(&mut Self) -> Emitted, otherwise: impl FnOnce(&mut Self) -> Emitted) -> Emitted {
        let (mut a, mut b) = (Ok(()), Ok(()));
        self.if_else(
            cond,
            |fx| {
                a = then(fx);
                Vec::new()
            },
            |fx| {
                b = otherwise(fx);
                Vec::new()
            },
        );
        a.and(b)
    }

    /// Returns `code` from the function when `cond` holds (an error exit).
    pub fn fail_if(&mut self, cond: Value, code: i32) {
        self.if_then(cond, |fx| {
            let c = fx.b.ins().iconst(I32, code as i64);
            fx.b.ins().return_(&[c]);
            // Code after a return is unreachable; give the builder a fresh block to fill.
            let dead = fx.b.create_block();
            fx.b.switch_to_block(dead);
        });
    }

    /// Rounds an f32-domain value to the precision of `d` (f16, bf16), leaving it in f32.
    pub fn round_f32(&mut self, d: DType, v: Value) -> Value {
        match d {
            DType::F16 => self.round_f16_in_f32(v),
            DType::BF16 => self.round_bf16_in_f32(v),
            _ => v,
        }
    }

    /// Rounds or wraps a domain value to its dtype (f16/bf16 precision, integer width).
    pub fn round_to(&mut self, d: DType, v: Value) -> Value {
        match d {
            DType::F16 | DType::BF16 => self.round_f32(d, v),
            DType::I8 | DType::I16 | DType::I32 => {
                let t = Type::int(d.bit_width() as u16).expect("8, 16 or 32 bits");
                let n = self.b.ins().ireduce(t, v);
                self.b.ins().sextend(I64, n)
            }
            DType::I48 => {
                let high = self.b.ins().ishl_imm_u(v, 16);
                self.b.ins().sshr_imm_u(high, 16)
            }
            _ => v,
        }
    }

    // -----------------------------------------------------------------------------------------
    // Loads and stores
    // -----------------------------------------------------------------------------------------

    /// Loads element `index` of a `d` buffer into its compute domain.
    pub fn load(&mut self, d: DType, base: Value, index: Value) -> Value {
        let p = self.addr(base, index, d.byte_size());
        self.load_at(d, p, 0)
    }

    /// Loads the element at address `p + offset` into its compute domain.
    pub fn load_at(&mut self, d: DType, p: Value, offset: i32) -> Value {
        let m = mem();
        match d {
            DType::F32 => self.b.ins().load(F32, m, p, offset),
            DType::F64 => self.b.ins().load(F64, m, p, offset),
            DType::F16 => {
                let h = self.b.ins().uload16(I32, m, p, offset);
                self.f16_to_f32(h)
            }
            DType::BF16 => {
                let h = self.b.ins().uload16(I32, m, p, offset);
                self.bf16_to_f32(h)
            }
            DType::I1 => self.b.ins().load(I8, m, p, offset),
            DType::I8 => self.b.ins().sload8(I64, m, p, offset),
            DType::I16 => self.b.ins().sload16(I64, m, p, offset),
            DType::I32 => self.b.ins().sload32(m, p, offset),
            DType::I48 | DType::I64 => self.b.ins().load(I64, m, p, offset),
        }
    }

    /// Stores a domain value as element `index` of a `d` buffer.
    pub fn store(&mut self, d: DType, base: Value, index: Value, v: Value) {
        let p = self.addr(base, index, d.byte_size());
        self.store_at(d, p, 0, v);
    }

    /// Stores a domain value at `p + offset`.
    pub fn store_at(&mut self, d: DType, p: Value, offset: i32, v: Value) {
        let m = mem();
        match d {
            DType::F32 | DType::F64 | DType::I1 | DType::I48 | DType::I64 => {
                self.b.ins().store(m, v, p, offset);
            }
            DType::I16 => {
                self.b.ins().istore16(m, v, p, offset);
            }
            DType::F16 => {
                let h = self.f32_to_f16(v);
                self.b.ins().istore16(m, h, p, offset);
            }
            DType::BF16 => {
                let h = self.f32_to_bf16(v);
                self.b.ins().istore16(m, h, p, offset);
            }
            DType::I8 => {
                self.b.ins().istore8(m, v, p, offset);
            }
            DType::I32 => {
                self.b.ins().istore32(m, v, p, offset);
            }
        }
    }

    /// Loads four consecutive f32/f16/bf16 elements at `p + offset` as `F32X4`.
    pub fn load4_at(&mut self, d: DType, p: Value, offset: i32) -> Value {
        let m = mem();
        match d {
            DType::F32 => self.b.ins().load(F32X4, m, p, offset),
            DType::F16 => {
                let h = self.b.ins().uload16x4(m, p, offset);
                self.f16_to_f32(h)
            }
            DType::BF16 => {
                let h = self.b.ins().uload16x4(m, p, offset);
                self.bf16_to_f32(h)
            }
            other => unreachable!("{other} has no four-lane load"),
        }
    }

    /// The 4×4 transpose of four `F32X4` rows (as `I8X16`: lane `j` of result `i` is lane `i`
    /// of row `j`), in eight of x86's interleaves: `punpck{l,h}dq`, then `punpck{l,h}qdq`.
    pub fn transpose4(&mut self, rows: [Value; 4]) -> [Value; 4] {
        use cranelift_codegen::ir::{types::I8X16, ConstantData};
        let r = rows.map(|v| self.b.ins().bitcast(I8X16, lanes(), v));
        // A shuffle taking four-byte lanes `pick` of (a ++ b).
        let pick = |fx: &mut Self, a: Value, b: Value, pick: [u8; 4]| {
            let bytes: Vec<u8> = pick.iter().flat_map(|&l| (0..4).map(move |i| l * 4 + i)).collect();
            let mask = fx.b.func.dfg.immediates.push(ConstantData::from(bytes));
            fx.b.ins().shuffle(a, b, mask)
        };
        let (low, high, low2, high2) = ([0, 4, 1, 5], [2, 6, 3, 7], [0, 1, 4, 5], [2, 3, 6, 7]);
        let t0 = pick(self, r[0], r[1], low);
        let t1 = pick(self, r[2], r[3], low);
        let t2 = pick(self, r[0], r[1], high);
        let t3 = pick(self, r[2], r[3], high);
        [pick(self, t0, t1, low2), pick(self, t0, t1, high2), pick(self, t2, t3, low2), pick(self, t2, t3, high2)]
    }

    /// Loads four consecutive elements starting at `index`.
    pub fn load4(&mut self, d: DType, base: Value, index: Value) -> Value {
        let p = self.addr(base, index, d.byte_size());
        self.load4_at(d, p, 0)
    }

    /// [`Fx::load4`], for values the compiler has checked for inf and NaN (a constant): when
    /// `finite`, an f16 one widens in three instructions (`f16_to_f32_finite`), a bf16 one
    /// without the NaN check.
    pub fn load4_checked(&mut self, d: DType, base: Value, index: Value, finite: bool) -> Value {
        let p = self.addr(base, index, d.byte_size());
        self.load4_checked_at(d, p, 0, finite)
    }

    /// [`Fx::load4_checked`] at address `p + offset`.
    pub fn load4_checked_at(&mut self, d: DType, p: Value, offset: i32, finite: bool) -> Value {
        match d {
            DType::F16 if finite => {
                let h = self.b.ins().sload16x4(mem(), p, offset);
                self.f16_to_f32_finite(h)
            }
            DType::BF16 if finite => {
                let h = self.b.ins().uload16x4(mem(), p, offset);
                let x = self.b.ins().ishl_imm_s(h, 16);
                self.float_of(x)
            }
            _ => self.load4_at(d, p, offset),
        }
    }

    /// Stores an `F32X4` as four consecutive `d` elements at `p + offset` (rounding once).
    pub fn store4_at(&mut self, d: DType, p: Value, offset: i32, v: Value) {
        let m = mem();
        match d {
            DType::F32 => {
                self.b.ins().store(m, v, p, offset);
            }
            DType::F16 | DType::BF16 => {
                let h = if d == DType::F16 { self.f32_to_f16(v) } else { self.f32_to_bf16(v) };
                let packed = self.b.ins().unarrow(h, h);
                let q = self.b.ins().bitcast(I64X2, lanes(), packed);
                let low = self.b.ins().extractlane(q, 0);
                self.b.ins().store(m, low, p, offset);
            }
            other => unreachable!("{other} has no four-lane store"),
        }
    }

    /// Stores four consecutive elements starting at `index`.
    pub fn store4(&mut self, d: DType, base: Value, index: Value, v: Value) {
        let p = self.addr(base, index, d.byte_size());
        self.store4_at(d, p, 0, v);
    }

    // -----------------------------------------------------------------------------------------
    // Libcalls: transcendental functions come from the runtime's table, so they are the very
    // functions the reference interpreter calls (bit-identical results).
    // -----------------------------------------------------------------------------------------

    /// Calls libcall `lc` on scalar arguments.
    pub fn libcall(&mut self, lc: Libcall, args: &[Value]) -> Value {
        let f = self.libcall_entry(lc);
        self.libcall_at(lc, f, args)
    }

    /// `lc`'s entry in the `rt` table (null for an optional libcall the runtime lacks here).
    pub fn libcall_entry(&mut self, lc: Libcall) -> Value {
        self.b.ins().load(I64, mem().with_readonly(), self.rt, lc.table_offset() as i32)
    }

    /// Calls `f`, the entry of `lc` ([`Fx::libcall_entry`]).
    pub fn libcall_at(&mut self, lc: Libcall, f: Value, args: &[Value]) -> Value {
        let sig = match self.sigs.get(&lc) {
            Some(&s) => s,
            None => {
                let s = self.b.import_signature(libcall_signature(lc));
                self.sigs.insert(lc, s);
                s
            }
        };
        let call = self.b.ins().call_indirect(sig, f, args);
        self.b.inst_results(call)[0]
    }

    /// Applies a scalar libcall to every lane of `F32X4` arguments (or to scalars).
    fn libcall_lanes(&mut self, lc: Libcall, args: &[Value]) -> Value {
        if !self.b.func.dfg.value_type(args[0]).is_vector() {
            return self.libcall(lc, args);
        }
        let mut out = self.f(F32X4, 0.0);
        for lane in 0..4u8 {
            let a: Vec<Value> = args.iter().map(|&v| self.b.ins().extractlane(v, lane)).collect();
            let r = self.libcall(lc, &a);
            out = self.b.ins().insertlane(out, r, lane);
        }
        out
    }

    // -----------------------------------------------------------------------------------------
    // Elementwise ops
    // -----------------------------------------------------------------------------------------

    /// Computes one elementwise op on domain values (`F32X4` lanes when vectorised), rounding
    /// the result once to `op.dtype`.
    pub fn ew(&mut self, op: &EwOp, args: &[Value], arg_types: &[DType]) -> Result<Value, String> {
        let r = self.ew_unrounded(op, args, arg_types)?;
        Ok(self.round_result(op, args, arg_types, r))
    }

    /// `op` computed in its domain, before [`Fx::ew`] rounds it to `op.dtype`.
    pub fn ew_unrounded(&mut self, op: &EwOp, args: &[Value], arg_types: &[DType]) -> Result<Value, String> {
        let in_dt = arg_types.first().copied().unwrap_or(op.dtype);
        Ok(match op.kind {
            EwKind::Cast => self.convert(in_dt, op.dtype, args[0])?,
            EwKind::Select => self.sel_bool(args[0], args[1], args[2]),
            EwKind::Clamp { min, max } => self.clamp(in_dt, args[0], min, max),
            EwKind::Unary(u) => self.unary(u, in_dt, args[0], op.zp)?,
            EwKind::Binary(bop) => self.binary(bop, in_dt, args[0], args[1], op.shift)?,
            EwKind::Rescale(r) => self.rescale(&r, in_dt, op.dtype, args, op.zp),
        })
    }

    /// `op`'s result `r` ([`Fx::ew_unrounded`]) rounded to `op.dtype`.
    pub fn round_result(&mut self, op: &EwOp, args: &[Value], arg_types: &[DType], r: Value) -> Value {
        if Self::ew_rounds(op, arg_types) {
            return self.round_to(op.dtype, r);
        }
        let data_args = if op.kind == EwKind::Select { &args[1..] } else { args };
        if op.dtype == DType::F16 && data_args.iter().all(|&a| self.on_f16_grid(a)) {
            self.mark_f16_grid(r);
        }
        r
    }

    /// Whether [`Fx::ew`] rounds `op`'s result. An op that returns one of its operands, or one
    /// with its sign changed, returns a value of its type already when every operand has that
    /// type: rounding would give the same bits (a NaN among f16 values keeps its f16 payload,
    /// and the default NaN is one), so the fp16 batch norm + ReLU6 epilogue rounds four times
    /// instead of six.
    pub fn ew_rounds(op: &EwOp, arg_types: &[DType]) -> bool {
        let exact = matches!(
            op.kind,
            EwKind::Binary(BinaryOp::Maximum | BinaryOp::Minimum) | EwKind::Select | EwKind::Unary(UnaryOp::Abs | UnaryOp::Negate)
        );
        let data = if op.kind == EwKind::Select { &arg_types[1..] } else { arg_types };
        !(exact && op.dtype.is_float() && data.iter().all(|&t| t == op.dtype))
    }

    /// `semantics::rescale_value` on i64 domain values `[x, multiplier, shift]`.
    fn rescale(&mut self, r: &f16c_dialect::RescaleAttrs, din: DType, dout: DType, args: &[Value], (in_zp, out_zp): (i64, i64)) -> Value {
        use f16c_dialect::semantics::{rescale_input_zp, rescale_output};
        let (x, m, s) = (args[0], args[1], args[2]);
        let x = if r.input_unsigned { self.low_bits(x, din) } else { x };
        let v = self.b.ins().iadd_imm_s(x, -rescale_input_zp(r, din, in_zp));
        let (two, max) = (self.i(2), self.i(62));
        let s = self.b.ins().smax(s, two);
        let s = self.b.ins().smin(s, max);
        let one = self.i(1);
        let s1 = self.b.ins().iadd_imm_s(s, -1);
        let mut round = self.b.ins().ishl(one, s1);
        if r.rounding == f16c_dialect::Rounding::Double {
            // Above shift 31, 2^30 more toward the sign of v.
            let big = self.b.ins().icmp_imm_s(IntCC::SignedGreaterThan, s, 31);
            let pos = self.b.ins().icmp_imm_s(IntCC::SignedGreaterThanOrEqual, v, 0);
            let (up, down, zero) = (self.i(1 << 30), self.i(-(1 << 30)), self.i(0));
            let extra = self.b.ins().select(pos, up, down);
            let extra = self.b.ins().select(big, extra, zero);
            round = self.b.ins().iadd(round, extra);
        }
        let p = self.b.ins().imul(v, m);
        let p = self.b.ins().iadd(p, round);
        let p = self.b.ins().sshr(p, s);
        // To i32, as the specification's result is.
        let p = self.b.ins().ireduce(I32, p);
        let p = self.b.ins().sextend(I64, p);
        let (lo, hi, zp) = rescale_output(r, dout, out_zp);
        let p = self.b.ins().iadd_imm_s(p, zp);
        let (lo, hi) = (self.i(lo), self.i(hi));
        let p = self.b.ins().smax(p, lo);
        self.b.ins().smin(p, hi)
    }

    fn sel_bool(&mut self, p: Value, a: Value, b: Value) -> Value {
        self.b.ins().select(p, a, b)
    }

    fn clamp(&mut self, d: DType, x: Value, min: f64, max: f64) -> Value {
        let ty = self.b.func.dfg.value_type(x);
        match domain(d) {
            F32 => {
                // An f16 value clamped between bounds f16 holds is an f16 value: rounding it
                // is the identity. A bound past f16's range rounds to ±inf, and for f16 values
                // clamping at it is clamping at ±inf (a ReLU's `max_val = 3.4e38`).
                let grid = d == DType::F16 && self.on_f16_grid(x);
                let bound = |v: f64| {
                    let v = v as f32;
                    if grid && v.abs() >= super::softfloat::F16_OVERFLOW { v.signum() * f32::INFINITY } else { v }
                };
                let (min, max) = (bound(min), bound(max));
                let (lo, hi) = (self.f(ty, min), self.f(ty, max));
                let y = self.tosa_max(x, lo);
                let r = self.tosa_min(y, hi);
                let held = |v: f32| half::f16::from_f32(v).to_f32().to_bits() == v.to_bits();
                if grid && held(min) && held(max) {
                    self.mark_f16_grid(r);
                }
                r
            }
            F64 => {
                let (lo, hi) = (self.b.ins().f64const(min), self.b.ins().f64const(max));
                let y = self.tosa_max(x, lo);
                self.tosa_min(y, hi)
            }
            I64 => {
                let (lo, hi) = (self.i(min as i64), self.i(max as i64));
                let y = self.b.ins().smax(x, lo);
                self.b.ins().smin(y, hi)
            }
            _ => x,
        }
    }

    fn one(&mut self, ty: Type) -> Value {
        if ty == F64 {
            self.b.ins().f64const(1.0)
        } else {
            self.f(ty, 1.0)
        }
    }

    fn unary(&mut self, u: UnaryOp, d: DType, x: Value, (in_zp, out_zp): (i64, i64)) -> Result<Value, String> {
        let ty = self.b.func.dfg.value_type(x);
        let f64_ = domain(d) == F64;
        let lc = |f32_call: Libcall, f64_call: Libcall| if f64_ { f64_call } else { f32_call };
        if domain(d) == I64 {
            return match u {
                UnaryOp::Negate => {
                    let a = self.b.ins().iadd_imm_s(x, -in_zp);
                    let o = self.i(out_zp);
                    Ok(self.b.ins().isub(o, a))
                }
                UnaryOp::Abs => Ok(self.b.ins().iabs(x)),
                UnaryOp::BitwiseNot => Ok(self.b.ins().bnot(x)),
                UnaryOp::Clz => {
                    let u = self.low_bits(x, d);
                    let c = self.b.ins().clz(u);
                    Ok(self.b.ins().iadd_imm_s(c, d.bit_width() as i64 - 64))
                }
                _ => Err(format!("{} is not defined on integers", f16c_dialect::Op::Unary(u).mlir_name())),
            };
        }
        if domain(d) == I8 {
            return match u {
                // i1 is held as 0/1.
                UnaryOp::LogicalNot => Ok(self.b.ins().bxor_imm_u(x, 1)),
                _ => Err("elementwise arithmetic is not defined on i1".into()),
            };
        }
        if u.is_integer_only() || u.is_logical() {
            return Err(format!("{} is not defined on floats", f16c_dialect::Op::Unary(u).mlir_name()));
        }
        Ok(match u {
            UnaryOp::Negate => self.b.ins().fneg(x),
            UnaryOp::Abs => self.b.ins().fabs(x),
            // The contract's own f32 functions, inline ([`f16c_core::math`]); f64 calls the host's.
            UnaryOp::Exp if !f64_ => self.exp_f32(x),
            UnaryOp::Tanh if !f64_ => self.tanh_f32(x),
            UnaryOp::Erf if !f64_ => self.erf_f32(x),
            UnaryOp::Exp => self.libcall_lanes(lc(Libcall::ExpF32, Libcall::ExpF64), &[x]),
            UnaryOp::Log => self.libcall_lanes(lc(Libcall::LogF32, Libcall::LogF64), &[x]),
            UnaryOp::Tanh => self.libcall_lanes(lc(Libcall::TanhF32, Libcall::TanhF64), &[x]),
            UnaryOp::Erf => self.libcall_lanes(lc(Libcall::ErfF32, Libcall::ErfF64), &[x]),
            UnaryOp::Sin => self.libcall_lanes(lc(Libcall::SinF32, Libcall::SinF64), &[x]),
            UnaryOp::BitwiseNot | UnaryOp::LogicalNot | UnaryOp::Clz => unreachable!("refused on floats above"),
            UnaryOp::Ceil => self.b.ins().ceil(x),
            UnaryOp::Floor => self.b.ins().floor(x),
            UnaryOp::Cos => self.libcall_lanes(lc(Libcall::CosF32, Libcall::CosF64), &[x]),
            UnaryOp::Rsqrt => {
                let s = self.b.ins().sqrt(x);
                let one = self.one(ty);
                self.b.ins().fdiv(one, s)
            }
            UnaryOp::Reciprocal => {
                let one = self.one(ty);
                self.b.ins().fdiv(one, x)
            }
            UnaryOp::Sigmoid => {
                // 1 / (1 + exp(-x)), as the reference computes it.
                let n = self.b.ins().fneg(x);
                let e = if f64_ { self.libcall_lanes(Libcall::ExpF64, &[n]) } else { self.exp_f32(n) };
                let one = self.one(ty);
                let d = self.b.ins().fadd(one, e);
                self.b.ins().fdiv(one, d)
            }
        })
    }

    fn binary(&mut self, op: BinaryOp, d: DType, a: Value, b: Value, shift: i64) -> Result<Value, String> {
        let dom = domain(d);
        if op.is_comparison() {
            return Ok(match dom {
                F32 | F64 => {
                    let cc = match op {
                        BinaryOp::Equal => FloatCC::Equal,
                        BinaryOp::Greater => FloatCC::GreaterThan,
                        _ => FloatCC::GreaterThanOrEqual,
                    };
                    self.b.ins().fcmp(cc, a, b)
                }
                _ => {
                    let cc = match op {
                        BinaryOp::Equal => IntCC::Equal,
                        BinaryOp::Greater => IntCC::SignedGreaterThan,
                        _ => IntCC::SignedGreaterThanOrEqual,
                    };
                    self.b.ins().icmp(cc, a, b)
                }
            });
        }
        if dom == I8 {
            // i1 is held as 0/1: and, or and xor keep it so.
            return match op {
                BinaryOp::LogicalAnd => Ok(self.b.ins().band(a, b)),
                BinaryOp::LogicalOr => Ok(self.b.ins().bor(a, b)),
                BinaryOp::LogicalXor => Ok(self.b.ins().bxor(a, b)),
                _ => Err("arithmetic is not defined on i1".into()),
            };
        }
        if dom == I64 {
            return Ok(match op {
                BinaryOp::BitwiseAnd => self.b.ins().band(a, b),
                BinaryOp::BitwiseOr => self.b.ins().bor(a, b),
                BinaryOp::BitwiseXor => self.b.ins().bxor(a, b),
                BinaryOp::Add => self.b.ins().iadd(a, b),
                BinaryOp::Sub => self.b.ins().isub(a, b),
                BinaryOp::Mul if shift > 0 => {
                    let p = self.b.ins().imul(a, b);
                    let p = self.b.ins().iadd_imm_s(p, 1 << (shift - 1));
                    self.b.ins().sshr_imm_s(p, shift)
                }
                BinaryOp::Mul => self.b.ins().imul(a, b),
                BinaryOp::Maximum => self.b.ins().smax(a, b),
                BinaryOp::Minimum => self.b.ins().smin(a, b),
                // The amount modulo 32, as the reference takes it (`semantics::shift_amount`).
                BinaryOp::ShiftLeft => {
                    let s = self.b.ins().band_imm_u(b, 31);
                    self.b.ins().ishl(a, s)
                }
                BinaryOp::ShiftRightLogical => {
                    let s = self.b.ins().band_imm_u(b, 31);
                    let u = self.low_bits(a, d);
                    self.b.ins().ushr(u, s)
                }
                BinaryOp::ShiftRightArith { round } => {
                    let s = self.b.ins().band_imm_u(b, 31);
                    let a = if round {
                        // (a + 2^(s-1)) >> s adds the last bit shifted out; 2^(s-1) is 0 for s = 0.
                        let one = self.i(1);
                        let p = self.b.ins().ishl(one, s);
                        let half = self.b.ins().ushr_imm_u(p, 1);
                        self.b.ins().iadd(a, half)
                    } else {
                        a
                    };
                    self.b.ins().sshr(a, s)
                }
                BinaryOp::IntDiv => {
                    // x / 0 gives 0 (the reference's choice; sdiv would trap).
                    let zero = self.b.ins().icmp_imm_s(IntCC::Equal, b, 0);
                    let one = self.i(1);
                    let d = self.b.ins().select(zero, one, b);
                    let q = self.b.ins().sdiv(a, d);
                    let z = self.i(0);
                    self.b.ins().select(zero, z, q)
                }
                _ => return Err(format!("{} is not defined on integers", f16c_dialect::Op::Binary(op).mlir_name())),
            });
        }
        if op.is_integer_only() || op.is_logical() {
            return Err(format!("{} is not defined on floats", f16c_dialect::Op::Binary(op).mlir_name()));
        }
        Ok(match op {
            BinaryOp::Add => self.b.ins().fadd(a, b),
            BinaryOp::Sub => self.b.ins().fsub(a, b),
            BinaryOp::Mul => self.b.ins().fmul(a, b),
            BinaryOp::Maximum => self.tosa_max(a, b),
            BinaryOp::Minimum => self.tosa_min(a, b),
            BinaryOp::Pow => self.libcall_lanes(if dom == F64 { Libcall::PowF64 } else { Libcall::PowF32 }, &[a, b]),
            _ => unreachable!("comparisons handled above"),
        })
    }

    /// The bits of a sign-extended integer of type `d` as an unsigned value of its width.
    fn low_bits(&mut self, x: Value, d: DType) -> Value {
        match d.bit_width() {
            64 => x,
            n => self.b.ins().band_imm_u(x, (1i64 << n) - 1),
        }
    }

    /// TOSA `cast` from a `from` domain value to `to` (not yet rounded to `to`'s width).
    pub fn convert(&mut self, from: DType, to: DType, x: Value) -> Result<Value, String> {
        if from == to {
            return Ok(x);
        }
        let (df, dt) = (domain(from), domain(to));
        Ok(match (df, dt) {
            (_, I8) => match df {
                F32 | F64 => {
                    let z = if df == F64 { self.b.ins().f64const(0.0) } else { self.b.ins().f32const(0.0) };
                    self.b.ins().fcmp(FloatCC::NotEqual, x, z)
                }
                _ => self.b.ins().icmp_imm_s(IntCC::NotEqual, x, 0),
            },
            (F32, F32) => x,
            (F32, F64) => self.b.ins().fpromote(F64, x),
            (F64, F32) => match to {
                DType::F32 => self.b.ins().fdemote(F32, x),
                DType::F16 => self.libcall(Libcall::F64ToF16, &[x]),
                _ => self.libcall(Libcall::F64ToBf16, &[x]),
            },
            (I64 | I8, F32 | F64) => {
                let wide = if df == I8 { self.b.ins().uextend(I64, x) } else { x };
                let f = self.b.ins().fcvt_from_sint(F64, wide);
                self.convert(DType::F64, to, f)?
            }
            (F32 | F64, I64) => {
                let f = if df == F32 { self.b.ins().fpromote(F64, x) } else { x };
                let (lo, hi) = to.int_range();
                let (lo, hi) = (lo as f64, hi as f64);
                let r = self.b.ins().nearest(f);
                let (lo, hi) = (self.b.ins().f64const(lo), self.b.ins().f64const(hi));
                let r = self.b.ins().fmax(r, lo);
                let r = self.b.ins().fmin(r, hi);
                self.b.ins().fcvt_to_sint_sat(I64, r)
            }
            (I8, I64) => self.b.ins().uextend(I64, x),
            (I64, I64) => x,
            _ => return Err(format!("no conversion from {from} to {to}")),
        })
    }
}
