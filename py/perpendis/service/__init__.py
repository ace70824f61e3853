"""The service layer: the one boundary between the page's workers and the engine.

The flow of one request::

    page ──▶ worker (app/worker.js: moves bytes, no Python in JavaScript)
         ──▶ service.bridge.CoreWorker        plain data in: JSON, byte views, Blobs
         ──▶ service.requests.parse           one typed, frozen request per op, checked once
         ──▶ service.planner.plan             every input a reader; one decision:
                                              InMemoryPair | StreamedPair | Captures
         ──▶ service.pairs / views / captures the operation, on the worker's Session
         ──▶ engine: compare, stream, bisect, diagnose          ──▶ Report
         ──▶ service.boundary.answering       the one place InputError becomes an answer
         ──▶ worker ──▶ page (render)

A comparison big enough to share is folded by the core's worker and its helpers, as the
:class:`~perpendis.service.fold.FoldCoordinator` says, step by step.
"""

from __future__ import annotations

from typing import Any

__all__ = ["SESSION", "Session", "answer_fold", "serve"]


def __getattr__(name: str) -> Any:
    """The service's entry points, imported on first use: the page's workers import
    :mod:`~perpendis.service.bridge` at start, which must not pull in the engine."""
    if name in ("SESSION", "answer_fold", "serve"):
        from . import handle

        return getattr(handle, name)
    if name == "Session":
        from .session import Session

        return Session
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
