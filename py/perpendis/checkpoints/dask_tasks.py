"""What a Dask worker runs for ``perpendis checkpoints --scheduler``: its tasks (fold one unit,
or whole pairs into rows) with the files opened by path on the worker, and the check that
every worker can read them.  Pickled by reference, so a worker imports this module (and
NumPy and the fold) and nothing of the client's side (:mod:`.distributed`).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import mmap
import os
from collections.abc import Callable
from functools import lru_cache
from typing import Any

import numpy as np

from ..engine.stream import map_reader
from ..errors import InputError
from ..inputs.formats.buffer import Reader
from .pairs import Task, compare_pair
from .shared import fold_unit_job

M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # glibc's mallopt parameters (malloc.h)
WORKER_MMAP_THRESHOLD = 64 * 2**20


@lru_cache(maxsize=1)
def _tune_malloc() -> bool:
    """Let glibc keep a worker's freed chunk buffers for the next chunk, as it does in a
    plain process: arrays under 64 MB come from the heap rather than fresh page-faulted
    maps, and 128 MB of free heap is kept rather than trimmed at every free.  Only glibc
    has ``mallopt``; elsewhere nothing changes."""
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name) if name else None
        mallopt = getattr(libc, "mallopt", None)
    except OSError:
        return False
    if mallopt is None:
        return False
    mapped = mallopt(M_MMAP_THRESHOLD, WORKER_MMAP_THRESHOLD)
    return bool(mapped) and bool(mallopt(M_TRIM_THRESHOLD, 2 * WORKER_MMAP_THRESHOLD))


def _mapped(path: str) -> tuple[Reader, int, mmap.mmap | None]:
    """A worker's memory map of a shard (and the map, to advise), for one task only.

    Not kept for the next task: the pages of a map count in the worker's RSS as long as
    it is mapped, and dask's memory manager reads RSS, so a worker that kept every shard
    it had read mapped would look to it as if it held that much data (half of an 8 GB
    pair per worker of two is past the 60 % target of an 11.7 GB limit, where it spills
    and collects garbage at every check).  Mapping a shard again costs microseconds; its
    pages stay in the page cache."""
    read, size = map_reader(path)
    view = read(0, 0)
    held = view.obj if isinstance(view, memoryview) else None
    return read, size, held if isinstance(held, mmap.mmap) else None


def _will_need(held: mmap.mmap | None, offset: int, length: int) -> None:
    """Ask the kernel to read a piece's bytes ahead while the fold starts on its first
    chunks: a worker whose shard is not in the page cache then waits for the disk once
    per piece rather than at every page fault."""
    if held is None or not hasattr(mmap, "MADV_WILLNEED") or length <= 0:
        return
    page = offset - offset % mmap.PAGESIZE
    held.madvise(mmap.MADV_WILLNEED, page, min(offset - page + length, len(held) - page))


def fold_unit_at(job_json: str, paths: list[str], reads: list[list[int]]) -> np.ndarray:
    """A worker's task: fold one unit, opening its files by path (``reads``: each piece's
    byte range of A then B, to read ahead); the partials packed as bytes."""
    _tune_malloc()
    files = []
    for path in paths:
        try:
            files.append(_mapped(path))
        except InputError as err:
            raise InputError(f"the worker {_worker_name()} {err.message}", where=path) from None
    for place, offset, length in reads:
        _will_need(files[place][2], offset, length)
    return fold_unit_job(job_json, [f[:2] for f in files])


def rows_at(tasks: list[Task], paths: dict[str, dict[str, str]], options: dict[str, Any]) -> list[dict[str, Any]]:
    """A worker's task of whole pairs: each pair's row made here, as :func:`local_runner`
    makes it (:func:`compare_pair`), its files opened by path; only the rows travel back,
    not the partials (a pair with millions of differing elements has a 48 MB error
    sample, which the row's percentiles are taken from here)."""
    _tune_malloc()

    def opener(side: str) -> Callable[[str], tuple[Reader, int]]:
        def open_file(file: str) -> tuple[Reader, int]:
            try:
                return _mapped(paths[side][file])[:2]
            except InputError as err:
                raise InputError(f"the worker {_worker_name()} {err.message}", where=paths[side][file]) from None

        return open_file

    open_a, open_b = opener("a"), opener("b")
    return [compare_pair(task, open_a, open_b, options).to_dict() for task in tasks]


def _worker_name() -> str:
    """This worker's address, to name it in a message; the host name outside a worker."""
    try:
        from distributed import get_worker

        return get_worker().address
    except (ImportError, ValueError):
        return os.uname().nodename


def unreadable(paths: list[str]) -> list[tuple[str, str]]:
    """Run on each worker: the paths it cannot open for reading, with why."""
    missing = []
    for path in paths:
        try:
            with open(path, "rb"):
                pass
        except OSError as err:
            missing.append((path, err.strerror or str(err)))
    return missing
