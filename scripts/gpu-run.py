#!/usr/bin/env python3
"""Runs, on a machine with an NVIDIA GPU, what `scripts/gpu-check` built elsewhere.

    python3 gpu-run.py DIR [OUT] [--only cases,generated,models,real,gemm]

DIR holds f16c-run (no LLVM, MLIR or Rust needed), cases.json and cases/ (or cases.tar.xz, unpacked
into DIR on the first run): the artifacts of every
parity case and shared model, their inputs and the reference interpreter's outputs; real/: the
real-size models (xz-compressed artifacts, inputs, PyTorch's f32 output and f16c's x86-64 JIT
output at the same precision) and gpu_models.py, which builds the same networks in PyTorch.
This script
  1. runs every case and model through `f16c-run` (the CUDA driver JIT-compiles the PTX) and
     compares with the reference as cases.json says (bit-exact, the math tolerance, or relative
     to the peak for contractions and models); the large matmuls ("generated") get random
     inputs here and PyTorch's f32 matmul of the same inputs as the reference;
  2. runs each real model in fp16 and bf16, compares with f16c's CPU result (same graph, same
     precision: only the accumulation order differs) and with PyTorch's f32 output, and times
     it against PyTorch eager on this GPU in the same precision (the same network and weights);
  3. runs the fp16 GEMM benchmark (1024^3, 4096^3, 8192^3) and cuBLAS through PyTorch
     (torch.matmul on fp16 CUDA tensors) on the same GPU, in the same run;
  4. measures per-model latency (kernels only, CUDA events).
It prints a Markdown report and writes it to OUT/gpu-check.md (OUT defaults to DIR). The exit
status is 1 if any case fails.
"""
import concurrent.futures as cf
import glob
import json
import lzma
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np


def f16c_run(root, args, timeout=120, env=None):
    """f16c-run's completed process; one that outlives `timeout` seconds (a hung kernel) is
    killed and reported as failed."""
    try:
        return subprocess.run([os.path.join(root, "f16c-run"), *args], capture_output=True, text=True, timeout=timeout,
                              env=None if env is None else {**os.environ, **env})
    except subprocess.TimeoutExpired:
        return subprocess.CompletedProcess(args, 124, "", f"f16c-run did not finish in {timeout} s")


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


def rel_peak(g, r):
    """max |g - r| over r's peak (float64), inf where g is non-finite and r is not."""
    g64, r64 = np.asarray(g, np.float64), np.asarray(r, np.float64)
    d = np.abs(g64 - r64)
    d = np.where(np.isfinite(r64) & ~np.isfinite(g64), np.inf, d)
    peak = float(np.max(np.abs(r64[np.isfinite(r64)]))) if np.isfinite(r64).any() else 0.0
    return float(np.nanmax(d)) / peak if peak > 0 else float(np.nanmax(d))


def run_generated(root, case, tmp):
    """A large matmul: random inputs made here, PyTorch's f32 matmul of them as the reference."""
    import torch

    b, m, k, n = case["batch"], case["m"], case["k"], case["n"]
    rng = np.random.default_rng(len(case["name"]))
    a = torch.from_numpy(rng.uniform(-1, 1, (b, m, k)).astype(np.float32))
    w = torch.from_numpy(rng.uniform(-1, 1, (b, k, n)).astype(np.float32))
    low = torch.float16 if case["dtype"] == "f16" else torch.bfloat16
    a, w = a.to(low), w.to(low)
    paths = [os.path.join(tmp, f"{case['name']}.{i}.npy") for i in range(3)]
    for p, t in zip(paths, (a, w)):
        np.save(p, t.float().numpy())  # exact low-precision values; f16c-run fits them to the argument
    p = f16c_run(root, [os.path.join(root, case["artifact"]), "--input", paths[0], "--input", paths[1], "--output", paths[2]])
    if p.returncode != 0:
        return case["name"], False, "f16c-run failed: " + (p.stderr.strip().splitlines() or ["?"])[-1]
    got = np.load(paths[2]).astype(np.float64)  # f16, or bf16 widened to f32
    ref = torch.matmul(a.double(), w.double()).to(low).double().numpy()
    err = rel_peak(got, ref)
    return case["name"], err <= case["max"], f"{err:.3e} of peak (max {case['max']:.3e})"


REAL_BOUND = {"fp16": 4.0 / 2048.0, "bf16": 4.0 / 256.0}


def real_models(root, tmp, report, failures, stamp, out):
    """Section 2 of the module doc: the real-size models against f16c's CPU result, PyTorch's
    f32 output, and PyTorch eager on this GPU."""
    real = os.path.join(root, "real")
    packed = sorted(glob.glob(os.path.join(real, "*.f16c.xz")))
    if not packed:
        report.append("## Real-size models: none in this check (scripts/gpu-check --no-models)\n")
        return

    def unpack(path):
        dst = os.path.join(tmp, os.path.basename(path)[:-3])
        with lzma.open(path) as f, open(dst, "wb") as g:
            shutil.copyfileobj(f, g, 1 << 24)
        return dst

    with cf.ThreadPoolExecutor(max_workers=6) as pool:
        artifacts = list(pool.map(unpack, packed))
    stamp("real models unpacked")
    try:
        import torch

        sys.path.insert(0, root)
        import gpu_models
    except ImportError as e:
        torch, gpu_models = None, None
        report.append(f"(no PyTorch baseline: {e})\n")
    report.append("## Real-size models (scripts/gpu_models.py)\n")
    report.append("Errors are max |Δ| over the reference's peak. \"vs f16c CPU\": the x86-64 JIT's result of the same graph at the same "
                  "precision (only the accumulation order differs; bound fp16 4/2048, bf16 4/256). \"vs PyTorch f32\": PyTorch's f32 output "
                  "on the CPU where the model was exported; PyTorch eager's own error in the same precision on this GPU is beside it. "
                  "Latency: median of 20 runs, CUDA events around the launches (f16c: `f16c-run --bench`; PyTorch: eager forward, "
                  "which includes its launch overhead when that starves the GPU).\n")
    report.append("| model | precision | vs f16c CPU | vs PyTorch f32 | PyTorch eager's own | f16c ms | PyTorch eager ms | f16c / PyTorch | |")
    report.append("|---|---|---|---|---|---|---|---|---|")
    nets = {}
    for art in artifacts:
        name, precision = os.path.basename(art).split(".")[:2]
        inputs = sorted(glob.glob(os.path.join(real, f"{name}.in*.npy")))
        want32 = np.load(os.path.join(real, f"{name}.torch.npy"))
        cpu = np.load(os.path.join(real, f"{name}.{precision}.cpu.npy"))
        got_path = os.path.join(tmp, f"{name}.{precision}.got.npy")
        args = [art] + sum((["--input", i] for i in inputs), []) + ["--bench", "20", "--output", got_path]
        p = f16c_run(root, args, timeout=600)
        ms, ok, e_cpu, e_torch = None, False, "n/a", "n/a"
        if p.returncode == 0:
            m = re.search(r"median ([0-9.]+) ms", p.stdout)
            ms = float(m.group(1)) if m else None
            got = np.load(got_path).astype(np.float64)
            ec, et = rel_peak(got, cpu), rel_peak(got, want32)
            ok = ec <= REAL_BOUND[precision] and bool(np.all(np.isfinite(got) | ~np.isfinite(cpu)))
            e_cpu, e_torch = f"{ec:.2e}", f"{et:.2e}"
        else:
            e_cpu = "f16c-run failed: " + (p.stderr.strip().splitlines() or ["?"])[-1]
        # The kernel profile (events after every launch, so not the timing above), slowest first.
        prof = f16c_run(root, [art] + sum((["--input", i] for i in inputs), []) + ["--bench", "3", "--output", got_path],
                        timeout=600, env={"F16C_PROFILE": "1"})
        with open(os.path.join(out, "profiles.txt"), "a") as f:
            f.write(f"== {name} {precision}\n" + "\n".join(prof.stderr.strip().splitlines()[:25]) + "\n\n")
        stamp(f"{name} {precision} on f16c")
        theirs_ms, e_own = None, "n/a"
        if gpu_models is not None:
            try:
                theirs_ms, e_own = torch_eager(torch, gpu_models, nets, name, precision, want32)
            except Exception as ex:  # report, do not stop the check
                e_own = f"PyTorch failed: {type(ex).__name__}: {ex}"
        ratio = f"{ms / theirs_ms:.2f}" if ms and theirs_ms else "n/a"
        fmt = lambda v: "n/a" if v is None else f"{v:.3f}"
        report.append(f"| {name} | {precision} | {e_cpu} | {e_torch} | {e_own} | {fmt(ms)} | {fmt(theirs_ms)} | {ratio} | {'ok' if ok else 'FAIL'} |")
        if not ok:
            failures.append(f"{name} {precision}")
    report.append("")


def torch_eager(torch, gpu_models, nets, name, precision, want32):
    """(median ms, error vs PyTorch f32 on the CPU) of PyTorch eager on this GPU."""
    if name not in nets:
        net, inputs = gpu_models.build(name)
        net = net.cuda()
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        with torch.inference_mode():
            check32 = net(*[x.cuda() for x in inputs]).float().cpu().numpy()
        nets[name] = (net, inputs, rel_peak(check32, want32))
        print(f"gpu-run: PyTorch f32 {name} on this GPU vs the exporter's CPU: {nets[name][2]:.2e} (same weights)", file=sys.stderr)
    net, inputs, _ = nets[name]
    dtype = torch.float16 if precision == "fp16" else torch.bfloat16
    net = net.to(dtype)
    xs = [x.cuda().to(dtype) if x.is_floating_point() else x.cuda() for x in inputs]
    times = []
    with torch.inference_mode():
        for _ in range(3):
            y = net(*xs)
        for _ in range(20):
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            y = net(*xs)
            e.record()
            torch.cuda.synchronize()
            times.append(s.elapsed_time(e))
    return sorted(times)[len(times) // 2], f"{rel_peak(y.float().cpu().numpy(), want32):.2e}"


def main():
    import argparse

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dir", nargs="?", default="gpu-check")
    ap.add_argument("out", nargs="?")
    ap.add_argument("--only", help="comma-separated sections: cases, generated, models, real, gemm (default: all)")
    ap.add_argument("--workers", type=int, default=16, help="f16c-run processes at a time for the parity cases")
    opts = ap.parse_args()
    wanted = lambda section: opts.only is None or section in opts.only.split(",")
    root = os.path.abspath(opts.dir)
    out = os.path.abspath(opts.out or root)
    os.makedirs(out, exist_ok=True)
    spec = json.load(open(os.path.join(root, "cases.json")))
    packed = os.path.join(root, "cases.tar.xz")
    if not os.path.isdir(os.path.join(root, "cases")) and os.path.exists(packed):
        import tarfile

        with tarfile.open(packed) as t:
            t.extractall(root, filter="data")
    report = []
    started = time.time()
    stamp = lambda what: print(f"gpu-run: {what} ({time.time() - started:.0f} s)", file=sys.stderr, flush=True)
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

    def flush():
        """The report so far (a run stopped at its time limit still leaves what it measured)."""
        with open(os.path.join(out, "gpu-check.md"), "w") as f:
            f.write("\n".join(report) + "\n")

    def parity(title, key, run, pool, tmp):
        if not wanted(key) or not spec.get(key):
            return
        results = list(pool.map(lambda c: run(root, c, tmp), spec[key]))
        passed = sum(ok for _, ok, _ in results)
        report.append(f"## {title}: {passed}/{len(results)} match the reference\n")
        for name, ok, note in results:
            if not ok or key != "cases":
                report.append(f"- {'ok  ' if ok else 'FAIL'} {name}: {note}")
            if not ok:
                failures.append(name)
        report.append("")
        stamp(title)
        flush()

    # The quick sections first, the thousand parity cases after them.
    with tempfile.TemporaryDirectory() as tmp, cf.ThreadPoolExecutor(max_workers=opts.workers) as pool:
        parity("Large matmuls against PyTorch's f32 matmul", "generated", run_generated, pool, tmp)
        parity("Models", "models", run_case, pool, tmp)
        if wanted("real"):
            real_models(root, tmp, report, failures, stamp, out)
            flush()
        gemm_section(root, spec, wanted, report, failures, stamp)
        flush()
        parity("Parity cases", "cases", run_case, pool, tmp)

    if wanted("models"):
        report.append("## Model latency (kernels only, median of 20)\n")
        report.append("| model | ms |\n|---|---|")
        for case in spec["models"]:
            ms, _ = bench(root, case["artifact"], [os.path.join(root, i) for i in case["inputs"]], 20)
            report.append(f"| {case['name']} | {ms if ms is not None else 'failed'} |")
        report.append("")
        stamp("model latency")
    stamp("done")
    text = "\n".join(report) + "\n"
    print(text)
    flush()
    if failures:
        print(f"gpu-run: {len(failures)} case(s) failed", file=sys.stderr)
        sys.exit(1)


def gemm_section(root, spec, wanted, report, failures, stamp):
    """Section 3 of the module doc."""
    if not wanted("gemm"):
        return
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
        # The contraction bound (4·k f32 ulps of the peak, and one bf16-sized rounding of the
        # fp16 result: tests/cases.rs' contraction_tolerance).
        bound = 4 * n * np.finfo(np.float32).eps + 2.0**-7
        bad = err is not None and not err <= bound
        report.append(f"| {n} | {fmt(ms)} | {fmt(ours, 1)} | {fmt(theirs_ms)} | {fmt(theirs, 1)} | {ratio} | "
                      f"{'n/a' if err is None else f'{err:.2e}'}{' FAIL' if bad else ''} |")
        if bad or ms is None:
            failures.append(f"gemm {n}")
        if ms is None:
            report.append(f"\n(f16c GEMM {n} failed: {log})\n")
    stamp("GEMM")


if __name__ == "__main__":
    main()
