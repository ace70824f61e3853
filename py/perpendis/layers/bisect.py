"""Compare two captures of a network layer by layer and find the first layer that departs.

A capture is an ordered set of named tensors: PyTorch forward-hook outputs, ONNX Runtime
or Polygraphy runs with every node output marked, a folder of ``.npy`` files.  The two
sides name the same layer differently (``layer1.0.conv1`` against
``/layer1/layer1.0/conv1/Conv_output_0``), so tensors are paired by a normalised name,
in the order of side A (the execution order of the run taken as reference).  Each pair
goes through the same :func:`~perpendis.engine.compare.compare` and
:func:`~perpendis.diagnosis.diagnose.diagnose` as a single comparison: bisect adds no numerics of
its own.  Tensors are decoded when their pair comes up, so a folder of files is never
held in memory at once, nor a Polygraphy file (read through an index of its arrays),
and only each pair's report is kept.
"""

from __future__ import annotations

import fnmatch
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..engine.compare import compare
from ..engine.options import DEFAULT, ComparisonOptions
from ..engine.stream import map_reader
from ..errors import InputError, blame
from ..inputs.formats import polygraphy
from ..inputs.formats.buffer import BytesLike, Reader
from ..inputs.load import load_bytes, load_path, only_tensor
from ..inputs.tensor import Tensor
from ..report.model import Report
from .bisect_files import described_by, model_info, model_values, path_info, path_records_order  # noqa: F401
from .bisect_report import BisectReport, Pair, RunsReport, few
from .layer_names import _keys, normalise_name, pair_names  # noqa: F401  (re-exported)
from .nonfinite import nan_origin

# ---------------------------------------------------------------------------------------
# Inputs


@dataclass(frozen=True)
class Entry:
    """A named tensor that is decoded only when it is compared."""

    name: str
    load: Callable[[], Tensor]


def as_entries(items: Iterable[Tensor | Entry]) -> list[Entry]:
    """Entries for tensors already decoded (named by ``Tensor.name``) or lazy ones, in order."""
    out = []
    for i, item in enumerate(items):
        if isinstance(item, Entry):
            out.append(item)
            continue
        name = item.name if item.name is not None else str(i)
        out.append(Entry(name, lambda t=item: t))
    return out


def read_single(data: BytesLike, name: str) -> Tensor:
    """The one tensor a file holds, for captures given as one file per layer."""
    return _only(load_bytes(data, name), name)


def _only(tensors: list[Tensor], name: str) -> Tensor:
    """The one tensor of the file ``name`` of a list, in bisect's words for :func:`only_tensor`."""
    hint = "a list of files must give one tensor per file (pass an archive on its own to compare its members)"
    return only_tensor(tensors, name, hint, where=name)


def file_entries(paths: Sequence[Path]) -> list[Entry]:
    """One entry per file, named by the file name without its extension, read when compared."""
    return [Entry(p.name.rsplit(".", 1)[0], lambda p=p: _only(load_path(p), p.name)) for p in paths]


def polygraphy_entries(read: Reader, size: int, void_format: str | None = None) -> list[Entry]:
    """A Polygraphy JSON file's arrays, indexed now and each decoded when its pair comes up.

    Such a file can be hundreds of megabytes of base64, more than a browser heap holds
    next to what it encodes, so it is read through ``read`` and never held whole.
    """
    return [Entry(r.name, lambda r=r: polygraphy.decode(r, read, void_format)) for r in polygraphy.index(read, size)]


def path_entries(path: Path) -> list[Entry]:
    """A capture on disk: an archive (``.npz``, safetensors, torch.save, Polygraphy JSON, ...) or a folder of files."""
    if path.is_dir():
        files = sorted(p for p in path.iterdir() if p.is_file() and not p.name.startswith("."))
        if not files:
            raise InputError(
                f"folder {path} holds no files; give a folder of .npy files or an archive", where=str(path)
            )
        return file_entries(files)
    if str(path) != "-":
        read, size = map_reader(path)
        if polygraphy.recognised(read, size):
            return polygraphy_entries(read, size)
    return as_entries(load_path(path))


def one_file_sides(path: Path) -> tuple[tuple[str, list[Entry]], tuple[str, list[Entry]]]:
    """Both sides of one torch.save file that holds two runs' per-layer values, each (name, entries):
    a ``torch.ao.ns`` numeric suite result (:mod:`..inputs.formats.numeric_suite`, its models'
    names) or ExecuTorch's numeric gap (:mod:`..inputs.formats.executorch_gap`, AOT and runtime)."""
    from ..inputs.formats import executorch_gap, numeric_suite, torchsave

    try:
        data = path.read_bytes()
    except OSError as err:
        raise InputError(f"cannot read {path}: {err.strerror or err}", where=str(path)) from None
    needs_b = (f"{path.name} holds one side only, so bisect needs B too: give two captures (A B), or one "
               "torch.save of a torch.ao.ns numeric suite result (extract_logger_info, extract_weights, "
               "compare_model_outputs) or of ExecuTorch's calculate_numeric_gap(...).to_dict('list')")
    with blame("a", path.name):
        try:
            obj, _ = torchsave.load_object(data)
        except InputError as err:
            raise InputError(f"{needs_b} ({err.message})", where=str(path)) from None
        if executorch_gap.recognised(obj):
            aot, runtime = executorch_gap.sides(obj)
            return ("ExecuTorch AOT", as_entries(aot)), ("ExecuTorch runtime", as_entries(runtime))
        if not numeric_suite.recognised(obj):
            raise InputError(needs_b, where=str(path))
        a, b = numeric_suite.sides(obj)
    return (a.model, as_entries(a.tensors)), (b.model, as_entries(b.tensors))


def _compare_pair(a: Entry, b: Entry, options: ComparisonOptions) -> tuple[Report, dict[str, float | None]]:
    with blame("a", a.name):
        ta = a.load()
    with blame("b", b.name):
        tb = b.load()
    # Every pair's report is kept: holding its aligned tensors too would keep every layer decoded.
    return compare(ta, tb, options, keep_aligned=False), similarity(ta, tb)


def similarity(a: Tensor, b: Tensor) -> dict[str, float | None]:
    """Cosine similarity and SQNR (dB, A the signal, A − B the noise) of two tensors of one size.

    The figures ML engineers compare layers by (Polygraphy, msprobe, quantisation tools); next to
    the ULP counts they say how much of the signal a layer kept.  None where they do not apply:
    sizes that differ, non-finite values, a zero tensor; an SQNR of None for identical tensors
    stands for infinity.
    """
    from ..numerics.bits import to_float64

    empty: dict[str, float | None] = {"cosine": None, "sqnr_db": None}
    if a.array.size != b.array.size or a.array.size == 0 or a.is_complex or b.is_complex:
        return empty
    try:
        x = to_float64(a.array, a.fmt).reshape(-1)
        y = to_float64(b.array, b.fmt).reshape(-1)
    except (TypeError, ValueError):
        return empty
    bad_x, bad_y = int(x.size - np.isfinite(x).sum()), int(y.size - np.isfinite(y).sum())
    if bad_x or bad_y:
        return {**empty, "nonfinite_a": bad_x, "nonfinite_b": bad_y}
    nx, ny = float(np.linalg.norm(x)), float(np.linalg.norm(y))
    noise = float(np.sum((x - y) ** 2))
    signal = float(np.sum(x**2))
    return {
        "cosine": float(np.dot(x, y) / (nx * ny)) if nx and ny else None,
        "sqnr_db": None if noise == 0 or signal == 0 else 10 * math.log10(signal / noise),
    }


def bisect(
    a: Iterable[Tensor | Entry],
    b: Iterable[Tensor | Entry],
    options: ComparisonOptions = DEFAULT,
    *,
    mapping: Mapping[str, str] | None = None,
    only: Sequence[str] = (),
    info_a: Mapping[str, Mapping[str, Any]] | None = None,
    info_b: Mapping[str, Mapping[str, Any]] | None = None,
    by_values: bool = True,
    allow_unpaired: bool = False,
    workers: int = 1,
    order: str = "capture", order_note: str | None = None,
) -> BisectReport:
    """Compare every layer A and B both hold, in A's order.

    ``mapping`` (A name → B name) overrides the pairing for names no rule can match, such as a graph output renamed
    to ``output``.  ``only`` keeps the pairs whose A name matches one of these shell-style patterns (``layer3.*``,
    ``*.conv?``): a capture of thousands of tensors is narrowed to the part under suspicion, the others neither
    decoded nor compared.  ``options`` are resolved per pair by :func:`~perpendis.engine.compare.compare`, since
    layers may differ in format (a task check, for one pair's prediction, is left out).  ``info_a`` and ``info_b``
    describe each side's tensors (module path, op type: what a capture file or an ONNX model records) for pairing by
    the exporter's metadata; ``by_values`` lets tensors no rule pairs be paired by shape and agreeing values
    (:mod:`.pairing`).  ``order`` is where A's order comes from and ``order_note`` why (:mod:`.bisect_order`):
    "unknown" names none first.
    """
    from .pairing import pair

    ea, eb = as_entries(a), as_entries(b)
    info_a, info_b = dict(info_a or {}), dict(info_b or {})
    loads = ([e.load for e in ea], [e.load for e in eb]) if by_values else (None, None)
    found = pair([e.name for e in ea], [e.name for e in eb], mapping=mapping, info_a=info_a, info_b=info_b,
                 load_a=loads[0], load_b=loads[1])
    pairs, only_a, only_b = found.pairs, found.only_a, found.only_b
    said = {"order": order, "order_note": order_note}
    if not pairs and allow_unpaired:
        return BisectReport([], [e.name for e in ea], [e.name for e in eb], _patterns(only), **said)
    patterns = _patterns(only)
    picked, options = _picked_pairs(pairs, ea, eb, patterns), options.without_task()
    compared = [
        Pair(
            ea[i].name, eb[j].name, how, report, *_described(ea[i].name, eb[j].name, info_a, info_b),
            evidence=found.evidence.get(i), confidence=found.confidence.get(i, "high"), figures=figures,
        )
        for (i, j, how), (report, figures) in zip(picked, _reports(ea, eb, picked, options, workers), strict=True)
    ]
    mark_mispaired(compared)
    nonfinite = any(p.figures.get("nonfinite_a") or p.figures.get("nonfinite_b") for p in compared)
    return BisectReport(
        nan_origin=(nan_origin(eb, info_b, "B") or nan_origin(ea, info_a, "A")) if nonfinite else None,
        pairs=compared,
        only_a=[ea[i].name for i in only_a if _picked(ea[i].name, patterns)],
        only_b=[eb[j].name for j in only_b],
        only=patterns,
        n_skipped=len(pairs) - len(picked),
        repeats={**_named(found.repeats_a, ea), **_named(found.repeats_b, eb)},
        **said,
    )


def _named(repeats: Mapping[int, int], entries: Sequence[Entry]) -> dict[str, str]:
    """Copies by index → copies by name: each tensor that repeats an earlier one, and that one."""
    return {entries[i].name: entries[k].name for i, k in repeats.items()}


def _picked_pairs(pairs: list[tuple[int, int, str]], ea: Sequence[Entry], eb: Sequence[Entry],
                  patterns: list[str]) -> list[tuple[int, int, str]]:
    """The pairs whose A name ``only`` keeps; a clear error when nothing pairs or nothing is kept."""
    if not pairs:
        raise InputError(
            f"no tensor of A pairs with one of B (A holds {few(e.name for e in ea)}; B holds "
            f"{few(e.name for e in eb)}); give a mapping of A names to B names"
        )
    picked = [(i, j, how) for i, j, how in pairs if _picked(ea[i].name, patterns)]
    if not picked:
        raise InputError(
            f"no paired layer is named like {' or '.join(patterns)} (A holds {few(ea[i].name for i, _, _ in pairs)})",
            where="only",
        )
    return picked


def mark_mispaired(pairs: list[Pair]) -> None:
    """Flag the failing pairs that order and shape made without sure agreement, when the layers
    paired surely on either side of them agree.

    A bug carries forward: the layers after a wrong one are wrong too.  A failing pair that
    rests on its place and shape alone, followed by a surely paired layer that agrees (and
    after one that agrees, or at the start), is far more likely a value of another layer
    (an embedding ONNX folded into a constant, a module with no node of its own) than a bug
    that vanished at once; it is reported as a likely mispairing, not as the first failing layer.
    """
    sure = [p.sure for p in pairs]
    failing = [p.report.verdict == "investigate" for p in pairs]
    for k, p in enumerate(pairs):
        if sure[k] or not failing[k]:
            continue
        before = next((failing[i] for i in range(k - 1, -1, -1) if sure[i]), False)
        after = next((failing[i] for i in range(k + 1, len(pairs)) if sure[i]), None)
        p.likely_mispaired = not before and after is False


def _reports(
    ea: list[Entry], eb: list[Entry], picked: list, options: ComparisonOptions, workers: int
) -> list[tuple[Report, dict[str, float | None]]]:
    """Each picked pair's report, in order; ``workers`` threads natively (NumPy lets go of the
    GIL in its loops), one where there are no threads (Pyodide) or progress is reported."""
    if workers <= 1 or len(picked) < 2:
        return [_compare_pair(ea[i], eb[j], options) for i, j, _ in picked]
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(lambda p: _compare_pair(ea[p[0]], eb[p[1]], options), picked))


def _described(a_name: str, b_name: str, info_a: Mapping, info_b: Mapping) -> tuple[str | None, str | None]:
    """The pair's ONNX op type and PyTorch module: the side recording an op type is the ONNX one."""
    from .pairing import split_name

    ia, ib = info_a.get(a_name) or {}, info_b.get(b_name) or {}
    op = ib.get("op_type") or ia.get("op_type")
    if "op_type" in ib and "op_type" not in ia:
        module = ia.get("module") or split_name(a_name)[0]
    elif "op_type" in ia and "op_type" not in ib:
        module = ib.get("module") or split_name(b_name)[0]
    else:
        module = ia.get("module") or ib.get("module")
    return (op if isinstance(op, str) else None), (module if isinstance(module, str) else None)


def _patterns(only: Sequence[str]) -> list[str]:
    """The name patterns, stripped; empty ones dropped (an empty field picks every layer)."""
    if isinstance(only, str) or not all(isinstance(p, str) for p in only):
        raise InputError(f"only must be a list of name patterns such as ['layer3.*'], got {only!r}", where="only")
    return [p.strip() for p in only if p.strip()]


def _picked(name: str, patterns: list[str]) -> bool:
    return not patterns or any(fnmatch.fnmatchcase(name, p) for p in patterns)



# ---------------------------------------------------------------------------------------
# Several runs against one reference


def bisect_runs(
    runs: Mapping[str, Iterable[Tensor | Entry]], reference: str, options: ComparisonOptions = DEFAULT, **pairing: Any
) -> RunsReport:
    """Bisect every run against ``reference``; ``options`` and ``pairing`` are those of :func:`bisect`."""
    if reference not in runs:
        raise InputError(f"reference run {reference!r} is not among the runs {few(runs)}")
    ref = as_entries(runs[reference])
    layers = [e.name for e in ref]
    cells: dict[str, list[dict[str, Any] | None]] = {}
    first: dict[str, str | None] = {}
    for run, entries in runs.items():
        if run == reference:
            continue
        result = bisect(ref, entries, options, **pairing)
        row: list[dict[str, Any] | None] = [None] * len(layers)
        for p in result.pairs:
            row[layers.index(p.a_name)] = {"name": p.b_name, "verdict": p.verdict, "max_ulp": p.report.max_ulp}
        cells[run] = row
        failing = result.first_failing
        first[run] = None if failing is None else failing.a_name
    return RunsReport(reference, layers, cells, first)
