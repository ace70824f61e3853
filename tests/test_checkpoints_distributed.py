"""The checkpoint folds as dask.distributed tasks: the merged report is bit for bit the single-process one.

A LocalCluster of two worker processes folds shares of one chunk each, so a tensor of
three million elements is split over both workers and its partials (error samples cut
past their cap included) merge on the client.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest
from perpendis.checkpoints import compare_checkpoints, folder, parse_rule
from perpendis.checkpoints.distributed import dask_runner, fold_share
from perpendis.checkpoints.inputs import scan
from perpendis.checkpoints.pairs import plan, prepare_pair, sources
from perpendis.cli import main
from perpendis.compare import CHUNK, partial_from_bytes
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


def test_merged_partials_give_the_whole_report(pair, client):
    """Below the rows: the full report of the big pair, from four partials folded on the workers."""
    fp32, bf16 = pair
    a, b = folder(fp32), folder(bf16)
    (task,) = [t for t in plan(scan(a.names, a.open), scan(b.names, b.open)).tasks if t.name == "big"]
    whole = prepare_pair(task, *sources(task, a.open, b.open), {})
    expected = whole.finish(whole.fold()).to_json()
    prepared = prepare_pair(task, *sources(task, a.open, b.open), {})
    shares = prepared.shares(4)
    assert len(shares) == 4
    futures = [
        client.submit(fold_share, s.to_json(), task.a, a.paths[task.a.file], task.b, b.paths[task.b.file])
        for s in shares
    ]
    parts = [partial_from_bytes(f.result()) for f in futures]
    merged = parts[0]
    for p in parts[1:]:
        merged = merged.merge(p)
    assert merged.errors.bound is not None  # the error sample was cut: the merge is not trivially exact
    assert prepared.finish(merged).to_json() == expected


def test_cli_dask_and_single_process_print_the_same_json(pair, capsys):
    fp32, bf16 = pair
    args = ["checkpoints", str(fp32), str(bf16), "--rename", RULE.pattern + "=" + RULE.replacement, "--json"]
    assert main([*args, "--single", "--no-progress"]) == 1
    single = json.loads(capsys.readouterr().out)
    assert main([*args, "--workers", "2"]) == 1
    captured = capsys.readouterr()
    assert json.loads(captured.out) == single
    assert "tensors" in captured.err  # the progress bar


def test_cli_on_an_existing_scheduler(pair, client, capsys):
    fp32, bf16 = pair
    args = ["checkpoints", str(fp32), str(bf16), "--rename", RULE.pattern + "=" + RULE.replacement, "--json"]
    assert main([*args, "--single", "--no-progress"]) == 1
    single = json.loads(capsys.readouterr().out)
    assert main([*args, "--scheduler", client.scheduler.address, "--no-progress"]) == 1
    assert json.loads(capsys.readouterr().out) == single
