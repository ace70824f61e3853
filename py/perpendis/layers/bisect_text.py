"""A bisect's report as text: the table of layers and the lines on what it leaves out, the
first failing layer (or why none is named), NaN and the culprit.

Apart from :mod:`.bisect_report`, which holds the result, so that the result's own module
stays about what was found; the CLI and the notebook (:mod:`.bisect_html`) read this text.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from ..numerics.figures import percent
from ..report.table import table_lines
from ..report.text import number_text, shape_text

if TYPE_CHECKING:
    from .bisect_report import BisectReport, Pair


def report_text(result: BisectReport, verbose: bool = False) -> str:
    """:meth:`BisectReport.to_text`: the table of layers, then what it leaves out and what it found."""
    isolated = any(p.isolated is not None for p in result.pairs)
    header = ["", "A", "B", "by", "op", "max ulp", "max rel", "cosine", "SQNR dB", "verdict"]
    header += ["alone"] if isolated else []
    if verbose:
        header += ["shape", "dtype", "max abs", "fail", "evidence", "finding"]
    first = result.first_failing
    rows = [_row(p, p is first, isolated, verbose) for p in result.pairs]
    lines = table_lines(header, rows) + _left_out_lines(result) + _first_failing_lines(result)
    lines += _nonfinite_lines(result)
    if isolated:
        culprit, sure = result.culprit, result.sure_culprit
        unsure = culprit is not None and sure is not None and sure is not culprit
        lines.append(
            "no layer fails on its own: each one run alone on A's inputs agrees up to rounding"
            if culprit is None
            else "culprit (first layer whose own error fails when run alone): "
            # An unsure pair's own relation may be between two different tensors: not stated.
            f"{culprit.a_name} (B: {culprit.b_name})" + ("" if unsure else _own_text(culprit.isolated))
        )
        if unsure:
            lines.append(
                "that culprit rests on order and shape; the first surely paired layer whose own error "
                f"fails is {sure.a_name} (B: {sure.b_name})" + _own_text(sure.isolated)
            )
    return "\n".join(lines) + "\n"


def _row(p: Pair, first: bool, isolated: bool, verbose: bool) -> list[str]:
    """One pair's row of :meth:`BisectReport.to_text`'s table."""
    s = p.summary()
    finding = s["finding"]
    cosine, sqnr = s["cosine"], s["sqnr_db"]
    row = [
        ">>" if first else "?" if p.likely_mispaired else "",
        p.a_name if verbose else _elide(p.a_name, 34),
        "=" if p.b_name == p.a_name else p.b_name if verbose else _elide(p.b_name, 18),
        {"order and shape": "values", "metadata": "scope"}.get(p.paired_by, p.paired_by)
        + ("" if p.confidence == "high" else f" ({p.confidence})"),
        p.op_type or "",
        number_text(s["max_ulp"], 3),
        number_text(s["max_rel_diff"], 3),
        "" if cosine is None else f"{cosine:.6f}",
        "∞" if sqnr is None and cosine is not None else number_text(sqnr, 3),
        s["verdict"],
        *([_alone_text(p.isolated)] if isolated else []),
    ]
    if verbose:
        row += [
            "=" if s["shape_match"] else f"{shape_text(s['shape_a'], ',')}≠{shape_text(s['shape_b'], ',')}",
            "=" if s["dtype_match"] else f"{s['dtype_a']}≠{s['dtype_b']}",
            number_text(s["max_abs_diff"], 3),
            "n/a" if s["fraction_fail"] is None else percent(s['fraction_fail'], 2),
            p.evidence or "",
            "" if finding is None else finding["message"],
        ]
    return row


def _left_out_lines(result: BisectReport) -> list[str]:
    """What the table does not show: unpaired layers, copies, likely mispairings, skipped layers."""
    lines = []
    for side, unpaired in (("A", result.only_a), ("B", result.only_b)):
        if unpaired:
            lines.append(f"only in {side} ({len(unpaired)}): {few(unpaired, 10)}")
    if result.repeats:
        copies = [f"{name} (= {source})" for name, source in result.repeats.items()]
        lines.append(f"not compared, copies of the tensor before them (eval Dropout, Identity): {few(copies, 6)}")
    doubtful = [p.a_name for p in result.pairs if p.likely_mispaired]
    if doubtful:
        lines.append(
            f"likely mispaired (paired by order and shape alone, failing between agreeing layers; "
            f"give --map to pair them): {few(doubtful, 6)}"
        )
    if result.only:
        lines.append(f"layers named {' or '.join(result.only)} only: {result.n_skipped} other paired layer(s) skipped")
    return lines


def _first_failing_lines(result: BisectReport) -> list[str]:
    """The first failing layer, and the first surely paired one when the first rests on order and shape."""
    first = result.first_failing
    ordered = [f"order: {result.order_note}"] if result.order_note and result.order != "unknown" else []
    if result.order == "unknown" and result.failing:
        failing = result.failing
        return [f"failing layers ({len(failing)}), in the file's order: {few((p.a_name for p in failing), 10)}",
                f"no first failing layer: {result.order_note or 'the order the layers ran in is unknown'}"]
    if first is None:
        doubtful = sum(p.likely_mispaired for p in result.pairs)
        return [
            f"no layer fails: all {len(result.pairs) - doubtful} paired layers agree up to rounding"
            + (f" ({doubtful} likely mispaired, above, set aside)" if doubtful else ""),
            *ordered,
        ]
    names = first.a_name if first.b_name == first.a_name else f"{first.a_name} (B: {first.b_name})"
    lines = [*ordered, f"first failing layer: {names}"]
    sure = result.first_sure_failing
    if sure is not first:
        lines.append(
            f"unsure: that pair rests on order and shape ({first.evidence or 'no agreeing values'}); "
            + (
                "no surely paired layer fails"
                if sure is None
                else f"the first surely paired failing layer is {sure.a_name} (B: {sure.b_name})"
            )
        )
    return lines


def _nonfinite_lines(result: BisectReport) -> list[str]:
    """Where NaN or Inf first appear: the first such layer, and the op that made them from finite inputs."""
    lines = []
    bad = result.first_nonfinite
    if bad is not None:
        sides = " and ".join(
            f"{side} holds {bad.figures.get('nonfinite_' + side.lower(), 0)}"
            for side in ("A", "B") if bad.figures.get("nonfinite_" + side.lower())
        )
        lines.append(f"first layer with NaN or Inf: {bad.a_name} (B: {bad.b_name}); {sides}")
    if result.nan_origin is not None:
        o = result.nan_origin
        lines.append(
            f"first op making NaN or Inf from finite inputs: {o['value']} ({o.get('op_type') or 'op'}"
            f"{', in ' + o['module'] if o.get('module') else ''}) on side {o['side']}"
        )
    return lines


def _elide(name: str, width: int) -> str:
    """``name`` cut in its middle to ``width`` characters: a module path's start and its leaf say the most."""
    if len(name) <= width:
        return name
    head = (width - 1) // 2
    return name[:head] + "…" + name[-(width - 1 - head):]


def _own_text(isolated: dict[str, Any] | None) -> str:
    """The culprit's own relation, as its layer run alone states it (nothing when it has none)."""
    finding = (isolated or {}).get("finding")
    return f"; run alone: {finding['message']}" if finding else ""


def _alone_text(isolated: dict[str, Any] | None) -> str:
    """The own-error cell: the layer run alone, or why it could not be."""
    if isolated is None:
        return ""
    if isolated.get("verdict") is None:
        return "—"
    own = "OWN" if isolated["verdict"] == "investigate" else "ok"
    return f"{own} {number_text(isolated.get('max_ulp'), 3)} ulp"


def few(names: Iterable[str], limit: int = 5) -> str:
    """A few names for a message (``'a', 'b' and 3 more``): a long capture's list would bury it."""
    names = list(names)
    shown = ", ".join(repr(n) for n in names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "") if names else "nothing"
