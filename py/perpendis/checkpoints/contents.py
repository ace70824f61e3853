"""What a folder given as a checkpoint holds, named before anything in it is read.

An empty folder, a folder of unrelated files (a README, notes) and a folder holding one
tensor file are different mistakes with different fixes; calling each of them "a sharded
checkpoint" or "no tensor files" sent people looking for shards that were never there.
:func:`contents` sorts a folder's file names into one of four kinds, and
:meth:`Contents.refusal` says the specific sentence for the two a comparison cannot use.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from .inputs import tensor_files

KINDS = ".safetensors, .bin/.pt/.pth, .npz, .npy, .gguf, an index or a distributed checkpoint's .metadata"
"""The files a checkpoint is made of, as the refusals list them."""

Kind = Literal["empty", "unrelated", "single", "several"]


@dataclass(frozen=True)
class Contents:
    """A folder's files: ``tensors`` (tensor files and indexes), ``others`` (the rest, hidden
    files left out), and which of the four kinds that makes it."""

    kind: Kind
    tensors: list[str]
    others: list[str]

    def refusal(self, name: str) -> str | None:
        """Why the folder called ``name`` cannot be compared, or None when it can."""
        if self.kind == "empty":
            return f"{name} is an empty folder: there is no tensor file in it to compare"
        if self.kind == "unrelated":
            return f"{name} holds no tensor files, only {_few(self.others)}; a checkpoint is made of {KINDS}"
        return None


def contents(names: Iterable[str]) -> Contents:
    """The kind of the folder whose files (paths inside it) are ``names``."""
    names = sorted(names)
    tensors = tensor_files(names)
    others = [n for n in names if n not in tensors and not n.rsplit("/", 1)[-1].startswith(".")]
    if not tensors:
        return Contents("unrelated" if others else "empty", tensors, others)
    return Contents("single" if len(tensors) == 1 else "several", tensors, others)


def _few(names: list[str], limit: int = 5) -> str:
    shown = ", ".join(names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")
