# lit configuration for f16c: FileCheck tests of everything f16c shows as text.
import os

import lit.formats

config.name = "f16c"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir", ".test"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.test_source_root, "Output")
config.excludes = ["Inputs", "Output", "lit.cfg.py"]

root = os.path.dirname(config.test_source_root)
f16c = os.environ.get("F16C", os.path.join(root, "target", "debug", "f16c"))
if not os.path.exists(f16c):
    lit_config.fatal(f"f16c binary not found at {f16c}: run 'cargo build -p f16c-tools' first (or set F16C)")

f16c_run = os.environ.get("F16C_RUN", os.path.join(os.path.dirname(f16c), "f16c-run"))
if not os.path.exists(f16c_run):
    lit_config.fatal(f"f16c-run binary not found at {f16c_run}: run 'cargo build -p f16c-runtime' first (or set F16C_RUN)")

# Longest first: lit substitutes in order, and %f16c is a prefix of %f16c-run.
config.substitutions.append(("%f16c-run", f16c_run))
config.substitutions.append(("%f16c", f16c))
config.substitutions.append(("%models", os.path.join(root, "tests", "data", "models")))
config.substitutions.append(("%inputs", os.path.join(config.test_source_root, "Inputs")))

llvm_bin = "/usr/lib/llvm-22/bin"
config.environment["PATH"] = os.pathsep.join([llvm_bin, os.environ.get("PATH", "")])
config.environment["FILECHECK_OPTS"] = "-enable-var-scope --allow-unused-prefixes=false"
# `f16c run`'s compile cache stays in the test tree, not in the user's home.
config.environment["F16C_CACHE_DIR"] = os.path.join(config.test_exec_root, "f16c-cache")

# Tests of what happens without a GPU are unsupported where a CUDA driver is installed.
import ctypes.util
if ctypes.util.find_library("cuda"):
    config.available_features.add("cuda")
