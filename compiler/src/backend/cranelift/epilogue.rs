//! A contraction's finish: the buffers its kernels address, the epilogue (bias, the one
//! rounding, the fused elementwise ops) on a tile or a row of sums, and its store or staging.

use super::emit::Fx;
use super::legal::{LANES, MR, NR};
use super::lower::{eval_given, row_offset};
use super::narrow::{deferral, Deferral, Staging};
use crate::lower::{Contraction, Epilogue};
use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::types::{F32, F32X4};
use cranelift_codegen::ir::{InstBuilder, Value};
use f16c_dialect::DType;

/// The buffers a GEMM-style contraction kernel addresses: A, the (packed) B, the output, the
/// bias and the epilogue's inputs.
pub(super) struct Bases {
    pub(super) a: Value,
    pub(super) b: Value,
    pub(super) out: Value,
    pub(super) bias: Option<Value>,
    pub(super) epilogue: Vec<Value>,
    pub(super) finite: Finite,
}

impl Bases {
    pub(super) fn new(fx: &mut Fx, c: &Contraction, b_slot: usize, finite: &Finite) -> Bases {
        Bases {
            a: fx.buffer(c.a.buffer.0),
            b: fx.buffer(b_slot),
            out: fx.buffer(c.out.buffer.0),
            bias: c.bias.as_ref().map(|b| fx.buffer(b.buffer.0)),
            epilogue: c.epilogue.iter().flat_map(|e| e.inputs.iter()).map(|i| fx.buffer(i.buffer.0)).collect(),
            finite: finite.clone(),
        }
    }
}

/// What is known of a contraction's constant inputs at compile time: which hold no inf or NaN
/// (their f16 values widen in three instructions: [`Fx::load4_checked`]), and which epilogue
/// inputs are a single value.
#[derive(Clone, Default)]
pub(super) struct Finite {
    pub(super) weight: bool,
    pub(super) bias: bool,
    pub(super) epilogue: Vec<bool>,
    /// Per epilogue input, its one finite value when it is a constant read at one element for
    /// every row and column (a ReLU6 bound): emitted as an immediate, not loaded and widened
    /// once per value.
    pub(super) epilogue_scalar: Vec<Option<f32>>,
}

impl Finite {
    pub(super) fn of(program: &crate::lower::Program, c: &Contraction) -> Finite {
        let finite = |buffer, dtype| crate::lower::is_finite_constant(program, buffer, dtype);
        Finite {
            weight: finite(c.b.buffer, c.b.ty.dtype),
            bias: c.bias.as_ref().is_some_and(|b| finite(b.buffer, b.ty.dtype)),
            epilogue: c.epilogue.iter().flat_map(|e| e.inputs.iter()).map(|i| finite(i.buffer, i.dtype)).collect(),
            epilogue_scalar: c
                .epilogue
                .iter()
                .flat_map(|e| e.inputs.iter())
                .map(|i| if i.col_stride == 0 && i.row_strides.iter().all(|&s| s == 0) { crate::lower::constant_scalar(program, i.buffer, i.dtype) } else { None })
                .collect(),
        }
    }
}

/// Bias, rounding, epilogue and store of one tile (`MR` × `NR` f32 values at `tile`); rows
/// from `r0`, columns from `col0`. A full tile with an f32-domain epilogue is straight-line
/// code ([`store_full_tile`]: the epilogue emitted `MR · NR / LANES` = 8 times); other tiles
/// take loops over rows and vectors, which emit it twice (four lanes, and one lane for a
/// ragged edge), not once per tile value: an fp16 batch-norm epilogue unrolled 40 times made
/// the kernels of a mobilenet 4× slower to compile.
#[allow(clippy::too_many_arguments, reason = "an emitter's IR values, each computed by its caller")]
pub(super) fn store_tile(fx: &mut Fx, c: &Contraction, tile: Value, bi: Value, r0: Value, col0: Value, bases: &Bases, staged: Option<&Staged>, given: Option<&Given>) -> Result<(), String> {
    let (m, n) = (c.m, c.n);
    let od = c.out.ty.dtype;
    let vector_epilogue = c.epilogue.as_ref().is_none_or(|e| e.expr.is_f32_domain());
    // Rows of the tile that exist (the last row block may be ragged).
    let rows = fx.i(MR as i64);
    let m_v = fx.i(m as i64);
    let left = fx.b.ins().isub(m_v, r0);
    let rows = fx.b.ins().smin(rows, left);
    // A full tile (every row exists, every column lies inside) of f32 values is finished in
    // straight-line code: each value read and stored at a constant offset, the column
    // operands loaded once per four columns. mobilenet-v2's 1×1 convolutions with a reduction
    // of 16 or 24 spent more in the loop form of this than in their multiply-adds.
    let unrolled = vector_epilogue && (n + NR) * MR * od.byte_size() <= i32::MAX as usize;
    if unrolled {
        let tall = fx.b.ins().icmp_imm_s(IntCC::SignedGreaterThanOrEqual, left, MR as i64);
        let full = if n % NR == 0 {
            tall
        } else {
            let wide = fx.b.ins().icmp_imm_s(IntCC::SignedLessThanOrEqual, col0, (n - NR.min(n)) as i64);
            let wide = if n < NR { fx.b.ins().iconst(cranelift_codegen::ir::types::I8, 0) } else { wide };
            fx.b.ins().band(tall, wide)
        };
        let (mut inside, mut edges) = (Ok(()), Ok(()));
        fx.if_or(
            full,
            |fx| {
                inside = store_full_tile(fx, c, tile, bi, r0, col0, bases, staged, given);
            },
            |fx| {
                edges = store_tile_edges(fx, c, tile, bi, r0, col0, bases, staged, given, rows);
            },
        );
        return inside.and(edges);
    }
    store_tile_edges(fx, c, tile, bi, r0, col0, bases, staged, given, rows)
}

/// [`store_tile`] for a full tile of lanes: row `r`, columns `v..v + 4` read at `tile + (r ·
/// NR + v) · 4` and stored at constant offsets from the tile's first output.
#[allow(clippy::too_many_arguments, reason = "an emitter's IR values, each computed by its caller")]
pub(super) fn store_full_tile(fx: &mut Fx, c: &Contraction, tile: Value, bi: Value, r0: Value, col0: Value, bases: &Bases, staged: Option<&Staged>, given: Option<&Given>) -> Result<(), String> {
    let (m, n) = (c.m, c.n);
    let od = c.out.ty.dtype;
    let grow0 = fx.b.ins().imul_imm_s(bi, m as i64);
    let grow0 = fx.b.ins().iadd(grow0, r0);
    let first = fx.b.ins().imul_imm_s(grow0, n as i64);
    let first = fx.b.ins().iadd(first, col0);
    let first = fx.addr(bases.out, first, od.byte_size());
    for v in (0..NR).step_by(LANES) {
        let col = fx.b.ins().iadd_imm_s(col0, v as i64);
        let cols = Columns::load(fx, c, col, bases, true);
        for r in 0..MR {
            let grow = fx.b.ins().iadd_imm_s(grow0, r as i64);
            let row_offs = epilogue_row_offsets(fx, c, grow, &cols);
            let value = fx.b.ins().load(F32X4, super::emit::mem(), tile, ((r * NR + v) * 4) as i32);
            let op_value = given.map(|g| {
                let r = fx.i(r as i64);
                g.load(fx, r, col, true)
            });
            let x = finish_given(fx, c, value, col, bases, &row_offs, true, &cols, staged.and_then(|s| s.deferral.as_ref()), op_value)?;
            match staged {
                Some(s) => {
                    let at = fx.b.ins().isub(col, s.origin);
                    let at = fx.b.ins().iadd_imm_s(at, (r * s.stride) as i64);
                    s.stage.put(fx, at, x);
                }
                None => fx.store4_at(od, first, ((r * n + v) * od.byte_size()) as i32, x),
            }
        }
    }
    Ok(())
}

/// The row offsets of `c`'s epilogue inputs at global row `grow` (0 for those [`Columns`]
/// holds, the same for every row).
pub(super) fn epilogue_row_offsets(fx: &mut Fx, c: &Contraction, grow: Value, cols: &Columns) -> Vec<Value> {
    match &c.epilogue {
        Some(e) => e.inputs.iter().zip(&cols.inputs).map(|(i, hoisted)| if hoisted.is_some() { fx.i(0) } else { row_offset(fx, grow, &e.rows_shape, &i.row_strides) }).collect(),
        None => Vec::new(),
    }
}

/// [`store_tile`] for any tile: the tile's `rows` rows that exist, its columns four at a
/// time where all four lie inside (and the epilogue has lanes), else one at a time.
#[allow(clippy::too_many_arguments, reason = "an emitter's IR values, each computed by its caller")]
pub(super) fn store_tile_edges(fx: &mut Fx, c: &Contraction, tile: Value, bi: Value, r0: Value, col0: Value, bases: &Bases, staged: Option<&Staged>, given: Option<&Given>, rows: Value) -> Result<(), String> {
    let out = bases.out;
    let (m, n) = (c.m, c.n);
    let od = c.out.ty.dtype;
    let vector_epilogue = c.epilogue.as_ref().is_none_or(|e| e.expr.is_f32_domain());
    fx.try_each_n(0, NR as i64, LANES as i64, |fx, v| {
        let col = fx.b.ins().iadd(col0, v);
        let full = fx.b.ins().icmp_imm_s(IntCC::SignedLessThanOrEqual, col, (n as i64) - LANES as i64);
        let full = if vector_epilogue { full } else { fx.b.ins().iconst(cranelift_codegen::ir::types::I8, 0) };
        // Finishes and stores the value(s) of tile row `r` at `at`: four lanes from `col`, or one.
        let put = |fx: &mut Fx, r: Value, at: Value, col: Value, lanes: bool, cols: &Columns| -> Result<(), String> {
            let row = fx.b.ins().iadd(r0, r);
            // Global row over all batches, and the epilogue inputs' row offsets.
            let grow = fx.b.ins().imul_imm_s(bi, m as i64);
            let grow = fx.b.ins().iadd(grow, row);
            let row_offs = epilogue_row_offsets(fx, c, grow, cols);
            let value = fx.b.ins().load(if lanes { F32X4 } else { F32 }, super::emit::mem(), at, 0);
            let op_value = given.map(|g| g.load(fx, r, col, lanes));
            let x = finish_given(fx, c, value, col, bases, &row_offs, lanes, cols, staged.and_then(|s| s.deferral.as_ref()), op_value)?;
            match staged {
                Some(s) => {
                    let at = fx.b.ins().imul_imm_s(r, s.stride as i64);
                    let at = fx.b.ins().iadd(at, col);
                    let at = fx.b.ins().isub(at, s.origin);
                    s.stage.put(fx, at, x);
                }
                None => {
                    let o = fx.b.ins().imul_imm_s(grow, n as i64);
                    let o = fx.b.ins().iadd(o, col);
                    if lanes { fx.store4(od, out, o, x) } else { fx.store(od, out, o, x) }
                }
            }
            Ok(())
        };
        // Tile value (r, v) at `tile + (r * NR + v) * 4`.
        let tile_at = |fx: &mut Fx, r: Value, v: Value| {
            let t = fx.b.ins().imul_imm_s(r, NR as i64);
            let t = fx.b.ins().iadd(t, v);
            fx.addr(tile, t, 4)
        };
        // Tile column `tv` (four lanes, or one) at output column `col`, for every row: its
        // column operands loaded once.
        let column = |fx: &mut Fx, tv: Value, col: Value, lanes: bool| {
            let cols = Columns::load(fx, c, col, bases, lanes);
            let zero = fx.i(0);
            fx.try_each(zero, rows, 1, |fx, r| {
                let at = tile_at(fx, r, tv);
                put(fx, r, at, col, lanes, &cols)
            })
        };
        fx.try_if_else(
            full,
            |fx| column(fx, v, col, true),
            |fx| {
                fx.try_each_n(0, LANES as i64, 1, |fx, l| {
                    let cl = fx.b.ins().iadd(col, l);
                    let ok = fx.b.ins().icmp_imm_s(IntCC::SignedLessThan, cl, n as i64);
                    fx.try_if_then(ok, |fx| {
                        let vl = fx.b.ins().iadd(v, l);
                        column(fx, vl, cl, false)
                    })?;
                    Ok(())
                })
            },
        )?;
        Ok(())
    })
}

/// An epilogue op's values computed before the finish, for a block of tiles: the value of op
/// `op` for row `r` and column `col` of the tile at element `r · stride + col − origin` of
/// `base` (f32), laid out as a [`Staged`] area is.
pub(super) struct Given {
    pub(super) op: usize,
    pub(super) base: Value,
    pub(super) stride: usize,
    pub(super) origin: Value,
}

impl Given {
    /// The op's value(s) at tile row `r`, column `col`: four lanes, or one.
    fn load(&self, fx: &mut Fx, r: Value, col: Value, lanes: bool) -> (usize, Value) {
        let at = fx.b.ins().imul_imm_s(r, self.stride as i64);
        let at = fx.b.ins().iadd(at, col);
        let at = fx.b.ins().isub(at, self.origin);
        let p = fx.addr(self.base, at, 4);
        (self.op, fx.b.ins().load(if lanes { F32X4 } else { F32 }, super::emit::mem(), p, 0))
    }
}

/// Where [`store_tile`] puts an f16 tile's finished values: row `r`, column `col` of the tile
/// at element `r · stride + col − origin` of `stage`, for the runtime to narrow
/// ([`super::narrow`]).
pub(super) struct Staged {
    pub(super) stage: Staging,
    pub(super) stride: usize,
    pub(super) origin: Value,
    pub(super) deferral: Option<Deferral>,
}

/// The operands of a contraction's finish that depend on the column alone: the bias, and each
/// epilogue input that is the same for every row (a batch norm's per-channel constants, a
/// ReLU6's bounds). Loaded (and, from f16/bf16, widened) once per column vector of a tile and
/// reused for its rows, rather than once per value.
pub(super) struct Columns {
    pub(super) bias: Option<Value>,
    pub(super) inputs: Vec<Option<Value>>,
}

impl Columns {
    /// The column operands at `col` (four lanes from `col` when `lanes`).
    pub(super) fn load(fx: &mut Fx, c: &Contraction, col: Value, bases: &Bases, lanes: bool) -> Columns {
        let bias = match (bases.bias, &c.bias) {
            (Some(bias), Some(b)) => {
                let (bias_len, bd) = (b.ty.num_elements(), b.ty.dtype);
                Some(if bias_len == 1 {
                    let z = fx.i(0);
                    let s = fx.load(bd, bias, z);
                    if lanes {
                        fx.b.ins().splat(F32X4, s)
                    } else {
                        s
                    }
                } else if lanes {
                    fx.load4_checked(bd, bias, col, bases.finite.bias)
                } else {
                    fx.load(bd, bias, col)
                })
            }
            _ => None,
        };
        let inputs = match &c.epilogue {
            Some(e) => e
                .inputs
                .iter()
                .enumerate()
                .map(|(i, input)| {
                    let same_rows = input.row_strides.iter().all(|&s| s == 0);
                    same_rows.then(|| match bases.finite.epilogue_scalar[i] {
                        Some(k) => {
                            let v = fx.f(if lanes { F32X4 } else { F32 }, k);
                            if input.dtype == DType::F16 {
                                fx.mark_f16_grid(v);
                            }
                            v
                        }
                        None => {
                            let zero = fx.i(0);
                            epilogue_input(fx, input, bases.epilogue[i], zero, col, lanes, bases.finite.epilogue[i])
                        }
                    })
                })
                .collect(),
            None => Vec::new(),
        };
        Columns { bias, inputs }
    }
}

/// Epilogue input `input` (at `base`) at row offset `row_off` and column `col` (four lanes from
/// `col` when `lanes`).
pub(super) fn epilogue_input(fx: &mut Fx, input: &crate::lower::EpilogueInput, base: Value, row_off: Value, col: Value, lanes: bool, finite: bool) -> Value {
    let off = if input.col_stride == 0 { row_off } else {
        let t = fx.b.ins().imul_imm_s(col, input.col_stride as i64);
        fx.b.ins().iadd(row_off, t)
    };
    if !lanes {
        fx.load(input.dtype, base, off)
    } else if input.col_stride == 0 {
        let s = fx.load(input.dtype, base, off);
        fx.b.ins().splat(F32X4, s)
    } else if input.col_stride == 1 {
        fx.load4_checked(input.dtype, base, off, finite)
    } else {
        let mut v = fx.f(F32X4, 0.0);
        for l in 0..LANES {
            let o = fx.b.ins().iadd_imm_s(off, (l * input.col_stride) as i64);
            let s = fx.load(input.dtype, base, o);
            v = fx.b.ins().insertlane(v, s, l as u8);
        }
        v
    }
}

/// The rounding of [`finish`] that narrowing `c`'s staged f16 result can do instead
/// ([`super::narrow::deferral`]).
pub(super) fn finish_deferral(c: &Contraction, finite: &Finite) -> Option<Deferral> {
    deferral(Some(c.result), c.epilogue.as_ref().map(|e| &e.expr), &finite.epilogue_scalar)
}

/// Bias add, rounding to the contraction's type, and the fused epilogue for a value at column
/// `col` (four lanes from `col` when `lanes`), with that column's operands `cols`; without the
/// rounding `deferral` leaves to the narrowing of a staged f16 result.
#[allow(clippy::too_many_arguments, reason = "an emitter's IR values, each computed by its caller")]
pub(super) fn finish(fx: &mut Fx, c: &Contraction, value: Value, col: Value, bases: &Bases, row_offs: &[Value], lanes: bool, cols: &Columns, deferral: Option<&Deferral>) -> Result<Value, String> {
    finish_given(fx, c, value, col, bases, row_offs, lanes, cols, deferral, None)
}

/// [`finish`] with an epilogue op's value given (computed before, a block at a time:
/// [`Given`]).
#[allow(clippy::too_many_arguments, reason = "an emitter's IR values, each computed by its caller")]
pub(super) fn finish_given(fx: &mut Fx, c: &Contraction, value: Value, col: Value, bases: &Bases, row_offs: &[Value], lanes: bool, cols: &Columns, deferral: Option<&Deferral>, given: Option<(usize, Value)>) -> Result<Value, String> {
    let x = match cols.bias {
        Some(bv) => fx.b.ins().fadd(value, bv),
        None => value,
    };
    let x = if deferral.is_some_and(|d| d.op.is_none()) { x } else { fx.round_f32(c.result, x) };
    let Some(Epilogue { expr, inputs, .. }) = &c.epilogue else { return Ok(x) };
    let mut args = vec![x];
    for (i, input) in inputs.iter().enumerate() {
        let v = match cols.inputs[i] {
            Some(v) => v,
            None => epilogue_input(fx, input, bases.epilogue[i], row_offs[i], col, lanes, bases.finite.epilogue[i]),
        };
        args.push(v);
    }
    eval_given(fx, expr, args, deferral, given)
}
