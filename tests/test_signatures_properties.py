"""Property tests of the relation detectors: an array against its own shifted, reversed,
permuted, clipped, quantised or affine-mapped self is named correctly, and against a copy
perturbed by rounding it gets no finding at all beyond the rounding one."""

from __future__ import annotations

import numpy as np
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from perpendis.diagnosis import dependence
from perpendis.diagnosis.relations.grammar import kinds as relation_kinds
from perpendis.engine.compare import compare
from perpendis.inputs.tensor import from_numpy
from perpendis.report.headline import main_finding
from perpendis.report.model import Report

SETTINGS = settings(max_examples=25, deadline=None)


@st.composite
def arrays(draw, min_dims: int = 2) -> tuple[np.ndarray, int, np.random.Generator]:
    """A float32 array of 2 or 3 axes of 4 to 12 entries (at least 16 elements per slice),
    an axis of it, and a generator for the transformation."""
    ndim = draw(st.integers(min_dims, 3))
    shape = tuple(draw(st.integers(4, 12)) for _ in range(ndim))
    axis = draw(st.integers(0, ndim - 1))
    assume(np.prod(shape) // shape[axis] >= 16)
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    return rng.standard_normal(shape).astype(np.float32), axis, rng


def judged(a: np.ndarray, b: np.ndarray) -> Report:
    return compare(from_numpy(np.ascontiguousarray(a), "a"), from_numpy(np.ascontiguousarray(b), "b"))


def top(r: Report):
    f = main_finding(r.findings)
    assert f is not None and f.severity == "error", r.to_text()
    return f


@SETTINGS
@given(arrays(), st.integers(1, 3))
def test_shifted_self_is_named_with_its_shift(case, k):
    b, axis, _ = case
    assume(b.shape[axis] >= 4 * k)
    f = top(judged(np.roll(b, -k, axis=axis), b))  # A[i] = B[i + k]
    assert f.kind == "shifted" and f.where["axis"] == axis and f.where["amount"]["shift"] == k


@SETTINGS
@given(arrays())
def test_reversed_self_is_named(case):
    b, axis, _ = case
    f = top(judged(np.flip(b, axis=axis), b))
    assert f.kind == "reversed" and f.where["axis"] == axis


@SETTINGS
@given(arrays())
def test_permuted_self_is_named_with_its_permutation(case):
    b, axis, rng = case
    n = b.shape[axis]
    perm = rng.permutation(n)
    i = np.arange(n)
    assume(np.mean(perm != i) >= 0.75)
    assume(not np.array_equal(perm, i[::-1]))
    assume(not any(np.array_equal(perm, np.roll(i, -k)) for k in range(-8, 9)))
    f = top(judged(np.take(b, perm, axis=axis), b))
    assert f.kind == "permuted" and f.where["axis"] == axis, (perm, f)
    assert f.where["amount"]["permutation"] == perm.tolist()


@SETTINGS
@given(arrays(), st.floats(0.6, 0.9))
def test_clipped_self_is_named_with_its_bound(case, q):
    b, _, _ = case
    bound = np.float32(np.quantile(b, q))
    assume((b > bound).sum() >= 8)  # the test's own minimum of held elements (clip.MIN_AT)
    f = top(judged(np.minimum(b, bound), b))
    assert f.kind == "clipped" and f.where["amount"]["bound"] == float(bound)


@SETTINGS
@given(arrays(), st.integers(4, 32))
def test_quantised_self_is_named_with_its_step(case, levels):
    b, _, _ = case
    step = np.float32(2.0 ** -np.ceil(np.log2(levels)))  # a power of two: the grid is exact in float32
    f = top(judged(np.round(b / step) * step, b))
    assert f.kind == "grid" and abs(f.where["amount"]["step"] / float(step) - 1) < 1e-3


@SETTINGS
@given(arrays())
def test_affine_mapped_self_is_named_with_its_axis(case):
    b, axis, rng = case
    n = b.shape[axis]
    shape = [1] * b.ndim
    shape[axis] = n
    s = rng.uniform(0.5, 2.0, n).reshape(shape)
    c = rng.uniform(-1.0, 1.0, n).reshape(shape)
    f = top(judged((s * b + c).astype(np.float32), b))
    assert f.kind == "slice_affine" and f.where["axis"] == axis
    np.testing.assert_allclose(f.where["amount"]["scale"], s.ravel(), rtol=1e-4)


@SETTINGS
@given(arrays(min_dims=2), st.floats(0.5, 4.0))
def test_a_rounding_perturbed_copy_gets_no_finding(case, ulps):
    b, _, rng = case
    u = 2.0**-24
    a = (b.astype(np.float64) * (1 + ulps * u * rng.standard_normal(b.shape))).astype(np.float32)
    r = judged(a, b)
    assert r.verdict in ("rounding", "identical"), r.to_text()
    structural = relation_kinds() | set(dependence.KINDS)
    assert not [f for f in r.findings if f.severity != "info" or f.kind in structural], r.to_text()
