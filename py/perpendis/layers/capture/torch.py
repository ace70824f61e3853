"""PyTorch captures: every leaf module's output (and optionally inputs), as it runs.

A leaf module (one without children) is where PyTorch and an exporter agree on a
boundary: ``features.3.0`` is a ``Conv2d`` in both.  Each call is recorded when it
returns, so the capture is in execution order; a module called again (a ReLU reused
in a block) gets ``@1``, ``@2``, ... after its path.  Tuple, list and dict outputs are
flattened as ``path:0``, ``path:1`` and ``path:key``; the order of everything is the
file's ``order`` metadata.  Values are copied to host memory at once, since an in-place
operation later in the forward pass would change them.

Compiled code runs no Python hooks: a ``torch.compile`` region, once compiled, skips
them (a model that has run before is captured silently empty), and ``torch.cond``
traces its branches, where a hook's record is a side effect it refuses.  Inside the
``with`` block torch's compiler is set to run everything eagerly
(``torch.compiler.set_stance("force_eager")``): the same modules, hooked, in their
order; ``torch.compile``'s ``_orig_mod`` wrapper is left out of the paths, so they read
as the exported model's.  A block that records nothing is refused with a message.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

import numpy as np

from ...errors import InputError
from .store import Capture

COMPILED_WRAPPER = "_orig_mod"  # the attribute torch.compile's OptimizedModule keeps the model under


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
    handles = _hook_leaves(model, run, inputs)
    with ExitStack() as stack:
        set_stance = getattr(torch.compiler, "set_stance", None)
        if set_stance is not None:
            stack.enter_context(set_stance("force_eager"))
        try:
            yield run
        except Exception as err:
            if "higher order op" in f"{type(err).__name__} {err}".lower().replace("operator", "op"):
                raise InputError(
                    f"the model's forward could not run with capture hooks: {type(err).__name__}: "
                    f"{' '.join(str(err).split())[:300]}; this torch cannot run torch.cond eagerly, so modules "
                    "called inside its branches cannot be hooked: capture the branch modules' callers instead"
                ) from err
            raise
        finally:
            for handle in handles:
                handle.remove()
    if not run.names:
        raise InputError(
            f"nothing was captured: no module of {type(model).__name__} ran inside the `with perpendis.capture(model)` "
            "block; call the model (model(x)) inside it"
        )


def _hook_leaves(model: Any, run: Capture, inputs: bool) -> list[Any]:
    """Hook every leaf module of ``model`` to add what it returns (and, with ``inputs``, what it
    receives) to ``run``; the k-th call of a module after its first is named ``path@k``.
    Returns the hooks' handles, for the caller to remove."""
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
        path = ".".join(p for p in path.split(".") if p != COMPILED_WRAPPER) or type(model).__name__
        if inputs:
            handles.append(module.register_forward_pre_hook(before(path)))
        handles.append(module.register_forward_hook(after(path, module)))
    return handles


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
