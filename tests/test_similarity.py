"""Cosine similarity and SQNR of a bisect's layers (``perpendis.layers.bisect.similarity``),
against figures worked out by hand and against torch's own cosine similarity."""

from __future__ import annotations

import math

import numpy as np
import pytest
from perpendis.inputs.tensor import from_numpy
from perpendis.layers.bisect import similarity


def _sim(a, b) -> dict:
    return similarity(from_numpy(np.asarray(a), "a"), from_numpy(np.asarray(b), "b"))


def test_hand_computed_figures():
    # a = (3, 4), b = (4, 3): a·b = 24, |a| = |b| = 5, cosine 24/25; noise (1² + 1²) = 2, signal 25.
    s = _sim(np.array([3.0, 4.0]), np.array([4.0, 3.0]))
    assert s["cosine"] == pytest.approx(0.96, abs=1e-15)
    assert s["sqnr_db"] == pytest.approx(10 * math.log10(12.5), abs=1e-12)
    # b = a / 2: cosine 1; noise a²/4 → SQNR 10·log10(4) = 6.0206 dB.
    s = _sim(np.array([1.0, -2.0, 2.0]), np.array([0.5, -1.0, 1.0]))
    assert s["cosine"] == pytest.approx(1.0, abs=1e-15)
    assert s["sqnr_db"] == pytest.approx(6.020599913279624, abs=1e-12)
    # Opposite signs: cosine −1; noise (2a)² = 4·signal → SQNR −6.02 dB.
    s = _sim(np.array([1.0, 2.0]), np.array([-1.0, -2.0]))
    assert s["cosine"] == pytest.approx(-1.0) and s["sqnr_db"] == pytest.approx(-6.020599913279624)


def test_identical_zero_mismatched_and_nonfinite():
    assert _sim([1.0, 2.0], [1.0, 2.0]) == {"cosine": pytest.approx(1.0), "sqnr_db": None}  # SQNR ∞
    assert _sim([0.0, 0.0], [1.0, 2.0]) == {"cosine": None, "sqnr_db": None}
    assert _sim([1.0, 2.0], [1.0, 2.0, 3.0]) == {"cosine": None, "sqnr_db": None}
    s = _sim(np.array([1.0, np.nan]), np.array([1.0, np.inf], dtype=np.float32))
    assert s["cosine"] is None and s["nonfinite_a"] == 1 and s["nonfinite_b"] == 1


def test_cosine_matches_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(4)
    for dtype in (np.float32, np.float16):
        a = rng.standard_normal((4, 33)).astype(dtype)
        b = (a + 0.1 * rng.standard_normal(a.shape)).astype(dtype)
        ta, tb = torch.from_numpy(a.astype(np.float64)).reshape(-1), torch.from_numpy(b.astype(np.float64)).reshape(-1)
        want = torch.nn.functional.cosine_similarity(ta, tb, dim=0).item()
        assert _sim(a, b)["cosine"] == pytest.approx(want, abs=1e-12)
        noise = torch.sum((ta - tb) ** 2).item()
        assert _sim(a, b)["sqnr_db"] == pytest.approx(10 * math.log10(torch.sum(ta**2).item() / noise), abs=1e-9)
