"""Faults in the middle of ``perpendis checkpoints`` (issue #45): a Dask worker killed while
it folds a tensor, every worker gone (the cluster scaled to zero) or killed and started
again, and a shard cut short after the scan has read its header, before or while its
tensors are read.

Each faulted run must end with a report, never a crash nor a report that reads as whole:
exit 1 (not 0, which says every tensor was compared and passed), the tensors not compared
listed by name with why (``not compared (k): names: why``), the text's last line
``INCOMPLETE: ...`` and the JSON's ``"complete": false`` with its ``not_compared`` list.
The resume file then holds a row of every tensor that was compared and none of the rest,
so a rerun with it once the fault is gone compares exactly the rest, and its report is an
unfaulted run's.

The checkpoints are real safetensors shards (six small tensors in two shards, one of
three chunks in a third); the cluster is a real LocalCluster of two worker processes, and
the worker is killed with SIGKILL by its pid.  The tensor to lose is made to hang on the
worker that reaches it first (a wrapper put in that worker's module by ``client.run``), so
the kill always lands mid-fold; the worker the nanny starts again has no wrapper.  The cut
is a real ``os.truncate`` of the shard, made from a subprocess's progress callbacks: right
after the scan (``planned``), or after the first chunk of the big tensor is folded
(``done``); a subprocess, since a read of a memory map past the end of a file cut short
is a SIGBUS that kills the process (what this run did before: exit 135, no report).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from perpendis.checkpoints import distributed as dask_folds
from perpendis.cli.main import main

distributed = pytest.importorskip("distributed")
save_file = pytest.importorskip("safetensors.numpy").save_file

pytestmark = pytest.mark.slow
PY = Path(__file__).resolve().parent.parent / "py"
CHUNK = 1 << 20
NAMES = ["big", "t0", "t1", "t2", "t3", "t4", "t5"]

HANG = """
import json, os, time
from perpendis.checkpoints import dask_tasks as d

real = d.__dict__.setdefault("_unhung", (d.compare_pair, d.fold_unit_job))

def hang():  # the first worker to get here writes its pid and waits to be killed
    try:
        fd = os.open(FLAG, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
        return
    os.write(fd, str(os.getpid()).encode())
    os.close(fd)
    time.sleep(600)

def compare_pair(task, *args, **kwargs):
    if task.name == VICTIM:
        hang()
    return real[0](task, *args, **kwargs)

def fold_unit_job(job, files, views=None):
    if any(piece["a"]["name"] == VICTIM for piece in json.loads(job)):
        hang()
    return real[1](job, files, views)

d.compare_pair, d.fold_unit_job = compare_pair, fold_unit_job
"""

CUT = """
import os, sys
from perpendis.cli import checkpoints as cli
from perpendis.cli.main import main

shard, when, size = sys.argv[1], sys.argv[2], int(sys.argv[3])

def hooked(name):
    real = getattr(cli._Bar, name)
    def hook(self, *args):
        real(self, *args)
        if name == when and os.path.getsize(shard) != size:
            os.truncate(shard, size)
    return hook

cli._Bar.planned, cli._Bar.done = hooked("planned"), hooked("done")
sys.exit(main(sys.argv[4:]))
"""


def write(root: Path) -> tuple[Path, Path]:
    """A and B: ``t1`` differs by one ULP in a few elements (within rounding), the rest are
    equal, so a run that compares everything exits 0."""
    rng = np.random.default_rng(45)
    small = {f"t{i}": rng.standard_normal(4096).astype(np.float32) for i in range(6)}
    big = rng.standard_normal(3 * CHUNK).astype(np.float32)
    nudged = dict(small, t1=small["t1"].copy())
    nudged["t1"][::97] = np.nextafter(nudged["t1"][::97], np.float32(np.inf))
    for side, tensors in (("a", small), ("b", nudged)):
        (root / side).mkdir(parents=True, exist_ok=True)
        save_file({k: tensors[k] for k in ("t0", "t1", "t2")}, str(root / side / "s1.safetensors"))
        save_file({k: tensors[k] for k in ("t3", "t4", "t5")}, str(root / side / "s2.safetensors"))
        save_file({"big": big}, str(root / side / "big.safetensors"))
    return root / "a", root / "b"


@pytest.fixture(scope="module")
def pristine(tmp_path_factory):
    """The checkpoints as written, and the report of a run that compared everything."""
    a, b = write(tmp_path_factory.mktemp("pristine"))
    out = subprocess.run(
        [sys.executable, "-m", "perpendis", "checkpoints", str(a), str(b), "--single", "--json", "--no-progress"],
        capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(PY)}, check=False, timeout=120,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["complete"] and report["not_compared"] == []
    assert sorted(r["name"] for r in report["tensors"]) == NAMES
    assert {r["name"]: r["verdict"] for r in report["tensors"]}["t1"] == "rounding"
    return a.parent, report


@pytest.fixture
def copy(pristine, tmp_path):
    """A fresh copy of the checkpoints to break."""
    shutil.copytree(pristine[0], tmp_path / "ck")
    return tmp_path / "ck"


@pytest.fixture(scope="module")
def cluster():
    with (
        distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as c,
        distributed.Client(c) as client,
    ):
        yield c, client


def rows(report: dict) -> list[dict]:
    return sorted(report["tensors"], key=lambda r: r["name"])


def check_incomplete(code: int, out: str, as_json: bool, lost: list[str], why: str) -> list[str]:
    """The faulted run's report names exactly ``lost`` as not compared, with ``why``, and
    reads as incomplete; the lines that say so."""
    assert code == 1, out  # not 0: not every tensor was compared
    if as_json:
        report = json.loads(out)
        assert report["complete"] is False
        assert [n["name"] for n in report["not_compared"]] == lost
        assert all(why in n["why"] for n in report["not_compared"])
        assert report["summary"]["not_compared"] == len(lost) and report["summary"]["tensors"] == len(NAMES)
        compared = [r["name"] for r in report["tensors"] if r["verdict"] != "error"]
        assert sorted(compared + lost) == NAMES
        return [f"not compared: {n['name']}: {n['why']}" for n in report["not_compared"]]
    lines = out.splitlines()
    said = [line for line in lines if line.startswith("not compared (")]
    assert len(said) == 1 and said[0].startswith(f"not compared ({len(lost)}): {', '.join(lost)}: ") and why in said[0]
    assert f"{len(lost)} not compared;" in lines[-2]
    assert lines[-1].startswith(f"INCOMPLETE: {len(lost)} of {len(NAMES)} tensors were not compared")
    return [*said, lines[-1]]


def check_resumed(code: int, out: str, err: str, pristine_report: dict, earlier: int) -> None:
    """The rerun with the resume file compared only the rest, and its report is an unfaulted run's."""
    assert code == 0, err
    report = json.loads(out)
    assert report["complete"] is True and report["not_compared"] == []
    assert rows(report) == rows(pristine_report)
    assert f"{earlier} tensor(s) were compared by an earlier run (resume.jsonl)" in report["notes"]
    assert "not compared" not in err


def resume_rows(path: Path) -> list[str]:
    return sorted(json.loads(line)["row"]["name"] for line in path.read_text().splitlines())


def sigkill(pid: int) -> None:
    os.kill(pid, signal.SIGKILL)


class Killer:
    """Kills the worker that wrote its pid in ``flag``, as soon as it does (``act``, by
    default SIGKILL by its pid)."""

    def __init__(self, flag: Path, act: Callable[[int], object] = sigkill) -> None:
        self.flag, self.act, self.stop, self.killed = flag, act, threading.Event(), None
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self) -> None:
        while not self.stop.is_set():
            if self.flag.exists() and self.flag.read_text():
                self.killed = int(self.flag.read_text())
                self.act(self.killed)
                return
            time.sleep(0.02)

    def join(self) -> None:
        self.stop.set()
        self.thread.join()


def killed_run(
    cluster, monkeypatch, ck: Path, victim: str, flag: Path, extra: list[str], act: Callable[[int], object] = sigkill
) -> tuple[int, Killer]:
    """The CLI on the cluster, ``victim`` hung on the first worker to reach it and that
    worker killed (or ``act`` done); units of one small pair each, the big one cut in three."""
    c, client = cluster
    client.wait_for_workers(2, timeout=60)
    client.run(exec, HANG, {"FLAG": str(flag), "VICTIM": victim})
    monkeypatch.setattr(dask_folds, "MIN_UNIT_BYTES", 1)
    monkeypatch.setattr(dask_folds, "UNIT_BYTES", 40_000)
    killer = Killer(flag, act)
    try:
        code = main(["checkpoints", str(ck / "a"), str(ck / "b"), "--scheduler", c.scheduler_address,
                     "--no-progress", *extra])  # fmt: skip
    finally:
        killer.join()
    return code, killer


REPORTED: dict[str, list[str]] = {}
"""What each fault case reported: its exit code and the lines saying what was not compared."""


@pytest.fixture(scope="module", autouse=True)
def said():
    """Every fault case's report, printed once the module is done (seen with ``-s``)."""
    yield
    for case, lines in REPORTED.items():
        print(f"\n{case}:", *lines, sep="\n  ")


@pytest.mark.parametrize("victim", ["t4", "big"])  # a unit of whole pairs (rows back), one share of a cut pair
def test_a_worker_killed_with_its_task_leaves_its_tensors_not_compared_and_resume_finishes(
    pristine, copy, cluster, monkeypatch, capsys, victim
):
    c, _ = cluster
    monkeypatch.setattr(c.scheduler, "allowed_failures", 0)  # no retry: the kill loses the task
    resume = copy / "resume.jsonl"
    for as_json in (False, True):
        resume.unlink(missing_ok=True)
        flag = copy / f"hung-{as_json}"
        code, killer = killed_run(cluster, monkeypatch, copy, victim, flag, ["--resume", str(resume)]
                                  + (["--json"] if as_json else []))  # fmt: skip
        captured = capsys.readouterr()
        assert killer.killed is not None, "the hung worker was never killed"
        # The dead worker's other tasks (queued behind the hung one) are lost with it: the
        # tensors not compared are exactly those the resume file has no row of, the hung one among them.
        lost = [n for n in NAMES if n not in resume_rows(resume)]
        assert victim in lost and len(lost) < len(NAMES)
        said = check_incomplete(code, captured.out, as_json, lost, "died while folding it (KilledWorker")
        assert all("the Dask worker tcp://" in line for line in said[:-1])
        assert f"{len(lost)} of 7 tensors were not compared; run the same command again (--resume {resume})" in (
            captured.err
        )
        REPORTED[f"killed worker, {victim}, {'json' if as_json else 'text'}"] = [f"exit {code}", *said]
    monkeypatch.setattr(c.scheduler, "allowed_failures", 3)
    code = main(["checkpoints", str(copy / "a"), str(copy / "b"), "--scheduler", c.scheduler_address,
                 "--no-progress", "--json", "--resume", str(resume)])  # fmt: skip
    captured = capsys.readouterr()
    check_resumed(code, captured.out, captured.err, pristine[1], earlier=len(NAMES) - len(lost))


def test_a_worker_killed_once_is_retried_by_dask_and_nothing_is_lost(pristine, copy, cluster, monkeypatch, capsys):
    """Dask's default: a task whose worker died runs again on another (up to
    ``allowed-failures`` times), so one death costs time, not tensors."""
    c, _ = cluster
    monkeypatch.setattr(c.scheduler, "allowed_failures", 3)
    code, killer = killed_run(cluster, monkeypatch, copy, "t4", copy / "hung", ["--json"])
    captured = capsys.readouterr()
    assert killer.killed is not None
    report = json.loads(captured.out)
    assert code == 0 and report["complete"] is True and rows(report) == rows(pristine[1])
    REPORTED["killed worker, retried"] = [f"exit {code}", f"complete: {report['complete']}"]


def test_every_worker_killed_and_started_again_within_the_grace_loses_nothing(
    pristine, copy, cluster, monkeypatch, capsys
):
    """Every worker killed at once, each started again by its nanny: the cluster has no
    worker for a moment (the count of 0 is seen), shorter than the grace, so nothing is
    given up, Dask runs the tasks again on the new workers, and the run is whole."""
    c, client = cluster
    monkeypatch.setattr(c.scheduler, "allowed_failures", 3)
    monkeypatch.setattr(dask_folds, "NO_WORKER_GRACE", 20.0)
    monkeypatch.setattr(dask_folds, "WATCH_SECONDS", 0.1)
    seen: list[int] = []
    count = dask_folds.DaskFolder._workers
    monkeypatch.setattr(dask_folds.DaskFolder, "_workers", lambda self: seen.append(count(self)) or seen[-1])
    client.wait_for_workers(2, timeout=60)
    pids = list(client.run(os.getpid).values())

    def kill_all(_pid: int) -> None:
        for pid in pids:
            sigkill(pid)

    code, killer = killed_run(cluster, monkeypatch, copy, "t5", copy / "hung", ["--json"], kill_all)
    captured = capsys.readouterr()
    assert killer.killed is not None
    assert 0 in seen and seen[-1] > 0, seen
    report = json.loads(captured.out)
    assert code == 0 and report["complete"] is True and rows(report) == rows(pristine[1])
    client.wait_for_workers(2, timeout=60)
    REPORTED["every worker killed, started again"] = [f"exit {code}", f"workers seen: {seen}"]


def retire_all_once_the_rest_is_compared(cluster, resume: Path, victim: str) -> Callable[[int], object]:
    """What to do once ``victim`` hangs: wait until the resume file holds a row of every
    other tensor (30 s at most), then scale ``cluster`` to zero workers for good (the hung
    worker's nanny kills it after its 4 s grace)."""

    def act(_pid: int) -> None:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and (not resume.exists() or len(resume_rows(resume)) < len(NAMES) - 1):
            time.sleep(0.05)
        cluster.scale(0)

    return act


def test_every_worker_gone_mid_run_leaves_the_rest_not_compared_and_resume_finishes(
    pristine, copy, cluster, monkeypatch, capsys
):
    """A cluster scaled to zero while ``t5`` is folded (its worker's task hung; the last
    unit dealt, so none waits behind it) keeps no worker and starts none: its task waits
    for one for ever (Dask's ``no-workers-timeout`` is off by default).  Before the client
    counted the workers, the run waited with it, silent: this test, run without the count,
    still waited in ``for future in as_completed(...)`` 90 s on, when ``timeout 120`` ended
    it.  Now once the cluster has had no worker for ``NO_WORKER_GRACE`` (2 s here) every
    unit left is lost and the run ends with its report, about 3 s after the workers left;
    a rerun with the resume file on a cluster with workers (the module's) compares the rest."""
    monkeypatch.setattr(dask_folds, "NO_WORKER_GRACE", 2.0)
    resume = copy / "resume.jsonl"
    why = "no Dask worker left to fold it: every worker of the cluster died or left, for 2 s"
    with (
        distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as doomed,
        distributed.Client(doomed) as client,
    ):
        for as_json in (False, True):
            resume.unlink(missing_ok=True)
            doomed.scale(2)  # the first run's workers are gone: two new ones
            flag = copy / f"hung-{as_json}"
            act = retire_all_once_the_rest_is_compared(doomed, resume, "t5")
            code, killer = killed_run((doomed, client), monkeypatch, copy, "t5", flag,
                                      ["--resume", str(resume)] + (["--json"] if as_json else []), act)  # fmt: skip
            captured = capsys.readouterr()
            assert killer.killed is not None, "t5 was never reached"
            assert client.nthreads() == {}, "a worker was left"
            assert resume_rows(resume) == NAMES[:-1]
            said = check_incomplete(code, captured.out, as_json, ["t5"], why)
            assert "1 of 7 tensors were not compared; run the same command again (--resume" in captured.err
            REPORTED[f"every worker gone, {'json' if as_json else 'text'}"] = [f"exit {code}", *said]
    c, _ = cluster
    code = main(["checkpoints", str(copy / "a"), str(copy / "b"), "--scheduler", c.scheduler_address,
                 "--no-progress", "--json", "--resume", str(resume)])  # fmt: skip
    captured = capsys.readouterr()
    check_resumed(code, captured.out, captured.err, pristine[1], earlier=len(NAMES) - 1)


CUTS = {  # case: shard cut, when, to how many bytes, the tensors lost, why
    "after the scan": ("s2.safetensors", "planned", 200, ["t3", "t4", "t5"], "is 200 bytes now"),
    "mid-read": ("big.safetensors", "done", 5_000_000, ["big"], "is 5000000 bytes now"),
}


# Not mid-read on a cluster: the client hears of progress only as units come back, so it
# has no moment inside a worker's read to cut at (the worker reads through the same map reader).
@pytest.mark.parametrize(("case", "where"), [("after the scan", "single"), ("mid-read", "single"),
                                             ("after the scan", "dask")])  # fmt: skip
def test_a_shard_cut_short_mid_run_leaves_its_tensors_not_compared_and_resume_finishes(
    pristine, copy, cluster, case, where
):
    shard, when, size, lost, why = CUTS[case]
    c, _ = cluster
    runner = ["--single"] if where == "single" else ["--scheduler", c.scheduler_address]
    resume = copy / "resume.jsonl"
    env = {**os.environ, "PYTHONPATH": str(PY)}
    args = ["checkpoints", str(copy / "a"), str(copy / "b"), "--no-progress", "--resume", str(resume), *runner]
    for as_json in (False, True):
        resume.unlink(missing_ok=True)
        shutil.copy(pristine[0] / "b" / shard, copy / "b" / shard)
        cut = [sys.executable, "-c", CUT, str(copy / "b" / shard), when, str(size), *args]
        out = subprocess.run(cut + (["--json"] if as_json else []), capture_output=True, text=True, env=env,
                             check=False, timeout=300)  # fmt: skip
        assert out.returncode != -signal.SIGBUS, "a read past the end of the cut shard killed the run"
        said = check_incomplete(out.returncode, out.stdout, as_json, lost, f"b: {shard} {why}")
        assert resume_rows(resume) == [n for n in NAMES if n not in lost]
        REPORTED[f"cut {shard} {case}, {where}, {'json' if as_json else 'text'}"] = [f"exit {out.returncode}", *said]
    shutil.copy(pristine[0] / "b" / shard, copy / "b" / shard)  # the fault is gone
    out = subprocess.run([sys.executable, "-m", "perpendis", *args, "--json"], capture_output=True, text=True,
                         env=env, check=False, timeout=300)  # fmt: skip
    check_resumed(out.returncode, out.stdout, out.stderr, pristine[1], earlier=len(NAMES) - len(lost))
