"""The page on a capture whose file keeps no order (tests/fixtures/plain_hooks: plain forward
hooks saved by safetensors.torch.save_file): with the .onnx dropped beside it the rows follow
the graph and conv2 is first failing; without, no row is first and the summary says why."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_page_bisect import drop_files, run_and_wait

pytestmark = pytest.mark.browser

HERE = Path(__file__).resolve().parents[1] / "fixtures" / "plain_hooks"


def test_without_the_model_no_row_is_first_and_the_summary_says_how_to_order(ready_page):
    page = ready_page
    drop_files(page, "a", [HERE / "plain_hooks.safetensors"])
    drop_files(page, "b", [HERE / "conv2_scaled.ort.npz"])
    run_and_wait(page)
    summary = page.get_by_test_id("bisect-summary").text_content()
    assert "No first failing layer" in summary and "--model model.onnx" in summary
    assert page.locator("[data-testid=bisect-row][data-standing=first-failing]").count() == 0
    assert page.locator("[data-testid=bisect-row][data-standing=pass]").count() == 0


def test_with_the_model_the_rows_follow_the_graph(ready_page):
    page = ready_page
    drop_files(page, "a", [HERE / "plain_hooks.safetensors"])
    drop_files(page, "b", [HERE / "conv2_scaled.ort.npz", HERE / "conv2_scaled.onnx"])
    assert "model conv2_scaled.onnx" in page.locator("#chip-b .file-name").text_content()
    assert "paired by file name" not in page.locator("#chip-b .file-name").text_content()
    run_and_wait(page)
    rows = page.locator("[data-testid=bisect-row]")
    assert [rows.nth(i).get_attribute("data-name") for i in range(rows.count())] == [
        "conv1", "relu1", "conv2", "relu2", "fc", "logits"]
    first = page.locator("[data-testid=bisect-row][data-standing=first-failing]")
    assert first.get_attribute("data-name") == "conv2"
    assert "graph order" in page.get_by_test_id("bisect-order").text_content()
