"""f16c from Python: compile an f32 model to mixed precision and run it, NumPy in and out.

    import f16c
    m = f16c.compile("net.mlir", target="x86_64", precision="fp16")
    y = m(x)                      # x: a NumPy array; y: a NumPy array (a tuple for several results)
    print(m.report())             # which op runs in which precision, and why
    m.save("net.f16c")            # the artifact `f16c compile -o` writes; f16c-run runs it

From PyTorch or ONNX (needs torch-mlir; `scripts/exporter-venv` installs it):

    m = f16c.compile(f16c.from_torch(net, (x,)), precision="fp16")
    m = f16c.compile(f16c.from_onnx("model.onnx"), precision="fp16")

Compiling runs the same pipeline as `f16c compile` (canonicalize, fold-batch-norm,
assign-precision, insert-casts, lowering, code generation); `target="x86_64"` compiles with the
Cranelift JIT in process, `backend="llvm"` ahead of time with LLVM. Calls release the GIL. Errors
are exceptions: `CompileError` (the located diagnostics, as the command line prints them),
`InputError` (a `ValueError`: wrong count, shape or element type, naming the argument),
`RunError` and `InternalError` (a bug of f16c, caught at the boundary).
"""

from __future__ import annotations

import json
import os
from typing import NamedTuple, Optional, Sequence, Union

import numpy as np

from . import _native
from ._native import CompileError, InputError, InternalError, RunError
from .importers import from_onnx, from_torch

__all__ = [
    "compile",
    "load",
    "check",
    "fix",
    "from_torch",
    "from_onnx",
    "Model",
    "TensorSpec",
    "Report",
    "CheckResult",
    "FixResult",
    "CompileError",
    "InputError",
    "RunError",
    "InternalError",
    "TARGETS",
]
__version__ = _native.__version__

TARGETS = tuple(_native.targets())
"""The targets `compile` accepts (`reference`, `x86_64`, `sm_70` ... `sm_90`, `aarch64`, `aarch64+bf16`)."""

# NumPy element types and the MLIR names the native side uses (bf16 has no NumPy type: an f32
# array is rounded to a bf16 argument, and bf16 results come back as f32, exactly).
_TO_MLIR = {
    np.dtype(np.float32): "f32",
    np.dtype(np.float16): "f16",
    np.dtype(np.float64): "f64",
    np.dtype(np.bool_): "i1",
    np.dtype(np.int8): "i8",
    np.dtype(np.int16): "i16",
    np.dtype(np.int32): "i32",
    np.dtype(np.int64): "i64",
}
_TO_NUMPY = {v: k for k, v in _TO_MLIR.items()}


class TensorSpec(NamedTuple):
    """An argument's or result's type: its shape and MLIR element type (`f32`, `f16`, `bf16`,
    `i32`, ...)."""

    shape: tuple
    dtype: str

    def __str__(self) -> str:
        return "tensor<" + "x".join(str(d) for d in self.shape) + ("x" if self.shape else "") + self.dtype + ">"


def _raw(arrays: Sequence, what: str = "input") -> list:
    """Arrays as the native side takes them: (element type, shape, little-endian bytes)."""
    raw = []
    for k, x in enumerate(arrays):
        a = np.asarray(x)
        native = a.dtype.newbyteorder("=")
        if native not in _TO_MLIR:
            raise InputError(f"{what} #{k}: NumPy dtype {a.dtype} has no f16c element type (use one of "
                             + ", ".join(str(d) for d in _TO_MLIR) + ")")
        a = np.ascontiguousarray(a, dtype=native.newbyteorder("<"))
        raw.append((_TO_MLIR[native], tuple(a.shape), a.reshape(-1).view(np.uint8)))
    return raw


def _array(raw) -> np.ndarray:
    dtype, shape, data = raw
    return np.frombuffer(data, dtype=_TO_NUMPY[dtype].newbyteorder("<")).reshape(shape)


def _source(model: Union[str, os.PathLike]) -> tuple:
    """(MLIR text, file name for diagnostics) from a path or from MLIR text."""
    if isinstance(model, os.PathLike) or (isinstance(model, str) and "\n" not in model and not model.lstrip().startswith(("module", "func.func"))):
        path = os.fspath(model)
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError as e:
            raise FileNotFoundError(f"cannot read '{path}': {e.strerror}") from None
        if data.startswith(b"F16CART\n"):
            raise ValueError(f"'{path}' is a compiled f16c artifact, not MLIR source: load it with f16c.load('{path}')")
        try:
            return data.decode("utf-8"), path
        except UnicodeDecodeError as e:
            raise ValueError(f"cannot read '{path}': it is not UTF-8 text (an invalid byte at offset {e.start}); f16c reads MLIR source") from None
    if isinstance(model, str):
        return model, "<string>"
    raise TypeError(f"expected a path or MLIR text, got {type(model).__name__}")


class Report:
    """The precision report: per op the precision chosen, the rule that chose it, casts and
    weight bytes (`rows`), and totals (`summary`); `str(report)` is the table
    `f16c compile --emit=report` prints, `report.json` its JSON."""

    def __init__(self, json_text: str, table: str):
        self.json = json_text
        self.table = table
        data = json.loads(json_text)
        self.rows: list = data["rows"]
        self.summary: dict = data.get("summary", {})
        self.data: dict = data

    def __str__(self) -> str:
        return self.table

    def __repr__(self) -> str:
        counts = self.summary.get("ops_per_precision", {})
        return f"<f16c.Report: {len(self.rows)} ops, {counts}>"


class Model:
    """A compiled (`f16c.compile`) or loaded (`f16c.load`) model. Call it with one NumPy array
    per argument; it returns one array, or a tuple for several results."""

    def __init__(self, native):
        self._native = native

    def __call__(self, *inputs):
        outputs = [_array(o) for o in self._native.run(_raw(inputs))]
        return outputs[0] if len(outputs) == 1 else tuple(outputs)

    def run(self, inputs: Sequence) -> list:
        """Runs on a list of arrays and returns the list of results."""
        return [_array(o) for o in self._native.run(_raw(inputs))]

    @property
    def inputs(self) -> list:
        """The arguments' types (`TensorSpec`s)."""
        return [TensorSpec(tuple(s), d) for s, d in self._native.inputs]

    @property
    def outputs(self) -> list:
        """The results' types (`TensorSpec`s)."""
        return [TensorSpec(tuple(s), d) for s, d in self._native.outputs]

    @property
    def function(self) -> str:
        return self._native.function

    @property
    def target(self) -> str:
        return self._native.target

    @property
    def weight_bytes(self) -> int:
        """Bytes of weights the running model holds (fp16 weights take two bytes each)."""
        return self._native.weight_bytes

    def report(self) -> Report:
        """The precision report (compiled models; a loaded artifact has none)."""
        r = self._native.report()
        if r is None:
            raise RunError("a loaded artifact carries no precision report; compile the model to get one")
        return Report(*r)

    def save(self, path: Union[str, os.PathLike]) -> None:
        """Writes the artifact `f16c compile -o` writes for the same options; `f16c-run` and
        `f16c.load` run it without the compiler."""
        self._native.save(os.fspath(path))

    def __repr__(self) -> str:
        ins = ", ".join(str(t) for t in self.inputs)
        outs = ", ".join(str(t) for t in self.outputs)
        return f"<f16c.Model @{self.function}({ins}) -> ({outs}) for {self.target}>"


def _options(target, precision, policy, policy_file, backend, cpu, threads, function, fold_batch_norm, io_types, keep_f32, strict, accumulate) -> dict:
    if policy_file is not None:
        policy = os.fspath(policy_file)
    return dict(target=target, precision=precision, policy=policy, backend=backend, cpu=cpu, threads=threads, function=function,
                fold_batch_norm=fold_batch_norm, io_types=io_types, keep_f32=keep_f32, strict=strict, accumulate=accumulate)


def compile(model: Union[str, os.PathLike], target: str = "x86_64", precision: str = "fp16", policy: str = "O1",
            policy_file: Optional[Union[str, os.PathLike]] = None, backend: Optional[str] = None, threads: Optional[int] = None, *,
            cpu: Optional[str] = None, function: Optional[str] = None, fold_batch_norm: bool = True, io_types: str = "f32",
            keep_f32: Optional[str] = None, strict: bool = False, accumulate: str = "f32", calibrate: Sequence = ()) -> Model:
    """Compiles a model (a path to TOSA MLIR, or MLIR text) and returns a runnable `Model`.

    target: `x86_64` (default: runs here), `reference` (the interpreter), `sm_70`..`sm_90`,
    `aarch64`, `aarch64+bf16` (compiled here, saved with `.save`, run on that machine).
    precision: `fp16`, `bf16` or `fp32`. policy: `O0`..`O3` or a policy file (`policy_file`
    says the same). backend: for x86_64, `cranelift` (the JIT, default) or `llvm` (ahead of
    time; `cpu` picks the x86-64 level of either, "native" by default). threads: for large kernels (default: every core). The rest are
    `f16c compile`'s flags of the same names; `calibrate` takes arrays (one set per run).
    """
    source, file = _source(model)
    options = _options(target, precision, policy, policy_file, backend, cpu, threads, function, fold_batch_norm, io_types, keep_f32, strict, accumulate)
    return Model(_native.compile(source, file, options, _raw(calibrate, "calibration input")))


def load(path: Union[str, os.PathLike], threads: Optional[int] = None) -> Model:
    """Loads an artifact (`f16c compile -o`, `Model.save`) with the thin runtime: no compiler
    involved."""
    return Model(_native.load(os.fspath(path), threads))


class CheckResult:
    """`f16c check`'s answer: per op (`ops`, in graph order) the error of the mixed-precision
    graph against f32 relative to the op's peak, and its non-finite values; per result
    (`outputs`); the first op that breaks the tolerance (`first_failure`, or None)."""

    def __init__(self, data: dict):
        # Non-finite errors come as the strings "inf" and "nan" (JSON has no spelling for them).
        for entry in data["ops"] + data["outputs"]:
            for key in ("max_abs", "peak", "relative_error"):
                entry[key] = float(entry[key])
        self.data = data
        self.ops: list = data["ops"]
        self.outputs: list = data["outputs"]
        self.tolerance: float = data["tolerance"]
        k = data["first_failure"]
        self.first_failure: Optional[dict] = None if k is None else self.ops[k]

    @property
    def ok(self) -> bool:
        """True when no op goes non-finite or beyond the tolerance."""
        return self.first_failure is None

    def __str__(self) -> str:
        lines = [f"{'op':<24} {'location':<28} {'type':<5} {'rel. error':>10} {'non-finite':>10}"]
        for o in self.ops:
            flag = "  <-- first failure" if o is self.first_failure else ("  (fails)" if o["fails"] else "")
            lines.append(f"{o['id'] + ' ' + o['op']:<24} {o['location'][-28:]:<28} {o['dtype']:<5} {o['relative_error']:>10.3e} {o['non_finite']:>10}{flag}")
        for k, e in enumerate(self.outputs):
            lines.append(f"result #{k}: max |mixed - f32| = {e['max_abs']:.3e}, relative to peak {e['relative_error']:.3e}")
        return "\n".join(lines)


def check(model: Union[str, os.PathLike], inputs: Sequence, precision: str = "fp16", policy: str = "O1", tolerance: float = 1e-2,
          target: str = "reference", *, policy_file=None, function: Optional[str] = None, keep_f32: Optional[str] = None,
          fold_batch_norm: bool = True, io_types: str = "f32") -> CheckResult:
    """Runs the model in f32 and in mixed precision on `inputs` and compares every op
    (`f16c check`): which op first breaks `tolerance` (relative to its peak) or goes
    non-finite."""
    source, file = _source(model)
    options = _options(target, precision, policy, policy_file, None, None, None, function, fold_batch_norm, io_types, keep_f32, False, "f32")
    return CheckResult(json.loads(_native.check(source, file, options, _raw(inputs), float(tolerance))))


class FixResult:
    """`f16c check --fix`'s answer: `policy` (the policy file's text: write it and pass it as
    `policy_file=` to `compile`), `kept` (the ops kept in f32, most sensitive first), every
    candidate's sensitivity (`candidates`: `local` and `carried` error, `flops`, `kept_f32`), the
    errors of the final model and of the policy as given (`[sample][result]`), `low_ops`,
    `low_flops`, `f32_contraction_flops` (`(part, total)` pairs), `weight_bytes` (f32, final),
    `runs` (of mixed models) and `seconds`."""

    def __init__(self, data: dict):
        for c in data["candidates"]:
            c["local"], c["carried"] = float(c["local"]), float(c["carried"])
        for key in ("errors", "all_low_errors"):
            data[key] = [[float(x) for x in s] for s in data[key]]
        self.data = data
        self.policy: str = data["policy"]
        self.candidates: list = data["candidates"]
        self.kept: list = [c for c in self.candidates if c["kept_f32"]]
        self.errors: list = data["errors"]
        self.all_low_errors: list = data["all_low_errors"]
        self.low_ops = tuple(data["low_ops"])
        self.low_flops = tuple(data["low_flops"])
        self.f32_contraction_flops = tuple(data["f32_contraction_flops"])
        self.weight_bytes = tuple(data["weight_bytes"])
        self.runs: int = data["runs"]
        self.seconds: float = data["seconds"]

    def save(self, path: Union[str, os.PathLike]) -> None:
        """Writes the policy file."""
        with open(os.fspath(path), "w", encoding="utf-8") as f:
            f.write(self.policy)

    def __repr__(self) -> str:
        return (f"<f16c.FixResult: {len(self.kept)} of {len(self.candidates)} ops kept in f32, "
                f"{self.low_ops[0]} of {self.low_ops[1]} ops low, {self.runs} runs, {self.seconds:.2f} s>")


def fix(model: Union[str, os.PathLike], samples: Sequence, tolerance: float, precision: str = "fp16", policy: str = "O1",
        metric: str = "max-rel", target: str = "reference", *, policy_file=None, function: Optional[str] = None,
        keep_f32: Optional[str] = None, fold_batch_norm: bool = True, io_types: str = "f32", threads: Optional[int] = None) -> FixResult:
    """`f16c check --fix`: the fewest ops to keep in f32 so that the model meets `tolerance`
    (`metric`: `max-rel`, `mean-rel`, `cosine`, `top1`) on every sample. `samples` is a list of
    input sets (a list of arrays per set; a single array is taken as a one-input set). Raises
    `RunError` when not even all-f32 meets the tolerance, `ValueError` for a bad request."""
    source, file = _source(model)
    sets = [[s] if isinstance(s, np.ndarray) else list(s) for s in samples]
    options = _options(target, precision, policy, policy_file, None, None, threads, function, fold_batch_norm, io_types, keep_f32, False, "f32")
    return FixResult(json.loads(_native.fix(source, file, options, [_raw(s) for s in sets], float(tolerance), metric)))
