"""The pinned subset of the mutation corpus (tests/fixtures/corpus, written by its
make_corpus_fixtures.py from bench/corpus): real exports of eight architectures, each
bug a mutation of the ONNX graph run in ONNX Runtime, each legitimate pair another
faithful run of the clean model.  Every bug must be called ``investigate``; no
legitimate pair may be (judged at the preset the case names).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from perpendis.engine.compare import compare_values

HERE = Path(__file__).parent / "fixtures" / "corpus"
CASES = json.loads((HERE / "cases.json").read_text())


def _arrays(case: dict) -> tuple[np.ndarray, np.ndarray]:
    with np.load(HERE / case["file"]) as z:
        return z["a"], z["b"]


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_verdict(case):
    a, b = _arrays(case)
    report = compare_values(a, b, preset=case["preset"])
    expected_bug = case["class"] != "legitimate"
    assert (report.verdict == "investigate") == expected_bug, (case["label"], report.verdict)


def test_the_subset_spans_the_corpus():
    """Every architecture, bugs and legitimate pairs, and a spread of operators."""
    archs = {c["arch"] for c in CASES}
    operators = {c["label"]["operator"] for c in CASES if c["class"] != "legitimate"}
    assert len(archs) >= 8
    assert len(operators) >= 15
    assert sum(c["class"] == "legitimate" for c in CASES) >= 6
    for c in CASES:
        a, b = _arrays(c)
        assert a.dtype == b.dtype == np.float32
        assert not np.array_equal(a, b) or c["class"] == "legitimate"
