"""The relation search on arrays whose relation is known exactly: each map is found, in
the user's terms, with its constant named; rounding alone and unrelated data find none."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from perpendis.diagnosis.relations.constants import name_of
from perpendis.diagnosis.relations.elementwise import ACTIVATIONS, Sample, search
from perpendis.engine.compare import compare_values

ml_dtypes = pytest.importorskip("ml_dtypes")

U32 = 2.0**-24


def f32(x):
    return np.asarray(x, np.float32).astype(np.float64)


def sample(a, b):
    return Sample(f32(a), f32(b), U32, 1.0, float(np.sqrt(np.mean(np.square(f32(b))))))


X = np.random.default_rng(7).standard_normal(4096)


@pytest.mark.parametrize(
    ("a", "b", "text", "kind"),
    [
        (np.exp(X), X, "A = exp(B)", "exp"),
        (X, np.exp(X), "B = exp(A)", "exp"),
        (X * X, X, "A = B²", "power"),
        (np.sqrt(np.abs(X)), np.abs(X), "A = √B", "power"),
        (ACTIVATIONS["GELU"](X), X, "A = GELU(B)", "activation"),
        (ACTIVATIONS["GELU_tanh"](X * 2), ACTIVATIONS["GELU"](X * 2), "A = GELU_tanh(GELU⁻¹(B))", "activation_variant"),
        (ACTIVATIONS["hardswish"](X * 3), ACTIVATIONS["SiLU"](X * 3), "A = hardswish(SiLU⁻¹(B))", "activation_variant"),
        (X.astype(np.float32).astype(ml_dtypes.bfloat16).astype(np.float64), X, "A = B rounded to bfloat16", "cast"),
        (np.trunc(X * 50), X * 50, "A = trunc(B), to an integer", "cast"),
    ],
    ids=["exp", "log", "square", "sqrt", "gelu", "gelu-tanh", "hardswish", "bf16", "trunc"],
)
def test_each_map_is_found_in_the_users_terms(a, b, text, kind):
    rel = search(sample(a, b))
    assert rel is not None and rel.text == text and rel.kind == kind
    assert rel.residual <= 8 and rel.held >= 16


@settings(max_examples=25, deadline=None)
@given(st.floats(0.3, 3.0).filter(lambda p: abs(p - 1) > 0.01), st.integers(0, 2**32 - 1))
def test_a_fitted_power_recovers_its_exponent(p, seed):
    x = np.random.default_rng(seed).uniform(0.05, 20, 2048)
    rel = search(sample(x**p, x))
    assert rel is not None and rel.kind == "power"
    assert float(rel.params["exponent"]) == pytest.approx(p, rel=1e-4)


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 4), st.integers(0, 2**32 - 1))
def test_rounding_alone_finds_no_relation(ulps, seed):
    rng = np.random.default_rng(seed)
    x = f32(rng.standard_normal(4096))
    noisy = x * (1 + ulps * U32 * rng.uniform(-1, 1, x.size))
    assert search(sample(noisy, x)) is None


def test_unrelated_values_find_no_relation():
    rng = np.random.default_rng(3)
    assert search(sample(rng.standard_normal(4096), rng.standard_normal(4096))) is None


@pytest.mark.parametrize(
    ("value", "name"),
    [(0.5, "2^-1"), (1 / math.sqrt(2), "1/√2"), (1 / 255, "1/255"), (math.pi, "π"), (1 / math.sqrt(64), "2^-3"),
     (-math.e, "-e"), (math.log(2), "ln 2"), (0.229, "ImageNet std[0]")],
)
def test_known_constants_are_named(value, name):
    got = name_of(float(np.float32(value)), 1e-6)
    assert got is not None and name in got


def test_a_value_between_constants_is_not_named():
    assert name_of(0.4) is None and name_of(1.2345) is None


def test_a_report_leads_with_the_relation_and_its_causes():
    x = np.random.default_rng(1).standard_normal((8, 64)).astype(np.float32)
    r = compare_values(np.exp(x), x)
    top = r.findings[0]
    assert r.verdict == "investigate" and top.kind == "elementwise"
    assert top.where["relation"]["text"] == "A = exp(B)" and top.where["relation"]["scope"] == "everywhere"
    assert "exp" in top.causes[0] and top.message in r.headline


def test_a_named_scale_says_which_constant():
    x = np.random.default_rng(2).standard_normal((16, 64)).astype(np.float32)
    r = compare_values(x * np.float32(1 / math.sqrt(64)), x)
    top = r.findings[0]
    assert top.kind == "scale" and "1/√64" in top.message and any("d = 64" in c for c in top.causes)


def _rotary(x, base, interleaved=False):
    """Rotary embedding of x (batch, positions, d) with the given base, as Llama applies it."""
    t, d = x.shape[1], x.shape[2]
    inv = 1.0 / base ** (np.arange(0, d, 2) / d)
    ang = np.arange(t)[:, None] * inv[None, :]
    cos, sin = np.cos(ang), np.sin(ang)
    if interleaved:
        x1, x2 = x[..., 0::2], x[..., 1::2]
        out = np.empty_like(x)
        out[..., 0::2], out[..., 1::2] = x1 * cos - x2 * sin, x1 * sin + x2 * cos
        return out
    x1, x2 = x[..., : d // 2], x[..., d // 2 :]
    return np.concatenate([x1 * cos - x2 * sin, x1 * sin + x2 * cos], axis=-1)


@pytest.mark.parametrize("interleaved", [False, True])
def test_a_rotary_base_that_differs_is_a_rotation_of_feature_pairs(interleaved):
    x = np.random.default_rng(8).standard_normal((2, 64, 32))
    a = _rotary(x, 500000.0, interleaved).astype(np.float32)
    b = _rotary(x, 10000.0, interleaved).astype(np.float32)
    top = compare_values(a, b).findings[0]
    assert top.kind == "rotation" and "rotary" in top.causes[0]
    assert top.where["relation"]["params"]["pairing"].startswith("interleaved" if interleaved else "halves")


def test_a_sign_flipped_feature_is_no_rotation():
    x = np.random.default_rng(9).standard_normal((2, 64, 32)).astype(np.float32)
    a = x.copy()
    a[..., 3] *= -1
    assert compare_values(a, x).findings[0].kind == "sign_flip"


def test_a_softmax_on_one_side_is_a_normalisation_along_its_axis():
    x = np.random.default_rng(10).standard_normal((4, 12, 50)).astype(np.float32)
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    top = compare_values((e / e.sum(axis=-1, keepdims=True)).astype(np.float32), x).findings[0]
    assert top.kind == "normalisation" and top.where["relation"]["text"] == "A = softmax(B) along axis 2"


def test_a_softmax_over_another_axis_says_which_axes():
    x = np.random.default_rng(11).standard_normal((2, 16, 16)).astype(np.float32) * 3
    ea, eb = np.exp(x - x.max(axis=2, keepdims=True)), np.exp(x - x.max(axis=1, keepdims=True))
    a = (ea / ea.sum(axis=2, keepdims=True)).astype(np.float32)
    b = (eb / eb.sum(axis=1, keepdims=True)).astype(np.float32)
    top = compare_values(a, b).findings[0]
    assert top.kind == "normalisation"
    assert top.where["relation"]["params"] == {"a_axis": 2, "b_axis": 1, "norm": "sum to 1"}
    assert "wrong axis" in top.causes[0]
