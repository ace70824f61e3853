"""Reordering bisect rows, selecting elements on the heatmap, readable statistics, and
share links that carry the reference.

What each view must show is worked out here independently: the verdicts of the layers by
``perpendis`` natively, the bits by NumPy, the rounded statistics by Python's ``%g``.
"""

from __future__ import annotations

import json
import shutil

import numpy as np
from heatmap_cells import CANVAS, cell, cells, click_cell, hovered_value, wait_slice
from made import numpy_text
from perpendis.engine.options import ComparisonOptions
from perpendis.layers.bisect import bisect
from test_page_bisect import CAPTURES, TIMEOUT_MS, bisect_captures, capture, rows

REPORT_TIMEOUT_MS = 60_000
STEP_TIMEOUT_MS = 20_000


# ---------------------------------------------------------------------------------- bisect order


def moved(page, action) -> None:
    """Do `action` (a move of a row) and wait until the page has the core's new order."""
    page.evaluate("() => { document.querySelector('[data-testid=\"bisect-moved\"]').textContent = ''; }")
    action()
    page.wait_for_function(
        "() => document.querySelector('[data-testid=\"bisect-moved\"]').textContent !== ''", timeout=TIMEOUT_MS
    )


def expect_order(page, order: list[str], verdicts: dict[str, str]) -> None:
    """Rows and chart points in `order`, the first failing row the first in it that fails."""
    shown = rows(page)
    assert [r["a"] for r in shown] == order
    first = next(i for i, name in enumerate(order) if verdicts[name] == "investigate")
    assert [r["standing"] for r in shown] == ["pass"] * first + ["first-failing"] + ["after"] * (len(order) - first - 1)
    assert page.get_by_test_id("first-failing").locator("xpath=..").text_content().startswith(order[first])
    points = page.eval_on_selector_all("[data-testid=depth-point]", "ps => ps.map(p => p.dataset.name)")
    assert points == order
    assert page.get_by_test_id("depth-first-band").get_attribute("data-index") == str(first)
    summary = page.get_by_test_id("bisect-summary").text_content()
    assert f"First failing: {order[first]}" in summary and f"row {first + 1} of {len(order)}" in summary


def test_bisect_rows_reorder_by_drag_and_keyboard(ready_page):
    page = ready_page
    bisect_captures(page, "cnn", "ort_bug")
    native = bisect(capture("cnn", "torch"), capture("cnn", "ort_bug"))
    verdicts = {p.a_name: p.verdict for p in native.pairs}
    order = [p.a_name for p in native.pairs]
    assert order.index(CAPTURES["cnn"]["bug_layer"]) > 1  # passing rows come first in saved order
    expect_order(page, order, verdicts)

    # Drag the bug layer's row by its handle onto the first row: it takes that place.
    bug = order.index(CAPTURES["cnn"]["bug_layer"])
    handle = page.locator(f"[data-testid=bisect-row][data-index='{bug}'] [data-testid=bisect-drag]")
    moved(page, lambda: handle.drag_to(page.locator("[data-testid=bisect-row][data-index='0']")))
    order = [order[bug], *order[:bug], *order[bug + 1 :]]
    expect_order(page, order, verdicts)
    assert page.get_by_test_id("first-failing").locator("xpath=..").text_content().startswith(order[0])

    # Down one place from the keyboard: Alt+ArrowDown on the focused row; focus follows the row.
    page.locator("[data-testid=bisect-row][data-index='0'] button.link").focus()
    moved(page, lambda: page.keyboard.press("Alt+ArrowDown"))
    order[0], order[1] = order[1], order[0]
    expect_order(page, order, verdicts)
    focused = page.evaluate("() => document.activeElement.closest('[data-testid=bisect-row]').dataset.name")
    assert focused == order[1]
    # ... and once more with its "move down" button, pressed with the keyboard.
    button = page.locator("[data-testid=bisect-row][data-index='1'] [data-testid=bisect-move-down]")
    assert button.get_attribute("aria-label").startswith(f"Move {order[1]} down")
    button.focus()
    moved(page, lambda: button.press("Enter"))
    order[1], order[2] = order[2], order[1]
    expect_order(page, order, verdicts)
    assert page.evaluate("() => document.activeElement.dataset.move") == "down"
    assert page.evaluate("() => document.activeElement.closest('[data-testid=bisect-row]').dataset.index") == "2"
    assert page.get_by_test_id("bisect-moved").text_content().startswith(f"{order[2]} moved to row 3 of {len(order)}")

    # A row dropped on an input box is not pasted there: the box keeps what it holds.
    page.get_by_test_id("paste-a").fill("kept")
    page.locator("[data-testid=bisect-row][data-index='0'] [data-testid=bisect-drag]").drag_to(
        page.get_by_test_id("paste-a")
    )
    assert page.get_by_test_id("paste-a").input_value() == "kept"
    assert [r["a"] for r in rows(page)] == order

    # A row opens the pair it shows, in the new order.
    first = next(i for i, name in enumerate(order) if verdicts[name] == "investigate")
    page.locator(f"[data-testid=bisect-row][data-index='{first}']").click()
    page.get_by_test_id("pair-title").wait_for(timeout=TIMEOUT_MS)
    title = page.get_by_test_id("pair-title").text_content()
    assert title.startswith(f"Layer {first + 1} of {len(order)}: A {order[first]} ")
    report = next(p.report for p in native.pairs if p.a_name == order[first])
    page.wait_for_selector(f"#verdict-box[data-verdict='{report.verdict}']", timeout=TIMEOUT_MS)
    assert page.get_by_test_id("max-ulp").text_content().strip() == f"{report.max_ulp:,}"

    # A new tolerance judges every layer again and keeps the user's order.
    page.evaluate("() => document.querySelector('[data-testid=\"bisect-summary\"]').remove()")
    page.get_by_test_id("preset").select_option("fp16")
    page.get_by_test_id("bisect-summary").wait_for(timeout=TIMEOUT_MS)
    relaxed = bisect(capture("cnn", "torch"), capture("cnn", "ort_bug"), ComparisonOptions(preset="fp16"))
    page.wait_for_function(
        "n => document.querySelectorAll('[data-testid=depth-point]').length === n", arg=len(order), timeout=TIMEOUT_MS
    )
    assert [r["a"] for r in rows(page)] == order
    assert [r["verdict"] for r in rows(page)] == [
        next(p.verdict for p in relaxed.pairs if p.a_name == name) for name in order
    ]


# ---------------------------------------------------------------------------------- heatmap


def compare_files(page, tmp_path, a: np.ndarray, b: np.ndarray) -> None:
    np.save(tmp_path / "a.npy", a)
    np.save(tmp_path / "b.npy", b)
    page.get_by_test_id("file-a").set_input_files(tmp_path / "a.npy")
    page.get_by_test_id("file-b").set_input_files(tmp_path / "b.npy")
    page.get_by_text("b.npy (").wait_for()
    page.get_by_test_id("compare").click()
    page.get_by_test_id("verdict").wait_for(timeout=REPORT_TIMEOUT_MS)


def bit_text(x: np.float32) -> str:
    s = format(int(np.float32(x).view(np.uint32)), "032b")
    return f"{s[0]} {s[1:9]} {s[9:]}"


def wait_index(page, index: tuple[int, ...]) -> None:
    want = "(" + ", ".join(str(i) for i in index) + ")"
    page.wait_for_function(
        "want => document.querySelector('[data-testid=\"element-index\"]')?.textContent === want",
        arg=want,
        timeout=STEP_TIMEOUT_MS,
    )


def expect_element(page, a: np.ndarray, b: np.ndarray, index: tuple[int, ...]) -> None:
    """The inspector shows the element at `index`, its bits and values as NumPy has them."""
    wait_index(page, index)
    page.wait_for_function("() => document.querySelector('[data-testid=\"neighbours-a\"]')", timeout=STEP_TIMEOUT_MS)
    assert page.get_by_test_id("bits-a").text_content() == bit_text(a[index])
    assert page.get_by_test_id("bits-b").text_content() == bit_text(b[index])
    assert page.get_by_test_id("value-a").text_content() == str(a[index])
    assert page.get_by_test_id("value-b").text_content() == str(b[index])


def test_clicking_a_heatmap_cell_selects_its_element(ready_page, tmp_path):
    page = ready_page
    rng = np.random.default_rng(7)
    a = rng.standard_normal((16, 20)).astype(np.float32)
    b = a.copy()
    b[2, 3] = np.nextafter(b[2, 3], np.float32(np.inf))  # rounding, where the view opens
    b[5:9, 10:15] += np.float32(0.5)  # the bug: a block
    compare_files(page, tmp_path, a, b)
    wait_index(page, (5, 10))  # the first failing element; the first difference is a click away
    page.get_by_test_id("first-diff").click()
    wait_index(page, (2, 3))

    assert hovered_value(page, 7, 12) == float(abs(np.float64(a[7, 12]) - np.float64(b[7, 12])))
    assert cell(page, 7, 12).kind == "heat" and cell(page, 2, 3).kind == "heat" and cell(page, 0, 0).kind == "zero"
    click_cell(page, 7, 12)
    expect_element(page, a, b, (7, 12))
    mark = page.get_by_test_id("heatmap-mark")
    assert (mark.get_attribute("data-row"), mark.get_attribute("data-col")) == ("7", "12")
    # The same element as reached by navigating: the previous difference from here is (7, 11).
    page.get_by_test_id("prev-diff").click()
    expect_element(page, a, b, (7, 11))

    # From the keyboard: arrows on the focused heatmap step the selection cell by cell.
    page.locator(CANVAS).focus()
    page.keyboard.press("ArrowRight")
    expect_element(page, a, b, (7, 12))
    page.keyboard.press("ArrowDown")  # the heatmap keeps the focus while it is redrawn
    expect_element(page, a, b, (8, 12))
    assert (mark.get_attribute("data-row"), mark.get_attribute("data-col")) == ("8", "12")


def test_a_pooled_heatmap_cell_selects_its_worst_element(ready_page, tmp_path):
    page = ready_page
    rng = np.random.default_rng(8)
    a = rng.standard_normal((2, 150, 160)).astype(np.float32)
    b = a.copy()
    b[1, 40:60, 90:100] = np.nextafter(b[1, 40:60, 90:100], np.float32(np.inf))
    b[1, 51, 97] *= np.float32(-1.0)  # the bug, among rounding differences
    b[0, 0, 0] = np.nextafter(b[0, 0, 0], np.float32(np.inf))
    compare_files(page, tmp_path, a, b)
    page.get_by_test_id("slice-index-0").fill("1")
    page.get_by_test_id("slice-index-0").dispatch_event("change")
    bug = float(abs(np.float64(a[1, 51, 97]) - np.float64(b[1, 51, 97])))
    wait_slice(page, "axis 0 index 1", STEP_TIMEOUT_MS)
    assert int(page.locator(CANVAS).get_attribute("data-rows")) < 150  # pooled
    # The bug is the pair's largest difference: the one cell painted at full strength.
    strongest = max(cells(page), key=lambda c: c.opacity if c.kind == "heat" else -1)
    assert strongest.opacity == 1.0
    assert [c for c in cells(page) if c.kind == "heat" and c.opacity > 0.5] == [strongest]
    assert hovered_value(page, strongest.row, strongest.col) == bug
    click_cell(page, strongest.row, strongest.col)
    expect_element(page, a, b, (1, 51, 97))


# Before Compare is clicked: the moment the verdict shows, in the same turn of the event loop
# (so before the core has answered the page's question about the first difference), moves
# the heat map to index 1 along axis 0, as a quick user would.
MOVE_SLICE_AT_ONCE_JS = """() => {
  const verdict = document.querySelector('[data-testid="verdict"]');
  const observer = new MutationObserver(() => {
    const input = document.querySelector('[data-testid="slice-index-0"]');
    if (!verdict.textContent.trim() || !input) return;
    observer.disconnect();
    input.value = "1";
    input.dispatchEvent(new Event("change"));
    window.__movedWhileAsking = !document.querySelector('[data-testid="neighbours-a"]');
  });
  observer.observe(document.body, { subtree: true, childList: true, characterData: true });
}"""


def test_a_slice_chosen_while_the_first_difference_loads_stays(ready_page, tmp_path):
    """The first difference's answer moves the heat map to its slice only if the user has not moved it since."""
    page = ready_page
    a = np.zeros((2, 40, 30), dtype=np.float32)
    b = a.copy()
    b[0, 0, 3] = 1e-3  # the first difference, in slice 0
    b[1, 20, 10] = 5.0  # the worst, in slice 1
    np.save(tmp_path / "a.npy", a)
    np.save(tmp_path / "b.npy", b)
    page.get_by_test_id("file-a").set_input_files(tmp_path / "a.npy")
    page.get_by_test_id("file-b").set_input_files(tmp_path / "b.npy")
    page.get_by_text("b.npy (").wait_for()
    page.evaluate(MOVE_SLICE_AT_ONCE_JS)
    page.get_by_test_id("compare").click()
    wait_index(page, (0, 0, 3))  # the first difference is shown in the inspector, with its details...
    page.wait_for_function("() => document.querySelector('[data-testid=\"neighbours-a\"]')", timeout=STEP_TIMEOUT_MS)
    assert page.evaluate("() => window.__movedWhileAsking") is True  # (which came after the slice moved)
    wait_slice(page, "axis 0 index 1", STEP_TIMEOUT_MS)
    assert [(c.row, c.col) for c in cells(page) if c.kind == "heat"] == [(20, 10)]
    assert hovered_value(page, 20, 10) == 5
    assert page.get_by_test_id("slice-index-0").input_value() == "1"  # ...and the heat map stays where the user put it


# ---------------------------------------------------------------------------------- statistics


def g4(value: float) -> str:
    """Python's %.4g with the exponent as JavaScript writes it (1.5e-7, not 1.5e-07)."""
    mantissa, _, exponent = f"{value:.4g}".partition("e")
    return mantissa + (f"e{int(exponent)}" if exponent else "")


def downloaded_report(page) -> dict:
    with page.expect_download() as info:
        page.get_by_test_id("download-json").click()
    return json.loads(open(info.value.path()).read())


def test_statistics_show_four_significant_digits_and_keep_the_full_value(ready_page):
    page = ready_page
    rng = np.random.default_rng(9)
    b = (rng.standard_normal(500) * 1e3).astype(np.float32)
    a = b.copy()
    a[::7] = np.nextafter(a[::7], np.float32(np.inf))
    page.get_by_test_id("paste-a").fill(numpy_text(a))
    page.get_by_test_id("paste-b").fill(numpy_text(b))
    page.get_by_test_id("compare").click()
    page.get_by_test_id("verdict").wait_for(timeout=REPORT_TIMEOUT_MS)
    stats = downloaded_report(page)["stats"]
    shown = {}
    for key in ("mean_abs", "p99_abs", "mean_rel", "rmse", "cosine", "snr_db"):
        node = page.get_by_test_id(f"stat-{key}")
        shown[key] = node.text_content()
        assert shown[key] == g4(stats[key]), key
        assert float(node.locator("span").get_attribute("title")) == stats[key]  # full precision on hover
    # Both forms occur: tiny relative errors in exponent form, the SNR in plain digits.
    assert "e-" in shown["mean_rel"] and "e" not in shown["snr_db"]
    assert all(len(t.split("e")[0].replace("-", "").replace(".", "").lstrip("0")) <= 4 for t in shown.values())


# ---------------------------------------------------------------------------------- share with ref


def reference_card(page) -> dict[str, str]:
    return page.eval_on_selector_all(
        "[data-testid=reference] dd[data-testid], [data-testid=ref-verdict]",
        "nodes => Object.fromEntries(nodes.map(n => [n.dataset.testid, n.textContent]))",
    )


def test_share_link_carries_the_reference(ready_page, playwright, server):
    page = ready_page
    rng = np.random.default_rng(12)
    x = rng.standard_normal((3, 5))
    truth = np.tanh(x)
    a = np.tanh(x.astype(np.float32))
    b = (truth + 3e-6).astype(np.float32)
    page.get_by_test_id("paste-a").fill(numpy_text(a))
    page.get_by_test_id("paste-b").fill(numpy_text(b))
    page.locator("#ref-box summary").click()
    page.get_by_test_id("paste-ref").fill(numpy_text(truth))
    page.get_by_test_id("compare").click()
    page.get_by_test_id("ref-verdict").wait_for(timeout=REPORT_TIMEOUT_MS)
    original = downloaded_report(page)
    card = reference_card(page)
    assert original["ref"]["dtype"] == "float64" and card["ref-info"].startswith("(3, 5) float64")

    page.get_by_test_id("share").click()
    link = page.get_by_test_id("share-link")
    link.wait_for()
    url = link.input_value()
    assert "left out" not in page.get_by_test_id("export-status").text_content()

    browser = playwright.chromium.launch(executable_path=shutil.which("chromium"), args=["--no-sandbox"])
    try:
        other = browser.new_context().new_page()
        other.goto(url)
        other.get_by_test_id("ref-verdict").wait_for(timeout=REPORT_TIMEOUT_MS)
        assert other.get_by_test_id("paste-ref").input_value() == numpy_text(truth)
        assert reference_card(other) == card
        shared = downloaded_report(other)
        assert shared["reference"] == original["reference"] and shared["ref"] == original["ref"]
    finally:
        browser.close()


def test_a_reference_too_big_for_the_link_is_left_out_and_said_so(ready_page, tmp_path):
    page = ready_page
    a = np.full(40_000, 0.5, dtype=np.float32)
    b = a.copy()
    b[123] = np.nextafter(b[123], np.float32(1))
    # A float64 run with noise in its last digits: 320 kB that do not compress, while A and B do.
    truth = a + np.random.default_rng(13).standard_normal(a.size) * 1e-9
    for name, x in (("a", a), ("b", b), ("truth", truth)):
        np.save(tmp_path / f"{name}.npy", x)
    page.get_by_test_id("file-a").set_input_files(tmp_path / "a.npy")
    page.get_by_test_id("file-b").set_input_files(tmp_path / "b.npy")
    page.get_by_text("b.npy (").wait_for()
    page.locator("#ref-box summary").click()
    page.get_by_test_id("file-ref").set_input_files(tmp_path / "truth.npy")
    page.get_by_text("truth.npy (").wait_for()
    page.get_by_test_id("compare").click()
    page.get_by_test_id("verdict").wait_for(timeout=REPORT_TIMEOUT_MS)
    page.get_by_test_id("share").click()
    page.wait_for_function(
        "() => /left out/.test(document.querySelector('[data-testid=\"export-status\"]').textContent)",
        timeout=STEP_TIMEOUT_MS,
    )
    status = page.get_by_test_id("export-status").text_content()
    assert "The reference was left out" in status and "100 kB" in status
    assert page.get_by_test_id("share-link").is_visible()
    # The link opens on A and B alone.
    other = page.context.new_page()
    other.goto(page.get_by_test_id("share-link").input_value())
    other.get_by_test_id("verdict").wait_for(timeout=REPORT_TIMEOUT_MS)
    assert other.get_by_text("a.npy (").is_visible() and other.get_by_text("b.npy (").is_visible()
    assert other.get_by_test_id("paste-ref").input_value() == ""
    assert other.get_by_test_id("ref-verdict").count() == 0
    assert downloaded_report(other).get("ref") is None
