"""The page's checkpoint comparison shared with helper workers, stepped natively as app/worker.js steps it."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from perpendis import service
from perpendis.checkpoints import compare_checkpoints, folder, parse_rule
from perpendis.checkpoints.shared import UnitQueue, fold_unit_job, pack, unpack
from perpendis.service import handle
from perpendis.service.bridge import CoreWorker
from perpendis.service.session import Session

pytest.importorskip("safetensors")
from safetensors.numpy import save_file

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parent / "fixtures" / "checkpoints"))
import make_conversion
from test_checkpoints_page import RENAME, request_of
from worker_fakes import View, read_slice


def read_ahead(unit, files):
    """The bytes of a unit's reads, as the worker reads them before folding it (``readRanges``)."""
    return [files[unit["files"][f]][0](offset, length) for f, offset, length in unit["reads"]]


def shared_answer(request, files, helped=lambda index: True, broken=lambda index: False, ahead=lambda index: True):
    """The answer the page's workers give: serve with two workers, then each unit folded by a
    'helper' (``fold_unit_job`` over the same readers) or by the core, as ``helped`` says,
    from its bytes read ahead or through the files' readers, as ``ahead`` says; a ``broken``
    helper's unit is folded by the core instead, as the worker does."""
    session = Session()
    first = service.serve(request, {}, files, workers=2, session=session)
    if not first.get("checkpoint_units"):
        return first, 0
    units = first["checkpoint_units"]
    by_helper = 0
    for index, unit in enumerate(units):
        views = read_ahead(unit, files) if unit is not None and ahead(index) else None
        if unit is not None and helped(index) and not broken(index):
            data = fold_unit_job(unit["job"], [files[key] for key in unit["files"]], views)
            session.checkpoints.take_unit(index, data)
            by_helper += 1
        else:
            session.checkpoints.fold_unit(index, views)
    answer = handle.answer_checkpoints(session=session)
    assert answer["shared"] == {"units": len(units), "by_helpers": by_helper}
    return answer, by_helper


def test_conversion_shared_equals_cli(tmp_path):
    folders = make_conversion.make(tmp_path)
    request, files = request_of(folders, rename=[RENAME])
    native = compare_checkpoints(folder(folders[0]), folder(folders[1]), rules=[parse_rule(RENAME)])
    for helped, ahead in ((lambda i: True, lambda i: True), (lambda i: i % 2 == 0, lambda i: i % 3 == 0),
                          (lambda i: False, lambda i: False), (lambda i: True, lambda i: False)):  # fmt: skip
        answer, _ = shared_answer(request, files, helped, ahead=ahead)
        assert answer["ok"], answer
        assert answer["checkpoints"] == native.to_dict()
    answer, _ = shared_answer(request, files, broken=lambda i: i == 0)
    assert answer["checkpoints"] == native.to_dict()


def write_big(root: Path) -> tuple[Path, Path]:
    """Two checkpoints with one tensor of 5 chunks (cut into shares) and 300 small ones (batched),
    B's big tensor 1 ulp off in one element of 7 and one small tensor corrupted."""
    rng = np.random.default_rng(5)
    a = {"big": rng.standard_normal(5 << 20).astype(np.float32)}
    a.update({f"small.{i:03d}": rng.standard_normal(64 + i).astype(np.float32) for i in range(300)})
    b = {k: v.copy() for k, v in a.items()}
    b["big"][::7] = np.nextafter(b["big"][::7], np.float32(np.inf))
    b["small.123"][5] = 7.0
    for side, tensors in (("a", a), ("b", b)):
        (root / side).mkdir(parents=True)
        names = sorted(tensors)
        save_file({k: tensors[k] for k in names[:150]}, root / side / "one.safetensors")
        save_file({k: tensors[k] for k in names[150:]}, root / side / "two.safetensors")
    return root / "a", root / "b"


def dealt_answer(request, files, broken=lambda index: False):
    """The answer as app/worker.js's foldCheckpoints gets it: every worker asks Python
    (``next_checkpoint_unit``) for its next unit when free, one helper with two units in
    flight, its partials taken in between the core's own units; a ``broken`` unit is given
    back by the helper and folded by the core.  Says which worker folded which unit."""
    session = Session()
    units = service.serve(request, {}, files, workers=2, session=session)["checkpoint_units"]
    core, folded_by = CoreWorker(read_slice, session), {}

    def here(index):
        unit = units[index]
        views = None if unit is None else [View(v) for v in read_ahead(unit, files)]
        core.call("fold_checkpoint_unit", index, views)
        folded_by[index] = "core"

    def helped(index):
        if index is None:
            return None
        if broken(index):
            core.call("give_back_checkpoint_unit", index)
        else:
            unit = units[index]
            data = fold_unit_job(unit["job"], [files[key] for key in unit["files"]], read_ahead(unit, files))
            core.call("take_checkpoint_unit", index, View(data))
            folded_by[index] = "helper"
        return core.call("next_checkpoint_unit", True)

    flight = [core.call("next_checkpoint_unit", True) for _ in range(2)]
    while (index := core.call("next_checkpoint_unit", False)) is not None:
        here(index)
        flight = [helped(index) for index in flight]
    while any(index is not None for index in flight):
        flight = [helped(index) for index in flight]
    while (index := core.call("next_checkpoint_unit", False)) is not None:
        here(index)
    return json.loads(core.call("answer_checkpoints")), units, folded_by


def test_units_dealt_by_python_to_whichever_worker_asks(tmp_path, monkeypatch):
    from perpendis.checkpoints import shared

    monkeypatch.setattr(shared, "UNIT_BYTES", 8 * 2**20)
    folders = write_big(tmp_path)
    request, files = request_of(folders)
    native = compare_checkpoints(folder(folders[0]), folder(folders[1]))
    answer, units, folded_by = dealt_answer(request, files, broken=lambda index: index == 1)
    assert answer["ok"] and answer["checkpoints"] == native.to_dict()
    assert sorted(folded_by) == list(range(len(units)))  # each unit folded once
    assert folded_by[1] == "core" and "helper" in folded_by.values()
    assert answer["shared"] == {"units": len(units), "by_helpers": list(folded_by.values()).count("helper")}


def test_the_queue_gives_a_helper_only_units_it_can_read_and_the_core_what_helpers_gave_back():
    queue = UnitQueue([False, True, False, True, True])
    assert [queue.next(True), queue.next(False), queue.next(True)] == [1, 0, 3]
    queue.give_back(3)
    assert [queue.next(False), queue.next(True), queue.next(True), queue.next(False), queue.next(False)] == [
        3, 4, None, 2, None]  # fmt: skip
    assert queue.next(True) is None


def test_big_and_many_small_tensors(tmp_path, monkeypatch):
    from perpendis.checkpoints import shared

    monkeypatch.setattr(shared, "UNIT_BYTES", 8 * 2**20)  # the big tensor in shares of 1 M elements
    folders = write_big(tmp_path)
    request, files = request_of(folders)
    native = compare_checkpoints(folder(folders[0]), folder(folders[1]))
    session = Session()
    first = service.serve(request, {}, files, workers=2, session=session)
    units = first["checkpoint_units"]
    pieces = [len(json.loads(u["job"])) for u in units]
    assert len(units) < 301 // 10 and max(pieces) > 100  # small tensors batched, not one unit each
    answer, by_helper = shared_answer(request, files, helped=lambda i: i % 3 != 1, ahead=lambda i: i % 2 == 0)
    assert by_helper >= 2
    assert answer["checkpoints"] == native.to_dict()
    worst = answer["checkpoints"]["tensors"][:2]
    assert {r["name"] for r in worst} == {"big", "small.123"}


def test_one_worker_or_no_helpable_tensor_answers_at_once(tmp_path):
    import torch

    folders = make_conversion.make(tmp_path)
    request, files = request_of(folders, rename=[RENAME])
    assert "checkpoints" in service.serve(request, {}, files, workers=1, session=Session())
    for side in "ab":
        (tmp_path / f"pt_{side}").mkdir()
        torch.save({"w": torch.arange(10.0)}, tmp_path / f"pt_{side}" / "pytorch_model.bin")
    request, files = request_of([tmp_path / "pt_a", tmp_path / "pt_b"])
    answer = service.serve(request, {}, files, workers=2, session=Session())
    assert answer["checkpoints"]["summary"]["identical"] == 1


def test_file_cut_short_after_the_scan_is_an_error_row_whoever_folds(tmp_path):
    from perpendis.errors import InputError

    folders = make_conversion.make(tmp_path)
    request, files = request_of(folders, rename=[RENAME])
    # A's last shard reads short past its first half (the headers read at the scan are whole).
    key = next(item["data"] for item in request["inputs"]["a"] if item["name"].endswith("00003-of-00003.safetensors"))
    read, size = files[key]
    files = {**files, key: (lambda offset, length: read(offset, max(0, min(length, size // 2 - offset))), size)}
    one = service.serve(request, {}, files, workers=1, session=Session())
    errors = [r for r in one["checkpoints"]["tensors"] if r["verdict"] == "error"]
    assert errors and all("ended early" in r["description"] for r in errors)
    session = Session()
    units = service.serve(request, {}, files, workers=2, session=session)["checkpoint_units"]
    failed = 0
    for index, unit in enumerate(units):
        views = read_ahead(unit, files)  # short where the file is cut: the fold reads the rest and says so
        try:  # a helper that meets the cut fails its unit; the core's worker then folds it itself
            session.checkpoints.take_unit(index, fold_unit_job(unit["job"], [files[k] for k in unit["files"]], views))
        except InputError as err:
            assert "ended early" in str(err)
            failed += 1
            session.checkpoints.fold_unit(index, views)
    assert failed
    assert handle.answer_checkpoints(session=session)["checkpoints"] == one["checkpoints"]


@settings(max_examples=30, deadline=None)
@given(st.lists(st.binary(max_size=40), max_size=6))
def test_pack_round_trip(parts):
    arrays = [np.frombuffer(p, dtype=np.uint8) for p in parts]
    assert [bytes(v) for v in unpack(pack(arrays))] == parts


def test_local_folder_folds_the_units_the_queue_deals_and_stops_when_cancelled(tmp_path, monkeypatch):
    from perpendis.checkpoints import shared
    from perpendis.checkpoints.schedule import LocalFolder, run_units

    monkeypatch.setattr(shared, "UNIT_BYTES", 8 * 2**20)
    folders = write_big(tmp_path)
    request, files = request_of(folders)
    native = compare_checkpoints(folder(folders[0]), folder(folders[1]))
    session = Session()
    service.serve(request, {}, files, workers=2, session=session)
    fold = session.checkpoints
    assert len(fold.units) > 2
    local = LocalFolder(fold)
    asked = []
    assert run_units(fold, local, cancelled=lambda: asked.append(1) or len(asked) > 1) is False
    assert local.waiting == [] and len(asked) == 2 and fold.queue.next(False) is None
    assert any(pair.left for pair in fold.pairs)  # the units after the first were never folded
    session = Session()
    service.serve(request, {}, files, workers=2, session=session)
    assert run_units(session.checkpoints, LocalFolder(session.checkpoints)) is True
    assert handle.answer_checkpoints(session=session)["checkpoints"] == native.to_dict()
