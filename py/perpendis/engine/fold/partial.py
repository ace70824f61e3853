"""The partial result of a fold, as data: each statistic declares once how it merges and
how it is written to bytes.

A chunk's :class:`Partial` holds only what merges exactly (counts, first indices, maxima
with their index, histograms, per-axis failure counts, sums) plus bounded samples; two
partials merge field by field, by the rule each field declares (:data:`STATS`), and
:mod:`.codec` writes and reads each by the encoding its rule names.  Adding a statistic is
one declaration here and its computation in :mod:`.chunk` (and, when the report shows it,
in :mod:`.numbers`).
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from typing import Any, NamedTuple

import numpy as np

from .exact import ExactSum
from .reservoir import Sample
from .ulp_histogram import HIST_BINS

ERROR_SAMPLE_CAP = 1 << 21  # non-zero errors kept for percentiles; exact below this many
PATTERN_SAMPLE_CAP = 4096  # (flat, a, b) rows of differing and failing elements, for diagnosis
INDEX_CAP = 8  # first NaN/Inf mismatch indices reported
AXIS_CAP = 1024  # entries per axis in failure counts; longer axes are bucketed


class Pick(NamedTuple):
    """One element picked out by a metric (the worst, the first): where it is and its bits."""

    metric: float
    flat: int
    raw_a: int
    raw_b: int


def pick(metric: np.ndarray, mask: np.ndarray | None, flat: np.ndarray, da: np.ndarray, db: np.ndarray) -> Pick | None:
    """The element with the largest ``metric`` where ``mask`` holds (None: everywhere), first on ties."""
    if mask is None:
        i = int(np.argmax(metric))
    elif not mask.any():
        return None
    else:
        i = int(np.flatnonzero(mask)[np.argmax(metric[mask])])
    return Pick(metric[i].item(), int(flat[i]), int(da[i]), int(db[i]))


def buckets(size: int) -> int:
    """Indices per failure-count entry, so that an axis has at most AXIS_CAP entries."""
    return max(1, -(-size // AXIS_CAP))


def axis_counts(shape: tuple[int, ...]) -> list[np.ndarray]:
    """Empty per-axis failure counts for a comparison of ``shape``."""
    return [np.zeros(-(-n // buckets(n)), dtype=np.int64) for n in shape]


# ---------------------------------------------------------------------------------------
# Merge rules: how two partials' values of one statistic become one.


@dataclass(frozen=True)
class Rule:
    """How a statistic merges, and the encoding :mod:`.codec` writes it in: ``number`` (JSON),
    ``pick`` (a :class:`Pick` or None), ``exact`` (an :class:`ExactSum`), ``array`` (one
    array), ``arrays`` (a list of arrays) or ``sample`` (a :class:`Sample`)."""

    merge: Callable[[Any, Any], Any]
    encoding: str


def _worst(p: Pick | None, q: Pick | None) -> Pick | None:
    """The larger metric, the earlier element on ties."""
    if p is None or q is None:
        return p if q is None else q
    return q if (q.metric, -q.flat) > (p.metric, -p.flat) else p


def _first(p: Pick | None, q: Pick | None) -> Pick | None:
    """The earlier element."""
    if p is None or q is None:
        return p if q is None else q
    return p if p.flat <= q.flat else q


def _lowest(x: list[int], y: list[int]) -> list[int]:
    return sorted(x + y)[:INDEX_CAP]


def _each(x: list[np.ndarray], y: list[np.ndarray]) -> list[np.ndarray]:
    return [u + v for u, v in zip(x, y, strict=True)]


def _errors(x: Sample, y: Sample) -> Sample:
    return x.merge(y, ERROR_SAMPLE_CAP)  # read when merging, so a test may lower the cap


def _patterns(x: Sample, y: Sample) -> Sample:
    return x.merge(y, PATTERN_SAMPLE_CAP)


COUNT = Rule(operator.add, "number")
LARGEST = Rule(max, "number")
LOWEST_INDICES = Rule(_lowest, "number")  # the first INDEX_CAP flat indices
FIRST = Rule(_first, "pick")
WORST = Rule(_worst, "pick")
EXACT_SUM = Rule(operator.add, "exact")
HISTOGRAM = Rule(operator.add, "array")
PER_AXIS = Rule(_each, "arrays")
ERRORS = Rule(_errors, "sample")
PATTERNS = Rule(_patterns, "sample")


def by(rule: Rule, **wire: str) -> dict[str, Any]:
    """The metadata of a field of :class:`Partial` merged by ``rule``; ``wire`` may rename it in the bytes."""
    return {"rule": rule, **wire}


# ---------------------------------------------------------------------------------------
# The statistics.


@dataclass
class Partial:
    """What one or more chunks contribute to the report; merges exactly except for samples."""

    n: int = field(default=0, metadata=by(COUNT))
    n_diff: int = field(default=0, metadata=by(COUNT))
    first_diff: Pick | None = field(default=None, metadata=by(FIRST))
    worst_abs: Pick | None = field(default=None, metadata=by(WORST))
    worst_ulp: Pick | None = field(default=None, metadata=by(WORST))
    worst_rel: Pick | None = field(default=None, metadata=by(WORST))
    n_nan: int = field(default=0, metadata=by(COUNT))
    nan_flat: list[int] = field(default_factory=list, metadata=by(LOWEST_INDICES))
    n_inf: int = field(default=0, metadata=by(COUNT))
    inf_flat: list[int] = field(default_factory=list, metadata=by(LOWEST_INDICES))
    n_signed_zero: int = field(default=0, metadata=by(COUNT))
    hist: np.ndarray = field(default_factory=lambda: np.zeros(HIST_BINS, dtype=np.int64), metadata=by(HISTOGRAM))
    ulp_nonfinite: int = field(default=0, metadata=by(COUNT))
    # elements left out of the stats: non-finite on either side
    n_excluded: int = field(default=0, metadata=by(COUNT))
    sum_abs: ExactSum = field(default_factory=ExactSum, metadata=by(EXACT_SUM))
    sum_rel: ExactSum = field(default_factory=ExactSum, metadata=by(EXACT_SUM))
    sum_sq: ExactSum = field(default_factory=ExactSum, metadata=by(EXACT_SUM))
    sum_bb: ExactSum = field(default_factory=ExactSum, metadata=by(EXACT_SUM))
    sum_aa_minus_bb: ExactSum = field(default_factory=ExactSum, metadata=by(EXACT_SUM))
    sum_ab_minus_bb: ExactSum = field(default_factory=ExactSum, metadata=by(EXACT_SUM))
    # rows (flat, abs, rel) of non-zero finite errors
    errors: Sample = field(default_factory=Sample, metadata=by(ERRORS))
    n_fail: int = field(default=0, metadata=by(COUNT))
    first_fail: Pick | None = field(default=None, metadata=by(FIRST))
    # metric: the ordered bits of |a - b| as the rule computes it, NaN topmost
    worst_fail: Pick | None = field(default=None, metadata=by(WORST))
    # failures no tolerance passes: a NaN or an infinity on either side
    n_unreachable: int = field(default=0, metadata=by(COUNT))
    axis_fails: list[np.ndarray] = field(default_factory=list, metadata=by(PER_AXIS, name="axis", count="n_axes"))
    # failures within what a lossy print can resolve, counted as passing
    n_print_limited: int = field(default=0, metadata=by(COUNT))
    need_atol: float = field(default=0.0, metadata=by(LARGEST))
    need_rtol: float = field(default=0.0, metadata=by(LARGEST))
    # rows (flat, a, b) of differing and of failing elements
    diffs: Sample = field(default_factory=Sample, metadata=by(PATTERNS))
    fails: Sample = field(default_factory=Sample, metadata=by(PATTERNS))

    def merge(self, o: Partial) -> Partial:
        """This partial and ``o`` as one, each statistic merged by its rule."""
        return Partial(**{f.name: f.metadata["rule"].merge(getattr(self, f.name), getattr(o, f.name)) for f in STATS})


STATS = fields(Partial)
"""The declared statistics, in the order of :class:`Partial`'s fields."""
