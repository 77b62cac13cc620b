//! # f16c for Python: the native half of the `f16c` package
//!
//! `python/f16c/__init__.py` is the API users see (`f16c.compile`, `f16c.load`, `f16c.check`,
//! `f16c.from_torch`, `f16c.from_onnx`); this module is what it calls. It runs the same compile
//! driver as `f16c compile` (so a model compiled here and saved is the artifact the command line
//! writes for the same options), the Cranelift JIT for `target="x86_64"`, and the thin runtime's
//! loader for artifacts.
//!
//! The boundary is kept plain: tensors cross it as `(dtype, shape, bytes)` triples (the Python
//! side turns NumPy arrays into contiguous byte views and back), reports and checks as JSON
//! text. Compiling and running release the GIL. A located diagnostic becomes
//! `f16c.CompileError` carrying the rendered text, a bad input `f16c.InputError` (a
//! `ValueError`) naming the argument, a failure while running `f16c.RunError`; a panic, which
//! would be a bug of f16c, is caught and raised as `f16c.InternalError` rather than crossing
//! the boundary.

#![deny(missing_docs)]

use f16c_compiler::driver;
use f16c_compiler::policy::Precision;
use f16c_compiler::report::Report;
use f16c_compiler::target::{BackendName, Cpu, Target};
use f16c_core::tensor::{Data, Tensor};
use f16c_core::types::{DType, TensorType};
use f16c_dialect::{Diagnostics, Graph};
use f16c_runtime::loader::{self, Loaded};
use f16c_runtime::RuntimeError;
use pyo3::buffer::PyBuffer;
use pyo3::create_exception;
use pyo3::exceptions::{PyException, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyByteArray;
use std::collections::BTreeMap;
use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};

create_exception!(_native, CompileError, PyException, "A model could not be compiled: the located diagnostics, rendered as f16c prints them.");
create_exception!(_native, InputError, PyValueError, "Inputs that do not match the model's arguments (count, shape or element type).");
create_exception!(_native, RunError, PyRuntimeError, "A model failed while running, or cannot run on this machine.");
create_exception!(_native, InternalError, PyRuntimeError, "A bug of f16c (a panic caught at the Python boundary): please report it.");

/// What a Python-facing failure is, before it becomes an exception.
enum Failure {
    Compile(String),
    Input(String),
    Run(String),
    Usage(String),
}

impl From<Failure> for PyErr {
    fn from(f: Failure) -> PyErr {
        match f {
            Failure::Compile(m) => CompileError::new_err(m),
            Failure::Input(m) => InputError::new_err(m),
            Failure::Run(m) => RunError::new_err(m),
            Failure::Usage(m) => PyValueError::new_err(m),
        }
    }
}

impl From<RuntimeError> for Failure {
    fn from(e: RuntimeError) -> Failure {
        match e {
            RuntimeError::BadInput(m) => Failure::Input(m),
            e => Failure::Run(e.to_string()),
        }
    }
}

/// Runs `work` without the GIL, turning a panic into [`InternalError`].
fn detached<T: Send>(py: Python<'_>, work: impl FnOnce() -> Result<T, Failure> + Send) -> PyResult<T> {
    let outcome = py.detach(|| std::panic::catch_unwind(AssertUnwindSafe(work)));
    match outcome {
        Ok(r) => r.map_err(PyErr::from),
        Err(p) => {
            let what = p.downcast_ref::<String>().cloned().or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string())).unwrap_or_default();
            Err(InternalError::new_err(format!("internal error (a bug in f16c, please report it): {what}")))
        }
    }
}

/// Element types by their MLIR names, as the Python side spells them.
fn dtype(name: &str) -> Result<DType, Failure> {
    Ok(match name {
        "f32" => DType::F32,
        "f16" => DType::F16,
        "bf16" => DType::BF16,
        "f64" => DType::F64,
        "i1" => DType::I1,
        "i8" => DType::I8,
        "i16" => DType::I16,
        "i32" => DType::I32,
        "i48" => DType::I48,
        "i64" => DType::I64,
        other => return Err(Failure::Input(format!("element type '{other}' has no f16c equivalent"))),
    })
}

/// `(shape, dtype name)` of a tensor type, as `Model.inputs` lists it.
fn spec(t: &TensorType) -> (Vec<usize>, String) {
    (t.shape.clone(), t.dtype.to_string())
}

/// One input as the Python side passes it: its position, element type, shape and bytes.
type RawInput = (String, Vec<usize>, Vec<u8>);

/// An array as the Python side passes it: element type, shape, a byte view.
type PyInput = (String, Vec<usize>, PyBuffer<u8>);

/// The arrays' bytes copied out of Python (done holding the GIL, before the work that
/// releases it).
fn copied(py: Python<'_>, inputs: Vec<PyInput>) -> PyResult<Vec<RawInput>> {
    inputs.into_iter().map(|(d, s, b)| Ok((d, s, b.to_vec(py)?))).collect()
}

/// One raw input as a tensor; `what` names it in errors (`input #0 of '@forward'`).
fn raw_tensor(what: &str, (name, shape, bytes): RawInput) -> Result<Tensor, Failure> {
    let data = Data::from_le_bytes(dtype(&name)?, &bytes).ok_or_else(|| Failure::Input(format!("{what}: {} bytes do not hold {name} elements", bytes.len())))?;
    Tensor::new(shape, data).map_err(|e| Failure::Input(format!("{what}: {e}")))
}

/// Tensors from the Python side's raw inputs, each fitted to its argument (an f32 array for an
/// f16 or bf16 argument is rounded to nearest even, as `f16c run` does with `.npy` files) and
/// checked against the arguments, with errors naming the argument.
fn tensors(function: &str, raw: Vec<RawInput>, want: &[TensorType]) -> Result<Vec<Tensor>, Failure> {
    let mut out = Vec::with_capacity(raw.len());
    for (k, input) in raw.into_iter().enumerate() {
        let t = raw_tensor(&format!("input #{k} of '@{function}'"), input)?;
        out.push(match want.get(k) {
            Some(w) => f16c_runtime::npy::fit(t, w),
            None => t,
        });
    }
    f16c_core::tensor::check_inputs(function, want, &out).map_err(Failure::Input)?;
    Ok(out)
}

/// A result for the Python side: element type, shape and bytes (bf16 widened to f32, exactly,
/// since NumPy has no bf16; i48 as i64).
fn raw_output(t: Tensor) -> (String, Vec<usize>, Vec<u8>) {
    let shape = t.shape().to_vec();
    let (name, bytes) = match t.data() {
        Data::BF16(v) => ("f32".to_string(), Data::F32(v.iter().map(|x| x.to_f32()).collect()).to_le_bytes()),
        Data::I48(v) => ("i64".to_string(), Data::I64(v.clone()).to_le_bytes()),
        d => (d.dtype().to_string(), d.to_le_bytes()),
    };
    (name, shape, bytes)
}

/// What runs a compiled model.
enum Body {
    /// The Cranelift JIT (`target="x86_64"`, the default backend); keeps the compiled graph so
    /// that `save` can write the artifact `f16c compile` would.
    Jit { model: f16c_jit::Model, graph: Box<Graph> },
    /// An artifact loaded by the thin runtime (`--backend=llvm`, or `f16c.load`).
    Loaded { model: Loaded, bytes: Option<Vec<u8>>, path: Option<PathBuf> },
    /// The reference interpreter (`target="reference"`).
    Reference(Box<Graph>),
    /// An artifact for another machine (a GPU without a driver here, AArch64): it can be saved,
    /// not run; the string says why.
    Elsewhere { bytes: Vec<u8>, why: String },
}

/// A compiled or loaded model.
#[pyclass(frozen, module = "f16c._native")]
struct Model {
    body: Body,
    function: String,
    target: String,
    inputs: Vec<TensorType>,
    outputs: Vec<TensorType>,
    /// The precision report as JSON and as the table `--emit=report` prints (compiled models).
    report: Option<(String, String)>,
}

impl Model {
    /// Runs checked, fitted inputs on whatever runs this model.
    fn run_tensors(&self, inputs: &[Tensor]) -> Result<Vec<Tensor>, Failure> {
        Ok(match &self.body {
            Body::Jit { model, .. } => model.run(inputs).map_err(|e| match e {
                f16c_jit::JitError::Run(r) => Failure::from(r),
                e => Failure::Run(e.to_string()),
            })?,
            Body::Loaded { model, .. } => model.run(inputs)?,
            Body::Reference(g) => f16c_dialect::reference::run(g, inputs).map_err(|e| Failure::Run(e.to_string()))?,
            Body::Elsewhere { why, .. } => return Err(Failure::Run(why.clone())),
        })
    }
}

#[pymethods]
impl Model {
    /// Runs the model on raw inputs; returns raw outputs.
    fn run<'py>(&self, py: Python<'py>, inputs: Vec<PyInput>) -> PyResult<Vec<(String, Vec<usize>, Bound<'py, PyByteArray>)>> {
        let raw = copied(py, inputs)?;
        let outputs = detached(py, || {
            let inputs = tensors(&self.function, raw, &self.inputs)?;
            Ok(self.run_tensors(&inputs)?.into_iter().map(raw_output).collect::<Vec<_>>())
        })?;
        Ok(outputs.into_iter().map(|(d, s, b)| (d, s, PyByteArray::new(py, &b))).collect())
    }

    /// Median seconds of one run over `n` runs on these inputs, timed inside Rust: the host
    /// API with no Python in the loop (the inputs converted once, before timing). The baseline
    /// `scripts/bench_python.py` subtracts from a Python call's time.
    fn time_native(&self, py: Python<'_>, inputs: Vec<PyInput>, n: usize) -> PyResult<f64> {
        let raw = copied(py, inputs)?;
        detached(py, || {
            if !matches!(self.body, Body::Jit { .. } | Body::Loaded { .. }) {
                return Err(Failure::Usage("time_native times x86-64 models (JIT or artifact)".into()));
            }
            let inputs = tensors(&self.function, raw, &self.inputs)?;
            let mut times = Vec::with_capacity(n.max(1));
            for _ in 0..n.max(1) {
                let t = std::time::Instant::now();
                drop(self.run_tensors(&inputs)?);
                times.push(t.elapsed().as_secs_f64());
            }
            times.sort_by(f64::total_cmp);
            Ok(times[times.len() / 2])
        })
    }

    /// `(shape, dtype)` of each argument.
    #[getter]
    fn inputs(&self) -> Vec<(Vec<usize>, String)> {
        self.inputs.iter().map(spec).collect()
    }

    /// `(shape, dtype)` of each result.
    #[getter]
    fn outputs(&self) -> Vec<(Vec<usize>, String)> {
        self.outputs.iter().map(spec).collect()
    }

    /// The function's name.
    #[getter]
    fn function(&self) -> &str {
        &self.function
    }

    /// The target it was compiled for.
    #[getter]
    fn target(&self) -> &str {
        &self.target
    }

    /// The precision report: `(json, table)`, or `None` for a loaded artifact.
    fn report(&self) -> Option<(String, String)> {
        self.report.clone()
    }

    /// Bytes of weights the running model holds.
    #[getter]
    fn weight_bytes(&self) -> usize {
        match &self.body {
            Body::Jit { model, .. } => model.weight_bytes(),
            Body::Loaded { model: Loaded::Cpu(e), .. } => e.weight_bytes(),
            _ => 0,
        }
    }

    /// Writes the artifact (`f16c compile -o`'s file for the same options) to `path`.
    fn save(&self, py: Python<'_>, path: PathBuf) -> PyResult<()> {
        detached(py, || {
            let bytes = match &self.body {
                Body::Jit { graph, .. } => {
                    let backend = driver::backend_for(Target::X86_64).map_err(|d| Failure::Compile(d.to_string()))?;
                    driver::artifact_with(graph, backend).map_err(|d| Failure::Compile(d.to_string()))?.to_bytes()
                }
                Body::Loaded { bytes: Some(b), .. } | Body::Elsewhere { bytes: b, .. } => b.clone(),
                Body::Loaded { path: Some(p), .. } => std::fs::read(p).map_err(|e| Failure::Run(format!("cannot read '{}': {e}", p.display())))?,
                Body::Loaded { .. } => return Err(Failure::Usage("this model has no artifact to save".into())),
                Body::Reference(_) => return Err(Failure::Usage("target='reference' runs the interpreter and has no artifact; compile for x86_64 (or another target) to save".into())),
            };
            std::fs::write(&path, bytes).map_err(|e| Failure::Run(format!("cannot write '{}': {e}", path.display())))
        })
    }
}

/// Compile options as the Python side passes them (a dict).
#[derive(FromPyObject)]
#[pyo3(from_item_all)]
struct Options {
    target: String,
    precision: String,
    policy: String,
    backend: Option<String>,
    cpu: Option<String>,
    threads: Option<usize>,
    function: Option<String>,
    fold_batch_norm: bool,
    io_types: String,
    keep_f32: Option<String>,
    strict: bool,
    accumulate: String,
}

/// The driver's options (the command line's `precision::options`).
fn driver_options(o: &Options) -> Result<driver::Options, Failure> {
    let target = Target::parse(&o.target).ok_or_else(|| Failure::Usage(format!("target='{}': not a target f16c knows ({})", o.target, Target::NAMES.join(", "))))?;
    let precision = Precision::parse(&o.precision).ok_or_else(|| Failure::Usage(format!("precision='{}': fp16, bf16 or fp32", o.precision)))?;
    if !matches!(o.io_types.as_str(), "f32" | "low") {
        return Err(Failure::Usage(format!("io_types='{}': f32 or low", o.io_types)));
    }
    if !matches!(o.accumulate.as_str(), "f32" | "f16") {
        return Err(Failure::Usage(format!("accumulate='{}': f32 or f16", o.accumulate)));
    }
    Ok(driver::Options {
        target,
        precision,
        policy: o.policy.clone(),
        keep_f32: o.keep_f32.clone(),
        io_low: o.io_types == "low",
        strict: o.strict,
        annotate_fp32: true,
        f16_accumulate: o.accumulate == "f16",
        fold_batch_norm: o.fold_batch_norm,
    })
}

/// Parses `source`, chooses the function and prepares the module (canonicalize,
/// fold-batch-norm, assign-precision, insert-casts; [`driver::compile`], the module before
/// precision assignment kept), or the rendered diagnostics that stopped it.
fn prepare(source: &str, file: &str, options: &driver::Options, function: Option<&str>, calibration: &[Tensor]) -> Result<driver::Compilation, Failure> {
    let render = |d: Diagnostics| Failure::Compile(d.render(Some(source)));
    let module = f16c_dialect::import::parse_module(source, file).map_err(render)?;
    driver::compile(module, options, function, calibration, true).map_err(|e| match e {
        driver::CompileError::Diagnostics(d) => render(d),
        // Chosen here by a keyword argument, not the command line's option.
        driver::CompileError::Function(m) => Failure::Usage(format!("{file}: {}", m.message("function=NAME"))),
        driver::CompileError::Usage(m) => Failure::Compile(m),
    })
}

/// Calibration tensors from raw arrays (no argument types to fit them to).
fn calibration(raw: Vec<RawInput>) -> Result<Vec<Tensor>, Failure> {
    raw.into_iter().enumerate().map(|(k, input)| raw_tensor(&format!("calibration input #{k}"), input)).collect()
}

/// Compiles MLIR text; the Python side reads files.
#[pyfunction]
#[pyo3(signature = (source, file, options, calibrate))]
fn compile(py: Python<'_>, source: String, file: String, options: Options, calibrate: Vec<PyInput>) -> PyResult<Model> {
    let calibrate = copied(py, calibrate)?;
    detached(py, move || {
        let o = driver_options(&options)?;
        let threads = options.threads.unwrap_or_else(f16c_jit::default_threads);
        if threads == 0 {
            return Err(Failure::Usage("threads must be at least 1".into()));
        }
        // Fail before any work when the target has no code generator.
        let name = options.backend.as_deref().map(|b| BackendName::parse(b).ok_or_else(|| Failure::Usage(format!("backend '{b}': cranelift or llvm")))).transpose()?;
        let cpu = options.cpu.as_deref().map(|c| Cpu::parse(c).ok_or_else(|| Failure::Usage(format!("cpu '{c}': one of {}", Cpu::names().join(", "))))).transpose()?;
        let backend = if o.target == Target::Reference {
            None
        } else {
            Some(driver::backend_named(o.target, name, cpu).map_err(|d| Failure::Usage(d.to_string()))?)
        };
        let mut compiled = prepare(&source, &file, &o, options.function.as_deref(), &calibration(calibrate)?)?;
        let g = compiled.graph();
        let settings: BTreeMap<String, String> =
            [("target", &options.target), ("precision", &options.precision), ("policy", &options.policy), ("io-types", &options.io_types)].iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        let report = Report::build(&file, settings, compiled.graph_before().expect("kept"), g, &compiled.prepared.stats);
        let report = Some((report.to_json(), report.to_table()));
        compiled.before = None;
        let g = compiled.graph();
        let types = |ids: &[f16c_dialect::NodeId]| ids.iter().filter_map(|&i| g.tensor_ty(i).cloned()).collect::<Vec<_>>();
        let (inputs, outputs) = (types(g.inputs()), types(g.outputs()));
        let render = |d: Diagnostics| Failure::Compile(d.render(Some(&source)));
        let body = match backend {
            None => Body::Reference(Box::new(g.clone())),
            Some(_) if o.target == Target::X86_64 && name != Some(BackendName::Llvm) => {
                let jit_options = f16c_jit::CompileOptions { cpu, ..f16c_jit::CompileOptions::default() }.backend_options().map_err(|e| Failure::Usage(e.to_string()))?;
                let model = f16c_jit::Model::compile_graph_with(g, threads, &jit_options).map_err(|e| match e {
                    f16c_jit::JitError::Diagnostics(d) => render(d),
                    e => Failure::Compile(e.to_string()),
                })?;
                Body::Jit { model, graph: Box::new(g.clone()) }
            }
            Some(b) => {
                let artifact = driver::artifact_with(g, b).map_err(render)?;
                let bytes = artifact.to_bytes();
                match loader::load_any(artifact, threads) {
                    Ok(model) => Body::Loaded { model, bytes: Some(bytes), path: None },
                    Err(e) => Body::Elsewhere { bytes, why: format!("compiled for {}, which cannot run here: {e}; save() it and run it with f16c-run there", o.target) },
                }
            }
        };
        Ok(Model { body, function: g.name.clone(), target: options.target.clone(), inputs, outputs, report })
    })
}

/// Loads an artifact with the thin runtime.
#[pyfunction]
#[pyo3(signature = (path, threads=None))]
fn load(py: Python<'_>, path: PathBuf, threads: Option<usize>) -> PyResult<Model> {
    detached(py, move || {
        let threads = threads.unwrap_or_else(f16c_jit::default_threads);
        if threads == 0 {
            return Err(Failure::Usage("threads must be at least 1".into()));
        }
        let model = loader::open(Path::new(&path), threads)?;
        let m = model.manifest();
        let ty = |d: &f16c_core::artifact::TensorDesc| d.ty().ok_or_else(|| Failure::Run(format!("'{}': an argument or result type this runtime cannot read", path.display())));
        let inputs = m.inputs.iter().map(ty).collect::<Result<Vec<_>, _>>()?;
        let outputs = m.outputs.iter().map(|o| ty(&o.ty)).collect::<Result<Vec<_>, _>>()?;
        let (function, target) = (m.function.clone(), m.target.clone());
        Ok(Model { body: Body::Loaded { model, bytes: None, path: Some(path) }, function, target, inputs, outputs, report: None })
    })
}

/// `f16c check --fix` on `samples` (input sets): the search's result as JSON, the policy file's
/// text among it.
#[pyfunction]
#[pyo3(signature = (source, file, options, samples, tolerance, metric))]
fn fix(py: Python<'_>, source: String, file: String, options: Options, samples: Vec<Vec<PyInput>>, tolerance: f64, metric: String) -> PyResult<String> {
    let samples: Vec<Vec<RawInput>> = samples.into_iter().map(|set| copied(py, set)).collect::<PyResult<_>>()?;
    detached(py, move || {
        use f16c_compiler::fix::{self, Metric};
        let metric = Metric::parse(&metric).ok_or_else(|| Failure::Usage(format!("metric='{metric}': one of {}", Metric::NAMES.join(", "))))?;
        let o = driver_options(&options)?;
        let compiled = prepare(&source, &file, &o, options.function.as_deref(), &[])?;
        let g = compiled.graph_before().expect("kept");
        let want: Vec<TensorType> = g.inputs().iter().filter_map(|&i| g.tensor_ty(i).cloned()).collect();
        let sets = samples.into_iter().map(|raw| tensors(&g.name, raw, &want)).collect::<Result<Vec<_>, _>>()?;
        let threads = options.threads.unwrap_or_else(f16c_jit::default_threads);
        let cache = f16c_compiler::backend::cranelift::CodeCache::default();
        let runner = |g: &Graph, s: &[Vec<Tensor>]| f16c_jit::run_samples(g, s, threads, &cache);
        let r = fix::fix(g, &o, &sets, metric, tolerance, &runner).map_err(|e| match e {
            fix::FixError::Usage(m) => Failure::Usage(m),
            e => Failure::Run(e.to_string()),
        })?;
        let ops: Vec<serde_json::Value> = r
            .candidates
            .iter()
            .enumerate()
            .map(|(i, c)| {
                serde_json::json!({"id": c.id.to_string(), "op": c.op, "location": c.location.to_string(), "local": number(c.local),
                    "carried": number(c.carried), "flops": c.flops, "kept_f32": i < r.kept})
            })
            .collect();
        let grid = |e: &Vec<Vec<f64>>| e.iter().map(|s| s.iter().map(|&x| number(x)).collect::<Vec<_>>()).collect::<Vec<_>>();
        Ok(serde_json::json!({
            "metric": metric.name(), "tolerance": tolerance, "candidates": ops, "kept": r.kept, "policy": r.policy.to_toml(),
            "errors": grid(&r.errors), "all_low_errors": grid(&r.all_low_errors), "low_ops": [r.low_ops.0, r.low_ops.1],
            "low_flops": [r.low_flops.0, r.low_flops.1], "f32_contraction_flops": [r.f32_contraction_flops.0, r.f32_contraction_flops.1],
            "weight_bytes": [r.weight_bytes.0, r.weight_bytes.1], "runs": r.runs, "seconds": r.time.as_secs_f64(),
        })
        .to_string())
    })
}

/// `f16c check`: the per-op error of the mixed-precision graph against f32 on `inputs`, as JSON.
#[pyfunction]
#[pyo3(signature = (source, file, options, inputs, tolerance))]
fn check(py: Python<'_>, source: String, file: String, options: Options, inputs: Vec<PyInput>, tolerance: f64) -> PyResult<String> {
    let raw = copied(py, inputs)?;
    detached(py, move || {
        if !tolerance.is_finite() || tolerance < 0.0 {
            return Err(Failure::Usage(format!("tolerance={tolerance}: the tolerance must be a finite number >= 0")));
        }
        let o = driver_options(&options)?;
        let compiled = prepare(&source, &file, &o, options.function.as_deref(), &[])?;
        let (f32_graph, mixed) = (compiled.graph_before().expect("kept"), compiled.graph());
        let want: Vec<TensorType> = f32_graph.inputs().iter().filter_map(|&i| f32_graph.tensor_ty(i).cloned()).collect();
        let inputs = tensors(&f32_graph.name, raw, &want)?;
        let result = f16c_compiler::check::check(f32_graph, mixed, &inputs, tolerance).map_err(|e| Failure::Run(e.to_string()))?;
        let ops: Vec<serde_json::Value> = result
            .ops
            .iter()
            .map(|c| {
                serde_json::json!({
                    "id": c.id.to_string(),
                    "op": c.op,
                    "location": c.location.to_string(),
                    "dtype": c.dtype.to_string(),
                    "max_abs": number(c.error.max_abs),
                    "peak": number(c.error.peak),
                    "relative_error": number(c.error.relative_to_peak()),
                    "non_finite": c.non_finite,
                    "fails": c.fails(tolerance),
                })
            })
            .collect();
        let outputs: Vec<serde_json::Value> =
            result.outputs.iter().map(|e| serde_json::json!({"max_abs": number(e.max_abs), "peak": number(e.peak), "relative_error": number(e.relative_to_peak())})).collect();
        let doc = serde_json::json!({"function": f32_graph.name, "tolerance": tolerance, "ops": ops, "outputs": outputs, "first_failure": result.culprit});
        Ok(doc.to_string())
    })
}

/// A JSON number, or for a non-finite value the string Python's `float()` reads back (`inf`,
/// `-inf`, `nan`): JSON has no spelling for them.
fn number(x: f64) -> serde_json::Value {
    if x.is_finite() {
        serde_json::json!(x)
    } else {
        serde_json::json!(x.to_string().to_lowercase())
    }
}

/// The targets f16c knows.
#[pyfunction]
fn targets() -> Vec<&'static str> {
    Target::NAMES.to_vec()
}

/// The native module.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    // The settings the libraries take from the Python process's environment (F16C_LINKER, ...).
    f16c_core::settings::set(f16c_core::settings::Settings::from_variables(|name| std::env::var(name).ok()));
    m.add_class::<Model>()?;
    m.add_function(wrap_pyfunction!(compile, m)?)?;
    m.add_function(wrap_pyfunction!(load, m)?)?;
    m.add_function(wrap_pyfunction!(check, m)?)?;
    m.add_function(wrap_pyfunction!(fix, m)?)?;
    m.add_function(wrap_pyfunction!(targets, m)?)?;
    let py = m.py();
    m.add("CompileError", py.get_type::<CompileError>())?;
    m.add("InputError", py.get_type::<InputError>())?;
    m.add("RunError", py.get_type::<RunError>())?;
    m.add("InternalError", py.get_type::<InternalError>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
