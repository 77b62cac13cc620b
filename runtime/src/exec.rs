//! The CPU executor: runs an artifact's kernels (from a loaded shared object, or compiled in
//! process by the JIT) over its buffer table. Written once, used by both.
//!
//! An [`Executor`] owns the code (through an opaque handle that keeps it mapped), the constants
//! (copied once into 64-byte aligned memory: an fp16 weight keeps two bytes per element) and the
//! schedule. Each [`Executor::run`] checks its inputs at the boundary, allocates one arena for
//! the intermediates and temporaries and one scratch area per thread, and calls the steps in
//! order; a step whose cost pays for it is split across threads by work item. An `Executor` is
//! `Send + Sync`: runs share only immutable code and constants, so several threads may run one
//! model at once.

use crate::{libcalls, Result, RuntimeError};
use f16c_core::abi::{KernelFn, Status};
use f16c_core::artifact::{Manifest, Slot, CONSTANT_ALIGN};
use f16c_core::{Data, Tensor, TensorType};
use std::any::Any;

/// Steps cheaper than this many operations run on one thread (handing work to the pool's
/// threads costs more).
pub const PARALLEL_MIN_COST: f64 = 2.0e6;

/// One part of a step for a pool thread: the kernel, its table, work items `begin..end`, its
/// scratch, the libcall table. The pointers stay valid until the step has collected every part.
struct Part {
    f: KernelFn,
    table: SendPtr<*mut u8>,
    begin: u64,
    end: u64,
    scratch: SendPtr<u8>,
    rt: SendPtr<usize>,
}

impl Part {
    /// Runs the part.
    ///
    /// # Safety
    /// Its pointers must be valid (the table's slots, scratch and libcall table of a live
    /// run) and no other part may write the same output elements.
    unsafe fn run(&self) -> i32 {
        // SAFETY: the caller's contract.
        unsafe { (self.f)(self.table.0, self.begin, self.end, self.scratch.0 as *mut u8, self.rt.0) }
    }
}

/// Threads kept for the life of an executor, so that a step split across threads costs a
/// message and a wake-up rather than spawning and joining threads (which, at tens of
/// microseconds per step, made two threads slower than one on a mobilenet's 73 kernels).
struct Pool {
    senders: Vec<std::sync::mpsc::Sender<Part>>,
    done: std::sync::mpsc::Receiver<i32>,
    handles: Vec<std::thread::JoinHandle<()>>,
}

impl Pool {
    fn new(threads: usize) -> Pool {
        let (done_tx, done) = std::sync::mpsc::channel();
        let (mut senders, mut handles) = (Vec::new(), Vec::new());
        for _ in 1..threads {
            let (tx, rx) = std::sync::mpsc::channel::<Part>();
            let done_tx = done_tx.clone();
            handles.push(std::thread::spawn(move || {
                while let Ok(p) = rx.recv() {
                    // SAFETY: the caller keeps every pointer valid until it has received this
                    // part's status (see `Executor::run`); parts write disjoint outputs.
                    let status = unsafe { p.run() };
                    if done_tx.send(status).is_err() {
                        break;
                    }
                }
            }));
            senders.push(tx);
        }
        Pool { senders, done, handles }
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        self.senders.clear();
        for h in self.handles.drain(..) {
            let _ = h.join();
        }
    }
}

/// The machine's available parallelism.
pub fn default_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// 64-byte aligned memory.
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Line([u8; 64]);

const _: () = assert!(CONSTANT_ALIGN == 64);

/// Zeroed, 64-byte aligned bytes.
pub struct Aligned(Vec<Line>);

impl Aligned {
    /// `bytes` zero bytes (at least one line).
    pub fn zeroed(bytes: usize) -> Aligned {
        Aligned(vec![Line([0; 64]); bytes.div_ceil(64).max(1)])
    }

    /// A copy of `b`.
    pub fn from_bytes(b: &[u8]) -> Aligned {
        let mut a = Aligned::zeroed(b.len());
        a.bytes_mut()[..b.len()].copy_from_slice(b);
        a
    }

    fn ptr(&self) -> *mut u8 {
        self.0.as_ptr() as *mut u8
    }

    fn bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: `Line` is 64 plain bytes; the vector holds `len * 64` initialised bytes.
        unsafe { std::slice::from_raw_parts_mut(self.0.as_mut_ptr() as *mut u8, self.0.len() * 64) }
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
    /// Per symbol of the manifest (`None` for functions no step calls directly).
    functions: Vec<Option<KernelFn>>,
    /// The libcall table the kernels call through (`rt`), built once.
    rt: Vec<usize>,
    threads: usize,
    /// With `F16C_PROFILE` set: per kernel, the time its steps took and how many runs there
    /// were; printed to standard error when the executor is dropped.
    profile: Option<std::sync::Mutex<(Vec<std::time::Duration>, usize)>>,
    /// The threads that run the other parts of split steps, made on first use. A run that
    /// finds them busy (another thread is running the model) spawns its own for the step.
    pool: std::sync::Mutex<Option<Pool>>,
    /// Keeps the code mapped (a JIT module, a loaded shared object).
    _code: Box<dyn Any + Send + Sync>,
}

// SAFETY: the function pointers point into code owned by `_code`, which lives as long as the
// executor and is never modified; constants are immutable after construction. Runs allocate
// their own mutable memory.
unsafe impl Send for Executor {}
unsafe impl Sync for Executor {}

impl Executor {
    /// An executor for `manifest` (already validated against `constants`) whose symbols resolve
    /// to `functions`; `code` keeps them alive.
    pub fn new(manifest: Manifest, constants: &[u8], functions: Vec<Option<KernelFn>>, code: Box<dyn Any + Send + Sync>, threads: usize) -> Result<Executor> {
        let bad = |m: String| RuntimeError::Load(m);
        if functions.len() != manifest.symbols.len() {
            return Err(bad(format!("{} functions for {} symbols", functions.len(), manifest.symbols.len())));
        }
        if let Some(s) = manifest.steps.iter().find(|s| functions[s.function].is_none()) {
            return Err(bad(format!("the code does not define '{}'", manifest.symbols[s.function])));
        }
        let ty = |d: &f16c_core::artifact::TensorDesc| d.ty().ok_or_else(|| bad(format!("unknown element type '{}'", d.dtype)));
        let inputs = manifest.inputs.iter().map(ty).collect::<Result<Vec<_>>>()?;
        let outputs = manifest.outputs.iter().map(|o| Ok((o.slot, ty(&o.ty)?))).collect::<Result<Vec<_>>>()?;
        let constants = manifest
            .slots
            .iter()
            .map(|s| match *s {
                Slot::Constant { offset, bytes } => Some(Aligned::from_bytes(&constants[offset..offset + bytes])),
                _ => None,
            })
            .collect();
        let profile = std::env::var_os("F16C_PROFILE").map(|_| std::sync::Mutex::new((vec![std::time::Duration::ZERO; manifest.kernels.len()], 0)));
        Ok(Executor { constants, manifest, inputs, outputs, functions, rt: libcalls::table(), threads: threads.max(1), profile, pool: std::sync::Mutex::new(None), _code: code })
    }

    /// The manifest (function name, types, layout, schedule).
    pub fn manifest(&self) -> &Manifest {
        &self.manifest
    }

    /// The function's argument types.
    pub fn inputs(&self) -> &[TensorType] {
        &self.inputs
    }

    /// Bytes of weights held (as stored, after packing and conversion).
    pub fn weight_bytes(&self) -> usize {
        self.manifest.slots.iter().map(|s| if let Slot::Constant { bytes, .. } = s { *bytes } else { 0 }).sum()
    }

    /// Sets the number of threads used by later runs.
    pub fn set_threads(&mut self, threads: usize) {
        self.threads = threads.max(1);
    }

    /// Runs the model. Inputs must match the function's arguments in count, shape and type.
    pub fn run(&self, inputs: &[Tensor]) -> Result<Vec<Tensor>> {
        let m = &self.manifest;
        f16c_core::tensor::check_inputs(&m.function, &self.inputs, inputs).map_err(RuntimeError::BadInput)?;
        let arena = Aligned::zeroed(m.arena_bytes);
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
        let mut scratch: Vec<Aligned> = vec![Aligned::zeroed(m.scratch_bytes)];
        let mut times = self.profile.as_ref().map(|_| vec![std::time::Duration::ZERO; m.kernels.len()]);
        for step in &m.steps {
            let started = times.as_ref().map(|_| std::time::Instant::now());
            let f = self.functions[step.function].expect("checked in new");
            let threads = if step.cost >= PARALLEL_MIN_COST { self.threads.min(step.work) } else { 1 };
            while scratch.len() < threads {
                scratch.push(Aligned::zeroed(m.scratch_bytes));
            }
            let status = if threads <= 1 {
                // SAFETY: the table holds a valid address for every slot the function uses,
                // each of the size the manifest says (inputs were checked above).
                unsafe { f(table.as_ptr(), 0, step.work as u64, scratch[0].ptr(), rt.as_ptr()) }
            } else {
                // Contiguous runs of work items, one per thread; this thread runs the first.
                let chunk = step.work.div_ceil(threads);
                let part = |t: usize| Part {
                    f,
                    table: SendPtr(table.as_ptr()),
                    begin: (t * chunk) as u64,
                    end: ((t + 1) * chunk).min(step.work) as u64,
                    scratch: SendPtr(scratch[t].ptr() as *const u8),
                    rt: SendPtr(rt.as_ptr()),
                };
                let (first, others): (Part, Vec<Part>) = (part(0), (1..threads).map(part).collect());
                // SAFETY (every `run` below): as above; the parts write disjoint output
                // elements, and each is finished before this step ends.
                let statuses: Vec<i32> = match self.pool.try_lock() {
                    Ok(mut pool) => {
                        if pool.as_ref().is_some_and(|p| p.senders.len() + 1 < threads) {
                            *pool = None;
                        }
                        let pool = pool.get_or_insert_with(|| Pool::new(self.threads));
                        let count = others.len();
                        let sent = pool.senders.iter().zip(others).map(|(tx, p)| tx.send(p).is_ok()).filter(|&ok| ok).count();
                        let mut statuses = vec![unsafe { first.run() }];
                        // Every part sent is waited for before the table, scratch or arena can go.
                        statuses.extend((0..sent).map(|_| pool.done.recv().unwrap_or(-1)));
                        if sent < count {
                            statuses.push(-1);
                        }
                        statuses
                    }
                    // Another run holds the kept threads: spawn this step's.
                    Err(_) => std::thread::scope(|s| {
                        let handles: Vec<_> = others.into_iter().map(|p| s.spawn(move || unsafe { p.run() })).collect();
                        let mine = unsafe { first.run() };
                        std::iter::once(mine).chain(handles.into_iter().map(|h| h.join().unwrap_or(-1))).collect()
                    }),
                };
                statuses.into_iter().find(|&s| s != Status::Ok as i32).unwrap_or(Status::Ok as i32)
            };
            if let (Some(times), Some(t0)) = (times.as_mut(), started) {
                times[step.kernel] += t0.elapsed();
            }
            if status != Status::Ok as i32 {
                let k = &m.kernels[step.kernel];
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
    /// Prints the kernel profile (`F16C_PROFILE`): kernels by time per run, slowest first.
    fn drop(&mut self) {
        let Some(profile) = self.profile.take() else { return };
        let (totals, runs) = profile.into_inner().unwrap_or_else(|e| e.into_inner());
        if runs == 0 {
            return;
        }
        let all: std::time::Duration = totals.iter().sum();
        let mut order: Vec<usize> = (0..totals.len()).collect();
        order.sort_by_key(|&k| std::cmp::Reverse(totals[k]));
        eprintln!("f16c profile of @{}: {runs} runs, {:.3} ms per run in kernels", self.manifest.function, all.as_secs_f64() * 1e3 / runs as f64);
        for k in order.into_iter().take_while(|&k| !totals[k].is_zero()) {
            let info = &self.manifest.kernels[k];
            let share = totals[k].as_secs_f64() / all.as_secs_f64().max(f64::MIN_POSITIVE);
            eprintln!("{:>10.4} ms {:>5.1}%  {:<28} {}", totals[k].as_secs_f64() * 1e3 / runs as f64, share * 100.0, info.name, info.location);
        }
    }
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
