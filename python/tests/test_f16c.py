"""Tests of the Python package (NumPy only; torch and ONNX paths: scripts/python-import-check).

Run by scripts/test after building the package into .venv; by hand:
    .venv/bin/python -m pytest python/tests
"""

import os
import pathlib
import subprocess
import threading

import numpy as np
import pytest

import f16c

ROOT = pathlib.Path(__file__).resolve().parents[2]
MODELS = ROOT / "tests" / "data" / "models"
NAMES = ["mlp_small", "cnn_small", "attention_tiny", "depthwise_block", "overflow_probe"]
# The fp16 contract (docs/DESIGN.md "Numerics"): every shared model at O1 fp16 stays within 2x
# PyTorch's own half-precision error of PyTorch's f32 output (the README's status table).
F16_FACTOR = 2.0
# f32 against PyTorch: within 1e-5 of the output's peak (the reference interpreter's bound).
F32_REL = 1e-5


def load(name, kind):
    return np.load(MODELS / f"{name}.{kind}.npy")


def rel(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-30))


@pytest.mark.parametrize("name", NAMES)
def test_every_shared_model_matches_pytorch_in_f32_and_fp16(name):
    x, want = load(name, "input"), load(name, "out_f32")
    torch_f16_error = rel(load(name, "out_f16"), want)
    m32 = f16c.compile(MODELS / f"{name}.tosa.mlir", precision="fp32")
    assert rel(m32(x), want) <= F32_REL
    m16 = f16c.compile(MODELS / f"{name}.tosa.mlir", precision="fp16")
    y = m16(x)
    assert y.dtype == np.float32 and y.shape == want.shape
    assert np.all(np.isfinite(y))
    if np.isfinite(torch_f16_error):
        assert rel(y, want) <= F16_FACTOR * max(torch_f16_error, 1e-3), (rel(y, want), torch_f16_error)
    else:
        # PyTorch's own fp16 overflows (overflow_probe); f16c keeps that op in f32 at O1.
        assert rel(y, want) <= 1e-2


def test_results_are_the_command_line_s_bit_for_bit(tmp_path):
    """f16c.compile + save writes the artifact `f16c compile -o` writes: f16c-run and f16c.load
    give the JIT's bits."""
    name = "cnn_small"
    x = load(name, "input")
    m = f16c.compile(str(MODELS / f"{name}.tosa.mlir"), precision="fp16", threads=1)
    y = m(x)
    m.save(tmp_path / "net.f16c")
    loaded = f16c.load(tmp_path / "net.f16c", threads=2)
    assert loaded.inputs == m.inputs and loaded.outputs == m.outputs
    assert np.array_equal(loaded(x), y)
    f16c_run = ROOT / "target" / "debug" / "f16c-run"
    if f16c_run.exists():
        np.save(tmp_path / "x.npy", x)
        subprocess.run([str(f16c_run), str(tmp_path / "net.f16c"), "--input", str(tmp_path / "x.npy"), "--output", str(tmp_path / "y.npy")], check=True)
        assert np.array_equal(np.load(tmp_path / "y.npy"), y)


def test_llvm_backend_and_the_reference_agree_with_the_jit():
    name = "mlp_small"
    x = load(name, "input")
    src = MODELS / f"{name}.tosa.mlir"
    jit = f16c.compile(src, precision="bf16")(x)
    assert np.array_equal(f16c.compile(src, precision="bf16", backend="llvm")(x), jit)
    assert np.array_equal(f16c.compile(src, precision="bf16", target="reference")(x), jit)


def test_mlir_text_is_accepted_as_well_as_a_path():
    text = (MODELS / "mlp_small.tosa.mlir").read_text()
    x = load("mlp_small", "input")
    assert np.array_equal(f16c.compile(text)(x), f16c.compile(MODELS / "mlp_small.tosa.mlir")(x))


def test_inputs_outputs_and_the_report():
    m = f16c.compile(MODELS / "cnn_small.tosa.mlir", precision="fp16")
    assert m.inputs == [f16c.TensorSpec((1, 3, 16, 16), "f32")]
    assert str(m.inputs[0]) == "tensor<1x3x16x16xf32>"
    assert len(m.outputs) == 1 and m.outputs[0].dtype == "f32"
    r = m.report()
    assert r.summary["ops_per_precision"]["f16"] > 0
    assert any(row["precision"] == "f16" and row["op"] == "tosa.conv2d" for row in r.rows)
    assert "tosa.conv2d" in str(r) and "f16" in str(r)
    assert m.weight_bytes > 0
    assert "@forward(tensor<1x3x16x16xf32>)" in repr(m)


def test_fp16_weights_take_half_the_bytes():
    src = MODELS / "mlp_small.tosa.mlir"
    assert f16c.compile(src, precision="fp16").weight_bytes * 2 == pytest.approx(f16c.compile(src, precision="fp32").weight_bytes, rel=0.1)


def test_wrong_inputs_are_input_errors_that_name_the_argument():
    m = f16c.compile(MODELS / "mlp_small.tosa.mlir")
    x = load("mlp_small", "input")
    with pytest.raises(f16c.InputError, match=r"input #0 of '@forward' must be tensor<.*xf32>, got tensor<3xf32>"):
        m(np.zeros(3, np.float32))
    with pytest.raises(ValueError, match=r"input #0 of '@forward' must be .*xf32>, got .*xi32>"):
        m(x.astype(np.int32))
    with pytest.raises(f16c.InputError, match=r"'@forward' takes 1 input\(s\), 2 given"):
        m(x, x)
    with pytest.raises(f16c.InputError, match=r"complex64 has no f16c element type"):
        m(x.astype(np.complex64))
    # Non-contiguous and big-endian arrays are fine.
    assert np.array_equal(m(np.asfortranarray(x)), m(x))
    assert np.array_equal(m(x.astype(">f4")), m(x))


def test_compile_errors_carry_the_located_diagnostic():
    bad = "func.func @forward(%x: tensor<2xf32>) -> tensor<2xf32> {\n  %0 = tosa.fft2d %x : (tensor<2xf32>) -> tensor<2xf32>\n  return %0 : tensor<2xf32>\n}\n"
    with pytest.raises(f16c.CompileError) as e:
        f16c.compile(bad)
    assert "<string>:2:" in str(e.value) and "error:" in str(e.value)
    with pytest.raises(FileNotFoundError, match="cannot read 'no/such/file.mlir'"):
        f16c.compile("no/such/file.mlir")
    with pytest.raises(ValueError, match="precision='fp8'"):
        f16c.compile(MODELS / "mlp_small.tosa.mlir", precision="fp8")
    with pytest.raises(ValueError, match="target='sm_12'"):
        f16c.compile(MODELS / "mlp_small.tosa.mlir", target="sm_12")
    with pytest.raises(ValueError, match="--backend=llvm: sm_80 has no such backend"):
        f16c.compile(MODELS / "mlp_small.tosa.mlir", target="sm_80", backend="llvm")
    with pytest.raises(f16c.CompileError, match="policy"):
        f16c.compile(MODELS / "mlp_small.tosa.mlir", policy_file="no-such-policy.toml")
    # A function that is not there: the module's functions and the keyword that chooses one.
    with pytest.raises(ValueError, match=r"no function named 'nope' \(functions: forward\); choose one with function=NAME"):
        f16c.compile(MODELS / "mlp_small.tosa.mlir", function="nope")


def test_artifacts_for_other_machines_save_but_do_not_run(tmp_path):
    m = f16c.compile(MODELS / "mlp_small.tosa.mlir", target="aarch64", precision="fp16")
    with pytest.raises(f16c.RunError, match="compiled for aarch64, which cannot run here"):
        m(load("mlp_small", "input"))
    m.save(tmp_path / "arm.f16c")
    assert (tmp_path / "arm.f16c").stat().st_size > 0
    with pytest.raises(f16c.RunError, match="this artifact is for aarch64"):
        f16c.load(tmp_path / "arm.f16c")
    with pytest.raises(f16c.RunError, match="not an f16c artifact"):
        f16c.load(MODELS / "mlp_small.tosa.mlir")
    # The other way round: an artifact (or any binary file) given to compile says what it is.
    with pytest.raises(ValueError, match=r"is a compiled f16c artifact, not MLIR source: load it with f16c.load\("):
        f16c.compile(tmp_path / "arm.f16c")
    (tmp_path / "latin.mlir").write_bytes(b"func.func \xff")
    with pytest.raises(ValueError, match=r"not UTF-8 text \(an invalid byte at offset 10\)"):
        f16c.compile(tmp_path / "latin.mlir")
    with pytest.raises(ValueError, match="no artifact"):
        f16c.compile(MODELS / "mlp_small.tosa.mlir", target="reference").save(tmp_path / "ref.f16c")


def test_check_finds_the_op_that_overflows():
    x = load("overflow_probe", "input")
    r = f16c.check(MODELS / "overflow_probe.tosa.mlir", [x], precision="fp16", policy="O3", tolerance=1e-2)
    assert not r.ok and r.first_failure["non_finite"] > 0
    assert "<-- first failure" in str(r)
    fine = f16c.check(MODELS / "mlp_small.tosa.mlir", [load("mlp_small", "input")], tolerance=1e-2)
    assert fine.ok and len(fine.ops) > 0 and fine.outputs[0]["relative_error"] < 1e-2
    with pytest.raises(ValueError, match="tolerance"):
        f16c.check(MODELS / "mlp_small.tosa.mlir", [load("mlp_small", "input")], tolerance=float("nan"))


def test_threads_share_a_model_and_release_the_gil():
    m = f16c.compile(MODELS / "attention_tiny.tosa.mlir", precision="fp16", threads=1)
    x = load("attention_tiny", "input")
    want = m(x)
    results = [None] * 4

    def work(k):
        results[k] = [m(x) for _ in range(5)]

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(np.array_equal(y, want) for rs in results for y in rs)


def test_from_torch_without_torch_says_how_to_install(monkeypatch):
    import builtins

    real = builtins.__import__

    def no_torch(name, *a, **k):
        if name.split(".")[0] in ("torch", "torch_mlir"):
            raise ImportError(f"No module named '{name}'")
        return real(name, *a, **k)

    monkeypatch.setattr(builtins, "__import__", no_torch)
    with pytest.raises(ImportError, match="torch-mlir==20261001"):
        f16c.from_torch(object(), ())
    with pytest.raises(ImportError, match="exporter-venv"):
        f16c.from_onnx("model.onnx")


def test_f16c_import_command_explains_what_it_needs(tmp_path):
    import sys

    run = lambda *a: subprocess.run([sys.executable, "-m", "f16c.cli", *a], capture_output=True, text=True)
    r = run()
    assert r.returncode == 2 and "give either an ONNX file or --torch" in r.stderr
    r = run(str(tmp_path / "missing.onnx"))
    assert r.returncode == 1 and "cannot read" in r.stderr
    r = run("--torch", "models.py")
    assert r.returncode == 1 and "FILE.py:FUNCTION" in r.stderr
    try:
        import torch_mlir  # noqa: F401
    except ImportError:
        (tmp_path / "m.onnx").write_bytes(b"")
        r = run(str(tmp_path / "m.onnx"))
        assert r.returncode == 1 and "needs torch and torch-mlir" in r.stderr


def test_fix_writes_a_policy_that_compile_reads(tmp_path):
    x = load("attention_tiny", "input")
    src = MODELS / "attention_tiny.tosa.mlir"
    r = f16c.fix(src, [x, 0.5 * x], tolerance=1e-4)
    assert 0 < len(r.kept) < len(r.candidates) and r.runs <= 4 * len(r.candidates).bit_length() + 5
    assert all(e <= 1e-4 for s in r.errors for e in s) and any(e > 1e-4 for s in r.all_low_errors for e in s)
    r.save(tmp_path / "p.toml")
    m = f16c.compile(src, policy_file=tmp_path / "p.toml")
    rows = [row for row in m.report().rows if row["rule"] == "policy-op"]
    assert len(rows) == len(r.kept)
    want = f16c.compile(src, precision="fp32")(x)
    assert rel(m(x), want) <= 1e-4
    with pytest.raises(ValueError, match="tolerance"):
        f16c.fix(src, [x], tolerance=0)
    with pytest.raises(ValueError, match="metric="):
        f16c.fix(src, [x], tolerance=1e-3, metric="l2")
