"""What a runner folds: the pairs of a checkpoint comparison, both checkpoints, the options
and the callbacks, in a module of its own so that the units (:mod:`.shared`), the
interface that schedules them (:mod:`.schedule`) and the runners (:mod:`.run`,
:mod:`.distributed`) all import it without importing one another in a circle."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..engine.stream import Stop
from .inputs import RANGED, Opener
from .pairs import Task
from .report import CheckpointReport, TensorRow

Done = Callable[[int], object]
"""``done(nbytes)``: called as bytes of the checkpoints are compared, for a progress bar."""


@dataclass
class Checkpoint:
    """The files of one checkpoint by their name inside it, and how to read each.

    ``paths`` gives each name's path on disk when there is one, for workers that open
    the files themselves.
    """

    names: list[str]
    open: Opener
    paths: dict[str, str] | None = None


@dataclass
class Job:
    """What a runner is given: the pairs to fold, both checkpoints and the options, where
    each row goes as it is made (in any order), and the progress and stop callbacks."""

    tasks: Sequence[Task]
    a: Checkpoint
    b: Checkpoint
    options: Mapping[str, Any]
    row: Callable[[Task, TensorRow], object]
    done: Done | None = None
    cancelled: Stop | None = None


Runner = Callable[[Job], None]
"""Folds every task of a job (:func:`perpendis.checkpoints.run.local_runner`, or
:func:`perpendis.checkpoints.distributed.dask_runner`)."""


@dataclass
class Begun:
    """A checkpoint comparison scanned and paired, its folds not run yet: a runner runs
    :attr:`job` (here, on a cluster, or stepped by the page's workers), then :meth:`finish`
    gives the report."""

    job: Job
    finish: Callable[[], CheckpointReport]


def task_bytes(task: Task) -> int:
    """Bytes a pair reads (both sides), as far as the scan knows them (for progress only)."""
    return sum(loc.end - loc.begin if loc.kind in RANGED else loc.size for loc in (task.a, task.b))


def no_report() -> CheckpointReport:
    """The ``finish`` of a fold a runner plans from a job alone: its rows go to the job's
    ``row``, and the report is made by whoever began the comparison."""
    raise RuntimeError("a runner's fold gives rows, not the report")
