"""Real-size test models for the GPU check (issue 45) and the CPU profile (issue 44): a
torchvision ResNet-50 at 224x224, a BERT-base encoder (12 layers, hidden 768, 128 tokens with a
padded tail), GPT-2 small (12 layers, 64 tokens; the logits of the last position), a torchvision
EfficientNet-B0 at 224x224 (SiLU, squeeze-and-excite) and Whisper-tiny's encoder (80 mel bins x
3,000 frames: two conv1d, then 4 layers of attention over 1,500 positions) and a ViT-S/16 at
224x224 (torchvision's VisionTransformer with DeiT-S's sizes: 12 layers, 6 heads, hidden 384,
197 tokens; the class token's features), as their library builds them from configs; a
Llama-style decoder (transformers' LlamaModel: 4 layers, hidden 512, 8 query heads sharing 4
key/value heads, RoPE, SwiGLU, RMSNorm, 64 tokens; the logits of the last position) and a small
U-Net (128x128, four levels of two 3x3 convolutions with batch norm and ReLU, max pooling down,
bilinear upsampling up, skip concatenations), written here. The GPU check uses the first three.

The weights must travel to a GPU machine inside the f16c artifacts, which may carry tens of MiB,
so they are made to compress: every trained tensor (one whose default init is not a constant)
becomes random signs times one scale, the default init's standard deviation rounded to three
significant bits (exact in fp16 and bf16, so converting the weights loses nothing), and the
random signs are seeded by the parameter's name with its layer index taken out, so that
repeated layers of one shape get the same values (xz then stores each distinct layer once).
Shapes, data flow and magnitudes are the real network's; a kernel reading another layer's
copy of the same weights would go unnoticed (each layer still has its own buffer).

The same function builds the model here (export, PyTorch f32 reference) and on the GPU
machine (PyTorch eager baseline): the values depend only on names, shapes and numpy's PCG64.
"""

import re
import zlib

import numpy as np
import torch

NAMES = ["resnet50", "bert_base", "gpt2", "efficientnet_b0", "whisper_tiny_enc", "vit_s16", "llama_dec", "unet"]


class Field(torch.nn.Module):
    """A transformers model as a function of tensors to one tensor (`pick` selects it)."""

    def __init__(self, model, pick):
        super().__init__()
        self.model, self.pick = model, pick

    def forward(self, *args):
        return self.pick(self.model(*args))


class UNet(torch.nn.Module):
    """A small U-Net: levels of `widths` channels, two 3x3 conv + batch norm + ReLU each, 2x2
    max pooling down, bilinear upsampling (align_corners=False, torch-mlir's coordinate math
    and gathers) up, the skip concatenated before each decoder level; a 1x1 conv to `out`."""

    def __init__(self, widths=(32, 64, 128, 256), inp=3, out=2):
        super().__init__()
        nn = torch.nn

        def block(i, o):
            return nn.Sequential(nn.Conv2d(i, o, 3, padding=1), nn.BatchNorm2d(o), nn.ReLU(), nn.Conv2d(o, o, 3, padding=1), nn.BatchNorm2d(o), nn.ReLU())

        self.down = nn.ModuleList()
        c = inp
        for w in widths:
            self.down.append(block(c, w))
            c = w
        self.up = nn.ModuleList(block(widths[i] + widths[i + 1], widths[i]) for i in reversed(range(len(widths) - 1)))
        self.head = nn.Conv2d(widths[0], out, 1)

    def forward(self, x):
        skips = []
        for i, d in enumerate(self.down):
            x = d(x)
            if i < len(self.down) - 1:
                skips.append(x)
                x = torch.nn.functional.max_pool2d(x, 2)
        for u in self.up:
            x = torch.nn.functional.interpolate(x, scale_factor=2, mode="bilinear", align_corners=False)
            x = u(torch.cat([skips.pop(), x], dim=1))
        return self.head(x)


def _scale(std):
    """`std` rounded to three significant bits (exactly representable in fp16 and bf16)."""
    e = np.floor(np.log2(std))
    return float(np.round(std / 2.0**e * 4) / 4 * 2.0**e)


def compressible_(model):
    """Replaces every non-constant parameter in place (see the module's doc)."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            std = float(p.float().std()) if p.numel() > 1 else 0.0
            if std == 0.0:
                continue  # constant inits (LayerNorm's ones, zero biases) stay as they are
            key = re.sub(r"\.\d+\.", ".N.", name) + str(tuple(p.shape))
            rng = np.random.default_rng(zlib.crc32(key.encode()))
            signs = rng.integers(0, 2, size=p.numel(), dtype=np.int8) * 2 - 1
            p.copy_(torch.from_numpy(signs.astype(np.float32).reshape(p.shape) * _scale(std)))
    return model


def build(name):
    """(model in eval mode, example inputs) of one of NAMES."""
    torch.manual_seed(0)
    if name == "resnet50":
        import torchvision

        net = torchvision.models.resnet50(weights=None)
        inputs = (torch.from_numpy(np.random.default_rng(1).standard_normal((1, 3, 224, 224)).astype(np.float32)),)
    elif name == "bert_base":
        from transformers import BertConfig, BertModel

        net = Field(BertModel(BertConfig(), add_pooling_layer=False), lambda o: o.last_hidden_state)
        ids = torch.from_numpy(np.random.default_rng(2).integers(0, 30522, (1, 128)))
        mask = torch.ones(1, 128, dtype=torch.int64)
        mask[0, 100:] = 0  # a padded tail
        inputs = (ids, mask)
    elif name == "gpt2":
        from transformers import GPT2Config, GPT2LMHeadModel

        net = Field(GPT2LMHeadModel(GPT2Config(use_cache=False)), lambda o: o.logits[:, -1, :])
        inputs = (torch.from_numpy(np.random.default_rng(3).integers(0, 50257, (1, 64))),)
    elif name == "efficientnet_b0":
        import torchvision

        net = torchvision.models.efficientnet_b0(weights=None)
        inputs = (torch.from_numpy(np.random.default_rng(4).standard_normal((1, 3, 224, 224)).astype(np.float32)),)
    elif name == "whisper_tiny_enc":
        from transformers import WhisperConfig, WhisperModel

        # Whisper-tiny's encoder: two conv1d, 4 layers of 6-head attention over 1,500 frames.
        config = WhisperConfig(d_model=384, encoder_layers=4, encoder_attention_heads=6, encoder_ffn_dim=1536, decoder_layers=1, decoder_attention_heads=6, decoder_ffn_dim=1536)
        net = Field(WhisperModel(config).encoder, lambda o: o.last_hidden_state)
        inputs = (torch.from_numpy(np.random.default_rng(5).standard_normal((1, 80, 3000)).astype(np.float32)),)
    elif name == "vit_s16":
        import torchvision

        net = torchvision.models.VisionTransformer(image_size=224, patch_size=16, num_layers=12, num_heads=6, hidden_dim=384, mlp_dim=1536)
        # torchvision initialises the classifier to zeros (the logits would all be 0): the
        # class token's features are the output.
        net.heads = torch.nn.Identity()
        inputs = (torch.from_numpy(np.random.default_rng(6).standard_normal((1, 3, 224, 224)).astype(np.float32)),)
    elif name == "llama_dec":
        from transformers import LlamaConfig, LlamaForCausalLM

        config = LlamaConfig(vocab_size=8000, hidden_size=512, intermediate_size=1408, num_hidden_layers=4, num_attention_heads=8, num_key_value_heads=4, max_position_embeddings=128, use_cache=False)
        net = Field(LlamaForCausalLM(config), lambda o: o.logits[:, -1, :])
        inputs = (torch.from_numpy(np.random.default_rng(7).integers(0, 8000, (1, 64))),)
    elif name == "unet":
        net = UNet()
        inputs = (torch.from_numpy(np.random.default_rng(8).standard_normal((1, 3, 128, 128)).astype(np.float32)),)
    else:
        raise ValueError(f"unknown model {name!r}: one of {NAMES}")
    return compressible_(net).eval(), inputs


def export(name, out):
    """Writes OUT/NAME.tosa.mlir (torch-mlir's TOSA, as it prints it), NAME.in{k}.npy and
    NAME.torch.npy (PyTorch's f32 output on this CPU)."""
    import importlib.util
    import os

    # The Python package's own exporter (non-persistent buffers handled), loaded from its file:
    # the package itself needs its compiled module, which this venv does not have.
    here = os.path.dirname(os.path.abspath(__file__))
    spec = importlib.util.spec_from_file_location("f16c_importers", os.path.join(here, "..", "python", "f16c", "importers.py"))
    importers = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(importers)
    net, inputs = build(name)
    os.makedirs(out, exist_ok=True)
    with torch.no_grad():
        np.save(os.path.join(out, f"{name}.torch.npy"), net(*inputs).numpy())
    importers.from_torch(net, inputs, path=os.path.join(out, f"{name}.tosa.mlir"))
    for k, x in enumerate(inputs):
        np.save(os.path.join(out, f"{name}.in{k}.npy"), x.numpy())


if __name__ == "__main__":
    import sys
    import time

    if len(sys.argv) < 3:
        sys.exit("usage: gpu_models.py OUT NAME... (exports each model; NAME one of " + ", ".join(NAMES) + ")")
    for n in sys.argv[2:]:
        t = time.time()
        export(n, sys.argv[1])
        print(f"gpu_models: exported {n} in {time.time() - t:.1f} s", flush=True)
