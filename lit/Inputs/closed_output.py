"""No f16c binary panics when its output is gone: a pipe whose reader has closed
(`f16c-run net.f16c --info | head -1`) ends the process quietly, as it would `cat`; a full
disk (`> /dev/full`, `-o /dev/full`) is a one-line error and exit status 1.

Usage: closed_output.py F16C F16C_RUN MODEL.mlir INPUT.npy WORK_DIR

The pipe's read end is closed before the process starts, so the first write fails every time:
nothing depends on when a reader goes away.
"""
import os
import signal
import subprocess
import sys

f16c, f16c_run, model, x, work = sys.argv[1:6]
os.makedirs(work, exist_ok=True)
artifact = os.path.join(work, "net.f16c")
subprocess.run([f16c, "compile", model, "--target=x86_64", "-o", artifact], check=True)

commands = {
    "f16c-run --info": [f16c_run, artifact, "--info"],
    "f16c-run (printed results)": [f16c_run, artifact, "--input", x],
    "f16c opt": [f16c, "opt", model, "--canonicalize"],
    "f16c run (printed results)": [f16c, "run", model, "--input", x],
    "f16c compile --emit=report": [f16c, "compile", model, "--precision=fp16", "--emit=report"],
    "f16c check": [f16c, "check", model, "--input", x],
}
failed = False
for what, argv in commands.items():
    r, w = os.pipe()
    os.close(r)
    p = subprocess.run(argv, stdout=w, stderr=subprocess.PIPE, text=True)
    os.close(w)
    quiet = p.returncode == -signal.SIGPIPE and p.stderr == ""
    print(f"closed pipe, {what}: {'quiet' if quiet else f'status {p.returncode}: {p.stderr.strip()}'}")
    failed |= not quiet
    with open("/dev/full", "w") as full:
        p = subprocess.run(argv, stdout=full, stderr=subprocess.PIPE, text=True)
    ok = p.returncode == 1 and "No space left on device" in p.stderr and "panicked" not in p.stderr
    print(f"full disk, {what}: {'error' if ok else 'WRONG'}: {p.stderr.strip()}")
    failed |= not ok
p = subprocess.run([f16c, "compile", model, "--target=x86_64", "-o", "/dev/full"], capture_output=True, text=True)
ok = p.returncode == 1 and "No space left on device" in p.stderr and "panicked" not in p.stderr
print(f"full disk, f16c compile -o: {'error' if ok else 'WRONG'}: {p.stderr.strip()}")
failed |= not ok
sys.exit(1 if failed else 0)
