"""The catalogue of signatures: each one's kinds, test, threshold and causes, in the order
they are tried, and the one function that runs them (:func:`run`).

``docs/signatures.md`` is this table in prose; a test checks they name the same kinds.
Relations that say exactly what one side is in terms of the other (a transpose, a
reordering, dropout, a clip) come first; the scale/offset fit runs when none holds, then
the grid, and the bias and dependence statistics last, when nothing more specific explains
the difference.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ...report.model import Finding
from . import affine, bias, causes, clip, dropout, grid, precision, reorder, transpose
from .sample import Pair


def elementwise_relation(pair: Pair) -> list[Finding]:
    """The relation search's elementwise map, else its rotation of feature pairs (imported
    here, late: relations reads this package)."""
    from ..relations import normalise, rotation
    from ..relations.search import find

    return find(pair) or normalise.find(pair) or rotation.find(pair)


def centred_row_scale(pair: Pair) -> list[Finding]:
    """The relation search's per-row scale about a per-feature centre (imported late)."""
    from ..relations import centred

    return centred.find(pair)


def input_independent_offset(pair: Pair) -> list[Finding]:
    """The relation search's offset that is the same for every sample (imported late)."""
    from ..relations import invariant

    return invariant.find(pair)


@dataclass(frozen=True)
class Signature:
    kinds: tuple[str, ...]
    test: str
    threshold: str
    causes: tuple[str, ...]
    needs_layout: bool  # needs the aligned arrays (in-memory pairs only)
    find: Callable[[Pair], list[Finding]] | None = None
    # Judges only which slice of B is closest, never a size: valid on a coarse print too.
    scale_free: bool = False


CATALOGUE: list[Signature] = [
    Signature(
        ("elementwise", "normalisation", "rotation"),
        "A = f(B) or B = f(A) for a parameter-free map: powers, exp, activations and their variants, casts",
        "the map leaves ≤ the rounding allowed on 99% of the sampled elements the identity leaves more on; "
        "a normalisation: softmax/log-softmax/L2/layer norm of one side's fibres matches the other's on 99%; "
        "a rotation: feature-pair norms agree to rounding on 99% of sampled pairs, 16 of them turned",
        ("an activation variant (GELU's tanh approximation against erf, hardswish against SiLU)",
         "an exp, log or power applied on one side only", "a cast through a narrower format and back",
         "a softmax or normalisation on one side only or over another axis", "a rotary embedding that differs"),
        False,
        None,  # run by :func:`run` before the affine fit (docs/relations.md)
    ),
    Signature(
        ("transposed",),
        "A against B with two equal-sized axes swapped, on the flat sample",
        "8× closer than in the given order, which is beyond rounding",
        tuple(causes.TRANSPOSED),
        True,
        transpose.find,
        scale_free=True,
    ),
    Signature(
        ("reversed", "shifted", "permuted"),
        "each slice of A matched to the nearest slice of B along each axis",
        "half the indices matched 8× closer elsewhere, nine in ten following one rule",
        tuple(causes.REVERSED + causes.SHIFTED + causes.PERMUTED),
        True,
        reorder.find,
        scale_free=True,
    ),
    Signature(
        ("dropout",),
        "zeros on one side only, the rest a scale 1/(1-p) of the other",
        "1/s within Z binomial sd of the kept share; fit leaves ≤ 25% of the raw RMS",
        tuple(causes.DROPOUT),
        False,
        dropout.find,
    ),
    Signature(
        ("clipped",),
        "one side's extreme value held exactly where the other goes beyond it (both extremes when both are)",
        "≥ 8 held (2 at each bound of a two-sided clip), 90% of those beyond; the rest leaves ≤ 25% of the raw RMS",
        tuple(c for cs in causes.CLIPPED.values() for c in cs),
        False,
        clip.find,
    ),
    Signature(
        (
            "scale",
            "offset",
            "affine",
            "sign_flip",
            "row_scale",
            "row_offset",
            "slice_scale",
            "slice_offset",
            "slice_affine",
        ),
        "least-squares A ≈ s·B + c globally, per slice along each axis, per row across it",
        "residual ≤ 25% of the raw RMS; deviation past 8·u·depth·sqrt(m) or one-signed beyond Z",
        tuple(causes.OFFSET + causes.ROW_SCALE + causes.SLICE["slice_affine"]),
        False,
        affine.find,
    ),
    Signature(
        ("grid",),
        "approximate GCD of the gaps between one side's distinct values (per last-axis slice)",
        "every gap within 2% of a multiple; step ≥ 64 × the format's spacing; other side off it",
        tuple(causes.GRID),
        False,
        None,  # run by :func:`run` after the affine fit, with the fingerprint's unit roundoff
    ),
    Signature(
        ("sign_bias", "value_dependence", "position_dependence"),
        "sign test of A − B; Spearman correlation of A − B with B and with each axis index",
        "|z| > 6 and an effect beyond 8·u·depth",
        (),  # descriptions without a relation: they name no cause (bias.NO_CAUSE)
        False,
        None,  # run by :func:`run` with the fingerprint's unit roundoff
    ),
    Signature(
        ("precision",),
        "median relative difference in bits; exact representability in bfloat16, float16, TF32",
        "median ≥ 64·u·depth; candidates within 8× of their unit roundoff; all of ≥ 16 values exact",
        tuple(c for cs in causes.SWITCHES.values() for c in cs),
        False,
        None,  # run by diagnose: its severity follows the tolerance
    ),
]

# Tried first, all of them: each says exactly what one side is in terms of the other.
RELATIONS = [s for s in CATALOGUE if s.kinds[0] in ("transposed", "reversed", "dropout", "clipped")]


def run(pair: Pair, u: float | None = None, u_proven: float | None = None) -> list[Finding]:
    """Every structural finding for ``pair``, most specific first (see the module doc);
    ``u`` is the unit roundoff of a narrower format the difference's size points at, which
    only the position test reads, and ``u_proven`` that of a format one side is exact in,
    which the value test reads too (:func:`.bias.find`)."""
    found: list[Finding] = []
    for sig in RELATIONS:
        if sig.needs_layout and not pair.in_memory:
            continue
        if (pair.printed or not pair.fmt.is_float) and not sig.scale_free:
            continue
        found += sig.find(pair)  # type: ignore[misc]
    if found or pair.printed or not pair.fmt.is_float:
        return found  # the size tests need a rounding model: integers and coarse prints have none
    # A per-channel affine map of quantised inputs (wrong normalisation constants on uint8
    # images) leaves both sides on grids: the affine relation says more, so it goes first.
    # A parameter-free elementwise map (A = exp(B), GELU's variants, a cast) is more
    # specific than a fitted scale, so the relation search comes before both.
    for find in (elementwise_relation, centred_row_scale, affine.find, input_independent_offset, grid.find):
        found = find(pair)
        if found:
            return found
    return bias.find(pair, u, u_proven)


def kinds() -> set[str]:
    return {k for s in CATALOGUE for k in s.kinds}


__all__ = ["CATALOGUE", "Signature", "kinds", "precision", "run"]
