"""The visual evidence: bit cells, navigation, worst list, tolerance controls, charts.

Expected positions and counts come from NumPy on the arrays the test made.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from heatmap_cells import CANVAS, cells
from made import numpy_text

REPORT_TIMEOUT_MS = 60_000
STEP_TIMEOUT_MS = 20_000




def as_index(flat: int, shape: tuple[int, ...]) -> str:
    return str(tuple(int(i) for i in np.unravel_index(flat, shape)))


def ulps32(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """ULP distance of finite float32 values: sign-magnitude bits mapped to value order."""

    def key(x: np.ndarray) -> np.ndarray:
        i = x.view(np.int32).astype(np.int64)
        return np.where(i < 0, -(i & 0x7FFFFFFF), i)

    return np.abs(key(a) - key(b))


def pair() -> tuple[np.ndarray, np.ndarray]:
    """(3, 4, 5) float32: three elements a few ULPs off, one replaced outright (a bug)."""
    rng = np.random.default_rng(11)
    a = rng.standard_normal((3, 4, 5)).astype(np.float32)
    b = a.copy()
    flat = b.ravel()
    flat[8] = np.nextafter(flat[8], np.float32(np.inf))
    flat[27] = np.nextafter(np.nextafter(flat[27], np.float32(-np.inf)), np.float32(-np.inf))
    flat[44] = flat[44] + np.float32(3.0)
    flat[51] = np.nextafter(flat[51], np.float32(np.inf))
    return a, b


def show(page, a: np.ndarray, b: np.ndarray) -> None:
    page.get_by_test_id("paste-a").fill(numpy_text(a))
    page.get_by_test_id("paste-b").fill(numpy_text(b))
    page.get_by_test_id("compare").click()
    page.get_by_test_id("verdict").wait_for(timeout=REPORT_TIMEOUT_MS)


def wait_text(page, testid: str, want: str) -> None:
    page.wait_for_function(
        "([id, want]) => document.querySelector(`[data-testid=\"${id}\"]`)?.textContent.trim() === want",
        arg=[testid, want],
        timeout=STEP_TIMEOUT_MS,
    )


def marked_bits(page, side: str) -> list[int]:
    """Positions (in the bit string without spaces) of the cells marked as differing."""
    return page.evaluate(
        """side => [...document.querySelectorAll(`[data-testid="bits-${side}"] .bit`)]
                   .flatMap((cell, i) => cell.dataset.diff === "1" ? [i] : [])""",
        side,
    )


def test_bits_navigation_and_worst(ready_page):
    page = ready_page
    a, b = pair()
    show(page, a, b)
    differing = np.flatnonzero(a.view(np.uint32) != b.view(np.uint32))
    assert list(differing) == [8, 27, 44, 51]

    # The inspector opens at the first element failing the tolerance the page shows...
    atol = float(page.get_by_test_id("atol").input_value())
    rtol = float(page.get_by_test_id("rtol").input_value())
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    first_fail = int(np.flatnonzero(np.abs(a64 - b64) > atol + rtol * np.abs(b64))[0])
    assert first_fail == 44
    wait_text(page, "element-index", as_index(first_fail, a.shape))
    # ...with the first difference one click away.
    page.get_by_test_id("first-diff").click()
    wait_text(page, "element-index", as_index(8, a.shape))
    xor = int(a.ravel()[8].view(np.uint32) ^ b.ravel()[8].view(np.uint32))
    want = [i for i, bit in enumerate(format(xor, "032b")) if bit == "1"]
    assert marked_bits(page, "a") == want
    assert marked_bits(page, "b") == want
    assert page.get_by_test_id("value-a").text_content() == str(a.ravel()[8])

    page.get_by_test_id("prev-diff").click()
    wait_text(page, "nav-status", "No earlier difference.")
    for flat in differing[1:]:
        page.get_by_test_id("next-diff").click()
        wait_text(page, "element-index", as_index(int(flat), a.shape))
        wait_text(page, "ulp", f"{int(ulps32(a, b).ravel()[flat]):,}")
    page.get_by_test_id("next-diff").click()
    wait_text(page, "nav-status", "No later difference.")
    page.get_by_test_id("prev-diff").click()
    wait_text(page, "element-index", as_index(int(differing[-2]), a.shape))

    worst = int(np.argmax(ulps32(a, b)))
    page.get_by_test_id("worst-ulp").click()
    wait_text(page, "element-index", as_index(worst, a.shape))
    assert page.get_by_test_id("worst-ulp").text_content() == as_index(worst, a.shape)


def test_tolerance_rejudges(ready_page):
    page = ready_page
    a, b = pair()
    show(page, a, b)
    page.get_by_test_id("atol").fill("0")
    page.get_by_test_id("rtol").fill("0")
    n_diff = str(len(np.flatnonzero(a != b)))
    page.wait_for_function(
        "want => document.querySelector('[data-testid=\"n-fail\"]')?.textContent.startsWith(want + ' ')",
        arg=n_diff,
        timeout=STEP_TIMEOUT_MS,
    )
    assert page.get_by_test_id("tolerance-result").text_content().startswith("fails")
    page.get_by_test_id("atol").fill("10")
    page.wait_for_function(
        "() => document.querySelector('[data-testid=\"tolerance-result\"]')?.textContent.startsWith('passes')",
        timeout=STEP_TIMEOUT_MS,
    )
    assert page.get_by_test_id("n-fail").text_content().startswith("0 ")
    page.get_by_test_id("preset").select_option("exact")
    page.wait_for_function(
        "want => document.querySelector('[data-testid=\"n-fail\"]')?.textContent.startsWith(want + ' ')",
        arg=n_diff,
        timeout=STEP_TIMEOUT_MS,
    )
    assert page.get_by_test_id("atol").input_value() == "0"
    # The re-judged report is final: the page is no longer busy and offers no Cancel.
    page.wait_for_function("() => !document.body.classList.contains('busy')", timeout=STEP_TIMEOUT_MS)
    assert page.locator("#cancel").is_hidden()


def test_charts_and_heatmap(ready_page):
    page = ready_page
    a, b = pair()
    show(page, a, b)
    ulps = ulps32(a, b).ravel()

    bars = page.locator("[data-testid='histogram'] rect.bar")
    counts = {bars.nth(i).get_attribute("data-edge"): int(bars.nth(i).get_attribute("data-count"))
              for i in range(bars.count())}
    assert sum(counts.values()) == a.size
    assert counts["0"] == int((ulps == 0).sum())
    assert counts["1"] == int((ulps == 1).sum())
    assert counts["2"] == int((ulps == 2).sum())

    page.locator("[data-testid='scatter'] circle").first.wait_for(timeout=STEP_TIMEOUT_MS)
    assert page.locator("[data-testid='scatter'] circle").count() == 4

    # The heatmap opens on the slice of the top finding's element, the replaced one (2, 0, 4),
    # not on the first difference's (0, 1, 3): rows axis 1, columns axis 2, axis-0 index 2.
    bug = np.unravel_index(int(np.argmax(np.abs(a.astype(np.float64) - b))), a.shape)
    assert bug == (2, 0, 4)
    heat = page.locator(CANVAS)
    heat.wait_for(timeout=STEP_TIMEOUT_MS)
    assert (heat.get_attribute("data-rows"), heat.get_attribute("data-cols")) == ("4", "5")
    assert page.get_by_test_id("slice-index-0").input_value() == "2"
    mark = page.get_by_test_id("heatmap-mark")
    mark.wait_for(timeout=STEP_TIMEOUT_MS)
    assert (mark.get_attribute("data-row"), mark.get_attribute("data-col")) == ("0", "4")
    hot = [[c.row, c.col] for c in cells(page) if c.kind == "heat"]
    want = np.argwhere(a[2] != b[2]).tolist()
    assert sorted(hot) == sorted(want)

    # Rows along axis 0 instead: a 3 × 5 slice at axis-1 index 0.
    page.get_by_test_id("slice-rows").select_option("0")
    page.wait_for_function(
        "sel => document.querySelector(sel)?.dataset.rows === '3'", arg=CANVAS, timeout=STEP_TIMEOUT_MS
    )
    assert page.locator(CANVAS).get_attribute("data-cols") == "5"
    painted = cells(page)
    assert len(painted) == 15 and "blank" not in {c.kind for c in painted}  # every cell painted
    assert sorted([c.row, c.col] for c in painted if c.kind == "heat") == np.argwhere(a[:, 0] != b[:, 0]).tolist()

    # Per-axis failure bars: the one failing element (flat 44) under the default tolerance.
    fail_index = np.unravel_index(44, a.shape)
    for axis, at in enumerate(fail_index):
        row = page.locator(f"#axes .axis-row[data-axis='{axis}'] rect.bar")
        counts = [int(row.nth(i).get_attribute("data-count")) for i in range(row.count())]
        assert len(counts) == a.shape[axis]
        assert counts == [1 if i == at else 0 for i in range(a.shape[axis])]


def test_the_evidence_opens_at_the_finding(ready_page):
    """A real bug case: ONNX Runtime given one NaN input element (tests/fixtures/models, linear.nan.npy).

    The NaN output row lies in batch 1, while the first (rounding) difference is in batch 0: the
    heat map opens on batch 1 with the NaN element marked, the inspector at the first failing
    element, and the first difference is one click away.
    """
    page = ready_page
    models = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "models"
    a, b = np.load(models / "linear.torch.npy"), np.load(models / "linear.nan.npy")
    bad = [tuple(int(i) for i in at) for at in np.argwhere(np.isnan(b) != np.isnan(a))]
    differing = np.flatnonzero(a.view(np.uint32) != b.view(np.uint32))
    assert bad[0][0] == 1 and np.unravel_index(differing[0], a.shape)[0] == 0
    page.get_by_test_id("file-a").set_input_files(models / "linear.torch.npy")
    page.get_by_test_id("file-b").set_input_files(models / "linear.nan.npy")
    page.get_by_text("linear.nan.npy (").wait_for()
    page.get_by_test_id("compare").click()
    page.get_by_test_id("verdict").wait_for(timeout=REPORT_TIMEOUT_MS)

    wait_text(page, "element-index", str(bad[0]))
    page.locator(CANVAS).wait_for(timeout=STEP_TIMEOUT_MS)
    assert page.get_by_test_id("slice-index-0").input_value() == str(bad[0][0])
    mark = page.get_by_test_id("heatmap-mark")
    mark.wait_for(timeout=STEP_TIMEOUT_MS)
    assert (int(mark.get_attribute("data-row")), int(mark.get_attribute("data-col"))) == bad[0][1:]
    nonfinite = [(c.row, c.col) for c in cells(page) if c.kind == "nonfinite"]
    assert sorted(map(tuple, nonfinite)) == sorted(at[1:] for at in bad if at[0] == bad[0][0])

    page.get_by_test_id("first-diff").click()
    wait_text(page, "element-index", as_index(int(differing[0]), a.shape))


def test_an_infinite_relative_error_and_a_ulp_distance_across_zero_say_so(ready_page):
    page = ready_page
    a = np.array([1e-30, 2.0, 3.0], dtype=np.float32)
    b = np.array([-1e-30, 2.0, 0.0], dtype=np.float32)
    show(page, a, b)
    # The inspector opens at the first failing element, (2,): B is 0 there, A is not.
    wait_text(page, "element-index", "(2,)")
    assert b[2] == 0 and a[2] != 0
    wait_text(page, "rel-diff", "infinite: B is 0 and A is not")
    assert page.get_by_test_id("ulp-across-zero").count() == 0
    # Opposite signs: NumPy's own count of the float32 values between them, through zero.
    assert int(ulps32(a[:1], b[:1])[0]) > 2**24
    page.get_by_test_id("first-diff").click()
    wait_text(page, "element-index", "(0,)")
    wait_text(page, "ulp", f"{int(ulps32(a[:1], b[:1])[0]):,}")
    page.get_by_test_id("ulp-across-zero").wait_for(timeout=STEP_TIMEOUT_MS)
    assert "opposite signs" in page.get_by_test_id("ulp-across-zero").text_content()


def test_the_element_view_opens_at_the_top_findings_place_not_the_first_failure(ready_page, tmp_path):
    """float32 (3, 8, 16): one element off by 5e-3 at (0, 1, 2) (the first difference and the
    first failure) and a NaN on one side at (2, 6, 9), the top finding. The element view and
    the heat-map slice open at the NaN; the first difference is one click away."""
    page = ready_page
    rng = np.random.default_rng(23)
    b = rng.standard_normal((3, 8, 16)).astype(np.float32)
    a = b.copy()
    a[0, 1, 2] += np.float32(5e-3)
    a[2, 6, 9] = np.nan
    page.get_by_test_id("paste-a").fill(numpy_text(a))
    page.get_by_test_id("paste-b").fill(numpy_text(b))
    page.get_by_test_id("compare").click()
    page.get_by_test_id("verdict").wait_for(timeout=REPORT_TIMEOUT_MS)
    page.locator("#findings").get_by_text("NaN on one side only").first.wait_for(timeout=STEP_TIMEOUT_MS)
    wait_text(page, "element-index", "(2, 6, 9)")
    page.locator(CANVAS).wait_for(timeout=STEP_TIMEOUT_MS)
    assert page.get_by_test_id("slice-index-0").input_value() == "2"
    assert page.get_by_test_id("value-a").text_content().strip().lower() == "nan"
    page.screenshot(path=str(tmp_path / "finding.png"), full_page=True)
    page.get_by_test_id("first-diff").click()
    wait_text(page, "element-index", "(0, 1, 2)")
