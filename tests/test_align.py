"""Alignment: the compared format and shape of two tensors, and a third laid out like A."""

import itertools
from pathlib import Path

import numpy as np
import pytest
from hypothesis import assume, event, given, settings
from hypothesis import strategies as st
from perpendis.engine.align import align, compared_format, convert, like_a
from perpendis.inputs import formats
from perpendis.inputs.tensor import Tensor, from_numpy
from perpendis.numerics.bits import FORMATS, format_of
from perpendis.numerics.tolerance import resolve

ml_dtypes = pytest.importorskip("ml_dtypes")

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


# Equal shapes that another order of the axes fits: compared as given, the order reported.


def square_weight(n: int = 64) -> np.ndarray:
    """A real ``nn.Linear`` weight: square, so its transpose has the same shape."""
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    return torch.nn.Linear(n, n).weight.detach().numpy()


def smooth_image() -> np.ndarray:
    """An image-like (C, H, W) tensor with H == W: PyTorch's bilinear upsampling of a
    small random image, so neighbouring pixels are close as in a photograph."""
    torch = pytest.importorskip("torch")
    torch.manual_seed(1)
    small = torch.rand(1, 3, 8, 8)
    return torch.nn.functional.interpolate(small, size=(64, 64), mode="bilinear", align_corners=False)[0].numpy()


def aligned_pair(a: np.ndarray, b: np.ndarray):
    ta, tb = t(a), t(b)
    return align(ta, tb, resolve(compared_format(ta.fmt, tb.fmt)))


def test_linear_weight_against_its_transpose_is_a_layout_slip_compared_as_given():
    w = square_weight()
    aligned = aligned_pair(w, np.ascontiguousarray(w.T))
    assert aligned.layout["kind"] == "same"
    permuted = aligned.layout["permuted"]
    assert permuted["perm"] == [1, 0] and permuted["agree"] == 1.0
    assert permuted["given"] < 0.05  # only the diagonal agrees in the given order
    assert np.array_equal(aligned.a, w) and np.array_equal(aligned.b, w.T)  # not silently transposed


@pytest.mark.parametrize(
    ("name", "perm"),
    [("image (C, H, W)", (0, 2, 1)), ("feature map (N, C, H, W)", (0, 1, 3, 2))],
)
def test_height_and_width_swapped_is_found(name, perm):
    x = smooth_image() if len(perm) == 3 else load("cnn_features.torch.npy").array
    aligned = aligned_pair(x, np.ascontiguousarray(x.transpose(perm)))
    assert aligned.layout["permuted"]["perm"] == list(perm), name
    assert aligned.layout["permuted"]["agree"] == 1.0


def test_a_real_feature_map_with_relu_zeros_agreeing_by_chance_is_still_found():
    """After ReLU many elements are 0 on both sides in any order, and a 4 × 4 map has a
    quarter of its elements on the diagonal: the given order agrees on a third of them."""
    x = load("cnn_features.torch.npy").array[0]  # (C, H, W) = (16, 4, 4)
    permuted = aligned_pair(x, np.ascontiguousarray(x.transpose(0, 2, 1))).layout["permuted"]
    assert 0.2 < permuted["given"] < 0.5 and permuted["perm"] == [0, 2, 1]


def test_size_one_axes_dropped_and_then_transposed():
    w = square_weight(16)
    aligned = aligned_pair(w[None], np.ascontiguousarray(w.T))
    assert aligned.layout["kind"] == "squeeze" and aligned.layout["permuted"]["perm"] == [1, 0]


def test_a_symmetric_matrix_is_never_suspected():
    w = square_weight().astype(np.float64)
    gram = w @ w.T  # symmetric: every order agrees, or none does
    assert "permuted" not in aligned_pair(gram, np.ascontiguousarray(gram.T)).layout
    assert "permuted" not in aligned_pair(gram + 0.5, gram).layout  # a real failure, which no order explains


def test_rounding_noise_is_not_a_layout_slip():
    """A square float32 product against the same product in float64, rounded."""
    torch = pytest.importorskip("torch")
    torch.manual_seed(2)
    x, w = torch.randn(64, 256), torch.randn(256, 64)
    single = (x @ w).numpy()
    double = (x.double() @ w.double()).float().numpy()
    assert not np.array_equal(single, double)
    assert "permuted" not in aligned_pair(single, double).layout


def test_unrelated_data_is_not_a_layout_slip():
    rng = np.random.default_rng(4)
    for shape in [(64, 64), (3, 32, 32), (2, 4, 8, 8), (5, 5, 5)]:
        assert "permuted" not in aligned_pair(rng.standard_normal(shape), rng.standard_normal(shape)).layout


def test_the_sample_does_not_alias_with_the_shape():
    """Evenly spaced positions over a 4096 × 4096 matrix fall exactly on its diagonal,
    where a matrix and its transpose agree."""
    a = np.random.default_rng(5).integers(0, 256, (4096, 4096), dtype=np.uint8)
    permuted = aligned_pair(a, np.ascontiguousarray(a.T)).layout["permuted"]
    assert permuted["perm"] == [1, 0] and permuted["given"] < 0.05


@settings(max_examples=60, deadline=None)
@given(
    sizes=st.lists(st.integers(1, 5), min_size=1, max_size=3),
    perm_seed=st.integers(0, 10**6),
    seed=st.integers(0, 2**31),
)
def test_any_shape_preserving_permutation_is_named_and_nothing_else(sizes, perm_seed, seed):
    rng = np.random.default_rng(seed)
    shape = rng.permutation([*sizes, sizes[0]]).tolist()  # one size twice, so some other order keeps the shape
    a = rng.standard_normal(shape)
    perm = list(range(len(shape)))
    for size in set(shape):  # shuffle axes among those of one size, which keeps the shape
        axes = [i for i, n in enumerate(shape) if n == size]
        for i, j in zip(axes, np.random.default_rng(perm_seed).permutation(axes), strict=True):
            perm[i] = int(j)
    b = np.ascontiguousarray(a.transpose(perm))
    assert b.shape == a.shape
    aligned = aligned_pair(a, b)
    assert np.array_equal(aligned.a, a)
    permuted = aligned.layout.get("permuted")
    if np.mean(a != b) < 0.2:  # the given order mostly agrees (size-1 or short axes): nothing to report
        event("given order agrees")
        assert permuted is None
    else:
        event("permuted")
        assert permuted is not None and permuted["agree"] == 1.0
        assert np.array_equal(a.transpose(permuted["perm"]), b)  # the named order is one that fits
    assert "permuted" not in aligned_pair(a, rng.standard_normal(shape)).layout


def test_empty_tensors_are_never_suspected():
    assert aligned_pair(np.zeros((0, 3, 3), np.float16), np.zeros((0, 3, 3), np.float16)).layout == {"kind": "same"}
