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
from perpendis.checkpoints.shared import fold_unit_job, pack, unpack
from perpendis.service import handle
from perpendis.service.session import Session

pytest.importorskip("safetensors")
from safetensors.numpy import save_file

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parent / "fixtures" / "checkpoints"))
import make_conversion
from test_checkpoints_page import RENAME, request_of


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
