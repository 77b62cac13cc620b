//! The one packer of a constant GEMM `B` operand, for both CPU backends (Cranelift and the
//! LLVM CPU backends differ only in their panel width and reduction chunks).
//!
//! The packed form is `[batch][chunk][panel][k1 - k0][nr]`: for each reduction chunk
//! `k0..k1`, the panels of `nr` columns one after the other, each panel its chunk's rows of
//! `nr` values (zero past the last column). With one chunk `0..k` that is `[batch][panel][k][nr]`.
//! With `pairs`, each chunk's rows are interleaved in pairs for the bf16 pair loops
//! (`VDPBF16PS`, [`f16c_core::abi::tiles`]): rows `2q` and `2q + 1` side by side, `2q`'s value
//! in the upper half.
//!
//! Packing runs when the artifact's constants section is put together, once per weight: the
//! loops copy whole runs that are contiguous in the source (a row-major B's rows of a panel, a
//! column-major B's columns) instead of gathering one element per source row.

use crate::lower::MatrixLayout;

/// What a packing needs to know of B and the GEMM that reads it.
#[derive(Clone, Debug)]
pub struct PackB<'c> {
    /// Bytes per element (2, 4 or 8).
    pub elem_bytes: usize,
    /// How B lies in the source: row-major `[batch][k][n]`, or column-major `[n][k]` (a
    /// convolution's OHWI weight, the same for every batch).
    pub layout: MatrixLayout,
    /// Batches packed (the source has that many for a row-major B).
    pub batches: usize,
    /// Reduction length.
    pub k: usize,
    /// Columns.
    pub n: usize,
    /// Panel width.
    pub nr: usize,
    /// Reduction chunks `k0..k1`, in order, covering `0..k`.
    pub chunks: &'c [(usize, usize)],
    /// Interleave rows in pairs (bf16 pair loops).
    pub pairs: bool,
}

impl PackB<'_> {
    /// Bytes of the packed form.
    pub fn bytes(&self) -> usize {
        self.batches * self.n.div_ceil(self.nr) * self.k * self.nr * self.elem_bytes
    }

    /// `src` packed into `dst`: [`PackB::bytes`] zero bytes (the padding is not written).
    pub fn pack_into(&self, src: &[u8], dst: &mut [u8]) {
        assert_eq!(dst.len(), self.bytes(), "a packed B's destination of its size");
        match self.elem_bytes {
            2 => self.pack_elements::<2>(src, dst),
            4 => self.pack_elements::<4>(src, dst),
            8 => self.pack_elements::<8>(src, dst),
            e => unreachable!("a {e}-byte GEMM operand"),
        }
    }

    /// The packed element index of B's row `kk` (of chunk `k0..`), column `j` of a panel
    /// starting at element `at`.
    fn index(&self, at: usize, k0: usize, kk: usize, j: usize) -> usize {
        let r = kk - k0;
        if self.pairs { at + (r / 2 * self.nr + j) * 2 + 1 - r % 2 } else { at + r * self.nr + j }
    }

    fn pack_elements<const E: usize>(&self, src: &[u8], dst: &mut [u8]) {
        let (k, n, nr) = (self.k, self.n, self.nr);
        let panels = n.div_ceil(nr);
        let (dst, _) = dst.as_chunks_mut::<E>();
        let (src, _) = src.as_chunks::<E>();
        for bi in 0..self.batches {
            for &(k0, k1) in self.chunks {
                // Where chunk k0..k1 of panel p of batch bi starts.
                let at = |p: usize| k0 * panels * nr + bi * k * panels * nr + p * (k1 - k0) * nr;
                for p in 0..panels {
                    let (c0, width) = (p * nr, nr.min(n - p * nr));
                    match self.layout {
                        // A row of the panel is `width` contiguous source elements.
                        MatrixLayout::RowMajor => {
                            for kk in k0..k1 {
                                let row = &src[(bi * k + kk) * n + c0..][..width];
                                if self.pairs {
                                    for (j, v) in row.iter().enumerate() {
                                        dst[self.index(at(p), k0, kk, j)] = *v;
                                    }
                                } else {
                                    let to = self.index(at(p), k0, kk, 0);
                                    dst[to..to + width].copy_from_slice(row);
                                }
                            }
                        }
                        // A column of the panel is `k1 - k0` contiguous source elements.
                        MatrixLayout::ColMajor => {
                            for j in 0..width {
                                let column = &src[(c0 + j) * k + k0..][..k1 - k0];
                                for (kk, v) in (k0..k1).zip(column) {
                                    dst[self.index(at(p), k0, kk, j)] = *v;
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The packed form element by element, straight from its definition.
    fn by_definition(p: &PackB, src: &[u8]) -> Vec<u8> {
        let (e, panels) = (p.elem_bytes, p.n.div_ceil(p.nr));
        let mut out = vec![0u8; p.bytes()];
        for bi in 0..p.batches {
            for &(k0, k1) in p.chunks {
                for pn in 0..panels {
                    for kk in k0..k1 {
                        for j in 0..p.nr {
                            let col = pn * p.nr + j;
                            if col >= p.n {
                                continue;
                            }
                            let from = match p.layout {
                                MatrixLayout::RowMajor => (bi * p.k + kk) * p.n + col,
                                MatrixLayout::ColMajor => col * p.k + kk,
                            };
                            let at = k0 * panels * p.nr + bi * p.k * panels * p.nr + pn * (k1 - k0) * p.nr;
                            let r = kk - k0;
                            let to = if p.pairs { at + (r / 2 * p.nr + j) * 2 + 1 - r % 2 } else { at + r * p.nr + j };
                            out[to * e..(to + 1) * e].copy_from_slice(&src[from * e..(from + 1) * e]);
                        }
                    }
                }
            }
        }
        out
    }

    #[test]
    fn packs_as_defined() {
        let chunks_of = |k: usize, c: usize| (0..k).step_by(c).map(|k0| (k0, (k0 + c).min(k))).collect::<Vec<_>>();
        for layout in [MatrixLayout::RowMajor, MatrixLayout::ColMajor] {
            for (elem_bytes, batches, k, n, nr, chunk, pairs) in
                [(4, 1, 7, 13, 8, 7, false), (2, 2, 12, 20, 16, 4, true), (2, 1, 8, 5, 8, 8, true), (8, 3, 9, 17, 4, 5, false), (4, 2, 16, 33, 32, 6, false)]
            {
                let chunks = chunks_of(k, chunk);
                let p = PackB { elem_bytes, layout, batches, k, n, nr, chunks: &chunks, pairs };
                let len = match layout {
                    MatrixLayout::RowMajor => batches * k * n,
                    MatrixLayout::ColMajor => k * n,
                } * elem_bytes;
                let src: Vec<u8> = (0..len).map(|i| (i * 7 + i / 251) as u8).collect();
                let mut packed = vec![0u8; p.bytes()];
                p.pack_into(&src, &mut packed);
                assert_eq!(packed, by_definition(&p, &src), "{layout:?} {elem_bytes}-byte {batches}×{k}×{n} nr {nr} chunk {chunk} pairs {pairs}");
            }
        }
    }
}
