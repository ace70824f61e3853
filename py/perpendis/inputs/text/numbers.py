"""Number tokens to values, and whether the printed decimals pin the values exactly.

Decimals short enough to be exact in float64 (what NumPy and PyTorch print for float32
and smaller) are read by array arithmetic on the text's bytes; others by one NumPy call
over the text.  Per-token facts such as the number of fractional digits come from array
work over the positions of ``.``, ``e`` and digits in the text's bytes.

When is a printed decimal exact?  We cannot see the value it was printed from, only
the printer.  Our rule, per value ``y`` (the printed decimal rounded to the dtype):

1. *It pins one value*: every real that rounds to the printed digits at their printed
   precision (``1.2340`` covers ``[1.23395, 1.23405]``) rounds to ``y`` in the dtype,
   i.e. ``y``'s neighbours lie outside that interval.  This holds for any printer
   that rounds correctly, whatever precision it used.
2. *Shortest round-trip printers* (Python ``repr``/``tolist``, ``float.hex``, NumPy
   scalar ``repr``, and CSV/lines, which we take as written by such a printer) are
   exact by construction.
3. NumPy's array printer (``floatmode="maxprec"``) rounds every value at ``precision``
   fractional digits (8 by default) and then drops trailing zeros, so ``0.1`` may stand
   for ``0.1000000000001``.  A short decimal is therefore no proof of a short value:
   every value must pin its value at the precision (rule 1 with the unit of the 8th
   fractional digit).  We take the precision to be 8, or the most fractional digits
   seen if more were printed (raised precision or ``floatmode="unique"``).  A user who
   lowered NumPy's precision will be told the text is exact when it may not be.
5. A printed zero is a zero (of the printed sign): both printers switch to scientific
   notation when a nonzero value is below 1e-4, so none rounds to ``0.0000``.  That
   threshold does not follow the precision: PyTorch printing 2 decimals shows 0.003 as
   ``0.00``, so its zeros with fewer than 4 decimals must pin their value like any other.
4. PyTorch prints every value with a fixed number of decimals (4), except integral
   tensors, which print the exact integer (``2.``): values without fractional digits or
   exponent are exact, others must pin their value (rule 1).

The check is a conservative test of the text, not of the original: a float32 printed
with 8 significant digits can be exact (rule 1 passes) or not, depending on the value.
"""

from __future__ import annotations

import math
import re
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import NoReturn

import numpy as np

from ...errors import InputError
from ...numerics.bits import Format, to_float64
from .short_decimals import short_decimals

NUMPY_PRECISION = 8
TORCH_PRECISION = 4  # PyTorch's default decimals, below which a value could print as 0.0000
_ANY_TOKEN = re.compile(rb"[^\s,]")  # found at once in any text with numbers
_IMAGINARY_ONLY = re.compile(r"(?:(?<=[\s\[,])|^)([+-]?)((?:\d+\.?\d*|\.\d+)(?:e[+-]?\d+)?j|nanj|infj)")


@dataclass
class Exactness:
    """What the printed decimals tell about the values."""

    exact: bool
    digits: int | None  # fewest significant digits among the values not pinned
    n_inexact: int


def join_complex(body: str) -> str:
    """Complex elements as ``real±imag j`` tokens: without the padding NumPy puts before an
    aligned imaginary part (``0. +1.j``), the parentheses Python puts around a complex
    (``(1+2j)``), and with the zero real part Python leaves out (``-0.5j``)."""
    body = re.sub(r"\(([^()\s,]*j)\)", r"\1", body)
    body = re.sub(r"(?<=[0-9.nf])\s+(?=[+-][^\s,\[\]]*j)", "", body)
    return _IMAGINARY_ONLY.sub(lambda m: f"0{m.group(1) or '+'}{m.group(2)}", body)


def split_complex(body: str) -> str:
    """``1.+2.j`` as ``1. +2.``: real and imaginary parts as separate tokens."""
    return re.sub(r"(?<=[0-9.nf])([+-])", r" \1", body).replace("j", "")


def whole_values(tokens: list[str], fmt: Format, where: str) -> np.ndarray:
    """Integer or bool tokens as a flat array in ``fmt``'s storage dtype."""
    if fmt.kind == "bool":
        if not set(tokens) <= {"True", "False"}:
            bad = next(t for t in tokens if t not in ("True", "False"))
            raise InputError(f"{bad!r} is not a bool; a bool tensor prints True and False only", where=where)
        return np.array(tokens) == "True"
    return _integers(tokens, fmt, where)


class Tokens:
    """The number tokens of a blanked text, and where their points and exponents are.

    Both reading the numbers and the exactness check need these positions; each is found
    once, and only when one of them asks.
    """

    def __init__(self, flat: bytes, bounds: tuple[np.ndarray, np.ndarray], dots: np.ndarray | None = None) -> None:
        """``dots`` are the offsets of every ``.`` in ``flat`` when the caller has them already."""
        self.flat = flat
        self.buf = np.frombuffer(flat, dtype=np.uint8)
        self.starts, self.ends = bounds
        if dots is not None:
            self.dots = dots

    @cached_property
    def dots(self) -> np.ndarray:
        """The offset of every ``.``."""
        return np.flatnonzero(self.buf == ord("."))

    @cached_property
    def points(self) -> tuple[slice | np.ndarray, np.ndarray]:
        """The tokens with a ``.`` and its offset in each (see :func:`_owner`)."""
        return _owner(self.starts, self.ends, self.dots)

    @cached_property
    def exponents(self) -> tuple[np.ndarray, np.ndarray]:
        """Which tokens have an exponent, and where each token's mantissa ends (at its ``e``, else its end)."""
        n = self.starts.size
        sci = np.zeros(n, dtype=bool)
        mant_end = self.ends
        flat, buf = self.flat, self.buf
        if b"e" in flat or b"E" in flat:
            is_e = (buf == ord("e")) | (buf == ord("E")) if b"E" in flat else buf == ord("e")
            owner, marks = _owner(self.starts, self.ends, np.flatnonzero(is_e))
            sci[owner] = True
            mant_end = _spread(n, owner, marks, self.ends)
        return sci, mant_end


def decimals(tokens: Tokens, hexadecimal: bool, where: str) -> np.ndarray:
    """The numbers of ``tokens.flat`` (separated by commas if it has any, else by spaces) as float64,
    each the nearest to its decimal."""
    flat = tokens.flat
    if hexadecimal or _ANY_TOKEN.search(flat) is None:
        strings = _tokens(flat)
        try:
            return np.fromiter(map(float.fromhex, strings), dtype=np.float64, count=len(strings))
        except ValueError:
            _raise_bad_token(strings, float.fromhex, where)
    if (short := short_decimals(tokens)) is not None:
        return short
    try:
        # NumPy 2.0 warns and stops at a bad token; later versions raise.
        with warnings.catch_warnings():
            warnings.simplefilter("error", DeprecationWarning)
            return np.fromstring(flat, dtype=np.float64, sep="," if b"," in flat else " ")
    except (ValueError, DeprecationWarning):
        strings = _tokens(flat)
        try:
            return np.array(strings, dtype=np.float64)
        except ValueError:
            _raise_bad_token(strings, float, where)


def _tokens(flat: bytes) -> list[str]:
    return flat.decode("ascii").replace(",", " ").split()


def _raise_bad_token(tokens: list[str], reader: Callable[[str], float], where: str) -> NoReturn:
    bad = next((t for t in tokens if not _reads(reader, t)), tokens[0] if tokens else "")
    raise InputError(f"{bad!r} is not a number; paste numbers only", where=where)


def _reads(reader: Callable[[str], float | int], token: str) -> bool:
    try:
        reader(token)
    except ValueError:
        return False
    return True


def _integers(tokens: list[str], fmt: Format, where: str) -> np.ndarray:
    wide = np.uint64 if fmt.kind == "uint" else np.int64
    try:
        values = np.array(tokens, dtype=wide)
    except (ValueError, OverflowError):
        bad = next(t for t in tokens if not _is_integer(t, fmt))
        raise InputError(f"{bad!r} is not an integer of {fmt.name}; check the dtype", where=where) from None
    info = np.iinfo(fmt.storage)
    if values.size and (values.min() < info.min or values.max() > info.max):
        raise InputError(f"values outside the range of {fmt.name} ({info.min} to {info.max})", where=where)
    return values.astype(fmt.storage)


def _is_integer(token: str, fmt: Format) -> bool:
    try:
        value = int(token)
    except ValueError:
        return False
    return value >= 0 if fmt.kind == "uint" else -(1 << 63) <= value < (1 << 63)


def exactness(tokens: Tokens, printed: np.ndarray, stored: np.ndarray, printer: str, fmt: Format) -> Exactness:
    """Whether the decimals (``tokens``, read as ``printed``) pin ``stored``.

    A million values must cost a few array operations each, so most are settled from
    their digit count (:func:`_settled_scientific`) or the binade of their value
    (:func:`_pinned`); only those near the edge get both neighbours computed.
    """
    n = int(stored.size)
    if printer == "shortest" or not fmt.is_float or n == 0:
        return Exactness(True, None, 0)
    buf = tokens.buf
    sci, mant_end = tokens.exponents
    dotted, dot_marks = tokens.points
    frac = np.zeros(n, dtype=np.int64)
    frac[dotted] = mant_end[dotted] - dot_marks - 1
    # Both printers switch to scientific notation before a nonzero value could print as 0.
    check = np.isfinite(printed) & (printed != 0)
    if printer == "fixed":
        check |= (printed == 0) & (frac > 0) & (frac < TORCH_PRECISION) & ~sci
        check &= (frac > 0) | sci
        places = frac
    else:
        # NumPy pads scientific mantissas with zeros to a common width and trims them in
        # positional mode; either way every value was rounded at the same digit.
        places = np.full(n, _numpy_precision(buf, mant_end, frac, check))
    stored = stored.ravel()
    held = lost = np.zeros(n, dtype=bool)
    if sci.any():
        dot = _spread(n, dotted, dot_marks, -1)
        held, lost = _settled_scientific(places, stored if fmt.native else to_float64(stored, fmt), fmt)
        settled = sci & check & _normalised(buf, dot)
        held &= settled
        lost &= settled
    # The rest: positional values, and scientific ones too close to call by digits alone.
    rest = check & ~(held | lost)
    at = slice(None) if rest.all() else np.flatnonzero(rest)
    unit_exp = -places[at]
    in_sci = np.flatnonzero(sci[at])
    unit_exp[in_sci] += _exponent_values(buf, mant_end[at][in_sci], tokens.ends[at][in_sci])
    shown = printed[at]
    missed = ~_pinned(shown, to_float64(stored[at], fmt), fmt, unit_exp)
    n_inexact = int(np.count_nonzero(lost)) + int(np.count_nonzero(missed))
    if n_inexact == 0:
        return Exactness(True, None, 0)
    # Significant digits: all but the point of a normalised mantissa, else from the decimal's magnitude.
    digits = []
    if lost.any():
        digits.append(int(np.min(places, where=lost, initial=np.iinfo(places.dtype).max)) + 1)
    nonzero = missed & (shown != 0)  # a zero printed at fixed places has no significant digits
    if nonzero.any():
        digits.append(int((np.floor(np.log10(np.abs(shown[nonzero]))) - unit_exp[nonzero]).min()) + 1)
    return Exactness(False, min(digits, default=0), n_inexact)


def _normalised(buf: np.ndarray, dot: np.ndarray) -> np.ndarray:
    """Tokens whose mantissa is one nonzero digit, then the point (``-1.2345``), as printers write it."""
    lead = buf[np.maximum(dot - 1, 0)] - np.uint8(ord("1"))  # wraps past 8 for anything but 1-9
    before = buf[np.maximum(dot - 2, 0)] - np.uint8(ord("0"))
    return (dot >= 2) & (lead < 9) & (before > 9)


def _settled_scientific(places: np.ndarray, value: np.ndarray, fmt: Format) -> tuple[np.ndarray, np.ndarray]:
    """Where normalised scientific decimals surely pin their value, and where they surely do not.

    With ``places`` digits after the point the printed unit is between ``10**-(places+1)``
    and ``10**-places`` of the value, and the format's step between ``2**-(m+1)`` and
    ``2**-m`` of it (normal values), so the digit count alone settles most values.
    """
    m = fmt.man_bits
    # Each gap from the decimal to a neighbour is at least a quarter of the step above.
    pinned_above = (m + 2) * math.log10(2) - math.log10(1 - 2.0**-m)
    # The two gaps together are at most twice the step, which must not exceed the unit.
    loose_upto = (m - 1) * math.log10(2) - math.log10(1 + 2.0**-m) - 1
    magnitude = np.abs(value)
    normal = (magnitude >= 2.0 ** (1 - fmt.bias)) & (magnitude < np.inf)
    return normal & (places > pinned_above), normal & (places <= loose_upto)


def _numpy_precision(buf: np.ndarray, mant_end: np.ndarray, frac: np.ndarray, check: np.ndarray) -> int:
    """NumPy's print precision: 8, or the most fractional digits (trailing zeros aside) a checked token needs."""
    if frac.max(initial=0) <= NUMPY_PRECISION:
        return NUMPY_PRECISION
    long = np.flatnonzero(check & (frac > NUMPY_PRECISION))
    mant_end, frac = mant_end[long], frac[long]
    zeros = np.zeros(long.size, dtype=np.int64)
    active = np.ones(long.size, dtype=bool)
    k = 1
    while active.any():
        active &= (k <= frac) & (buf[mant_end - k] == ord("0"))
        zeros += active
        k += 1
    return max(NUMPY_PRECISION, int((frac - zeros).max(initial=0)))


def _owner(starts: np.ndarray, ends: np.ndarray, marks: np.ndarray) -> tuple[slice | np.ndarray, np.ndarray]:
    """The tokens holding each mark (a ``.`` or ``e``), and the marks; one mark per token at most."""
    if marks.size == starts.size and np.all((marks >= starts) & (marks < ends)):
        return slice(None), marks  # the usual case, every token has one: no index array to gather with
    return np.searchsorted(starts, marks, side="right") - 1, marks


def _spread(n: int, owner: slice | np.ndarray, marks: np.ndarray, default: np.ndarray | int) -> np.ndarray:
    """Each of ``n`` tokens' mark (from :func:`_owner`), or its ``default`` where it has none."""
    if isinstance(owner, slice):
        return marks  # every token has one
    spread = np.full(n, default, dtype=np.int64) if np.ndim(default) == 0 else default.copy()
    spread[owner] = marks
    return spread


def _exponent_values(buf: np.ndarray, marks: np.ndarray, stops: np.ndarray) -> np.ndarray:
    """The decimal exponent between each ``e`` at ``marks`` and its token's end at ``stops``.

    Read from the exponent's last three digits: a finite nonzero float64 has a decimal
    exponent of at most three digits, and a longer one is a zero or an infinity, which
    is never checked.
    """
    after = stops - marks  # the "e" and what follows it
    value = np.zeros(marks.size, dtype=np.int64)
    for back, scale in ((1, 1), (2, 10), (3, 100)):
        digit = buf[stops - back] - np.uint8(ord("0"))  # wraps past 9 for a sign or the "e"
        digit[(digit >= 10) | (after <= back)] = 0
        value += digit.astype(np.int64) * scale
    np.negative(value, out=value, where=buf[np.minimum(marks + 1, buf.size - 1)] == ord("-"))
    return value


def _pinned(printed: np.ndarray, value: np.ndarray, fmt: Format, unit_exp: np.ndarray) -> np.ndarray:
    """Where both neighbours of ``value`` in ``fmt`` are more than half a printed unit (``10**unit_exp``) away.

    The gaps from the decimal to the two neighbours are each at least a quarter of the
    step above ``|value|`` and together at most twice it; the step grows with the binade,
    so two magnitude thresholds per unit settle every value but those whose step is
    within a factor of two of the unit, which get the exact test.
    """
    if value.size == 0:
        return np.zeros(0, dtype=bool)
    low, high = int(unit_exp.min()), int(unit_exp.max())
    unit_log2 = np.arange(low, high + 1) * math.log2(10)
    # Values from the least binade whose step exceeds twice the unit are pinned; values
    # below the least binade whose step exceeds half the unit are not (subnormals share
    # one step, so when that binade is the lowest, no value is settled as loose).
    pinned_from = np.ldexp(1.0, (np.floor(unit_log2 + 1) + 1 + fmt.man_bits).astype(int))
    loose_exp = (np.floor(unit_log2 - 1) + 1 + fmt.man_bits).astype(int)
    loose_below = np.where(loose_exp > 1 - fmt.bias, np.ldexp(1.0, loose_exp), 0.0)
    row = unit_exp - low if high > low else 0
    magnitude = np.abs(value)
    pinned = (magnitude >= pinned_from[row]) & (magnitude < np.inf)
    unsure = np.flatnonzero(~pinned & ~(magnitude < loose_below[row]))
    pinned[unsure] = _pinned_exactly(printed[unsure], value[unsure], fmt, 10.0 ** unit_exp[unsure].astype(np.float64))
    return pinned


def _pinned_exactly(printed: np.ndarray, value: np.ndarray, fmt: Format, unit: np.ndarray) -> np.ndarray:
    """:func:`_pinned` by computing both neighbours."""
    magnitude = np.abs(value)
    _, exp2 = np.frexp(magnitude)
    min_exp = 1 - fmt.bias
    top = np.where(magnitude == 0, min_exp, np.maximum(exp2 - 1, min_exp))
    away = np.ldexp(1.0, top - fmt.man_bits)
    at_power = (magnitude == np.ldexp(1.0, exp2 - 1)) & (exp2 - 1 > min_exp)
    toward = np.where(at_power, away / 2, away)
    negative = np.signbit(value) & (magnitude != 0)
    above = value + np.where(negative, toward, away)
    below = value - np.where(negative, away, toward)
    half = unit / 2
    with np.errstate(invalid="ignore"):
        return (above - printed > half) & (printed - below > half)


def digits_needed(fmt: Format) -> int:
    """Significant decimal digits that always pin a value of ``fmt`` (9 for float32, 17 for float64)."""
    return math.ceil(1 + (fmt.man_bits + 1) * math.log10(2))
