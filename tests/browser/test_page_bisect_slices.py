"""A bisect table of many rows is built in slices (app/render/bisect_table.js), never in one
long task: the summary and the first failing row with its neighbours at once, the other rows
one slice per frame in the places held for them.

The captures are two ``.npz`` files of 60 layers written by NumPy, named as an ONNX export
names a ResNet's outputs (names of many lengths, so the table's columns would move if later
rows widened them), B wrong from layer 40 on. The rows the page shows are checked against
``perpendis`` run natively on the same files; the layout shifts while the rows come in are
the browser's own ``layout-shift`` entries.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from perpendis.inputs import formats
from perpendis.layers.bisect import bisect
from test_accessibility import violations
from test_page_bisect import drop_files, rows
from test_page_cls import CLS_SINCE_JS, SHIFTS_INIT

pytest.importorskip("playwright")

pytestmark = pytest.mark.browser

TIMEOUT_MS = 120_000
LAYERS = 60
BUG_FROM = 40
PAGE_AT_ONCE = 24  # app/render/bisect_table.js AT_ONCE: a table of more rows is built in slices

# At the moment the summary is put in (a MutationObserver runs at the end of that task):
# which rows are built, and which only hold their place.
WATCH_JS = """() => {
  window.__atOnce = null;
  const node = document.getElementById("bisect-table");
  const seen = new MutationObserver(() => {
    if (window.__atOnce || !node.querySelector("[data-testid=bisect-summary]")) return;
    const built = [...node.querySelectorAll("[data-testid=bisect-row]")];
    window.__atOnce = {
      at: performance.now(),
      built: built.map((r) => Number(r.dataset.index)),
      pending: node.querySelectorAll("[data-testid=bisect-row-pending]").length,
      first: built.filter((r) => r.dataset.standing === "first-failing").map((r) => Number(r.dataset.index)),
    };
    seen.disconnect();
  });
  seen.observe(node, { childList: true, subtree: true });
}"""


def layer_names() -> list[str]:
    """60 output names as an ONNX export of a ResNet names them: short and long ones mixed."""
    names = ["/conv1/Conv_output_0", "/relu/Relu_output_0", "/maxpool/MaxPool_output_0"]
    for stage in range(1, 5):
        for block in range(3):
            scope = f"/layer{stage}/layer{stage}.{block}"
            names += [f"{scope}/conv1/Conv_output_0", f"{scope}/relu/Relu_output_0", f"{scope}/Add_output_0",
                      f"{scope}/downsample/downsample.0/Conv_output_0", f"{scope}/relu_1/Relu_output_0"]
    names = [*names[: LAYERS - 1], "/fc/Gemm_output_0"]
    assert len(names) == LAYERS
    return names


@pytest.fixture(scope="module")
def captures(tmp_path_factory) -> tuple[Path, Path]:
    return write_captures(tmp_path_factory.mktemp("slices"))


def write_captures(folder: Path) -> tuple[Path, Path]:
    """Two ``.npz`` captures of the 60 layers (A's, B's), B off by 1e-3 from layer 40 on; every
    engine's bisect-in-slices test opens these."""
    rng = np.random.default_rng(36)
    a = {name: rng.standard_normal((4, 32)).astype(np.float32) for name in layer_names()}
    b = {name: (v + np.float32(1e-3) if i >= BUG_FROM else v.copy()) for i, (name, v) in enumerate(a.items())}
    paths = folder / "torch.npz", folder / "ort.npz"
    for path, arrays in zip(paths, (a, b), strict=True):
        np.savez(path, **arrays)
    return paths


def native(paths: tuple[Path, Path]):
    a, b = (formats.read(path.read_bytes(), path.name) for path in paths)
    return bisect(a, b)


def bisect_in_page(page, paths: tuple[Path, Path]) -> None:
    drop_files(page, "a", [paths[0]])
    drop_files(page, "b", [paths[1]])
    page.evaluate(WATCH_JS)
    page.get_by_test_id("compare").click()
    page.locator("#bisect-table[data-rows=complete]").wait_for(timeout=TIMEOUT_MS)


@pytest.mark.parametrize("width, height", [(390, 844), (1280, 900)])
def test_the_first_failing_row_comes_at_once_and_the_rest_in_place(page, server, captures, width, height):
    page.set_viewport_size({"width": width, "height": height})
    page.add_init_script(script=SHIFTS_INIT)
    page.goto(server.url)
    page.wait_for_function("() => document.getElementById('status').dataset.state === 'ready'", timeout=TIMEOUT_MS)
    start = page.evaluate("() => performance.now()")
    bisect_in_page(page, captures)
    page.wait_for_timeout(1500)
    truth = native(captures)
    first = truth.pairs.index(truth.first_failing)
    assert first == BUG_FROM

    at_once = page.evaluate("() => window.__atOnce")
    assert at_once["first"] == [first]  # the row to look at is there with the summary
    assert {first - 1, first, first + 1} <= set(at_once["built"])
    assert at_once["pending"] > 0 and len(at_once["built"]) + at_once["pending"] == LAYERS
    assert len(at_once["built"]) < LAYERS - PAGE_AT_ONCE // 2

    shown = rows(page)
    assert [r["a"] for r in shown] == [p.a_name for p in truth.pairs]
    assert [r["verdict"] for r in shown] == [p.verdict for p in truth.pairs]
    assert [r["standing"] for r in shown] == ["pass"] * first + ["first-failing"] + ["after"] * (LAYERS - first - 1)
    assert [r["ulp"] for r in shown] == [f"{p.report.max_ulp:,}" for p in truth.pairs]
    assert page.locator("[data-testid=bisect-row-pending]").count() == 0

    # From the answer on: the rows built later move nothing in view (neither a row's height
    # held for it nor a column widened by a later row).
    shifts = page.evaluate(CLS_SINCE_JS, at_once["at"])
    print(f"{width} px: CLS {shifts['value']:.4f} while {at_once['pending']} rows came in later "
          f"(since Compare: {page.evaluate(CLS_SINCE_JS, start)['value']:.4f})")
    assert shifts["value"] <= 0.01, shifts["shifts"]
    assert violations(page) == []  # axe, on the whole table (a region that scrolls at 390 px)


def test_a_row_of_a_sliced_table_moves_by_keyboard_and_keeps_the_focus(ready_page, captures):
    page = ready_page
    bisect_in_page(page, captures)
    order = [r["a"] for r in rows(page)]
    row = LAYERS - 5  # built in a later slice
    page.locator(f"[data-testid=bisect-row][data-index='{row}'] button.link").focus()
    page.evaluate("() => { document.querySelector('[data-testid=\"bisect-moved\"]').textContent = ''; }")
    page.keyboard.press("Alt+ArrowUp")
    page.wait_for_function("() => document.querySelector('[data-testid=\"bisect-moved\"]').textContent !== ''",
                           timeout=TIMEOUT_MS)
    page.locator("#bisect-table[data-rows=complete]").wait_for(timeout=TIMEOUT_MS)
    order[row - 1], order[row] = order[row], order[row - 1]
    assert [r["a"] for r in rows(page)] == order
    focused = page.evaluate("() => document.activeElement.closest('[data-testid=bisect-row]').dataset")
    assert focused["name"] == order[row - 1] and focused["index"] == str(row - 1)
    # A click on a row opens its pair (one listener for every row, built at once or later).
    page.locator(f"[data-testid=bisect-row][data-index='{row + 2}']").click()
    page.get_by_test_id("pair-title").wait_for(timeout=TIMEOUT_MS)
    title = page.get_by_test_id("pair-title").text_content()
    assert title.startswith(f"Layer {row + 3} of {LAYERS}: A {order[row + 2]} ")
