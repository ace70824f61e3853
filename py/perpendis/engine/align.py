"""Alignment: decide what of two tensors can be compared element for element, and how.

Before any value is compared, both sides need one element format and one shape.  A
dtype mismatch is compared in the narrower float (the question is "would these agree
had both been computed in the narrower type?"); a shape mismatch is resolved, when it
can be, by dropping size-1 axes, by the axis permutation under which most sampled
elements agree (NCHW against NHWC, a transposed matrix), or by broadcasting.  What was
done travels with the result as ``layout`` and ``notes``, so the diagnosis can name it
as a finding instead of silently comparing something else.

Equal shapes are compared in the given order even when another order of the axes fits
far better (a square matrix against its transpose, an image with H and W swapped): the
arrays are what the user has, their difference is the bug, and comparing them otherwise
would call a transposed matrix identical.  The better order travels in ``layout`` as
``permuted``, for the diagnosis to say what would fix it.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field

import numpy as np

from ..inputs.tensor import Tensor
from ..numerics import bits
from ..numerics.bits import Format, compared_format
from ..numerics.format_evidence import says_format
from ..numerics.scramble import Stream
from ..numerics.tolerance import Tolerance, within
from ..report.text import shape_text
from .inside import inside

PERMUTE_MAX_DIMS = 5  # all permutations up to 5 dims (120) are scored on a sample
PERMUTE_SAMPLE = 4096
PERMUTE_SEED = 0
# Equal shapes are compared in the given order, but when that order fails on this share of
# the sample, the other orders that keep the shape are scored; one that leaves at most
# EXPLAINED_LEFT of those failures is reported as the likely layout slip.
SUSPECT_FAIL_SHARE = 0.2
EXPLAINED_LEFT = 0.1


@dataclass
class Aligned:
    """Both sides as storage arrays of one format and one shape, and how they got there.

    ``a`` and ``b`` are ``None`` when the shapes cannot be aligned.  ``layout`` says what
    was done to A: ``{"kind": "same" | "squeeze" | "transpose" | "broadcast" | "none", ...}``;
    for ``same`` and ``squeeze`` it may add ``permuted``: ``{"perm", "agree", "given"}``,
    an order of A's axes that keeps the shape and under which the share ``agree`` of
    sampled elements agree, against ``given`` in the order compared.  ``widened`` names
    the side (``"A"`` or ``"B"``) that is a wider float holding only the compared format's
    values, when one is.
    """

    fmt: Format
    a: np.ndarray | None
    b: np.ndarray | None
    layout: dict[str, object]
    notes: list[str] = field(default_factory=list)

    @property
    def shape(self) -> tuple[int, ...] | None:
        return None if self.b is None else tuple(int(n) for n in self.b.shape)


def convert(array: np.ndarray, src: Format, dst: Format) -> np.ndarray:
    """An array held in ``src`` as ``dst``'s storage, rounding to nearest for floats."""
    if src == dst:
        return array
    if (src.name, dst.name) == ("float32", "bfloat16"):
        return bits.float32_to_bfloat16(array)
    if dst.is_float:
        return bits.from_float64(bits.to_float64(array, src), dst)
    return np.asarray(array).astype(dst.storage)


def _widened(side: Tensor, narrowed: np.ndarray, fmt: Format) -> Tensor | None:
    """``side`` when it is a wider float holding only values of ``fmt`` (float16 results
    stored as float32, as an ONNX fp16 conversion with keep_io_types does): rounding it to
    ``fmt`` changed nothing.  Small integers are values of every float format, so the
    evidence is only taken from enough distinct non-integers (:func:`says_format`)."""
    if side.fmt == fmt or not (fmt.is_float and side.fmt.is_float):
        return None
    back = convert(narrowed, fmt, side.fmt)
    if not np.array_equal(bits.raw_bits(back, side.fmt), bits.raw_bits(np.asarray(side.array), side.fmt)):
        return None
    return side if says_format(bits.to_float64(np.asarray(side.array).reshape(-1), side.fmt)) else None


def _contiguous(array: np.ndarray) -> np.ndarray:
    """C-contiguous, keeping 0-d arrays 0-d (``np.ascontiguousarray`` makes them 1-d)."""
    return np.ascontiguousarray(array).reshape(np.shape(array))


def _squeezed(shape: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(n for n in shape if n != 1)


def _sample(size: int) -> np.ndarray:
    """Up to ``PERMUTE_SAMPLE`` flat positions, the same for every order scored.

    Random (with a fixed seed, so a report is reproducible) rather than evenly spaced: an
    even stride can alias with the shape (for a 4096 × 4096 matrix it lands exactly on the
    diagonal, where a matrix and its transpose agree).
    """
    return Stream(PERMUTE_SEED).distinct(size, PERMUTE_SAMPLE)


def _permutation_score(
    a: np.ndarray, b: np.ndarray, perm: tuple[int, ...], pos: np.ndarray, fmt: Format, tol: Tolerance
) -> tuple[int, int]:
    """How many sampled elements of ``a.transpose(perm)`` agree with ``b`` (equal or within
    tolerance), then how many are bitwise equal: the second breaks ties of the first."""
    b_idx = np.unravel_index(pos, b.shape)
    a_idx: list[np.ndarray] = [np.empty(0)] * b.ndim
    for k, axis in enumerate(perm):
        a_idx[axis] = b_idx[k]
    va, vb = a[tuple(a_idx)], b[b_idx]
    same = bits.raw_bits(va, fmt) == bits.raw_bits(vb, fmt)
    fa, fb = bits.to_float64(va, fmt), bits.to_float64(vb, fmt)
    with np.errstate(invalid="ignore"):
        close = within(np.abs(fa - fb), np.abs(fb), tol)
    return int((same | close).sum()), int(same.sum())


def _best_permutation(
    a: np.ndarray, b: np.ndarray, fmt: Format, tol: Tolerance, pos: np.ndarray
) -> tuple[tuple[int, ...], int]:
    """The permutation of A's axes under which most sampled elements agree with B, and how many do."""
    candidates = [p for p in itertools.permutations(range(a.ndim)) if tuple(a.shape[i] for i in p) == b.shape]
    scored = [(_permutation_score(a, b, p, pos, fmt, tol), p) for p in candidates]
    (agreeing, _), perm = max(scored, key=lambda sp: sp[0])
    return perm, agreeing


def _share(count: int, pos: np.ndarray) -> float:
    return count / pos.size if pos.size else 0.0


def _permuted(a: np.ndarray, b: np.ndarray, fmt: Format, tol: Tolerance) -> dict[str, object] | None:
    """For two arrays of one shape, the other order of A's axes that explains most of their
    disagreement (a square matrix against its transpose, H and W swapped), or ``None``.

    Only asked when the given order already fails on a large share of a sample, and
    answered on that sample alone, so agreeing inputs cost one sample and nothing more.
    A symmetric matrix agrees in the given order and is never suspected.
    """
    sizes = [n for n in b.shape if n > 1]  # swapping axes of size 1 moves no element
    if len(set(sizes)) == len(sizes) or b.ndim > PERMUTE_MAX_DIMS or b.size == 0:
        return None
    pos = _sample(b.size)
    given, _ = _permutation_score(a, b, tuple(range(b.ndim)), pos, fmt, tol)
    failing = pos.size - given
    if failing < SUSPECT_FAIL_SHARE * pos.size:
        return None
    perm, agreeing = _best_permutation(a, b, fmt, tol, pos)
    if pos.size - agreeing > EXPLAINED_LEFT * failing:
        return None
    return {"perm": list(perm), "agree": _share(agreeing, pos), "given": _share(given, pos)}


def align(a: Tensor, b: Tensor, tol: Tolerance) -> Aligned:
    """Both sides in the compared format and one shape (B's, or the broadcast one), where meaningful.

    ``tol`` decides which permutation fits best when several axes have the same size.
    The aligned arrays are C-contiguous, so follow-up questions can index them flat.
    """
    fmt = compared_format(a.fmt, b.fmt)
    notes: list[str] = []
    if a.fmt != b.fmt:
        rounded = "A" if fmt != a.fmt else "B"
        notes.append(f"A is {a.format} and B is {b.format}: {rounded} was rounded to {fmt.name} to compare values")
    xa, xb = convert(a.array, a.fmt, fmt), convert(b.array, b.fmt, fmt)
    widened = _widened(a, xa, fmt) or _widened(b, xb, fmt)
    aligned = _aligned(a, b, xa, xb, fmt, tol, notes)
    if widened:
        aligned.layout["widened"] = "A" if widened is a else "B"
    return aligned


def _aligned(a: Tensor, b: Tensor, xa: np.ndarray, xb: np.ndarray, fmt: Format, tol: Tolerance,
             notes: list[str]) -> Aligned:
    sa, sb = a.shape, b.shape
    if sa == sb or (a.size == b.size and _squeezed(sa) == _squeezed(sb)):
        layout: dict[str, object] = {"kind": "same"}
        if sa != sb:
            notes.append(
                f"shapes {shape_text(sa)} and {shape_text(sb)} differ only by size-1 axes; compared in B's shape"
            )
            layout = {"kind": "squeeze"}
        xa, xb = _contiguous(xa).reshape(sb), _contiguous(xb)
        if (permuted := _permuted(xa, xb, fmt, tol)) is not None:
            layout["permuted"] = permuted
        return Aligned(fmt, xa, xb, layout, notes)
    if len(sa) == len(sb) and sorted(sa) == sorted(sb) and len(sa) <= PERMUTE_MAX_DIMS:
        pos = _sample(xb.size)
        perm, agreeing = _best_permutation(xa, xb, fmt, tol, pos)
        notes.append(f"A was transposed with axes {perm} to B's shape {shape_text(sb)} before comparing values")
        layout = {"kind": "transpose", "perm": list(perm), "agree": _share(agreeing, pos)}
        return Aligned(fmt, _contiguous(xa.transpose(perm)), _contiguous(xb), layout, notes)
    try:
        common = np.broadcast_shapes(sa, sb)
    except ValueError:
        common = None
    if common is not None and math.prod(common) == max(a.size, b.size):
        notes.append(f"shapes {shape_text(sa)} and {shape_text(sb)} were broadcast to {shape_text(common)} to compare")
        layout = {"kind": "broadcast", "shape": list(common)}
        wide_a, wide_b = (_contiguous(np.broadcast_to(x, common)) for x in (xa, xb))
        return Aligned(fmt, wide_a, wide_b, layout, notes)
    layout = {"kind": "none", "broadcast": None if common is None else list(common)}
    if (found := inside(xa, xb, fmt, tol)) is not None:
        layout["inside"] = found
    return Aligned(fmt, None, None, layout, notes)


def like_a(array: np.ndarray, aligned: Aligned) -> np.ndarray:
    """An array of A's shape laid out as A was for the comparison (a view where possible).

    A third input in A's shape, such as a float64 reference, must be moved exactly as A
    was, or its elements would be paired with the wrong ones of B.
    """
    shape = aligned.shape
    kind = aligned.layout["kind"]
    if kind == "transpose":
        return array.transpose(aligned.layout["perm"])  # type: ignore[arg-type]
    if kind == "squeeze":
        return array.reshape(shape)
    return np.broadcast_to(array, shape)  # type: ignore[arg-type]
