"""Judging the kept pair: its fold run here, or shared with other workers
(:mod:`perpendis.service.fold`), and its report kept for follow-up questions."""

from __future__ import annotations

from typing import Any

from ..engine.compare import Prepared, prepare
from .fold import FoldCoordinator, Progress
from .session import Session


def judge_kept_pair(session: Session, progress: Progress | None, workers: int) -> dict[str, Any]:
    """Compare the kept pair with its options and keep the report.

    With other workers (``workers`` > 1) and a pair big enough, the fold is shared
    instead: the answer is ``{"fold_jobs": [...]}`` and the session's coordinator
    (:class:`~perpendis.service.fold.FoldCoordinator`) completes it.
    """
    kept = session.pair
    prepared = prepare(kept.a, kept.b, ref=kept.ref, **kept.options)
    coordinator = FoldCoordinator.offer(
        prepared, workers, lambda partial: _reported(session, prepared, partial), progress
    )
    if coordinator is not None:
        session.fold = coordinator
        return {"fold_jobs": coordinator.helper_jobs()}
    if prepared.a is None:
        if progress is not None:
            progress("compare", 1.0)
        return _reported(session, prepared, None)
    partial = prepared.fold(progress=None if progress is None else (lambda f: progress("compare", f)))
    return _reported(session, prepared, partial)


def _reported(session: Session, prepared: Prepared, partial: Any) -> dict[str, Any]:
    """The answer of a comparison of the kept pair: its report, kept for follow-up questions."""
    report = prepared.finish(partial, notes=session.pair.notes)
    session.pair.report = report
    return report_answer(report)


def report_answer(report: Any, **extra: Any) -> dict[str, Any]:
    """A report as the page and the CLI read it: its JSON, Markdown and text."""
    return {"report": report.to_dict(), "markdown": report.to_markdown(), "text": report.to_text(), **extra}
