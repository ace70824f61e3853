"""No pickle from a file is ever executed.

Each hostile file carries a pickle that, if unpickled, creates a marker file: through
``os.system`` (pickled as ``posix.system``), ``builtins.eval``, ``builtins.exec``, or
``subprocess.Popen``, at the top level or nested in a ``state_dict``-like dict, carried
by real ``torch.save`` files (zip and legacy), ``.npy``/``.npz`` object arrays and bare
pickles.  A control run first proves every payload live (``torch.load`` or ``np.load``
with pickles allowed, in a child process, does create its marker), so "marker absent"
after Perpendis read the file means Perpendis really did not run it.  Perpendis must refuse the file with an
``InputError`` naming the global it would not load.
"""

from __future__ import annotations

import io
import os
import pickle
import subprocess
import sys
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from perpendis.errors import InputError
from perpendis.inputs import formats
from perpendis.inputs.load import load_path

torch = pytest.importorskip("torch")

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "files"
ROOT = Path(__file__).resolve().parent.parent


class System:
    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


class Eval:
    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return (eval, (f"open({str(self.marker)!r}, 'w').close()",))


class Exec:
    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return (exec, (f"open({str(self.marker)!r}, 'w').close()",))


class Popen:
    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return (subprocess.Popen, (["touch", str(self.marker)],))


# payload class → the names its global may have in a pickle (protocols up to 2 write
# Python 2's module names), one of which Perpendis must report
PAYLOADS: dict[str, tuple[type, tuple[str, ...]]] = {
    "os.system": (System, (f"{os.system.__module__}.system",)),
    "eval": (Eval, ("builtins.eval", "__builtin__.eval")),
    "exec": (Exec, ("builtins.exec", "__builtin__.exec")),
    "Popen": (Popen, ("subprocess.Popen", "commands.Popen")),
}


def nested(evil: object) -> object:
    """The payload deep in a checkpoint-like dict, beside a real tensor."""
    return {"model": {"layer.weight": torch.ones(2), "extra": {"hook": evil}}, "epoch": 3}


def torch_file(obj: object) -> bytes:
    """A real ``torch.save`` file of ``obj``: torch pickles the payload's ``__reduce__`` as is."""
    out = io.BytesIO()
    torch.save(obj, out)
    return out.getvalue()


def torch_file_with_pickle(pkl: bytes) -> bytes:
    """The committed real ``torch.save`` file with its ``data.pkl`` replaced."""
    source = zipfile.ZipFile(FIXTURES / "torch_tensor.pt")
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        for info in source.infolist():
            archive.writestr(info.filename, pkl if info.filename.endswith("data.pkl") else source.read(info))
    return out.getvalue()


def npy_object_file(obj: object) -> bytes:
    out = io.BytesIO()
    np.save(out, np.array([obj, 1.5], dtype=object), allow_pickle=True)
    return out.getvalue()


def npz_object_file(obj: object) -> bytes:
    out = io.BytesIO()
    np.savez(out, good=np.arange(3.0), evil=np.array([obj], dtype=object))
    return out.getvalue()


def legacy_torch_file(obj: object) -> bytes:
    out = io.BytesIO()
    torch.save(obj, out, _use_new_zipfile_serialization=False)
    return out.getvalue()


CARRIERS: dict[str, Callable[[object], bytes]] = {
    "torch.save": torch_file,
    "torch.save nested": lambda evil: torch_file(nested(evil)),
    "torch.save protocol 4": lambda evil: torch_file_with_pickle(pickle.dumps({"a": {"b": [evil]}}, protocol=4)),
    "torch.save protocol 0": lambda evil: torch_file_with_pickle(pickle.dumps({"a": evil}, protocol=0)),
    "npy object array": npy_object_file,
    "npz object member": npz_object_file,
    "legacy torch.save": legacy_torch_file,
    "bare pickle": lambda evil: pickle.dumps(evil, protocol=2),
}


UNPICKLE_THE_ORDINARY_WAY = """
import io, sys, numpy as np, torch
for path in sys.argv[1:]:
    data = open(path, "rb").read()
    try:
        if data[:6] == b"\\x93NUMPY":
            np.load(io.BytesIO(data), allow_pickle=True)
        elif data[:4] == b"PK\\x03\\x04" and b"data.pkl" not in data:
            dict(np.load(io.BytesIO(data), allow_pickle=True))
        else:
            torch.load(io.BytesIO(data), weights_only=False)
    except Exception:
        pass
"""


@dataclass
class Hostile:
    path: Path
    marker: Path
    global_names: tuple[str, ...]


@pytest.fixture(scope="module")
def hostile(tmp_path_factory) -> dict[tuple[str, str], Hostile]:
    """Every payload in every carrier, written to disk, each proven live by a control run:
    one child process unpickles them all the ordinary way and must create every marker."""
    folder = tmp_path_factory.mktemp("hostile")
    files = {}
    for i, (carrier, payload) in enumerate((c, p) for c in sorted(CARRIERS) for p in sorted(PAYLOADS)):
        marker = folder / f"marker-{i}"
        path = folder / f"evil-{i}.pt"
        path.write_bytes(CARRIERS[carrier](PAYLOADS[payload][0](marker)))
        files[carrier, payload] = Hostile(path, marker, PAYLOADS[payload][1])
    subprocess.run([sys.executable, "-c", UNPICKLE_THE_ORDINARY_WAY, *(str(h.path) for h in files.values())],
                   capture_output=True, timeout=300, check=False)  # fmt: skip
    dead = [key for key, h in files.items() if not h.marker.exists()]
    assert not dead, f"control: these payloads did not run when unpickled the ordinary way: {dead}"
    for h in files.values():
        h.marker.unlink()
    return files


@pytest.mark.parametrize("carrier", sorted(CARRIERS))
@pytest.mark.parametrize("payload", sorted(PAYLOADS))
def test_hostile_pickles_never_run(carrier, payload, hostile):
    case = hostile[carrier, payload]
    with pytest.raises(InputError) as raised:
        load_path(case.path)
    assert not case.marker.exists()

    message = raised.value.message
    if carrier.startswith("torch.save"):
        assert any(name in message for name in case.global_names), message
    elif carrier == "legacy torch.save":
        assert "legacy" in message
    else:
        assert "pickle" in message and "never" in message, message


@pytest.mark.parametrize("payload", sorted(PAYLOADS))
def test_cli_refuses_without_running(payload, tmp_path):
    marker = tmp_path / "marker"
    (tmp_path / "evil.pt").write_bytes(torch_file(nested(PAYLOADS[payload][0](marker))))
    np.save(tmp_path / "good.npy", np.ones(2, np.float32))
    env = {**os.environ, "PYTHONPATH": str(ROOT / "py")}
    proc = subprocess.run(
        [sys.executable, "-m", "perpendis", "evil.pt", "good.npy"], cwd=tmp_path, env=env,
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    assert any(name in proc.stderr for name in PAYLOADS[payload][1]), proc.stderr
    assert not marker.exists()


@pytest.mark.parametrize(
    "module, name",
    [("posix", "system"), ("os", "system"), ("builtins", "eval"), ("builtins", "getattr"), ("__builtin__", "eval"),
     ("torch", "load"), ("torch._utils", "_rebuild_device_tensor_from_numpy"), ("numpy", "frombuffer"),
     ("collections", "defaultdict"), ("torch.nn.modules.linear", "Linear"), ("subprocess", "check_output")],
)  # fmt: skip
def test_every_global_outside_the_allowlist_is_refused_by_name(module, name, tmp_path):
    """Hand-written pickles naming a global with GLOBAL (protocol 2) and STACK_GLOBAL (protocol 4)."""
    for pkl in (
        b"\x80\x02c" + f"{module}\n{name}\n".encode() + b")R.",
        b"\x80\x04\x8c" + bytes([len(module)]) + module.encode() + b"\x8c" + bytes([len(name)]) + name.encode()
        + b"\x93)R.",
    ):  # fmt: skip
        with pytest.raises(InputError) as raised:
            formats.read(torch_file_with_pickle(pkl), "x.pt")
        assert f"{module}.{name}" in raised.value.message


def test_real_torch_save_files_still_load():
    expected = np.load(FIXTURES / "torch_checkpoint.expected.npz")
    tensors = formats.read((FIXTURES / "torch_checkpoint.pt").read_bytes(), "torch_checkpoint.pt")
    assert [t.name for t in tensors] == list(expected.files)
    for tensor in tensors:
        want = np.ascontiguousarray(expected[tensor.name])
        assert tensor.shape == want.shape + ((2,) if want.dtype.kind == "c" else ())
        assert np.ascontiguousarray(tensor.array).tobytes() == want.tobytes(), tensor.name


def test_fresh_state_dict_loads_exactly():
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.LayerNorm(4)).to(torch.float16)
    state = model.state_dict()
    tensors = formats.read(torch_file(state), "state.pt")
    assert [t.name for t in tensors] == list(state)
    for tensor in tensors:
        assert tensor.format == "float16"
        np.testing.assert_array_equal(tensor.array, state[tensor.name].numpy())
