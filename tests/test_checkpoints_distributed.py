"""The checkpoint folds as dask.distributed tasks: the merged report is bit for bit the single-process one.

A LocalCluster of two worker processes folds units of one chunk's bytes each, so a
tensor of three million elements is cut by byte range over both workers and its
partials (error samples cut past their cap included) merge on the client.  The workers
open the files by absolute path, relative paths given to the command included, and a
worker that cannot see a file is refused by name before any task runs.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import numpy as np
import pytest
from perpendis.checkpoints import Checkpoint, compare_checkpoints, folder, parse_rule
from perpendis.checkpoints.distributed import dask_runner, fold_unit_at, reason_for_single, unit_size
from perpendis.checkpoints.rename import preset
from perpendis.checkpoints.run import begin_checkpoints
from perpendis.checkpoints.shared import CheckpointFold
from perpendis.cli.main import main
from perpendis.engine.fold.chunk import CHUNK
from perpendis.errors import InputError

pytest.importorskip("safetensors")
from safetensors.numpy import save_file

sys.path.insert(0, str(Path(__file__).parent / "fixtures" / "checkpoints"))
import make_conversion

distributed = pytest.importorskip("distributed")

pytestmark = pytest.mark.slow
RULE = parse_rule(r"^model\.layers\.(\d+)\.=layers.\1.")


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    """The real conversion, plus a big float32 tensor with rounding noise everywhere and a
    corrupted block, and a truncated shard on B's side."""
    fp32, bf16 = make_conversion.make(tmp_path_factory.mktemp("dask"))
    rng = np.random.default_rng(0)
    big = rng.standard_normal(3 * CHUNK + 12344).astype(np.float32)
    noisy = np.nextafter(big, np.where(rng.random(big.size) < 0.5, np.inf, -np.inf).astype(np.float32))
    noisy[2_000_000:2_000_100] = 0.0
    save_file({"big": big.reshape(-1, 4)}, str(fp32 / "extra.safetensors"))
    save_file({"big": noisy.reshape(-1, 4)}, str(bf16 / "extra.safetensors"))
    save_file({"lost": big[:1000]}, str(bf16 / "broken.safetensors"))
    broken = bf16 / "broken.safetensors"
    broken.write_bytes(broken.read_bytes()[:-7])
    extras = {"big": "extra.safetensors"}
    for side, extra in ((fp32, extras), (bf16, extras | {"lost": "broken.safetensors"})):
        index = json.loads((side / "model.safetensors.index.json").read_text())
        index["weight_map"] |= extra
        (side / "model.safetensors.index.json").write_text(json.dumps(index))
    return fp32, bf16


def big_size(pair) -> int:
    return 3 * CHUNK + 12344


@pytest.fixture(scope="module")
def client():
    with (
        distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster,
        distributed.Client(cluster) as c,
    ):
        yield c


def test_dask_report_is_the_single_process_one(pair, client):
    fp32, bf16 = pair
    alone = compare_checkpoints(folder(fp32), folder(bf16), rules=[RULE])
    spread = compare_checkpoints(folder(fp32), folder(bf16), rules=[RULE], runner=dask_runner(client, CHUNK))
    assert spread.to_json() == alone.to_json()
    rows = {r.name: r for r in alone.tensors}
    assert rows["big"].verdict == "investigate" and rows["big"].n_bitwise_diff == big_size(pair)
    assert any(p.file == "broken.safetensors" and "truncated" in p.message for p in alone.problems)


def test_units_cut_a_tensor_by_byte_range_and_merge_to_the_whole_report(pair, client):
    """Below the rows: the big pair cut into byte ranges of one chunk, each folded by a
    worker that opens the files by path; the partials merged give the single-process rows."""
    fp32, bf16 = pair
    alone = compare_checkpoints(folder(fp32), folder(bf16))
    begun = begin_checkpoints(folder(fp32), folder(bf16))
    keys = {
        side: {n: str(Path(p).resolve()) for n, p in c.paths.items()}
        for side, c in (("a", begun.job.a), ("b", begun.job.b))
    }
    fold = CheckpointFold.plan(begun, keys, unit_bytes=2 * 4 * CHUNK, kinds=("safetensors", "npy", "archive"))
    big = [i for i, p in enumerate(fold.pairs) if p.task.name == "big"]
    assert len(big) == 1 and len(fold.pairs[big[0]].shares) == 4  # 3 chunks and a part: four byte ranges
    jobs = fold.unit_jobs()
    futures = [client.submit(fold_unit_at, j["job"], j["files"], j["reads"], pure=False) for j in jobs]
    for index, future in enumerate(futures):
        fold.take_unit(index, future.result())
    report = fold.report()
    rows = {r.name: r for r in report.tensors}
    assert rows["big"].n_bitwise_diff == big_size(pair)
    assert report.to_json() == alone.to_json()


def test_a_worker_that_cannot_see_a_file_is_named(pair, client):
    """The client reads B through its own reader, but the path it gives the workers is
    one they cannot open: the run is refused before any task, naming file and worker."""
    fp32, bf16 = pair
    b = folder(bf16)
    elsewhere = {name: f"/nonexistent/checkpoint/{name}" for name in b.paths}
    moved = Checkpoint(b.names, b.open, elsewhere)
    with pytest.raises(InputError) as err:
        compare_checkpoints(folder(fp32), moved, rules=[RULE], runner=dask_runner(client))
    message = str(err.value)
    assert "/nonexistent/checkpoint/" in message and "cannot read" in message
    assert any(w in message for w in client.scheduler_info()["workers"])


def test_the_cluster_is_left_out_when_it_cannot_win():
    assert "one worker" in reason_for_single(10 * 2**30, 1, 2**30)
    assert "less than" in reason_for_single(2**20, 4, 2**30)
    assert reason_for_single(2 * 2**30, 2, 2**30) is None
    assert reason_for_single(2 * 2**30, None, 2**30) is None
    assert unit_size(2 * 2**30, 2) == 256 * 2**20  # capped: a task stays a fraction of a second
    assert unit_size(512 * 2**20, 2) == 64 * 2**20  # four units per worker thread
    assert unit_size(2**20, 4) == 32 * 2**20  # floored: tiny work is one unit


def test_gguf_on_the_cluster_is_the_single_process_report(client):
    """GGUF tensors in place are folded by the workers, quantised ones judged on the client."""
    pair = Path(__file__).parent / "fixtures" / "checkpoints" / "gguf_llama"
    rules = preset("gguf-llama")
    alone = compare_checkpoints(folder(pair / "gguf"), folder(pair / "hf"), rules=rules)
    spread = compare_checkpoints(folder(pair / "gguf"), folder(pair / "hf"), rules=rules, runner=dask_runner(client))
    assert spread.to_json() == alone.to_json()
    assert {r.verdict for r in spread.tensors} == {"converted", "identical"}


def test_cli_dask_and_single_process_print_the_same_json(pair, capsys):
    fp32, bf16 = pair
    args = ["checkpoints", str(fp32), str(bf16), "--rename", RULE.pattern + "=" + RULE.replacement, "--json"]
    assert main([*args, "--single", "--no-progress"]) == 1
    single = json.loads(capsys.readouterr().out)
    assert main([*args, "--workers", "2", "--min-cluster-bytes", "0"]) == 1
    captured = capsys.readouterr()
    assert json.loads(captured.out) == single
    assert "tensors" in captured.err and "one process" not in captured.err  # the progress bar, of the cluster
    assert main([*args, "--workers", "2", "--no-progress"]) == 1  # a few MB: not worth a cluster
    captured = capsys.readouterr()
    assert json.loads(captured.out) == single
    assert "one process does the work" in captured.err and "less than" in captured.err


def test_cli_on_an_existing_scheduler(pair, client, capsys):
    fp32, bf16 = pair
    args = ["checkpoints", str(fp32), str(bf16), "--rename", RULE.pattern + "=" + RULE.replacement, "--json"]
    assert main([*args, "--single", "--no-progress"]) == 1
    single = json.loads(capsys.readouterr().out)
    address = ["--scheduler", client.scheduler.address, "--no-progress"]
    assert main([*args, *address]) == 1
    assert json.loads(capsys.readouterr().out) == single


def test_cli_on_a_scheduler_with_relative_paths(pair, client, capsys, monkeypatch):
    """Paths relative to the client's folder are made absolute before the workers get them."""
    fp32, bf16 = pair
    monkeypatch.chdir(fp32.parent)
    rule = ["--rename", RULE.pattern + "=" + RULE.replacement]
    args = ["checkpoints", fp32.name, bf16.name, *rule, "--json", "--no-progress"]
    assert main([*args, "--single"]) == 1
    single = json.loads(capsys.readouterr().out)
    assert main([*args, "--scheduler", client.scheduler.address]) == 1
    assert json.loads(capsys.readouterr().out) == single
    assert all(r["verdict"] != "error" for r in single["tensors"] if r["name"] != "lost")
    assert os.getcwd() == str(fp32.parent)
