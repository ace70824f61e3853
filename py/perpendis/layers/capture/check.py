"""``perpendis.check_export``: export a model, capture both runs, bisect and isolate, in one call."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ...engine.options import DEFAULT, FIELDS, ComparisonOptions
from ...errors import InputError
from ...inputs.formats.onnx_model import describe, read_graph
from ...inputs.tensor import from_numpy
from ..bisect import BisectReport, as_entries, bisect, described_by
from .isolate import isolate
from .onnx import capture_onnx
from .store import Capture
from .torch import capture


def entries(run: Capture) -> list[Any]:
    return as_entries(from_numpy(run[name], "capture", name=name) for name in run)


def bisect_runs_of(
    torch_run: Capture, onnx_path: str | Path, feeds: Sequence[np.ndarray] | dict,
    options: ComparisonOptions = DEFAULT, *, ort_run: Capture | None = None, **pairing: Any,
) -> BisectReport:
    """Bisect a PyTorch capture against ONNX Runtime's run of ``onnx_path`` on ``feeds``, layers isolated.

    ``ort_run``: that run's capture (``capture_onnx(onnx_path, feeds)``) when the caller has
    already made it and reads its values too; it is then not run again."""
    ort_run = ort_run if ort_run is not None else capture_onnx(onnx_path, feeds)
    a, b = entries(torch_run), entries(ort_run)
    info_a, info_b = described_by(
        describe(read_graph(Path(onnx_path).read_bytes())), torch_run.names, ort_run.names, torch_run.info, ort_run.info
    )
    result = bisect(a, b, options, info_a=info_a, info_b=info_b, **pairing)
    return isolate(result, onnx_path, a, b, options.without_task())


ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def export_onnx(model: Any, args: tuple, path: str | Path) -> None:
    """``torch.onnx.export`` with the dynamo exporter; its failure as an InputError that says what to try.

    torch's message is kept (it names the op and the source line) without its terminal
    colours, which are noise in a log or a notebook, and without its advice to file an issue.
    """
    import torch

    try:
        torch.onnx.export(model, args, str(path), dynamo=True)
    except Exception as err:
        text = ANSI.sub("", str(err))
        summary = text.split("## Exception summary", 1)[-1].strip()
        first = (text.splitlines()[0] if text else type(err).__name__).split(" Next steps")[0]
        detail = " ".join(summary.split("\n\n")[0].split()) if "## Exception summary" in text else ""
        raise InputError(
            f"torch.onnx.export could not export {type(model).__name__}: {first}"
            + (f" ({detail})" if detail else "")
            + "; try torch.onnx.export(..., dynamo=False) and pass export=False with that file, "
            "or bisect a capture of each side (perpendis.capture and python -m perpendis capture model.onnx)"
        ) from None


def check_export(model: Any, args: Any, path: str | Path, *, export: bool = True, **options: Any) -> BisectReport:
    """Export ``model`` to ``path`` with ``torch.onnx.export`` (unless ``export=False``: the file is
    there), run both, and return the bisect report; ``report.must_investigate`` when a layer fails.

    ``options`` are :func:`~perpendis.layers.bisect.bisect`'s keywords and the tolerance
    options of :class:`~perpendis.engine.options.ComparisonOptions` (``preset``, ``atol``, ...).
    """
    import torch

    args = args if isinstance(args, tuple) else (args,)
    if export:
        export_onnx(model, args, path)
    with torch.no_grad(), capture(model) as run:
        model(*args)
    feeds = [a.detach().cpu().numpy() for a in args if isinstance(a, torch.Tensor)]
    asked = ComparisonOptions.of({k: options.pop(k) for k in FIELDS if k in options})
    return bisect_runs_of(run, path, feeds, asked, **options)
