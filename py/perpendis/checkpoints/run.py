"""Comparing two whole checkpoints: scan both, pair the tensors, fold each pair, gather the rows.

The folds run in this process (:func:`local_runner`) or on a Dask cluster
(:func:`perpendis.checkpoints.distributed.dask_runner`); either way a row is the fold of
the same chunks, merged exactly, so the report is the same.  Rows are written to a
resume file (JSON lines) as they come, and a rerun with the same file skips every pair
whose row it holds for the same files and options.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from ..engine.stream import Stop, map_reader
from ..errors import InputError
from ..inputs.formats.buffer import Reader
from .contents import contents
from .inputs import scan
from .job import Begun, Checkpoint, Done, Job, Runner, no_report, task_bytes
from .pairs import Task, plan
from .rename import Rule
from .report import CheckpointReport, TensorRow
from .schedule import LocalFolder, fold_all
from .shared import CheckpointFold


def folder(path: str | Path) -> Checkpoint:
    """A checkpoint on disk: a folder (its files, by path inside it) or a single file."""
    path = Path(path)
    if path.is_file():
        return shards([path])
    if not path.is_dir():
        raise InputError(f"{path} is neither a folder nor a file", where=str(path))
    names = sorted(
        str(p.relative_to(path).as_posix()) for p in path.rglob("*") if p.is_file() or (p.is_symlink() and p.exists())
    )
    return _mapped({name: str(path / name) for name in names})


def shards(files: Iterable[str | Path]) -> Checkpoint:
    """A checkpoint given as a list of shard files (named by their file names)."""
    paths: dict[str, str] = {}
    for f in files:
        name = Path(f).name
        if name in paths:
            raise InputError(f"two shards are named {name}: {paths[name]} and {f}", where=str(f))
        paths[name] = str(f)
    return _mapped(paths)


def _mapped(paths: dict[str, str]) -> Checkpoint:
    opened: dict[str, tuple[Reader, int]] = {}

    def open_file(name: str) -> tuple[Reader, int]:
        if name not in opened:
            if name not in paths:
                raise InputError(f"{name} is not in the checkpoint", where=name)
            try:
                opened[name] = map_reader(paths[name])
            except InputError as err:
                raise InputError(err.message, where=name) from None
        return opened[name]

    return Checkpoint(sorted(paths), open_file, paths)


def local_runner(job: Job) -> None:
    """Every task folded here, through the same units and the same interface as on a
    cluster or in the page (:func:`~perpendis.checkpoints.schedule.run_units`): each pair
    whole in its unit, read chunk by chunk, its progress told chunk by chunk and
    ``job.cancelled`` asked before each chunk; a stop between two units is the same
    :class:`~perpendis.engine.stream.Cancelled` as one between two chunks."""
    fold = CheckpointFold.whole(Begun(job, no_report))
    fold_all(fold, LocalFolder(fold), job.cancelled)


class Resume:
    """Rows already made, read from a JSON-lines file, and each new row appended to it."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.rows: dict[str, TensorRow] = {}
        if self.path.exists():
            for line in self.path.read_text(encoding="utf-8").splitlines():
                try:
                    entry = json.loads(line)
                    self.rows[entry["fingerprint"]] = TensorRow.from_dict(entry["row"])
                except (json.JSONDecodeError, KeyError, TypeError):
                    continue  # the line an interrupted run was writing
        self._file = self.path.open("a", encoding="utf-8")

    def put(self, fingerprint: str, row: TensorRow) -> None:
        self._file.write(json.dumps({"fingerprint": fingerprint, "row": row.to_dict()}, allow_nan=False) + "\n")
        self._file.flush()
        os.fsync(self._file.fileno())

    def close(self) -> None:
        self._file.close()


def begin_checkpoints(
    a: Checkpoint,
    b: Checkpoint,
    *,
    rules: Sequence[Rule] = (),
    preset: str | None = None,
    atol: float | None = None,
    rtol: float | None = None,
    depth: float = 1.0,
    done: Done | None = None,
    planned: Callable[[int, int], object] | None = None,
    cancelled: Stop | None = None,
    resume: Resume | None = None,
) -> Begun:
    """A comparison of every tensor of A against B's of the same name (after ``rules``), up to its folds.

    ``planned(n_tasks, n_bytes)`` is told what is left to compare once the checkpoints
    are scanned (after the rows ``resume`` already holds), ``done`` as it is compared.
    """
    for side, checkpoint in (("A", a), ("B", b)):
        refusal = contents(checkpoint.names).refusal(side)
        if refusal is not None:
            raise InputError(refusal, side=side)
    scan_a, scan_b = scan(a.names, a.open), scan(b.names, b.open)
    paired = plan(scan_a, scan_b, rules)
    options = {"preset": preset, "atol": atol, "rtol": rtol, "depth": depth}
    rows = list(paired.blocked)
    todo = []
    for task in paired.tasks:
        kept = resume.rows.get(task.fingerprint(options)) if resume is not None else None
        if kept is not None:
            rows.append(kept)
        else:
            todo.append(task)
    if planned is not None:
        planned(len(todo), sum(task_bytes(t) for t in todo))

    def row(task: Task, made: TensorRow) -> None:
        rows.append(made)
        if resume is not None and made.verdict != "error":
            resume.put(task.fingerprint(options), made)

    def finish() -> CheckpointReport:
        for side, found in (("a", scan_a), ("b", scan_b)):
            for problem in found.problems:
                problem.side = side
        problems = [*scan_a.problems, *scan_b.problems]
        notes = [f"A: {n}" for n in scan_a.notes] + [f"B: {n}" for n in scan_b.notes]
        if not paired.tasks and not paired.blocked:
            notes.append("no tensor name is in both checkpoints: give rename rules that bring them to one naming")
        if resume is not None and len(todo) < len(paired.tasks):
            earlier = len(paired.tasks) - len(todo)
            notes.append(f"{earlier} tensor(s) were compared by an earlier run ({resume.path.name})")
        return CheckpointReport(rows, paired.only_a, paired.only_b, problems, notes)

    return Begun(Job(todo, a, b, options, row, done, cancelled), finish)


def compare_checkpoints(
    a: Checkpoint, b: Checkpoint, *, runner: Runner = local_runner, **options: Any
) -> CheckpointReport:
    """Every tensor of A against B's of the same name, folded by ``runner``; ``options`` are
    :func:`begin_checkpoints`'s (rename rules, tolerance, progress, resume)."""
    begun = begin_checkpoints(a, b, **options)
    runner(begun.job)
    return begun.finish()
