"""A capture's file on disk and the ONNX model beside it, as bisect reads them before pairing:
what the file records of its tensors (:mod:`.capture.store`), whether it kept their order
(:mod:`.bisect_order`), and what the model says of each value, put on the side that holds it.
Re-exported by :mod:`.bisect`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..errors import InputError, blame
from ..inputs.formats import safetensors
from .bisect_report import few


def _head(path: Path) -> bytes:
    """A capture file's first bytes, through a safetensors header (what its metadata says is
    there); empty for a folder, standard input or a file that cannot be read."""
    if path.is_dir() or str(path) == "-":
        return b""
    try:
        with path.open("rb") as file:
            head = file.read(8)
            if len(head) < 8:
                return head
            return head + file.read(min(int.from_bytes(head, "little"), 2**27))
    except OSError:
        return b""


def path_info(path: Path) -> dict[str, dict[str, Any]]:
    """What a capture file records of each tensor (module, op type), or ``{}``: see :mod:`.capture.store`."""
    from .capture.store import read_info

    head = _head(path)
    return read_info(head) if len(head) > 8 else {}


def path_records_order(path: Path) -> bool:
    """Whether a capture on disk gives its tensors in the order they were saved: see :mod:`.bisect_order`."""
    return safetensors.records_order(_head(path))


def model_values(model: Path) -> dict[str, dict[str, Any]]:
    """What the ONNX model (``--model``) says of each value it computes, in graph order."""
    from ..inputs.formats.onnx_model import check_model, describe, read_graph

    with blame("model", model.name):
        try:
            check_model(model)  # a file that is no model is refused from its first bytes
            data = model.read_bytes()
        except OSError as err:
            raise InputError(f"cannot read {model}: {err.strerror or err}", where=str(model)) from None
        return describe(read_graph(data))


def model_info(
    model: Path | None, a_names: Sequence[str], b_names: Sequence[str], info_a: dict, info_b: dict
) -> tuple[dict, dict]:
    """Each side's descriptions, the ONNX model's (``--model``) given to the side that holds its values.

    What the model says of a value takes the place of what the capture recorded; the side
    is the one naming more of the model's values (the other is the PyTorch run).
    """
    if model is None:
        return info_a, info_b
    return described_by(model_values(model), a_names, b_names, info_a, info_b)


def described_by(
    values: Mapping[str, Any], a_names: Sequence[str], b_names: Sequence[str], info_a: dict, info_b: dict
) -> tuple[dict, dict]:
    """Put a model's value descriptions on the side whose names they are; an error when neither side's are."""
    in_a, in_b = sum(n in values for n in a_names), sum(n in values for n in b_names)
    if not in_a and not in_b:
        raise InputError(
            f"the ONNX model computes none of the tensors of either capture (its values: {few(values)}); "
            "give the model the ONNX capture was run from",
            where="model",
        )
    if in_b >= in_a:
        return info_a, {**info_b, **{n: values[n] for n in b_names if n in values}}
    return {**info_a, **{n: values[n] for n in a_names if n in values}}, info_b
