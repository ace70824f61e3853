"""``python -m perpendis capture`` and ``check-export``: argument parsing and exit codes only.

``capture model.onnx --input x.npy [--input name=y.npy] -o ort.safetensors`` runs ONNX
Runtime with every value marked as an output and saves them all.  ``check-export``
does the same for a saved model and bisects it against a PyTorch capture of the same
input.  Exit 0 clean, 1 when a layer must be investigated, 2 on bad input.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from .errors import InputError, blame
from .load import load_path


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
        if len(tensors) != 1:
            raise InputError(f"{file} holds {len(tensors)} tensors; give one array per --input", where=file)
        array = tensors[0].array
        if name:
            if name in named:
                raise InputError(f"--input names {name!r} twice", where="--input")
            named[name] = array
        else:
            positional.append(array)
    if named and positional:
        raise InputError("give every --input as NAME=FILE, or none of them: mixed, which file feeds which input is unclear")
    if not named and not positional:
        raise InputError("give the model's input with --input FILE.npy (or --input NAME=FILE.npy for each input)")
    return named or positional


def _capture_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m perpendis capture",
        description="Run an ONNX model in ONNX Runtime with every intermediate value marked as an output, "
        "and save every value in topological order with its op type and the exporter's module path.",
    )
    p.add_argument("model", type=Path, help="the .onnx model (not modified)")
    p.add_argument("--input", action="append", default=[], metavar="[NAME=]FILE", help="an input array (repeatable)")
    p.add_argument("-o", "--output", type=Path, required=True, help="where to save: .safetensors (keeps op types) or .npz")
    p.add_argument("--provider", help="ONNX Runtime execution provider (default CPUExecutionProvider)")
    return p


def capture_main(argv: Sequence[str]) -> int:
    args = _capture_parser().parse_args(argv)
    try:
        from .capture.onnx import capture_onnx

        if args.output.suffix not in (".safetensors", ".npz"):
            raise InputError(f"save the capture as .safetensors or .npz, not {args.output.name}", where="-o")
        run = capture_onnx(args.model, read_inputs(args.input), provider=args.provider)
        run.save(args.output)
    except InputError as err:
        print(f"perpendis capture: {err}", file=sys.stderr)
        return 2
    print(f"{len(run)} values of {args.model.name} saved to {args.output}")
    return 0


def main(argv: Sequence[str]) -> int:
    if argv[0] == "capture":
        return capture_main(argv[1:])
    return check_export_main(argv[1:])
