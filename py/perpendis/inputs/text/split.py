"""Find the printed tensors in a text and take each apart into body and keywords.

A printed tensor is a *wrapper* (``tensor(``, ``array(``, ``Array(``, ``tf.Tensor(``,
``<tf.Tensor: ...numpy=``, ``np.float32(``) around a *body* (nested brackets of
numbers, or one number) followed by keywords (``dtype=``, ``size=``, ``device=``...).
Bodies hold no parentheses, so a wrapper's keywords end at the first ``)`` and its body
at the last ``]`` before that: string searches at memory speed, so a 12 MB paste is not
scanned here at all.  A Python list of NumPy scalars (what ``list(arr)`` prints) is one
piece, its wrappers dropped.  Text without any wrapper is one *bare* piece: a nested
list, a NumPy ``print``, hex floats, one number per line or CSV.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from ...errors import InputError
from .clean import line_of


@dataclass
class Piece:
    """One printed tensor, not yet converted to numbers."""

    library: str  # "PyTorch", "NumPy", "JAX", "TensorFlow" or "" for bare text
    source: str  # what the report shows, e.g. "PyTorch repr"
    body: str  # "[[1., 2.], [3., 4.]]" or "1.5" (scalars)
    dtype: str | None = None  # as printed: "torch.float16", "float32", ...
    shape: tuple[int, ...] | None = None  # from size=/shape=, when printed
    line: int = 1  # where the piece starts in the pasted text
    notes: list[str] = field(default_factory=list)


_OPENER = re.compile(
    r"(?P<tfrepr><tf\.Tensor: shape=(?P<tfshape>\([^)]*\)), dtype=(?P<tfdtype>\w+), numpy=\s*(?P<tfarray>array\()?)"
    r"|(?P<tfstr>(?<![\w.])tf\.Tensor\()"
    r"|(?P<masked>(?<![\w.])(?:(?:np|numpy)\.)?(?:ma\.)?masked_array\()"
    r"|(?P<torch>(?<![\w.])(?:torch\.)?tensor\()"
    r"|(?P<jax>(?<![\w.])Array\()"
    r"|(?P<numpy>(?<![\w.])(?:(?:np|numpy)\.)?array\()"
    r"|(?P<scalar>(?<![\w.])(?:np|numpy)\.(?P<sdtype>[a-z_]+\d*)\()"
    r"|(?P<npbool>(?<![\w.])(?:np|numpy)\.(?P<bool>True|False)_)"
)
_SCALAR_LIST = re.compile(r"\s*\[[\s\[]*(?P<module>np|numpy)\.(?:(?P<name>[a-z_]+\d*)\(|(?P<bool>True|False)_)")
_CALL_NAME = re.compile(r"[\w.]+\($")
# NumPy 2.4 with ml_dtypes 0.7 prints an ml_dtypes array's dtype as its repr,
# ``dtype=dtype(bfloat16)``: the name inside is the value.
_KEYWORD = re.compile(
    r"\s*,\s*(\w+)=(?:dtype\((?P<dtype>[^)]*)\)|(?P<value>\([^)]*\)|<[^>]*>|'[^']*'|\"[^\"]*\"|[\w.:+\-]+))"
)
_KEYWORDS_KNOWN = {"dtype", "size", "shape", "device", "requires_grad", "grad_fn", "weak_type"}
_SCALAR_END = re.compile(r"[,)>\[\]]")
_MAX_PIECES = 2


def split(text: str) -> list[Piece]:
    """The printed tensors in ``text``, in order (one bare piece when there is no wrapper)."""
    if (scalars := _scalar_list(text)) is not None:
        return [scalars]
    openers = _openers(text)
    if not openers:
        return [Piece("", "", text)]
    notes = _extra_text_notes(text, 0, openers[0].start())
    pieces: list[Piece] = []
    for i, opener in enumerate(openers):
        end = openers[i + 1].start() if i + 1 < len(openers) else len(text)
        piece, stop = _take_piece(text, opener, end)
        piece.notes += notes
        notes = _extra_text_notes(text, stop, end)
        pieces.append(piece)
    pieces[-1].notes += notes
    if len(pieces) > _MAX_PIECES:
        raise InputError(
            f"the text holds {len(pieces)} printed tensors; paste one tensor (or two, to compare them with each other)"
        )
    return pieces


def _scalar_list(text: str) -> Piece | None:
    """What ``list(arr)`` prints for a 1-D array in NumPy 2 (``[np.float32(1.5), np.float32(-0.25)]``),
    as one list of the bare numbers, or None for other text.

    ``str.replace`` drops the wrappers of a million items in a few passes, where matching
    each with a pattern would take seconds.
    """
    first = _SCALAR_LIST.match(text)
    if first is None:
        return None
    prefix = f"{first.group('module')}."
    if first.group("bool"):
        body, dtype = text.replace(f"{prefix}True_", "True").replace(f"{prefix}False_", "False"), "bool"
    else:
        body, dtype = text.replace(f"{prefix}{first.group('name')}(", "").replace(")", ""), first.group("name")
    if prefix in body:
        raise InputError(
            f"the list mixes NumPy scalar types ({prefix}{dtype} and others); make it one array with "
            "np.array(the_list) and print that",
            where=f"line {line_of(text, first.start('module'))}",
        )
    return Piece("NumPy", "list of NumPy scalars", body.strip(), dtype, line=line_of(text, first.start("module")))


def _openers(text: str) -> list[re.Match[str]]:
    """The wrapper openers in ``text``, in order, found from literal anchors.

    Trying a many-branched pattern at each of 12M positions takes seconds; searching
    for ``(`` and the two openers without one is a fast literal scan, and only the few
    hits are matched against :data:`_OPENER`.
    """
    starts: set[int] = set()
    anchors = ["("]
    # A rare character missing from the text rules out an anchor at memchr speed.
    if "<" in text:
        anchors.append("<tf.Tensor:")
    if "_" in text:
        anchors += ["np.True_", "np.False_", "numpy.True_", "numpy.False_"]
    for anchor in anchors:
        pos = text.find(anchor)
        while pos >= 0 and len(starts) <= _MAX_PIECES + 1:  # enough to tell "too many"
            name = _CALL_NAME.search(text, max(0, pos - 40), pos + 1) if anchor == "(" else None
            start = name.start() if name else pos
            if _OPENER.match(text, start):
                starts.add(start)
            pos = text.find(anchor, pos + 1)
    found: list[re.Match[str]] = []
    for start in sorted(starts):
        match = _OPENER.match(text, start)
        if match and (not found or start >= found[-1].end()):
            found.append(match)
    return found


def _take_piece(text: str, opener: re.Match[str], end: int) -> tuple[Piece, int]:
    """The piece opened by ``opener`` and the offset just past its closing ``)``/``>``."""
    line = line_of(text, opener.start())
    kind = opener.lastgroup if not opener.group("tfrepr") else "tfrepr"
    if kind == "masked":
        raise InputError(
            "masked arrays cannot be compared as printed: masked elements print as '--' and the data "
            "under them is lost; print arr.filled(np.nan) or arr.data instead",
            where=f"line {line}",
        )
    pos = opener.end()
    if kind == "npbool":
        return Piece("NumPy", "NumPy scalar repr", opener.group("bool"), "bool", (), line), pos
    body_end = _body_end(text, pos, end, line)
    body = text[pos:body_end].strip()
    keywords, pos = _keywords(text, body_end, end, line)
    closers = r"\s*\)" if kind != "tfrepr" else (r"\s*\)\s*>" if opener.group("tfarray") else r"\s*>")
    closing = re.compile(closers).match(text, pos, end)
    if closing is None:
        snippet = text[pos : min(end, pos + 40)].strip() or "the end of the text"
        raise InputError(
            f"the printed tensor is not closed: expected ')' but found {snippet!r}; it was cut off or edited, "
            "paste the whole output",
            where=f"line {line_of(text, pos)}",
        )
    notes = [f"ignored {name}={value}" for name, value in keywords.items() if name not in _KEYWORDS_KNOWN]
    dtype = keywords.get("dtype")
    shape_text = keywords.get("size") or keywords.get("shape")
    library, source = {
        "torch": ("PyTorch", "PyTorch repr"),
        "numpy": ("NumPy", "NumPy repr"),
        "jax": ("JAX", "JAX repr"),
        "tfstr": ("TensorFlow", "TensorFlow print"),
        "tfrepr": ("TensorFlow", "TensorFlow repr"),
        "scalar": ("NumPy", "NumPy scalar repr"),
    }[kind]
    if kind == "tfrepr":
        dtype = dtype or opener.group("tfdtype")
        shape_text = opener.group("tfshape")
    if kind == "scalar":
        dtype = opener.group("sdtype")
        shape_text = "()"
    shape = _shape(shape_text, line) if shape_text is not None else None
    return Piece(library, source, body, dtype, shape, line, notes), closing.end()


def _body_end(text: str, pos: int, end: int, line: int) -> int:
    """Offset just past the body that starts at ``pos``: its matching ``]``, or the scalar."""
    start = pos
    while start < end and text[start] in " \n":
        start += 1
    if start >= end or text[start] != "[":
        stop = _SCALAR_END.search(text, start, end)
        return stop.start() if stop else end
    # Bodies hold no parentheses: when none comes before the last "]", that bracket ends
    # the body, and :func:`perpendis.inputs.text.grid.shape_of` checks the brackets inside; the
    # megabytes in between need no scan here.
    last = text.rfind("]", start, end)
    if last >= 0 and text.find(")", start, last) < 0:
        return last + 1
    chunk = np.frombuffer(text[start:end].encode("ascii"), dtype=np.uint8)
    brackets = np.flatnonzero((chunk == ord("[")) | (chunk == ord("]")))
    depth = np.cumsum(np.where(chunk[brackets] == ord("["), 1, -1))
    closed = np.flatnonzero(depth == 0)
    if closed.size == 0:
        raise InputError(
            "a '[' is never closed: the printed tensor was cut off; paste the whole output",
            where=f"line {line}",
        )
    return start + int(brackets[closed[0]]) + 1


def _keywords(text: str, pos: int, end: int, line: int) -> tuple[dict[str, str], int]:
    """``name=value`` pairs after a body, as printed, and the offset after the last one."""
    found: dict[str, str] = {}
    while (match := _KEYWORD.match(text, pos, end)) is not None:
        value = match.group("dtype") if match.group("dtype") is not None else match.group("value")
        found[match.group(1)] = value.strip("'\"")
        pos = match.end()
    return found, pos


def _shape(shape_text: str, line: int) -> tuple[int, ...]:
    """``(0, 3)`` or ``(2,)`` or ``()`` as a tuple of ints."""
    items = [item.strip() for item in shape_text.strip("()").split(",") if item.strip()]
    if not all(item.isdigit() for item in items):
        raise InputError(f"cannot read the printed shape {shape_text!r}", where=f"line {line}")
    return tuple(int(item) for item in items)


def _extra_text_notes(text: str, start: int, stop: int) -> list[str]:
    """Notes for a label between tensors (``Parameter containing:``); an error if it holds data."""
    extra = text[start:stop].strip()
    if not extra:
        return []
    if "[" in extra:
        raise InputError(
            f"unexpected text {extra[:40]!r} next to the printed tensor; paste only the printed tensors",
            where=f"line {line_of(text, start + text[start:stop].index('['))}",
        )
    return [f"ignored the text {extra[:40]!r}"]
