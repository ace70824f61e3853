"""What the user asked of a comparison, typed and checked once.

:class:`ComparisonOptions` is what a front end was told (a preset name, overrides of atol
and rtol, the diagnosis depth, whether a dtype mismatch counts, the task check), before
any tensor is seen.  It is not :class:`~perpendis.numerics.tolerance.Tolerance`: that holds
the numbers resolved for one element format (:meth:`ComparisonOptions.tolerance`), and a
bisect resolves one per layer.  Every front end (the page's requests, the CLI, ``testing``,
``bisect``) builds one, so a bad value is refused here with the one message, whoever
asked; the engine's ``prepare``/``compare``/``prepare_sources`` take it whole instead of
six loose keywords.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from ..errors import InputError
from ..numerics.bits import Format
from ..numerics.tolerance import PRESETS, Tolerance, resolve
from .task import TaskSpec, task_spec

FIELDS = ("preset", "atol", "rtol", "depth", "check_dtype", "task")
"""The keys :meth:`ComparisonOptions.of` reads, in the order of the dataclass."""


def check_depth(depth: Any) -> None:
    """:class:`InputError` unless ``depth`` is a number > 0."""
    if isinstance(depth, bool) or not (isinstance(depth, int | float) and math.isfinite(depth) and depth > 0):
        raise InputError(f"depth must be a number > 0 (roughly the number of roundings between A and B), got {depth!r}")


def _override(value: Any, name: str) -> float | None:
    """An atol or rtol as given: None (the preset's), or a finite number >= 0."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
        raise InputError(f"{name} must be a finite number >= 0, got {value!r}", where=name)
    return float(value)


@dataclass(frozen=True)
class ComparisonOptions:
    """The options of one comparison as asked; each field is checked when it is made.

    ``preset`` None (or empty) lets the compared format choose; ``atol``/``rtol`` None keep
    the preset's.  ``depth`` scales what counts as rounding-like error (roughly how many
    roundings separate A and B).  ``check_dtype`` (as torch.testing's) off judges two float
    formats as rounding in the narrower one.  ``task`` takes whatever
    :func:`~perpendis.engine.task.task_spec` reads and holds its typed form.
    """

    preset: str | None = None
    atol: float | None = None
    rtol: float | None = None
    depth: float = 1.0
    check_dtype: bool = True
    task: TaskSpec | None = None

    def __post_init__(self) -> None:
        preset = self.preset or None
        if preset is not None and preset not in PRESETS:
            raise InputError(f"unknown tolerance preset {preset!r}; choose one of: {', '.join(PRESETS)}",
                             where="preset")
        check_depth(self.depth)
        if not isinstance(self.check_dtype, bool):
            raise InputError(f"check_dtype must be true or false, got {self.check_dtype!r}", where="check_dtype")
        object.__setattr__(self, "preset", preset)
        object.__setattr__(self, "atol", _override(self.atol, "atol"))
        object.__setattr__(self, "rtol", _override(self.rtol, "rtol"))
        object.__setattr__(self, "depth", float(self.depth))
        object.__setattr__(self, "task", task_spec(self.task))

    @classmethod
    def of(cls, asked: Mapping[str, Any] | None, extra: tuple[str, ...] = ()) -> ComparisonOptions:
        """The options of a mapping (a request's ``options``); a key neither an option nor in
        ``extra`` (what the caller reads itself) is refused, naming the known ones."""
        asked = asked or {}
        if not isinstance(asked, Mapping):
            raise InputError(f"options must be a mapping of names to values, got {asked!r}", where="options")
        unknown = sorted(str(k) for k in asked if k not in FIELDS and k not in extra)
        if unknown:
            known = ", ".join(sorted((*FIELDS, *extra)))
            raise InputError(f"unknown option {', '.join(map(repr, unknown))}; the known ones are {known}",
                             where="options")
        given = {k: asked[k] for k in FIELDS if asked.get(k) is not None}
        return cls(**given)

    def tolerance(self, fmt: Format) -> Tolerance:
        """The tolerance resolved for values in ``fmt``: the preset (or the format's default), then the overrides."""
        return resolve(fmt, preset=self.preset, atol=self.atol, rtol=self.rtol)

    def without_task(self) -> ComparisonOptions:
        """These options with no task check: for comparisons of many pairs (layers, checkpoint tensors)."""
        return replace(self, task=None)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready, the task as ``{"axis", "k", "kind"}``: a fingerprint of the options, or what a link keeps."""
        task = None if self.task is None else {"axis": self.task.axis, "k": self.task.k, "kind": self.task.kind}
        return {"preset": self.preset, "atol": self.atol, "rtol": self.rtol, "depth": self.depth,
                "check_dtype": self.check_dtype, "task": task}


DEFAULT = ComparisonOptions()
"""No option given: the format's preset, depth 1, dtypes checked, no task check."""
