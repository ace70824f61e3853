"""The dtype finding and its evidence: a mismatch leads the report (torch.testing fails
on it by default), and says whether the values agree to the narrower format's rounding."""

from __future__ import annotations

from ..numerics.bits import format_of
from ..report.model import Finding, Report


def dtype_findings(r: Report, check_dtype: bool = True) -> list[Finding]:
    """A dtype mismatch is the first thing a user must see (torch.testing fails on it by
    default): an error, unless ``check_dtype`` is off and both sides are floats, when the
    values are judged as rounding in the narrower format (info; the headline says so).
    :func:`dtype_evidence` adds whether the values agree to that format's rounding."""
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


def dtype_evidence(findings: list[Finding], r: Report) -> None:
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

