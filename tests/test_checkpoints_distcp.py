"""PyTorch distributed checkpoints (``.metadata`` + ``.distcp``) against the Hugging Face export of the same model.

The files are made by ``torch.distributed.checkpoint.save`` from one process and by
``transformers``' ``save_pretrained`` (``tests/fixtures/checkpoints/make_distcp.py``).
``.metadata`` is a pickle: it is read by a restricted unpickler that needs no torch and
refuses anything but the checkpoint's metadata classes.
"""

from __future__ import annotations

import json
import pickle
import subprocess
import sys
from pathlib import Path

import pytest
from perpendis.checkpoints import compare_checkpoints, folder, parse_rule
from perpendis.cli.main import main
from perpendis.errors import InputError
from perpendis.inputs.formats import distcp

pytest.importorskip("torch.distributed.checkpoint")
pytest.importorskip("transformers")

FIXTURES = Path(__file__).parent / "fixtures" / "checkpoints"
sys.path.insert(0, str(FIXTURES))
import make_distcp  # noqa: E402  (after the skips: it imports torch and transformers)

pytestmark = pytest.mark.slow  # a transformers model saved twice: about 20 s
RULE = parse_rule(make_distcp.RENAME)
PY = Path(__file__).resolve().parent.parent / "py"


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    return make_distcp.make(tmp_path_factory.mktemp("distcp"))


def test_every_tensor_is_an_exact_bfloat16_conversion(saved):
    dcp, hf = saved
    report = compare_checkpoints(folder(dcp), folder(hf), rules=[RULE])
    rows = {r.name: r for r in report.tensors}
    assert len(rows) == 21 and not report.only_a and not report.only_b and not report.problems
    assert {r.verdict for r in rows.values()} == {"converted"}
    q = rows["model.layers.1.self_attn.q_proj.weight"]
    assert (q.a_name, q.file_a, q.dtype_a, q.dtype_b) == (
        "model.model.layers.1.self_attn.q_proj.weight", "__0_0.distcp", "float32", "bfloat16",
    )  # fmt: skip
    assert any("not tensors were not compared: step" in n for n in report.notes)


def test_the_cli_compares_the_folder(saved, capsys):
    dcp, hf = saved
    assert main(["checkpoints", str(dcp), str(hf), "--rename", make_distcp.RENAME, "--json", "--no-progress"]) == 0
    assert json.loads(capsys.readouterr().out)["summary"]["tensors"] == 21


def test_a_cut_distcp_file_is_a_problem_naming_it(saved, tmp_path):
    dcp, hf = saved
    cut = tmp_path / "dcp"
    cut.mkdir()
    (cut / ".metadata").write_bytes((dcp / ".metadata").read_bytes())
    data = (dcp / "__0_0.distcp").read_bytes()
    (cut / "__0_0.distcp").write_bytes(data[: len(data) // 2])
    report = compare_checkpoints(folder(cut), folder(hf), rules=[RULE])
    (problem,) = report.problems
    assert problem.file == "__0_0.distcp" and "cut short" in problem.message
    verdicts = {r.verdict for r in report.tensors}
    assert verdicts == {"error", "converted"}  # the tensors before the cut are still compared


class _Trap:
    """Unpickled, it would create a file: the restricted unpickler must not let it."""

    def __init__(self, path: str):
        self.path = path

    def __reduce__(self):
        return (Path.touch, (Path(self.path),))


def test_a_metadata_naming_other_classes_is_refused_without_running_it(saved, tmp_path):
    dcp, _ = saved
    trapped = tmp_path / "trapped"
    trapped.mkdir()
    touched = tmp_path / "touched"
    (trapped / ".metadata").write_bytes(pickle.dumps(_Trap(str(touched))))
    (trapped / "__0_0.distcp").write_bytes((dcp / "__0_0.distcp").read_bytes())
    report = compare_checkpoints(folder(trapped), folder(dcp))
    (problem,) = report.problems
    assert problem.file == ".metadata" and "pathlib" in problem.message and "not unpickled" in problem.message
    assert not touched.exists()
    with pytest.raises(InputError, match="not a readable"):
        distcp.read_metadata(b"\x80\x04not a pickle")


def test_the_metadata_is_read_without_torch(saved):
    """The reader imports no torch: in a process where importing torch fails it still
    locates every tensor."""
    dcp, _ = saved
    code = (
        "import sys; sys.modules['torch'] = None\n"
        "from perpendis.inputs.formats import distcp\n"
        f"layout = distcp.read_metadata(open({str(dcp / '.metadata')!r}, 'rb').read())\n"
        "print(len(layout.entries), layout.not_tensors, layout.entries[0].dtype)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env={"PYTHONPATH": str(PY)})
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["21", "['step']", "float32"]
