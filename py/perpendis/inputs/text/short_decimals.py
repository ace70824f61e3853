"""Short decimals read eight digits at a time: the fast path of :func:`.numbers.decimals`.

A pasted tensor is mostly tokens like ``-12.345678`` or ``1.2345e-05``; their digits
are combined as bytes of 64-bit words (a few multiplications per eight digits) and
scaled by an exact power of ten, which gives the nearest float64 as ``float()`` would.
Apart from the reading of every other token because it is bit arithmetic with its own
limits (digits, exponent, block size), tested against ``float()`` on its own.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from .numbers import Tokens

# At most 7 digits before the point and 8 after make an integer below 10**15 < 2**53.
_MAX_WHOLE = 7
_MAX_FRACTION = 8
_MAX_EXPONENT = 3  # digits
_MAX_SCALE = 22  # 10**22 is the largest power of ten exact in float64
_ALL = (1 << 64) - 1
_ZEROS = 0x3030303030303030  # eight ASCII "0"
# Masks keeping the last (highest-addressed) or the first k bytes of a little-endian word.
_KEEP_LAST = np.array([_ALL ^ ((1 << 8 * (8 - k)) - 1) for k in range(9)], dtype=np.uint64)
_KEEP_FIRST = np.array([(1 << 8 * k) - 1 for k in range(9)], dtype=np.uint64)
_SIGNED_POWERS = np.array([float(sign * 10**k) for sign in (1, -1) for k in range(_MAX_SCALE + 1)])
_BLOCK = 1 << 16  # tokens read at a time
# Pairs of digits, then of pairs, then of fours, each combined by one multiplication.
_COMBINE = ((0x0F0F0F0F0F0F0F0F, 2561, 8), (0x00FF00FF00FF00FF, 6553601, 16), (0x0000FFFF0000FFFF, 42949672960001, 32))


def short_decimals(tokens: Tokens) -> np.ndarray | None:
    """The numbers, when every token is a short decimal with a point (``-12.345678``, ``1.2345e-05``), else None.

    Such a token's digits make an integer below 2**53 and its scale a power of ten up to
    1e22, both exact in float64, so one IEEE division or multiplication rounds the decimal
    correctly (Clinger's fast path): the value ``np.fromstring`` reads, at a fraction of
    its cost.  Every byte of every token is checked, so any other token leaves the text
    to ``np.fromstring``.
    """
    dot, starts, ends = tokens.dots, tokens.starts, tokens.ends
    if dot.size != starts.size or not isinstance(tokens.points[0], slice):
        return None  # a token without a point, or with two
    # Longer tails (Python's 17 digits) show in the first block, before the search for exponents.
    if (ends[:_BLOCK] - dot[:_BLOCK]).max(initial=0) > 1 + _MAX_FRACTION + 2 + _MAX_EXPONENT:
        return None
    sci, mant_end = tokens.exponents
    words = _windows(tokens.buf)
    value = np.empty(dot.size)
    # Blocks of tokens: the temporaries of one stay in cache and are reused by the next,
    # where a million-element temporary would cost fresh pages each time.
    for block in (slice(lo, lo + _BLOCK) for lo in range(0, dot.size, _BLOCK)):
        part = _short_block(tokens.buf, words, starts[block], dot[block], sci[block], mant_end[block], ends[block])
        if part is None:
            return None
        value[block] = part
    return value


def _short_block(
    buf: np.ndarray,
    words: np.ndarray,
    starts: np.ndarray,
    dot: np.ndarray,
    sci: np.ndarray,
    mant_end: np.ndarray,
    ends: np.ndarray,
) -> np.ndarray | None:
    """:func:`short_decimals` for some of the tokens, with the text's 8-byte ``words``."""
    negative = buf[starts] == ord("-")
    whole = dot - starts - negative
    fraction = mant_end - dot - 1
    if whole.min() < 1 or whole.max() > _MAX_WHOLE or fraction.min() < 0 or fraction.max() > _MAX_FRACTION:
        return None
    mantissa, ok = _digits(words[dot], _KEEP_LAST[whole])
    fraction_digits, fraction_ok = _digits(words[dot + 9], _KEEP_FIRST[fraction])
    mantissa *= 10**_MAX_FRACTION
    mantissa += fraction_digits
    value = mantissa.astype(np.float64)
    if sci.any():
        scale, exponent_ok = _exponents(buf, words, sci, mant_end, ends)
        ok &= exponent_ok
        scale -= _MAX_FRACTION
    else:
        scale = np.full(dot.size, -_MAX_FRACTION)
    if not (ok.all() and fraction_ok.all()) or scale.min() < -_MAX_SCALE or scale.max() > _MAX_SCALE:
        return None
    # The sign goes with the power of ten, so that "-0.0" is -0.0.
    power = _SIGNED_POWERS[np.abs(scale) + negative * (_MAX_SCALE + 1)]
    return np.where(scale < 0, value / power, value * power)


def _exponents(
    buf: np.ndarray, words: np.ndarray, sci: np.ndarray, mant_end: np.ndarray, ends: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The exponent of each token (0 without one), and where it is a sign and one to three digits."""
    after = buf[np.minimum(mant_end + 1, buf.size - 1)]
    minus = sci & (after == ord("-"))
    signed = minus | (sci & (after == ord("+")))
    digits = np.where(sci, ends - mant_end - 1 - signed, 0)
    in_range = (digits >= sci) & (digits <= _MAX_EXPONENT)  # 1 to 3 digits, or no exponent
    exponent, ok = _digits(words[ends], _KEEP_LAST[np.minimum(digits, _MAX_EXPONENT)])
    exponent = exponent.view(np.int64)
    ok &= in_range
    return np.where(minus, -exponent, exponent), ok


def _windows(buf: np.ndarray) -> np.ndarray:
    """Every 8 bytes of ``buf`` as a little-endian word: word ``i`` holds the 8 bytes before offset ``i``,
    with spaces beyond the ends (a view of one padded copy, not 8 copies)."""
    padded = np.full(buf.size + 16, ord(" "), dtype=np.uint8)
    padded[8:-8] = buf
    return np.ndarray((buf.size + 9,), dtype="<u8", buffer=padded, strides=(1,))


def _digits(words: np.ndarray, keep: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The kept bytes of each word read as decimal digits (the others as "0"), and whether all were digits.

    The first byte, at the lowest address, is the most significant digit.  Eight bytes
    are tested and combined in a few integer steps (as in simdjson), on every word at
    once and in place: both arrays are used up.
    """
    words ^= _ZEROS
    words &= keep
    words ^= _ZEROS
    high = np.bitwise_and(words, 0xF0F0F0F0F0F0F0F0, out=keep)
    low = words + 0x0606060606060606  # carries into the high half of a byte past "9"
    low &= 0xF0F0F0F0F0F0F0F0
    low >>= 4
    high |= low
    ok = high == 0x3333333333333333
    for mask, factor, shift in _COMBINE:
        words &= mask
        words *= factor
        words >>= shift
    return words, ok
