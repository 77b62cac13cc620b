//! The GPU executor: runs a PTX artifact through the CUDA driver API, loaded at run time
//! (`cudarc` with dynamic loading: nothing CUDA is needed to build f16c, and a machine without
//! a driver gets an error, not a crash).
//!
//! On load, the driver JIT-compiles the PTX for the GPU present (a PTX failure comes back with
//! the driver's log) and the weights are uploaded once. Each [`GpuExecutor::run`] allocates one
//! device arena per the buffer plan, uploads the inputs, writes the device buffer table (one
//! device address per slot, the same slots as on the CPU), launches the steps in order on the
//! default stream with `(bufs, status)`, waits, checks the per-kernel status words (a non-zero
//! one is a located error naming the op) and downloads the results.

use crate::{Result, RuntimeError};
use cudarc::driver::sys;
use f16c_core::abi::Status;
use f16c_core::artifact::{Artifact, CodeFormat, Manifest, Slot};
use f16c_core::{Data, Tensor, TensorType};
use std::ffi::{c_void, CStr, CString};
use std::sync::Mutex;

fn gpu(m: impl Into<String>) -> RuntimeError {
    RuntimeError::Gpu(m.into())
}

/// Turns a driver result into an error naming what was being done.
fn check(r: sys::CUresult, what: &str) -> Result<()> {
    if r == sys::CUresult::CUDA_SUCCESS {
        return Ok(());
    }
    let mut s: *const std::ffi::c_char = std::ptr::null();
    // SAFETY: the driver is loaded (every caller went through `driver()`); `s` receives a
    // static string or stays null.
    unsafe { sys::cuGetErrorString(r, &mut s) };
    let text = if s.is_null() {
        format!("{r:?}")
    } else {
        // SAFETY: a NUL-terminated static string from the driver.
        unsafe { CStr::from_ptr(s) }.to_string_lossy().into_owned()
    };
    let hint = if r == sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY { " (the model does not fit in this GPU's memory)" } else { "" };
    Err(gpu(format!("CUDA: {what} failed: {text}{hint}")))
}

/// Loads the driver library and initialises it once; an error when there is none.
fn driver() -> Result<()> {
    static INIT: Mutex<Option<std::result::Result<(), String>>> = Mutex::new(None);
    let mut g = INIT.lock().unwrap_or_else(|e| e.into_inner());
    if g.is_none() {
        // SAFETY: only probes for the library.
        let present = unsafe { sys::is_culib_present() };
        *g = Some(if !present {
            Err("no CUDA driver on this machine (libcuda.so was not found): GPU artifacts need an NVIDIA GPU and its driver".to_string())
        } else {
            // SAFETY: the library is present; cuInit may be called more than once.
            check(unsafe { sys::cuInit(0) }, "initialising the driver").map_err(|e| e.to_string())
        });
    }
    g.clone().expect("set above").map_err(gpu)
}

/// A device allocation, freed on drop.
struct DeviceBuffer(sys::CUdeviceptr);

impl DeviceBuffer {
    fn new(bytes: usize, what: &str) -> Result<DeviceBuffer> {
        let mut p: sys::CUdeviceptr = 0;
        // SAFETY: the context is current (callers hold the executor's lock after binding it).
        check(unsafe { sys::cuMemAlloc_v2(&mut p, bytes.max(1)) }, &format!("allocating {bytes} bytes for {what}"))?;
        Ok(DeviceBuffer(p))
    }

    fn upload(&self, bytes: &[u8], what: &str) -> Result<()> {
        // SAFETY: the allocation holds at least `bytes.len()` bytes.
        check(unsafe { sys::cuMemcpyHtoD_v2(self.0, bytes.as_ptr() as *const c_void, bytes.len()) }, &format!("uploading {what}"))
    }
}

impl Drop for DeviceBuffer {
    fn drop(&mut self) {
        // SAFETY: allocated by cuMemAlloc and freed once.
        unsafe { sys::cuMemFree_v2(self.0) };
    }
}

/// A loaded GPU model. Runs are serialised (one context, one stream).
pub struct GpuExecutor {
    manifest: Manifest,
    inputs: Vec<TensorType>,
    outputs: Vec<(usize, TensorType)>,
    device_name: String,
    state: Mutex<State>,
    /// With [`crate::exec::profiling`] on: per kernel, the seconds its launches took (CUDA events between
    /// consecutive launches) and how many runs there were; printed on drop, as on the CPU.
    profile: Option<Mutex<(Vec<f64>, usize)>>,
}

struct State {
    dev: sys::CUdevice,
    ctx: sys::CUcontext,
    module: sys::CUmodule,
    functions: Vec<sys::CUfunction>,
    /// Per slot, its uploaded constant.
    constants: Vec<Option<DeviceBuffer>>,
}

// SAFETY: the raw driver handles are used only under the state's lock, with the context bound
// to the calling thread first.
unsafe impl Send for State {}

impl GpuExecutor {
    /// Loads a (validated) PTX artifact on GPU 0: JIT-compiles the PTX and uploads the weights.
    pub fn new(artifact: Artifact) -> Result<GpuExecutor> {
        let m = &artifact.manifest;
        if m.code_format != CodeFormat::Ptx {
            return Err(RuntimeError::Load(format!("this artifact is for {} ({:?} code), not a GPU", m.target, m.code_format)));
        }
        driver()?;
        let mut count = 0;
        // SAFETY: the driver is initialised.
        check(unsafe { sys::cuDeviceGetCount(&mut count) }, "counting GPUs")?;
        if count == 0 {
            return Err(gpu("the CUDA driver reports no GPU"));
        }
        let mut dev: sys::CUdevice = 0;
        // SAFETY: as above; ordinal 0 exists.
        check(unsafe { sys::cuDeviceGet(&mut dev, 0) }, "opening GPU 0")?;
        let mut name = [0 as std::ffi::c_char; 256];
        // SAFETY: the buffer holds 256 bytes.
        check(unsafe { sys::cuDeviceGetName(name.as_mut_ptr(), 256, dev) }, "reading the GPU's name")?;
        // SAFETY: the driver wrote a NUL-terminated name.
        let device_name = unsafe { CStr::from_ptr(name.as_ptr()) }.to_string_lossy().into_owned();
        let (mut major, mut minor) = (0, 0);
        // SAFETY: as above.
        check(unsafe { sys::cuDeviceComputeCapability(&mut major, &mut minor, dev) }, "reading the compute capability")?;
        let wanted: u32 = m.target.strip_prefix("sm_").and_then(|s| s.parse().ok()).unwrap_or(0);
        if ((major * 10 + minor) as u32) < wanted {
            return Err(RuntimeError::Load(format!(
                "this artifact is for {} but {device_name} is sm_{major}{minor}: recompile with --target=sm_{major}{minor}",
                m.target
            )));
        }
        let mut ctx: sys::CUcontext = std::ptr::null_mut();
        // SAFETY: a valid device; the primary context is shared with other users of the device.
        check(unsafe { sys::cuDevicePrimaryCtxRetain(&mut ctx, dev) }, "creating a context")?;
        // SAFETY: a valid context.
        check(unsafe { sys::cuCtxSetCurrent(ctx) }, "binding the context")?;

        let ptx = CString::new(artifact.code.clone()).map_err(|_| RuntimeError::Load("the PTX contains a NUL byte".into()))?;
        let mut log = vec![0u8; 16 * 1024];
        let mut options = [sys::CUjit_option::CU_JIT_ERROR_LOG_BUFFER, sys::CUjit_option::CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES];
        let mut values = [log.as_mut_ptr() as *mut c_void, log.len() as *mut c_void];
        let mut module: sys::CUmodule = std::ptr::null_mut();
        // SAFETY: NUL-terminated PTX; the option arrays have equal lengths; the log buffer
        // outlives the call.
        let r = unsafe { sys::cuModuleLoadDataEx(&mut module, ptx.as_ptr() as *const c_void, 2, options.as_mut_ptr(), values.as_mut_ptr()) };
        if r != sys::CUresult::CUDA_SUCCESS {
            let text = String::from_utf8_lossy(&log[..log.iter().position(|&b| b == 0).unwrap_or(0)]).into_owned();
            let base = check(r, "JIT-compiling the PTX").expect_err("not a success");
            return Err(gpu(format!("{base}\n{text}")));
        }
        let mut functions = Vec::with_capacity(m.symbols.len());
        for s in &m.symbols {
            let c = CString::new(s.as_str()).map_err(|_| RuntimeError::Load("a symbol contains a NUL byte".into()))?;
            let mut f: sys::CUfunction = std::ptr::null_mut();
            // SAFETY: a loaded module and a NUL-terminated name.
            check(unsafe { sys::cuModuleGetFunction(&mut f, module, c.as_ptr()) }, &format!("finding kernel '{s}'"))?;
            functions.push(f);
        }
        let mut constants = Vec::with_capacity(m.slots.len());
        for (i, s) in m.slots.iter().enumerate() {
            constants.push(match *s {
                Slot::Constant { offset, bytes, widen } => {
                    let stored = &artifact.constants[offset..offset + bytes];
                    let b = DeviceBuffer::new(s.run_bytes(), &format!("weight slot {i}"))?;
                    match widen {
                        None => b.upload(stored, "a weight")?,
                        Some(_) => b.upload(&crate::exec::Aligned::constant(stored, widen).bytes_mut()[..s.run_bytes()], "a weight")?,
                    }
                    Some(b)
                }
                _ => None,
            });
        }
        let ty = |d: &f16c_core::artifact::TensorDesc| d.ty().ok_or_else(|| RuntimeError::Load(format!("unknown element type '{}'", d.dtype)));
        let inputs = m.inputs.iter().map(ty).collect::<Result<Vec<_>>>()?;
        let outputs = m.outputs.iter().map(|o| Ok((o.slot, ty(&o.ty)?))).collect::<Result<Vec<_>>>()?;
        let Artifact { manifest, .. } = artifact;
        let profile = crate::exec::profiling().then(|| Mutex::new((vec![0.0; manifest.kernels.len()], 0)));
        Ok(GpuExecutor { manifest, inputs, outputs, device_name, state: Mutex::new(State { dev, ctx, module, functions, constants }), profile })
    }

    /// The manifest.
    pub fn manifest(&self) -> &Manifest {
        &self.manifest
    }

    /// The GPU's name.
    pub fn device_name(&self) -> &str {
        &self.device_name
    }

    /// The function's argument types.
    pub fn inputs(&self) -> &[TensorType] {
        &self.inputs
    }

    /// Runs the model on the GPU.
    pub fn run(&self, inputs: &[Tensor]) -> Result<Vec<Tensor>> {
        self.run_timed(inputs).map(|(o, _)| o)
    }

    /// Runs the model and also returns the milliseconds its kernels took on the GPU (CUDA events
    /// around the launches: no allocation, upload or download included).
    pub fn run_timed(&self, inputs: &[Tensor]) -> Result<(Vec<Tensor>, f64)> {
        let m = &self.manifest;
        f16c_core::tensor::check_inputs(&m.function, &self.inputs, inputs).map_err(RuntimeError::BadInput)?;
        let state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        // SAFETY: a valid context, bound to this thread for the run.
        check(unsafe { sys::cuCtxSetCurrent(state.ctx) }, "binding the context")?;
        let arena = DeviceBuffer::new(m.arena_bytes, "the arena")?;
        let mut uploaded = Vec::with_capacity(inputs.len());
        for (k, t) in inputs.iter().enumerate() {
            let b = DeviceBuffer::new(t.ty().byte_size(), &format!("input #{k}"))?;
            b.upload(&t.data().to_le_bytes(), &format!("input #{k}"))?;
            uploaded.push(b);
        }
        let table: Vec<u64> = m
            .slots
            .iter()
            .zip(&state.constants)
            .map(|(s, c)| match *s {
                Slot::Unused => 0,
                Slot::Input(k) => uploaded[k].0,
                Slot::Constant { .. } => c.as_ref().map_or(0, |b| b.0),
                Slot::Arena { offset, .. } => arena.0 + offset as u64,
            })
            .collect();
        let table_bytes: Vec<u8> = table.iter().flat_map(|a| a.to_le_bytes()).collect();
        let bufs = DeviceBuffer::new(table_bytes.len(), "the buffer table")?;
        bufs.upload(&table_bytes, "the buffer table")?;
        let status = DeviceBuffer::new(4 * m.kernels.len(), "the status words")?;
        status.upload(&vec![0u8; 4 * m.kernels.len()], "the status words")?;
        let (start, stop) = (Event::new()?, Event::new()?);
        start.record()?;
        // Profiling: one more event after each launch.
        let step_events = match self.profile {
            Some(_) => m.steps.iter().map(|_| Event::new()).collect::<Result<Vec<_>>>()?,
            None => Vec::new(),
        };
        for (i, step) in m.steps.iter().enumerate() {
            let l = step.launch.expect("validated: GPU steps have a launch");
            let (mut a0, mut a1) = (bufs.0, status.0);
            let mut params = [&mut a0 as *mut u64 as *mut c_void, &mut a1 as *mut u64 as *mut c_void];
            // SAFETY: a function of the loaded module taking two pointers; the parameter array
            // outlives the call; dimensions were validated with the manifest.
            let r = unsafe {
                sys::cuLaunchKernel(
                    state.functions[step.function],
                    l.grid[0],
                    l.grid[1],
                    l.grid[2],
                    l.block[0],
                    l.block[1],
                    l.block[2],
                    // The kernels' shared memory is static (declared in the PTX): no dynamic
                    // shared memory on top of it.
                    0,
                    std::ptr::null_mut(),
                    params.as_mut_ptr(),
                    std::ptr::null_mut(),
                )
            };
            check(r, &format!("launching '{}'", m.symbols[step.function]))?;
            if let Some(e) = step_events.get(i) {
                e.record()?;
            }
        }
        stop.record()?;
        // SAFETY: a bound context.
        check(unsafe { sys::cuCtxSynchronize() }, "running the kernels")?;
        let ms = start.ms_to(&stop)?;
        if let Some(profile) = &self.profile {
            let mut p = profile.lock().unwrap_or_else(|e| e.into_inner());
            let mut before = &start;
            for (step, e) in m.steps.iter().zip(&step_events) {
                p.0[step.kernel] += before.ms_to(e)? as f64 * 1e-3;
                before = e;
            }
            p.1 += 1;
        }
        let codes = download_at(status.0, 4 * m.kernels.len())?;
        for (k, c) in codes.chunks_exact(4).enumerate() {
            let code = i32::from_le_bytes([c[0], c[1], c[2], c[3]]);
            if code != Status::Ok as i32 {
                let info = &m.kernels[k];
                return Err(RuntimeError::Eval { location: info.location.clone(), op: info.op.clone(), message: Status::describe(code) });
            }
        }
        let outputs = self
            .outputs
            .iter()
            .map(|(slot, ty)| {
                let bytes = download_at(table[*slot], ty.byte_size())?;
                let data = Data::from_le_bytes(ty.dtype, &bytes).expect("whole elements");
                Ok(Tensor::new(ty.shape.clone(), data).expect("type's element count"))
            })
            .collect::<Result<Vec<_>>>()?;
        Ok((outputs, ms as f64))
    }
}

/// A CUDA event on the default stream, destroyed on drop.
struct Event(sys::CUevent);

impl Event {
    fn new() -> Result<Event> {
        let mut e: sys::CUevent = std::ptr::null_mut();
        // SAFETY: a bound context; default flags.
        check(unsafe { sys::cuEventCreate(&mut e, 0) }, "creating an event")?;
        Ok(Event(e))
    }

    /// Records the event after the work launched so far.
    fn record(&self) -> Result<()> {
        // SAFETY: a valid event, recorded on the default stream.
        check(unsafe { sys::cuEventRecord(self.0, std::ptr::null_mut()) }, "recording an event")
    }

    /// Milliseconds from `self` to `later`, both recorded and completed.
    fn ms_to(&self, later: &Event) -> Result<f32> {
        let mut ms = 0f32;
        // SAFETY: both events were recorded and have completed (the caller synchronised).
        check(unsafe { sys::cuEventElapsedTime(&mut ms, self.0, later.0) }, "timing the kernels")?;
        Ok(ms)
    }
}

impl Drop for Event {
    fn drop(&mut self) {
        // SAFETY: created by cuEventCreate, destroyed once.
        unsafe { sys::cuEventDestroy_v2(self.0) };
    }
}

fn download_at(p: sys::CUdeviceptr, bytes: usize) -> Result<Vec<u8>> {
    let mut out = vec![0u8; bytes];
    // SAFETY: `p` addresses at least `bytes` bytes of device memory (validated manifest).
    check(unsafe { sys::cuMemcpyDtoH_v2(out.as_mut_ptr() as *mut c_void, p, bytes) }, "downloading a result")?;
    Ok(out)
}

impl Drop for GpuExecutor {
    fn drop(&mut self) {
        if let Some(profile) = self.profile.take() {
            let (seconds, runs) = profile.into_inner().unwrap_or_else(|e| e.into_inner());
            crate::exec::print_profile(&self.manifest, &seconds, runs);
        }
        let state = self.state.get_mut().unwrap_or_else(|e| e.into_inner());
        // SAFETY: bind the context so that the weights are freed in it; then the module and our
        // reference to the primary context are released, once.
        unsafe { sys::cuCtxSetCurrent(state.ctx) };
        state.constants.clear();
        unsafe {
            sys::cuModuleUnload(state.module);
            sys::cuDevicePrimaryCtxRelease_v2(state.dev);
        }
    }
}
