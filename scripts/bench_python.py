"""The Python package's overhead per call: a model called from Python (`m(x)`: NumPy in, NumPy
out, the GIL released) against the same compiled model run by the Rust host API in the same
process with no Python in the loop (`Model.run` timed inside Rust), on the shared models.

Usage: python scripts/bench_python.py [--runs N] [--threads T]   (f16c installed in that Python)
Prints a table: median microseconds per call of each, and their difference (the overhead).
"""

import argparse
import pathlib
import platform
import subprocess
import time

import numpy as np

import f16c

MODELS = pathlib.Path(__file__).resolve().parents[1] / "tests" / "data" / "models"


def cpu() -> str:
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--runs", type=int, default=2000)
    p.add_argument("--threads", type=int, default=1)
    args = p.parse_args()
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=MODELS).stdout.strip()
    print(f"f16c {f16c.__version__} (commit {commit}), {cpu()}, {args.threads} thread(s), median of {args.runs} calls")
    print(f"{'model':<18} {'precision':<9} {'rust µs':>9} {'python µs':>10} {'overhead µs':>12}")
    for name in ["mlp_small", "cnn_small", "attention_tiny", "depthwise_block"]:
        x = np.load(MODELS / f"{name}.input.npy")
        for precision in ["fp32", "fp16"]:
            m = f16c.compile(MODELS / f"{name}.tosa.mlir", precision=precision, threads=args.threads)
            for _ in range(50):
                m(x)
            times = []
            for _ in range(args.runs):
                t = time.perf_counter()
                m(x)
                times.append(time.perf_counter() - t)
            py = float(np.median(times))
            native = m._native.time_native(f16c._raw([x]), args.runs)
            print(f"{name:<18} {precision:<9} {native * 1e6:>9.2f} {py * 1e6:>10.2f} {(py - native) * 1e6:>12.2f}")


if __name__ == "__main__":
    main()
