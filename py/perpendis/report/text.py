"""The report as text for people: the CLI's text and the Markdown renderings, and the
phrases other renderings share (the verdict line, numbers, shapes, the passing tolerance).

Both renderers read only the report's fields.  Kept apart from :mod:`perpendis.report`
(which re-exports them) so that :mod:`perpendis.report_html` and :mod:`perpendis.headline`
read the same phrases without importing the module whose ``Report`` displays through them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..numerics.figures import count, percent
from .paste_back import paste_back_markdown
from .task_text import offer_lines, task_lines

if TYPE_CHECKING:
    from .model import Element, Finding, Report


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
        head = f"[{f.severity}] {f.message}" + (f" {_at(place_text)}" if place_text else "")
    lines = [head]
    if f.causes:
        lines.append(("  " if bullet else "    ") + "likely causes: " + "; ".join(f.causes))
    return lines


def _at(place_text: str) -> str:
    """A place after a message: "at (0, 3)", "at every row …", but "along axis 1" as it is."""
    return place_text if place_text.startswith(("along ", "across ")) else f"at {place_text}"


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


def judged_of(r: Report) -> str:
    """"``n`` elements" or, for complex values judged whole, "``n`` complex values": the
    whole a failing count is out of, in every text."""
    t = r.tolerance
    if t is not None and t.n_judged is not None:
        return f"{count(t.n_judged)} complex values"
    return f"{count(r.n_elements)} elements"


def _tolerance_line(r: Report) -> str | None:
    t = r.tolerance
    if t is None:
        return None
    state = "PASS" if t.passed else f"FAIL: {count(t.n_fail)} of {judged_of(r)} ({percent(t.fraction_fail)})"
    if t.passed and t.passed_by:
        state = f"PASS by {t.passed_by}, though {count(t.n_fail)} of {judged_of(r)} fail its allclose"
    line = f"tolerance {t.preset or 'custom'} (atol {number_text(t.atol)}, rtol {number_text(t.rtol)}): {state}"
    if t.refused:
        line = f"{line}; {t.refused}"
    return f"{line}; {passing_tolerance(r)}"


def passing_tolerance(r: Report) -> str:
    """The smallest atol (at the rtol used) or rtol (at the atol used) that passes, in words.

    ``min_tolerance`` is taken over pairs finite on both sides; a NaN or an infinity A and
    B disagree on (or any NaN, for a preset of equal_nan=False) fails at any tolerance, and
    the words say so rather than claim a pass.
    """
    m = r.min_tolerance
    rtol = f" or rtol {number_text(m.rtol_at_atol)}" if m.rtol_at_atol is not None else ""
    text = f"would pass at atol {number_text(m.atol_at_rtol)}{rtol}"
    nonfinite = m.n_unreachable or r.n_nan_mismatch + r.n_inf_mismatch
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
        f"compared {count(r.n_elements)} elements as {r.compared_as}: {count(r.n_bitwise_diff)} differ bitwise; "
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
    lines += task_lines(r.task) or offer_lines(r.task_offer)
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
    lines += paste_back_markdown(r)
    return "\n".join(lines) + "\n"
