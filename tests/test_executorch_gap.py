"""ExecuTorch's numeric gap as a one-file bisect input: ``numeric_gap.pt`` is what
``Inspector.calculate_numeric_gap("MSE")`` of executorch 1.5.1 gave for a small network
(tests/fixtures/executorch/make_numeric_gap.py), saved as ``df.to_dict("list")``."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from perpendis.cli.main import main
from perpendis.errors import InputError
from perpendis.inputs.formats import executorch_gap, torchsave

HERE = Path(__file__).parent / "fixtures" / "executorch"
FACTS = json.loads((HERE / "facts.json").read_text())


def _loaded() -> dict:
    obj, _ = torchsave.load_object((HERE / "numeric_gap.pt").read_bytes())
    return obj


def test_one_file_bisect_pairs_each_op_aot_against_runtime(capsys):
    code = main(["bisect", str(HERE / "numeric_gap.pt"), "--json"])
    out = capsys.readouterr()
    assert code == 0, out.out
    assert "A is 'ExecuTorch AOT', B is 'ExecuTorch runtime'" in out.err
    pairs = json.loads(out.out)["pairs"]
    handles = _loaded()["aot_debug_handle"]
    names = [f"{ops[0]}@{h[0]}" for ops, h in zip(FACTS["aot_ops"], handles, strict=True)]
    assert [p["a_name"] for p in pairs] == names == ["conv2d@1", "relu@2", "conv2d_1@3", "relu_1@4", "linear@6"]
    assert all(p["verdict"] == "rounding" and p["cosine"] > 0.999999 for p in pairs)  # portable kernels round


def test_the_tensors_give_executorchs_own_mse():
    aot, runtime = executorch_gap.sides(_loaded())
    for a, b, (gap,) in zip(aot, runtime, FACTS["gap"], strict=True):
        mse = float(np.mean((a.array.astype(np.float64) - b.array.astype(np.float64)) ** 2))
        assert mse == pytest.approx(gap, rel=1e-6)
        assert mse > 0  # the runtime's kernels differ from ATen's in the last bits


def test_rows_and_an_extra_column_read_alike():
    columns = _loaded()
    columns["stacktraces"] = [{"conv2d": "File ..."} for _ in columns["aot_ops"]]  # the DataFrame's own column
    rows = [{k: v[i] for k, v in columns.items()} for i in range(len(columns["aot_ops"]))]
    assert executorch_gap.recognised(columns) and executorch_gap.recognised(rows)
    by_columns, by_rows = executorch_gap.sides(columns), executorch_gap.sides(rows)
    assert [t.name for t in by_columns[0]] == [t.name for t in by_rows[0]]
    assert all(np.array_equal(x.array, y.array) for x, y in zip(by_columns[1], by_rows[1], strict=True))


def test_uneven_columns_are_an_input_error():
    columns = _loaded()
    columns["runtime_intermediate_output"] = columns["runtime_intermediate_output"][:-1]
    with pytest.raises(InputError, match="different lengths"):
        executorch_gap.sides(columns)
