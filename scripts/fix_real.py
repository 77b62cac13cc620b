"""`f16c check --fix` on the real-size models of scripts/gpu_models.py (issue 42's "the bigger
ones, measured"): for each model and tolerance, the fix on the JIT (its time, ops kept, the
error it reports), then the policy it wrote compiled on the LLVM x86-64 backend and run beside
that backend's f32 build, and the error measured there (max |mixed - f32| over the f32 result's
peak, the fix's default metric). One sample: the model's exported input. Not run in CI (the
models are regenerated into target/gpu-models by scripts/gpu_models.py).

Usage (the release binaries built; numpy):
    .venv/bin/python scripts/fix_real.py [--dir target/gpu-models] [--models resnet50,...]
        [--tolerances 1e-2,1e-3,1e-4] [--precision fp16]
"""

import argparse
import glob
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
F16C = os.path.join(ROOT, "target", "release", "f16c")
RUN = os.path.join(ROOT, "target", "release", "f16c-run")


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"failed ({p.returncode}): {' '.join(cmd)}\n{p.stdout[-2000:]}\n{p.stderr[-2000:]}")
    return p.stdout + p.stderr


def outputs(artifact, inputs, tmp, tag):
    out = os.path.join(tmp, f"{tag}.npy")
    args = [RUN, artifact, "--threads", "1", "--output", out]
    for x in inputs:
        args += ["--input", x]
    run(args)
    return np.load(out).astype(np.float64)


def max_rel(got, want):
    if np.any(~np.isfinite(got) & np.isfinite(want)):
        return float("inf")
    return float(np.max(np.abs(got - want)) / max(np.max(np.abs(want)), 1e-30))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", default=os.path.join(ROOT, "target", "gpu-models"))
    ap.add_argument("--models", default="resnet50,efficientnet_b0,vit_s16,bert_base,gpt2,whisper_tiny_enc")
    ap.add_argument("--tolerances", default="1e-2,1e-3,1e-4")
    ap.add_argument("--precision", default="fp16")
    a = ap.parse_args()
    print(f"{'model':18} {'T':>6} | {'fix s':>6} {'runs':>4} {'kept':>9} {'JIT error':>9} | {'LLVM error':>10} {'met':>4}")
    with tempfile.TemporaryDirectory() as tmp:
        for name in a.models.split(","):
            mlir = os.path.join(a.dir, f"{name}.tosa.mlir")
            inputs = sorted(glob.glob(os.path.join(a.dir, f"{name}.in*.npy")))
            if not os.path.exists(mlir) or not inputs:
                print(f"{name:18} absent: run scripts/gpu_models.py {a.dir} {name}")
                continue
            f32 = os.path.join(tmp, f"{name}.f32.f16c")
            run([F16C, "compile", mlir, "--target=x86_64", "--backend=llvm", "--precision=fp32", "-o", f32])
            want = outputs(f32, inputs, tmp, f"{name}.f32")
            for t in a.tolerances.split(","):
                policy = os.path.join(tmp, f"{name}.{t}.toml")
                args = [F16C, "check", mlir, f"--precision={a.precision}", "--tolerance", t, "--fix", "-o", policy]
                for x in inputs:
                    args += ["--input", x]
                start = time.perf_counter()
                text = run(args)
                took = time.perf_counter() - start
                kept = re.search(r"kept in f32: (\d+) of (\d+)", text)
                kept = f"{kept.group(1)}/{kept.group(2)}" if kept else "0"
                err = re.search(r"error \([^)]*\) per sample: #0: (\S+)", text)
                runs = re.search(r"runs: (\d+)", text)
                mixed = os.path.join(tmp, f"{name}.{t}.f16c")
                run([F16C, "compile", mlir, "--target=x86_64", "--backend=llvm", f"--precision={a.precision}", f"--policy={policy}", "-o", mixed])
                e = max_rel(outputs(mixed, inputs, tmp, f"{name}.{t}"), want)
                met = "yes" if e <= float(t) else "NO"
                print(f"{name:18} {t:>6} | {took:6.1f} {runs.group(1) if runs else '?':>4} {kept:>9} {err.group(1) if err else '?':>9} | {e:10.3e} {met:>4}", flush=True)


if __name__ == "__main__":
    main()
