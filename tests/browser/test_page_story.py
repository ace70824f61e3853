"""The verdict box, the tolerance card and the headline tell one story: a shape mismatch is
never a green pass, an empty comparison says no element was compared (not "0 of 0 … — ULP"),
integer and bool tensors are told without ULP, counts have their digits grouped, and two
4-decimal torch prints that print alike are identical as printed, not bit for bit."""

from __future__ import annotations

import numpy as np
import pytest
from made import numpy_text
from test_page_actions_fuzz import settle

torch = pytest.importorskip("torch")

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
    ulp = int(np.float32(1e-3).view(np.int32))  # from +0: the bit pattern's own order
    assert f"largest distance {ulp:,} ULP" in grouped["evidence"], grouped

    t = torch.tensor([0.12344, 1.5])
    u = t + 1e-6
    assert repr(t) == repr(u) and not torch.equal(t, u)  # two tensors, one print
    printed = compared(page, repr(t), repr(u))
    assert "identical as printed" in printed["verdict"], printed
    assert "exactly the same bits" not in printed["verdict"] + printed["evidence"]


FLOAT_WORDS = ("ULP", "ulp", "mantissa", "exponent")


def test_integer_and_bool_pairs_have_no_float_vocabulary_anywhere_on_the_page(ready_page, tmp_path):
    """An int32 and a bool pair: the whole report (summary, element view, worst elements, the
    distance chart) speaks of |A − B| and bits, never of ULP, mantissa or exponent; a float32
    pair right after brings the float words back."""
    page = ready_page
    rng = np.random.default_rng(8)
    ints = rng.integers(-1000, 1000, (6, 7)).astype(np.int32)
    other = ints.copy()
    other[2, 3] += 5
    other[4, 1] -= 300
    bools = rng.integers(0, 2, (5, 5)).astype(bool)
    flipped = bools.copy()
    flipped[1, 2] = not flipped[1, 2]
    for name, a, b in (("int32", ints, other), ("bool", bools, flipped)):
        compared(page, repr(torch.from_numpy(a)), repr(torch.from_numpy(b)))
        page.get_by_test_id("element-index").wait_for()
        assert page.get_by_test_id("dtype-a").text_content() == f"{name}"
        page.screenshot(path=str(tmp_path / f"{name}.png"), full_page=True)
        text = page.locator("#report").inner_text()
        titles = " ".join(page.eval_on_selector_all(
            "#report [title], #report [aria-label], #report svg title",
            "nodes => nodes.map(n => (n.getAttribute('title') || '') + ' ' + (n.getAttribute('aria-label') || '')"
            " + ' ' + (n.tagName === 'title' ? n.textContent : ''))"))
        for word in FLOAT_WORDS:
            assert word not in text, (name, word)
            assert word not in titles, (name, word)
        heads = page.get_by_test_id("worst-table").locator("thead th").all_text_contents()
        assert heads == ["which, index", "AB", "|A − B|", "relative"], heads  # B is stacked under A
        assert page.get_by_test_id("abs-diff").is_visible()
        assert page.locator("#element [data-diff='1']").count() >= 1  # the differing bits are still marked

    a = np.linspace(-1, 1, 12, dtype=np.float32)
    compared(page, numpy_text(a), numpy_text(a * np.float32(1.5)))
    text = page.locator("#report").inner_text()
    assert "ULP" in text and "mantissa" in text and "exponent" in text
