"""Printed forms other than the PyTorch fixtures, built from real NumPy output."""

from __future__ import annotations

import sys

import numpy as np
import pytest
from perpendis.errors import InputError
from perpendis.inputs.parse import parse_text

ml_dtypes = pytest.importorskip("ml_dtypes")


def _one(text: str):
    (tensor,) = parse_text(text)
    return tensor


def test_numpy_float32_needing_nine_digits_is_lossy_by_default_and_exact_when_unique() -> None:
    # Near 0.05 a float32 step (3.7e-9) is finer than NumPy's default 8 fractional digits:
    # take the first value there whose default print does not read back.
    steps = np.float32(0.05) + np.arange(1, 50).astype(np.float32) * np.spacing(np.float32(0.05))
    value = next(v for v in steps if np.float32(np.format_float_positional(v, precision=8)) != v)
    original = np.array([value, np.float32(0.5)], dtype=np.float32)
    lossy = _one(repr(original))
    assert not lossy.lossless and lossy.digits == 7
    with np.printoptions(floatmode="unique"):
        exact = _one(repr(original))
    assert exact.lossless
    np.testing.assert_array_equal(exact.array.view(np.uint32), original.view(np.uint32))


def test_numpy_default_float64_print_is_lossy() -> None:
    tensor = _one(repr(np.array([np.pi, np.e])))
    assert not tensor.lossless and tensor.digits == 9
    assert 'np.set_printoptions(floatmode="unique")' in tensor.notes[0]


def test_numpy_empty_with_printed_shape() -> None:
    tensor = _one(repr(np.zeros((0, 3), dtype=np.float32)))
    assert tensor.shape == (0, 3) and tensor.format == "float32"


def test_numpy_print_without_commas() -> None:
    original = np.arange(12.0).reshape(2, 3, 2) / 4
    tensor = _one(str(original))
    assert tensor.source == "NumPy print" and tensor.shape == (2, 3, 2)
    np.testing.assert_array_equal(tensor.array, original)


@pytest.mark.parametrize("value", [np.float16(0.1), np.float32(-2.5e-8), np.float64(1 / 3), np.int16(-7), np.True_])
def test_numpy_scalars(value) -> None:
    tensor = _one(repr(value))
    assert tensor.shape == () and tensor.lossless
    assert tensor.array.dtype == np.asarray(value).dtype and tensor.array == value


def test_jax_repr_reuses_numpy_printing() -> None:
    """JAX prints ``Array(`` around NumPy's array text (jax not installed: format reproduced)."""
    with np.printoptions(floatmode="unique"):
        text = "Array" + repr(np.array([[1.5, -2.25]], dtype=np.float32))[len("array") :]
    tensor = _one(text)
    assert tensor.source == "JAX repr" and tensor.format == "float32" and tensor.shape == (1, 2)


def test_jax_bfloat16_repr() -> None:
    original = np.array([1.0, -0.333, 7.5], dtype=ml_dtypes.bfloat16)
    text = "Array" + repr(original)[len("array") :]
    tensor = _one(text)
    assert tensor.format == "bfloat16"
    np.testing.assert_array_equal(tensor.array, original.view(np.uint16))


@pytest.mark.parametrize("name", ["bfloat16", "float8_e4m3fn", "float8_e5m2"])
def test_numpy_repr_of_an_ml_dtypes_array(name: str) -> None:
    """NumPy 2.4 with ml_dtypes 0.7 prints ``dtype=dtype(bfloat16)``; older pairs ``dtype=bfloat16``."""
    original = np.array([1.0, -0.333, 7.5], dtype=getattr(ml_dtypes, name))
    tensor = _one(repr(original))
    assert tensor.source == "NumPy repr" and tensor.format == name
    np.testing.assert_array_equal(tensor.array, original.view(f"uint{original.dtype.itemsize * 8}"))


def test_tensorflow_print_and_repr() -> None:
    """TensorFlow's documented forms (tensorflow not installed: format reproduced)."""
    values = np.array([[1.0, 2.5], [3.0, -4.0]], dtype=np.float32)
    printed = f"tf.Tensor(\n{values}, shape=(2, 2), dtype=float32)"
    shown = f"<tf.Tensor: shape=(2, 2), dtype=float32, numpy=\n{values!r}>"
    for text, source in ((printed, "TensorFlow print"), (shown, "TensorFlow repr")):
        tensor = _one(text)
        assert tensor.source == source and tensor.shape == (2, 2)
        np.testing.assert_array_equal(tensor.array, values)
    scalar = _one("<tf.Tensor: shape=(), dtype=int32, numpy=7>")
    assert scalar.shape == () and scalar.format == "int32" and scalar.array == 7


def test_look_alike_characters_and_windows_line_ends() -> None:
    text = "tensor([[ 1.5000, \u22122.0000],\r\n\u00a0\u2009      [ 3.2500,  4.0000]])\r\n"
    tensor = _one(text)
    np.testing.assert_array_equal(tensor.array, np.array([[1.5, -2.0], [3.25, 4.0]], dtype=np.float32))


def test_jupyter_prompts_and_two_outputs() -> None:
    a, b = np.array([1.0, 2.0]), np.array([1.0, 2.5])
    text = f"In [1]: a\nOut[1]: {a!r}\n\nIn [2]: b\nOut[2]: {b!r}\n"
    first, second = parse_text(text)
    np.testing.assert_array_equal(first.array, a)
    np.testing.assert_array_equal(second.array, b)


def test_labels_around_a_tensor_are_ignored_with_a_note() -> None:
    tensor = _one("output:\ntensor([1., 2.])\n")
    assert any("output:" in note for note in tensor.notes)


def test_one_number_per_line_and_csv_with_header() -> None:
    column = _one("0.5\n-1.25\n3\n")
    assert column.source == "one number per line" and column.shape == (3,)
    table = _one("x,y\n1.5,2\n3,4.25\n")
    assert table.source == "CSV columns" and table.shape == (2, 2)
    assert table.array.tolist() == [[1.5, 2.0], [3.0, 4.25]]


def test_numpy_full_print_of_a_large_array_parses() -> None:
    original = np.linspace(-1, 1, 3000).reshape(30, 100).astype(np.float16)
    with np.printoptions(threshold=sys.maxsize, floatmode="unique"):
        tensor = _one(repr(original))
    np.testing.assert_array_equal(tensor.array.view(np.uint16), original.view(np.uint16))


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, np.int8, np.uint64, np.bool_])
def test_list_of_numpy_scalars_is_one_exact_tensor(dtype) -> None:
    """``list(arr)`` prints NumPy 2 scalar reprs, each the shortest round-trip decimal."""
    rng = np.random.default_rng(3)
    original = (rng.standard_normal(7) * 1e3).astype(dtype) if dtype != np.bool_ else rng.random(7) > 0.5
    tensor = _one(repr(list(original)))
    assert tensor.source == "list of NumPy scalars" and tensor.lossless and tensor.shape == (7,)
    np.testing.assert_array_equal(tensor.array, original)
    assert tensor.array.dtype == original.dtype


def test_list_of_float32_scalars_keeps_every_bit_of_awkward_values() -> None:
    original = np.array([np.nan, -np.inf, -0.0, 1e-45, np.finfo(np.float32).max, 1 / 3], dtype=np.float32)
    tensor = _one(repr(list(original)))
    np.testing.assert_array_equal(tensor.array.view(np.uint32), original.view(np.uint32))


def test_nested_lists_of_numpy_scalars_keep_their_shape() -> None:
    original = np.arange(6, dtype=np.float32).reshape(2, 3) / 3
    tensor = _one(repr([list(row) for row in original]))
    assert tensor.shape == (2, 3) and tensor.lossless
    np.testing.assert_array_equal(tensor.array, original)


def test_list_mixing_numpy_scalar_types_is_refused() -> None:
    text = repr([np.float32(1.5), np.float64(2.5)])
    with pytest.raises(InputError) as error:
        parse_text(text)
    assert "mixes" in error.value.message and "np.array" in error.value.message


@pytest.mark.parametrize(
    "original", [np.array(1.5, dtype=np.float32), np.array(-7, dtype=np.int8), np.array(True), np.array(np.inf)]
)
def test_zero_dimensional_array_repr(original: np.ndarray) -> None:
    tensor = _one(repr(original))
    assert tensor.shape == () and tensor.source == "NumPy repr" and tensor.lossless
    assert tensor.array.dtype == original.dtype and tensor.array == original


def test_zero_dimensional_float64_repr_is_judged_like_any_numpy_print() -> None:
    """``array(0.1)`` is printed at 8 digits, like any array, so it may stand for a neighbour."""
    tensor = _one(repr(np.array(0.1 + 2**-40)))
    assert tensor.shape == () and not tensor.lossless
    assert tensor.array == np.float64(repr(np.array(0.1 + 2**-40))[6:-1])


def test_empty_nested_list_keeps_its_shape() -> None:
    original = np.zeros((2, 0))
    tensor = _one(repr(original.tolist()))
    assert tensor.shape == (2, 0) and tensor.format == "float64"


@pytest.mark.parametrize(
    "original", [np.array([1 + 2j, -0.5j, 0j, complex(-0.0, 1.0)]), np.array(-1.5e-7j), np.array(0j, np.complex64)]
)
def test_python_complex_text_without_numpy_padding(original: np.ndarray) -> None:
    """``tolist()`` and ``str`` of a 0-d array print Python complexes: ``(1+2j)``, and ``-0.5j`` without a real part."""
    text = repr(original.tolist()) if original.ndim else str(original)
    tensor = _one(text)
    expected = np.stack([original.real, original.imag], axis=-1).astype(np.float64).reshape(-1, 2)
    np.testing.assert_array_equal(tensor.array.reshape(-1, 2).view(np.uint64), expected.view(np.uint64))


def test_torch_zeros_printed_at_lowered_precision_are_not_taken_as_exact():
    """PyTorch switches to scientific notation below 1e-4 whatever its precision, so with 2
    decimals 0.003 prints as ``0.00``: such zeros do not prove the values were zero."""
    torch = pytest.importorskip("torch")
    x = np.array([-0.00105122, -0.00036199, 0.00081163, 0.0021], dtype=np.float32)
    torch.set_printoptions(precision=2)
    try:
        text = repr(torch.from_numpy(x))
    finally:
        torch.set_printoptions(profile="default")
    assert "0.00" in text
    (tensor,) = parse_text(text)
    assert not tensor.lossless
    # Zeros that PyTorch prints without decimals are exact, of their printed sign.
    text = repr(torch.tensor([0.0, 2.0, -0.0]))
    (exact,) = parse_text(text)
    assert "0.," in text and exact.lossless
    assert np.array_equal(exact.array.view(np.uint32), np.array([0.0, 2.0, -0.0], np.float32).view(np.uint32))
