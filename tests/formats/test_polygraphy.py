"""Polygraphy JSON written by Polygraphy itself (``RunResults``, saved inputs)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from perpendis.errors import InputError
from perpendis.inputs.formats import polygraphy

ml_dtypes = pytest.importorskip("ml_dtypes")
pytest.importorskip("polygraphy")
from polygraphy.comparator import RunResults  # noqa: E402
from polygraphy.comparator.struct import IterationResult  # noqa: E402
from polygraphy.json import to_json  # noqa: E402

ORT = "onnxrt-runner-N0-11/29/25-10:00:00"
TRT = "trt-runner-N0-11/29/25-10:00:01"


def run_results() -> tuple[bytes, list[tuple[str, int, str, np.ndarray]]]:
    rng = np.random.default_rng(5)
    saved = [
        (ORT, 0, "logits", rng.standard_normal((2, 3)).astype(np.float32)),
        (ORT, 0, "ids", np.arange(4, dtype=np.int64)),
        (ORT, 1, "logits", np.asfortranarray(rng.standard_normal((2, 3)).astype(np.float16))),
        (TRT, 0, "logits", rng.standard_normal((2, 3)).astype(ml_dtypes.bfloat16)),
    ]
    results = RunResults()
    for runner in (ORT, TRT):
        iterations = sorted({it for r, it, _, _ in saved if r == runner})
        results.append(
            (
                runner,
                [
                    IterationResult({n: a for r, i, n, a in saved if r == runner and i == it}, runner_name=runner)
                    for it in iterations
                ],
            )
        )
    return to_json(results).encode(), saved


def test_every_runner_iteration_and_output(assert_bits):
    data, saved = run_results()
    assert polygraphy.list_results(data) == [(r, i, n) for r, i, n, _ in saved]
    tensors = polygraphy.read(data)
    assert [t.name for t in tensors] == [n for _, _, n, _ in saved]
    for tensor, (runner, iteration, _, array) in zip(tensors, saved, strict=True):
        assert tensor.source == f"Polygraphy RunResults: runner {runner}, iteration {iteration}"
        assert_bits(tensor, array)


def test_saved_inputs(assert_bits):
    feeds = [{"x": np.ones((1, 2), np.float32)}, {"x": np.zeros((1, 2), np.float32)}]
    tensors = polygraphy.read(to_json(feeds).encode())
    assert [t.source for t in tensors] == ["Polygraphy inputs: iteration 0", "Polygraphy inputs: iteration 1"]
    for tensor, feed in zip(tensors, feeds, strict=True):
        assert_bits(tensor, feed["x"])


def test_json_without_polygraphy_classes_is_refused():
    with pytest.raises(InputError, match="not one Polygraphy writes"):
        polygraphy.read(b'{"lst": []}')


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_truncation_raises_input_error(data):
    raw, _ = run_results()
    with pytest.raises(InputError):
        polygraphy.read(raw[: data.draw(st.integers(0, len(raw) - 1))])
