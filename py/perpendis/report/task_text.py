"""The task section as lines of text, shared by the CLI text, Markdown and the notebook display."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..numerics.figures import percent

if TYPE_CHECKING:
    from .model import TaskResult

VERDICT_WORDS = {
    "unchanged": "UNCHANGED",
    "changed_within_rounding": "changed within rounding",
    "changed": "CHANGED beyond rounding",
}
FLIPS_SHOWN = 5


def _g(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.4g}"


def _row(row: list[int]) -> str:
    return "(" + ", ".join(map(str, row)) + ")"


def task_summary(t: TaskResult) -> str:
    """One line: the kind, where the classes are, the verdict, agreement and KL."""
    topk = ", ".join(f"top-{k} overlap {_g(v)}" for k, v in t.topk.items())
    agreement = "n/a" if t.top1_agreement is None else percent(t.top1_agreement, 2)
    return (
        f"prediction ({t.kind} over axis {t.axis}, {t.classes} classes, {t.rows} rows): {VERDICT_WORDS[t.verdict]}; "
        f"top-1 agrees on {agreement} of rows, {topk}; KL(B‖A) mean {_g(t.kl['mean'])}, "
        f"p99 {_g(t.kl['p99'])}, max {_g(t.kl['max'])} nats"
    )


def offer_lines(offer: dict[str, int] | None) -> list[str]:
    """The line saying a task check is available (``report.task_offer``), or none."""
    if offer is None:
        return []
    return [
        f"task check available: if the last axis ({offer['classes']} entries) holds classes over {offer['rows']} "
        "rows, --classes-axis -1 (task='logits' in Python) says whether the prediction changes"
    ]


def task_lines(t: TaskResult | None) -> list[str]:
    """The summary line, then the first flips and the count of near-ties (empty with no task)."""
    if t is None:
        return []
    lines = [task_summary(t)]
    if t.n_flips:
        lines.append(f"  {t.n_flips} row(s) change top-1, {t.n_flips_beyond_rounding} beyond rounding:")
        for f in t.flips[:FLIPS_SHOWN]:
            relation = "<=" if f["rounding"] else ">"
            lines.append(
                f"    row {_row(f['row'])}: A's top {f['a_top']}, B's top {f['b_top']}; B's margin {_g(f['margin'])} "
                f"{relation} bound {_g(f['bound'])}" + (" (rounding)" if f["rounding"] else "")
            )
        if t.n_flips > FLIPS_SHOWN:
            lines.append(f"    ... and {t.n_flips - FLIPS_SHOWN} more")
    if t.n_near_ties:
        first = ", ".join(_row(x["row"]) for x in t.near_ties[:FLIPS_SHOWN])
        lines.append(f"  {t.n_near_ties} near-tie row(s) keep top-1 but could flip under rounding: {first}")
    if t.skipped_rows:
        lines.append(f"  {t.skipped_rows} row(s) with NaN or +inf skipped")
    return lines
