"""``python -m perpendis capture`` and ``check-export``: argument parsing and exit codes only.

``capture model.onnx --input x.npy [--input name=y.npy] -o ort.safetensors`` runs ONNX
Runtime with every value marked as an output and saves them all.  ``check-export``
does the same for a saved model and bisects it against a PyTorch capture of the same
input.  Exit 0 clean, 1 when a layer must be investigated, 2 on bad input.

Unlike the plain command, ``bisect`` and ``checkpoints``, these two do not go through the
service (:func:`perpendis.service.serve`): their work is running models, PyTorch and ONNX
Runtime, which the service never imports (the page's worker has neither), and the page
has no op for it.  What they produce are captures, which ``perpendis bisect`` (through
the service) compares; ``check-export``'s own layer-by-layer comparison is
:func:`perpendis.layers.capture.check.bisect_runs_of`, one step with the runs and the
isolation of each layer in ONNX Runtime.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import InputError, blame
from ..inputs.load import load_path, only_tensor
from . import exits


def read_inputs(items: Sequence[str]) -> list[np.ndarray] | dict[str, np.ndarray]:
    """``--input FILE`` (the model's inputs in order) or ``--input NAME=FILE``, not both."""
    named: dict[str, np.ndarray] = {}
    positional: list[np.ndarray] = []
    for item in items:
        name, sep, file = item.partition("=")
        if not sep or Path(item).exists():
            name, file = "", item
        with blame("input", file):
            tensors = load_path(file)
        array = only_tensor(tensors, file, "give one array per --input", where=file).array
        if name:
            if name in named:
                raise InputError(f"--input names {name!r} twice", where="--input")
            named[name] = array
        else:
            positional.append(array)
    if named and positional:
        raise InputError("give every --input as NAME=FILE, or none of them: mixed, which file feeds what is unclear")
    if not named and not positional:
        raise InputError("give the model's input with --input FILE.npy (or --input NAME=FILE.npy for each input)")
    return named or positional


def _parser(command: str, description: str, model_help: str) -> argparse.ArgumentParser:
    """The parser of a command run on an ONNX model and its inputs."""
    p = argparse.ArgumentParser(prog=f"python -m perpendis {command}", description=description)
    p.add_argument("model", type=Path, help=model_help)
    p.add_argument("--input", action="append", default=[], metavar="[NAME=]FILE", help="an input array (repeatable)")
    return p


def _capture_parser() -> argparse.ArgumentParser:
    p = _parser(
        "capture",
        "Run an ONNX model in ONNX Runtime with every intermediate value marked as an output, "
        "and save every value in topological order with its op type and the exporter's module path.",
        "the .onnx model (not modified)",
    )
    p.add_argument(
        "-o", "--output", type=Path, required=True, help="where to save: .safetensors (keeps op types) or .npz"
    )
    p.add_argument("--provider", help="ONNX Runtime execution provider (default CPUExecutionProvider)")
    return p


def capture_main(argv: Sequence[str]) -> int:
    args = _capture_parser().parse_args(argv)
    from ..layers.capture.onnx import capture_onnx

    if args.output.suffix not in (".safetensors", ".npz"):
        raise InputError(f"save the capture as .safetensors or .npz, not {args.output.name}", where="-o")
    run = capture_onnx(args.model, read_inputs(args.input), provider=args.provider)
    run.save(args.output)
    print(f"{len(run)} values of {args.model.name} saved to {args.output}")
    return 0


def _check_parser() -> argparse.ArgumentParser:
    from .options import add_tolerance_options

    p = _parser(
        "check-export",
        "Run a saved ONNX model in ONNX Runtime and its PyTorch model (or a capture of it) on one "
        "input, bisect the two runs layer by layer and run each layer alone to name the culprit.",
        "the exported .onnx model",
    )
    side = p.add_mutually_exclusive_group(required=True)
    side.add_argument("--torch", type=Path, metavar="CAPTURE", help="a capture of the PyTorch run (perpendis.capture)")
    side.add_argument(
        "--module", metavar="FILE.py:NAME",
        help="a Python file and the name in it of the torch.nn.Module, or of a function returning one",
    )
    p.add_argument("--json", action="store_true", help="print the bisect report as JSON")
    p.add_argument(
        "--model-explorer", type=Path, metavar="OUT.json",
        help="also write Google Model Explorer node data for the model, one figure per file, as "
        "`bisect --model-explorer` does (docs/model-explorer.md)",
    )
    add_tolerance_options(p)
    return p


def _torch_run(args: argparse.Namespace, feeds: list[np.ndarray] | dict[str, np.ndarray]) -> tuple[Any, dict]:
    """The PyTorch capture, and :func:`~..layers.bisect.bisect`'s ``order`` keywords for it: a
    ``--torch`` file that kept no order (safetensors without ``order``) is put in the model's graph order."""
    from ..layers.capture.store import Capture

    if args.torch is not None:
        from ..layers.bisect import model_values, path_info, path_records_order
        from ..layers.bisect_order import ordered

        with blame("torch", str(args.torch)):
            tensors = load_path(args.torch)
        kept = (path_records_order(args.torch), True)
        tensors, _, order = ordered(tensors, [], kept, model_values(args.model), (str(args.torch), "ONNX Runtime"),
                                    ({}, {}))
        run = Capture()
        with blame("torch", str(args.torch)):
            for t in tensors:
                run.add(t.name, t.array)
        run.info.update(path_info(args.torch))
        return run, order
    import importlib.util

    import torch

    file, _, name = args.module.rpartition(":")
    spec = importlib.util.spec_from_file_location(Path(file).stem, file) if file else None
    if spec is None or spec.loader is None or not Path(file).is_file():
        raise InputError(f"--module takes FILE.py:NAME, got {args.module!r}", where="--module")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    if not hasattr(module, name):
        raise InputError(f"{file} defines no {name!r}", where="--module")
    model = getattr(module, name)
    model = model if isinstance(model, torch.nn.Module) else model()
    if isinstance(model, tuple):
        model = model[0]
    model.eval()
    from ..layers.capture.torch import capture

    tensors = [torch.from_numpy(np.array(a)) for a in (feeds.values() if isinstance(feeds, dict) else feeds)]
    with torch.no_grad(), capture(model) as run:
        model(*tensors)
    return run, {}


def check_export_main(argv: Sequence[str]) -> int:
    args = _check_parser().parse_args(argv)
    from ..layers.capture.check import bisect_runs_of
    from .options import comparison_options

    feeds = read_inputs(args.input)
    run, order = _torch_run(args, feeds)
    result = bisect_runs_of(run, args.model, feeds, comparison_options(args), **order)
    if args.model_explorer is not None:
        from ..layers.model_explorer import write_model_explorer

        written = write_model_explorer(result, args.model, args.model_explorer)
        print(f"Model Explorer node data: {', '.join(str(p) for p in written.values())}", file=sys.stderr)
    print(result.to_json(indent=1) if args.json else result.to_text(), end="\n" if args.json else "")
    return exits.judged(result.must_investigate)


def main(argv: Sequence[str]) -> int:
    if argv[0] == "capture":
        return capture_main(argv[1:])
    return check_export_main(argv[1:])
