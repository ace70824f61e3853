"""The page's prediction panel: offered for score-shaped pairs, asked with one click or the
toggle, and each flipped row a link to its element."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from made import numpy_text

REPORT_TIMEOUT_MS = 60_000
LM = Path(__file__).resolve().parents[1] / "fixtures" / "task" / "lm.safetensors"


def logits_pair() -> tuple[np.ndarray, np.ndarray]:
    """Six rows of twelve GPT-2 logits (PyTorch B, ONNX Runtime A with positions off by one)."""
    safe_open = pytest.importorskip("safetensors").safe_open
    with safe_open(str(LM), "np") as runs:
        return runs.get_tensor("ort_positions")[0, :6, :12].copy(), runs.get_tensor("torch")[0, :6, :12].copy()


def test_the_offer_asks_for_the_check_and_flips_open_their_element(ready_page):
    page = ready_page
    a, b = logits_pair()
    page.get_by_test_id("paste-a").fill(numpy_text(a))
    page.get_by_test_id("paste-b").fill(numpy_text(b))
    page.get_by_test_id("compare").click()
    page.get_by_test_id("task-offer").click(timeout=REPORT_TIMEOUT_MS)
    page.get_by_test_id("task-verdict").wait_for(timeout=REPORT_TIMEOUT_MS)
    assert page.get_by_test_id("task-toggle").is_checked()
    flipped = [i for i in range(6) if a[i].argmax() != b[i].argmax()]
    assert flipped, "the fixture's rows must flip for this test to mean anything"
    assert page.get_by_test_id("task-n-flips").inner_text().startswith(f"{len(flipped)} (")
    links = page.get_by_test_id("task-flip")
    assert links.all_inner_texts() == [f"({i},)" for i in flipped]
    assert page.get_by_test_id("task-verdict").inner_text() == "the prediction changes beyond rounding"
    links.first.click()
    want = str((flipped[0], int(b[flipped[0]].argmax())))
    page.wait_for_function(
        "want => document.querySelector('[data-testid=\"element-index\"]')?.textContent.trim() === want",
        arg=want, timeout=REPORT_TIMEOUT_MS,
    )
    # The toggle takes it back: the panel offers the check again.
    page.get_by_test_id("task-toggle").uncheck()
    page.get_by_test_id("task-offer").wait_for(timeout=REPORT_TIMEOUT_MS)
