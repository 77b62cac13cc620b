"""Small real torch-mlir exports of the blocks the real-size models are made of, for the test
suite (issue 44, item 1): RoPE (Llama's rotary embedding: cos/sin of positions times inverse
frequencies, `rotate_half` by slices and a concat), attention with a boolean mask (PyTorch's
`scaled_dot_product_attention` with `attn_mask`: torch-mlir writes the mask as a select of
-inf, then the all-masked row test) and a quantized linear layer (`fake_quantize_per_tensor_affine`
on the input and the weight: round, clamp, scale) and a U-Net decoder level (a convolution's
output upsampled bilinearly, concatenated with the skip and convolved: torch-mlir's NCHW
transposes around the convolutions, coordinate math and gathers). Fixed seeds; each block's TOSA exactly as
`torch_mlir.fx.export_and_import(..., output_type="tosa")` prints it, its inputs and PyTorch's
f32 outputs, into tests/data/blocks/ (committed: a few KB each; CI does not run this).

Run with the exporter's venv: .venv-export/bin/python scripts/export_blocks.py [OUT_DIR]
"""

import sys
from pathlib import Path

import numpy as np
import torch
import torch_mlir.fx as fx


class Rope(torch.nn.Module):
    """x · cos + rotate_half(x) · sin over [batch, heads, seq, dim], as transformers' Llama."""

    def __init__(self, dim=32, base=10000.0):
        super().__init__()
        inv = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.int64).float() / dim))
        # Persistent: torch-mlir's export has no state mapping for a non-persistent buffer.
        self.register_buffer("inv_freq", inv, persistent=True)

    def forward(self, x):
        pos = torch.arange(x.shape[2], dtype=torch.int64).float()
        emb = torch.cat((torch.outer(pos, self.inv_freq),) * 2, dim=-1)
        half = x.shape[-1] // 2
        rotated = torch.cat((-x[..., half:], x[..., :half]), dim=-1)
        return x * emb.cos() + rotated * emb.sin()


class MaskedAttention(torch.nn.Module):
    """Scaled dot-product attention with a boolean mask (True: attend)."""

    def forward(self, q, k, v, mask):
        return torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask)


class QuantizedLinear(torch.nn.Module):
    """A linear layer on int8-quantized input and weight (fake quantization: round, clamp to
    [-128, 127] around the zero point, scale back)."""

    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(32, 16)

    def forward(self, x):
        xq = torch.fake_quantize_per_tensor_affine(x, 0.05, 3, -128, 127)
        wq = torch.fake_quantize_per_tensor_affine(self.lin.weight, 0.01, 0, -128, 127)
        return torch.nn.functional.linear(xq, wq, self.lin.bias)


class UpLevel(torch.nn.Module):
    """One level of a U-Net: conv + ReLU (the skip), 2x2 max pooling, conv + ReLU, bilinear
    upsampling by 2 (align_corners=False), the skip concatenated before it, a last conv."""

    def __init__(self):
        super().__init__()
        nn = torch.nn
        self.enc = nn.Conv2d(3, 8, 3, padding=1)
        self.mid = nn.Conv2d(8, 6, 3, padding=1)
        self.dec = nn.Conv2d(14, 4, 3, padding=1)

    def forward(self, x):
        skip = torch.relu(self.enc(x))
        y = torch.relu(self.mid(torch.nn.functional.max_pool2d(skip, 2)))
        y = torch.nn.functional.interpolate(y, scale_factor=2, mode="bilinear", align_corners=False)
        return self.dec(torch.cat([skip, y], dim=1))


def blocks():
    torch.manual_seed(44)
    yield "rope", Rope(), [torch.randn(1, 4, 16, 32)]
    q, k, v = (torch.randn(1, 2, 8, 16) for _ in range(3))
    # Causal, and one row masked out entirely (PyTorch's all-masked rows give zeros).
    mask = torch.tril(torch.ones(8, 8, dtype=torch.bool)).reshape(1, 1, 8, 8).clone()
    mask[..., 5, :] = False
    yield "masked_attention", MaskedAttention(), [q, k, v, mask]
    yield "quantized_linear", QuantizedLinear(), [torch.randn(4, 32) * 3]
    yield "unet_level", UpLevel(), [torch.randn(1, 3, 10, 12)]


def main():
    out = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).resolve().parent.parent / "tests/data/blocks")
    out.mkdir(parents=True, exist_ok=True)
    for name, model, inputs in blocks():
        model = model.eval()
        with torch.no_grad():
            want = model(*inputs)
        module = fx.export_and_import(model, *inputs, output_type="tosa")
        (out / f"{name}.mlir").write_text(str(module))
        for i, x in enumerate(inputs):
            np.save(out / f"{name}.in{i}.npy", x.numpy())
        np.save(out / f"{name}.out_f32.npy", want.numpy())
        print(f"{name}: {out / (name + '.mlir')}")


if __name__ == "__main__":
    main()
