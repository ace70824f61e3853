"""Judging the kept pair: its fold run here, or shared with other workers
(:mod:`perpendis.service.fold`), and its report kept for follow-up questions."""

from __future__ import annotations

from typing import Any

from ..engine.compare import Prepared, prepare
from .fold import FoldCoordinator, Progress
from .session import Session


def judge_kept_pair(session: Session, progress: Progress | None, workers: int, text: bool = False) -> dict[str, Any]:
    """Compare the kept pair with its options and keep the report (``text``: :func:`report_answer`'s).

    With other workers (``workers`` > 1) and a pair big enough, the fold is shared
    instead: the answer is ``{"fold_jobs": [...]}`` and the session's coordinator
    (:class:`~perpendis.service.fold.FoldCoordinator`) completes it.
    """
    kept = session.pair
    prepared = prepare(kept.a, kept.b, kept.options, ref=kept.ref)
    coordinator = FoldCoordinator.offer(
        prepared, workers, lambda partial: _reported(session, prepared, partial, text), progress
    )
    if coordinator is not None:
        session.fold = coordinator
        return {"fold_jobs": coordinator.helper_jobs()}
    if prepared.a is None:
        if progress is not None:
            progress("compare", 1.0)
        return _reported(session, prepared, None, text)
    partial = prepared.fold(progress=None if progress is None else (lambda f: progress("compare", f)))
    return _reported(session, prepared, partial, text)


def _reported(session: Session, prepared: Prepared, partial: Any, text: bool) -> dict[str, Any]:
    """The answer of a comparison of the kept pair: its report, kept for follow-up questions."""
    report = prepared.finish(partial, notes=session.pair.notes)
    session.pair.report = report
    return report_answer(report, text=text)


def report_answer(report: Any, *, text: bool = False, **extra: Any) -> dict[str, Any]:
    """A report as the page reads it: its JSON and Markdown (copied on a click); with ``text``,
    the plain-text report too, which only the CLI prints (building it costs a rendering the
    page would throw away)."""
    out = {"report": report.to_dict(), "markdown": report.to_markdown(), **extra}
    if text:
        out["text"] = report.to_text()
    return out
