"""The one-screen explanation a failing assert_same shows, on real model outputs."""

from pathlib import Path

import numpy as np
import perpendis
from perpendis.explain import causes_of, explain, verdict_text, where_text
from perpendis.report import Finding, main_finding

MODELS = Path(__file__).parent / "fixtures" / "models"


def test_sign_flip_in_one_screen():
    r = perpendis.compare(np.load(MODELS / "transformer.ort.npy"), np.load(MODELS / "transformer.signflip.npy"))
    text = explain(r)
    lines = text.splitlines()
    assert len(lines) <= 12 and max(map(len, lines)) < 240
    assert lines[0].startswith("Perpendis: INVESTIGATE")
    assert lines[1] == "A (2, 8, 16) float32, B (2, 8, 16) float32: 186 of 256 elements differ bitwise"
    top = main_finding(r.findings)
    assert f"top finding [{top.severity}] {top.message} (at {where_text(top)})" in text
    e = r.first_diff
    assert f"    A bits {e.a_bits} ({e.a_hex})\n    B bits {e.b_bits} ({e.b_hex})\n" in text


def test_a_passing_tolerance_gets_no_failure_line():
    a, b = np.load(MODELS / "linear.torch.npy"), np.load(MODELS / "linear.ort.npy")
    r = perpendis.compare(a, b)
    assert r.verdict == "rounding"
    text = explain(r)
    assert "elements fail" not in text and text.startswith("Perpendis: ROUNDING")


def test_where_forms():
    assert where_text(Finding("k", "info", "m")) is None
    assert where_text(Finding("k", "info", "m", where="row 3")) == "row 3"
    channel = {"axis": 1, "indices": [5], "text": "channel 5 (axis 1)"}
    assert where_text(Finding("k", "info", "m", where=channel)) == "channel 5 (axis 1)"
    assert where_text(Finding("k", "info", "m", where={"element": [0, 5]})) == "at (0, 5)"
    assert where_text(Finding("k", "info", "m", where={"axis": 1, "indices": [5]})) == "axis 1"


def test_causes_are_listed_most_likely_first():
    r = perpendis.compare(np.load(MODELS / "transformer.ort.npy"), np.load(MODELS / "transformer.signflip.npy"))
    f = main_finding(r.findings)
    f.causes = ["a negated LayerNorm weight", "a wrong sign convention", "a third", "a fourth"]
    assert causes_of(f) == f.causes
    assert "likely causes: a negated LayerNorm weight; a wrong sign convention; a third\n" in explain(r)


def test_verdict_text_leads_with_the_headline(monkeypatch):
    r = perpendis.compare(np.load(MODELS / "linear.torch.npy"), np.load(MODELS / "linear.ort.npy"))
    monkeypatch.setattr(type(r), "headline", "Rounding: every difference is within 3 ULP.", raising=False)
    assert verdict_text(r) == "ROUNDING: every difference is within 3 ULP."
    assert explain(r).startswith("Perpendis: ROUNDING: every difference is within 3 ULP.\n")
