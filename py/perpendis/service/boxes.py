"""The boxes of a request read into tensors: one box may hold pasted text, a file, or a
list of files; every error names its box."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..errors import InputError, SummarisedPrint, blame
from ..inputs.formats import npy
from ..inputs.formats.buffer import as_view
from ..inputs.load import load_bytes, load_text, only_tensor
from ..inputs.tensor import Tensor


def is_empty(spec: object) -> bool:
    return spec is None or (isinstance(spec, Mapping) and "data" not in spec and not str(spec.get("text", "")).strip())


def _load_one(spec: Mapping[str, Any], payloads: Mapping[str, Any], void_format: str | None) -> list[Tensor]:
    if "data" in spec:
        return load_bytes(payloads[spec["data"]], spec.get("name"), void_format=void_format)
    if "text" in spec:
        return load_text(spec["text"])
    raise InputError("the input holds neither pasted text nor a file")


def load(spec: object, payloads: Mapping[str, Any], side: str, void_format: str | None = None) -> list[Tensor]:
    """The tensors of one input (or of a list of inputs), with errors tagged by side; a
    :class:`Tensor` is an input a front end in Python has read already (the CLI)."""
    if isinstance(spec, Tensor):
        return [spec]
    with blame(side):
        if is_empty(spec):
            raise InputError(f"box {side.upper()} is empty: paste a tensor or drop a file")
        specs = spec if isinstance(spec, list) else [spec]
        return [t for s in specs for t in _load_one(s, payloads, void_format)]


def load_a(inputs: Mapping[str, Any], payloads: Mapping[str, Any], void: Mapping[str, str]) -> list[Tensor]:
    """Box A's tensors. When A is a summarised print, box B is read too: if it is one as
    well, the one error names both boxes, so that both are printed again at once rather than
    A now and B after the next Compare."""
    try:
        return load(inputs.get("a"), payloads, "a", void.get("a"))
    except SummarisedPrint as in_a:
        if is_empty(inputs.get("b")):
            raise
        try:
            load(inputs.get("b"), payloads, "b", void.get("b"))
        except SummarisedPrint as in_b:
            fixes = in_a.fix if in_a.fix == in_b.fix else f"{in_a.fix} for A and {in_b.fix} for B"
            raise InputError(
                "both boxes hold summarised prints: '...' stands for values that were not printed; print "
                f"everything with {fixes} and paste both again",
                where=f"A {in_a.where}, B {in_b.where}",
                side="a",
                sides=("a", "b"),
            ) from in_b
        except InputError:
            pass  # B's own problem is told once A is fixed
        raise


def several(count_a: int, count_b: int) -> bool:
    """Whether boxes holding these numbers of tensors are compared pair by pair."""
    return count_a > 1 or count_b > 1


def single(tensors: list[Tensor], side: str) -> Tensor:
    """The one tensor of box ``side``, the box's wording for :func:`only_tensor`."""
    hint = "put one tensor in each box, or compare archives member by member with bisect"
    return only_tensor(tensors, f"box {side.upper()}", hint, named=True, side=side)


def void_choices(spec: object, payloads: Mapping[str, Any]) -> list[str]:
    """The formats a ``.npy`` file's anonymous void elements can be read as; empty for other inputs.

    ``np.save`` of an ml_dtypes array writes only the element width, so the page offers
    these to re-read the file as the format it really held.  A descr that does name its
    format (ml_dtypes' ``'<f1'`` for float8_e5m2) offers just that one.
    """
    if not (isinstance(spec, Mapping) and "data" in spec):
        return []
    view = as_view(payloads[spec["data"]])
    if bytes(view[: len(npy.MAGIC)]) != npy.MAGIC:
        return []
    header = npy.read_header(view)
    if header.dtype.kind != "V":
        return []
    return [f for f in npy.VOID_FORMATS[header.itemsize] if npy.read_header(view, void_format=f).format == f]
