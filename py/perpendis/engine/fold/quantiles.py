"""Where the report's error quantiles lie among a sample's stored errors, and their values."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from .partial import Partial

QUANTILES = {"p50": 0.5, "p90": 0.9, "p99": 0.99, "p999": 0.999}
"""The error quantiles the report gives, by name."""

ERROR_COLUMNS = {"abs": 1, "rel": 2}
"""The columns of the error sample's rows ``(flat, abs, rel)`` the quantiles are taken of."""


@dataclass(frozen=True)
class Ranks:
    """Where the values of the quantiles of ``n_total`` errors lie among a sample's
    ``n_kept`` stored ones: the ``n_nonzero`` non-zero errors (all of them, or a uniform
    sample), the zeros coming first in sorted order and never stored."""

    n_kept: int
    n_nonzero: int
    n_total: int

    @classmethod
    def of(cls, p: Partial) -> Ranks:
        """Those of a partial's errors (pairs finite on both sides count)."""
        kept = min(p.errors.kept, p.errors.cap) if p.errors.cap else p.errors.kept
        return cls(kept, p.errors.count, p.n - p.n_excluded)

    def __add__(self, other: Ranks) -> Ranks:
        """Those of two partials' errors merged, when neither sample was cut (their rows put together)."""
        return Ranks(self.n_kept + other.n_kept, self.n_nonzero + other.n_nonzero, self.n_total + other.n_total)

    def rank(self, i: int) -> int | None:
        """Where the ``i``-th smallest of all errors sits among the stored ones; None for a zero."""
        j = i - (self.n_total - self.n_nonzero)
        if j < 0:
            return None
        return j if self.n_kept == self.n_nonzero else round(j * (self.n_kept - 1) / max(self.n_nonzero - 1, 1))

    def positions(self) -> list[float]:
        return [q * (self.n_total - 1) for q in QUANTILES.values()]

    def wanted(self) -> list[int]:
        """The ranks among the stored values that the quantiles need, sorted."""
        near = {i for pos in self.positions() for i in (math.floor(pos), math.floor(pos) + 1) if i < self.n_total}
        return sorted({r for i in near if (r := self.rank(i)) is not None})

    def quantiles(self, at: Mapping[int, float]) -> list[float | None]:
        """The quantiles (linear interpolation, as NumPy's default), from the values ``at`` the wanted ranks."""
        if self.n_total == 0:
            return [None] * len(QUANTILES)

        def value(i: int) -> float:
            r = self.rank(i)
            return 0.0 if r is None else at[r]

        out: list[float | None] = []
        for pos in self.positions():
            lo = math.floor(pos)
            frac = pos - lo
            low = value(lo)
            if frac == 0 or lo + 1 >= self.n_total:
                out.append(low)
                continue
            high = value(lo + 1)
            out.append(high if math.isinf(high) else low + frac * (high - low))
        return out

