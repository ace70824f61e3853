"""The grammar: every member that states an exact map A = T(B) (or B = T(A)) to rounding,
each with its kinds, test, threshold and causes, in the order they are tried, and the one
function that tries them (:func:`run`).

``docs/relations.md`` is this table in prose; a test checks they name the same kinds.
Members come in two stages.  The *exact* ones say what one side is in terms of the other
without fitting a size (a transpose, a reordering, dropout, a clip): each is tried, and
every one that holds is kept.  When none holds, the *fitted* ones are tried in turn and
the first that holds is the answer: a parameter-free map (A = exp(B), GELU's variants, a
cast) is more specific than a fitted scale, so it comes first; a per-row scale about a
per-feature centre before the plain scale/offset fit it generalises; a per-channel affine
map of quantised inputs leaves both sides on grids, so the affine fit goes before the grid.
The precision fingerprint is the table's last member: it is run before the others by
:mod:`perpendis.diagnosis.structure`, as its unit roundoff is what the descriptions of
:mod:`perpendis.diagnosis.dependence` are judged at and its severity follows the tolerance.

The sign bias and the dependence on the value or the position are not members: they
state no map, name no cause, and only describe a difference no member explains
(:mod:`perpendis.diagnosis.dependence`, asked by the structure step when :func:`run` finds
nothing).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ...report.model import Finding
from . import (
    affine,
    causes,
    centred,
    clip,
    dropout,
    elementwise_finding,
    forms,
    grid,
    invariant,
    normalise,
    reorder,
    rotation,
    transpose,
)
from .forms import index_causes
from .pair import Pair


def parameter_free_map(pair: Pair) -> list[Finding]:
    """An elementwise map, else a normalisation of one side's fibres, else a rotation of
    feature pairs: the maps with no fitted size."""
    return elementwise_finding.find(pair) or normalise.find(pair) or rotation.find(pair)


@dataclass(frozen=True)
class Member:
    kinds: tuple[str, ...]
    test: str
    threshold: str
    causes: tuple[str, ...]
    needs_layout: bool  # needs the aligned arrays (in-memory pairs only)
    find: Callable[[Pair], list[Finding]] | None
    exact: bool = False  # tried whatever else holds, before the fitted members
    # Judges only which slice of B is closest, never a size: valid on a coarse print too.
    scale_free: bool = False


MEMBERS: list[Member] = [
    Member(
        ("transposed",),
        "A against B with two equal-sized axes swapped, on the flat sample",
        "8× closer than in the given order, which is beyond rounding",
        tuple(causes.TRANSPOSED),
        True,
        transpose.find,
        exact=True,
        scale_free=True,
    ),
    Member(
        ("reversed", "shifted", "permuted"),
        "each slice of A matched to the nearest slice of B along each axis",
        "half the indices matched 8× closer elsewhere, nine in ten following one rule",
        tuple(causes.REVERSED + causes.SHIFTED + causes.PERMUTED),
        True,
        reorder.find,
        exact=True,
        scale_free=True,
    ),
    Member(
        ("dropout",),
        "zeros on one side only, the rest a scale 1/(1-p) of the other",
        "1/s within Z binomial sd of the kept share; fit leaves ≤ 25% of the raw RMS",
        tuple(causes.DROPOUT),
        False,
        dropout.find,
        exact=True,
    ),
    Member(
        ("clipped",),
        "one side's extreme value held exactly where the other goes beyond it (both extremes when both are)",
        "≥ 8 held (2 at each bound of a two-sided clip), 90% of those beyond; the rest leaves ≤ 25% of the raw RMS",
        tuple(c for cs in causes.CLIPPED.values() for c in cs),
        False,
        clip.find,
        exact=True,
    ),
    Member(
        ("elementwise", "normalisation", "rotation"),
        "A = f(B) or B = f(A) for a parameter-free map: powers, exp, activations and their variants, casts",
        "the map leaves ≤ the rounding allowed on 99% of the sampled elements the identity leaves more on; "
        "a normalisation: softmax/log-softmax/L2/layer norm of one side's fibres matches the other's on 99%; "
        "a rotation: feature-pair norms agree to rounding on 99% of sampled pairs, 16 of them turned",
        ("an activation variant (GELU's tanh approximation against erf, hardswish against SiLU)",
         "an exp, log or power applied on one side only", "a cast through a narrower format and back",
         "a softmax or normalisation on one side only or over another axis", "a rotary embedding that differs"),
        False,
        parameter_free_map,
    ),
    Member(
        ("row_scale",),
        "A − κ = r·(B − κ): one factor per row about one centre per feature, by alternating least squares",
        "every row moved beyond rounding, one way; factors that differ; holds to the tolerance",
        tuple(causes.ROW_SCALE),
        False,
        centred.find,
    ),
    Member(
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
        tuple(causes.OFFSET + causes.ROW_OFFSET + causes.ROW_SCALE + causes.SLICE[("slice_affine", "channel")]
              + causes.SLICE[("slice_affine", "feature")]),
        False,
        affine.find,
    ),
    Member(
        ("slice_offset",),
        "A = B + c with c one value per index of one axis, the same across every other axis",
        "each slice's differences agree to rounding or the pair's noise; offsets beyond that",
        tuple(causes.SLICE[("slice_offset", "channel")] + causes.SLICE[("slice_offset", "feature")]),
        False,
        invariant.find,
    ),
    Member(
        ("grid",),
        "approximate GCD of the gaps between one side's distinct values (per last-axis slice; "
        "else a step per index of one axis)",
        "every gap within 2% of a multiple; step ≥ 64 × the format's spacing; other side off it",
        tuple(causes.GRID),
        False,
        grid.find,
    ),
    Member(
        ("precision",),
        "median relative difference in bits; exact representability in bfloat16, float16, TF32",
        "median ≥ 64·u·depth; candidates within 8× of their unit roundoff; all of ≥ 16 values exact",
        tuple(c for cs in causes.SWITCHES.values() for c in cs),
        False,
        None,  # run first by the structure step: its severity follows the tolerance
    ),
]

EXACT = [m for m in MEMBERS if m.exact]
FITTED = [m for m in MEMBERS if not m.exact and m.find is not None]


def run(pair: Pair) -> list[Finding]:
    """The members' answer or the form search's, whichever says more (:func:`_prefer`).
    Values printed at a few digits get only the structural forms: a fitted map needs the
    stored bits, where each side is zero or masked does not."""
    members = run_members(pair)
    form = forms.search(pair, forms.STRUCTURAL if pair.printed and pair.fmt.is_float else forms.FAMILIES)
    if form is None:
        return members
    return [forms.finding(form)] if _prefer(form, members) else members


# Forms no member states: when one holds, it is the more specific answer.
_SPECIFIC = {"wrap", "saturated", "threshold", "fill", "causal_mask", "ties", "rounded_toward_zero", "rounded_down",
             "sign_split", "disjoint_supports", "row_temperature", "scan", "fibre_map", "block_constant",
             "sample_offset", "group_affine", "normalised_fibres"}


_FITTED_KINDS = {"row_scale", "scale", "offset", "affine", "row_offset"}


def _prefer(form: forms.Form, members: list[Finding]) -> bool:
    """Whether the form found says more than the members' findings: a form of a kind no
    member has, or one with causes where the members name none."""
    if not members:
        return True
    if (form.kind == "group_affine" and form.params.get("groups_of", 1) == 1
            and members[0].kind.startswith("slice_")):
        return False  # one map per channel: the members' per-slice relation says as much, with its axis
    if (form.params.get("map") == "axes_permuted" and not form.params["moved"] and len(form.params["axes"]) == 1
            and not index_causes.pairs_swapped(form.params) and members[0].kind in ("permuted", "shifted", "reversed")):
        return False  # one axis reordered: the members say its rule (a roll, a flip) or list it index by index
    if form.kind in _SPECIFIC or (form.kind == "index_map" and form.params.get("map") in (
            "halves", "reshape", "sorted", "gather", "axes_permuted")):
        # More specific, unless it names no cause where a member does (a per-row affine map
        # that a member sees as a layer norm of the other side, with that norm's causes).
        return bool(form.causes) or not any(f.causes for f in members)
    if form.kind in ("elementwise_map", "scale", "offset", "affine") and members[0].kind in _FITTED_KINDS:
        return True  # one map for every element, where the members fitted one per slice or row
    return bool(form.causes) and not any(f.causes for f in members)


def run_members(pair: Pair) -> list[Finding]:
    """Every exact member that holds for ``pair``, else the first fitted one that does
    (see the module doc); nothing when no member holds."""
    found: list[Finding] = []
    for member in EXACT:
        if member.needs_layout and not pair.in_memory:
            continue
        if (pair.printed or not pair.fmt.is_float) and not member.scale_free:
            continue
        found += member.find(pair)  # type: ignore[misc]
    if found or pair.printed or not pair.fmt.is_float:
        return found  # the size tests need a rounding model: integers and coarse prints have none
    for member in FITTED:
        found = member.find(pair)  # type: ignore[misc]
        if found:
            return found
    return []


def kinds() -> set[str]:
    return {k for m in MEMBERS for k in m.kinds} | forms.KINDS
