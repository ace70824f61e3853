"""Shared checks for the file reader tests: a parsed tensor equals its source bit for bit."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
from perpendis.inputs.tensor import Tensor
from perpendis.numerics.bits import format_of, raw_bits


def expected_format(array: np.ndarray) -> tuple[str, np.ndarray]:
    """The Perpendis format an array should be read as, and the array in that format's layout.

    ml_dtypes arrays (bfloat16, float8) keep their dtype name; complex arrays become
    (real, imaginary) pairs on a trailing axis.
    """
    if array.dtype.kind == "c":
        real = np.dtype(f"float{array.dtype.itemsize * 4}")
        return real.name, np.ascontiguousarray(array).view(real.newbyteorder(array.dtype.byteorder)).reshape(
            *array.shape, 2
        )
    return ("bool" if array.dtype.kind == "b" else array.dtype.newbyteorder("=").name), array


def check_bits(tensor: Tensor, array: np.ndarray) -> None:
    name, logical = expected_format(array)
    assert tensor.format == name
    assert tensor.shape == logical.shape
    fmt = format_of(name)
    want = np.ascontiguousarray(logical).view(fmt.uint.newbyteorder(logical.dtype.byteorder))
    np.testing.assert_array_equal(raw_bits(tensor.array, fmt), want.astype(fmt.uint))


@pytest.fixture(scope="session")
def assert_bits() -> Callable[[Tensor, np.ndarray], None]:
    """``assert_bits(tensor, array)``: same format, same shape, every element the same bits."""
    return check_bits
