//! Row regions (softmax, layer norm) on the GPU: one block per row.
//!
//! The block's threads share the row's elementwise stages (thread `t` takes elements `t, t +
//! THREADS, ...`, so a thread reads back only what it wrote and maps need no barrier); scalar
//! stages run redundantly in every thread. A reduction first waits at a barrier (the row's
//! earlier writes become visible), then:
//! - max and min, whose value does not depend on the order (NaN-propagating): each thread
//!   reduces its share, a warp combines its lanes with `shfl.sync.bfly`, and thread 0 combines
//!   the warps. Only the sign of a zero result does (TOSA keeps the first of equal values, so a
//!   zero maximum has the sign of the row's first zero): when the result is zero, thread 0 takes
//!   the first zero of the row in index order;
//! - sum and product: thread 0 adds the row in index order, as the reference does. The numeric
//!   contract lets only contractions reorder their accumulation (DESIGN.md "Numerics"), so the
//!   result stays bit-identical.
//!
//! The result goes through shared memory to every thread. Full intermediate values live in a
//! per-row global temporary (f32, or f64), as in the one-thread-per-row form.

use super::{barrier, sreg};
use crate::backend::llvm::families::RowShare;
use crate::backend::llvm::{Built, Ir};
use crate::lower::Rows;
use f16c_dialect::{DType, ReduceKind};
use inkwell::types::BasicType;
use inkwell::values::{BasicValueEnum, IntValue, PointerValue};
use inkwell::{AddressSpace, FloatPredicate, IntPredicate};

/// Threads per block (a row's share).
pub const THREADS: usize = 256;
const WARPS: usize = THREADS / 32;
/// Static shared memory: one 8-byte slot per warp and the broadcast slot.
pub const SHARED_BYTES: usize = 8 * (WARPS + 1);

/// Emits the body of a block-per-row kernel over `rows` rows (grid-stride over rows); `temp` is
/// the temporary slot and its bytes per row, if any.
pub fn emit<'ctx>(ir: &mut Ir<'ctx>, r: &Rows, kernel_name: &str, temp: Option<(usize, usize)>) -> Result<(), String> {
    let i64t = ir.cx.i64_type();
    // WARPS partial results, then the broadcast slot; 8 bytes each (f32, f64, i64 or i1 values).
    let slots = ir.module.add_global(i64t.array_type(WARPS as u32 + 1), Some(AddressSpace::from(3u16)), &format!("{kernel_name}_red"));
    slots.set_initializer(&i64t.array_type(WARPS as u32 + 1).const_zero());
    slots.set_alignment(8);
    slots.set_linkage(inkwell::module::Linkage::Internal);
    let slots = slots.as_pointer_value();
    let (tid, ctaid, nctaid) = (sreg(ir, "tid.x"), sreg(ir, "ctaid.x"), sreg(ir, "nctaid.x"));
    let rows = ir.i64(r.rows as i64);
    let mut failure = Ok(());
    ir.for_range(ctaid, rows, nctaid, |ir, row| {
        let row_temp = match temp {
            Some((slot, bytes)) => {
                let base = ir.buffer(slot);
                ir.byte_offset(base, ir.muli(row, bytes))
            }
            None => ir.ptr_ty().const_null(),
        };
        let len = r.len;
        let mut reduce = |ir: &mut Ir<'ctx>, kind: ReduceKind, d: DType, load: &dyn Fn(&mut Ir<'ctx>, IntValue<'ctx>) -> BasicValueEnum<'ctx>| {
            barrier(ir);
            let order_free = matches!(kind, ReduceKind::Max | ReduceKind::Min) && matches!(d, DType::F32 | DType::F16 | DType::BF16);
            let result_slot = slot(ir, slots, WARPS);
            if order_free {
                let acc = ir.var(ir.reduce_init(kind, d));
                let (end, step) = (ir.i64(len as i64), ir.i64(THREADS as i64));
                ir.for_range(tid, end, step, |ir, j| {
                    let x = load(ir, j);
                    let next = ir.reduce_step(kind, ir.get(acc), x);
                    ir.set(acc, next);
                });
                for offset in [16, 8, 4, 2, 1] {
                    let mine = ir.get(acc);
                    let args: Vec<BasicValueEnum> = vec![ir.i32(-1).into(), mine, ir.i32(offset).into(), ir.i32(0x1f).into()];
                    let other = ir.intrinsic("llvm.nvvm.shfl.sync.bfly.f32", ir.cx.f32_type().into(), &args);
                    let next = ir.reduce_step(kind, mine, other);
                    ir.set(acc, next);
                }
                let lane0 = ir.icmp(IntPredicate::EQ, ir.remi(tid, 32), ir.i64(0));
                ir.if_then(lane0, |ir| {
                    let warp_slot = slot_at(ir, slots, ir.divi(tid, 32));
                    let v = ir.get(acc);
                    ir.b.build_store(warp_slot, v).built();
                });
                barrier(ir);
                let first = ir.icmp(IntPredicate::EQ, tid, ir.i64(0));
                ir.if_then(first, |ir| {
                    let t = ir.domain(d);
                    let all = ir.var(ir.reduce_init(kind, d));
                    for w in 0..WARPS {
                        let p = slot(ir, slots, w);
                        let x = ir.b.build_load(t, p, "").built();
                        let next = ir.reduce_step(kind, ir.get(all), x);
                        ir.set(all, next);
                    }
                    // A zero result: the sign of the row's first zero.
                    let zero = ir.b.build_float_compare(FloatPredicate::OEQ, ir.get(all).into_float_value(), ir.get(all).into_float_value().get_type().const_zero(), "").built();
                    ir.if_then(zero, |ir| {
                        let found = ir.var(ir.cx.bool_type().const_zero().into());
                        ir.for_n(0, len, |ir, j| {
                            let x = load(ir, j).into_float_value();
                            let is_zero = ir.b.build_float_compare(FloatPredicate::OEQ, x, x.get_type().const_zero(), "").built();
                            let take = ir.b.build_and(is_zero, ir.b.build_not(ir.get(found).into_int_value(), "").built(), "").built();
                            let v = ir.select(take, x, ir.get(all).into_float_value());
                            ir.set(all, v);
                            let f = ir.b.build_or(ir.get(found).into_int_value(), is_zero, "").built();
                            ir.set(found, f.into());
                        });
                    });
                    let v = ir.get(all);
                    ir.b.build_store(result_slot, v).built();
                });
            } else {
                let first = ir.icmp(IntPredicate::EQ, tid, ir.i64(0));
                ir.if_then(first, |ir| {
                    let v = ir.reduce_sequential(kind, d, len, load);
                    ir.b.build_store(result_slot, v).built();
                });
            }
            barrier(ir);
            let v = ir.b.build_load(ir.domain(d).as_basic_type_enum(), result_slot, "").built();
            // Every thread has read the result before the slots are written again.
            barrier(ir);
            v
        };
        let step = ir.i64(THREADS as i64);
        if let Err(e) = ir.rows_with(r, row, row_temp, RowShare { start: tid, step, reduce: &mut reduce, vectors: None }) {
            failure = Err(e);
        }
        // The next row's stages must not overwrite a slot this row still reads.
        barrier(ir);
    });
    failure
}

fn slot<'ctx>(ir: &Ir<'ctx>, slots: PointerValue<'ctx>, k: usize) -> PointerValue<'ctx> {
    slot_at(ir, slots, ir.i64(k as i64))
}

fn slot_at<'ctx>(ir: &Ir<'ctx>, slots: PointerValue<'ctx>, k: IntValue<'ctx>) -> PointerValue<'ctx> {
    ir.gep(ir.cx.i64_type().into(), slots, k)
}
