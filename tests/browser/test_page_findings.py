"""The findings list in the page: each finding's place, ranked causes and evidence picture,
and the verdict's headline, all as the core sent them."""

from __future__ import annotations

import numpy as np
from made import numpy_text

REPORT_TIMEOUT_MS = 60_000


def first_finding(page, a: np.ndarray, b: np.ndarray):
    """Paste both sides, compare, and return the first item of the findings list."""
    page.get_by_test_id("paste-a").fill(numpy_text(a))
    page.get_by_test_id("paste-b").fill(numpy_text(b))
    page.get_by_test_id("compare").click()
    first = page.locator("#findings li.finding").first
    first.wait_for(timeout=REPORT_TIMEOUT_MS)
    return first


def test_a_wrong_channel_shows_its_place_causes_and_per_slice_picture(ready_page):
    page = ready_page
    b = np.random.default_rng(0).standard_normal((2, 8, 8, 8)).astype(np.float32)
    a = b.copy()
    a[:, 2] += np.float32(0.25)
    first = first_finding(page, a, b)
    assert first.get_attribute("data-kind") == "slice_offset"
    assert first.locator(".where").inner_text() == "channel 2 (axis 1)"
    causes = first.locator(".cause-list li").all_inner_texts()
    assert causes and "bias" in causes[0]
    picture = first.locator(".evidence-picture svg")
    assert picture.count() == 1 and "axis 1" in picture.get_attribute("aria-label")
    assert first.locator(".evidence-picture polyline").count() == 2
    headline = "along axis 1 (8 channels), in channel 2 A ≈ B + c with c = 0.25"
    assert headline in page.locator("#evidence").inner_text()


def test_a_clip_shows_a_histogram_with_its_bound(ready_page):
    b = (np.random.default_rng(1).standard_normal((16, 32)) * 4).astype(np.float32)
    first = first_finding(ready_page, np.minimum(b, np.float32(6)), b)
    assert first.get_attribute("data-kind") == "clipped"
    assert first.locator(".evidence-picture rect").count() == 24
    assert "ReLU6" in first.locator(".cause-list li").first.inner_text()


def test_a_per_channel_quantisation_shows_its_axis_and_a_histogram_in_steps(ready_page):
    import pytest
    torch = pytest.importorskip("torch")
    g = torch.Generator().manual_seed(3)
    b = torch.randn(16, 32, generator=g) * (torch.rand(16, 1, generator=g) * 3 + 0.01)
    scale = (b.abs().amax(dim=1) / 127).float()
    a = torch.fake_quantize_per_channel_affine(b, scale, torch.zeros(16, dtype=torch.int32), 0, -128, 127)
    first = first_finding(ready_page, a.numpy(), b.numpy())
    assert first.get_attribute("data-kind") == "grid"
    causes = first.locator(".cause-list li").all_inner_texts()
    assert causes and "per-channel quantisation along axis 0" in causes[0]
    picture = first.locator(".evidence-picture svg")
    assert picture.count() == 1 and "in steps of their slice's grid" in picture.get_attribute("aria-label")


def test_a_depth_to_space_in_the_other_mode_shows_the_solved_reshape(ready_page):
    y = np.random.default_rng(4).standard_normal((1, 16, 4, 4)).astype(np.float32)
    crd = y.reshape(1, 4, 2, 2, 4, 4).transpose(0, 1, 4, 2, 5, 3).reshape(1, 4, 8, 8)
    dcr = y.reshape(1, 2, 2, 4, 4, 4).transpose(0, 3, 4, 1, 5, 2).reshape(1, 4, 8, 8)
    first = first_finding(ready_page, crd, dcr)
    assert first.get_attribute("data-kind") == "index_map"
    assert "A = B.reshape(" in page_text(first) and ".permute(" in page_text(first)
    causes = first.locator(".cause-list li").all_inner_texts()
    assert causes and "DepthToSpace mode DCR against CRD" in causes[0]


def test_a_leaky_slope_changed_shows_the_one_sided_relation_and_its_ratio(ready_page):
    x = (np.random.default_rng(5).standard_normal((8, 32)) * 3).astype(np.float32)
    leaky = np.where(x > 0, x, np.float32(0.2) * x).astype(np.float32)
    reference = np.where(x > 0, x, np.float32(0.01) * x).astype(np.float32)
    first = first_finding(ready_page, leaky, reference)
    assert first.get_attribute("data-kind") == "sign_split"
    assert "A = 20·B where B < 0" in page_text(first)
    causes = first.locator(".cause-list li").all_inner_texts()
    assert len(causes) == 1 and "negative_slope" in causes[0] and "20 ×" in causes[0]


def test_attention_probabilities_without_their_causal_mask_show_the_mask(ready_page):
    scores = np.random.default_rng(6).standard_normal((2, 10, 10)).astype(np.float32)
    masked = np.where(np.triu(np.ones((10, 10), bool), 1), np.float32(-np.inf), scores)

    def softmax(x):
        e = np.exp(x - x.max(-1, keepdims=True))
        return (e / e.sum(-1, keepdims=True)).astype(np.float32)

    first = first_finding(ready_page, softmax(scores), softmax(masked))
    assert first.get_attribute("data-kind") == "causal_mask"
    assert "B = 0 exactly on the upper triangle j > i of its last two axes" in page_text(first)
    causes = first.locator(".cause-list li").all_inner_texts()
    assert len(causes) == 1 and "causal mask applied on B's side only" in causes[0]


def page_text(node) -> str:
    return node.inner_text()
