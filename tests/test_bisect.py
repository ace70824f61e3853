"""Bisect by layer on real captures: PyTorch forward hooks against ONNX Runtime with every
node output marked, clean and with one normalisation epsilon edited in the graph.

The captures and the truth about them (which layer was bugged, which name the export
renamed) come from ``tests/fixtures/models/make_models.py`` via its ``manifest.json``.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from perpendis.cli.main import bisect_main
from perpendis.errors import InputError
from perpendis.inputs import formats
from perpendis.inputs.tensor import from_numpy
from perpendis.layers.bisect import (
    Entry,
    as_entries,
    bisect,
    bisect_runs,
    normalise_name,
    pair_names,
    path_entries,
)

MODELS = Path(__file__).parent / "fixtures" / "models"
MANIFEST = json.loads((MODELS / "manifest.json").read_text())
CAPTURES = {c["model"]: c for c in MANIFEST["captures"]}


def capture(model: str, side: str, container: str = "npz") -> list:
    name = next(f for f in CAPTURES[model][side] if f.endswith("." + container))
    return formats.read((MODELS / name).read_bytes(), name)


def names(model: str, side: str) -> list[str]:
    return [t.name for t in capture(model, side)]


# --- names and pairing -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("onnx_name", "module"),
    [
        ("/layer1/layer1.0/conv1/Conv_output_0", "layer1.0.conv1"),
        ("/blocks.0/ln1/LayerNormalization_output_0", "blocks.0.ln1"),
        ("/blocks.0/Add_1_output_0", "blocks.0"),
        ("/blocks.1/attn/Split_output_2", "blocks.1.attn"),
        ("layer1.0.conv1", "layer1.0.conv1"),
        ("/head/fc/Gemm", "head.fc"),
        ("encoder/layer_3/dense:0", "encoder.layer_3.dense"),
    ],
)
def test_normalise_name_gives_the_module_path(onnx_name, module):
    assert normalise_name(onnx_name) == module


@pytest.mark.parametrize("model", sorted(CAPTURES))
def test_every_hooked_module_pairs_with_its_onnx_output(model):
    a, b = names(model, "torch"), names(model, "ort")
    mapping = CAPTURES[model]["mapping"]
    pairs, only_a, only_b = pair_names(a, b, mapping)
    assert only_a == []
    assert [a[i] for i, _, _ in pairs] == a  # A's order kept
    for i, j, how in pairs:
        if how == "mapping":
            assert mapping[a[i]] == b[j]
        else:
            assert normalise_name(b[j]) == a[i]
            # The module's output is the last tensor computed in its scope.
            later = [n for n in b[j + 1 :] if normalise_name(n) == a[i]]
            assert later == []
    assert len(only_b) == len(b) - len(a)


def test_without_the_mapping_the_renamed_output_is_left_on_both_sides():
    a, b = names("cnn", "torch"), names("cnn", "ort")
    (a_out, b_out), = CAPTURES["cnn"]["mapping"].items()
    _, only_a, only_b = pair_names(a, b)
    assert [a[i] for i in only_a] == [a_out]
    assert b_out in [b[j] for j in only_b]


def test_shared_prefix_such_as_dataparallel_module_is_ignored():
    a = ["module." + n for n in names("cnn", "torch")]
    pairs, only_a, _ = pair_names(a, names("cnn", "ort"), {a[-1]: "output"})
    assert only_a == []
    assert len(pairs) == len(a)


def test_mapping_that_names_a_missing_tensor_is_an_input_error():
    with pytest.raises(InputError, match="does not hold"):
        pair_names(["x"], ["y"], {"x": "z"})
    with pytest.raises(InputError, match="does not hold"):
        pair_names(["x"], ["y"], {"w": "y"})


@given(st.permutations(range(6)))
def test_pairing_ignores_b_order(perm):
    a = ["stem.conv", "stem.bn", "block.fc1", "block.act", "block.fc2", "head"]
    onnx = ["/stem/conv/Conv_output_0", "/stem/bn/BatchNormalization_output_0", "/block/fc1/Gemm_output_0",
            "/block/act/Relu_output_0", "/block/fc2/Gemm_output_0", "/head/MatMul_output_0"]
    b = [onnx[k] for k in perm]
    pairs, only_a, only_b = pair_names(a, b)
    assert only_a == only_b == []
    assert [(a[i], b[j]) for i, j, _ in pairs] == list(zip(a, onnx, strict=True))


# --- bisect on the real captures -------------------------------------------------------


# safetensors stores tensors sorted by name, so a capture in it has lost its execution
# order; the transformer's ONNX scopes hold several ops each, and which one is the
# module's output then cannot be told, so it is only checked in ordered containers.
CONTAINERS = [("cnn", c) for c in ("npz", "safetensors", "pt")] + [("transformer", c) for c in ("npz", "pt")]


@pytest.mark.parametrize(("model", "container"), CONTAINERS)
def test_clean_capture_has_no_failing_layer(model, container):
    truth = CAPTURES[model]
    result = bisect(capture(model, "torch"), capture(model, "ort", container), mapping=truth["mapping"])
    assert result.first_failing is None, result.to_text()
    assert {p.verdict for p in result.pairs} <= {"identical", "rounding"}
    assert result.only_a == []


@pytest.mark.parametrize("model", sorted(CAPTURES))
def test_bugged_capture_fails_first_at_the_edited_layer(model):
    truth = CAPTURES[model]
    result = bisect(capture(model, "torch"), capture(model, "ort_bug"), mapping=truth["mapping"])
    first = result.first_failing
    assert first is not None, result.to_text()
    assert first.a_name == truth["bug_layer"]
    assert normalise_name(first.b_name) == truth["bug_layer"]
    assert first.b_name.startswith(truth["bug_node"])
    # Every layer before it agrees up to rounding.
    before = result.pairs[: result.pairs.index(first)]
    assert before and all(p.verdict in ("identical", "rounding") for p in before)


@pytest.mark.parametrize(("model", "container"), [c for c in CONTAINERS if c[1] != "npz"])
def test_bugged_capture_in_other_containers_fails_at_the_same_layer(model, container):
    truth = CAPTURES[model]
    # A, in its execution order, sets the order of layers; B may come in any container.
    result = bisect(capture(model, "torch"), capture(model, "ort_bug", container), mapping=truth["mapping"])
    assert result.first_failing is not None
    assert result.first_failing.a_name == truth["bug_layer"]


def test_onnx_against_onnx_pairs_by_exact_name():
    result = bisect(capture("transformer", "ort"), capture("transformer", "ort_bug"))
    assert result.only_a == result.only_b == []
    assert {p.paired_by for p in result.pairs} == {"name"}
    assert result.first_failing.a_name.startswith(CAPTURES["transformer"]["bug_node"])


def test_only_a_and_only_b_keep_the_unpaired_names_in_order():
    a, b = capture("cnn", "torch"), capture("cnn", "ort")
    a_kept, b_kept = a[:6], b[3:]
    result = bisect(a_kept, b_kept)
    assert [p.a_name for p in result.pairs] == [t.name for t in a_kept[3:]]
    assert result.only_a == [t.name for t in a_kept[:3]]
    assert result.only_b == [t.name for t in b_kept if normalise_name(t.name) not in {x.name for x in a_kept}]


def test_no_common_name_is_an_input_error():
    a = [from_numpy(np.zeros(3, np.float32), "test", name="x")]
    b = [from_numpy(np.ones(3, np.float32), "test", name="y")]  # nor do their values agree
    with pytest.raises(InputError, match="mapping"):
        bisect(a, b)


def test_tensors_are_decoded_only_when_their_pair_is_compared():
    loaded: list[str] = []

    def lazy(tensor):
        def load():
            loaded.append(tensor.name)
            return tensor

        return Entry(tensor.name, load)

    a = [lazy(t) for t in capture("cnn", "torch")]
    b = [lazy(t) for t in capture("cnn", "ort")]
    result = bisect(a, b, by_values=False)  # pairing by values reads what names leave over
    paired = [name for p in result.pairs for name in (p.a_name, p.b_name)]
    assert loaded == paired
    assert not set(loaded) & set(result.only_b)


def test_bad_file_in_a_list_names_its_side():
    good = as_entries(capture("cnn", "torch"))[:1]

    def broken():
        raise InputError("not a tensor file")

    with pytest.raises(InputError) as info:
        bisect(good, [Entry(good[0].name, broken)])
    assert info.value.side == "b"
    assert info.value.where == good[0].name  # which file of the list


def test_bad_file_keeps_the_place_its_reader_named(tmp_path):
    np.savez(tmp_path / "conv.npz", weight=np.zeros(3, np.float32), bias=np.zeros(1, np.float32))
    good = as_entries([from_numpy(np.zeros(3, np.float32), "test", name="conv")])
    with pytest.raises(InputError) as info:
        bisect(path_entries(tmp_path), good)
    assert info.value.side == "a"
    assert info.value.where == "conv.npz"  # the file, as the one-tensor-per-file check names it
    assert "holds 2 tensors" in info.value.message


def test_folder_of_npy_files_pairs_by_file_name(tmp_path):
    for t in capture("cnn", "torch"):
        np.save(tmp_path / f"{t.name}.npy", t.array)
    entries = path_entries(tmp_path)
    assert {e.name for e in entries} == set(names("cnn", "torch"))
    truth = CAPTURES["cnn"]
    result = bisect(entries, capture("cnn", "ort_bug"), mapping=truth["mapping"])
    # A folder has no execution order: layers come in file-name order, but the bug is
    # still the first failure among the layers that run before it.
    failing = [p.a_name for p in result.pairs if p.verdict == "investigate"]
    assert truth["bug_layer"] in failing


def test_runs_matrix_names_the_run_that_departs_first():
    runs = {name: capture("transformer", name) for name in ("torch", "ort", "ort_bug")}
    result = bisect_runs(runs, "torch", mapping=CAPTURES["transformer"]["mapping"])
    assert result.layers == names("transformer", "torch")
    assert result.first_failing == {"ort": None, "ort_bug": CAPTURES["transformer"]["bug_layer"]}
    assert result.departs_first == "ort_bug"
    bug_at = result.layers.index(CAPTURES["transformer"]["bug_layer"])
    row = result.cells["ort_bug"]
    assert all(c["verdict"] != "investigate" for c in row[:bug_at])
    assert row[bug_at]["verdict"] == "investigate" and row[bug_at]["max_ulp"] > 0
    assert json.loads(json.dumps(result.to_dict()))["departs_first"] == "ort_bug"


# --- report and command line -----------------------------------------------------------


def test_report_json_and_text():
    truth = CAPTURES["cnn"]
    result = bisect(capture("cnn", "torch"), capture("cnn", "ort_bug"), mapping=truth["mapping"])
    data = json.loads(result.to_json())
    assert {"pairs", "only_a", "only_b", "first_failing"} <= set(data)
    assert data["first_failing"]["a_name"] == truth["bug_layer"]
    assert [p["a_name"] for p in data["pairs"]] == names("cnn", "torch")
    row = data["pairs"][data["first_failing"]["index"]]
    assert row["verdict"] == "investigate" and row["report"]["verdict"] == "investigate"
    assert row["max_abs_diff"] == row["report"]["max_abs_diff"]
    text = result.to_text()
    marked = [line for line in text.splitlines() if line.startswith(">>")]
    assert len(marked) == 1 and truth["bug_layer"] in marked[0]
    assert f"first failing layer: {truth['bug_layer']}" in text


def test_text_table_is_compact_where_a_row_differs_in_shape():
    rng = np.random.default_rng(0)
    b = rng.standard_normal((2, 3)).astype(np.float32)
    a = b.T + np.float32(1 / 3)
    result = bisect([from_numpy(a, "test", name="x")], [from_numpy(b, "test", name="x")])
    (row,) = [line for line in result.to_text(verbose=True).splitlines() if line.startswith(">>")]
    assert f"{a.shape}≠{b.shape}".replace(" ", "") in row
    report = result.pairs[0].report
    assert report.max_ulp is not None and f"  {report.max_ulp}  " in row
    assert f"  {report.max_abs_diff:.3g}  " in row and f"  {report.max_rel_diff:.3g}  " in row


def _path(model: str, side: str, container: str = "npz") -> str:
    return str(MODELS / next(f for f in CAPTURES[model][side] if f.endswith("." + container)))


def _map_args(model: str) -> list[str]:
    return [f"--map={a}={b}" for a, b in CAPTURES[model]["mapping"].items()]


def test_cli_clean_exits_0(capsys):
    assert bisect_main([_path("cnn", "torch"), _path("cnn", "ort", "safetensors"), *_map_args("cnn")]) == 0
    assert "no layer fails" in capsys.readouterr().out


def test_cli_bug_exits_1_and_names_the_layer(capsys):
    code = bisect_main([_path("cnn", "torch"), _path("cnn", "ort_bug"), "--json", *_map_args("cnn")])
    out, err = capsys.readouterr()
    assert code == 1
    data = json.loads(out)
    assert {"pairs", "only_a", "only_b", "first_failing"} <= set(data)
    assert data["first_failing"]["a_name"] == CAPTURES["cnn"]["bug_layer"]
    assert CAPTURES["cnn"]["bug_layer"] in err


def test_cli_loose_tolerance_does_not_hide_a_systematic_bug(capsys):
    """Every layer passes atol 1e9, but the edited epsilon leaves one scale per channel from
    the bug layer on: systematic, so the first such layer is still named."""
    args = [_path("cnn", "torch"), _path("cnn", "ort_bug"), "--atol", "1e9", *_map_args("cnn")]
    assert bisect_main(args) == 1
    capsys.readouterr()
    assert bisect_main([*args, "--json"]) == 1
    pairs = json.loads(capsys.readouterr().out)["pairs"]
    first = next(p for p in pairs if p["verdict"] == "investigate")
    assert first["a_name"] == CAPTURES["cnn"]["bug_layer"]
    assert first["finding"]["kind"] == "slice_scale" and first["finding"]["where"]["axis"] == 1


def test_cli_depth_reaches_every_layer(tmp_path, capsys):
    """Errors of about 16 float32 roundings: rounding at depth 4, not at depth 1."""
    rng = np.random.default_rng(3)
    ref = rng.standard_normal(1000).astype(np.float32)
    off = (ref.astype(np.float64) * (1 + 16 * 2.0**-24 * rng.choice([-1, 1], 1000))).astype(np.float32)
    for side, array in (("a", off), ("b", ref)):
        (tmp_path / side).mkdir()
        np.save(tmp_path / side / "fc.npy", array)
    kinds = {}
    for depth in ("1", "4"):
        assert bisect_main([str(tmp_path / "a"), str(tmp_path / "b"), "--json", "--depth", depth]) == 0
        (pair,) = json.loads(capsys.readouterr().out)["pairs"]
        kinds[depth] = pair["finding"]["kind"]
    assert kinds == {"1": "deep_rounding", "4": "rounding"}


@pytest.mark.parametrize(
    "args",
    [
        ["missing.npz", "other.npz"],
        ["--map", "no-equals-sign"],
        ["--preset", "no-such-preset"],
    ],
)
def test_cli_bad_input_exits_2(args, capsys, tmp_path):
    if args[0] == "missing.npz":
        argv = [str(tmp_path / a) for a in args]
    else:
        argv = [_path("cnn", "torch"), _path("cnn", "ort"), *args]
    assert bisect_main(argv) == 2
    assert capsys.readouterr().err.strip()


# --- picking layers by name pattern ----------------------------------------------------


def test_a_name_pattern_compares_only_those_layers_and_counts_the_rest():
    truth = CAPTURES["cnn"]
    whole = bisect(capture("cnn", "torch"), capture("cnn", "ort_bug"), mapping=truth["mapping"])
    part = bisect(capture("cnn", "torch"), capture("cnn", "ort_bug"), mapping=truth["mapping"], only=["layer2.*"])
    assert part.pairs and all(p.a_name.startswith("layer2.") for p in part.pairs)
    assert [p.a_name for p in part.pairs] == [p.a_name for p in whole.pairs if p.a_name.startswith("layer2.")]
    assert part.n_skipped == len(whole.pairs) - len(part.pairs) > 0
    assert part.first_failing.a_name == truth["bug_layer"]  # the bug is in layer2
    data = part.to_dict()
    assert data["only"] == ["layer2.*"] and data["n_skipped"] == part.n_skipped
    assert f"{part.n_skipped} other paired layer(s) skipped" in part.to_text()


def test_layers_before_the_bug_pass_when_picked_alone():
    truth = CAPTURES["cnn"]
    a, b = capture("cnn", "torch"), capture("cnn", "ort_bug")
    part = bisect(a, b, mapping=truth["mapping"], only=["layer1.*", "conv1"])
    assert part.pairs and part.first_failing is None


def test_a_pattern_that_matches_no_layer_is_an_input_error():
    with pytest.raises(InputError, match="no paired layer is named like nothing"):
        bisect(capture("cnn", "torch"), capture("cnn", "ort"), mapping=CAPTURES["cnn"]["mapping"], only=["nothing*"])


def test_cli_only_option(capsys):
    bug = CAPTURES["cnn"]["bug_layer"]
    paths = [_path("cnn", "torch"), _path("cnn", "ort_bug")]
    code = bisect_main([*paths, "--json", "--only", "layer1.*", *_map_args("cnn")])
    data = json.loads(capsys.readouterr().out)
    assert code == 0 and data["first_failing"] is None and data["n_skipped"] > 0
    code = bisect_main([_path("cnn", "torch"), _path("cnn", "ort_bug"), "--only", bug, *_map_args("cnn")])
    assert code == 1 and bug in capsys.readouterr().out


def test_a_pair_by_shape_alone_failing_between_agreeing_layers_is_a_likely_mispairing():
    rng = np.random.default_rng(4)
    x, y, z = (rng.standard_normal((6, 8)).astype(np.float32) for _ in range(3))
    stray = rng.standard_normal((6, 8)).astype(np.float32)
    # A's middle layer has no value of its own in B; B holds an unrelated value of its shape there.
    a = [from_numpy(v, "a", name=n) for v, n in ((x, "l0"), (y, "l1"), (z, "l2"))]
    b = [from_numpy(v, "b", name=n) for v, n in ((x, "v0"), (stray, "v1"), (z, "v2"))]
    result = bisect(a, b)
    middle = result.pairs[1]
    assert (middle.paired_by, middle.confidence, middle.verdict) == ("order and shape", "low", "investigate")
    assert middle.likely_mispaired and result.first_failing is None and not result.must_investigate
    assert "likely mispaired" in result.to_text() and result.to_dict()["likely_mispaired"] == ["l1"]
    # The same value carried on to the next layer is a bug that propagates: the first failing layer.
    b[2] = from_numpy(z + 1.0, "b", name="v2")
    assert bisect(a, b).first_failing.a_name == "l1"


def test_the_table_fits_120_columns_and_gives_cosine_and_sqnr(capsys):
    a, b = _path("transformer", "torch"), _path("transformer", "ort", "safetensors")
    assert bisect_main([a, b, *_map_args("transformer")]) in (0, 1)
    table = capsys.readouterr().out.splitlines()
    rows = [line for line in table if not line.startswith(("only in", "not compared", "first", "no layer"))]
    assert rows and max(len(line) for line in rows) <= 120, max(rows, key=len)
    assert "cosine" in table[0] and "SQNR dB" in table[0]
    ea, eb = path_entries(Path(a)), path_entries(Path(b))
    result = bisect(ea, eb, mapping=CAPTURES["transformer"]["mapping"])
    for p in result.pairs:
        x = p.report  # the figures follow from the values: recompute them from both tensors
        ta = next(e for e in ea if e.name == p.a_name).load().array.astype(np.float64).ravel()
        tb = next(e for e in eb if e.name == p.b_name).load().array.astype(np.float64).ravel()
        if ta.size != tb.size or x.verdict == "identical":
            continue
        cosine = ta @ tb / np.linalg.norm(ta) / np.linalg.norm(tb)
        sqnr = 10 * np.log10((ta**2).sum() / ((ta - tb) ** 2).sum())
        assert p.summary()["cosine"] == pytest.approx(cosine) and p.summary()["sqnr_db"] == pytest.approx(sqnr)
    assert bisect_main([a, b, *_map_args("transformer"), "-v"]) in (0, 1)
    assert "evidence" in capsys.readouterr().out.splitlines()[0]


def test_a_bisect_result_displays_in_a_notebook_as_the_page_table():
    from html.parser import HTMLParser

    a, b = _path("transformer", "torch"), _path("transformer", "ort", "safetensors")
    result = bisect(path_entries(Path(a)), path_entries(Path(b)), mapping=CAPTURES["transformer"]["mapping"])
    html = result._repr_html_()

    class Rows(HTMLParser):
        def __init__(self):
            super().__init__()
            self.rows, self.cell = [], None

        def handle_starttag(self, tag, attrs):
            if tag == "tr":
                self.rows.append([])
            elif tag in ("td", "th"):
                self.cell = ""

        def handle_data(self, data):
            if self.cell is not None:
                self.cell += data

        def handle_endtag(self, tag):
            if tag in ("td", "th"):
                self.rows[-1].append(self.cell)
                self.cell = None

    parsed = Rows()
    parsed.feed(html)
    header, *rows = parsed.rows
    assert header[1:4] == ["A", "B", "paired by"] and "cosine" in header and "SQNR dB" in header
    assert [r[1] for r in rows] == [p.a_name for p in result.pairs]  # the capture's order, every pair
    marked = [r[1] for r in rows if r[0] == ">>"]
    first = result.first_failing
    assert marked == ([] if first is None else [first.a_name])
    assert len(repr(result)) < 100


def test_a_first_failing_pair_made_by_shape_alone_says_it_is_unsure_and_names_the_first_sure_one():
    rng = np.random.default_rng(5)
    x, y, z, w = (rng.standard_normal((6, 8)).astype(np.float32) for _ in range(4))
    # A's l1 has no value of its own in B (an embedding the exporter folded); a bug in l2 reaches l3.
    a = [from_numpy(v, "a", name=n) for v, n in ((x, "l0"), (y, "l1"), (z, "l2"), (w, "l3"))]
    b = [from_numpy(v, "b", name=n) for v, n in ((x, "l0"), (x + y, "v1"), (z, "l2"), (w + 1, "l3"))]
    b[2] = from_numpy(z * 1.5, "b", name="l2")
    result = bisect(a, b)
    assert result.first_failing.a_name == "l1" and result.pairs[1].confidence != "high"
    assert result.first_sure_failing.a_name == "l2"
    assert result.to_dict()["first_sure_failing"]["a_name"] == "l2"
    assert "unsure: that pair rests on order and shape" in result.to_text()
    assert "the first surely paired failing layer is l2" in result.to_text()
