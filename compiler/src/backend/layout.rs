//! The buffer table every CPU backend's code addresses, and its translation into the
//! artifact's slot table.
//!
//! Slots, in order (the kernel ABI's `bufs`, [`f16c_core::abi`]):
//! 1. the program's buffers (`0..program.buffers.len()`): arguments, constants, intermediates;
//! 2. one slot per kernel for a constant the backend re-packed at compile time (a GEMM weight
//!    in panel order), which then replaces the original ([`Layout::replace_constant_packed`]);
//! 3. the kernels' temporaries in the arena, each live during its kernel only (a weight
//!    widened once per run, a packed run-time operand), in the order they were asked for.
//!
//! Only slots the code reads or writes are `used`: a replaced constant costs nothing. After
//! the backend has compiled every kernel, [`Layout::finish`] plans the arena with the
//! temporaries ([`crate::lower::plan::plan_with_temps`]) and [`Layout::manifest`] flattens
//! everything into the artifact's [`Slot`]s and constants section, which is all the runtime's
//! executor needs.

use crate::lower::{plan, Buffer, BufferId, BufferKind, BufferPlan, Program};
use f16c_core::artifact::{KernelInfo, Manifest, Output, Slot, Step, TensorDesc, CONSTANT_ALIGN};
use f16c_dialect::DType;

/// The buffer table of one compiled program.
#[derive(Clone, Debug)]
pub struct Layout {
    /// The program's buffers (constants without their bytes, which stay the program's), then
    /// one packed-constant slot per kernel.
    pub buffers: Vec<Buffer>,
    /// Which buffers and packed constants the code reads or writes.
    pub used: Vec<bool>,
    /// The temporaries: (kernel, bytes), slot `buffers.len() + i` for the `i`th.
    pub temps: Vec<(usize, usize)>,
    /// Bytes of private scratch each thread needs (the most any kernel asks for).
    pub scratch_bytes: usize,
    /// Spans of kernels (first, last) whose steps run interleaved: planned as live together.
    pub together: Vec<(usize, usize)>,
    /// Kernels whose output may not take an input's place ([`plan::plan_with_temps`]); by
    /// kernel index, none where shorter. Every contraction at first: a backend whose code lets
    /// a contraction's output take an epilogue input's place says so.
    pub apart: Vec<bool>,
    /// The arena plan including temporaries (after [`Layout::finish`]).
    pub plan: BufferPlan,
    program_buffers: usize,
    /// Re-packed constants made when the constants section is put together
    /// ([`Layout::replace_constant_packed`]): slot → (the program constant, how).
    deferred: std::collections::HashMap<usize, (usize, Pack)>,
    /// Constants stored as fp16/bf16 that the runtime widens to f32 when it loads the
    /// artifact ([`Layout::widen_at_load`]).
    widened: std::collections::HashMap<usize, f16c_core::artifact::Widen>,
}

/// How a re-packed constant is made from the program constant it replaces: run when the
/// artifact's constants section is put together ([`Constants`]), so that a weight and its
/// packed copy are alive together one weight at a time, not for the whole model. It writes
/// the packed bytes into their place (zeroed, of the slot's size: the section's, or the JIT's
/// buffer), without a copy between.
#[derive(Clone)]
pub struct Pack(pub std::sync::Arc<PackFn>);

/// A packing: the source's bytes into the destination.
pub type PackFn = dyn Fn(&[u8], &mut [u8]) + Send + Sync;

impl std::fmt::Debug for Pack {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Pack(..)")
    }
}

impl Layout {
    /// The table of `program`, before any kernel is compiled: every buffer a kernel reads or
    /// writes, and every result, is used.
    pub fn new(program: &Program) -> Layout {
        let kernels = program.kernels.len();
        // The program's constants stay in the program ([`Layout::manifest`] reads them there):
        // a copy of every weight here was the size of the model again.
        let mut buffers: Vec<Buffer> = program
            .buffers
            .iter()
            .map(|b| match &b.kind {
                BufferKind::Constant(_) => Buffer { bytes: b.bytes, kind: BufferKind::Constant(crate::lower::ConstBytes::empty()) },
                _ => b.clone(),
            })
            .collect();
        buffers.extend((0..kernels).map(|_| Buffer { kind: BufferKind::Constant(crate::lower::ConstBytes::empty()), bytes: 0 }));
        let mut used = vec![false; buffers.len()];
        for k in &program.kernels {
            used[k.writes().0] = true;
            for r in k.reads() {
                used[r.0] = true;
            }
        }
        for o in &program.outputs {
            used[o.buffer.0] = true;
        }
        Layout {
            buffers,
            used,
            temps: Vec::new(),
            scratch_bytes: 0,
            together: Vec::new(),
            // A contraction's output takes a residual's place only where its backend says
            // that its code reads each epilogue element before writing the output's.
            apart: program.kernels.iter().map(|k| matches!(k.kind, crate::lower::KernelKind::Contraction(_))).collect(),
            plan: BufferPlan::default(),
            program_buffers: program.buffers.len(),
            deferred: Default::default(),
            widened: Default::default(),
        }
    }

    /// Slots in the buffer table: buffers, packed constants, then the temporaries.
    pub fn table_len(&self) -> usize {
        self.buffers.len() + self.temps.len()
    }

    /// The slot of kernel `k`'s re-packed constant.
    pub fn packed_slot(&self, k: usize) -> usize {
        self.program_buffers + k
    }

    /// Kernel `k` reads `bytes` bytes that `pack` makes from constant `original`'s (a
    /// compile-time re-packing, made when the constants section is put together) instead of
    /// `original`; returns the slot holding them.
    pub fn replace_constant_packed(&mut self, k: usize, original: BufferId, bytes: usize, pack: Pack) -> usize {
        let slot = self.packed_slot(k);
        self.buffers[slot] = Buffer { bytes, kind: BufferKind::Constant(crate::lower::ConstBytes::empty()) };
        self.deferred.insert(slot, (original.0, pack));
        self.used[slot] = true;
        self.used[original.0] = false;
        slot
    }

    /// Constant `slot` (fp16 or bf16 as stored) is widened to f32 by the runtime when it loads
    /// the artifact: the code reads f32 through the slot, the artifact keeps the 16-bit bytes.
    pub fn widen_at_load(&mut self, slot: usize, stored: DType) {
        let widen = match stored {
            DType::F16 => f16c_core::artifact::Widen::F16,
            DType::BF16 => f16c_core::artifact::Widen::Bf16,
            other => unreachable!("only fp16/bf16 constants are widened at load, not {other}"),
        };
        self.widened.insert(slot, widen);
    }

    /// Kernel `k` needs a temporary of `bytes` in the arena (one more for each call); returns
    /// its slot.
    pub fn temporary(&mut self, k: usize, bytes: usize) -> usize {
        self.temps.push((k, bytes));
        self.buffers.len() + self.temps.len() - 1
    }

    /// Some kernel needs `bytes` of per-thread scratch.
    pub fn scratch(&mut self, bytes: usize) {
        self.scratch_bytes = self.scratch_bytes.max(bytes);
    }

    /// Plans the arena with the temporaries, once every kernel is compiled.
    pub fn finish(&mut self, program: &Program) {
        let apart = &self.apart;
        self.plan = plan::plan_with_temps(&self.buffers, &program.kernels, &program.outputs, &self.temps, &self.together, &|k| !apart.get(k).copied().unwrap_or(false));
    }

    /// Bytes of constant data the code uses (weights as stored, after packing).
    pub fn weight_bytes(&self) -> usize {
        self.buffers
            .iter()
            .zip(&self.used)
            .filter(|(b, &u)| u && matches!(b.kind, BufferKind::Constant(_)))
            .map(|(b, _)| b.bytes)
            .sum()
    }

    /// The artifact's description of the finished layout, with the constants section: every
    /// used constant once, at a [`CONSTANT_ALIGN`]ed offset. The re-packed constants move into
    /// the section (their slots here are left empty): the packed weights are not held twice
    /// while the section fills.
    pub fn manifest(&mut self, program: &Program, code: CodeInfo, symbols: Vec<String>, steps: Vec<Step>) -> (Manifest, Constants) {
        // (`total`: the section's length, to the end of its last constant, unpadded.)
        let mut constants = Constants { total: 0, pieces: Vec::new() };
        let mut end = 0;
        let mut slots = Vec::with_capacity(self.table_len());
        for slot in 0..self.buffers.len() {
            let b = &self.buffers[slot];
            slots.push(match &b.kind {
                _ if !self.used[slot] => Slot::Unused,
                BufferKind::Input(k) => Slot::Input(*k),
                BufferKind::Constant(_) => {
                    // A program constant's bytes are the program's; a used slot past them is
                    // a packed one, made when the section is put together.
                    let (len, piece) = match self.deferred.remove(&slot) {
                        Some((original, pack)) => (b.bytes, Piece::Packed { original, pack, len: b.bytes }),
                        None => match &program.buffers[slot].kind {
                            BufferKind::Constant(bytes) => (bytes.len(), Piece::Program(slot)),
                            _ => unreachable!("the layout copies the program's buffer kinds"),
                        },
                    };
                    let offset = end;
                    end = (offset + len).next_multiple_of(CONSTANT_ALIGN);
                    constants.total = offset + len;
                    constants.pieces.push((offset, piece));
                    Slot::Constant { offset, bytes: len, widen: self.widened.get(&slot).copied() }
                }
                BufferKind::Intermediate => match self.plan.offset(BufferId(slot)) {
                    Some(offset) => Slot::Arena { offset, bytes: b.bytes },
                    None => Slot::Unused,
                },
            });
        }
        for (i, &(_, bytes)) in self.temps.iter().enumerate() {
            slots.push(match self.plan.temp_offset(self.buffers.len(), i) {
                Some(offset) => Slot::Arena { offset, bytes },
                None => Slot::Unused,
            });
        }
        let manifest = Manifest {
            target: code.target.to_string(),
            backend: code.backend.to_string(),
            code_format: code.format,
            requires: code.requires,
            function: program.name.clone(),
            micro_kernels: 0,
            inputs: program.inputs.iter().map(|o| TensorDesc::of(&o.ty)).collect(),
            outputs: program.outputs.iter().map(|o| Output { slot: o.buffer.0, ty: TensorDesc::of(&o.ty) }).collect(),
            slots,
            arena_bytes: self.plan.arena_bytes,
            scratch_bytes: self.scratch_bytes,
            kernels: program
                .kernels
                .iter()
                .map(|k| KernelInfo { name: k.name.clone(), op: k.op_name.to_string(), location: k.location.to_string(), summary: k.summary(), plan: String::new() })
                .collect(),
            symbols,
            steps,
        };
        (manifest, constants)
    }
}

/// An artifact's constants section before its bytes are put together: each used constant at
/// its [`CONSTANT_ALIGN`]ed offset, a program's by its slot (its bytes are the program's) or a
/// re-packed one's bytes (moved here from the layout). Put together by copying the program's
/// ([`Constants::into_bytes`]) or by moving them ([`Constants::into_bytes_taking`], each freed
/// once copied: the weights are not held twice while the section fills).
pub struct Constants {
    total: usize,
    pieces: Vec<(usize, Piece)>,
}

enum Piece {
    Program(usize),
    Owned(Vec<u8>),
    Packed { original: usize, pack: Pack, len: usize },
}

/// How [`Constants`] reads the program's constants: borrowed, or moved out at their last use.
enum Access<'p> {
    Borrow(&'p Program),
    Take(&'p mut Program),
}

impl Access<'_> {
    /// Program constant `slot`'s bytes (shared), moved out of the program where `last` and
    /// taking: freed once the caller is done with them, unless the graph still shares them.
    fn bytes(&mut self, slot: usize, last: bool) -> crate::lower::ConstBytes {
        let kind = match self {
            Access::Take(p) if last => std::mem::replace(&mut p.buffers[slot].kind, BufferKind::Constant(crate::lower::ConstBytes::empty())),
            Access::Take(p) => p.buffers[slot].kind.clone(),
            Access::Borrow(p) => p.buffers[slot].kind.clone(),
        };
        match kind {
            BufferKind::Constant(b) => b,
            _ => unreachable!("a constant slot"),
        }
    }
}

impl Constants {
    /// A section that is `bytes`, already put together.
    pub fn owned(bytes: Vec<u8>) -> Constants {
        Constants { total: bytes.len(), pieces: vec![(0, Piece::Owned(bytes))] }
    }

    /// The section's bytes, the program's constants copied.
    pub fn into_bytes(self, program: &Program) -> Vec<u8> {
        self.put_together(Access::Borrow(program))
    }

    /// The section's bytes, the program's constants moved out of it (left empty).
    pub fn into_bytes_taking(self, program: &mut Program) -> Vec<u8> {
        self.put_together(Access::Take(program))
    }

    /// `f(offset, len, fill)` for each constant in section order, the program's moved out of
    /// it (left empty): for a caller that keeps each constant in a buffer of its own (the JIT's
    /// executor), without the section between. `fill` writes the constant's `len` bytes into
    /// the zeroed slice it is given.
    pub fn for_each_taking(self, program: &mut Program, f: impl FnMut(usize, usize, &mut dyn FnMut(&mut [u8]))) {
        self.each(Access::Take(program), f);
    }

    fn put_together(self, access: Access<'_>) -> Vec<u8> {
        crate::timing::phase("constants section (packing weights)", || self.put_together_now(access))
    }

    fn put_together_now(self, access: Access<'_>) -> Vec<u8> {
        if let [(0, Piece::Owned(_))] = self.pieces.as_slice() {
            let Some((_, Piece::Owned(bytes))) = self.pieces.into_iter().next() else { unreachable!() };
            return bytes;
        }
        // Zeroed pages mapped lazily: each is touched once, by the constant written to it.
        let mut out = vec![0u8; self.total];
        self.each(access, |offset, len, fill| fill(&mut out[offset..offset + len]));
        out
    }

    /// Each piece's offset, length and filler, in order: a packed one made from its original
    /// then, a program constant borrowed, or moved out at the last piece that reads it.
    fn each(self, mut access: Access<'_>, mut f: impl FnMut(usize, usize, &mut dyn FnMut(&mut [u8]))) {
        let mut last = std::collections::HashMap::new();
        for (i, (_, piece)) in self.pieces.iter().enumerate() {
            match piece {
                Piece::Program(s) | Piece::Packed { original: s, .. } => {
                    last.insert(*s, i);
                }
                Piece::Owned(_) => {}
            }
        }
        for (i, (offset, piece)) in self.pieces.into_iter().enumerate() {
            match piece {
                Piece::Owned(bytes) => f(offset, bytes.len(), &mut |d| d.copy_from_slice(&bytes)),
                Piece::Program(slot) => {
                    let bytes = access.bytes(slot, last[&slot] == i);
                    f(offset, bytes.len(), &mut |d| d.copy_from_slice(&bytes));
                }
                Piece::Packed { original, pack, len } => {
                    let bytes = access.bytes(original, last[&original] == i);
                    f(offset, len, &mut |d| (pack.0)(&bytes, d));
                }
            }
        }
    }
}

/// What a backend says about its code, for the manifest.
#[derive(Clone, Debug)]
pub struct CodeInfo {
    /// The target name.
    pub target: &'static str,
    /// The backend name.
    pub backend: &'static str,
    /// How the code is encoded.
    pub format: f16c_core::artifact::CodeFormat,
    /// CPU features the code uses.
    pub requires: Vec<String>,
}
