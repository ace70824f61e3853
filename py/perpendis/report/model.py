"""The typed report: what the page, the CLI, Markdown export and tests all read.

The dataclasses mirror the JSON of ``docs/contracts.md`` field for field and are
serialised in one place (:meth:`Report.to_dict`), so no renderer can drift from another.
Fields marked ``internal`` carry working data from compare to diagnose and the worker's
follow-up questions; they never reach JSON.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np

from .headline import headline
from .paste_back import paste_back

SCHEMA = 1
INTERNAL = {"internal": True}

# The renderings a report shows itself with (``text``, ``markdown``, ``html``), filled in by
# :mod:`perpendis.report` when the package is imported: the model never imports its
# renderers, which import it.
RENDERINGS: dict[str, Callable[[Report], str]] = {}


@dataclass
class Element:
    """One element of the compared pair, as both sides hold it."""

    flat: int
    index: list[int]
    a: str
    b: str
    a_bits: str
    b_bits: str
    a_hex: str
    b_hex: str
    ulp: int | None
    abs_diff: float | None
    rel_diff: float | None


@dataclass
class Stats:
    mean_abs: float | None = None
    mean_rel: float | None = None
    p50_abs: float | None = None
    p90_abs: float | None = None
    p99_abs: float | None = None
    p999_abs: float | None = None
    p50_rel: float | None = None
    p90_rel: float | None = None
    p99_rel: float | None = None
    p999_rel: float | None = None
    rmse: float | None = None
    cosine: float | None = None
    snr_db: float | None = None


@dataclass
class Histogram:
    edges: list[str]
    counts: list[int]
    nonfinite: int


@dataclass
class ToleranceResult:
    atol: float
    rtol: float
    preset: str | None
    n_fail: int
    fraction_fail: float
    passed: bool
    first_fail: Element | None
    warning: str | None
    worst_fail: Element | None = None  # the failing element of greatest |A - B| (NaN first), as the peers name it
    refused: str | None = None  # why the preset's peer refuses the pair outright (two dtypes): it fails
    passed_by: str | None = None  # how a preset passed failing elements (dynamo's RMSE rule)
    n_judged: int | None = None  # values the test judged when not n_elements: complex values, judged whole


@dataclass
class MinTolerance:
    """The smallest atol (at the rtol used) and rtol (at the atol used) that pass the pairs
    finite on both sides; ``n_unreachable`` failures are beyond every tolerance (a NaN
    or an infinity A and B disagree on, or a NaN the preset fails as equal_nan=False)."""

    atol_at_rtol: float
    rtol_at_atol: float | None
    n_unreachable: int = 0


@dataclass
class AxisFailures:
    """Failures per index of one axis; ``bucket`` indices share an entry on long axes."""

    axis: int
    size: int
    fail_counts: list[int]
    top: list[list[float]]
    bucket: int = 1


@dataclass
class Reference:
    """Each side against a higher-precision run; ``*_nonfinite`` count elements whose NaN or
    inf the reference does not share, which the RMSE (over finite pairs) cannot show."""

    a_rmse: float
    b_rmse: float
    a_max_ulp: int | None
    b_max_ulp: int | None
    ratio: float | None
    equivalent: bool
    a_nonfinite: int = 0
    b_nonfinite: int = 0


def place(
    text: str | None = None,
    *,
    axis: int | None = None,
    axis_size: int | None = None,
    indices: Sequence[int] | None = None,
    element: Sequence[int] | None = None,
    **amount: Any,
) -> dict[str, Any]:
    """A finding's ``where``: the location as data (axis, indices, the telling element, the
    amounts found) plus a short phrase for people.  Keys left out are absent, not null, so a
    reader tests ``"axis" in where``; amounts are plain numbers or lists of them."""
    out: dict[str, Any] = {}
    if axis is not None:
        out["axis"] = int(axis)
    if axis_size is not None:
        out["axis_size"] = int(axis_size)
    if indices is not None:
        out["indices"] = [int(i) for i in indices]
    if element is not None:
        out["element"] = [int(i) for i in element]
    if amount:
        out["amount"] = {k: plain(_number(v)) for k, v in amount.items()}
    if text:
        out["text"] = text
    return out


def _number(value: Any) -> Any:
    """NumPy scalars and arrays as Python numbers and lists, for JSON."""
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, list | tuple):
        return [_number(v) for v in value]
    return value


@dataclass
class Finding:
    """One observation about the difference.

    ``where`` is :func:`place` data or None; ``causes`` lists, most likely first, what
    usually produces this signature in PyTorch → ONNX / TensorRT work; ``evidence`` is
    small data a picture can be drawn from (a per-slice curve, a histogram), or None.
    """

    kind: str
    severity: str  # "error", "warning" or "info"
    message: str
    where: dict[str, Any] | None = None
    causes: list[str] = field(default_factory=list)
    evidence: dict[str, Any] | None = None

    @property
    def where_text(self) -> str | None:
        return None if self.where is None else self.where.get("text")


@dataclass
class TaskResult:
    """The report's ``task`` section (docs/contracts.md, docs/task.md)."""

    kind: str
    axis: int
    classes: int
    rows: int
    skipped_rows: int
    top1_agreement: float | None
    topk: dict[str, float | None]
    kl: dict[str, Any]
    n_flips: int
    n_flips_beyond_rounding: int
    flips: list[dict[str, Any]]
    n_near_ties: int
    near_ties: list[dict[str, Any]]
    bound: dict[str, float]
    verdict: str


@dataclass
class Report:
    a: dict[str, Any]
    b: dict[str, Any]
    ref: dict[str, Any] | None
    shape_match: bool
    dtype_match: bool
    compared_as: str
    compared_shape: list[int] | None
    n_elements: int = 0
    identical: bool = False
    n_bitwise_diff: int = 0
    first_diff: Element | None = None
    worst: dict[str, Element | None] = field(default_factory=lambda: {"abs": None, "ulp": None, "rel": None})
    max_ulp: int | None = None
    max_abs_diff: float = 0.0
    max_rel_diff: float = 0.0
    n_nan_mismatch: int = 0
    nan_mismatch_indices: list[list[int]] = field(default_factory=list)
    n_inf_mismatch: int = 0
    inf_mismatch_indices: list[list[int]] = field(default_factory=list)
    n_signed_zero_diff: int = 0
    stats: Stats = field(default_factory=Stats)
    ulp_histogram: Histogram = field(default_factory=lambda: Histogram(["0"], [0], 0))
    tolerance: ToleranceResult | None = None
    min_tolerance: MinTolerance = field(default_factory=lambda: MinTolerance(0.0, 0.0))
    axes: list[AxisFailures] = field(default_factory=list)
    reference: Reference | None = None
    verdict: str = "investigate"
    findings: list[Finding] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    task: TaskResult | None = None  # does the difference change the prediction (docs/task.md)
    task_offer: dict[str, int] | None = None  # a task check the shape suggests, when none was asked
    schema: int = SCHEMA
    layout: dict[str, Any] = field(default_factory=dict, metadata=INTERNAL)
    samples: dict[str, Any] = field(default_factory=dict, metadata=INTERNAL)
    aligned: Any = field(default=None, metadata=INTERNAL)

    @property
    def headline(self) -> str:
        """The one sentence every renderer leads with (page, CLI, Markdown, HTML): see
        :func:`perpendis.report.headline.headline`."""
        return headline(self)

    def to_dict(self) -> dict[str, Any]:
        """The report as JSON-ready data; non-finite floats become ``"inf"``/``"-inf"``/``"nan"``."""
        out = {f.name: plain(getattr(self, f.name)) for f in fields(self) if not f.metadata.get("internal")}
        out["headline"] = self.headline
        out["paste_back"] = paste_back(self)
        return {"schema": out.pop("schema"), **out}

    def to_json(self, **kwargs: Any) -> str:
        return json.dumps(self.to_dict(), allow_nan=False, **kwargs)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Report:
        """Rebuild a report from :meth:`to_dict` output (internal fields stay empty)."""
        d = {k: _float_in(v) if k in _FLOAT_KEYS else v for k, v in data.items() if k not in ("headline", "paste_back")}
        d["first_diff"] = _element_in(d.get("first_diff"))
        d["worst"] = {k: _element_in(v) for k, v in d["worst"].items()}
        d["stats"] = Stats(**{k: _float_in(v) for k, v in d["stats"].items()})
        d["ulp_histogram"] = Histogram(**d["ulp_histogram"])
        if d.get("tolerance") is not None:
            t = dict(d["tolerance"])
            t["first_fail"] = _element_in(t.get("first_fail"))
            t["worst_fail"] = _element_in(t.get("worst_fail"))
            d["tolerance"] = ToleranceResult(**t)
        d["min_tolerance"] = MinTolerance(**{k: _float_in(v) for k, v in d["min_tolerance"].items()})
        d["axes"] = [AxisFailures(**x) for x in d["axes"]]
        if d.get("reference") is not None:
            d["reference"] = Reference(**{k: _float_in(v) for k, v in d["reference"].items()})
        d["findings"] = [Finding(**x) for x in d["findings"]]
        if d.get("task") is not None:
            d["task"] = TaskResult(**d["task"])
        return cls(**d)

    @classmethod
    def from_json(cls, text: str) -> Report:
        return cls.from_dict(json.loads(text))

    def to_markdown(self) -> str:
        return RENDERINGS["markdown"](self)

    def to_text(self) -> str:
        return RENDERINGS["text"](self)

    def __repr__(self) -> str:
        # Short: the generated one would print every field, samples and aligned arrays included.
        return f"<perpendis Report {RENDERINGS['verdict'](self)}>"

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        """IPython's plain-text display (a terminal REPL): the CLI's human report."""
        printer.text(self.to_text().rstrip("\n"))

    def _repr_html_(self) -> str:
        """Jupyter's rich display of a report: see :mod:`perpendis.report_html`."""
        return RENDERINGS["html"](self)

    def _repr_markdown_(self) -> str:
        return self.to_markdown()


_FLOAT_KEYS = {"max_abs_diff", "max_rel_diff"}
_NONFINITE = {"inf": math.inf, "-inf": -math.inf, "nan": math.nan}


def plain(value: Any) -> Any:
    """Dataclasses, lists and floats as JSON-ready data: non-finite floats become strings."""
    if hasattr(value, "__dataclass_fields__"):
        return {f.name: plain(getattr(value, f.name)) for f in fields(value) if not f.metadata.get("internal")}
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    return value


def _float_in(value: Any) -> Any:
    return _NONFINITE.get(value, value) if isinstance(value, str) else value


def _element_in(data: dict[str, Any] | None) -> Element | None:
    if data is None:
        return None
    return Element(**{k: _float_in(v) if k in ("abs_diff", "rel_diff") else v for k, v in data.items()})
