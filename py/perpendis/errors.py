"""The one exception type for bad input.

Parsers and readers raise :class:`InputError` for anything the user gave us that we
cannot use; the page turns it into its ``error`` field and the CLI into exit code 2.
Any other exception escaping the core is a bug in Perpendis, not in the input.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager


class InputError(ValueError):
    """Input that cannot be read, with a message meant for the person who gave it.

    ``message`` is one or two plain sentences naming the problem and, where there is
    one, the fix.  ``where`` says which input or which part of it (``"A"``, ``"B"``,
    ``"line 3"``, ``"archive member 'x.npy'"``); it is kept apart so the page can show
    the error next to the box it concerns.
    """

    def __init__(
        self, message: str, *, where: str | None = None, side: str | None = None, sides: tuple[str, ...] = ()
    ):
        super().__init__(message)
        self.message = message
        self.where = where
        self.side = side
        self.sides = sides  # every box the error concerns, when more than ``side`` (both boxes summarised)

    def to_dict(self) -> dict[str, object]:
        out: dict[str, object] = {"message": self.message, "where": self.where, "side": self.side}
        if self.sides:
            out["sides"] = list(self.sides)
        return out

    def to_answer(self) -> dict[str, object]:
        """The error answer the page and the worker protocol expect, ``{"ok": False, "error": ...}``.

        Only :func:`perpendis.service.boundary.answering` calls this: the one place bad
        input becomes an answer (as torch's ``ErrorMeta.to_error()`` is the one place its
        checks' metadata becomes the exception raised).
        """
        return {"ok": False, "error": self.to_dict()}

    def __str__(self) -> str:
        prefix = f"{self.side}: " if self.side else ""
        suffix = f" ({self.where})" if self.where else ""
        return f"{prefix}{self.message}{suffix}"


class SummarisedPrint(InputError):
    """A print whose ``...`` hides values; ``fix`` is the call that prints everything."""

    def __init__(self, message: str, *, fix: str, where: str | None = None, side: str | None = None):
        super().__init__(message, where=where, side=side)
        self.fix = fix


@contextmanager
def blame(side: str, where: str | None = None) -> Iterator[None]:
    """Tag an :class:`InputError` raised inside with the input it concerns.

    Readers know what is wrong but not which box they are reading; their callers know the
    box, and for one of many tensors in a box (a layer of a capture) which one.  A side or
    place a deeper caller already named is kept.
    """
    try:
        yield
    except InputError as err:
        err.side = err.side or side
        err.where = err.where or where
        raise
