"""The one-screen explanation of a comparison: what a failing ``assert_same`` shows.

A full :func:`~perpendis.report.text.render_text` report runs to a screen or more; in a pytest
failure only the verdict with its headline, the shapes and dtypes, the top finding (where it
is, what likely caused it) and the bits at the first difference fit above the traceback. The
rest is in the files ``--perpendis-report`` writes.
"""

from __future__ import annotations

from ..numerics.figures import count
from .headline import main_finding
from .model import Element, Report
from .text import _element_lines, judged_of, number_text, shape_text, verdict_line

MAX_CAUSES = 3  # causes shown on one screen; the HTML and JSON keep them all


def explain(r: Report) -> str:
    """Verdict and headline, shapes and dtypes, the top finding with where and causes, the
    first difference's bits (and the first failing element's, when that is another)."""
    lines = [
        f"Perpendis: {verdict_line(r)}",
        f"A {shape_text(r.a['shape'])} {r.a['dtype']}, B {shape_text(r.b['shape'])} {r.b['dtype']}"
        + (
            f": {count(r.n_bitwise_diff)} of {count(r.n_elements)} elements differ bitwise"
            if r.compared_shape is not None
            else ""
        ),
    ]
    top = main_finding(r.findings)
    if top is not None:
        # The headline is often the top finding's message: then its kind is enough here.
        said = top.message.lower().rstrip(".") in r.headline.lower()
        where = f" at {top.where_text}" if top.where_text else ""
        lines.append(f"top finding [{top.severity}] {top.kind if said else top.message}{where}")
        if top.causes:
            lines.append("  likely causes: " + "; ".join(top.causes[:MAX_CAUSES]))
        more = len(r.findings) - 1
        if more:
            lines.append(f"  and {more} more finding(s)")
    worst = _worst(r)
    if worst is not None:
        # As torch.testing.assert_close names it ("Greatest absolute difference: 0.987 at index (3, 5)").
        label = "greatest failing difference" if r.tolerance is not None and not r.tolerance.passed else (
            "greatest absolute difference")
        lines.append(f"{label}: {number_text(worst.abs_diff)} at index {shape_text(worst.index)}: "
                     f"A = {worst.a}, B = {worst.b}, {number_text(worst.ulp)} ulp apart")
    if r.first_diff is not None:
        lines += _element_lines("first difference", r.first_diff)
    t = r.tolerance
    if t is not None and t.first_fail is not None and (r.first_diff is None or t.first_fail.flat != r.first_diff.flat):
        lines += _element_lines("first failing", t.first_fail)  # the first difference was rounding
    if t is not None and not t.passed:
        lines.append(
            f"tolerance {t.preset or 'custom'} (atol {number_text(t.atol)}, rtol {number_text(t.rtol)}): "
            f"{count(t.n_fail)} of {judged_of(r)} fail"
        )
    return "\n".join(lines) + "\n"


def _worst(r: Report) -> Element | None:
    """The element a reader looks at first: the failing one of greatest |A - B| (NaN first,
    as the tolerance's peer chooses it), else the one of greatest |A - B| overall."""
    t = r.tolerance
    if t is not None and t.worst_fail is not None:
        return t.worst_fail
    return r.worst.get("abs")
