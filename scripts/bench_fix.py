"""`f16c check --fix` against onnxconverter-common's auto_convert_mixed_precision: the same
network (a torchvision model's ONNX export; f16c reads it through f16c.from_onnx), the same
sample, the same criterion (max |mixed - f32| over the f32 result's peak <= T, each tool against
its own f32 run), at tolerances tight enough that the all-fp16 model fails them, so both must
search. Prints, per model and tolerance: each tool's all-fp16 error, the contraction FLOPs it
left in f32, the error it reached, and its wall time (f16c: the whole of f16c.fix, parse
included; the ONNX-to-TOSA import is timed apart).

Usage (exporter venv, with onnxconverter-common; f16c built there, best with --release):
    .venv-export/bin/python scripts/bench_fix.py [--models mobilenet_v3_small,resnet18] [--tolerances 1e-3,3e-4]
"""

import argparse
import contextlib
import io
import os
import subprocess
import tempfile
import time

import numpy as np
import onnx
import onnxruntime as ort
import torch
import torchvision
from onnx import numpy_helper, shape_inference

import f16c


def max_rel(got, want):
    worst = 0.0
    for g, w in zip(got, want):
        g, w = np.asarray(g, np.float64), np.asarray(w, np.float64)
        if np.any(~np.isfinite(g) & np.isfinite(w)):
            return float("inf")
        worst = max(worst, float(np.max(np.abs(g - w)) / max(np.max(np.abs(w)), 1e-30)))
    return worst


def contraction_flops(model: onnx.ModelProto):
    """(FLOPs of Conv/MatMul/Gemm whose weights are f32, FLOPs of all of them), shapes from the
    f32 model's shape inference."""
    inferred = shape_inference.infer_shapes(model)
    shapes = {}
    for v in list(inferred.graph.value_info) + list(inferred.graph.output) + list(inferred.graph.input):
        shapes[v.name] = [d.dim_value for d in v.type.tensor_type.shape.dim]
    inits = {i.name: i for i in model.graph.initializer}
    f32 = total = 0
    for n in model.graph.node:
        if n.op_type not in ("Conv", "MatMul", "Gemm") or len(n.input) < 2 or n.input[1] not in inits:
            continue
        w = inits[n.input[1]]
        out = int(np.prod(shapes.get(n.output[0], [0]) or [0]))
        dims = list(w.dims)
        if n.op_type == "Conv":
            per = int(np.prod(dims[1:]))
        elif n.op_type == "Gemm":
            trans_b = any(a.name == "transB" and a.i for a in n.attribute)
            per = dims[1] if trans_b else dims[0]
        else:
            per = dims[-2]
        flops = 2 * out * per
        total += flops
        if w.data_type == onnx.TensorProto.FLOAT:
            f32 += flops
    return f32, total


def ort_run(model, feed):
    s = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return s.run(None, feed)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--models", default="mobilenet_v3_small,resnet18")
    p.add_argument("--tolerances", default="1e-3,3e-4")
    args = p.parse_args()
    from onnxconverter_common import float16
    from onnxconverter_common.auto_mixed_precision import auto_convert_mixed_precision

    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    print(f"f16c {commit}, onnxconverter-common, onnxruntime {ort.__version__}, {cpu}, {os.cpu_count()} cores")
    print(f"{'model':<20} {'tol':>7} | {'tool':<22} {'all-fp16 err':>12} {'f32 conv/mm FLOPs':>18} {'err':>9} {'time s':>8} {'runs':>5}")
    work = tempfile.mkdtemp(prefix="f16c-fix-bench-")
    for name in args.models.split(","):
        torch.manual_seed(0)
        net = getattr(torchvision.models, name)(weights=None).eval()
        x = torch.randn(1, 3, 224, 224)
        path = os.path.join(work, f"{name}.onnx")
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            torch.onnx.export(net, (x,), path, input_names=["x"], output_names=["y"], opset_version=18, dynamo=True)
        model = onnx.load(path)
        t = time.perf_counter()
        tosa = f16c.from_onnx(path)
        import_s = time.perf_counter() - t
        feed = {"x": x.numpy()}
        ref = ort_run(model, feed)
        all16 = float16.convert_float_to_float16(model, keep_io_types=True)
        ort_all16 = max_rel(ort_run(all16, feed), ref)
        for tol in [float(v) for v in args.tolerances.split(",")]:
            calls = [0]

            def validate(r1, r2):
                calls[0] += 1
                return max_rel(r2, r1) <= tol

            t = time.perf_counter()
            with contextlib.redirect_stdout(io.StringIO()):
                try:
                    mixed = auto_convert_mixed_precision(model, feed, validate_fn=validate, keep_io_types=True)
                    ok = True
                except ValueError:
                    ok = False
            occ_s = time.perf_counter() - t
            if ok:
                occ_f32, total = contraction_flops(mixed)
                occ_err = max_rel(ort_run(mixed, feed), ref)
                occ = f"{occ_f32 / total:>17.1%} {occ_err:>9.2e}"
            else:
                occ = f"{'failed':>17} {'-':>9}"
            print(f"{name:<20} {tol:>7.0e} | {'onnxconverter-common':<22} {ort_all16:>12.2e} {occ} {occ_s:>8.2f} {calls[0]:>5}", flush=True)
            t = time.perf_counter()
            r = f16c.fix(tosa, [x.numpy()], tolerance=tol)
            fix_s = time.perf_counter() - t
            share = r.f32_contraction_flops[0] / max(r.f32_contraction_flops[1], 1)
            all_low = max(e for s in r.all_low_errors for e in s)
            err = max(e for s in r.errors for e in s)
            print(f"{'':<20} {'':>7} | {'f16c check --fix':<22} {all_low:>12.2e} {share:>17.1%} {err:>9.2e} {fix_s:>8.2f} {r.runs:>5}"
                  f"   (import {import_s:.2f} s; {len(r.kept)} of {len(r.candidates)} ops kept)", flush=True)


if __name__ == "__main__":
    main()
