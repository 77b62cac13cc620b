"""The peers of `f16c bench --real`: onnxruntime, OpenVINO and PyTorch eager on a real-size model
of scripts/gpu_models.py, on the inputs f16c runs (DIR/NAME.in{k}.npy), at a given thread count.

    .venv-export/bin/python scripts/peers.py DIR NAME [--peers ort,openvino,torch] [--threads 1] [--runs 10]

Prints one JSON object per line and configuration: {"peer", "precision", "threads", "median_ms",
"min_ms", "max_ms", "runs", "error"} where error is max |output - PyTorch f32| over the peak of
PyTorch's f32 output (DIR/NAME.torch.npy), or {"peer", "precision", "skipped": why}.

- ort: onnxruntime's CPU provider on the model's ONNX export (torch.onnx.export, dynamo, opset
  18, written once to DIR/NAME.onnx), f32, and its fp16 conversion (onnxconverter-common,
  keep_io_types=True), intra-op threads = --threads, sequential execution.
- openvino: converted from PyTorch (ov.convert_model), INFERENCE_PRECISION_HINT f32 and bf16
  (on a CPU with AVX512-BF16 its default is bf16: an f32 comparison must set the hint),
  INFERENCE_NUM_THREADS = --threads, latency mode.
- torch: eager, torch.set_num_threads(--threads), f32 and the model cast to bf16.
Every peer is warmed up once; the times are of --runs calls after it.
"""

import argparse
import contextlib
import io
import json
import os
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpu_models  # noqa: E402


def timed(call, runs):
    call()
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        out = call()
        times.append((time.perf_counter() - t) * 1e3)
    times.sort()
    return out, {"median_ms": times[len(times) // 2], "min_ms": times[0], "max_ms": times[-1], "runs": runs}


def error(got, want):
    """max |got - want| / peak of want; "inf" (JSON has no infinity) where got is not finite."""
    got = np.asarray(got, np.float64).reshape(want.shape)
    if not np.all(np.isfinite(got)):
        return "inf"
    return float(np.max(np.abs(got - want)) / max(np.max(np.abs(want)), 1e-30))


def emit(**fields):
    print(json.dumps(fields), flush=True)


def ort_peer(a, net, inputs, want):
    import onnx
    import onnxruntime as ort

    path = os.path.join(a.dir, f"{a.name}.onnx")
    if not os.path.exists(path):
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            torch.onnx.export(net, inputs, path, opset_version=18, dynamo=True)
    model = onnx.load(path)
    variants = [("f32", model)]
    try:
        from onnxconverter_common import float16

        variants.append(("fp16", float16.convert_float_to_float16(model, keep_io_types=True)))
    except ImportError:
        emit(peer="ort", precision="fp16", skipped="onnxconverter-common is not installed")
    for precision, m in variants:
        options = ort.SessionOptions()
        options.intra_op_num_threads = a.threads
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        try:
            session = ort.InferenceSession(m.SerializeToString(), options, providers=["CPUExecutionProvider"])
        except Exception as e:  # noqa: BLE001 - reported, not fatal
            emit(peer="ort", precision=precision, skipped=str(e).splitlines()[0][:200])
            continue
        feed = {i.name: x.numpy() for i, x in zip(session.get_inputs(), inputs)}
        out, t = timed(lambda: session.run(None, feed)[0], a.runs)
        emit(peer="ort", precision=precision, threads=a.threads, error=error(out, want), **t)


def openvino_peer(a, net, inputs, want):
    import openvino as ov

    try:
        ov_model = ov.convert_model(net, example_input=inputs)
    except Exception as e:  # noqa: BLE001 - reported, not fatal
        for precision in ["f32", "bf16"]:
            emit(peer="openvino", precision=precision, skipped=("convert_model: " + str(e).splitlines()[0])[:200])
        return
    core = ov.Core()
    feed = [x.numpy() for x in inputs]
    for precision in ["f32", "bf16"]:
        compiled = core.compile_model(ov_model, "CPU", {"INFERENCE_PRECISION_HINT": precision, "INFERENCE_NUM_THREADS": a.threads, "PERFORMANCE_HINT": "LATENCY"})
        request = compiled.create_infer_request()
        out, t = timed(lambda: request.infer(feed)[0], a.runs)
        emit(peer="openvino", precision=precision, threads=a.threads, error=error(out, want), **t)


def torch_peer(a, net, inputs, want):
    torch.set_num_threads(a.threads)
    with torch.no_grad():
        out, t = timed(lambda: net(*inputs), a.runs)
        emit(peer="torch", precision="f32", threads=a.threads, error=error(out.numpy(), want), **t)
        low = net.to(torch.bfloat16)
        cast = tuple(x.to(torch.bfloat16) if x.is_floating_point() else x for x in inputs)
        out, t = timed(lambda: low(*cast), a.runs)
        emit(peer="torch", precision="bf16", threads=a.threads, error=error(out.float().numpy(), want), **t)
        net.to(torch.float32)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dir")
    ap.add_argument("name", choices=gpu_models.NAMES)
    ap.add_argument("--peers", default="ort,openvino,torch")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--runs", type=int, default=10)
    a = ap.parse_args()
    net, built = gpu_models.build(a.name)
    # f16c's inputs, read back: the peers run exactly what f16c runs.
    inputs = tuple(torch.from_numpy(np.load(os.path.join(a.dir, f"{a.name}.in{k}.npy"))) for k in range(len(built)))
    want = np.load(os.path.join(a.dir, f"{a.name}.torch.npy")).astype(np.float64)
    peers = {"ort": ort_peer, "openvino": openvino_peer, "torch": torch_peer}
    for p in a.peers.split(","):
        p = p.strip()
        if p not in peers:
            emit(peer=p, precision="-", skipped=f"unknown peer (one of {', '.join(peers)})")
            continue
        try:
            peers[p](a, net, inputs, want)
        except ImportError as e:
            emit(peer=p, precision="-", skipped=f"not installed: {e}")
        except Exception as e:  # noqa: BLE001 - one peer's failure must not lose the others
            emit(peer=p, precision="-", skipped=(f"{type(e).__name__}: " + (str(e).splitlines() or [""])[0])[:200])


if __name__ == "__main__":
    main()
