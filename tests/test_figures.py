"""Counts have digit grouping and a share of one element never reads as 0 % in every text the
core writes (headline, findings, text report), checked on real comparisons."""

from __future__ import annotations

import numpy as np
from perpendis.engine.compare import compare
from perpendis.inputs.tensor import from_numpy
from perpendis.numerics.figures import count, percent


def test_count_groups_digits_and_percent_never_rounds_a_share_to_none_or_all():
    assert count(536870912) == "536,870,912" and count(7) == "7"
    assert percent(1 / 536870912) == "< 0.001%"
    assert percent(0.0) == "0.000%" and percent(1.0) == "100.000%"
    assert percent(1 - 1 / 536870912) == "> 99.999%"
    assert percent(0.03125) == "3.125%"
    assert percent(1 / 400, 2) == "0.25%" and percent(1e-5, 2) == "< 0.01%"


def test_one_failing_element_of_300k_is_grouped_and_not_zero_percent_in_every_text():
    rng = np.random.default_rng(3)
    b = rng.standard_normal(300_000).astype(np.float32)
    a = b.copy()
    a[123_456] = b[123_456] * np.float32(1.5)
    r = compare(from_numpy(a, "a"), from_numpy(b, "b"))
    assert not r.tolerance.passed and r.tolerance.n_fail == 1
    texts = [r.headline, r.to_text(), *(f.message for f in r.findings)]
    joined = "\n".join(texts)
    assert "1 of 300,000 elements" in joined
    assert "300000 elements" not in joined and "of 300000" not in joined
    assert "0.000%" not in joined and "(< 0.001%)" in joined


def test_an_identical_headline_groups_its_count():
    x = np.arange(12_345, dtype=np.float32)
    r = compare(from_numpy(x, "a"), from_numpy(x.copy(), "b"))
    assert r.headline.startswith("Identical: all 12,345 elements")
