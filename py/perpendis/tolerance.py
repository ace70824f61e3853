"""Tolerance presets and the allclose test ``|a - b| <= atol + rtol * |b|``.

``b`` is the reference, as in ``numpy.testing.assert_allclose(actual=a, desired=b)`` and
``torch.testing.assert_close(actual=a, expected=b)``: rtol scales with the reference
magnitude and atol is the floor near zero.  The presets are starting points for common
situations, not guarantees; the report also says the smallest tolerance that would pass.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal

import numpy as np

from . import bits
from .bits import Format
from .errors import InputError


@dataclass(frozen=True)
class Tolerance:
    """One resolved tolerance: the numbers used, the preset they came from, and any caveat."""

    atol: float
    rtol: float
    preset: str | None = None
    warning: str | None = None


@dataclass(frozen=True)
class Preset:
    atol: float
    rtol: float
    description: str
    warning: str | None = None


NUMPY_DEFAULT_WARNING = (
    "numpy.testing.assert_allclose's defaults (rtol=1e-7, atol=0) hold elements whose reference is near "
    "zero to a purely relative bar they almost never meet, so legitimate rounding fails; set a real atol"
)

PRESETS: dict[str, Preset] = {
    "fp32-cpu": Preset(1e-5, 1e-3, "float32, CPU against CPU (e.g. PyTorch against ONNX Runtime)"),
    "fp32-tf32": Preset(1e-3, 1e-2, "float32 where one side used TF32 matmuls or fused GPU kernels"),
    "fp16": Preset(1e-2, 1e-2, "float16: about three significant digits, so lean on rtol"),
    "bf16": Preset(1e-2, 2e-2, "bfloat16: only 7 mantissa bits, wider still than float16"),
    # Logits span orders of magnitude, so only a relative bar is fair; the atol of 1e-9 is a
    # floor that lets exact zeros meet values far below any logit that matters.
    "logits": Preset(1e-9, 1e-3, "high dynamic range outputs (logits, unnormalised scores): relative only"),
    # float64 rounding is ~1e-16 per operation; 1e-9 relative leaves room for deep networks
    # and different summation orders while still catching any float32 round trip (~6e-8 each).
    "fp64": Preset(1e-12, 1e-9, "float64 against float64: tight, catches a float32 round trip"),
    # One float8_e5m2 step is up to 25% of the value (12.5% for e4m3fn); rtol 0.25 lets one
    # step pass everywhere, and the atol covers values quantised to zero.
    "fp8": Preset(1e-2, 0.25, "float8 (e4m3fn, e5m2): one step of the format is up to 25% relative"),
    "exact": Preset(0.0, 0.0, "integers and bools: values must be equal"),
    "torch-default": Preset(math.nan, math.nan, "torch.testing.assert_close's defaults for the compared dtype"),
    "numpy-default": Preset(0.0, 1e-7, "numpy.testing.assert_allclose's defaults", NUMPY_DEFAULT_WARNING),
}

# torch.testing.assert_close's per-dtype (atol, rtol); every other dtype, float8 included, is exact.
_TORCH_DEFAULTS: dict[str, tuple[float, float]] = {
    "float16": (1e-5, 1e-3),
    "bfloat16": (1e-5, 1.6e-2),
    "float32": (1e-5, 1.3e-6),
    "float64": (1e-7, 1e-7),
}

_DEFAULT_FOR_FORMAT = {
    "float16": "fp16",
    "bfloat16": "bf16",
    "float32": "fp32-cpu",
    "float64": "fp64",
    "float8_e4m3fn": "fp8",
    "float8_e5m2": "fp8",
}


def default_preset(fmt_a: Format, fmt_b: Format | None = None) -> str:
    """The preset for values compared in ``fmt_a``, or in the format A and B are compared in."""
    if fmt_b is not None:
        fmt_a = bits.compared_format(fmt_a, fmt_b)
    return _DEFAULT_FOR_FORMAT.get(fmt_a.name, "exact")


def _number(value: object, name: str) -> float:
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise InputError(f"{name} must be a number, got {value!r}") from None
    if not math.isfinite(number) or number < 0:
        raise InputError(f"{name} must be a finite number >= 0, got {value!r}")
    return number


def resolve(
    fmt: Format, *, preset: str | None = None, atol: float | None = None, rtol: float | None = None
) -> Tolerance:
    """The tolerance for values in ``fmt``: a preset (default: chosen from ``fmt``), then overrides.

    An explicit ``atol`` or ``rtol`` replaces the preset's value and keeps the other.
    """
    name = preset or default_preset(fmt)
    chosen = PRESETS.get(name)
    if chosen is None:
        raise InputError(f"unknown tolerance preset {name!r}; choose one of: {', '.join(PRESETS)}")
    base_atol, base_rtol = (
        _TORCH_DEFAULTS.get(fmt.name, (0.0, 0.0)) if name == "torch-default" else (chosen.atol, chosen.rtol)
    )
    final_atol = base_atol if atol is None else _number(atol, "atol")
    final_rtol = base_rtol if rtol is None else _number(rtol, "rtol")
    warning = chosen.warning if final_atol == 0 and fmt.is_float else None
    return Tolerance(final_atol, final_rtol, name, warning)


def within(abs_diff: np.ndarray, abs_ref: np.ndarray, tol: Tolerance) -> np.ndarray:
    """Where ``|a - b| <= atol + rtol * |b|``; False where the difference is NaN."""
    return abs_diff <= tol.atol + tol.rtol * abs_ref


def failing(
    abs_diff: np.ndarray,
    abs_ref: np.ndarray,
    both_nan: np.ndarray | None,
    raw_a: np.ndarray,
    raw_b: np.ndarray,
    fmt: Format,
    tol: Tolerance,
    lossy: tuple[int | None, int | None] = (None, None),
) -> tuple[np.ndarray, int]:
    """Where pairs fail the tolerance, and how many failures a coarse print excused.

    ``abs_diff`` and ``abs_ref`` are ``|a - b|`` and ``|b|`` in float64, ``both_nan`` where
    both sides are NaN (None: nowhere), ``raw_a``/``raw_b`` the raw bits.  NaN against
    NaN passes (equal as missing values); a NaN against a number or an infinity against
    anything else fails at any tolerance.  ``lossy`` holds each side's
    :func:`printed_digits`: a failure within :func:`print_slack` of passing is not one,
    since the print cannot tell it from a pass.  The caller passes what it computed
    already: a comparison has all of them once per chunk.
    """
    failed = ~within(abs_diff, abs_ref, tol)
    if both_nan is not None:
        failed &= ~both_nan
    if lossy == (None, None) or not failed.any():
        return failed, 0
    idx = np.flatnonzero(failed)
    sides = ((raw_a, lossy[0]), (raw_b, lossy[1]))
    slack = sum(print_slack(raw.reshape(-1)[idx], fmt, d) for raw, d in sides if d is not None)
    excused = abs_diff.reshape(-1)[idx] <= tol.atol + tol.rtol * abs_ref.reshape(-1)[idx] + slack
    failed.reshape(-1)[idx[excused]] = False  # a view: ``failed`` is a fresh C-ordered array
    return failed, int(excused.sum())


def printed_digits(info: Mapping[str, object]) -> int | None:
    """For an input read from a print too coarse to pin its values (a :meth:`Tensor.describe`
    dict), the fewest significant digits it was printed with (0 when unknown); None when
    the input was read exactly and has no print slack."""
    if info.get("lossless", True):
        return None
    return int(info.get("digits") or 0)  # type: ignore[call-overload]


def print_slack(raw: np.ndarray, fmt: Format, digits: int) -> np.ndarray:
    """How far each value read from a coarse print may lie from the value that was printed.

    That is half a unit in the print's last digit; the print is gone, but two upper bounds
    on that unit remain, and the smaller is kept.  The shortest decimal of the value read
    back has at most the printed digits (a print pads: ``1.0000`` reads back as ``1``, so
    this bound alone would excuse a difference of 0.5), and every printed value had at
    least ``digits`` significant ones (0: unknown, this bound is left out).  Run only on
    the few elements being judged, so a Python loop is affordable.
    """
    out = np.full(raw.size, math.inf)
    for i, code in enumerate(raw.tolist()):
        shortest = Decimal(bits.decimal_string(code, fmt))
        if shortest.is_finite():
            last = shortest.as_tuple().exponent
            if digits:
                last = min(last, shortest.adjusted() - digits + 1)  # type: ignore[type-var]
            out[i] = 0.5 * 10.0**last
    return out
