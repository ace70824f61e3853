"""The relation grammar as one table: the order it is tried in is the table's, its
members import no module late, and the descriptions that state no map (sign bias,
dependence on the value or the position) speak only when no member holds."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
from perpendis.diagnosis import dependence
from perpendis.diagnosis.relations import grammar
from perpendis.diagnosis.relations.pair import pair_of
from perpendis.engine.compare import compare_values

RELATIONS = Path(__file__).resolve().parent.parent / "py" / "perpendis" / "diagnosis" / "relations"


def test_the_table_is_the_order_the_members_are_tried_in():
    """Exact members first (each kept when it holds), then the fitted ones (first that
    holds), then the precision fingerprint, which the structure step runs itself."""
    precision = grammar.MEMBERS[-1]
    assert [*grammar.EXACT, *grammar.FITTED, precision] == grammar.MEMBERS
    assert precision.kinds == ("precision",) and precision.find is None
    assert [m.kinds[0] for m in grammar.EXACT] == ["transposed", "reversed", "dropout", "clipped"]


def test_no_member_imports_a_module_inside_a_function():
    """A function-level import is how a cycle hides; the grammar reads nothing that reads it."""
    late = []
    for path in sorted(RELATIONS.glob("*.py")):
        tree = ast.parse(path.read_text())
        for function in (n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)):
            imports = (n for n in ast.walk(function) if isinstance(n, ast.Import | ast.ImportFrom))
            late += [f"{path.name}:{n.lineno}" for n in imports]
    assert late == []


def _pair(a: np.ndarray, b: np.ndarray):
    return pair_of(compare_values(a, b), 1.0)


def test_an_offset_every_element_shares_is_named_by_its_member_not_described_as_a_bias():
    """A = B + 0.05 leans one way at every element, so the sign test alone would call it a
    bias with no cause; the offset member holds and is what the report names."""
    b = np.random.default_rng(0).standard_normal((4, 16, 16)).astype(np.float32)
    a = (b + np.float32(0.05)).astype(np.float32)
    assert [f.kind for f in dependence.find(_pair(a, b))] == ["sign_bias"]
    kinds = [f.kind for f in compare_values(a, b).findings]
    assert "offset" in kinds and not set(kinds) & set(dependence.KINDS)


def test_a_bias_no_member_fits_is_described_with_no_cause():
    """A = B + 3e-6·|B|: no map of the grammar holds (it is neither a scale nor an offset,
    and B's sign decides nothing of its size), so the sign bias describes it."""
    b = np.random.default_rng(1).standard_normal((4, 16, 16)).astype(np.float32)
    a = (b + np.abs(b) * np.float32(3e-6)).astype(np.float32)
    assert grammar.run(_pair(a, b)) == []
    report = compare_values(a, b)
    bias = next(f for f in report.findings if f.kind == "sign_bias")
    assert bias.causes == [] and dependence.NO_CAUSE in bias.message
    assert not [f for f in report.findings if f.kind in grammar.kinds()]
