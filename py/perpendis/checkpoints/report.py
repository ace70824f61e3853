"""The checkpoint report: one row per tensor, what one side alone holds, the bad input, a summary.

Each row carries its tensor's verdict and the key figures of its full report (as
bisect's rows do), in JSON-ready form, so a row written to a resume file and read back
is the row itself.  Rows are sorted by severity, worst first, and within a severity by
name, so the report is the same however the tensors were scheduled.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

from ..numerics.figures import percent
from ..report.table import table_lines
from ..report.text import number_text, shape_text
from .scanned import Problem

VERDICTS = ("error", "investigate", "rounding", "converted", "identical")
"""Row verdicts, worst first: not compared (unreadable, a file changed while it was read, a
worker lost); must be investigated; differs by rounding only; the same values in another
dtype (exact rounding to bfloat16, say); bit for bit equal."""

SEVERITY = {v: i for i, v in enumerate(VERDICTS)}


@dataclass
class TensorRow:
    """One paired tensor (or one that could not be read): its verdict and key figures."""

    name: str  # the name both sides share after renaming
    a_name: str | None
    b_name: str | None
    verdict: str
    description: str  # the verdict in words: "exact rounding to bfloat16", the main finding, the error
    file_a: str | None = None
    file_b: str | None = None
    dtype_a: str | None = None
    dtype_b: str | None = None
    shape_a: list[int] | None = None
    shape_b: list[int] | None = None
    n_elements: int = 0
    bytes_compared: int = 0
    n_bitwise_diff: int | None = None
    max_ulp: int | None = None
    max_abs_diff: float | str | None = None  # "inf"/"nan" as strings, as in the report's JSON
    max_rel_diff: float | str | None = None
    fraction_fail: float | None = None
    finding: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TensorRow:
        return cls(**data)


def sort_rows(rows: list[TensorRow]) -> list[TensorRow]:
    """Worst verdict first, then by name."""
    return sorted(rows, key=lambda r: (SEVERITY[r.verdict], r.name))


@dataclass
class CheckpointReport:
    """Every tensor of two checkpoints compared: rows, the unpaired, the bad input and notes."""

    tensors: list[TensorRow]
    only_a: list[str] = field(default_factory=list)
    only_b: list[str] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.tensors = sort_rows(self.tensors)
        self.only_a, self.only_b = sorted(self.only_a), sorted(self.only_b)

    @property
    def summary(self) -> dict[str, int]:
        count = {v: sum(r.verdict == v for r in self.tensors) for v in VERDICTS}
        return {
            "tensors": len(self.tensors),
            "identical": count["identical"],
            "rounding_equivalent": count["converted"] + count["rounding"],
            "converted": count["converted"],
            "rounding": count["rounding"],
            "different": count["investigate"],
            "errors": count["error"],
            "not_compared": count["error"],
            "only_a": len(self.only_a),
            "only_b": len(self.only_b),
            "problems": len(self.problems),
            "bytes_compared": sum(r.bytes_compared for r in self.tensors),
        }

    @property
    def must_investigate(self) -> bool:
        """Some tensor differs beyond rounding, could not be read, or is on one side only:
        a conversion that every tensor survived has none of these."""
        s = self.summary
        return bool(s["different"] or s["errors"] or s["only_a"] or s["only_b"] or s["problems"])

    @property
    def complete(self) -> bool:
        """Every paired tensor compared and every file read: no error row (a tensor not
        compared: unreadable, its file changed while it was read, its worker lost) and no
        bad input found by the scan.  An incomplete report says so in its text and JSON."""
        return not self.summary["not_compared"] and not self.problems

    @property
    def not_compared(self) -> list[dict[str, str | None]]:
        """Each tensor not compared, by name (and each side's), with why: a resume file keeps
        no row of them, so a rerun with it compares exactly these."""
        return [
            {"name": r.name, "a_name": r.a_name, "b_name": r.b_name, "why": r.description}
            for r in self.tensors
            if r.verdict == "error"
        ]

    def to_dict(self) -> dict[str, Any]:
        return {
            "complete": self.complete,
            "not_compared": self.not_compared,
            "tensors": [r.to_dict() for r in self.tensors],
            "only_a": list(self.only_a),
            "only_b": list(self.only_b),
            "problems": [p.to_dict() for p in self.problems],
            "notes": list(self.notes),
            "summary": self.summary,
        }

    def to_json(self, **kwargs: Any) -> str:
        return json.dumps(self.to_dict(), allow_nan=False, **kwargs)

    def to_text(self) -> str:
        """A table of tensors, worst first, then the unpaired, the bad input and the summary."""
        header = ["verdict", "tensor", "dtype", "shape", "max ulp", "max abs", "fail", "why"]
        rows = []
        for r in self.tensors:
            dtype = r.dtype_a if r.dtype_a == r.dtype_b else f"{r.dtype_a or '?'}→{r.dtype_b or '?'}"
            if r.shape_a is None and r.shape_b is None:
                shape = ""
            elif r.shape_a == r.shape_b:
                shape = shape_text(r.shape_a or [], ",")
            else:
                shape = f"{shape_text(r.shape_a or [], ',')}≠{shape_text(r.shape_b or [], ',')}"
            fail = "" if r.fraction_fail is None else percent(r.fraction_fail, 2)
            figures = [number_text(r.max_ulp, 3), number_text(_number(r.max_abs_diff), 3), fail]
            if r.verdict in ("identical", "converted", "error"):
                figures = ["", "", ""]
            rows.append([r.verdict, r.name, dtype, shape, *figures, r.description])
        lines = table_lines(header, rows)
        for side, names in (("A", self.only_a), ("B", self.only_b)):
            if names:
                shown = ", ".join(names[:10]) + (f" and {len(names) - 10} more" if len(names) > 10 else "")
                lines.append(f"only in {side} ({len(names)}): {shown}")
        lines += [f"bad input in {(p.side or '?').upper()}: {p.file}: {p.message}" for p in self.problems]
        lines += [f"note: {n}" for n in self.notes]
        s = self.summary
        lines += self._not_compared_lines()
        lines.append(
            f"{s['tensors']} tensors: {s['identical']} identical, {s['rounding_equivalent']} rounding-equivalent "
            f"({s['converted']} exact conversions, {s['rounding']} within rounding), {s['different']} different, "
            f"{s['not_compared']} not compared; {s['only_a']} only in A, {s['only_b']} only in B; "
            f"{s['bytes_compared'] / 1e9:.3f} GB compared"
        )
        if not self.complete:
            lines.append(self._incomplete())
        return "\n".join(lines) + "\n"

    def _not_compared_lines(self) -> list[str]:
        """Every tensor not compared, by name, grouped by why (one worker lost, one file cut short)."""
        by_why: dict[str, list[str]] = {}
        for n in self.not_compared:
            by_why.setdefault(n["why"] or "", []).append(n["name"])
        return [f"not compared ({len(names)}): {', '.join(names)}: {why}" for why, names in by_why.items()]

    def _incomplete(self) -> str:
        """The last line of an incomplete report: what it does not cover."""
        s = self.summary
        missed = [f"{s['not_compared']} of {s['tensors']} tensors were not compared"] if s["not_compared"] else []
        if self.problems:
            missed.append(f"the bad input above ({s['problems']}) kept tensors from being read")
        return f"INCOMPLETE: {' and '.join(missed)}; this report covers only what was compared"


def _number(x: float | str | None) -> float | None:
    return float(x) if isinstance(x, str) else x
