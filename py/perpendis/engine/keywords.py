"""The keyword front of a comparison: arrays and loose keywords in, one report out.

``engine.compare.compare_values`` (folded in this process: the bench scripts' and many
tests' entry) and ``perpendis.compare`` (the public one, answered by the service) take the
same arguments, as a notebook user writes them.  Both are :func:`keyword_front` over the
call that makes their report, so the signature, what its arguments mean, and the turning
of keywords into one :class:`ComparisonOptions` and of arrays into :class:`Tensor` are
written once.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..inputs.tensor import Tensor, as_tensor
from ..report.model import Report
from .options import ComparisonOptions

Run = Callable[[Tensor, Tensor, ComparisonOptions, "Tensor | None"], Report]
"""What makes the report: A, B, the options and the reference (or None)."""

ARGUMENTS = """
    ``a`` and ``b`` are NumPy arrays, anything ``np.asarray`` accepts, or PyTorch tensors
    (bfloat16 and float8 too); ``b`` is the expected value: the tolerance scales with
    ``|b|``.  ``preset``, ``atol``, ``rtol`` and ``depth`` set the tolerance, ``ref`` is a
    higher-precision run to judge both against, ``sources`` names A and B in the report,
    ``task`` asks whether the prediction changes (``task="logits"``), ``check_dtype=False``
    compares values across element formats.  In a notebook the report displays as a rich
    summary.  Unreadable input (an unsupported dtype, say) raises
    :class:`~perpendis.errors.InputError`."""


def keyword_front(run: Run) -> Callable[..., Report]:
    """``run`` behind the keyword signature: the result is named and documented as ``run``,
    with :data:`ARGUMENTS` after its docstring.  No ``__wrapped__`` is set, so ``help()``
    and ``inspect.signature`` show the keywords a caller writes, not ``run``'s."""

    def front(
        a: Any, b: Any, preset: str | None = None, atol: float | None = None, rtol: float | None = None, *,
        depth: float = 1.0, ref: Any = None, sources: tuple[str, str] = ("A", "B"), task: Any = None,
        check_dtype: bool = True,
    ) -> Report:
        options = ComparisonOptions(preset, atol, rtol, depth, check_dtype, task)
        reference = None if ref is None else as_tensor(ref, "reference")
        return run(as_tensor(a, sources[0]), as_tensor(b, sources[1]), options, reference)

    front.__name__, front.__qualname__, front.__module__ = run.__name__, run.__qualname__, run.__module__
    front.__doc__ = f"{(run.__doc__ or '').rstrip()}\n{ARGUMENTS}\n"
    return front
