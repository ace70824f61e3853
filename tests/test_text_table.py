"""The shared plain-text table: aligned columns, the last one unpadded."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from perpendis.report.table import table_lines

cell = st.text(alphabet="abcxyz012≠→ .", max_size=12)
tables = st.integers(2, 5).flatmap(lambda n: st.lists(st.lists(cell, min_size=n, max_size=n), min_size=1, max_size=6))


def test_columns_line_up_and_the_last_is_not_padded():
    rows = [["identical", "w", ""], ["investigate", "layers.1.weight", "a long reason"]]
    assert table_lines(["verdict", "tensor", "why"], rows) == [
        "verdict      tensor           why",
        "identical    w",
        "investigate  layers.1.weight  a long reason",
    ]


@given(tables)
def test_every_cell_starts_where_its_column_does(table):
    header, *rows = table
    widths = [max(len(r[c]) for r in table) for c in range(len(header) - 1)]
    starts = [sum(widths[:c]) + 2 * c for c in range(len(header))]
    for row, line in zip(table, table_lines(header, rows), strict=True):
        assert line == line.rstrip()
        padded = line.ljust(starts[-1] + len(row[-1]))
        for c, width in enumerate(widths):
            assert padded[starts[c] : starts[c] + width + 2] == row[c].ljust(width) + "  "
        assert padded[starts[-1] :].rstrip() == row[-1].rstrip()
