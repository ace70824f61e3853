"""The typed report: what the page, the CLI, Markdown export and tests all read.

The dataclasses mirror the JSON of ``docs/contracts.md`` field for field and are
serialised in one place (:meth:`Report.to_dict`), so no renderer can drift from another.
Fields marked ``internal`` carry working data from compare to diagnose and the worker's
follow-up questions; they never reach JSON.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np

from .headline import main_finding  # noqa: F401  (re-exported: the finding a table row shows)

SCHEMA = 1
INTERNAL = {"internal": True}


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


@dataclass
class MinTolerance:
    atol_at_rtol: float
    rtol_at_atol: float | None


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
    schema: int = SCHEMA
    layout: dict[str, Any] = field(default_factory=dict, metadata=INTERNAL)
    samples: dict[str, Any] = field(default_factory=dict, metadata=INTERNAL)
    aligned: Any = field(default=None, metadata=INTERNAL)

    @property
    def headline(self) -> str:
        """The one sentence every renderer leads with (page, CLI, Markdown, HTML): see
        :func:`perpendis.headline.headline`."""
        from .headline import headline

        return headline(self)

    def to_dict(self) -> dict[str, Any]:
        """The report as JSON-ready data; non-finite floats become ``"inf"``/``"-inf"``/``"nan"``."""
        out = {f.name: plain(getattr(self, f.name)) for f in fields(self) if not f.metadata.get("internal")}
        out["headline"] = self.headline
        return {"schema": out.pop("schema"), **out}

    def to_json(self, **kwargs: Any) -> str:
        return json.dumps(self.to_dict(), allow_nan=False, **kwargs)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Report:
        """Rebuild a report from :meth:`to_dict` output (internal fields stay empty)."""
        d = {k: _float_in(v) if k in _FLOAT_KEYS else v for k, v in data.items() if k != "headline"}
        d["first_diff"] = _element_in(d.get("first_diff"))
        d["worst"] = {k: _element_in(v) for k, v in d["worst"].items()}
        d["stats"] = Stats(**{k: _float_in(v) for k, v in d["stats"].items()})
        d["ulp_histogram"] = Histogram(**d["ulp_histogram"])
        if d.get("tolerance") is not None:
            t = dict(d["tolerance"])
            t["first_fail"] = _element_in(t.get("first_fail"))
            d["tolerance"] = ToleranceResult(**t)
        d["min_tolerance"] = MinTolerance(**{k: _float_in(v) for k, v in d["min_tolerance"].items()})
        d["axes"] = [AxisFailures(**x) for x in d["axes"]]
        if d.get("reference") is not None:
            d["reference"] = Reference(**{k: _float_in(v) for k, v in d["reference"].items()})
        d["findings"] = [Finding(**x) for x in d["findings"]]
        return cls(**d)

    @classmethod
    def from_json(cls, text: str) -> Report:
        return cls.from_dict(json.loads(text))

    def to_markdown(self) -> str:
        return render_markdown(self)

    def to_text(self) -> str:
        return render_text(self)

    def __repr__(self) -> str:
        # Short: the generated one would print every field, samples and aligned arrays included.
        return f"<perpendis Report {verdict_line(self)}>"

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        """IPython's plain-text display (a terminal REPL): the CLI's human report."""
        printer.text(self.to_text().rstrip("\n"))

    def _repr_html_(self) -> str:
        """Jupyter's rich display of a report: see :mod:`perpendis.report_html`."""
        from .report_html import render_fragment  # here: report_html imports this module

        return render_fragment(self)

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


# ---------------------------------------------------------------------------------------
# Rendering.  Both renderers read only the report's fields.

def verdict_line(r: Report) -> str:
    """``VERDICT: headline``, the first line of the CLI text and of Markdown (a headline that
    starts with the verdict's own word does not say it twice)."""
    text = r.headline
    word = f"{r.verdict.capitalize()}: "
    return f"{r.verdict.upper()}: {text[len(word):] if text.startswith(word) else text}"


def finding_lines(f: Finding, bullet: str = "") -> list[str]:
    """A finding as text: severity, message and place, then its likely causes, indented."""
    place_text = f.where_text
    if bullet:
        head = f"{bullet}**{f.severity}** {f.message}" + (f" (`{place_text}`)" if place_text else "")
    else:
        head = f"[{f.severity}] {f.message}" + (f" at {place_text}" if place_text else "")
    lines = [head]
    if f.causes:
        lines.append(("  " if bullet else "    ") + "likely causes: " + "; ".join(f.causes))
    return lines


def number_text(x: float | int | None, digits: int = 4) -> str:
    """A report number for people: integers (ULPs, counts) in full, floats to ``digits``
    significant digits (fewer where a table must stay narrow), ``n/a`` where there is none."""
    if x is None:
        return "n/a"
    if isinstance(x, int):
        return str(x)
    return f"{x:.{digits}g}"


def shape_text(shape: Sequence[int], sep: str = ", ") -> str:
    """``(2, 3)``, as NumPy prints a shape (``(5)`` for one axis, so an index reads the same);
    ``sep=","`` gives the compact ``(2,3)`` a table column has room for."""
    return "(" + sep.join(str(n) for n in shape) + ")"


def _shape(info: dict[str, Any]) -> str:
    return shape_text(info["shape"])


def _element_lines(label: str, e: Element) -> list[str]:
    return [
        f"{label} at {shape_text(e.index)} (flat {e.flat}): A = {e.a}, B = {e.b}; "
        f"ulp {number_text(e.ulp)}, abs {number_text(e.abs_diff)}, rel {number_text(e.rel_diff)}",
        f"    A bits {e.a_bits} ({e.a_hex})",
        f"    B bits {e.b_bits} ({e.b_hex})",
    ]


def _tolerance_line(r: Report) -> str | None:
    t = r.tolerance
    if t is None:
        return None
    state = "PASS" if t.passed else f"FAIL: {t.n_fail} of {r.n_elements} elements ({t.fraction_fail:.3%})"
    line = f"tolerance {t.preset or 'custom'} (atol {number_text(t.atol)}, rtol {number_text(t.rtol)}): {state}"
    return f"{line}; {passing_tolerance(r)}"


def passing_tolerance(r: Report) -> str:
    """The smallest atol (at the rtol used) or rtol (at the atol used) that passes, in words.

    ``min_tolerance`` is taken over pairs finite on both sides; a NaN or an infinity on one
    side only fails at any tolerance, and the words say so rather than claim a pass.
    """
    m = r.min_tolerance
    rtol = f" or rtol {number_text(m.rtol_at_atol)}" if m.rtol_at_atol is not None else ""
    text = f"would pass at atol {number_text(m.atol_at_rtol)}{rtol}"
    nonfinite = r.n_nan_mismatch + r.n_inf_mismatch
    if nonfinite:
        return f"no tolerance passes its {nonfinite} NaN or inf mismatch(es); the other elements {text}"
    return f"it {text}"


def _body_lines(r: Report) -> list[str]:
    lines = [
        f"A: {_shape(r.a)} {r.a['dtype']}   B: {_shape(r.b)} {r.b['dtype']}"
        + (f"   ref: {_shape(r.ref)} {r.ref['dtype']}" if r.ref else ""),
    ]
    if r.compared_shape is None:
        lines.append("values not compared: the shapes cannot be aligned")
        return lines
    lines.append(
        f"compared {r.n_elements} elements as {r.compared_as}: {r.n_bitwise_diff} differ bitwise; "
        f"max ulp {number_text(r.max_ulp)}, max abs {number_text(r.max_abs_diff)}, "
        f"max rel {number_text(r.max_rel_diff)}"
    )
    if r.first_diff is not None:
        lines += _element_lines("first difference", r.first_diff)
    worst = r.worst.get("abs")
    if worst is not None and (r.first_diff is None or worst.flat != r.first_diff.flat):
        lines += _element_lines("worst (abs)", worst)
    tol = _tolerance_line(r)
    if tol:
        lines.append(tol)
    if r.reference is not None:
        ref = r.reference
        lines.append(
            f"against ref: A rmse {number_text(ref.a_rmse)} (max ulp {number_text(ref.a_max_ulp)}), "
            f"B rmse {number_text(ref.b_rmse)} (max ulp {number_text(ref.b_max_ulp)}); "
            + ("B is rounding-equivalent to A" if ref.equivalent else "B is NOT rounding-equivalent to A")
        )
    return lines


def render_text(r: Report) -> str:
    """The CLI's human output: verdict, numbers, histogram, findings, notes."""
    lines = [verdict_line(r), *_body_lines(r)]
    s = r.stats
    if r.n_bitwise_diff:
        lines.append(
            f"stats: mean abs {number_text(s.mean_abs)}, p99 abs {number_text(s.p99_abs)}, "
            f"p99 rel {number_text(s.p99_rel)}, "
            f"rmse {number_text(s.rmse)}, cosine {number_text(s.cosine)}, snr {number_text(s.snr_db)} dB"
        )
        h = r.ulp_histogram
        cells = [f"{e}: {c}" for e, c in zip(h.edges, h.counts, strict=True) if c]
        if h.nonfinite:
            cells.append(f"non-finite: {h.nonfinite}")
        lines.append("ulp histogram: " + ", ".join(cells))
    for f in r.findings:
        lines += finding_lines(f)
    lines += [f"note: {n}" for n in r.notes]
    return "\n".join(lines) + "\n"


def render_markdown(r: Report) -> str:
    """Compact Markdown for a GitHub issue: verdict, shapes, first difference, tolerance, findings."""
    lines = [f"**Perpendis: {verdict_line(r)}**", "", "```", *_body_lines(r), "```"]
    if r.findings:
        lines.append("")
        for f in r.findings:
            lines += finding_lines(f, "- ")
    if r.notes:
        lines.append("")
        lines += [f"- note: {n}" for n in r.notes]
    return "\n".join(lines) + "\n"
