"""What a scan of a checkpoint finds: where each tensor lies, the bad input, and the opener.

Plain data apart from the scanning (:mod:`.inputs`) because everything after the scan
reads it: pairing the two sides, the report's problems, and workers on other machines,
which are told a :class:`Located` and open the tensor themselves.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from ..inputs.formats.buffer import Reader

Opener = Callable[[str], tuple[Reader, int]]
"""``open(file)``: a reader over one file of the checkpoint and its size; raises
:class:`InputError` when the file cannot be read."""


@dataclass(frozen=True)
class Located:
    """Where one tensor lies: its file and, for a safetensors shard, its bytes and layout.

    Small and plain, so that a worker on another machine can be told which tensor to
    read and open it itself.  ``size`` is the file's, so a resumed run can tell a file
    that changed.
    """

    name: str
    file: str
    kind: str  # "safetensors", "npy", "gguf" or "archive" (.npz, torch.save: read whole, as a view where stored)
    size: int
    dtype: str = ""  # a Perpendis format, or a GGUF quantised type ("Q8_0")
    shape: tuple[int, ...] = ()
    begin: int = 0
    end: int = 0
    heads: int = 0  # GGUF attn_q/attn_k rows stored permuted by llama.cpp for its rotary layout: their heads


@dataclass
class Problem:
    """One piece of bad input: which file, what is wrong, and which tensors it keeps from being compared."""

    file: str
    message: str
    tensors: list[str] = field(default_factory=list)
    side: str | None = None  # "a" or "b", once known

    def to_dict(self) -> dict[str, object]:
        return {"side": self.side, "file": self.file, "message": self.message, "tensors": list(self.tensors)}


@dataclass
class Scan:
    """What a checkpoint holds: every readable tensor by name, the bad input, and notes."""

    tensors: dict[str, Located]
    problems: list[Problem]
    blocked: dict[str, str]  # tensor name → the problem keeping it from being compared
    notes: list[str] = field(default_factory=list)
