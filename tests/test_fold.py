"""A comparison folded in shares by several workers gives the report folded in one place.

The page cuts big comparisons into shares folded by helper workers.  These tests drive
the same Python the workers run, through the same entry points (``app/worker.js`` calls
:class:`perpendis.service.bridge.CoreWorker`, ``app/fold_worker.js``
:class:`~perpendis.service.bridge.HelperWorker`), stepping the real
:class:`~perpendis.service.fold.FoldCoordinator`; only the JavaScript byte views are
stand-ins (:class:`View`).  A step out of order fails, as it would in the browser.
"""

from __future__ import annotations

import itertools
import json
import math
from dataclasses import astuple
from unittest import mock

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy_written import npy
from perpendis.engine.compare import compare_chunks, prepare
from perpendis.engine.fold.chunk import CHUNK, aligned_chunks
from perpendis.engine.fold.codec import partial_from_bytes, partial_to_bytes
from perpendis.engine.fold.exact import ExactSum
from perpendis.engine.fold.quantiles import Ranks
from perpendis.engine.fold.reservoir import Sample, sample_of
from perpendis.inputs.tensor import from_numpy
from perpendis.numerics.tolerance import resolve
from perpendis.service import api
from perpendis.service import fold as fold_module
from perpendis.service.bridge import CoreWorker, HelperWorker
from perpendis.service.fold import FoldCoordinator
from perpendis.service.helper import Helper
from worker_fakes import Blob, View, read_slice


def rounding_pair(n: int, seed: int, dtype=np.float32) -> tuple[np.ndarray, np.ndarray]:
    """B one ULP away from A at a tenth of the elements, as after a reordered sum."""
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(n).astype(dtype)
    b = a.copy()
    hit = rng.random(n) < 0.1
    b[hit] = np.nextafter(b[hit], np.inf if rng.random() < 0.5 else -np.inf).astype(dtype)
    return a, b


def request(name_a: str = "a.npy", name_b: str = "b.npy") -> dict:
    return {"op": "compare", "inputs": {"a": {"name": name_a, "data": "a"}, "b": {"name": name_b, "data": "b"}}}


def finish(core: CoreWorker, helpers: list[HelperWorker], parts: list, select_fails: bool = False) -> dict:
    """What app/worker.js does once the helpers have their shares: fold the first share,
    give helper 0 this worker's errors to select in with its own, merge the partials and,
    as the merge says, take that helper's answer or have it select in the merged errors
    (or fail to) while this worker selects the other columns."""
    core.fold_first_share()
    own = core.own_errors_for_helper()
    pooled = None if own is None or parts[0] is None else helpers[0].select(own[0], View(own[1].tobytes()), True)
    job = json.loads(core.merge_partials(parts))
    found = None
    if job is not None:
        if job["pooled"]:
            found = pooled
        else:
            found = helpers[job["helper"]].select(json.dumps(job["ranks"]), View(core.merged_errors().tobytes()), False)
        core.select_kept_columns()
        if select_fails:
            found = None
    if found is None:
        return json.loads(core.answer_fold(None))
    # Both columns' order statistics are known by now: none is selected again.
    selected_again = AssertionError("an order statistic was selected again")
    with mock.patch("perpendis.engine.fold.reservoir.select", side_effect=selected_again):
        return json.loads(core.answer_fold(View(found.tobytes())))


def start(payloads: dict, workers: int) -> tuple[CoreWorker, dict]:
    """A request served as app/worker.js serves it: its buffers copied in."""
    core = CoreWorker(read_slice)
    buffers = [(key, View(data)) for key, data in payloads.items()]
    return core, json.loads(core.serve(json.dumps(request()), buffers, [], [], None, workers))


def run_split(payloads: dict, workers: int, fail: set[int] = frozenset(), select_fails: bool = False) -> dict:
    """What app/worker.js does with a shared fold, with the helpers folding shares in ``fail`` failing."""
    core, first = start(payloads, workers)
    assert first["ok"] and "fold_jobs" in first, first
    helpers = [HelperWorker(read_slice) for _ in first["fold_jobs"]]
    parts = []
    for job in first["fold_jobs"]:
        places = json.loads(core.share_places(job["index"]))
        if all(places):
            # Taken from the request's own buffers, as the worker hands them over.
            a, b = (View(payloads[key][offset : offset + length]) for key, offset, length in places)
        else:
            a, b = (View(part.tobytes()) for part in core.share_bytes(job["index"]))
        folded = helpers[job["helper"]].fold(job["share"], a, b)
        parts.append(None if job["index"] in fail else View(folded.tobytes()))
    return finish(core, helpers, parts, select_fails)


def test_share_places_name_the_request_bytes_of_each_share():
    a, b = rounding_pair(4 * CHUNK + 7, seed=8)
    payloads = {"a": npy(a), "b": npy(b)}
    core, first = start(payloads, 3)
    for job in first["fold_jobs"]:
        i = job["index"]
        for (key, offset, length), part in zip(json.loads(core.share_places(i)), core.share_bytes(i), strict=True):
            assert payloads[key][offset : offset + length] == part.tobytes()
            assert offset >= 128 and length == part.nbytes  # past the .npy header


def test_share_places_are_none_for_converted_elements():
    a, b = rounding_pair(4 * CHUNK, seed=9)
    payloads = {"a": npy(a.astype(">f4")), "b": npy(b)}  # big-endian A is byte-swapped on loading
    core, first = start(payloads, 2)
    assert "fold_jobs" in first
    place_a, place_b = json.loads(core.share_places(1))
    assert place_a is None and place_b[0] == "b"
    assert run_split(payloads, 2)["report"] == api.handle(request(), payloads)["report"]


@pytest.fixture(scope="module")
def bug_pair() -> dict:
    """5M float32 elements: rounding noise everywhere, and channel-like run of wrong values."""
    a, b = rounding_pair(5 * CHUNK + 12345, seed=3)
    b[3 * CHUNK + 100 : 3 * CHUNK + 5000] *= -1  # a sign flip across a share boundary's neighbourhood
    b[7] = np.nan
    return {"a": npy(a), "b": npy(b)}


@pytest.mark.parametrize("workers", [2, 3, 4])
def test_split_report_is_the_report_folded_in_one_place(bug_pair, workers):
    whole = api.handle(request(), bug_pair)
    split = run_split(bug_pair, workers)
    assert split["report"] == whole["report"]
    assert split["markdown"] == whole["markdown"]
    assert split["report"]["verdict"] == "investigate"
    assert {f["kind"] for f in split["report"]["findings"]} >= {"nan", "sign_flip"}


def test_a_failed_helper_share_is_folded_by_the_main_worker(bug_pair):
    whole = api.handle(request(), bug_pair)
    assert run_split(bug_pair, 3, fail={2})["report"] == whole["report"]


def offers(monkeypatch: pytest.MonkeyPatch) -> list:
    """What the coordinator's merge asks helper 0 to select, call by call."""
    offered: list = []
    merge = FoldCoordinator.merge_partials

    def merging(self, parts):
        job = merge(self, parts)
        offered.append(None if job is None else job.to_dict())
        return job

    monkeypatch.setattr(FoldCoordinator, "merge_partials", merging)
    return offered


@pytest.mark.parametrize("select_fails", [False, True])
@pytest.mark.parametrize("workers", [2, 3])
def test_quantiles_selected_by_a_helper_give_the_report_folded_in_one_place(
    bug_pair, monkeypatch, workers, select_fails
):
    monkeypatch.setattr(fold_module, "OFFLOAD_MIN", 1000)
    whole = api.handle(request(), bug_pair)
    offered = offers(monkeypatch)
    split = run_split(bug_pair, workers, select_fails=select_fails)
    assert offered[0] is not None, "the merged errors' quantiles were not offered to a helper"
    # With one helper, it holds its own errors and was given the core's; with more, it is sent them all.
    assert offered[0]["pooled"] is (workers == 2)
    assert split["report"] == whole["report"]
    assert split["report"]["stats"]["p99_rel"] > 0


def test_a_helper_is_sent_all_errors_when_a_sample_was_cut(bug_pair, monkeypatch):
    """Past the sample's cap, the merged errors are not the helper's and the core's put
    together: the helper is sent the merged ones."""
    monkeypatch.setattr("perpendis.engine.fold.partial.ERROR_SAMPLE_CAP", 300_000)
    monkeypatch.setattr(fold_module, "OFFLOAD_MIN", 100_000)
    whole = api.handle(request(), bug_pair)
    offered = offers(monkeypatch)
    split = run_split(bug_pair, 2)
    assert offered[0] == {"helper": 0, "ranks": offered[0]["ranks"], "pooled": False}
    assert split["report"] == whole["report"]


def test_quantiles_are_offered_only_for_many_errors(bug_pair, monkeypatch):
    offered = offers(monkeypatch)
    monkeypatch.setattr(fold_module, "OFFLOAD_MIN", 10 * CHUNK)
    run_split(bug_pair, 2)
    assert offered == [None]


def test_order_statistics_found_elsewhere_are_used_as_they_are(monkeypatch):
    rows = np.column_stack([np.arange(5.0), [5.0, 1.0, 4.0, 2.0, 3.0], [0.5, 0.1, 0.4, 0.2, 0.3]])
    sample = Sample(5, [rows], 8)
    assert sample.order_statistics(1, [0, 3]) == {0: 1.0, 3: 4.0}
    assert sample.order_statistics(2, [4]) == {4: 0.5}
    # Now known: neither is selected again, and another worker's values are taken as given.
    monkeypatch.setattr("perpendis.engine.fold.reservoir.select", lambda values, ranks: pytest.fail("selected again"))
    assert sample.order_statistics(1, [3, 0]) == {3: 4.0, 0: 1.0}
    sample.found[2] = {1: -7.0}
    assert sample.order_statistics(2, [1]) == {1: -7.0}


def test_a_helper_selects_in_its_own_errors_and_those_of_the_core_by_their_merged_ranks():
    a, b = rounding_pair(3 * CHUNK, seed=5)
    prepared = prepare(from_numpy(a, "a"), from_numpy(b, "b"))
    core_share, helper_share = prepared.shares(2)
    core = prepared.fold(core_share.start, core_share.stop)
    helper = Helper()
    helper.fold(helper_share.to_json(), *(part.tobytes() for part in prepared.share_bytes(helper_share)))
    mine = helper.partial
    theirs = core.errors.column(2)
    found = helper.select_pooled(json.dumps(astuple(Ranks.of(core))), theirs.tobytes())
    merged = core.merge(mine)
    ranks = Ranks.of(merged).wanted()
    assert len(ranks) >= 3
    everything = np.sort(np.concatenate([theirs, mine.errors.column(2)]))
    assert np.frombuffer(found, dtype=np.float64).tolist() == everything[ranks].tolist()
    # It keeps nothing once it has selected; given the values, it selects in those alone.
    with pytest.raises(ValueError, match="folded no share"):
        helper.select_pooled(json.dumps(astuple(Ranks.of(core))), theirs.tobytes())
    # Nor does a fold that failed leave an earlier partial to select in.
    helper.fold(helper_share.to_json(), *(part.tobytes() for part in prepared.share_bytes(helper_share)))
    with pytest.raises(ValueError, match="a share of"):
        helper.fold(helper_share.to_json(), b"\0" * 8, b"\0" * 8)
    with pytest.raises(ValueError, match="folded no share"):
        helper.select_pooled(json.dumps(astuple(Ranks.of(core))), theirs.tobytes())
    found = helper.select(json.dumps([3, 10_000]), theirs.tobytes())
    assert np.frombuffer(found, dtype=np.float64).tolist() == np.sort(theirs)[[3, 10_000]].tolist()


def test_small_comparisons_are_not_split():
    a, b = rounding_pair(1000, seed=1)
    result = api.handle(request(), {"a": npy(a), "b": npy(b)}, workers=4)
    assert "fold_jobs" not in result and result["report"]["verdict"] == "rounding"


def test_split_keeps_the_answer_extras_of_the_compare_op(bug_pair):
    split = run_split(bug_pair, 2)
    assert split["ok"] is True and split["one_box"] is None and "void_choices" in split
    # Follow-up questions work on the pair, as after an unsplit comparison.
    element = api.handle({"op": "element", "flat": 7}, {})
    assert element["ok"] and element["element"]["b"] == "nan"


def test_shares_cover_the_elements_in_whole_chunks():
    a, b = rounding_pair(7 * CHUNK + 3, seed=2)
    prepared = prepare(from_numpy(a, "a"), from_numpy(b, "b"))
    for count in (1, 2, 3, 5, 8, 20):
        shares = prepared.shares(count)
        assert len(shares) == min(count, 8)
        assert shares[0].start == 0 and shares[-1].stop == a.size
        assert all(s.stop == t.start for s, t in itertools.pairwise(shares))
        assert all(s.start % CHUNK == 0 and s.stop > s.start for s in shares)
    # The share folded where the bytes are can be longer than the others.
    first, second = prepared.shares(2, first=1.4)
    assert (first.stop, second.stop) == (5 * CHUNK, a.size)  # 1.4 / 2.4 of the 8 chunks, rounded


def test_partial_bytes_round_trip_keeps_every_field():
    a, b = rounding_pair(300_000, seed=4, dtype=np.float16)
    b[:10] = np.inf
    tol = resolve(from_numpy(a, "a").fmt)
    prepared = prepare(from_numpy(a.reshape(300, 1000), "a"), from_numpy(b.reshape(300, 1000), "b"), tolerance=tol)
    partial = prepared.fold()
    back = partial_from_bytes(partial_to_bytes(partial))
    for name, value in vars(partial).items():
        other = getattr(back, name)
        if isinstance(value, Sample):
            assert (value.count, value.cap, value.bound) == (other.count, other.cap, other.bound)
            assert np.array_equal(value.rows(), other.rows())
        elif isinstance(value, np.ndarray):
            assert np.array_equal(value, other)
        elif name == "axis_fails":
            assert all(np.array_equal(x, y) for x, y in zip(value, other, strict=True))
        else:
            assert value == other, name


def test_samples_do_not_depend_on_how_the_elements_were_chunked():
    """Bottom-k samples: the same rows whatever the chunking, even when far over the cap."""
    a, b = rounding_pair(200_000, seed=5)
    b[::7] += 1.0  # many failures: the pattern samples are far over their cap of 4096
    t = from_numpy
    fmt = t(a, "a").fmt
    reports = [
        compare_chunks(t(a, "a").describe(), t(b, "b").describe(), fmt, a.shape, aligned_chunks(a, b, size))
        for size in (200_000, 65_536, 10_007)
    ]
    first = reports[0]
    for other in reports[1:]:
        for key in ("diffs", "fails"):
            assert np.array_equal(first.samples[key], other.samples[key])
        assert other.findings == first.findings
        # Sums over chunks of other sizes round differently, and no more.
        mine, theirs = first.to_dict(), other.to_dict()
        assert mine.pop("stats") == pytest.approx(theirs.pop("stats"), rel=1e-6)
        assert mine == theirs


def test_a_sample_keeps_the_rows_of_smallest_priority_uniformly():
    flat = np.arange(1_000_000, dtype=np.int64)
    sample = sample_of(4096, flat, flat.astype(np.float64))
    rows = sample.rows()
    assert sample.count == flat.size and len(rows) == 4096
    assert np.all(np.diff(rows[:, 0]) > 0)  # kept in index order
    # Uniform over the indices: each tenth of them holds about a tenth of the rows.
    per_tenth = np.bincount((rows[:, 0] // 100_000).astype(int), minlength=10)
    assert per_tenth.min() > 300 and per_tenth.max() < 520


def test_a_sample_over_its_cap_is_cut_once_for_its_rows_and_columns():
    flat = np.arange(14_000, dtype=np.int64)
    halves = [sample_of(10_000, flat[i::2], flat[i::2] * 2.0, flat[i::2] * 3.0) for i in (0, 1)]
    sample = halves[0].merge(halves[1], 10_000)  # all 14 000 rows kept: within half as many again as the cap
    assert sample.kept == 14_000
    with mock.patch.object(Sample, "_cut", autospec=True, side_effect=Sample._cut) as cut:
        first, second, rows = sample.column(1), sample.column(2), sample.rows()
    assert cut.call_count == 3 and sample.kept == 10_000  # each call asks, the first cuts
    np.testing.assert_array_equal(first, rows[:, 1])
    np.testing.assert_array_equal(second, rows[:, 2])
    np.testing.assert_array_equal(rows[:, 1] * 1.5, rows[:, 2])
    # The same rows as one sample of all of them keeps (in another order: group by group).
    expected = sample_of(10_000, flat, flat * 2.0, flat * 3.0).rows()
    np.testing.assert_array_equal(rows[np.argsort(rows[:, 0])], expected)


finite_floats = st.floats(allow_nan=False, allow_infinity=False, width=64)


@pytest.mark.fuzz
@settings(max_examples=300)
@given(st.lists(finite_floats, max_size=40), st.randoms())
def test_exact_sums_do_not_depend_on_order_or_grouping(values, rnd):
    total = sum((ExactSum.of(v) for v in values), ExactSum())
    shuffled = values[:]
    rnd.shuffle(shuffled)
    cut = rnd.randint(0, len(values))
    left = sum((ExactSum.of(v) for v in shuffled[:cut]), ExactSum())
    right = sum((ExactSum.of(v) for v in shuffled[cut:]), ExactSum())
    assert (left + right).value() == total.value()
    try:
        expected = math.fsum(values)
    except OverflowError:
        return
    assert total.value() == expected or (math.isinf(total.value()) and math.isinf(expected))


@pytest.mark.parametrize(
    ("terms", "expected"),
    [([math.inf, 1.0], math.inf), ([math.inf, -math.inf], math.nan), ([1e308, 1e308], math.inf), ([], 0.0)],
)
def test_exact_sums_of_non_finite_and_overflowing_terms(terms, expected):
    got = sum((ExactSum.of(v) for v in terms), ExactSum()).value()
    assert got == expected or (math.isnan(got) and math.isnan(expected))


def test_a_streamed_comparison_shared_across_workers_is_the_streamed_report(monkeypatch):
    """Two big .npy files handed over unread: each helper reads its share of both files itself."""
    from perpendis.engine import stream

    monkeypatch.setattr(stream, "STREAM_MIN_BYTES", 1 << 20)
    a, b = rounding_pair(5 * CHUNK + 777, seed=9)
    b[4 * CHUNK + 3] = np.inf
    blobs = {"p0": Blob("a.npy", npy(a)), "p1": Blob("b.npy", npy(b))}
    request = {"op": "compare", "inputs": {"a": {"name": "a.npy", "data": "p0"}, "b": {"name": "b.npy", "data": "p1"}}}
    core = CoreWorker(read_slice)
    whole = json.loads(core.serve(json.dumps(request), [], list(blobs.items()), [], None, 1))
    first = json.loads(core.serve(json.dumps(request), [], list(blobs.items()), [], None, 3))
    assert first["ok"] and len(first["fold_jobs"]) == 2, first
    unread = [blobs[first["stream"][side]] for side in ("a", "b")]
    helpers = [HelperWorker(read_slice) for _ in first["fold_jobs"]]
    parts = [
        View(helpers[job["helper"]].fold_files(job["share"], first["stream"]["void"], *unread).tobytes())
        for job in first["fold_jobs"]
    ]
    shared = finish(core, helpers, parts)
    assert whole["streamed"] is True and "fold_jobs" not in whole
    assert shared["streamed"] is True and shared["workers"] == 3 and "stream" not in shared
    assert shared["report"] == whole["report"]
    assert shared["report"]["n_inf_mismatch"] == 1


def test_fold_steps_out_of_order_are_refused(bug_pair):
    """The worker cannot merge before folding its own share, nor answer before merging, nor twice."""
    core, first = start(bug_pair, 2)
    assert first["fold_jobs"] == [{"helper": 0, "share": first["fold_jobs"][0]["share"], "index": 1}]
    with pytest.raises(RuntimeError, match="out of order"):
        core.merge_partials([None])
    with pytest.raises(RuntimeError, match="out of order"):
        core.answer_fold(None)
    core.fold_first_share()
    with pytest.raises(RuntimeError, match="out of order"):
        core.fold_first_share()
    core.merge_partials([None])
    assert json.loads(core.answer_fold(None))["ok"] is True
    with pytest.raises(RuntimeError, match="no shared fold"):
        core.answer_fold(None)


def test_a_new_comparison_forgets_the_kept_pair_first_and_other_ops_keep_it(bug_pair):
    api.handle(request(), bug_pair)
    api.forget("element")
    assert api.handle({"op": "element", "flat": 7}, {})["ok"]
    api.forget("compare")
    after = api.handle({"op": "element", "flat": 7}, {})
    assert not after["ok"] and "nothing has been compared yet" in after["error"]["message"]
