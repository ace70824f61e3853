"""Follow-up questions about the kept pair: one element, the next differing one, a pooled
2-D slice of a metric (the heat map), a scatter sample.  Each reads the session's pair;
none changes it."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from ..engine.fold.chunk import CHUNK, relative
from ..engine.fold.numbers import make_element
from ..errors import InputError
from ..numerics import bits, element_bits
from ..numerics.tolerance import Tolerance, bit_equal_nan_fails, failing, printed_digits
from ..report.model import plain
from .fold import Progress
from .requests import ElementRequest, ScatterRequest, SliceRequest, StepRequest
from .session import Session


def _flat_index(flat: object, size: int, *, lo: int = 0, hi: int | None = None) -> int:
    hi = size - 1 if hi is None else hi
    if not isinstance(flat, int) or isinstance(flat, bool) or not lo <= flat <= hi:
        raise InputError(f"flat must be an element index from {lo} to {hi}, got {flat!r}")
    return flat


def _decimal(raw: int | None, fmt: bits.Format) -> str | None:
    return None if raw is None else element_bits.decimal_string(raw, fmt)


def element(
    session: Session, request: ElementRequest, payloads: Mapping[str, Any], progress: Progress | None, workers: int
) -> dict[str, Any]:
    """One element's bits, fields and neighbours in A and B."""
    report, a, b = session.flat_arrays()
    fmt = report.aligned.fmt
    flat = _flat_index(request.flat, a.size)
    ra, rb = (int(bits.raw_bits(x[flat : flat + 1], fmt)[0]) for x in (a, b))
    element = plain(make_element(flat, ra, rb, fmt, report.aligned.shape))
    (a_prev, a_next), (b_prev, b_next) = element_bits.neighbours(ra, fmt), element_bits.neighbours(rb, fmt)
    element |= {
        "a_fields": element_bits.fields(ra, fmt) if fmt.is_float else None,
        "b_fields": element_bits.fields(rb, fmt) if fmt.is_float else None,
        "a_prev": _decimal(a_prev, fmt),
        "a_next": _decimal(a_next, fmt),
        "b_prev": _decimal(b_prev, fmt),
        "b_next": _decimal(b_next, fmt),
    }
    return {"element": element}


def step(
    session: Session, request: StepRequest, payloads: Mapping[str, Any], progress: Progress | None, workers: int
) -> dict[str, Any]:
    """The next (direction 1) or previous (-1) bitwise-differing element, scanning in chunks."""
    report, a, b = session.flat_arrays()
    fmt = report.aligned.fmt
    direction = request.direction
    if direction not in (1, -1):
        raise InputError(f"direction must be 1 or -1, got {direction!r}")
    flat = _flat_index(request.flat, a.size, lo=-1, hi=a.size)
    ra, rb = bits.raw_bits(a, fmt), bits.raw_bits(b, fmt)
    if direction == 1:
        for start in range(flat + 1, a.size, CHUNK):
            hits = np.flatnonzero(ra[start : start + CHUNK] != rb[start : start + CHUNK])
            if hits.size:
                return {"flat": start + int(hits[0])}
    else:
        for stop in range(flat, 0, -CHUNK):
            start = max(0, stop - CHUNK)
            hits = np.flatnonzero(ra[start:stop] != rb[start:stop])
            if hits.size:
                return {"flat": start + int(hits[-1])}
    return {"flat": None}


def _metric(
    name: str, a: np.ndarray, b: np.ndarray, fmt: bits.Format, tol: Tolerance, lossy: tuple[int | None, int | None]
) -> np.ndarray:
    """Per-element metric of a plane, as the report judges it; NaN or undefined becomes +inf, the worst possible."""
    va, vb = bits.to_float64(a, fmt), bits.to_float64(b, fmt)
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        absd = np.abs(va - vb)
        if name == "abs":
            out = absd
        elif name == "rel":
            out = relative(absd, np.abs(vb))
        elif name == "ulp":
            dist, defined = bits.ulp_distance(bits.raw_bits(a, fmt), bits.raw_bits(b, fmt), fmt)
            out = np.where(defined, dist.astype(np.float64), np.inf)
        elif name == "fail":
            ra, rb = bits.raw_bits(a, fmt), bits.raw_bits(b, fmt)
            both_nan = np.isnan(va) & np.isnan(vb)
            out = failing(absd, np.abs(vb), both_nan, ra, rb, fmt, tol, lossy)[0].astype(np.float64)
        else:
            raise InputError(f"metric must be one of abs, ulp, rel, fail; got {name!r}")
    same = bits.raw_bits(a, fmt) == bits.raw_bits(b, fmt)
    if name == "fail":  # bit-equal NaNs fail under a rule of equal_nan=False, as the report counts them
        nan_fails = np.zeros(same.size, dtype=bool)
        nan_fails[bit_equal_nan_fails(bits.raw_bits(a, fmt).ravel(), bits.raw_bits(b, fmt).ravel(), fmt, tol)] = True
        same &= ~nan_fails.reshape(same.shape)
    return np.where(same, 0.0, np.nan_to_num(out, nan=np.inf, posinf=np.inf))


def metric_scale(
    session: Session, metric: str, tol: Tolerance, lossy: tuple[int | None, int | None]
) -> tuple[float, float]:
    """The smallest positive and the largest finite value of ``metric`` over the whole pair.

    Every slice of the heat map is coloured on this one scale, so the same value has the same
    colour in every slice and a slice of rounding noise looks pale next to the bug's slice
    (a per-slice maximum made each slice look as bad as the worst). The smallest positive
    value is the bottom of the log scale. Measured in chunks once per metric and tolerance.
    """
    _, a, b = session.flat_arrays()
    key = (metric, tol.atol, tol.rtol, tol.preset, lossy)
    kept = session.pair.scales if session.pair is not None else {}
    if key not in kept:
        fmt = session.report().aligned.fmt
        lo, hi = math.inf, 0.0
        for start in range(0, a.size, CHUNK):
            values = _metric(metric, a[start : start + CHUNK], b[start : start + CHUNK], fmt, tol, lossy)
            shown = values[np.isfinite(values) & (values > 0)]
            if shown.size:
                lo, hi = min(lo, float(shown.min())), max(hi, float(shown.max()))
        kept[key] = (lo if hi > 0 else 0.0, hi)
    return kept[key]


def _steps(rows: int, cols: int, max_cells: int) -> tuple[int, int]:
    """Pooling steps so that the pooled plane has at most ``max_cells`` cells."""
    step = max(1, math.ceil(math.sqrt(rows * cols / max_cells)))
    rs, cs = min(rows, step), min(cols, step)
    while math.ceil(rows / rs) * math.ceil(cols / cs) > max_cells:
        if (math.ceil(rows / rs) >= math.ceil(cols / cs) and rs < rows) or cs >= cols:
            rs += 1
        else:
            cs += 1
    return rs, cs


def pooled_slice(
    session: Session, request: SliceRequest, payloads: Mapping[str, Any], progress: Progress | None, workers: int
) -> dict[str, Any]:
    """A metric over a 2-D slice of the kept pair, pooled (worst of each block) to at most
    ``max_cells`` cells, with the element each cell shows: the heat map."""
    report, _, _ = session.flat_arrays()
    aligned = report.aligned
    a, b = aligned.a, aligned.b
    max_cells = request.max_cells
    if not isinstance(max_cells, int) or max_cells < 1:
        raise InputError(f"max_cells must be a positive integer, got {max_cells!r}")
    pa, pb, place = _slice_of(a, b, request)
    t = report.tolerance
    tol = Tolerance(t.atol, t.rtol, t.preset) if t is not None else Tolerance(0.0, 0.0)
    lossy = (printed_digits(report.a), printed_digits(report.b))
    values = _metric(
        request.metric, np.ascontiguousarray(pa), np.ascontiguousarray(pb), aligned.fmt, tol, lossy
    )
    pooled, at_row, at_col, (rs, cs) = _pooled(values, max_cells)
    flat = place(at_row, at_col)
    return {
        "slice": plain(
            {
                "rows": pooled.shape[0],
                "cols": pooled.shape[1],
                "row_step": rs,
                "col_step": cs,
                "values": [float(v) for v in pooled.ravel()],
                "flat": [int(f) for f in flat.ravel()],
                "max": float(pooled.max(initial=0.0)),
                "scale": dict(zip(("min", "max"), metric_scale(session, request.metric, tol, lossy), strict=True)),
            }
        )
    }


Place = Callable[[np.ndarray, np.ndarray], np.ndarray]


def _slice_of(a: np.ndarray, b: np.ndarray, request: SliceRequest) -> tuple[np.ndarray, np.ndarray, Place]:
    """The 2-D slice of A and B the request names (rows, columns), and how a (row, column)
    of it maps back to the flat index of the element it shows."""
    nd = a.ndim
    if nd < 2:
        return a.reshape(1, -1), b.reshape(1, -1), lambda at_row, at_col: at_col
    axes = request.axes
    if not (isinstance(axes, list) and len(axes) == 2 and all(isinstance(x, int) and 0 <= x < nd for x in axes)):
        raise InputError(f"axes must be two distinct axis numbers from 0 to {nd - 1}, got {axes!r}")
    row, col = axes
    if row == col:
        raise InputError(f"axes must be two distinct axis numbers, got {axes!r}")
    index = request.index or [0] * nd
    if not (isinstance(index, list) and len(index) == nd):
        raise InputError(f"index must give one integer per axis ({nd}), got {index!r}")
    sel: list[int | slice] = []
    for axis, (i, size) in enumerate(zip(index, a.shape, strict=True)):
        if axis in (row, col):
            sel.append(slice(None))
        elif isinstance(i, int) and 0 <= i < size:
            sel.append(i)
        else:
            raise InputError(f"index {i!r} is out of range for axis {axis} of size {size}")
    pa, pb = a[tuple(sel)], b[tuple(sel)]
    if row > col:
        pa, pb = pa.T, pb.T

    def place(at_row: np.ndarray, at_col: np.ndarray) -> np.ndarray:
        full = [np.full(at_row.shape, i) for i in index]
        full[row], full[col] = at_row, at_col
        return np.ravel_multi_index(full, a.shape)

    return pa, pb, place


def _pooled(values: np.ndarray, max_cells: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, tuple[int, int]]:
    """``values`` pooled into blocks (the worst of each) to at most ``max_cells`` cells, with
    the row and column of the element each cell shows (so a click opens that element) and
    the block's steps."""
    rows, cols = values.shape
    rs, cs = _steps(rows, cols, max_cells)
    pr, pc = math.ceil(rows / rs), math.ceil(cols / cs)
    padded = np.full((pr * rs, pc * cs), -np.inf)
    padded[:rows, :cols] = values
    blocks = padded.reshape(pr, rs, pc, cs).transpose(0, 2, 1, 3).reshape(pr, pc, rs * cs)
    worst = blocks.argmax(axis=2)
    at_row = np.arange(pr)[:, None] * rs + worst // cs
    at_col = np.arange(pc)[None, :] * cs + worst % cs
    return blocks.max(axis=2), at_row, at_col, (rs, cs)


def scatter(
    session: Session, request: ScatterRequest, payloads: Mapping[str, Any], progress: Progress | None, workers: int
) -> dict[str, Any]:
    """``[|b|, |a - b|]`` for an even sample of the differing elements (finite ones)."""
    report, a, b = session.flat_arrays()
    fmt = report.aligned.fmt
    max_points = request.max_points
    if not isinstance(max_points, int) or max_points < 1:
        raise InputError(f"max_points must be a positive integer, got {max_points!r}")
    diff = np.flatnonzero(bits.raw_bits(a, fmt) != bits.raw_bits(b, fmt))
    if diff.size > max_points:
        diff = diff[np.unique(np.linspace(0, diff.size - 1, max_points).astype(np.intp))]
    va, vb = bits.to_float64(a[diff], fmt), bits.to_float64(b[diff], fmt)
    keep = np.isfinite(va) & np.isfinite(vb)
    points = np.column_stack([np.abs(vb[keep]), np.abs(va[keep] - vb[keep])])
    return {"points": points.tolist()}
