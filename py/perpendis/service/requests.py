"""Typed requests: one frozen dataclass per operation, made once from the worker's dict.

:func:`parse` is the only reader of the request dict (``docs/contracts.md``, "Worker
protocol").  It checks every field whose check needs nothing but the request (its type,
its shape, a choice among names) and raises :class:`InputError` with the message the
page shows; a field checked against the kept pair (an element index, an axis number) is
checked by the operation, once, since only it knows the pair.  An unknown ``op`` is a
bug in the worker, not bad input: :class:`ValueError`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..engine.task import TaskSpec, task_spec
from ..errors import InputError

SIDES = ("a", "b", "ref")


@dataclass(frozen=True)
class Options:
    """The tolerance options of a comparison: a preset, or atol and rtol, and the diagnosis depth;
    ``task`` (a comparison of one pair only) asks whether the prediction changes."""

    preset: str | None = None
    atol: float | None = None
    rtol: float | None = None
    depth: float | None = None
    task: TaskSpec | None = None

    @classmethod
    def of(cls, request: Mapping[str, Any]) -> Options:
        options = request.get("options") or {}
        return cls(
            options.get("preset"), options.get("atol"), options.get("rtol"), options.get("depth"),
            task_spec(options.get("task")),
        )

    def pair_engine(self) -> dict[str, Any]:
        """:meth:`engine` plus the task check, for a comparison of one pair (a bisect has none)."""
        return {**self.engine(), "task": self.task}

    def engine(self) -> dict[str, Any]:
        """As keyword arguments of :func:`perpendis.engine.compare.prepare` (``depth`` only when given)."""
        out: dict[str, Any] = {"preset": self.preset, "atol": self.atol, "rtol": self.rtol}
        if self.depth is not None:
            out["depth"] = self.depth
        return out


def _void_formats(request: Mapping[str, Any]) -> dict[str, str]:
    """``options.void_format``: per side, the format anonymous void ``.npy`` elements are read as."""
    chosen = (request.get("options") or {}).get("void_format") or {}
    valid = isinstance(chosen, Mapping) and all(k in SIDES and isinstance(v, str) for k, v in chosen.items())
    if not valid:
        raise InputError('void_format must map sides to formats, e.g. {"a": "float8_e5m2"}', where="void_format")
    return dict(chosen)


def _mapping(request: Mapping[str, Any]) -> dict[str, str]:
    mapping = (request.get("options") or {}).get("mapping") or {}
    if not (
        isinstance(mapping, Mapping) and all(isinstance(k, str) and isinstance(v, str) for k, v in mapping.items())
    ):
        raise InputError('mapping must map names of A to names of B, e.g. {"head.fc": "output"}', where="mapping")
    return dict(mapping)


@dataclass(frozen=True)
class CompareRequest:
    """Compare box A with box B (and a reference): ``inputs`` holds each box's spec.
    ``mapping`` and ``only`` are for boxes that turn out to hold several tensors, compared
    pair by pair."""

    inputs: Mapping[str, Any]
    options: Options
    void_format: Mapping[str, str]
    mapping: Mapping[str, str] = field(default_factory=dict)
    only: Any = ()

    def bisect_engine(self) -> dict[str, Any]:
        """As keyword arguments of :func:`perpendis.layers.bisect.bisect`, when compared pair by pair."""
        return {**self.options.engine(), "mapping": dict(self.mapping), "only": self.only}


@dataclass(frozen=True)
class RejudgeRequest:
    """Judge the kept pair again with other options."""

    options: Options


@dataclass(frozen=True)
class ElementRequest:
    """One element of the kept pair, by flat index (checked against the pair)."""

    flat: object


@dataclass(frozen=True)
class StepRequest:
    """The next (1) or previous (-1) bitwise-differing element from ``flat``."""

    flat: object
    direction: object


@dataclass(frozen=True)
class SliceRequest:
    """A 2-D slice of a metric over the kept pair, pooled to at most ``max_cells`` cells."""

    metric: str
    max_cells: object
    axes: object = None
    index: object = None


@dataclass(frozen=True)
class ScatterRequest:
    """``[|b|, |a - b|]`` for at most ``max_points`` differing elements."""

    max_points: object


@dataclass(frozen=True)
class BisectRequest:
    """Compare two captures pair by pair (layer by layer)."""

    inputs: Mapping[str, Any]
    options: Options
    void_format: Mapping[str, str]
    mapping: Mapping[str, str] = field(default_factory=dict)
    only: Any = ()

    def engine(self) -> dict[str, Any]:
        """As keyword arguments of :func:`perpendis.layers.bisect.bisect`."""
        return {**self.options.engine(), "mapping": dict(self.mapping), "only": self.only}


@dataclass(frozen=True)
class BisectPairRequest:
    """Make pair ``index`` of the last bisect the kept pair."""

    index: object


@dataclass(frozen=True)
class BisectOrderRequest:
    """Put the last bisect's pairs in the order of ``order`` (names of A's tensors)."""

    order: list[str]


@dataclass(frozen=True)
class RunsRequest:
    """Several runs, each bisected against the ``reference`` run."""

    runs: Mapping[str, Any]
    reference: object
    bisect: BisectRequest


@dataclass(frozen=True)
class CheckpointsRequest:
    """Two checkpoints (folders of files handed over unread), compared tensor by tensor."""

    inputs: Mapping[str, Any]
    options: Options
    rename: list[str]


@dataclass(frozen=True)
class ReserveRequest:
    """Grow the heap for a comparison of inputs of ``bytes``."""

    bytes: int


Request = (
    CompareRequest
    | RejudgeRequest
    | ElementRequest
    | StepRequest
    | SliceRequest
    | ScatterRequest
    | BisectRequest
    | BisectPairRequest
    | BisectOrderRequest
    | RunsRequest
    | CheckpointsRequest
    | ReserveRequest
)


def _bisect(request: Mapping[str, Any]) -> BisectRequest:
    options = request.get("options") or {}
    return BisectRequest(
        request.get("inputs") or {},
        Options.of(request),
        _void_formats(request),
        _mapping(request),
        options.get("only") or [],
    )


def _order(request: Mapping[str, Any]) -> BisectOrderRequest:
    order = request.get("order")
    if not (isinstance(order, list) and all(isinstance(n, str) for n in order)):
        raise InputError(f'order must list names of A\'s tensors, e.g. ["conv1", "relu1"], got {order!r}')
    return BisectOrderRequest(order)


def _runs(request: Mapping[str, Any]) -> RunsRequest:
    runs = (request.get("inputs") or {}).get("runs")
    if not isinstance(runs, Mapping) or len(runs) < 2:
        raise InputError("give at least two runs, one of them the reference")
    return RunsRequest(runs, (request.get("options") or {}).get("reference"), _bisect(request))


def _checkpoints(request: Mapping[str, Any]) -> CheckpointsRequest:
    rules = (request.get("options") or {}).get("rename") or []
    if not isinstance(rules, list) or not all(isinstance(r, str) for r in rules):
        raise InputError("rename rules are a list of PAT=REPL strings", where="rename")
    return CheckpointsRequest(request.get("inputs") or {}, Options.of(request), rules)


def _reserve(request: Mapping[str, Any]) -> ReserveRequest:
    size = request.get("bytes")
    if not isinstance(size, int) or isinstance(size, bool) or size < 0:
        raise InputError(f"bytes must be a whole number of bytes >= 0, got {size!r}", where="bytes")
    return ReserveRequest(size)


_PARSERS = {
    "reserve": _reserve,
    "compare": lambda r: CompareRequest(
        r.get("inputs") or {}, Options.of(r), _void_formats(r), _mapping(r), (r.get("options") or {}).get("only") or []
    ),
    "rejudge": lambda r: RejudgeRequest(Options.of(r)),
    "element": lambda r: ElementRequest(r.get("flat")),
    "step": lambda r: StepRequest(r.get("flat"), r.get("direction")),
    "slice": lambda r: SliceRequest(str(r.get("metric")), r.get("max_cells"), r.get("axes"), r.get("index")),
    "scatter": lambda r: ScatterRequest(r.get("max_points")),
    "bisect": _bisect,
    "bisect_pair": lambda r: BisectPairRequest(r.get("index")),
    "bisect_order": _order,
    "runs": _runs,
    "checkpoints": _checkpoints,
}

OPS = tuple(_PARSERS)


def parse(request: Mapping[str, Any]) -> Request:
    """The typed request of a worker request dict; :class:`InputError` for a bad field."""
    op = request.get("op")
    if op not in _PARSERS:
        raise ValueError(f"unknown op {op!r}; the worker sends one of {', '.join(_PARSERS)}")
    return _PARSERS[op](request)
