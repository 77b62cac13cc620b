#!/usr/bin/env python3
"""Runs, on a machine with an NVIDIA GPU, what `scripts/gpu-check` built elsewhere.

    python3 gpu-run.py DIR [OUT]

DIR holds f16c-run (no LLVM, MLIR or Rust needed), cases.json and cases/: the artifacts of every
parity case and shared model, their inputs and the reference interpreter's outputs. This script
  1. runs every case and model through `f16c-run` (the CUDA driver JIT-compiles the PTX) and
     compares with the reference as cases.json says (bit-exact, the math tolerance, or relative
     to the peak for contractions and models);
  2. runs the fp16 GEMM benchmark (1024^3, 4096^3, 8192^3) and cuBLAS through PyTorch
     (torch.matmul on fp16 CUDA tensors) on the same GPU, in the same run;
  3. measures per-model latency (kernels only, CUDA events).
It prints a Markdown report and writes it to OUT/gpu-check.md (OUT defaults to DIR). The exit
status is 1 if any case fails.
"""
import concurrent.futures as cf
import json
import os
import re
import subprocess
import sys
import tempfile

import numpy as np


def f16c_run(root, args):
    return subprocess.run([os.path.join(root, "f16c-run"), *args], capture_output=True, text=True)


def same_bits(g, r):
    if g.dtype != r.dtype:
        r = r.astype(g.dtype)
    if g.dtype.kind == "f":
        both_nan = np.isnan(g) & np.isnan(r)
        return bool(np.all(both_nan | (g.view(f"u{g.itemsize}") == r.view(f"u{r.itemsize}"))))
    return bool(np.array_equal(g, r))


def check(kind, g, r, c):
    """(ok, error measure) of result g against reference r."""
    if g.shape != r.shape:
        return False, f"shape {g.shape} vs {r.shape}"
    if kind == "exact":
        ok = same_bits(g, r)
        return ok, "bit-exact" if ok else f"{int(np.sum(g.astype(np.float64) != r.astype(np.float64)))} elements differ"
    g64, r64 = g.astype(np.float64), r.astype(np.float64)
    nan = np.isnan(g64) & np.isnan(r64)
    same = nan | (g64 == r64)
    with np.errstate(invalid="ignore"):
        diff = np.where(same, 0.0, np.abs(g64 - r64))
    diff = np.where(np.isnan(diff), np.inf, diff)
    if kind == "math":
        bound = c["rtol"] * np.abs(r64) + c["atol"] + c["ulp"] * np.abs(r64)
        return bool(np.all(diff <= bound)), f"max |diff| {float(np.max(diff)) if diff.size else 0:.3e}"
    peak = float(np.max(np.abs(np.where(np.isfinite(r64), r64, 0.0)))) if r64.size else 0.0
    err = float(np.max(diff)) / peak if peak > 0 else float(np.max(diff)) if diff.size else 0.0
    return err <= c["max"], f"{err:.3e} of peak (max {c['max']:.3e})"


def run_case(root, case, tmp):
    outs = [os.path.join(tmp, f"{case['name']}.out{i}.npy") for i in range(len(case["refs"]))]
    args = [os.path.join(root, case["artifact"])]
    for i in case["inputs"]:
        args += ["--input", os.path.join(root, i)]
    for o in outs:
        args += ["--output", o]
    p = f16c_run(root, args)
    if p.returncode != 0:
        return case["name"], False, "f16c-run failed: " + (p.stderr.strip().splitlines() or ["?"])[-1]
    notes = []
    ok = True
    for o, ref in zip(outs, case["refs"]):
        good, note = check(case["check"]["kind"], np.load(o), np.load(os.path.join(root, ref)), case["check"])
        ok &= good
        notes.append(note)
    return case["name"], ok, "; ".join(notes)


BENCH_OUT = os.path.join(tempfile.gettempdir(), "f16c-bench-out.npy")


def bench(root, artifact, inputs, n=10):
    """Median kernel milliseconds of `n` runs (f16c-run --bench); the result goes to BENCH_OUT."""
    args = [os.path.join(root, artifact)]
    for i in inputs:
        args += ["--input", i]
    p = f16c_run(root, args + ["--bench", str(n), "--output", BENCH_OUT])
    if p.returncode != 0:
        return None, p.stderr.strip()
    m = re.search(r"median ([0-9.]+) ms", p.stdout)
    return (float(m.group(1)) if m else None), p.stdout.strip()


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "gpu-check")
    out = os.path.abspath(sys.argv[2] if len(sys.argv) > 2 else root)
    os.makedirs(out, exist_ok=True)
    spec = json.load(open(os.path.join(root, "cases.json")))
    report = []
    try:
        smi = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"], capture_output=True, text=True)
        device = smi.stdout.strip() or "unknown GPU"
    except FileNotFoundError:
        device = "unknown GPU (no nvidia-smi)"
    # One case first: without a GPU or driver every case would fail the same way.
    probe = spec["cases"][0]
    p = f16c_run(root, [os.path.join(root, probe["artifact"])] + sum((["--input", os.path.join(root, i)] for i in probe["inputs"]), []))
    if p.returncode != 0:
        sys.exit("gpu-run: cannot run on this machine: " + p.stderr.strip())
    report.append(f"# f16c gpu-check on {device} (artifacts for {spec['target']})\n")

    failures = []
    with tempfile.TemporaryDirectory() as tmp, cf.ThreadPoolExecutor(max_workers=8) as pool:
        for title, key in [("Parity cases", "cases"), ("Models", "models")]:
            results = list(pool.map(lambda c: run_case(root, c, tmp), spec[key]))
            passed = sum(ok for _, ok, _ in results)
            report.append(f"## {title}: {passed}/{len(results)} match the reference interpreter\n")
            for name, ok, note in results:
                if not ok or key == "models":
                    report.append(f"- {'ok  ' if ok else 'FAIL'} {name}: {note}")
                if not ok:
                    failures.append(name)
            report.append("")

    report.append("## Model latency (kernels only, median of 20)\n")
    report.append("| model | ms |\n|---|---|")
    for case in spec["models"]:
        ms, _ = bench(root, case["artifact"], [os.path.join(root, i) for i in case["inputs"]], 20)
        report.append(f"| {case['name']} | {ms if ms is not None else 'failed'} |")
    report.append("")

    report.append("## fp16 GEMM, f16c (WMMA m16n16k16, f32 accumulate) vs cuBLAS (torch.matmul)\n")
    report.append("| n | f16c ms | f16c TFLOP/s | cuBLAS ms | cuBLAS TFLOP/s | f16c / cuBLAS | max error vs cuBLAS (of peak) |")
    report.append("|---|---|---|---|---|---|---|")
    try:
        import torch
    except ImportError:
        torch = None
    for g in spec["gemm"]:
        n = g["n"]
        rng = np.random.default_rng(n)
        a = rng.uniform(-1, 1, (1, n, n)).astype(np.float16)
        b = rng.uniform(-1, 1, (1, n, n)).astype(np.float16)
        with tempfile.TemporaryDirectory() as tmp:
            pa, pb = os.path.join(tmp, "a.npy"), os.path.join(tmp, "b.npy")
            np.save(pa, a)
            np.save(pb, b)
            ms, log = bench(root, g["artifact"], [pa, pb], 10)
            got = np.load(BENCH_OUT) if ms is not None else None
        ours = 2 * n**3 / (ms * 1e-3) / 1e12 if ms else None
        theirs_ms, err = None, None
        if torch is not None and torch.cuda.is_available():
            ta, tb = torch.from_numpy(a[0]).cuda(), torch.from_numpy(b[0]).cuda()
            for _ in range(3):
                tc = torch.matmul(ta, tb)
            times = []
            for _ in range(10):
                s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                s.record()
                tc = torch.matmul(ta, tb)
                e.record()
                torch.cuda.synchronize()
                times.append(s.elapsed_time(e))
            theirs_ms = sorted(times)[len(times) // 2]
            if got is not None:
                ref = tc.float().cpu().numpy()
                err = float(np.max(np.abs(got[0].astype(np.float64) - ref))) / float(np.max(np.abs(ref)))
        theirs = 2 * n**3 / (theirs_ms * 1e-3) / 1e12 if theirs_ms else None
        fmt = lambda v, p=3: "n/a" if v is None else f"{v:.{p}f}"
        ratio = f"{ours / theirs:.2f}" if ours and theirs else "n/a"
        report.append(f"| {n} | {fmt(ms)} | {fmt(ours, 1)} | {fmt(theirs_ms)} | {fmt(theirs, 1)} | {ratio} | {fmt(err, 5) if err is not None else 'n/a'} |")
        if ms is None:
            report.append(f"\n(f16c GEMM {n} failed: {log})\n")
    text = "\n".join(report) + "\n"
    print(text)
    with open(os.path.join(out, "gpu-check.md"), "w") as f:
        f.write(text)
    if failures:
        print(f"gpu-run: {len(failures)} case(s) failed", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
