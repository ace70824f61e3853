"""ONNX ModelProto nodes read without onnx, against onnx's own reading of real exports."""

from __future__ import annotations

from pathlib import Path

import pytest
from perpendis.errors import InputError
from perpendis.inputs.formats.onnx_model import describe, module_of, read_graph

onnx = pytest.importorskip("onnx")

EXPORT = Path(__file__).resolve().parents[1] / "fixtures" / "export"


@pytest.mark.parametrize("name", ["cnn", "transformer", "transformer_eps"])
def test_nodes_inputs_outputs_and_metadata_match_onnx(name):
    path = EXPORT / f"{name}.onnx"
    graph, model = read_graph(path.read_bytes()), onnx.load(path)
    assert [n.op_type for n in graph.nodes] == [n.op_type for n in model.graph.node]
    assert [n.inputs for n in graph.nodes] == [list(n.input) for n in model.graph.node]
    assert [n.outputs for n in graph.nodes] == [list(n.output) for n in model.graph.node]
    assert [n.meta for n in graph.nodes] == [{p.key: p.value for p in n.metadata_props} for n in model.graph.node]
    initializers = {t.name for t in model.graph.initializer}
    assert graph.initializers == initializers
    assert graph.inputs == [i.name for i in model.graph.input if i.name not in initializers]
    assert graph.outputs == [o.name for o in model.graph.output]
    assert graph.name == model.graph.name
    assert [n.name for n in graph.nodes] == [n.name for n in model.graph.node]


def test_describe_gives_each_value_its_op_type_and_module():
    values = describe(read_graph((EXPORT / "cnn.onnx").read_bytes()))
    assert values["x"] == {"op_type": "input"}
    assert values["getitem"]["op_type"] == "Conv" and values["getitem"]["module"] == "features.1"
    assert "module" not in values["view"]  # a reshape the root's own forward made


def test_module_of_takes_the_scope_above_the_traced_op():
    assert module_of(["", "features", "features.1", "_native_batch_norm_legit_no_training"]) == "features.1"
    assert module_of(["", "view"]) is None and module_of(None) is None


@pytest.mark.parametrize("cut", [1, 100, 5000])
def test_a_truncated_model_is_an_input_error(cut):
    data = (EXPORT / "cnn.onnx").read_bytes()[:cut]
    with pytest.raises(InputError, match="ONNX model"):
        read_graph(data)


def test_a_tensor_file_is_not_a_model():
    tensor = onnx.numpy_helper.from_array(__import__("numpy").zeros(3, "float32"))
    with pytest.raises(InputError, match="not an ONNX model"):
        read_graph(tensor.SerializeToString())
