"""The one-screen explanation a failing assert_same shows, on real model outputs."""

from pathlib import Path

import numpy as np
import perpendis
from perpendis.report.explain import MAX_CAUSES, explain
from perpendis.report.headline import main_finding
from perpendis.report.model import Report
from perpendis.report.text import verdict_line

MODELS = Path(__file__).parent / "fixtures" / "models"


def compared(a: str, b: str):
    return perpendis.compare(np.load(MODELS / a), np.load(MODELS / b))


def test_sign_flip_in_one_screen():
    r = compared("transformer.ort.npy", "transformer.signflip.npy")
    lines = explain(r).splitlines()
    assert len(lines) <= 14 and max(map(len, lines)) < 240
    assert lines[0] == f"Perpendis: {verdict_line(r)}"
    assert lines[1] == "A (2, 8, 16) float32, B (2, 8, 16) float32: 186 of 256 elements differ bitwise"
    top = main_finding(r.findings)
    assert top.where_text == "feature 3 (axis 2)" and top.causes
    # the headline already says the top finding's message: its kind and place follow
    assert top.message.lower() in r.headline.lower()
    assert lines[2] == f"top finding [error] {top.kind} at feature 3 (axis 2)"
    assert lines[3] == "  likely causes: " + "; ".join(top.causes[:MAX_CAUSES])
    e, fail = r.first_diff, r.tolerance.first_fail
    assert e.ulp == 1 and fail.index == [0, 0, 3]  # the first difference is rounding; the first failure is the flip
    for x in (e, fail):
        assert f"    A bits {x.a_bits} ({x.a_hex})\n    B bits {x.b_bits} ({x.b_hex})\n" in explain(r)
    assert "first failing at (0, 0, 3) (flat 3)" in explain(r)


def test_a_finding_the_headline_does_not_say_is_spelled_out(monkeypatch):
    r = compared("cnn.ort.npy", "cnn.offset.npy")
    top = main_finding(r.findings)
    assert f"top finding [error] {top.kind}\n" in explain(r)  # an offset has no place, only an amount
    monkeypatch.setattr(Report, "headline", property(lambda self: "Investigate: a headline of other words."))
    assert f"top finding [error] {top.message}\n" in explain(r)


def test_a_passing_tolerance_gets_no_failure_line():
    r = compared("linear.torch.npy", "linear.ort.npy")
    assert r.verdict == "rounding"
    text = explain(r)
    assert "elements fail" not in text and text.startswith("Perpendis: ROUNDING: ")
