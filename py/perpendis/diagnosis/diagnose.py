"""Findings and the verdict: does the shape of the difference look like rounding or a bug?

Rounding leaves a thin spread of small relative errors that scale with magnitude.  Bugs
leave structure: a wrong shape or dtype, NaN on one side, a whole channel or row wrong
while the rest matches, a sign flip, a constant offset, a scale factor.  Each check here
reads the report's numbers and the bounded samples compare kept, and adds a
:class:`Finding`; the verdict follows from their severities.

Why this module is long: every check's place in the order of the findings, and how one
check's finding silences another (a layout align named, a structure that makes a precision
fingerprint moot), is decided here in one reading; the structure tests themselves live in
:mod:`perpendis.signatures`.
"""

from __future__ import annotations

import math

import numpy as np

from ..numerics import bits
from ..numerics.bits import Format, format_of
from ..numerics.figures import count, percent
from ..numerics.tolerance import PRESETS, print_slack, printed_digits
from ..report.model import AxisFailures, Finding, Report, place
from ..report.text import judged_of, passing_tolerance, shape_text
from .relations.region import causes as region_causes
from .relations.region import describe as describe_region
from .signatures import catalogue, pair_of, precision
from .signatures.causes import for_slices
from .signatures.model import ROUNDOFF_FACTOR, rounding_bound

# Rounding-like: relative differences within this many units of roundoff per unit of depth
# (one float32 ULP is 1 to 2 units of roundoff, so 8 allows a few ULP at depth 1).
ROUNDING_SHARE = 0.99  # share of differing elements that must be within that bound
PATTERN_SHARE = 0.9  # share of failing elements a sign flip, offset or scale must explain
REGION_SHARE = 0.9  # share of failures the top indices of an axis must hold
REGION_DENSITY = 0.5  # and the share of their elements that must fail
REGION_MIN_FAILS = 2  # one class of two samples' logits; a cause needs the failures gross too
PATTERN_MIN = 4  # failing elements an offset or scale is fitted on (a sign flip, fitting nothing, needs 2)
GROSS = 8.0  # a region names a cause when passing it needs this many times the tolerance
SEPARATION = 8.0  # and its differences are this many times those outside it
# Roundings deep a narrower format's rounding may be when its own preset fails: a whole
# Llama block stack in bfloat16 leaves a 99th percentile of 13 u, 2 deep at 8 u each.
NARROW_DEPTH = 4

_AXIS_NAMES = {2: ("row", "column"), 4: ("batch", "channel", "height", "width")}
_LAYOUT_NAMES = {(0, 2, 3, 1): ("NCHW", "NHWC"), (0, 3, 1, 2): ("NHWC", "NCHW")}
# Findings that judge the size of the differences, which a reference outweighs: when it
# shows B rounding-equivalent to A they drop one severity.  A difference large for its
# magnitude is still rounding where the value itself came from cancellation, which only
# the reference can see.
_OUTWEIGHED_BY_REFERENCE = {"tolerance", "region", "sign_flip", "offset", "scale", "not_rounding", "precision"}
_DEMOTED = {"error": "warning", "warning": "info"}
_SEVERITY = {"error": 0, "warning": 1, "info": 2}
_DEPENDENCE = {"sign_bias", "position_dependence", "value_dependence"}


def _index_ranges(indices: list[int], bucket: int) -> str:
    """``"2"``, ``"2-3"`` or ``"1, 5"``: the indices (or bucketed index ranges) of a region."""
    spans = sorted((i * bucket, (i + 1) * bucket - 1) for i in indices)
    merged: list[list[int]] = []
    for lo, hi in spans:
        if merged and lo == merged[-1][1] + 1:
            merged[-1][1] = hi
        else:
            merged.append([lo, hi])
    return ", ".join(str(lo) if lo == hi else f"{lo}-{hi}" for lo, hi in merged)


def _permuted_finding(layout: dict[str, object]) -> list[Finding]:
    """The order of axes that would make two equally shaped sides agree, which align found
    when the given order failed widely; the values were still compared as given."""
    permuted = layout.get("permuted")
    if not isinstance(permuted, dict):
        return []
    perm = tuple(permuted["perm"])
    moved = [axis for axis, source in enumerate(perm) if axis != source]
    if len(perm) == 2:
        how = "transposed"
    elif len(moved) == 2:
        i, j = moved
        names = _AXIS_NAMES.get(len(perm))
        how = f"with axes {i} and {j}{f' ({names[i]} and {names[j]})' if names else ''} swapped"
    else:
        how = "with its axes permuted"
    message = (
        f"B looks like A {how}: as A.transpose{perm}, {permuted['agree']:.0%} of sampled "
        f"elements agree, against {permuted['given']:.0%} in the given order, in which the values were compared"
    )
    where = place(shape_text(perm), permutation=list(perm))
    return [Finding("layout", "error", message, where, ["layout (NCHW against NHWC, a missing transpose or permute)"])]


def _shape_findings(r: Report) -> list[Finding]:
    layout = r.layout
    kind = layout.get("kind")
    sa, sb = shape_text(r.a["shape"]), shape_text(r.b["shape"])
    if r.shape_match:
        return _permuted_finding(layout)
    differ = f"A has shape {sa} but B has {sb}"
    if kind == "squeeze":
        squeezed = Finding("shape", "error", f"{differ}: they differ only by size-1 axes; compared in B's shape")
        return [squeezed, *_permuted_finding(layout)]
    if kind == "none":
        extra = ""
        if layout.get("broadcast") is not None:
            extra = (
                f"; they broadcast to {shape_text(layout['broadcast'])}, which compares every pair — "
                "usually a missing squeeze or unsqueeze"
            )
        return [Finding("shape", "error", f"{differ}: the shapes cannot be aligned, so no values were compared{extra}")]
    out = [Finding("shape", "error", differ)]
    if kind == "transpose":
        perm = tuple(layout["perm"])
        names = _LAYOUT_NAMES.get(perm)
        named = f" (A is {names[0]}, B is {names[1]})" if names else ""
        out.append(
            Finding(
                "layout",
                "error",
                f"B looks like A with its axes permuted{named}: compared as A.transpose{perm}, under which "
                f"{layout['agree']:.0%} of sampled elements agree",
                place(shape_text(perm), permutation=list(perm)),
                ["layout (NCHW against NHWC, a missing transpose or permute)"],
            )
        )
    elif kind == "broadcast":
        out.append(
            Finding(
                "broadcast",
                "error",
                f"{sa} and {sb} broadcast to {shape_text(layout['shape'])}: one side was probably expanded or a "
                "reduction dropped an axis; compared after broadcasting",
            )
        )
    return out


def _dtype_findings(r: Report, check_dtype: bool = True) -> list[Finding]:
    """A dtype mismatch is the first thing a user must see (torch.testing fails on it by
    default): an error, unless ``check_dtype`` is off and both sides are floats, when the
    values are judged as rounding in the narrower format (info; the headline says so).
    :func:`_dtype_evidence` adds whether the values agree to that format's rounding."""
    if r.dtype_match:
        return []
    fa, fb = format_of(r.a["dtype"]), format_of(r.b["dtype"])
    both_float = fa.is_float and fb.is_float
    message = f"A is {r.a['dtype']} but B is {r.b['dtype']}; values were compared as {r.compared_as}"
    if both_float and not check_dtype:
        message += ", the narrower format, as if both had been computed in it (check_dtype off)"
        return [Finding("dtype", "info", message)]
    if both_float:
        causes = ["an output left in a lower precision (a model in .half() or .bfloat16(), autocast) or a cast "
                  "missing on one side"]
    else:
        causes = ["a cast missing on one side", "an index or mask tensor compared with values"]
    return [Finding("dtype", "error", message, None, causes)]


def _declared_precision(findings: list[Finding], r: Report) -> None:
    """A pair judged with a narrower format's own preset (the user's declaration that a
    side ran in it), whose differences are that format's size (a side exact in it, or an
    autocast run whose last ops widen, by size alone) and every one rounding of that
    format (the rounding finding, against B's RMS where |B| is smaller): the preset's
    fixed atol failing near-zero values of a cancelling sum is then no bug, and an error
    verdict would contradict the rounding finding.  The tolerance and precision findings
    become a warning and information that say so."""
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
    for f in findings:
        if f.kind == "tolerance" and f.severity == "error":
            f.severity = "warning"
            f.message += (f"; the differences are {' or '.join(amount['formats'])} rounding of B's scale (see the "
                          "rounding finding): the preset's fixed atol fails near-zero values of sums that cancel, "
                          "and a deep computation in that format rounds more than once")


def _dtype_evidence(findings: list[Finding], r: Report) -> None:
    """Says on an error-level float dtype finding whether the values agree to the narrower
    format's rounding, i.e. whether anything else was found: then the mismatch is the only
    problem, and ``check_dtype=False`` judges the pair as rounding."""
    dtype = next((f for f in findings if f.kind == "dtype" and f.severity == "error"), None)
    if dtype is None or not (format_of(r.a["dtype"]).is_float and format_of(r.b["dtype"]).is_float):
        return
    others = [f for f in findings if f is not dtype and f.severity == "error"]
    if r.compared_shape is None:
        return
    if others:
        dtype.message += f"; the values also differ beyond {r.compared_as}'s rounding (below)"
        dtype.evidence = {"agree_to_rounding": False, "format": r.compared_as}
    else:
        dtype.message += (f"; the values agree to {r.compared_as}'s rounding, so with check_dtype=False "
                          "(--no-check-dtype) the pair is judged rounding")
        dtype.evidence = {"agree_to_rounding": True, "format": r.compared_as}


def _nonfinite_causes(r: Report) -> list[str]:
    """An overflow in a narrower format is implied only when a side is one; otherwise a
    NaN on one side implies no one cause (an overflow, a log of zero, a removed max-shift
    and an uninitialised buffer all leave it), so none is named."""
    narrow = {"float16", "bfloat16"} & {str(r.a.get("dtype")), str(r.b.get("dtype"))}
    return [f"an overflow in {' or '.join(sorted(narrow))} (float16 saturates at 65504)"] if narrow else []


def _nonfinite_findings(r: Report) -> list[Finding]:
    out = []
    for kind, n, where in (
        ("nan", r.n_nan_mismatch, r.nan_mismatch_indices),
        ("inf", r.n_inf_mismatch, r.inf_mismatch_indices),
    ):
        if n:
            what = "NaN on one side only" if kind == "nan" else "infinite on one side, or infinities of opposite sign"
            out.append(
                Finding(
                    kind,
                    "error",
                    f"{n} element(s) are {what}",
                    place(shape_text(where[0]), element=where[0]),
                    _nonfinite_causes(r),
                )
            )
    if r.n_signed_zero_diff:
        out.append(
            Finding(
                "signed_zero",
                "info",
                f"{r.n_signed_zero_diff} element(s) are +0 on one side and -0 on the other: equal as numbers, "
                "different bits",
            )
        )
    return out


def _axis_region(axis: AxisFailures, n_fail: int, n_elements: int) -> list[int] | None:
    """The few bucket indices of one axis that hold most failures, each mostly failing."""
    if axis.size < 2 or n_fail < REGION_MIN_FAILS:
        return None
    counts = np.asarray(axis.fail_counts)
    order = np.argsort(-counts, kind="stable")
    cumulative = np.cumsum(counts[order]) / n_fail
    k = int(np.searchsorted(cumulative, REGION_SHARE)) + 1
    top = order[:k]
    # A few indices, or one run at an end of the axis (the last k positions: padding, a
    # mask, a truncated sequence) up to half of it.
    if k > max(1, min(4, len(counts) // 4)):
        lo, hi = int(top.min()), int(top.max())
        if not ((lo == 0 or hi == len(counts) - 1) and hi - lo + 1 <= len(counts) // 2):
            return None
        top, k = np.arange(lo, hi + 1), hi - lo + 1
    per_index = n_elements / axis.size * axis.bucket
    if counts[top].sum() / (k * per_index) < REGION_DENSITY:
        return None
    return sorted(int(i) for i in top)


def _region(r: Report) -> tuple[list[Finding], dict[int, list[int]]]:
    tol = r.tolerance
    if tol is None or not r.axes:
        return [], {}
    region = {}
    for axis in r.axes:
        top = _axis_region(axis, tol.n_fail, tol.n_judged or r.n_elements)  # complex values: judged whole
        if top is not None:
            region[axis.axis] = top
    if not region:
        return [], {}
    names = _AXIS_NAMES.get(len(r.axes), ())
    parts = []
    for ax, top in region.items():
        bucket = r.axes[ax].bucket
        label = f" ({names[ax]} {_index_ranges(top, bucket)})" if names and bucket == 1 else ""
        parts.append(f"axis {ax} index {_index_ranges(top, bucket)}{label}")
    # The axis named is the one whose few indices hold the failures most tightly.
    axis = min(region, key=lambda ax: len(region[ax]) * r.axes[ax].bucket / r.axes[ax].size)
    bucket = r.axes[axis].bucket
    indices = [i * bucket for i in region[axis]]
    where = place("; ".join(parts), axis=axis, axis_size=r.axes[axis].size, indices=indices)
    if tol.first_fail is not None:
        where["element"] = list(tol.first_fail.index)
    held = min(sum(r.axes[ax].fail_counts[i] for i in top) for ax, top in region.items()) / tol.n_fail
    shape = tuple(r.compared_shape or ())
    exact = bucket == 1 and len(region) == 1 and len(shape) == len(r.axes)
    if exact:
        message = (f"A equals B within the tolerance except on {describe_region(shape, axis, region[axis])}, "
                   f"which holds {held:.0%} of the failures")
    else:
        message = f"the failures are concentrated in one region ({held:.0%} of them) while the rest passes"
    causes = region_causes(shape, axis, indices) if exact and _gross(r) and _apart(r, region) else []
    if not causes:
        message += "; no known cause fits a region like this alone"
    return [Finding("region", "error", message, where, causes)], region


def _gross(r: Report) -> bool:
    """Whether the failures are far past the tolerance (passing them needs ≥ GROSS times its
    rtol or atol): a region of elements a few times over it is where rounding meets small
    |B|, which implies no slice computed differently."""
    tol, need = r.tolerance, r.min_tolerance
    if tol is None:
        return False
    by_rtol = need.rtol_at_atol is None or tol.rtol <= 0 or need.rtol_at_atol >= GROSS * tol.rtol
    by_atol = tol.atol <= 0 or need.atol_at_rtol >= GROSS * tol.atol
    return by_rtol and by_atol


def _apart(r: Report, region: dict[int, list[int]]) -> bool:
    """Whether the region's differences stand apart from the rest's: the smallest in it at
    least SEPARATION times the largest outside (on the sampled differing elements).  A
    region picked out by the tolerance where |B| is small, with differences as large
    elsewhere, is no slice computed differently."""
    rows = r.samples.get("diffs")
    if rows is None or not len(rows):
        return False
    d = np.abs(rows[:, 1] - rows[:, 2])
    inside = _in_region(rows[:, 0], r, region)
    if not inside.any() or not np.isfinite(d).all():
        return False
    return bool(not (~inside).any() or d[inside].min() >= SEPARATION * d[~inside].max())


def _in_region(flats: np.ndarray, r: Report, region: dict[int, list[int]]) -> np.ndarray:
    shape = tuple(r.compared_shape or ())
    index = np.unravel_index(flats.astype(np.intp), shape)
    keep = np.ones(flats.shape, dtype=bool)
    for ax, top in region.items():
        keep &= np.isin(index[ax] // r.axes[ax].bucket, top)
    return keep


def _pattern(r: Report, region: dict[int, list[int]], where: dict | None, depth: float) -> list[Finding]:
    """Sign flip, constant offset or scale factor explaining the failing elements."""
    rows = r.samples.get("fails")
    tol = r.tolerance
    if rows is None or tol is None or len(rows) < REGION_MIN_FAILS:
        return []
    if region:
        rows = rows[_in_region(rows[:, 0], r, region)]
    a, b = rows[:, 1], rows[:, 2]
    ok = np.isfinite(a) & np.isfinite(b)
    a, b = a[ok], b[ok]
    if len(a) < REGION_MIN_FAILS:
        return []
    u = format_of(r.compared_as).unit_roundoff
    slack = tol.atol + tol.rtol * np.abs(b) + 4 * u * (np.abs(a) + np.abs(b))
    scope = "in that region" if region else "across the failing elements"
    flip = np.abs(a + b) <= slack
    if flip.mean() >= PATTERN_SHARE and np.mean(np.abs(b) > slack) >= PATTERN_SHARE:
        causes = ["a subtraction with its operands swapped", "a negated weight or a sign convention (sin/cos, rotary)"]
        message = f"A ≈ -B {scope} ({flip.mean():.0%} of sampled failures)"
        return [Finding("sign_flip", "error", message, where, causes)]
    if len(a) < PATTERN_MIN:
        return []  # a flip fits nothing, so two elements show it; an offset or scale is fitted
    offset = float(np.median(a - b))
    fits_offset = np.mean(np.abs(a - b - offset) <= slack)
    nonzero = b != 0
    scale = float(np.median(a[nonzero] / b[nonzero])) if nonzero.any() else 1.0
    fits_scale = np.mean(np.abs(a - scale * b) <= slack)
    if max(fits_offset, fits_scale) < PATTERN_SHARE:
        return []
    # A tight tolerance fails rounding too: an offset or scale is a finding only past what
    # rounding at the data's own precision explains (a 1-3 ULP spread is no bias).
    one = rounding_bound(u, depth)
    scale_of_b = max(float(np.sqrt(np.mean(b * b))), float(r.samples.get("b_rms", 0.0)))
    if fits_offset >= fits_scale and abs(offset) <= one * scale_of_b:
        return []
    if fits_offset < fits_scale and (abs(scale - 1) <= one or abs(scale) <= one):
        return []  # no scale, or A ≈ 0 there: a zeroed region, which the region says better
    # In a region the map is one slice's: a per-slice offset or scale, with their causes.
    n = int((where or {}).get("axis_size") or 0)
    if fits_offset >= fits_scale:
        message = f"A - B ≈ {offset:.6g}, a constant offset {scope} ({fits_offset:.0%} of sampled failures)"
        causes = ["a dropped or doubled bias", "a wrong mean in a normalisation", "an epsilon added in the wrong place"]
        kind = "slice_offset" if region else "offset"
        return [Finding(kind, "error", message, _amount(where, offset=offset),
                        for_slices(kind, n) if region else causes)]
    message = f"A ≈ {scale:.6g} × B, a scale factor {scope} ({fits_scale:.0%} of sampled failures)"
    causes = ["a wrong normalisation constant (std, 1/sqrt(d))", "biased against unbiased variance",
              "dropout or BatchNorm in training mode"]
    kind = "slice_scale" if region else "scale"
    return [Finding(kind, "error", message, _amount(where, scale=scale), for_slices(kind, n) if region else causes)]


def _amount(where: dict | None, **amount: float) -> dict:
    """``where`` (or an empty place) with ``amount`` added."""
    out = dict(where or {})
    out["amount"] = {**out.get("amount", {}), **{k: float(v) for k, v in amount.items()}}
    return out


def _tolerance_findings(r: Report) -> list[Finding]:
    tol = r.tolerance
    if tol is None:
        return []
    out = []
    if not tol.passed:
        first = tol.first_fail
        message = (
            f"{count(tol.n_fail)} of {judged_of(r)} ({percent(tol.fraction_fail)}) exceed |A - B| <= atol + rtol·|B| "
            f"with {tol.preset or 'custom'} (atol {tol.atol:g}, rtol {tol.rtol:g}); {passing_tolerance(r)}"
        )
        if tol.refused:  # a peer preset that refuses two dtypes: the elements may all pass
            message = tol.refused if not tol.n_fail else f"{tol.refused}; {message}"
        where = None if first is None else place(shape_text(first.index), element=first.index)
        out.append(Finding("tolerance", "error", message, where))
    if tol.warning:
        out.append(Finding("tolerance_warning", "warning", tol.warning))
    return out


def _rounding(
    r: Report, depth: float, narrow: tuple[str, float] | None = None, structured: bool = False
) -> list[Finding]:
    """Info when the differences look like rounding; when they are bigger than that inside
    the tolerance, a warning if a structure test found why, else info that they are
    rounding of a deeper computation (no structure was found, so nothing contradicts a
    rounding verdict).  ``narrow`` is (name, unit roundoff) of the narrower format one side
    was found computed in, which the differences are then measured against.

    A rounding error is relative to the terms a value was computed from, not to the value:
    an output that cancels (a dot product near zero) keeps the absolute error of its terms.
    So each difference is measured against ``|B|``, or against B's RMS where ``|B|`` is
    smaller, the RMS standing in for the size of the terms.
    """
    rows = r.samples.get("diffs")
    tol = r.tolerance
    fmt = format_of(r.compared_as)
    if rows is None or len(rows) == 0 or tol is None or not fmt.is_float:
        return []
    a, b = rows[:, 1], rows[:, 2]
    usable = np.isfinite(a) & np.isfinite(b) & (np.abs(b) > tol.atol)
    if not usable.any():
        return []
    a, b = a[usable], b[usable]
    scale = np.maximum(np.abs(b), r.samples.get("b_rms", 0.0))
    u = fmt.unit_roundoff if narrow is None else narrow[1]
    bound = ROUNDOFF_FACTOR * u * depth
    slack = _print_slack(r, fmt, a, b)
    share = float(np.mean(np.abs(a - b) <= bound * scale + slack))
    scaled = np.abs(a - b) / scale
    typical = float(np.quantile(scaled, ROUNDING_SHARE))
    u_name = fmt.name if narrow is None else narrow[0]
    u_text = f"u = 2^-{round(-math.log2(u))} for {u_name}"
    measure = "of |B| (or of B's RMS where |B| is smaller, as for sums that cancel)"
    if share >= ROUNDING_SHARE:
        printed = ", or within what the printed digits resolve" if np.any(slack) else ""
        message = (
            f"the differences look like rounding{'' if narrow is None else ' in ' + narrow[0]}: "
            f"{share:.1%} of differing elements are within "
            f"{ROUNDOFF_FACTOR:g}·u·depth {measure}{printed} ({u_text}, depth {depth:g}); the largest is "
            f"{scaled.max() / u:.3g} u"
        )
        return [Finding("rounding", "info", message)]
    needed = math.ceil(typical / (ROUNDOFF_FACTOR * u))
    if not tol.passed:
        if narrow is not None and not structured and needed <= NARROW_DEPTH:
            # Rounding of a narrower format a few roundings deep (a whole model in bfloat16):
            # what it is, whatever the tolerance says; the preset decides (_declared_precision).
            message = (f"the differences are rounding in {narrow[0]} of a computation about {needed} roundings deep: "
                       f"the 99th percentile is {typical:.3g} {measure} ({typical / u:.3g} u, {u_text}), with no "
                       "structure found")
            return [Finding("deep_rounding", "info", message)]
        return []  # the tolerance finding already says this is more than rounding
    plausible = 2.0 ** (round(-math.log2(u)) / 2)  # sqrt(1/u) roundings: 4096 for float32
    if not structured and needed > plausible:
        # Only a tolerance set this loose passes it; the tolerance is the user's call, so
        # this stays a warning, and the headline says the pass is the tolerance's alone.
        message = (
            f"the differences are too large for rounding at any plausible depth: the 99th percentile is "
            f"{typical:.3g} {measure} ({typical / u:.3g} u, {u_text}), rounding only for a computation "
            f"{needed} roundings deep, past sqrt(1/u) = {plausible:.0f}; only the tolerance given passes them"
        )
        return [Finding("not_rounding", "warning", message)]
    if structured:
        message = (
            f"the differences are larger than rounding at depth {depth:g}: the 99th percentile is {typical:.3g} "
            f"{measure} ({typical / u:.3g} u, {u_text}); that is rounding only for a computation about "
            f"{needed} roundings deep"
        )
        return [Finding("not_rounding", "warning", message)]
    message = (
        f"the differences show no structure (no scale, offset, reordering, clip, grid or bias), and their 99th "
        f"percentile is {typical:.3g} {measure} ({typical / u:.3g} u, {u_text}): rounding of a computation about "
        f"{needed} roundings deep (set depth {needed} to judge it so)"
    )
    return [Finding("deep_rounding", "info", message)]


def _print_slack(r: Report, fmt: Format, a: np.ndarray, b: np.ndarray) -> np.ndarray | float:
    """Per sampled pair, how far the sides read from a coarse print may be from their values."""
    slack: np.ndarray | float = 0.0
    for info, values in ((r.a, a), (r.b, b)):
        digits = printed_digits(info)
        if digits is not None:
            slack = slack + print_slack(bits.raw_bits(bits.from_float64(values, fmt), fmt), fmt, digits)
    return slack


def _lossy(r: Report) -> list[Finding]:
    out = []
    for side, info in (("A", r.a), ("B", r.b)):
        if not info.get("lossless", True):
            digits = info.get("digits")
            shown = f"with as few as {digits} significant digits" if digits else "lossily"
            out.append(
                Finding(
                    "lossy",
                    "warning",
                    f"{side} was printed {shown}: differences below that are invisible; save with np.save or print "
                    "with full precision (np.set_printoptions(precision=17), torch.set_printoptions(precision=10))",
                )
            )
    return out


def _reference(r: Report, findings: list[Finding]) -> list[Finding]:
    ref = r.reference
    if ref is None:
        return []
    ratio = f"{ref.ratio:.3g}×" if ref.ratio is not None else "n/a"
    if ref.equivalent:
        for f in findings:
            if f.kind in _OUTWEIGHED_BY_REFERENCE and f.severity in _DEMOTED:
                f.severity = _DEMOTED[f.severity]
                f.message += " (but B is as close to the reference as A is)"
        return [
            Finding(
                "reference",
                "info",
                f"against the reference, B's error (rmse {ref.b_rmse:.3g}) is {ratio} A's (rmse {ref.a_rmse:.3g}): "
                "B is rounding-equivalent",
            )
        ]
    if ref.b_nonfinite > ref.a_nonfinite:
        message = (
            f"against the reference, B is NaN or infinite at {ref.b_nonfinite} element(s) where the reference is "
            f"not (A at {ref.a_nonfinite}): B is not rounding-equivalent to A"
        )
    else:
        message = (
            f"against the reference, B's error (rmse {ref.b_rmse:.3g}, max ulp {ref.b_max_ulp}) is {ratio} A's "
            f"(rmse {ref.a_rmse:.3g}, max ulp {ref.a_max_ulp}): B is not rounding-equivalent to A"
        )
    return [Finding("reference", "error", message)]


def _structure(report: Report, depth: float) -> tuple[list[Finding], Finding | None, tuple[str, float] | None]:
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
    structural = catalogue.run(pair, u, fp.exact[1].unit_roundoff if fp is not None and fp.exact else None)
    if structural and fp is not None and fp.exact is None:
        # Without exact representability the fingerprint is only an error size, which a
        # systematic difference (an approximated activation, a quantised grid) also has.
        fp, narrow = None, None
    found = None
    if fp is not None:
        tol = report.tolerance
        passed = tol is not None and tol.passed
        found = precision.finding(pair, fp, "info" if passed else "error", _preset_text(report, fp))
    return structural, found, narrow


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


def _sorted(findings: list[Finding]) -> list[Finding]:
    """Most severe first, keeping the order of the checks within a severity."""
    return sorted(findings, key=lambda f: _SEVERITY.get(f.severity, len(_SEVERITY)))


def diagnose(report: Report, *, depth: float = 1.0, check_dtype: bool = True) -> tuple[list[Finding], str]:
    """The findings (most telling first) and the verdict of a report, from its numbers, its
    samples and the structure tests (:mod:`perpendis.signatures`); the report's one writer
    (:meth:`perpendis.engine.compare.Prepared.finish`) puts them in it.

    Any error-level structural finding makes the verdict ``investigate`` even when every
    element passes the tolerance; a precision finding leads when nothing structural does.
    A dtype mismatch is an error unless ``check_dtype`` is off for two float formats.
    """
    findings = _shape_findings(report) + _dtype_findings(report, check_dtype)
    if report.compared_shape is not None and report.n_bitwise_diff:
        findings += _nonfinite_findings(report)
        structural, found_precision, narrow = _structure(report, depth)
        if any(f.kind == "layout" for f in findings):
            structural = [f for f in structural if f.kind != "transposed"]  # align named it already
        region_findings, region = _region(report)
        if all(f.kind in _DEPENDENCE for f in structural):
            # A sign flip, offset or scale of the failing region says more than a dependence
            # on position or value, which such a region also leaves.
            pattern = _pattern(report, region, region_findings[0].where if region_findings else None, depth)
            # Without a map of its own, the region says more than the dependences it leaves.
            structural = pattern or ([] if region_findings else structural)
        findings += structural
        if found_precision is not None:
            findings.append(found_precision)
        findings += region_findings
        findings += _tolerance_findings(report)
        findings += _rounding(report, depth, narrow, bool(structural))
    elif report.tolerance is not None and report.tolerance.warning:
        findings += _tolerance_findings(report)
    findings += _lossy(report)
    findings += _reference(report, findings)
    _declared_precision(findings, report)
    _dtype_evidence(findings, report)
    findings = _sorted(findings)
    if report.identical:
        return findings, "identical"
    if any(f.severity == "error" for f in findings) or report.compared_shape is None:
        return findings, "investigate"
    return findings, "rounding"
