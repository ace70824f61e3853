"""``perpendis checkpoints --scheduler ADDRESS``: always folded on that scheduler, whatever the
size, and an address where nothing answers is exit 2 naming it, within the connect timeout.

A checkpoint of a few kilobytes is far below the size a LocalCluster is started for; with
``--scheduler`` it is still sent there, and the scheduler's own task records show it ran.
"""

from __future__ import annotations

import json
import time

import numpy as np
import pytest
from perpendis.cli import checkpoints as cli_checkpoints
from perpendis.cli.main import main

distributed = pytest.importorskip("distributed")
save_file = pytest.importorskip("safetensors.numpy").save_file


@pytest.fixture
def small(tmp_path):
    """Two one-shard safetensors checkpoints of a few KB, one tensor corrupted in B."""
    rng = np.random.default_rng(0)
    tensors = {"w": rng.standard_normal((32, 16)).astype(np.float32), "b": rng.standard_normal(16).astype(np.float32)}
    broken = dict(tensors, w=tensors["w"].copy())
    broken["w"][3, 4] += 1.0
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    save_file(tensors, str(tmp_path / "a" / "model.safetensors"))
    save_file(broken, str(tmp_path / "b" / "model.safetensors"))
    return tmp_path / "a", tmp_path / "b"


def test_a_small_checkpoint_is_folded_on_the_given_scheduler(small, capsys):
    args = ["checkpoints", *map(str, small), "--json", "--no-progress"]
    assert main([*args, "--single"]) == 1
    single = json.loads(capsys.readouterr().out)
    with distributed.LocalCluster(
        n_workers=1, threads_per_worker=2, processes=False, protocol="tcp://", dashboard_address=None
    ) as cluster:
        address = cluster.scheduler_address
        assert main([*args, "--scheduler", address]) == 1
        captured = capsys.readouterr()
        ran = set(cluster.scheduler.task_prefixes)
    assert json.loads(captured.out) == single
    assert "one process" not in captured.err
    assert f"folded on the Dask scheduler at {address}" in captured.err
    assert ran & {"rows_at", "fold_unit_at"}  # the scheduler itself ran the folds


def test_an_unreachable_scheduler_is_exit_2_naming_it(small, capsys, monkeypatch):
    monkeypatch.setattr(cli_checkpoints, "CONNECT_TIMEOUT", 2.0)
    start = time.monotonic()
    assert main(["checkpoints", *map(str, small), "--scheduler", "tcp://127.0.0.1:1", "--no-progress"]) == 2
    elapsed = time.monotonic() - start
    err = capsys.readouterr().err
    assert err.startswith("perpendis checkpoints: cannot connect to the Dask scheduler at tcp://127.0.0.1:1")
    assert "nothing answered within 2 s" in err and len(err.strip().splitlines()) == 1
    assert elapsed < 60  # refused after the connect timeout, not distributed's minutes of retries


@pytest.mark.parametrize("address", ["nowhere", "xyz://127.0.0.1:1"])
def test_a_malformed_scheduler_address_is_exit_2_at_once(small, capsys, address):
    assert main(["checkpoints", *map(str, small), "--scheduler", address, "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert f"--scheduler {address} is not a reachable scheduler address" in err
    assert len(err.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("extra", "said"),
    [
        (["--scheduler", "tcp://127.0.0.1:1", "--single"], "give one of them"),
        (["--scheduler", "tcp://127.0.0.1:1", "--workers", "2"], "--workers is for the LocalCluster"),
        (["--scheduler", "tcp://127.0.0.1:1", "--min-cluster-bytes", "0"], "--min-cluster-bytes is for the"),
        (["--single", "--workers", "2"], "--single starts none"),
        (["--single", "--min-cluster-bytes", "0"], "--single starts none"),
        (["--workers", "0"], "--workers must be at least 1"),
        (["--min-cluster-bytes", "-1"], "--min-cluster-bytes must be 0 or more"),
    ],
)
def test_options_that_cannot_apply_together_are_refused(small, capsys, extra, said):
    assert main(["checkpoints", *map(str, small), *extra, "--no-progress"]) == 2
    assert said in capsys.readouterr().err
