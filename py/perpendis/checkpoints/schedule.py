"""Folding a checkpoint comparison's units through one interface, wherever they are folded.

The units are defined once (:meth:`perpendis.checkpoints.shared.CheckpointFold.plan`) and
dealt once (its :class:`~perpendis.checkpoints.shared.UnitQueue`); a :class:`Folder` is
where they are folded: :class:`LocalFolder` in this process, the Dask runner's folder on a
cluster (:mod:`perpendis.checkpoints.distributed`).  :func:`run_units` submits every unit
the queue deals and takes each one's outcome back into the fold as it finishes, in any
order: the packed partials of its pieces, the rows of its whole pairs, or the bad input
that stopped it.  The page's workers fold the same units with the same queue, asked from
``app/worker.js`` through the bridge (``next_checkpoint_unit``), since their folds finish
in JavaScript's event loop, not in a Python loop.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from ..engine.stream import Cancelled
from ..errors import InputError
from ..inputs.formats.buffer import BytesLike
from .pairs import Task
from .report import TensorRow
from .shared import CheckpointFold


@dataclass(frozen=True)
class Lost:
    """A unit its folder lost before it was folded (its Dask worker died running it, the
    cluster cancelled it): nothing of it is known, so each of its pairs is a row saying it
    was not compared, and why, which a rerun with the resume file compares again."""

    why: str


Folded = BytesLike | Sequence[TensorRow] | InputError | Lost | None
"""What a unit gives back: its pieces' partials packed (:func:`~perpendis.checkpoints.shared.pack`),
the rows of its pairs when each is whole in it, the bad input that stopped it, the reason it
was lost, or None when it was folded into the fold already (in this process)."""


@dataclass(frozen=True)
class Unit:
    """Unit ``index`` of a fold, as a folder is given it: what another process is sent
    (``{"job", "files", "reads"}``; None for a unit only this process can read) and, when
    each of its pairs is whole in it, those pairs."""

    index: int
    job: dict[str, Any] | None
    whole: list[Task] | None


class Folder(Protocol):
    """Where units are folded.  ``helper``: it reads only the units a helper can read
    (:attr:`CheckpointFold.helped`)."""

    helper: bool

    def submit(self, unit: Unit) -> None:
        """Start folding ``unit`` (or queue it)."""

    def finished(self) -> Iterator[tuple[int, Folded]]:
        """Each submitted unit's index and outcome, as they finish."""

    def cancel(self) -> None:
        """Stop folding what is left."""


class LocalFolder:
    """Every unit folded in this process when asked for its outcome, one after another."""

    helper = False

    def __init__(self, fold: CheckpointFold) -> None:
        self.fold = fold
        self.waiting: list[int] = []

    def submit(self, unit: Unit) -> None:
        self.waiting.append(unit.index)

    def finished(self) -> Iterator[tuple[int, Folded]]:
        while self.waiting:
            index = self.waiting.pop(0)
            self.fold.fold_unit(index)
            yield index, None

    def cancel(self) -> None:
        self.waiting.clear()


def units(fold: CheckpointFold, helper: bool) -> Iterator[Unit]:
    """The units the queue deals a folder of that kind, in its order."""
    jobs = fold.unit_jobs() if helper else None
    while (index := fold.queue.next(helper)) is not None:
        yield Unit(index, None if jobs is None else jobs[index], fold.whole_pairs(index))


def run_units(fold: CheckpointFold, folder: Folder, cancelled: Any = None) -> bool:
    """Fold every unit the queue deals ``folder``, taking each outcome back into ``fold``;
    False when ``cancelled()`` stopped it first."""
    for unit in units(fold, folder.helper):
        folder.submit(unit)
    for index, folded in folder.finished():
        if cancelled is not None and cancelled():
            folder.cancel()
            return False
        take(fold, index, folded)
    return True


def fold_all(fold: CheckpointFold, folder: Folder, cancelled: Any = None) -> None:
    """:func:`run_units` for a runner, whose caller then reads every row: a stop between two
    units raises the same :class:`~perpendis.engine.stream.Cancelled` as one between two
    chunks, never a report short of the rows not folded."""
    if not run_units(fold, folder, cancelled):
        raise Cancelled("cancelled between two units")


def take(fold: CheckpointFold, index: int, folded: Folded) -> None:
    """One unit's outcome taken into ``fold``."""
    if folded is None:
        return
    if isinstance(folded, InputError | Lost):
        fold.fail_unit(index, folded if isinstance(folded, InputError) else folded.why)
    elif isinstance(folded, list | tuple):
        fold.take_rows(index, folded)
    else:
        fold.take_unit(index, folded)
