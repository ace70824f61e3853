"""Number tokens to values, and whether the printed decimals pin the values exactly.

All conversion is one NumPy call over the list of tokens (``str.split`` makes the list
in C); per-token facts such as the number of fractional digits come from array work
over the positions of ``.``, ``e`` and digits in the text's bytes.

When is a printed decimal exact?  We cannot see the value it was printed from, only
the printer.  Our rule, per value ``y`` (the printed decimal rounded to the dtype):

1. *It pins one value*: every real that rounds to the printed digits at their printed
   precision (``1.2340`` covers ``[1.23395, 1.23405]``) rounds to ``y`` in the dtype,
   i.e. ``y``'s neighbours lie outside that interval.  This holds for any printer
   that rounds correctly, whatever precision it used.
2. *Shortest round-trip printers* (Python ``repr``/``tolist``, ``float.hex``, NumPy
   scalar ``repr``, and CSV/lines, which we take as written by such a printer) are
   exact by construction.
3. NumPy's array printer (``floatmode="maxprec"``) prints the shortest round-trip
   decimal unless that needs more than ``precision`` fractional digits (8 by default).
   So a value printed with fewer fractional digits than the precision is exact; one
   printed with exactly that many may have been cut, and rule 1 decides.  We take the
   precision to be 8, or the most fractional digits seen if more were printed; a user
   who lowered NumPy's precision will be told the text is exact when it is not.
4. PyTorch prints every value with a fixed number of decimals (4), except integral
   tensors, which print the exact integer (``2.``): values without fractional digits or
   exponent are exact, others must pin their value (rule 1).

The check is a conservative test of the text, not of the original: a float32 printed
with 8 significant digits can be exact (rule 1 passes) or not, depending on the value.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np

from ..bits import Format, to_float64
from ..errors import InputError
from .grid import token_bounds

NUMPY_PRECISION = 8


@dataclass
class Exactness:
    """What the printed decimals tell about the values."""

    exact: bool
    digits: int | None  # fewest significant digits among the values not pinned
    n_inexact: int


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


def decimals(tokens: list[str], hexadecimal: bool, where: str) -> np.ndarray:
    """The tokens as float64, correctly rounded (the nearest float64 to each decimal)."""
    try:
        if hexadecimal:
            return np.fromiter(map(float.fromhex, tokens), dtype=np.float64, count=len(tokens))
        return np.array(tokens, dtype=np.float64)
    except ValueError:
        reader = float.fromhex if hexadecimal else float
        bad = next(t for t in tokens if not _reads(reader, t))
        raise InputError(f"{bad!r} is not a number; paste numbers only", where=where) from None


def _reads(reader, token: str) -> bool:
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


def exactness(text: str, printed: np.ndarray, stored: np.ndarray, fmt: Format, printer: str) -> Exactness:
    """Whether the decimals in ``text`` (bare tokens, read as ``printed``) pin the values ``stored``."""
    n = int(stored.size)
    if printer == "shortest" or not fmt.is_float or n == 0:
        return Exactness(True, None, 0)
    buf = np.frombuffer(text.encode("ascii"), dtype=np.uint8)
    starts, ends = token_bounds(buf)
    mant_end, has_exp = _exponent_marks(buf, starts, ends)
    dot = np.full(n, -1, dtype=np.int64)
    dots = np.flatnonzero(buf == ord("."))
    dot[np.searchsorted(starts, dots, side="right") - 1] = dots
    frac = np.where(dot >= 0, mant_end - dot - 1, 0)
    exponent = _exponent_values(buf, mant_end, ends, has_exp)
    value = to_float64(stored, fmt)
    finite = np.isfinite(printed)
    exact = ~finite | _pinned(printed, value, fmt, 10.0 ** (exponent - frac.astype(np.float64)))
    if printer == "fixed":
        exact |= (frac == 0) & ~has_exp
    else:
        cap = max(NUMPY_PRECISION, int(frac[finite].max(initial=0)))
        exact |= frac < cap
    inexact = ~exact
    n_inexact = int(np.count_nonzero(inexact))
    if n_inexact == 0:
        return Exactness(True, None, 0)
    sig = _significant_digits(buf, starts, mant_end, dot)
    shown = sig[inexact & (sig > 0)]
    return Exactness(False, int(shown.min()) if shown.size else 1, n_inexact)


def _exponent_marks(buf: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per token: where the mantissa ends (the ``e`` or the token's end), and whether it has an exponent."""
    marks = np.flatnonzero((buf == ord("e")) | (buf == ord("E")))
    owner = np.searchsorted(starts, marks, side="right") - 1
    mant_end = ends.copy()
    mant_end[owner] = marks
    has_exp = np.zeros(starts.size, dtype=bool)
    has_exp[owner] = True
    return mant_end, has_exp


def _exponent_values(buf: np.ndarray, mant_end: np.ndarray, ends: np.ndarray, has_exp: np.ndarray) -> np.ndarray:
    """The decimal exponent after each ``e`` (0 where there is none), read digit by digit."""
    exponent = np.zeros(mant_end.size, dtype=np.int64)
    at = np.flatnonzero(has_exp)
    pos = mant_end[at] + 1
    stop = ends[at]
    first = buf[np.minimum(pos, buf.size - 1)]
    negative = (pos < stop) & (first == ord("-"))
    pos = pos + ((pos < stop) & ((first == ord("-")) | (first == ord("+"))))
    value = np.zeros(at.size, dtype=np.int64)
    for _ in range(4):  # float64 exponents have at most three digits
        active = pos < stop
        digit = buf[np.minimum(pos, buf.size - 1)].astype(np.int64) - ord("0")
        value = np.where(active, value * 10 + digit, value)
        pos = pos + active
    exponent[at] = np.where(negative, -value, value)
    return exponent


def _pinned(printed: np.ndarray, value: np.ndarray, fmt: Format, unit: np.ndarray) -> np.ndarray:
    """Where both neighbours of ``value`` in ``fmt`` are more than half a printed unit from the decimal."""
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


def _significant_digits(buf: np.ndarray, starts: np.ndarray, mant_end: np.ndarray, dot: np.ndarray) -> np.ndarray:
    """Digits from the first nonzero one to the end of the mantissa (0 for zeros)."""
    nonzero = np.flatnonzero((buf >= ord("1")) & (buf <= ord("9")))
    if nonzero.size == 0:
        return np.zeros(starts.size, dtype=np.int64)
    k = np.searchsorted(nonzero, starts)
    first = nonzero[np.minimum(k, nonzero.size - 1)]
    valid = (k < nonzero.size) & (first < mant_end)
    return np.where(valid, mant_end - first - (dot > first), 0)


def digits_needed(fmt: Format) -> int:
    """Significant decimal digits that always pin a value of ``fmt`` (9 for float32, 17 for float64)."""
    return math.ceil(1 + (fmt.man_bits + 1) * math.log10(2))
