"""Which command takes a file the plain ``perpendis A B`` cannot, and the line that runs it.

The plain command compares one tensor with another. People hand it what another command
takes: an ONNX model (``check-export``, ``capture``), a capture of many layers (``bisect``),
a sharded checkpoint or its ``index.json`` (``checkpoints``). Rather than "unreadable" or
"holds 11 tensors", they are told the command and the exact line, their own paths quoted
for a POSIX shell, so that it can be pasted as it is.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from ..checkpoints.contents import contents

PROG = "perpendis"
# model-00001-of-00004.safetensors, pytorch_model-00002-of-00002.bin: one shard of a checkpoint
_SHARD = re.compile(r"-\d{5}-of-\d{5}\.[A-Za-z]+$")


def _line(*words: str | Path) -> str:
    return " ".join([PROG, *(shlex.quote(str(w)) for w in words)])


def checkpoint_folder(path: str | Path) -> Path | None:
    """The checkpoint folder ``path`` is, or belongs to as its index or one shard; None otherwise."""
    p = Path(path)
    if p.is_dir():
        return p
    if p.name.endswith(".index.json") or _SHARD.search(p.name):
        return p.parent
    return None


def for_folder(path: str, other: str | None, is_a: bool = True) -> str | None:
    """What is wrong with the folder ``path`` given where a tensor was expected, when it is
    empty, holds no tensor file, or holds exactly one (which can be given itself, in place of
    A when ``is_a``, else of B); None for a folder of several tensor files, a checkpoint or a
    capture."""
    found = contents(
        str(p.relative_to(path).as_posix()) for p in Path(path).rglob("*") if p.is_file() or p.is_symlink()
    )
    refusal = found.refusal(path)
    if refusal is not None:
        return refusal
    if found.kind == "single":
        inner = Path(path) / found.tensors[0]
        words = (inner,) if other is None else (inner, other) if is_a else (other, inner)
        return (f"{path} is a folder holding one tensor file, {found.tensors[0]}: give the file itself, "
                f"`{_line(*words)}`, or compare two checkpoints tensor by tensor by "
                f"`{_line('checkpoints', 'A_DIR', 'B_DIR')}`")
    return None


def for_paths(a: str, b: str | None) -> str | None:
    """What to run instead, when A or B is a model or a checkpoint rather than a tensor; None
    when both may be tensors (the readers then decide)."""
    for path, other, is_a in ((a, b, True), (b, a, False)):
        if path is not None and path != "-" and Path(path).is_dir():
            said = for_folder(path, other, is_a)
            if said is not None:
                return said
    folders = [None if p in (None, "-") else checkpoint_folder(p) for p in (a, b)]
    if folders[0] is not None or folders[1] is not None:
        first = a if folders[0] is not None else b
        if b is None:
            return f"{first} is a sharded checkpoint: compare two by `{_line('checkpoints', 'A_DIR', 'B_DIR')}`"
        dirs = [f if f is not None else Path(p) for f, p in zip(folders, (a, b), strict=True)]
        return (f"{first} is a sharded checkpoint (a folder, its index.json or one shard), which the checkpoints "
                f"command compares tensor by tensor: run `{_line('checkpoints', *dirs)}`")
    models = [p for p in (a, b) if p is not None and p.lower().endswith(".onnx")]
    if models:
        model = models[0]
        return (f"{model} is an ONNX model, not a tensor. To check the export against its PyTorch model, run "
                f"`{_line('check-export', model, '--module', 'FILE.py:NAME', '--input', 'INPUT.npy')}`; "
                f"to keep every layer's output for bisect, run "
                f"`{_line('capture', model, '--input', 'INPUT.npy', '-o', Path(model).stem + '.capture.safetensors')}`")
    return None


def for_many(a: str, b: str | None, counts: tuple[int, int | None]) -> str:
    """The hint added when an input holds several tensors: two archives of many tensors are
    captures, which ``bisect`` pairs layer by layer."""
    n_a, n_b = counts
    if b is not None and n_b is not None and n_a > 1 and n_b > 1:
        return f"; to compare them layer by layer, run `{_line('bisect', a, b)}`"
    many = a if n_a > 1 else b
    return f"; if {many} is a capture of many layers, compare it with another by `{_line('bisect', 'A', 'B')}`"
