"""The page bisects real torch.onnx export captures (tests/fixtures/export): the first failing
row is the injected node with and without the .onnx model, two captures dropped on one box
are the pair, the command line's isolated results show their own-error column, the override
editor pairs what nothing else pairs, and the Model Explorer node data the page saves is the
command line's."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from perpendis.cli.main import main
from test_page_bisect import drop_files, run_and_wait

pytestmark = pytest.mark.browser

HERE = Path(__file__).resolve().parents[1] / "fixtures" / "export"
BUGS = json.loads((HERE / "bugs.json").read_text())


def first_row(page) -> dict[str, str]:
    row = page.locator("[data-testid=bisect-row][data-standing=first-failing]")
    assert row.count() == 1
    cell = lambda testid: row.locator(f"[data-testid={testid}]").first.text_content()  # noqa: E731
    return {"a": row.get_attribute("data-name"), "b": cell("bisect-b-name"), "op": cell("bisect-op"),
            "module": cell("bisect-module"), "how": cell("bisect-how")}


@pytest.mark.parametrize("with_model", [True, False], ids=["with model", "without model"])
def test_first_failing_row_is_the_injected_node(ready_page, with_model):
    page, fact = ready_page, BUGS["transformer_eps"]
    drop_files(page, "a", [HERE / "transformer.torch.safetensors"])
    drop_files(page, "b", [HERE / "transformer_eps.ort.npz", *([HERE / "transformer_eps.onnx"] if with_model else [])])
    run_and_wait(page)
    row = first_row(page)
    assert row["a"] == fact["module"] and row["b"].startswith(fact["value"])
    if with_model:
        assert row["op"] == "LayerNormalization" and row["module"] == fact["module"] and row["how"] == "metadata"
    else:
        assert row["how"] == "order, shape"
    rows = page.locator("[data-testid=bisect-row]")
    before = [rows.nth(i).get_attribute("data-verdict") for i in range(int(first_index(page)))]
    assert before and "investigate" not in before


def test_model_explorer_node_data_downloads_are_the_command_lines_files(ready_page, tmp_path, capsys):
    page = ready_page
    a, b = HERE / "transformer.torch.safetensors", HERE / "transformer_eps.ort.npz"
    model = HERE / "transformer_eps.onnx"
    drop_files(page, "a", [a])
    drop_files(page, "b", [b])
    run_and_wait(page)
    # Without the model nothing names the graph's nodes: the button is disabled, and says why.
    button = page.get_by_test_id("node-data-download")
    assert button.count() == 1 and button.is_disabled()
    assert ".onnx model" in page.get_by_test_id("node-data-why").text_content()

    drop_files(page, "b", [b, model])
    run_and_wait(page)
    out = tmp_path / "nodes.json"
    assert main(["bisect", str(a), str(b), "--model", str(model), "--model-explorer", str(out)]) == 1
    capsys.readouterr()
    buttons = page.get_by_test_id("node-data-download")
    saved = {}
    for i in range(buttons.count()):
        with page.expect_download() as info:
            buttons.nth(i).click()
        saved[info.value.suggested_filename] = json.loads(Path(info.value.path()).read_text())
    written = {p.name: json.loads(p.read_text()) for p in tmp_path.glob("nodes*.json")}
    assert sorted(saved) == sorted(written) == ["nodes.cosine.json", "nodes.json", "nodes.max_ulp.json",
                                                "nodes.sqnr_db.json"]
    # The same nodes, names and thresholds; a cosine's last bits differ, as Pyodide's NumPy sums
    # float64 in another order than the native one (1e-15 apart), so values are compared to 1e-12.
    assert _approx_equal(saved, written)
    assert "nodes.sqnr_db.json downloaded" in page.get_by_test_id("node-data-status").text_content()


def _approx_equal(got: object, want: object) -> bool:
    """``got == want`` but for floats, equal to 1e-12 relative (pytest.approx takes no nested dicts)."""
    if isinstance(want, dict):
        return isinstance(got, dict) and got.keys() == want.keys() and all(_approx_equal(got[k], want[k]) for k in want)
    if isinstance(want, list):
        return isinstance(got, list) and len(got) == len(want) and all(map(_approx_equal, got, want))
    if isinstance(want, float):
        return got == pytest.approx(want, rel=1e-12)
    return got == want


def first_index(page) -> str:
    return page.locator("[data-testid=bisect-row][data-standing=first-failing]").get_attribute("data-index")


def test_two_captures_on_one_box_are_the_pair(ready_page):
    page, fact = ready_page, BUGS["cnn_bias"]
    drop_files(page, "a", [HERE / "cnn.torch.safetensors", HERE / "cnn_bias.ort.safetensors"])
    run_and_wait(page)
    row = first_row(page)
    assert (row["a"], row["op"]) == (fact["module"], "Conv")


def test_command_line_isolated_results_show_the_culprit(ready_page, tmp_path, capsys):
    page, fact = ready_page, BUGS["transformer_gelu"]
    code = main(["bisect", str(HERE / "transformer.torch.safetensors"), str(HERE / "transformer_gelu.ort.npz"),
                 "--isolate", "--model", str(HERE / "transformer_gelu.onnx"), "--json"])
    assert code == 1
    (tmp_path / "bisect.json").write_text(capsys.readouterr().out)
    drop_files(page, "a", [tmp_path / "bisect.json"])
    run_and_wait(page)
    own = page.locator("[data-testid=bisect-alone][data-own=true]")
    assert own.count() == 1 and own.text_content() == "culprit"
    culprit_row = own.locator("xpath=ancestor::tr")
    assert culprit_row.get_attribute("data-name") == fact["module"]
    assert culprit_row.get_attribute("data-standing") == "first-failing"
    assert page.locator("[data-testid=bisect-alone]", has_text="inherits").count() > 1
    blame = page.get_by_test_id("bisect-culprit").text_content()
    assert fact["module"] in blame and "Run alone: A = GELU(GELU_tanh⁻¹(B))" in blame


def test_the_override_editor_pairs_what_nothing_else_does_and_compare_uses_it(ready_page, tmp_path):
    page = ready_page
    values = np.random.default_rng(1).standard_normal(5).astype(np.float32)
    np.savez(tmp_path / "left.npz", left=values, extra=values[:3])
    np.savez(tmp_path / "right.npz", right=values + 9, other=values[:2])
    drop_files(page, "a", [tmp_path / "left.npz"])
    drop_files(page, "b", [tmp_path / "right.npz"])
    run_and_wait(page)
    assert "No tensor of A pairs" in page.get_by_test_id("bisect-summary").text_content()
    assert page.get_by_test_id("mapping").is_visible()
    page.get_by_test_id("mapping").fill("left = right")
    run_and_wait(page)  # Compare, not only "Apply", uses the mapping
    row = page.locator("[data-testid=bisect-row]")
    assert row.count() == 1 and row.get_attribute("data-name") == "left"
    assert row.locator("[data-testid=bisect-how]").text_content() == "mapped"


def test_rows_follow_the_captures_saved_order_with_cosine_sqnr_and_the_pairing_chip(ready_page):
    from perpendis.inputs.formats import safetensors

    page = ready_page
    torch_side = HERE / "transformer.torch.safetensors"
    saved = json.loads(safetensors.metadata(torch_side.read_bytes())["order"])
    assert saved != sorted(saved)  # execution order, not the key order safetensors writes
    drop_files(page, "a", [torch_side])
    drop_files(page, "b", [HERE / "transformer_eps.ort.safetensors"])
    run_and_wait(page)
    rows = page.locator("[data-testid=bisect-row]")
    names = [rows.nth(i).get_attribute("data-name") for i in range(rows.count())]
    assert names == [n for n in saved if n in names] and len(names) > 10
    cosines = [float(c) for c in page.locator("[data-testid=bisect-cosine]").all_text_contents()]
    assert len(cosines) == len(names) and all(-1 <= c <= 1 for c in cosines) and max(cosines) > 0.999
    sqnr = page.locator("[data-testid=bisect-sqnr]").all_text_contents()
    assert all(s for s in sqnr)
    chip = page.get_by_test_id("bisect-pairing").text_content()
    assert chip.startswith(f"Pairs: {len(names)} by the exporter's scopes")


def test_an_unsure_first_failing_pair_says_so_and_names_the_first_sure_one(ready_page, tmp_path):
    page = ready_page
    rng = np.random.default_rng(5)
    x, y, z, w = (rng.standard_normal((6, 8)).astype(np.float32) for _ in range(4))
    # l1 has no value of its own on B's side (an embedding the exporter folded); a bug in l2 reaches l3.
    np.savez(tmp_path / "a.npz", l0=x, l1=y, l2=z, l3=w)
    np.savez(tmp_path / "b.npz", l0=x, v1=x + y, l2=z * 1.5, l3=w + 1)
    drop_files(page, "a", [tmp_path / "a.npz"])
    drop_files(page, "b", [tmp_path / "b.npz"])
    run_and_wait(page)
    summary = page.get_by_test_id("bisect-summary").first.text_content()
    assert "First failing: l1" in summary and "the first surely paired failing layer is l2" in summary
    assert page.locator("[data-testid=bisect-how][data-confidence=low]").count() == 1
