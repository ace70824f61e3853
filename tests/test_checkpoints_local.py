"""The CLI's local run schedules the same units as the page and Dask, through the same
interface (``run_units`` with ``LocalFolder``), on safetensors files written by torch:
its rows are the ones each pair folded alone gives, its progress is told chunk by chunk
and a stop is honoured between chunks."""

from __future__ import annotations

import pytest
from perpendis.checkpoints import compare_checkpoints, folder, run, schedule
from perpendis.checkpoints.pairs import compare_pair
from perpendis.checkpoints.run import begin_checkpoints
from perpendis.checkpoints.schedule import LocalFolder, run_units
from perpendis.checkpoints.shared import CheckpointFold
from perpendis.engine.fold.chunk import CHUNK
from perpendis.engine.stream import Cancelled

torch = pytest.importorskip("torch")
pytest.importorskip("safetensors")
from safetensors.torch import save_file  # noqa: E402

BIG = 3 * CHUNK + 1000  # elements of the big tensor: four chunks


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    """A float32 checkpoint and its bfloat16 copy: one tensor of four chunks, forty small ones,
    one whose shape differs, one left at zero in B."""
    root = tmp_path_factory.mktemp("local")
    gen = torch.Generator().manual_seed(34)
    state = {"big.weight": torch.randn(BIG, generator=gen)}
    state |= {f"small.{k:02d}": torch.randn(64, 33, generator=gen) for k in range(40)}
    state["reshaped"] = torch.randn(12, 8, generator=gen)
    state["zeroed"] = torch.randn(100, generator=gen)
    copy = {name: t.to(torch.bfloat16) for name, t in state.items()}
    copy["reshaped"] = copy["reshaped"].reshape(8, 12).contiguous()
    copy["zeroed"] = torch.zeros(100, dtype=torch.bfloat16)
    for name, tensors in (("a", state), ("b", copy)):
        (root / name).mkdir()
        save_file(tensors, str(root / name / "model.safetensors"))
    return folder(root / "a"), folder(root / "b")


def pair_by_pair(a, b):
    """The report as each pair folded alone makes it (the fold the local run made before it
    scheduled units), to check the local run against."""
    begun = begin_checkpoints(a, b)
    job = begun.job
    for task in job.tasks:
        job.row(task, compare_pair(task, job.a.open, job.b.open, job.options))
    return begun.finish()


def test_local_run_folds_its_units_through_run_units_and_gives_each_pair_s_own_row(pair, monkeypatch):
    folders = []

    def recording(fold, local, cancelled=None):
        folders.append((fold, local))
        return run_units(fold, local, cancelled)

    monkeypatch.setattr(schedule, "run_units", recording)
    report = compare_checkpoints(*pair)
    assert len(folders) == 1 and isinstance(folders[0][1], LocalFolder)
    fold = folders[0][0]
    assert len(fold.units) < len(fold.pairs) == 43  # small pairs batched into units
    assert all(len(pair.parts) == 0 and pair.left == 0 for pair in fold.pairs)
    assert report.to_dict() == pair_by_pair(*pair).to_dict()
    verdicts = {row.name: row.verdict for row in report.tensors}
    assert verdicts["reshaped"] == "investigate" and verdicts["zeroed"] == "investigate"
    assert verdicts["big.weight"] == "converted"


def test_whole_units_never_cut_a_pair_and_batch_to_the_unit_size(pair):
    begun = begin_checkpoints(*pair)
    fold = CheckpointFold.whole(begun, unit_bytes=64 * 1024)
    pieces = [piece for unit in fold.units for piece in unit]
    assert sorted(piece.pair for piece in pieces) == list(range(len(begun.job.tasks)))
    assert all(piece.share == 0 for piece in pieces)
    for unit in fold.units:
        assert len(unit) == 1 or sum(piece.nbytes for piece in unit) <= 64 * 1024
        assert fold.whole_pairs(fold.units.index(unit)) is not None


def test_progress_is_told_chunk_by_chunk_and_adds_up_to_what_was_planned(pair):
    told, planned = [], []
    compare_checkpoints(*pair, done=told.append, planned=lambda n, nbytes: planned.append(nbytes))
    big = (4 + 2) * BIG  # float32 in A, bfloat16 in B
    assert sum(told) == planned[0]
    assert all(n > 0 for n in told)
    assert sum(1 for n in told if n < big) >= 4  # the big pair's bytes told as its chunks are folded
    assert max(told) < big


def test_a_stop_is_honoured_between_chunks_of_the_big_pair(pair):
    asked, rows = [], []
    begun = begin_checkpoints(*pair, cancelled=lambda: asked.append(1) or len(asked) > 2)
    made = begun.job.row
    begun.job.row = lambda task, row: (rows.append(row), made(task, row))
    with pytest.raises(Cancelled, match="cancelled after"):
        run.local_runner(begun.job)
    assert len(asked) == 3 and rows == []  # stopped inside the first pair, before its third chunk



def test_a_stop_between_two_units_is_cancelled_not_a_short_report(pair):
    asked, rows = [], []
    begun = begin_checkpoints(*pair)
    made = begun.job.row
    begun.job.row = lambda task, row: (rows.append(row), made(task, row))
    fold = CheckpointFold.whole(begun, unit_bytes=64 * 1024)
    assert len(fold.units) > 2
    with pytest.raises(Cancelled, match="between two units"):
        schedule.fold_all(fold, LocalFolder(fold), lambda: asked.append(1) or len(asked) > 1)
    assert len(asked) == 2 and 0 < len(rows) < len(begun.job.tasks)  # the first unit's rows only
