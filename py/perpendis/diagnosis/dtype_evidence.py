"""The dtype finding and its evidence: a mismatch leads the report (torch.testing fails
on it by default), and says whether the values agree to the narrower format's rounding."""

from __future__ import annotations

from ..numerics.bits import format_of
from ..numerics.tolerance import PRESETS
from ..report.model import Finding, Report

# A declared preset that names a float format says the user computes in it on purpose.
_PRESET_FORMATS = {"fp16": "float16", "bf16": "bfloat16", "fp8": "float8"}


def _waived(r: Report, check_dtype: bool, preset: str | None) -> str | None:
    """Why a mismatch of two floats is judged in the narrower format instead of failing,
    or None: ``check_dtype`` off; a declared preset for the narrower format (``--preset
    fp16`` with one side float16); or the wider side holding only the narrower format's
    values (align's ``widened``: results of that format stored wider)."""
    if not check_dtype:
        return "check_dtype off"
    if preset and r.compared_as.startswith(_PRESET_FORMATS.get(preset, "\0")):
        return f"the declared preset {preset} is for {r.compared_as}"
    widened = r.layout.get("widened")
    if widened and preset not in PRESETS_SAME_DTYPE:
        dtype = r.a["dtype"] if widened == "A" else r.b["dtype"]
        return (f"every value of {widened} is a {r.compared_as} value: {r.compared_as} results stored as {dtype} "
                "(an fp16 conversion's keep_io_types, a .float() at the output)")
    return None


# Presets that mimic a peer refusing two dtypes (torch.testing's check_dtype=True) keep doing so.
PRESETS_SAME_DTYPE = frozenset(name for name, p in PRESETS.items() if p.rule.same_dtype)


def dtype_findings(r: Report, check_dtype: bool = True, preset: str | None = None) -> list[Finding]:
    """A dtype mismatch is the first thing a user must see (torch.testing fails on it by
    default): an error, unless :func:`_waived` says why two floats are judged in the
    narrower format (a warning, still listed first; the headline says so).  ``preset`` is
    the one the user declared, if any.  :func:`dtype_evidence` adds whether the values
    agree to that format's rounding."""
    if r.dtype_match:
        return []
    fa, fb = format_of(r.a["dtype"]), format_of(r.b["dtype"])
    both_float = fa.is_float and fb.is_float
    message = f"A is {r.a['dtype']} but B is {r.b['dtype']}; values were compared as {r.compared_as}"
    waiver = _waived(r, check_dtype, preset) if both_float else None
    if waiver is not None:
        message += f", the narrower format, as if both had been computed in it ({waiver})"
        return [Finding("dtype", "info" if waiver == "check_dtype off" else "warning", message)]
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

