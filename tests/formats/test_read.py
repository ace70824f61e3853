"""Recognising the form of a file by its content, whatever its name says."""

from __future__ import annotations

import io
import pickle
from pathlib import Path

import numpy as np
import pytest
from perpendis.errors import InputError
from perpendis.inputs import formats

pytest.importorskip("onnx")
pytest.importorskip("polygraphy")
pytest.importorskip("safetensors")
from onnx import numpy_helper
from polygraphy.comparator import RunResults
from polygraphy.comparator.struct import IterationResult
from polygraphy.json import to_json
from safetensors.numpy import save

FILES = Path(__file__).resolve().parent.parent / "fixtures" / "files"
ARRAY = np.arange(6, dtype=np.float32).reshape(2, 3)


def npy() -> bytes:
    out = io.BytesIO()
    np.save(out, ARRAY)
    return out.getvalue()


def npz() -> bytes:
    out = io.BytesIO()
    np.savez_compressed(out, out=ARRAY)
    return out.getvalue()


def run_results() -> bytes:
    results = RunResults()
    results.append(("onnxrt-runner-N0", [IterationResult({"out": ARRAY}, runner_name="onnxrt-runner-N0")]))
    return to_json(results).encode()


@pytest.mark.parametrize(
    ("make", "source", "name"),
    [
        (npy, ".npy v1.0", "model.bin"),
        (npz, ".npz (compressed), .npy v1.0", "out"),
        (lambda: save({"out": ARRAY}), "safetensors", "out"),
        (lambda: numpy_helper.from_array(ARRAY, "out").SerializeToString(), "ONNX TensorProto", "out"),
        (run_results, "Polygraphy RunResults: runner onnxrt-runner-N0, iteration 0", "out"),
    ],
)
def test_form_is_recognised_by_content_not_name(make, source, name, assert_bits):
    [tensor] = formats.read(make(), "model.bin")
    assert (tensor.source, tensor.name) == (source, name)
    assert_bits(tensor, ARRAY)


def test_torch_save_zip_is_told_from_npz():
    tensors = formats.read((FILES / "torch_tensor.pt").read_bytes(), "weights.npz")
    assert tensors[0].source == "torch.save (zip)"


def test_legacy_torch_and_plain_pickles_are_refused():
    with pytest.raises(InputError, match="legacy"):
        formats.read((FILES / "torch_legacy.pt").read_bytes())
    with pytest.raises(InputError, match="never unpickles"):
        formats.read(pickle.dumps({"a": [1.0, 2.0]}))


def test_text_is_left_to_the_text_parser():
    text = repr(np.float16([1.5, 2.25])).encode()
    assert formats.looks_like_text(text)
    assert not formats.looks_like_text(npy())
    assert not formats.looks_like_text(run_results())
    with pytest.raises(InputError, match="read it as pasted text"):
        formats.read(text)


def test_unknown_bytes_list_the_understood_forms():
    with pytest.raises(InputError, match=r"\.npy, \.npz, \.safetensors"):
        formats.read(bytes(range(250, 256)) * 10)
