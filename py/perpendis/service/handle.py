"""One request in, one JSON-ready answer out: parse, plan, run, answer.

:func:`serve` is the service's entry: the request dict is made a typed request once
(:mod:`~perpendis.service.requests`), the input planner decides once how its inputs are
read (:mod:`~perpendis.service.planner`), the operation runs against the worker's
:class:`~perpendis.service.session.Session`, and bad input anywhere on the way becomes the
error answer at the one boundary (:mod:`~perpendis.service.boundary`).

What only some requests need is imported by the first of them: bisecting
(:mod:`~perpendis.service.captures`, and through it :mod:`perpendis.bisect`), streaming
(:mod:`perpendis.stream`) and checkpoints (:mod:`perpendis.checkpoints`), so that the
worker's start and a first comparison load none of it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from . import heap, pairs, requests, views
from .boundary import answering
from .fold import FoldCoordinator, Progress, Step
from .judge import report_answer
from .planner import Captures, Files, StreamedPair, plan
from .requests import Request, bisect_keywords
from .session import Session


def _reserve(
    session: Session, request: requests.ReserveRequest, payloads: Mapping[str, Any], progress: Progress | None,
    workers: int,
) -> dict[str, Any]:
    return {"reserved": heap.reserve(request.bytes)}


def _bisecting(name: str) -> Callable[..., dict[str, Any]]:
    """The operation ``name`` of :mod:`~perpendis.service.captures`, imported when first run."""

    def run(*args: Any) -> dict[str, Any]:
        from . import captures

        return getattr(captures, name)(*args)

    return run


OPERATIONS: dict[type, Callable[..., dict[str, Any]]] = {
    requests.ReserveRequest: _reserve,
    requests.CompareRequest: pairs.compare_boxes,
    requests.RejudgeRequest: pairs.rejudge,
    requests.ElementRequest: views.element,
    requests.StepRequest: views.step,
    requests.SliceRequest: views.pooled_slice,
    requests.ScatterRequest: views.scatter,
    requests.BisectRequest: _bisecting("bisect_boxes"),
    requests.BisectPairRequest: _bisecting("open_pair"),
    requests.BisectOrderRequest: _bisecting("reorder"),
    requests.ModelExplorerRequest: _bisecting("model_explorer"),
    requests.RunsRequest: _bisecting("runs"),
}
"""Each typed request's operation: ``(session, request, payloads, progress, workers) -> answer``."""

SESSION = Session()
"""The worker's session (one worker, one session); tests may pass their own."""


def serve(
    request: Mapping[str, Any] | Request,
    payloads: Mapping[str, Any],
    files: Files | None = None,
    progress: Progress | None = None,
    workers: int = 1,
    ahead: Mapping[str, np.ndarray] | None = None,
    *,
    session: Session = SESSION,
) -> dict[str, Any]:
    """Run one worker request (``docs/contracts.md``); bad input becomes ``{"ok": False, "error": ...}``.

    ``payloads`` maps the keys in ``inputs`` to bytes copied in; ``files`` maps keys to
    ``(read, size)`` of files handed over unread; ``ahead`` holds files already read whole,
    by key.  ``progress(stage, fraction)`` is called while comparing.  ``workers`` > 1
    lets a big comparison answer ``{"ok": True, "fold_jobs": [...]}``: the session's
    :class:`~perpendis.service.fold.FoldCoordinator` then says what the helpers fold, and
    its :meth:`~perpendis.service.fold.FoldCoordinator.answer` is the answer.  A request
    naming an unknown op is a bug in the worker (:class:`ValueError`), as is any exception
    other than :class:`~perpendis.errors.InputError`: they propagate.  A front end in Python
    (the CLI) passes the typed request it built instead of a dict: the same planner, ops and
    boundary answer it.
    """
    session.fold = session.checkpoints = None

    def run() -> dict[str, Any]:
        typed = request if isinstance(request, Request) else requests.parse(request)
        return {"ok": True, **_run(session, typed, payloads, files or {}, progress, workers, ahead)}

    result = answering(run)
    if "fold_jobs" in result and session.fold is not None:
        session.fold.head = {k: v for k, v in result.items() if k not in ("fold_jobs", "stream")}
    return result


def answer_fold(found: Any = None, *, session: Session = SESSION) -> dict[str, Any]:
    """The answer of the shared fold the last request started, through the one boundary."""
    coordinator = session.fold
    if coordinator is None:
        raise RuntimeError("no shared fold is waiting for its answer")
    try:
        return answering(lambda: coordinator.answer(found))
    finally:
        if coordinator.step is Step.ANSWERED:  # a step out of order leaves the fold as it was
            session.fold = None


def answer_checkpoints(*, session: Session = SESSION) -> dict[str, Any]:
    """The answer of the checkpoint comparison the last request shared, once every unit is folded."""
    from .checkpoints import answer_of

    fold = session.checkpoints
    if fold is None:
        raise RuntimeError("no shared checkpoint comparison is waiting for its answer")
    session.checkpoints = None
    return answering(lambda: {"ok": True, **answer_of(fold.report()), "shared": fold.units_done()})


def _run(
    session: Session,
    request: Request,
    payloads: Mapping[str, Any],
    files: Files,
    progress: Progress | None,
    workers: int,
    ahead: Mapping[str, np.ndarray] | None,
) -> dict[str, Any]:
    if isinstance(request, requests.CheckpointsRequest):
        # Folders of shards, each read tensor by tensor through its reader: never in memory whole.
        from .checkpoints import answer as checkpoints_answer

        if request.opened is not None:
            from .checkpoints import answer_opened

            return answer_opened(request.opened, request.options)
        answer = checkpoints_answer(request.inputs, request.rename, request.options, files, progress, workers)
        if isinstance(answer, dict):
            return answer
        session.checkpoints = answer
        return {"checkpoint_units": answer.unit_jobs()}
    job = plan(request, payloads, files, ahead)
    if isinstance(job, Captures):
        from . import captures

        if isinstance(request, requests.BisectRequest):
            return captures.bisect_entries(session, job.a, job.b, bisect_keywords(request), progress)
        return captures.switch_to_bisect(session, job.a, job.b, bisect_keywords(request), progress)
    if isinstance(job, StreamedPair):
        return _streamed(session, request, job, progress, workers)
    return OPERATIONS[type(request)](session, request, job.payloads, progress, workers)


def _streamed(
    session: Session, request: requests.CompareRequest, job: StreamedPair, progress: Progress | None, workers: int
) -> dict[str, Any]:
    """Two big ``.npy`` files compared chunk by chunk: the pair is not kept, and the answer
    says ``"streamed": true``.  Shared, the answer names the files' payload keys
    (``stream``): each helper reads its share of them itself."""
    from ..engine.stream import prepare_sources

    prepared = prepare_sources(job.a, job.b, request.options)
    coordinator = FoldCoordinator.offer(
        prepared, workers, lambda partial: report_answer(prepared.finish(partial), text=request.text, streamed=True),
        progress,
        stage="streaming",
    )
    if coordinator is not None:
        session.fold = coordinator
        return {"fold_jobs": coordinator.helper_jobs(), "stream": {**job.keys, "void": json.dumps(request.void_format)}}
    streaming = None if progress is None else (lambda fraction: progress("streaming", fraction))
    return report_answer(prepared.finish(prepared.fold(progress=streaming)), text=request.text, streamed=True)
