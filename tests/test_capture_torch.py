"""perpendis.layers.capture: PyTorch forward hooks, written to safetensors and npz and read back."""

from __future__ import annotations

import json

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import perpendis  # noqa: E402
from perpendis.errors import InputError  # noqa: E402
from perpendis.inputs.formats import safetensors  # noqa: E402
from perpendis.inputs.load import load_path  # noqa: E402
from perpendis.layers.capture.store import META_KEY, read_info  # noqa: E402


class Pair(torch.nn.Module):
    """A leaf returning a tuple and a dict, to test the suffixes."""

    def forward(self, x):
        return x + 1, {"low": x.min(dim=-1).values, "high": x.max(dim=-1).values}


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 4)
        self.act = torch.nn.ReLU()
        self.split = Pair()
        self.head = torch.nn.Sequential(torch.nn.Linear(4, 2))

    def forward(self, x):
        y = self.act(self.fc(x))
        y = self.act(y - 0.5)  # the same module called twice
        z, extra = self.split(y)
        return self.head(z) + extra["high"][:, None]


def test_every_leaf_output_in_execution_order_named_by_module_path(tmp_path):
    torch.manual_seed(0)
    model, x = Net(), torch.randn(3, 4, requires_grad=True)
    with perpendis.capture(model) as run:
        out = model(x)
    assert run.names == ["fc", "act", "act@1", "split:0", "split:1:low", "split:1:high", "head.0"]
    with torch.no_grad():
        np.testing.assert_array_equal(run["act@1"], torch.relu(torch.relu(model.fc(x)) - 0.5).numpy())
        np.testing.assert_array_equal(run["head.0"], model.head(torch.from_numpy(run["split:0"])).numpy())
    assert out.shape == run["head.0"].shape
    path = run.save(tmp_path / "torch.safetensors")
    data = path.read_bytes()
    assert json.loads(safetensors.metadata(data)["order"]) == run.names
    assert [t.name for t in load_path(path)] == run.names  # order kept although safetensors sorts
    assert read_info(data)["act@1"] == {"module": "act", "cls": "ReLU", "kind": "output"}
    assert META_KEY in safetensors.metadata(data)
    npz = run.save(tmp_path / "torch.npz")
    assert list(np.load(npz)) == run.names


def test_inputs_are_recorded_when_asked():
    model, x = Net(), torch.randn(2, 4)
    with torch.no_grad(), perpendis.capture(model, inputs=True) as run:
        model(x)
    assert run.names[:2] == ["fc:in", "fc"]
    np.testing.assert_array_equal(run["fc:in"], x.numpy())
    assert run.info["fc:in"]["kind"] == "input"


def test_a_value_changed_in_place_later_is_kept_as_it_was():
    model = torch.nn.Sequential(torch.nn.Linear(3, 3), torch.nn.ReLU(inplace=True))
    x = torch.randn(4, 3) * 10
    with torch.no_grad(), perpendis.capture(model) as run:
        model(x)
    assert (run["0"] < 0).any()  # ReLU(inplace) overwrote the Linear's output after it was recorded


def test_hooks_are_removed_even_when_forward_raises():
    model = Net()
    with pytest.raises(RuntimeError), perpendis.capture(model):
        model(torch.randn(2, 5))  # wrong width: the Linear raises
    assert all(not m._forward_hooks and not m._forward_pre_hooks for m in model.modules())


def test_bfloat16_is_widened_exactly():
    model = torch.nn.Linear(4, 4).to(torch.bfloat16)
    x = torch.randn(2, 4, dtype=torch.bfloat16)
    with torch.no_grad(), perpendis.capture(model) as run:
        out = model(x)
    assert run.names == ["Linear"] and run["Linear"].dtype == np.float32
    np.testing.assert_array_equal(run["Linear"], out.float().numpy())


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
def test_cuda_outputs_are_copied_to_the_host():
    model = Net().cuda()
    with torch.no_grad(), perpendis.capture(model) as run:
        model(torch.randn(2, 4, device="cuda"))
    assert isinstance(run["fc"], np.ndarray)


def test_import_perpendis_imports_no_torch_or_onnx():
    import subprocess
    import sys

    code = "import sys, perpendis, perpendis.layers.capture, perpendis.layers.pairing, perpendis.layers.bisect;" \
        "print(sorted(m for m in ('torch', 'onnx', 'onnxruntime') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={"PYTHONPATH": str(perpendis.__path__[0].rsplit("/", 1)[0])})
    assert out.stdout.strip() == "[]"


@pytest.mark.slow
def test_the_documented_call_works_in_a_fresh_interpreter():
    """``import perpendis; perpendis.capture(model)`` with nothing imported before: the lazy
    attribute once recursed without end (``from . import capture`` asked ``__getattr__`` again)."""
    import subprocess
    import sys
    from pathlib import Path

    code = ("import perpendis, torch\nm = torch.nn.Linear(2, 2)\n"
            "with perpendis.capture(m) as run:\n    m(torch.ones(1, 2))\nprint(len(list(run)))")
    py = Path(__file__).resolve().parents[1] / "py"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=py, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert int(out.stdout.split()[-1]) >= 1


class Branches(torch.nn.Module):
    """torch.cond picks a branch module by the input's sign; a ReLU after it."""

    def __init__(self):
        super().__init__()
        self.pos, self.neg, self.out = torch.nn.Linear(4, 4), torch.nn.Linear(4, 4), torch.nn.ReLU()

    def forward(self, x):
        return self.out(torch.cond(x.sum() > 0, lambda t: self.pos(t), lambda t: self.neg(t), (x,)))


@pytest.mark.parametrize("ran_before", [False, True])
def test_a_model_with_torch_cond_is_captured_through_the_branch_it_took(ran_before):
    torch.manual_seed(0)
    model, x = Branches().eval(), torch.ones(2, 4)
    if ran_before:
        with torch.no_grad():
            model(x)
    with torch.no_grad(), perpendis.capture(model) as run:
        y = model(x)
    assert run.names == ["pos", "out"]
    np.testing.assert_array_equal(run["out"], y.numpy())
    np.testing.assert_array_equal(run["pos"], model.pos(x).detach().numpy())


@pytest.mark.slow
@pytest.mark.parametrize("ran_before", [False, True])
def test_compiled_regions_are_captured_under_the_paths_of_the_model_they_wrap(ran_before):
    torch.manual_seed(0)
    inner = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU())
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.compile(inner), torch.nn.Linear(4, 2)).eval()
    x = torch.randn(3, 4)
    if ran_before:  # once compiled, the region would run no hook
        with torch.no_grad():
            model(x)
    with torch.no_grad(), perpendis.capture(model) as run:
        y = model(x)
    assert run.names == ["0", "1.0", "1.1", "2"]
    np.testing.assert_allclose(run["2"], y.numpy(), rtol=1e-6)


def test_a_block_that_runs_nothing_is_refused_with_what_to_do():
    model = Net()
    with pytest.raises(InputError, match=r"nothing was captured.*call the model"), perpendis.capture(model):
        pass
