"""NaN and infinity on one side only, and signed zeros: findings that need no statistics."""

from __future__ import annotations

from ..report.model import Finding, Report, place
from ..report.text import shape_text


def _nonfinite_causes(r: Report) -> list[str]:
    """An overflow in a narrower format is implied only when a side is one; otherwise a
    NaN on one side implies no one cause (an overflow, a log of zero, a removed max-shift
    and an uninitialised buffer all leave it), so none is named."""
    narrow = {"float16", "bfloat16"} & {str(r.a.get("dtype")), str(r.b.get("dtype"))}
    return [f"an overflow in {' or '.join(sorted(narrow))} (float16 saturates at 65504)"] if narrow else []


def nonfinite_findings(r: Report) -> list[Finding]:
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

