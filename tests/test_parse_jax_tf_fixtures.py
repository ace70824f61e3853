"""JAX and TensorFlow text made by real jax 0.10.2 and tensorflow 2.21 (tests/fixtures/text/make_jax_tf_fixtures.py)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from perpendis.inputs.parse import parse_text
from perpendis.numerics.bits import to_float64

ml_dtypes = pytest.importorskip("ml_dtypes")

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "text"
CASES = json.loads((FIXTURES / "cases_jax_tf.json").read_text())


def _held(name: str, values: str) -> np.ndarray:
    """The values the library held, in their own dtype (bfloat16 from its raw bits, via ml_dtypes)."""
    held = np.load(FIXTURES / f"{name}.npy")
    return held.view(ml_dtypes.bfloat16) if values == "bfloat16" else held


@pytest.mark.parametrize("name", sorted(CASES))
def test_fixture_parses_to_what_the_library_held(name: str) -> None:
    spec = CASES[name]
    (tensor,) = parse_text((FIXTURES / f"{name}.txt").read_text())
    held = _held(name, spec["values"])
    assert (tensor.source, tensor.format, tensor.shape) == (spec["source"], spec["format"], held.shape)
    if spec["lossless"] is not None:
        assert tensor.lossless is spec["lossless"]
    parsed = to_float64(tensor.array, tensor.fmt) if tensor.fmt.is_float else tensor.array
    if tensor.lossless and tensor.format == spec["values"]:
        bits = held.view(f"uint{held.dtype.itemsize * 8}") if held.dtype.kind == "f" else held
        np.testing.assert_array_equal(tensor.array.view(bits.dtype), bits)
    elif tensor.lossless or spec.get("exact"):
        # Read in a wider default format (no dtype printed): rounding back gives every bit.
        np.testing.assert_array_equal(parsed.astype(held.dtype), held)
    else:
        # NumPy's print rounds at the 8th fractional digit; reading adds at most half a step.
        np.testing.assert_allclose(parsed, held.astype(np.float64), rtol=2.0**-24, atol=5e-9)


@pytest.mark.parametrize("library", ["jax", "tf"])
def test_bfloat16_text_is_read_as_bfloat16_bits(library: str) -> None:
    """bfloat16 prints 6 significant digits (ml_dtypes' printing): more than enough to pin each value."""
    (tensor,) = parse_text((FIXTURES / f"{library}_bfloat16_repr.txt").read_text())
    assert tensor.array.dtype == np.uint16 and tensor.lossless
    np.testing.assert_array_equal(tensor.array, np.load(FIXTURES / f"{library}_bfloat16_repr.npy"))


def test_tensorflow_print_and_repr_of_one_tensor_agree() -> None:
    for stem in ("tf_float32", "tf_int32", "tf_bool", "tf_empty"):
        (printed,) = parse_text((FIXTURES / f"{stem}_print.txt").read_text())
        (shown,) = parse_text((FIXTURES / f"{stem}_repr.txt").read_text())
        assert printed.format == shown.format and printed.shape == shown.shape
        np.testing.assert_array_equal(printed.array, shown.array)
