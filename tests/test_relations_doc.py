"""The grammar's table in code and ``docs/relations.md`` name the same members."""

import re
from pathlib import Path

from perpendis.diagnosis import dependence
from perpendis.diagnosis.relations import forms
from perpendis.diagnosis.relations.grammar import MEMBERS, kinds

DOC = (Path(__file__).parent.parent / "docs" / "relations.md").read_text()
GRAMMAR, FORMS = DOC.split("## Forms: ", 1)


def _table(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("| `")]


def _named(rows: list[str]) -> set[str]:
    return {k for line in rows for k in re.findall(r"`([a-z_0-9]+)`", line.split("|")[1])}


def test_the_doc_table_names_every_kind_of_the_grammar_and_no_other():
    members, formed = _table(GRAMMAR), _table(FORMS.split("\n## ", 1)[0])
    assert _named(members) | _named(formed) == kinds()
    assert len(members) == len(MEMBERS) + 2  # the doc gives the global, per-slice and per-row fits a row each
    assert _named(formed) == forms.KINDS


def test_every_member_has_a_test_a_threshold_and_causes():
    """Every member states a map, so each has its causes; the descriptions that state none
    (sign bias, dependence on the value or the index) are not members."""
    for member in MEMBERS:
        assert member.test and member.threshold and member.causes, member.kinds
        assert not set(member.kinds) & set(dependence.KINDS), member.kinds
