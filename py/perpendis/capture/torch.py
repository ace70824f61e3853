"""PyTorch captures: every leaf module's output (and optionally inputs), as it runs.

A leaf module (one without children) is where PyTorch and an exporter agree on a
boundary: ``features.3.0`` is a ``Conv2d`` in both.  Each call is recorded when it
returns, so the capture is in execution order; a module called again (a ReLU reused
in a block) gets ``@1``, ``@2``, ... after its path.  Tuple, list and dict outputs are
flattened as ``path:0``, ``path:1`` and ``path:key``; the order of everything is the
file's ``order`` metadata.  Values are copied to host memory at once, since an in-place
operation later in the forward pass would change them.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from .store import Capture


@contextmanager
def capture(model: Any, *, inputs: bool = False) -> Iterator[Capture]:
    """Record the forward pass(es) run inside the ``with`` block; hooks are gone after it, even on error.

    ``inputs=True`` also records what each leaf module received, as ``path:in`` (``path:in:0``,
    ... when it takes several tensors).
    """
    import torch

    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"capture takes a torch.nn.Module, got {type(model).__name__}")
    run = Capture()
    calls: dict[str, int] = {}
    handles = []

    def called(path: str) -> str:
        k = calls.get(path, 0)
        return path if k == 0 else f"{path}@{k}"

    def after(path: str, module: Any) -> Any:
        def hook(_module: Any, _args: Any, output: Any) -> None:
            name = called(path)
            calls[path] = calls.get(path, 0) + 1
            for suffix, value in _flatten(output):
                run.add(name + suffix, _to_numpy(value), module=path, cls=type(module).__name__, kind="output")

        return hook

    def before(path: str) -> Any:
        def hook(_module: Any, args: Any) -> None:
            flat = list(_flatten(tuple(args)))
            for suffix, value in flat:
                tag = ":in" if len(flat) == 1 else ":in" + suffix
                run.add(called(path) + tag, _to_numpy(value), module=path, kind="input")

        return hook

    for path, module in model.named_modules():
        if next(module.children(), None) is not None:
            continue
        path = path or type(model).__name__
        if inputs:
            handles.append(module.register_forward_pre_hook(before(path)))
        handles.append(module.register_forward_hook(after(path, module)))
    try:
        yield run
    finally:
        for handle in handles:
            handle.remove()


def _flatten(value: Any, suffix: str = "") -> Iterator[tuple[str, Any]]:
    """``(suffix, tensor)`` of every tensor in a nested output; other values are skipped."""
    import torch

    if isinstance(value, torch.Tensor):
        yield suffix, value
    elif isinstance(value, (tuple, list)):
        for i, item in enumerate(value):
            yield from _flatten(item, f"{suffix}:{i}")
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _flatten(item, f"{suffix}:{key}")


def _to_numpy(t: Any) -> np.ndarray:
    """A host copy; bfloat16, which NumPy lacks, is widened to float32 (exactly)."""
    import torch

    t = t.detach()
    if t.dtype == torch.bfloat16:
        t = t.float()
    return t.to("cpu", copy=True).numpy()
