//! The JIT's generated GEMM micro-kernel (for a CPU without the runtime's AVX2 loops), its A
//! forms, and the reduction's chunks ([`super::gemm`] calls them).

use super::emit::Fx;
use super::legal::{KC, KU, LANES, MR, NR};
#[cfg(doc)]
use super::Loops;
use crate::lower::ContractionKind;
use cranelift_codegen::ir::types::{F32, F32X4};
use cranelift_codegen::ir::{InstBuilder, Value};

/// The longest reduction a one-micro-panel GEMM walks in one chunk: its packed A and an
/// f16 B panel widened by the generated loop then take 128 and 256 KiB of scratch.
pub(super) const ONE_CHUNK_MAX_K: usize = 8192;

/// The micro-kernel, a function of its own: `(apanel, bpanel, k, tile, accumulate)` computes
/// `tile = (accumulate ? tile : 0) + A·B` for an `MR × NR` tile over `k`, in `MR × NR / 4`
/// f32x4 accumulators. Its [`AForm::Rows`] form takes `(a, stride, bpanel, k, tile,
/// accumulate)` and reads A's rows in place.
///
/// Per `k` step it loads the `NR / 4` B vectors and, per row, the A value, loaded and
/// broadcast (`vmovss` + `vbroadcastss`: a broadcasting load per FMA instead was 5-8% slower
/// on mobilenet ×1.0), which feeds that row's FMAs. x86 `vfmadd213ps` overwrites a
/// multiplicand, so the register allocator copies the A vector for its first FMA (a move the
/// CPU eliminates at rename) and the new accumulator lands in the copy's register. The `k` loop
/// is unrolled [`KU`] times, which lets the allocator rotate the accumulators back into their
/// loop registers without moves.
///
/// Its instruction order is its schedule: the runtime compiles it without Cranelift's
/// optimizer (see [`super::Compiled::keep_order`]), which would hoist every load of an
/// unrolled body above the FMAs. It is separate from the kernels so that nothing else
/// competes for the 16 xmm registers.
pub fn micro_kernel_function(ctx: &mut cranelift_frontend::FunctionBuilderContext, fma: bool, form: AForm) -> cranelift_codegen::ir::Function {
    use cranelift_codegen::ir::{types::I64, BlockArg, Function, UserFuncName};
    let mut func = Function::with_name_signature(UserFuncName::testcase(form.name()), form.signature());
    let mut b = cranelift_frontend::FunctionBuilder::new(&mut func, ctx);
    let m = super::emit::mem();
    let accs = MR * NR / LANES;
    let args = |vals: &[Value]| vals.iter().map(|&v| BlockArg::Value(v)).collect::<Vec<_>>();
    // One k step at `ap`/`bp` (byte offsets `ao`/`bo`): B vectors, then per row its A vector
    // and one FMA per B vector.
    // `rows[r]`: the offset of row r from `ap` (Rows form: `r · stride`, in a register).
    let step = |b: &mut cranelift_frontend::FunctionBuilder, ap: Value, bp: Value, ao: i32, bo: i32, rows: &[Value], acc: &mut [Value]| {
        let bv: Vec<Value> = (0..NR / LANES).map(|v| b.ins().load(F32X4, m, bp, bo + (v * 16) as i32)).collect();
        for r in 0..MR {
            let av = match form {
                AForm::Packed => {
                    let x = b.ins().load(F32, m, ap, ao + (r * 4) as i32);
                    b.ins().splat(F32X4, x)
                }
                AForm::Rows => {
                    let row = match rows.get(r) {
                        Some(&off) if r > 0 => b.ins().iadd(ap, off),
                        _ => ap,
                    };
                    let x = b.ins().load(F32, m, row, ao);
                    b.ins().splat(F32X4, x)
                }
            };
            for (v, &bvec) in bv.iter().enumerate() {
                let i = r * (NR / LANES) + v;
                acc[i] = if fma {
                    b.ins().fma(av, bvec, acc[i])
                } else {
                    let p = b.ins().fmul(av, bvec);
                    b.ins().fadd(acc[i], p)
                };
            }
        }
    };
    let entry = b.create_block();
    b.append_block_params_for_function_params(entry);
    // Two loops, each a header that tests and a body that jumps back: the unrolled one over
    // `k / KU` and the remainder over `k % KU`; then the exit stores the tile. Every loop
    // value is a parameter of the header, which has two predecessors, so each accumulator chain
    // of a body has exactly one use (its jump back). With a second use (a branch to both the
    // loop and the exit), Cranelift would not fold the A loads into `vbroadcastss`.
    let (head, body, rest_head, rest_body, exit) = (b.create_block(), b.create_block(), b.create_block(), b.create_block(), b.create_block());
    for blk in [head, rest_head] {
        for _ in 0..3 {
            b.append_block_param(blk, I64);
        }
        for _ in 0..accs {
            b.append_block_param(blk, F32X4);
        }
    }
    for _ in 0..accs {
        b.append_block_param(exit, F32X4);
    }
    b.switch_to_block(entry);
    let p = b.block_params(entry).to_vec();
    // Packed: (apanel, bpanel, k, tile, accumulate); Rows: (a, stride, bpanel, k, tile,
    // accumulate).
    let (p, rows) = match form {
        AForm::Packed => (p, vec![]),
        AForm::Rows => {
            let stride = p[1];
            let rows = (0..MR).map(|r| if r < 2 { stride } else { b.ins().imul_imm_s(stride, r as i64) }).collect();
            ([&p[..1], &p[2..]].concat(), rows)
        }
    };
    let (apanel, bpanel, k, tile) = (p[0], p[1], p[2], p[3]);
    let accumulate = p[4];
    // Bytes of A per k step.
    let a_step = match form {
        AForm::Packed => MR * 4,
        AForm::Rows => 4,
    };
    let trips = b.ins().ushr_imm_u(k, KU.trailing_zeros() as i64);
    let left = b.ins().band_imm_u(k, (KU - 1) as i64);
    let (from_tile, from_zero) = (b.create_block(), b.create_block());
    b.ins().brif(accumulate, from_tile, &[], from_zero, &[]);
    b.switch_to_block(from_tile);
    let mut start = vec![apanel, bpanel, trips];
    start.extend((0..accs).map(|i| b.ins().load(F32X4, m, tile, (i * 16) as i32)));
    b.ins().jump(head, &args(&start));
    b.switch_to_block(from_zero);
    let zero = b.ins().f32const(0.0);
    let zero = b.ins().splat(F32X4, zero);
    let mut start = vec![apanel, bpanel, trips];
    start.extend(std::iter::repeat_n(zero, accs));
    b.ins().jump(head, &args(&start));

    // A loop: the header branches to the body or to `next` with (ap, bp, acc..); the body runs
    // `steps` k steps and jumps back.
    let lp = |b: &mut cranelift_frontend::FunctionBuilder, head, body, steps: usize, next: &dyn Fn(&[Value]) -> Vec<Value>, next_block| {
        b.switch_to_block(head);
        let p = b.block_params(head).to_vec();
        let out = next(&p);
        b.ins().brif(p[2], body, &[], next_block, &args(&out));
        b.switch_to_block(body);
        let (ap, bp, count) = (p[0], p[1], p[2]);
        let mut acc = p[3..].to_vec();
        for u in 0..steps {
            step(b, ap, bp, (u * a_step) as i32, (u * NR * 4) as i32, &rows, &mut acc);
        }
        let ap = b.ins().iadd_imm_s(ap, (steps * a_step) as i64);
        let bp = b.ins().iadd_imm_s(bp, (steps * NR * 4) as i64);
        let count = b.ins().iadd_imm_s(count, -1);
        let mut again = vec![ap, bp, count];
        again.extend(&acc);
        b.ins().jump(head, &args(&again));
    };
    let to_rest = |p: &[Value]| {
        let mut v = vec![p[0], p[1], left];
        v.extend(&p[3..]);
        v
    };
    lp(&mut b, head, body, KU, &to_rest, rest_head);
    lp(&mut b, rest_head, rest_body, 1, &|p: &[Value]| p[3..].to_vec(), exit);

    b.switch_to_block(exit);
    let p = b.block_params(exit).to_vec();
    for (i, &v) in p.iter().enumerate() {
        b.ins().store(m, v, tile, (i * 16) as i32);
    }
    b.ins().return_(&[]);
    b.seal_all_blocks();
    b.finalize(super::frontend_config());
    func
}

/// Where the micro-kernel reads A.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AForm {
    /// Packed micro-panels `[k][MR]` of f32 (`pack_a`).
    Packed,
    /// A's own f32 rows, `stride` bytes apart (a matmul, a 1×1 convolution with stride 1 and
    /// no padding): nothing is packed.
    Rows,
}

impl AForm {
    /// Both forms, in function order: the artifact's functions 0 and 1.
    pub const ALL: [AForm; 2] = [AForm::Packed, AForm::Rows];

    /// The function's name.
    pub fn name(self) -> &'static str {
        match self {
            AForm::Packed => "gemm_micro_kernel",
            AForm::Rows => "gemm_micro_kernel_rows",
        }
    }

    /// Its index among an artifact's functions.
    fn index(self) -> u32 {
        self as u32
    }

    fn signature(self) -> cranelift_codegen::ir::Signature {
        use cranelift_codegen::ir::{types::I64, AbiParam, Signature};
        let mut sig = Signature::new(super::emit::CALL_CONV);
        let params = match self {
            AForm::Packed => 5,
            AForm::Rows => 6,
        };
        sig.params.extend((0..params).map(|_| AbiParam::new(I64)));
        sig
    }
}

/// Calls the micro-kernel of A's `form`: `tile` = (`accumulate` ? `tile` : 0) + A·B over `k`,
/// A at `a` (packed, or rows `stride` bytes apart).
pub(super) fn micro_kernel(fx: &mut Fx, (form, a, stride): (AForm, Value, usize), bpanel: Value, k: usize, tile: Value, accumulate: bool) {
    use cranelift_codegen::ir::{ExtFuncData, ExternalName, UserExternalName};
    let sigref = fx.b.import_signature(form.signature());
    let name = fx.b.func.declare_imported_user_function(UserExternalName::new(0, form.index()));
    let f = fx.b.import_function(ExtFuncData { name: ExternalName::user(name), signature: sigref, colocated: true, patchable: false });
    let kv = fx.i(k as i64);
    let flag = fx.i(accumulate as i64);
    let args = match form {
        AForm::Packed => vec![a, bpanel, kv, tile, flag],
        AForm::Rows => vec![a, fx.i(stride as i64), bpanel, kv, tile, flag],
    };
    fx.b.ins().call(f, &args);
}

/// The ranges `k0..k1` of the reduction dimension that the GEMM handles one at a time, so that
/// three micro-panels of packed A (`MR × KC` values, 4 KiB each) and a chunk of a B panel (`KC
/// × NR`, 8 KiB) stay in L1 while the micro-kernel runs. A conv's ranges are whole taps, or parts of one tap
/// when a tap has more than [`KC`] channels, so packing never splits a window at run time.
pub(super) fn k_chunks(kind: &ContractionKind, k: usize) -> Vec<(usize, usize)> {
    let step = match kind {
        ContractionKind::Conv(g) if g.ic <= KC => (KC / g.ic) * g.ic,
        ContractionKind::Conv(g) => g.ic.div_ceil(g.ic.div_ceil(KC)),
        _ => KC,
    };
    let mut out = Vec::new();
    let mut k0 = 0;
    while k0 < k {
        let k1 = match kind {
            // Never cross a tap boundary inside a split tap.
            ContractionKind::Conv(g) if g.ic > KC => (k0 + step).min((k0 / g.ic + 1) * g.ic),
            _ => (k0 + step).min(k),
        };
        out.push((k0, k1));
        k0 = k1;
    }
    if out.is_empty() {
        // k = 0: one empty range still zeroes the C block.
        out.push((0, 0));
    }
    out
}
