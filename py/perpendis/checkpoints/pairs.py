"""Pairing two scanned checkpoints by name, and one pair's comparison as a fold over its chunks.

Each pair goes through the streamed comparison of :mod:`perpendis.stream` (the same
fold over aligned chunks as every comparison, here read from a shard at the tensor's
offset), so a tensor's row is the one a comparison of the two tensors alone would give.
The fold can run whole (:func:`compare_pair`) or in shares folded elsewhere and merged
(:mod:`.distributed`); :func:`finish_row` makes the row either way.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from functools import reduce
from typing import Any

from ..engine.compare import Prepared
from ..engine.fold.chunk import CHUNK
from ..engine.fold.partial import Partial
from ..engine.fold.share import Share
from ..engine.options import ComparisonOptions
from ..engine.stream import Source, Stop, _chunks, prepare_sources
from ..errors import InputError
from ..inputs.formats.buffer import Reader
from ..numerics.bits import format_of
from ..report.headline import main_finding
from ..report.model import Report, plain
from .inputs import open_tensor
from .quantised import grid_row, quantised_side
from .rename import Rule, keyed
from .report import TensorRow
from .scanned import Located, Scan

Opener = Callable[[str], tuple[Reader, int]]
Progress = Callable[[float], object]


@dataclass(frozen=True)
class Task:
    """One pair of tensors to compare: the shared name and where each side lies."""

    name: str
    a: Located
    b: Located

    def fingerprint(self, options: Mapping[str, Any]) -> str:
        """What the pair's row depends on, as text: a resumed run reuses a row only when it matches."""
        return json.dumps([self.name, asdict(self.a), asdict(self.b), dict(sorted(options.items()))])


@dataclass
class Plan:
    """The pairs to compare, the rows already known (tensors that cannot be read), the unpaired."""

    tasks: list[Task]
    blocked: list[TensorRow]
    only_a: list[str]
    only_b: list[str]


def plan(a: Scan, b: Scan, rules: Sequence[Rule] = ()) -> Plan:
    """Pair the tensors of two checkpoints by their names after ``rules``, in name order."""
    names_a, names_b = [*a.tensors, *a.blocked], [*b.tensors, *b.blocked]
    keys_a, clash_a = keyed(names_a, rules)
    keys_b, clash_b = keyed(names_b, rules)
    blocked: list[TensorRow] = []
    for side, clashes in (("A", clash_a), ("B", clash_b)):
        for key, names in clashes:
            message = f"{side}'s tensors {', '.join(names)} are all renamed to {key!r}, so none of them is paired"
            blocked.append(TensorRow(key, None, None, "error", message))
    tasks = []
    for key in sorted(keys_a.keys() & keys_b.keys()):
        na, nb = keys_a[key], keys_b[key]
        if na in a.blocked or nb in b.blocked:
            why = f"A: {a.blocked[na]}" if na in a.blocked else f"B: {b.blocked[nb]}"
            blocked.append(TensorRow(key, na, nb, "error", why))
        else:
            tasks.append(Task(key, a.tensors[na], b.tensors[nb]))
    for key in sorted(keys_a.keys() - keys_b.keys()):
        if keys_a[key] in a.blocked:
            blocked.append(TensorRow(key, keys_a[key], None, "error", f"A: {a.blocked[keys_a[key]]}"))
    for key in sorted(keys_b.keys() - keys_a.keys()):
        if keys_b[key] in b.blocked:
            blocked.append(TensorRow(key, None, keys_b[key], "error", f"B: {b.blocked[keys_b[key]]}"))
    only_a = [keys_a[k] for k in sorted(keys_a.keys() - keys_b.keys()) if keys_a[k] not in a.blocked]
    only_b = [keys_b[k] for k in sorted(keys_b.keys() - keys_a.keys()) if keys_b[k] not in b.blocked]
    return Plan(tasks, blocked, only_a, only_b)


def sources(task: Task, open_a: Opener, open_b: Opener) -> tuple[Source, Source]:
    """Both tensors of a pair as sources read through their files' readers."""
    return open_tensor(task.a, *open_a(task.a.file), "a"), open_tensor(task.b, *open_b(task.b.file), "b")


def prepare_pair(task: Task, sa: Source, sb: Source, options: Mapping[str, Any], cancelled: Stop | None = None):
    """The pair's comparison up to its fold, or its row when there is nothing to fold
    (shapes that differ: a tensor of a checkpoint is never transposed or broadcast)."""
    if sa.shape != sb.shape:
        same = "the same number of elements, " if sa.size == sb.size else ""
        message = f"A has shape {list(sa.shape)} and B {list(sb.shape)} ({same}not one tensor)"
        return _row(task, sa, sb, "investigate", message)
    if quantised_side(sa, sb) is not None:  # judged against its grid, here: no fold
        return grid_row(task, sa, sb, _row(task, sa, sb, "converted", ""))
    return prepare_sources(sa, sb, ComparisonOptions.of(options), cancelled=cancelled)


def compare_pair(
    task: Task,
    open_a: Opener,
    open_b: Opener,
    options: Mapping[str, Any],
    *,
    progress: Progress | None = None,
    cancelled: Stop | None = None,
) -> TensorRow:
    """One pair's row, folded here; bad input (a file changed since the scan) is an error row."""
    try:
        sa, sb = sources(task, open_a, open_b)
        prepared = prepare_pair(task, sa, sb, options, cancelled)
        if isinstance(prepared, TensorRow):
            return prepared
        return finish_row(task, sa, sb, prepared, prepared.fold(progress=progress))
    except InputError as err:
        return error_row(task, err)


def fold_located(
    share: Share, a: Located, file_a: tuple[Reader, int], b: Located, file_b: tuple[Reader, int]
) -> Partial:
    """The partial of one share of a pair, by a worker that opens both tensors itself from
    where the scan located them (``file_a``, ``file_b``: their files' ``(read, size)``)."""
    sa, sb = open_tensor(a, *file_a, "a"), open_tensor(b, *file_b, "b")
    return share.fold_chunks(_chunks(sa, sb, format_of(share.fmt), CHUNK, None, share.start, share.stop))


def merged_row(task: Task, sa: Source, sb: Source, prepared: Prepared, parts: Sequence[Partial]) -> TensorRow:
    """The row of a pair folded in shares: their partials (in element order) merged, as
    the page's split fold merges them, then :func:`finish_row`."""
    merged = reduce(lambda acc, p: acc.merge(p), parts[1:], parts[0]) if parts else None
    return finish_row(task, sa, sb, prepared, merged)


def error_row(task: Task, err: InputError | str) -> TensorRow:
    """The row of a pair that could not be compared: a file changed or broken since the scan
    (``err``), or why its fold was lost (a worker that died)."""
    return TensorRow(task.name, task.a.name, task.b.name, "error", str(err), task.a.file, task.b.file)


def finish_row(task: Task, sa: Source, sb: Source, prepared: Prepared, partial: Any) -> TensorRow:
    """The row of a pair from the merged partial of all its elements."""
    report = prepared.finish(partial)
    verdict, description = verdict_of(report)
    row = _row(task, sa, sb, verdict, description)
    figures = plain(report.to_dict())
    tol = report.tolerance
    row.n_bitwise_diff = report.n_bitwise_diff
    row.max_ulp = report.max_ulp
    row.max_abs_diff = figures["max_abs_diff"]
    row.max_rel_diff = figures["max_rel_diff"]
    row.fraction_fail = None if tol is None else tol.fraction_fail
    finding = main_finding([f for f in report.findings if f.kind != "dtype"])
    row.finding = None if finding is None else finding.message
    return row


def _row(task: Task, sa: Source, sb: Source, verdict: str, description: str) -> TensorRow:
    return TensorRow(
        name=task.name,
        a_name=task.a.name,
        b_name=task.b.name,
        verdict=verdict,
        description=description,
        file_a=task.a.file,
        file_b=task.b.file,
        dtype_a=sa.header.format,
        dtype_b=sb.header.format,
        shape_a=list(sa.shape),
        shape_b=list(sb.shape),
        n_elements=sa.size if sa.shape == sb.shape else 0,
        bytes_compared=sa.header.nbytes + sb.header.nbytes if sa.shape == sb.shape else 0,
    )


def verdict_of(report: Report) -> tuple[str, str]:
    """The row's verdict and its words.

    A checkpoint converted to another dtype is expected to differ in dtype, so the
    comparison's finding that the dtypes differ does not make a row "investigate" by
    itself.  Two tensors of different dtypes whose comparison in the narrower one is
    bit for bit equal are a conversion, recognised as such: every element of the
    narrower float is the wider one's rounded to nearest, ties to even (the rounding the
    comparison applies), or for integers the same values.  A NaN is a NaN whatever its
    payload (torch writes every bfloat16 NaN as 0xFFFF, the rounding gives 0x7FC0).
    """
    findings = [f for f in report.findings if f.kind != "dtype"]
    finding = main_finding(findings)
    if report.identical:
        return "identical", "bit for bit"
    if report.compared_shape is None:
        return "investigate", "not compared" if finding is None else finding.message
    nan_bits = _nan_payloads(report)
    if report.n_bitwise_diff == nan_bits and report.shape_match:
        fmt = format_of(report.compared_as)
        if fmt.is_float:
            payloads = f" ({nan_bits} NaN written with other bits, as torch writes them)" if nan_bits else ""
            return "converted", f"exact rounding to {fmt.name}{payloads}"
        return "converted", f"the same values in {report.a['dtype']} and {report.b['dtype']}"
    if any(f.severity == "error" for f in findings):
        return "investigate", "" if finding is None else finding.message
    return "rounding", "differs by rounding" if finding is None else finding.message


def _nan_payloads(report: Report) -> int:
    """How many differing elements are NaN on both sides (with other bits), when all the
    non-finite differences are those; else 0."""
    if report.n_nan_mismatch or report.n_inf_mismatch:
        return 0
    return report.ulp_histogram.nonfinite
