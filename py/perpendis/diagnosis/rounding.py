"""Whether the differences are rounding: at the data's precision and depth, in a narrower
format a side was computed in, or only at a depth no computation plausibly has."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..numerics import bits
from ..numerics.bits import Format, format_of
from ..numerics.tolerance import print_slack, printed_digits
from ..report.model import Finding, Report
from .relations.rounding_model import ROUNDOFF_FACTOR

# Rounding-like: relative differences within this many units of roundoff per unit of depth
# (one float32 ULP is 1 to 2 units of roundoff, so 8 allows a few ULP at depth 1).
ROUNDING_SHARE = 0.99  # share of differing elements that must be within that bound
# Roundings deep a narrower format's rounding may be when its own preset fails: a whole
# Llama block stack in bfloat16 leaves a 99th percentile of 13 u, 2 deep at 8 u each.
NARROW_DEPTH = 4


_MEASURE = "of |B| (or of B's RMS where |B| is smaller, as for sums that cancel)"


@dataclass(frozen=True)
class _Spread:
    """How the sampled differences sit against rounding: the share within the bound, their
    99th percentile and largest value (each relative to |B| or B's RMS), the unit roundoff
    they are measured in and how it is written."""

    share: float
    typical: float
    largest: float
    u: float
    u_text: str
    printed: bool


def rounding_findings(
    r: Report, depth: float, narrow: tuple[str, float] | None = None, structured: bool = False
) -> list[Finding]:
    """Info when the differences look like rounding; when they are bigger than that inside
    the tolerance, a warning if a structure test found why, else info that they are
    rounding of a deeper computation (no structure was found, so nothing contradicts a
    rounding verdict).  ``narrow`` is (name, unit roundoff) of the narrower format one side
    was found computed in, which the differences are then measured against.

    A rounding error is relative to the terms a value was computed from, not to the value:
    an output that cancels (a dot product near zero) keeps the absolute error of its terms.
    So each difference is measured against ``|B|``, or against B's RMS where ``|B|`` is
    smaller, the RMS standing in for the size of the terms.
    """
    spread = _spread(r, depth, narrow)
    if spread is None:
        return []
    if spread.share >= ROUNDING_SHARE:
        printed = ", or within what the printed digits resolve" if spread.printed else ""
        message = (
            f"the differences look like rounding{'' if narrow is None else ' in ' + narrow[0]}: "
            f"{spread.share:.1%} of differing elements are within "
            f"{ROUNDOFF_FACTOR:g}·u·depth {_MEASURE}{printed} ({spread.u_text}, depth {depth:g}); the largest is "
            f"{spread.largest / spread.u:.3g} u"
        )
        return [Finding("rounding", "info", message)]
    return _beyond_rounding(bool(r.tolerance and r.tolerance.passed), spread, depth, narrow, structured)


def _spread(r: Report, depth: float, narrow: tuple[str, float] | None) -> _Spread | None:
    """The sampled differences measured against rounding; None when there are none to
    measure (no samples, no tolerance, not a float format, every |B| within atol)."""
    rows = r.samples.get("diffs")
    tol = r.tolerance
    fmt = format_of(r.compared_as)
    if rows is None or len(rows) == 0 or tol is None or not fmt.is_float:
        return None
    a, b = rows[:, 1], rows[:, 2]
    usable = np.isfinite(a) & np.isfinite(b) & (np.abs(b) > tol.atol)
    if not usable.any():
        return None
    a, b = a[usable], b[usable]
    scale = np.maximum(np.abs(b), r.samples.get("b_rms", 0.0))
    u = fmt.unit_roundoff if narrow is None else narrow[1]
    slack = _print_slack(r, fmt, a, b)
    share = float(np.mean(np.abs(a - b) <= ROUNDOFF_FACTOR * u * depth * scale + slack))
    scaled = np.abs(a - b) / scale
    u_name = fmt.name if narrow is None else narrow[0]
    return _Spread(
        share=share,
        typical=float(np.quantile(scaled, ROUNDING_SHARE)),
        largest=float(scaled.max()),
        u=u,
        u_text=f"u = 2^-{round(-math.log2(u))} for {u_name}",
        printed=bool(np.any(slack)),
    )


def _beyond_rounding(
    passed: bool, s: _Spread, depth: float, narrow: tuple[str, float] | None, structured: bool
) -> list[Finding]:
    """The finding for differences larger than rounding at ``depth`` (see
    :func:`rounding_findings`): how deep a computation they are rounding of, or that no
    plausible depth makes them rounding."""
    typical, u = s.typical, s.u
    if not math.isfinite(typical / (ROUNDOFF_FACTOR * u)):  # differences that overflow the measure
        return [] if not passed else [Finding(
            "not_rounding", "warning",
            f"the differences are too large for rounding at any depth: the 99th percentile is {typical:.3g} "
            f"{_MEASURE}; only the tolerance given passes them")]
    needed = math.ceil(typical / (ROUNDOFF_FACTOR * u))
    if not passed:
        if narrow is not None and not structured and needed <= NARROW_DEPTH:
            # Rounding of a narrower format a few roundings deep (a whole model in bfloat16):
            # what it is, whatever the tolerance says; the preset decides (declared_precision).
            message = (f"the differences are rounding in {narrow[0]} of a computation about {needed} roundings deep: "
                       f"the 99th percentile is {typical:.3g} {_MEASURE} ({typical / u:.3g} u, {s.u_text}), with no "
                       "structure found")
            return [Finding("deep_rounding", "info", message)]
        return []  # the tolerance finding already says this is more than rounding
    plausible = 2.0 ** (round(-math.log2(u)) / 2)  # sqrt(1/u) roundings: 4096 for float32
    if not structured and needed > plausible:
        # Only a tolerance set this loose passes it; the tolerance is the user's call, so
        # this stays a warning, and the headline says the pass is the tolerance's alone.
        message = (
            f"the differences are too large for rounding at any plausible depth: the 99th percentile is "
            f"{typical:.3g} {_MEASURE} ({typical / u:.3g} u, {s.u_text}), rounding only for a computation "
            f"{needed} roundings deep, past sqrt(1/u) = {plausible:.0f}; only the tolerance given passes them"
        )
        return [Finding("not_rounding", "warning", message)]
    if structured:
        message = (
            f"the differences are larger than rounding at depth {depth:g}: the 99th percentile is {typical:.3g} "
            f"{_MEASURE} ({typical / u:.3g} u, {s.u_text}); that is rounding only for a computation about "
            f"{needed} roundings deep"
        )
        return [Finding("not_rounding", "warning", message)]
    message = (
        f"the differences show no structure (no scale, offset, reordering, clip, grid or bias), and their 99th "
        f"percentile is {typical:.3g} {_MEASURE} ({typical / u:.3g} u, {s.u_text}): rounding of a computation about "
        f"{needed} roundings deep (set depth {needed} to judge it so)"
    )
    return [Finding("deep_rounding", "info", message)]


def _print_slack(r: Report, fmt: Format, a: np.ndarray, b: np.ndarray) -> np.ndarray | float:
    """Per sampled pair, how far the sides read from a coarse print may be from their values."""
    slack: np.ndarray | float = 0.0
    for info, values in ((r.a, a), (r.b, b)):
        digits = printed_digits(info)
        if digits is not None:
            slack = slack + print_slack(bits.raw_bits(bits.from_float64(values, fmt), fmt), fmt, digits)
    return slack

