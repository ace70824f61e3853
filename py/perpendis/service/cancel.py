"""Stopping a request between its chunks, so Cancel leaves the core warm.

The page's Cancel used to terminate the core's worker and start a new one: a whole
Pyodide and NumPy start-up before the next answer, even for a comparison that was about
to end.  Long work already reports progress between its chunks (a streamed comparison per
chunk, a bisect per layer, a checkpoint comparison per tensor): :func:`checked` makes
each of those calls first ask the page whether the request was cancelled, and stop with
:class:`Cancelled` if it was.  The worker then answers :func:`~.boundary.cancelled` (the
boundary builds every answer that is not a result) and takes the next request at once.
Work that never reports progress cannot stop this way; the page restarts the core for it,
after a bound (``app/client.js``).
"""

from __future__ import annotations

from collections.abc import Callable

Progress = Callable[[str, float], object]


class Cancelled(Exception):
    """The page cancelled the request running now: raised between two of its chunks.

    Not an :class:`~perpendis.errors.InputError`, so nothing on the way up turns it into an
    error answer; the bridge answers :func:`~.boundary.cancelled`.  (Not the CLI's
    :class:`perpendis.engine.stream.Cancelled` either: importing the streamed comparison here
    would load it on the first comparison of every page, ``tests/test_startup_imports.py``.)"""


def checked(progress: Progress | None, asked: Callable[[], object] | None) -> Progress | None:
    """``progress``, first raising :class:`Cancelled` whenever ``asked()`` is true.

    ``asked`` is the page's cancel signal as the worker sees it (a flag in shared memory
    when the page is cross-origin isolated, else one set by the page's message, seen
    between the await points of a shared fold); ``None`` when there is none."""
    if asked is None:
        return progress

    def report(stage: str, fraction: float) -> None:
        if asked():
            raise Cancelled
        if progress is not None:
            progress(stage, fraction)

    return report
