"""The one boundary where bad input becomes an answer.

Parsers, readers, the engine and the service's own checks raise
:class:`~perpendis.errors.InputError`; nothing below here catches it to build an answer.
:func:`answering` runs one request (or one step of a shared fold) and turns the error
into ``{"ok": False, "error": {...}}`` with :meth:`InputError.to_answer`.  Any other
exception is a bug in Perpendis and propagates, for the worker to report as an internal
error.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ..errors import InputError


def answering(run: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """``run()``'s answer, or the answer of the :class:`InputError` it raised."""
    try:
        return run()
    except InputError as err:
        return err.to_answer()


def raised(answer: dict[str, Any], sides: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The answer of a front end in Python (the CLI, ``perpendis.testing``), or the
    :class:`InputError` it carries raised again, for that front end to say as it says bad
    input (exit 2, an exception in a notebook): the inverse of :func:`answering`.
    ``sides`` renames the request's sides as the front end names them (the CLI's "A")."""
    if answer["ok"]:
        return answer
    error = answer["error"]
    side = error["side"] if sides is None else sides.get(error["side"], error["side"])
    raise InputError(error["message"], where=error["where"], side=side, sides=tuple(error.get("sides", ())))


def cancelled() -> dict[str, Any]:
    """The answer of a request the page cancelled between two of its chunks
    (:mod:`.cancel`): not an error of the input, and the page shows nothing for it."""
    return {"ok": False, "cancelled": True, "error": {"message": "cancelled", "where": None, "side": None}}
