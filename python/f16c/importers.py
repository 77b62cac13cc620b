"""From PyTorch modules and ONNX files to the TOSA MLIR f16c compiles, through torch-mlir.

torch and torch-mlir are optional (several GB): without them these functions raise an
`ImportError` that says how to install them. `scripts/exporter-venv` makes a venv with the
versions f16c is tested with.
"""

from __future__ import annotations

import contextlib
import os
from typing import Optional, Sequence, Union

_INSTALL = ("pip install --no-deps torch==2.15.0 torch-mlir==20261001 (plus their plain dependencies; "
            "the Linux torch wheel also needs the CUDA runtime wheels), or run scripts/exporter-venv "
            "from the f16c repository")


def _require(what: str):
    try:
        import torch  # noqa: F401
        import torch_mlir  # noqa: F401
    except ImportError as e:
        raise ImportError(f"f16c.{what} needs torch and torch-mlir, which are not installed ({e}): {_INSTALL}") from e


@contextlib.contextmanager
def _persistent_buffers(module):
    """Registers every non-persistent buffer as persistent while exporting, then restores them.

    torch.export leaves non-persistent buffers (BERT's `position_ids`, a rotary embedding's
    `inv_freq`) out of the state torch-mlir maps constants from, and torch-mlir then fails with
    "Could not find state mapping for buffer"; as persistent buffers they are exported as the
    constants they are."""
    changed = []
    for sub in module.modules():
        names = getattr(sub, "_non_persistent_buffers_set", None)
        if names:
            changed.append((sub, set(names)))
            names.clear()
    try:
        yield
    finally:
        for sub, names in changed:
            sub._non_persistent_buffers_set.update(names)


def _write(text: str, path) -> str:
    if path is not None:
        with open(os.fspath(path), "w", encoding="utf-8") as f:
            f.write(text)
    return text


def from_torch(module, example_inputs: Union[Sequence, "object"], path: Optional[Union[str, os.PathLike]] = None, *, func_name: str = "forward") -> str:
    """The TOSA MLIR of a PyTorch module (text, as torch-mlir prints it; also written to `path`).

    `example_inputs`: a tuple of tensors (one tensor is taken as a 1-tuple) fixing the shapes.
    The module is exported in eval mode with gradients off, through
    `torch_mlir.fx.export_and_import(..., output_type="tosa")`; non-persistent buffers are
    handled (see `_persistent_buffers`). The result goes straight to `f16c.compile`."""
    _require("from_torch")
    import torch
    from torch_mlir import fx

    if isinstance(example_inputs, torch.Tensor):
        example_inputs = (example_inputs,)
    example_inputs = tuple(torch.as_tensor(x) if not isinstance(x, torch.Tensor) else x for x in example_inputs)
    was_training = module.training
    module.eval()
    try:
        with _persistent_buffers(module), torch.no_grad():
            mlir = fx.export_and_import(module, *example_inputs, output_type="tosa", func_name=func_name)
    finally:
        module.train(was_training)
    return _write(str(mlir), path)


def _inference_dropouts(proto):
    """Dropouts exported in training mode (a root module left in training mode: its
    `training_mode` input is a constant true) run as the identity, as onnxruntime runs them;
    torch-mlir would otherwise bake one random mask into the model. Warns when it changes one."""
    import warnings

    import numpy as np
    import onnx
    from onnx import numpy_helper

    constants = {i.name: i for i in proto.graph.initializer}
    for node in proto.graph.node:
        if node.op_type == "Constant":
            for a in node.attribute:
                if a.name == "value":
                    constants[node.output[0]] = a.t
    changed = [n for n in proto.graph.node if n.op_type == "Dropout" and len(n.input) > 2 and n.input[2] in constants
               and bool(numpy_helper.to_array(constants[n.input[2]]).all())]
    if not changed:
        return proto
    proto = onnx.ModelProto.FromString(proto.SerializeToString())
    # torch-mlir's Dropout conversion needs the input present: a constant false.
    proto.graph.initializer.append(numpy_helper.from_array(np.array(False), name="f16c.inference_mode"))
    names = {n.name for n in changed}
    for node in proto.graph.node:
        if node.op_type == "Dropout" and node.name in names:
            node.input[2] = "f16c.inference_mode"
    warnings.warn(f"{len(changed)} Dropout node(s) were exported in training mode (call .eval() on the module before "
                  "exporting); f16c runs them as the identity, as onnxruntime does", stacklevel=3)
    return proto


def from_onnx(model: Union[str, os.PathLike, "object"], path: Optional[Union[str, os.PathLike]] = None) -> str:
    """The TOSA MLIR of an ONNX model (a file, or an `onnx.ModelProto`), through torch-mlir's
    ONNX importer and its torch-to-TOSA pipelines (text; also written to `path`)."""
    _require("from_onnx")
    try:
        import onnx
    except ImportError as e:
        raise ImportError(f"f16c.from_onnx needs the onnx package ({e}): pip install onnx") from e
    from torch_mlir import ir
    from torch_mlir.dialects import torch as torch_d
    from torch_mlir.extras import onnx_importer
    from torch_mlir.compiler_utils import run_pipeline_with_repro_report

    proto = model if isinstance(model, onnx.ModelProto) else onnx.load(os.fspath(model))
    proto = _inference_dropouts(proto)
    # Static shapes everywhere (f16c compiles static graphs): ONNX shape inference first.
    proto = onnx.shape_inference.infer_shapes(proto, data_prop=True)
    context = ir.Context()
    torch_d.register_dialect(context)
    info = onnx_importer.ModelInfo(proto)
    module = info.create_module(context=context).operation
    onnx_importer.NodeImporter.define_function(info.main_graph, module).import_all()
    run_pipeline_with_repro_report(module, "builtin.module(torch-onnx-to-torch-backend-pipeline)", "ONNX to the torch backend")
    run_pipeline_with_repro_report(module, "builtin.module(torch-backend-to-tosa-backend-pipeline)", "torch backend to TOSA")
    return _write(str(module), path)
