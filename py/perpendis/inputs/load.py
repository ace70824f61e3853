"""Text or bytes to tensors, whatever the form: the one place that decides text versus file.

Pasted REPL output goes to the text parser; bytes go to the file readers unless they
are plain text (a ``.txt`` of pasted output), which goes to the text parser too.  The
decision is made on content, never on the file name.
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
    p = Path(path)
    try:
        data = p.read_bytes()
    except OSError as err:
        raise InputError(f"cannot read {p}: {err.strerror or err}", where=str(p)) from None
    return load_bytes(data, p.name)
