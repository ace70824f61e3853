"""The shape of nested brackets, found with array operations over the bracket bytes.

A 1M-element paste has about 12M characters but only as many brackets as it has rows,
so the work here is over bracket and token *positions*, never per character in Python.
Depth after each bracket is a cumulative sum; the openings at depth ``k`` are the rows
of level ``k``; a row's children are the openings (or, at the last level, the numbers)
between it and its closing bracket.  Every row of a level must have the same count, or
the list is ragged.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ...errors import InputError

MAX_DEPTH = 64  # NumPy's limit on dimensions

_BLANK = bytes.maketrans(b"\n[],'\"", b"      ")
_BLANK_BUT_COMMAS = bytes.maketrans(b"\n[]'\"", b"     ")


def blank(data: bytes, commas: bool = False) -> bytes:
    """``data`` with line breaks, brackets, quotes and (unless ``commas``) commas made spaces:
    the numbers alone, each at its offset.

    NumPy reads numbers separated by commas about a tenth faster than by spaces, so
    text whose every item ends with a comma keeps them.
    """
    return data.translate(_BLANK_BUT_COMMAS if commas else _BLANK)


def token_bounds(flat: bytes) -> tuple[np.ndarray, np.ndarray]:
    """Start and end (exclusive) offsets of the tokens between the spaces and commas of ``flat``."""
    chars = np.frombuffer(flat, dtype=np.uint8)
    if chars.size == 0:
        return np.zeros(0, dtype=np.intp), np.zeros(0, dtype=np.intp)
    # In-place operations: each fresh 12 MB temporary costs page faults as well as a pass.
    word = chars != ord(" ")
    scratch = chars != ord(",")
    word &= scratch
    # Token edges alternate start, end, start...: one pass finds them all.
    edge = np.not_equal(word[1:], word[:-1], out=scratch[1:])
    edges = np.flatnonzero(edge)
    edges += 1
    if word[0]:
        edges = np.concatenate(([0], edges))
    if word[-1]:
        edges = np.concatenate((edges, [word.size]))
    starts, ends = edges.reshape(-1, 2).T.copy()  # contiguous rows: every later operation is faster
    return starts, ends


def shape_of(data: bytes, starts: np.ndarray, line_at: Callable[[int], str]) -> tuple[int, ...]:
    """Shape of the nested brackets in ``data`` whose numbers start at ``starts``.

    ``line_at(offset)`` names the line of an offset, for error messages.
    """
    if data[:1] == b"[" and data.find(b"[", 1) < 0 and data.find(b"]") == len(data) - 1:
        return (int(starts.size),)  # one flat list, told by two searches at memory speed
    buf = np.frombuffer(data, dtype=np.uint8)
    bracket = buf == ord("[")
    bracket |= buf == ord("]")
    pos = np.flatnonzero(bracket)
    if pos.size == 0:
        return (int(starts.size),)
    opening = buf[pos] == ord("[")
    depth = np.cumsum(np.where(opening, 1, -1))
    if depth.min() < 0 or depth[-1] != 0:
        raise InputError(
            "the brackets do not match: the text was cut off or edited; paste the whole output",
            where=line_at(int(pos[np.argmin(depth)] if depth.min() < 0 else pos[-1])),
        )
    ndim = int(depth.max())
    if ndim > MAX_DEPTH:
        raise InputError(f"the lists are nested {ndim} deep; at most {MAX_DEPTH} dimensions are supported")
    outer = np.flatnonzero(opening & (depth == 1))
    if outer.size > 1:
        raise InputError(
            "the text holds several lists side by side; paste one nested list per tensor",
            where=line_at(int(pos[outer[1]])),
        )
    innermost = _children(pos, opening, depth, ndim, starts)
    if int(innermost.sum()) != starts.size:
        before = np.searchsorted(pos, starts) - 1
        token_depth = np.where(before >= 0, depth[np.maximum(before, 0)], 0)
        raise InputError(
            "numbers appear at different nesting depths (a ragged or malformed list); "
            "every innermost list must sit at the same depth",
            where=line_at(int(starts[np.flatnonzero(token_depth != ndim)[0]])),
        )
    shape: list[int] = []
    for level in range(1, ndim + 1):
        counts = (
            innermost if level == ndim else _children(pos, opening, depth, level, pos[opening & (depth == level + 1)])
        )
        ragged = np.flatnonzero(counts != counts[0])
        if ragged.size:
            row = [int(i) for i in np.unravel_index(int(ragged[0]), tuple(shape))]
            raise InputError(
                f"ragged nested list: row {row} has {int(counts[ragged[0]])} items where the first row has "
                f"{int(counts[0])}; every row must have the same length",
                where=line_at(int(pos[opening & (depth == level)][ragged[0]])),
            )
        shape.append(int(counts[0]))
    return tuple(shape)


def _children(pos: np.ndarray, opening: np.ndarray, depth: np.ndarray, level: int, children: np.ndarray) -> np.ndarray:
    """How many of the sorted offsets ``children`` lie inside each list opened at depth ``level``."""
    opens = pos[opening & (depth == level)]
    closes = pos[~opening & (depth == level - 1)]
    return np.searchsorted(children, closes) - np.searchsorted(children, opens)
