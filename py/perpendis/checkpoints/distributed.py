"""The same folds on a dask.distributed cluster: each task folds a share of one tensor pair.

The client scans both checkpoints and prepares each pair (headers only), then cuts each
pair into shares of whole chunks (:meth:`~perpendis.compare.Prepared.shares`).  A task
is a share and where the two tensors lie: the worker memory-maps the shards itself
(they must be on a file system it sees under the same paths), folds its chunks and
returns the partial as bytes (:func:`~perpendis.compare.partial_to_bytes`).  The client
merges a pair's partials in element order, as the page's split fold does, and finishes
the row there: partials merge exactly, so each row, and the report, is the one a single
process makes.

Dask is an optional extra (``pip install ./py[dask]``); nothing here is imported by the
core or the page.
"""

from __future__ import annotations

import math
import mmap
from collections.abc import Callable
from functools import lru_cache
from typing import Any

import numpy as np

from ..compare import CHUNK, Share, partial_from_bytes, partial_to_bytes
from ..errors import InputError
from ..formats.buffer import Reader
from ..stream import map_reader
from .inputs import Located
from .pairs import Task, error_row, fold_located, merged_row, prepare_pair, sources
from .report import TensorRow
from .run import Job, task_bytes

SHARE_ELEMENTS = 32 * CHUNK
"""Most elements in one task: a 4 GB tensor is folded by many workers, and a lost worker
costs little to redo; small tensors are one task each."""


def available() -> bool:
    """Whether dask.distributed can be imported."""
    try:
        import distributed  # noqa: F401
    except ImportError:
        return False
    return True


@lru_cache(maxsize=64)
def _mapped(path: str) -> tuple[Reader, int, mmap.mmap | None]:
    """A worker's memory map of a shard (and the map, to advise), kept for its next task on the same shard."""
    read, size = map_reader(path)
    view = read(0, 0)
    held = view.obj if isinstance(view, memoryview) else None
    return read, size, held if isinstance(held, mmap.mmap) else None


def _will_need(file: tuple[Reader, int, mmap.mmap | None], loc: Located, share: Share) -> None:
    """Ask the kernel to read a share's bytes of one tensor ahead, while the fold starts on
    the first chunks: a worker whose shard is not in the page cache then waits for the disk
    once per share rather than at every page fault."""
    held = file[2]
    if held is None or not hasattr(mmap, "MADV_WILLNEED") or loc.kind not in ("safetensors", "npy"):
        return
    itemsize = (loc.end - loc.begin) // max(1, math.prod(loc.shape)) if loc.kind == "safetensors" else 0
    if not itemsize:
        return
    start = loc.begin + share.start * itemsize
    page = start - start % mmap.PAGESIZE
    held.madvise(mmap.MADV_WILLNEED, page, start - page + (share.stop - share.start) * itemsize)


def fold_share(share_json: str, a: Located, path_a: str, b: Located, path_b: str) -> np.ndarray:
    """A worker's task: fold one share of a pair, reading both tensors through memory maps."""
    import json

    share = Share(**json.loads(share_json))
    file_a, file_b = _mapped(path_a), _mapped(path_b)
    for file, loc in ((file_a, a), (file_b, b)):
        _will_need(file, loc, share)
    return partial_to_bytes(fold_located(share, a, file_a[:2], b, file_b[:2]))


def dask_runner(client: Any, share_elements: int = SHARE_ELEMENTS) -> Callable[[Job], None]:
    """A :class:`~perpendis.checkpoints.run.Runner` folding on ``client``'s cluster."""

    def run(job: Job) -> None:
        from distributed import as_completed

        a, b, row, done, cancelled = job.a, job.b, job.row, job.done, job.cancelled
        if a.paths is None or b.paths is None:
            raise InputError("a Dask cluster reads checkpoints from files on disk; these were given as readers")
        pending: dict[int, dict[str, Any]] = {}
        # Futures are held by the as_completed iterator alone, so each partial is released on
        # its worker once read here, rather than all of them held until the last one.
        running = as_completed()
        where: dict[str, tuple[int, int, float]] = {}  # future key → pair, share, bytes
        for i, task in enumerate(job.tasks):
            try:
                sa, sb = sources(task, a.open, b.open)
                prepared = prepare_pair(task, sa, sb, job.options)
            except InputError as err:
                row(task, error_row(task, err))
                continue
            if isinstance(prepared, TensorRow):
                row(task, prepared)
                continue
            count = max(1, math.ceil(prepared.size / share_elements))
            shares = prepared.shares(count) if prepared.size else []
            state = {"task": task, "sources": (sa, sb), "prepared": prepared, "parts": [None] * len(shares)}
            pending[i] = state
            if not shares:  # an empty tensor: its fold is the empty partial
                state["parts"] = [prepared.fold()]
                _finish(state, row)
                del pending[i]
                continue
            per_share = task_bytes(task) / len(shares)
            for k, share in enumerate(shares):
                future = client.submit(
                    fold_share, share.to_json(), task.a, a.paths[task.a.file], task.b, b.paths[task.b.file], pure=False
                )
                where[future.key] = (i, k, per_share)
                running.add(future)
        for future in running:
            if cancelled is not None and cancelled():
                client.cancel([future, *running.futures])
                return
            i, k, per_share = where[future.key]
            state = pending.get(i)
            try:
                data = future.result()
            except InputError as err:
                if state is not None:
                    row(state["task"], error_row(state["task"], err))
                    del pending[i]
                continue
            if done is not None:
                done(int(per_share))
            if state is None:
                continue
            state["parts"][k] = partial_from_bytes(data)
            if all(p is not None for p in state["parts"]):
                _finish(state, row)
                del pending[i]

    return run


def _finish(state: dict[str, Any], row: Callable[[Task, TensorRow], object]) -> None:
    """Merge a pair's partials in element order and make its row."""
    sa, sb = state["sources"]
    row(state["task"], merged_row(state["task"], sa, sb, state["prepared"], state["parts"]))
