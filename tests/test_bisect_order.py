"""The order of a bisect's rows (perpendis.layers.bisect_order), on a real run: a small CNN's plain
forward-hook outputs saved by ``safetensors.torch.save_file`` (which keeps no order) and by
``np.savez``, against ONNX Runtime on its export with conv2's weight scaled
(tests/fixtures/plain_hooks/make_plain_hooks.py).

With the ``.onnx`` (or an ONNX Runtime capture recording its graph's order) the safetensors
capture is bisected in execution order, as the ``.npz`` is; without, no layer is named first.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from cli_runs import run_main
from perpendis.inputs.formats import safetensors
from perpendis.layers.bisect_order import graph_positions
from perpendis.layers.capture.store import Capture
from perpendis.service import api

HERE = Path(__file__).parent / "fixtures" / "plain_hooks"
RAN = ["conv1", "relu1", "conv2", "relu2", "fc", "logits"]  # the order the hooks ran in


def _bisect(capsys, *argv) -> tuple[int, dict]:
    code, out, _ = run_main(capsys, "bisect", *argv, "--json")
    return code, json.loads(out)


@pytest.mark.parametrize("capture", ["plain_hooks.safetensors", "plain_hooks.npz"])
def test_with_the_model_the_rows_follow_execution_order(capsys, capture):
    code, result = _bisect(capsys, HERE / capture, HERE / "conv2_scaled.ort.npz", "--model", HERE / "conv2_scaled.onnx")
    assert code == 1
    assert [p["a_name"] for p in result["pairs"]] == RAN
    assert result["first_failing"]["a_name"] == "conv2"
    assert result["order"] == ("model" if capture.endswith(".safetensors") else "capture")


def test_without_the_model_a_safetensors_capture_names_no_first_failing_layer(capsys):
    a, b = HERE / "plain_hooks.safetensors", HERE / "conv2_scaled.ort.npz"
    code, result = _bisect(capsys, a, b)
    assert code == 1  # layers fail, whatever their order
    assert result["first_failing"] is None and result["first_sure_failing"] is None
    assert result["order"] == "unknown" and result["failing"]
    assert f"perpendis bisect {a} {b} --model model.onnx" in result["order_note"]
    code, out, _ = run_main(capsys, "bisect", a, b)
    assert code == 1
    assert not any(line.startswith(">>") for line in out.splitlines())
    assert f"no first failing layer: {a} records no order" in out
    assert "np.savez" in out and "perpendis.capture" in out


def test_without_the_model_an_npz_capture_keeps_its_order(capsys):
    code, result = _bisect(capsys, HERE / "plain_hooks.npz", HERE / "conv2_scaled.ort.npz")
    assert code == 1
    assert result["order"] == "capture" and result["first_failing"]["a_name"] == "conv2"


def test_an_onnx_capture_recording_its_graph_orders_the_other_side(capsys):
    code, result = _bisect(capsys, HERE / "plain_hooks.safetensors", HERE / "conv2_scaled.ort.safetensors")
    assert code == 1
    assert [p["a_name"] for p in result["pairs"]] == RAN
    assert result["first_failing"]["a_name"] == "conv2"
    assert result["order_note"].endswith(f"in the graph order {HERE / 'conv2_scaled.ort.safetensors'} records")


def test_the_model_output_saved_under_the_graph_outputs_name_pairs_with_it(capsys):
    _, result = _bisect(capsys, HERE / "plain_hooks.safetensors", HERE / "conv2_scaled.ort.npz",
                        "--model", HERE / "conv2_scaled.onnx")
    pairs = {p["a_name"]: p["b_name"] for p in result["pairs"]}
    assert pairs["fc"] == pairs["logits"] == "logits"
    assert result["only_a"] == [] and result["repeats"] == {}


def _request(a: list[str], b: list[str]) -> tuple[dict, dict]:
    payloads, inputs = {}, {}
    for side, names in (("a", a), ("b", b)):
        specs = []
        for k, name in enumerate(names):
            payloads[f"{side}{k}"] = (HERE / name).read_bytes()
            specs.append({"name": name, "data": f"{side}{k}"})
        inputs[side] = specs[0] if len(specs) == 1 else specs
    return {"op": "bisect", "inputs": inputs, "options": {}}, payloads


def test_the_page_orders_by_a_dropped_model_and_says_when_it_cannot():
    out = api.handle(*_request(["plain_hooks.safetensors"], ["conv2_scaled.ort.npz", "conv2_scaled.onnx"]))
    assert [p["a_name"] for p in out["bisect"]["pairs"]] == RAN
    assert out["bisect"]["first_failing"]["a_name"] == "conv2"
    bisect = api.handle(*_request(["plain_hooks.safetensors"], ["conv2_scaled.ort.npz"]))["bisect"]
    assert bisect["first_failing"] is None and bisect["order"] == "unknown"
    assert "drop model.onnx beside the captures" in bisect["order_note"]
    # Rows put in order by hand are the user's word for the order: the first failing one is named again.
    names = [p["a_name"] for p in bisect["pairs"]]
    ordered = api.handle({"op": "bisect_order", "order": names}, {})
    assert ordered["bisect"]["order"] == "user" and ordered["bisect"]["first_failing"] is not None


def test_the_compare_op_on_two_captures_says_the_order_is_unknown_too():
    request, payloads = _request(["plain_hooks.safetensors"], ["conv2_scaled.ort.npz"])
    out = api.handle({**request, "op": "compare"}, payloads)
    assert "switched" in out and out["bisect"]["order"] == "unknown" and out["bisect"]["first_failing"] is None


def test_perpendis_captures_record_their_order_and_plain_save_file_does_not(tmp_path):
    pytest.importorskip("safetensors")
    run = Capture()
    for name in ("b", "a"):
        run.add(name, np.zeros(2, np.float32))
    path = run.save(tmp_path / "run.safetensors")
    assert safetensors.records_order(path.read_bytes())
    assert [t.name for t in safetensors.read(path.read_bytes())] == ["b", "a"]
    assert not safetensors.records_order((HERE / "plain_hooks.safetensors").read_bytes())
    assert safetensors.records_order((HERE / "plain_hooks.npz").read_bytes())  # not safetensors: its reader's order


def test_a_modules_input_comes_before_its_call_and_a_wrapper_prefix_is_dropped():
    from perpendis.inputs.formats.onnx_model import describe, read_graph

    values = describe(read_graph((HERE / "conv2_scaled.onnx").read_bytes()))
    at = graph_positions(["module.conv2", "conv2:in", "relu1", "conv2", "nowhere"], values)
    assert at["relu1"] < at["conv2:in"] < at["conv2"] == at["module.conv2"]
    assert "nowhere" not in at


def test_check_export_orders_a_torch_capture_that_kept_none_by_the_model(capsys):
    pytest.importorskip("onnxruntime")
    code, out, _ = run_main(capsys, "check-export", HERE / "conv2_scaled.onnx", "--input", HERE / "input.npy",
                            "--torch", HERE / "plain_hooks.safetensors", "--json")
    result = json.loads(out)
    assert code == 1 and result["order"] == "model"
    assert [p["a_name"] for p in result["pairs"]] == RAN
    assert result["first_failing"]["a_name"] == result["culprit"]["a_name"] == "conv2"


def test_a_hook_scripts_execution_order_metadata_is_a_saved_order(capsys, tmp_path):
    """Forward-hook scripts write the hooks' firing order as metadata ``execution_order``: a
    saved order, so without the model the rows follow it and conv2 is named first."""
    numpy_st = pytest.importorskip("safetensors.numpy")
    tensors = numpy_st.load_file(HERE / "plain_hooks.safetensors")
    path = tmp_path / "ordered.safetensors"
    numpy_st.save_file(tensors, path, metadata={"execution_order": json.dumps(RAN)})
    assert safetensors.records_order(path.read_bytes())
    code, result = _bisect(capsys, path, HERE / "conv2_scaled.ort.npz")
    assert code == 1 and result["order"] == "capture"
    names = [p["a_name"] for p in result["pairs"]]
    assert names == [n for n in RAN if n in names] and result["first_failing"]["a_name"] == "conv2"


@pytest.mark.slow
def test_a_module_the_export_left_no_node_of_goes_after_its_kin(capsys, tmp_path):
    """An eval Dropout inside a block has no node in the export: it is placed by its path right
    after the block's last placed module, where it ran.  Put last (as before), a dropout of
    GPT-2's last block that no copy check caught was paired by order and shape with the
    graph's final output and named first failing on a clean export."""
    import torch
    from perpendis.inputs.formats.onnx_model import describe, read_graph
    from perpendis.layers.bisect import path_entries
    from perpendis.layers.bisect_order import in_graph_order
    from perpendis.layers.capture.onnx import capture_onnx
    from safetensors.torch import save_file

    class Block(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc, self.drop = torch.nn.Linear(16, 16), torch.nn.Dropout(0.1)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x + self.drop(self.fc(x))

    class Net(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.blocks = torch.nn.ModuleList([Block(), Block()])
            self.norm = torch.nn.LayerNorm(16)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            for block in self.blocks:
                x = block(x)
            return self.norm(x)

    torch.manual_seed(0)
    net, x = Net().eval(), torch.randn(2, 5, 16)
    outputs: dict[str, torch.Tensor] = {}
    for name, module in net.named_modules():
        if name and not list(module.children()):
            module.register_forward_hook(lambda _m, _a, out, name=name: outputs.__setitem__(name, out.clone()))
    with torch.no_grad():
        net(x)
    save_file(outputs, tmp_path / "torch.safetensors")
    torch.onnx.export(net, (x,), tmp_path / "net.onnx", dynamo=True)
    np.save(tmp_path / "x.npy", x.numpy())
    capture = capture_onnx(tmp_path / "net.onnx", {"x": x.numpy()})
    capture.save(tmp_path / "ort.npz")
    entries = path_entries(tmp_path / "torch.safetensors")
    ordered, unplaced = in_graph_order(entries, describe(read_graph((tmp_path / "net.onnx").read_bytes())))
    assert unplaced == ["blocks.0.drop", "blocks.1.drop"]
    assert [e.name for e in ordered] == ["blocks.0.fc", "blocks.0.drop", "blocks.1.fc", "blocks.1.drop", "norm"]
    capsys.readouterr()  # the exporter's progress
    code, result = _bisect(capsys, tmp_path / "torch.safetensors", tmp_path / "ort.npz",
                           "--model", tmp_path / "net.onnx")
    assert code == 0 and result["order"] == "model" and result["first_failing"] is None
