"""Text or bytes to tensors, whatever the form: the one place that decides text versus file.

Pasted REPL output goes to the text parser; bytes go to the file readers unless they
are plain text (a ``.txt`` of pasted output), which goes to the text parser too.  The
decision is made on content, never on the file name.  Where a front end needs exactly one
tensor of what it loaded, :func:`only_tensor` is the one check, in that front end's words.
"""

from __future__ import annotations

import sys
from pathlib import Path

from ..errors import InputError
from . import formats
from .formats.buffer import BytesLike
from .tensor import Tensor


def load_text(text: str) -> list[Tensor]:
    """The tensors in pasted text (one, or two when the text holds two)."""
    from .parse import parse_text

    return parse_text(text)


def load_bytes(data: BytesLike, name: str | None = None, *, void_format: str | None = None) -> list[Tensor]:
    """The tensors in a file's bytes: a tensor file, or text of pasted output.

    ``void_format`` says how anonymous void ``.npy`` elements are read (see ``formats.read``).
    """
    if formats.looks_like_text(data):
        # Only the first 64 KiB were checked; a bad byte later becomes U+FFFD for the parser to name.
        return load_text(bytes(data).decode("utf-8", errors="replace"))
    return formats.read(data, name, void_format=void_format)


def load_path(path: str | Path) -> list[Tensor]:
    """The tensors in a file, or in standard input for ``"-"``."""
    if str(path) == "-":
        return load_bytes(sys.stdin.buffer.read(), "stdin")
    from .formats.sniff import family, read_checked

    p = Path(path)
    try:
        data = read_checked(p, lambda head, size, tail: family(head, size, tail))  # a refusal reads the prefix only
    except OSError as err:
        raise InputError(f"cannot read {p}: {err.strerror or err}", where=str(p)) from None
    return load_bytes(data, p.name)


def tensor_names(tensors: list[Tensor], shown: int = 8) -> str:
    """The tensors' names for a message, the first few and how many more.

    Names that repeat (one output saved by several Polygraphy runners) are told apart by
    where each tensor came from.
    """
    found = [repr(t.name) if t.name else "unnamed" for t in tensors]
    separator = ", "
    if len(set(found)) < len(found):
        found = [f"{name} from {t.source}" for name, t in zip(found, tensors, strict=True)]
        separator = "; "  # sources hold commas
    return separator.join(found[:shown]) + (f" and {len(tensors) - shown} more" if len(tensors) > shown else "")


def only_tensor(
    tensors: list[Tensor], what: str, hint: str, *, named: bool = False, where: str | None = None,
    side: str | None = None,
) -> Tensor:
    """The one tensor of a loaded input, or an :class:`InputError` "``what`` holds N tensors; ``hint``".

    Every front end that wants one tensor from an input that may hold several (a box of the
    page, a file of a list given to bisect, the CLI's A, B and reference, ``--input``) says the
    same thing: which input, how many tensors it holds, and what to do instead, which only the
    caller knows.  ``named`` lists the tensors' names too, for a box whose file the user
    cannot look inside; ``where`` and ``side`` tag the error as :class:`InputError` does.
    """
    if len(tensors) == 1:
        return tensors[0]
    listed = f" ({tensor_names(tensors)})" if named else ""
    raise InputError(f"{what} holds {len(tensors)} tensors{listed}; {hint}", where=where, side=side)
