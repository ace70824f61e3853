"""The precision fingerprint: how many bits of precision the difference leaves, against the
compared format's own, and whether one side's values all lie in a narrower format.

The effective precision is ``-log2`` of the median relative difference (against ``|B|``,
or B's RMS where that is larger), less one: a single correct rounding to a p-bit format
leaves a median near ``2^-(p+1)``.  A side computed in a narrower format is named when
that median is at least :data:`LOWER` units of roundoff of the compared format per unit
of depth (a float32 computation rounding at float32 stays far below), and the candidate
formats are those whose unit roundoff is within a factor :data:`NEAR` of the median, and,
without the exactness below, the 99th percentile within :data:`TAIL` times the median
(one format's rounding has a light tail, 4 to 5 times the median on the real cases; a
bug confined to some elements leaves a heavy one).
Exact representability settles which: when every sampled non-zero value of one side (at
least :data:`~.rounding_model.MIN_FIT` of them) is exactly a bfloat16, float16 or TF32 value and the
other side's are not, that side was computed there and widened; by chance a float32
value is a float16 one with probability 2^-13, so sixteen of them never are.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ...numerics.format_evidence import says_format
from ...report.model import Finding, place
from . import causes as why
from .pair import Pair
from .rounding_model import MIN_FIT

LOWER = 64.0
NEAR = 8.0
TAIL = 16.0


@dataclass(frozen=True)
class Narrow:
    """A narrower float format one side may have been computed in."""

    name: str
    man_bits: int  # stored mantissa bits
    min_exp: int  # exponent of the smallest normal value
    max_value: float
    switches: str  # key of causes.SWITCHES
    preset: str

    @property
    def bits(self) -> int:
        return self.man_bits + 1

    @property
    def unit_roundoff(self) -> float:
        return 2.0 ** -(self.man_bits + 1)


NARROW = [
    Narrow("bfloat16", 7, -126, 3.3895313892515355e38, "bfloat16", "bf16"),
    Narrow("float16", 10, -14, 65504.0, "float16", "fp16"),
    Narrow("TF32", 10, -126, 3.4028234663852886e38, "tf32", "fp32-tf32"),
    Narrow("float32", 23, -126, 3.4028234663852886e38, "", "fp32-cpu"),
]


def exact_in(values: np.ndarray, fmt: Narrow) -> np.ndarray:
    """Which values (finite, non-zero, float64) a format holds exactly."""
    mag = np.abs(values)
    _, e = np.frexp(mag)
    quantum = np.maximum(e - 1, fmt.min_exp) - fmt.man_bits
    scaled = np.ldexp(mag, -quantum)
    return (scaled == np.round(scaled)) & (mag <= fmt.max_value)


@dataclass
class Fingerprint:
    bits: float  # effective precision of the difference
    own_bits: int  # the compared format's
    median: float  # median relative difference
    candidates: list[Narrow]
    exact: tuple[str, Narrow] | None  # (side, format) every value of which is exact there


def fingerprint(pair: Pair) -> Fingerprint | None:
    """The fingerprint of a difference clearly coarser than the compared format, else None."""
    fmt = pair.fmt
    if not fmt.is_float:
        return None
    a, b = pair.differing()
    if a.size < MIN_FIT:
        return None
    rel = np.abs(a - b) / pair.scale_of(b)
    rel = rel[np.isfinite(rel)]
    if rel.size < MIN_FIT:
        return None
    median = float(np.median(rel))
    if median < LOWER * pair.u * pair.depth:
        return None
    narrower = [n for n in NARROW if n.man_bits < fmt.man_bits]
    exact = _exact_side(pair, narrower)
    near = [n for n in narrower if n.unit_roundoff / NEAR <= median <= NEAR * n.unit_roundoff * pair.depth]
    # A side that is not exactly float16 was not stored in float16: a float16-level error
    # with float32 outputs is TF32's (float32 accumulation of 10-bit operands) first.
    near.sort(key=lambda n: n.name != "TF32")
    if exact is None and not near:
        return None
    if exact is None and float(np.quantile(rel, 0.99)) > TAIL * median:
        return None  # a heavy tail: some elements differ for another reason than precision
    bits = -math.log2(median) - 1 if median > 0 else float(fmt.man_bits + 1)
    return Fingerprint(bits, fmt.man_bits + 1, median, near, exact)


def _exact_side(pair: Pair, narrower: list[Narrow]) -> tuple[str, Narrow] | None:
    a, b = pair.values()
    for n in narrower:
        for side, x, y in (("A", a, b), ("B", b, a)):
            xs, ys = x[x != 0], y[y != 0]
            if (xs.size >= MIN_FIT and says_format(xs) and exact_in(xs, n).all()
                    and not exact_in(ys, n).all()):
                return side, n
    return None


def finding(pair: Pair, fp: Fingerprint, severity: str, preset_text: str) -> Finding:
    """The precision finding for ``fp``; ``preset_text`` says which preset passes."""
    level = round(-math.log2(fp.median)) if fp.median > 0 else fp.own_bits
    if fp.exact is not None:
        side, n = fp.exact
        chosen = [n]
        how = f"every sampled value of {side} is exactly a {n.name} value: {side} was computed in {n.name} and widened"
    else:
        chosen = fp.candidates
        names = " or ".join(_describe(n) for n in chosen)
        how = f"one side was computed at about {round(fp.bits)}-bit precision ({names})"
    message = (
        f"relative difference at the 2^-{level} level: {how}, not {pair.fmt.name}'s {fp.own_bits} bits; {preset_text}"
    )
    causes = [c for n in chosen for c in why.SWITCHES.get(n.switches, [f"a {n.name} round trip on one side"])]
    if fp.exact is None:
        # The size alone: a real difference mixed through later layers leaves noise of the
        # same size and shape (measured on the mutation corpus: light tail, no sign bias),
        # so no switch is named as the cause and no looser preset is offered.
        switches = "; ".join(why.SWITCHES.get(chosen[0].switches, [])[:1])
        message = (
            f"relative difference at the 2^-{level} level, about {round(fp.bits)}-bit precision, not "
            f"{pair.fmt.name}'s {fp.own_bits} bits: the size {names} rounding leaves"
            + (f" (if one side ran so: {switches})" if switches else "")
            + ", but a real difference mixed through later layers looks the same; "
            "a float64 reference (--ref) tells them apart"
            + (f"; {preset_text}" if severity == "info" else "")
        )
        causes = []
    where = place(
        fp.exact[0] if fp.exact else f"about {round(fp.bits)} bits",
        bits=round(fp.bits, 1),
        own_bits=fp.own_bits,
        formats=[n.name for n in chosen],
    )
    if fp.exact:
        where["amount"]["side"] = fp.exact[0]
    return Finding("precision", severity, message, where, causes)


def _describe(n: Narrow) -> str:
    return {"TF32": "TF32 matmuls", "float16": "float16", "bfloat16": "bfloat16"}.get(n.name, n.name)


def presets(fp: Fingerprint) -> list[str]:
    """The presets that fit the formats named, narrowest claim first."""
    chosen = [fp.exact[1]] if fp.exact else fp.candidates
    return list(dict.fromkeys(n.preset for n in chosen))
