"""A bisect result as HTML for a notebook cell: the page's bisect table, without its script.

``BisectReport._repr_html_`` renders this, so ``perpendis.check_export(...)`` shown in a
notebook reads as the page shows it: the summary (first failing layer, culprit, first NaN),
then one row per pair in the capture's order with how it was paired, its figures (max
ULP, max relative, cosine, SQNR) and verdict, the first failing row marked.  Built with
:func:`html.escape`, styled under one class so the notebook's styles and ours do not mix.
"""

from __future__ import annotations

from html import escape
from typing import TYPE_CHECKING

from ..report.text import number_text

if TYPE_CHECKING:
    from .bisect_report import BisectReport, Pair

ROOT_CLASS = "perpendis-bisect"
_STYLE = f"""
.{ROOT_CLASS} {{ font: 13px/1.4 system-ui, sans-serif; color: #1b1f24; background: #fff; padding: 0.4em 0.6em; }}
.{ROOT_CLASS} table {{ border-collapse: collapse; }}
.{ROOT_CLASS} th, .{ROOT_CLASS} td {{ padding: 0.15em 0.5em; border-bottom: 1px solid #d8dee4; text-align: left; }}
.{ROOT_CLASS} td.num {{ text-align: right; font-variant-numeric: tabular-nums; }}
.{ROOT_CLASS} .mono {{ font-family: ui-monospace, monospace; }}
.{ROOT_CLASS} tr.first-failing {{ background: #fde7e5; font-weight: 600; }}
.{ROOT_CLASS} tr.mispaired {{ color: #6b7682; font-style: italic; }}
.{ROOT_CLASS} .investigate {{ color: #b3261e; }}
.{ROOT_CLASS} .rounding {{ color: #2f6aa8; }}
.{ROOT_CLASS} .identical {{ color: #2a7a3b; }}
.{ROOT_CLASS} .how {{ color: #4a5562; font-size: 0.9em; }}
"""
_HOW = {"order and shape": "values", "metadata": "scope"}


def _cell(text: object, cls: str = "", title: str | None = None) -> str:
    attributes = (f' class="{cls}"' if cls else "") + (f' title="{escape(title)}"' if title else "")
    return f"<td{attributes}>{escape(str(text))}</td>"


def _row(p: Pair, first: Pair | None, isolated: bool) -> str:
    s = p.summary()
    cls = "first-failing" if p is first else "mispaired" if p.likely_mispaired else ""
    how = _HOW.get(p.paired_by, p.paired_by) + ("" if p.confidence == "high" else f" ({p.confidence})")
    cosine, sqnr = s["cosine"], s["sqnr_db"]
    alone = ""
    if isolated:
        iso = p.isolated or {}
        alone = "—" if iso.get("verdict") is None else ("own error" if iso["verdict"] == "investigate" else "ok")
    cells = [
        _cell(">>" if p is first else "?" if p.likely_mispaired else ""),
        _cell(p.a_name, "mono"),
        _cell("=" if p.b_name == p.a_name else p.b_name, "mono"),
        _cell(how, "how", p.evidence),
        _cell(p.op_type or "", "mono"),
        _cell(number_text(s["max_ulp"], 3), "num"),
        _cell(number_text(s["max_rel_diff"], 3), "num"),
        _cell("" if cosine is None else f"{cosine:.6f}", "num"),
        _cell("∞" if sqnr is None and cosine is not None else number_text(sqnr, 3), "num"),
        _cell(s["verdict"], s["verdict"]),
        *([_cell(alone)] if isolated else []),
    ]
    return f'<tr class="{cls}">' + "".join(cells) + "</tr>"


def bisect_html(result: BisectReport) -> str:
    """The fragment: a summary, the table of pairs and the summary lines of the text report."""
    first = result.first_failing
    isolated = any(p.isolated is not None for p in result.pairs)
    header = ["", "A", "B", "paired by", "op", "max ULP", "max rel", "cosine", "SQNR dB", "verdict"]
    header += ["alone"] if isolated else []
    lines = result.to_text().splitlines()
    notes = [line for line in lines if not line.startswith((" ", ">>", "?")) and line.strip()]
    return (
        f'<div class="{ROOT_CLASS}"><style>{_STYLE}</style>'
        + "".join(f"<p>{escape(line)}</p>" for line in notes)
        + "<table><thead><tr>"
        + "".join(f"<th>{escape(h)}</th>" for h in header)
        + "</tr></thead><tbody>"
        + "".join(_row(p, first, isolated) for p in result.pairs)
        + "</tbody></table></div>"
    )
