"""The one "exactly one tensor" check (``inputs.load.only_tensor``), on inputs NumPy wrote.

Its four users keep their own words: the page's box (``test_api``), a list of files given
to bisect (``test_bisect``), the CLI's A and B (``test_cli_routes``), and here the CLI's
reference and ``capture --input``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from numpy_written import npy, npz
from perpendis.errors import InputError
from perpendis.inputs.load import load_bytes, only_tensor, tensor_names

ROOT = Path(__file__).resolve().parent.parent


def test_one_tensor_is_returned():
    array = np.arange(6, dtype=np.float32).reshape(2, 3)
    tensor = only_tensor(load_bytes(npy(array), "x.npy"), "x.npy", "never shown")
    np.testing.assert_array_equal(tensor.array, array)


def test_several_tensors_name_the_input_the_count_and_the_hint():
    tensors = load_bytes(npz(w=np.ones(2), b=np.zeros(3), c=np.ones(1)), "run.npz")
    with pytest.raises(InputError) as info:
        only_tensor(tensors, "run.npz", "give one tensor per input", side="A", where="run.npz")
    assert info.value.message == "run.npz holds 3 tensors; give one tensor per input"
    assert (info.value.side, info.value.where) == ("A", "run.npz")


def test_named_lists_the_tensors_names():
    tensors = load_bytes(npz(**{f"layer{i}": np.full(2, i) for i in range(10)}), "caps.npz")
    with pytest.raises(InputError) as info:
        only_tensor(tensors, "box A", "put one tensor in each box", named=True, side="a")
    message = info.value.message
    assert message.startswith("box A holds 10 tensors ('layer0', 'layer1', ")
    assert f"({tensor_names(tensors)}); put one tensor in each box" in message
    assert message.count("'layer") == 8 and "and 2 more" in message


def test_no_tensor_is_refused_too():
    with pytest.raises(InputError, match=r"^an empty list holds 0 tensors; give one$"):
        only_tensor([], "an empty list", "give one")


def test_cli_reference_and_capture_inputs_keep_their_words(tmp_path):
    """The CLI's reference and ``capture --input`` name the file and what to give instead."""
    many = tmp_path / "many.npz"
    many.write_bytes(npz(x=np.ones(3, np.float32), y=np.ones(3, np.float32)))
    one = tmp_path / "one.npy"
    one.write_bytes(npy(np.ones(3, np.float32)))
    env = {"PYTHONPATH": str(ROOT / "py"), "PATH": "/usr/bin:/bin"}
    run = subprocess.run([sys.executable, "-m", "perpendis", str(one), str(one), "--ref", str(many)],
                         capture_output=True, text=True, env=env)
    assert run.returncode == 2 and f"{many} holds 2 tensors; give one reference tensor" in run.stderr
    from perpendis.cli.capture import read_inputs

    with pytest.raises(InputError) as info:
        read_inputs([str(many)])
    assert info.value.message == f"{many} holds 2 tensors; give one array per --input"
