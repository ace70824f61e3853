"""What the form search reads of a pair: both sides in float64, the tolerance a relation
is held to, and the one test every form is judged by (:meth:`View.close`).

A form is a relation ``A = T(B)`` found by its shape, not looked up: its parameters are
fitted on a sample and it is then checked element by element.  The check is the user's
own tolerance test, ``|A − T(B)| <= atol + rtol·|T(B)|``, floored at the rounding the
data's format allows (a relation computed in float32 carries a few roundings of its own),
and a form is stated only when it holds on :data:`HOLDS` of the elements it can judge.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from ....numerics import bits
from ..pair import Pair
from ..rounding_model import ROUNDOFF_FACTOR

HOLDS = 0.99  # share of the judged elements a form must bring within the tolerance
FULL_CAP = 1 << 22  # elements read whole; a larger pair is read through a flat sample
MIN_ELEMENTS = 16


@dataclass
class View:
    """Both sides of an in-memory pair as float64 arrays of the compared shape (or, past
    :data:`FULL_CAP`, a flat sample of them with ``whole`` False)."""

    a: np.ndarray
    b: np.ndarray
    shape: tuple[int, ...]
    atol: float
    rtol: float
    integer: bool  # both sides hold integers only (an integer dtype, or floats that are)
    whole: bool
    flat_index: np.ndarray | None = None  # the sample's flat indices when not whole
    raw: tuple[np.ndarray, np.ndarray] | None = None  # each side's element bits as unsigned ints, flat (whole only)
    _cache: dict = field(default_factory=dict)

    def memo(self, key: str, compute: Callable[[View], Any]) -> Any:
        """``compute(self)``, computed once per view: for a reading several forms test."""
        if key not in self._cache:
            self._cache[key] = compute(self)
        return self._cache[key]

    def close(self, a: np.ndarray, t: np.ndarray) -> np.ndarray:
        """Element by element: A within the tolerance of T(B), infinities and NaNs equal
        only to themselves."""
        with np.errstate(invalid="ignore", over="ignore"):
            ok = np.abs(a - t) <= self.atol + self.rtol * np.abs(t)
        same = (a == t) | (np.isnan(a) & np.isnan(t))
        return ok | same

    def share(self, a: np.ndarray, t: np.ndarray, judged: np.ndarray | None = None) -> tuple[float, int]:
        """The share of the judged elements where A = T(B), and how many were judged."""
        ok = self.close(a, t)
        if judged is not None:
            ok = ok[judged]
        n = int(ok.size)
        return (float(np.mean(ok)) if n else 0.0), n

    @cached_property
    def identity_share(self) -> float:
        return self.share(self.a, self.b)[0]

    @cached_property
    def orders(self) -> tuple[np.ndarray, np.ndarray]:
        """Each side's flat indices in ascending order of value (NaNs last, equal values in
        no set order), sorted once for the forms that pair the two sides' values by rank."""
        return np.argsort(self.a.ravel()), np.argsort(self.b.ravel())

    @cached_property
    def differing(self) -> np.ndarray:
        """Where A ≠ B beyond the tolerance: what a form must explain."""
        return ~self.close(self.a, self.b)


def view_of(pair: Pair) -> View | None:
    """The form search's view of a pair: in memory, with more than a handful of elements
    that differ beyond the tolerance; None otherwise (a streamed pair keeps only a sample
    of its differences, which cannot show an index map or a group)."""
    if not pair.in_memory or pair.n_elements < MIN_ELEMENTS:
        return None
    v = _view(pair)
    if v is None or int(np.count_nonzero(v.differing)) < 2 or v.identity_share >= 1.0:
        return None
    return v


def few_view(pair: Pair) -> View | None:
    """The view of a pair of fewer than :data:`MIN_ELEMENTS` values (a loss, a metric), when
    one of them differs: only a form for a few values (:mod:`.few_values`) reads it."""
    if not pair.in_memory or pair.n_elements >= MIN_ELEMENTS:
        return None
    v = _view(pair)
    return v if v is not None and v.differing.any() else None


def _view(pair: Pair) -> View | None:
    fmt = pair.fmt
    a_store, b_store = np.asarray(pair.a_store), np.asarray(pair.b_store)
    whole = pair.n_elements <= FULL_CAP
    flat_index = None
    if whole:
        a = bits.to_float64(a_store, fmt).reshape(pair.shape)
        b = bits.to_float64(b_store, fmt).reshape(pair.shape)
    else:
        got = pair.flat
        if got is None:
            return None
        flat_index, a, b = got
    atol, rtol = pair.tolerance or (0.0, 0.0)
    if fmt.is_float:
        # A relation computed in the data's format carries a few roundings of its own.
        floor = ROUNDOFF_FACTOR * fmt.unit_roundoff * max(pair.depth, 1.0)
        rtol = max(rtol, floor)
        atol = max(atol, floor * 1e-3 * pair.b_rms)
    finite = np.isfinite(a) & np.isfinite(b)
    integer = (not fmt.is_float) or bool(
        finite.any() and np.all(a[finite] == np.round(a[finite])) and np.all(b[finite] == np.round(b[finite]))
        and np.max(np.abs(b[finite]), initial=0) < 2.0 ** (fmt.man_bits + 1))
    return View(a, b, tuple(pair.shape), float(atol), float(rtol), integer, whole, flat_index,
                _raw(a_store, b_store, fmt.width) if whole else None)


def _raw(a_store: np.ndarray, b_store: np.ndarray, width: int) -> tuple[np.ndarray, np.ndarray] | None:
    """Both sides' stored bits as unsigned integers of the format's width, for forms on the
    bytes themselves; None for a width that is not a whole number of bytes over one."""
    if width not in (16, 32, 64):
        return None
    unsigned = np.dtype(f"u{width // 8}")
    return tuple(np.ascontiguousarray(x).reshape(-1).view(unsigned) for x in (a_store, b_store))  # type: ignore[return-value]
