"""Bisect by layer in the page, on the real PyTorch / ONNX Runtime captures.

The truth about the captures (which layer was bugged, which graph output was renamed) is
read from ``tests/fixtures/models/manifest.json``; the numbers a row must show are computed
here by ``perpendis`` natively, so the page (Pyodide) is checked against CPython.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from perpendis.engine.options import ComparisonOptions
from perpendis.inputs import formats
from perpendis.layers.bisect import bisect, bisect_runs, pair_names

MODELS = Path(__file__).resolve().parents[1] / "fixtures" / "models"
MANIFEST = json.loads((MODELS / "manifest.json").read_text())
CAPTURES = {c["model"]: c for c in MANIFEST["captures"]}
TIMEOUT_MS = 120_000


def capture_path(model: str, run: str, container: str = "npz") -> Path:
    return MODELS / next(f for f in CAPTURES[model][run] if f.endswith("." + container))


def capture(model: str, run: str, container: str = "npz") -> list:
    path = capture_path(model, run, container)
    return formats.read(path.read_bytes(), path.name)


def drop_files(page, side: str, paths: list[Path]) -> None:
    page.get_by_test_id(f"file-{side}").set_input_files([str(p) for p in paths])
    # The chip appears once the page has read the files.
    page.wait_for_selector(f"#chip-{side}:not([hidden])")


def run_and_wait(page) -> None:
    """Press Compare and wait for a fresh bisect summary."""
    page.evaluate("() => document.querySelector('[data-testid=\"bisect-summary\"]')?.remove()")
    page.get_by_test_id("compare").click()
    page.get_by_test_id("bisect-summary").wait_for(timeout=TIMEOUT_MS)
    whole_table(page)


def whole_table(page) -> None:
    """Wait until every row is built: a table of many rows is built in slices after the answer."""
    page.locator("#bisect-table[data-rows=complete]").wait_for(timeout=TIMEOUT_MS)


def bisect_captures(page, model: str, run_b: str, container: str = "npz") -> None:
    """Open the model's PyTorch capture as A and run ``run_b`` as B, press Compare, wait for the table."""
    drop_files(page, "a", [capture_path(model, "torch")])
    drop_files(page, "b", [capture_path(model, run_b, container)])
    run_and_wait(page)


def rows(page) -> list[dict[str, str]]:
    return page.eval_on_selector_all(
        "[data-testid=bisect-row]",
        """rows => rows.map(r => ({
             a: r.querySelector('[data-testid=bisect-a-name]').firstChild.textContent,
             standing: r.dataset.standing, verdict: r.dataset.verdict,
             ulp: r.querySelector('[data-testid=bisect-max-ulp]').textContent }))""",
    )


def test_clean_pair_has_no_failing_layer_and_lists_one_side_tensors(ready_page):
    page = ready_page
    bisect_captures(page, "cnn", "ort")
    native = bisect(capture("cnn", "torch"), capture("cnn", "ort"))
    assert native.first_failing is None
    # The page said why it switched views.
    assert "holds" in page.get_by_test_id("bisect-note").text_content()
    shown = rows(page)
    assert [r["a"] for r in shown] == [p.a_name for p in native.pairs]
    assert [r["ulp"] for r in shown] == [f"{p.report.max_ulp:,}" for p in native.pairs]
    assert {r["standing"] for r in shown} == {"pass"} and page.get_by_test_id("first-failing").count() == 0
    assert page.get_by_test_id("depth-point").count() == len(native.pairs)
    # The graph output is renamed by the export: no name pairs it, its agreeing values do.
    ((a_name, b_name),) = CAPTURES["cnn"]["mapping"].items()
    assert native.only_a == [] and native.pairs[-1].a_name == a_name and native.pairs[-1].b_name == b_name
    last = page.locator("[data-testid=bisect-row]").last
    assert last.locator("[data-testid=bisect-how]").text_content() == "order, shape"
    assert page.get_by_test_id("only-b-item").all_text_contents() == native.only_b


# A sets the order of layers, so it comes in a container that keeps the execution order
# (safetensors sorts by name); B may come in any container.
@pytest.mark.parametrize(
    ("model", "container"), [("cnn", "npz"), ("transformer", "npz"), ("cnn", "safetensors"), ("transformer", "pt")]
)
def test_bugged_pair_marks_the_known_layer_and_a_row_opens_its_report(ready_page, model, container):
    page = ready_page
    bisect_captures(page, model, "ort_bug", container)
    bug_layer = CAPTURES[model]["bug_layer"]
    marked = page.get_by_test_id("first-failing")
    assert marked.count() == 1
    shown = rows(page)
    first = next(i for i, r in enumerate(shown) if r["standing"] == "first-failing")
    assert shown[first]["a"] == bug_layer
    assert all(r["standing"] == "pass" and r["verdict"] != "investigate" for r in shown[:first])

    # Selecting the row opens the full report of that pair, as perpendis computes it natively.
    native = bisect(capture(model, "torch"), capture(model, "ort_bug", container))
    report = native.pairs[first].report
    page.locator(f"[data-testid=bisect-row][data-index='{first}']").click()
    page.wait_for_selector(f"#verdict-box[data-verdict='{report.verdict}']", timeout=TIMEOUT_MS)
    assert bug_layer in page.get_by_test_id("pair-title").text_content()
    index = report.first_diff.index
    want = f"({index[0]},)" if len(index) == 1 else "(" + ", ".join(str(i) for i in index) + ")"
    assert page.get_by_test_id("first-diff-index").text_content().strip() == want
    assert page.get_by_test_id("max-ulp").text_content().strip() == f"{report.max_ulp:,}"
    # The inspector works on that pair: it opens on its first failing element.
    index = (report.tolerance.first_fail or report.first_diff).index
    want = f"({index[0]},)" if len(index) == 1 else "(" + ", ".join(str(i) for i in index) + ")"
    page.wait_for_function(
        "want => document.querySelector('[data-testid=\"element-index\"]')?.textContent === want", arg=want
    )


def test_several_npy_files_per_side_with_progress(ready_page, tmp_path):
    """One .npy per layer and side, named after the layer, dropped at once on each box."""
    page = ready_page
    a_run, b_run = capture("cnn", "torch"), capture("cnn", "ort_bug")
    pairs, _, _ = pair_names([t.name for t in a_run], [t.name for t in b_run])
    paths = {"a": [], "b": []}
    for k, (i, j, _) in enumerate(pairs):
        for side, tensor in (("a", a_run[i]), ("b", b_run[j])):
            path = tmp_path / side / f"{k:02d}_{a_run[i].name}.npy"
            path.parent.mkdir(exist_ok=True)
            np.save(path, tensor.array)
            paths[side].append(path)
    drop_files(page, "a", paths["a"])
    drop_files(page, "b", paths["b"][::-1])  # paired by file name, whatever the order
    assert "files" in page.locator("#chip-b .file-name").text_content()
    page.evaluate(
        """() => {
             window.__progress = [];
             const job = document.querySelector('[data-testid="progress"]');
             new MutationObserver(() => window.__progress.push(job.textContent))
               .observe(job, { childList: true, characterData: true, subtree: true });
           }"""
    )
    run_and_wait(page)
    shown = rows(page)
    assert [r["a"] for r in shown] == [p.stem for p in paths["a"]]
    first = next(i for i, r in enumerate(shown) if r["standing"] == "first-failing")
    assert shown[first]["a"].endswith("_" + CAPTURES["cnn"]["bug_layer"])
    progress = page.evaluate("() => window.__progress")
    assert any(text.startswith("comparing 0") for text in progress), progress


def test_three_runs_matrix(ready_page):
    page = ready_page
    mapping = CAPTURES["cnn"]["mapping"]
    drop_files(page, "a", [capture_path("cnn", "torch")])
    drop_files(page, "b", [capture_path("cnn", "ort")])
    page.get_by_test_id("add-run").click()
    page.get_by_test_id("file-c").set_input_files(str(capture_path("cnn", "ort_bug")))
    page.wait_for_selector("[data-run=C] .file-chip:not([hidden])")
    page.get_by_test_id("run-reference").select_option("A")
    run_and_wait(page)
    # The renamed graph output is paired through the mapping field, which runs everything again.
    page.get_by_test_id("mapping").fill("\n".join(f"{a} = {b}" for a, b in mapping.items()))
    page.evaluate("() => document.querySelector('[data-testid=\"runs-departs\"]').remove()")
    page.get_by_test_id("apply-mapping").click()
    page.get_by_test_id("runs-departs").wait_for(timeout=TIMEOUT_MS)

    runs = {"A": capture("cnn", "torch"), "B": capture("cnn", "ort"), "C": capture("cnn", "ort_bug")}
    native = bisect_runs(runs, "A", mapping=mapping)
    cells = page.eval_on_selector_all(
        "[data-testid=runs-cell]",
        """cells => cells.map(c => [c.dataset.run, c.dataset.layer, c.dataset.verdict,
             c.querySelector('[data-testid=runs-cell-ulp]')?.textContent ?? null])""",
    )
    want = [
        [run, layer, cell["verdict"] if cell else "", f"{cell['max_ulp']:,}" if cell else None]
        for layer_index, layer in enumerate(native.layers)
        for run, row in native.cells.items()
        for cell in [row[layer_index]]
    ]
    assert cells == want
    assert native.departs_first == "C"
    assert "Run C" in page.get_by_test_id("runs-departs").text_content()
    assert CAPTURES["cnn"]["bug_layer"] in page.get_by_test_id("runs-departs").text_content()
    # The table below shows the departing run against the reference, its first failure marked.
    first = page.get_by_test_id("first-failing").locator("xpath=..")
    assert first.text_content().startswith(CAPTURES["cnn"]["bug_layer"])
    # Another run's layers on demand.
    page.locator("[data-testid=runs-open][data-run=B]").click()
    page.wait_for_selector("[data-testid=runs-open][data-run=B][aria-pressed=true]", timeout=TIMEOUT_MS)
    assert page.get_by_test_id("first-failing").count() == 0


def test_new_tolerance_judges_every_layer_again_and_keeps_the_open_layer(ready_page):
    page = ready_page
    bisect_captures(page, "cnn", "ort")
    assert page.get_by_test_id("first-failing").count() == 0
    page.locator("[data-testid=bisect-row][data-index='0']").click()
    page.get_by_test_id("pair-title").wait_for(timeout=TIMEOUT_MS)

    page.evaluate("() => document.querySelector('[data-testid=\"bisect-summary\"]').remove()")
    page.get_by_test_id("atol").fill("0")
    page.get_by_test_id("rtol").fill("0")
    page.get_by_test_id("bisect-summary").wait_for(timeout=TIMEOUT_MS)
    native = bisect(capture("cnn", "torch"), capture("cnn", "ort"), ComparisonOptions(atol=0.0, rtol=0.0))
    assert native.first_failing is not None
    first = page.get_by_test_id("first-failing").locator("xpath=..")
    first.wait_for(timeout=TIMEOUT_MS)
    assert first.text_content().startswith(native.first_failing.a_name)
    # The layer that was open is open again, judged with the new tolerance.
    want = native.pairs[0].report.verdict
    page.wait_for_selector(f"#verdict-box[data-verdict='{want}']", timeout=TIMEOUT_MS)
    assert page.get_by_test_id("pair-title").text_content().startswith(f"Layer 1 of {len(native.pairs)}")
    assert page.locator("[data-testid=bisect-row][data-index='0']").get_attribute("aria-selected") == "true"


def test_a_name_pattern_narrows_the_layers_and_says_how_many_were_skipped(ready_page):
    page = ready_page
    bisect_captures(page, "cnn", "ort_bug")
    everything = rows(page)
    page.get_by_test_id("only-layers").fill("layer1.*, conv1")
    page.evaluate("() => document.querySelector('[data-testid=\"bisect-summary\"]')?.remove()")
    page.get_by_test_id("only-layers").press("Enter")
    page.get_by_test_id("bisect-summary").wait_for(timeout=TIMEOUT_MS)
    native = bisect(capture("cnn", "torch"), capture("cnn", "ort_bug"), only=["layer1.*", "conv1"])
    shown = rows(page)
    assert [r["a"] for r in shown] == [p.a_name for p in native.pairs]
    assert 0 < len(shown) < len(everything)
    # The bug is in layer2: every layer picked passes.
    assert page.get_by_test_id("first-failing").count() == 0
    skipped = page.get_by_test_id("skipped")
    assert skipped.is_visible() and f"{native.n_skipped} other paired layer(s)" in skipped.text_content()
