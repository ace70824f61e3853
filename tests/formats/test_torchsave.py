"""``torch.save`` files made by real torch 2.13 (committed fixtures, see make_file_fixtures.py)."""

from __future__ import annotations

import io
import json
import pickle
import zipfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from perpendis.errors import InputError
from perpendis.inputs.formats import torchsave

FILES = Path(__file__).resolve().parent.parent / "fixtures" / "files"


@pytest.mark.parametrize("stem", ["torch_checkpoint", "torch_tensor"])
def test_fixtures_equal_what_torch_saved(stem):
    expected = np.load(FILES / f"{stem}.expected.npz")
    formats = json.loads((FILES / f"{stem}.expected.json").read_text())
    tensors = torchsave.read((FILES / f"{stem}.pt").read_bytes(), f"{stem}.pt")
    assert [t.name for t in tensors] == list(formats)
    for tensor in tensors:
        want = expected[tensor.name]
        assert tensor.source == "torch.save (zip)"
        if tensor.format == "float32" and formats[tensor.name] == "complex64":
            want = want.view(np.float32).reshape(*want.shape, 2)
        else:
            assert tensor.format == formats[tensor.name]
        np.testing.assert_array_equal(tensor.array.view(want.dtype) if want.dtype != bool else tensor.array, want)


def test_non_tensor_values_are_skipped_with_a_note():
    tensors = torchsave.read((FILES / "torch_checkpoint.pt").read_bytes())
    assert "1 non-tensor values" in tensors[0].notes[0]


def test_whole_modules_are_refused_by_global_name():
    with pytest.raises(InputError, match=r"torch\.nn\.modules\.container\.Sequential"):
        torchsave.read((FILES / "torch_module.pt").read_bytes())


def test_legacy_format_is_refused_clearly():
    with pytest.raises(InputError, match=r"legacy torch\.save file"):
        torchsave.read((FILES / "torch_legacy.pt").read_bytes())


def test_a_malicious_pickle_runs_nothing(tmp_path):
    marker = tmp_path / "ran"

    class Exploit:
        def __reduce__(self):
            return (open, (str(marker), "w"))

    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        archive.writestr("archive/data.pkl", pickle.dumps({"x": Exploit()}, protocol=2))
    with pytest.raises(InputError, match=r"global io\.open"):
        torchsave.read(out.getvalue())
    assert not marker.exists()


def test_a_view_past_its_storage_is_refused():
    data = (FILES / "torch_tensor.pt").read_bytes()
    with zipfile.ZipFile(io.BytesIO(data)) as src:
        members = {info.filename: src.read(info) for info in src.infolist()}
    name = next(n for n in members if n.endswith("/data.pkl"))
    members[name] = members[name].replace(b"K\x07\x85", b"K\x09\x85", 1)  # size (7,) → (9,)
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        for member, content in members.items():
            archive.writestr(member, content)
    with pytest.raises(InputError, match="reaches element 8 of a storage of 7"):
        torchsave.read(out.getvalue())


def test_a_byte_array_longer_than_the_pickle_is_refused_before_allocating():
    """BYTEARRAY8 allocates the length it declares before reading it (found by the fuzzer:
    one byte put before a real pickle declared 9.7e16 bytes)."""
    data = (FILES / "torch_tensor.pt").read_bytes()
    with zipfile.ZipFile(io.BytesIO(data)) as src:
        members = {info.filename: src.read(info) for info in src.infolist()}
    name = next(n for n in members if n.endswith("/data.pkl"))
    members[name] = pickle.BYTEARRAY8 + members[name]
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        for member, content in members.items():
            archive.writestr(member, content)
    with pytest.raises(InputError, match=r"a byte array declares \d+ bytes, more than the \d+ bytes") as caught:
        torchsave.read(out.getvalue())
    assert caught.value.__cause__ is None


def test_two_rebuild_calls_run_together_are_refused_as_torch_refuses_them():
    """Found by the fuzzer: bytes cut between the rebuild calls of two tensors made one call
    of 12 arguments; built from its first few, one tensor was silently dropped."""
    data = (FILES / "torch_checkpoint.pt").read_bytes()
    with zipfile.ZipFile(io.BytesIO(data)) as src:
        members = {info.filename: src.read(info) for info in src.infolist()}
    name = next(n for n in members if n.endswith("/data.pkl"))
    cut = b"\rtq\x0eRq\x0fX\x06\x00\x00\x000.biasq\x10h\x05"  # "0.weight"'s call ends, "0.bias" begins
    assert cut in members[name]
    members[name] = members[name].replace(cut, b"", 1)
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        for member, content in members.items():
            archive.writestr(member, content)
    with pytest.raises(InputError, match=r"pickle is corrupted \(TypeError: .*_rebuild_tensor_v2"):
        torchsave.read(out.getvalue())


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_truncation_and_corruption_raise_input_error(data):
    raw = bytearray((FILES / "torch_tensor.pt").read_bytes())
    with pytest.raises(InputError):
        torchsave.read(bytes(raw[: data.draw(st.integers(0, len(raw) - 1))]))
    at = data.draw(st.integers(0, len(raw) - 1))
    raw[at] ^= data.draw(st.integers(1, 255))
    try:
        tensors = torchsave.read(bytes(raw))
    except InputError:
        return
    assert all(t.array.dtype == np.dtype(t.fmt.storage) for t in tensors)


def _qsaved(tensor) -> bytes:
    import torch

    buf = io.BytesIO()
    torch.save({"q": tensor}, buf)
    return buf.getvalue()


def _rewritten(data: bytes, old: bytes, new: bytes) -> bytes:
    """The torch.save zip with ``old`` replaced by ``new`` in its pickle (GLOBAL names end at a newline)."""
    src, out = zipfile.ZipFile(io.BytesIO(data)), io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as dst:
        for info in src.infolist():
            body = src.read(info)
            dst.writestr(info.filename, body.replace(old, new) if info.filename.endswith("data.pkl") else body)
    return out.getvalue()


def test_quantized_tensors_are_dequantized_as_torch_does():
    torch = pytest.importorskip("torch")
    x = torch.randn(3, 5, generator=torch.Generator().manual_seed(1))
    for q in (torch.quantize_per_tensor(x, 0.02, 3, torch.quint8),
              torch.quantize_per_tensor(x, 0.05, 0, torch.qint8),
              torch.quantize_per_channel(x, torch.tensor([0.01, 0.02, 0.03], dtype=torch.float64),
                                         torch.tensor([0, 1, -1]), 0, torch.qint8)):
        (t,) = torchsave.read(_qsaved(q))
        assert t.array.dtype == np.float32 and np.array_equal(t.array, q.dequantize().numpy())
        assert "dequantized" in t.notes[0]


def test_a_quantized_tensor_with_the_wrong_parameters_is_an_input_error():
    torch = pytest.importorskip("torch")
    data = _qsaved(torch.quantize_per_tensor(torch.ones(4), 0.1, 0, torch.quint8))
    # Per-tensor parameters (scale, zero point) under a per-channel scheme, which needs scales and an axis.
    with pytest.raises(InputError, match="does not read"):
        torchsave.read(_rewritten(data, b"per_tensor_affine", b"per_channel_affine"))
    with pytest.raises(InputError, match=r"Python global torch\.per_nothing"):
        torchsave.read(_rewritten(data, b"per_tensor_affine", b"per_nothing"))


def test_dequantizing_matches_torch_on_many_scales():
    """torch rounds per-tensor dequantizing in float32 and per-channel in float64: both kept."""
    torch = pytest.importorskip("torch")
    g = torch.Generator().manual_seed(0)
    for _ in range(40):
        x = torch.randn(4, 64, generator=g) * 3
        scale, zero = float(torch.rand(1, generator=g)) * 0.1 + 1e-4, int(torch.randint(0, 255, (1,), generator=g))
        scales = torch.rand(4, generator=g, dtype=torch.float64) * 0.1 + 1e-4
        for q in (torch.quantize_per_tensor(x, scale, zero, torch.quint8),
                  torch.quantize_per_channel(x, scales, torch.randint(-20, 20, (4,), generator=g), 0, torch.qint8)):
            (t,) = torchsave.read(_qsaved(q))
            assert np.array_equal(t.array, q.dequantize().numpy())
