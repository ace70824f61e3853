"""Captures compared pair by pair: bisect, a bisect's row opened or reordered or its figures
as Model Explorer node data, and runs against a reference run.

The tensors of a capture are lazy :class:`~perpendis.layers.bisect.Entry` objects, decoded when
their pair comes up; the session keeps the entries of the last bisect, so a row opened
later re-decodes just its pair.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ..errors import InputError
from ..inputs.formats.onnx_model import Graph
from ..inputs.tensor import Tensor
from ..layers.bisect import Entry, as_entries, bisect, bisect_runs, read_single
from ..layers.bisect_inputs import arranged, sort_inputs
from ..layers.bisect_order import USER
from ..layers.model_explorer import file_name, listing, node_data_text
from . import boxes
from .fold import Progress
from .judge import judge_kept_pair
from .requests import (
    BisectOrderRequest,
    BisectPairRequest,
    BisectRequest,
    ModelExplorerRequest,
    RunsRequest,
    bisect_keywords,
)
from .session import Bisected, KeptPair, Session


def entries(spec: object, payloads: Mapping[str, Any], side: str) -> list[Any]:
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
    return as_entries(boxes.load(spec, payloads, side))


def _counting(found: list[Any], total: int, progress: Progress | None) -> list[Any]:
    """The same entries, reporting ``("comparing <name>", share done)`` as each is decoded."""
    if progress is None:
        return found
    done = [0]

    def loader(entry: Any) -> Callable[[], Tensor]:
        def load() -> Tensor:
            progress(f"comparing {entry.name}", min(1.0, done[0] / max(1, total)))
            done[0] += 1
            return entry.load()

        return load

    return [Entry(e.name, loader(e)) for e in found]


def bisect_entries(
    session: Session, ea: list[Any], eb: list[Any], options: dict[str, Any], progress: Progress | None,
    graph: Graph | None = None,
) -> dict[str, Any]:
    """Bisect two captures' entries and keep the result for :func:`open_pair`, :func:`reorder`
    and :func:`model_explorer`; ``model_explorer`` lists the node-data files ``graph`` allows
    (none without a model), so the page offers them without knowing the figures."""
    # Nothing paired is an answer here, not an error: the page shows both sides' names to pair by hand.
    result = bisect(_counting(ea, len(ea), progress), eb, **{"allow_unpaired": True, **options})
    # The entries re-decode their tensor when a row is opened; the result's reports hold no tensors.
    by_a, by_b = {e.name: e for e in ea}, {e.name: e for e in eb}
    session.bisected = Bisected(result, [(by_a[p.a_name], by_b[p.b_name]) for p in result.pairs], options, graph)
    return {"bisect": result.to_dict(), "model_explorer": [] if graph is None else listing(result)}


def switch_to_bisect(
    session: Session, a: list[Any], b: list[Any], options: dict[str, Any], progress: Progress | None
) -> dict[str, Any]:
    """Boxes of several tensors (or entries) are compared layer by layer; ``switched`` says why."""
    out = bisect_entries(session, as_entries(a), as_entries(b), options, progress)
    return {**out, "switched": f"A holds {len(a)} tensors and B {len(b)}: compared them pair by pair, in A's order"}


def bisect_boxes(
    session: Session, request: BisectRequest, payloads: Mapping[str, Any], progress: Progress | None, workers: int
) -> dict[str, Any]:
    """Bisect the boxes' captures; a front end in Python (the CLI) sends the entries and
    pairing records it read itself (``request.read``), and its threads."""
    graph = None
    if request.read is not None:
        ea, eb, info = as_entries(request.inputs["a"]), as_entries(request.inputs["b"]), dict(request.read)
    else:
        # The .onnx model may be among the files of either box, and both captures in one box.
        a, b, graph = sort_inputs(request.inputs.get("a"), request.inputs.get("b"), payloads)
        ea, eb, info = arranged(a, b, payloads, graph, entries(a, payloads, "a"), entries(b, payloads, "b"))
    ran = {"workers": request.threads, "allow_unpaired": request.allow_unpaired}
    return bisect_entries(session, ea, eb, {**bisect_keywords(request), **info, **ran}, progress, graph)


def model_explorer(
    session: Session, request: ModelExplorerRequest, payloads: Mapping[str, Any], progress: Progress | None,
    workers: int,
) -> dict[str, Any]:
    """One figure of the last bisect as Model Explorer node data: the file's name and its text,
    the very bytes ``perpendis bisect --model-explorer nodes.json`` writes, which the page only saves."""
    bisected = session.bisect()
    if bisected.graph is None:
        raise InputError(
            "Model Explorer's node data names the graph's nodes: drop the .onnx model beside the captures "
            "and compare again", where="model-explorer",
        )
    text = node_data_text(bisected.result, bisected.graph, request.figure)
    return {"file": file_name("nodes.json", request.figure), "text": text}


def open_pair(
    session: Session, request: BisectPairRequest, payloads: Mapping[str, Any], progress: Progress | None, workers: int
) -> dict[str, Any]:
    """Make one pair of the last bisect the kept pair, so every follow-up op works on it."""
    bisected = session.bisect()
    pairs, index = bisected.pairs, request.index
    if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < len(pairs):
        raise InputError(f"index must be a pair number from 0 to {len(pairs) - 1}, got {index!r}")
    ea, eb = pairs[index]
    session.pair = KeptPair(ea.load(), eb.load(), None, bisected.options["options"].without_task())
    return judge_kept_pair(session, progress, workers, request.text)


def reorder(
    session: Session, request: BisectOrderRequest, payloads: Mapping[str, Any], progress: Progress | None, workers: int
) -> dict[str, Any]:
    """Put the last bisect's pairs in the user's order, so "first failing" follows it.

    Saved order is execution order only when the capture kept it, so the user may
    reorder the rows; the pairs keep their reports (nothing is compared again) and the
    first failing pair is judged here, by the one rule of :class:`BisectReport`.  Pairs
    ``order`` names come first, in its order; the others follow in their current order.
    """
    bisected = session.bisect()
    result, order = bisected.result, request.order
    names = [p.a_name for p in result.pairs]
    unknown = [n for n in order if n not in names]
    if unknown:
        raise InputError(f"the order names {unknown[0]!r}, which no pair of the last bisect has", where="order")
    repeated = sorted({n for n in order if order.count(n) > 1})
    if repeated:
        raise InputError(f"the order names {repeated[0]!r} more than once; name each pair once", where="order")
    position = {name: i for i, name in enumerate(order)}
    ranked = sorted(range(len(names)), key=lambda i: (0, position[names[i]]) if names[i] in position else (1, i))
    result.pairs = [result.pairs[i] for i in ranked]
    result.order, result.order_note = USER, None  # the rows are in the order the user says the layers ran in
    bisected.pairs = [bisected.pairs[i] for i in ranked]
    return {"bisect": result.to_dict()}


def runs(
    session: Session, request: RunsRequest, payloads: Mapping[str, Any], progress: Progress | None, workers: int
) -> dict[str, Any]:
    """Several runs, each bisected against the reference run: the runs × layers matrix."""
    found = {label: entries(spec, payloads, str(label)) for label, spec in request.runs.items()}
    reference = request.reference
    if reference in found:
        total = len(found[reference]) * (len(found) - 1)
        found[reference] = _counting(found[reference], total, progress)
    return {"runs": bisect_runs(found, reference, **bisect_keywords(request.bisect)).to_dict()}
