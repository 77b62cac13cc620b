//! Attention in bands of query rows: the scores `Q·Kᵀ`, their softmax and its product with
//! the values, three kernels one after the other, run block by block instead: the scores of a
//! band of rows, then those rows' softmax, then their products, then the next band. Each kernel
//! computes what it computed before (the same work items, the same bits); only the order of
//! the items changes, so that a band's scores and probabilities (`rows × keys` values: 72 KB
//! for 12 rows of a 1,500-frame Whisper encoder) are still in cache when the next kernel reads
//! them, where the whole score matrix (54 MB per layer there) went to memory and back twice.
//! The runtime runs such a group as [`f16c_core::artifact::Interleave`] says; the arena plans
//! the three kernels' buffers as live together.

use super::gemm;
use crate::backend::llvm::families::ROW_GROUP;
use super::CpuMachine;
use crate::lower::{ContractionKind, KernelKind, Program};
use f16c_core::artifact::{Interleave, Step, Window};

/// Kernels `first`, `first + 1` and `first + 2` (scores, softmax rows, products) run in
/// `blocks` bands of `rows` rows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Band {
    /// The scores' kernel.
    pub first: usize,
    /// Rows per band.
    pub rows: usize,
    /// Bands (over every batch).
    pub blocks: usize,
    /// The scores and the probabilities where nothing else reads them (slot, bytes per band):
    /// a band's worth each, per thread ([`f16c_core::artifact::Window`]).
    pub windows: Vec<Window>,
}

/// The attention chains of `program` that run in bands on `machine`: a matmul on the GEMM
/// tiles, a rows kernel over its result's rows (each row whole: the softmax), and a matmul
/// on the tiles whose left operand is the rows kernel's result, as consecutive kernels (so
/// that everything else the three read was computed before them); every band whole (the rows
/// a multiple of the tiles' rows and of [`ROW_GROUP`]); the products' left operand read as it
/// is (not widened first, which would read every band at once).
pub fn bands(machine: &CpuMachine, program: &Program) -> Vec<Band> {
    let matmul = |k: usize| match &program.kernels.get(k)?.kind {
        KernelKind::Contraction(c) if matches!(c.kind, ContractionKind::MatMul) && gemm::applies(program, c) => Some(c),
        _ => None,
    };
    let mut found = Vec::new();
    let mut k = 0;
    while k + 2 < program.kernels.len() {
        let (Some(scores), Some(products)) = (matmul(k), matmul(k + 2)) else {
            k += 1;
            continue;
        };
        let KernelKind::Rows(r) = &program.kernels[k + 1].kind else {
            k += 1;
            continue;
        };
        let (batch, m) = (scores.batch, scores.m);
        let rows = num_lcm(num_lcm(gemm::shape(machine, scores).mr, gemm::shape(machine, products).mr), ROW_GROUP);
        let chained = r.rows == batch * m
            && r.len == scores.n
            && r.inputs.iter().any(|i| i.full && i.per_row && i.buffer == scores.out.buffer)
            && products.a.buffer == r.output
            && products.b.buffer != r.output
            && products.b.buffer != scores.out.buffer
            && (products.batch, products.m, products.k) == (batch, m, scores.n)
            && !gemm::widens_a(machine, products);
        if chained && m % rows == 0 && batch * m / rows > 1 {
            // Read only by the next kernel of the band, and not a result.
            let only_next = |buffer: crate::lower::BufferId, reader: usize| {
                !program.outputs.iter().any(|o| o.buffer == buffer)
                    && program.kernels.iter().enumerate().all(|(j, kj)| j == reader || !kj.reads().contains(&buffer))
            };
            let mut windows = Vec::new();
            if only_next(scores.out.buffer, k + 1) {
                windows.push(Window { slot: scores.out.buffer.0, bytes: rows * scores.n * scores.out.ty.dtype.byte_size() });
            }
            if only_next(r.output, k + 2) {
                windows.push(Window { slot: r.output.0, bytes: rows * r.len * r.dtypes.last().expect("a stage").byte_size() });
            }
            found.push(Band { first: k, rows, blocks: batch * m / rows, windows });
            k += 3;
        } else {
            k += 1;
        }
    }
    found
}

fn num_lcm(a: usize, b: usize) -> usize {
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
/// kernel's last), the first marked to run the three in the band's blocks. Their work splits
/// into equal blocks: a band's tiles of each matmul and its groups of rows are consecutive work
/// items.
pub fn interleave(steps: &mut Vec<Step>, band: &Band) {
    let kernels = band.first..band.first + 3;
    let Some(start) = steps.iter().position(|s| kernels.contains(&s.kernel)) else { return };
    let end = steps.iter().rposition(|s| kernels.contains(&s.kernel)).expect("one exists") + 1;
    let group: Vec<Step> = steps.drain(start..end).collect();
    let main: Vec<usize> = kernels.clone().filter_map(|k| group.iter().rposition(|s| s.kernel == k)).collect();
    assert_eq!(main.len(), 3, "every kernel of a band has a step");
    let mut order: Vec<Step> = group.iter().enumerate().filter(|(i, _)| !main.contains(i)).map(|(_, s)| s.clone()).collect();
    for (j, &i) in main.iter().enumerate() {
        let mut s = group[i].clone();
        assert_eq!(s.work % band.blocks, 0, "a band's steps split into whole blocks");
        s.interleave = (j == 0).then(|| Interleave { steps: 3, blocks: band.blocks, windows: band.windows.clone() });
        order.push(s);
    }
    steps.splice(start..start, order);
}
