"""Whether a set of values can say which float format they were computed in.

Small integers (and 0.5, 0.25 …) are exact in every float format, so values that are all
of them say nothing about bfloat16 or float16: an int8 wrap stored as float32, a rounded
grid, a class index. Evidence of a format comes only from enough distinct non-integers.
"""

from __future__ import annotations

import numpy as np

# Distinct non-integer values needed before "every value is a float16 value" means float16.
MIN_DISTINCT_FRACTIONS = 16


def says_format(values: np.ndarray) -> bool:
    """Whether ``values`` (float64) hold enough distinct non-integers to tell a format."""
    with np.errstate(invalid="ignore"):
        fractional = values[np.isfinite(values) & (values != np.round(values))]
    return np.unique(fractional).size >= MIN_DISTINCT_FRACTIONS
