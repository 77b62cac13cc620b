//! Kernel families to CLIF, one section per family.

use super::emit::{domain, Emitted, Fx};
use super::gemm::ROW_GROUP;
use super::narrow::{deferral, Deferral, Staging};
use super::legal::LANES;
use super::plan::{CopyForm, CopyPlan, KernelPlan, Planner, PoolPlan, ReductionPlan, SoftmaxPlan};
use crate::backend::layout::Layout;
use crate::backend::{BackendError, BackendErrorKind};
use f16c_core::abi::Libcall;
use f16c_core::artifact::Step;
use crate::lower::{CopyKernel, Elementwise, Expr, Gather, IndexSum, KernelKind, Pool, Program, Reduction, RowStage, RowValue, Rows, SumRun};
use cranelift_codegen::ir::condcodes::{FloatCC, IntCC};
use cranelift_codegen::ir::types::{F32, F32X4, F64, I16, I32, I32X4, I64, I8, I8X16};
use cranelift_codegen::ir::{Function, InstBuilder, Value};
use cranelift_frontend::FunctionBuilderContext;
use f16c_dialect::{DType, ReduceKind};

/// Compilation state of one program.
pub struct Context<'p> {
    pub program: &'p Program,
    /// The buffer table the functions address (shared with every CPU backend).
    pub layout: Layout,
    pub functions: Vec<(String, Function)>,
    pub steps: Vec<Step>,
    pub fctx: FunctionBuilderContext,
    /// The kernel being compiled.
    pub current: usize,
    /// What the plans are made from, and the options' facts the emitters read.
    pub planner: Planner<'p>,
    /// The runtime micro-kernels the code calls ([`f16c_core::abi::MICRO_KERNELS`]): the code
    /// requires their features.
    pub micro_kernels: Vec<f16c_core::abi::Libcall>,
    /// Per kernel, its plan in words (`--emit=kernels`, the artifact's kernel plans,
    /// `f16c-run --profile`).
    pub plans: Vec<Option<String>>,
}

impl<'p> Context<'p> {
    pub fn new(program: &'p Program, options: &super::Options) -> Self {
        Context {
            program,
            layout: Layout::new(program),
            functions: Vec::new(),
            steps: Vec::new(),
            fctx: FunctionBuilderContext::new(),
            current: 0,
            planner: Planner::new(program, options),
            micro_kernels: Vec::new(),
            plans: vec![None; program.kernels.len()],
        }
    }

    /// A code generation failure in the current kernel (legality was checked before: this is
    /// a bug of f16c, reported rather than panicking).
    pub fn error(&self, message: impl Into<String>) -> BackendError {
        BackendError::at(&self.program.kernels[self.current], super::NAME, BackendErrorKind::Codegen(message.into()))
    }

    /// Adds a function and the step that runs it.
    pub fn add(&mut self, suffix: &str, work: usize, cost: f64, body: impl FnOnce(&mut Fx) -> Result<(), String>) -> Result<(), BackendError> {
        let name = format!("{}{suffix}", self.program.kernels[self.current].name);
        let f = super::build_function(&name, &mut self.fctx, body).map_err(|m| self.error(m))?;
        self.functions.push((name, f));
        self.steps.push(Step { function: self.functions.len() - 1, work, cost, kernel: self.current, launch: None, interleave: None });
        Ok(())
    }

    /// Kernel `k`: its plan ([`Planner::plan`]), then its code as the plan says.
    pub fn kernel(&mut self, k: usize) -> Result<(), BackendError> {
        self.current = k;
        let program = self.program;
        let kernel = &program.kernels[k];
        let plan = self.planner.plan(k).map_err(|m| self.error(m))?;
        self.plans[k] = Some(plan.describe(&self.planner, kernel));
        if let Some(lc) = plan.micro_kernel().filter(|lc| !self.micro_kernels.contains(lc)) {
            self.micro_kernels.push(lc);
        }
        match (plan, &kernel.kind) {
            (KernelPlan::Gemm(p, finite), KernelKind::Contraction(c)) => self.gemm(c, *p, finite),
            (KernelPlan::Depthwise(p, finite), KernelKind::Contraction(c)) => self.depthwise(c, *p, finite),
            (KernelPlan::TransposeConv(finite), KernelKind::Contraction(c)) => self.transpose_conv(c, finite),
            (KernelPlan::Integer, KernelKind::Contraction(c)) => self.integer(c),
            (KernelPlan::Elementwise(p, split), KernelKind::Elementwise(e)) => self.elementwise(split.as_ref().unwrap_or(e), *p),
            (KernelPlan::Reduction(p), KernelKind::Reduction(r)) => self.reduction(r, p),
            (KernelPlan::Pool(p), KernelKind::Pool(pool)) => self.pool(pool, p),
            (KernelPlan::Copy(p), KernelKind::Copy(c)) => self.copy(c, p),
            (KernelPlan::Gather, KernelKind::Gather(g)) => self.gather(g),
            (KernelPlan::Rows(p), KernelKind::Rows(r)) => self.rows(r, *p),
            (KernelPlan::Softmax(p), KernelKind::Rows(r)) => self.softmax(r, p),
            _ => Err(self.error("a plan made for another kind of kernel")),
        }
    }

    // -----------------------------------------------------------------------------------------
    // Elementwise
    // -----------------------------------------------------------------------------------------

    /// An elementwise kernel (`e`, split into rows where its plan split it) as `plan` says.
    fn elementwise(&mut self, e: &Elementwise, plan: ElementwisePlan) -> Result<(), BackendError> {
        let cost = (plan.rows * plan.inner * (e.expr.ops.len() + 1)) as f64;
        self.layout.scratch(plan.scratch);
        let e = e.clone();
        self.add("", plan.rows, cost, move |fx| {
            let out = fx.buffer(e.output.0);
            let stage = plan.narrowed.then(|| Staging::new(fx.scratch, plan.deferral.as_ref()));
            let bases: Vec<Value> = e.inputs.iter().map(|i| fx.buffer(i.buffer.0)).collect();
            let store = EwStore { out, stage, dtype: e.expr.result_dtype() };
            fx.try_for_items(|fx, row| elementwise_row(fx, &plan, &e, &store, &bases, row))
        })
    }

    // -----------------------------------------------------------------------------------------
    // Reductions: sequential over the axis (the reference's order), four output lanes at a
    // time where the inner dimension allows.
    // -----------------------------------------------------------------------------------------

    /// A reduction as `plan` says ([`ReductionPlan`]).
    fn reduction(&mut self, r: &Reduction, plan: ReductionPlan) -> Result<(), BackendError> {
        let (din, dout) = (r.input.ty.dtype, r.output.ty.dtype);
        let (len, inner) = (r.len, r.inner);
        let (vector, full, rest, blocks) = (plan.vector, plan.full, plan.rest, plan.blocks());
        let r = r.clone();
        self.add("", r.outer * blocks, (r.outer * len * inner) as f64, move |fx| {
            let (src, dst) = (fx.buffer(r.input.buffer.0), fx.buffer(r.output.buffer.0));
            let vec_end = if vector { inner - inner % LANES } else { 0 };
            fx.for_items(|fx, item| {
                let o = fx.b.ins().udiv_imm_s(item, blocks as i64);
                let blk = fx.b.ins().urem_imm_s(item, blocks as i64);
                let base = fx.b.ins().imul_imm_s(o, (len * inner) as i64);
                let out_base = fx.b.ins().imul_imm_s(o, inner as i64);
                // A full block: its vectors' chains in one loop over the axis.
                if let Some(kind) = r.kind.filter(|_| full > 0) {
                    let in_full = fx.b.ins().icmp_imm_s(IntCC::SignedLessThan, blk, full as i64);
                    fx.if_then(in_full, |fx| {
                        let c0 = fx.b.ins().imul_imm_s(blk, REDUCE_BLOCK as i64);
                        let at0 = fx.b.ins().iadd(base, c0);
                        let inits: Vec<Value> = (0..REDUCE_BLOCK / LANES).map(|_| reduce_init(fx, kind, F32X4)).collect();
                        let accs = fx.for_n(0, len as i64, 1, &inits, |fx, k, acc| {
                            let off = fx.b.ins().imul_imm_s(k, inner as i64);
                            let at = fx.b.ins().iadd(at0, off);
                            let p = fx.addr(src, at, din.byte_size());
                            acc.iter()
                                .enumerate()
                                .map(|(v, &a)| {
                                    let x = fx.load4_at(din, p, (v * LANES * din.byte_size()) as i32);
                                    reduce_step(fx, kind, a, x)
                                })
                                .collect()
                        });
                        let at = fx.b.ins().iadd(out_base, c0);
                        for (v, acc) in accs.into_iter().enumerate() {
                            let at = fx.b.ins().iadd_imm_s(at, (v * LANES) as i64);
                            fx.store4(dout, dst, at, acc);
                        }
                    });
                }
                if !rest {
                    return;
                }
                // The last block, short of REDUCE_BLOCK outputs (or every output, where they do
                // not go in lanes): a vector at a time, then one at a time.
                let in_rest = fx.b.ins().icmp_imm_s(IntCC::Equal, blk, full as i64);
                fx.if_then(in_rest, |fx| {
                    if let Some(kind) = r.kind.filter(|_| vector) {
                        fx.each_n((full * REDUCE_BLOCK) as i64, vec_end as i64, LANES as i64, |fx, i| {
                            let init = reduce_init(fx, kind, F32X4);
                            let at0 = fx.b.ins().iadd(base, i);
                            let acc = fx.for_n(0, len as i64, 1, &[init], |fx, k, acc| {
                                let off = fx.b.ins().imul_imm_s(k, inner as i64);
                                let at = fx.b.ins().iadd(at0, off);
                                let v = fx.load4(din, src, at);
                                vec![reduce_step(fx, kind, acc[0], v)]
                            });
                            let at = fx.b.ins().iadd(out_base, i);
                            fx.store4(dout, dst, at, acc[0]);
                        });
                    }
                    fx.each_n(vec_end as i64, inner as i64, 1, |fx, i| {
                        let at0 = fx.b.ins().iadd(base, i);
                        let value = match r.kind {
                            Some(kind) => {
                                let init = reduce_init(fx, kind, domain(din));
                                fx.for_n(0, len as i64, 1, &[init], |fx, k, acc| {
                                    let off = fx.b.ins().imul_imm_s(k, inner as i64);
                                    let at = fx.b.ins().iadd(at0, off);
                                    let v = fx.load(din, src, at);
                                    vec![reduce_step(fx, kind, acc[0], v)]
                                })[0]
                            }
                            None => argmax(fx, din, src, at0, len, inner),
                        };
                        let at = fx.b.ins().iadd(out_base, i);
                        let v = fx.round_to(dout, value);
                        fx.store(dout, dst, at, v);
                    });
                });
            });
            Ok(())
        })
    }

    // -----------------------------------------------------------------------------------------
    // Row regions (softmax, layer norm): four rows per work item (`gemm::ROW_GROUP`), every
    // stage in order; full intermediate values live in this thread's scratch (f32, or f64), a
    // region per row, per-row scalars in registers. Reductions run sequentially along each
    // row (the reference's order), the group's rows in one loop so that their chains overlap
    // (maxima and minima four lanes wide, a row at a time); full elementwise stages four lanes
    // at a time where they compute in f32, a row at a time.
    // -----------------------------------------------------------------------------------------

    /// A rows kernel as `plan` says ([`RowsPlan`]).
    fn rows(&mut self, r: &Rows, plan: RowsPlan) -> Result<(), BackendError> {
        self.layout.scratch(ROW_GROUP * plan.stride);
        let r = r.clone();
        let cost = (r.rows * r.len * (r.stages.len() + 1)) as f64;
        self.add("", r.rows.div_ceil(ROW_GROUP), cost, move |fx| {
            let bases: Vec<Value> = r.inputs.iter().map(|i| fx.buffer(i.buffer.0)).collect();
            let call = RowsCall { bases, out: fx.buffer(r.output.0) };
            for k in (0..plan.n_in).filter(|&k| plan.slots[k].is_some() && !r.inputs[k].per_row) {
                let zero = fx.i(0);
                call.widen(fx, &plan, &r, k, zero, 0);
            }
            fx.try_for_items(|fx, item| rows_item(fx, &plan, &r, &call, item))
        })
    }

    /// A softmax ([`Rows::softmax`]): each work item's rows by the runtime's loop
    /// ([`Libcall::SoftmaxRowsF32`]: sixteen lanes where Cranelift has four, the rows' sums side
    /// by side), the same stages and bits as the generic rows code.
    fn softmax(&mut self, r: &Rows, plan: SoftmaxPlan) -> Result<(), BackendError> {
        let (softmax, call, (x_bytes, y_bytes), flags) = (plan.softmax, plan.call, plan.bytes, plan.flags);
        // The loops into bf16 and fp16 keep the rows' exp values in scratch.
        let low = matches!(call, Libcall::SoftmaxRowsBf16 | Libcall::SoftmaxRowsF16);
        if low {
            // The rows' exp values in f32 in this thread's scratch.
            self.layout.scratch(ROW_GROUP * r.len * 4);
        }
        let (rows, len, x, y) = (r.rows, r.len, r.inputs[0].buffer.0, r.output.0);
        let scalars = softmax.masked.map(|(a, b)| (r.inputs[a].buffer.0, r.inputs[b].buffer.0));
        let cost = (rows * len * (r.stages.len() + 1)) as f64;
        self.add("", rows.div_ceil(ROW_GROUP), cost, move |fx| {
            let (x, y) = (fx.buffer(x), fx.buffer(y));
            let (mask, fill) = match scalars {
                Some((a, b)) => (fx.buffer(a), fx.buffer(b)),
                None => (fx.i(0), fx.i(0)),
            };
            fx.for_items(|fx, item| {
                let first = fx.b.ins().imul_imm_s(item, ROW_GROUP as i64);
                let total = fx.i(rows as i64);
                let left = fx.b.ins().isub(total, first);
                let group = fx.i(ROW_GROUP as i64);
                let n = fx.b.ins().smin(left, group);
                let (xa, ya) = (fx.b.ins().imul_imm_s(first, (len * x_bytes) as i64), fx.b.ins().imul_imm_s(first, (len * y_bytes) as i64));
                let (xp, yp) = (fx.b.ins().iadd(x, xa), fx.b.ins().iadd(y, ya));
                let len = fx.i(len as i64);
                if low {
                    let (scratch, flags) = (fx.scratch, fx.i(flags));
                    fx.libcall(call, &[xp, yp, n, len, mask, fill, scratch, flags]);
                } else {
                    fx.libcall(call, &[xp, yp, n, len, mask, fill]);
                }
            });
            Ok(())
        })
    }

    // -----------------------------------------------------------------------------------------
    // Pooling: window ranges are clipped to the input, so no branch sits in the window loops;
    // four channels at a time.
    // -----------------------------------------------------------------------------------------

    /// A pooling kernel as `plan` says ([`PoolPlan`]).
    fn pool(&mut self, p: &Pool, plan: PoolPlan) -> Result<(), BackendError> {
        let (din, dout) = (p.input.ty.dtype, p.output.ty.dtype);
        let (int, vector, unrolled) = (plan.int, plan.vector, plan.unrolled);
        let (&[n, ih, iw, c], &[_, oh, ow, _]) = (p.input.ty.shape.as_slice(), p.output.ty.shape.as_slice()) else {
            return Err(self.error("pooling input must be NHWC"));
        };
        let p = p.clone();
        let cost = (n * oh * ow * c * p.kernel[0] * p.kernel[1]) as f64;
        self.add("", n * oh, cost, move |fx| {
            let (src, dst) = (fx.buffer(p.input.buffer.0), fx.buffer(p.output.buffer.0));
            fx.for_items(|fx, row| {
                let b = fx.b.ins().udiv_imm_s(row, oh as i64);
                let oy = fx.b.ins().urem_imm_s(row, oh as i64);
                // Valid ky: 0 <= oy*sy + ky - pt < ih.
                let y0 = fx.b.ins().imul_imm_s(oy, p.stride[0] as i64);
                let y0 = fx.b.ins().iadd_imm_s(y0, -(p.pad[0] as i64));
                let (ky_lo, ky_hi) = clip(fx, y0, p.kernel[0], ih);
                fx.each_n(0, ow as i64, 1, |fx, ox| {
                    let x0 = fx.b.ins().imul_imm_s(ox, p.stride[1] as i64);
                    let x0 = fx.b.ins().iadd_imm_s(x0, -(p.pad[2] as i64));
                    let (kx_lo, kx_hi) = clip(fx, x0, p.kernel[1], iw);
                    let dy = fx.b.ins().isub(ky_hi, ky_lo);
                    let dx = fx.b.ins().isub(kx_hi, kx_lo);
                    let count = fx.b.ins().imul(dy, dx);
                    let one = fx.i(1);
                    let count = fx.b.ins().smax(count, one);
                    let pixel = fx.b.ins().imul_imm_s(b, (oh * ow) as i64);
                    let oyw = fx.b.ins().imul_imm_s(oy, ow as i64);
                    let pixel = fx.b.ins().iadd(pixel, oyw);
                    let pixel = fx.b.ins().iadd(pixel, ox);
                    let out_base = fx.b.ins().imul_imm_s(pixel, c as i64);
                    let in_base = fx.b.ins().imul_imm_s(b, (ih * iw * c) as i64);
                    let window = |fx: &mut Fx, ch: Value, ty: cranelift_codegen::ir::Type| -> Value {
                        let init = match (int, p.avg) {
                            (true, true) => fx.i(0),
                            (true, false) => fx.i(din.int_range().0),
                            (false, true) => zero(fx, ty),
                            (false, false) => neg_inf(fx, ty),
                        };
                        let acc = fx.for_range(ky_lo, ky_hi, 1, &[init], |fx, ky, acc| {
                            let y = fx.b.ins().iadd(y0, ky);
                            let yoff = fx.b.ins().imul_imm_s(y, (iw * c) as i64);
                            let yoff = fx.b.ins().iadd(yoff, in_base);
                            fx.for_range(kx_lo, kx_hi, 1, acc, |fx, kx, acc| {
                                let x = fx.b.ins().iadd(x0, kx);
                                let xoff = fx.b.ins().imul_imm_s(x, c as i64);
                                let at = fx.b.ins().iadd(yoff, xoff);
                                let at = fx.b.ins().iadd(at, ch);
                                let v = if ty == F32X4 { fx.load4(din, src, at) } else { fx.load(din, src, at) };
                                vec![match (int, p.avg) {
                                    (true, true) => {
                                        let v = fx.b.ins().iadd_imm_s(v, -p.zp.0);
                                        fx.b.ins().iadd(acc[0], v)
                                    }
                                    (true, false) => fx.b.ins().smax(acc[0], v),
                                    (false, true) => fx.b.ins().fadd(acc[0], v),
                                    (false, false) => fx.tosa_max(acc[0], v),
                                }]
                            })
                        })[0];
                        if int && p.avg {
                            int_average(fx, acc, count, p.zp.1, dout)
                        } else if p.avg {
                            let cnt = if ty == F64 { fx.b.ins().fcvt_from_sint(F64, count) } else { fx.b.ins().fcvt_from_sint(F32, count) };
                            let cnt = if ty == F32X4 { fx.b.ins().splat(F32X4, cnt) } else { cnt };
                            fx.b.ins().fdiv(acc, cnt)
                        } else {
                            acc
                        }
                    };
                    let vec_end = if vector { c - c % LANES } else { 0 };
                    let clipped = |fx: &mut Fx| {
                        fx.each_n(0, vec_end as i64, LANES as i64, |fx, ch| {
                            let v = window(fx, ch, F32X4);
                            let at = fx.b.ins().iadd(out_base, ch);
                            fx.store4(dout, dst, at, v);
                        });
                    };
                    // Emitted only when it can run: an f64 window has no four-lane form.
                    if unrolled {
                        // A window inside the input (most of them): its taps unrolled at
                        // constant offsets, no loop per tap.
                        let inside = [(y0, ih, p.kernel[0]), (x0, iw, p.kernel[1])].map(|(v, len, k)| {
                            let low = fx.b.ins().icmp_imm_s(IntCC::SignedGreaterThanOrEqual, v, 0);
                            let high = fx.b.ins().icmp_imm_s(IntCC::SignedLessThanOrEqual, v, len as i64 - k as i64);
                            fx.b.ins().band(low, high)
                        });
                        let inside = fx.b.ins().band(inside[0], inside[1]);
                        fx.if_or(
                            inside,
                            |fx| {
                                let y = fx.b.ins().imul_imm_s(y0, (iw * c) as i64);
                                let x = fx.b.ins().imul_imm_s(x0, c as i64);
                                let first = fx.b.ins().iadd(in_base, y);
                                let first = fx.b.ins().iadd(first, x);
                                fx.each_n(0, vec_end as i64, LANES as i64, |fx, ch| {
                                    let at = fx.b.ins().iadd(first, ch);
                                    let from = fx.addr(src, at, din.byte_size());
                                    let v = whole_window(fx, &p, din, from, (iw, c));
                                    let at = fx.b.ins().iadd(out_base, ch);
                                    fx.store4(dout, dst, at, v);
                                });
                            },
                            |fx| {
                                clipped(fx);
                            },
                        );
                    } else if vector {
                        clipped(fx);
                    }
                    fx.each_n(vec_end as i64, c as i64, 1, |fx, ch| {
                        let v = window(fx, ch, domain(din));
                        let at = fx.b.ins().iadd(out_base, ch);
                        let v = fx.round_to(dout, v);
                        fx.store(dout, dst, at, v);
                    });
                });
            });
            Ok(())
        })
    }

    // -----------------------------------------------------------------------------------------
    // Data movement: bit copies (never a rounding), contiguous rows copied 16 bytes at a time.
    // -----------------------------------------------------------------------------------------

    /// A copy as `plan` says ([`CopyPlan`]).
    fn copy(&mut self, c: &CopyKernel, plan: CopyPlan) -> Result<(), BackendError> {
        let c = c.clone();
        let bytes = c.output.ty.byte_size();
        if let Some(most) = plan.staged() {
            self.layout.scratch(most * c.source.byte_size());
        }
        let bulk = plan.bulk;
        match plan.form {
            CopyForm::Tiles(t) => {
                let m = c.moves[0].clone();
                return self.add("", t.bands, bytes as f64, move |fx| {
                    let (src, dst) = (fx.buffer(m.src.0), fx.buffer(c.output.buffer.0));
                    fx.for_items(|fx, item| {
                        t.band(fx, &m, (src, dst), item);
                    });
                    Ok(())
                });
            }
            CopyForm::Slices(order) => {
                let (items, src_stride, dst_stride) = (order.shape[0], order.src_strides[0], order.dst_strides[0]);
                return self.add("", items, bytes as f64, move |fx| {
                    let (src, dst) = (fx.buffer(order.src.0), fx.buffer(c.output.buffer.0));
                    let elem = c.output.ty.dtype.byte_size();
                    let how = if c.converts() { Element::Convert(c.source, c.output.ty.dtype) } else { Element::Bits(elem, bits_type(elem)) };
                    fx.for_items(|fx, item| {
                        let s = fx.b.ins().imul_imm_s(item, src_stride as i64);
                        let s = fx.b.ins().iadd_imm_s(s, order.src_offset as i64);
                        let t = fx.b.ins().imul_imm_s(item, dst_stride as i64);
                        let t = fx.b.ins().iadd_imm_s(t, order.dst_offset as i64);
                        copy_dims(fx, &order, 1, s, t, src, dst, how);
                    });
                    Ok(())
                });
            }
            CopyForm::Whole => {}
        }
        self.add("", 1, bytes as f64, move |fx| {
            let dst = fx.buffer(c.output.buffer.0);
            let elem = c.output.ty.dtype.byte_size();
            let ety = bits_type(elem);
            if let Some(fill) = c.fill {
                let f = fx.buffer(fill.0);
                let v = fx.b.ins().load(ety, super::emit::mem(), f, 0);
                let total = c.output.ty.num_elements();
                fx.each_n(0, total as i64, 1, |fx, i| {
                    let p = fx.addr(dst, i, elem);
                    fx.b.ins().store(super::emit::mem(), v, p, 0);
                });
            }
            for (m, bulk) in c.moves.iter().zip(&bulk) {
                let src = fx.buffer(m.src.0);
                let s0 = fx.i(m.src_offset as i64);
                let d0 = fx.i(m.dst_offset as i64);
                match bulk {
                    Some(bulk) => bulk.copy(fx, m, 0, (s0, d0), (src, dst)),
                    None => {
                        let how = if c.converts() { Element::Convert(c.source, c.output.ty.dtype) } else { Element::Bits(elem, ety) };
                        copy_dims(fx, &loop_order(m), 0, s0, d0, src, dst, how);
                    }
                }
            }
            Ok(())
        })
    }

    fn gather(&mut self, g: &Gather) -> Result<(), BackendError> {
        let g = g.clone();
        let (&[_, k, c], &[n, w]) = (g.values.ty.shape.as_slice(), g.indices.ty.shape.as_slice()) else {
            return Err(self.error("gather takes [N,K,C] values and [N,W] indices"));
        };
        let elem = g.values.ty.dtype.byte_size();
        if let Some(input) = g.scatter.clone() {
            // One output row (n, k) per work item: the last w with indices[n, w] = k gives the
            // row, else values_in's row is kept. Every index is range-checked.
            return self.add("", n * k, (n * k * (w + c)) as f64, move |fx| {
                let (vals, idx, inp, out) = (fx.buffer(g.values.buffer.0), fx.buffer(g.indices.buffer.0), fx.buffer(input.buffer.0), fx.buffer(g.output.buffer.0));
                fx.for_items(|fx, row| {
                    let b = fx.b.ins().udiv_imm_s(row, k as i64);
                    let kk = fx.b.ins().urem_imm_s(row, k as i64);
                    let first = fx.b.ins().imul_imm_s(b, w as i64);
                    let none = fx.i(-1);
                    let last = fx.for_n(0, w as i64, 1, &[none], |fx, j, acc| {
                        let at = fx.b.ins().iadd(first, j);
                        let i = fx.load(g.indices.ty.dtype, idx, at);
                        let lo = fx.b.ins().icmp_imm_s(IntCC::SignedLessThan, i, 0);
                        let hi = fx.b.ins().icmp_imm_s(IntCC::SignedGreaterThanOrEqual, i, k as i64);
                        let bad = fx.b.ins().bor(lo, hi);
                        fx.fail_if(bad, 1);
                        let hit = fx.b.ins().icmp(IntCC::Equal, i, kk);
                        vec![fx.b.ins().select(hit, j, acc[0])]
                    })[0];
                    let found = fx.b.ins().icmp_imm_s(IntCC::SignedGreaterThanOrEqual, last, 0);
                    let src_row = fx.b.ins().iadd(first, last);
                    let from_input = fx.b.ins().imul_imm_s(src_row, (c * elem) as i64);
                    let from_input = fx.b.ins().iadd(inp, from_input);
                    let here = fx.b.ins().imul_imm_s(row, (c * elem) as i64);
                    let from_values = fx.b.ins().iadd(vals, here);
                    let from = fx.b.ins().select(found, from_input, from_values);
                    let to = fx.b.ins().iadd(out, here);
                    copy_bytes(fx, from, to, c * elem);
                });
                Ok(())
            });
        }
        let total = n * w;
        let shape = GatherShape { n, k, w, row_bytes: c * elem };
        if let (Some(sum), Some(r)) = (g.index_sum.clone(), g.sum_run()) {
            return self.add("", r.items, (total * c) as f64, move |fx| {
                gather_summed(fx, &g, &sum, r, shape);
                Ok(())
            });
        }
        // A run of indices per work item: every index of the run checked in a loop without
        // branches, then the rows copied (one output row per work item spent more on the item
        // loop and the check's branch than on a four-byte copy: a U-Net's upsampling gathers a
        // million values four times per level).
        let run = g.run();
        self.add("", total.div_ceil(run), (total * c) as f64, move |fx| {
            let (vals, idx, out) = (fx.buffer(g.values.buffer.0), fx.buffer(g.indices.buffer.0), fx.buffer(g.output.buffer.0));
            fx.for_items(|fx, item| {
                let p0 = fx.b.ins().imul_imm_s(item, run as i64);
                let p1 = fx.b.ins().iadd_imm_s(p0, run as i64);
                let end = fx.i(total as i64);
                let p1 = fx.b.ins().smin(p1, end);
                let ok = fx.b.ins().iconst(I8, 0);
                let bad = fx.for_range(p0, p1, 1, &[ok], |fx, p, acc| {
                    let i = fx.load(g.indices.ty.dtype, idx, p);
                    let outside = fx.b.ins().icmp_imm_s(IntCC::UnsignedGreaterThanOrEqual, i, k as i64);
                    vec![fx.b.ins().bor(acc[0], outside)]
                })[0];
                fx.fail_if(bad, 1);
                fx.each(p0, p1, 1, |fx, p| {
                    let i = fx.load(g.indices.ty.dtype, idx, p);
                    shape.copy(fx, vals, out, p, i);
                });
            });
            Ok(())
        })
    }
}

/// The work items of a gather whose indices are summed as they are read
/// ([`Gather::sum_run`]): whole rows of the sum's space (or part of one row), each row's parts
/// found once; every index of the item checked before any value is copied, the indices summed
/// again to copy rather than kept (a few loads from the cache). Where the indices are i32, a
/// row of the values one 2- or 4-byte value and every part contiguous or constant along a row
/// (a U-Net's upsampling), four indices at a time: summed, checked and taken apart in lanes.
fn gather_summed(fx: &mut Fx, g: &Gather, sum: &IndexSum, r: SumRun, shape: GatherShape) {
    let (vals, out) = (fx.buffer(g.values.buffer.0), fx.buffer(g.output.buffer.0));
    let parts: Vec<Value> = sum.parts.iter().map(|p| fx.buffer(p.buffer.0)).collect();
    let (rank, rows, inner, d) = (sum.shape.len(), sum.rows(), sum.inner(), g.indices.ty.dtype);
    let lanes = d == DType::I32 && shape.n == 1 && matches!(shape.row_bytes, 2 | 4) && sum.parts.iter().all(|p| p.strides[rank - 1] <= 1);
    let k = shape.k as i64;
    fx.for_items(|fx, item| {
        let rb = fx.b.ins().udiv_imm_s(item, r.segments as i64);
        let seg = fx.b.ins().urem_imm_s(item, r.segments as i64);
        let row0 = fx.b.ins().imul_imm_s(rb, r.rows as i64);
        let row1 = fx.b.ins().iadd_imm_s(row0, r.rows as i64);
        let last = fx.i(rows as i64);
        let row1 = fx.b.ins().smin(row1, last);
        let col0 = fx.b.ins().imul_imm_s(seg, r.cols as i64);
        let col1 = fx.b.ins().iadd_imm_s(col0, r.cols as i64);
        let end = fx.i(inner as i64);
        let col1 = fx.b.ins().smin(col1, end);
        // Columns col0..quads four at a time (where lanes), the rest one at a time.
        let quads = if lanes {
            let n = fx.b.ins().isub(col1, col0);
            let n = fx.b.ins().band_imm_s(n, !3);
            fx.b.ins().iadd(col0, n)
        } else {
            col0
        };
        let ok = fx.b.ins().iconst(I8, 0);
        let bad = fx.for_range(row0, row1, 1, &[ok], |fx, row, acc| {
            let at = SumRow::new(fx, sum, &parts, row, lanes);
            let mut acc = acc[0];
            if lanes {
                let (none, kv) = (fx.k(I32X4, 0), fx.k(I32X4, k));
                let m = fx.for_range(col0, quads, 4, &[none], |fx, j, m| {
                    let v = at.four(fx, j);
                    let outside = fx.b.ins().icmp(IntCC::UnsignedGreaterThanOrEqual, v, kv);
                    vec![fx.b.ins().bor(m[0], outside)]
                })[0];
                let any = fx.b.ins().vany_true(m);
                acc = fx.b.ins().bor(acc, any);
            }
            fx.for_range(quads, col1, 1, &[acc], |fx, j, acc| {
                let i = at.one(fx, j, d);
                let outside = fx.b.ins().icmp_imm_s(IntCC::UnsignedGreaterThanOrEqual, i, k);
                vec![fx.b.ins().bor(acc[0], outside)]
            })
        })[0];
        fx.fail_if(bad, 1);
        fx.each(row0, row1, 1, |fx, row| {
            let at = SumRow::new(fx, sum, &parts, row, lanes);
            let first = fx.b.ins().imul_imm_s(row, inner as i64);
            if lanes {
                fx.each(col0, quads, 4, |fx, j| {
                    let v = at.four(fx, j);
                    let p = fx.b.ins().iadd(first, j);
                    for l in 0..4u8 {
                        let i = fx.b.ins().extractlane(v, l);
                        let i = fx.b.ins().uextend(I64, i);
                        let p = fx.b.ins().iadd_imm_s(p, i64::from(l));
                        shape.copy(fx, vals, out, p, i);
                    }
                });
            }
            fx.each(quads, col1, 1, |fx, j| {
                let i = at.one(fx, j, d);
                let p = fx.b.ins().iadd(first, j);
                shape.copy(fx, vals, out, p, i);
            });
        });
    });
}

/// One row of an [`IndexSum`]: each part's buffer, first element in the row and stride along
/// it; for four lanes, the sum of the parts constant along the row, splatted.
struct SumRow {
    parts: Vec<(Value, Value, i64)>,
    constant: Option<Value>,
}

impl SumRow {
    fn new(fx: &mut Fx, sum: &IndexSum, bufs: &[Value], row: Value, lanes: bool) -> SumRow {
        let rank = sum.shape.len();
        let parts: Vec<(Value, Value, i64)> = sum.parts.iter().zip(bufs).map(|(p, &buf)| (buf, row_offset(fx, row, &sum.shape[..rank - 1], &p.strides[..rank - 1]), p.strides[rank - 1] as i64)).collect();
        let constant = lanes.then(|| {
            let mut c = fx.b.ins().iconst(I32, 0);
            for &(buf, base, _) in parts.iter().filter(|p| p.2 == 0) {
                let v = fx.load(DType::I32, buf, base);
                let v = fx.b.ins().ireduce(I32, v);
                c = fx.b.ins().iadd(c, v);
            }
            fx.b.ins().splat(I32X4, c)
        });
        SumRow { parts, constant }
    }

    /// The index at column `j`, wrapped to `d` and widened to i64.
    fn one(&self, fx: &mut Fx, j: Value, d: DType) -> Value {
        let mut acc = None;
        for &(buf, base, stride) in &self.parts {
            let s = fx.b.ins().imul_imm_s(j, stride);
            let at = fx.b.ins().iadd(base, s);
            let v = fx.load(d, buf, at);
            acc = Some(acc.map_or(v, |a| fx.b.ins().iadd(a, v)));
        }
        let v = acc.expect("a sum has parts");
        if d == DType::I32 {
            let narrow = fx.b.ins().ireduce(I32, v);
            fx.b.ins().sextend(I64, narrow)
        } else {
            v
        }
    }

    /// The i32 indices at columns `j..j + 4` (every part contiguous or constant along the row).
    fn four(&self, fx: &mut Fx, j: Value) -> Value {
        let mut acc = self.constant.expect("four lanes were planned");
        for &(buf, base, _) in self.parts.iter().filter(|p| p.2 == 1) {
            let at = fx.b.ins().iadd(base, j);
            let p = fx.addr(buf, at, 4);
            let v = fx.b.ins().load(I32X4, super::emit::mem(), p, 0);
            acc = fx.b.ins().iadd(acc, v);
        }
        acc
    }
}

/// A gather's sizes: values `[n, k, c]`, indices `[n, w]`, and a row's bytes (`c` values).
#[derive(Clone, Copy)]
struct GatherShape {
    n: usize,
    k: usize,
    w: usize,
    row_bytes: usize,
}

impl GatherShape {
    /// Copies the values' row `i` (checked) of batch `p / w` to output row `p`.
    fn copy(self, fx: &mut Fx, vals: Value, out: Value, p: Value, i: Value) {
        let row = if self.n == 1 {
            i
        } else {
            let b = fx.b.ins().udiv_imm_s(p, self.w as i64);
            let row = fx.b.ins().imul_imm_s(b, self.k as i64);
            fx.b.ins().iadd(row, i)
        };
        let from = fx.b.ins().imul_imm_s(row, self.row_bytes as i64);
        let from = fx.b.ins().iadd(vals, from);
        let to = fx.b.ins().imul_imm_s(p, self.row_bytes as i64);
        let to = fx.b.ins().iadd(out, to);
        copy_bytes(fx, from, to, self.row_bytes);
    }
}

/// Evaluates an expression on input values (domain values, or `F32X4` lanes), leaving out
/// the rounding that `deferral` leaves to the narrowing of the result (its bounds evaluated on
/// the unrounded value).
pub fn eval_with(fx: &mut Fx, expr: &Expr, inputs: Vec<Value>, deferral: Option<&Deferral>) -> Result<Value, String> {
    eval_given(fx, expr, inputs, deferral, None)
}

/// [`eval_with`], with op `given.0`'s value already computed (`given.1`).
pub fn eval_given(fx: &mut Fx, expr: &Expr, inputs: Vec<Value>, deferral: Option<&Deferral>, given: Option<(usize, Value)>) -> Result<Value, String> {
    let mut values = inputs;
    for (i, op) in expr.ops.iter().enumerate() {
        let args: Vec<Value> = op.args.iter().map(|&a| values[a]).collect();
        let types = expr.arg_types(op);
        if let Some((_, v)) = given.filter(|&(g, _)| g == i) {
            // The op's f32 value, computed before: rounded to its type as the op rounds it.
            let v = fx.round_result(op, &args, &types, v);
            values.push(v);
            continue;
        }
        // A clamp's two bounds, its maximum first.
        let mut bounds: Vec<&super::narrow::Bound> = deferral.map(|d| d.bounds.iter().filter(|b| b.op == i).collect()).unwrap_or_default();
        bounds.sort_by_key(|b| !b.max);
        let v = if deferral.is_some_and(|d| d.op == Some(i)) {
            fx.ew_unrounded(op, &args, &types)?
        } else if deferral.is_some_and(|d| d.widen) && i + 1 == expr.ops.len() {
            // The cast to f32 of the deferred f16 value: the staging's RoundF16 does it.
            args[0]
        } else if let Some(b) = bounds.first() {
            let x = if b.chain_first { args[0] } else { args[1] };
            bounds.iter().fold(x, |x, b| fx.bound_unrounded(b, x))
        } else {
            fx.ew(op, &args, &types)?
        };
        values.push(v);
    }
    Ok(*values.last().expect("at least one value"))
}

/// Rows at most this long split an elementwise kernel's one long row ([`split_long_row`]).
const SPLIT_ROW_MAX: usize = 8192;

/// A one-dimensional elementwise kernel of more than [`SPLIT_ROW_MAX`] elements (every input
/// contiguous or one value: they collapsed into one dimension) as rows of the longest length
/// up to that, a multiple of four and at least 1024, that divides it: its work items are rows,
/// and one row was all the work there was (EfficientNet-B0's SiLU kernels ran on one thread of
/// two). `None` where it is not such a kernel or no length divides it. The same elements, the
/// same bits.
pub(super) fn split_long_row(e: &Elementwise) -> Option<Elementwise> {
    let &[n] = e.shape.as_slice() else { return None };
    if n <= SPLIT_ROW_MAX {
        return None;
    }
    let c = (1024..=SPLIT_ROW_MAX).rev().step_by(4).find(|c| n.is_multiple_of(*c))?;
    let inputs = e.inputs.iter().map(|i| crate::lower::Strided { strides: vec![i.strides[0] * c, i.strides[0]], ..i.clone() }).collect();
    Some(Elementwise { shape: vec![n / c, c], inputs, ..e.clone() })
}

/// Where elementwise input `i` holds the first element `at` of a row: `at`, or for rows
/// picked by a table ([`crate::lower::Strided::rows`]: a gather folded into its reader, whose
/// rows are the kernel's) the start of the values' row the table gives row `at / len`.
fn row_looked_up(fx: &mut Fx, i: &crate::lower::Strided, at: Value) -> Value {
    let Some(l) = &i.rows else { return at };
    let r = fx.b.ins().udiv_imm_s(at, l.len as i64);
    let table = fx.buffer(l.indices.0);
    let mut row = fx.load(l.dtype, table, r);
    if l.n > 1 {
        let batch = fx.b.ins().udiv_imm_s(r, l.w as i64);
        let first = fx.b.ins().imul_imm_s(batch, l.k as i64);
        row = fx.b.ins().iadd(row, first);
    }
    fx.b.ins().imul_imm_s(row, l.len as i64)
}

/// `Σ coord_d · strides_d` for the row-major coordinates of `row` over `dims`.
pub fn row_offset<S: crate::lower::Stride>(fx: &mut Fx, row: Value, dims: &[usize], strides: &[S]) -> Value {
    let mut off = fx.i(0);
    let mut rest = row;
    for d in (0..dims.len()).rev() {
        if strides[d] != S::zero() {
            let c = if d == 0 { rest } else { fx.b.ins().urem_imm_s(rest, dims[d] as i64) };
            let t = fx.b.ins().imul_imm_s(c, strides[d].get());
            off = fx.b.ins().iadd(off, t);
        }
        if d > 0 {
            rest = fx.b.ins().udiv_imm_s(rest, dims[d] as i64);
        }
    }
    off
}

fn zero(fx: &mut Fx, ty: cranelift_codegen::ir::Type) -> Value {
    match ty {
        F64 => fx.b.ins().f64const(0.0),
        _ => fx.f(ty, 0.0),
    }
}

fn neg_inf(fx: &mut Fx, ty: cranelift_codegen::ir::Type) -> Value {
    match ty {
        F64 => fx.b.ins().f64const(f64::NEG_INFINITY),
        _ => fx.f(ty, f32::NEG_INFINITY),
    }
}

/// The valid window offsets `[lo, hi)` for a window of `k` starting at `start` over `0..len`.
/// The most taps of a pooling window [`whole_window`] unrolls (a 5×5 one).
pub(super) const POOL_UNROLLED_TAPS: usize = 25;

/// Four channels of a float pooling window that lies inside the input, its first tap at
/// `from` (an input of `iw × c` per row): the same values as the clipped loop's. A maximum
/// is `maxps` per tap (`v > acc ? v : acc`: the earlier of equal values, as TOSA's `a >= b ? a
/// : b`) with the lanes that met a NaN made the canonical NaN at the end, where the loop spent
/// two compares and two selects per tap; an average sums from zero in the loop's order.
fn whole_window(fx: &mut Fx, p: &Pool, din: DType, from: Value, (iw, c): (usize, usize)) -> Value {
    let e = din.byte_size();
    let offsets: Vec<i32> = (0..p.kernel[0]).flat_map(|ky| (0..p.kernel[1]).map(move |kx| ((ky * iw + kx) * c * e) as i32)).collect();
    if p.avg {
        let mut acc = zero(fx, F32X4);
        for &off in &offsets {
            let v = fx.load4_at(din, from, off);
            acc = fx.b.ins().fadd(acc, v);
        }
        let count = fx.f(F32X4, offsets.len() as f32);
        return fx.b.ins().fdiv(acc, count);
    }
    let mut acc = fx.load4_at(din, from, offsets[0]);
    let mut nan = fx.b.ins().fcmp(FloatCC::Unordered, acc, acc);
    for &off in &offsets[1..] {
        let v = fx.load4_at(din, from, off);
        let less = fx.b.ins().fcmp(FloatCC::LessThan, acc, v);
        let mask = fx.b.ins().bitcast(F32X4, super::emit::lanes(), less);
        acc = fx.b.ins().bitselect(mask, v, acc);
        let u = fx.b.ins().fcmp(FloatCC::Unordered, v, v);
        nan = fx.b.ins().bor(nan, u);
    }
    let q = fx.f(F32X4, f32::NAN);
    fx.sel(nan, q, acc)
}

fn clip(fx: &mut Fx, start: Value, k: usize, len: usize) -> (Value, Value) {
    let zero = fx.i(0);
    let neg = fx.b.ins().ineg(start);
    let lo = fx.b.ins().smax(neg, zero);
    let lim = fx.i(len as i64);
    let room = fx.b.ins().isub(lim, start);
    let kk = fx.i(k as i64);
    let hi = fx.b.ins().smin(room, kk);
    let hi = fx.b.ins().smax(hi, lo);
    (lo, hi)
}

fn reduce_init(fx: &mut Fx, kind: ReduceKind, ty: cranelift_codegen::ir::Type) -> Value {
    match (ty, kind) {
        (F32 | F32X4, ReduceKind::Sum) => fx.f(ty, 0.0),
        (F32 | F32X4, ReduceKind::Prod) => fx.f(ty, 1.0),
        (F32 | F32X4, ReduceKind::Max) => fx.f(ty, f32::NEG_INFINITY),
        (F32 | F32X4, _) => fx.f(ty, f32::INFINITY),
        (F64, ReduceKind::Sum) => fx.b.ins().f64const(0.0),
        (F64, ReduceKind::Prod) => fx.b.ins().f64const(1.0),
        (F64, ReduceKind::Max) => fx.b.ins().f64const(f64::NEG_INFINITY),
        (F64, _) => fx.b.ins().f64const(f64::INFINITY),
        (I8, ReduceKind::All | ReduceKind::Min | ReduceKind::Prod) => fx.b.ins().iconst(I8, 1),
        (I8, _) => fx.b.ins().iconst(I8, 0),
        (_, ReduceKind::Sum) => fx.i(0),
        (_, ReduceKind::Prod) => fx.i(1),
        (_, ReduceKind::Max) => fx.i(i64::MIN),
        (_, _) => fx.i(i64::MAX),
    }
}

fn reduce_step(fx: &mut Fx, kind: ReduceKind, acc: Value, v: Value) -> Value {
    let ty = fx.b.func.dfg.value_type(acc);
    let float = matches!(ty, F32 | F32X4 | F64);
    match (float, ty == I8, kind) {
        (true, _, ReduceKind::Sum) => fx.b.ins().fadd(acc, v),
        (true, _, ReduceKind::Prod) => fx.b.ins().fmul(acc, v),
        (true, _, ReduceKind::Max) => fx.tosa_max(acc, v),
        (true, _, _) => fx.tosa_min(acc, v),
        (false, true, ReduceKind::All | ReduceKind::Min | ReduceKind::Prod) => fx.b.ins().band(acc, v),
        (false, true, _) => fx.b.ins().bor(acc, v),
        (false, false, ReduceKind::Sum) => fx.b.ins().iadd(acc, v),
        (false, false, ReduceKind::Prod) => fx.b.ins().imul(acc, v),
        (false, false, ReduceKind::Max) => fx.b.ins().smax(acc, v),
        (false, false, _) => fx.b.ins().smin(acc, v),
    }
}

/// Index of the first maximum (the first NaN wins), as the reference computes it.
fn argmax(fx: &mut Fx, d: DType, src: Value, at0: Value, len: usize, inner: usize) -> Value {
    let first = fx.load(d, src, at0);
    let zero = fx.i(0);
    let r = fx.for_n(0, len as i64, 1, &[zero, first], |fx, k, st| {
        let (best, bv) = (st[0], st[1]);
        let off = fx.b.ins().imul_imm_s(k, inner as i64);
        let at = fx.b.ins().iadd(at0, off);
        let cur = fx.load(d, src, at);
        let take = match domain(d) {
            F32 | F64 => {
                let best_nan = fx.b.ins().fcmp(FloatCC::Unordered, bv, bv);
                let cur_nan = fx.b.ins().fcmp(FloatCC::Unordered, cur, cur);
                let gt = fx.b.ins().fcmp(FloatCC::GreaterThan, cur, bv);
                let t = fx.b.ins().bor(cur_nan, gt);
                let one = fx.b.ins().iconst(I8, 1);
                let not_best_nan = fx.b.ins().bxor(best_nan, one);
                fx.b.ins().band(t, not_best_nan)
            }
            _ => fx.b.ins().icmp(IntCC::SignedGreaterThan, cur, bv),
        };
        let nb = fx.b.ins().select(take, k, best);
        let nv = fx.b.ins().select(take, cur, bv);
        vec![nb, nv]
    });
    r[0]
}

/// `semantics::int_average` for a window sum `acc` over `count` (≥ 1) pixels, both i64.
fn int_average(fx: &mut Fx, acc: Value, count: Value, out_zp: i64, d: f16c_dialect::DType) -> Value {
    // reciprocal_scale: k = 64 - clz(count - 1), multiplier = ((2^30 + 1) << k) / count.
    let c1 = fx.b.ins().iadd_imm_s(count, -1);
    let lz = fx.b.ins().clz(c1);
    let w = fx.i(64);
    let k = fx.b.ins().isub(w, lz);
    let base = fx.i((1 << 30) + 1);
    let num = fx.b.ins().ishl(base, k);
    let m = fx.b.ins().sdiv(num, count);
    // apply_scale_32: (acc · multiplier + 2^(shift − 1)) >> shift, shift = 30 + k.
    let shift = fx.b.ins().iadd_imm_s(k, 30);
    let half_shift = fx.b.ins().iadd_imm_s(k, 29);
    let one = fx.i(1);
    let round = fx.b.ins().ishl(one, half_shift);
    let r = fx.b.ins().imul(acc, m);
    let r = fx.b.ins().iadd(r, round);
    let r = fx.b.ins().sshr(r, shift);
    let r = fx.b.ins().iadd_imm_s(r, out_zp);
    let (lo, hi) = d.int_range();
    let (lo, hi) = (fx.i(lo), fx.i(hi));
    let r = fx.b.ins().smax(r, lo);
    fx.b.ins().smin(r, hi)
}

/// A converting move between f32 and f16 done in bulk: runs of the output, contiguous in it,
/// are first copied as they are (the source's bits) into scratch, laid out as in the output,
/// then converted by one runtime call each (`NarrowF16`, `WidenF16`: F16C where the CPU has
/// it), rather than element by element in software. The move's dimensions from `dim` on are
/// dense in the output, `inner` elements per index of `dim`; a run is `rows` indices of `dim`.
#[derive(Clone, Copy, Debug)]
pub(super) struct Bulk {
    dim: usize,
    pub(super) inner: usize,
    pub(super) rows: usize,
    /// Narrow (f32 source) or widen (f16 source).
    narrow: bool,
}

impl Bulk {
    /// Most elements staged at a time (16 KiB of f32).
    const STAGED_MAX: usize = 4096;
    /// Fewest elements per runtime call: shorter runs keep the element-by-element copy.
    const RUN_MIN: usize = 32;

    pub(super) fn of(m: &crate::lower::Move, source: DType, out: DType) -> Option<Bulk> {
        let narrow = match (source, out) {
            (DType::F32, DType::F16) => true,
            (DType::F16, DType::F32) => false,
            _ => return None,
        };
        // The output's dense innermost dimensions `dense..`.
        let rank = m.shape.len();
        let mut dense = rank;
        let mut block = 1;
        while dense > 0 && m.dst_strides[dense - 1] == block as isize {
            block *= m.shape[dense - 1];
            dense -= 1;
        }
        // The outermost of them of which one index fits in the staging area: its runs.
        let inner_of = |d: usize| m.shape[d + 1..].iter().product::<usize>();
        let dim = (dense..rank).find(|&d| inner_of(d) <= Self::STAGED_MAX)?;
        let inner = inner_of(dim);
        let rows = m.shape[dim].min(Self::STAGED_MAX / inner);
        (rows * inner >= Self::RUN_MIN).then_some(Bulk { dim, inner, rows, narrow })
    }

    /// Loops over the move's dimensions before `dim` (`d` on, at element offsets `s` of `src`
    /// and `t` of `dst`), then converts their runs.
    fn copy(&self, fx: &mut Fx, m: &crate::lower::Move, d: usize, (s, t): (Value, Value), (src, dst): (Value, Value)) {
        if d < self.dim {
            fx.each_n(0, m.shape[d] as i64, 1, |fx, i| {
                let si = fx.b.ins().imul_imm_s(i, m.src_strides[d] as i64);
                let si = fx.b.ins().iadd(s, si);
                let ti = fx.b.ins().imul_imm_s(i, m.dst_strides[d] as i64);
                let ti = fx.b.ins().iadd(t, ti);
                self.copy(fx, m, d + 1, (si, ti), (src, dst));
            });
            return;
        }
        let (from, to, lc) = if self.narrow { (DType::F32, DType::F16, Libcall::NarrowF16) } else { (DType::F16, DType::F32, Libcall::WidenF16) };
        // `rows` indices of `dim` from `first`: their bits into scratch, then converted.
        let run = |fx: &mut Fx, first: Value, rows: usize| {
            let sub = crate::lower::Move {
                shape: [&[rows][..], &m.shape[d + 1..]].concat(),
                src_strides: m.src_strides[d..].to_vec(),
                dst_strides: m.dst_strides[d..].to_vec(),
                ..m.clone()
            };
            let si = fx.b.ins().imul_imm_s(first, m.src_strides[d] as i64);
            let si = fx.b.ins().iadd(s, si);
            let zero = fx.i(0);
            let bits = Element::Bits(from.byte_size(), if self.narrow { I32 } else { I16 });
            copy_dims(fx, &loop_order(&sub), 0, si, zero, src, fx.scratch, bits);
            let ti = fx.b.ins().imul_imm_s(first, m.dst_strides[d] as i64);
            let ti = fx.b.ins().iadd(t, ti);
            let out = fx.addr(dst, ti, to.byte_size());
            let count = fx.i((rows * self.inner) as i64);
            fx.libcall(lc, &[fx.scratch, out, count]);
        };
        let n = m.shape[d];
        let full = n / self.rows * self.rows;
        fx.each_n(0, full as i64, self.rows as i64, |fx, first| {
            run(fx, first, self.rows);
        });
        if full < n {
            let first = fx.i(full as i64);
            run(fx, first, n - full);
        }
    }
}

/// How a copy moves one element: its bits (bytes, and the integer type that holds them), or
/// converted from one type to the other (a cast the lowering folded into the copy, where
/// [`Bulk`] does not apply: a conversion with bf16, or short runs).
#[derive(Clone, Copy)]
enum Element {
    Bits(usize, cranelift_codegen::ir::Type),
    Convert(DType, DType),
}

/// The longest dimension [`copy_dims`] unrolls.
const UNROLLED_MAX: usize = 16;

/// `m` with its dimensions in the order [`copy_dims`] loops over them best: where the innermost
/// is not contiguous on both sides (a transpose's), the shortest dimension of at most
/// [`UNROLLED_MAX`] indices moved innermost, to be unrolled.
pub(super) fn loop_order(m: &crate::lower::Move) -> crate::lower::Move {
    let last = m.shape.len() - 1;
    let mut m = m.clone();
    if m.src_strides[last] == 1 && m.dst_strides[last] == 1 {
        return m;
    }
    if let Some(d) = (0..=last).filter(|&d| m.shape[d] <= UNROLLED_MAX).min_by_key(|&d| (m.shape[d], std::cmp::Reverse(d))) {
        for v in [&mut m.src_strides, &mut m.dst_strides] {
            let x = v.remove(d);
            v.push(x);
        }
        let x = m.shape.remove(d);
        m.shape.push(x);
    }
    m
}

/// A move that is a transpose of 32-bit values in 4 x 4 tiles: along dimension `a` the source
/// is contiguous, along `b` the destination, both of a multiple of four; a work item (a band)
/// is four indices of `b` and every index of `a`, at one index of the other dimensions. Each
/// tile is four vector loads along `a`, [`Fx::transpose4`] and four vector stores along `b`
/// (a U-Net's NCHW -> NHWC transposes moved one element per load and store).
#[derive(Clone, Copy)]
pub(super) struct TileTranspose {
    pub(super) a: usize,
    b: usize,
    /// Work items: the other dimensions' indices times `b`'s in fours.
    pub(super) bands: usize,
}

impl TileTranspose {
    pub(super) fn of(m: &crate::lower::Move) -> Option<TileTranspose> {
        let a = (0..m.shape.len()).find(|&d| m.src_strides[d] == 1 && m.dst_strides[d] != 1)?;
        let b = (0..m.shape.len()).find(|&d| m.dst_strides[d] == 1 && m.src_strides[d] != 1)?;
        let outer: usize = (0..m.shape.len()).filter(|&d| d != a && d != b).map(|d| m.shape[d]).product();
        // The tile's rows and columns at constant byte offsets of an i32.
        let offsets_fit = [m.src_strides[b], m.dst_strides[a]].iter().all(|&st| i32::try_from(st * 16).is_ok());
        (m.shape[a].is_multiple_of(4) && m.shape[b].is_multiple_of(4) && m.shape[a] >= 8 && offsets_fit).then_some(TileTranspose { a, b, bands: outer * m.shape[b] / 4 })
    }

    /// Band `item` of `m`: four indices of `b`, every index of `a`, in tiles.
    fn band(&self, fx: &mut Fx, m: &crate::lower::Move, (src, dst): (Value, Value), item: Value) {
        let (a, b) = (self.a, self.b);
        let bands_b = m.shape[b] / 4;
        // The band's start: its index of `b` (four at a time), then the other dimensions,
        // innermost last, from the item number.
        let rest = fx.b.ins().udiv_imm_s(item, bands_b as i64);
        let bb = fx.b.ins().urem_imm_s(item, bands_b as i64);
        let b0 = fx.b.ins().imul_imm_s(bb, 4);
        let others: Vec<usize> = (0..m.shape.len()).filter(|&d| d != a && d != b).collect();
        let dims: Vec<usize> = others.iter().map(|&d| m.shape[d]).collect();
        let at = |fx: &mut Fx, strides: &[isize], offset: usize| {
            let picked: Vec<isize> = others.iter().map(|&d| strides[d]).collect();
            let o = row_offset(fx, rest, &dims, &picked);
            let along_b = fx.b.ins().imul_imm_s(b0, strides[b] as i64);
            let o = fx.b.ins().iadd(o, along_b);
            fx.b.ins().iadd_imm_s(o, offset as i64)
        };
        let (s, t) = (at(fx, &m.src_strides, m.src_offset), at(fx, &m.dst_strides, m.dst_offset));
        let (from, to) = (fx.addr(src, s, 4), fx.addr(dst, t, 4));
        let mem = super::emit::mem();
        fx.each_n(0, m.shape[a] as i64, 4, |fx, a0| {
            // Rows r of the tile: four values along `a` at index b0 + r of `b`.
            let at = fx.b.ins().imul_imm_s(a0, 4);
            let p = fx.b.ins().iadd(from, at);
            let rows: [Value; 4] = std::array::from_fn(|r| fx.b.ins().load(F32X4, mem, p, (r as isize * m.src_strides[b] * 4) as i32));
            let cols = fx.transpose4(rows);
            let at = fx.b.ins().imul_imm_s(a0, m.dst_strides[a] as i64 * 4);
            let q = fx.b.ins().iadd(to, at);
            for (l, v) in cols.into_iter().enumerate() {
                fx.b.ins().store(mem, v, q, (l as isize * m.dst_strides[a] * 4) as i32);
            }
        });
    }
}

/// How [`copy_dims`] moves `m`'s elements, for the plan: contiguous runs of bits as bytes,
/// others one at a time.
pub(super) fn how_moved(m: &crate::lower::Move, converts: bool) -> &'static str {
    let o = loop_order(m);
    let last = o.shape.len() - 1;
    if !converts && o.src_strides[last] == 1 && o.dst_strides[last] == 1 {
        "contiguous runs, 64 bytes at a time"
    } else {
        "element by element, the shortest non-contiguous dimension unrolled"
    }
}

/// A one-dimensional move, contiguous on both sides and large enough to split, as slices of at
/// least [`COPY_SLICE_BYTES`] (`[n / b, b]`, `b` the smallest such divisor of `n`) to share among
/// threads: ResNet-50's 3 MB slice of its activations ran on one. Other moves as they are.
pub(super) fn in_slices(m: crate::lower::Move, elem: usize) -> crate::lower::Move {
    let [n] = m.shape[..] else { return m };
    if m.src_strides[0] != 1 || m.dst_strides[0] != 1 || n * elem < SPLIT_COPY_MIN_BYTES {
        return m;
    }
    let Some(b) = (COPY_SLICE_BYTES.div_ceil(elem)..=n / 2).find(|b| n % b == 0) else { return m };
    let b_stride = b as isize;
    crate::lower::Move { shape: vec![n / b, b], src_strides: vec![b_stride, 1], dst_strides: vec![b_stride, 1], ..m }
}

/// The smallest slice [`in_slices`] cuts a contiguous move into.
const COPY_SLICE_BYTES: usize = 1 << 14;

/// The integer type that holds an element of `elem` bytes, moved as bits.
fn bits_type(elem: usize) -> cranelift_codegen::ir::Type {
    match elem {
        1 => I8,
        2 => I16,
        4 => I32,
        _ => I64,
    }
}

/// The smallest copy of bits the JIT splits into work items (a slice of its outermost loop
/// each).
pub(super) const SPLIT_COPY_MIN_BYTES: usize = 1 << 16;

/// Nested loops over a move's dimensions (in [`loop_order`]); the innermost contiguous case
/// copies bytes, a short innermost dimension is unrolled (every element at a constant offset).
#[allow(clippy::too_many_arguments, reason = "an emitter's IR values, each computed by its caller")]
fn copy_dims(fx: &mut Fx, m: &crate::lower::Move, d: usize, s: Value, t: Value, src: Value, dst: Value, how: Element) {
    let last = m.shape.len() - 1;
    if let (true, Element::Bits(elem, _)) = (d == last && m.src_strides[d] == 1 && m.dst_strides[d] == 1, how) {
        let from = fx.addr(src, s, elem);
        let to = fx.addr(dst, t, elem);
        copy_bytes(fx, from, to, m.shape[d] * elem);
        return;
    }
    let offset = |stride: isize, i: usize, elem: usize| i32::try_from(stride * (i * elem) as isize).ok();
    if let (true, Element::Bits(elem, ety)) = (d == last && m.shape[d] <= UNROLLED_MAX, how) {
        let n = m.shape[d];
        let offsets: Option<Vec<(i32, i32)>> = (0..n).map(|i| Some((offset(m.src_strides[d], i, elem)?, offset(m.dst_strides[d], i, elem)?))).collect();
        if let Some(offsets) = offsets {
            let from = fx.addr(src, s, elem);
            let to = fx.addr(dst, t, elem);
            for (so, to_off) in offsets {
                let v = fx.b.ins().load(ety, super::emit::mem(), from, so);
                fx.b.ins().store(super::emit::mem(), v, to, to_off);
            }
            return;
        }
    }
    fx.each_n(0, m.shape[d] as i64, 1, |fx, i| {
        let si = fx.b.ins().imul_imm_s(i, m.src_strides[d] as i64);
        let si = fx.b.ins().iadd(s, si);
        let ti = fx.b.ins().imul_imm_s(i, m.dst_strides[d] as i64);
        let ti = fx.b.ins().iadd(t, ti);
        match how {
            _ if d < last => copy_dims(fx, m, d + 1, si, ti, src, dst, how),
            Element::Bits(elem, ety) => {
                let from = fx.addr(src, si, elem);
                let to = fx.addr(dst, ti, elem);
                let v = fx.b.ins().load(ety, super::emit::mem(), from, 0);
                fx.b.ins().store(super::emit::mem(), v, to, 0);
            }
            Element::Convert(from, to) => {
                let v = fx.load(from, src, si);
                let v = fx.round_to(to, v);
                fx.store(to, dst, ti, v);
            }
        }
    });
}

/// Copies `n` bytes (a constant) from `from` to `to`: 64 at a time (four 16-byte vectors) in a
/// loop, then the rest in 16-, 8-, 4-, 2- and 1-byte moves at constant offsets.
pub fn copy_bytes(fx: &mut Fx, from: Value, to: Value, n: usize) {
    let m = super::emit::mem();
    let blocks = if n >= 128 { n / 64 } else { 0 };
    // (No loop where there are no blocks: a gather's four-byte rows ran an empty one per value.)
    if blocks > 0 {
        fx.each_n(0, blocks as i64, 1, |fx, i| {
            let off = fx.b.ins().imul_imm_s(i, 64);
            let (f, t) = (fx.b.ins().iadd(from, off), fx.b.ins().iadd(to, off));
            for at in (0..64).step_by(16) {
                let v = fx.b.ins().load(I8X16, m, f, at);
                fx.b.ins().store(m, v, t, at);
            }
        });
    }
    let mut at = blocks * 64;
    let tail = std::iter::repeat_n((I8X16, 16), (n - at) / 16).chain([(I64, 8), (I32, 4), (I16, 2), (I8, 1)]);
    for (ty, size) in tail {
        if n - at >= size {
            let v = fx.b.ins().load(ty, m, from, at as i32);
            fx.b.ins().store(m, v, to, at as i32);
            at += size;
        }
    }
}


/// A row kernel's decisions (a group of [`ROW_GROUP`] rows per work item), made before its
/// code is emitted: where each full value lives.
pub(super) struct RowsPlan {
    /// Inputs, and the last value (the result).
    n_in: usize,
    last: usize,
    /// Scratch for the full intermediate values, in their compute type, and for the full f16
    /// and bf16 inputs, widened a row at a time (once for all rows where every row reads the
    /// same; f16 by one runtime call, bf16 four lanes at a time): the reductions and maps then
    /// read f32, rather than widen each value in software (f16: about sixteen instructions per
    /// four, more one at a time; bf16: a layer norm's scalar f64 stages loaded and widened each
    /// value one at a time, 1.8x its f32 time). Per value, its offset and type.
    slots: Vec<Option<(usize, DType)>>,
    /// Each row of a work item's group has its own region of this many bytes (a widened input
    /// every row reads the same lives in the first row's).
    stride: usize,
    /// Each value's type, and whether it is a full row (not a scalar per row).
    dtypes: Vec<DType>,
    full: Vec<bool>,
    /// Per stage, the loop its run of elementwise stages (up to the next reduction) takes when
    /// that run is one loop over the group's rows ([`fused_run`]).
    fused: Vec<Option<FusedRun>>,
}

/// A run of a rows kernel's elementwise stages computed in one loop over the group's rows
/// ([`fused_run`]): full f32 and f64 ops (a select's condition may be a per-row boolean), none
/// of them an exp the runtime computes for a whole f32 row; the run's scalar ops any.
#[derive(Clone, Copy, Debug, PartialEq)]
struct FusedRun {
    /// Its first and past-its-last stage.
    start: usize,
    end: usize,
    /// f32 values only: four lanes at a time (then one by one), else one at a time.
    vector: bool,
    /// (One at a time) the sum or other serial reduction right after the run, of one of its
    /// values, taken in the same loop (each row's in index order, as on its own).
    reduce: bool,
}

impl FusedRun {
    /// The run starting at stage `start` of `r`, if it is one loop.
    fn of(r: &Rows, start: usize, dtype_of: &dyn Fn(RowValue) -> DType) -> Option<FusedRun> {
        let end = r.run_end(start);
        let maps = || r.stages[start..end].iter().filter_map(|st| if let RowStage::Map { op, full } = st { Some((op, *full)) } else { None });
        let wide_or_single = |d: DType| matches!(d, DType::F32 | DType::F64);
        // A select's per-row condition stays a scalar test of the lanes.
        let row_test = |op: &crate::lower::EwOp, i: usize| i == 0 && matches!(op.kind, crate::lower::EwKind::Select) && !r.full(op.args[0]);
        let args_are = |op: &crate::lower::EwOp, ok: &dyn Fn(DType) -> bool| op.args.iter().enumerate().all(|(i, &a)| ok(dtype_of(a)) || row_test(op, i));
        let fuses = end > start
            && maps().any(|(_, full)| full)
            && maps().filter(|&(_, full)| full).all(|(op, _)| {
                let exp = matches!(op.kind, crate::lower::EwKind::Unary(f16c_dialect::UnaryOp::Exp));
                !exp && wide_or_single(op.dtype) && args_are(op, &wide_or_single)
            });
        if !fuses {
            return None;
        }
        // (The run's scalar stages are computed before the loop, as without it.)
        let vector = maps().filter(|&(_, full)| full).all(|(op, _)| op.dtype == DType::F32 && args_are(op, &|d| d == DType::F32));
        let n_in = r.inputs.len();
        let reduce = !vector
            && matches!(r.stages.get(end), Some(RowStage::Reduce { kind, arg, .. })
                if *arg >= n_in + start && *arg < n_in + end && matches!(r.stages[*arg - n_in], RowStage::Map { full: true, .. })
                    && !RowsPlan::in_lanes(*kind, dtype_of(*arg), dtype_of(*arg), r.len));
        Some(FusedRun { start, end, vector, reduce })
    }

    /// The first stage after it (past the reduction it takes).
    fn next(&self) -> usize {
        self.end + usize::from(self.reduce)
    }
}

impl RowsPlan {
    pub(super) fn new(r: &Rows) -> RowsPlan {
        let n_in = r.inputs.len();
        let last = n_in + r.stages.len() - 1;
        let dtype_of = |v: RowValue| if v < n_in { r.inputs[v].dtype } else { r.dtypes[v - n_in] };
        let full_of = |v: RowValue| r.full(v);
        let mut fused: Vec<Option<FusedRun>> = vec![None; r.stages.len()];
        let mut si = 0;
        while si < r.stages.len() {
            match FusedRun::of(r, si, &dtype_of) {
                Some(run) => {
                    fused[run.start..run.next()].fill(Some(run));
                    si = run.next();
                }
                None => si += 1,
            }
        }
        let mut slots: Vec<Option<(usize, DType)>> = vec![None; last + 1];
        let mut bytes = 0;
        for (v, slot) in slots.iter_mut().enumerate().take(last) {
            let widened = v < n_in && matches!(dtype_of(v), DType::F16 | DType::BF16);
            // A value of a fused run that no later stage reads stays in a register.
            let kept = v >= n_in && fused[v - n_in].is_none_or(|run| r.read_after(v, run.next()));
            if full_of(v) && (kept || widened) {
                // Floats in their compute type; an integer or boolean row (a test over rows of
                // one value, where every value is full) as itself: stored as f32, a select read
                // its i1 condition back as a float and Cranelift's lowering panicked.
                let t = match dtype_of(v) {
                    DType::F64 => DType::F64,
                    d if d.is_float() => DType::F32,
                    d => d,
                };
                *slot = Some((bytes, t));
                bytes += (r.len * t.byte_size()).next_multiple_of(16);
            }
        }
        let dtypes: Vec<DType> = (0..=last).map(dtype_of).collect();
        let full: Vec<bool> = (0..=last).map(full_of).collect();
        RowsPlan { n_in, last, slots, stride: bytes.next_multiple_of(64), dtypes, full, fused }
    }

    /// The plan in words (`--emit=kernels`, the profile).
    pub(super) fn describe(&self, r: &Rows) -> String {
        let reductions = r.stages.iter().filter(|s| matches!(s, RowStage::Reduce { .. })).count();
        let mut s = format!("{ROW_GROUP} rows of {} per work item, {} stages ({reductions} reductions), the group's rows interleaved", r.len, r.stages.len());
        let widened = (0..self.n_in).filter(|&k| self.slots[k].is_some()).count();
        if widened > 0 {
            s += &format!("; {widened} f16/bf16 input row(s) widened into scratch");
        }
        let runs: Vec<FusedRun> = (0..r.stages.len()).filter_map(|si| self.fused[si].filter(|run| run.start == si)).collect();
        if !runs.is_empty() {
            let with_sum = runs.iter().filter(|run| run.reduce).count();
            s += &format!("; {} run(s) of elementwise stages in one loop each", runs.len());
            if with_sum > 0 {
                s += &format!(", {with_sum} with the reduction after it");
            }
        }
        let kept = (self.n_in..self.last).filter(|&v| self.slots[v].is_some()).count();
        if kept > 0 {
            s += &format!("; {kept} intermediate row(s) in scratch");
        }
        s
    }

    /// Whether a reduction of `kind` over a row of `len` stored as `t` computing in `d` runs in
    /// lanes (a maximum or minimum of f32 values), else in index order.
    fn in_lanes(kind: ReduceKind, t: DType, d: DType, len: usize) -> bool {
        matches!(kind, ReduceKind::Max | ReduceKind::Min) && matches!(t, DType::F32 | DType::BF16) && domain(d) == F32 && len >= 2 * LANES
    }
}

/// A row kernel's buffers: its inputs' and its output's.
struct RowsCall {
    bases: Vec<Value>,
    out: Value,
}

impl RowsCall {
    /// Widens f16/bf16 input `k` from element `at` into its slot in the region of row `q` of
    /// the group.
    fn widen(&self, fx: &mut Fx, plan: &RowsPlan, r: &Rows, k: usize, at: Value, q: usize) {
        let (off, _) = plan.slots[k].expect("a widened input has a slot");
        let src = fx.addr(self.bases[k], at, 2);
        let dst = fx.b.ins().iadd_imm_s(fx.scratch, (q * plan.stride + off) as i64);
        super::pack::widen_run(fx, r.inputs[k].dtype, src, dst, r.len, false);
    }

    /// Where full value `v` of row `q` lives: (base, first index, element type as stored).
    fn place(&self, fx: &mut Fx, plan: &RowsPlan, r: &Rows, row_ats: &[Value], q: usize, v: RowValue) -> (Value, Value, DType) {
        if v == plan.last {
            (self.out, row_ats[q], plan.dtypes[v])
        } else if v < plan.n_in && plan.slots[v].is_none() {
            let at = if r.inputs[v].per_row { row_ats[q] } else { fx.i(0) };
            (self.bases[v], at, plan.dtypes[v])
        } else {
            let (off, t) = plan.slots[v].expect("full values have a slot");
            let region = if v < plan.n_in && !r.inputs[v].per_row { 0 } else { q * plan.stride };
            (fx.b.ins().iadd_imm_s(fx.scratch, (region + off) as i64), fx.i(0), t)
        }
    }
}

/// Work item `item` of a row kernel: its group's rows (past the last row, the last row again,
/// which writes the same values again), their widened inputs and scalars, then each stage.
fn rows_item(fx: &mut Fx, plan: &RowsPlan, r: &Rows, call: &RowsCall, item: Value) -> Emitted {
    let (n_in, len) = (plan.n_in, r.len);
    let first = fx.b.ins().imul_imm_s(item, ROW_GROUP as i64);
    let last_row = fx.i(r.rows as i64 - 1);
    let rows: Vec<Value> = (0..ROW_GROUP)
        .map(|q| {
            let row = fx.b.ins().iadd_imm_s(first, q as i64);
            fx.b.ins().smin(row, last_row)
        })
        .collect();
    let row_ats: Vec<Value> = rows.iter().map(|&row| fx.b.ins().imul_imm_s(row, len as i64)).collect();
    for (q, &at) in row_ats.iter().enumerate() {
        for k in (0..n_in).filter(|&k| plan.slots[k].is_some() && r.inputs[k].per_row) {
            call.widen(fx, plan, r, k, at, q);
        }
    }
    let mut group_scalars: Vec<Vec<Option<Value>>> = vec![vec![None; plan.last + 1]; ROW_GROUP];
    for (q, scalars) in group_scalars.iter_mut().enumerate() {
        for (k, i) in r.inputs.iter().enumerate().filter(|(_, i)| !i.full) {
            let at = if i.per_row { rows[q] } else { fx.i(0) };
            scalars[k] = Some(fx.load(i.dtype, call.bases[k], at));
        }
    }
    let mut next = 0;
    for (si, stage) in r.stages.iter().enumerate() {
        if si < next {
            continue;
        }
        if let Some(run) = plan.fused[si] {
            // The run's scalar stages for every row, then its full ones in one loop.
            for scalars in group_scalars.iter_mut() {
                for e in run.start..run.end {
                    if let RowStage::Map { op, full: false } = &r.stages[e] {
                        let args: Vec<Value> = op.args.iter().map(|&a| scalars[a].expect("scalar arguments come first")).collect();
                        let types: Vec<DType> = op.args.iter().map(|&a| plan.dtypes[a]).collect();
                        scalars[n_in + e] = Some(fx.ew(op, &args, &types)?);
                    }
                }
            }
            fused_run(fx, plan, r, run, &mut group_scalars, &mut |fx, q, v| call.place(fx, plan, r, &row_ats, q, v))?;
            next = run.next();
            continue;
        }
        let v = n_in + si;
        // A sum (or any reduction not taken in lanes) of every row of the group in one loop,
        // each row's in index order: the rows' chains overlap.
        if let RowStage::Reduce { kind, arg, dtype } = stage {
            let t_arg = call.place(fx, plan, r, &row_ats, 0, *arg).2;
            if !RowsPlan::in_lanes(*kind, t_arg, plan.dtypes[*arg], len) {
                let dom = domain(plan.dtypes[*arg]);
                let places: Vec<(Value, Value, DType)> = (0..ROW_GROUP).map(|q| call.place(fx, plan, r, &row_ats, q, *arg)).collect();
                let inits: Vec<Value> = (0..ROW_GROUP).map(|_| reduce_init(fx, *kind, dom)).collect();
                let kind = *kind;
                let accs = fx.for_n(0, len as i64, 1, &inits, |fx, j, acc| {
                    places
                        .iter()
                        .zip(acc)
                        .map(|(&(base, at0, t), &a)| {
                            let at = fx.b.ins().iadd(at0, j);
                            let x = fx.load(t, base, at);
                            reduce_step(fx, kind, a, x)
                        })
                        .collect()
                });
                for (scalars, acc) in group_scalars.iter_mut().zip(accs) {
                    scalars[v] = Some(fx.round_to(*dtype, acc));
                }
                continue;
            }
        }
        for (q, scalars) in group_scalars.iter_mut().enumerate() {
            let mut place = |fx: &mut Fx, v: RowValue| call.place(fx, plan, r, &row_ats, q, v);
            match stage {
                RowStage::Reduce { kind, arg, dtype } => {
                    let at = place(fx, *arg);
                    let acc = row_reduce(fx, *kind, at, plan.dtypes[*arg], len);
                    scalars[v] = Some(fx.round_to(*dtype, acc));
                }
                RowStage::Map { op, full: false } => {
                    let args: Vec<Value> = op.args.iter().map(|&a| scalars[a].expect("scalar arguments come first")).collect();
                    let types: Vec<DType> = op.args.iter().map(|&a| plan.dtypes[a]).collect();
                    scalars[v] = Some(fx.ew(op, &args, &types)?);
                }
                RowStage::Map { op, full: true } => row_map(fx, plan, len, op, scalars, v, &mut place)?,
            }
        }
    }
    Ok(())
}

/// A reduction of `kind` over one row (`len` values stored as `t` from `base[at0]`, computing
/// in the domain of `d`), in the reference's order, or in lanes where any order gives the
/// same value.
fn row_reduce(fx: &mut Fx, kind: ReduceKind, (base, at0, t): (Value, Value, DType), d: DType, len: usize) -> Value {
    let dom = domain(d);
    // In index order, one element at a time: a sum's rounding depends on the order (the
    // reference's is the contract).
    let serial = move |fx: &mut Fx| {
        let init = reduce_init(fx, kind, dom);
        fx.for_n(0, len as i64, 1, &[init], |fx, j, acc| {
            let at = fx.b.ins().iadd(at0, j);
            let x = fx.load(t, base, at);
            vec![reduce_step(fx, kind, acc[0], x)]
        })[0]
    };
    // (A bf16 row, a softmax's scores in bf16, widens exactly as it is loaded: the same
    // values.)
    if !RowsPlan::in_lanes(kind, t, d, len) {
        return serial(fx);
    }
    // A maximum or minimum is the same value in any order (a NaN gives the canonical NaN
    // either way) except the sign of a zero result, which is the row's first extreme zero's:
    // four lanes, then the row again in order where the result is ±0.
    let vec_end = len - len % LANES;
    let init = reduce_init(fx, kind, F32X4);
    let lanes = fx.for_n(0, vec_end as i64, LANES as i64, &[init], |fx, j, acc| {
        let at = fx.b.ins().iadd(at0, j);
        let x = fx.load4(t, base, at);
        vec![reduce_step(fx, kind, acc[0], x)]
    })[0];
    let mut r = fx.b.ins().extractlane(lanes, 0);
    for l in 1..LANES as u8 {
        let x = fx.b.ins().extractlane(lanes, l);
        r = reduce_step(fx, kind, r, x);
    }
    let r = fx.for_n(vec_end as i64, len as i64, 1, &[r], |fx, j, acc| {
        let at = fx.b.ins().iadd(at0, j);
        let x = fx.load(t, base, at);
        vec![reduce_step(fx, kind, acc[0], x)]
    })[0];
    let zero = fx.f(F32, 0.0);
    let is_zero = fx.b.ins().fcmp(FloatCC::Equal, r, zero);
    fx.if_else(is_zero, |fx| vec![serial(fx)], |_| vec![r])[0]
}

/// A full-row map stage `op` of one row into value `v`'s place, four lanes at a time where it
/// computes in f32 (an f32 exp of a full f32 row, the softmax's, by the runtime's sixteen-lane
/// loop: the same bits); its scalar arguments from `scalars`.
fn row_map(fx: &mut Fx, plan: &RowsPlan, len: usize, op: &crate::lower::EwOp, scalars: &[Option<Value>], v: RowValue, place: &mut dyn FnMut(&mut Fx, RowValue) -> (Value, Value, DType)) -> Emitted {
    let (dtypes, full) = (&plan.dtypes, &plan.full);
    let types: Vec<DType> = op.args.iter().map(|&a| dtypes[a]).collect();
    // A select's per-row boolean stays a scalar condition of the lanes.
    let row_test = |i: usize| i == 0 && matches!(op.kind, crate::lower::EwKind::Select) && !full[op.args[0]];
    let f32_domain = types.iter().enumerate().all(|(i, &d)| domain(d) == F32 || row_test(i)) && domain(op.dtype) == F32;
    let vec_end = if f32_domain { len - len % LANES } else { 0 };
    let places: Vec<Option<(Value, Value, DType)>> = op.args.iter().map(|&a| if full[a] { Some(place(fx, a)) } else { None }).collect();
    let (obase, oat, ot) = place(fx, v);
    if let (crate::lower::EwKind::Unary(f16c_dialect::UnaryOp::Exp), [Some((base, at0, DType::F32))], DType::F32, DType::F32) = (&op.kind, places.as_slice(), ot, op.dtype) {
        if types[0] == DType::F32 {
            let src = fx.addr(*base, *at0, 4);
            let dst = fx.addr(obase, oat, 4);
            let n = fx.i(len as i64);
            fx.libcall(Libcall::ExpArrayF32, &[src, dst, n]);
            return Ok(());
        }
    }
    // Elements `from..to`, four lanes at a time or one.
    let run = |fx: &mut Fx, from: usize, to: usize, vector: bool| -> Emitted {
        if from == to {
            return Ok(());
        }
        let args_at: Vec<Option<Value>> = op.args.iter().map(|&a| scalars[a].map(|s| if vector && domain(dtypes[a]) == F32 { fx.b.ins().splat(F32X4, s) } else { s })).collect();
        let step = if vector { LANES } else { 1 };
        fx.try_each_n(from as i64, to as i64, step as i64, |fx, j| {
            let args: Vec<Value> = places
                .iter()
                .zip(&args_at)
                .zip(&op.args)
                .map(|((p, s), &a)| match p {
                    Some((base, at0, t)) => {
                        let at = fx.b.ins().iadd(*at0, j);
                        let x = if vector { fx.load4(*t, *base, at) } else { fx.load(*t, *base, at) };
                        if *t != DType::F16 && dtypes[a] == DType::F16 {
                            // f16 values, widened or rounded before.
                            fx.mark_f16_grid(x);
                        }
                        x
                    }
                    None => s.expect("a scalar argument"),
                })
                .collect();
            let y = fx.ew(op, &args, &types)?;
            let at = fx.b.ins().iadd(oat, j);
            if vector { fx.store4(ot, obase, at, y) } else { fx.store(ot, obase, at, y) }
            Ok(())
        })
    };
    run(fx, 0, vec_end, true)?;
    run(fx, vec_end, len, false)
}

/// Where a row value of a fused run is kept: `(row, value)` to its base, offset and type.
type PlaceValue<'a> = dyn FnMut(&mut Fx, usize, RowValue) -> (Value, Value, DType) + 'a;

/// The full stages of `run` (and the reduction after it, where it takes it) for every row of
/// the group in one loop over the row: four lanes at a time and then one by one, or one by one,
/// each row's values in registers, stored only where a later stage reads them or they are the
/// result. Each op computes what [`row_map`] computes on the same values (f32 and f64 values
/// are kept exactly as they would be stored), and a reduction adds each row's values in index
/// order as [`rows_item`]'s own loop does: the same bits.
fn fused_run(fx: &mut Fx, plan: &RowsPlan, r: &Rows, run: FusedRun, group_scalars: &mut [Vec<Option<Value>>], place: &mut PlaceValue<'_>) -> Emitted {
    let n_in = plan.n_in;
    let fulls: Vec<(RowValue, &crate::lower::EwOp)> = (run.start..run.end)
        .filter_map(|e| match &r.stages[e] {
            RowStage::Map { op, full: true } => Some((n_in + e, op)),
            _ => None,
        })
        .collect();
    // Values read from memory (inputs, earlier runs' values) and stored ones, per row.
    let in_memory = |a: RowValue| plan.full[a] && a < n_in + run.start;
    let stored = |v: RowValue| r.read_after(v, run.next());
    let mut places: Vec<Vec<Option<(Value, Value, DType)>>> = vec![vec![None; plan.last + 1]; ROW_GROUP];
    for (q, row_places) in places.iter_mut().enumerate() {
        for &(v, op) in &fulls {
            for &a in &op.args {
                if in_memory(a) && row_places[a].is_none() {
                    row_places[a] = Some(place(fx, q, a));
                }
            }
            if stored(v) {
                row_places[v] = Some(place(fx, q, v));
            }
        }
    }
    let reduction = match r.stages.get(run.end) {
        Some(RowStage::Reduce { kind, arg, dtype }) if run.reduce => Some((*kind, *arg, *dtype)),
        _ => None,
    };
    // The group's rows one after the other inside the loop: their chains overlap.
    let body = |fx: &mut Fx, j: Value, vector: bool, accs: &[Value]| -> Result<Vec<Value>, String> {
        let mut next_accs = Vec::with_capacity(accs.len());
        for (q, (scalars, row_places)) in group_scalars.iter().zip(&places).enumerate() {
            let mut here: Vec<Option<Value>> = vec![None; plan.last + 1];
            for &(v, op) in &fulls {
                let types: Vec<DType> = op.args.iter().map(|&a| plan.dtypes[a]).collect();
                let args: Vec<Value> = op
                    .args
                    .iter()
                    .map(|&a| match (here[a], row_places[a], scalars[a]) {
                        (Some(x), _, _) => x,
                        (None, Some((base, at0, t)), _) => {
                            let at = fx.b.ins().iadd(at0, j);
                            if vector { fx.load4(t, base, at) } else { fx.load(t, base, at) }
                        }
                        (None, None, Some(x)) => if vector && domain(plan.dtypes[a]) == F32 { fx.b.ins().splat(F32X4, x) } else { x },
                        (None, None, None) => unreachable!("a run's arguments are computed before it, in memory or scalars"),
                    })
                    .collect();
                let y = fx.ew(op, &args, &types)?;
                if let Some((base, at0, t)) = row_places[v] {
                    let at = fx.b.ins().iadd(at0, j);
                    if vector { fx.store4(t, base, at, y) } else { fx.store(t, base, at, y) }
                }
                here[v] = Some(y);
            }
            if let Some((kind, arg, _)) = reduction {
                let x = here[arg].expect("the reduction reads a value of the run");
                next_accs.push(reduce_step(fx, kind, accs[q], x));
            }
        }
        Ok(next_accs)
    };
    let len = r.len;
    let vec_end = if run.vector { len - len % LANES } else { 0 };
    if vec_end > 0 {
        fx.try_for_n(0, vec_end as i64, LANES as i64, &[], |fx, j, _| body(fx, j, true, &[]))?;
    }
    let inits: Vec<Value> = match reduction {
        Some((kind, arg, _)) => (0..ROW_GROUP).map(|_| reduce_init(fx, kind, domain(plan.dtypes[arg]))).collect(),
        None => Vec::new(),
    };
    let accs = fx.try_for_n(vec_end as i64, len as i64, 1, &inits, |fx, j, accs| body(fx, j, false, accs))?;
    if let Some((_, _, dtype)) = reduction {
        for (scalars, acc) in group_scalars.iter_mut().zip(accs) {
            scalars[n_in + run.end] = Some(fx.round_to(dtype, acc));
        }
    }
    Ok(())
}

/// Columns of a row whose sigmoid, erf, tanh or exp one runtime call computes (16 KiB of
/// scratch for the results, as much again for computed arguments).
const WIDE_BLOCK: usize = 4096;
/// The shortest row whose math one runtime call per block computes (a ViT's GELU rows are
/// 1536 long).
const WIDE_MATH_MIN: usize = 64;
/// The runtime's sixteen-lane loops for an f32 math op, and their names in a plan (a libcall
/// computing an array of the contract's function: the same bits as the inline code).
const WIDE_MATH: [(f16c_dialect::UnaryOp, Libcall, &str); 4] = [
    (f16c_dialect::UnaryOp::Sigmoid, Libcall::SigmoidArrayF32, "sigmoid"),
    (f16c_dialect::UnaryOp::Erf, Libcall::ErfArrayF32, "erf"),
    (f16c_dialect::UnaryOp::Tanh, Libcall::TanhArrayF32, "tanh"),
    (f16c_dialect::UnaryOp::Exp, Libcall::ExpArrayF32, "exp"),
];

/// The sixteen-lane loop of `op`, if it is one of [`WIDE_MATH`]'s.
pub fn wide_math(op: &crate::lower::EwOp) -> Option<Libcall> {
    let crate::lower::EwKind::Unary(u) = op.kind else { return None };
    WIDE_MATH.iter().find(|(w, _, _)| *w == u).map(|&(_, lc, _)| lc)
}

/// A [`WIDE_MATH`] libcall's function, in words.
pub fn wide_name(call: Libcall) -> &'static str {
    WIDE_MATH.iter().find(|(_, lc, _)| *lc == call).map_or("?", |&(_, _, name)| name)
}

/// Neighbouring outputs of a reduction per work item, their chains side by side.
pub(super) const REDUCE_BLOCK: usize = 4 * LANES;

/// The longest row staged or widened in scratch (64 KiB in f32).
const STAGED_ROW_MAX: usize = 1 << 14;

/// An elementwise kernel's decisions (a row of the innermost dimension per work item), made
/// before its code is emitted.
pub(super) struct ElementwisePlan {
    rank: usize,
    /// The row's length, and the rows.
    inner: usize,
    rows: usize,
    /// Four lanes when everything computes in f32 and every input is contiguous or broadcast
    /// along the innermost dimension.
    vector: bool,
    /// (f16 result, or one cast to f32 last) the rounding the narrowing does, and whether the
    /// row is staged in scratch and narrowed by one runtime call ([`super::narrow`]).
    deferral: Option<Deferral>,
    narrowed: bool,
    /// Per input, the scratch offset of its row widened by one runtime call (an f16 input read
    /// along a row of at least eight values: software widening takes about sixteen
    /// instructions per four values).
    widened_at: Vec<Option<usize>>,
    /// A sigmoid, erf, tanh or exp of an f32 value (SiLU's `x · sigmoid(x)`, GELU's
    /// `erf(x/√2)` or `tanh(…)`) that the runtime's wide loop computes a block of the row at a
    /// time into scratch: the op, the libcall, and the input it reads in place (`None`: an
    /// argument the expression computes, computed for the block into scratch first).
    wide: Option<(usize, Libcall, Option<usize>)>,
    /// The scratch offset of `wide`'s blocks (after the staged row and the widened inputs).
    wide_at: usize,
    /// (SiLU of the only input, contiguous, all f32 or all bf16) the whole row by one call of
    /// the runtime's SiLU loop of that type, and the elements' bytes: nothing else is emitted.
    silu: Option<(Libcall, usize)>,
    /// Bytes of scratch.
    scratch: usize,
}

impl ElementwisePlan {
    /// The plan of `e`; `silu_f16`: the runtime's fp16 SiLU loop where the code may call it.
    pub(super) fn new(e: &Elementwise, silu_f16: Option<Libcall>) -> ElementwisePlan {
        let rank = e.shape.len();
        let inner = e.shape[rank - 1];
        let rows: usize = e.shape[..rank - 1].iter().product();
        let vector = e.expr.is_f32_domain() && inner >= LANES && e.inputs.iter().all(|i| i.strides[rank - 1] <= 1);
        let f16_out = e.expr.result_dtype() == DType::F16;
        let stageable = vector && inner <= STAGED_ROW_MAX;
        let deferral = if stageable { deferral(None, Some(&e.expr), &[]).filter(|d| f16_out || d.widen) } else { None };
        let narrowed = stageable && (f16_out || deferral.is_some());
        // SiLU in f32, bf16 or fp16 (EfficientNet-B0's between kernels that do not take it as
        // an epilogue; in bf16 and fp16 four lanes spent most of the time rounding): the
        // runtime's loop, nothing else (fp16's a micro-kernel, where the CPU has F16C).
        let contiguous = e.inputs[0].strides[rank - 1] == 1 && inner >= WIDE_MATH_MIN;
        let silu = match e.expr.silu_type() {
            Some(d @ (DType::F32 | DType::BF16)) if contiguous && !narrowed => Some((if d == DType::F32 { Libcall::SiluArrayF32 } else { Libcall::SiluArrayBf16 }, d.byte_size())),
            Some(DType::F16) if contiguous => silu_f16.map(|lc| (lc, 2)),
            _ => None,
        };
        if silu.is_some() {
            return ElementwisePlan { rank, inner, rows, vector, deferral, narrowed, widened_at: vec![None; e.inputs.len()], wide: None, wide_at: 0, silu, scratch: 0 };
        }
        let mut widened_at = vec![None; e.inputs.len()];
        let mut scratch = if narrowed { inner * 4 } else { 0 };
        if (8..=STAGED_ROW_MAX).contains(&inner) {
            for (slot, i) in widened_at.iter_mut().zip(&e.inputs) {
                if i.dtype == DType::F16 && i.strides[rank - 1] == 1 {
                    *slot = Some(scratch);
                    scratch += inner * 4;
                }
            }
        }
        // (Four lanes of the inline erf cost a ViT-S/16 GELU 14 of its 140 ms; in fp16, whose
        // row is staged and whose inputs are widened into scratch first, the Whisper encoder's
        // GELUs 56 of its 592 ms.)
        let wide: Option<(usize, Libcall, Option<usize>)> = (vector && inner >= WIDE_MATH_MIN)
            .then(|| {
                e.expr.ops.iter().enumerate().find_map(|(i, op)| {
                    let call = wide_math(op)?;
                    let a = op.args[0];
                    // An f32 or bf16 argument (bf16 widens exactly), an f32 or bf16 result (the
                    // f32 value rounded once, as the op does): bf16 EfficientNet-B0's SiLUs.
                    let arg = e.expr.arg_types(op).first().copied();
                    let f32_arg = matches!(arg, Some(DType::F32 | DType::BF16));
                    // An f32 input is read in place; a bf16 one, or a computed argument, is
                    // computed for the block into scratch.
                    let source = if a < e.inputs.len() {
                        if e.inputs[a].strides[rank - 1] != 1 {
                            return None;
                        }
                        (e.inputs[a].dtype == DType::F32).then_some(a)
                    } else {
                        None
                    };
                    (matches!(op.dtype, DType::F32 | DType::BF16) && f32_arg).then_some((i, call, source))
                })
            })
            .flatten();
        let wide_at = scratch;
        if let Some((_, _, source)) = wide {
            scratch += WIDE_BLOCK * 4 * if source.is_some() { 1 } else { 2 };
        }
        ElementwisePlan { rank, inner, rows, vector, deferral, narrowed, widened_at, wide, wide_at, silu: None, scratch }
    }

    /// The runtime micro-kernel the kernel calls ([`f16c_core::abi::MICRO_KERNELS`]), if any.
    pub(super) fn micro_kernel(&self) -> Option<Libcall> {
        self.silu.map(|(lc, _)| lc).filter(|&lc| f16c_core::abi::MicroKernel::of(lc).is_some())
    }

    /// The plan in words (`--emit=kernels`, the profile).
    pub(super) fn describe(&self) -> String {
        if let Some((call, _)) = self.silu {
            let (d, by) = match call {
                Libcall::SiluArrayBf16 => ("bf16", "the runtime's 16-lane loop".to_string()),
                Libcall::SiluArrayF16 => ("f16", f16c_core::abi::MicroKernel::of(call).map_or_else(String::new, |m| m.what.to_string())),
                _ => ("f32", "the runtime's 16-lane loop".to_string()),
            };
            return format!("a row of {} per work item, x · sigmoid(x) in {d} by {by}", self.inner);
        }
        let mut s = format!("a row of {} per work item, {}", self.inner, if self.vector { "four lanes at a time" } else { "one value at a time" });
        let widened = self.widened_at.iter().filter(|w| w.is_some()).count();
        if widened > 0 {
            s += &format!("; {widened} f16 input row(s) widened by the runtime");
        }
        if let Some((_, call, source)) = self.wide {
            let name = wide_name(call);
            let of = if source.is_some() { "an input read in place" } else { "an argument computed into scratch" };
            s += &format!("; {name} of {of} by the runtime's 16-lane loop, {WIDE_BLOCK} columns a call");
        }
        if self.narrowed {
            s += "; staged in f32, rounded and narrowed by the runtime";
        }
        s
    }
}

/// Where an elementwise kernel's values go: the output, or the staging area.
struct EwStore {
    out: Value,
    stage: Option<Staging>,
    dtype: DType,
}

impl EwStore {
    /// Stores the value(s) of column `j` of the row at `out_off` (four lanes from `j`, or one).
    fn put(&self, fx: &mut Fx, out_off: Value, j: Value, v: Value, lanes: bool) {
        match self.stage {
            Some(stage) => stage.put(fx, j, v),
            None => {
                let at = fx.b.ins().iadd(out_off, j);
                if lanes { fx.store4(self.dtype, self.out, at, v) } else { fx.store(self.dtype, self.out, at, v) }
            }
        }
    }
}

/// One row's inputs: where each is read (its buffer, or its row widened into scratch), from
/// which element, as which type; and the row's first output element.
struct EwRow {
    bases: Vec<Value>,
    offsets: Vec<Value>,
    dtypes: Vec<DType>,
    out_off: Value,
}

/// Work item `row` of an elementwise kernel: its f16 inputs widened, four lanes at a time as far
/// as the plan allows, then one at a time, then (staged) narrowed.
fn elementwise_row(fx: &mut Fx, plan: &ElementwisePlan, e: &Elementwise, store: &EwStore, bases: &[Value], row: Value) -> Emitted {
    let (rank, inner) = (plan.rank, plan.inner);
    let mut offsets: Vec<Value> = e
        .inputs
        .iter()
        .map(|i| {
            let at = row_offset(fx, row, &e.shape[..rank - 1], &i.strides[..rank - 1]);
            row_looked_up(fx, i, at)
        })
        .collect();
    if let Some((call, bytes)) = plan.silu {
        // The row in one call (in place where the output took the input's place).
        let src = fx.addr(bases[0], offsets[0], bytes);
        let out_off = fx.b.ins().imul_imm_s(row, inner as i64);
        let dst = fx.addr(store.out, out_off, bytes);
        let n = fx.i(inner as i64);
        fx.libcall(call, &[src, dst, n]);
        return Ok(());
    }
    let mut bases = bases.to_vec();
    let mut dtypes: Vec<DType> = e.inputs.iter().map(|i| i.dtype).collect();
    for (k, at) in plan.widened_at.iter().enumerate() {
        if let Some(at) = *at {
            let src = fx.addr(bases[k], offsets[k], 2);
            let wide = fx.b.ins().iadd_imm_s(fx.scratch, at as i64);
            let n = fx.i(inner as i64);
            fx.libcall(Libcall::WidenF16, &[src, wide, n]);
            (bases[k], offsets[k], dtypes[k]) = (wide, fx.i(0), DType::F32);
        }
    }
    let out_off = fx.b.ins().imul_imm_s(row, inner as i64);
    let r = EwRow { bases, offsets, dtypes, out_off };
    let vec_end = if plan.vector { inner - inner % LANES } else { 0 };
    if plan.vector {
        elementwise_lanes(fx, plan, e, store, &r, vec_end)?;
    }
    fx.try_each_n(vec_end as i64, inner as i64, 1, |fx, j| {
        let args: Vec<Value> = e
            .inputs
            .iter()
            .enumerate()
            .map(|(k, i)| {
                let s = fx.b.ins().imul_imm_s(j, i.strides[rank - 1] as i64);
                let at = fx.b.ins().iadd(r.offsets[k], s);
                let v = fx.load(r.dtypes[k], r.bases[k], at);
                if plan.widened_at[k].is_some() {
                    fx.mark_f16_grid(v);
                }
                v
            })
            .collect();
        let v = eval_with(fx, &e.expr, args, plan.deferral.as_ref())?;
        store.put(fx, out_off, j, v, false);
        Ok(())
    })?;
    if let Some(stage) = store.stage {
        let (zero, n) = (fx.i(0), fx.i(inner as i64));
        stage.narrow(fx, zero, store.out, out_off, n);
    }
    Ok(())
}

/// Columns `0..vec_end` of the row four lanes at a time (broadcast inputs loaded once), the
/// plan's wide math a block at a time by the runtime.
fn elementwise_lanes(fx: &mut Fx, plan: &ElementwisePlan, e: &Elementwise, store: &EwStore, r: &EwRow, vec_end: usize) -> Emitted {
    let rank = plan.rank;
    // Broadcast inputs are loaded once per row.
    let mut splats = Vec::new();
    for (k, i) in e.inputs.iter().enumerate() {
        splats.push(if i.strides[rank - 1] == 0 {
            let v = fx.load(i.dtype, r.bases[k], r.offsets[k]);
            Some(fx.b.ins().splat(F32X4, v))
        } else {
            None
        });
    }
    // The inputs' four lanes at column `j`.
    let lane_args = |fx: &mut Fx, j: Value| -> Vec<Value> {
        (0..e.inputs.len())
            .map(|k| match splats[k] {
                Some(s) => s,
                None => {
                    let at = fx.b.ins().iadd(r.offsets[k], j);
                    let v = fx.load4(r.dtypes[k], r.bases[k], at);
                    if plan.widened_at[k].is_some() {
                        fx.mark_f16_grid(v);
                    }
                    v
                }
            })
            .collect()
    };
    // Four lanes at column `j`, with op `given.0`'s value `given.1` when given.
    let lanes = |fx: &mut Fx, j: Value, given: Option<(usize, Value)>| -> Emitted {
        let args = lane_args(fx, j);
        let v = eval_given(fx, &e.expr, args, plan.deferral.as_ref(), given)?;
        store.put(fx, r.out_off, j, v, true);
        Ok(())
    };
    let Some((op, call, source)) = plan.wide else {
        return fx.try_each_n(0, vec_end as i64, LANES as i64, |fx, j| lanes(fx, j, None));
    };
    // Blocks of WIDE_BLOCK columns, then the rest of the vector part.
    let x = e.expr.ops[op].args[0];
    // The ops up to the one computing the argument (a computed one).
    let upto = crate::lower::Expr { inputs: e.expr.inputs.clone(), ops: e.expr.ops[..x.saturating_sub(e.inputs.len()) + 1].to_vec() };
    let block = |fx: &mut Fx, b0: Value, len: usize| -> Emitted {
        let area = fx.b.ins().iadd_imm_s(fx.scratch, plan.wide_at as i64);
        let (src, dst) = match source {
            Some(x) => {
                let at = fx.b.ins().iadd(r.offsets[x], b0);
                (fx.addr(r.bases[x], at, 4), area)
            }
            None => {
                fx.try_each_n(0, len as i64, LANES as i64, |fx, j| {
                    let col = fx.b.ins().iadd(b0, j);
                    let args = lane_args(fx, col);
                    // An input (bf16, widened as loaded) or the value the ops compute.
                    let a = if x < e.inputs.len() { args[x] } else { eval_with(fx, &upto, args, None)? };
                    fx.store4(DType::F32, area, j, a);
                    Ok(())
                })?;
                (area, fx.b.ins().iadd_imm_s(area, (WIDE_BLOCK * 4) as i64))
            }
        };
        let n = fx.i(len as i64);
        fx.libcall(call, &[src, dst, n]);
        fx.try_each_n(0, len as i64, LANES as i64, |fx, j| {
            let s = fx.load4(DType::F32, dst, j);
            let col = fx.b.ins().iadd(b0, j);
            lanes(fx, col, Some((op, s)))
        })
    };
    let whole = vec_end / WIDE_BLOCK * WIDE_BLOCK;
    fx.try_each_n(0, whole as i64, WIDE_BLOCK as i64, |fx, b0| block(fx, b0, WIDE_BLOCK))?;
    if vec_end > whole {
        let b0 = fx.i(whole as i64);
        block(fx, b0, vec_end - whole)?;
    }
    Ok(())
}
