"""The tolerance test of complex values, judged whole by the modulus as torch and numpy judge
them (:func:`complex_test`), beside :mod:`perpendis.tolerance`'s test of real values.

Each peer's own complex arithmetic is reproduced, since the peers round differently: torch
rounds each part of ``a - b`` and takes a correctly rounded modulus, numpy's vector ``abs`` of
complex64 is not always correctly rounded.
"""

from __future__ import annotations

import math

import numpy as np

from . import bits
from .bits import Format
from .peer_rounding import rounded_to, scalar_in, working_formats
from .tolerance import POLYGRAPHY_EPSILON, Tolerance, print_slack, within


def _complex_of(parts: np.ndarray, real: np.dtype) -> np.ndarray:
    """Complex values from their (m, 2) float64 components, each held exactly in ``real``."""
    return np.ascontiguousarray(parts.astype(real)).view(np.dtype(f"complex{2 * real.itemsize * 8}"))[:, 0]


def _modulus(parts: np.ndarray, work: Format | None) -> np.ndarray:
    """``|re + i im|`` of (m, 2) float64 components, correctly rounded to ``work``: what
    torch's complex ``abs`` gives (std::abs, a hypot; its vectorised path of 4 or more
    values, Sleef's hypot, differs in the last bit about once in 15,000)."""
    with np.errstate(over="ignore", invalid="ignore"):
        return rounded_to(np.hypot(parts[:, 0], parts[:, 1]), work)


def _torch_times_one(parts: np.ndarray) -> np.ndarray:
    """``(1 + 0j) * b`` as a complex product, exactly: torch's ``a - b`` of complex tensors
    is ``a - alpha * b`` with ``alpha = 1``, so a non-finite part of ``b`` makes the other
    part NaN (``0 * inf``), and ``|a - b|`` NaN where a true difference would be inf."""
    with np.errstate(invalid="ignore"):
        return np.stack([parts[:, 0] - parts[:, 1] * 0.0, parts[:, 1] + parts[:, 0] * 0.0], axis=1)


def complex_test(
    raw_a: np.ndarray,
    raw_b: np.ndarray,
    fmt: Format,
    tol: Tolerance,
    lossy: tuple[int | None, int | None] = (None, None),
    *,
    scalar_pair: bool = False,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int]:
    """The tolerance test of complex values, as the peers take it: by the modulus.

    ``raw_a``/``raw_b`` hold the raw bits of m complex elements as (m, 2) rows (real,
    imaginary) in ``fmt``, their component format.  ``torch.isclose`` and ``np.isclose``
    test ``|a - b| <= atol + rtol * |b|`` with ``|.|`` the complex abs; a complex value is
    NaN when either part is, finite when both are, and ``a == b`` when both parts are
    equal.  Each rule's arithmetic is the peer's: torch rounds each part of ``a - b`` (its
    own complex ``a - b``, see :func:`_torch_times_one`) and of ``rtol * b`` to the dtype,
    then the modulus (correctly rounded, as torch's is); numpy
    (and Polygraphy, which calls it) is asked itself, in the complex dtype, since its
    ``abs`` of complex64 is not correctly rounded; the float64 rule takes the modulus in
    float64.  ``scalar_pair``: the two sides are 0-d (one complex value each).  Returns
    where each element fails, ``|a - b|`` as the rule computes it (by
    which the worst is chosen), ``|a - b|`` and ``|b|`` in float64 (for the smallest
    tolerance that passes), and how many failures a coarse print excused (see
    :func:`failing`).
    """
    rule = tol.rule
    x, y = bits.raw_to_float64(raw_a, fmt), bits.raw_to_float64(raw_b, fmt)
    work, scalar = working_formats(fmt, rule)
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        exact_d, exact_b = _modulus(x - y, None), _modulus(y, None)
        equal = (x == y).all(axis=1)
        if rule.arithmetic in ("numpy", "polygraphy") and work is not None and work.native:
            failed, err = _numpy_rule(x, y, work, tol, equal, scalar_pair)
        elif rule.arithmetic == "float64" and rule.test == "allclose":
            err = exact_d
            ref_abs = exact_b if rule.scale_by == "b" else _modulus(x, None)
            failed = ~(within(exact_d, ref_abs, tol) | equal)
        else:  # torch's arithmetic (or a format numpy has no complex of: each part rounded)
            failed, err = _torch_rule(x, y, work, scalar, tol, equal, exact_b)
        # A NaN or infinite part meets only the same value, in every rule: numpy's |b| of a
        # finite complex b can overflow to inf, and its test then passes anything against it.
        failed |= ~equal & ~(np.isfinite(x).all(axis=1) & np.isfinite(y).all(axis=1))
        if rule.equal_nan:
            failed &= ~(np.isnan(x).any(axis=1) & np.isnan(y).any(axis=1))
    excused = 0
    if lossy != (None, None) and failed.any():
        idx = np.flatnonzero(failed)
        sides = ((raw_a, lossy[0]), (raw_b, lossy[1]))
        slack = sum(
            print_slack(raw[idx, k], fmt, d) for raw, d in sides if d is not None for k in (0, 1)
        )  # every part's slack: at least the slack of the modulus
        d = exact_d[idx]
        ok = (d <= tol.atol + tol.rtol * exact_b[idx] + slack) & (d < math.inf)
        failed[idx[ok]] = False
        excused = int(ok.sum())
    return failed, err, exact_d, exact_b, excused


def _numpy_rule(x: np.ndarray, y: np.ndarray, work: Format, tol: Tolerance, equal: np.ndarray,
                scalar_pair: bool) -> tuple[np.ndarray, np.ndarray]:
    """Where numpy's (or Polygraphy's) test fails, and its ``|a - b|``: numpy itself is asked,
    in the complex dtype, since its ``abs`` of complex64 is not always correctly rounded."""
    rule = tol.rule
    real = np.dtype(work.storage)
    cx, cy = _complex_of(x, real), _complex_of(y, real)
    # numpy's a - b of two 0-d arrays is a scalar, whose abs is correctly rounded;
    # an array's abs (a vector loop) is not always.
    in_dtype = _modulus(rounded_to(x - y, work), work).astype(real) if scalar_pair else np.abs(cx - cy)
    err = in_dtype.astype(np.float64)
    if rule.test == "both":
        rel = in_dtype / np.abs(np.where(cy == 0, real.type(POLYGRAPHY_EPSILON), cy))
        failed = ((in_dtype > tol.atol) | np.isnan(err)) & ((rel > tol.rtol) | np.isnan(rel))
    else:
        ref = cy if rule.scale_by == "b" else cx
        failed = ~((in_dtype <= tol.atol + tol.rtol * np.abs(ref)) & np.isfinite(ref) | equal)
    return failed, err


def _torch_rule(x: np.ndarray, y: np.ndarray, work: Format | None, scalar: Format | None, tol: Tolerance,
                equal: np.ndarray, exact_b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Where torch's test fails, and its ``|a - b|``: each part of ``a - b`` and of ``rtol * b``
    rounded to the dtype, then the modulus (also for a format numpy has no complex of)."""
    rule = tol.rule
    err = _modulus(rounded_to(x - (_torch_times_one(y) if rule.arithmetic == "torch" else y), work), work)
    atol, rtol = scalar_in(tol.atol, scalar), scalar_in(tol.rtol, scalar)
    if rule.test == "both":
        divisor = np.where((y == 0).all(axis=1), scalar_in(POLYGRAPHY_EPSILON, work), exact_b)
        rel = rounded_to(err / divisor, work)
        failed = ((err > atol) | np.isnan(err)) & ((rel > rtol) | np.isnan(rel))
    else:
        ref = y if rule.scale_by == "b" else x
        allowed = rounded_to(atol + _modulus(rounded_to(rtol * ref, work), work), work)
        finite = np.isfinite(err) if rule.arithmetic == "torch" else np.isfinite(ref).all(axis=1)
        failed = ~((err <= allowed) & finite | equal)
    return failed, err
