"""The core's entry as the page's worker and the tests call it: a request dict in, a
JSON-ready dict out, through the service layer (:mod:`perpendis.service`).

:func:`handle` is :func:`perpendis.service.serve` for a request whose inputs are all in
``payloads``; :func:`forget` lets the worker drop the kept pair before a new request's
bytes arrive; :func:`warm_up` exercises the fold once the worker has started.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from ..engine.compare import compare
from ..inputs.tensor import from_numpy
from . import handle as service
from .fold import Progress


def handle(
    request: Mapping[str, Any], payloads: Mapping[str, Any], progress: Progress | None = None, *, workers: int = 1
) -> dict[str, Any]:
    """Run one worker request (``docs/contracts.md``) on the worker's session; bad input
    becomes ``{"ok": False, "error": ...}`` (:func:`perpendis.service.serve`)."""
    return service.serve(request, payloads, None, progress, workers)


def forget(op: object) -> None:
    """Drop what the last comparison kept when ``op`` replaces it (:meth:`Session.forget`)."""
    service.SESSION.forget(op)


WARM_UP_SHAPE = (1024, 1024)


def warm_up() -> None:
    """Compare two made-up float32 arrays of one chunk, keeping nothing.

    The page's workers call this a few times once started (``app/worker.js``,
    ``app/fold_worker.js``): the browser runs fresh WebAssembly with its baseline
    compiler and optimises a function only after it has run a while, so the first big
    comparison after load folded at half speed (9 M elements: 300-340 ms, against
    160-190 ms after 8 M warm-up elements).  Rounding noise and a few failing elements
    take the fold and the diagnosis through the paths a real comparison takes.
    """
    a = np.linspace(-4, 4, math.prod(WARM_UP_SHAPE), dtype=np.float32).reshape(WARM_UP_SHAPE)
    b = a.copy()
    b[:, ::10] = np.nextafter(b[:, ::10], np.float32(np.inf))
    b[::100, ::10] *= np.float32(1.001)
    compare(from_numpy(a, "a"), from_numpy(b, "b")).to_dict()
