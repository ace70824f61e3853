"""One bit pattern as the user reads it: its bits, its hex, its exact value, its shortest
decimal, its neighbours and its fields (sign, exponent, mantissa).

The element view and a report's named elements show these for a few elements at a time;
:mod:`.bits` works on whole arrays of patterns, and these read one through it.
"""

from __future__ import annotations

import math

import numpy as np

from .bits import Format, from_float64, is_inf, is_nan, ordered_key, raw_bits, to_float64


def bit_string(raw: int, fmt: Format) -> str:
    """``"s eeeee mmmmmmmmmm"`` for floats; the plain bits for integers and bools."""
    s = format(int(raw), f"0{fmt.width}b")
    if not fmt.is_float:
        return s
    return f"{s[0]} {s[1 : 1 + fmt.exp_bits]} {s[1 + fmt.exp_bits :]}"


def hex_string(raw: int, fmt: Format) -> str:
    """The raw bits in hexadecimal, zero padded to the format's width."""
    return f"0x{int(raw):0{fmt.width // 4}x}"


def value_of(raw: int, fmt: Format) -> float | int:
    """The exact value of one bit pattern: a Python float, or an int for integer formats."""
    stored = np.array([raw], dtype=fmt.uint)
    if fmt.native:
        stored = stored.view(fmt.storage)
    if not fmt.is_float:
        return int(stored[0])
    return float(to_float64(stored, fmt)[0])


def decimal_string(raw: int, fmt: Format) -> str:
    """The shortest decimal that reads back to exactly these bits in ``fmt``.

    ``repr`` of a Python float is shortest for float64 only; a float32 or bfloat16 value
    usually has a much shorter decimal that still rounds back to the same bits.
    """
    value = value_of(raw, fmt)
    if not fmt.is_float:
        return str(value)
    if math.isnan(value):
        return "nan" if int(raw) >> (fmt.width - 1) == 0 else "-nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    if fmt.name == "float64":
        return repr(value)
    for digits in range(1, 18):
        text = f"{value:.{digits}g}"
        if int(raw_bits(from_float64(np.array([float(text)]), fmt), fmt)[0]) == int(raw):
            return text
    return repr(value)


def neighbours(raw: int, fmt: Format) -> tuple[int | None, int | None]:
    """Bit patterns of the previous and next representable values (None past the ends)."""
    arr = np.array([raw], dtype=np.uint64)
    if is_nan(arr, fmt)[0]:
        return None, None
    key = int(ordered_key(arr, fmt)[0])
    half = 1 << (fmt.width - 1)
    out: list[int | None] = []
    for step in (-1, 1):
        k = key + step
        if fmt.is_float:
            code = (k - half) if k >= half else (half - k) | half
            if is_nan(np.array([code], dtype=np.uint64), fmt)[0] or ((code & (half - 1)) == 0 and k != half):
                out.append(None)
                continue
        else:
            if not 0 <= k < (1 << fmt.width):
                out.append(None)
                continue
            code = k ^ half if fmt.kind == "int" else k
        out.append(int(code))
    return out[0], out[1]


def fields(raw: int, fmt: Format) -> dict[str, int | str]:
    """Sign, biased and unbiased exponent, mantissa and class of one float's bits."""
    raw = int(raw)
    sign = raw >> (fmt.width - 1)
    exp = (raw >> fmt.man_bits) & ((1 << fmt.exp_bits) - 1)
    man = raw & ((1 << fmt.man_bits) - 1)
    arr = np.array([raw], dtype=np.uint64)
    if is_nan(arr, fmt)[0]:
        cls = "nan"
    elif is_inf(arr, fmt)[0]:
        cls = "inf"
    elif exp == 0:
        cls = "zero" if man == 0 else "subnormal"
    else:
        cls = "normal"
    unbiased = (1 - fmt.bias) if exp == 0 else exp - fmt.bias
    return {"sign": sign, "exponent_bits": exp, "exponent": unbiased, "mantissa_bits": man, "class": cls}
