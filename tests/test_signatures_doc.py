"""The catalogue in code and ``docs/signatures.md`` name the same signatures."""

import re
from pathlib import Path

from perpendis.diagnosis.signatures.catalogue import CATALOGUE, kinds

DOC = (Path(__file__).parent.parent / "docs" / "signatures.md").read_text()


def test_the_doc_table_names_every_kind_of_the_catalogue_and_no_other():
    table = [line for line in DOC.splitlines() if line.startswith("| `")]
    named = {k for line in table for k in re.findall(r"`([a-z_0-9]+)`", line.split("|")[1])}
    assert named == kinds()
    assert len(table) == len(CATALOGUE) + 2  # the doc gives the global, per-slice and per-row fits a row each


def test_every_signature_has_a_test_a_threshold_and_causes():
    """Every signature but the descriptions without a relation (sign bias, dependence on
    the value or the index), which name no cause, as their findings do not."""
    for sig in CATALOGUE:
        described = set(sig.kinds) <= {"sign_bias", "value_dependence", "position_dependence"}
        assert sig.test and sig.threshold and (bool(sig.causes) != described), sig.kinds
