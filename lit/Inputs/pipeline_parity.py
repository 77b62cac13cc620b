"""f16c run and f16c-run of the artifact f16c compile writes agree bit for bit.

Usage: pipeline_parity.py F16C F16C_RUN MODELS_DIR WORK_DIR

For every shared model, at fp32, fp16 and bf16, on the Cranelift JIT and the LLVM x86-64
backend: `f16c run` runs the same pipeline as `f16c compile` (canonicalize and fold-batch-norm
at fp32 too), so its results are the artifact's, byte for byte, and the artifact holds as many
kernels as `f16c compile --emit=kernels` lists. Prints one line per case; exits 1 on the first
difference.
"""
import os
import re
import subprocess
import sys

f16c, f16c_run, models, work = sys.argv[1:5]
os.makedirs(work, exist_ok=True)
MODELS = ["mlp_small", "cnn_small", "attention_tiny", "depthwise_block", "overflow_probe"]


def run(*args):
    p = subprocess.run(args, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"FAIL: {' '.join(args)} exited {p.returncode}:\n{p.stderr}")
    return p.stdout


for name in MODELS:
    src = os.path.join(models, f"{name}.tosa.mlir")
    x = os.path.join(models, f"{name}.input.npy")
    for precision in ["fp32", "fp16", "bf16"]:
        for backend in ["cranelift", "llvm"]:
            case = f"{name}-{precision}-{backend}"
            opts = [f"--precision={precision}", f"--backend={backend}"]
            jit, art, out = (os.path.join(work, f"{case}.{k}") for k in ("run.npy", "f16c", "art.npy"))
            run(f16c, "run", src, *opts, "--input", x, "--output", jit)
            run(f16c, "compile", src, "--target=x86_64", *opts, "-o", art)
            run(f16c_run, art, "--input", x, "--output", out)
            with open(jit, "rb") as a, open(out, "rb") as b:
                if a.read() != b.read():
                    sys.exit(f"FAIL: {case}: f16c run and f16c-run of the artifact differ")
            listed = re.search(r"program @\w+: (\d+) kernels", run(f16c, "compile", src, "--target=x86_64", *opts, "--emit=kernels"))
            held = re.search(r"(\d+) kernels", run(f16c_run, art, "--info"))
            if not listed or not held or listed.group(1) != held.group(1):
                sys.exit(f"FAIL: {case}: --emit=kernels lists {listed and listed.group(1)}, the artifact holds {held and held.group(1)}")
            print(f"{case}: same bits, {held.group(1)} kernels")
