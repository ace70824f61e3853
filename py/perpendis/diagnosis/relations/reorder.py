"""Reordering along one axis: A equal to B reversed, shifted by k, or permuted.

Slices of A are matched to slices of B by RMS distance over the same sampled positions.
An index is *moved* when some other slice of B is at least 8 times closer to A's slice
than B's own slice at that index (rounding leaves B's own slice the closest by far; a
reordering leaves another one at rounding distance).  The axis is reordered when at least
half its indices move and nine in ten of the matches fit one rule: ``j = n-1-i``
(reversed), ``j = i + k`` over the overlap, for ``|k|`` up to a quarter of the axis,
or any k when the roll wraps round, ``j = (i + k) mod n`` (shifted), or a one-to-one map
(permuted).
The test runs where B's own slices are not already at rounding distance
(:func:`~.rounding_model.rounding_bound`), on axes of at most ``ALONG_CAP`` (512) entries; longer
axes are not tested.
"""

from __future__ import annotations

import numpy as np

from ...report.model import Finding, place
from . import causes as why
from .pair import ALONG_CAP, Pair, finite_rows
from .rounding_model import rounding_bound

CLOSER = 8.0  # another slice must be this much closer than the one at the same index
MOVED_SHARE = 0.5
RULE_SHARE = 0.9
MAX_SHIFT = 8


def _distances(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """RMS distance between every row of ``a`` and every row of ``b``."""
    sq = np.sum(a * a, axis=1)[:, None] + np.sum(b * b, axis=1)[None, :] - 2.0 * (a @ b.T)
    return np.sqrt(np.maximum(sq, 0.0) / a.shape[1])


def _rule(best: np.ndarray, ok: np.ndarray, n: int) -> tuple[str, int] | None:
    """The one rule that ``best`` (B's index matched to each of A's) follows, if any."""
    i = np.arange(best.size)
    if best.size == n and np.mean((best == n - 1 - i)[ok]) >= RULE_SHARE and n > 1:
        return "reversed", 0
    # A shift keeps at least three quarters of the axis in view: a larger "shift" of a
    # short axis is a permutation that happens to move a few entries together.
    longest = min(MAX_SHIFT, max(1, best.size // 4))
    for k in [x for s in range(1, longest + 1) for x in (s, -s)]:
        inside = ok & (i + k >= 0) & (i + k < best.size)
        enough = inside.sum() >= max(2, RULE_SHARE * (best.size - abs(k)))
        if enough and np.mean(best[inside] == i[inside] + k) >= RULE_SHARE:
            return "shifted", k
    if best.size == n and ok.mean() >= RULE_SHARE:
        for k in range(2, n - 1):  # a roll that wraps round: every index moved by the same k, mod n
            if np.mean((best == (i + k) % n)[ok]) >= RULE_SHARE:
                return "shifted", k if k <= n // 2 else k - n
        if len(np.unique(best[ok])) == ok.sum():
            return "permuted", 0
    return None


def _axis(pair: Pair, axis: int) -> Finding | None:
    n = pair.shape[axis]
    got = pair.slices(axis)
    if got is None or n < 2:
        return None
    along, a, b = got
    contiguous = len(along) == n or np.array_equal(along, np.arange(len(along)))
    if not contiguous:
        return None
    keep = finite_rows(a, b)
    if not keep.all():
        return None
    own = np.sqrt(np.mean((a - b) ** 2, axis=1))
    if float(np.median(own)) <= rounding_bound(pair.u, pair.depth) * max(pair.b_rms, 1e-300):
        return None
    dist = _distances(a, b)
    best = np.argmin(dist, axis=1)
    closest = dist[np.arange(len(best)), best]
    moved = (best != np.arange(len(best))) & (closest * CLOSER <= own)
    if moved.mean() < MOVED_SHARE:
        return None
    fixed = (best == np.arange(len(best))) & (own <= closest * CLOSER)
    ok = moved | fixed
    rule = _rule(best, ok, n)
    if rule is None:
        return None
    kind, k = rule
    quality = float(np.median(closest[moved]) / max(float(np.median(own)), 1e-300))
    evidence = {
        "picture": "match",
        "axis": axis,
        "index": along.tolist()[:256],
        "match": best.tolist()[:256],
        "own": own.tolist()[:256],
        "matched": closest.tolist()[:256],
    }
    indices = along[moved][:64].tolist()
    if kind == "reversed":
        message = f"A is B reversed: A[i] matches B[{n - 1}-i] (distance {quality:.2g} of that at the same index)"
        text, amount = f"axis {axis} reversed", {"permutation": best.tolist()[:64]}
    elif kind == "shifted":
        message = (
            f"A is B rolled by {-k} (np.roll(B, {-k}), torch.roll(B, {-k})): A[i] matches B[i{k:+d}] "
            f"for {moved.sum()} of {len(along)} indices "
            f"(distance {quality:.2g} of that at the same index)"
        )
        text, amount = f"axis {axis}, shift {k:+d}", {"shift": k}
    else:
        first = ", ".join(f"{int(i)}→{int(j)}" for i, j in zip(along[moved][:6], best[moved][:6], strict=True))
        message = f"A is B permuted: {moved.sum()} entries moved, A[i] matches B[j] for {first}"
        message += ", …" if moved.sum() > 6 else ""
        text, amount = f"axis {axis} permuted", {"permutation": best.tolist()[:ALONG_CAP]}
    where = place(text, axis=axis, axis_size=n, indices=indices, **amount)
    causes = why.for_reordered(kind, pair.shape, axis, k)
    return Finding(kind, "error", f"along axis {axis} ({n} entries), {message}", where, list(causes), evidence)


def find(pair: Pair) -> list[Finding]:
    out = []
    for axis in range(len(pair.shape)):
        f = _axis(pair, axis)
        if f is not None:
            out.append(f)
    return out
