"""The same folds on a dask.distributed cluster: each task folds a unit of byte ranges of tensor pairs.

The client scans both checkpoints and prepares each pair (headers only), then cuts the
work into *units* of about :data:`UNIT_BYTES` read, as the page does
(:class:`~perpendis.checkpoints.shared.CheckpointFold`): a big pair's byte ranges of
whole chunks, or several small pairs batched into one unit, so a checkpoint of
thousands of small tensors costs a few hundred tasks, not one per tensor.  A task is a
unit's pieces (where each tensor lies, which elements) and the absolute paths of the
files they are in: the worker memory-maps the files itself (they must be on a file
system it sees under the same paths, which is checked on every worker before any task
is sent).  A unit of pairs that are whole in it (most pairs: every one smaller than a
unit) comes back as those pairs' rows (:func:`rows_at`), made as one process makes them;
a unit holding byte ranges of a pair cut across units comes back as partials
(:func:`fold_unit_at`), which the client merges in element order and finishes there:
partials merge exactly, so each row, and the report, is the one a single process makes.

Why the cluster was slower than one process, and what this module does about it
(measured on two 2 GB float32 checkpoints, 2 cores):

- dask's nanny starts each worker with ``MALLOC_TRIM_THRESHOLD_=65536``, which turns off
  glibc's sliding mmap threshold: every chunk's temporary arrays (4-8 MB) were mapped
  fresh and faulted in page by page, 4.6x the page faults and 3.4x the system time of
  the same fold in a plain process (1.9 -> 2.95 s of CPU).  :func:`_tune_malloc` sets
  the thresholds back in each worker, once.
- one task per tensor (64 MB) paid the scheduler's round trip per tensor and left one
  worker idle at the end; units of up to 256 MB batch small tensors, and cut big ones by
  byte range, at least four per worker thread.
- each worker imported the fold's modules in its first task; :func:`warm` does it as the
  cluster starts, while the client scans.
- every partial came back to the client, whose error sample for a tensor with millions
  of differing elements is 48 MB (404 MB for the 2 GB pair), and the client took
  percentiles of each alone: 2.8 s of the client's CPU against 1.5 s of each worker's.
  Whole pairs now come back as rows, their percentiles taken on the workers.
- each worker kept every shard it had read mapped for its next task; the pages counted in
  its RSS, and dask's memory manager paused it (the 8 GB pair with 4 workers: 3.4-4.7 GB
  of RssFile per worker against a 5.8 GB limit).  A shard is now mapped for one task.
- a cluster costs its start (about 2.7 s for a 2-worker LocalCluster: imports, start,
  first task, close): :func:`reason_for_single` keeps work it cannot win back in one
  process, and says so.  An existing scheduler the user names is always used: asking
  for it is the user's decision (an external 2-worker cluster folded a 1.5 GB pair at
  0.65x one process, 8 GB at 1.37-1.76x).

Dask is an optional extra (``pip install ./py[dask]``); nothing here is imported by the
core or the page.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import CancelledError
from typing import Any

from ..errors import InputError
from .dask_tasks import fold_unit_at, rows_at, unreadable
from .job import Begun, Job, no_report, task_bytes
from .pairs import Task
from .report import TensorRow
from .schedule import Folded, Lost, Unit, fold_all
from .shared import CheckpointFold

UNIT_BYTES = 256 * 2**20
"""Most bytes of both sides read per task: about a quarter of a second of folding, so the
scheduler's few milliseconds per task are lost in it; a smaller checkpoint is cut into
at least :data:`UNITS_PER_THREAD` units per worker thread (:func:`unit_size`), down to
:data:`MIN_UNIT_BYTES`, so that no worker waits while another folds the last big unit."""

MIN_UNIT_BYTES = 32 * 2**20
UNITS_PER_THREAD = 4


def unit_size(nbytes: int, threads: int) -> int:
    """Bytes per unit for ``nbytes`` of work over ``threads`` worker threads."""
    return max(MIN_UNIT_BYTES, min(UNIT_BYTES, nbytes // max(1, UNITS_PER_THREAD * threads)))

NO_WORKER_GRACE = 30.0
"""Seconds the cluster may have no worker at all, while units wait, before every unit left
is lost (:meth:`DaskFolder._watch`): long enough for a nanny to start again the worker
it lost (a few seconds) or a cluster being resized to get its new workers, far shorter
than a user waits for a run that prints nothing."""

WATCH_SECONDS = 1.0
"""How often the client asks the scheduler how many workers it has while tasks run: a call
of a millisecond a second, from a thread of its own, so that taking each finished task is
not delayed by it."""

ALL_KINDS = ("safetensors", "npy", "gguf", "distcp", "archive")
"""Every kind of tensor is read by the workers: an archive (``.npz``, ``torch.save``) is
read whole once per worker and kept (:func:`_mapped`, and the scan's archive cache)."""

MIN_LOCAL_BYTES = 8 * 2**30
"""Bytes of both checkpoints below which a LocalCluster is not started: it costs about
2.7 s (imports 1.0, start 0.9, first task 0.3, close 0.5, measured at load 5 on 2
cores), won back at ``2.7 s / (1 / single - 1 / cluster)``: 5.6 GB with the 2-worker
cluster 2.2x one process (1134 against 2514 MB/s, 2 GB pair, load 3), 11.7 GB at 1.3x
(987 against 1278 MB/s, 8 GB pair, load 7)."""

def available() -> bool:
    """Whether dask.distributed can be imported."""
    try:
        import distributed  # noqa: F401
    except ImportError:
        return False
    return True


def reason_for_single(nbytes: int, threads: int | None, min_bytes: int) -> str | None:
    """Why the work is better folded in this process than on a cluster of ``threads``
    worker threads in all (None: not known yet), or None when the cluster may win."""
    if threads is not None and threads <= 1:
        return "a cluster of one worker thread cannot fold faster than this process"
    if nbytes < min_bytes:
        return (
            f"{nbytes / 1e9:.2f} GB is less than the {min_bytes / 1e9:.2f} GB a cluster needs "
            "to win back its start and its first tasks"
        )
    return None


def checkpoint_bytes(paths: Iterable[str]) -> int:
    """Bytes of the files at ``paths`` (those that exist): what a comparison reads at most."""
    total = 0
    for path in paths:
        try:
            total += os.stat(path).st_size
        except OSError:
            continue
    return total


async def warm() -> None:
    """Run on each worker as the cluster starts: the imports a fold needs, done while the
    client scans the checkpoints rather than in the first task (a coroutine, so that
    ``client.run(warm, wait=False)`` does not wait for it)."""
    from . import pairs, shared  # noqa: F401


def check_visible(client: Any, paths: list[str]) -> None:
    """Refuse, naming the file and the worker, when some worker cannot open a checkpoint
    file, or cannot import this package."""
    try:
        seen = client.run(unreadable, paths)
    except Exception as err:  # the worker's own error, sent back: ModuleNotFoundError, say
        raise _not_installed(err) from None
    for worker, missing in sorted(seen.items()):
        if missing:
            path, why = missing[0]
            more = f" (and {len(missing) - 1} more files)" if len(missing) > 1 else ""
            raise InputError(
                f"the Dask worker {worker} cannot read {path}: {why}{more}. Workers open the checkpoint files "
                "themselves, so every worker must see them under the same path (a shared file system)",
                where=path,
            )


class DaskFolder:
    """A :class:`~perpendis.checkpoints.schedule.Folder` on a Dask cluster: each unit one task,
    submitted at once; a unit of whole pairs comes back as their rows (:func:`rows_at`), any
    other as its pieces' partials (:func:`fold_unit_at`)."""

    helper = True  # the queue deals it the units sent out: every kind, planned with ALL_KINDS

    def __init__(self, client: Any, keys: dict[str, dict[str, str]], options: dict[str, Any]) -> None:
        from distributed import as_completed

        self.client, self.keys, self.options = client, keys, options
        self.running = as_completed()  # with untaken, the only hold on a future: each partial is let go once taken in
        self.which: dict[str, tuple[int, bool]] = {}  # future key → unit, whether it makes rows
        self.untaken: dict[str, Any] = {}  # future key → future, until its outcome is taken
        self.untaken_lock = threading.Lock()  # the watching thread reads it as it changes
        self.abandoned: str | None = None  # why every unit left was given up (:meth:`_watch`)

    def submit(self, unit: Unit) -> None:
        client, whole, job = self.client, unit.whole, unit.job
        if whole is not None:
            future = client.submit(rows_at, whole, _paths_of(whole, self.keys), self.options, pure=False)
        else:
            future = client.submit(fold_unit_at, job["job"], job["files"], job["reads"], pure=False)
        self.which[future.key] = (unit.index, whole is not None)
        with self.untaken_lock:
            self.untaken[future.key] = future
        self.running.add(future)

    def finished(self) -> Iterator[tuple[int, Folded]]:
        """Each unit's outcome as its task finishes; every unit left lost once the cluster
        has had no worker for :data:`NO_WORKER_GRACE` seconds (:meth:`_watch`)."""
        stop = threading.Event()
        threading.Thread(target=self._watch, args=(stop,), name="perpendis-worker-watch", daemon=True).start()
        try:
            for future in self.running:
                outcome = self._outcome(future)
                with self.untaken_lock:
                    del self.untaken[future.key]
                yield outcome
        finally:
            stop.set()

    def _outcome(self, future: Any) -> tuple[int, Folded]:
        """A finished task's unit and what it gave: rows, partials, the bad input that
        stopped it, or why the cluster lost it."""
        index, rows = self.which[future.key]
        try:
            data = future.result()
        except InputError as err:
            return index, err
        except Exception as err:  # a worker died, or the scheduler could not unpickle the task
            if self.abandoned is not None and isinstance(err, CancelledError):
                return index, Lost(self.abandoned)
            lost = lost_why(err)
            if lost is None:
                raise _not_installed(err) from None
            return index, Lost(lost)
        return index, [TensorRow.from_dict(r) for r in data] if rows else data

    def _watch(self, stop: threading.Event) -> None:
        """Until ``stop``, count the scheduler's workers every :data:`WATCH_SECONDS`; once
        there has been none for :data:`NO_WORKER_GRACE`, give up every unit left.

        A task waiting for a worker never finishes when none is left (the cluster scaled to
        zero, every worker dead and none restarted: Dask's ``no-workers-timeout`` is off by
        default), and the run would wait with it, silent, for ever.  It waits in two places:
        for the next task to finish, and for a finished task's result, which Dask computes
        again when the worker holding it left before the client fetched it.  Cancelling the
        futures ends both waits, so this watches from a thread rather than polling between
        tasks; a worker that comes back within the grace (a nanny starting again the worker
        it lost) resets it."""
        alone_since: float | None = None  # when the scheduler was first seen with no worker
        while not stop.wait(WATCH_SECONDS):
            now = time.monotonic()
            if self._workers() > 0:
                alone_since = None
            elif alone_since is None:
                alone_since = now
            elif now - alone_since >= NO_WORKER_GRACE:
                if not stop.is_set():
                    self._abandon(now - alone_since)
                return

    def _workers(self) -> int:
        """How many workers the scheduler has now: asked of it each time (``nthreads`` is a
        call to the scheduler, not the client's cached view of it); 0 when it does not
        answer, since a scheduler out of reach folds nothing either."""
        try:
            return len(self.client.nthreads())
        except OSError:  # CommClosedError and TimeoutError among them
            return 0

    def _abandon(self, alone: float) -> None:
        """Cancel every task not taken yet, lost since the cluster has had no worker for
        ``alone`` seconds: :meth:`finished` then takes each as lost for that reason, the run
        ends with its report (those tensors not compared), and ``--resume`` folds them later
        on a cluster with workers."""
        self.abandoned = f"no Dask worker left to fold it: every worker of the cluster died or left, for {alone:.0f} s"
        self.cancel()

    def cancel(self) -> None:
        """Cancel every task whose outcome is not taken yet: those running or waiting, and
        those finished whose result is not fetched yet (it may wait for a worker too)."""
        with self.untaken_lock:
            untaken = list(self.untaken.values())
        self.client.cancel(untaken)


def lost_why(err: BaseException) -> str | None:
    """Why a task was lost by the cluster rather than failed in its own code, in words; None
    for an error of the task itself (a bug, or a cluster without this package), which is
    raised as it is.  Dask retries a task whose worker died on another worker, up to
    ``distributed.scheduler.allowed-failures`` times; past them it is lost."""
    from distributed import KilledWorker
    from distributed.comm import CommClosedError

    if isinstance(err, KilledWorker):
        worker = getattr(err.last_worker, "address", err.last_worker)
        deaths = err.allowed_failures + 1
        return f"the Dask worker {worker} died while folding it (KilledWorker: {deaths} worker(s) died running it)"
    if isinstance(err, CancelledError | CommClosedError | OSError):  # OSError: TimeoutError, a lost connection
        said = " ".join(str(err).split())[:200] or "no message"
        return f"the Dask cluster lost its task ({type(err).__name__}: {said})"
    return None


def dask_runner(client: Any, unit_bytes: int | None = None) -> Callable[[Job], None]:
    """A :class:`~perpendis.checkpoints.run.Runner` folding on ``client``'s cluster, in units
    of ``unit_bytes`` (by default :func:`unit_size` for the work and the cluster's threads)."""

    def run(job: Job) -> None:
        if job.a.paths is None or job.b.paths is None:
            raise InputError("a Dask cluster reads checkpoints from files on disk; these were given as readers")
        keys = {"a": _absolute(job.a.paths), "b": _absolute(job.b.paths)}
        size = unit_bytes
        if size is None:
            threads = sum(w.get("nthreads", 1) for w in client.scheduler_info()["workers"].values())
            size = unit_size(sum(task_bytes(t) for t in job.tasks), threads)
        fold = CheckpointFold.plan(Begun(job, no_report), keys, size, kinds=ALL_KINDS)
        files = sorted({path for unit in fold.unit_jobs() if unit is not None for path in unit["files"]})
        if files:
            check_visible(client, files)
        fold_all(fold, DaskFolder(client, keys, dict(job.options)), job.cancelled)

    return run


def _paths_of(tasks: list[Task], keys: dict[str, dict[str, str]]) -> dict[str, dict[str, str]]:
    """The absolute paths of the files ``tasks`` read, by side and file name."""
    return {
        "a": {t.a.file: keys["a"][t.a.file] for t in tasks},
        "b": {t.b.file: keys["b"][t.b.file] for t in tasks},
    }


def _not_installed(err: Exception) -> Exception:
    """A one-line refusal when the cluster lacks this package; any other error as it is."""
    if "perpendis" not in str(err) and "deserializ" not in str(err):
        return err
    return InputError(
        f"the Dask cluster cannot run perpendis ({' '.join(str(err).split())[:200]}): install it on the "
        "scheduler and every worker, as on this machine"
    )


def _absolute(paths: Mapping[str, str]) -> dict[str, str]:
    """Each file's path made absolute here, before it is sent to workers that run elsewhere."""
    return {name: os.path.abspath(path) for name, path in paths.items()}
