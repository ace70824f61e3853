"""The structure step: the relation grammar (:mod:`.relations.grammar`) and the precision
fingerprint run on the sampled pair, the descriptions of a difference no relation explains
(:mod:`.dependence`), and the narrower format a pair judged under its own preset was
declared in."""

from __future__ import annotations

import numpy as np

from ..numerics.tolerance import PRESETS
from ..report.model import Finding, Report
from . import dependence
from .relations import grammar, precision
from .relations.pair import pair_of


def structure(report: Report, depth: float) -> tuple[list[Finding], Finding | None, tuple[str, float] | None]:
    """The structure tests' findings, the precision finding (severity by the tolerance)
    and the narrower format the differences are measured in, if one was found."""
    pair = pair_of(report, depth)
    if pair is None:
        return [], None, None
    fp = None if pair.printed else precision.fingerprint(pair)
    u = None
    narrow = None
    if fp is not None:
        chosen = [fp.exact[1]] if fp.exact else fp.candidates
        narrow = (" or ".join(n.name for n in chosen), max(n.unit_roundoff for n in chosen))
        u = narrow[1]
    u_proven = fp.exact[1].unit_roundoff if fp is not None and fp.exact else None
    # A preset declaring a narrower format (fp16, bf16) says a side was computed in it: its
    # rounding moves the relative error with the value (where it falls in its binade), so
    # a dependence on the value counts only past one rounding of that format.
    declared = max((n.unit_roundoff for n in precision.NARROW
                    if report.tolerance is not None and n.preset == report.tolerance.preset), default=None)
    u_value = max((x for x in (u_proven, declared) if x is not None), default=None)
    structural = grammar.run(pair) or dependence.find(pair, u, u_value)
    if structural and fp is not None and fp.exact is None:
        # Without exact representability the fingerprint is only an error size, which a
        # systematic difference (an approximated activation, a quantised grid) also has.
        fp, narrow = None, None
    if structural and _cast_past_precision(structural[0]):
        # A truncation, or a cast to a float8 format, is on bfloat16's grid too, but was no
        # bfloat16 computation rounded to nearest: the precision finding's causes
        # (autocast, .bfloat16()) do not follow.
        fp, narrow = None, None
    found = None
    if fp is not None:
        tol = report.tolerance
        passed = tol is not None and tol.passed
        found = precision.finding(pair, fp, "info" if passed else "error", _preset_text(report, fp))
    return structural, found, narrow


def _cast_past_precision(f: Finding) -> bool:
    """A cast the precision finding would misname: a truncation, or a format narrower
    than those it names (float8 values are all bfloat16 values)."""
    relation = (f.where or {}).get("relation") or {}
    params = relation.get("params") or {}
    named = {n.name for n in precision.NARROW}
    return f.kind == "elementwise" and relation.get("kind") == "cast" and (
        params.get("mode") == "truncate" or params.get("format") not in named)


def _preset_text(report: Report, fp: precision.Fingerprint) -> str:
    """Which tolerance preset fits the precision found, checked on the sampled failures
    (all of them while they number at most the sample's cap)."""
    tol = report.tolerance
    names = precision.presets(fp)
    if tol is not None and tol.passed:
        return f"the tolerance used ({tol.preset or 'custom'}) passes; the preset for it is {' or '.join(names)}"
    rows = report.samples.get("fails")
    for name in names:
        preset = PRESETS.get(name)
        if preset is None or rows is None:
            continue
        a, b = rows[:, 1], rows[:, 2]
        if len(rows) and np.all(np.abs(a - b) <= preset.atol + preset.rtol * np.abs(b)):
            every = "every failing element" if report.tolerance and report.tolerance.n_fail <= len(rows) else (
                f"all {len(rows)} sampled failing elements")
            return f"preset {name} (atol {preset.atol:g}, rtol {preset.rtol:g}) passes {every}"
    return f"even preset {names[0]} fails some elements, so not only precision differs"


def declared_precision(findings: list[Finding], r: Report) -> None:
    """A pair judged with a narrower format's own preset (the user's declaration that a
    side ran in it), whose differences are that format's size (a side exact in it, or an
    autocast run whose last ops widen, by size alone) and every one rounding of that
    format (the rounding finding, against B's RMS where |B| is smaller): the preset's
    fixed atol failing near-zero values of a cancelling sum is then no bug, and an error
    verdict would contradict the rounding finding.  The tolerance and precision findings
    become a warning and information that say so; so does a region of those failures that
    names no cause (not gross, not apart from the rest): it is where that atol meets small
    |B|, and every difference in it is rounding too."""
    tol = r.tolerance
    found = next((f for f in findings if f.kind == "precision" and f.severity == "error"), None)
    if tol is None or tol.passed or found is None or not any(f.kind in ("rounding", "deep_rounding") for f in findings):
        return
    amount = (found.where or {}).get("amount", {})
    declared = {n.preset for n in precision.NARROW if n.name in amount.get("formats", [])}
    if tol.preset not in declared:
        return  # the preset names no format the differences fit: the user declared none
    found.severity = "info"
    found.message = found.message.split("; even preset")[0] + f"; the preset {tol.preset} was chosen for it"
    formats = " or ".join(amount.get("formats", []))
    for f in findings:
        if f.kind == "region" and f.severity == "error" and not f.causes:
            f.severity = "warning"
            f.message += f"; every difference there is {formats} rounding (see the rounding finding)"
        if f.kind == "tolerance" and f.severity == "error":
            f.severity = "warning"
            f.message += (f"; the differences are {' or '.join(amount['formats'])} rounding of B's scale (see the "
                          "rounding finding): the preset's fixed atol fails near-zero values of sums that cancel, "
                          "and a deep computation in that format rounds more than once")



def cast_within_tolerance(findings: list[Finding], r: Report) -> None:
    """A pair within the tolerance of a preset declaring a narrower float format whose only
    systematic finding is one side rounded to that format (A = B rounded to float16 under
    ``--preset fp16``): the user said a side runs in it, and a cast is its rounding, so it
    is told as a warning rather than made a bug.  Under any other preset such a round trip
    stays a finding that fails the pair ("inside tolerance, but systematic"): a float32
    tensor holding exactly float16(B) was cast somewhere, and a bisect blames that layer."""
    tol = r.tolerance
    if tol is None or not tol.passed:
        return
    errors = [f for f in findings if f.severity == "error"]
    if len(errors) != 1 or errors[0].kind != "elementwise":
        return
    relation = (errors[0].where or {}).get("relation") or {}
    fmt = (relation.get("params") or {}).get("format")
    declared = {n.preset: n.name for n in precision.NARROW}.get(tol.preset or "")
    if relation.get("kind") != "cast" or fmt in (None, "integer") or fmt != declared:
        return
    errors[0].severity = "warning"
    errors[0].message += (f"; every element passes the tolerance, and a cast is a rounding: one side was stored in "
                          f"{fmt} and widened")
