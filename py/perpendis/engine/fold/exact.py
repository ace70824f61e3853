"""Sums of floats held exactly, so that partials merged in any grouping give one total."""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class ExactSum:
    """A sum of floats held exactly, as a whole number of 2**-1074 (the smallest float).

    Partials merge in whatever grouping the work was split into (chunks in order, ranges
    on several workers); an exact sum makes the total the same in every grouping, rounded
    once at the end, where adding float partial sums would depend on the grouping.
    """

    scaled: int = 0
    special: float = 0.0  # the sum of the non-finite terms: 0, inf, -inf or nan

    @staticmethod
    def of(x: float) -> ExactSum:
        if not math.isfinite(x):
            return ExactSum(0, x)
        num, den = x.as_integer_ratio()
        return ExactSum(num * ((1 << 1074) // den))

    def __add__(self, other: ExactSum) -> ExactSum:
        return ExactSum(self.scaled + other.scaled, self.special + other.special)

    def value(self) -> float:
        if self.special != 0 or math.isnan(self.special):
            return self.special
        try:
            return self.scaled / (1 << 1074)  # int / int rounds correctly
        except OverflowError:
            return math.inf if self.scaled > 0 else -math.inf

