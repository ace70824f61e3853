"""Whole checkpoints compared tensor by tensor: did every tensor survive the conversion?

``compare_checkpoints(folder(A), folder(B), rules=[parse_rule(...)])`` scans both
(:mod:`.inputs`), pairs tensors by name after rename rules (:mod:`.rename`), folds each
pair through the streamed comparison (:mod:`.pairs`), here or on a Dask cluster
(:mod:`.distributed`), and gives a :class:`CheckpointReport` (:mod:`.report`).
"""

from .inputs import scan
from .pairs import Task, plan
from .rename import Rule, parse_rule
from .report import CheckpointReport, TensorRow
from .run import Checkpoint, Resume, compare_checkpoints, folder, local_runner, shards
from .scanned import Located, Problem, Scan

__all__ = [
    "Checkpoint",
    "CheckpointReport",
    "Located",
    "Problem",
    "Resume",
    "Rule",
    "Scan",
    "Task",
    "TensorRow",
    "compare_checkpoints",
    "folder",
    "local_runner",
    "parse_rule",
    "plan",
    "scan",
    "shards",
]
