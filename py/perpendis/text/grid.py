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

from ..errors import InputError

MAX_DEPTH = 64  # NumPy's limit on dimensions

_SEPARATOR_BYTES = np.zeros(256, dtype=bool)
_SEPARATOR_BYTES[[ord(c) for c in " \n[],'\""]] = True


def token_bounds(buf: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Start and end (exclusive) offsets of the tokens between separators in ``buf``."""
    word = ~_SEPARATOR_BYTES[buf]
    if word.size == 0:
        return np.zeros(0, dtype=np.intp), np.zeros(0, dtype=np.intp)
    starts = np.flatnonzero(word[1:] & ~word[:-1]) + 1
    ends = np.flatnonzero(word[:-1] & ~word[1:]) + 1
    if word[0]:
        starts = np.concatenate(([0], starts))
    if word[-1]:
        ends = np.concatenate((ends, [word.size]))
    return starts, ends


def shape_of(buf: np.ndarray, starts: np.ndarray, line_at: Callable[[int], str]) -> tuple[int, ...]:
    """Shape of the nested brackets in ``buf`` whose numbers start at ``starts``.

    ``line_at(offset)`` names the line of an offset, for error messages.
    """
    pos = np.flatnonzero((buf == ord("[")) | (buf == ord("]")))
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
    before = np.searchsorted(pos, starts) - 1
    token_depth = np.where(before >= 0, depth[np.maximum(before, 0)], 0)
    stray = np.flatnonzero(token_depth != ndim)
    if stray.size:
        at = int(starts[stray[0]])
        raise InputError(
            "numbers appear at different nesting depths (a ragged or malformed list); "
            "every innermost list must sit at the same depth",
            where=line_at(at),
        )
    shape: list[int] = []
    for level in range(1, ndim + 1):
        opens = pos[opening & (depth == level)]
        closes = pos[~opening & (depth == level - 1)]
        children = pos[opening & (depth == level + 1)] if level < ndim else starts
        counts = np.searchsorted(children, closes) - np.searchsorted(children, opens)
        ragged = np.flatnonzero(counts != counts[0])
        if ragged.size:
            row = [int(i) for i in np.unravel_index(int(ragged[0]), tuple(shape))]
            raise InputError(
                f"ragged nested list: row {row} has {int(counts[ragged[0]])} items where the first row has "
                f"{int(counts[0])}; every row must have the same length",
                where=line_at(int(opens[ragged[0]])),
            )
        shape.append(int(counts[0]))
    return tuple(shape)
