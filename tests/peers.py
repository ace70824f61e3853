"""The peer libraries as oracles: what torch, numpy, Polygraphy and torch._dynamo say of a pair.

Each oracle calls the real peer and reads what it reports, as a user reads it: pass or
fail, how many elements fail, and the worst failing element's |A - B| (and its flat
index where the peer names it).  ``None`` means the peer does not say (numpy's NaN or inf
location mismatch names no count).  Shared by the differential tests
(``tests/test_peers*.py``) and the agreement bench (``bench/peer_agreement.py``), along
with the pair generator those use.

A is the actual value and B the expected one (the reference of the tolerance test),
as Perpendis takes them: ``assert_close(actual=A, expected=B)``,
``assert_allclose(actual=A, desired=B)``, ``np.allclose(A, B)``, Polygraphy's
``out0 = A, out1 = B`` and dynamo's ``same(ref=B, res=A)``.
"""

from __future__ import annotations

import ast
import contextlib
import io
import math
import re
from dataclasses import dataclass

import numpy as np
import torch
from perpendis.engine.compare import compare
from perpendis.engine.options import ComparisonOptions
from perpendis.inputs.tensor import Tensor, from_numpy
from perpendis.numerics.bits import format_of

DTYPES = ("float16", "bfloat16", "float32", "float64", "complex64", "int32", "complex128")  # new ones last: seeds


@dataclass(frozen=True)
class Said:
    """What one peer said of one pair."""

    passed: bool
    n_fail: int | None = None  # failing elements, when the peer says
    worst: float | None = None  # the greatest |A - B| among failing elements (NaN allowed), when said
    worst_flat: int | None = None  # the flat index of that element, when the peer names it
    worst_text: str | None = None  # the worst as the peer printed it, when it prints it rounded
    worst_exact: bool = False  # the peer took that |A - B| in float64 (torch's message of two scalars)


def _torch_side(x: np.ndarray, dtype: str) -> torch.Tensor:
    if dtype == "bfloat16":
        return torch.from_numpy(np.array(x).view(np.int16)).view(torch.bfloat16)
    return torch.from_numpy(np.array(x))


def perpendis_tensor(x: np.ndarray, dtype: str, name: str) -> Tensor:
    """The Tensor Perpendis reads for a generated side (bfloat16 travels as its raw bits)."""
    if dtype == "bfloat16":
        return Tensor(np.array(x).view(np.uint16), "bfloat16", name)
    return from_numpy(x, name)


def _flat_of(index: tuple[int, ...], shape: tuple[int, ...]) -> int:
    return int(np.ravel_multi_index(index, shape)) if shape else 0


def torch_assert_close(a: np.ndarray, b: np.ndarray, dtype: str, **kwargs: object) -> Said:
    """``torch.testing.assert_close(A, B)`` with its defaults, read from its message."""
    ta, tb = _torch_side(a, dtype), _torch_side(b, dtype)
    try:
        torch.testing.assert_close(ta, tb, **kwargs)
    except AssertionError as error:
        text = str(error)
        if "Scalars are not" in text and ta.is_complex():
            # Its message of two complex scalars takes |A - B| in Python's complex (float64),
            # unlike its test; the worst is then torch's own |A - B|, the one its test judged.
            return Said(False, 1, float(torch.abs(ta - tb).item()), 0)
        if "Scalars are not" in text:
            found = re.search(r"Absolute difference: (\S+)", text)
            return Said(False, 1, float(found.group(1)) if found else None, 0, worst_exact=True)
        count = re.search(r"Mismatched elements: (\d+) /", text)
        if count is None:  # an attribute (dtype, shape) mismatch: no elements judged
            return Said(False)
        worst = re.search(r"Greatest absolute difference: (\S+) at index (\([^)]*\))", text)
        if worst is None:  # float8: a bitwise message naming only the first mismatch
            return Said(False, int(count.group(1)))
        index = ast.literal_eval(worst.group(2))
        return Said(False, int(count.group(1)), float(worst.group(1)), _flat_of(tuple(index), tuple(ta.shape)))
    return Said(True, 0)


def numpy_assert_allclose(a: np.ndarray, b: np.ndarray) -> Said:
    """``numpy.testing.assert_allclose(A, B)`` with its defaults, read from its message."""
    try:
        np.testing.assert_allclose(a, b)
    except AssertionError as error:
        text = str(error)
        count = re.search(r"Mismatched elements: (\d+) /", text)
        if count is None:  # "nan location mismatch" / "inf location mismatch": no count
            return Said(False)
        worst = re.search(r"Max absolute difference among violations: (\S+)", text)
        if worst is None:
            return Said(False, int(count.group(1)))
        return Said(False, int(count.group(1)), float(worst.group(1)), worst_text=worst.group(1))
    return Said(True, 0)


def numpy_allclose(a: np.ndarray, b: np.ndarray) -> Said:
    """``np.allclose(A, B)``; the count is of ``np.isclose``, which ``allclose`` reduces."""
    passed = bool(np.allclose(a, b))
    close = np.asarray(np.isclose(a, b))
    failing = ~close
    worst = None
    if failing.any():
        with np.errstate(all="ignore"):
            # abs(a - b), as np.isclose takes it: of two 0-d arrays, a scalar's abs
            error = np.asarray(abs(a - b))[failing]
        worst = float(np.max(error))
    return Said(passed, int(failing.sum()), worst)


@contextlib.contextmanager
def _quiet_polygraphy():
    from polygraphy.logger import G_LOGGER

    old = G_LOGGER.module_severity
    G_LOGGER.module_severity = G_LOGGER.CRITICAL
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            yield
    finally:
        G_LOGGER.module_severity = old


def polygraphy_simple(a: np.ndarray, b: np.ndarray) -> Said:
    """Polygraphy's default comparison, ``CompareFunc.simple()`` (elementwise, atol = rtol = 1e-5),
    with ``infinities_compare_equal=True``: by default its |A - B| of two equal infinities is
    NaN, which fails them; the preset lets an infinity match the same infinity, as that flag does.

    The verdict is the real function's on the whole output.  It reports no failing
    count, so the count is the real function's verdict on each element given as its own
    output (its test is elementwise, so this is the same rule element by element), and
    the worst is its ``max_absdiff`` over the failing ones.
    """
    from polygraphy.comparator import CompareFunc
    from polygraphy.comparator.struct import IterationResult

    judge = CompareFunc.simple(infinities_compare_equal=True)
    with _quiet_polygraphy():
        whole = judge(IterationResult({"out": a}, runner_name="A"), IterationResult({"out": b}, runner_name="B"))
        passed = bool(whole["out"])
        if passed:
            return Said(True, 0)
        fa, fb = a.reshape(-1), b.reshape(-1)
        # Identical finite elements differ by exactly 0, never above atol: only the others are asked.
        with np.errstate(invalid="ignore"):
            asked = np.flatnonzero(~((fa == fb) & np.isfinite(fa)) | (np.signbit(fa) != np.signbit(fb)))
        names = [f"e{i}" for i in asked]
        each = judge(
            IterationResult({n: fa[i : i + 1] for i, n in zip(asked, names, strict=True)}, runner_name="A"),
            IterationResult({n: fb[i : i + 1] for i, n in zip(asked, names, strict=True)}, runner_name="B"),
        )
    fails = [k for k, n in enumerate(names) if not bool(each[n])]
    worst = None
    if fails:
        values = [float(each[names[i]].max_absdiff) for i in fails]
        worst = math.nan if any(math.isnan(v) for v in values) else max(values)
    return Said(passed, len(fails), worst)


def dynamo_same(a: np.ndarray, b: np.ndarray, dtype: str, ref64: np.ndarray | None) -> Said:
    """``torch._dynamo.utils.same(ref=B, res=A, fp64_ref=ref)``: pass or fail only."""
    from torch._dynamo.utils import same

    fp64 = None if ref64 is None else torch.from_numpy(np.array(ref64, dtype=np.float64))
    passed = same(_torch_side(b, dtype), _torch_side(a, dtype), fp64, log_error=lambda *args: None)
    return Said(bool(passed))


def perpendis_says(
    a: np.ndarray, b: np.ndarray, dtype: str, preset: str | None, ref64: np.ndarray | None = None, **kwargs: object
) -> Said:
    """What Perpendis's report says of the pair under ``preset`` (or a custom atol/rtol in
    ``kwargs``).  ``fast=True`` stops after the fold and its numbers, which is all the
    tolerance verdict needs: the diagnosis is left out (the bench's 300,000 pairs)."""
    from perpendis.engine.compare import _numbers, prepare

    fast = bool(kwargs.pop("fast", False))
    ref = None if ref64 is None else from_numpy(np.array(ref64, dtype=np.float64), "ref")
    sides = perpendis_tensor(a, dtype, "a"), perpendis_tensor(b, dtype, "b")
    if fast:
        prepared = prepare(*sides, ComparisonOptions(preset=preset, **kwargs), ref=ref)  # type: ignore[arg-type]
        report = prepared.report
        if prepared.a is not None:
            fmt = format_of(report.compared_as)
            rmse = getattr(prepared, "rmse", None)  # absent before the dynamo preset
            _numbers(report, prepared.fold(), fmt, prepared._shape(), prepared.tol, *([rmse] if rmse else []))
    else:
        report = compare(*sides, ComparisonOptions(preset=preset, **kwargs), ref=ref)  # type: ignore[arg-type]
    t = report.tolerance
    if t is None:
        return Said(False)
    worst = getattr(t, "worst_fail", None)
    if worst is None:
        return Said(t.passed, t.n_fail)
    value = math.nan if worst.abs_diff is None else worst.abs_diff
    # A complex value is judged whole; its element is its real part, flat index 2k of the
    # compared shape's trailing axis of 2, which is element k to the peers.
    flat = worst.flat // 2 if dtype.startswith("complex") else worst.flat
    return Said(t.passed, t.n_fail, value, flat)


def rounded(value: float, dtype: str) -> float:
    """``value`` rounded to ``dtype`` (bfloat16 through torch), as the peer's own arithmetic rounds it."""
    if dtype == "bfloat16":
        return float(torch.tensor(value, dtype=torch.float64).to(torch.bfloat16).item())
    with np.errstate(over="ignore"):
        return float(np.array(value).astype(dtype))


def same_worst(ours: Said, theirs: Said, preset: str, dtype: str) -> bool:
    """The same worst failing |A - B| (and element, where the peer names it).

    Each peer takes |A - B| in its own arithmetic: torch and numpy in the dtype,
    Polygraphy float16's in float32.  Perpendis holds it exactly in float64, so it is
    rounded as the peer's was; numpy prints it rounded, so it is printed as numpy does.
    """
    if ours.worst is None or theirs.worst is None:
        return False
    if math.isnan(ours.worst) or math.isnan(theirs.worst):
        return math.isnan(ours.worst) and math.isnan(theirs.worst)
    work = {"complex64": "float32", "complex128": "float64", "int32": "float64"}.get(dtype, dtype)
    if preset == "polygraphy" and dtype == "float16":
        work = "float32"
    if theirs.worst_exact:
        work = "float64"
    value = rounded(ours.worst, work)
    if theirs.worst_text is not None:
        # numpy subtracts integers as integers (wrapping past the dtype's range; not generated here)
        printed = np.array([value], dtype=dtype if dtype.startswith("int") else work)
        return np.array2string(np.max(printed)) == theirs.worst_text
    same_place = theirs.worst_flat is None or theirs.worst_flat == ours.worst_flat
    return value == theirs.worst and same_place


# ---------------------------------------------------------------------------------------
# Generated pairs: every dtype, specials, subnormals, huge and tiny magnitudes, 0-d and empty.

SHAPES = ((), (0,), (1,), (5,), (2, 3), (2, 0, 3), (3, 4))


def _info(dtype: str) -> tuple[float, float, float]:
    """Largest finite, smallest normal and smallest subnormal of a float dtype."""
    if dtype == "bfloat16":
        return 3.3895313892515355e38, 1.1754943508222875e-38, 9.183549615799121e-41
    f = np.finfo({"complex64": np.float32, "complex128": np.float64}.get(dtype, dtype))
    return float(f.max), float(f.smallest_normal), float(f.smallest_subnormal)


def _values(rng: np.random.Generator, n: int, dtype: str) -> np.ndarray:
    """float64 values of every kind a float dtype holds (rounded to it by the caller)."""
    top, normal, sub = _info(dtype)
    kind = rng.integers(0, 10, n)
    scale = 10.0 ** rng.uniform(math.log10(normal), math.log10(top), n)
    out = np.where(kind < 4, rng.standard_normal(n), rng.standard_normal(n) * scale)
    out = np.where(kind == 5, rng.uniform(-1, 1, n) * normal, out)  # subnormals
    out = np.where(kind == 6, rng.choice([0.0, -0.0, sub, -sub, top, -top], n), out)
    out = np.where(kind == 7, rng.choice([np.inf, -np.inf, np.nan], n), out)
    return out


def _cast(values: np.ndarray, dtype: str) -> np.ndarray:
    with np.errstate(over="ignore", invalid="ignore"):
        if dtype == "bfloat16":
            t = torch.from_numpy(values.astype(np.float32)).to(torch.bfloat16)
            return t.view(torch.int16).numpy().view(np.uint16).copy()
        return values.astype(dtype)


def _perturb(rng: np.random.Generator, x64: np.ndarray, dtype: str) -> np.ndarray:
    """B's float64 values from A's: equal, rounding-sized noise, larger noise, a fresh value or a special."""
    n = x64.size
    how = rng.integers(0, 8, n)
    noise = 10.0 ** rng.uniform(-9, -1, n) * rng.standard_normal(n)
    with np.errstate(invalid="ignore", over="ignore"):
        out = np.where(how < 2, x64, x64 * (1 + noise))
        out = np.where(how == 4, x64 + noise, out)
    out = np.where(how == 5, _values(rng, n, dtype), out)
    out = np.where(how == 6, rng.choice([np.inf, -np.inf, np.nan, 0.0, -0.0], n), out)
    return out


def pair(rng: np.random.Generator, dtype: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One generated pair ``(A, B, ref64)`` in ``dtype`` (bfloat16 as raw uint16 bits), of a random
    shape; ``ref64`` is a float64 "higher precision run" near B's values (for dynamo's rule)."""
    shape = SHAPES[rng.integers(len(SHAPES))]
    n = math.prod(shape)
    if dtype.startswith("int"):
        info = np.iinfo(dtype)
        a = rng.integers(info.min, info.max, n, endpoint=True).astype(dtype)
        small = rng.integers(-3, 4, n)
        b = np.where(rng.integers(0, 3, n) == 0, a, np.clip(a.astype(np.int64) + small, info.min, info.max)).astype(
            dtype
        )
        ref = b.astype(np.float64)
        return a.reshape(shape), b.reshape(shape), ref.reshape(shape)
    if dtype.startswith("complex"):
        parts = [_values(rng, n, dtype) for _ in range(2)]
        x = parts[0] + 1j * parts[1]
        y = _perturb(rng, parts[0], dtype) + 1j * _perturb(rng, parts[1], dtype)
        a, b = x.astype(dtype), y.astype(dtype)
        return a.reshape(shape), b.reshape(shape), b.real.astype(np.float64).reshape(shape)
    x64 = _values(rng, n, dtype)
    a = _cast(x64, dtype)
    # B from A's own values, and a float64 reference between the two.
    a64 = _decoded(a, dtype)
    b = _cast(_perturb(rng, a64, dtype), dtype)
    b64 = _decoded(b, dtype)
    with np.errstate(invalid="ignore", over="ignore"):
        ref = np.where(rng.integers(0, 2, n) == 0, b64, b64 * (1 + 1e-3 * rng.standard_normal(n)))
    # A NaN on both sides keeps A's bits half the time: bit-equal NaNs.
    same_nan = np.isnan(a64) & np.isnan(b64) & (rng.integers(0, 2, n) == 0)
    b = np.where(same_nan, a, b)
    return a.reshape(shape), b.reshape(shape), ref.reshape(shape)


def _decoded(x: np.ndarray, dtype: str) -> np.ndarray:
    if dtype == "bfloat16":
        return (x.astype(np.uint32) << np.uint32(16)).view(np.float32).astype(np.float64)
    with np.errstate(invalid="ignore"):
        return x.astype(np.float64)


# ---------------------------------------------------------------------------------------
# Disagreements: which documented departure (docs/presets.md) explains one, if any.

DEVIATIONS = {
    "dynamo-inf-rmse": "dynamo's RMSE rule passes an infinity in A against a finite B when both RMSEs are inf",
    "numpy-abs-overflow": "numpy's |B| of a finite complex B overflows to inf, so np.isclose passes a NaN or an "
    "infinity against it",
}


def _parts(x: np.ndarray, dtype: str) -> np.ndarray:
    """float64 values of a generated side, a complex one as (..., 2) parts."""
    if dtype.startswith("complex"):
        return np.stack([x.real, x.imag], axis=-1).astype(np.float64)
    return _decoded(x, dtype)


def _rmse(ref: np.ndarray, x: np.ndarray) -> float:
    """``torch._dynamo.utils.rmse`` in float64: over every element, so an inf makes it inf."""
    with np.errstate(over="ignore", invalid="ignore"):
        return float(np.sqrt(np.mean(np.square(ref - x)))) if x.size else math.nan


def disagreement(
    preset: str, dtype: str, a: np.ndarray, b: np.ndarray, ref: np.ndarray | None, ours: Said, theirs: Said
) -> str | None:
    """None when Perpendis says what the peer says (verdict, and count and worst where the
    peer states them); else the name of the documented departure (:data:`DEVIATIONS`) that
    explains the difference, checked on the pair itself, or ``"unexplained"``."""
    same_count = theirs.n_fail is None or ours.n_fail == theirs.n_fail
    same = ours.passed == theirs.passed and same_count
    if same and (theirs.worst is None or same_worst(ours, theirs, preset, dtype)):
        return None
    va, vb = _parts(a, dtype), _parts(b, dtype)
    if preset == "dynamo" and ref is not None and theirs.passed and not ours.passed:
        inf_against_finite = bool((np.isinf(va) & np.isfinite(vb)).any())
        r = np.asarray(ref, dtype=np.float64)
        if inf_against_finite and math.isinf(_rmse(r, va)) and math.isinf(_rmse(r, vb)):
            return "dynamo-inf-rmse"
    if preset.startswith("numpy") and dtype.startswith("complex"):
        with np.errstate(all="ignore"):
            close = np.asarray(np.isclose(a, b, equal_nan=preset == "numpy-default")).reshape(-1)
            overflowed = (np.isinf(np.abs(b)) & np.isfinite(b)).reshape(-1)
        nonfinite = ~np.isfinite(va).all(axis=-1).reshape(-1)
        k = int((close & overflowed & nonfinite).sum())
        if k and ours.n_fail is not None and (theirs.n_fail is None or ours.n_fail == theirs.n_fail + k):
            return "numpy-abs-overflow"
    return "unexplained"
