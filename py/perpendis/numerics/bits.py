"""Number formats at the bit level: bit strings, ordered keys, ULP distance, rounding.

Every format Perpendis compares is described by a :class:`Format`.  NumPy has native
dtypes for float16/32/64 and the integers; bfloat16 and the float8 formats are not
native (Pyodide ships no ``ml_dtypes``), so arrays in those formats are held as their
raw bits in an unsigned integer array and decoded here.  All comparisons work on raw
bits first, because equality is bit equality: +0 and -0 differ, NaNs with the same bits
do not.

ULP distance uses the *ordered key*: a monotone map from bit patterns to unsigned
integers in which adjacent representable values are adjacent integers and +0 and -0
share a key.  The distance between two values is then the difference of their keys.
It is undefined where either side is NaN, or where an infinity meets anything but the
same infinity.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import numpy as np


@dataclass(frozen=True)
class Format:
    """One element format: its name, width, layout and how NumPy stores it."""

    name: str
    kind: str  # "float", "int", "uint" or "bool"
    width: int  # bits per element
    exp_bits: int = 0
    man_bits: int = 0
    has_inf: bool = True
    storage: str = ""  # NumPy dtype name the array is held in

    @property
    def is_float(self) -> bool:
        return self.kind == "float"

    @property
    def uint(self) -> np.dtype:
        """Unsigned dtype of the same width, used to view raw bits."""
        return np.dtype(f"uint{self.width}")

    @property
    def bias(self) -> int:
        return (1 << (self.exp_bits - 1)) - 1

    @property
    def unit_roundoff(self) -> float:
        """Half the distance from 1 to the next value: the relative error of one rounding."""
        return 2.0 ** -(self.man_bits + 1) if self.is_float else 0.0

    @property
    def native(self) -> bool:
        """True when NumPy computes in this format directly (not raw bits)."""
        return self.storage == self.name


def _float(name: str, width: int, exp_bits: int, man_bits: int, *, has_inf: bool = True, storage: str = "") -> Format:
    return Format(name, "float", width, exp_bits, man_bits, has_inf, storage or name)


FORMATS: dict[str, Format] = {
    f.name: f
    for f in [
        _float("float16", 16, 5, 10),
        _float("bfloat16", 16, 8, 7, storage="uint16"),
        _float("float32", 32, 8, 23),
        _float("float64", 64, 11, 52),
        _float("float8_e4m3fn", 8, 4, 3, has_inf=False, storage="uint8"),
        _float("float8_e5m2", 8, 5, 2, storage="uint8"),
        *(Format(f"int{w}", "int", w, storage=f"int{w}") for w in (8, 16, 32, 64)),
        *(Format(f"uint{w}", "uint", w, storage=f"uint{w}") for w in (8, 16, 32, 64)),
        Format("bool", "bool", 8, storage="bool"),
    ]
}


def format_of(name: str) -> Format:
    """The format called ``name`` (a canonical dtype name such as ``"bfloat16"``)."""
    try:
        return FORMATS[name]
    except KeyError:
        raise KeyError(f"unknown element format {name!r}; known: {', '.join(FORMATS)}") from None


def compared_format(fa: Format, fb: Format) -> Format:
    """The format both sides are compared in: the narrower float, or the wider integer.

    Rounding the wider float to the narrower format asks "would these agree if both had
    been computed in the narrower type?"; integers instead widen, which is exact.
    """
    if fa == fb:
        return fa
    if fa.is_float != fb.is_float:
        return fa if fa.is_float else fb
    if fa.is_float:
        return min((fa, fb), key=lambda f: (f.width, f.man_bits))
    if {fa.kind, fb.kind} == {"int", "uint"}:
        return FORMATS["int64"]
    return max((fa, fb), key=lambda f: (f.width, f.kind != "bool"))


def raw_bits(array: np.ndarray, fmt: Format) -> np.ndarray:
    """The array's elements as unsigned integers of the format's width (a view, no copy)."""
    return np.ascontiguousarray(array).view(fmt.uint)


def _sign_mag(raw: np.ndarray, fmt: Format) -> tuple[np.ndarray, np.ndarray]:
    u = raw.astype(np.uint64, copy=False)
    shift = np.uint64(fmt.width - 1)
    return u >> shift, u & np.uint64((1 << (fmt.width - 1)) - 1)


def is_nan(raw: np.ndarray, fmt: Format) -> np.ndarray:
    """Where the raw bits encode NaN."""
    if not fmt.is_float:
        return np.zeros(np.shape(raw), dtype=bool)
    _, mag = _sign_mag(raw, fmt)
    exp_all = ((1 << fmt.exp_bits) - 1) << fmt.man_bits
    if fmt.has_inf:
        return mag > np.uint64(exp_all)
    return mag == np.uint64(exp_all | ((1 << fmt.man_bits) - 1))


def is_inf(raw: np.ndarray, fmt: Format) -> np.ndarray:
    """Where the raw bits encode +inf or -inf (never, for formats without infinities)."""
    if not (fmt.is_float and fmt.has_inf):
        return np.zeros(np.shape(raw), dtype=bool)
    _, mag = _sign_mag(raw, fmt)
    return mag == np.uint64(((1 << fmt.exp_bits) - 1) << fmt.man_bits)


def ordered_key(raw: np.ndarray, fmt: Format) -> np.ndarray:
    """Monotone uint64 keys: adjacent values have adjacent keys, and +0 and -0 share one.

    Floats are sign-magnitude, so negative values count down from the middle of the
    unsigned range and positive values up.  Signed integers are two's complement, for
    which flipping the sign bit gives the order; unsigned integers and bools already are.
    """
    half = np.uint64(1 << (fmt.width - 1))
    if fmt.is_float:
        sign, mag = _sign_mag(raw, fmt)
        return np.where(sign == 1, half - mag, half + mag)
    u = raw.astype(np.uint64, copy=False)
    if fmt.kind == "int":
        return u ^ half
    return u


def ulp_distance(raw_a: np.ndarray, raw_b: np.ndarray, fmt: Format) -> tuple[np.ndarray, np.ndarray]:
    """ULP distance between elementwise pairs, and the mask of where it is defined.

    For integers the distance is the exact integer difference.  For floats it is the
    number of representable steps between the values; undefined (mask False) where
    either side is NaN or an infinity meets anything but identical bits.  Identical bits
    are always distance 0 and defined, NaNs included.
    """
    if fmt.is_float and fmt.width < 64:
        return _small_float_distance(raw_a, raw_b, fmt)
    ka = ordered_key(raw_a, fmt)
    kb = ordered_key(raw_b, fmt)
    dist = np.where(ka >= kb, ka - kb, kb - ka)
    same = raw_a == raw_b
    if fmt.is_float:
        special = is_nan(raw_a, fmt) | is_nan(raw_b, fmt) | is_inf(raw_a, fmt) | is_inf(raw_b, fmt)
        defined = same | ~special
    else:
        defined = np.ones(np.shape(dist), dtype=bool)
    return np.where(defined, dist, np.uint64(0)), defined


def _small_float_distance(raw_a: np.ndarray, raw_b: np.ndarray, fmt: Format) -> tuple[np.ndarray, np.ndarray]:
    """:func:`ulp_distance` for floats of at most 32 bits: ordered keys computed in the
    format's own signed width (they cannot overflow it), widened once for the difference.

    A third of the array passes of the general uint64 keys, on narrower data, which
    matters because every differing element of a comparison goes through here.
    """
    signed_type = np.dtype(f"int{fmt.width}")
    mask = signed_type.type((1 << (fmt.width - 1)) - 1)
    exp_all = ((1 << fmt.exp_bits) - 1) << fmt.man_bits
    nan_all = exp_all | ((1 << fmt.man_bits) - 1)

    def key(raw: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        signed = np.ascontiguousarray(raw).view(signed_type)
        mag = signed & mask
        special = mag >= exp_all if fmt.has_inf else mag == nan_all
        # Negative values count down from zero: -0 meets +0, and -x sits |x| below it.  That is
        # (the lowest signed value) - signed where the sign is set, without np.where (ten times slower
        # on a random mix of signs): the sign spread over the word (0 or -1) flips the
        # magnitude bits, and subtracting it adds the one that makes -x of ~x.
        spread = signed >> (fmt.width - 1)
        return (signed ^ (spread & mask)) - spread, special

    (ka, special_a), (kb, special_b) = key(raw_a), key(raw_b)
    dist = np.abs(np.subtract(ka, kb, dtype=np.int64))
    special = special_a | special_b
    if special.any():
        defined = ~special | (raw_a == raw_b)
        dist = np.where(defined, dist, 0)
    else:
        defined = np.ones(np.shape(dist), dtype=bool)
    return np.asarray(dist).astype(np.uint64), defined


def magnitude(values: np.ndarray) -> np.ndarray:
    """``|values|`` of a float64 array, bit for bit what ``np.abs`` gives (the sign bit
    cleared, NaN payloads kept), by masking the bits: Pyodide's NumPy takes ``np.abs``
    through a scalar loop ten times slower than this, natively the two are as fast."""
    raw = np.ascontiguousarray(values, dtype=np.float64).view(np.uint64)
    return (raw & np.uint64(0x7FFF_FFFF_FFFF_FFFF)).view(np.float64)


@cache
def _value_table(fmt: Format) -> np.ndarray:
    """float64 value of every bit pattern of a format of at most 16 bits."""
    codes = np.arange(1 << fmt.width, dtype=np.uint64)
    sign, mag = _sign_mag(codes, fmt)
    exp = (mag >> np.uint64(fmt.man_bits)).astype(np.int32)
    man = (mag & np.uint64((1 << fmt.man_bits) - 1)).astype(np.float64)
    frac = man / float(1 << fmt.man_bits)
    normal = np.ldexp(1.0 + frac, exp - fmt.bias)
    subnormal = np.ldexp(frac, 1 - fmt.bias)
    values = np.where(exp == 0, subnormal, normal)
    values[is_inf(codes, fmt)] = np.inf
    values[is_nan(codes, fmt)] = np.nan
    return np.where(sign == 1, -values, values)


def to_float64(array: np.ndarray, fmt: Format) -> np.ndarray:
    """Exact float64 values of an array held in ``fmt``'s storage (floats and ints)."""
    if fmt.native:
        return np.asarray(array).astype(np.float64)
    if fmt.name == "bfloat16":
        widened = (np.asarray(array).astype(np.uint32) << np.uint32(16)).view(np.float32)
        with np.errstate(invalid="ignore"):
            return widened.astype(np.float64)
    return _value_table(fmt)[np.asarray(array).astype(np.intp)]


def raw_to_float64(raw: np.ndarray, fmt: Format) -> np.ndarray:
    """Exact float64 values of raw bits (an array of ``fmt.uint``), as :func:`to_float64` of the array."""
    return to_float64(raw.view(fmt.storage) if fmt.native else raw, fmt)


@cache
def _rounding_grid(fmt: Format) -> tuple[np.ndarray, np.ndarray]:
    """Finite values of a small format sorted ascending, with the codes that hold them."""
    values = _value_table(fmt)
    codes = np.arange(values.size, dtype=np.uint64)
    finite = np.isfinite(values) & ~((values == 0) & (codes >> np.uint64(fmt.width - 1) == 1))
    order = np.argsort(values[finite], kind="stable")
    return values[finite][order], codes[finite][order].astype(fmt.uint)


def from_float64(values: np.ndarray | float, fmt: Format) -> np.ndarray:
    """Round float64 values to ``fmt`` (nearest, ties to even) and return its storage array.

    Used when text gives decimals for a format NumPy lacks (bfloat16, float8).  Values
    beyond the largest finite one become infinity (or NaN in formats without infinity),
    as a cast does in PyTorch and ml_dtypes.
    """
    values = np.asarray(values, dtype=np.float64)
    if fmt.native:
        with np.errstate(over="ignore", invalid="ignore"):
            return values.astype(fmt.storage)
    grid, codes = _rounding_grid(fmt)
    flat = values.ravel()
    hi = np.clip(np.searchsorted(grid, flat), 1, grid.size - 1)
    lo = hi - 1
    d_lo = np.abs(flat - grid[lo])
    d_hi = np.abs(grid[hi] - flat)
    even_hi = (codes[hi] & 1) == 0
    pick_hi = (d_hi < d_lo) | ((d_hi == d_lo) & even_hi)
    out = np.where(pick_hi, codes[hi], codes[lo])
    # Round to nearest can overflow: a value past max + half a step is out of range.
    top = grid[-1]
    half_step = (top - grid[-2]) / 2
    over = np.abs(flat) >= top + half_step
    neg = np.signbit(flat)
    if fmt.has_inf:
        inf_code = ((1 << fmt.exp_bits) - 1) << fmt.man_bits
        nan_code = inf_code | (1 << (fmt.man_bits - 1))
        special = np.where(neg, inf_code | (1 << (fmt.width - 1)), inf_code)
    else:
        nan_code = (1 << (fmt.width - 1)) - 1
        special = np.where(neg, nan_code | (1 << (fmt.width - 1)), nan_code)
    out = np.where(over | np.isinf(flat), special, out)
    out = np.where(np.isnan(flat), nan_code, out)
    # Negative zero and negative values that round to zero keep their sign bit.
    out = np.where((out == 0) & neg & ~np.isnan(flat), 1 << (fmt.width - 1), out)
    return out.astype(fmt.uint).reshape(values.shape)


def float32_to_bfloat16(values: np.ndarray) -> np.ndarray:
    """float32 values rounded to bfloat16 (nearest, ties to even), as bfloat16 storage.

    The same answer as :func:`from_float64` (NaN becomes the positive quiet NaN, overflow
    infinity, signs kept), by integer arithmetic on the bits: bfloat16 is the top half of
    a float32, so rounding is adding just under half of the dropped half, plus its last
    kept bit for ties.  The search over the value grid costs some 60 times as long, which
    a checkpoint converted from float32 to bfloat16 pays on every element.
    """
    u = np.ascontiguousarray(values, dtype=np.float32).view(np.uint32)
    rounded = ((u + (np.uint32(0x7FFF) + ((u >> np.uint32(16)) & np.uint32(1)))) >> np.uint32(16)).astype(np.uint16)
    nan = (u & np.uint32(0x7FFFFFFF)) > np.uint32(0x7F800000)
    if nan.any():
        rounded[nan] = 0x7FC0
    return rounded
