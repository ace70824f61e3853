"""A quantised tensor (GGUF Q8_0, Q4_0, ...) judged against its format's grid, not float ULPs.

Quantising puts each value on its block's grid ``d * q + m``: the nearest grid point to
the original, clipped to the block's range.  So the honest question is not "how many
ULPs apart" (a Q4_0 value is thousands of float32 ULPs from its original by design) but
"is every dequantised value within its grid bound of the original clipped to its
block's range" (:func:`perpendis.inputs.formats.gguf.dequantise` gives both).  A pair where
every value is is an exact quantisation ("converted"); any value outside is a bug in the
conversion or a pairing of different tensors ("investigate"), and the row names the
worst one in steps of its block.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..numerics.bits import to_float64
from .inputs import GridHeader
from .report import TensorRow

if TYPE_CHECKING:
    from ..engine.stream import Source
    from .pairs import Task


def quantised_side(sa: Source, sb: Source) -> int | None:
    """Which side of a pair is the dequantised one (0: A, 1: B), or None."""
    for k, source in enumerate((sa, sb)):
        if isinstance(source.header, GridHeader) and source.header.grid:
            return k
    return None


def grid_row(task: Task, sa: Source, sb: Source, row: TensorRow) -> TensorRow:
    """``row`` (the pair's names, files, shapes) with the verdict and figures of its grid check."""
    k = quantised_side(sa, sb)
    quant, other = (sa, sb) if k == 0 else (sb, sa)
    values, bound, low, high = (x.astype(np.float64) for x in quant.header.grid)
    original = to_float64(other.values(0, other.size), other.fmt)
    err = np.abs(values - np.clip(original, low, high))
    off = ~(err <= bound)  # NaN in the original is off its grid too
    step = 2 * bound
    diff = np.abs(values - original)
    name = quant.header.quant
    row.dtype_a, row.dtype_b = (name, row.dtype_b) if k == 0 else (row.dtype_a, name)
    row.n_bitwise_diff = int(np.count_nonzero(values != original))
    largest = float(diff.max(initial=0.0))
    row.max_abs_diff = largest if np.isfinite(largest) else str(largest)
    row.fraction_fail = float(off.mean()) if off.size else 0.0
    worst = int(np.argmax(np.where(np.isnan(err), np.inf, err / step))) if err.size else 0
    in_steps = float(err[worst] / step[worst]) if err.size else 0.0
    if not off.any():
        row.verdict = "converted"
        row.description = (
            f"quantised to {name}: every value within half a step of its block's grid "
            f"(worst {in_steps:.2f} of a step, clipping to the block's range allowed)"
        )
        return row
    index = tuple(int(i) for i in np.unravel_index(worst, tuple(row.shape_a or ()))) if row.shape_a else (worst,)
    row.verdict = "investigate"
    row.description = (
        f"{int(off.sum())} of {off.size} values are off their {name} block's grid: the worst at {list(index)} is "
        f"{values[worst]:.6g} for {original[worst]:.6g}, {in_steps:.1f} steps away (half a step is rounding)"
    )
    return row
