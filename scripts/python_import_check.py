"""The Python package's import paths on real networks: PyTorch module -> f16c.from_torch ->
f16c.compile -> m(x), compared with PyTorch, and the same networks' ONNX exports ->
f16c.from_onnx -> m(x), compared with onnxruntime. Run by scripts/python-import-check in the
exporter venv (torch is too large for CI).

Networks (random weights, built from configs; nothing is downloaded): a torchvision ResNet-18
at 224x224, a transformers BERT encoder with its attention mask (a padded batch), and a
Llama-style decoder (rotary embeddings, grouped-query attention, RMSNorm, SwiGLU). Each runs
in f32, fp16 and bf16 on the JIT; the error printed is max |f16c - peer| relative to the peer's
peak, and the check fails when f32 is off by more than 1e-4 or a low precision by more than
3e-2 (fp16) or 1e-1 (bf16): fp16 keeps 11 significant bits, bf16 8.
"""

import argparse
import os
import sys
import tempfile
import time

import numpy as np
import torch

import f16c

BOUND = {"fp32": 1e-4, "fp16": 3e-2, "bf16": 1e-1}


def rel(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-30))


class Logits(torch.nn.Module):
    """A transformers model as a plain function of tensors to one tensor. Call .eval() on the
    wrapper, not only on the model: the ONNX exporter takes the root's mode, and a root left in
    training mode exports every dropout as a real, random one (training_mode=True)."""

    def __init__(self, model, field):
        super().__init__()
        self.model, self.field = model, field

    def forward(self, *args):
        return getattr(self.model(*args), self.field)


def resnet():
    import torchvision

    torch.manual_seed(0)
    net = torchvision.models.resnet18(weights=None).eval()
    x = torch.randn(1, 3, 224, 224)
    return "resnet18", net, (x,)


def bert():
    from transformers import BertConfig, BertModel

    torch.manual_seed(0)
    config = BertConfig(vocab_size=1000, hidden_size=256, num_hidden_layers=2, num_attention_heads=4, intermediate_size=1024, max_position_embeddings=128)
    net = Logits(BertModel(config, add_pooling_layer=False), "last_hidden_state").eval()
    ids = torch.randint(0, 1000, (2, 32))
    mask = torch.ones(2, 32, dtype=torch.int64)
    mask[1, 20:] = 0  # the second sequence is padded
    return "bert", net, (ids, mask)


def llama():
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=1000, hidden_size=256, intermediate_size=688, num_hidden_layers=2, num_attention_heads=8, num_key_value_heads=2, max_position_embeddings=128, use_cache=False)
    net = Logits(LlamaForCausalLM(config), "logits").eval()
    ids = torch.randint(0, 1000, (1, 32))
    return "llama", net, (ids,)


def check(name, route, mlir, want, inputs, failures):
    arrays = [x.numpy() for x in inputs]
    for precision in ["fp32", "fp16", "bf16"]:
        t0 = time.perf_counter()
        m = f16c.compile(mlir, precision=precision)
        compile_s = time.perf_counter() - t0
        got = m(*arrays)
        e = rel(got, want)
        finite = bool(np.all(np.isfinite(got)))
        ok = finite and e <= BOUND[precision]
        print(f"{name:<9} {route:<10} {precision:<5} error {e:.2e} (bound {BOUND[precision]:.0e}) compile {compile_s:5.2f} s  {'ok' if ok else 'FAIL'}", flush=True)
        if not ok:
            failures.append(f"{name} {route} {precision}")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--only", help="comma-separated: resnet18,bert,llama")
    p.add_argument("--no-onnx", action="store_true", help="skip the ONNX route")
    p.add_argument("--keep", help="write the exported .mlir and .onnx files into this folder")
    args = p.parse_args()
    out = args.keep or tempfile.mkdtemp(prefix="f16c-import-")
    os.makedirs(out, exist_ok=True)
    failures = []
    for make in (resnet, bert, llama):
        name, net, inputs = make()
        if args.only and name not in args.only.split(","):
            continue
        with torch.no_grad():
            want = net(*inputs).numpy()
        mlir = f16c.from_torch(net, inputs, path=os.path.join(out, f"{name}.tosa.mlir"))
        check(name, "from_torch", mlir, want, inputs, failures)
        if args.no_onnx:
            continue
        import onnxruntime

        onnx_path = os.path.join(out, f"{name}.onnx")
        names = [f"input{k}" for k in range(len(inputs))]
        torch.onnx.export(net, inputs, onnx_path, input_names=names, output_names=["out"], opset_version=18, dynamo=True)
        session = onnxruntime.InferenceSession(onnx_path, providers=["CPUExecutionProvider"])
        ort = session.run(None, {n: x.numpy() for n, x in zip(names, inputs)})[0]
        print(f"{name:<9} onnxruntime vs PyTorch error {rel(ort, want):.2e}")
        mlir = f16c.from_onnx(onnx_path, path=os.path.join(out, f"{name}.onnx.tosa.mlir"))
        check(name, "from_onnx", mlir, ort, inputs, failures)
    print(f"files in {out}")
    if failures:
        print("FAILED: " + ", ".join(failures))
        sys.exit(1)


if __name__ == "__main__":
    main()
