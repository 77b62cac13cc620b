//! Attention in bands of query rows, for both CPU backends: the scores `Q·Kᵀ`, their softmax
//! and its product with the values, three kernels one after the other, run block by block
//! instead: the scores of a band of rows, then those rows' softmax, then their products, then
//! the next band. Each kernel computes what it computed before (the same work items, the same
//! bits); only the order of the items changes, so that a band's scores and probabilities
//! (`rows × keys` values: 72 KB for 12 rows of a 1,500-frame Whisper encoder) are still in
//! cache when the next kernel reads them, where the whole score matrix (54 MB per layer there)
//! went to memory and back twice. The runtime runs such a group as
//! [`f16c_core::artifact::Interleave`] says; the arena plans the three kernels' buffers as live
//! together. Each backend picks the band's rows from its tiles ([`Chain::band`]).

use crate::lower::{BufferId, Contraction, ContractionKind, KernelKind, Program};
use f16c_core::artifact::{Interleave, Step, Window};

/// Kernels `first`, `first + 1` and `first + 2`: a matmul (the scores), a rows kernel over its
/// result's rows (the softmax), a matmul whose left operand is the rows kernel's result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Chain {
    /// The scores' kernel.
    pub first: usize,
    /// The matmuls' batch.
    pub batch: usize,
    /// The matmuls' rows (the queries) per batch.
    pub m: usize,
    /// The scores and the probabilities where nothing else reads them: (slot, bytes per row).
    pub windows: Vec<(usize, usize)>,
}

/// A [`Chain`] run in `blocks` bands of `rows` rows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Band {
    /// The scores' kernel.
    pub first: usize,
    /// Rows per band.
    pub rows: usize,
    /// Bands (over every batch).
    pub blocks: usize,
    /// A band's worth of each intermediate, per thread ([`f16c_core::artifact::Window`]).
    pub windows: Vec<Window>,
    /// The products' fp16/bf16 left operand (the probabilities) is widened to f32 by a step of
    /// their kernel before its tiles: that step runs band by band too, between the rows
    /// kernel's and the tiles' (widened once per run, it would read every band at once).
    pub widens_products_a: bool,
}

/// The attention chains of `program` whose matmuls `on_tiles` accepts (`true` for the
/// products' one): consecutive kernels, so that everything else the three read was computed
/// before them.
pub fn chains(program: &Program, on_tiles: impl Fn(&Contraction, bool) -> bool) -> Vec<Chain> {
    let matmul = |k: usize, products: bool| match &program.kernels.get(k)?.kind {
        KernelKind::Contraction(c) if matches!(c.kind, ContractionKind::MatMul) && c.m > 1 && on_tiles(c, products) => Some(c),
        _ => None,
    };
    // Read only by kernel `reader`, and not a result.
    let only = |buffer: BufferId, reader: usize| {
        !program.outputs.iter().any(|o| o.buffer == buffer) && program.kernels.iter().enumerate().all(|(j, kj)| j == reader || !kj.reads().contains(&buffer))
    };
    let mut found = Vec::new();
    let mut k = 0;
    while k + 2 < program.kernels.len() {
        let (Some(scores), Some(products), KernelKind::Rows(r)) = (matmul(k, false), matmul(k + 2, true), &program.kernels[k + 1].kind) else {
            k += 1;
            continue;
        };
        let (batch, m) = (scores.batch, scores.m);
        let chained = r.rows == batch * m
            && r.len == scores.n
            && r.inputs.iter().any(|i| i.full && i.per_row && i.buffer == scores.out.buffer)
            && products.a.buffer == r.output
            && products.b.buffer != r.output
            && products.b.buffer != scores.out.buffer
            && (products.batch, products.m, products.k) == (batch, m, scores.n);
        if !chained {
            k += 1;
            continue;
        }
        let mut windows = Vec::new();
        if only(scores.out.buffer, k + 1) {
            windows.push((scores.out.buffer.0, scores.n * scores.out.ty.dtype.byte_size()));
        }
        if only(r.output, k + 2) {
            windows.push((r.output.0, r.len * r.dtypes.last().expect("a stage").byte_size()));
        }
        found.push(Chain { first: k, batch, m, windows });
        k += 3;
    }
    found
}

impl Chain {
    /// The chain in bands of `rows` rows, where they divide every batch's rows into at least
    /// two bands in all.
    pub fn band(&self, rows: usize) -> Option<Band> {
        let blocks = self.batch * self.m / rows.max(1);
        (rows > 0 && self.m.is_multiple_of(rows) && blocks > 1).then(|| Band {
            first: self.first,
            rows,
            blocks,
            windows: self.windows.iter().map(|&(slot, per_row)| Window { slot, bytes: rows * per_row }).collect(),
            widens_products_a: false,
        })
    }
}

/// Whether a matmul's B would stream from memory for every band of its rows: larger than a
/// core's cache ([`B_CACHED_MAX`]) and at least four times the A it multiplies (a decoder's 64
/// tokens against a 9 MB weight: two bands read it twice, to keep in cache an intermediate of
/// 64 rows that fits there anyway). A backend neither bands such a matmul nor runs its tiles a
/// row of tiles at a time (the LLVM backend's column panels, `llvm_cpu::gemm::rows_fastest`).
pub fn b_streams(c: &Contraction) -> bool {
    let a_bytes = c.m * c.k * c.a.ty.dtype.byte_size();
    let b_bytes = c.k * c.n * c.b.ty.dtype.byte_size();
    b_bytes > B_CACHED_MAX && b_bytes >= 4 * a_bytes
}

/// The most bytes of B that [`b_streams`] leaves to the cache.
const B_CACHED_MAX: usize = 1 << 20;

/// The least common multiple.
pub fn lcm(a: usize, b: usize) -> usize {
    let gcd = |mut x: usize, mut y: usize| {
        while y != 0 {
            (x, y) = (y, x % y);
        }
        x
    };
    a / gcd(a, b) * b
}

/// Reorders `steps` for `band`: the steps of its kernels that prepare an operand (packing or
/// widening B, widening the scores' A) first, then the three kernels' main steps (each
/// kernel's last; where the band says so, the products' widening of A just before theirs),
/// the first marked to run them in the band's blocks. Their work splits into equal blocks: a
/// band's tiles of each matmul, its rows and its probabilities' elements are consecutive work
/// items.
pub fn interleave(steps: &mut Vec<Step>, band: &Band) {
    let kernels = band.first..band.first + 3;
    let Some(start) = steps.iter().position(|s| kernels.contains(&s.kernel)) else { return };
    let end = steps.iter().rposition(|s| kernels.contains(&s.kernel)).expect("one exists") + 1;
    let group: Vec<Step> = steps.drain(start..end).collect();
    let mut main: Vec<usize> = kernels.clone().filter_map(|k| group.iter().rposition(|s| s.kernel == k)).collect();
    assert_eq!(main.len(), 3, "every kernel of a band has a step");
    if band.widens_products_a {
        // The products' step before their tiles: the widening of A.
        let widen = main[2] - 1;
        assert_eq!(group[widen].kernel, band.first + 2, "the products' A is widened by a step of their kernel");
        main.insert(2, widen);
    }
    let mut order: Vec<Step> = group.iter().enumerate().filter(|(i, _)| !main.contains(i)).map(|(_, s)| s.clone()).collect();
    for (j, &i) in main.iter().enumerate() {
        let mut s = group[i].clone();
        assert_eq!(s.work % band.blocks, 0, "a band's steps split into whole blocks");
        s.interleave = (j == 0).then(|| Interleave { steps: main.len(), blocks: band.blocks, windows: band.windows.clone() });
        order.push(s);
    }
    steps.splice(start..start, order);
}

/// The plan text of a banded kernel: what the profile and `--emit=kernels` add to its own.
pub fn describe(program: &Program, band: &Band) -> String {
    let names: Vec<&str> = program.kernels[band.first..band.first + 3].iter().map(|k| k.name.as_str()).collect();
    let kept = match band.windows.len() {
        0 => String::new(),
        1 => ", 1 of their intermediates in cache only".to_string(),
        n => format!(", {n} of their intermediates in cache only"),
    };
    let widened = if band.widens_products_a { ", the products' A widened band by band" } else { "" };
    format!("{} bands of {} rows, interleaved with each other: {}{kept}{widened}", band.blocks, band.rows, names.join(" → "))
}
