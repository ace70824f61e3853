"""The peers' arithmetic: in which format each operation of a tolerance test rounds.

torch, numpy and Polygraphy compute ``|a - b|`` and ``atol + rtol * |b|`` in the
tensors' own format (or a wider "opmath" one), each operation rounded; reproducing that
rounding is what makes a verdict agree with theirs element for element.  Apart from the
presets and the test (:mod:`.tolerance`, :mod:`.tolerance_complex`), which both use it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from . import bits
from .bits import Format

if TYPE_CHECKING:
    from .tolerance import Rule


def working_formats(fmt: Format, rule: Rule) -> tuple[Format | None, Format | None]:
    """The format each operation of the rule's test rounds to, and the one atol and rtol
    are taken in; None for exact float64 (also for formats the peer has no arithmetic
    of: integers are compared as float64 by numpy and Polygraphy, exactly by torch; float8
    only ever exactly by torch; numpy has no bfloat16)."""
    if rule.arithmetic == "float64" or not fmt.is_float or fmt.width == 8:
        return None, None
    if rule.arithmetic == "numpy" and fmt.name == "bfloat16":
        return None, None
    if rule.arithmetic == "polygraphy" and fmt.name == "float16":
        work = bits.FORMATS["float32"]
        return work, work
    if rule.arithmetic == "torch":  # scalars in the "opmath" type: float32 below float64
        return fmt, bits.FORMATS["float64" if fmt.width == 64 else "float32"]
    return fmt, fmt


def rounded_to(values: np.ndarray, fmt: Format | None) -> np.ndarray:
    """float64 values rounded (nearest, ties to even) to ``fmt``, as float64 again.

    An operation done exactly (or in float64) and rounded once to a format of p bits is
    that format's own operation: float64 has at least 2p + 2 bits for every p here.
    """
    if fmt is None or fmt.name == "float64":
        return values
    with np.errstate(over="ignore", invalid="ignore"):
        if fmt.native:
            return values.astype(fmt.storage).astype(np.float64)
        return bits.to_float64(bits.from_float64(values, fmt), fmt)


def scalar_in(x: float, fmt: Format | None) -> float:
    """A Python float (atol, rtol) as the peer holds it in ``fmt``."""
    return x if fmt is None else float(rounded_to(np.array([x]), fmt)[0])
