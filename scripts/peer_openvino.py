"""OpenVINO as a peer on a real-size model of scripts/gpu_models.py, in f32 and at its default.

    .venv-export/bin/pip install openvino      # once (not in CI)
    .venv-export/bin/python scripts/peer_openvino.py bert_base [--threads 1] [--runs 20]

OpenVINO's CPU plugin runs an f32 model in bf16 by default on a CPU with AVX512-BF16 (its
INFERENCE_PRECISION_HINT is bf16 there): a comparison of f32 timings must set the hint to f32.
This prints both, with the maximum error of each against PyTorch's f32 output relative to its
peak, so the two are not confused. The model is converted from PyTorch (ov.convert_model) with
the same weights f16c's export has.
"""
import argparse
import os
import sys
import time

import numpy as np
import openvino as ov
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpu_models  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model", choices=gpu_models.NAMES)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--runs", type=int, default=20)
    a = ap.parse_args()
    net, inputs = gpu_models.build(a.model)
    with torch.no_grad():
        want = net(*inputs).numpy()
    ov_model = ov.convert_model(net, example_input=inputs)
    core = ov.Core()
    feed = [x.numpy() for x in inputs]
    print(f"OpenVINO {ov.__version__}, {a.model}, {a.threads} thread(s), default hint {core.get_property('CPU', 'INFERENCE_PRECISION_HINT')}")
    for hint in ["f32", "bf16"]:
        compiled = core.compile_model(ov_model, "CPU", {"INFERENCE_PRECISION_HINT": hint, "INFERENCE_NUM_THREADS": a.threads, "PERFORMANCE_HINT": "LATENCY"})
        request = compiled.create_infer_request()
        got = request.infer(feed)[0]
        times = []
        for _ in range(a.runs):
            t = time.perf_counter()
            request.infer(feed)
            times.append((time.perf_counter() - t) * 1e3)
        times.sort()
        err = float(np.max(np.abs(got - want)) / np.max(np.abs(want)))
        print(f"  {hint:>4}: median {times[len(times) // 2]:.2f} ms, min {times[0]:.2f} ms, max |err|/peak {err:.2e}")


if __name__ == "__main__":
    main()
