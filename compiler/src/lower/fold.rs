//! Folding a kernel into the kernel beside it. A cast kernel reads and writes a whole tensor to
//! do what its neighbour can do at its store (a pooling or a copy that produces the cast's
//! input) or at its load (a copy that is the only reader of the cast's result); an integer sum
//! that only a gather's indices read is computed by the gather as it reads each index; a gather
//! by constant indices whose only readers are elementwise kernels reading whole rows is done by
//! those readers, each picking its rows from the gather's values as it reads them.
//!
//! Results stay bit-identical: the neighbour computes the same value in the same type, and the
//! one rounding the cast did is done by the neighbour instead (f16 → f32 is exact; f32 → f16
//! and f32 → bf16 round to nearest even once, from the same f32 value); integer addition wraps
//! to the same bits in any order.

use super::{Buffer, BufferId, BufferKind, ContractionKind, EwKind, IndexSum, Kernel, KernelKind, LowerOptions, MatrixLayout, Operand, RowLookup, View, dense_strides};
use f16c_dialect::{BinaryOp, DType, TensorType};

/// Folds every float-to-float cast kernel of `kernels` (over `buffers`, with the function's
/// `outputs`) that it can, then renumbers the kernels; runs before the arena is planned.
/// Returns how many were folded.
pub fn fold_casts(kernels: &mut Vec<Kernel>, buffers: &[Buffer], outputs: &[Operand], options: LowerOptions) -> usize {
    fold_each(kernels, |kernels, c| {
        let Some(into) = float_cast(&kernels[c]).and_then(|cast| fold((kernels, buffers, outputs), c, cast, options)) else { return false };
        let cast = kernels.remove(c);
        // The ops in evaluation order: the cast runs after its producer, before its reader.
        take_nodes(&mut kernels[if into > c { into - 1 } else { into }], cast.nodes, into > c);
        true
    })
}

/// `fold_at(kernels, k)` at each kernel in turn: where it folds kernel `k` into another
/// (removing it, and returning `true`), the next kernel takes its place and is tried next;
/// then the kernels are renumbered if any was folded. Returns how many were.
fn fold_each(kernels: &mut Vec<Kernel>, mut fold_at: impl FnMut(&mut Vec<Kernel>, usize) -> bool) -> usize {
    let mut folded = 0;
    let mut k = 0;
    while k < kernels.len() {
        if fold_at(kernels, k) {
            folded += 1;
        } else {
            k += 1;
        }
    }
    if folded > 0 {
        renumber(kernels);
    }
    folded
}

/// Gives `into` the ops of a kernel folded into it, in evaluation order: before its own
/// (`before`: the folded kernel ran first) or after them.
fn take_nodes(into: &mut Kernel, nodes: Vec<f16c_dialect::NodeId>, before: bool) {
    let own = std::mem::take(&mut into.nodes);
    into.nodes = if before { [nodes, own].concat() } else { [own, nodes].concat() };
}

/// The kernels that read buffer `b`, in order.
fn readers(kernels: &[Kernel], b: BufferId) -> Vec<usize> {
    (0..kernels.len()).filter(|&r| kernels[r].reads().contains(&b)).collect()
}

/// Whether `b` is an intermediate no result is: only kernels see it.
fn intermediate(buffers: &[Buffer], outputs: &[Operand], b: BufferId) -> bool {
    matches!(buffers[b.0].kind, BufferKind::Intermediate) && !outputs.iter().any(|o| o.buffer == b)
}

/// Names the kernels `k{i}_…` by their places again.
fn renumber(kernels: &mut [Kernel]) {
    for (i, k) in kernels.iter_mut().enumerate() {
        if let Some((_, rest)) = k.name.split_once('_') {
            k.name = format!("k{i}_{rest}");
        }
    }
}

/// Folds every integer sum kernel whose only reader is a gather's indices into that gather
/// ([`IndexSum`]: the gather adds the parts as it reads each index), then renumbers the
/// kernels; runs before the arena is planned. The same integers (addition wraps in the
/// indices' type in any order), so the same bits. Returns how many were folded.
pub fn fold_index_sums(kernels: &mut Vec<Kernel>, buffers: &[Buffer], outputs: &[Operand]) -> usize {
    fold_each(kernels, |kernels, e| {
        let Some(q) = index_sum_reader(kernels, buffers, outputs, e) else { return false };
        let sum = kernels.remove(e);
        let KernelKind::Elementwise(ew) = sum.kind else { unreachable!("index_sum_reader takes elementwise kernels") };
        let gather = &mut kernels[q - 1];
        let KernelKind::Gather(g) = &mut gather.kind else { unreachable!("index_sum_reader returns gathers") };
        g.index_sum = Some(IndexSum { shape: ew.shape, parts: ew.inputs });
        take_nodes(gather, sum.nodes, true);
        true
    })
}

/// Folds every gather by constant indices, all in range, whose result only elementwise kernels
/// read, and each a row at a time, into those readers ([`RowLookup`]: the reader picks the row
/// of the gather's values as it reads it), then renumbers the kernels; runs before the arena is
/// planned. The gathered result was written and read back once per value (a U-Net's bilinear
/// upsampling: four gathers of every output pixel's channels, then the interpolation reading
/// the four); the reader now reads the values directly. The same values, so the same bits.
/// Returns how many were folded.
pub fn fold_gathers(kernels: &mut Vec<Kernel>, buffers: &[Buffer], outputs: &[Operand]) -> usize {
    fold_each(kernels, |kernels, q| {
        let Some((lookup, readers)) = gather_lookup(kernels, buffers, outputs, q) else { return false };
        let gather = kernels.remove(q);
        let KernelKind::Gather(g) = gather.kind else { unreachable!("gather_lookup takes gathers") };
        for &r in &readers {
            let KernelKind::Elementwise(e) = &mut kernels[r - 1].kind else { unreachable!("gather_lookup returns elementwise readers") };
            for input in e.inputs.iter_mut().filter(|i| i.buffer == g.output.buffer) {
                input.buffer = g.values.buffer;
                input.rows = Some(lookup.clone());
            }
        }
        // The gather's op with its first reader, in evaluation order.
        take_nodes(&mut kernels[readers[0] - 1], gather.nodes, true);
        true
    })
}

/// Folds every copy that [`view_fold`] finds into the matmul beside it, then renumbers the
/// kernels; runs before the arena is planned. An attention's head transposes (torch-mlir's
/// `[tokens, heads·d] → [heads, tokens, d]` of the queries and values, and back for the
/// products) wrote and read a whole tensor each to give the matmul dense operands; the matmul
/// now reads its A and packs its B through a [`View`] of the copy's source, and writes its
/// output through a view of the copy's destination. The same elements, so the same bits.
/// Returns how many were folded.
pub fn fold_views(kernels: &mut Vec<Kernel>, buffers: &[Buffer], outputs: &[Operand]) -> usize {
    fold_each(kernels, |kernels, k| {
        let Some((q, side, view)) = view_fold(kernels, buffers, outputs, k) else { return false };
        let copy = kernels.remove(k);
        let KernelKind::Copy(cp) = copy.kind else { unreachable!("view_fold takes copies") };
        let q = if q > k { q - 1 } else { q };
        let matmul = &mut kernels[q];
        let KernelKind::Contraction(c) = &mut matmul.kind else { unreachable!("view_fold returns contractions") };
        match side {
            Side::A => {
                c.a.buffer = cp.moves[0].src;
                c.views.a = Some(view);
            }
            Side::B => {
                c.b.buffer = cp.moves[0].src;
                c.views.b = Some(view);
            }
            Side::Out => {
                c.out.buffer = cp.output.buffer;
                c.views.out = Some(view);
            }
        }
        // The copy's op with the matmul, in evaluation order.
        take_nodes(matmul, copy.nodes, side != Side::Out);
        true
    })
}

/// Folds every copy that [`concat_fold`] finds into the convolution that reads it, then
/// renumbers the kernels; runs before the arena is planned. A U-Net's skip connections
/// (torch-mlir's `concat` of the upsampled value and the encoder's, along the channels) were
/// written whole by the copy, then read whole again as the next convolution padded its input;
/// the convolution now pads the parts into its input directly ([`super::Contraction::a_parts`]).
/// The same elements, so the same bits. Returns how many were folded.
pub fn fold_concats(kernels: &mut Vec<Kernel>, buffers: &[Buffer], outputs: &[Operand]) -> usize {
    fold_each(kernels, |kernels, k| {
        let Some((q, parts)) = concat_fold(kernels, buffers, outputs, k) else { return false };
        let copy = kernels.remove(k);
        let conv = &mut kernels[q - 1];
        let KernelKind::Contraction(c) = &mut conv.kind else { unreachable!("concat_fold returns contractions") };
        c.a.buffer = parts[0].buffer;
        c.a_parts = parts;
        take_nodes(conv, copy.nodes, true);
        true
    })
}

/// Where copy `k` folds into a convolution ([`fold_concats`]): the convolution's index and the
/// parts. The copy concatenates two or more dense sources along the last dimension of its
/// output (no fill, no conversion; each move a whole source, in order), an intermediate read
/// only by a later convolution with padding, as its input alone, whose padding multiplies no
/// non-finite weight (the backend pads such an input once per run).
fn concat_fold(kernels: &[Kernel], buffers: &[Buffer], outputs: &[Operand], k: usize) -> Option<(usize, Vec<Operand>)> {
    let KernelKind::Copy(cp) = &kernels[k].kind else { return None };
    let out = cp.output.buffer;
    let (dtype, shape) = (cp.output.ty.dtype, &cp.output.ty.shape);
    let channels = *shape.last()?;
    if cp.fill.is_some() || cp.converts() || cp.moves.len() < 2 || channels == 0 || !intermediate(buffers, outputs, out) {
        return None;
    }
    let pixels = cp.output.ty.num_elements() / channels;
    let as_isize = |s: Vec<usize>| s.into_iter().map(|s| s as isize).collect::<Vec<_>>();
    let mut parts = Vec::with_capacity(cp.moves.len());
    let mut at = 0;
    for mv in &cp.moves {
        let c = *mv.shape.last()?;
        let mut wide = mv.shape.clone();
        *wide.last_mut()? = channels;
        let whole = mv.shape.iter().product::<usize>() == pixels * c && buffers[mv.src.0].bytes == pixels * c * dtype.byte_size();
        if c == 0 || !whole || mv.src == out || mv.src_offset != 0 || mv.dst_offset != at || mv.src_strides != as_isize(dense_strides(&mv.shape)) || mv.dst_strides != as_isize(dense_strides(&wide)) {
            return None;
        }
        let mut part = shape.clone();
        *part.last_mut()? = c;
        parts.push(Operand { buffer: mv.src, ty: TensorType::new(dtype, part) });
        at += c;
    }
    if at != channels {
        return None;
    }
    let &[q] = readers(kernels, out).as_slice() else { return None };
    let KernelKind::Contraction(c) = &kernels[q].kind else { return None };
    let ContractionKind::Conv(g) = &c.kind else { return None };
    let alone = kernels[q].reads().iter().filter(|&&b| b == out).count() == 1;
    let input = c.a.buffer == out && c.a.ty == cp.output.ty && c.a_parts.is_empty() && c.a_row_stride.is_none();
    (q > k && alone && input && g.ic == channels && g.pad != [0; 4] && !c.padding_hazard).then_some((q, parts))
}

/// Which operand of a matmul a copy folds into.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Side {
    A,
    B,
    Out,
}

/// Where copy `k` folds into a matmul ([`fold_views`]): the matmul's index, the operand, and
/// the view. The copy is one move, copies bits (no fill, no conversion) and writes its whole
/// output, an intermediate; either its result is read only by one matmul, as its A (f32, a
/// view whose rows are contiguous) or as its B computed at run time (row-major, contiguous
/// rows), or it is the only reader of a matmul's result (an intermediate, read back densely
/// in some order of its dimensions) and writes it with contiguous rows.
fn view_fold(kernels: &[Kernel], buffers: &[Buffer], outputs: &[Operand], k: usize) -> Option<(usize, Side, View)> {
    let KernelKind::Copy(cp) = &kernels[k].kind else { return None };
    let [mv] = cp.moves.as_slice() else { return None };
    let elements = cp.output.ty.num_elements();
    if cp.fill.is_some() || cp.converts() || mv.shape.iter().product::<usize>() != elements || elements == 0 {
        return None;
    }
    let intermediate = |b: BufferId| intermediate(buffers, outputs, b);
    let readers = |b: BufferId| readers(kernels, b);
    let contraction = |q: usize| match &kernels[q].kind {
        KernelKind::Contraction(c) if matches!(c.kind, ContractionKind::MatMul) => Some(c),
        _ => None,
    };
    let view = |strides: &[isize], offset: usize| -> Option<View> {
        let s: Vec<usize> = strides.iter().map(|&s| usize::try_from(s).ok()).collect::<Option<_>>()?;
        (s[2] == 1).then_some(View { offset, batch: s[0], row: s[1], col: 1 })
    };
    // Into the reader: the move's destination is the copy's output, dense in the move's order.
    let out = cp.output.buffer;
    let dense_dst = mv.dst_offset == 0 && mv.dst_strides == dense_strides(&mv.shape).iter().map(|&s| s as isize).collect::<Vec<_>>();
    if dense_dst && intermediate(out) {
        if let &[q] = readers(out).as_slice() {
            if let Some(c) = contraction(q).filter(|_| q > k && kernels[q].reads().iter().filter(|&&b| b == out).count() == 1) {
                let found = if c.a.buffer == out && c.views.a.is_none() && c.a.ty.dtype == DType::F32 && c.a_row_stride == Some(c.k) {
                    restride(&mv.shape, &mv.src_strides, &[c.batch, c.m, c.k]).and_then(|s| view(&s, mv.src_offset)).map(|v| (Side::A, v))
                } else if c.b.buffer == out && c.views.b.is_none() && !c.b_constant && c.b_layout == MatrixLayout::RowMajor {
                    restride(&mv.shape, &mv.src_strides, &[c.batch, c.k, c.n]).and_then(|s| view(&s, mv.src_offset)).map(|v| (Side::B, v))
                } else {
                    None
                };
                if let Some((side, v)) = found {
                    return Some((q, side, v));
                }
            }
        }
    }
    // Into the writer: the move reads the matmul's result whole, in some order of its dimensions.
    let src = mv.src;
    if mv.src_offset != 0 || !intermediate(src) || readers(src) != [k] {
        return None;
    }
    let p = (0..k).rev().find(|&p| kernels[p].writes() == src)?;
    let c = contraction(p)?;
    if c.views.out.is_some() || c.out.ty.dtype != cp.source {
        return None;
    }
    // The move's dimensions from the outermost of the source: its dense order.
    let mut dims: Vec<(usize, isize, isize)> = mv.shape.iter().zip(&mv.src_strides).zip(&mv.dst_strides).filter(|((&d, _), _)| d != 1).map(|((&d, &s), &t)| (d, s, t)).collect();
    dims.sort_by_key(|&(_, s, _)| std::cmp::Reverse(s));
    let sizes: Vec<usize> = dims.iter().map(|d| d.0).collect();
    let dense = dense_strides(&sizes);
    if dims.iter().zip(&dense).any(|(d, &s)| d.1 != s as isize) {
        return None;
    }
    let dst: Vec<isize> = dims.iter().map(|d| d.2).collect();
    let s = restride(&sizes, &dst, &[c.batch, c.m, c.n])?;
    Some((p, Side::Out, view(&s, mv.dst_offset)?))
}

/// Strides over `target` that address the elements that `shape` with `strides` does, in the
/// same (row-major) order, where there are such (the same number of elements; a view reshaped
/// without a copy): the source's dimensions that lie contiguously in each other are merged, and
/// each such run is split into `target`'s dimensions, which must fill it exactly.
pub fn restride(shape: &[usize], strides: &[isize], target: &[usize]) -> Option<Vec<isize>> {
    if shape.iter().product::<usize>() != target.iter().product::<usize>() {
        return None;
    }
    let dims: Vec<(usize, isize)> = shape.iter().zip(strides).filter(|(&d, _)| d != 1).map(|(&d, &s)| (d, s)).collect();
    let mut out = vec![0isize; target.len()];
    let (mut t, mut i) = (target.len(), dims.len());
    while i > 0 {
        // Source dimensions j..i lie contiguously in each other: one run of `run` elements.
        let base = dims[i - 1].1;
        let (mut j, mut run) = (i - 1, dims[i - 1].0);
        while j > 0 && dims[j - 1].1 == dims[j].1 * dims[j].0 as isize {
            j -= 1;
            run *= dims[j].0;
        }
        let mut have = 1usize;
        while t > 0 && (have < run || target[t - 1] == 1) {
            out[t - 1] = base * have as isize;
            have *= target[t - 1];
            t -= 1;
        }
        if have != run {
            return None;
        }
        i = j;
    }
    target[..t].iter().all(|&d| d == 1).then_some(out)
}

/// The row lookup that replaces gather `q` and the kernels (indices into `kernels`, after `q`)
/// that read its result, where [`fold_gathers`] applies: a gather (not a scatter) `[n, w, len]`
/// of `len` ≥ 2 by constant indices each in `0..k`, an intermediate result read only by
/// elementwise kernels whose innermost dimension is `len`, reading it contiguously along that
/// dimension from whole rows (every other stride a multiple of `len`).
fn gather_lookup(kernels: &[Kernel], buffers: &[Buffer], outputs: &[Operand], q: usize) -> Option<(RowLookup, Vec<usize>)> {
    let KernelKind::Gather(g) = &kernels[q].kind else { return None };
    let (&[n, k, len], &[_, w]) = (g.values.ty.shape.as_slice(), g.indices.ty.shape.as_slice()) else { return None };
    let out = g.output.buffer;
    if g.scatter.is_some() || g.index_sum.is_some() || len < 2 || !intermediate(buffers, outputs, out) {
        return None;
    }
    let BufferKind::Constant(bytes) = &buffers[g.indices.buffer.0].kind else { return None };
    let data = f16c_dialect::Data::from_le_bytes(g.indices.ty.dtype, bytes)?;
    let indices = f16c_dialect::Tensor::new(vec![n * w], data).ok()?;
    let in_range = indices.to_i64_vec().iter().all(|v| (0..k as i64).contains(v));
    let readers = readers(kernels, out);
    let whole_rows = |r: usize| match &kernels[r].kind {
        KernelKind::Elementwise(e) => {
            let rank = e.shape.len();
            rank >= 2
                && e.shape[rank - 1] == len
                && e.inputs.iter().filter(|i| i.buffer == out).all(|i| i.rows.is_none() && i.strides[rank - 1] == 1 && i.strides[..rank - 1].iter().all(|s| s % len == 0))
        }
        _ => false,
    };
    if !in_range || readers.is_empty() || readers.iter().any(|&r| r <= q || !whole_rows(r)) {
        return None;
    }
    Some((RowLookup { indices: g.indices.buffer, dtype: g.indices.ty.dtype, len, n, w, k }, readers))
}

/// The gather (its index in `kernels`) that kernel `e` can fold into: `e` sums integer inputs
/// of the indices' type, each once (a tree of adds), into an intermediate that only that
/// gather reads, as its indices.
fn index_sum_reader(kernels: &[Kernel], buffers: &[Buffer], outputs: &[Operand], e: usize) -> Option<usize> {
    let KernelKind::Elementwise(ew) = &kernels[e].kind else { return None };
    let d = ew.expr.result_dtype();
    let adds = ew.expr.ops.iter().all(|op| matches!(op.kind, EwKind::Binary(BinaryOp::Add)) && op.dtype == d);
    // (The gathers' code walks the sum's rows: `collapse` leaves every elementwise kernel at
    // least one dimension, which this holds to.)
    if !matches!(d, DType::I32 | DType::I64) || !adds || ew.shape.is_empty() || ew.inputs.iter().any(|i| i.dtype != d) {
        return None;
    }
    // Every value but the result is an argument exactly once: the sum of the inputs.
    let values = ew.inputs.len() + ew.expr.ops.len();
    let mut uses = vec![0usize; values];
    for a in ew.expr.ops.iter().flat_map(|op| &op.args) {
        uses[*a] += 1;
    }
    if uses[..values - 1].iter().any(|&u| u != 1) || !intermediate(buffers, outputs, ew.output) {
        return None;
    }
    let readers = readers(kernels, ew.output);
    let &[q] = readers.as_slice() else { return None };
    match &kernels[q].kind {
        KernelKind::Gather(g) if g.scatter.is_none() && g.index_sum.is_none() && g.indices.buffer == ew.output && g.indices.ty.dtype == d && g.values.buffer != ew.output => {
            (ew.shape.iter().product::<usize>() == g.indices.ty.num_elements()).then_some(q)
        }
        _ => None,
    }
}

/// A kernel that only casts its one input, read densely, from one float type to another.
#[derive(Clone, Copy)]
struct Cast {
    input: BufferId,
    from: DType,
    output: BufferId,
    to: DType,
}

fn float_cast(k: &Kernel) -> Option<Cast> {
    let KernelKind::Elementwise(e) = &k.kind else { return None };
    let ([input], [op]) = (e.inputs.as_slice(), e.expr.ops.as_slice()) else { return None };
    let float = |d: DType| matches!(d, DType::F32 | DType::F16 | DType::BF16);
    let casts = matches!(op.kind, super::EwKind::Cast) && op.args == [0] && float(input.dtype) && float(op.dtype) && input.dtype != op.dtype;
    (casts && input.strides == dense_strides(&e.shape)).then_some(Cast { input: input.buffer, from: input.dtype, output: e.output, to: op.dtype })
}

/// Folds cast kernel `c` into a neighbour; returns the neighbour's index (before `c` is removed).
fn fold((kernels, buffers, outputs): (&mut [Kernel], &[Buffer], &[Operand]), c: usize, cast: Cast, options: LowerOptions) -> Option<usize> {
    let intermediate = |b: BufferId| intermediate(buffers, outputs, b);
    let readers = |b: BufferId| readers(kernels, b);
    // The kernel that produces the cast's input, when the cast is that input's only reader.
    let producer = if intermediate(cast.input) && readers(cast.input) == [c] { (0..c).rev().find(|&k| kernels[k].writes() == cast.input) } else { None };
    // The only reader of the cast's result.
    let reader = match readers(cast.output).as_slice() {
        &[q] if options.converting_copies && intermediate(cast.output) => Some(q),
        _ => None,
    };
    let retyped = |o: &Operand| Operand { buffer: cast.output, ty: TensorType::new(cast.to, o.ty.shape.clone()) };
    if let Some(p) = producer {
        match &mut kernels[p].kind {
            KernelKind::Pool(pool) if pool.input.ty.dtype == cast.from && pool.output.ty.dtype == cast.from => {
                pool.output = retyped(&pool.output);
                return Some(p);
            }
            KernelKind::Copy(copy) if options.converting_copies && !copy.converts() && copy.fill.is_none() && copy.source == cast.from => {
                copy.output = retyped(&copy.output);
                return Some(p);
            }
            _ => {}
        }
    }
    // Into the copy that reads the cast's result, when it reads nothing else.
    let q = reader?;
    match &mut kernels[q].kind {
        KernelKind::Copy(copy) if !copy.converts() && copy.source == cast.to && copy.moves.iter().all(|m| m.src == cast.output) => {
            copy.source = cast.from;
            for m in &mut copy.moves {
                m.src = cast.input;
            }
            Some(q)
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::super::{lower_with, KernelKind, LowerOptions};
    use f16c_dialect::{DType, Graph, Location, Op, TensorType, ValueType};

    const COPIES: LowerOptions = LowerOptions { converting_copies: true, multi_read_epilogues: false, plain_epilogues: false, wide_math_epilogues: false, contraction_views: false, concatenated_inputs: false };

    fn ty(d: DType, shape: &[usize]) -> ValueType {
        ValueType::Tensor(TensorType::new(d, shape))
    }

    /// `x: f32[4, 8] → cast f16 → transpose → (cast f32)`, with the f16 values also returned
    /// where `escape` says so.
    fn graph(cast_back: bool, escape: &[&str]) -> Graph {
        let mut g = Graph::new("f");
        let loc = Location::unknown;
        let x = g.add_input(TensorType::new(DType::F32, [4, 8]), loc());
        let h = g.add_node(Op::Cast, ty(DType::F16, &[4, 8]), &[x], loc());
        let t = g.add_node(Op::Transpose { perms: vec![1, 0] }, ty(DType::F16, &[8, 4]), &[h], loc());
        if cast_back {
            let y = g.add_node(Op::Cast, ty(DType::F32, &[8, 4]), &[t], loc());
            g.add_output(y);
        } else {
            g.add_output(t);
        }
        for (name, id) in [("cast", h), ("transpose", t)] {
            if escape.contains(&name) {
                g.add_output(id);
            }
        }
        g
    }

    fn kernels(g: &Graph, options: LowerOptions) -> Vec<String> {
        let p = lower_with(g, options).unwrap();
        p.kernels
            .iter()
            .map(|k| match &k.kind {
                KernelKind::Copy(c) if c.converts() => format!("{} {}->{}", k.name, c.source, c.output.ty.dtype),
                _ => k.name.clone(),
            })
            .collect()
    }

    /// Every element's offset, in row-major order of `shape`.
    fn offsets(shape: &[usize], strides: &[isize]) -> Vec<isize> {
        let mut all = vec![0isize];
        for (&d, &s) in shape.iter().zip(strides) {
            all = all.iter().flat_map(|&o| (0..d as isize).map(move |i| o + i * s)).collect();
        }
        all
    }

    /// Two values concatenated along `axis`, then a 3 × 3 convolution with padding `pad`; the
    /// concatenation also returned where `escape`.
    fn concat_conv(axis: usize, pad: usize, escape: bool) -> Graph {
        let (cat, w_in) = if axis == 3 { ("1x4x5x5", "5") } else { ("1x4x10x3", "3") };
        let (y, second) = if axis == 3 { ("1x4x5x2", "1x4x5x2") } else { ("1x4x5x3", "1x4x5x3") };
        let ow = if axis == 3 { 5 + 2 * pad - 2 } else { 10 + 2 * pad - 2 };
        let out = format!("1x{}x{ow}x2", 4 + 2 * pad - 2);
        let (results, ret) = if escape { (format!("tensor<{out}xf32>, tensor<{cat}xf32>"), format!("%c, %cat : tensor<{out}xf32>, tensor<{cat}xf32>")) } else { (format!("tensor<{out}xf32>"), format!("%c : tensor<{out}xf32>")) };
        let text = format!(
            r#"func.func @f(%x: tensor<1x4x5x3xf32>, %y: tensor<{y}xf32>) -> ({results}) {{
  %a = tosa.abs %x : (tensor<1x4x5x3xf32>) -> tensor<1x4x5x3xf32>
  %b = tosa.abs %y : (tensor<{second}xf32>) -> tensor<{second}xf32>
  %cat = tosa.concat %a, %b {{axis = {axis} : i32}} : (tensor<1x4x5x3xf32>, tensor<{second}xf32>) -> tensor<{cat}xf32>
  %w = "tosa.const"() <{{values = dense<0.5> : tensor<2x3x3x{w_in}xf32>}}> : () -> tensor<2x3x3x{w_in}xf32>
  %bias = "tosa.const"() <{{values = dense<0.0> : tensor<2xf32>}}> : () -> tensor<2xf32>
  %z = "tosa.const"() <{{values = dense<0.0> : tensor<1xf32>}}> : () -> tensor<1xf32>
  %c = tosa.conv2d %cat, %w, %bias, %z, %z {{acc_type = f32, dilation = array<i64: 1, 1>, pad = array<i64: {pad}, {pad}, {pad}, {pad}>, stride = array<i64: 1, 1>}} : (tensor<{cat}xf32>, tensor<2x3x3x{w_in}xf32>, tensor<2xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<{out}xf32>
  return {ret}
}}"#
        );
        let module = f16c_dialect::import::parse_module(&text, "concat.mlir").unwrap_or_else(|d| panic!("{d}\n{text}"));
        module.functions.into_iter().next().unwrap()
    }

    #[test]
    fn a_channel_concatenation_folds_only_into_the_padded_convolution_that_alone_reads_it() {
        let options = LowerOptions { concatenated_inputs: true, ..COPIES };
        let parts = |g: &Graph, options: LowerOptions| -> (usize, Vec<usize>) {
            let p = lower_with(g, options).unwrap();
            let copies = p.kernels.iter().filter(|k| matches!(k.kind, KernelKind::Copy(_))).count();
            let parts = p.kernels.iter().filter_map(|k| if let KernelKind::Contraction(c) = &k.kind { Some(c.a_parts.iter().map(|p| p.ty.shape[3]).collect::<Vec<_>>()) } else { None }).next().unwrap();
            (copies, parts)
        };
        assert_eq!(parts(&concat_conv(3, 1, false), options), (0, vec![3, 2]));
        // Without the option; without padding (the convolution reads its input in place);
        // along the width; the concatenation a result too.
        assert_eq!(parts(&concat_conv(3, 1, false), COPIES), (1, vec![]));
        assert_eq!(parts(&concat_conv(3, 0, false), options), (1, vec![]));
        assert_eq!(parts(&concat_conv(2, 1, false), options), (1, vec![]));
        assert_eq!(parts(&concat_conv(3, 1, true), options), (1, vec![]));
    }

    #[test]
    fn restride_reshapes_a_strided_view_where_no_copy_is_needed() {
        use super::restride;
        let cases: [(&[usize], &[isize], &[usize]); 6] = [
            // An attention's head split: [heads, tokens, d] of [tokens, heads·d] rows.
            (&[12, 128, 64], &[64, 768, 1], &[12, 128, 64]),
            // The merged form a transpose's move takes (heads and d in one dimension).
            (&[768, 128], &[1, 768], &[12, 64, 128]),
            // Unit dimensions on either side.
            (&[1, 6, 1, 1500, 64], &[0, 64, 7, 384, 1], &[6, 1500, 64]),
            (&[6, 1500, 64], &[64, 384, 1], &[1, 6, 1, 1500, 64]),
            // A slice of fused rows, merged.
            (&[64, 768], &[2304, 1], &[1, 64, 768]),
            (&[4, 6], &[6, 1], &[24]),
        ];
        for (shape, strides, target) in cases {
            let s = restride(shape, strides, target).unwrap_or_else(|| panic!("{shape:?} {strides:?} as {target:?}"));
            assert_eq!(offsets(target, &s), offsets(shape, strides), "{shape:?} {strides:?} as {target:?}: {s:?}");
        }
        // A transpose seen whole, a split across a run's boundary, a different count: none.
        assert_eq!(restride(&[4, 6], &[1, 4], &[24]), None);
        assert_eq!(restride(&[4, 6], &[12, 1], &[3, 8]), None);
        assert_eq!(restride(&[4, 6], &[6, 1], &[25]), None);
        // Splitting a transposed dimension is fine: [6, 4] of strides [1, 6] as [2, 3, 4].
        assert_eq!(restride(&[6, 4], &[1, 6], &[2, 3, 4]), Some(vec![3, 1, 6]));
    }

    #[test]
    fn a_cast_folds_into_the_copy_it_feeds_only_when_the_backend_asks() {
        assert_eq!(kernels(&graph(false, &[]), COPIES), ["k0_transpose f32->f16"]);
        assert_eq!(kernels(&graph(false, &[]), LowerOptions::default()), ["k0_cast", "k1_transpose"]);
    }

    #[test]
    fn a_copy_converts_once_and_a_value_used_elsewhere_is_kept() {
        // The first cast folds into the transpose; the second then finds a converting copy and
        // stays (a copy rounds once: f32 → f16 → f32 is not one conversion).
        assert_eq!(kernels(&graph(true, &[]), COPIES), ["k0_transpose f32->f16", "k1_cast"]);
        // The f16 values are a result too: they must exist, so the input cast stays; the
        // transpose's result is read by the last cast only, which folds into it.
        assert_eq!(kernels(&graph(true, &["cast"]), COPIES), ["k0_cast", "k1_transpose f16->f32"]);
        // The transposed f16 values are a result too: nothing folds into their copy's store.
        assert_eq!(kernels(&graph(true, &["transpose"]), COPIES), ["k0_transpose f32->f16", "k1_cast"]);
    }
}
