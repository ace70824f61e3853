"""A side read from text that printed no dtype takes the other side's dtype.

``print(ndarray)``, a Python list or a list of ``float.hex`` strings says nothing of the
dtype, and the parser assumes float64.  Against a float32 side that would be a dtype
mismatch the user never had.  So when every printed value is a value of the other side's
float format (exactly, or within what a coarse print resolves), the text side is read in that format and a
note says so; otherwise it keeps the assumed dtype and the comparison says why.
"""

from __future__ import annotations

import numpy as np

from ..numerics import bits
from .tensor import Tensor
from .text.numbers import digits_needed


def _fits(values: np.ndarray, rounded: np.ndarray, lossless: bool) -> bool:
    """Every value is one of the other format's: exactly, for a print that pins its values;
    in range, for a print too coarse to tell the two formats' values apart."""
    finite = np.isfinite(values)
    if not np.array_equal(np.isfinite(rounded), finite):
        return False  # overflow: a value the other format cannot hold
    return not lossless or bool(np.all(rounded[finite] == values[finite]))


def adopt_dtype(a: Tensor, b: Tensor) -> tuple[Tensor, Tensor, list[str]]:
    """``a`` and ``b``, the one whose dtype was assumed read in the other's float format
    when all its values fit it, and the note that says so (none when nothing changed)."""
    out = {"A": a, "B": b}
    notes = []
    for side, x, y in (("A", a, b), ("B", b, a)):
        if not x.dtype_assumed or y.dtype_assumed or x.fmt == y.fmt or not (x.fmt.is_float and y.fmt.is_float):
            continue
        values = bits.to_float64(x.array, x.fmt)
        stored = bits.from_float64(values, y.fmt)
        if not _fits(values, bits.to_float64(stored, y.fmt), x.lossless):
            continue
        how = "is exact" if x.lossless else f"reads as one (its {x.digits} digits cannot tell the two apart)"
        note = f"{side} printed no dtype: read as {y.format}, the other side's, in which every printed value {how}"
        lossless = x.lossless or (x.digits is not None and x.digits >= digits_needed(y.fmt))
        out[side] = Tensor(
            stored.reshape(x.shape),
            y.format,
            x.source,
            x.name,
            lossless,
            None if lossless else x.digits,
            [*x.notes, note],
            x.decimals,
            True,
            x.is_complex,
        )
        notes.append(note)
    return out["A"], out["B"], notes
