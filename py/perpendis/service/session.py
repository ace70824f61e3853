"""What follow-up questions need between requests: one :class:`Session` per worker.

A comparison keeps its pair and report (:class:`KeptPair`) so that the page can rejudge
it with another tolerance or ask about one element, a 2-D slice or a scatter sample
without sending the inputs again; a bisect keeps its pairs of lazy entries
(:class:`Bisected`) so that one row can be opened; a comparison whose fold is shared with
other workers keeps its :class:`~perpendis.service.fold.FoldCoordinator` until answered.
Nothing else is held between requests.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ..engine.options import ComparisonOptions
from ..errors import InputError
from ..inputs.tensor import Tensor
from ..report.model import Report
from .fold import FoldCoordinator

if TYPE_CHECKING:  # the ONNX reader is imported by the first bisect with a model, not at the worker's start
    from ..inputs.formats.onnx_model import Graph

FRESH_OPS = ("compare", "bisect", "runs")
"""Ops that replace the kept pair or captures with new ones."""


@dataclass
class KeptPair:
    """The last compared pair: its tensors, the options it was judged with, extra notes, its report."""

    a: Tensor
    b: Tensor
    ref: Tensor | None
    options: ComparisonOptions
    notes: list[str] = field(default_factory=list)
    report: Report | None = None
    scales: dict[tuple[Any, ...], tuple[float, float]] = field(default_factory=dict)
    """The heat map's colour scale per metric and tolerance (views.metric_scale), measured once."""


@dataclass
class Bisected:
    """The last bisect: its result (reports hold no tensors), its pairs of entries in order, the
    keywords of :func:`~perpendis.layers.bisect.bisect` it ran with (``options`` the comparison options),
    and the ONNX graph dropped beside the captures, whose node names Model Explorer's node data needs."""

    result: Any
    pairs: list[tuple[Any, Any]]
    options: dict[str, Any]
    graph: Graph | None = None


@dataclass
class Session:
    pair: KeptPair | None = None
    bisected: Bisected | None = None
    fold: FoldCoordinator | None = None
    checkpoints: Any = None  # a checkpoint comparison the workers fold (perpendis.checkpoints.shared.CheckpointFold)

    def forget(self, op: object) -> None:
        """Drop what the last comparison kept when ``op`` replaces it, before its inputs arrive.

        The worker calls this before copying a new request's bytes in, so the heap the old
        pair held is reused rather than grown: a second comparison of 2 × 64 MB then neither
        holds both pairs at once nor faults in fresh pages for the new one.
        """
        if op in FRESH_OPS:
            self.pair = self.bisected = self.fold = None

    def report(self) -> Report:
        """The kept pair's report; :class:`InputError` when nothing has been compared."""
        if self.pair is None or self.pair.report is None:
            raise InputError("nothing has been compared yet: compare two inputs first")
        return self.pair.report

    def flat_arrays(self) -> tuple[Report, np.ndarray, np.ndarray]:
        """The report and the aligned elements of A and B, flat."""
        report = self.report()
        aligned = report.aligned
        if aligned is None or aligned.a is None:
            raise InputError("the shapes could not be aligned, so there are no compared elements to show")
        return report, aligned.a.reshape(-1), aligned.b.reshape(-1)

    def bisect(self) -> Bisected:
        if self.bisected is None:
            raise InputError("nothing has been bisected yet: bisect two captures first")
        return self.bisected
