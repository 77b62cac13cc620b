//! The artifact format: one file (`f16c compile -o net.f16c`) that a thin runtime loads and runs
//! without the compiler.
//!
//! ```text
//! offset  size  field
//!      0     8  magic "F16CART\n"
//!      8     4  format version, u32 little-endian (FORMAT_VERSION)
//!     12     4  reserved, 0
//!     16     8  manifest length in bytes (u64 LE)
//!     24     8  code length
//!     32     8  constants length
//!     40     8  checksum of everything after the header ([`Checksum`]: FNV-1a steps over
//!                64-bit words in four lanes)
//!     48     …  manifest (JSON, UTF-8), then code, then constants
//! ```
//! The manifest ([`Manifest`]) says what the code is for (target, backend, code format, CPU
//! features it needs), the entry signature (argument and result types), the buffer layout
//! resolved to a flat slot table, the kernels (name, op, source location, for errors) and the
//! launch list (steps). The code is what the backend produced (an ELF shared object for CPU
//! targets). Constants are the converted weights, each at a 64-byte aligned offset: an fp16
//! weight takes two bytes an element on disk as in memory.
//!
//! Reading checks the magic, version, lengths, checksum and the manifest's internal consistency
//! (every slot, step and output refers to something that exists), so a truncated, corrupted or
//! wrong-version file is a clear [`ArtifactError`], never a crash.

use crate::types::{DType, TensorType};
use serde::{Deserialize, Serialize};

/// The magic bytes an artifact starts with.
pub const MAGIC: &[u8; 8] = b"F16CART\n";
/// The format version this build writes and reads. 2: the CPU libcall table gained
/// `WidenF16`, which code compiled since calls (a version-1 runtime's table lacks it); 3: it
/// gained `NarrowF16` in the same way; 4: and `NarrowF16Canonical` and `RoundF16`; 5:
/// `DepthwiseRow`; 6: `ExpArrayF32`, and the kernels' summaries and plans in the manifest; 7:
/// `GemmPairsBf16`; 8: the word-wise [`Checksum`] instead of FNV-1a over bytes; 9:
/// `SigmoidArrayF32`; 10: `ErfArrayF32` and `TanhArrayF32`; 11: the micro-kernels chosen at
/// compile time (`GemmTilesAvx512` and `DepthwiseRowAvx512`; `GemmTiles` and `DepthwiseRow` are
/// the AVX2 loops only, and code calls one without a generated fallback); 12: a constant may be
/// stored as fp16/bf16 and widened to f32 when the artifact is loaded ([`Slot::Constant`]'s
/// `widen`), which a version-11 runtime would hand to the code unwidened; and the libcalls
/// `SoftmaxRowsF32` and `SiluArrayF32`; 13: the libcall `SiluArrayBf16`, which a version-12
/// runtime's table lacks; 14: the libcall `SoftmaxRowsBf16`; 15: the libcall `FinishTilesF32`.
pub const FORMAT_VERSION: u32 = 15;
/// Bytes of the fixed header.
pub const HEADER_BYTES: usize = 48;
/// Alignment of every constant inside the constants section (and of the memory the runtime
/// loads it into).
pub const CONSTANT_ALIGN: usize = 64;

/// How the code section is encoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CodeFormat {
    /// An ELF shared object exporting one symbol per kernel function (CPU targets).
    ElfSharedObject,
    /// PTX text (NVIDIA targets).
    Ptx,
}

/// A tensor type as the manifest spells it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TensorDesc {
    /// MLIR element type name (`f32`, `f16`, ...).
    pub dtype: String,
    /// Static shape.
    pub shape: Vec<usize>,
}

impl TensorDesc {
    /// The manifest form of a tensor type.
    pub fn of(ty: &TensorType) -> TensorDesc {
        TensorDesc { dtype: ty.dtype.mlir_name().to_string(), shape: ty.shape.clone() }
    }

    /// The tensor type, if the element type is known.
    pub fn ty(&self) -> Option<TensorType> {
        Some(TensorType::new(DType::from_mlir(&self.dtype)?, self.shape.clone()))
    }
}

/// Where one entry of the buffer table points.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Slot {
    /// Nothing: the code never reads this slot.
    Unused,
    /// Function argument `k` (the caller's memory, read only).
    Input(usize),
    /// `bytes` bytes at `offset` in the constants section.
    Constant {
        /// Offset in the constants section (a multiple of [`CONSTANT_ALIGN`]).
        offset: usize,
        /// Length (as stored).
        bytes: usize,
        /// Stored as these 16-bit floats and widened to f32 by the runtime when it loads the
        /// artifact (the code reads `2 · bytes` bytes of f32): weights a CPU without fp16/bf16
        /// arithmetic multiplies in f32, half the bytes on disk and none of the per-run
        /// conversion. `None`: used as stored.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        widen: Option<Widen>,
    },
    /// `bytes` bytes at `offset` in the arena (intermediates and kernel temporaries).
    Arena {
        /// Offset in the arena.
        offset: usize,
        /// Length.
        bytes: usize,
    },
}

/// The 16-bit float type a constant is stored in when the runtime widens it to f32 at load
/// ([`Slot::Constant`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Widen {
    /// IEEE binary16.
    F16,
    /// bfloat16.
    Bf16,
}

impl Widen {
    /// Widens `src` (stored values, little-endian) into `dst` (`2 · src.len()` bytes of f32):
    /// exact, every value (NaN payloads, subnormals, infinities) as the code's own widening
    /// gives it.
    pub fn widen(self, src: &[u8], dst: &mut [u8]) {
        use half::slice::{HalfBitsSliceExt, HalfFloatSliceExt};
        assert_eq!(dst.len(), 2 * src.len(), "a widened constant is twice its stored bytes");
        const CHUNK: usize = 4096;
        let (mut bits, mut wide) = ([0u16; CHUNK], [0f32; CHUNK]);
        for (s, d) in src.chunks(2 * CHUNK).zip(dst.chunks_mut(4 * CHUNK)) {
            let n = s.len() / 2;
            for (b, pair) in bits.iter_mut().zip(s.chunks_exact(2)) {
                *b = u16::from_le_bytes([pair[0], pair[1]]);
            }
            match self {
                // F16C's conversion, as the code's (a NaN becomes quiet with its payload).
                Widen::F16 => bits[..n].reinterpret_cast::<half::f16>().convert_to_f32_slice(&mut wide[..n]),
                // The bits moved up, as the code widens bf16.
                Widen::Bf16 => {
                    for (w, &b) in wide.iter_mut().zip(&bits[..n]) {
                        *w = f32::from_bits(u32::from(b) << 16);
                    }
                }
            }
            for (out, w) in d.chunks_exact_mut(4).zip(&wide[..n]) {
                out.copy_from_slice(&w.to_le_bytes());
            }
        }
    }
}

impl Slot {
    /// Bytes the code reads through this slot (a widened constant's f32 bytes); 0 for an input
    /// or an unused slot.
    pub fn run_bytes(&self) -> usize {
        match *self {
            Slot::Constant { bytes, widen: Some(_), .. } => 2 * bytes,
            Slot::Constant { bytes, .. } | Slot::Arena { bytes, .. } => bytes,
            Slot::Input(_) | Slot::Unused => 0,
        }
    }
}

/// A function result: the slot holding it and its type.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Output {
    /// The slot.
    pub slot: usize,
    /// Its type.
    pub ty: TensorDesc,
}

/// A kernel of the lowered program, for run-time errors.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct KernelInfo {
    /// Its name (`k3_matmul`).
    pub name: String,
    /// The MLIR name of its main op.
    pub op: String,
    /// The main op's source location, as `file:line:col`.
    pub location: String,
    /// What it computes, in one line (`contraction matmul batch=1 m=128 n=768 k=3072 acc=f32
    /// result=f32 (3 ops)`, `elementwise shape=[393216] (5 ops)`): the profile's column.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub summary: String,
    /// How the backend runs it, where the backend records a plan (GPU targets: `wmma tile
    /// 128x128 …`, `simt …`); empty elsewhere.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub plan: String,
}

/// One call of a kernel function over `work` items.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Step {
    /// Index into [`Manifest::symbols`].
    pub function: usize,
    /// Number of work items (the executor splits them across threads).
    pub work: usize,
    /// Rough operation count of the whole step: threads are used only where they pay.
    pub cost: f64,
    /// The kernel it belongs to (index into [`Manifest::kernels`]).
    pub kernel: usize,
    /// How a GPU launches it (GPU artifacts only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub launch: Option<Launch>,
    /// This step and the ones after it run block by block (CPU artifacts only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interleave: Option<Interleave>,
}

/// Steps that run block by block: block `b` of each step in order, then block `b + 1`. Each
/// step's work items split into `blocks` equal blocks, and block `b` of a step reads only what
/// blocks `..= b` of the steps before it in the group wrote (an attention's scores for a band
/// of query rows, then their softmax, then their products with the values: the band stays in
/// cache between them). The results are those of running the steps one after the other; a
/// runtime that ignores the field runs them so.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Interleave {
    /// Steps in the group, this one first.
    pub steps: usize,
    /// Blocks each step's work splits into.
    pub blocks: usize,
    /// Slots the group alone writes and reads, block `b` only bytes `b · bytes ..< (b + 1) ·
    /// bytes` of each: a runtime may give each thread one block's worth and point the slot at
    /// it, moved back by `b · bytes` for block `b`, so that they never leave the cache.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub windows: Vec<Window>,
}

/// A slot of an [`Interleave`]d group that each block uses a window of.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Window {
    /// The slot (an arena one).
    pub slot: usize,
    /// Bytes per block.
    pub bytes: usize,
}

/// The launch configuration of a GPU step: a grid of blocks of threads, with static shared
/// memory. Kernels take `(bufs, status)`: the device buffer table and one `i32` status word per
/// kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Launch {
    /// Blocks per grid dimension.
    pub grid: [u32; 3],
    /// Threads per block dimension.
    pub block: [u32; 3],
    /// Bytes of shared memory per block (static; part of the code).
    pub shared_bytes: u32,
}

/// Whether a count is zero (a field left out of the manifest's JSON).
fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// Everything the runtime needs to know besides the code and the constants.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// Target name (`x86_64`, `sm_70`, `aarch64`).
    pub target: String,
    /// The backend that produced the code (`cranelift-x86_64`).
    pub backend: String,
    /// The code section's encoding.
    pub code_format: CodeFormat,
    /// CPU features the code uses (`fma`, `avx`, `sse4.1`, ...): the runtime refuses to run on a
    /// machine without them.
    pub requires: Vec<String>,
    /// The compiled function's name.
    pub function: String,
    /// The version of the runtime micro-kernels' contract the code calls them by
    /// ([`crate::abi::MICRO_KERNEL_VERSION`]); 0: it calls none.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub micro_kernels: u32,
    /// Argument types, in order.
    pub inputs: Vec<TensorDesc>,
    /// Results, in order.
    pub outputs: Vec<Output>,
    /// The buffer table.
    pub slots: Vec<Slot>,
    /// Bytes of the arena (intermediates and temporaries).
    pub arena_bytes: usize,
    /// Bytes of private scratch each thread needs.
    pub scratch_bytes: usize,
    /// The kernels, for errors.
    pub kernels: Vec<KernelInfo>,
    /// Exported code symbols; steps call them by index.
    pub symbols: Vec<String>,
    /// Calls in execution order.
    pub steps: Vec<Step>,
}

/// A loadable artifact: manifest, code and constants.
#[derive(Clone, Debug, PartialEq)]
pub struct Artifact {
    /// What the code is and how to run it.
    pub manifest: Manifest,
    /// The code (see [`CodeFormat`]).
    pub code: Vec<u8>,
    /// The constants section.
    pub constants: Vec<u8>,
}

/// Why an artifact could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ArtifactError {
    /// The file does not start with [`MAGIC`].
    #[error("not an f16c artifact (bad magic bytes; expected a file written by `f16c compile -o`)")]
    BadMagic,
    /// The file is shorter than its header says.
    #[error("truncated artifact: {0}")]
    Truncated(String),
    /// Written by another version of the format.
    #[error("artifact format version {found} is not supported (this runtime reads version {FORMAT_VERSION}); recompile the model with this f16c")]
    Version {
        /// The file's version.
        found: u32,
    },
    /// The checksum does not match the contents.
    #[error("corrupted artifact: checksum mismatch (stored {stored:#018x}, computed {computed:#018x})")]
    Checksum {
        /// The stored checksum.
        stored: u64,
        /// The checksum of the contents.
        computed: u64,
    },
    /// The manifest is not valid JSON of the expected shape.
    #[error("corrupted artifact: bad manifest: {0}")]
    Manifest(#[source] serde_json::Error),
    /// The manifest refers to something that does not exist.
    #[error("inconsistent artifact: {0}")]
    Inconsistent(String),
}

/// FNV-1a, 64 bits, a byte at a time (names and lanes in the tests; artifacts use the faster
/// [`Checksum`]).
pub fn fnv1a64(parts: &[&[u8]]) -> u64 {
    let mut h = Fnv1a64::new();
    for p in parts {
        h.update(p);
    }
    h.finish()
}

/// [`fnv1a64`] fed in pieces (a file read section by section).
#[derive(Clone, Copy, Debug)]
pub struct Fnv1a64(u64);

impl Default for Fnv1a64 {
    fn default() -> Fnv1a64 {
        Fnv1a64::new()
    }
}

impl Fnv1a64 {
    /// The offset basis.
    pub fn new() -> Fnv1a64 {
        Fnv1a64(0xcbf2_9ce4_8422_2325)
    }

    /// Hashes `bytes` after what came before.
    pub fn update(&mut self, bytes: &[u8]) {
        let mut h = self.0;
        for &b in bytes {
            h ^= b as u64;
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        self.0 = h;
    }

    /// The hash so far.
    pub fn finish(&self) -> u64 {
        self.0
    }
}

/// The artifact's checksum, fed in pieces (a file read section by section): FNV-1a's step
/// (`h = (h ^ x) · 0x100000001b3`) over little-endian 64-bit words in four interleaved lanes
/// (word `i` of each 32-byte block into lane `i`), then the lanes, the last `len % 32` bytes one
/// by one and the length into one FNV-1a state. Each step is a bijection of the lane, so a
/// change confined to one word always changes the sum, as FNV-1a's byte steps do; four lanes
/// of words run about 20 times as fast as bytes (0.55 s for a 500 MB GPT-2 artifact, written
/// and again loaded). Enough to catch corruption; not an authenticity check.
#[derive(Clone, Copy, Debug)]
pub struct Checksum {
    lanes: [u64; 4],
    block: [u8; 32],
    /// Bytes in `block`.
    held: usize,
    len: u64,
}

const FNV_PRIME: u64 = 0x0100_0000_01b3;
const FNV_BASIS: u64 = 0xcbf2_9ce4_8422_2325;

impl Default for Checksum {
    fn default() -> Checksum {
        Checksum::new()
    }
}

impl Checksum {
    /// The empty state.
    pub fn new() -> Checksum {
        Checksum { lanes: [FNV_BASIS, FNV_BASIS ^ 1, FNV_BASIS ^ 2, FNV_BASIS ^ 3], block: [0; 32], held: 0, len: 0 }
    }

    fn blocks(lanes: &mut [u64; 4], bytes: &[u8]) {
        for block in bytes.chunks_exact(32) {
            for (i, lane) in lanes.iter_mut().enumerate() {
                let w = u64::from_le_bytes(block[8 * i..8 * i + 8].try_into().expect("8 bytes"));
                *lane = (*lane ^ w).wrapping_mul(FNV_PRIME);
            }
        }
    }

    /// Adds `bytes` after what came before.
    pub fn update(&mut self, mut bytes: &[u8]) {
        self.len += bytes.len() as u64;
        if self.held > 0 {
            let take = (32 - self.held).min(bytes.len());
            self.block[self.held..self.held + take].copy_from_slice(&bytes[..take]);
            self.held += take;
            bytes = &bytes[take..];
            if self.held < 32 {
                return;
            }
            let block = self.block;
            Checksum::blocks(&mut self.lanes, &block);
            self.held = 0;
        }
        let whole = bytes.len() / 32 * 32;
        Checksum::blocks(&mut self.lanes, &bytes[..whole]);
        let rest = &bytes[whole..];
        self.block[..rest.len()].copy_from_slice(rest);
        self.held = rest.len();
    }

    /// The sum of everything added.
    pub fn finish(&self) -> u64 {
        let mut h = FNV_BASIS;
        let step = |h: u64, x: u64| (h ^ x).wrapping_mul(FNV_PRIME);
        for &lane in &self.lanes {
            h = step(h, lane);
        }
        for &b in &self.block[..self.held] {
            h = step(h, b as u64);
        }
        step(h, self.len)
    }
}

/// The [`Checksum`] of `parts`, one after the other.
pub fn checksum(parts: &[&[u8]]) -> u64 {
    let mut c = Checksum::new();
    for p in parts {
        c.update(p);
    }
    c.finish()
}

/// An artifact file's fixed header: the section lengths and the stored checksum.
#[derive(Clone, Copy, Debug)]
pub struct Header {
    /// Bytes of the manifest, the code and the constants, in file order.
    pub lens: [u64; 3],
    /// The [`Checksum`] of the three sections.
    pub checksum: u64,
}

impl Header {
    /// Parses the first [`HEADER_BYTES`] of a file of `file_len` bytes: magic, version, and
    /// section lengths that add up to the file.
    pub fn parse(bytes: &[u8], file_len: u64) -> Result<Header, ArtifactError> {
        if bytes.len() < MAGIC.len() || &bytes[..MAGIC.len()] != MAGIC {
            return Err(ArtifactError::BadMagic);
        }
        if bytes.len() < HEADER_BYTES {
            return Err(ArtifactError::Truncated(format!("{} bytes, the header alone has {HEADER_BYTES}", bytes.len())));
        }
        let u32_at = |o: usize| u32::from_le_bytes(bytes[o..o + 4].try_into().expect("4 bytes"));
        let u64_at = |o: usize| u64::from_le_bytes(bytes[o..o + 8].try_into().expect("8 bytes"));
        let found = u32_at(8);
        if found != FORMAT_VERSION {
            return Err(ArtifactError::Version { found });
        }
        let lens = [u64_at(16), u64_at(24), u64_at(32)];
        let total = lens.iter().try_fold(HEADER_BYTES as u64, |a, &l| a.checked_add(l));
        match total {
            Some(t) if t == file_len => Ok(Header { lens, checksum: u64_at(40) }),
            Some(t) if t > file_len => Err(ArtifactError::Truncated(format!("{file_len} bytes, the header announces {t}"))),
            _ => Err(ArtifactError::Inconsistent(format!("{file_len} bytes, the header announces {total:?}"))),
        }
    }
}

impl Artifact {
    /// The file bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(HEADER_BYTES + self.code.len() + self.constants.len() + 4096);
        self.write_to(&mut out).expect("writing to memory does not fail");
        out
    }

    /// Writes the file to `w` section by section, never holding a second copy of the weights
    /// (a GPT-2 artifact is 400 MB).
    pub fn write_to(&self, mut w: impl std::io::Write) -> std::io::Result<()> {
        let manifest = serde_json::to_vec_pretty(&self.manifest).expect("the manifest serializes");
        let mut header = Vec::with_capacity(HEADER_BYTES);
        header.extend_from_slice(MAGIC);
        header.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
        header.extend_from_slice(&0u32.to_le_bytes());
        for len in [manifest.len(), self.code.len(), self.constants.len()] {
            header.extend_from_slice(&(len as u64).to_le_bytes());
        }
        header.extend_from_slice(&checksum(&[&manifest, &self.code, &self.constants]).to_le_bytes());
        w.write_all(&header)?;
        w.write_all(&manifest)?;
        w.write_all(&self.code)?;
        w.write_all(&self.constants)?;
        w.flush()
    }

    /// Writes the file at `path`.
    pub fn write_file(&self, path: &std::path::Path) -> std::io::Result<()> {
        self.write_to(std::io::BufWriter::with_capacity(1 << 20, std::fs::File::create(path)?))
    }

    /// Reads and validates an artifact.
    pub fn from_bytes(bytes: &[u8]) -> Result<Artifact, ArtifactError> {
        let header = Header::parse(bytes, bytes.len() as u64)?;
        let (m, c) = (header.lens[0] as usize, header.lens[1] as usize);
        let manifest = &bytes[HEADER_BYTES..HEADER_BYTES + m];
        let code = &bytes[HEADER_BYTES + m..HEADER_BYTES + m + c];
        let constants = &bytes[HEADER_BYTES + m + c..];
        let (stored, computed) = (header.checksum, checksum(&[manifest, code, constants]));
        if stored != computed {
            return Err(ArtifactError::Checksum { stored, computed });
        }
        let manifest = Manifest::from_json(manifest)?;
        manifest.validate(constants.len())?;
        Ok(Artifact { manifest, code: code.to_vec(), constants: constants.to_vec() })
    }
}

impl Manifest {
    /// The manifest section of a file (JSON).
    pub fn from_json(bytes: &[u8]) -> Result<Manifest, ArtifactError> {
        serde_json::from_slice(bytes).map_err(ArtifactError::Manifest)
    }

    /// Rewrites the constants section `constants` with every widened constant
    /// ([`Slot::Constant`]'s `widen`) stored as the f32 the code reads, and its slot as a plain
    /// constant: for code that carries its weights itself (a library), where no runtime widens
    /// them at load. Slots that shared bytes still do.
    pub fn widen_constants(&mut self, constants: &[u8]) -> Vec<u8> {
        let mut out = Vec::with_capacity(constants.len());
        let mut placed: std::collections::HashMap<(usize, usize, Option<Widen>), usize> = std::collections::HashMap::new();
        for slot in &mut self.slots {
            let Slot::Constant { offset, bytes, widen } = slot else { continue };
            let key = (*offset, *bytes, *widen);
            let stored = &constants[*offset..*offset + *bytes];
            let at = *placed.entry(key).or_insert_with(|| {
                out.resize(out.len().next_multiple_of(CONSTANT_ALIGN), 0);
                let at = out.len();
                match widen {
                    Some(w) => {
                        out.resize(at + 2 * stored.len(), 0);
                        w.widen(stored, &mut out[at..]);
                    }
                    None => out.extend_from_slice(stored),
                }
                at
            });
            *slot = Slot::Constant { offset: at, bytes: if widen.is_some() { 2 * *bytes } else { *bytes }, widen: None };
        }
        out
    }

    /// Checks that every reference inside the manifest is in range (`constants` bytes of
    /// constants).
    pub fn validate(&self, constants: usize) -> Result<(), ArtifactError> {
        let bad = |m: String| Err(ArtifactError::Inconsistent(m));
        for (i, s) in self.slots.iter().enumerate() {
            match *s {
                Slot::Input(k) if k >= self.inputs.len() => return bad(format!("slot {i} reads input #{k} of {}", self.inputs.len())),
                Slot::Constant { offset, bytes, widen } if offset.checked_add(bytes).is_none_or(|e| e > constants) || offset % CONSTANT_ALIGN != 0 || (widen.is_some() && bytes % 2 != 0) => {
                    return bad(format!("slot {i}: constant at {offset}+{bytes} outside the {constants}-byte constants section"))
                }
                Slot::Arena { offset, bytes } if offset.checked_add(bytes).is_none_or(|e| e > self.arena_bytes) => {
                    return bad(format!("slot {i}: arena range {offset}+{bytes} outside the {}-byte arena", self.arena_bytes))
                }
                _ => {}
            }
        }
        for (k, t) in self.inputs.iter().chain(self.outputs.iter().map(|o| &o.ty)).enumerate() {
            let Some(ty) = t.ty() else { return bad(format!("tensor #{k}: unknown element type '{}'", t.dtype)) };
            // The byte size must be computable (a damaged shape must not overflow it).
            let bytes = t.shape.iter().try_fold(ty.dtype.byte_size().max(1), |a, &d| a.checked_mul(d));
            if bytes.is_none_or(|b| b > isize::MAX as usize) {
                return bad(format!("tensor #{k}: shape {:?} is too large", t.shape));
            }
        }
        for (k, o) in self.outputs.iter().enumerate() {
            let bytes = o.ty.ty().map_or(0, |t| t.byte_size());
            let ok = match self.slots.get(o.slot) {
                Some(s @ (Slot::Arena { .. } | Slot::Constant { .. })) => s.run_bytes() >= bytes,
                Some(Slot::Input(i)) => self.inputs[*i].ty().is_some_and(|t| t.byte_size() >= bytes),
                _ => false,
            };
            if !ok {
                return bad(format!("result #{k} reads slot {} which does not hold {bytes} bytes", o.slot));
            }
        }
        for (i, s) in self.steps.iter().enumerate() {
            if s.function >= self.symbols.len() || s.kernel >= self.kernels.len() {
                return bad(format!("step {i} calls function {} of {} (kernel {} of {})", s.function, self.symbols.len(), s.kernel, self.kernels.len()));
            }
            match (self.code_format, &s.launch) {
                (CodeFormat::Ptx, None) => return bad(format!("step {i} of a GPU artifact has no launch configuration")),
                (CodeFormat::Ptx, Some(l)) if l.grid.contains(&0) || l.block.contains(&0) || l.block.iter().try_fold(1u64, |a, &b| a.checked_mul(b as u64)).is_none_or(|p| p > 1024) => {
                    return bad(format!("step {i}: launch grid {:?} block {:?} is not launchable", l.grid, l.block))
                }
                _ => {}
            }
            if let Some(g) = &s.interleave {
                let group = self.steps.get(i..i + g.steps).filter(|_| g.steps >= 1 && g.blocks >= 1);
                let Some(group) = group else { return bad(format!("step {i} interleaves {} steps in {} blocks", g.steps, g.blocks)) };
                if self.code_format == CodeFormat::Ptx || group.iter().enumerate().any(|(j, t)| t.work % g.blocks != 0 || (j > 0 && t.interleave.is_some())) {
                    return bad(format!("step {i}: the {} steps it interleaves cannot split into {} blocks", g.steps, g.blocks));
                }
                for w in &g.windows {
                    let fits = matches!(self.slots.get(w.slot), Some(Slot::Arena { bytes, .. }) if w.bytes.checked_mul(g.blocks).is_some_and(|all| all <= *bytes));
                    if !fits || w.bytes == 0 {
                        return bad(format!("step {i}: window of {} bytes per block on slot {} does not fit it {} times", w.bytes, w.slot, g.blocks));
                    }
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_checksum_is_the_same_in_any_pieces_and_sees_every_changed_byte() {
        let bytes: Vec<u8> = (0..1000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
        let whole = checksum(&[&bytes]);
        for cuts in [[0, 0], [1, 2], [31, 32], [33, 97], [500, 999], [1000, 1000]] {
            assert_eq!(checksum(&[&bytes[..cuts[0]], &bytes[cuts[0]..cuts[1]], &bytes[cuts[1]..]]), whole, "{cuts:?}");
        }
        let mut c = Checksum::new();
        for b in &bytes {
            c.update(std::slice::from_ref(b));
        }
        assert_eq!(c.finish(), whole);
        // Every byte, in the 32-byte blocks and in the tail, every bit.
        let mut changed = bytes.clone();
        for i in 0..bytes.len() {
            for bit in 0..8 {
                changed[i] ^= 1 << bit;
                assert_ne!(checksum(&[&changed]), whole, "byte {i} bit {bit}");
                changed[i] ^= 1 << bit;
            }
        }
        // Trailing zeros, and words swapped between lanes, count too.
        assert_ne!(checksum(&[&bytes, &[0]]), whole);
        let mut swapped = bytes.clone();
        swapped[..16].rotate_left(8);
        assert_ne!(checksum(&[&swapped]), whole);
        assert_ne!(checksum(&[]), checksum(&[&[0u8; 32]]));
    }

    fn sample() -> Artifact {
        let f32x4 = TensorDesc { dtype: "f32".into(), shape: vec![4] };
        Artifact {
            manifest: Manifest {
                target: "x86_64".into(),
                backend: "test".into(),
                code_format: CodeFormat::ElfSharedObject,
                requires: vec![],
                function: "forward".into(),
                micro_kernels: 0,
                inputs: vec![f32x4.clone()],
                outputs: vec![Output { slot: 2, ty: f32x4 }],
                slots: vec![Slot::Input(0), Slot::Constant { offset: 0, bytes: 16, widen: None }, Slot::Arena { offset: 0, bytes: 16 }],
                arena_bytes: 64,
                scratch_bytes: 0,
                kernels: vec![KernelInfo { name: "k0_add".into(), op: "tosa.add".into(), location: "a.mlir:1:1".into(), summary: String::new(), plan: String::new() }],
                symbols: vec!["f16c_k0_add".into()],
                steps: vec![Step { function: 0, work: 1, cost: 4.0, kernel: 0, launch: None, interleave: None }],
            },
            code: vec![1, 2, 3],
            constants: vec![0; 16],
        }
    }

    #[test]
    fn round_trips_and_rejects_damage() {
        let a = sample();
        let bytes = a.to_bytes();
        assert_eq!(Artifact::from_bytes(&bytes).unwrap(), a);
        assert!(matches!(Artifact::from_bytes(b"hello"), Err(ArtifactError::BadMagic)));
        assert!(matches!(Artifact::from_bytes(&bytes[..30]), Err(ArtifactError::Truncated(_))));
        assert!(matches!(Artifact::from_bytes(&bytes[..bytes.len() - 1]), Err(ArtifactError::Truncated(_))));
        let mut v = bytes.clone();
        v[8] = FORMAT_VERSION as u8 + 1;
        assert!(matches!(Artifact::from_bytes(&v), Err(ArtifactError::Version { found }) if found == FORMAT_VERSION + 1));
        let mut c = bytes.clone();
        let last = c.len() - 1;
        c[last] ^= 1;
        assert!(matches!(Artifact::from_bytes(&c), Err(ArtifactError::Checksum { .. })));
    }

    #[test]
    fn inconsistent_manifests_are_rejected() {
        let mut a = sample();
        a.manifest.steps[0].function = 5;
        assert!(matches!(Artifact::from_bytes(&a.to_bytes()), Err(ArtifactError::Inconsistent(_))));
        let mut a = sample();
        a.manifest.slots[1] = Slot::Constant { offset: 0, bytes: 17, widen: None };
        assert!(matches!(Artifact::from_bytes(&a.to_bytes()), Err(ArtifactError::Inconsistent(_))));
        let mut a = sample();
        a.manifest.outputs[0].slot = 0;
        a.manifest.inputs[0].shape = vec![1];
        assert!(matches!(Artifact::from_bytes(&a.to_bytes()), Err(ArtifactError::Inconsistent(_))));
        // Interleaved steps: a group within the steps, whole blocks, windows inside arena slots.
        let group = |steps, blocks, windows: Vec<Window>| {
            let mut a = sample();
            a.manifest.steps[0].work = 4;
            a.manifest.steps[0].interleave = Some(Interleave { steps, blocks, windows });
            Artifact::from_bytes(&a.to_bytes())
        };
        assert!(group(1, 2, vec![Window { slot: 2, bytes: 8 }]).is_ok());
        for (steps, blocks, windows) in [
            (2, 2, vec![]),
            (1, 3, vec![]),
            (1, 0, vec![]),
            (1, 2, vec![Window { slot: 2, bytes: 9 }]),
            (1, 2, vec![Window { slot: 1, bytes: 4 }]),
            (1, 2, vec![Window { slot: 2, bytes: 0 }]),
        ] {
            let what = format!("{steps} steps, {blocks} blocks, {windows:?}");
            assert!(matches!(group(steps, blocks, windows), Err(ArtifactError::Inconsistent(_))), "{what}");
        }
    }

    /// Found by `f16c-fuzz fuzz --target=artifact`: sizes that overflowed (a panic) while the
    /// manifest was validated.
    #[test]
    fn overflowing_sizes_are_rejected() {
        let mut a = sample();
        a.manifest.inputs[0].shape = vec![1 << 40, 1 << 40];
        assert!(matches!(Artifact::from_bytes(&a.to_bytes()), Err(ArtifactError::Inconsistent(_))));
        let mut a = sample();
        a.manifest.code_format = CodeFormat::Ptx;
        a.manifest.steps[0].launch = Some(Launch { grid: [1, 1, 1], block: [65536, 65536, 2], shared_bytes: 0 });
        assert!(matches!(Artifact::from_bytes(&a.to_bytes()), Err(ArtifactError::Inconsistent(_))));
    }

    #[test]
    fn widened_constants_are_exact_and_survive_the_manifest() {
        // Every f16 bit pattern, as F16C converts it (the runtime's widening at load must give
        // the code's bits): finite values exactly, a NaN quiet with its payload.
        let bits: Vec<u16> = (0..=u16::MAX).collect();
        let stored: Vec<u8> = bits.iter().flat_map(|b| b.to_le_bytes()).collect();
        let mut wide = vec![0u8; 2 * stored.len()];
        Widen::F16.widen(&stored, &mut wide);
        for (b, w) in bits.iter().zip(wide.chunks_exact(4)) {
            let got = u32::from_le_bytes([w[0], w[1], w[2], w[3]]);
            let h = half::f16::from_bits(*b);
            let want = if h.is_nan() { ((*b as u32 & 0x8000) << 16) | 0x7f80_0000 | 0x0040_0000 | ((*b as u32 & 0x03ff) << 13) } else { h.to_f32().to_bits() };
            assert_eq!(got, want, "f16 {b:#06x}");
        }
        // bf16: the bits moved up (as the code widens it, a NaN as it is).
        Widen::Bf16.widen(&stored, &mut wide);
        for (b, w) in bits.iter().zip(wide.chunks_exact(4)) {
            assert_eq!(u32::from_le_bytes([w[0], w[1], w[2], w[3]]), (*b as u32) << 16, "bf16 {b:#06x}");
        }
        // The manifest keeps the widening; a plain constant's JSON is unchanged.
        let mut a = sample();
        a.manifest.slots[1] = Slot::Constant { offset: 0, bytes: 8, widen: Some(Widen::F16) };
        let json = |s: &Slot| serde_json::to_string(s).expect("a slot serialises");
        assert_eq!(json(&a.manifest.slots[1]), r#"{"constant":{"offset":0,"bytes":8,"widen":"f16"}}"#);
        assert_eq!(json(&sample().manifest.slots[1]), r#"{"constant":{"offset":0,"bytes":16}}"#);
        assert_eq!(Artifact::from_bytes(&a.to_bytes()).expect("reads back").manifest.slots[1], a.manifest.slots[1]);
        assert_eq!(a.manifest.slots[1].run_bytes(), 16);
        // A widened constant of an odd byte count is damage.
        a.manifest.slots[1] = Slot::Constant { offset: 0, bytes: 7, widen: Some(Widen::Bf16) };
        assert!(matches!(Artifact::from_bytes(&a.to_bytes()), Err(ArtifactError::Inconsistent(_))));
    }

    #[test]
    fn a_library_carries_its_widened_constants() {
        // Two slots share a widened weight, a third is plain: the section afterwards holds the
        // widened one once (aligned) and the plain one as it was.
        let one = half::f16::from_f32(1.5).to_bits().to_le_bytes();
        let mut section = vec![0u8; 128];
        section[..2].copy_from_slice(&one);
        section[64..68].copy_from_slice(&7u32.to_le_bytes());
        let mut m = sample().manifest;
        let w = Slot::Constant { offset: 0, bytes: 2, widen: Some(Widen::F16) };
        m.slots = vec![w.clone(), Slot::Constant { offset: 64, bytes: 4, widen: None }, w];
        let out = m.widen_constants(&section);
        let Slot::Constant { offset: a, bytes: 4, widen: None } = m.slots[0] else { panic!("{:?}", m.slots[0]) };
        assert_eq!(m.slots[2], m.slots[0]);
        assert_eq!(f32::from_le_bytes(out[a..a + 4].try_into().expect("four bytes")), 1.5);
        let Slot::Constant { offset: b, bytes: 4, widen: None } = m.slots[1] else { panic!("{:?}", m.slots[1]) };
        assert_eq!(b % CONSTANT_ALIGN, 0);
        assert_eq!(&out[b..b + 4], &7u32.to_le_bytes());
    }
}
