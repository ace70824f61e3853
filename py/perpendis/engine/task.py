"""Task-level impact: does the difference change the prediction?

For a pair of logits (or probabilities, or log-probabilities) the question users ask is
not whether the values are close but whether the model still predicts the same thing.
Along a *classes axis* (the vocabulary of a language model, the classes of a classifier)
every other index is a *row* (a token, a sample), and per row this module measures:

- whether the top-1 class (argmax, first index on ties) of A equals B's;
- the overlap of the top-k classes, ``|topk(A) ∩ topk(B)| / k``, for k = 5 and a chosen k;
- ``KL(softmax(B) ‖ softmax(A))`` in nats, from log-softmax with the row's maximum
  subtracted first (so no exponential overflows), B being the reference as in the
  tolerance test.  Probabilities are used as they are (negative rounding noise clipped
  to 0): a class B gives probability 0 adds nothing, one A gives 0 where B does not
  makes the row's KL infinite.  Log-probabilities are taken as logits (log-softmax of
  a row that already sums to one is the row itself).

Everything is row-local, so rows are judged in blocks (:func:`judge_rows`) and the
blocks' :class:`TaskPartial` merged in row order: in memory or streamed, the result is
the same.

**Flips against rounding.**  The comparison's tolerance says how far each element of A
may lie from B: ``bound(x) = atol + rtol·|b_x|`` (the test of
:mod:`perpendis.tolerance`, the one the verdict reads).  When A's top class ``j``
differs from B's ``i``, B's margin ``b_i - b_j`` can be undone by rounding only if
``b_i - b_j <= bound(i) + bound(j)``: then the flip is *explained by rounding*.  At a
larger margin one of the two elements is necessarily outside the tolerance, and the
flip is a change of prediction that rounding cannot make.  A *near-tie* is a row whose
argmax agrees but whose B margin between its top two classes is within the same
bound: it could flip under rounding, and is reported.

**Kind.**  Detected from B unless given: every value in [0, 1] and every row summing
to 1 within :data:`SUM_SLACK` → probabilities; every value ≤ 0 and every row's
logsumexp within :data:`SUM_SLACK` of 0 → log-probabilities; anything else → logits.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import InputError
from ..report.model import TaskResult

KINDS = ("logits", "probabilities", "log-probabilities")
TOP_K = 5  # always reported, beside the k the caller asks for
SUM_SLACK = 1e-3  # |row sum - 1| (or |logsumexp|) allowed for probabilities (log-probabilities)
FLIP_CAP = 64  # flips listed (all are counted)
TIE_CAP = 16  # near-ties listed (all are counted)
BLOCK_ELEMENTS = 1 << 20  # values per block of rows: 8 MB per side in float64


@dataclass(frozen=True)
class TaskSpec:
    """What the caller asked: the classes axis, the k of the top-k overlap, the kind (None: detect)."""

    axis: int = -1
    k: int = TOP_K
    kind: str | None = None


def task_spec(value: Any) -> TaskSpec | None:
    """The one typed form of a task request, from what users write.

    ``None``/``False``: no task check.  ``True`` or ``"auto"``: the last axis, kind
    detected.  A kind name (``"logits"``, ``"probabilities"``, ``"log-probabilities"``):
    that kind on the last axis.  An int: the classes axis.  A mapping with any of
    ``axis``, ``k``, ``kind``.  A :class:`TaskSpec` as it is.
    """
    if value is None or value is False:
        return None
    if isinstance(value, TaskSpec):
        return _checked(value)
    if value is True or value == "auto":
        return TaskSpec()
    if isinstance(value, str):
        return _checked(TaskSpec(kind=value))
    if isinstance(value, int | np.integer):
        return _checked(TaskSpec(axis=int(value)))
    if isinstance(value, Mapping):
        unknown = set(value) - {"axis", "k", "kind"}
        if unknown:
            raise InputError(f"task takes the keys axis, k and kind; got {sorted(map(str, unknown))}", where="task")
        return _checked(TaskSpec(value.get("axis", -1), value.get("k", TOP_K), value.get("kind")))
    raise InputError(
        f'task must be "logits", "probabilities", "log-probabilities", an axis, or {{"axis": -1, "k": 10}}; '
        f"got {value!r}",
        where="task",
    )


def _checked(spec: TaskSpec) -> TaskSpec:
    if isinstance(spec.axis, bool) or not isinstance(spec.axis, int | np.integer):
        raise InputError(f"the classes axis must be an integer, got {spec.axis!r}", where="task")
    if isinstance(spec.k, bool) or not isinstance(spec.k, int | np.integer) or spec.k < 1:
        raise InputError(f"top-k's k must be an integer >= 1, got {spec.k!r}", where="task")
    if spec.kind is not None and spec.kind not in KINDS:
        raise InputError(f"the task kind must be one of {', '.join(KINDS)}; got {spec.kind!r}", where="task")
    return TaskSpec(int(spec.axis), int(spec.k), spec.kind)


def classes_axis(axis: int, shape: Sequence[int]) -> int:
    """``axis`` as a non-negative axis of ``shape``, or an :class:`InputError` saying why not."""
    if len(shape) < 1 or not -len(shape) <= axis < len(shape):
        raise InputError(f"the classes axis {axis} is not an axis of the compared shape {list(shape)}", where="task")
    if shape[axis] < 2:
        raise InputError(f"the classes axis {axis} has {shape[axis]} class; a prediction needs 2", where="task")
    return axis % len(shape)


def detect_kind(b: np.ndarray) -> str:
    """The kind of rows ``b`` (float64, one row per line) hold: see the module docstring."""
    finite = b[np.isfinite(b).all(axis=1)]
    if finite.size == 0:
        return "logits"
    if finite.min() >= 0 and finite.max() <= 1 and np.all(np.abs(finite.sum(axis=1) - 1) <= SUM_SLACK):
        return "probabilities"
    if finite.max() <= 0 and np.all(np.abs(_logsumexp(finite)) <= SUM_SLACK):
        return "log-probabilities"
    return "logits"


def _logsumexp(x: np.ndarray) -> np.ndarray:
    top = x.max(axis=1, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)
    with np.errstate(divide="ignore"):
        return np.log(np.exp(x - top).sum(axis=1)) + top[:, 0]


def _log_softmax(x: np.ndarray) -> np.ndarray:
    return x - _logsumexp(x)[:, None]


def kl_rows(a: np.ndarray, b: np.ndarray, kind: str) -> np.ndarray:
    """KL(P_B ‖ P_A) per row, in nats (see the module docstring for each kind); rows hold no
    NaN or +inf, and at least one value above -inf on each side."""
    if kind != "probabilities":
        return _kl_logits(a, b, a.max(axis=1), b.max(axis=1))
    with np.errstate(divide="ignore", invalid="ignore"):
        pb, pa = np.clip(b, 0.0, None), np.clip(a, 0.0, None)
        terms = np.where(pb > 0, pb * (np.log(pb) - np.log(pa)), 0.0)
    return np.maximum(terms.sum(axis=1), 0.0)  # rounding can leave a tiny negative sum


def _kl_logits(a: np.ndarray, b: np.ndarray, ma: np.ndarray, mb: np.ndarray) -> np.ndarray:
    """KL of the softmaxes of logit rows with maxima ``ma``, ``mb``, with one exponential per value.

    With ``e = exp(x - m)`` and ``s = Σe``, ``log softmax(x) = x - m - log s``, so
    ``KL = Σ p_B (b - a) - (m_B + log s_B) + (m_A + log s_A)``
    ``   = Σ e_B (b - a) / s_B + (m_A - m_B) + log(s_A / s_B)``:
    the logits' own size cancels before rounding can hide a small KL.  A class B gives -inf
    contributes nothing (``0 · inf`` is NaN, taken as 0); one only A gives -inf makes KL infinite.
    """
    with np.errstate(invalid="ignore", over="ignore"):
        eb = np.exp(b - mb[:, None])
        sa, sb = np.exp(a - ma[:, None]).sum(axis=1), eb.sum(axis=1)
        weighted = eb * (b - a)
        if np.isnan(weighted).any():
            weighted[np.isnan(weighted)] = 0.0
        kl = weighted.sum(axis=1) / sb + (ma - mb) + np.log(sa / sb)
    return np.maximum(kl, 0.0)  # rounding can leave a tiny negative sum


def _top(x: np.ndarray, k: int) -> np.ndarray:
    """Each row's ``k`` largest classes, largest first; ties go to the lower class index, as
    ``argmax`` breaks them, so the top-k set does not depend on how the partition fell."""
    k = min(k, x.shape[1])
    part = np.argpartition(x, x.shape[1] - k, axis=1)[:, x.shape[1] - k :]
    values = np.take_along_axis(x, part, axis=1)
    order = np.argsort(-values, axis=1, kind="stable")
    top = np.take_along_axis(part, order, axis=1)
    # A row whose k-th value also sits outside the chosen set: pick among its ties by index.
    kth = values.min(axis=1)
    tied = np.flatnonzero((x == kth[:, None]).sum(axis=1) > (values == kth[:, None]).sum(axis=1))
    if len(tied):
        top[tied] = np.argsort(-x[tied], axis=1, kind="stable")[:, :k]
    return top


def _overlap(ta: np.ndarray, tb: np.ndarray) -> np.ndarray:
    """``|A ∩ B| / k`` per row of two sets of k distinct classes each."""
    both = np.sort(np.concatenate([ta, tb], axis=1), axis=1)
    return (both[:, 1:] == both[:, :-1]).sum(axis=1) / ta.shape[1]


@dataclass
class TaskPartial:
    """The row-local results of some rows, in row order; :meth:`merge` appends later rows."""

    rows: int = 0
    skipped: int = 0
    agree: int = 0
    overlap: dict[int, float] = field(default_factory=dict)  # k -> summed overlap
    kl: list[np.ndarray] = field(default_factory=list)
    flips: list[np.ndarray] = field(default_factory=list)  # rows x (row, a_top, b_top, margin, bound)
    ties: list[np.ndarray] = field(default_factory=list)  # rows x (row, b_top, b_second, margin, bound)

    def merge(self, o: TaskPartial) -> TaskPartial:
        return TaskPartial(
            self.rows + o.rows,
            self.skipped + o.skipped,
            self.agree + o.agree,
            {k: self.overlap.get(k, 0.0) + o.overlap.get(k, 0.0) for k in self.overlap.keys() | o.overlap.keys()},
            self.kl + o.kl,
            self.flips + o.flips,
            self.ties + o.ties,
        )


def judge_rows(a: np.ndarray, b: np.ndarray, first_row: int, kind: str, ks: Sequence[int], atol: float,
               rtol: float) -> TaskPartial:
    """The partial of rows ``first_row ...`` given as float64 ``(rows, classes)`` arrays.

    A row holding a NaN or +inf on either side (no class wins) is skipped and counted.
    """
    ma, mb = a.max(axis=1), b.max(axis=1)  # NaN when the row holds one; +inf; -inf when nothing wins
    bad = ~(np.isfinite(ma) & np.isfinite(mb))
    kept = np.flatnonzero(~bad)
    if len(kept) < len(a):
        a, b, ma, mb = a[kept], b[kept], ma[kept], mb[kept]
    kmax = max(max(ks), 2)
    top_a, top_b = _top(a, kmax), _top(b, kmax)
    arg_a, arg_b = a.argmax(axis=1), b.argmax(axis=1)
    rows = np.arange(len(kept))
    # B's runner-up: its second-largest class other than its argmax (ties: either one).
    second = np.where(top_b[:, 0] == arg_b, top_b[:, 1], top_b[:, 0])
    flipped = arg_a != arg_b
    other = np.where(flipped, arg_a, second)  # the class B's top is measured against
    b_top, b_other = b[rows, arg_b], b[rows, other]
    with np.errstate(invalid="ignore"):
        margin = b_top - b_other
        bound = 2 * atol + rtol * (np.abs(b_top) + np.abs(b_other))
    row_ids = (kept + first_row).astype(np.float64)
    flips = np.stack([row_ids, arg_a, arg_b, margin, bound], axis=1)[flipped]
    tie = ~flipped & (margin <= bound)
    ties = np.stack([row_ids, arg_b, second, margin, bound], axis=1)[tie]
    return TaskPartial(
        rows=len(kept),
        skipped=int(bad.sum()),
        agree=int((~flipped).sum()),
        overlap={k: float(_overlap(top_a[:, :k], top_b[:, :k]).sum()) for k in ks},
        kl=[_kl_logits(a, b, ma, mb) if kind != "probabilities" else kl_rows(a, b, kind)],
        flips=[flips],
        ties=[ties],
    )


def _row_index(row: int, row_shape: Sequence[int]) -> list[int]:
    return [int(i) for i in np.unravel_index(row, tuple(row_shape))] if row_shape else []


def _element(row: list[int], axis: int, cls: int, shape: Sequence[int]) -> dict[str, Any]:
    """The element of class ``cls`` in ``row``: its multi-index and flat index in the compared
    shape (the page opens its element view by the flat index)."""
    index = [*row[:axis], cls, *row[axis:]]
    return {"element": index, "flat": int(np.ravel_multi_index(index, tuple(shape)))}


def _quantile(values: np.ndarray, q: float) -> float:
    """The q-quantile by the nearest rank (no interpolation: a value some row has)."""
    ordered = np.sort(values)
    return float(ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))])


def summary(p: TaskPartial, *, kind: str, axis: int, shape: Sequence[int], ks: Sequence[int], atol: float,
            rtol: float) -> TaskResult:
    """The report's ``task`` section from the merged partial of all rows."""
    row_shape = [n for i, n in enumerate(shape) if i != axis]
    kl = np.concatenate(p.kl) if p.kl else np.zeros(0)
    flips = np.concatenate(p.flips) if p.flips else np.zeros((0, 5))
    ties = np.concatenate(p.ties) if p.ties else np.zeros((0, 5))
    explained = flips[:, 3] <= flips[:, 4]
    n_changed = int((~explained).sum())
    # The flips rounding cannot explain first, then by row: a capped list keeps the telling ones.
    order = np.lexsort((flips[:, 0], explained))[:FLIP_CAP]
    flip_list = []
    for r, a_top, b_top, margin, bound in flips[order]:
        row = _row_index(int(r), row_shape)
        flip_list.append({
            "row": row, "a_top": int(a_top), "b_top": int(b_top), "margin": float(margin), "bound": float(bound),
            "rounding": bool(margin <= bound), **_element(row, axis, int(b_top), shape),
        })
    tie_list = [
        {"row": (row := _row_index(int(r), row_shape)), "b_top": int(t), "b_second": int(s), "margin": float(m),
         "bound": float(bd), **_element(row, axis, int(t), shape)}
        for r, t, s, m, bd in ties[:TIE_CAP]
    ]
    n = p.rows
    verdict = "unchanged" if len(flips) == 0 else ("changed" if n_changed else "changed_within_rounding")
    finite = kl[np.isfinite(kl)] if n else kl
    return TaskResult(
        kind=kind,
        axis=axis,
        classes=int(shape[axis]),
        rows=n,
        skipped_rows=p.skipped,
        top1_agreement=p.agree / n if n else None,
        topk={str(k): p.overlap.get(k, 0.0) / n if n else None for k in ks},
        kl={
            "mean": float(kl.mean()) if n else None,
            "p99": _quantile(kl, 0.99) if n else None,
            "max": float(kl.max()) if n else None,
            "n_infinite": int(len(kl) - len(finite)),
        },
        n_flips=len(flips),
        n_flips_beyond_rounding=n_changed,
        flips=flip_list,
        n_near_ties=len(ties),
        near_ties=tie_list,
        bound={"atol": atol, "rtol": rtol},
        verdict=verdict,
    )
