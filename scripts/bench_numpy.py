"""numpy's matmul as the peer of `f16c bench`: prints one line per size, 'SIZE F32_GFLOPS F16_GFLOPS'.

The thread count is fixed by OPENBLAS_NUM_THREADS (set by f16c bench before starting us), so the
JIT and OpenBLAS use the same number of cores. float16 matmul in numpy has no BLAS kernel: it is
numpy's own loop, the usual way to get fp16 on a CPU without special hardware.
"""
import sys
import time

import numpy as np


def best_seconds(f, min_time=0.3, max_runs=20):
    f()  # warm up
    best, spent, runs = float("inf"), 0.0, 0
    while runs < max_runs and (spent < min_time or runs < 2):
        t0 = time.perf_counter()
        f()
        dt = time.perf_counter() - t0
        best, spent, runs = min(best, dt), spent + dt, runs + 1
    return best


def main():
    sizes = [int(s) for s in sys.argv[1:]]
    rng = np.random.default_rng(0)
    for n in sizes:
        a = rng.standard_normal((n, n), dtype=np.float32)
        b = rng.standard_normal((n, n), dtype=np.float32)
        flops = 2.0 * n**3
        f32 = flops / best_seconds(lambda: a @ b) / 1e9
        # fp16 matmul is slow in numpy: time it once at most a few seconds' worth.
        a16, b16 = a.astype(np.float16), b.astype(np.float16)
        f16 = flops / best_seconds(lambda: a16 @ b16, min_time=0.0, max_runs=1) / 1e9
        print(n, f"{f32:.3f}", f"{f16:.4f}", flush=True)


if __name__ == "__main__":
    main()
