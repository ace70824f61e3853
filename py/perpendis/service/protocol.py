"""The workers' protocol, declared once on the Python side: every method the page's workers
call, with what it takes and what it answers.

Three tables, two per worker and one of the page's control ops:

:data:`CORE`
    What ``app/worker.js`` calls on :class:`perpendis.service.bridge.CoreWorker`: a request
    served, the steps of a shared fold (:class:`perpendis.service.fold.FoldCoordinator`) and
    of a shared checkpoint comparison (:class:`perpendis.checkpoints.shared.CheckpointFold`).
:data:`HELPER`
    The messages ``app/worker.js`` sends a helper (``app/fold_worker.js``), each answered by
    :class:`perpendis.service.bridge.HelperWorker`'s method of that name, but for those
    marked ``python=False``, which the helper's JavaScript handles alone.
:data:`CONTROL`
    The page's control ops to ``app/worker.js`` (cancel, reserve, prefetch).

``app/protocol.js`` holds the same two tables for the JavaScript side, which both workers
dispatch through; ``tests/test_protocol.py`` checks that the two sides name the same
methods with the same parameters, and that each bridge class has exactly its table's
methods.  Both bridge classes dispatch through :func:`dispatch`, so a method missing from
the table, or called with the wrong number of values, is refused by name rather than found
by ``getattr`` on whatever the class happens to hold.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Method:
    """One method of the protocol: the values its Python takes, in order, and what it
    answers (``None``: nothing); for a helper's method, the fields of its message too, which
    the helper's JavaScript turns into those values (byte views of transferred buffers, the
    ranges it read)."""

    params: tuple[str, ...]
    answer: str | None
    python: bool = True  # answered by the bridge's Python; else by the worker's JavaScript alone
    optional: int = 0  # how many of the last params may be left out
    message: tuple[str, ...] | None = None  # a helper's message fields, when not the params

    @property
    def fields(self) -> tuple[str, ...]:
        """The fields of the method's message (a helper's), or the values it is called with (the core's)."""
        return self.params if self.message is None else self.message


CORE: dict[str, Method] = {
    "serve": Method(("request", "buffers", "blobs", "early", "progress", "workers"), "answer JSON"),
    "read_ahead": Method(("sizes",), "bool"),
    "keep_ahead": Method(("ahead", "view"), None),
    "drop_ahead": Method(("ahead",), None),
    "share_places": Method(("index",), "[[key, offset, length] | null] x2 JSON"),
    "share_bytes": Method(("index",), "(A bytes, B bytes)"),
    "fold_first_share": Method((), None),
    "own_errors_for_helper": Method((), "(ranks JSON, float64 bytes) | None"),
    "merge_partials": Method(("parts",), "SelectJob JSON | null"),
    "merged_errors": Method((), "float64 bytes"),
    "select_kept_columns": Method((), None),
    "answer_fold": Method(("found",), "answer JSON"),
    "next_checkpoint_unit": Method(("helper",), "unit index | None"),
    "give_back_checkpoint_unit": Method(("index",), None),
    "fold_checkpoint_unit": Method(("index", "views"), None, optional=1),
    "take_checkpoint_unit": Method(("index", "bytes"), None),
    "answer_checkpoints": Method((), "answer JSON"),
}
"""``app/worker.js`` → :class:`~perpendis.service.bridge.CoreWorker` (``docs/contracts.md``)."""

HELPER: dict[str, Method] = {
    "fold": Method(("share", "a", "b"), "partial bytes", message=("share", "a", "b", "at")),
    "fold_files": Method(("share", "void", "file_a", "file_b"), "partial bytes", message=("share", "void", "files")),
    "fold_checkpoint": Method(("job", "files", "views"), "packed partials bytes", optional=1,
                              message=("job", "files", "reads")),
    "select": Method(("ranks", "values", "pooled"), "float64 bytes"),
    "reserve": Method(("bytes",), "heap bytes"),
    "spare": Method((), None, python=False, message=("buffer",)),
}
"""``app/worker.js`` → ``app/fold_worker.js`` → :class:`~perpendis.service.bridge.HelperWorker`:
each message is ``{id, method, ...fields}``.  ``spare`` gives the helper back an answer's buffer to write a
later answer into: JavaScript alone."""


CONTROL: dict[str, Method] = {
    "cancel": Method((), None, python=False, message=("upTo", "flag")),
    "reserve": Method(("bytes",), "reserved JSON"),
    "prefetch": Method((), None, python=False, message=("files",)),
}
"""The page → ``app/worker.js``: control ops, messages about the jobs rather than jobs
(``{id?, op, ...fields}``), which the worker dispatches through one table of its own.
``cancel`` is read at once and ``prefetch`` read by the worker's JavaScript alone (its Python
keeps what is read, through ``CORE``'s ``read_ahead``/``keep_ahead``); ``reserve`` is also
served as a request of its op (:mod:`perpendis.service.requests`), with these fields."""


def python_methods(table: Mapping[str, Method]) -> set[str]:
    """The names of a table's methods that the bridge's Python answers."""
    return {name for name, method in table.items() if method.python}


def dispatch(target: object, table: Mapping[str, Method], name: str, args: Sequence[Any]) -> Any:
    """``target``'s method ``name`` called with ``args``, once the table says it is one of
    the protocol's and that ``args`` are as many as it takes.  A wrong call is a bug in a
    worker's JavaScript: :class:`ValueError` naming the method, not an ``AttributeError``
    deep inside."""
    method = table.get(name)
    if method is None or not method.python:
        raise ValueError(f"{name!r} is not a method of the workers' protocol ({type(target).__name__})")
    least, most = len(method.params) - method.optional, len(method.params)
    if not least <= len(args) <= most:
        raise ValueError(f"{name} takes {', '.join(method.params) or 'nothing'}: given {len(args)} values")
    return getattr(target, name)(*args)
