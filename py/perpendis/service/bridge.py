"""The named Python entry points the page's workers call, with plain data.

``app/worker.js`` and ``app/fold_worker.js`` only move bytes: they hand these functions
JSON strings, JavaScript byte views and ``Blob`` objects, and send back what they return.
Everything Python does for them lives here, where ruff and pytest see it:

:class:`CoreWorker` (``app/worker.js``)
    Copies a request's buffers into NumPy arrays in one ``memcpy`` each, puts long texts
    back as ``str``, wraps unread files in readers, keeps files read ahead of the click,
    and runs the request through :func:`perpendis.service.handle.serve`; then steps a
    shared fold through the session's :class:`~perpendis.service.fold.FoldCoordinator`.
:class:`HelperWorker` (``app/fold_worker.js``)
    Folds one share (from bytes, or from two unread files) and selects order statistics,
    through :class:`perpendis.service.helper.Helper`.

Each class's methods are those of its table in :mod:`perpendis.service.protocol`, and the
workers call them through :meth:`CoreWorker.call` and :meth:`HelperWorker.call`, which
dispatch through that table.

A JavaScript byte view is anything with ``byteLength`` and ``assign_to(array)`` (Pyodide's
proxy of a ``Uint8Array``); a ``Blob`` anything with ``size`` (and ``name`` for a file),
read through the ``read_slice(blob, offset, length)`` function the worker passes in.

The core's worker says "ready" once this module is imported, so it imports only what the
constructors need: the service layer (and through it the engine) on the first request,
the helper's fold when a helper starts (``tests/test_startup_imports.py``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import InputError
from . import heap, protocol

if TYPE_CHECKING:
    from ..inputs.formats.buffer import Reader
    from .helper import Helper
    from .session import Session

try:
    from pyodide.ffi import JsException
except ImportError:  # natively, where nothing reads a Blob: the tests' stand-in for a failed read

    class JsException(Exception):  # type: ignore[no-redef]
        """A JavaScript error thrown into Python (``pyodide.ffi.JsException`` in the browser)."""

        name = "Error"


ReadSlice = Callable[[Any, int, int], Any]


def from_js(view: Any) -> np.ndarray:
    """A JavaScript byte view copied into a fresh NumPy array (one ``memcpy``)."""
    array = np.empty(view.byteLength, dtype=np.uint8)
    view.assign_to(array)
    return array


def blob_reader(read_slice: ReadSlice, blob: Any) -> Reader:
    """A reader of a file the page handed over unread; a file that cannot be read any more
    (changed, moved or deleted since it was chosen) is bad input, named."""

    def read(offset: int, length: int) -> np.ndarray:
        array = np.empty(length, dtype=np.uint8)
        try:
            read_slice(blob, offset, length).assign_to(array)
        except JsException as err:
            name = getattr(blob, "name", None) or "a chosen file"
            raise InputError(
                f"{name} could not be read ({err.name}): it was changed, moved or deleted after it "
                "was chosen; choose it again"
            ) from None
        return array

    return read


def with_texts(value: Any, payloads: dict[str, np.ndarray]) -> Any:
    """``value`` with each ``{"utf8": key}`` made ``{"text": ...}`` again, its bytes taken
    from ``payloads``: long pastes travel as UTF-8 bytes, since Pyodide turns a JavaScript
    string into a Python ``str`` several times slower than Python decodes the same bytes."""
    if isinstance(value, list):
        return [with_texts(item, payloads) for item in value]
    if not isinstance(value, dict):
        return value
    if "utf8" in value:
        rest = {k: v for k, v in value.items() if k != "utf8"}
        return {**rest, "text": payloads.pop(value["utf8"]).tobytes().decode("utf-8")}
    return {k: with_texts(v, payloads) for k, v in value.items()}


class CoreWorker:
    """The core worker's Python side: one session, the request's bytes while a fold is shared,
    and the files read ahead of the click."""

    def __init__(
        self, read_slice: ReadSlice, session: Session | None = None, cancel_asked: Callable[[], object] | None = None
    ) -> None:
        """``cancel_asked()`` says whether the page cancelled the request running now
        (:mod:`perpendis.service.cancel`)."""
        self.read_slice = read_slice
        self.cancel_asked = cancel_asked
        self._session = session
        self.held: dict[str, np.ndarray] = {}  # a shared fold's payloads: share_places looks in them
        self.ahead: dict[int, np.ndarray] = {}  # files read ahead (op "prefetch"), by the page's number

    def call(self, method: str, *args: Any) -> Any:
        """Method ``method`` of :data:`perpendis.service.protocol.CORE`, with ``args``."""
        return protocol.dispatch(self, protocol.CORE, method, args)

    @property
    def session(self) -> Session:
        """The session given, else the worker's own (imported with the service, on first use)."""
        if self._session is None:
            from . import handle

            self._session = handle.SESSION
        return self._session

    def keep_ahead(self, ident: int, view: Any) -> None:
        copy = from_js(view)
        copy.flags.writeable = False  # shared by every comparison of this file: none may change it
        self.ahead[ident] = copy

    def drop_ahead(self, ident: int) -> None:
        self.ahead.pop(ident, None)

    @staticmethod
    def read_ahead(sizes: Iterable[int]) -> bool:
        """:func:`perpendis.service.planner.read_ahead`, for the sizes the page lists."""
        from . import planner

        return planner.read_ahead(list(sizes))

    def serve(
        self,
        request_json: str,
        buffers: Iterable[tuple[str, Any]],
        blobs: Iterable[tuple[str, Any]],
        early: Iterable[tuple[str, int]],
        progress: Callable[[str, float], object] | None,
        workers: int,
    ) -> str:
        """One request's answer as JSON.  ``buffers`` are ``[key, view]`` pairs of bytes to copy
        in, ``blobs`` ``[key, Blob]`` pairs of files handed over unread, ``early`` ``[key,
        number]`` pairs of those read ahead."""
        from ..inputs.formats.buffer import view_reader
        from . import handle
        from .boundary import cancelled
        from .cancel import Cancelled, checked

        request = json.loads(request_json)
        self.session.forget(request.get("op"))
        self.held.clear()
        payloads = {key: from_js(view) for key, view in buffers}
        request = with_texts(request, payloads)
        blobs = list(blobs)
        read = {key: self.ahead[ident] for key, ident in early if ident in self.ahead}
        files = {
            key: view_reader(read[key]) if key in read else (blob_reader(self.read_slice, blob), int(blob.size))
            for key, blob in blobs
        }
        try:
            result = handle.serve(
                request, payloads, files, checked(progress, self.cancel_asked), workers, read, session=self.session
            )
        except Cancelled:
            self.session.fold = self.session.checkpoints = None
            return json.dumps(cancelled())
        if "fold_jobs" in result:
            self.held.update(payloads if "stream" in result else {**payloads, **read})
        return json.dumps(result, allow_nan=False)

    def share_bytes(self, index: int) -> tuple[np.ndarray, np.ndarray]:
        return self.session.fold.share_bytes(index)

    def share_places(self, index: int) -> str:
        return json.dumps(self.session.fold.share_places(index, self.held))

    def fold_first_share(self) -> None:
        self.session.fold.fold_first_share()

    def own_errors_for_helper(self) -> tuple[str, np.ndarray] | None:
        return self.session.fold.own_errors_for_helper()

    def merge_partials(self, parts: Iterable[Any]) -> str:
        """The helpers' partials (byte views, or None for a helper that failed) merged; what
        helper 0 is to select, as JSON (``null``: nothing)."""
        self.held.clear()
        job = self.session.fold.merge_partials([None if part is None else from_js(part) for part in parts])
        return json.dumps(None if job is None else job.to_dict())

    def merged_errors(self) -> np.ndarray:
        return self.session.fold.merged_errors()

    def select_kept_columns(self) -> None:
        self.session.fold.select_kept_columns()

    def next_checkpoint_unit(self, helper: bool) -> int | None:
        """The unit of the shared checkpoint comparison a worker folds next: a helper (which
        reads only some kinds of file) or the core's worker; None when none is left for it."""
        return self.session.checkpoints.queue.next(helper)

    def give_back_checkpoint_unit(self, index: int) -> None:
        """A helper could not fold unit ``index``: the core's worker folds it next."""
        self.session.checkpoints.queue.give_back(index)

    def fold_checkpoint_unit(self, index: int, views: Iterable[Any] | None = None) -> None:
        """Fold unit ``index`` of the shared checkpoint comparison here, from the bytes of
        its reads (byte views) when the worker read them."""
        self.session.checkpoints.fold_unit(index, None if views is None else [from_js(v) for v in views])

    def take_checkpoint_unit(self, index: int, view: Any) -> None:
        """Take in a helper's partials of unit ``index`` (a byte view)."""
        self.session.checkpoints.take_unit(index, from_js(view))

    def answer_checkpoints(self) -> str:
        from . import handle

        return json.dumps(handle.answer_checkpoints(session=self.session), allow_nan=False)

    def answer_fold(self, found: Any) -> str:
        from . import handle

        answer = handle.answer_fold(None if found is None else from_js(found), session=self.session)
        return json.dumps(answer, allow_nan=False)


class HelperWorker:
    """A helper worker's Python side: its :class:`~perpendis.service.helper.Helper`, fed JavaScript bytes."""

    def __init__(self, read_slice: ReadSlice) -> None:
        from .helper import Helper

        self.read_slice = read_slice
        self.helper: Helper = Helper()

    def call(self, method: str, *args: Any) -> Any:
        """Method ``method`` of :data:`perpendis.service.protocol.HELPER`, with ``args``."""
        return protocol.dispatch(self, protocol.HELPER, method, args)

    def fold(self, share_json: str, a: Any, b: Any) -> np.ndarray:
        return self.helper.fold(share_json, from_js(a), from_js(b))

    def fold_files(self, share_json: str, void_json: str, blob_a: Any, blob_b: Any) -> np.ndarray:
        """The partial of one share of two unread files, read a slice at a time."""
        files = [
            ((lambda offset, length, blob=blob: from_js(self.read_slice(blob, offset, length))), int(blob.size))
            for blob in (blob_a, blob_b)
        ]
        return self.helper.fold_files(share_json, void_json, *files)

    def fold_checkpoint(self, job_json: str, blobs: Iterable[Any], views: Iterable[Any] | None = None) -> np.ndarray:
        """A unit of a checkpoint comparison (:func:`perpendis.checkpoints.shared.fold_unit_job`),
        its tensors read from the unread files ``blobs``, or from ``views``, the bytes of its reads."""
        from ..checkpoints.shared import fold_unit_job

        files = [(blob_reader(self.read_slice, blob), int(blob.size)) for blob in blobs]
        return fold_unit_job(job_json, files, None if views is None else [from_js(v) for v in views])

    def select(self, ranks_json: str, values: Any, pooled: bool) -> np.ndarray:
        """Order statistics of ``values`` (float64 bytes), pooled with this helper's last share's or not."""
        select = self.helper.select_pooled if pooled else self.helper.select
        return select(ranks_json, from_js(values))

    @staticmethod
    def reserve(size: int) -> int:
        return heap.reserve(size)
