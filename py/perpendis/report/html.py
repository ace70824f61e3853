"""The report as HTML: inline in a notebook cell, or as a self-contained page for pytest artefacts.

Both are rendered from the same :class:`~perpendis.report.model.Report` the page and the CLI read,
by string building with :func:`html.escape` (no template engine, no dependency). The
fragment carries its own ``<style>``, scoped under one class so a notebook's styles and
ours do not mix, and draws the ULP histogram as inline SVG. The page wraps the fragment
in a document whose Content-Security-Policy forbids every request: it opens from disk,
needs no server, and fetches nothing (no script, no external stylesheet, font or image).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from html import escape
from typing import TYPE_CHECKING, Any

from ..numerics.figures import count as grouped
from .task_text import FLIPS_SHOWN, offer_lines, task_summary
from .text import number_text, passing_tolerance, shape_text, verdict_line

if TYPE_CHECKING:
    from .model import Element, Finding, Histogram, Report

ROOT_CLASS = "perpendis-report"  # its own colours and background: readable under a dark notebook theme too
# Nothing may be fetched: inline styles are all the page uses.
PAGE_CSP = "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'"

_STYLE = f"""
.{ROOT_CLASS} {{ font: 14px/1.45 system-ui, sans-serif; color: #1b1f24; background: #fff; max-width: 60em;
  padding: 0.5em 0.8em; border-radius: 4px; }}
.{ROOT_CLASS} h3 {{ font-size: 1em; margin: 0.9em 0 0.3em; }}
.{ROOT_CLASS} .verdict {{ display: inline-block; padding: 0.1em 0.6em; border-radius: 0.3em; font-weight: 700;
  color: #fff; letter-spacing: 0.03em; }}
.{ROOT_CLASS} .verdict.identical {{ background: #2a7a3b; }}
.{ROOT_CLASS} .verdict.rounding {{ background: #2f6aa8; }}
.{ROOT_CLASS} .verdict.investigate {{ background: #b3261e; }}
.{ROOT_CLASS} .headline {{ margin: 0.3em 0; font-size: 1.05em; }}
.{ROOT_CLASS} .facts {{ color: #4a5562; margin: 0.2em 0; }}
.{ROOT_CLASS} ul.findings {{ padding-left: 1.2em; margin: 0.2em 0; }}
.{ROOT_CLASS} .sev {{ font-size: 0.8em; font-weight: 700; text-transform: uppercase; margin-right: 0.4em; }}
.{ROOT_CLASS} .sev.error {{ color: #b3261e; }}
.{ROOT_CLASS} .sev.warning {{ color: #8a5a00; }}
.{ROOT_CLASS} .sev.info {{ color: #4a5562; }}
.{ROOT_CLASS} .where {{ font-family: ui-monospace, monospace; background: #eef1f4; padding: 0 0.3em; }}
.{ROOT_CLASS} .causes {{ margin: 0.1em 0 0.4em; color: #4a5562; }}
.{ROOT_CLASS} table {{ border-collapse: collapse; margin: 0.2em 0; }}
.{ROOT_CLASS} td, .{ROOT_CLASS} th {{ padding: 0.1em 0.6em; text-align: left; border-bottom: 1px solid #dde2e7; }}
.{ROOT_CLASS} .mono, .{ROOT_CLASS} .bits {{ font-family: ui-monospace, monospace; }}
.{ROOT_CLASS} .bits .sign {{ color: #7a3ea8; }}
.{ROOT_CLASS} .bits .exponent {{ color: #2f6aa8; }}
.{ROOT_CLASS} .bits .mantissa {{ color: #2a7a3b; }}
.{ROOT_CLASS} .bits .diff {{ background: #ffd7d2; font-weight: 700; }}
.{ROOT_CLASS} svg .bar {{ fill: #2f6aa8; }}
.{ROOT_CLASS} svg .bar.nonfinite {{ fill: #b3261e; }}
.{ROOT_CLASS} svg text {{ font: 10px system-ui, sans-serif; fill: #4a5562; }}
"""

_VERDICT_WORD = {"identical": "IDENTICAL", "rounding": "ROUNDING", "investigate": "INVESTIGATE"}


def render_fragment(report: Report) -> str:
    """The report as one ``<div>`` with its own style: what a notebook cell displays."""
    parts = [
        f'<div class="{ROOT_CLASS}" data-verdict="{escape(report.verdict)}">',
        f"<style>{_STYLE}</style>",
        _verdict(report),
        _findings(report.findings),
        _task(report),
        _first_difference(report.first_diff),
        _worst(report),
        _histogram(report.ulp_histogram),
        _notes(report.notes),
        "</div>",
    ]
    return "\n".join(p for p in parts if p)


def render_page(report: Report, title: str = "Perpendis report") -> str:
    """A whole HTML document around :func:`render_fragment` that makes no request at all."""
    return (
        "<!doctype html>\n"
        '<html lang="en"><head><meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{PAGE_CSP}">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{escape(title)}</title>\n"
        "</head><body>\n"
        f"<h1 style=\"font: 600 1.2em system-ui, sans-serif\">{escape(title)}</h1>\n"
        f"{render_fragment(report)}\n"
        "</body></html>\n"
    )


# ---------------------------------------------------------------------------------------
# Sections.  Each returns "" when it has nothing to show.


def _verdict(r: Report) -> str:
    facts = [
        f"A: {shape_text(r.a['shape'])} {r.a['dtype']}, B: {shape_text(r.b['shape'])} {r.b['dtype']}",
    ]
    if r.compared_shape is not None:
        facts.append(
            f"{grouped(r.n_bitwise_diff)} of {grouped(r.n_elements)} elements differ bitwise "
            f"(compared as {r.compared_as}); "
            f"max ULP {number_text(r.max_ulp)}, max abs {number_text(r.max_abs_diff)}, "
            f"max rel {number_text(r.max_rel_diff)}"
        )
    t = r.tolerance
    if t is not None:
        state = "passes" if t.passed else f"fails at {grouped(t.n_fail)} element(s)"
        state += f" by {t.passed_by}" if t.passed_by else f" ({t.refused})" if t.refused else ""
        facts.append(
            f"tolerance {t.preset or 'custom'} (atol {number_text(t.atol)}, rtol {number_text(t.rtol)}) "
            f"{state}; {passing_tolerance(r)}"
        )
    word = _VERDICT_WORD.get(r.verdict, r.verdict.upper())
    return (
        f'<div><span class="verdict {escape(r.verdict)}">{escape(word)}</span></div>\n'
        # the headline without its leading verdict word, which the badge already shows
        f'<p class="headline">{escape(verdict_line(r).partition(": ")[2])}</p>\n'
        + "".join(f'<p class="facts">{escape(f)}</p>\n' for f in facts)
    )


def _findings(findings: Sequence[Finding]) -> str:
    if not findings:
        return ""
    items = []
    for f in findings:
        where, causes = f.where_text, f.causes
        items.append(
            f'<li data-kind="{escape(f.kind)}"><span class="sev {escape(f.severity)}">{escape(f.severity)}</span>'
            f"{escape(f.message)}"
            + (f' <span class="where">{escape(where)}</span>' if where else "")
            + (
                '<div class="causes">likely causes: ' + "; ".join(escape(c) for c in causes) + "</div>"
                if causes
                else ""
            )
            + "</li>"
        )
    return '<h3>Findings</h3>\n<ul class="findings">' + "".join(items) + "</ul>"


_FLIP_ROWS = 2 * FLIPS_SHOWN  # the table has room for more than a line of text


def _task(r: Report) -> str:
    """The prediction section: the task summary and the first flipped rows (or the offer of one)."""
    t = r.task
    if t is None:
        return "".join(f'<p class="facts">{escape(line)}</p>' for line in offer_lines(r.task_offer))
    rows = "".join(
        f"<tr><td class=\"mono\">{escape(shape_text(f['row']))}</td><td>{f['a_top']}</td><td>{f['b_top']}</td>"
        f"<td>{number_text(f['margin'])}</td><td>{number_text(f['bound'])}</td>"
        f"<td>{'rounding' if f['rounding'] else '<b>beyond rounding</b>'}</td></tr>"
        for f in t.flips[:_FLIP_ROWS]
    )
    table = (
        '<table class="flips"><tr><th>row</th><th>A top</th><th>B top</th><th>B margin</th><th>bound</th>'
        f"<th>judged</th></tr>{rows}</table>"
        if rows else ""
    )
    more = f'<p class="facts">{t.n_flips - _FLIP_ROWS} more flipped rows</p>' if t.n_flips > _FLIP_ROWS else ""
    ties = f'<p class="facts">{t.n_near_ties} near-tie rows keep top-1 but could flip under rounding</p>' \
        if t.n_near_ties else ""
    return f'<h3>Prediction</h3>\n<p class="task {escape(t.verdict)}">{escape(task_summary(t))}</p>{table}{more}{ties}'


def _bit_spans(bits: str, other: str) -> str:
    """Sign, exponent and mantissa groups as spans, the bits that differ from ``other`` marked."""
    groups = bits.split(" ")
    flat_other = other.replace(" ", "")
    names = ("sign", "exponent", "mantissa") if len(groups) == 3 else ("integer",) * len(groups)
    comparable = len(flat_other) == len(bits.replace(" ", ""))
    out, pos = [], 0
    for name, group in zip(names, groups, strict=True):
        cells = []
        for bit in group:
            differs = comparable and flat_other[pos] != bit
            cells.append(f'<span class="diff">{escape(bit)}</span>' if differs else escape(bit))
            pos += 1
        out.append(f'<span class="{name}">{"".join(cells)}</span>')
    return '<span class="bits">' + " ".join(out) + "</span>"


def _first_difference(e: Element | None) -> str:
    if e is None:
        return ""
    return (
        f"<h3>First difference at {escape(shape_text(e.index))}</h3>\n"
        '<table class="element">'
        "<tr><th></th><th>value</th><th>bits (sign exponent mantissa)</th><th>hex</th></tr>"
        f'<tr><th>A</th><td class="mono">{escape(e.a)}</td><td>{_bit_spans(e.a_bits, e.b_bits)}</td>'
        f'<td class="mono">{escape(e.a_hex)}</td></tr>'
        f'<tr><th>B</th><td class="mono">{escape(e.b)}</td><td>{_bit_spans(e.b_bits, e.a_bits)}</td>'
        f'<td class="mono">{escape(e.b_hex)}</td></tr>'
        "</table>\n"
        f'<p class="facts">ULP {number_text(e.ulp)}, abs {number_text(e.abs_diff)}, '
        f"rel {number_text(e.rel_diff)}</p>"
    )


def _worst(r: Report) -> str:
    rows = [(label, e) for label, e in (("abs", r.worst.get("abs")), ("ULP", r.worst.get("ulp")),
                                         ("rel", r.worst.get("rel"))) if e is not None]
    if not rows:
        return ""
    body = "".join(
        f"<tr><th>{label}</th><td class=\"mono\">{escape(shape_text(e.index))}</td>"
        f'<td class="mono">{escape(e.a)}</td><td class="mono">{escape(e.b)}</td>'
        f"<td>{number_text(e.ulp)}</td><td>{number_text(e.abs_diff)}</td><td>{number_text(e.rel_diff)}</td></tr>"
        for label, e in rows
    )
    return (
        "<h3>Worst elements</h3>\n<table class=\"worst\"><tr><th>by</th><th>index</th><th>A</th><th>B</th>"
        f"<th>ULP</th><th>abs</th><th>rel</th></tr>{body}</table>"
    )


def histogram_bins(h: Histogram) -> list[tuple[str, int]]:
    """(label, count) of the bins up to the last one holding an element, then the
    non-finite ones: a histogram of 33 bins where only the first two hold anything is
    mostly empty space."""
    last = max((i for i, c in enumerate(h.counts) if c), default=0)
    bins = list(zip(h.edges[: last + 1], h.counts[: last + 1], strict=True))
    if h.nonfinite:
        bins.append(("NaN/inf", h.nonfinite))
    return bins


def histogram_svg(h: Histogram, width: int = 560, height: int = 240) -> str:
    """The ULP histogram as inline SVG; bar heights on a log scale, as on the page, so a
    single far-off element stays visible beside a million one-ULP ones."""
    bins = histogram_bins(h)
    left, right, top, bottom = 90, 8, 14, 100
    slot = (width - left - right) / len(bins)
    plot = height - top - bottom
    scale = math.log10(1 + max([1, *(c for _, c in bins)]))
    base = height - bottom
    label = "ULP histogram: " + ", ".join(f"{e}: {c}" for e, c in bins)
    out = [
        f'<svg viewBox="0 0 {width} {height}" width="{width}" '
        f'height="{height}" role="img" class="histogram" aria-label="{escape(label)}">',
        f'<line x1="{left}" x2="{width - right}" y1="{base}" y2="{base}" stroke="#8a96a3"/>',
    ]
    for i, (edge, count) in enumerate(bins):
        bar = math.log10(1 + count) / scale * plot
        x = left + i * slot
        cls = "bar nonfinite" if edge == "NaN/inf" else "bar"
        out.append(
            f'<rect class="{cls}" x="{x + slot * 0.1:.1f}" y="{base - bar:.1f}" width="{slot * 0.8:.1f}" '
            f'height="{bar:.1f}" data-edge="{escape(edge)}" data-count="{count}">'
            f"<title>{escape(edge)} ULP: {count} elements</title></rect>"
        )
        if count:
            out.append(f'<text x="{x + slot / 2:.1f}" y="{base - bar - 3:.1f}" text-anchor="middle">{count}</text>')
        if count or i == 0:  # empty bins keep their bar's tooltip; a label each would not fit
            tx, ty = x + slot / 2, base + 10
            out.append(
                f'<text x="{tx:.1f}" y="{ty}" text-anchor="end" transform="rotate(-40 {tx:.1f} {ty})">'
                f"{escape(edge)}</text>"
            )
    out.append(
        f'<text x="{width / 2:.0f}" y="{height - 4}" text-anchor="middle">ULP distance (bar height: log count)</text>'
    )
    out.append("</svg>")
    return "".join(out)


def _histogram(h: Histogram) -> str:
    if not any(h.counts[1:]) and not h.nonfinite:
        return ""  # nothing differs: one bar at 0 tells nothing
    return "<h3>ULP histogram</h3>\n" + histogram_svg(h)


def _notes(notes: Iterable[Any]) -> str:
    items = "".join(f"<li>{escape(str(n))}</li>" for n in notes)
    return f'<h3>Notes</h3>\n<ul class="notes">{items}</ul>' if items else ""
