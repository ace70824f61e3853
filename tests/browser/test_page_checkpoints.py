"""Whole checkpoints in the page: two folders chosen, every tensor read by the worker from its
Blob chunk by chunk, the per-tensor table, filtering, progress and Cancel (Chromium).

The folders are the real conversion example (tests/fixtures/checkpoints/make_conversion.py):
a torch encoder's float32 state_dict in three safetensors shards, against a bfloat16 copy in
two shards with renamed layers and one corrupted tensor.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("safetensors")
from safetensors.numpy import save_file

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "fixtures" / "checkpoints"))
import make_conversion  # noqa: E402
from perpendis.checkpoints import compare_checkpoints, folder, parse_rule  # noqa: E402

pytestmark = pytest.mark.browser
RENAME = r"^model\.layers\.(\d+)\.=layers.\1."
TIMEOUT_MS = 120_000
ROWS = '[data-testid="checkpoint-table"] tbody tr'


def choose(page, a: Path, b: Path, rename: str = RENAME) -> None:
    page.click('[data-testid="checkpoints"] > summary')
    page.set_input_files('[data-testid="checkpoint-a"]', str(a))
    page.set_input_files('[data-testid="checkpoint-b"]', str(b))
    page.fill('[data-testid="checkpoint-rename"]', rename)


def test_conversion_in_the_page_is_the_native_report(ready_page, tmp_path):
    page = ready_page
    fp32, bf16 = make_conversion.make(tmp_path)
    choose(page, fp32, bf16)
    assert "4 files" in page.text_content('[data-testid="checkpoint-chip-a"]')
    page.click('[data-testid="checkpoint-compare"]')
    page.wait_for_selector('[data-testid="checkpoint-summary"]', timeout=TIMEOUT_MS)
    native = compare_checkpoints(folder(fp32), folder(bf16), rules=[parse_rule(RENAME)])
    s = native.summary
    summary = page.text_content('[data-testid="checkpoint-summary"]')
    assert summary.startswith(f"{s['tensors']} tensors: 1 identical, {s['rounding_equivalent']} rounding-equivalent")
    assert "1 different" in summary
    rows = page.eval_on_selector_all(ROWS, "rows => rows.map(r => [r.dataset.name, r.dataset.verdict])")
    assert rows == [[r.name, r.verdict] for r in native.tensors]
    assert rows[0] == [make_conversion.CORRUPTED, "investigate"]
    page.select_option('[data-testid="checkpoint-filter-verdict"]', "investigate")
    assert page.text_content('[data-testid="checkpoint-shown"]') == f"1 of {s['tensors']} tensors shown"
    page.select_option('[data-testid="checkpoint-filter-verdict"]', "")
    page.fill('[data-testid="checkpoint-filter-name"]', "layers.2.")
    shown = page.eval_on_selector_all(ROWS, "rows => rows.map(r => r.dataset.name)")
    assert shown and all("layers.2." in n for n in shown)


def test_bad_shard_is_named_and_the_rest_compared(ready_page, tmp_path):
    page = ready_page
    fp32, bf16 = make_conversion.make(tmp_path)
    (bf16 / "model-00002-of-00002.safetensors").unlink()
    choose(page, fp32, bf16)
    page.click('[data-testid="checkpoint-compare"]')
    page.wait_for_selector('[data-testid="checkpoint-summary"]', timeout=TIMEOUT_MS)
    problems = page.text_content('[data-testid="checkpoint-problems"]')
    assert "B: model-00002-of-00002.safetensors: model.safetensors.index.json names the shard" in problems
    verdicts = page.eval_on_selector_all(ROWS, "rows => rows.map(r => r.dataset.verdict)")
    assert "error" in verdicts and "converted" in verdicts


def test_progress_and_cancel(ready_page, tmp_path):
    """Two 2 x 256 MB checkpoints: the bar shows bytes and an ETA, Cancel stops it, and the page compares again."""
    page = ready_page
    rng = np.random.default_rng(0)
    for side in ("a", "b"):
        (tmp_path / side).mkdir()
        for k in range(2):
            x = rng.standard_normal(64 * 2**20, dtype=np.float32)
            save_file({f"w{k}": x}, str(tmp_path / side / f"model-0000{k + 1}-of-00002.safetensors"))
    choose(page, tmp_path / "a", tmp_path / "b", "")
    page.click('[data-testid="checkpoint-compare"]')
    status = page.locator('[data-testid="checkpoint-progress"]')
    for _ in range(600):
        if "ETA" in (status.text_content() or ""):
            break
        page.wait_for_timeout(100)
    assert "MB of ≈1.07 GB" in status.text_content() and "ETA" in status.text_content()
    page.click('[data-testid="checkpoint-cancel"]')
    for _ in range(100):
        if status.text_content() == "cancelled":
            break
        page.wait_for_timeout(100)
    assert status.text_content() == "cancelled"
    assert page.is_hidden('[data-testid="checkpoint-cancel"]')


def test_helper_worker_folds_part_of_the_checkpoint(ready_page, tmp_path):
    """With a second core, the helper worker folds some of the units (reading its tensors'
    bytes itself) and the rows are still the native ones, in order."""
    page = ready_page
    if page.evaluate("navigator.hardwareConcurrency") < 2:
        pytest.skip("one CPU core: no helper worker")
    page.wait_for_selector('[data-testid="status"][title*="on 2 CPU"]', timeout=TIMEOUT_MS)
    rng = np.random.default_rng(3)
    tensors = {f"w{i}": rng.standard_normal(4 << 20, dtype=np.float32) for i in range(6)}
    changed = {**tensors, "w4": tensors["w4"].copy()}
    changed["w4"][1000:1100] = 0.0
    for side, ts in (("a", tensors), ("b", changed)):
        (tmp_path / side).mkdir()
        save_file(dict(list(ts.items())[:3]), str(tmp_path / side / "one.safetensors"))
        save_file(dict(list(ts.items())[3:]), str(tmp_path / side / "two.safetensors"))
    choose(page, tmp_path / "a", tmp_path / "b", rename="")
    page.click('[data-testid="checkpoint-compare"]')
    page.wait_for_selector('[data-testid="checkpoint-summary"]', timeout=TIMEOUT_MS)
    status = page.text_content('[data-testid="checkpoint-progress"]')
    native = compare_checkpoints(folder(tmp_path / "a"), folder(tmp_path / "b"))
    rows = page.eval_on_selector_all(ROWS, "rows => rows.map(r => [r.dataset.name, r.dataset.verdict])")
    assert rows == [[r.name, r.verdict] for r in native.tensors]
    assert rows[0] == ["w4", "investigate"]
    helped = status.split(", ")[-1]
    assert helped.endswith("parts on a helper worker)") and not helped.startswith("0 of"), status
