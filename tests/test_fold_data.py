"""The partial as data: every statistic declares its merge rule and its encoding, the bytes
the workers exchange keep their format, and merging gives one answer in any grouping."""

from __future__ import annotations

import json
import runpy
from pathlib import Path

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from perpendis.engine.compare import prepare
from perpendis.engine.fold import partial as declared
from perpendis.engine.fold.chunk import aligned_chunks, chunk_partial, fold
from perpendis.engine.fold.codec import ARRAY_ORDER, META_ORDER, partial_from_bytes, partial_to_bytes
from perpendis.engine.fold.partial import STATS, Partial, Rule, axis_counts
from perpendis.inputs.tensor import from_numpy
from perpendis.numerics.bits import format_of
from perpendis.numerics.tolerance import resolve

FIXTURE = Path(__file__).parent / "fixtures" / "fold"


def test_every_statistic_declares_a_merge_rule_and_an_encoding_the_codec_writes():
    assert len(STATS) == len(vars(Partial()))
    for f in STATS:
        rule = f.metadata.get("rule")
        assert isinstance(rule, Rule), f.name
        assert rule.encoding in META_ORDER + ARRAY_ORDER, f.name


def test_the_bytes_keep_their_format():
    """``partial.bin`` was written before the statistics were declarations; today's encoder
    writes the same bytes for the same comparison, and today's decoder reads them back."""
    make = runpy.run_path(str(FIXTURE / "make_partial_bytes.py"))
    a, b = make["pair"]()
    fmt = format_of("float16")
    partial = fold(aligned_chunks(a, b, size=2500), fmt, make["SHAPE"], resolve(fmt))
    stored = (FIXTURE / "partial.bin").read_bytes()
    assert partial_to_bytes(partial).tobytes() == stored
    back = partial_from_bytes(np.frombuffer(stored, dtype=np.uint8))
    assert partial_to_bytes(back).tobytes() == stored
    assert (back.n_nan, back.n_inf, back.n_signed_zero) == (3, 2, 2)
    assert back.diffs.bound is not None and len(back.errors.groups) == 8


def test_a_declared_statistic_merges_by_its_rule():
    """Merging is the rule of each field, not code written per field: two hand-made
    partials merge as their declarations say."""
    p = Partial(n=3, need_atol=0.5, nan_flat=list(range(0, 20, 2)), axis_fails=axis_counts((4,)))
    q = Partial(n=4, need_atol=0.25, nan_flat=[1, 3], axis_fails=axis_counts((4,)))
    p.axis_fails[0][1], q.axis_fails[0][1] = 2, 5
    merged = p.merge(q)
    assert merged.n == 7 and merged.need_atol == 0.5
    assert merged.nan_flat == [0, 1, 2, 3, 4, 6, 8, 10][: declared.INDEX_CAP]
    assert merged.axis_fails[0].tolist() == [0, 7, 0, 0]


def mixed_pair(draw: st.DrawFn, n: int) -> tuple[np.ndarray, np.ndarray]:
    """float32 B and A: rounding at some elements, gross errors, NaN and infinities at others."""
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    b = rng.standard_normal(n).astype(np.float32)
    a = b.copy()
    hit = rng.random(n) < draw(st.sampled_from([0.0, 0.1, 0.9]))
    a[hit] = np.nextafter(a[hit], np.float32(np.inf))
    for value, share in ((np.nan, 0.01), (np.inf, 0.01), (3.0, 0.02)):
        at = rng.random(n) < draw(st.sampled_from([0.0, share]))
        a[at] = a[at] + np.float32(value) if value == 3.0 else np.float32(value)
    return a, b


def grouped(parts: list[Partial], cuts: list[int], through_bytes: list[bool]) -> Partial:
    """The partials merged as a tree split at ``cuts`` (in order), some of its subtotals sent
    through bytes, as a worker would send them."""
    if len(parts) == 1:
        return parts[0]
    at = 1 + cuts[0] % (len(parts) - 1)
    left, right = grouped(parts[:at], cuts[1:], through_bytes[1:]), grouped(parts[at:], cuts[2:], through_bytes[2:])
    merged = left.merge(right)
    return partial_from_bytes(partial_to_bytes(merged)) if through_bytes[0] else merged


def report_of(a: np.ndarray, b: np.ndarray, partial: Partial) -> tuple[str, dict]:
    prepared = prepare(from_numpy(a, "a"), from_numpy(b, "b"))
    report = prepared.finish(partial)
    return json.dumps(report.to_dict(), sort_keys=True), report.samples


@settings(max_examples=30, deadline=None)
@given(st.data())
def test_merging_chunk_partials_in_any_grouping_gives_the_report_of_one_pass(data):
    n = data.draw(st.integers(1, 3000))
    a, b = mixed_pair(data.draw, n)
    size = 2 * data.draw(st.integers(1, max(1, n // 2)))
    fmt, tol = format_of("float32"), resolve(format_of("float32"))
    one_pass = fold(aligned_chunks(a, b, size=size), fmt, (n,), tol)
    parts = [chunk_partial(start, x, y, fmt, (n,), tol) for start, x, y in aligned_chunks(a, b, size=size)]
    cuts = data.draw(st.lists(st.integers(0, 10**6), min_size=2 * len(parts), max_size=2 * len(parts)))
    through = data.draw(st.lists(st.booleans(), min_size=2 * len(parts) + 1, max_size=2 * len(parts) + 1))
    text, samples = report_of(a, b, one_pass)
    other_text, other_samples = report_of(a, b, grouped(parts, cuts, through))
    assert other_text == text
    for name in ("diffs", "fails"):
        assert np.array_equal(other_samples[name], samples[name], equal_nan=True)
