"""The page's ``checkpoints`` request: two folders of files the worker reads itself, tensor by tensor.

The page hands over every file of the two folders unread (``Blob`` objects, read with
``Blob.slice``), named by their path inside the folder.  Shard headers are read first;
then each tensor pair is read one chunk at a time, so the heap holds a few chunks
whatever the checkpoints' size.  An ``.npz`` or ``torch.save`` shard is read whole, so
one beyond :data:`WHOLE_MAX_BYTES` is a problem naming it (the CLI reads it through a
memory map).

Request: ``{"op": "checkpoints", "inputs": {"a": [{"name": path, "data": key}, ...],
"b": [...]}, "options": {"rename": ["PAT=REPL", ...], "preset", "atol", "rtol", "depth"}}``.
Answer: ``{"ok": true, "checkpoints": CheckpointReport.to_dict(), "text": ...}``;
``progress("checkpoints", fraction)`` of the bytes to compare.  With helpers, the answer is
first ``{"ok": true, "checkpoint_units": [...]}``: the units the workers fold
(:mod:`.shared`), after which :func:`answer_of` the fold's report is the answer.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ..checkpoints.rename import parse_rule
from ..checkpoints.report import CheckpointReport
from ..checkpoints.run import Checkpoint, begin_checkpoints, local_runner
from ..checkpoints.schedule import LocalFolder, run_units
from ..checkpoints.shared import CheckpointFold
from ..engine.options import ComparisonOptions
from ..errors import InputError
from ..inputs.formats.buffer import Reader
from .planner import WHOLE_MAX_BYTES
from .requests import OpenedCheckpoints


def _checkpoint(
    side: str, spec: object, files: Mapping[str, tuple[Reader, int]], keys: dict[str, str]
) -> Checkpoint:
    """One side's files as a checkpoint read through the page's readers; ``keys`` is filled
    with each file's payload key, by name."""
    if not isinstance(spec, list) or not spec:
        raise InputError(f"choose a folder for {side.upper()}", side=side)
    by_name: dict[str, tuple[Reader, int]] = {}
    for item in spec:
        if not (isinstance(item, Mapping) and isinstance(item.get("name"), str) and item.get("data") in files):
            message = f"the files of {side.upper()} did not reach the worker; choose the folder again"
            raise InputError(message, side=side)
        by_name[item["name"]] = files[item["data"]]
        keys[item["name"]] = item["data"]

    def open_file(name: str) -> tuple[Reader, int]:
        read, size = by_name[name]
        if size > WHOLE_MAX_BYTES and not name.endswith((".safetensors", ".npy")):

            def guarded(offset: int, length: int, read: Reader = read) -> Any:
                if length > WHOLE_MAX_BYTES:
                    raise InputError(
                        f"{name} is {size / 2**20:.0f} MiB and is read whole, more than the browser can hold "
                        f"({WHOLE_MAX_BYTES // 2**20} MiB); save it as safetensors, or use the command line",
                        where=name,
                    )
                return read(offset, length)

            return guarded, size
        return read, size

    return Checkpoint(sorted(by_name), open_file)


def answer(
    inputs: Mapping[str, Any],
    rename: list[str],
    options: ComparisonOptions,
    files: Mapping[str, tuple[Reader, int]],
    progress: Callable[[str, float], object] | None = None,
    workers: int = 1,
) -> dict[str, Any] | CheckpointFold:
    """The answer to a ``checkpoints`` request (``perpendis.service.requests.CheckpointsRequest``:
    its boxes, rename rules and tolerance options), or with ``workers`` > 1 and tensors a
    helper can read, the :class:`CheckpointFold` whose units the workers fold.  Bad input
    raises :class:`InputError`, for the service's one boundary to answer."""
    keys: dict[str, dict[str, str]] = {"a": {}, "b": {}}
    a, b = (_checkpoint(side, inputs.get(side), files, keys[side]) for side in ("a", "b"))
    total, done = [0], [0]

    def planned(_tasks: int, nbytes: int) -> None:
        total[0] = nbytes

    def advanced(nbytes: int) -> None:
        done[0] += nbytes
        if progress is not None and total[0]:
            progress("checkpoints", min(done[0] / total[0], 1.0))

    begun = begin_checkpoints(
        a,
        b,
        rules=[parse_rule(r) for r in rename if r.strip()],
        preset=options.preset,
        atol=options.atol,
        rtol=options.rtol,
        depth=options.depth,
        planned=planned,
        done=advanced,
    )
    if workers > 1:
        fold = CheckpointFold.plan(begun, keys)
        if any(fold.helped):
            return fold
        run_units(fold, LocalFolder(fold))
        return answer_of(fold.report())
    local_runner(begun.job)
    return answer_of(begun.finish())


def answer_opened(opened: OpenedCheckpoints, options: ComparisonOptions) -> dict[str, Any]:
    """The answer to the CLI's ``checkpoints`` request: its own checkpoints, folded by its
    runner (in this process or on Dask), with ``must_investigate`` for its exit code."""
    begun = begin_checkpoints(
        opened.a,
        opened.b,
        rules=opened.rules,
        preset=options.preset,
        atol=options.atol,
        rtol=options.rtol,
        depth=options.depth,
        planned=opened.planned,
        done=opened.done,
        resume=opened.resume,
    )
    (opened.runner or local_runner)(begun.job)
    report = begun.finish()
    return {**answer_of(report), "must_investigate": report.must_investigate}


def answer_of(report: CheckpointReport) -> dict[str, Any]:
    """The answer holding a finished checkpoint report."""
    return {"checkpoints": report.to_dict(), "text": report.to_text()}
