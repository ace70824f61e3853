"""The task check: does the difference change the prediction?

Real cases are logits of two random-init models run in PyTorch and ONNX Runtime
(tests/fixtures/task/make_task_fixtures.py): a CNN classifier and a GPT-2 causal LM,
clean, in float16 and bfloat16, and with bugs injected into the exported graph.  Each
figure is checked against a direct NumPy computation written here, apart from the module.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import perpendis
import pytest
from perpendis.engine import task as task_module
from perpendis.engine.compare import compare
from perpendis.engine.options import ComparisonOptions
from perpendis.engine.stream import compare_sources, map_file, prepare_sources
from perpendis.errors import InputError
from perpendis.inputs.tensor import from_numpy
from perpendis.report.model import Report
from perpendis.testing import ComparisonError, assert_same

torch = pytest.importorskip("torch")
from safetensors.torch import load_file  # noqa: E402

FIXTURES = Path(__file__).parent / "fixtures" / "task"


def _runs(name: str) -> dict[str, object]:
    return load_file(str(FIXTURES / f"{name}.safetensors"))


# --- the figures, computed directly -------------------------------------------------------


def _softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _expected(a: np.ndarray, b: np.ndarray, atol: float, rtol: float, k: int = 5) -> dict[str, object]:
    """Top-1 agreement, top-k overlap, KL(softmax(B) || softmax(A)) and flips, row by row."""
    a2, b2 = a.reshape(-1, a.shape[-1]).astype(np.float64), b.reshape(-1, b.shape[-1]).astype(np.float64)
    agree, overlaps, kls, flips = 0, [], [], []
    for i, (ra, rb) in enumerate(zip(a2, b2, strict=True)):
        ta, tb = int(np.argmax(ra)), int(np.argmax(rb))
        agree += ta == tb
        overlaps.append(len(set(np.argsort(-ra, kind="stable")[:k]) & set(np.argsort(-rb, kind="stable")[:k])) / k)
        pa, pb = _softmax(ra), _softmax(rb)
        kls.append(float(np.sum(pb * np.log(pb / pa))))
        if ta != tb:
            margin = rb[tb] - rb[ta]
            bound = atol + rtol * abs(rb[tb]) + atol + rtol * abs(rb[ta])
            flips.append((list(np.unravel_index(i, a.shape[:-1])), ta, tb, margin <= bound))
    return {"agreement": agree / len(a2), "topk": float(np.mean(overlaps)), "kl": np.array(kls), "flips": flips}


def _check_figures(report: Report, a: np.ndarray, b: np.ndarray) -> dict[str, object]:
    t = report.task
    want = _expected(a, b, report.tolerance.atol, report.tolerance.rtol)
    assert t.rows == a.size // a.shape[-1]
    assert t.top1_agreement == pytest.approx(want["agreement"])
    assert t.topk["5"] == pytest.approx(want["topk"])
    assert t.kl["mean"] == pytest.approx(want["kl"].mean(), rel=1e-6, abs=1e-12)
    assert t.kl["max"] == pytest.approx(want["kl"].max(), rel=1e-6, abs=1e-12)
    got = [(f["row"], f["a_top"], f["b_top"], f["rounding"]) for f in t.flips]
    assert sorted(got) == sorted((r, ta, tb, bool(ok)) for r, ta, tb, ok in want["flips"])
    assert t.n_flips == len(want["flips"])
    return want


def _pair(runs: dict[str, object], key: str) -> tuple[np.ndarray, np.ndarray]:
    """A as compared (float16 stays float16: B is rounded to it), and B."""
    a = runs[key].float().numpy()
    b = runs["torch"].numpy()
    if runs[key].dtype == torch.float16:
        b = b.astype(np.float16).astype(np.float32)
    if runs[key].dtype == torch.bfloat16:
        b = torch.from_numpy(b).bfloat16().float().numpy()
    return a, b


# --- real models ---------------------------------------------------------------------------


@pytest.mark.parametrize(("model", "key"), [("cnn", "ort"), ("lm", "ort")])
def test_fp32_export_keeps_every_prediction(model, key):
    runs = _runs(model)
    report = perpendis.compare(runs[key], runs["torch"], task="logits")
    _check_figures(report, *_pair(runs, key))
    assert report.task.verdict == "unchanged"
    assert report.task.kl["max"] < 1e-9
    assert report.verdict == "rounding"


@pytest.mark.parametrize(("model", "key"), [("cnn", "torch_fp16"), ("cnn", "torch_bf16"),
                                            ("lm", "torch_fp16"), ("lm", "torch_bf16")])
def test_half_precision_runs_keep_their_prediction_under_their_preset(model, key):
    runs = _runs(model)
    report = perpendis.compare(runs[key], runs["torch"], task="logits")
    assert report.tolerance.preset == ("fp16" if key.endswith("fp16") else "bf16")
    _check_figures(report, *_pair(runs, key))
    assert report.task.verdict in ("unchanged", "changed_within_rounding")
    assert all(f["rounding"] for f in report.task.flips)
    assert report.task.kl["max"] < 1e-2
    # The fp16 LM fails the element tolerance at 3 logits, yet no prediction changes.
    assert_same(runs[key], runs["torch"], fail_on="prediction")


def test_label_swap_flips_exactly_the_rows_where_a_swapped_class_wins():
    runs = _runs("cnn")
    report = perpendis.compare(runs["ort_swap"], runs["torch"], task="logits")
    _check_figures(report, *_pair(runs, "ort_swap"))
    a, b = runs["ort_swap"].numpy(), runs["torch"].numpy()
    # B never predicts class 0 or 1, so A changes its prediction exactly where a swapped row wins.
    assert not np.isin(b.argmax(axis=1), [0, 1]).any()
    swapped = [[int(i)] for i in np.flatnonzero(np.isin(a.argmax(axis=1), [0, 1]))]
    assert swapped and sorted(f["row"] for f in report.task.flips) == swapped
    assert all(not f["rounding"] and f["a_top"] in (0, 1) for f in report.task.flips)
    assert report.task.verdict == "changed"
    assert report.verdict == "investigate"
    finding = next(f for f in report.findings if f.kind == "prediction")
    assert finding.severity == "error"
    assert finding.where["amount"]["rows"] == swapped


def test_dropped_bias_changes_predictions_beyond_rounding():
    runs = _runs("cnn")
    report = perpendis.compare(runs["ort_nobias"], runs["torch"], task="logits")
    want = _check_figures(report, *_pair(runs, "ort_nobias"))
    assert want["flips"] and report.task.verdict == "changed"
    with pytest.raises(ComparisonError, match="CHANGED beyond rounding"):
        assert_same(runs["ort_nobias"], runs["torch"], fail_on="prediction")


def test_temperature_keeps_the_argmax_and_shows_in_kl():
    runs = _runs("lm")
    scaled = perpendis.compare(runs["ort_temperature"], runs["torch"], task="logits")
    clean = perpendis.compare(runs["ort"], runs["torch"], task="logits")
    _check_figures(scaled, *_pair(runs, "ort_temperature"))
    assert scaled.task.verdict == "unchanged" and scaled.task.top1_agreement == 1.0
    assert scaled.task.kl["mean"] > 1e6 * clean.task.kl["mean"]
    assert scaled.verdict == "investigate"  # the logits are wrong, the prediction is not
    assert_same(runs["ort_temperature"], runs["torch"], fail_on="prediction")


def test_position_bug_changes_most_tokens():
    runs = _runs("lm")
    report = perpendis.compare(runs["ort_positions"], runs["torch"], task={"axis": -1, "k": 10})
    _check_figures(report, *_pair(runs, "ort_positions"))
    assert report.task.top1_agreement < 0.5
    assert set(report.task.topk) == {"5", "10"}
    assert report.task.verdict == "changed"


# --- rounding bound, kinds, layouts ---------------------------------------------------------


def test_a_near_tie_flip_is_within_rounding_and_not_an_error():
    b = np.array([[1.0, 1.0005, -3.0], [2.0, 0.0, 1.0]], np.float32)
    a = np.array([[1.0005, 1.0, -3.0], [2.0, 0.0, 1.0]], np.float32)
    report = perpendis.compare(a, b, task="logits")
    (flip,) = report.task.flips
    assert flip["row"] == [0] and flip["rounding"] and flip["element"] == [0, 1]
    assert flip["bound"] == pytest.approx(2e-5 + 1e-3 * (1.0 + 1.0005))
    assert report.task.verdict == "changed_within_rounding"
    assert report.verdict == "rounding"
    assert [f.severity for f in report.findings if f.kind == "prediction"] == ["info"]
    # Under a tolerance ten times tighter the same flip is beyond rounding.
    tight = perpendis.compare(a, b, task="logits", rtol=1e-4)
    assert tight.task.verdict == "changed" and tight.verdict == "investigate"


def test_near_ties_are_reported_without_a_flip():
    b = np.array([[1.0, 1.0004, 0.0], [5.0, 0.0, 1.0]], np.float32)
    a = b.copy()
    a[0, 2] = 0.5
    t = perpendis.compare(a, b, task="logits").task
    assert t.n_flips == 0 and t.n_near_ties == 1
    assert t.near_ties[0]["row"] == [0] and t.near_ties[0]["b_top"] == 1 and t.near_ties[0]["b_second"] == 0


def test_kind_is_detected_and_probabilities_are_used_as_they_are():
    rng = np.random.default_rng(1)
    logits = rng.normal(0, 2, (16, 7))
    probs_b, probs_a = _softmax(logits), _softmax(logits * 1.01)
    probs_b[0] = [0.5, 0.5, 0, 0, 0, 0, 0]  # zeros in B add nothing
    probs_a[0] = [0.25, 0.25, 0.5, 0, 0, 0, 0]
    t = perpendis.compare(probs_a, probs_b, task=True).task
    assert t.kind == "probabilities"
    with np.errstate(divide="ignore", invalid="ignore"):
        want = [np.sum(np.where(pb > 0, pb * np.log(pb / pa), 0)) for pa, pb in zip(probs_a, probs_b, strict=True)]
    assert t.kl["max"] == pytest.approx(max(want)) and t.kl["mean"] == pytest.approx(np.mean(want))
    assert want[0] == pytest.approx(np.log(2))
    log_b = np.log(_softmax(logits))
    assert perpendis.compare(log_b, log_b, task=True).task.kind == "log-probabilities"
    assert perpendis.compare(logits, logits, task=True).task.kind == "logits"
    # A class B gives probability where A gives none: that row's KL is infinite.
    probs_a[1, np.argmax(probs_b[1])] = 0
    assert perpendis.compare(probs_a, probs_b, task="probabilities").task.kl["n_infinite"] == 1


def test_classes_on_another_axis_equals_them_moved_last():
    runs = _runs("lm")
    a, b = runs["ort_positions"].numpy(), runs["torch"].numpy()
    last = perpendis.compare(a, b, task="logits").task
    first = perpendis.compare(np.moveaxis(a, -1, 0).copy(), np.moveaxis(b, -1, 0).copy(), task=0).task
    assert first.axis == 0 and first.top1_agreement == last.top1_agreement
    assert first.kl == pytest.approx(last.kl, rel=1e-12)
    assert [f["row"] for f in first.flips] == [f["row"] for f in last.flips]
    assert first.flips[0]["element"] == [first.flips[0]["b_top"], *first.flips[0]["row"]]
    assert first.flips[0]["flat"] == np.ravel_multi_index(first.flips[0]["element"], (512, 2, 24))


def test_blocks_and_streamed_chunks_merge_to_the_same_result(tmp_path, monkeypatch):
    runs = _runs("lm")
    a, b = runs["ort_positions"].numpy(), runs["torch"].numpy()
    whole = compare(from_numpy(a, "A"), from_numpy(b, "B"), ComparisonOptions(task="logits"))
    np.save(tmp_path / "a.npy", a)
    np.save(tmp_path / "b.npy", b)
    monkeypatch.setattr(task_module, "BLOCK_ELEMENTS", 3 * 512 + 100)  # blocks of 3 rows
    monkeypatch.setattr("perpendis.engine.task_judge.BLOCK_ELEMENTS", 3 * 512 + 100)
    blocks = compare(from_numpy(a, "A"), from_numpy(b, "B"), ComparisonOptions(task="logits"))
    sources = (map_file(tmp_path / "a.npy", "A"), map_file(tmp_path / "b.npy", "B"))
    # Chunks that cut rows, judged as they pass.
    streamed = compare_sources(*sources, ComparisonOptions(task="logits"), chunk=1000)
    assert streamed.task == whole.task
    # Folded in shares by helpers, the rows are read again after the fold: the same result.
    prepared = prepare_sources(*sources, ComparisonOptions(task="logits"), chunk=1000)
    partial = prepared.fold()
    assert prepared.task_rows is not None
    prepared.task_rows = None
    assert prepared.finish(partial).task == whole.task
    assert blocks.task == whole.task


def test_json_round_trip_and_offer():
    runs = _runs("lm")
    report = perpendis.compare(runs["ort_positions"], runs["torch"], task="logits")
    data = json.loads(report.to_json())
    assert data["task"]["verdict"] == "changed" and data["task"]["flips"][0]["element"]
    assert Report.from_dict(data).task == report.task
    plain = perpendis.compare(runs["ort"], runs["torch"])
    assert plain.task is None
    assert plain.task_offer == {"axis": 2, "classes": 512, "rows": 48}
    assert "task check available: if the last axis (512 entries) holds classes over 48 rows" in plain.to_text()
    # A vector, or a short last axis, is not offered one.
    assert perpendis.compare(np.ones(50), np.ones(50)).task_offer is None
    assert perpendis.compare(np.ones((50, 4)), np.ones((50, 4))).task_offer is None


def test_text_and_markdown_show_the_section():
    runs = _runs("cnn")
    report = perpendis.compare(runs["ort_swap"], runs["torch"], task="logits")
    for text in (report.to_text(), report.to_markdown()):
        assert "prediction (logits over axis 1, 10 classes, 64 rows): CHANGED beyond rounding" in text
        assert f"row ({report.task.flips[0]['row'][0]})" in text


@pytest.mark.parametrize(
    ("task", "message"),
    [("softmax", "kind must be one of"), ({"axis": 3}, "not an axis"), ({"k": 0}, "k must be"),
     ({"classes": 2}, "takes the keys"), (1.5, "task must be")],
)
def test_bad_task_requests_are_input_errors(task, message):
    with pytest.raises(InputError, match=message):
        perpendis.compare(np.ones((4, 3)), np.ones((4, 3)), task=task)


def test_fail_on_must_be_known():
    with pytest.raises(InputError, match="fail_on"):
        assert_same(np.ones((4, 3)), np.ones((4, 3)), fail_on="argmax")


def test_cli_classes_axis_and_top_k(tmp_path, capsys):
    from perpendis.cli.main import main

    runs = _runs("lm")
    np.save(tmp_path / "a.npy", runs["ort_positions"].numpy())
    np.save(tmp_path / "b.npy", runs["torch"].numpy())
    files = [str(tmp_path / "a.npy"), str(tmp_path / "b.npy")]
    assert main([*files, "--classes-axis", "2", "--top-k", "20", "--json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["task"]["axis"] == 2 and set(data["task"]["topk"]) == {"5", "20"}
    np.save(tmp_path / "a.npy", runs["ort"].numpy())
    assert main([str(tmp_path / "a.npy"), str(tmp_path / "b.npy"), "--classes-axis", "-1"]) == 0
    assert "prediction (logits over axis 2, 512 classes, 48 rows): UNCHANGED" in capsys.readouterr().out
    assert main([str(tmp_path / "a.npy"), str(tmp_path / "b.npy"), "--classes-axis", "7"]) == 2
    assert "not an axis" in capsys.readouterr().err


def test_the_service_takes_the_task_option_in_memory_streamed_and_on_rejudge(monkeypatch):
    import io

    from perpendis import service
    from perpendis.engine import stream
    from perpendis.inputs.formats.buffer import view_reader
    from perpendis.service.session import Session

    runs = _runs("cnn")
    data = {}
    for side, key in (("a", "ort_swap"), ("b", "torch")):
        buffer = io.BytesIO()
        np.save(buffer, runs[key].numpy())
        data[side] = buffer.getvalue()
    inputs = {"a": {"name": "a.npy", "data": "a"}, "b": {"name": "b.npy", "data": "b"}}
    session = Session()
    request = {"op": "compare", "inputs": inputs, "options": {"task": {"axis": -1}}, "text": True}
    asked = service.serve(request, data, session=session)
    expected = perpendis.compare(runs["ort_swap"], runs["torch"], task="logits").task
    assert asked["ok"] and asked["report"]["task"]["flips"] == expected.flips
    assert "prediction (logits" in asked["text"]
    rejudged = service.serve({"op": "rejudge", "options": {}}, {}, session=session)
    assert rejudged["report"]["task"] is None and rejudged["report"]["task_offer"]["classes"] == 10
    monkeypatch.setattr(stream, "STREAM_MIN_BYTES", 1)
    files = {key: view_reader(np.frombuffer(data[side], np.uint8)) for key, side in (("p0", "a"), ("p1", "b"))}
    unread = {"a": {"name": "a.npy", "data": "p0"}, "b": {"name": "b.npy", "data": "p1"}}
    streamed = service.serve({"op": "compare", "inputs": unread, "options": {"task": "logits"}}, {}, files,
                             session=Session())
    assert streamed["streamed"] and streamed["report"]["task"]["flips"] == expected.flips
    bad = service.serve({"op": "compare", "inputs": inputs, "options": {"task": "argmax"}}, data, session=Session())
    assert not bad["ok"] and "task kind" in bad["error"]["message"]
