"""The plain-text tables of the CLI's reports (bisect's layers, a checkpoint's tensors).

Columns are left-aligned and two spaces apart; the last column, a sentence of any
length, is not padded, so a long finding never widens the others, and trailing spaces
are dropped.
"""

from __future__ import annotations

from collections.abc import Sequence


def table_lines(header: Sequence[object], rows: Sequence[Sequence[object]]) -> list[str]:
    """The header and rows as lines of text, each column as wide as its widest cell."""
    every = [header, *rows]
    widths = [max(len(str(row[c])) for row in every) for c in range(len(header) - 1)]
    return [
        ("  ".join(str(v).ljust(w) for v, w in zip(row, widths, strict=False)) + "  " + str(row[-1])).rstrip()
        for row in every
    ]
