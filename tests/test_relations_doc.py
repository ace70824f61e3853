"""The grammar's table in code and ``docs/relations.md`` name the same members."""

import re
from pathlib import Path

from perpendis.diagnosis import dependence
from perpendis.diagnosis.relations.grammar import MEMBERS, kinds

DOC = (Path(__file__).parent.parent / "docs" / "relations.md").read_text()


def test_the_doc_table_names_every_kind_of_the_grammar_and_no_other():
    table = [line for line in DOC.splitlines() if line.startswith("| `")]
    named = {k for line in table for k in re.findall(r"`([a-z_0-9]+)`", line.split("|")[1])}
    assert named == kinds()
    assert len(table) == len(MEMBERS) + 2  # the doc gives the global, per-slice and per-row fits a row each


def test_every_member_has_a_test_a_threshold_and_causes():
    """Every member states a map, so each has its causes; the descriptions that state none
    (sign bias, dependence on the value or the index) are not members."""
    for member in MEMBERS:
        assert member.test and member.threshold and member.causes, member.kinds
        assert not set(member.kinds) & set(dependence.KINDS), member.kinds
