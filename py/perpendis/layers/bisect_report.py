"""The result of a bisect: each paired layer with its report, and the run-by-layer table.

Apart from :mod:`perpendis.bisect`, which makes them, because what a bisect found is read
by more than the code that finds it: the CLI's table, the notebook display
(:mod:`perpendis.bisect_html`), the page's JSON and ``capture.isolate``, which runs layers
alone and writes their own error into the pairs.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..report.headline import main_finding
from ..report.model import Report, plain
from .bisect_text import few, report_text  # noqa: F401  (few is re-exported)


@dataclass
class Pair:
    """One paired layer: its names, how they were paired, and its full report."""

    a_name: str
    b_name: str
    paired_by: str  # "mapping", "metadata", "name" or "order and shape"
    report: Report
    op_type: str | None = None  # of the ONNX value, when a side records it
    module: str | None = None  # the PyTorch module the tensor is the output of
    isolated: dict[str, Any] | None = None  # the layer run alone on A's inputs: see capture.isolate
    evidence: str | None = None  # what the pairing stands on (a scope, the names, agreeing values)
    confidence: str = "high"  # "high", "medium" or "low": see pairing.pair
    likely_mispaired: bool = False  # failing, paired by order and shape alone, between agreeing layers
    figures: dict[str, float | None] = field(default_factory=dict)  # cosine, sqnr_db: see similarity

    @property
    def verdict(self) -> str:
        return self.report.verdict

    @property
    def fails(self) -> bool:
        return self.report.verdict == "investigate" and not self.likely_mispaired

    @property
    def own_fails(self) -> bool:
        """Run alone on the other side's inputs (``isolated``), the layer's own error fails."""
        return bool(self.isolated) and self.isolated.get("verdict") == "investigate" and not self.likely_mispaired

    @property
    def sure(self) -> bool:
        """Paired by a rule that names the layer (mapping, scope, name), or by values that agree surely."""
        return self.paired_by != "order and shape" or self.confidence == "high"

    def summary(self) -> dict[str, Any]:
        r = self.report
        t = r.tolerance
        return {
            "shape_match": r.shape_match,
            "dtype_match": r.dtype_match,
            "shape_a": list(r.a["shape"]),
            "shape_b": list(r.b["shape"]),
            "dtype_a": r.a["dtype"],
            "dtype_b": r.b["dtype"],
            "max_ulp": r.max_ulp,
            "max_abs_diff": r.max_abs_diff,
            "max_rel_diff": r.max_rel_diff,
            "fraction_fail": t.fraction_fail if t is not None else None,
            "verdict": r.verdict,
            "finding": plain(main_finding(r.findings)),
            "cosine": self.figures.get("cosine"),
            "sqnr_db": self.figures.get("sqnr_db"),
        }

    def to_dict(self) -> dict[str, Any]:
        full = self.report.to_dict()
        summary = {k: full.get(k, v) for k, v in self.summary().items()}  # JSON-safe floats
        return {
            "a_name": self.a_name,
            "b_name": self.b_name,
            "paired_by": self.paired_by,
            "op_type": self.op_type,
            "module": self.module,
            "isolated": self.isolated,
            "evidence": self.evidence,
            "confidence": self.confidence,
            "likely_mispaired": self.likely_mispaired,
            **summary,
            "report": full,
        }


@dataclass
class BisectReport:
    """Every paired layer in A's order, the tensors left unpaired, and the first failure."""

    pairs: list[Pair]
    only_a: list[str] = field(default_factory=list)
    only_b: list[str] = field(default_factory=list)
    only: list[str] = field(default_factory=list)  # name patterns the compared layers were picked by
    n_skipped: int = 0  # paired layers whose A name matched none of them, not compared
    repeats: dict[str, str] = field(default_factory=dict)  # unpaired name → the earlier tensor it copies
    nan_origin: dict[str, Any] | None = None  # the first op making NaN/Inf from finite inputs: see nan_origin
    # Where the rows' order comes from: "capture" (A's file kept it), "model" (the ONNX graph's, A's file
    # kept none), "user" (rows put in order by hand) or "unknown": then no layer is named first (bisect_order).
    order: str = "capture"
    order_note: str | None = None  # why the order is the model's or unknown, and how to give it

    @property
    def in_order(self) -> list[Pair]:
        """The pairs, when their order is the run's; none when it is unknown, so nothing is "first"."""
        return [] if self.order == "unknown" else self.pairs

    @property
    def failing(self) -> list[Pair]:
        """Every failing pair, in the rows' order (whether or not that order is known)."""
        return [p for p in self.pairs if p.fails]

    @property
    def first_nonfinite(self) -> Pair | None:
        """The first layer holding a NaN or an infinity on either side (those before it are finite)."""
        return next((p for p in self.in_order if p.figures.get("nonfinite_a") or p.figures.get("nonfinite_b")), None)

    @property
    def first_failing(self) -> Pair | None:
        return next((p for p in self.in_order if p.fails), None)

    @property
    def first_sure_failing(self) -> Pair | None:
        """The first failing layer whose pair is sure (not made by values without sure agreement):
        where the first failing one is unsure, the first place the failure is certainly seen."""
        return next((p for p in self.in_order if p.fails and p.sure), None)

    @property
    def must_investigate(self) -> bool:
        return bool(self.failing)

    @property
    def culprit(self) -> Pair | None:
        """The first layer whose own error fails when run alone (None until layers are isolated)."""
        return next((p for p in self.in_order if p.own_fails), None)

    @property
    def sure_culprit(self) -> Pair | None:
        """The first surely paired layer whose own error fails: where the culprit rests on order
        and shape alone, the first place a layer's own error certainly fails."""
        return next((p for p in self.in_order if p.own_fails and p.sure), None)

    def to_dict(self) -> dict[str, Any]:
        first = self.first_failing
        return {
            "pairs": [p.to_dict() for p in self.pairs],
            "only_a": list(self.only_a),
            "only_b": list(self.only_b),
            "only": list(self.only),
            "n_skipped": self.n_skipped,
            "repeats": dict(self.repeats),
            "pairing": self.pairing(),
            "first_nonfinite": None
            if (bad := self.first_nonfinite) is None
            else {
                "a_name": bad.a_name, "b_name": bad.b_name, "index": self.pairs.index(bad),
                "nonfinite_a": bad.figures.get("nonfinite_a", 0), "nonfinite_b": bad.figures.get("nonfinite_b", 0),
            },
            "nan_origin": self.nan_origin,
            "likely_mispaired": [p.a_name for p in self.pairs if p.likely_mispaired],
            "order": self.order,
            "order_note": self.order_note,
            "failing": [p.a_name for p in self.failing],
            "first_failing": None
            if first is None
            else {"a_name": first.a_name, "b_name": first.b_name, "index": self.pairs.index(first)},
            "isolated": any(p.isolated is not None for p in self.pairs),
            "first_sure_failing": None
            if (sure := self.first_sure_failing) is None or sure is first
            else {"a_name": sure.a_name, "b_name": sure.b_name, "index": self.pairs.index(sure)},
            "culprit": None if (culprit := self.culprit) is None else self._blamed(culprit),
            "sure_culprit": None
            if (sure_culprit := self.sure_culprit) is None or sure_culprit is culprit
            else self._blamed(sure_culprit),
        }

    def _blamed(self, pair: Pair) -> dict[str, Any]:
        """A culprit's names, row and own relation, for the JSON answer."""
        return {"a_name": pair.a_name, "b_name": pair.b_name, "index": self.pairs.index(pair),
                "finding": (pair.isolated or {}).get("finding")}

    def pairing(self) -> dict[str, int]:
        """How the pairs were made, for the page's chip: a count per rule, and how many are unsure
        (made by values with less than sure agreement) or likely mispaired."""
        counts: dict[str, int] = {}
        for p in self.pairs:
            counts[p.paired_by] = counts.get(p.paired_by, 0) + 1
        counts["unsure"] = sum(p.confidence != "high" for p in self.pairs)
        counts["likely_mispaired"] = sum(p.likely_mispaired for p in self.pairs)
        counts["copies"] = len(self.repeats)
        return counts

    def to_json(self, **kwargs: Any) -> str:
        return json.dumps(self.to_dict(), allow_nan=False, **kwargs)

    def to_model_explorer(self, model: str | Path | bytes, metric: str = "verdict") -> dict[str, Any]:
        """Google Model Explorer's node data for the ONNX ``model`` (a path or its bytes): one
        figure per node (``metric``, one of :data:`.model_explorer.METRICS`), to colour the graph by."""
        from .model_explorer import to_model_explorer

        data = model if isinstance(model, bytes) else Path(model).read_bytes()
        return to_model_explorer(self, data, metric)

    def _repr_html_(self) -> str:
        """A notebook shows the table as the page does (:mod:`.bisect_html`), not the dataclass repr."""
        from .bisect_html import bisect_html

        return bisect_html(self)

    def __repr__(self) -> str:
        first = self.first_failing
        return (
            f"<BisectReport: {len(self.pairs)} pairs, "
            + ("no layer fails" if first is None else f"first failing {first.a_name}")
            + ">"
        )

    def to_text(self, verbose: bool = False) -> str:
        """A table of layers that fits 120 columns; ``>>`` marks the first failing row, ``?`` a likely
        mispairing.  ``verbose`` adds shape, dtype, max abs, the failing fraction, how each pair
        was made and the main finding, at full name length (:mod:`.bisect_text`)."""
        return report_text(self, verbose)


@dataclass
class RunsReport:
    """Runs × layers: each cell the verdict and max ULP of that run's layer against the reference."""

    reference: str
    layers: list[str]
    cells: dict[str, list[dict[str, Any] | None]]
    first_failing: dict[str, str | None]

    @property
    def departs_first(self) -> str | None:
        """The run whose first failing layer comes earliest (the first such run on a tie)."""
        position = {name: i for i, name in enumerate(self.layers)}
        failing = [(position[layer], run) for run, layer in self.first_failing.items() if layer is not None]
        return min(failing, key=lambda t: t[0])[1] if failing else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "reference": self.reference,
            "layers": list(self.layers),
            "runs": {run: list(cells) for run, cells in self.cells.items()},
            "first_failing": dict(self.first_failing),
            "departs_first": self.departs_first,
        }
