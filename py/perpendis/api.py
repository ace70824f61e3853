"""The one function the Web Worker calls: a request dict in, a JSON-ready dict out.

The worker only moves bytes in and JSON out (``docs/contracts.md``).  The last compared
pair stays here, so the page can rejudge it with another tolerance or ask about one
element, a 2-D slice or a scatter sample without sending the inputs again.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Callable, Mapping
from dataclasses import astuple
from typing import Any

import numpy as np

from . import bits, heap
from .bisect import Entry, as_entries, bisect, bisect_runs, read_single
from .bisect_inputs import pairing_info, sort_inputs
from .compare import (
    CHUNK,
    ERROR_COLUMNS,
    Prepared,
    Ranks,
    compare,
    make_element,
    partial_from_bytes,
    prepare,
    relative,
)
from .errors import InputError, blame
from .formats import npy
from .formats.buffer import BytesLike, as_view
from .helper import OFFLOADED
from .load import load_bytes, load_text
from .report import Report, plain
from .tensor import Tensor, from_numpy
from .tolerance import Tolerance, bit_equal_nan_fails, failing, printed_digits

Progress = Callable[[str, float], object]

_SIDES = ("a", "b", "ref")
# The last compared pair: tensors, options, extra notes and its report.
_last: dict[str, Any] = {}
# The last bisect: its pairs of entries in order, and its options.
_bisected: dict[str, Any] = {}
# A comparison whose fold is shared with other workers: between ``handle`` and ``finish_split``.
_split: dict[str, Any] = {}

SPLIT_MIN = 4 * CHUNK
"""Fewest elements worth sharing with other workers: below it, moving the bytes costs more than it saves."""


def _is_empty(spec: object) -> bool:
    return spec is None or (isinstance(spec, Mapping) and "data" not in spec and not str(spec.get("text", "")).strip())


def _load_one(spec: Mapping[str, Any], payloads: Mapping[str, Any], void_format: str | None) -> list[Tensor]:
    if "data" in spec:
        return load_bytes(payloads[spec["data"]], spec.get("name"), void_format=void_format)
    if "text" in spec:
        return load_text(spec["text"])
    raise InputError("the input holds neither pasted text nor a file")


def _load(spec: object, payloads: Mapping[str, Any], side: str, void_format: str | None = None) -> list[Tensor]:
    """The tensors of one input (or of a list of inputs), with errors tagged by side."""
    with blame(side):
        if _is_empty(spec):
            raise InputError(f"box {side.upper()} is empty: paste a tensor or drop a file")
        specs = spec if isinstance(spec, list) else [spec]
        return [t for s in specs for t in _load_one(s, payloads, void_format)]


def _names(tensors: list[Tensor], shown: int = 8) -> str:
    """The tensors' names for a message, the first few and how many more.

    Names that repeat (one output saved by several Polygraphy runners) are told apart by
    where each tensor came from.
    """
    names = [repr(t.name) if t.name else "unnamed" for t in tensors]
    separator = ", "
    if len(set(names)) < len(names):
        names = [f"{name} from {t.source}" for name, t in zip(names, tensors, strict=True)]
        separator = "; "  # sources hold commas
    return separator.join(names[:shown]) + (f" and {len(tensors) - shown} more" if len(tensors) > shown else "")


def _single(tensors: list[Tensor], side: str) -> Tensor:
    if len(tensors) != 1:
        raise InputError(
            f"box {side.upper()} holds {len(tensors)} tensors ({_names(tensors)}); put one tensor in each box, "
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
    """Compare the stored pair with its stored options and keep the report.

    When the caller offers other workers (``handle(..., workers=n)``) and the pair is big
    enough, the fold is cut into shares instead: the answer is ``{"split": [share, ...]}``
    and :func:`fold_own` and :func:`finish_split` complete it.
    """
    a, b, ref = _last["pair"]
    prepared = prepare(a, b, ref=ref, **_last["options"])
    shares = offer_split(prepared, _split.pop("workers", 1), progress, lambda partial: _finish(prepared, partial))
    if shares is not None:
        return {"split": shares}
    if prepared.a is None:
        if progress is not None:
            progress("compare", 1.0)
        return _finish(prepared, None)
    return _finish(prepared, prepared.fold(progress=None if progress is None else (lambda f: progress("compare", f))))


def _finish(prepared: Prepared, partial: Any) -> dict[str, Any]:
    report = prepared.finish(partial)
    report.notes += _last["notes"]
    _last["report"] = report
    return {"report": report.to_dict(), "markdown": report.to_markdown(), "text": report.to_text()}


OWN_SHARE = 1.4
"""How much longer the share folded in this worker is than another worker's, for a pair held
here: the others first copy their bytes in and their partial out, a quarter of their
fold's time in the browser (measured at 16 M float32: 20 + 10 ms around a 115 ms fold)."""

FRESH_OPS = ("compare", "bisect", "runs")
"""Ops that replace the kept pair or captures with new ones."""


def forget(op: object) -> None:
    """Drop what the last comparison kept when ``op`` replaces it, before its inputs arrive.

    The worker calls this before copying a new request's bytes in, so the heap the old
    pair held is reused rather than grown: a second comparison of 2 × 64 MB then neither
    holds both pairs at once nor faults in fresh pages for the new one.
    """
    if op in FRESH_OPS:
        _last.clear()
        _bisected.clear()
        _split.clear()


def offer_split(
    prepared: Prepared,
    workers: int,
    progress: Progress | None,
    answer: Callable[[Any], dict[str, Any]],
    *,
    stage: str = "compare",
    head: dict[str, Any] | None = None,
) -> list[str] | None:
    """Cut a big comparison into shares for ``workers`` workers (the JSON of those after the
    first, for the other workers), keeping what :func:`finish_split` needs; None when it is
    too small to be worth it, or there is one worker.  ``answer(partial)`` makes the result,
    to which ``finish_split`` adds ``head`` (:func:`handle` sets it from its own answer)."""
    if workers < 2 or prepared.size < SPLIT_MIN:
        return None
    # Held here, the first share needs no copying out and in: it is folded here, and longer.
    shares = prepared.shares(workers, first=1.0 if prepared.a is None else OWN_SHARE)
    _split.clear()
    _split.update(prepared=prepared, shares=shares, progress=progress, answer=answer, stage=stage, head=head or {})
    return [share.to_json() for share in shares[1:]]


WARM_UP_SHAPE = (1024, 1024)


def warm_up() -> None:
    """Compare two made-up float32 arrays of one chunk, keeping nothing.

    The page's workers call this a few times once started (``app/worker.js``,
    ``app/fold_worker.js``): the browser runs fresh WebAssembly with its baseline
    compiler and optimises a function only after it has run a while, so the first big
    comparison after load folded at half speed (9 M elements: 300-340 ms, against
    160-190 ms after 8 M warm-up elements).  Rounding noise and a few failing elements
    take the fold and the diagnosis through the paths a real comparison takes.
    """
    a = np.linspace(-4, 4, math.prod(WARM_UP_SHAPE), dtype=np.float32).reshape(WARM_UP_SHAPE)
    b = a.copy()
    b[:, ::10] = np.nextafter(b[:, ::10], np.float32(np.inf))
    b[::100, ::10] *= np.float32(1.001)
    compare(from_numpy(a, "a"), from_numpy(b, "b")).to_dict()


def share_bytes(index: int) -> tuple[np.ndarray, np.ndarray]:
    """The raw bytes of A's and B's elements in share ``index`` of the split comparison (views)."""
    return _split["prepared"].share_bytes(_split["shares"][index])


def share_places(index: int, payloads: Mapping[str, Any]) -> list[list[Any] | None]:
    """Where A's and B's bytes of share ``index`` lie in the request's ``payloads``, as
    ``[key, offset, length]``; None for a side whose elements are in no payload (converted
    on loading, or parsed from text).

    The worker still holds each payload as the JavaScript buffer it copied in, byte for
    byte, so it can hand another worker that buffer (transferred, not copied) rather than
    copying the share's bytes out of the heap: 2 x 27 MB for 16 M float32 on 2 cores,
    35-40 ms in the browser before the fold could start.
    """
    return [_place(part, payloads) for part in share_bytes(index)]


def _place(part: np.ndarray, payloads: Mapping[str, Any]) -> list[Any] | None:
    if not part.flags.c_contiguous:
        return None
    start = part.__array_interface__["data"][0]
    for key, payload in payloads.items():
        held = np.frombuffer(as_view(payload), dtype=np.uint8)
        base = held.__array_interface__["data"][0]
        if base <= start and start + part.nbytes <= base + held.nbytes:
            return [key, start - base, part.nbytes]
    return None


def _stopping(step: Callable[..., Any]) -> Callable[..., Any]:
    """A step of a split comparison that may meet bad input (a file changed on disk while it
    was read, a chunk that does not decode): the error is kept, the later steps do nothing,
    and :func:`finish_split` answers it, as :func:`handle` would have."""

    @functools.wraps(step)
    def run(*args: Any) -> Any:
        if "error" in _split:
            return None
        try:
            return step(*args)
        except InputError as err:
            _split["error"] = err
            return None

    return run


@_stopping
def fold_own() -> None:
    """Fold the first share here, while other workers fold theirs."""
    progress, stage = _split["progress"], _split["stage"]
    own = _split["shares"][0]
    _split["own"] = _split["prepared"].fold(
        own.start, own.stop, None if progress is None else (lambda f: progress(stage, f))
    )


OFFLOAD_MIN = 1 << 19
"""Fewest stored errors whose quantiles are worth selecting on two workers at once: at
16 M float32 (1.7 M errors) each column takes 23-32 ms, and moving one 2-4 ms."""


@_stopping
def pool_own() -> tuple[str, np.ndarray] | None:
    """This worker's own :data:`~perpendis.helper.OFFLOADED` errors and their
    :class:`~perpendis.compare.Ranks` (JSON), for the first helper to select in together
    with its own (``Helper.select_pooled``) while this worker waits for its partial; None
    when that cannot pay or cannot be exact: too few errors, or more than one helper (the
    first would lack the others' errors), or a sample already cut to its cap."""
    own = _split["own"]
    errors = own.errors
    if len(_split["shares"]) != 2 or errors.kept < OFFLOAD_MIN // 2 or errors.bound is not None:
        return None
    _split["pooled"] = True
    return json.dumps(astuple(Ranks.of(own))), errors.column(OFFLOADED)


@_stopping
def merge_split(parts: list[Any]) -> dict[str, Any] | None:
    """Merge the other workers' partials (as bytes, in share order after the first) into
    this one's; a share whose worker failed (None) is folded here.

    With at least :data:`OFFLOAD_MIN` errors, says how the first helper selects the order
    statistics of the merged :data:`~perpendis.helper.OFFLOADED` errors while
    :func:`select_here` does the other column: ``pooled`` when its answer to
    :func:`pool_own`'s errors is theirs (no sample was cut, so the merged errors are the
    helper's and this worker's put together), else ``ranks`` to select in
    :func:`offload_values`.  None otherwise.  :func:`finish_split` makes the answer either way.
    """
    prepared, shares = _split["prepared"], _split["shares"]
    merged = _split.pop("own", None) or prepared.fold(shares[0].start, shares[0].stop)
    for share, data in zip(shares[1:], parts, strict=True):
        merged = merged.merge(prepared.fold(share.start, share.stop) if data is None else partial_from_bytes(data))
    ranks = Ranks.of(merged).wanted()
    _split.update(merged=merged, ranks=ranks)
    if not ranks or merged.errors.kept < OFFLOAD_MIN:
        return None
    whole = merged.errors.bound is None and merged.errors.kept <= merged.errors.cap
    if _split.get("pooled") and parts[0] is not None and whole:
        return {"pooled": True}
    return {"pooled": False, "ranks": ranks}


def offload_values() -> np.ndarray:
    """The merged :data:`~perpendis.helper.OFFLOADED` errors, for a helper that does not hold them."""
    return _split["merged"].errors.column(OFFLOADED)


def select_here() -> None:
    """Select the order statistics of the error columns other than :data:`~perpendis.helper.OFFLOADED`."""
    errors, ranks = _split["merged"].errors, _split["ranks"]
    for column in ERROR_COLUMNS.values():
        if column != OFFLOADED:
            errors.order_statistics(column, ranks)


def _finished(found: BytesLike | None) -> dict[str, Any]:
    merged, ranks = _split["merged"], _split["ranks"]
    if found is not None:
        values = np.frombuffer(as_view(found), dtype=np.float64)
        if len(values) == len(ranks):
            merged.errors.found[OFFLOADED] = dict(zip(ranks, values.tolist(), strict=True))
    head, answer, workers = _split.pop("head"), _split["answer"], len(_split["shares"])
    _split.clear()
    return {**head, **answer(merged), "workers": workers}


def finish_split(found: BytesLike | None = None) -> dict[str, Any]:
    """The answer to the split request, once merged (:func:`merge_split`).  ``found`` holds
    the :data:`~perpendis.helper.OFFLOADED` errors' order statistics a helper selected
    (float64 bytes, in the ranks' order); without it (not asked, or the helper failed) they
    are selected here.  A step that met bad input makes the answer that error."""
    error = _split.get("error")
    if error is None:
        try:
            return _finished(found)
        except InputError as err:
            error = err
    _split.clear()
    return {"ok": False, "error": error.to_dict()}


def _compare(request: Mapping[str, Any], payloads: Mapping[str, Any], progress: Progress | None) -> dict[str, Any]:
    inputs = request.get("inputs") or {}
    void = _void_formats(request)
    a_list = _load(inputs.get("a"), payloads, "a", void.get("a"))
    notes = []
    one_box = None
    if _is_empty(inputs.get("b")) and len(a_list) == 2:
        a, b = a_list
        one_box = "a"
        notes.append("box B was empty and box A held two tensors: the first is A, the second B")
    elif _is_empty(inputs.get("b")) and len(a_list) > 2:
        raise InputError(
            f"box A holds {len(a_list)} tensors ({_names(a_list)}) and box B is empty: put what to compare them "
            "with in box B (an archive or files of the same names), or one tensor in each box",
            side="b",
        )
    else:
        b_list = _load(inputs.get("b"), payloads, "b", void.get("b"))
        if len(a_list) > 1 or len(b_list) > 1:
            info = pairing_info(inputs.get("a"), inputs.get("b"), payloads, None, [], [])
            return _switch_to_bisect(a_list, b_list, request, progress, info)
        a, b = _single(a_list, "a"), _single(b_list, "b")
    ref = None
    if not _is_empty(inputs.get("ref")):
        ref = _single(_load(inputs["ref"], payloads, "ref", void.get("ref")), "ref")
    _last.clear()
    _last.update(pair=(a, b, ref), options=_options(request), notes=notes)
    choices = {side: _void_choices(inputs.get(side), payloads) for side in _SIDES}
    return {**_run(progress), "void_choices": {k: v for k, v in choices.items() if v}, "one_box": one_box}


def _void_formats(request: Mapping[str, Any]) -> dict[str, str]:
    """``options.void_format``: per side, the format anonymous void ``.npy`` elements are read as."""
    chosen = (request.get("options") or {}).get("void_format") or {}
    valid = isinstance(chosen, Mapping) and all(k in _SIDES and isinstance(v, str) for k, v in chosen.items())
    if not valid:
        raise InputError('void_format must map sides to formats, e.g. {"a": "float8_e5m2"}', where="void_format")
    return dict(chosen)


def _void_choices(spec: object, payloads: Mapping[str, Any]) -> list[str]:
    """The formats a ``.npy`` file's anonymous void elements can be read as; empty for other inputs.

    ``np.save`` of an ml_dtypes array writes only the element width, so the page offers
    these to re-read the file as the format it really held.  A descr that does name its
    format (ml_dtypes' ``'<f1'`` for float8_e5m2) offers just that one.
    """
    if not (isinstance(spec, Mapping) and "data" in spec):
        return []
    view = as_view(payloads[spec["data"]])
    if bytes(view[: len(npy.MAGIC)]) != npy.MAGIC:
        return []
    header = npy.read_header(view)
    if header.dtype.kind != "V":
        return []
    return [f for f in npy.VOID_FORMATS[header.itemsize] if npy.read_header(view, void_format=f).format == f]


def _switch_to_bisect(
    a: list[Tensor], b: list[Tensor], request: Mapping[str, Any], progress: Progress | None, info: dict[str, Any]
) -> dict[str, Any]:
    """Captures of several tensors are compared layer by layer; ``switched`` says why."""
    out = _run_bisect(as_entries(a), as_entries(b), {**_bisect_options(request), **info}, progress)
    return {**out, "switched": f"A holds {len(a)} tensors and B {len(b)}: compared them pair by pair, in A's order"}


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
    tol = Tolerance(t.atol, t.rtol, t.preset) if t is not None else Tolerance(0.0, 0.0)
    lossy = (printed_digits(report.a), printed_digits(report.b))
    values = _metric(
        str(request.get("metric")), np.ascontiguousarray(pa), np.ascontiguousarray(pb), aligned.fmt, tol, lossy
    )
    rows, cols = values.shape
    rs, cs = _steps(rows, cols, max_cells)
    pr, pc = math.ceil(rows / rs), math.ceil(cols / cs)
    padded = np.full((pr * rs, pc * cs), -np.inf)
    padded[:rows, :cols] = values
    blocks = padded.reshape(pr, rs, pc, cs).transpose(0, 2, 1, 3).reshape(pr, pc, rs * cs)
    pooled = blocks.max(axis=2)
    # The element each cell shows (the worst of its block), so a click on it opens that element.
    worst = blocks.argmax(axis=2)
    at_row = np.arange(pr)[:, None] * rs + worst // cs
    at_col = np.arange(pc)[None, :] * cs + worst % cs
    if nd < 2:
        flat = at_col
    else:
        full = [np.full(worst.shape, i) for i in index]
        full[row], full[col] = at_row, at_col
        flat = np.ravel_multi_index(full, a.shape)
    return {
        "slice": plain(
            {
                "rows": pr,
                "cols": pc,
                "row_step": rs,
                "col_step": cs,
                "values": [float(v) for v in pooled.ravel()],
                "flat": [int(f) for f in flat.ravel()],
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
        diff = diff[np.unique(np.linspace(0, diff.size - 1, max_points).astype(np.intp))]
    va, vb = bits.to_float64(a[diff], fmt), bits.to_float64(b[diff], fmt)
    keep = np.isfinite(va) & np.isfinite(vb)
    points = np.column_stack([np.abs(vb[keep]), np.abs(va[keep] - vb[keep])])
    return {"points": points.tolist()}


def _entries(spec: object, payloads: Mapping[str, Any], side: str) -> list[Any]:
    """One capture as lazy entries: an archive's members, or several files of one tensor each.

    Several files are named by file name without extension (as ``python -m perpendis
    bisect`` names a folder's files) and decoded only when their pair comes up, so many
    large ``.npy`` files are never all decoded at once.
    """
    if isinstance(spec, list) and len(spec) > 1:
        if not all(isinstance(s, Mapping) and "data" in s for s in spec):
            raise InputError(f"box {side.upper()} mixes files and text; give files only", side=side)
        return [
            Entry(
                str(s.get("name") or f"file {i}").rsplit(".", 1)[0],
                lambda s=s: read_single(payloads[s["data"]], s.get("name")),
            )
            for i, s in enumerate(spec)
        ]
    return as_entries(_load(spec, payloads, side))


def _counting(entries: list[Any], total: int, progress: Progress | None) -> list[Any]:
    """The same entries, reporting ``("comparing <name>", share done)`` as each is decoded."""
    if progress is None:
        return entries
    done = [0]

    def loader(entry: Any) -> Callable[[], Tensor]:
        def load() -> Tensor:
            progress(f"comparing {entry.name}", min(1.0, done[0] / max(1, total)))
            done[0] += 1
            return entry.load()

        return load

    return [Entry(e.name, loader(e)) for e in entries]


def _bisect_options(request: Mapping[str, Any]) -> dict[str, Any]:
    mapping = (request.get("options") or {}).get("mapping") or {}
    if not (
        isinstance(mapping, Mapping) and all(isinstance(k, str) and isinstance(v, str) for k, v in mapping.items())
    ):
        raise InputError('mapping must map names of A to names of B, e.g. {"head.fc": "output"}', where="mapping")
    only = (request.get("options") or {}).get("only") or []
    return {**_options(request), "mapping": dict(mapping), "only": only}


def _run_bisect(ea: list[Any], eb: list[Any], options: dict[str, Any], progress: Progress | None) -> dict[str, Any]:
    # Nothing paired is an answer here, not an error: the page shows both sides' names to pair by hand.
    result = bisect(_counting(ea, len(ea), progress), eb, allow_unpaired=True, **options)
    # Kept for ``bisect_pair``: the entries re-decode their tensor when a row is opened.
    by_a, by_b = {e.name: e for e in ea}, {e.name: e for e in eb}
    # The result is kept for ``bisect_order``; its reports hold no tensors (``bisect`` drops them).
    _bisected.clear()
    _bisected.update(result=result, pairs=[(by_a[p.a_name], by_b[p.b_name]) for p in result.pairs], options=options)
    return {"bisect": result.to_dict()}


def _bisect(request: Mapping[str, Any], payloads: Mapping[str, Any], progress: Progress | None) -> dict[str, Any]:
    inputs = request.get("inputs") or {}
    # The .onnx model may be among the files of either box, and both captures in one box.
    a, b, model = sort_inputs(inputs.get("a"), inputs.get("b"), payloads)
    ea, eb = _entries(a, payloads, "a"), _entries(b, payloads, "b")
    info = pairing_info(a, b, payloads, model, [e.name for e in ea], [e.name for e in eb])
    return _run_bisect(ea, eb, {**_bisect_options(request), **info}, progress)


def _bisect_pair(request: Mapping[str, Any], payloads: Mapping[str, Any], progress: Progress | None) -> dict[str, Any]:
    """Make one pair of the last bisect the last compared pair, so every follow-up op works on it."""
    if "pairs" not in _bisected:
        raise InputError("nothing has been bisected yet: bisect two captures first")
    pairs = _bisected["pairs"]
    index = request.get("index")
    if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < len(pairs):
        raise InputError(f"index must be a pair number from 0 to {len(pairs) - 1}, got {index!r}")
    ea, eb = pairs[index]
    options = {k: v for k, v in _bisected["options"].items() if k not in ("mapping", "only", "info_a", "info_b")}
    _last.clear()
    _last.update(pair=(ea.load(), eb.load(), None), options=options, notes=[])
    return _run(progress)


def _bisect_order(request: Mapping[str, Any], payloads: Mapping[str, Any], progress: Progress | None) -> dict[str, Any]:
    """Put the last bisect's pairs in the user's order, so "first failing" follows it.

    Saved order is execution order only when the capture kept it, so the user may
    reorder the rows; the pairs keep their reports (nothing is compared again) and the
    first failing pair is judged here, by the one rule of :class:`BisectReport`.  Pairs
    ``order`` names come first, in its order; the others follow in their current order.
    """
    if "result" not in _bisected:
        raise InputError("nothing has been bisected yet: bisect two captures first")
    result = _bisected["result"]
    names = [p.a_name for p in result.pairs]
    order = request.get("order")
    if not (isinstance(order, list) and all(isinstance(n, str) for n in order)):
        raise InputError(f'order must list names of A\'s tensors, e.g. ["conv1", "relu1"], got {order!r}')
    unknown = [n for n in order if n not in names]
    if unknown:
        raise InputError(f"the order names {unknown[0]!r}, which no pair of the last bisect has", where="order")
    repeated = sorted({n for n in order if order.count(n) > 1})
    if repeated:
        raise InputError(f"the order names {repeated[0]!r} more than once; name each pair once", where="order")
    position = {name: i for i, name in enumerate(order)}
    ranked = sorted(range(len(names)), key=lambda i: (0, position[names[i]]) if names[i] in position else (1, i))
    result.pairs = [result.pairs[i] for i in ranked]
    _bisected["pairs"] = [_bisected["pairs"][i] for i in ranked]
    return {"bisect": result.to_dict()}


def _runs(request: Mapping[str, Any], payloads: Mapping[str, Any], progress: Progress | None) -> dict[str, Any]:
    """Several runs, each bisected against the reference run: the runs × layers matrix."""
    runs = (request.get("inputs") or {}).get("runs")
    if not isinstance(runs, Mapping) or len(runs) < 2:
        raise InputError("give at least two runs, one of them the reference")
    reference = (request.get("options") or {}).get("reference")
    entries = {label: _entries(spec, payloads, str(label)) for label, spec in runs.items()}
    if reference in entries:
        total = len(entries[reference]) * (len(entries) - 1)
        entries[reference] = _counting(entries[reference], total, progress)
    return {"runs": bisect_runs(entries, reference, **_bisect_options(request)).to_dict()}


def _reserve(request: Mapping[str, Any], payloads: Mapping[str, Any], progress: Progress | None) -> dict[str, Any]:
    size = request.get("bytes")
    if not isinstance(size, int) or isinstance(size, bool) or size < 0:
        raise InputError(f"bytes must be a whole number of bytes >= 0, got {size!r}", where="bytes")
    return {"reserved": heap.reserve(size)}


_OPS = {
    "reserve": _reserve,
    "compare": _compare,
    "rejudge": _rejudge,
    "element": _element,
    "step": _step,
    "slice": _slice,
    "scatter": _scatter,
    "bisect": _bisect,
    "bisect_pair": _bisect_pair,
    "bisect_order": _bisect_order,
    "runs": _runs,
}


def handle(
    request: Mapping[str, Any], payloads: Mapping[str, Any], progress: Progress | None = None, *, workers: int = 1
) -> dict[str, Any]:
    """Run one worker request (``docs/contracts.md``); bad input becomes ``{"ok": False, "error": ...}``.

    ``payloads`` maps the keys in ``inputs`` to the files' bytes.  ``progress(stage,
    fraction)`` is called while comparing.  ``workers`` > 1 lets a big comparison answer
    ``{"ok": True, "split": [...]}``: the caller has the shares folded by other workers
    (:class:`perpendis.helper.Helper`) and calls :func:`finish_split` for the answer.
    Any exception other than :class:`InputError` is a bug in Perpendis and propagates to
    the worker.
    """
    op = request.get("op")
    if op not in _OPS:
        raise ValueError(f"unknown op {op!r}; the worker sends one of {', '.join(_OPS)}")
    _split.clear()
    _split["workers"] = workers
    try:
        result = {"ok": True, **_OPS[op](request, payloads, progress)}
    except InputError as err:
        return {"ok": False, "error": err.to_dict()}
    finally:
        _split.pop("workers", None)
    if "split" in result:
        _split["head"] = {k: v for k, v in result.items() if k != "split"}
    return result
