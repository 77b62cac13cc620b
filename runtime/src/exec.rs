//! The CPU executor: runs an artifact's kernels (from a loaded shared object, or compiled in
//! process by the JIT) over its buffer table. Written once, used by both.
//!
//! An [`Executor`] owns the code (through an opaque handle that keeps it mapped), the constants
//! (copied once into 64-byte aligned memory: an fp16 weight keeps two bytes per element) and the
//! schedule. Each [`Executor::run`] checks its inputs at the boundary, takes the arena for the
//! intermediates and temporaries and a scratch area per thread (the last run's, kept; fresh
//! ones where another run holds them), and calls the steps in order; a step whose cost pays
//! for it is split across threads by work item, an interleaved group of steps
//! ([`f16c_core::artifact::Interleave`]) by block. An `Executor` is `Send + Sync`: runs share
//! only immutable code and constants, so several threads may run one model at once.

use crate::{libcalls, Result, RuntimeError};
use f16c_core::abi::{KernelFn, Status};
use f16c_core::artifact::{Manifest, Slot, CONSTANT_ALIGN};
use f16c_core::{Data, Tensor, TensorType};
use std::any::Any;

/// Steps cheaper than this many operations run on one thread. Handing a part to a spinning
/// pool thread costs about a microsecond; at 2·10⁶ (when parts went through channels) no 1×1
/// convolution of a mobilenet was split and two threads were no faster than one; from 2·10⁵
/// down to 5·10⁴ (steps of 3 to 10 µs split too) two threads took 28% less time on cnn_small,
/// 10% on depthwise_block and 5% on mobilenet ×0.5, and lower thresholds gained nothing more
/// (BENCHMARKS.md, issue 13).
pub const PARALLEL_MIN_COST: f64 = 5.0e4;

/// One part of a step for a pool thread: its calls, its table, its scratch, the libcall table.
/// The pointers stay valid until the step has collected every part.
struct Part {
    /// Blocks `begin..end`; block `b` calls each kernel of `calls` in order over its work items
    /// `b · per ..< (b + 1) · per` (a plain step: one kernel, one item per block).
    calls: SendPtr<Call>,
    count: usize,
    /// Null, or (profiling an interleaved group) nanoseconds spent per call, added to.
    spent: SendPtr<std::sync::atomic::AtomicU64>,
    /// An interleaved group's windows ([`f16c_core::artifact::Window`]) and where this part's
    /// are: before block `b`, each window's slot in `table` (then this part's own copy) points
    /// at its place in `window_memory`, moved back by `b` blocks.
    windows: SendPtr<(usize, usize, usize)>,
    window_count: usize,
    window_memory: SendPtr<u8>,
    table: SendPtr<*mut u8>,
    begin: u64,
    end: u64,
    scratch: SendPtr<u8>,
    rt: SendPtr<usize>,
}

/// A kernel and its work items per block.
#[derive(Clone, Copy)]
struct Call {
    f: KernelFn,
    per: u64,
}

impl Part {
    /// Runs the part; returns the first failing status.
    ///
    /// # Safety
    /// Its pointers must be valid (the calls, the table's slots, scratch and libcall table of a
    /// live run) and no other part may write the same output elements.
    unsafe fn run(&self) -> i32 {
        // SAFETY: the caller's contract: `calls` holds `count` calls.
        let calls = unsafe { std::slice::from_raw_parts(self.calls.0, self.count) };
        if let [c] = calls {
            // SAFETY: the caller's contract.
            return unsafe { (c.f)(self.table.0, self.begin * c.per, self.end * c.per, self.scratch.0 as *mut u8, self.rt.0) };
        }
        // SAFETY: the caller's contract: `spent` is null or holds `count` counters.
        let spent = (!self.spent.0.is_null()).then(|| unsafe { std::slice::from_raw_parts(self.spent.0, self.count) });
        // SAFETY: the caller's contract: `windows` holds `window_count` (slot, bytes, offset).
        let windows = unsafe { std::slice::from_raw_parts(self.windows.0, self.window_count) };
        let mut status = Status::Ok as i32;
        for b in self.begin..self.end {
            for &(slot, bytes, offset) in windows {
                let at = (self.window_memory.0 as *mut u8).wrapping_add(offset).wrapping_sub(b as usize * bytes);
                // SAFETY: with windows, the table is this part's own copy, `slot` inside it.
                unsafe { *(self.table.0 as *mut *mut u8).add(slot) = at };
            }
            for (i, c) in calls.iter().enumerate() {
                let t0 = spent.map(|_| std::time::Instant::now());
                // SAFETY: the caller's contract.
                let s = unsafe { (c.f)(self.table.0, b * c.per, (b + 1) * c.per, self.scratch.0 as *mut u8, self.rt.0) };
                if let (Some(spent), Some(t0)) = (spent, t0) {
                    spent[i].fetch_add(t0.elapsed().as_nanos() as u64, std::sync::atomic::Ordering::Relaxed);
                }
                if status == Status::Ok as i32 {
                    status = s;
                }
            }
        }
        status
    }
}

/// Threads kept for the life of an executor, so that a step split across threads costs a few
/// atomic operations rather than spawning and joining threads (which, at tens of microseconds
/// per step, made two threads slower than one on a mobilenet's 73 kernels) or waking a
/// sleeping thread through the kernel (a channel's send and receive: 5 to 30 µs per step on a
/// shared machine, a large share of a mobilenet's 20–100 µs steps). A thread that has run a
/// part waits for the next one spinning for [`Pool::SPIN`] (yielding between bursts, so that
/// it does not hold a core another thread wants), then sleeps until woken.
struct Pool {
    shared: std::sync::Arc<Shared>,
    handles: Vec<std::thread::JoinHandle<()>>,
}

/// What the calling thread and the pool's threads share.
struct Shared {
    workers: Vec<Worker>,
    /// Parts of the current step finished by pool threads.
    done: std::sync::atomic::AtomicUsize,
    /// The first failing status of the current step's pool parts (`Status::Ok` when none).
    status: std::sync::atomic::AtomicI32,
    quit: std::sync::atomic::AtomicBool,
}

/// One pool thread's mailbox: the caller stores a part and bumps `posted`.
struct Worker {
    part: std::sync::Mutex<Option<Part>>,
    posted: std::sync::atomic::AtomicU64,
    sleeping: std::sync::atomic::AtomicBool,
}

impl Pool {
    /// How long a pool thread spins for its next part before it sleeps: longer than the gap
    /// between two steps of one run, short enough that an idle executor costs nothing.
    const SPIN: std::time::Duration = std::time::Duration::from_micros(300);

    fn new(threads: usize) -> Pool {
        use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, AtomicUsize};
        let workers = (1..threads).map(|_| Worker { part: std::sync::Mutex::new(None), posted: AtomicU64::new(0), sleeping: AtomicBool::new(false) }).collect();
        let shared = std::sync::Arc::new(Shared { workers, done: AtomicUsize::new(0), status: AtomicI32::new(Status::Ok as i32), quit: AtomicBool::new(false) });
        let handles = (0..shared.workers.len())
            .map(|w| {
                let shared = shared.clone();
                std::thread::spawn(move || shared.serve(w))
            })
            .collect();
        Pool { shared, handles }
    }

    /// Pool threads available for parts.
    fn threads(&self) -> usize {
        self.shared.workers.len()
    }

    /// Runs `first` on this thread and `others` on the pool's threads; returns the first
    /// failing status, or `Status::Ok`.
    ///
    /// # Safety
    /// As [`Part::run`], for every part.
    unsafe fn run(&self, first: Part, others: Vec<Part>) -> i32 {
        use std::sync::atomic::Ordering::{Acquire, SeqCst};
        let s = &self.shared;
        assert!(others.len() <= s.workers.len(), "a part for every pool thread at most");
        s.done.store(0, SeqCst);
        s.status.store(Status::Ok as i32, SeqCst);
        let count = others.len();
        for ((w, h), p) in s.workers.iter().zip(&self.handles).zip(others) {
            *w.part.lock().unwrap_or_else(|e| e.into_inner()) = Some(p);
            w.posted.fetch_add(1, SeqCst);
            if w.sleeping.load(SeqCst) {
                h.thread().unpark();
            }
        }
        // SAFETY: the caller's contract.
        let mine = unsafe { first.run() };
        // Every part posted is waited for before the table, scratch or arena can go.
        let mut spins = 0u32;
        while s.done.load(Acquire) < count {
            spins += 1;
            if spins < 1 << 10 {
                std::hint::spin_loop();
            } else {
                std::thread::yield_now();
            }
        }
        if mine != Status::Ok as i32 {
            mine
        } else {
            s.status.load(Acquire)
        }
    }
}

impl Shared {
    /// A pool thread's loop: take each part posted to worker `w`, run it, count it done.
    fn serve(&self, w: usize) {
        use std::sync::atomic::Ordering::{Relaxed, Release, SeqCst};
        let me = &self.workers[w];
        let mut seen = 0u64;
        loop {
            let mut idle_since: Option<std::time::Instant> = None;
            let mut spins = 0u32;
            while me.posted.load(SeqCst) == seen {
                if self.quit.load(Relaxed) {
                    return;
                }
                spins = spins.wrapping_add(1);
                if !spins.is_multiple_of(64) {
                    std::hint::spin_loop();
                    continue;
                }
                // Between bursts of spinning, let another thread on this core run (tests and
                // runs side by side may have more threads than cores).
                std::thread::yield_now();
                let since = *idle_since.get_or_insert_with(std::time::Instant::now);
                if since.elapsed() >= Pool::SPIN {
                    // Announce the sleep, then look once more: a part posted in between is
                    // either seen here or finds `sleeping` set and unparks this thread.
                    me.sleeping.store(true, SeqCst);
                    if me.posted.load(SeqCst) == seen && !self.quit.load(SeqCst) {
                        std::thread::park();
                    }
                    me.sleeping.store(false, SeqCst);
                }
            }
            seen = me.posted.load(SeqCst);
            let part = me.part.lock().unwrap_or_else(|e| e.into_inner()).take();
            if let Some(p) = part {
                // SAFETY: the caller keeps every pointer valid until it has counted this part
                // done (see `Pool::run`); parts write disjoint outputs.
                let status = unsafe { p.run() };
                if status != Status::Ok as i32 {
                    let _ = self.status.compare_exchange(Status::Ok as i32, status, SeqCst, SeqCst);
                }
                self.done.fetch_add(1, Release);
            }
        }
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        self.shared.quit.store(true, std::sync::atomic::Ordering::SeqCst);
        for h in self.handles.drain(..) {
            h.thread().unpark();
            let _ = h.join();
        }
    }
}

/// The machine's available parallelism.
pub fn default_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

const _: () = assert!(CONSTANT_ALIGN == 64);

/// Zeroed, 64-byte aligned bytes: a whole number of 64-byte lines at `start` in `buf`.
///
/// Taken from the allocator's zeroed memory (`calloc`): a large buffer's pages are mapped as
/// they are first written, not all filled with zeros first. (An allocation aligned to more
/// than the allocator's 16 bytes is zeroed by a `memset` over every page, so the buffer is
/// over-allocated by one line and aligned by its start instead.)
pub struct Aligned {
    buf: Vec<u8>,
    start: usize,
    len: usize,
}

impl Aligned {
    /// `bytes` zero bytes (at least one line).
    pub fn zeroed(bytes: usize) -> Aligned {
        let len = bytes.div_ceil(64).max(1) * 64;
        let buf = vec![0u8; len + 63];
        let start = buf.as_ptr().align_offset(64);
        Aligned { buf, start, len }
    }

    /// `bytes` for a run's intermediates (at least one line), which no kernel may read before
    /// writing: zero in release builds (pages the kernel maps lazily); in debug builds, where the
    /// test suites run, every byte 0xFF (NaN floats, -1 integers), so that a kernel relying
    /// on zeroed memory fails the parity suites instead of working by chance.
    pub fn for_writing(bytes: usize) -> Aligned {
        let mut a = Aligned::zeroed(bytes);
        if cfg!(debug_assertions) {
            a.bytes_mut().fill(0xFF);
        }
        a
    }

    /// A copy of `b`.
    pub fn from_bytes(b: &[u8]) -> Aligned {
        let mut a = Aligned::zeroed(b.len());
        a.bytes_mut()[..b.len()].copy_from_slice(b);
        a
    }

    /// The buffer of a constant stored as `stored`, widened to f32 where `widen` says
    /// ([`Slot::Constant`]).
    pub fn constant(stored: &[u8], widen: Option<f16c_core::artifact::Widen>) -> Aligned {
        match widen {
            None => Aligned::from_bytes(stored),
            Some(w) => {
                let mut a = Aligned::zeroed(2 * stored.len());
                w.widen(stored, &mut a.bytes_mut()[..2 * stored.len()]);
                a
            }
        }
    }

    /// This buffer, holding a constant's `stored` bytes as read, as the code reads it: itself,
    /// or widened to f32 where `widen` says ([`Slot::Constant`]).
    pub fn widened(mut self, stored: usize, widen: Option<f16c_core::artifact::Widen>) -> Aligned {
        match widen {
            None => self,
            Some(_) => Aligned::constant(&self.bytes_mut()[..stored], widen),
        }
    }

    fn len(&self) -> usize {
        self.len
    }

    fn ptr(&self) -> *mut u8 {
        // Vec::as_ptr makes no reference to the bytes: the kernels write through this pointer.
        self.buf.as_ptr().wrapping_add(self.start).cast_mut()
    }

    /// The buffer's bytes (a whole number of 64-byte lines).
    pub fn bytes_mut(&mut self) -> &mut [u8] {
        &mut self.buf[self.start..self.start + self.len]
    }
}

/// A loaded model, ready to run. `Send + Sync`.
pub struct Executor {
    manifest: Manifest,
    inputs: Vec<TensorType>,
    outputs: Vec<(usize, TensorType)>,
    /// Per slot, its constant's own aligned copy. One allocation per weight, as the JIT always
    /// had: with all weights in one contiguous copy, resnet18-style f32 ran 15-20% slower in
    /// three paired runs (BENCHMARKS.md).
    constants: Vec<Option<Aligned>>,
    /// The schedule as the run loop takes it, built once from the manifest's steps.
    groups: Vec<Group>,
    /// The libcall table the kernels call through (`rt`), built once.
    rt: Vec<usize>,
    threads: usize,
    /// With [`profiling`] on when it was made: per kernel, the time its steps took and how many
    /// runs there were; printed to standard error when the executor is dropped.
    profile: Option<std::sync::Mutex<(Vec<std::time::Duration>, usize)>>,
    /// The threads that run the other parts of split steps, made on first use. A run that
    /// finds them busy (another thread is running the model) spawns its own for the step.
    pool: std::sync::Mutex<Option<Pool>>,
    /// The arena and per-thread scratch of the last run, kept for the next: a fresh arena
    /// costs a page fault and a zeroed page per 4 KiB at every run (about a tenth of a Whisper
    /// encoder's run, 110 MB of intermediates). A run that finds them busy (another thread
    /// is running the model) allocates its own.
    memory: std::sync::Mutex<RunMemory>,
    /// Keeps the code mapped (a JIT module, a loaded shared object).
    _code: Box<dyn Any + Send + Sync>,
}

/// A run's mutable memory: its arena and each thread's scratch.
#[derive(Default)]
struct RunMemory {
    arena: Option<Aligned>,
    scratch: Vec<Aligned>,
    /// Per thread, the windows of interleaved groups (as large as the largest group needs).
    windows: Vec<Aligned>,
}

/// Steps that run as one: a plain step (its work items are its blocks, one item each), or an
/// interleaved group ([`f16c_core::artifact::Interleave`]).
struct Group {
    /// The index of its first step.
    first: usize,
    /// Each step's kernel function and work items per block.
    calls: Vec<Call>,
    /// Blocks, split across threads in contiguous runs.
    blocks: usize,
    /// The steps' cost together.
    cost: f64,
    /// The windows: (slot, bytes per block, offset in a thread's window memory).
    windows: Vec<(usize, usize, usize)>,
    /// Bytes of window memory per thread.
    window_bytes: usize,
}

impl Group {
    /// The groups of `steps`, whose functions resolve in `functions` (checked before).
    fn of(steps: &[f16c_core::artifact::Step], functions: &[Option<KernelFn>]) -> Vec<Group> {
        let mut groups = Vec::new();
        let mut at = 0;
        while at < steps.len() {
            let (count, blocks, windows) = match &steps[at].interleave {
                Some(g) => (g.steps, g.blocks, g.windows.as_slice()),
                None => (1, steps[at].work, &[][..]),
            };
            let group = &steps[at..at + count];
            let calls = group.iter().map(|s| Call { f: functions[s.function].expect("checked in new"), per: (s.work / blocks.max(1)) as u64 }).collect();
            let mut placed = Vec::with_capacity(windows.len());
            let mut window_bytes = 0;
            for w in windows {
                placed.push((w.slot, w.bytes, window_bytes));
                window_bytes += w.bytes.next_multiple_of(64);
            }
            groups.push(Group { first: at, calls, blocks, cost: group.iter().map(|s| s.cost).sum(), windows: placed, window_bytes });
            at += count;
        }
        groups
    }
}

// SAFETY: the function pointers point into code owned by `_code`, which lives as long as the
// executor and is never modified; constants are immutable after construction. A run's
// mutable memory is its own (held under `memory`'s lock, or allocated for it).
unsafe impl Send for Executor {}
unsafe impl Sync for Executor {}

impl Executor {
    /// An executor for `manifest` (already validated against `constants`) whose symbols resolve
    /// to `functions`; `code` keeps them alive.
    pub fn new(manifest: Manifest, constants: &[u8], functions: Vec<Option<KernelFn>>, code: Box<dyn Any + Send + Sync>, threads: usize) -> Result<Executor> {
        let constants = manifest
            .slots
            .iter()
            .map(|s| match *s {
                Slot::Constant { offset, bytes, widen } => Some(Aligned::constant(&constants[offset..offset + bytes], widen)),
                _ => None,
            })
            .collect();
        Executor::with_constants(manifest, constants, functions, code, threads)
    }

    /// [`Executor::new`] with the constants already in their aligned buffers, one per slot
    /// (`None` for the others): how [`crate::loader::open`] reads them straight from the file.
    pub fn with_constants(manifest: Manifest, constants: Vec<Option<Aligned>>, functions: Vec<Option<KernelFn>>, code: Box<dyn Any + Send + Sync>, threads: usize) -> Result<Executor> {
        let bad = |m: String| RuntimeError::Load(m);
        if constants.len() != manifest.slots.len() {
            return Err(bad(format!("{} constant buffers for {} slots", constants.len(), manifest.slots.len())));
        }
        if functions.len() != manifest.symbols.len() {
            return Err(bad(format!("{} functions for {} symbols", functions.len(), manifest.symbols.len())));
        }
        if manifest.micro_kernels != 0 && manifest.micro_kernels != f16c_core::abi::MICRO_KERNEL_VERSION {
            return Err(bad(format!(
                "the code calls the runtime's micro-kernels by their contract version {}, and this runtime's are version {}: recompile the model with this f16c, or run it with the f16c-run of the f16c that compiled it",
                manifest.micro_kernels,
                f16c_core::abi::MICRO_KERNEL_VERSION
            )));
        }
        if let Some(s) = manifest.steps.iter().find(|s| functions[s.function].is_none()) {
            return Err(bad(format!("the code does not define '{}'", manifest.symbols[s.function])));
        }
        let ty = |d: &f16c_core::artifact::TensorDesc| d.ty().ok_or_else(|| bad(format!("unknown element type '{}'", d.dtype)));
        let inputs = manifest.inputs.iter().map(ty).collect::<Result<Vec<_>>>()?;
        let outputs = manifest.outputs.iter().map(|o| Ok((o.slot, ty(&o.ty)?))).collect::<Result<Vec<_>>>()?;
        let profile = profiling().then(|| std::sync::Mutex::new((vec![std::time::Duration::ZERO; manifest.kernels.len()], 0)));
        let groups = Group::of(&manifest.steps, &functions);
        Ok(Executor { constants, manifest, inputs, outputs, groups, rt: libcalls::table(), threads: threads.max(1), profile, pool: std::sync::Mutex::new(None), memory: std::sync::Mutex::default(), _code: code })
    }

    /// The manifest (function name, types, layout, schedule).
    pub fn manifest(&self) -> &Manifest {
        &self.manifest
    }

    /// The function's argument types.
    pub fn inputs(&self) -> &[TensorType] {
        &self.inputs
    }

    /// Bytes of weights held (after packing and conversion; a weight widened at load as f32).
    pub fn weight_bytes(&self) -> usize {
        self.manifest.slots.iter().filter(|s| matches!(s, Slot::Constant { .. })).map(Slot::run_bytes).sum()
    }

    /// Sets the number of threads used by later runs.
    pub fn set_threads(&mut self, threads: usize) {
        self.threads = threads.max(1);
    }

    /// Runs the model. Inputs must match the function's arguments in count, shape and type.
    pub fn run(&self, inputs: &[Tensor]) -> Result<Vec<Tensor>> {
        let m = &self.manifest;
        f16c_core::tensor::check_inputs(&m.function, &self.inputs, inputs).map_err(RuntimeError::BadInput)?;
        let mut held = self.memory.try_lock().ok();
        let mut own = RunMemory::default();
        let memory: &mut RunMemory = held.as_deref_mut().unwrap_or(&mut own);
        let arena = &*memory.arena.get_or_insert_with(|| Aligned::for_writing(m.arena_bytes));
        let table: Vec<*mut u8> = m
            .slots
            .iter()
            .zip(&self.constants)
            .map(|(s, c)| match *s {
                Slot::Unused => std::ptr::null_mut(),
                Slot::Input(k) => data_ptr(inputs[k].data()),
                Slot::Constant { .. } => c.as_ref().map_or(std::ptr::null_mut(), Aligned::ptr),
                // SAFETY: the manifest was validated: every arena range lies inside the arena,
                // which is allocated at its full size.
                Slot::Arena { offset, .. } => unsafe { arena.ptr().add(offset) },
            })
            .collect();
        let rt = &self.rt;
        let scratch = &mut memory.scratch;
        if scratch.is_empty() {
            scratch.push(Aligned::for_writing(m.scratch_bytes));
        }
        let mut times = self.profile.as_ref().map(|_| vec![std::time::Duration::ZERO; m.kernels.len()]);
        for g in &self.groups {
            let group = &m.steps[g.first..g.first + g.calls.len()];
            let spent: Vec<std::sync::atomic::AtomicU64> = if times.is_some() && group.len() > 1 { group.iter().map(|_| Default::default()).collect() } else { Vec::new() };
            let started = times.as_ref().map(|_| std::time::Instant::now());
            let work = g.blocks;
            let threads = if g.cost >= PARALLEL_MIN_COST { self.threads.min(work).max(1) } else { 1 };
            while scratch.len() < threads {
                scratch.push(Aligned::for_writing(m.scratch_bytes));
            }
            let (calls, placed, window_bytes) = (&g.calls, &g.windows, g.window_bytes);
            let window_memory = &mut memory.windows;
            if window_bytes > 0 {
                if window_memory.first().is_some_and(|w| w.len() < window_bytes) {
                    window_memory.clear();
                }
                while window_memory.len() < threads {
                    window_memory.push(Aligned::for_writing(window_bytes));
                }
            }
            let tables: Vec<Vec<*mut u8>> = if placed.is_empty() { Vec::new() } else { (0..threads).map(|_| table.clone()).collect() };
            // Contiguous runs of work items (blocks), one per thread; this thread runs the first.
            let chunk = work.div_ceil(threads);
            let part = |t: usize| Part {
                calls: SendPtr(calls.as_ptr()),
                count: calls.len(),
                spent: SendPtr(if spent.is_empty() { std::ptr::null() } else { spent.as_ptr() }),
                windows: SendPtr(placed.as_ptr()),
                window_count: placed.len(),
                window_memory: SendPtr(if placed.is_empty() { std::ptr::null() } else { window_memory[t].ptr() as *const u8 }),
                table: SendPtr(if placed.is_empty() { table.as_ptr() } else { tables[t].as_ptr() }),
                begin: (t * chunk) as u64,
                end: ((t + 1) * chunk).min(work) as u64,
                scratch: SendPtr(scratch[t].ptr() as *const u8),
                rt: SendPtr(rt.as_ptr()),
            };
            let status = if threads <= 1 {
                // SAFETY: the table holds a valid address for every slot the functions use, each
                // of the size the manifest says (inputs were checked above).
                unsafe { part(0).run() }
            } else {
                let (first, others): (Part, Vec<Part>) = (part(0), (1..threads).map(part).collect());
                // SAFETY (every `run` below): as above; the parts write disjoint output
                // elements, and each is finished before this step ends.
                match self.pool.try_lock() {
                    Ok(mut pool) => {
                        if pool.as_ref().is_some_and(|p| p.threads() + 1 < threads) {
                            *pool = None;
                        }
                        unsafe { pool.get_or_insert_with(|| Pool::new(self.threads)).run(first, others) }
                    }
                    // Another run holds the kept threads: spawn this step's.
                    Err(_) => std::thread::scope(|s| {
                        let handles: Vec<_> = others.into_iter().map(|p| s.spawn(move || unsafe { p.run() })).collect();
                        let mine = unsafe { first.run() };
                        std::iter::once(mine).chain(handles.into_iter().map(|h| h.join().unwrap_or(-1))).find(|&s| s != Status::Ok as i32).unwrap_or(Status::Ok as i32)
                    }),
                }
            };
            if let (Some(times), Some(t0)) = (times.as_mut(), started) {
                // A group's time goes to its steps' kernels in the shares their calls took.
                let wall = t0.elapsed();
                let each: Vec<f64> = spent.iter().map(|n| n.load(std::sync::atomic::Ordering::Relaxed) as f64).collect();
                let total: f64 = each.iter().sum::<f64>().max(1.0);
                for (i, s) in group.iter().enumerate() {
                    times[s.kernel] += if group.len() == 1 { wall } else { wall.mul_f64(each[i] / total) };
                }
            }
            if status != Status::Ok as i32 {
                let k = &m.kernels[group[0].kernel];
                return Err(RuntimeError::Eval { location: k.location.clone(), op: k.op.clone(), message: Status::describe(status) });
            }
        }
        if let (Some(profile), Some(times)) = (&self.profile, times) {
            let mut p = profile.lock().unwrap_or_else(|e| e.into_inner());
            p.0.iter_mut().zip(times).for_each(|(total, t)| *total += t);
            p.1 += 1;
        }
        self.outputs
            .iter()
            .map(|(slot, ty)| {
                let bytes = ty.byte_size();
                // SAFETY: the output's slot holds at least `bytes` bytes (validated manifest).
                let slice = unsafe { std::slice::from_raw_parts(table[*slot] as *const u8, bytes) };
                let data = Data::from_le_bytes(ty.dtype, slice).expect("whole elements");
                Ok(Tensor::new(ty.shape.clone(), data).expect("type's element count"))
            })
            .collect()
    }
}

impl Drop for Executor {
    /// Prints the kernel profile ([`set_profiling`]): kernels by time per run, slowest first.
    fn drop(&mut self) {
        let Some(profile) = self.profile.take() else { return };
        let (totals, runs) = profile.into_inner().unwrap_or_else(|e| e.into_inner());
        let seconds: Vec<f64> = totals.iter().map(|t| t.as_secs_f64()).collect();
        print_profile(&self.manifest, &seconds, runs);
    }
}

static PROFILING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Whether executors made from now on time their kernels and print the profile when dropped
/// (`f16c run --profile`, `f16c-run --profile`; the binaries also honour `F16C_PROFILE=1`).
/// Set by the binaries before they load a model; it costs a clock read per step.
pub fn set_profiling(on: bool) {
    PROFILING.store(on, std::sync::atomic::Ordering::Relaxed);
}

/// See [`set_profiling`].
pub fn profiling() -> bool {
    PROFILING.load(std::sync::atomic::Ordering::Relaxed)
}

/// The kernel profile as text: per kernel, its time per run and share of the time in kernels,
/// its name, what it computes and its plan (where the backend records one), its source
/// location, slowest first; kernels that took no measurable time are left out.
pub fn profile_text(manifest: &Manifest, seconds: &[f64], runs: usize) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    if runs == 0 {
        return out;
    }
    let all: f64 = seconds.iter().sum();
    let mut order: Vec<usize> = (0..seconds.len()).collect();
    order.sort_by(|&a, &b| seconds[b].total_cmp(&seconds[a]));
    let _ = writeln!(out, "f16c profile of @{}: {runs} runs, {:.3} ms per run in {} kernels", manifest.function, all * 1e3 / runs as f64, manifest.kernels.len());
    let _ = writeln!(out, "{:>13} {:>6}  {:<16} what (plan) @ location", "ms/run", "share", "kernel");
    for k in order.into_iter().take_while(|&k| seconds[k] > 0.0) {
        let info = &manifest.kernels[k];
        let share = seconds[k] / all.max(f64::MIN_POSITIVE);
        let plan = if info.plan.is_empty() { String::new() } else { format!(" ({})", info.plan) };
        let what = if info.summary.is_empty() { info.op.as_str() } else { info.summary.as_str() };
        let _ = writeln!(out, "{:>13.4} {:>5.1}%  {:<16} {what}{plan} @ {}", seconds[k] * 1e3 / runs as f64, share * 100.0, info.name, info.location);
    }
    out
}

/// Prints [`profile_text`] to standard error (on the CPU and on a GPU).
pub(crate) fn print_profile(manifest: &Manifest, seconds: &[f64], runs: usize) {
    eprint!("{}", profile_text(manifest, seconds, runs));
}

#[derive(Clone, Copy)]
struct SendPtr<T>(*const T);
// SAFETY: used only to hand read-only tables and per-thread scratch to threads that finish
// with them before the run that owns them returns (scoped threads, or the pool's, waited for).
unsafe impl<T> Send for SendPtr<T> {}

/// The address of a tensor's elements (the generated code reads them in place).
fn data_ptr(d: &Data) -> *mut u8 {
    match d {
        Data::F32(v) => v.as_ptr() as *mut u8,
        Data::F16(v) => v.as_ptr() as *mut u8,
        Data::BF16(v) => v.as_ptr() as *mut u8,
        Data::F64(v) => v.as_ptr() as *mut u8,
        // `bool` is one byte holding 0 or 1, as the code reads i1.
        Data::I1(v) => v.as_ptr() as *mut u8,
        Data::I8(v) => v.as_ptr() as *mut u8,
        Data::I16(v) => v.as_ptr() as *mut u8,
        Data::I32(v) => v.as_ptr() as *mut u8,
        Data::I48(v) | Data::I64(v) => v.as_ptr() as *mut u8,
    }
}

#[cfg(test)]
mod tests {
    use super::{Call, Executor, Part, Pool, SendPtr};
    use f16c_core::abi::Status;
    use std::sync::atomic::{AtomicU32, Ordering};

    /// Code compiled against another version of the micro-kernels' contract is refused when the
    /// executor is made, with both versions named; code that calls none, or this version, is not.
    #[test]
    fn code_of_another_micro_kernel_contract_is_refused() {
        use f16c_core::abi::MICRO_KERNEL_VERSION;
        use f16c_core::artifact::{CodeFormat, Manifest};
        let manifest = |micro_kernels: u32| Manifest {
            target: "x86_64".into(),
            backend: "test".into(),
            code_format: CodeFormat::ElfSharedObject,
            requires: vec![],
            function: "forward".into(),
            micro_kernels,
            inputs: vec![],
            outputs: vec![],
            slots: vec![],
            arena_bytes: 0,
            scratch_bytes: 0,
            kernels: vec![],
            symbols: vec![],
            steps: vec![],
        };
        for ok in [0, MICRO_KERNEL_VERSION] {
            assert!(Executor::new(manifest(ok), &[], vec![], Box::new(()), 1).is_ok(), "version {ok} refused");
        }
        let Err(e) = Executor::new(manifest(MICRO_KERNEL_VERSION + 1), &[], vec![], Box::new(()), 1) else { panic!("a newer contract was accepted") };
        let m = e.to_string();
        assert!(m.contains(&format!("contract version {}", MICRO_KERNEL_VERSION + 1)) && m.contains(&format!("are version {MICRO_KERNEL_VERSION}")), "{m}");
    }

    /// A kernel that counts, in the `AtomicU32` array its table's slot 0 points to, each work
    /// item it runs, and fails on item 7777 of a step whose scratch says so.
    unsafe extern "C" fn count(table: *const *mut u8, begin: u64, end: u64, scratch: *mut u8, _rt: *const usize) -> i32 {
        // SAFETY: the test passes a table whose slot 0 is an array of `AtomicU32` longer than
        // `end`, and a scratch byte.
        let (counts, fail) = unsafe { (*table as *const AtomicU32, *scratch != 0) };
        for i in begin..end {
            unsafe { &*counts.add(i as usize) }.fetch_add(1, Ordering::Relaxed);
            if fail && i == 7777 {
                return Status::IndexOutOfRange as i32;
            }
        }
        Status::Ok as i32
    }

    #[test]
    fn the_pool_runs_every_part_of_every_step_once_and_reports_failures() {
        const ITEMS: usize = 10_000;
        let threads = 3;
        let pool = Pool::new(threads);
        let counts: Vec<AtomicU32> = (0..ITEMS).map(|_| AtomicU32::new(0)).collect();
        let table = [counts.as_ptr() as *mut u8];
        let (ok, fail) = (0u8, 1u8);
        let rt = [0usize];
        let no_windows: [(usize, usize, usize); 0] = [];
        // A plain step (one call, one item per block), or (`grouped`) two calls per block of
        // two items, as an interleaved group runs them: every item counted twice.
        let step_of = |parts: usize, scratch: &u8, grouped: bool| {
            let calls = if grouped { vec![Call { f: count, per: 2 }; 2] } else { vec![Call { f: count, per: 1 }] };
            let work = if grouped { ITEMS / 2 } else { ITEMS };
            let chunk = work.div_ceil(parts);
            let part = |t: usize| Part {
                calls: SendPtr(calls.as_ptr()),
                count: calls.len(),
                spent: SendPtr(std::ptr::null()),
                windows: SendPtr(no_windows.as_ptr()),
                window_count: 0,
                window_memory: SendPtr(std::ptr::null()),
                table: SendPtr(table.as_ptr()),
                begin: (t * chunk) as u64,
                end: ((t + 1) * chunk).min(work) as u64,
                scratch: SendPtr(scratch as *const u8),
                rt: SendPtr(rt.as_ptr()),
            };
            // SAFETY: the table, scratch and counts outlive the step; parts are disjoint.
            unsafe { pool.run(part(0), (1..parts).map(part).collect()) }
        };
        let step = |parts: usize, scratch: &u8| step_of(parts, scratch, false);
        let mut steps = 0;
        for round in 0..300 {
            // Steps back to back, with fewer parts than threads, and after the pool's threads
            // have gone to sleep.
            if round % 100 == 99 {
                std::thread::sleep(Pool::SPIN * 4);
            }
            assert_eq!(step(1 + round % threads, &ok), Status::Ok as i32);
            steps += 1;
        }
        assert!(counts.iter().all(|c| c.load(Ordering::Relaxed) == steps), "every item once per step");
        for parts in 1..=threads {
            assert_eq!(step_of(parts, &ok, true), Status::Ok as i32);
            steps += 2;
        }
        assert!(counts.iter().all(|c| c.load(Ordering::Relaxed) == steps), "every item of a grouped step twice");
        // The failure is reported whichever thread ran item 7777, and the next step is clean.
        for parts in 1..=threads {
            assert_eq!(step(parts, &fail), Status::IndexOutOfRange as i32, "{parts} parts");
            assert_eq!(step(parts, &ok), Status::Ok as i32);
        }
    }
}
