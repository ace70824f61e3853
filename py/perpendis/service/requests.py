"""Typed requests: one frozen dataclass per operation, made once from the worker's dict.

:func:`parse` is the only reader of the request dict (``docs/contracts.md``, "Worker
protocol").  It checks every field whose check needs nothing but the request (its type,
its shape, a choice among names) and raises :class:`InputError` with the message the
page shows; a field checked against the kept pair (an element index, an axis number) is
checked by the operation, once, since only it knows the pair.  A key no op reads, at the
top or in ``options``, is refused with the keys that are read: a misspelt ``atoll`` must
not compare silently at the default tolerance.  The comparison options are
:class:`~perpendis.engine.options.ComparisonOptions`, checked as they are made.  An
unknown ``op`` is a bug in the worker, not bad input: :class:`ValueError`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..engine.options import ComparisonOptions
from ..errors import InputError

SIDES = ("a", "b", "ref")
PAIRING = ("void_format", "mapping", "only")
"""The keys of ``options`` beside the comparison options that a compare or a bisect reads."""


def _options(request: Mapping[str, Any], *extra: str) -> ComparisonOptions:
    """The request's comparison options; ``extra`` names the other keys of ``options`` its op reads."""
    return ComparisonOptions.of(request.get("options"), extra)


def _known(request: Mapping[str, Any], op: str) -> None:
    """:class:`InputError` naming a key of the request its op does not read (a typo such as
    ``atoll`` would otherwise be dropped without a word), and the keys it does read."""
    known = ("op", "id", *FIELDS_OF[op])
    unknown = sorted(str(k) for k in request if k not in known)
    if unknown:
        raise InputError(
            f"unknown key {', '.join(map(repr, unknown))} in a {op!r} request; it takes {', '.join(known)}",
            where=unknown[0],
        )


def _option(request: Mapping[str, Any], key: str) -> Any:
    """``options[key]`` of a request whose options :func:`_options` has checked to be a mapping."""
    return (request.get("options") or {}).get(key)


def _void_formats(request: Mapping[str, Any]) -> dict[str, str]:
    """``options.void_format``: per side, the format anonymous void ``.npy`` elements are read as."""
    chosen = _option(request, "void_format") or {}
    valid = isinstance(chosen, Mapping) and all(k in SIDES and isinstance(v, str) for k, v in chosen.items())
    if not valid:
        raise InputError('void_format must map sides to formats, e.g. {"a": "float8_e5m2"}', where="void_format")
    return dict(chosen)


def _mapping(request: Mapping[str, Any]) -> dict[str, str]:
    mapping = _option(request, "mapping") or {}
    if not (
        isinstance(mapping, Mapping) and all(isinstance(k, str) and isinstance(v, str) for k, v in mapping.items())
    ):
        raise InputError('mapping must map names of A to names of B, e.g. {"head.fc": "output"}', where="mapping")
    return dict(mapping)


def bisect_keywords(request: CompareRequest | BisectRequest) -> dict[str, Any]:
    """A request's options, pairing map and layer filter as keyword arguments of
    :func:`perpendis.layers.bisect.bisect` (both a compare of two archives and a bisect
    end there)."""
    return {"options": request.options, "mapping": dict(request.mapping), "only": request.only}


@dataclass(frozen=True)
class CompareRequest:
    """Compare box A with box B (and a reference): ``inputs`` holds each box's spec.
    ``mapping`` and ``only`` are for boxes that turn out to hold several tensors, compared
    pair by pair.  ``text`` asks for the plain-text report beside the JSON (the CLI prints it;
    the page never reads it, so it is not built for the page)."""

    inputs: Mapping[str, Any]
    options: ComparisonOptions
    void_format: Mapping[str, str]
    mapping: Mapping[str, str] = field(default_factory=dict)
    only: Any = ()
    text: bool = False
    stream: bool = False
    """Stream two ``.npy`` files of any size (the CLI's ``--stream``); the page never forces it."""


@dataclass(frozen=True)
class RejudgeRequest:
    """Judge the kept pair again with other options (``text`` as :class:`CompareRequest`'s)."""

    options: ComparisonOptions
    text: bool = False


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
    options: ComparisonOptions
    void_format: Mapping[str, str]
    mapping: Mapping[str, str] = field(default_factory=dict)
    only: Any = ()
    read: Mapping[str, Any] | None = None
    """The pairing records (``info_a``, ``info_b``) of captures a front end in Python read
    itself (the CLI: ``inputs`` then holds each side's lazy entries); None for the page's boxes."""
    threads: int = 1
    """Threads the pairs are compared on: the CLI's cores; the page's worker is one thread."""
    allow_unpaired: bool = True
    """Nothing paired is an answer for the page, which shows both sides' names to pair by
    hand; the CLI has no such table and says it as bad input."""


@dataclass(frozen=True)
class BisectPairRequest:
    """Make pair ``index`` of the last bisect the kept pair (``text`` as :class:`CompareRequest`'s)."""

    index: object
    text: bool = False


@dataclass(frozen=True)
class BisectOrderRequest:
    """Put the last bisect's pairs in the order of ``order`` (names of A's tensors)."""

    order: list[str]


@dataclass(frozen=True)
class ModelExplorerRequest:
    """One figure of the last bisect (``verdict``, ``max_ulp``, …) as Model Explorer node data;
    the figure is checked against :data:`perpendis.layers.model_explorer.METRICS` by the op."""

    figure: str


@dataclass(frozen=True)
class RunsRequest:
    """Several runs, each bisected against the ``reference`` run."""

    runs: Mapping[str, Any]
    reference: object
    bisect: BisectRequest


@dataclass(frozen=True)
class OpenedCheckpoints:
    """Two checkpoints a front end in Python opened itself (the CLI: folders or single files
    through memory maps) and how their folds run there, none of which the page's request
    can carry: the Dask runner, the resume file, the progress bar's byte counts."""

    a: Any
    """:class:`perpendis.checkpoints.run.Checkpoint` of A, as B's below."""
    b: Any
    rules: tuple[Any, ...] = ()
    """Rename rules already parsed (a preset's, then ``--rename``'s)."""
    runner: Callable[[Any], None] | None = None
    """Folds the job (``checkpoints.run.local_runner`` when None, or a Dask cluster's)."""
    resume: Any = None
    planned: Callable[[int, int], object] | None = None
    done: Callable[[int], object] | None = None


@dataclass(frozen=True)
class CheckpointsRequest:
    """Two checkpoints (folders of files handed over unread), compared tensor by tensor."""

    inputs: Mapping[str, Any]
    options: ComparisonOptions
    rename: list[str]
    opened: OpenedCheckpoints | None = None
    """The CLI's checkpoints, opened and run as it says; None for the page's files."""


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
    | ModelExplorerRequest
    | RunsRequest
    | CheckpointsRequest
    | ReserveRequest
)


def _bisect(request: Mapping[str, Any], *extra: str) -> BisectRequest:
    return BisectRequest(
        request.get("inputs") or {},
        _options(request, *PAIRING, *extra),
        _void_formats(request),
        _mapping(request),
        _option(request, "only") or [],
    )


def _text(request: Mapping[str, Any]) -> bool:
    """``text``: whether the answer carries the plain-text report too (default: it does not)."""
    text = request.get("text", False)
    if not isinstance(text, bool):
        raise InputError(f"text must be true or false, got {text!r}", where="text")
    return text


def _order(request: Mapping[str, Any]) -> BisectOrderRequest:
    order = request.get("order")
    if not (isinstance(order, list) and all(isinstance(n, str) for n in order)):
        raise InputError(f'order must list names of A\'s tensors, e.g. ["conv1", "relu1"], got {order!r}')
    return BisectOrderRequest(order)


def _model_explorer(request: Mapping[str, Any]) -> ModelExplorerRequest:
    figure = request.get("figure", "verdict")
    if not isinstance(figure, str):
        raise InputError(f'figure must name a figure, e.g. "max_ulp", got {figure!r}', where="figure")
    return ModelExplorerRequest(figure)


def _runs(request: Mapping[str, Any]) -> RunsRequest:
    runs = (request.get("inputs") or {}).get("runs")
    if not isinstance(runs, Mapping) or len(runs) < 2:
        raise InputError("give at least two runs, one of them the reference")
    bisect = _bisect(request, "reference")
    return RunsRequest(runs, _option(request, "reference"), bisect)


def _checkpoints(request: Mapping[str, Any]) -> CheckpointsRequest:
    options = _options(request, "rename")
    rules = _option(request, "rename") or []
    if not isinstance(rules, list) or not all(isinstance(r, str) for r in rules):
        raise InputError("rename rules are a list of PAT=REPL strings", where="rename")
    return CheckpointsRequest(request.get("inputs") or {}, options, rules)


def _reserve(request: Mapping[str, Any]) -> ReserveRequest:
    size = request.get("bytes")
    if not isinstance(size, int) or isinstance(size, bool) or size < 0:
        raise InputError(f"bytes must be a whole number of bytes >= 0, got {size!r}", where="bytes")
    return ReserveRequest(size)


_PARSERS = {
    "reserve": _reserve,
    "compare": lambda r: CompareRequest(
        r.get("inputs") or {}, _options(r, *PAIRING), _void_formats(r), _mapping(r), _option(r, "only") or [],
        _text(r),
    ),
    "rejudge": lambda r: RejudgeRequest(_options(r), _text(r)),
    "element": lambda r: ElementRequest(r.get("flat")),
    "step": lambda r: StepRequest(r.get("flat"), r.get("direction")),
    "slice": lambda r: SliceRequest(str(r.get("metric")), r.get("max_cells"), r.get("axes"), r.get("index")),
    "scatter": lambda r: ScatterRequest(r.get("max_points")),
    "bisect": _bisect,
    "bisect_pair": lambda r: BisectPairRequest(r.get("index"), _text(r)),
    "bisect_order": _order,
    "model_explorer": _model_explorer,
    "runs": _runs,
    "checkpoints": _checkpoints,
}

OPS = tuple(_PARSERS)

FIELDS_OF = {
    "reserve": ("bytes",),
    "compare": ("inputs", "options", "text"),
    "rejudge": ("options", "text"),
    "element": ("flat",),
    "step": ("flat", "direction"),
    "slice": ("metric", "max_cells", "axes", "index"),
    "scatter": ("max_points",),
    "bisect": ("inputs", "options"),
    "bisect_pair": ("index", "text"),
    "bisect_order": ("order",),
    "model_explorer": ("figure",),
    "runs": ("inputs", "options"),
    "checkpoints": ("inputs", "options"),
}
"""The keys of each op's request beside ``op`` (and the client's ``id``); any other is refused."""


def parse(request: Mapping[str, Any]) -> Request:
    """The typed request of a worker request dict; :class:`InputError` for a bad field."""
    op = request.get("op")
    if op not in _PARSERS:
        raise ValueError(f"unknown op {op!r}; the worker sends one of {', '.join(_PARSERS)}")
    _known(request, op)
    return _PARSERS[op](request)
