"""The verdict box, the tolerance card and the headline tell one story: a shape mismatch is
never a green pass, an empty comparison says no element was compared (not "0 of 0 … — ULP"),
integer and bool tensors are told without ULP, counts have their digits grouped, and two
4-decimal torch prints that print alike are identical as printed, not bit for bit."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from made import numpy_text
from test_page_actions_fuzz import settle

pytestmark = pytest.mark.browser


def compared(page, a: str, b: str) -> dict:
    page.get_by_test_id("paste-a").fill(a)
    page.get_by_test_id("paste-b").fill(b)
    page.get_by_test_id("compare").click()
    settle(page)
    page.get_by_test_id("verdict").wait_for()
    return page.evaluate("""() => ({
      verdict: document.getElementById('verdict').textContent,
      evidence: document.getElementById('evidence').textContent,
      tolerance: document.querySelector('[data-testid=tolerance-result]').textContent,
      toleranceClass: document.querySelector('[data-testid=tolerance-result]').className })""")


def test_the_cards_agree(ready_page):
    page = ready_page
    shapes = compared(page, "[[1.0, 2.0, 3.0], [1.0, 2.0, 3.0]]", "[1.0, 2.0, 3.0]")
    assert "pass" not in shapes["toleranceClass"].split() and "shapes differ" in shapes["tolerance"], shapes

    empty = compared(page, "[]", "[]")
    assert "0 of 0" not in empty["evidence"] and "ULP" not in empty["evidence"], empty
    assert "No element was compared" in empty["evidence"]

    for a, b in (("[1, 2, 3]", "[1, 2, 4]"), ("[True, False]", "[True, True]")):
        exact = compared(page, a, b)
        assert "ULP" not in exact["evidence"] and "mantissa" not in exact["evidence"], exact
        assert "1 of " in exact["evidence"]

    x = np.zeros(12_345, dtype=np.float32)
    y = x.copy()
    y[7] = np.float32(1e-3)
    grouped = compared(page, numpy_text(x), numpy_text(y))
    assert "1 of 12,345 elements differ" in grouped["evidence"], grouped

    t = torch.tensor([0.12344, 1.5])
    u = t + 1e-6
    assert repr(t) == repr(u) and not torch.equal(t, u)  # two tensors, one print
    printed = compared(page, repr(t), repr(u))
    assert "identical as printed" in printed["verdict"], printed
    assert "exactly the same bits" not in printed["verdict"] + printed["evidence"]
