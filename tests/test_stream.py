"""Streaming two ``.npy`` files chunk by chunk gives the report the in-memory comparison gives.

Every file here is written by ``np.save`` (ml_dtypes for bfloat16 and float8), read back
through a memory map by :func:`stream.map_file`, and compared both ways.
"""

from __future__ import annotations

import json
import tempfile
import tracemalloc
from pathlib import Path

import numpy as np
import pytest
from cli_runs import run_main as run_cli
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from perpendis import service
from perpendis.diagnosis import dependence
from perpendis.diagnosis.relations.grammar import kinds as relation_kinds
from perpendis.engine import stream
from perpendis.engine.compare import compare
from perpendis.engine.fold.chunk import CHUNK
from perpendis.engine.options import ComparisonOptions
from perpendis.errors import InputError
from perpendis.inputs.load import load_path
from perpendis.service import planner

ml_dtypes = pytest.importorskip("ml_dtypes")

# Fields of the report that merge exactly, whatever the chunk boundaries (floating sums
# and bounded samples depend on where chunks start, so they are compared separately).
LAYOUT_KINDS = relation_kinds() | set(dependence.KINDS) | {"precision", "deep_rounding", "not_rounding"}
EXACT_FIELDS = (
    "a", "b", "shape_match", "dtype_match", "compared_as", "compared_shape", "n_elements", "identical",
    "n_bitwise_diff", "first_diff", "worst", "max_ulp", "max_abs_diff", "max_rel_diff", "n_nan_mismatch",
    "nan_mismatch_indices", "n_inf_mismatch", "inf_mismatch_indices", "n_signed_zero_diff", "ulp_histogram",
    "min_tolerance", "axes", "notes",
)  # fmt: skip


def save(directory: Path, name: str, array: np.ndarray) -> Path:
    path = directory / name
    np.save(path, array)
    return path


def _sees_layout(report: dict) -> bool:
    """Whether an in-memory report holds a finding of a structure test a stream cannot run."""
    return any(f["kind"] in LAYOUT_KINDS for f in report["findings"])


def in_memory(path_a: Path, path_b: Path, **options):
    [a], [b] = load_path(path_a), load_path(path_b)
    return compare(a, b, ComparisonOptions(**options))


def streamed(path_a: Path, path_b: Path, *options, **reading):
    return stream.compare_sources(stream.map_file(path_a, "a"), stream.map_file(path_b, "b"), *options, **reading)


def perturbed(a: np.ndarray, rng: np.random.Generator, fraction: float) -> np.ndarray:
    """``a`` with a fraction of its elements moved by a few ULP, as a rounding difference would."""
    b = a.copy()
    hit = rng.random(a.shape) < fraction
    b[hit] = np.nextafter(b[hit], np.inf * np.sign(rng.standard_normal(int(hit.sum()))).astype(a.dtype))
    return b


def test_many_chunks_give_exactly_the_in_memory_report(tmp_path):
    rng = np.random.default_rng(1)
    n = 2 * CHUNK + 12345
    a = rng.standard_normal((5, n // 5), dtype=np.float32)
    b = perturbed(a, rng, 0.2)
    b[0, :3] = [np.nan, np.inf, -0.0]
    a[0, 2] = 0.0
    b[4, -7:] += 1e-2  # a real bug near the end, in the last chunk
    pa, pb = save(tmp_path, "a.npy", a), save(tmp_path, "b.npy", b)
    fractions: list[float] = []
    report = streamed(pa, pb, progress=fractions.append)
    expected = in_memory(pa, pb)
    assert report.to_dict() == expected.to_dict()
    assert report.to_text() == expected.to_text()
    assert report.n_bitwise_diff > 0 and report.n_nan_mismatch == 1 and report.n_signed_zero_diff == 1
    assert len(fractions) == 3 and fractions == sorted(fractions) and fractions[-1] == 1.0


SCALARS = ["float16", "float32", "float64", "int8", "int32", "uint16", "uint64", "bool", "complex64"]
ML_DTYPES = {"bfloat16": ml_dtypes.bfloat16, "float8_e4m3fn": ml_dtypes.float8_e4m3fn}


@st.composite
def pairs(draw):
    """Two arrays of one shape and dtype (any byte order), B differing from A in a few places."""
    name = draw(st.sampled_from([*SCALARS, *ML_DTYPES]))
    shape = draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=9))
    dtype = np.dtype(ML_DTYPES.get(name, name))
    size = int(np.prod(shape)) * dtype.itemsize
    raw = draw(st.binary(min_size=size, max_size=size))
    a = np.frombuffer(raw, dtype=np.uint8).view(dtype).reshape(shape) if size else np.zeros(shape, dtype)
    if dtype.kind == "b":
        a = a.view(np.uint8).astype(bool)
    b = a.copy()
    flat = b.reshape(-1).view(np.uint8)
    for i in draw(st.lists(st.integers(0, max(flat.size - 1, 0)), max_size=5 if flat.size else 0)):
        flat[i] ^= 1 << draw(st.integers(0, 7)) if dtype.kind != "b" else 1
    if draw(st.booleans()) and dtype.kind in "fiuc" and dtype.itemsize > 1:
        a, b = (x.astype(x.dtype.newbyteorder(">")) for x in (a, b))
    return a, b


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pair=pairs(), chunk=st.sampled_from([2, 4, 10, CHUNK]))
# A infinite where B holds a b² that dwarfs the others: Σb² over the finite pairs cancelled
# to nothing when that b² was subtracted from the whole chunk's sum, and not in chunks of 2.
@example(
    pair=(
        np.array([[np.inf, 0, 0, 0], [0, 0, 0, 9.0122e29]], dtype=ml_dtypes.bfloat16),
        np.array([[8.50706e37, 9.18355e-41, 0, 0], [0, 0, 0, 9.0122e29]], dtype=ml_dtypes.bfloat16),
    ),
    chunk=2,
)
@example(
    pair=(
        np.array([[np.inf, 0, 0, 0], [0, 0, 0, 2.35099e-38]], dtype=ml_dtypes.bfloat16),
        np.array([[8.50706e37, 0, 0, 0], [0, 0, 0, 2.35099e-38]], dtype=ml_dtypes.bfloat16),
    ),
    chunk=2,
)
# A all zeros, B one subnormal: in memory, "A ≈ B × 0" (scale), which a stream cannot see, and
# with it the assert_same paste-back line (found on fresh clones, where Hypothesis draws anew).
@example(pair=(np.zeros((2, 8), np.float16), np.array([[6e-08] + [0] * 7, [0] * 8], np.float16)), chunk=CHUNK)
@example(pair=(np.zeros(8, np.complex64), np.array([1e-45] + [0] * 7, np.complex64)), chunk=CHUNK)
def test_any_dtype_shape_and_chunk_size_streams_like_in_memory(pair, chunk):
    a, b = pair
    with tempfile.TemporaryDirectory() as tmp:
        pa, pb = save(Path(tmp), "a.npy", a), save(Path(tmp), "b.npy", b)
        try:
            expected = in_memory(pa, pb).to_dict()
        except Exception as err:  # whatever the in-memory path does, streaming in one chunk does too
            with pytest.raises(type(err)):
                streamed(pa, pb)
            return
        got = streamed(pa, pb, chunk=chunk).to_dict()
    judged = {"findings", "verdict", "headline"}
    if _sees_layout(expected):
        # The structure tests that read the arrays' layout run in memory only
        # (docs/relations.md): everything but their findings and what follows from them agrees.
        # Of the paste-back lines, assert_same's follows from the findings (a structural one
        # makes it raise at any tolerance); numpy's and torch's follow from the tolerance alone.
        got, expected = ({k: v for k, v in d.items() if k not in judged} for d in (got, expected))
        got["paste_back"], expected["paste_back"] = (
            [line for line in d["paste_back"] if line["what"] != "assert_same"] for d in (got, expected))
    if chunk == CHUNK:
        assert got == expected
    else:
        assert {k: got[k] for k in EXACT_FIELDS} == {k: expected[k] for k in EXACT_FIELDS}
        assert got["tolerance"] == expected["tolerance"] and got.get("verdict") == expected.get("verdict")
        assert got["stats"].keys() == expected["stats"].keys()
        for key, value in expected["stats"].items():
            if isinstance(value, float):
                # The cosine's Σa² is Σb² plus a correction: chunk sums round it to about 1e-7.
                rel = 1e-6 if key == "cosine" else 1e-9
                assert got["stats"][key] == pytest.approx(value, rel=rel, abs=1e-300), key
            else:
                assert got["stats"][key] == value, key


def test_different_dtypes_are_compared_in_the_narrower_one_with_the_same_note(tmp_path):
    rng = np.random.default_rng(2)
    a = rng.standard_normal((300, 7)).astype(np.float32)
    b = a.astype(np.float16)
    pa, pb = save(tmp_path, "a.npy", a), save(tmp_path, "b.npy", b)
    report = streamed(pa, pb, chunk=64)
    expected = in_memory(pa, pb)
    assert report.compared_as == expected.compared_as == "float16"
    assert report.notes == expected.notes and any("rounded to float16" in n for n in report.notes)
    assert report.to_dict()["worst"] == expected.to_dict()["worst"]


def test_options_reach_the_tolerance_test(tmp_path):
    rng = np.random.default_rng(3)
    a = rng.standard_normal(1000).astype(np.float32)
    b = perturbed(a, rng, 0.5)
    pa, pb = save(tmp_path, "a.npy", a), save(tmp_path, "b.npy", b)
    for options in ({"atol": 0.0, "rtol": 0.0}, {"preset": "fp16"}, {"atol": 1e-3, "rtol": 0.0, "depth": 4.0}):
        asked = ComparisonOptions(**options)
        assert streamed(pa, pb, asked).to_dict() == in_memory(pa, pb, **options).to_dict()


def test_fortran_order_is_refused_with_the_fix(tmp_path):
    a = np.asfortranarray(np.arange(12, dtype=np.float32).reshape(3, 4))
    pa, pb = save(tmp_path, "a.npy", a), save(tmp_path, "b.npy", np.ascontiguousarray(a))
    with pytest.raises(InputError, match="Fortran order") as err:
        streamed(pb, pa)
    assert err.value.side == "b" and "np.ascontiguousarray" in err.value.message


def test_fortran_flag_on_a_single_long_axis_is_c_order_and_streams(tmp_path):
    a = np.asfortranarray(np.linspace(-1, 1, 50, dtype=np.float64).reshape(1, 50, 1))
    b = np.asfortranarray(a * (1 + 1e-15))
    pa, pb = save(tmp_path, "a.npy", a), save(tmp_path, "b.npy", b)
    assert streamed(pa, pb, chunk=8).to_dict()["first_diff"] == in_memory(pa, pb).to_dict()["first_diff"]


def test_shapes_must_be_equal(tmp_path):
    pa = save(tmp_path, "a.npy", np.zeros((3, 4), np.float32))
    pb = save(tmp_path, "b.npy", np.zeros((4, 3), np.float32))
    with pytest.raises(InputError, match=r"shape \[3, 4\] and B has \[4, 3\].*compare them in memory"):
        streamed(pa, pb)


def test_truncated_file_is_refused_before_comparing(tmp_path):
    pa = save(tmp_path, "a.npy", np.ones(100, np.float32))
    pb = tmp_path / "b.npy"
    pb.write_bytes(pa.read_bytes()[:-10])
    with pytest.raises(InputError, match="truncated") as err:
        streamed(pa, pb)
    assert err.value.side == "b"


@pytest.mark.parametrize(
    ("content", "message"),
    [(b"", "does not start with the .npy magic"), (b"tensor([1., 2.])", "does not start with the .npy magic")],
)
def test_files_that_are_not_npy_are_refused(tmp_path, content, message):
    pa = save(tmp_path, "a.npy", np.ones(3, np.float32))
    pb = tmp_path / "b.txt"
    pb.write_bytes(content)
    with pytest.raises(InputError, match=message) as err:
        streamed(pa, pb)
    assert err.value.side == "b"


def test_missing_file_is_an_input_error(tmp_path):
    with pytest.raises(InputError, match="cannot read") as err:
        stream.map_file(tmp_path / "nope.npy", "a")
    assert err.value.side == "a"


def test_cancel_stops_between_chunks(tmp_path):
    a = np.arange(100, dtype=np.float32)
    pa, pb = save(tmp_path, "a.npy", a), save(tmp_path, "b.npy", a + 1)
    fractions: list[float] = []
    asked = []

    def cancelled() -> bool:
        asked.append(True)
        return len(asked) > 3

    with pytest.raises(stream.Cancelled):
        streamed(pa, pb, chunk=10, progress=fractions.append, cancelled=cancelled)
    assert fractions == [0.1, 0.2, 0.3]


def test_empty_arrays_compare_and_finish_progress(tmp_path):
    pa = save(tmp_path, "a.npy", np.zeros((0, 5), np.float32))
    pb = save(tmp_path, "b.npy", np.zeros((0, 5), np.float32))
    fractions: list[float] = []
    report = streamed(pa, pb, progress=fractions.append)
    assert report.to_dict() == in_memory(pa, pb).to_dict()
    assert report.identical and fractions == [1.0]


def test_odd_or_tiny_chunks_are_a_programming_error(tmp_path):
    pa = save(tmp_path, "a.npy", np.zeros(4, np.complex64))
    with pytest.raises(ValueError, match="even"):
        streamed(pa, pa, chunk=3)


def streaming_peak(directory: Path, n: int) -> int:
    """Peak bytes NumPy and Python allocate while streaming two files of ``n`` float32 values that all differ."""
    rng = np.random.default_rng(n)
    a = rng.standard_normal(n, dtype=np.float32)
    pa, pb = save(directory, f"a{n}.npy", a), save(directory, f"b{n}.npy", np.nextafter(a, np.float32(np.inf)))
    del a
    tracemalloc.start()
    try:
        streamed(pa, pb)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.slow
def test_memory_is_bounded_by_the_chunk_not_the_file(tmp_path):
    """Every value differs (the costliest case): three times the file, yet not more memory.

    Both sizes hold more errors than the percentile sample keeps (compare.ERROR_SAMPLE_CAP),
    so both measure the steady state of a long fold, not the start where all are kept.
    """
    small, big = streaming_peak(tmp_path, 4 * CHUNK), streaming_peak(tmp_path, 12 * CHUNK)
    assert big < 1.2 * small


def file_reader(path: Path) -> tuple[stream.Reader, int]:
    """What the browser worker hands over for a dropped file: a slice reader and the size."""
    data = path.read_bytes()
    return (lambda offset, length: np.frombuffer(data, np.uint8, length, offset).copy()), len(data)


def worker_request(name_a: str = "a.npy", name_b: str = "b.npy", **options) -> dict:
    inputs = {"a": {"name": name_a, "data": "p0"}, "b": {"name": name_b, "data": "p1"}}
    return {"op": "compare", "inputs": inputs, "options": options}


def test_worker_streams_two_big_npy_files_and_says_so(tmp_path, monkeypatch):
    from perpendis.service import api

    monkeypatch.setattr(stream, "STREAM_MIN_BYTES", 10_000)
    rng = np.random.default_rng(8)
    a = rng.standard_normal((40, 100), dtype=np.float32)
    pa, pb = save(tmp_path, "a.npy", a), save(tmp_path, "b.npy", perturbed(a, rng, 0.3))
    files = {"p0": file_reader(pa), "p1": file_reader(pb)}
    stages = []
    asked = {**worker_request(atol=1e-7), "text": True}  # the text report, as the CLI asks for it
    result = service.serve(asked, {}, files, lambda stage, f: stages.append((stage, f)))
    expected = api.handle(asked, {"p0": pa.read_bytes(), "p1": pb.read_bytes()})
    assert result["streamed"] is True and result["ok"]
    assert result["report"] == expected["report"] and result["text"] == expected["text"]
    assert stages == [("streaming", 1.0)]


def test_worker_reads_small_or_other_files_whole_through_the_api(tmp_path, monkeypatch):
    from perpendis.service import api

    a = np.linspace(0, 1, 50, dtype=np.float32)
    pa, pb = save(tmp_path, "a.npy", a), tmp_path / "b.txt"
    pb.write_text(repr(a + np.float32(1e-7)))
    for threshold in (stream.STREAM_MIN_BYTES, 0):  # small, and big but B is text
        monkeypatch.setattr(stream, "STREAM_MIN_BYTES", threshold)
        files = {"p0": file_reader(pa), "p1": file_reader(pb)}
        result = service.serve(worker_request(name_b="b.txt"), {}, files)
        expected = api.handle(worker_request(name_b="b.txt"), {"p0": pa.read_bytes(), "p1": pb.read_bytes()})
        assert "streamed" not in result and result["ok"]
        assert result["report"] == expected["report"]


def test_files_read_ahead_are_not_read_again(tmp_path):
    """The page's files read before Compare (``ahead``) stand in for reading them whole;
    one of another size than the file is not trusted, and the file is read."""
    from perpendis.service import api

    rng = np.random.default_rng(12)
    a = rng.standard_normal((300, 400), dtype=np.float32)  # 480 kB: more than any header read
    pa, pb = save(tmp_path, "a.npy", a), save(tmp_path, "b.npy", perturbed(a, rng, 0.2))
    expected = api.handle(worker_request(), {"p0": pa.read_bytes(), "p1": pb.read_bytes()})
    ahead = {key: np.frombuffer(path.read_bytes(), np.uint8) for key, path in (("p0", pa), ("p1", pb))}

    def unread(path: Path) -> tuple[stream.Reader, int]:
        def read(offset: int, length: int) -> np.ndarray:
            if length > 100_000:  # its first bytes may be read, to tell its format; its data not
                raise AssertionError(f"{path.name} was read again")
            return np.frombuffer(path.read_bytes(), np.uint8, length, offset).copy()

        return read, path.stat().st_size

    result = service.serve(worker_request(), {}, {"p0": unread(pa), "p1": unread(pb)}, ahead=ahead)
    assert result["ok"] and result["report"] == expected["report"]
    reads = []
    read_a, size_a = file_reader(pa)
    files = {"p0": (lambda offset, length: reads.append(length) or read_a(offset, length), size_a), "p1": unread(pb)}
    result = service.serve(worker_request(), {}, files, ahead={"p0": ahead["p0"][:-4], "p1": ahead["p1"]})
    assert result["ok"] and result["report"] == expected["report"] and size_a in reads


def test_a_file_that_cannot_be_read_any_more_is_an_answer(tmp_path):
    """Whatever reads it first (a look at its first bytes, or reading it whole)."""
    pa = save(tmp_path, "a.npy", np.ones(100, np.float32))
    message = "b.npy could not be read (NotReadableError): it was changed, moved or deleted after it was chosen"

    def gone(offset: int, length: int) -> np.ndarray:
        raise InputError(message)

    result = service.serve(worker_request(), {}, {"p0": file_reader(pa), "p1": (gone, 428)})
    assert result == {"ok": False, "error": {"message": message, "where": None, "side": None}}


def test_a_file_that_cannot_be_read_any_more_mid_fold_is_an_answer(tmp_path, monkeypatch):
    """A file changed on disk while a shared comparison streams it: the share this worker
    folds in a failed helper's place meets it, and the answer says so (no exception)."""
    monkeypatch.setattr(stream, "STREAM_MIN_BYTES", 0)
    a = np.random.default_rng(13).standard_normal(5 * CHUNK, dtype=np.float32)
    pa, pb = save(tmp_path, "a.npy", a), save(tmp_path, "b.npy", a)
    read_b, size_b = file_reader(pb)
    message = "b.npy could not be read (NotReadableError): it was changed, moved or deleted after it was chosen"

    def changed(offset: int, length: int) -> np.ndarray:
        if offset > size_b // 2:
            raise InputError(message)
        return read_b(offset, length)

    result = service.serve(worker_request(), {}, {"p0": file_reader(pa), "p1": (changed, size_b)}, workers=2)
    assert result["ok"] and len(result["fold_jobs"]) == 1
    fold = service.SESSION.fold
    fold.fold_first_share()  # the first share reads the first half of both files: no error yet
    assert fold.own_errors_for_helper() is None  # too few errors to offer a helper anything
    assert fold.merge_partials([None]) is None  # the helper failed; its share, folded here, cannot be read
    assert service.answer_fold() == {"ok": False, "error": {"message": message, "where": None, "side": "b"}}
    assert service.SESSION.fold is None  # nothing is left over for the next request


def test_only_files_read_whole_anyway_are_read_ahead():
    assert planner.read_ahead([stream.STREAM_MIN_BYTES // 2 - 1, stream.STREAM_MIN_BYTES // 2])
    assert not planner.read_ahead([stream.STREAM_MIN_BYTES // 2, stream.STREAM_MIN_BYTES // 2])
    assert not planner.read_ahead([])


def test_worker_stream_errors_are_answers_not_exceptions(tmp_path, monkeypatch):
    monkeypatch.setattr(stream, "STREAM_MIN_BYTES", 0)
    pa = save(tmp_path, "a.npy", np.ones((30, 30), np.float32))
    pb = save(tmp_path, "b.npy", np.asfortranarray(np.ones((30, 30), np.float32)))
    result = service.serve(worker_request(), {}, {"p0": file_reader(pa), "p1": file_reader(pb)})
    assert result["ok"] is False and result["error"]["side"] == "b" and "Fortran" in result["error"]["message"]


def test_cli_stream_prints_the_in_memory_report(tmp_path, capsys):
    rng = np.random.default_rng(9)
    a = rng.standard_normal((64, 50), dtype=np.float32)
    b = perturbed(a, rng, 0.4)
    b[3, 3] = 7.0
    pa, pb = save(tmp_path, "a.npy", a), save(tmp_path, "b.npy", b)
    streamed_run = run_cli(capsys, pa, pb, "--stream", "--json", "--preset", "fp32-cpu")
    loaded_run = run_cli(capsys, pa, pb, "--json", "--preset", "fp32-cpu")
    assert streamed_run == loaded_run
    assert streamed_run[0] == 1 and json.loads(streamed_run[1])["n_bitwise_diff"] > 0


def test_cli_streams_big_npy_pairs_without_loading_them(tmp_path, capsys, monkeypatch):
    from perpendis.cli import main as cli

    monkeypatch.setattr(stream, "STREAM_MIN_BYTES", 1000)
    pa = save(tmp_path, "a.npy", np.arange(1000, dtype=np.float32))

    def no_loading(path):
        raise AssertionError(f"{path} was loaded whole")

    monkeypatch.setattr(cli, "load_path", no_loading)
    code, out, _ = run_cli(capsys, pa, pa, "--json")
    assert code == 0 and json.loads(out)["identical"] is True


@pytest.mark.parametrize(
    ("extra", "message"),
    [(["--ref", "R"], "without --ref"), ([], "--stream compares two .npy files")],
)
def test_cli_stream_refuses_what_it_cannot_stream(tmp_path, capsys, extra, message):
    pa = save(tmp_path, "a.npy", np.ones(4, np.float32))
    text = tmp_path / "b.txt"
    text.write_text("tensor([1., 1., 1., 1.])")
    code, out, err = run_cli(capsys, pa, text if not extra else pa, "--stream", *extra)
    assert code == 2 and out == "" and message in err


def test_worker_refuses_to_load_a_huge_file_whole(tmp_path, monkeypatch):
    monkeypatch.setattr(planner, "WHOLE_MAX_BYTES", 100)
    pa = save(tmp_path, "a.npy", np.ones(1000, np.float32))
    pb = tmp_path / "b.txt"
    pb.write_text("tensor([1., 1.])")
    result = service.serve(worker_request(name_b="b.txt"), {}, {"p0": file_reader(pa), "p1": file_reader(pb)})
    assert result["ok"] is False and "too big to load whole" in result["error"]["message"]
