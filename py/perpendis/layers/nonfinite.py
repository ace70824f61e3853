"""Where NaN and infinity start in a capture: the first op that made one from finite inputs.

Apart from the bisect because it reads only one side's capture and what it records of each
node's inputs, never a comparison.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ..numerics.bits import to_float64

if TYPE_CHECKING:
    from .bisect import Entry


def nan_origin(entries: Sequence[Entry], info: Mapping[str, Mapping[str, Any]], side: str) -> dict[str, Any] | None:
    """The first value, in the capture's order, holding a NaN or an infinity while every captured
    value its node read is finite: the op that made the first non-finite value.

    As Polygraphy's and msprobe's overflow checks do, on an ONNX Runtime capture of every
    value (which records what each node read); None for a capture that does not record it.
    """
    if not any((info.get(e.name) or {}).get("inputs") for e in entries):
        return None
    finite: dict[str, bool] = {}
    for e in entries:
        t = e.load()
        values = np.asarray(t.array) if t.fmt.native or t.is_complex else to_float64(t.array, t.fmt)
        ok = True if values.dtype.kind not in "fc" else bool(np.isfinite(values).all())
        finite[e.name] = ok
        if ok:
            continue
        described = info.get(e.name) or {}
        if described.get("op_type") in (None, "input"):
            continue
        if all(finite.get(str(source), True) for source in described.get("inputs") or []):
            return {
                "side": side, "value": e.name, "op_type": described.get("op_type"), "node": described.get("node"),
                "module": described.get("module"), "inputs": list(described.get("inputs") or []),
            }
    return None
