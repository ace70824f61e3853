"""Structure tests ("signatures") of a difference: relations that name what kind of bug,
where, and by how much, whatever the tolerance says.

Each module holds one signature: its test on bounded samples, its threshold derived from
the rounding model (:mod:`.model`), its place and ranked causes (:mod:`.causes`);
:mod:`.catalogue` lists them and runs them in order.  :func:`pair_of` builds the bounded
view of a compared report they read.
"""

from __future__ import annotations

import numpy as np

from ...numerics.bits import format_of
from ...report.model import Report
from .sample import Pair


def pair_of(report: Report, depth: float) -> Pair | None:
    """The structure tests' view of a compared report, or None where nothing was compared."""
    if report.compared_shape is None or not report.n_bitwise_diff:
        return None
    fmt = format_of(report.compared_as)
    rows = report.samples.get("diffs")
    if rows is None or len(rows) == 0:
        rows = np.empty((0, 3))
    aligned = report.aligned
    a_store = getattr(aligned, "a", None)
    b_store = getattr(aligned, "b", None)
    shape = tuple(report.compared_shape)
    if a_store is not None and (tuple(np.shape(a_store)) != shape or tuple(np.shape(b_store)) != shape):
        a_store = b_store = None
    return Pair(
        fmt=fmt,
        shape=shape,
        depth=depth,
        b_rms=float(report.samples.get("b_rms", 0.0)),
        diff_flat=rows[:, 0].astype(np.int64) if len(rows) else np.empty(0, np.int64),
        diff_a=rows[:, 1] if len(rows) else np.empty(0),
        diff_b=rows[:, 2] if len(rows) else np.empty(0),
        n_elements=report.n_elements,
        n_diff=report.n_bitwise_diff,
        printed=not (report.a.get("lossless", True) and report.b.get("lossless", True)),
        a_store=a_store,
        b_store=b_store,
        hot={x.axis: [int(t[0]) for t in x.top[:8]] for x in report.axes if x.bucket == 1},
        tolerance=None if report.tolerance is None else (report.tolerance.atol, report.tolerance.rtol),
    )
