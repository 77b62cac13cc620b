"""`f16c-import`: ONNX files and PyTorch modules to the TOSA MLIR `f16c compile` reads, from the
command line (installed with the Python package; needs torch-mlir, see `f16c.from_torch`).

    f16c-import model.onnx -o net.mlir
    f16c-import --torch models.py:make_model -o net.mlir

With --torch, FILE.py:FUNCTION names a function taking no arguments that returns
`(module, example_inputs)`: the module and a tuple of example tensors fixing the shapes.
"""

import argparse
import importlib.util
import os
import sys


def _torch_factory(spec: str):
    path, sep, name = spec.rpartition(":")
    if not sep or not path or not name:
        raise SystemExit(f"f16c-import: --torch wants FILE.py:FUNCTION, got '{spec}'")
    if not os.path.isfile(path):
        raise SystemExit(f"f16c-import: cannot read '{path}'")
    module_spec = importlib.util.spec_from_file_location("f16c_import_models", path)
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    make = getattr(module, name, None)
    if not callable(make):
        raise SystemExit(f"f16c-import: '{path}' has no function '{name}'")
    return make


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="f16c-import", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("model", nargs="?", help="an ONNX file (without --torch)")
    p.add_argument("--torch", metavar="FILE.py:FUNCTION", help="a function returning (module, example_inputs)")
    p.add_argument("-o", "--output", metavar="NET.mlir", help="where to write the TOSA MLIR (default: standard output)")
    args = p.parse_args(argv)
    from . import from_onnx, from_torch

    if bool(args.torch) == bool(args.model):
        p.error("give either an ONNX file or --torch FILE.py:FUNCTION")
    try:
        if args.torch:
            module, inputs = _torch_factory(args.torch)()
            text = from_torch(module, inputs, path=args.output)
        else:
            if not os.path.isfile(args.model):
                raise SystemExit(f"f16c-import: cannot read '{args.model}'")
            text = from_onnx(args.model, path=args.output)
    except ImportError as e:
        print(f"f16c-import: {e}", file=sys.stderr)
        return 1
    if not args.output:
        try:
            sys.stdout.write(text)
            sys.stdout.flush()
        except BrokenPipeError:
            # `f16c-import model.onnx | head`: the reader left; not an error.
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0


if __name__ == "__main__":
    sys.exit(main())
