"""The one function the Web Worker calls: a request dict in, a JSON-ready dict out.

The worker only moves bytes in and JSON out (``docs/contracts.md``).  The last compared
pair stays here, so the page can rejudge it with another tolerance or ask about one
element, a 2-D slice or a scatter sample without sending the inputs again.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from . import bits
from .compare import CHUNK, compare, make_element
from .errors import InputError
from .load import load_bytes, load_text
from .report import Report, plain
from .tensor import Tensor
from .tolerance import Tolerance, within

Progress = Callable[[str, float], object]

# The last compared pair: tensors, options, extra notes and its report.
_last: dict[str, Any] = {}


def _is_empty(spec: object) -> bool:
    return spec is None or (isinstance(spec, Mapping) and "data" not in spec and not str(spec.get("text", "")).strip())


def _load_one(spec: Mapping[str, Any], payloads: Mapping[str, Any]) -> list[Tensor]:
    if "data" in spec:
        return load_bytes(payloads[spec["data"]], spec.get("name"))
    if "text" in spec:
        return load_text(spec["text"])
    raise InputError("the input holds neither pasted text nor a file")


def _load(spec: object, payloads: Mapping[str, Any], side: str) -> list[Tensor]:
    """The tensors of one input (or of a list of inputs), with errors tagged by side."""
    try:
        if _is_empty(spec):
            raise InputError(f"box {side.upper()} is empty: paste a tensor or drop a file")
        specs = spec if isinstance(spec, list) else [spec]
        return [t for s in specs for t in _load_one(s, payloads)]
    except InputError as err:
        err.side = err.side or side
        raise


def _single(tensors: list[Tensor], side: str) -> Tensor:
    if len(tensors) != 1:
        names = ", ".join(t.name or "?" for t in tensors[:5])
        raise InputError(
            f"box {side.upper()} holds {len(tensors)} tensors ({names}); put one tensor in each box, "
            "or compare archives member by member with bisect",
            side=side,
        )
    return tensors[0]


def _options(request: Mapping[str, Any]) -> dict[str, Any]:
    options = request.get("options") or {}
    out = {k: options.get(k) for k in ("preset", "atol", "rtol")}
    if options.get("depth") is not None:
        out["depth"] = options["depth"]
    return out


def _run(progress: Progress | None) -> dict[str, Any]:
    """Compare the stored pair with its stored options and keep the report."""
    a, b, ref = _last["pair"]
    report = compare(
        a, b, ref=ref, progress=None if progress is None else (lambda f: progress("compare", f)), **_last["options"]
    )
    report.notes += _last["notes"]
    _last["report"] = report
    return {"report": report.to_dict(), "markdown": report.to_markdown(), "text": report.to_text()}


def _compare(request: Mapping[str, Any], payloads: Mapping[str, Any], progress: Progress | None) -> dict[str, Any]:
    inputs = request.get("inputs") or {}
    a_list = _load(inputs.get("a"), payloads, "a")
    notes = []
    if _is_empty(inputs.get("b")) and len(a_list) == 2:
        a, b = a_list
        notes.append("box B was empty and box A held two tensors: the first is A, the second B")
    else:
        a, b = _single(a_list, "a"), _single(_load(inputs.get("b"), payloads, "b"), "b")
    ref = None if _is_empty(inputs.get("ref")) else _single(_load(inputs["ref"], payloads, "ref"), "ref")
    _last.clear()
    _last.update(pair=(a, b, ref), options=_options(request), notes=notes)
    return _run(progress)


def _report() -> Report:
    if "report" not in _last:
        raise InputError("nothing has been compared yet: compare two inputs first")
    return _last["report"]


def _rejudge(request: Mapping[str, Any], payloads: Mapping[str, Any], progress: Progress | None) -> dict[str, Any]:
    _report()
    _last["options"] = _options(request)
    return _run(progress)


def _flat_arrays() -> tuple[Report, np.ndarray, np.ndarray]:
    report = _report()
    aligned = report.aligned
    if aligned is None or aligned.a is None:
        raise InputError("the shapes could not be aligned, so there are no compared elements to show")
    return report, aligned.a.reshape(-1), aligned.b.reshape(-1)


def _flat_index(request: Mapping[str, Any], size: int, *, lo: int = 0, hi: int | None = None) -> int:
    flat = request.get("flat")
    hi = size - 1 if hi is None else hi
    if not isinstance(flat, int) or isinstance(flat, bool) or not lo <= flat <= hi:
        raise InputError(f"flat must be an element index from {lo} to {hi}, got {flat!r}")
    return flat


def _decimal(raw: int | None, fmt: bits.Format) -> str | None:
    return None if raw is None else bits.decimal_string(raw, fmt)


def _element(request: Mapping[str, Any], payloads: Mapping[str, Any], progress: Progress | None) -> dict[str, Any]:
    report, a, b = _flat_arrays()
    fmt = report.aligned.fmt
    flat = _flat_index(request, a.size)
    ra, rb = (int(bits.raw_bits(x[flat : flat + 1], fmt)[0]) for x in (a, b))
    element = plain(make_element(flat, ra, rb, fmt, report.aligned.shape))
    (a_prev, a_next), (b_prev, b_next) = bits.neighbours(ra, fmt), bits.neighbours(rb, fmt)
    element |= {
        "a_fields": bits.fields(ra, fmt) if fmt.is_float else None,
        "b_fields": bits.fields(rb, fmt) if fmt.is_float else None,
        "a_prev": _decimal(a_prev, fmt),
        "a_next": _decimal(a_next, fmt),
        "b_prev": _decimal(b_prev, fmt),
        "b_next": _decimal(b_next, fmt),
    }
    return {"element": element}


def _step(request: Mapping[str, Any], payloads: Mapping[str, Any], progress: Progress | None) -> dict[str, Any]:
    """The next (direction 1) or previous (-1) bitwise-differing element, scanning in chunks."""
    report, a, b = _flat_arrays()
    fmt = report.aligned.fmt
    direction = request.get("direction")
    if direction not in (1, -1):
        raise InputError(f"direction must be 1 or -1, got {direction!r}")
    flat = _flat_index(request, a.size, lo=-1, hi=a.size)
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


def _metric(name: str, a: np.ndarray, b: np.ndarray, fmt: bits.Format, tol: Tolerance) -> np.ndarray:
    """Per-element metric of a plane; NaN or undefined becomes +inf, the worst possible."""
    va, vb = bits.to_float64(a, fmt), bits.to_float64(b, fmt)
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        absd = np.abs(va - vb)
        if name == "abs":
            out = absd
        elif name == "rel":
            out = np.where(absd == 0, 0.0, absd / np.abs(vb))
        elif name == "ulp":
            dist, defined = bits.ulp_distance(bits.raw_bits(a, fmt), bits.raw_bits(b, fmt), fmt)
            out = np.where(defined, dist.astype(np.float64), np.inf)
        elif name == "fail":
            passed = within(absd, np.abs(vb), tol) | (bits.is_nan(bits.raw_bits(a, fmt), fmt) & np.isnan(vb))
            out = (~passed).astype(np.float64)
        else:
            raise InputError(f"metric must be one of abs, ulp, rel, fail; got {name!r}")
    same = bits.raw_bits(a, fmt) == bits.raw_bits(b, fmt)
    return np.where(same, 0.0, np.nan_to_num(out, nan=np.inf))


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


def _slice(request: Mapping[str, Any], payloads: Mapping[str, Any], progress: Progress | None) -> dict[str, Any]:
    report, _, _ = _flat_arrays()
    aligned = report.aligned
    a, b = aligned.a, aligned.b
    nd = a.ndim
    max_cells = request.get("max_cells")
    if not isinstance(max_cells, int) or max_cells < 1:
        raise InputError(f"max_cells must be a positive integer, got {max_cells!r}")
    if nd < 2:
        pa, pb = a.reshape(1, -1), b.reshape(1, -1)
    else:
        axes = request.get("axes")
        if not (isinstance(axes, list) and len(axes) == 2 and all(isinstance(x, int) and 0 <= x < nd for x in axes)):
            raise InputError(f"axes must be two distinct axis numbers from 0 to {nd - 1}, got {axes!r}")
        row, col = axes
        if row == col:
            raise InputError(f"axes must be two distinct axis numbers, got {axes!r}")
        index = request.get("index") or [0] * nd
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
    t = report.tolerance
    tol = Tolerance(t.atol, t.rtol) if t is not None else Tolerance(0.0, 0.0)
    values = _metric(str(request.get("metric")), np.ascontiguousarray(pa), np.ascontiguousarray(pb), aligned.fmt, tol)
    rows, cols = values.shape
    rs, cs = _steps(rows, cols, max_cells)
    pr, pc = math.ceil(rows / rs), math.ceil(cols / cs)
    padded = np.full((pr * rs, pc * cs), -np.inf)
    padded[:rows, :cols] = values
    pooled = padded.reshape(pr, rs, pc, cs).max(axis=(1, 3))
    return {
        "slice": plain(
            {
                "rows": pr,
                "cols": pc,
                "row_step": rs,
                "col_step": cs,
                "values": [float(v) for v in pooled.ravel()],
                "max": float(pooled.max(initial=0.0)),
            }
        )
    }


def _scatter(request: Mapping[str, Any], payloads: Mapping[str, Any], progress: Progress | None) -> dict[str, Any]:
    """``[|b|, |a - b|]`` for an even sample of the differing elements (finite ones)."""
    report, a, b = _flat_arrays()
    fmt = report.aligned.fmt
    max_points = request.get("max_points")
    if not isinstance(max_points, int) or max_points < 1:
        raise InputError(f"max_points must be a positive integer, got {max_points!r}")
    diff = np.flatnonzero(bits.raw_bits(a, fmt) != bits.raw_bits(b, fmt))
    if diff.size > max_points:
        diff = diff[np.unique(np.linspace(0, diff.size - 1, max_points).astype(np.int64))]
    va, vb = bits.to_float64(a[diff], fmt), bits.to_float64(b[diff], fmt)
    keep = np.isfinite(va) & np.isfinite(vb)
    points = np.column_stack([np.abs(vb[keep]), np.abs(va[keep] - vb[keep])])
    return {"points": points.tolist()}


def _bisect(request: Mapping[str, Any], payloads: Mapping[str, Any], progress: Progress | None) -> dict[str, Any]:
    from .bisect import bisect

    inputs = request.get("inputs") or {}
    a = _load(inputs.get("a"), payloads, "a")
    b = _load(inputs.get("b"), payloads, "b")
    return {"bisect": bisect(a, b, **_options(request)).to_dict()}


_OPS = {
    "compare": _compare,
    "rejudge": _rejudge,
    "element": _element,
    "step": _step,
    "slice": _slice,
    "scatter": _scatter,
    "bisect": _bisect,
}


def handle(request: Mapping[str, Any], payloads: Mapping[str, Any], progress: Progress | None = None) -> dict[str, Any]:
    """Run one worker request (``docs/contracts.md``); bad input becomes ``{"ok": False, "error": ...}``.

    ``payloads`` maps the keys in ``inputs`` to the files' bytes.  ``progress(stage,
    fraction)`` is called while comparing.  Any exception other than :class:`InputError`
    is a bug in Perpendis and propagates to the worker.
    """
    op = request.get("op")
    if op not in _OPS:
        raise ValueError(f"unknown op {op!r}; the worker sends one of {', '.join(_OPS)}")
    try:
        return {"ok": True, **_OPS[op](request, payloads, progress)}
    except InputError as err:
        return {"ok": False, "error": err.to_dict()}
