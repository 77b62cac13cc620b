//! Direct convolutions: depthwise (a row of output pixels per work item, the runtime's row
//! loop or generated taps), transpose and integer convolutions, and their window arithmetic.

use super::emit::{domain, mem, Emitted, Fx};
use super::epilogue::{finish, finish_deferral, Bases, Columns, Finite};
use super::pack::widen_run;
use super::legal::LANES;
use super::lower::{row_offset, Context};
use super::plan::Planner;
use super::narrow::{Deferral, Staging};
use crate::backend::BackendError;
use crate::lower::{Contraction, ContractionKind, ConvGeometry, EwKind};
use cranelift_codegen::ir::condcodes::{FloatCC, IntCC};
use cranelift_codegen::ir::types::{F32, F32X4, I64};
use cranelift_codegen::ir::{InstBuilder, Value};
use f16c_core::abi::{DepthwiseParams, Libcall};
use f16c_dialect::{BinaryOp, DType};

impl Context<'_> {
    /// Depthwise conv2d, directly: one output row (`b`, `oy`) per work item; for each output
    /// pixel, four channels at a time (then one), the taps in the reference's order (`ky`, then
    /// `kx`), multiply then add (rounding each, as the reference does), then [`finish`]: bias,
    /// one rounding, the fused epilogue (batch norm, ReLU6), the store. The taps are unrolled
    /// at constant offsets from one address, and those in the padding skipped, as TOSA does:
    /// the output columns are emitted in runs whose windows have the same columns inside the
    /// image ([`TapClasses`]: at a 3×3 window with padding 1, the first column, the interior,
    /// the last), each with its own taps, and a window row that some output row lacks is
    /// checked once per row. The interior computes [`DEPTHWISE_STRIP`] pixels at a time.
    ///
    /// With channel multiplier 1, where the options' [`Loops`](super::Loops) choose the runtime's loop
    /// ([`Libcall::DepthwiseRow`](f16c_core::abi::Libcall) or `DepthwiseRowAvx512`, the same
    /// bits),
    /// one call computes the row instead: finished, into the output row or the staging area,
    /// where the epilogue is only the bias and constant bounds ([`NativeFinish`]); otherwise
    /// its sums, into the staging area or scratch, which the generated code then finishes
    /// channel vector by channel vector.
    pub(super) fn depthwise(&mut self, c: &Contraction, plan: DepthwisePlan, finite: Finite) -> Result<(), BackendError> {
        self.layout.scratch(plan.scratch_bytes);
        let c = c.clone();
        let g = &plan.g;
        let (items, cost) = (g.n * g.oh, 2.0 * (g.n * g.oh * g.ow * g.oc * g.kh * g.kw) as f64);
        self.add("", items, cost, move |fx| {
            let call = DepthwiseCall::new(fx, &plan, &c, &finite);
            fx.try_for_items(|fx, row| depthwise_row(fx, &plan, &c, &call, row))
        })
    }

    pub(super) fn transpose_conv(&mut self, c: &Contraction, finite: Finite) -> Result<(), BackendError> {
        let ContractionKind::TransposeConv(g) = c.kind.clone() else { return Err(self.error("a transpose convolution's plan for another contraction")) };
        let c = c.clone();
        let cost = 2.0 * (g.n * g.ih * g.iw * g.oc * g.kh * g.kw * g.ic) as f64;
        self.add("", g.n * g.oh, cost, move |fx| {
            let bases = Bases::new(fx, &c, c.b.buffer.0, &finite);
            let (x, w, out) = (bases.a, bases.b, bases.out);
            let (xd, wd, od) = (c.a.ty.dtype, c.b.ty.dtype, c.out.ty.dtype);
            fx.try_for_items(|fx, row| {
                let b = fx.b.ins().udiv_imm_s(row, g.oh as i64);
                let oy = fx.b.ins().urem_imm_s(row, g.oh as i64);
                fx.try_each_n(0, g.ow as i64, 1, |fx, ox| {
                    fx.try_each_n(0, g.oc as i64, 1, |fx, o| {
                        let init = fx.f(F32, 0.0);
                        // Contributions in input order (iy, ix), as the reference adds them.
                        let acc = fx.for_n(0, g.ih as i64, 1, &[init], |fx, iy, acc| {
                            let ky = tap(fx, oy, iy, g.stride[0], g.pad[0]);
                            let ok_y = in_range(fx, ky, g.kh);
                            fx.if_else(
                                ok_y,
                                |fx| {
                                    fx.for_n(0, g.iw as i64, 1, acc, |fx, ix, acc| {
                                        let kx = tap(fx, ox, ix, g.stride[1], g.pad[2]);
                                        let ok_x = in_range(fx, kx, g.kw);
                                        fx.if_else(
                                            ok_x,
                                            |fx| {
                                                let p = fx.b.ins().imul_imm_s(b, g.ih as i64);
                                                let p = fx.b.ins().iadd(p, iy);
                                                let p = fx.b.ins().imul_imm_s(p, g.iw as i64);
                                                let p = fx.b.ins().iadd(p, ix);
                                                let xbase = fx.b.ins().imul_imm_s(p, g.ic as i64);
                                                let q = fx.b.ins().imul_imm_s(o, g.kh as i64);
                                                let q = fx.b.ins().iadd(q, ky);
                                                let q = fx.b.ins().imul_imm_s(q, g.kw as i64);
                                                let q = fx.b.ins().iadd(q, kx);
                                                let wbase = fx.b.ins().imul_imm_s(q, g.ic as i64);
                                                let z = fx.f(F32, 0.0);
                                                let s = fx.for_n(0, g.ic as i64, 1, &[z], |fx, ch, s| {
                                                    let xi = fx.b.ins().iadd(xbase, ch);
                                                    let wi = fx.b.ins().iadd(wbase, ch);
                                                    let xv = fx.load(xd, x, xi);
                                                    let wv = fx.load(wd, w, wi);
                                                    let pr = fx.b.ins().fmul(xv, wv);
                                                    vec![fx.b.ins().fadd(s[0], pr)]
                                                })[0];
                                                vec![fx.b.ins().fadd(acc[0], s)]
                                            },
                                            |_| acc.to_vec(),
                                        )
                                    })
                                },
                                |_| acc.to_vec(),
                            )
                        })[0];
                        // Bias and the one rounding (transpose convolutions take no epilogue).
                        let cols = Columns::load(fx, &c, o, &bases, false);
                        let v = finish(fx, &c, acc, o, &bases, &[], false, &cols, None)?;
                        let pix = fx.b.ins().imul_imm_s(row, g.ow as i64);
                        let pix = fx.b.ins().iadd(pix, ox);
                        let at = fx.b.ins().imul_imm_s(pix, g.oc as i64);
                        let at = fx.b.ins().iadd(at, o);
                        fx.store(od, out, at, v);
                        Ok(())
                    })?;
                    Ok(())
                })
            })
        })
    }
}

impl Context<'_> {
    /// An integer matmul, conv2d or depthwise conv2d (i8 data, i32 result): one output row per
    /// work item, each output the sum over `k` of `(a − a_zp)·(b − b_zp)` in i64, in the
    /// reference's order, plus the bias, wrapped to the result type; taps in the padding are
    /// skipped. Exact, so bit-identical to the reference. Scalar: no packing, no vectors.
    pub(super) fn integer(&mut self, c: &Contraction) -> Result<(), BackendError> {
        let c = c.clone();
        let cost = (c.batch * c.m * c.n * c.k) as f64;
        self.add("", c.batch * c.m, cost, move |fx| {
            let (a, b, out) = (fx.buffer(c.a.buffer.0), fx.buffer(c.b.buffer.0), fx.buffer(c.out.buffer.0));
            let bias = c.bias.as_ref().map(|o| (fx.buffer(o.buffer.0), o.ty.dtype, o.ty.num_elements()));
            let (da, db) = (c.a.ty.dtype, c.b.ty.dtype);
            let (za, zb) = c.zp;
            // acc + (a[ia] − za)·(b[ib] − zb), the term dropped where `valid` is false.
            let mac = |fx: &mut Fx, acc: Value, ia: Value, ib: Value, valid: Option<Value>| -> Value {
                let ia = match valid {
                    Some(v) => {
                        let zero = fx.i(0);
                        fx.b.ins().select(v, ia, zero)
                    }
                    None => ia,
                };
                let x = fx.load(da, a, ia);
                let x = fx.b.ins().iadd_imm_s(x, -za);
                let w = fx.load(db, b, ib);
                let w = fx.b.ins().iadd_imm_s(w, -zb);
                let p = fx.b.ins().imul(x, w);
                let sum = fx.b.ins().iadd(acc, p);
                match valid {
                    Some(v) => fx.b.ins().select(v, sum, acc),
                    None => sum,
                }
            };
            fx.for_items(|fx, row| {
                fx.each_n(0, c.n as i64, 1, |fx, j| {
                    let zero = fx.i(0);
                    let acc = match &c.kind {
                        ContractionKind::MatMul => {
                            // A [batch·m, k] row-major, B [batch][k, n] row-major.
                            let bi = fx.b.ins().udiv_imm_s(row, c.m as i64);
                            let a0 = fx.b.ins().imul_imm_s(row, c.k as i64);
                            let b0 = fx.b.ins().imul_imm_s(bi, (c.k * c.n) as i64);
                            let b0 = fx.b.ins().iadd(b0, j);
                            fx.for_n(0, c.k as i64, 1, &[zero], |fx, kk, acc| {
                                let ia = fx.b.ins().iadd(a0, kk);
                                let ib = fx.b.ins().imul_imm_s(kk, c.n as i64);
                                let ib = fx.b.ins().iadd(b0, ib);
                                vec![mac(fx, acc[0], ia, ib, None)]
                            })[0]
                        }
                        ContractionKind::Conv(g) | ContractionKind::Depthwise(g) => {
                            let depthwise = matches!(c.kind, ContractionKind::Depthwise(_));
                            let g = g.clone();
                            let (nb, oy, ox) = output_pixel(fx, &g, row);
                            // Depthwise: output channel j = channel · M + multiplier.
                            let mult = g.oc / g.ic.max(1);
                            let (channels, ch0) = if depthwise { (1, fx.b.ins().udiv_imm_s(j, mult as i64)) } else { (g.ic, zero) };
                            fx.for_n(0, g.kh as i64, 1, &[zero], |fx, ky, acc| {
                                let iy = window_coord(fx, oy, ky, g.stride[0], g.dilation[0], g.pad[0]);
                                let vy = in_range(fx, iy, g.ih);
                                fx.for_n(0, g.kw as i64, 1, acc, |fx, kx, acc| {
                                    let ix = window_coord(fx, ox, kx, g.stride[1], g.dilation[1], g.pad[2]);
                                    let vx = in_range(fx, ix, g.iw);
                                    let valid = fx.b.ins().band(vy, vx);
                                    let at = nhwc_index(fx, &g, nb, iy, ix, ch0);
                                    let tap = fx.b.ins().imul_imm_s(ky, g.kw as i64);
                                    let tap = fx.b.ins().iadd(tap, kx);
                                    fx.for_n(0, channels as i64, 1, acc, |fx, ch, acc| {
                                        let ia = fx.b.ins().iadd(at, ch);
                                        let ib = if depthwise {
                                            // [KH, KW, C, M] as a row-major taps × (C·M) matrix.
                                            let t = fx.b.ins().imul_imm_s(tap, c.n as i64);
                                            fx.b.ins().iadd(t, j)
                                        } else {
                                            ohwi_index(fx, &g, j, tap, ch)
                                        };
                                        vec![mac(fx, acc[0], ia, ib, Some(valid))]
                                    })
                                })
                            })[0]
                        }
                        ContractionKind::TransposeConv(g) => {
                            // Output (oy, ox) gathers the taps whose input pixel
                            // ((oy − pad − ky) / stride, …) is whole and inside the input.
                            let g = g.clone();
                            let (nb, oy, ox) = output_pixel(fx, &g, row);
                            fx.for_n(0, g.kh as i64, 1, &[zero], |fx, ky, acc| {
                                let (iy, vy) = transpose_coord(fx, oy, ky, g.stride[0], g.pad[0], g.ih);
                                fx.for_n(0, g.kw as i64, 1, acc, |fx, kx, acc| {
                                    let (ix, vx) = transpose_coord(fx, ox, kx, g.stride[1], g.pad[2], g.iw);
                                    let valid = fx.b.ins().band(vy, vx);
                                    let at = nhwc_index(fx, &g, nb, iy, ix, zero);
                                    let tap = fx.b.ins().imul_imm_s(ky, g.kw as i64);
                                    let tap = fx.b.ins().iadd(tap, kx);
                                    fx.for_n(0, g.ic as i64, 1, acc, |fx, ch, acc| {
                                        let ia = fx.b.ins().iadd(at, ch);
                                        let ib = ohwi_index(fx, &g, j, tap, ch);
                                        vec![mac(fx, acc[0], ia, ib, Some(valid))]
                                    })
                                })
                            })[0]
                        }
                    };
                    let acc = match bias {
                        Some((buf, d, len)) => {
                            let at = if len == 1 { fx.i(0) } else { j };
                            let v = fx.load(d, buf, at);
                            fx.b.ins().iadd(acc, v)
                        }
                        None => acc,
                    };
                    let v = fx.round_to(c.result, acc);
                    let at = fx.b.ins().imul_imm_s(row, c.n as i64);
                    let at = fx.b.ins().iadd(at, j);
                    fx.store(c.result, out, at, v);
                });
            });
            Ok(())
        })
    }
}

/// A depthwise convolution's decisions, made before its code is emitted.
pub(super) struct DepthwisePlan {
    g: ConvGeometry,
    /// Output channels per input channel.
    mult: usize,
    /// Four channels at a time (then one), where the channels and the epilogue allow.
    vector: bool,
    /// The weight holds no inf or NaN.
    w_finite: bool,
    /// The window rows and columns each output row and column has inside the image (the
    /// others fall in the padding): a column's are fixed in the code of its run of columns, a
    /// row's are checked per row where some row lacks one.
    row_taps: TapClasses,
    col_classes: Vec<TapClass>,
    /// An f16/bf16 input widened into a ring of window rows in scratch; f16/bf16 weights
    /// widened once per call.
    widen: bool,
    widen_w: bool,
    /// (f16 result, or one the epilogue casts to f32 last) the rounding the narrowing does.
    deferral: Option<Deferral>,
    narrowed: bool,
    /// The runtime's row loop (channel multiplier 1), and what of the finish it does.
    pub(super) micro: Option<Libcall>,
    native_finish: Option<NativeFinish>,
    /// An f16/bf16 bias widened for the row loop.
    widen_bias: bool,
    /// A SiLU epilogue: finished by the AVX-512 row loop itself (`DepthwiseParams::silu`), or
    /// run by the runtime on each row the AVX2 loop finished ([`Libcall::SiluArrayF32`], in
    /// place).
    silu: bool,
    /// The row loop's fixed parameters.
    params: DepthwiseParams,
    /// Scratch: the ring of widened rows, the widened weights, the ring's tags, the staging
    /// area; then the row loop's row addresses, parameters, widened bias and sums.
    ring_bytes: usize,
    w_bytes: usize,
    stage_offset: usize,
    rows_offset: usize,
    params_offset: usize,
    bias_offset: usize,
    sums_offset: usize,
    scratch_bytes: usize,
}

impl DepthwisePlan {
    pub(super) fn new(cx: &Planner<'_>, c: &Contraction, g: ConvGeometry, finite: &Finite) -> DepthwisePlan {
        let mult = g.oc / g.ic.max(1);
        let vector_epilogue = c.epilogue.as_ref().is_none_or(|e| e.expr.is_f32_domain());
        let vector = mult == 1 && g.oc >= LANES && domain(c.out.ty.dtype) == F32 && vector_epilogue;
        let row_taps = TapClasses::new(g.oh, g.ih, g.kh, g.stride[0], g.dilation[0], g.pad[0]);
        let col_classes = TapClasses::new(g.ow, g.iw, g.kw, g.stride[1], g.dilation[1], g.pad[2]).0;
        // An f16/bf16 input is widened into scratch a row at a time, into a ring of kh rows
        // (`[kh][iw][ic]` f32) tagged with the row each slot holds (`b·ih + y`), so that the
        // rows consecutive output rows share are widened once per call, not once per output
        // row that reads them. With dilation 1 row `key` lives in slot `key mod kh`, which the
        // kh rows of one window never share; a dilated window's rows use slots 0..kh in order
        // (and are widened again for the next output row). f16/bf16 weights are widened once
        // per call, rather than once per tap of every output pixel.
        let widen = c.a.ty.dtype != DType::F32;
        let widen_w = c.b.ty.dtype != DType::F32;
        let ring_bytes = if widen { g.kh * g.iw * g.ic * 4 } else { 0 };
        let w_bytes = if widen_w { g.kh * g.kw * g.oc * 4 } else { 0 };
        let tags_bytes = if widen { g.kh * 8 } else { 0 };
        // An f16 output row is staged in f32 and narrowed by one runtime call (an f16 result
        // cast to f32 last: rounded and widened by one call).
        let deferral = finish_deferral(c, finite).filter(|d| c.out.ty.dtype == DType::F16 || d.widen);
        let narrowed = c.out.ty.dtype == DType::F16 || deferral.is_some();
        let stage_offset = ring_bytes + w_bytes + tags_bytes;
        let stage_bytes = if narrowed { g.ow * g.oc * 4 } else { 0 };
        // The native loop's operands: the window's row addresses, its parameters, an f16/bf16
        // bias widened (where the loop adds it), and (where it leaves the finish to the
        // generated code and no staging area takes them) the row's sums.
        let micro = if mult == 1 { cx.loops.depthwise() } else { None };
        // A SiLU epilogue (`x · sigmoid(x)`) whose `x` the row loop can finish: the loop
        // finishes `x` into the output row, one runtime call makes it `x · sigmoid(x)` in place.
        let bare = Contraction { epilogue: None, ..c.clone() };
        let bare_finish = (micro.is_some() && !narrowed && c.epilogue.as_ref().is_some_and(|e| e.expr.is_silu())).then(|| NativeFinish::of(&bare, finite, None, g.oc)).flatten();
        let silu = bare_finish.is_some();
        let native_finish = if silu { bare_finish } else { micro.and_then(|_| NativeFinish::of(c, finite, deferral.as_ref(), g.oc)) };
        let widen_bias = native_finish.is_some() && c.bias.as_ref().is_some_and(|b| b.ty.dtype != DType::F32);
        let rows_offset = (stage_offset + stage_bytes).next_multiple_of(64);
        let params_offset = rows_offset + g.kh * 8;
        let bias_offset = params_offset + std::mem::size_of::<DepthwiseParams>();
        let sums_offset = bias_offset + if widen_bias { g.oc * 4 } else { 0 };
        let sums_bytes = if narrowed || native_finish.is_some() { 0 } else { g.ow * g.oc * 4 };
        let scratch_bytes = if micro.is_some() { sums_offset + sums_bytes } else { stage_offset + stage_bytes };
        let params = DepthwiseParams {
            kh: g.kh as u64,
            kw: g.kw as u64,
            channels: g.oc as u64,
            in_width: g.iw as u64,
            out_width: g.ow as u64,
            stride: g.stride[1] as u64,
            dilation: g.dilation[1] as u64,
            pad: g.pad[2] as u64,
            ..DepthwiseParams::default()
        };
        let params = native_finish.as_ref().map_or(params, |f| f.params(params));
        // The AVX-512 loop finishes SiLU in its registers (a second pass over each row, as the
        // AVX2 loop's SiLU takes, cost EfficientNet-B0's depthwise convolutions 1.4×).
        let params = DepthwiseParams { silu: u64::from(silu && micro == Some(Libcall::DepthwiseRowAvx512)), ..params };
        DepthwisePlan {
            g,
            mult,
            vector,
            w_finite: finite.weight,
            row_taps,
            col_classes,
            widen,
            widen_w,
            deferral,
            narrowed,
            micro,
            native_finish,
            widen_bias,
            silu,
            params,
            ring_bytes,
            w_bytes,
            stage_offset,
            rows_offset,
            params_offset,
            bias_offset,
            sums_offset,
            scratch_bytes,
        }
    }

    /// The plan in words, the row loop's in `micro` (after a space).
    pub(super) fn describe(&self, micro: &str) -> String {
        let g = &self.g;
        let loop_text = if self.micro.is_some() {
            let finish = match (&self.native_finish, self.silu) {
                (Some(_), true) if self.params.silu != 0 => "the loop finishing SiLU's x · sigmoid(x)",
                (Some(_), true) => "the loop finishing x, SiLU's x · sigmoid(x) by the runtime's 16-lane loop on the row in place",
                (Some(_), false) => "the loop finishing it",
                (None, _) => "the finish generated",
            };
            format!("a row of {} pixels per work item by{micro}, {finish}", g.ow)
        } else {
            format!("a row of {} pixels per work item, channel multiplier {}, generated", g.ow, self.mult)
        };
        let widen_text = match (self.widen, self.widen_w) {
            (true, true) => "; input rows widened to f32 into a ring of window rows, weights once per call",
            (true, false) => "; input rows widened to f32 into a ring of window rows",
            (false, true) => "; weights widened to f32 once per call",
            (false, false) => "",
        };
        format!("depthwise: {loop_text}{widen_text}")
    }

    /// The tag of input row `y` of image `b` in the ring of widened rows.
    fn row_key(&self, fx: &mut Fx, b: Value, y: Value) -> Value {
        let key = fx.b.ins().imul_imm_s(b, self.g.ih as i64);
        fx.b.ins().iadd(key, y)
    }

    /// The ring slot of input row `y` of image `b` (for window row `ky`).
    fn slot_of(&self, fx: &mut Fx, b: Value, y: Value, ky: Value) -> Value {
        if self.g.dilation[0] == 1 {
            let key = self.row_key(fx, b, y);
            fx.b.ins().urem_imm_s(key, self.g.kh as i64)
        } else {
            ky
        }
    }
}

/// What every row of one call reads: the buffers, the (widened) weights, the ring's tags, the
/// staging area, where the taps read, and the row loop's parameters.
struct DepthwiseCall {
    bases: Bases,
    w: Value,
    wd: DType,
    tags: Value,
    stage: Option<Staging>,
    x: Value,
    xd: DType,
    params_at: Value,
}

impl DepthwiseCall {
    /// Sets up one call: the weights widened, the ring's tags cleared, the row loop's
    /// parameters stored.
    fn new(fx: &mut Fx, plan: &DepthwisePlan, c: &Contraction, finite: &Finite) -> DepthwiseCall {
        let g = &plan.g;
        let bases = Bases::new(fx, c, c.b.buffer.0, finite);
        let (w, wd) = if plan.widen_w {
            let wide = fx.b.ins().iadd_imm_s(fx.scratch, plan.ring_bytes as i64);
            widen_run(fx, c.b.ty.dtype, bases.b, wide, g.kh * g.kw * g.oc, false);
            (wide, DType::F32)
        } else {
            (bases.b, c.b.ty.dtype)
        };
        let tags = fx.b.ins().iadd_imm_s(fx.scratch, (plan.ring_bytes + plan.w_bytes) as i64);
        let stage = plan.narrowed.then(|| Staging::new(fx.b.ins().iadd_imm_s(fx.scratch, plan.stage_offset as i64), plan.deferral.as_ref()));
        if plan.widen {
            let none = fx.i(-1);
            for slot in 0..g.kh {
                fx.b.ins().store(mem(), none, tags, (slot * 8) as i32);
            }
        }
        // Where the taps read: the input, or its widened rows.
        let (x, xd) = if plan.widen { (fx.scratch, DType::F32) } else { (bases.a, c.a.ty.dtype) };
        let params_at = fx.b.ins().iadd_imm_s(fx.scratch, plan.params_offset as i64);
        if plan.micro.is_some() {
            // The fixed words, then the bias address (0: none, or left to the finish here).
            store_params(fx, params_at, &plan.params);
            let bias = match (&plan.native_finish, bases.bias, &c.bias) {
                (Some(_), Some(bias), Some(b)) if plan.widen_bias => {
                    let wide = fx.b.ins().iadd_imm_s(fx.scratch, plan.bias_offset as i64);
                    widen_run(fx, b.ty.dtype, bias, wide, g.oc, false);
                    wide
                }
                (Some(_), Some(bias), _) => bias,
                _ => fx.i(0),
            };
            store_params_bias(fx, params_at, bias);
        }
        DepthwiseCall { bases, w, wd, tags, stage, x, xd, params_at }
    }
}

/// One output row's values: the row (`b`, `oy`), each window row's input row and whether it
/// lies inside the image, the byte offsets of the widened rows in the ring, the window's first
/// input row, and the checks of the window rows some output row lacks.
struct DepthwiseRow {
    row: Value,
    b: Value,
    window_rows: Vec<(Value, Value)>,
    ring_offs: Vec<Value>,
    y0: Value,
    guards: Vec<Option<Value>>,
}

/// Output pixel `ox`: its column, its element offset, its epilogue inputs' rows.
type Pixel = (Value, Value, Vec<Value>);

/// Work item `row` of a depthwise convolution: its window rows (widened into the ring where
/// stale), then the row by the runtime's loop or the generated taps, then (staged) narrowed.
fn depthwise_row(fx: &mut Fx, plan: &DepthwisePlan, c: &Contraction, call: &DepthwiseCall, row: Value) -> Emitted {
    let g = &plan.g;
    let b = fx.b.ins().udiv_imm_s(row, g.oh as i64);
    let oy = fx.b.ins().urem_imm_s(row, g.oh as i64);
    // Window row ky's input row and whether it lies inside the image.
    let window_rows: Vec<(Value, Value)> = (0..g.kh)
        .map(|ky| {
            let kyv = fx.i(ky as i64);
            let y = window_coord(fx, oy, kyv, g.stride[0], g.dilation[0], g.pad[0]);
            (y, in_range(fx, y, g.ih))
        })
        .collect();
    // The byte offset of window row ky's widened row.
    let row_elems = g.iw * g.ic;
    let mut ring_offs = Vec::new();
    if plan.widen {
        for (ky, &(y, ok_y)) in window_rows.iter().enumerate() {
            let kyv = fx.i(ky as i64);
            let slot = plan.slot_of(fx, b, y, kyv);
            ring_offs.push(fx.b.ins().imul_imm_s(slot, (row_elems * 4) as i64));
            fx.if_then(ok_y, |fx| {
                let key = plan.row_key(fx, b, y);
                let tag = fx.b.ins().imul_imm_s(slot, 8);
                let tag = fx.b.ins().iadd(call.tags, tag);
                let held = fx.b.ins().load(I64, mem(), tag, 0);
                let stale = fx.b.ins().icmp(IntCC::NotEqual, held, key);
                fx.if_then(stale, |fx| {
                    let zero = fx.i(0);
                    let src = nhwc_index(fx, g, b, y, zero, zero);
                    let src = fx.addr(call.bases.a, src, c.a.ty.dtype.byte_size());
                    let dst = fx.b.ins().iadd(fx.scratch, ring_offs[ky]);
                    widen_run(fx, c.a.ty.dtype, src, dst, row_elems, false);
                    fx.b.ins().store(mem(), key, tag, 0);
                });
            });
        }
    }
    // Window row ky's validity, checked where some output row lacks it (a row whose tap falls
    // in the padding skips it, as TOSA does).
    let zero = fx.i(0);
    let y0 = window_coord(fx, oy, zero, g.stride[0], 1, g.pad[0]);
    let guards: Vec<Option<Value>> = window_rows.iter().enumerate().map(|(ky, &(_, ok))| plan.row_taps.guarded(ky).then_some(ok)).collect();
    let r = DepthwiseRow { row, b, window_rows, ring_offs, y0, guards };
    match plan.micro {
        Some(lc) => depthwise_native_row(fx, plan, c, call, &r, lc)?,
        None => depthwise_generated(fx, plan, c, call, &r)?,
    }
    if let Some(stage) = call.stage {
        let zero = fx.i(0);
        let to = fx.b.ins().imul_imm_s(row, (g.ow * g.oc) as i64);
        let n = fx.i((g.ow * g.oc) as i64);
        stage.narrow(fx, zero, call.bases.out, to, n);
    }
    Ok(())
}

/// The sums of output channel `o` (four from `o` when `lanes`) of `count` pixels from `ox`,
/// over the window rows the row has and columns `kxs`: for each tap (in the reference's order:
/// `ky`, then `kx`) the weight is loaded once for the pixels, whose sums are independent chains.
#[allow(clippy::too_many_arguments, reason = "an emitter's IR values, each computed by its caller")]
fn depthwise_sums(fx: &mut Fx, plan: &DepthwisePlan, call: &DepthwiseCall, r: &DepthwiseRow, ox: Value, o: Value, count: usize, lanes: bool, kxs: (usize, usize)) -> Vec<Value> {
    let (g, mult) = (&plan.g, plan.mult);
    let (x, xd, w, wd) = (call.x, call.xd, call.w, call.wd);
    let ch = if mult == 1 { o } else { fx.b.ins().udiv_imm_s(o, mult as i64) };
    let zero = fx.i(0);
    let x0 = window_coord(fx, ox, zero, g.stride[1], 1, g.pad[2]);
    let xi = if plan.widen { nhwc_index(fx, g, zero, zero, x0, ch) } else { nhwc_index(fx, g, r.b, r.y0, x0, ch) };
    let xp = fx.addr(x, xi, xd.byte_size());
    let wp = fx.addr(w, o, wd.byte_size());
    let init = fx.f(if lanes { F32X4 } else { F32 }, 0.0);
    let mut acc = vec![init; count];
    for (ky, guard) in r.guards.iter().enumerate() {
        if !plan.row_taps.ever(ky) {
            continue;
        }
        // Window row ky: its ring slot, or `dilation` input rows down.
        let (xp, row_off) = if plan.widen { (fx.b.ins().iadd(xp, r.ring_offs[ky]), 0) } else { (xp, ky * g.dilation[0] * g.iw) };
        let taps = |fx: &mut Fx, acc: &[Value]| -> Vec<Value> {
            let mut acc = acc.to_vec();
            for kx in kxs.0..kxs.1 {
                let w_off = ((ky * g.kw + kx) * g.oc * wd.byte_size()) as i32;
                let wv = if lanes { fx.load4_checked_at(wd, wp, w_off, plan.w_finite) } else { fx.load_at(wd, wp, w_off) };
                for (j, acc) in acc.iter_mut().enumerate() {
                    let x_off = ((row_off + kx * g.dilation[1] + j * g.stride[1]) * g.ic * xd.byte_size()) as i32;
                    let xv = if lanes { fx.load4_at(xd, xp, x_off) } else { fx.load_at(xd, xp, x_off) };
                    let p = fx.b.ins().fmul(xv, wv);
                    *acc = fx.b.ins().fadd(*acc, p);
                }
            }
            acc
        };
        acc = match guard {
            Some(ok) => fx.if_else(*ok, |fx| taps(fx, &acc), |_| acc.clone()),
            None => taps(fx, &acc),
        };
    }
    acc
}

/// Output pixel `ox` of the row.
fn depthwise_pixel(fx: &mut Fx, plan: &DepthwisePlan, c: &Contraction, r: &DepthwiseRow, ox: Value) -> Pixel {
    let g = &plan.g;
    let pix = fx.b.ins().imul_imm_s(r.row, g.ow as i64);
    let pix = fx.b.ins().iadd(pix, ox);
    let out_base = fx.b.ins().imul_imm_s(pix, g.oc as i64);
    let row_offs = match &c.epilogue {
        Some(e) => e.inputs.iter().map(|i| row_offset(fx, pix, &e.rows_shape, &i.row_strides)).collect(),
        None => Vec::new(),
    };
    (ox, out_base, row_offs)
}

/// Channels from `o` (four, or one) of a pixel, finished and stored (or staged at the pixel's
/// place in the row).
#[allow(clippy::too_many_arguments, reason = "an emitter's IR values, each computed by its caller")]
fn depthwise_put(fx: &mut Fx, plan: &DepthwisePlan, c: &Contraction, call: &DepthwiseCall, (ox, out_base, row_offs): &Pixel, o: Value, acc: Value, lanes: bool, cols: &Columns) -> Emitted {
    let v = finish(fx, c, acc, o, &call.bases, row_offs, lanes, cols, plan.deferral.as_ref())?;
    match call.stage {
        Some(stage) => {
            let at = fx.b.ins().imul_imm_s(*ox, plan.g.oc as i64);
            let at = fx.b.ins().iadd(at, o);
            stage.put(fx, at, v);
        }
        None => {
            let at = fx.b.ins().iadd(*out_base, o);
            let od = c.out.ty.dtype;
            if lanes { fx.store4(od, call.bases.out, at, v) } else { fx.store(od, call.bases.out, at, v) }
        }
    }
    Ok(())
}

/// `body` for each output channel `o`: four at a time (`lanes`) where the vector path applies,
/// then one at a time.
fn depthwise_each_channel(fx: &mut Fx, plan: &DepthwisePlan, body: &mut dyn FnMut(&mut Fx, Value, bool) -> Emitted) -> Emitted {
    let oc = plan.g.oc;
    let vec_end = if plan.vector { oc - oc % LANES } else { 0 };
    for (from, to, lanes) in [(0, vec_end, true), (vec_end, oc, false)] {
        if from == to {
            continue;
        }
        let step = if lanes { LANES } else { 1 };
        fx.try_each_n(from as i64, to as i64, step as i64, |fx, o| body(fx, o, lanes))?;
    }
    Ok(())
}

/// The generated row: output columns by the window columns they have, in runs of
/// [`DEPTHWISE_STRIP`] pixels where the run is that long (the interior), then single pixels;
/// every channel of each.
fn depthwise_generated(fx: &mut Fx, plan: &DepthwisePlan, c: &Contraction, call: &DepthwiseCall, r: &DepthwiseRow) -> Emitted {
    // Every channel of `count` pixels from `ox`, with window columns `kxs`.
    let channels = |fx: &mut Fx, ox: Value, count: usize, kxs: (usize, usize)| -> Emitted {
        let pixels: Vec<Pixel> = (0..count)
            .map(|j| {
                let oxj = fx.b.ins().iadd_imm_s(ox, j as i64);
                depthwise_pixel(fx, plan, c, r, oxj)
            })
            .collect();
        depthwise_each_channel(fx, plan, &mut |fx, o, lanes| {
            let acc = depthwise_sums(fx, plan, call, r, ox, o, count, lanes, kxs);
            let cols = Columns::load(fx, c, o, &call.bases, lanes);
            for (px, acc) in pixels.iter().zip(acc) {
                depthwise_put(fx, plan, c, call, px, o, acc, lanes, &cols)?;
            }
            Ok(())
        })
    };
    for class in &plan.col_classes {
        let len = class.end - class.start;
        let strip = if len >= DEPTHWISE_STRIP { DEPTHWISE_STRIP } else { 1 };
        let full = class.start + len / strip * strip;
        fx.try_each_n(class.start as i64, full as i64, strip as i64, |fx, ox| channels(fx, ox, strip, class.taps))?;
        if full < class.end {
            fx.try_each_n(full as i64, class.end as i64, 1, |fx, ox| channels(fx, ox, 1, class.taps))?;
        }
    }
    Ok(())
}

/// The row by the runtime's loop `lc`: finished by the loop itself, or its sums finished here,
/// channel vector by channel vector, pixel by pixel.
fn depthwise_native_row(fx: &mut Fx, plan: &DepthwisePlan, c: &Contraction, call: &DepthwiseCall, r: &DepthwiseRow, lc: Libcall) -> Emitted {
    let g = &plan.g;
    let rows_at = fx.b.ins().iadd_imm_s(fx.scratch, plan.rows_offset as i64);
    for (ky, &(y, ok_y)) in r.window_rows.iter().enumerate() {
        let p = if plan.widen {
            fx.b.ins().iadd(fx.scratch, r.ring_offs[ky])
        } else {
            let zero = fx.i(0);
            let at = nhwc_index(fx, g, r.b, y, zero, zero);
            fx.addr(call.bases.a, at, 4)
        };
        let null = fx.i(0);
        let p = fx.b.ins().select(ok_y, p, null);
        fx.b.ins().store(mem(), p, rows_at, (ky * 8) as i32);
    }
    // The row's values go where they are stored (staged, or the output's f32 row), or its
    // sums into scratch to be finished.
    let sums = match call.stage {
        Some(stage) => stage.base,
        None if plan.native_finish.is_some() => {
            let at = fx.b.ins().imul_imm_s(r.row, (g.ow * g.oc) as i64);
            fx.addr(call.bases.out, at, 4)
        }
        None => fx.b.ins().iadd_imm_s(fx.scratch, plan.sums_offset as i64),
    };
    fx.libcall(lc, &[rows_at, call.w, sums, call.params_at]);
    if plan.native_finish.is_some() {
        if plan.silu && plan.params.silu == 0 {
            // The row's `x`, finished by the loop, becomes `x · sigmoid(x)` in place.
            let n = fx.i((plan.g.ow * plan.g.oc) as i64);
            fx.libcall(Libcall::SiluArrayF32, &[sums, sums, n]);
        }
        return Ok(());
    }
    depthwise_each_channel(fx, plan, &mut |fx, o, lanes| {
        let cols = Columns::load(fx, c, o, &call.bases, lanes);
        fx.try_each_n(0, g.ow as i64, 1, |fx, ox| {
            let px = depthwise_pixel(fx, plan, c, r, ox);
            let at = fx.b.ins().imul_imm_s(ox, g.oc as i64);
            let at = fx.b.ins().iadd(at, o);
            let acc = if lanes { fx.load4(DType::F32, sums, at) } else { fx.load(DType::F32, sums, at) };
            depthwise_put(fx, plan, c, call, &px, o, acc, lanes, &cols)
        })
    })
}

/// The batch, y and x of output row `row` (one output pixel) of a convolution `g`.
pub(super) fn output_pixel(fx: &mut Fx, g: &ConvGeometry, row: Value) -> (Value, Value, Value) {
    let nb = fx.b.ins().udiv_imm_s(row, (g.oh * g.ow) as i64);
    let pix = fx.b.ins().urem_imm_s(row, (g.oh * g.ow) as i64);
    (nb, fx.b.ins().udiv_imm_s(pix, g.ow as i64), fx.b.ins().urem_imm_s(pix, g.ow as i64))
}

/// The element index of output channel `j`'s tap `tap` (`ky·kw + kx`), channel `ch`, in an
/// OHWI weight of `g`: its row of `kh·kw·ic`.
pub(super) fn ohwi_index(fx: &mut Fx, g: &ConvGeometry, j: Value, tap: Value, ch: Value) -> Value {
    let t = fx.b.ins().imul_imm_s(j, (g.kh * g.kw * g.ic) as i64);
    let t2 = fx.b.ins().imul_imm_s(tap, g.ic as i64);
    let t = fx.b.ins().iadd(t, t2);
    fx.b.ins().iadd(t, ch)
}

/// The element index of `(b, y, x, ch)` in the NHWC input of `g`.
pub(super) fn nhwc_index(fx: &mut Fx, g: &ConvGeometry, b: Value, y: Value, x: Value, ch: Value) -> Value {
    let p = fx.b.ins().imul_imm_s(b, g.ih as i64);
    let p = fx.b.ins().iadd(p, y);
    let p = fx.b.ins().imul_imm_s(p, g.iw as i64);
    let p = fx.b.ins().iadd(p, x);
    let p = fx.b.ins().imul_imm_s(p, g.ic as i64);
    fx.b.ins().iadd(p, ch)
}

/// `o·stride + k·dilation − pad`: the input coordinate a window tap reads.
pub(super) fn window_coord(fx: &mut Fx, o: Value, k: Value, stride: usize, dilation: usize, pad: usize) -> Value {
    let a = fx.b.ins().imul_imm_s(o, stride as i64);
    let b = fx.b.ins().imul_imm_s(k, dilation as i64);
    let s = fx.b.ins().iadd(a, b);
    fx.b.ins().iadd_imm_s(s, -(pad as i64))
}

/// Transpose conv: the kernel tap `o − pad − i·stride` that maps input `i` to output `o`.
pub(super) fn tap(fx: &mut Fx, o: Value, i: Value, stride: usize, pad: usize) -> Value {
    let s = fx.b.ins().imul_imm_s(i, stride as i64);
    let t = fx.b.ins().isub(o, s);
    fx.b.ins().iadd_imm_s(t, -(pad as i64))
}

/// The input coordinate of transpose-conv output `o` and tap `k`, `(o − pad − k) / stride`,
/// and whether it is one: a whole, non-negative quotient below `len`.
pub(super) fn transpose_coord(fx: &mut Fx, o: Value, k: Value, stride: usize, pad: usize, len: usize) -> (Value, Value) {
    let d = fx.b.ins().isub(o, k);
    let d = fx.b.ins().iadd_imm_s(d, -(pad as i64));
    let q = fx.b.ins().sdiv_imm_s(d, stride as i64);
    let r = fx.b.ins().srem_imm_s(d, stride as i64);
    let non_negative = fx.b.ins().icmp_imm_s(IntCC::SignedGreaterThanOrEqual, d, 0);
    let whole = fx.b.ins().icmp_imm_s(IntCC::Equal, r, 0);
    let inside = in_range(fx, q, len);
    let ok = fx.b.ins().band(non_negative, whole);
    (q, fx.b.ins().band(ok, inside))
}

/// Pixels of a row a depthwise convolution computes together where its run of columns is that
/// long: each weight vector loaded serves them all, and their sums are independent chains.
pub(super) const DEPTHWISE_STRIP: usize = 4;

/// The output positions along one axis of a convolution by the taps of their window that lie
/// inside the input (the others fall in the padding): runs of positions with the same taps.
pub(super) struct TapClasses(Vec<TapClass>);

/// Output positions `start..end`, whose windows have taps `taps.0..taps.1` inside the input.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct TapClass {
    pub(super) start: usize,
    pub(super) end: usize,
    pub(super) taps: (usize, usize),
}

impl TapClasses {
    /// Output positions `0..outputs` of a window of `len` taps over `size` inputs.
    pub(super) fn new(outputs: usize, size: usize, len: usize, stride: usize, dilation: usize, pad: usize) -> TapClasses {
        let mut out: Vec<TapClass> = Vec::new();
        for o in 0..outputs {
            let inside = |k: usize| (o * stride + k * dilation).checked_sub(pad).is_some_and(|x| x < size);
            // The input coordinate grows with the tap, so the taps inside are one range.
            let lo = (0..len).find(|&k| inside(k)).unwrap_or(len);
            let hi = (lo..len).find(|&k| !inside(k)).unwrap_or(len);
            match out.last_mut() {
                Some(last) if last.taps == (lo, hi) => last.end = o + 1,
                _ => out.push(TapClass { start: o, end: o + 1, taps: (lo, hi) }),
            }
        }
        TapClasses(out)
    }

    /// Whether some position's window has tap `k` inside.
    pub(super) fn ever(&self, k: usize) -> bool {
        self.0.iter().any(|c| (c.taps.0..c.taps.1).contains(&k))
    }

    /// Whether tap `k` is inside for some positions and not others (and so must be checked).
    pub(super) fn guarded(&self, k: usize) -> bool {
        self.ever(k) && self.0.iter().any(|c| !(c.taps.0..c.taps.1).contains(&k))
    }
}

/// `0 <= v < len` as an `i8`.
pub(super) fn in_range(fx: &mut Fx, v: Value, len: usize) -> Value {
    // One unsigned comparison covers both bounds.
    fx.b.ins().icmp_imm_s(IntCC::UnsignedLessThan, v, len as i64)
}

/// `p`'s words at `at` (scratch) but its bias address, which [`store_params_bias`] writes: the
/// parameters of a runtime loop that finishes values ([`Libcall::DepthwiseRow`]'s, and
/// [`Libcall::FinishTilesF32`]'s finish fields).
pub(super) fn store_params(fx: &mut Fx, at: Value, p: &DepthwiseParams) {
    let bias_word = std::mem::offset_of!(DepthwiseParams, bias) / 8;
    for (i, word) in p.words().into_iter().enumerate().filter(|&(i, _)| i != bias_word) {
        let word = fx.i(word as i64);
        fx.b.ins().store(mem(), word, at, (8 * i) as i32);
    }
}

/// The bias address (0: none) of the parameters at `at` ([`store_params`]).
pub(super) fn store_params_bias(fx: &mut Fx, at: Value, bias: Value) {
    fx.b.ins().store(mem(), bias, at, std::mem::offset_of!(DepthwiseParams, bias) as i32);
}

/// What of a depthwise convolution's finish the native row loop ([`DepthwiseParams`]) does
/// itself, where that is all of it: the bias (where the contraction has one), then
/// `maximum`/`minimum` with constant bounds (a ReLU6, as ops or a clamp). On an f32 result they are the reference's ops on the sum (with a
/// NaN-free bound, x86's `maxps`/`minps` with the bound first, then NaNs made canonical, as
/// [`Fx::tosa_max`] does); on a staged f16 one the deferral's bounds on the unrounded sum, as
/// [`Fx::bound_unrounded`] applies them ([`Bound::unrounded`](super::narrow::Bound::unrounded);
/// the narrowing makes NaNs canonical).
#[derive(Clone, Debug, PartialEq)]
pub(super) struct NativeFinish {
    /// `x test t ? v : x` as (test, t, v), in the order they apply.
    pub(super) bounds: Vec<(FloatCC, f32, f32)>,
    pub(super) canonical: bool,
}

impl NativeFinish {
    /// `None` where the epilogue does anything else, or the bias is not one per channel.
    pub(super) fn of(c: &Contraction, finite: &Finite, deferral: Option<&Deferral>, channels: usize) -> Option<NativeFinish> {
        if c.bias.as_ref().is_some_and(|b| b.ty.num_elements() != channels) {
            return None;
        }
        let ops = c.epilogue.as_ref().map_or(0, |e| e.expr.ops.len());
        let finish = |bounds: Vec<(FloatCC, f32, f32)>, canonical: bool| (bounds.len() <= DepthwiseParams::MAX_BOUNDS).then_some(NativeFinish { bounds, canonical });
        if let Some(d) = deferral {
            // Every op a bound (a clamp is two), or the cast that widens the result.
            let mut bound_ops: Vec<usize> = d.bounds.iter().map(|b| b.op).collect();
            bound_ops.dedup();
            if d.op.is_some() || bound_ops.len() + usize::from(d.widen) != ops {
                return None;
            }
            return finish(d.bounds.iter().rev().map(|b| b.unrounded()).collect(), false);
        }
        if c.result != DType::F32 || c.out.ty.dtype != DType::F32 {
            return None;
        }
        let mut bounds = Vec::new();
        if let Some(e) = &c.epilogue {
            let inputs = e.expr.inputs.len();
            if e.expr.inputs[0] != DType::F32 {
                return None;
            }
            let maximum = |k: f32| (FloatCC::LessThan, k, k);
            let minimum = |k: f32| (FloatCC::GreaterThan, k, k);
            // Each op reads the one before it (the first the sum) as its first operand.
            for (i, op) in e.expr.ops.iter().enumerate() {
                let chain = if i == 0 { 0 } else { inputs + i - 1 };
                let scalar = |v: usize| (1..inputs).contains(&v).then(|| finite.epilogue_scalar[v - 1]).flatten().filter(|k| !k.is_nan() && e.expr.inputs[v] == DType::F32);
                match (op.kind, op.args.as_slice()) {
                    _ if op.dtype != DType::F32 => return None,
                    (EwKind::Binary(BinaryOp::Maximum), &[a, b]) if a == chain => bounds.push(maximum(scalar(b)?)),
                    (EwKind::Binary(BinaryOp::Minimum), &[a, b]) if a == chain => bounds.push(minimum(scalar(b)?)),
                    (EwKind::Clamp { min, max }, &[a]) if a == chain && !min.is_nan() && !max.is_nan() => bounds.extend([maximum(min as f32), minimum(max as f32)]),
                    _ => return None,
                }
            }
        }
        let canonical = !bounds.is_empty();
        finish(bounds, canonical)
    }

    /// `p` with this finish's bounds (its bias address is stored at run time).
    pub(super) fn params(&self, p: DepthwiseParams) -> DepthwiseParams {
        let mut p = DepthwiseParams { bounds: self.bounds.len() as u64, canonical: u64::from(self.canonical), ..p };
        for (i, &(test, t, v)) in self.bounds.iter().enumerate() {
            let code = match test {
                FloatCC::LessThan => DepthwiseParams::LESS,
                FloatCC::GreaterThan => DepthwiseParams::GREATER,
                FloatCC::LessThanOrEqual => DepthwiseParams::LESS_EQUAL,
                _ => DepthwiseParams::GREATER_EQUAL,
            };
            p.bound_tests |= code << (2 * i);
            p.thresholds[i] = t;
            p.bound_values[i] = v;
        }
        p
    }
}

#[cfg(test)]
mod tests {
    use super::{TapClass, TapClasses};

    #[test]
    fn tap_classes_of_a_padded_3x3_window() {
        // 4 outputs of a 3-tap window over 4 inputs, padding 1: the first lacks tap 0, the last
        // tap 2, the middle two have all three.
        let c = TapClasses::new(4, 4, 3, 1, 1, 1);
        let want = [TapClass { start: 0, end: 1, taps: (1, 3) }, TapClass { start: 1, end: 3, taps: (0, 3) }, TapClass { start: 3, end: 4, taps: (0, 2) }];
        assert_eq!(c.0, want);
        assert!(c.guarded(0) && !c.guarded(1) && c.guarded(2));
    }

    #[test]
    fn tap_classes_cover_every_output_with_exactly_its_inside_taps() {
        for outputs in 1..7 {
            for size in 1..6 {
                for len in 1..5 {
                    for stride in 1..3 {
                        for dilation in 1..3 {
                            for pad in 0..5 {
                                let c = TapClasses::new(outputs, size, len, stride, dilation, pad);
                                assert_eq!(c.0.first().map(|c| c.start), Some(0));
                                assert!(c.0.windows(2).all(|w| w[0].end == w[1].start && w[0].taps != w[1].taps));
                                assert_eq!(c.0.last().map(|c| c.end), Some(outputs));
                                for class in &c.0 {
                                    for o in class.start..class.end {
                                        for k in 0..len {
                                            let x = (o * stride + k * dilation) as i64 - pad as i64;
                                            let inside = (0..size as i64).contains(&x);
                                            assert_eq!((class.taps.0..class.taps.1).contains(&k), inside, "o={o} k={k} size={size} stride={stride} dilation={dilation} pad={pad}");
                                        }
                                    }
                                }
                                for k in 0..len {
                                    let inside = |o: usize| (0..size as i64).contains(&((o * stride + k * dilation) as i64 - pad as i64));
                                    assert_eq!(c.ever(k), (0..outputs).any(inside));
                                    assert_eq!(c.guarded(k), (0..outputs).any(inside) && !(0..outputs).all(inside));
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}
