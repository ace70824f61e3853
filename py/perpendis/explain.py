"""The one-screen explanation of a comparison: what a failing ``assert_same`` shows.

A full :func:`~perpendis.report.render_text` report runs to a screen or more; in a pytest
failure only the verdict, its headline, the top finding (where it is, what likely caused
it) and the bits at the first difference fit above the traceback. The rest is in the files
``--perpendis-report`` writes.

The helpers that read a finding's ``where`` and ``causes`` and the report's headline accept
both the structured fields of the findings contract (``where`` an object with ``text``,
``causes`` a ranked list, ``Report.headline``) and a report that predates them (``where`` a
plain string, no causes, no headline), so reports saved as JSON earlier still render.
"""

from __future__ import annotations

from typing import Any

from .report import Finding, Report, _element_lines, main_finding, number_text, shape_text

MAX_CAUSES = 3  # causes shown on one screen; the HTML and JSON keep them all


def headline_text(r: Report) -> str | None:
    """The report's one-sentence headline (``Report.headline``), or None for a report without one."""
    return getattr(r, "headline", None) or None


def verdict_text(r: Report) -> str:
    """``INVESTIGATE: headline``: the verdict's word, then the headline, its own first word
    left out where it repeats the verdict's (``Rounding: ...``)."""
    word = r.verdict.upper()
    text = headline_text(r)
    if not text:
        return word
    if text.lower().startswith(r.verdict + ": "):
        text = text[len(r.verdict) + 2 :]
    return f"{word}: {text}"


def where_text(f: Finding) -> str | None:
    """Where a finding was seen, as a short phrase (``"channel 5 (axis 1)"``), or None."""
    where: Any = f.where
    if where is None or isinstance(where, str):
        return where or None
    if isinstance(where, dict):
        text = where.get("text")
        if text:
            return str(text)
        if where.get("element") is not None:
            return f"at {shape_text(where['element'])}"
        if where.get("axis") is not None:
            return f"axis {where['axis']}"
        return None
    return getattr(where, "text", None) or None


def causes_of(f: Finding) -> list[str]:
    """The finding's ranked likely causes (empty when it names none)."""
    return [str(c) for c in (getattr(f, "causes", None) or [])]


def explain(r: Report) -> str:
    """Verdict and headline, shapes and dtypes, the top finding with where and causes, the
    first difference's bits."""
    lines = [
        f"Perpendis: {verdict_text(r)}",
        f"A {shape_text(r.a['shape'])} {r.a['dtype']}, B {shape_text(r.b['shape'])} {r.b['dtype']}"
        + (f": {r.n_bitwise_diff} of {r.n_elements} elements differ bitwise" if r.compared_shape is not None else ""),
    ]
    top = main_finding(r.findings)
    if top is not None:
        where = where_text(top)
        lines.append(f"top finding [{top.severity}] {top.message}" + (f" (at {where})" if where else ""))
        causes = causes_of(top)
        if causes:
            lines.append("  likely causes: " + "; ".join(causes[:MAX_CAUSES]))
        more = len(r.findings) - 1
        if more:
            lines.append(f"  and {more} more finding(s)")
    if r.first_diff is not None:
        lines += _element_lines("first difference", r.first_diff)
    t = r.tolerance
    if t is not None and not t.passed:
        lines.append(
            f"tolerance {t.preset or 'custom'} (atol {number_text(t.atol)}, rtol {number_text(t.rtol)}): "
            f"{t.n_fail} of {r.n_elements} elements fail"
        )
    return "\n".join(lines) + "\n"
