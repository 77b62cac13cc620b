//! The buffer plan: every intermediate gets an offset in one arena, reused by liveness.
//!
//! A buffer is live from the kernel that writes it to the last kernel that reads it (results
//! stay live to the end: the runtime copies them out after the last kernel). Kernel
//! temporaries (a backend's packed operands) are live during their kernel only. Buffers are
//! placed largest first at the lowest offset that no buffer live at the same time occupies
//! (greedy best-offset placement, as TFLite's arena planner does). The plan reports its peak
//! and the liveness lower bound: the largest total of buffers live at one kernel, which no
//! placement can beat.
//!
//! An elementwise kernel writes in place where it can: when an input it reads element for
//! element (the output's own index, no broadcast) has the output's size and is read for the last
//! time there, the output takes that input's place (one buffer live from the input's writer to
//! the output's last reader). Each element is read before it is written over, by the same work
//! item, so every backend's elementwise code is correct in place; the arena shrinks, and with
//! several threads each writes lines its own core wrote before rather than lines another
//! core holds.

use super::{Buffer, BufferId, BufferKind, Kernel, KernelKind, Operand};

/// Arena offsets are multiples of this (a cache line: vector loads never straddle one
/// needlessly, and buffers never share a line between threads).
pub const ALIGN: usize = 64;

/// Where every intermediate lives.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct BufferPlan {
    /// Arena offset of each buffer (`None` for inputs and constants), then of each kernel
    /// temporary (indexed `buffers.len() + i` for the `i`th).
    pub offsets: Vec<Option<usize>>,
    /// Arena size: the peak of the plan.
    pub arena_bytes: usize,
    /// The liveness lower bound on the arena size.
    pub lower_bound: usize,
}

impl BufferPlan {
    /// The arena offset of a buffer.
    pub fn offset(&self, b: BufferId) -> Option<usize> {
        self.offsets.get(b.0).copied().flatten()
    }

    /// The arena offset of the `i`th kernel temporary, if it has one.
    pub fn temp_offset(&self, buffers: usize, i: usize) -> Option<usize> {
        self.offsets.get(buffers + i).copied().flatten()
    }
}

fn aligned(n: usize) -> usize {
    n.div_ceil(ALIGN) * ALIGN
}

/// The inputs an elementwise kernel may write its output over: intermediates it reads at the
/// output's own index (dense strides over the iteration space, the output's element size)
/// through every operand that reads them.
fn in_place_inputs(buffers: &[Buffer], kernel: &Kernel) -> Vec<usize> {
    if let KernelKind::Contraction(c) = &kernel.kind {
        return epilogue_in_place_inputs(buffers, c);
    }
    let KernelKind::Elementwise(e) = &kernel.kind else { return Vec::new() };
    let size = e.expr.result_dtype().byte_size();
    let identity = |s: &super::Strided| s.rows.is_none() && s.dtype.byte_size() == size && at_own_index(&e.shape, &s.strides, 1);
    e.inputs
        .iter()
        .map(|s| s.buffer)
        .filter(|b| *b != e.output && matches!(buffers[b.0].kind, BufferKind::Intermediate))
        .filter(|b| e.inputs.iter().filter(|s| s.buffer == *b).all(identity))
        .map(|b| b.0)
        .collect()
}

/// The inputs a contraction's epilogue reads at the output's own element (a residual add's),
/// which its output may be written over: intermediates of the output's element size that the
/// contraction reads nowhere else (not as A, B, bias or a part of A), every epilogue operand
/// of them at the output's dense index, the output not through a view. A backend's tiles read
/// such an input's element in the finish that writes the output's, in the same work item;
/// only a backend whose contraction code does so lets the plan use them ([`plan_with_temps`]).
fn epilogue_in_place_inputs(buffers: &[Buffer], c: &super::Contraction) -> Vec<usize> {
    let Some(e) = &c.epilogue else { return Vec::new() };
    if c.views.out.is_some() {
        return Vec::new();
    }
    let size = c.out.ty.dtype.byte_size();
    let identity = |i: &super::EpilogueInput| i.dtype.byte_size() == size && (i.col_stride == 1 || c.n == 1) && at_own_index(&e.rows_shape, &i.row_strides, c.n);
    let elsewhere: Vec<BufferId> = [c.a.buffer, c.b.buffer].into_iter().chain(c.a_parts.iter().map(|p| p.buffer)).chain(c.bias.as_ref().map(|b| b.buffer)).collect();
    e.inputs
        .iter()
        .map(|i| i.buffer)
        .filter(|b| *b != c.out.buffer && !elsewhere.contains(b) && matches!(buffers[b.0].kind, BufferKind::Intermediate))
        .filter(|b| e.inputs.iter().filter(|i| i.buffer == *b).all(identity))
        .map(|b| b.0)
        .collect()
}

/// Whether element strides `strides` over `shape` are its row-major index, the innermost
/// dimension `inner` elements apart (a unit dimension's stride aside).
fn at_own_index(shape: &[usize], strides: &[usize], inner: usize) -> bool {
    let mut step = inner;
    strides.len() == shape.len()
        && (0..shape.len()).rev().all(|d| {
            let dense = step;
            step *= shape[d];
            shape[d] == 1 || strides[d] == dense
        })
}

/// Plans the arena for `kernels` over `buffers`, with no kernel temporaries.
pub fn plan(buffers: &[Buffer], kernels: &[Kernel], outputs: &[Operand]) -> BufferPlan {
    plan_with_temps(buffers, kernels, outputs, &[], &[], &|k| !matches!(kernels[k].kind, KernelKind::Contraction(_)))
}

/// Plans the arena; each `(k, bytes)` of `temps` is a temporary live during kernel `k`. Each
/// `(first, last)` of `together` is a span of kernels that run interleaved (block by block):
/// whatever is live during one of them is live during all of them. An elementwise kernel `k`
/// writes in place only where `in_place(k)` (a backend whose code for it would be slower so:
/// LLVM's loop vectoriser checks at run time that an output does not overlap an input, and
/// runs the scalar loop where it does).
pub fn plan_with_temps(buffers: &[Buffer], kernels: &[Kernel], outputs: &[Operand], temps: &[(usize, usize)], together: &[(usize, usize)], in_place: &dyn Fn(usize) -> bool) -> BufferPlan {
    let end = kernels.len();
    // (size, first kernel, last kernel) per planned item.
    let mut live: Vec<Option<(usize, usize, usize)>> = vec![None; buffers.len() + temps.len()];
    for (k, kernel) in kernels.iter().enumerate() {
        let w = kernel.writes();
        if matches!(buffers[w.0].kind, BufferKind::Intermediate) {
            let e = live[w.0].get_or_insert((aligned(buffers[w.0].bytes), k, k));
            e.1 = e.1.min(k);
            e.2 = e.2.max(k);
        }
        for r in kernel.reads() {
            if let Some(e) = live[r.0].as_mut() {
                e.2 = e.2.max(k);
            }
        }
    }
    for (i, &(k, bytes)) in temps.iter().enumerate() {
        if bytes > 0 {
            live[buffers.len() + i] = Some((aligned(bytes), k, k));
        }
    }
    for o in outputs {
        if let Some(e) = live[o.buffer.0].as_mut() {
            e.2 = end;
        }
    }
    for &(a, b) in together {
        for (_, first, last) in live.iter_mut().flatten() {
            if (a..=b).contains(first) {
                *first = a;
            }
            if (a..=b).contains(last) {
                *last = b;
            }
        }
    }
    // In place: an output that takes an input's place is planned as part of it.
    let mut same_as: Vec<Option<usize>> = vec![None; live.len()];
    for (k, kernel) in kernels.iter().enumerate() {
        if !in_place(k) || together.iter().any(|&(a, b)| (a..=b).contains(&k)) {
            continue;
        }
        let y = kernel.writes().0;
        // Each candidate by the buffer it is planned in (a chain of in-place kernels is one).
        for x in in_place_inputs(buffers, kernel).into_iter().map(|x| same_as[x].unwrap_or(x)) {
            let (Some(xl), Some(yl)) = (live[x], live[y]) else { continue };
            if xl.2 == k && yl.1 == k && xl.0 == yl.0 {
                live[x] = Some((xl.0, xl.1, yl.2));
                live[y] = None;
                same_as[y] = Some(x);
                break;
            }
        }
    }
    let mut order: Vec<usize> = (0..live.len()).filter(|&i| live[i].is_some()).collect();
    order.sort_by_key(|&i| (std::cmp::Reverse(live[i].expect("filtered").0), i));
    let mut offsets: Vec<Option<usize>> = vec![None; live.len()];
    let mut placed: Vec<(usize, usize, usize, usize)> = Vec::new(); // (offset, size, first, last)
    let mut arena = 0;
    for i in order {
        let (size, first, last) = live[i].expect("filtered");
        let mut busy: Vec<(usize, usize)> =
            placed.iter().filter(|p| p.2 <= last && first <= p.3).map(|p| (p.0, p.0 + p.1)).collect();
        busy.sort_unstable();
        let mut at = 0;
        for (lo, hi) in busy {
            if lo >= at + size {
                break;
            }
            at = at.max(hi);
        }
        offsets[i] = Some(at);
        placed.push((at, size, first, last));
        arena = arena.max(at + size);
    }
    // Outputs in their inputs' places.
    for i in 0..same_as.len() {
        if let Some(x) = same_as[i] {
            offsets[i] = offsets[x];
        }
    }
    let lower_bound = (0..=end)
        .map(|t| live.iter().flatten().filter(|(_, f, l)| *f <= t && t <= *l).map(|(s, _, _)| s).sum::<usize>())
        .max()
        .unwrap_or(0);
    BufferPlan { offsets, arena_bytes: arena, lower_bound }
}
