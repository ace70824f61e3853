"""Tolerance presets and the allclose test ``|a - b| <= atol + rtol * |b|``.

``b`` is the reference, as in ``numpy.testing.assert_allclose(actual=a, desired=b)`` and
``torch.testing.assert_close(actual=a, expected=b)``: rtol scales with the reference
magnitude and atol is the floor near zero.  The presets are starting points for common
situations, not guarantees; the report also says the smallest tolerance that would pass.

Five presets reproduce a peer that users already trust, element for element: the same
formula, NaN and infinity rules and the same rounding (each peer computes the test in
the dtype it was given, so a float16 pair is judged in float16 arithmetic).  Each says
which peer it mimics and how in its :class:`Rule`; ``docs/presets.md`` writes them out.
Every other preset, and a custom tolerance, tests in exact float64 arithmetic.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal

import numpy as np

from ..errors import InputError
from . import bits, element_bits
from .bits import Format
from .peer_rounding import rounded_to, scalar_in, working_formats


@dataclass(frozen=True)
class Rule:
    """How a preset applies its atol and rtol, beyond the two numbers: what its peer does.

    ``arithmetic`` is where the test's operations round: ``"float64"`` (exactly, for
    every format Perpendis holds), ``"torch"`` (``torch.isclose``: each operation rounds
    to the compared dtype, the scalars atol and rtol taken as float32, or float64 for a
    float64 pair), ``"numpy"`` (``np.isclose``: each operation in the dtype, the scalars
    taken in it too) or ``"polygraphy"`` (float16 cast up to float32, else the dtype).
    ``test`` is ``"allclose"`` (fails when ``|a - b| > atol + rtol * |ref|``) or
    ``"both"`` (Polygraphy: fails only when ``|a - b| > atol`` and
    ``|a - b| / |b + eps| > rtol``).  ``scale_by`` is the side ``ref`` is: ``"b"``, or
    ``"a"`` for dynamo, whose ``allclose(ref, res)`` scales rtol by the result.
    ``equal_nan`` False fails every NaN, bit-equal ones included, as ``equal_nan=False``
    does.  ``same_dtype`` refuses a pair of two dtypes, as ``check_dtype=True`` does, and
    ``rmse`` lets dynamo's RMSE rule pass a pair that fails the elementwise test.
    """

    arithmetic: str = "float64"
    test: str = "allclose"
    scale_by: str = "b"
    equal_nan: bool = True
    same_dtype: bool = False
    rmse: bool = False


DEFAULT_RULE = Rule()


@dataclass(frozen=True)
class Tolerance:
    """One resolved tolerance: the numbers used, the preset they came from, and any caveat.

    The preset's :class:`Rule` comes with its name, so a tolerance sent elsewhere as
    (atol, rtol, preset, complex) is applied there by the same rule.
    """

    atol: float
    rtol: float
    preset: str | None = None
    warning: str | None = None
    # The compared elements are (real, imaginary) pairs along the last axis, both sides
    # complex: the test is of complex values, by the modulus, as the peers take it.
    complex: bool = False

    @property
    def rule(self) -> Rule:
        chosen = PRESETS.get(self.preset or "")
        return DEFAULT_RULE if chosen is None else chosen.rule


@dataclass(frozen=True)
class Preset:
    """A named tolerance; ``mimics`` names the peer whose check it reproduces, and ``formula``
    says that check in one line (both shown in the page's preset list and the docs)."""

    atol: float
    rtol: float
    description: str
    warning: str | None = None
    mimics: str | None = None
    formula: str = "|A - B| <= atol + rtol * |B|, in float64; NaN equals NaN; an infinity only the same infinity"
    rule: Rule = field(default=DEFAULT_RULE)



NUMPY_DEFAULT_WARNING = (
    "numpy.testing.assert_allclose's defaults (rtol=1e-7, atol=0) hold elements whose reference is near "
    "zero to a purely relative bar they almost never meet, so legitimate rounding fails; set a real atol"
)

TORCH = "torch.testing.assert_close"
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
    "torch-default": Preset(
        math.nan,
        math.nan,
        "torch.testing.assert_close's defaults for the compared dtype; it refuses two dtypes, and fails every NaN",
        mimics=TORCH,
        formula="torch.isclose: |A - B| <= atol + |rtol * B| in the dtype's own arithmetic, equal_nan=False, "
        "check_dtype=True; (atol, rtol) float16 (1e-5, 1e-3), bfloat16 (1e-5, 1.6e-2), float32 (1e-5, 1.3e-6), "
        "float64 (1e-7, 1e-7), every other dtype exact",
        rule=Rule(arithmetic="torch", equal_nan=False, same_dtype=True),
    ),
    "numpy-default": Preset(
        0.0,
        1e-7,
        "numpy.testing.assert_allclose's defaults",
        NUMPY_DEFAULT_WARNING,
        mimics="numpy.testing.assert_allclose",
        formula="np.isclose: |A - B| <= atol + rtol * |B| in the dtype's own arithmetic, equal_nan=True; "
        "NaN and infinities must sit at the same places",
        rule=Rule(arithmetic="numpy"),
    ),
    "numpy-allclose": Preset(
        1e-8,
        1e-5,
        "np.allclose's defaults; asymmetric: rtol scales with |B| only, so allclose(A, B) and allclose(B, A) differ",
        mimics="numpy.allclose",
        formula="np.isclose: |A - B| <= atol + rtol * |B| in the dtype's own arithmetic, equal_nan=False",
        rule=Rule(arithmetic="numpy", equal_nan=False),
    ),
    "polygraphy": Preset(
        1e-5,
        1e-5,
        "Polygraphy's default comparison (CompareFunc.simple, elementwise): an element fails only beyond both",
        mimics="Polygraphy CompareFunc.simple",
        formula="fails where |A - B| > atol and |A - B| / |B + eps| > rtol (eps = 2.22e-16 where B == 0; "
        "float16 cast up to float32); every NaN fails; equal infinities pass, as with infinities_compare_equal",
        rule=Rule(arithmetic="polygraphy", test="both", equal_nan=False),
    ),
    "dynamo": Preset(
        1e-4,
        1e-4,
        "torch._dynamo.utils.same: allclose at tol 1e-4, else (given a float64 reference) its RMSE rule",
        mimics="torch._dynamo.utils.same",
        formula="passes when |B - A| <= tol + |tol * A| (torch.isclose, equal_nan=False) everywhere, or, given a "
        "float64 reference R, when RMSE(R, A) <= m * RMSE(R, B) + tol / 10 (m = 3 for float16, bfloat16 or "
        "under 1000 elements, else 2); refuses two dtypes",
        rule=Rule(arithmetic="torch", scale_by="a", equal_nan=False, same_dtype=True, rmse=True),
    ),
}

# torch.testing.assert_close's per-dtype (atol, rtol); every other dtype, float8 included, is exact.
_TORCH_DEFAULTS: dict[str, tuple[float, float]] = {
    "float16": (1e-5, 1e-3),
    "bfloat16": (1e-5, 1.6e-2),
    "float32": (1e-5, 1.3e-6),
    "float64": (1e-7, 1e-7),
}

def preset_label(name: str) -> str:
    """A preset's entry in a list: its name, its numbers, and the peer it mimics."""
    p = PRESETS[name]
    numbers = "by dtype" if math.isnan(p.atol) else f"atol {p.atol:g}, rtol {p.rtol:g}"
    return f"{name} ({numbers})" + (f", as {p.mimics}" if p.mimics else "")


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
    """Where ``|a - b| <= atol + rtol * |b|`` with a finite ``|a - b|``, in float64.

    False where the difference is NaN, and where it is infinite: an infinity against a
    number or the other infinity fails at any tolerance (``atol + rtol * inf`` is inf, so
    the bare inequality would let it pass), as in ``torch.isclose`` and ``np.isclose``.
    """
    with np.errstate(invalid="ignore"):
        return (abs_diff <= tol.atol + tol.rtol * abs_ref) & (abs_diff < math.inf)


POLYGRAPHY_EPSILON = 2.220446049250313e-16  # what Polygraphy adds to zeros of B before dividing


def _peer_test(raw_a: np.ndarray, raw_b: np.ndarray, fmt: Format, tol: Tolerance) -> tuple[np.ndarray, np.ndarray]:
    """Where a peer's rule fails the pairs, and ``|a - b|`` as the peer computes it.

    Run on the differing elements only, and only for the peer presets: each operation
    is rounded as the peer's own arithmetic rounds it (see :class:`Rule`).
    """
    rule = tol.rule
    work, scalar = working_formats(fmt, rule)
    x, y = bits.raw_to_float64(raw_a, fmt), bits.raw_to_float64(raw_b, fmt)
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        err = rounded_to(np.abs(x - y), work)
        atol, rtol = scalar_in(tol.atol, scalar), scalar_in(tol.rtol, scalar)
        if rule.test == "both":
            divisor = np.where(y == 0, scalar_in(POLYGRAPHY_EPSILON, work), y)
            rel = rounded_to(err / np.abs(divisor), work)
            failed = ((err > atol) | np.isnan(err)) & ((rel > rtol) | np.isnan(rel))
            return failed, err
        ref = y if rule.scale_by == "b" else x
        allowed = rounded_to(atol + rounded_to(rtol * np.abs(ref), work), work)
        close = err <= allowed
        # torch.isclose wants a finite error; np.isclose a finite reference: either way an
        # infinity meets only itself, which (A == B) admits.
        close &= np.isfinite(err) if rule.arithmetic == "torch" else np.isfinite(ref)
        close |= x == y
        if not fmt.is_float and rule.arithmetic == "torch" and tol.atol == tol.rtol == 0:
            close &= raw_a == raw_b  # torch compares integers exactly, float64 cannot past 2**53
    return ~close, err


def judged_difference(
    abs_diff: np.ndarray, raw_a: np.ndarray, raw_b: np.ndarray, fmt: Format, tol: Tolerance
) -> np.ndarray:
    """``|a - b|`` as the tolerance's rule computes it (rounded as its peer rounds it), by
    which the worst failing element is chosen, as the peer chooses it."""
    if tol.rule.arithmetic == "float64":
        return abs_diff
    return _peer_test(raw_a, raw_b, fmt, tol)[1]


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
    NaN passes (equal as missing values) unless the preset's rule takes
    ``equal_nan=False``; a NaN against a number, or an infinity against anything but the
    same infinity, fails at any tolerance.  ``lossy`` holds each side's
    :func:`printed_digits`: a finite failure within :func:`print_slack` of passing is not
    one, since the print cannot tell it from a pass.  The caller passes what it computed
    already: a comparison has all of them once per chunk.
    """
    rule = tol.rule
    if rule.arithmetic == "float64" and rule.test == "allclose" and rule.scale_by == "b":
        if not fmt.is_float:  # int64 neighbours past 2**53 are equal in float64, not in bits
            abs_diff = np.where((abs_diff == 0) & (raw_a != raw_b), 1.0, abs_diff)
        failed = ~within(abs_diff, abs_ref, tol)
    else:
        failed = _peer_test(raw_a, raw_b, fmt, tol)[0]
    if both_nan is not None:
        failed = failed & ~both_nan if rule.equal_nan else failed | both_nan
    if lossy == (None, None) or not failed.any():
        return failed, 0
    idx = np.flatnonzero(failed)
    sides = ((raw_a, lossy[0]), (raw_b, lossy[1]))
    slack = sum(print_slack(raw.reshape(-1)[idx], fmt, d) for raw, d in sides if d is not None)
    d = abs_diff.reshape(-1)[idx]
    excused = (d <= tol.atol + tol.rtol * abs_ref.reshape(-1)[idx] + slack) & (d < math.inf)
    failed.reshape(-1)[idx[excused]] = False  # a view: ``failed`` is a fresh C-ordered array
    return failed, int(excused.sum())


def bit_equal_nan_fails(raw_a: np.ndarray, raw_b: np.ndarray, fmt: Format, tol: Tolerance) -> np.ndarray:
    """Positions of NaNs with the same bits on both sides that the rule fails (``equal_nan=False``).

    Bit equality calls them equal, and no comparison of differing elements sees them, so
    a rule that fails every NaN finds them here, in one pass over the chunk.
    """
    if tol.rule.equal_nan or not fmt.is_float:
        return np.empty(0, dtype=np.intp)
    return np.flatnonzero(bits.is_nan(raw_a, fmt) & (raw_a == raw_b))


def refusal(tol: Tolerance, dtype_a: str, dtype_b: str, compared_as: str) -> str | None:
    """Why the tolerance's peer refuses the pair outright (two dtypes), or None."""
    p = PRESETS.get(tol.preset or "")
    if p is None or not p.rule.same_dtype or dtype_a == dtype_b:
        return None
    return (
        f"{p.mimics} refuses A as {dtype_a} against B as {dtype_b} (check_dtype=True by default), so this preset "
        f"fails the pair; its elements were compared as {compared_as}"
    )


def dynamo_rmse_passes(
    a_error: float, b_error: float, fmt: Format, shape: tuple[int, ...], tol: Tolerance
) -> bool:
    """``torch._dynamo.utils.same``'s RMSE rule: A's RMSE against the float64 reference within
    ``m`` times B's plus ``tol / 10`` (NaN errors fail: the comparison is false)."""
    tolerance_used = max(tol.atol, tol.rtol)
    multiplier = 3.0 if fmt.name in ("float16", "bfloat16") else 2.0
    n = math.prod(shape)
    if n < 1000 or (len(shape) == 4 and shape[-1] == shape[-2] == 1) or tolerance_used >= 2e-2:
        multiplier = 3.0
    return a_error <= multiplier * b_error + tolerance_used / 10.0


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
        shortest = Decimal(element_bits.decimal_string(code, fmt))
        if shortest.is_finite():
            last = shortest.as_tuple().exponent
            if digits:
                last = min(last, shortest.adjusted() - digits + 1)  # type: ignore[type-var]
            out[i] = 0.5 * 10.0**last
    return out
