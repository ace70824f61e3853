"""Alignment: the compared format and shape of two tensors, and a third laid out like A."""

import itertools
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from perpendis import formats
from perpendis.align import align, compared_format, convert, like_a
from perpendis.bits import FORMATS, format_of
from perpendis.tensor import Tensor, from_numpy
from perpendis.tolerance import resolve

MODELS = Path(__file__).parent / "fixtures" / "models"


def t(x: np.ndarray) -> Tensor:
    return from_numpy(np.asarray(x), "test")


def load(name: str) -> Tensor:
    (tensor,) = formats.read((MODELS / name).read_bytes(), name)
    return tensor


@pytest.mark.parametrize(("fa", "fb"), list(itertools.product(FORMATS.values(), repeat=2)), ids=str)
def test_compared_format_is_symmetric_and_never_loses_integers(fa, fb):
    fmt = compared_format(fa, fb)
    assert fmt == compared_format(fb, fa)
    if fa.is_float or fb.is_float:
        assert fmt.is_float and fmt.width <= max(f.width for f in (fa, fb) if f.is_float)
    else:
        assert fmt.width >= max(fa.width, fb.width)  # integers widen, so every value survives


def test_float_mismatch_is_compared_in_the_narrower_format_as_ml_dtypes_rounds():
    x = np.random.default_rng(0).standard_normal(1000) * 10.0 ** np.random.default_rng(1).integers(-8, 8, 1000)
    a = t(x)
    b = Tensor(x.astype(ml_dtypes.bfloat16).view(np.uint16), "bfloat16", "test")
    aligned = align(a, b, resolve(format_of("bfloat16")))
    assert aligned.fmt.name == "bfloat16"
    assert np.array_equal(aligned.a, x.astype(ml_dtypes.bfloat16).view(np.uint16))
    assert np.array_equal(aligned.a, aligned.b)
    assert aligned.notes == ["A is float64 and B is bfloat16: A was rounded to bfloat16 to compare values"]


def test_convert_widens_integers_exactly():
    x = np.array([-128, -1, 0, 127], np.int8)
    assert convert(x, format_of("int8"), format_of("int64")).tolist() == x.tolist()


def test_real_nhwc_feature_map_is_transposed_back():
    """ONNX Runtime's NHWC output against PyTorch's NCHW one (``make_models.py``)."""
    nchw, nhwc = load("cnn_features.torch.npy"), load("cnn_features.nhwc.npy")
    aligned = align(nhwc, nchw, resolve(nchw.fmt))
    assert aligned.layout["kind"] == "transpose" and aligned.layout["perm"] == [0, 3, 1, 2]
    assert aligned.shape == nchw.shape
    assert aligned.layout["agree"] == 1.0  # the runtimes differ by rounding only, within tolerance everywhere
    assert np.array_equal(aligned.a, nhwc.array.transpose(0, 3, 1, 2))


@settings(max_examples=30, deadline=None)
@given(
    shape=st.lists(st.integers(1, 5), min_size=2, max_size=4),
    perm_seed=st.integers(0, 10**6),
    seed=st.integers(0, 2**31),
)
def test_any_transpose_is_undone(shape, perm_seed, seed):
    b = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    perm = tuple(np.random.default_rng(perm_seed).permutation(len(shape)).tolist())
    a = np.ascontiguousarray(b.transpose(np.argsort(perm)))  # so that a.transpose(perm) == b
    # Shapes equal, or equal but for size-1 axes, are compared as they are (or reshaped): a
    # transpose that keeps them so cannot be told from the shapes, as of a square matrix.
    assume([n for n in a.shape if n != 1] != [n for n in b.shape if n != 1])
    aligned = align(t(a), t(b), resolve(format_of("float32")))
    assert aligned.shape == b.shape
    assert np.array_equal(aligned.a, b)  # the chosen permutation is one under which all agree


# Each B is made from A as a real layout slip would make it.
LAYOUTS = {
    "same": ((2, 3), lambda a: a.copy()),
    "squeeze": ((6,), lambda a: a.reshape(1, 6, 1).copy()),
    "transpose": ((4, 3, 2), lambda a: np.ascontiguousarray(a.transpose(2, 0, 1))),
    "broadcast": ((4,), lambda a: np.tile(a, (3, 1))),
}


@pytest.mark.parametrize("kind", LAYOUTS)
def test_a_third_input_in_a_shape_is_laid_out_as_a_was(kind):
    a_shape, make_b = LAYOUTS[kind]
    a = np.random.default_rng(3).standard_normal(a_shape)
    aligned = align(t(a), t(make_b(a)), resolve(format_of("float64")))
    assert aligned.layout["kind"] == kind
    ref = a * 2.0  # a reference of A's shape, elementwise tied to A
    assert np.array_equal(like_a(ref, aligned), aligned.a * 2.0)


def test_shapes_that_cannot_be_aligned_leave_nothing_to_compare():
    tol = resolve(format_of("float64"))
    aligned = align(t(np.zeros((2, 3))), t(np.zeros((3, 1, 4))), tol)
    assert aligned.a is None and aligned.b is None and aligned.shape is None
    assert aligned.layout == {"kind": "none", "broadcast": None}
    # These broadcast, but to more elements than either holds: every pair, not a layout slip.
    aligned = align(t(np.zeros((2, 1))), t(np.zeros((1, 3))), tol)
    assert aligned.shape is None and aligned.layout == {"kind": "none", "broadcast": [2, 3]}
