"""A third run as reference: whether B is as close to it as A is, which outweighs the
findings that judge only the size of the differences."""

from __future__ import annotations

from ..report.model import Finding, Report

# Findings that judge the size of the differences, which a reference outweighs: when it
# shows B rounding-equivalent to A they drop one severity.  A difference large for its
# magnitude is still rounding where the value itself came from cancellation, which only
# the reference can see.
_OUTWEIGHED_BY_REFERENCE = {"tolerance", "region", "sign_flip", "offset", "scale", "not_rounding", "precision"}
_DEMOTED = {"error": "warning", "warning": "info"}


def reference_findings(r: Report, findings: list[Finding]) -> list[Finding]:
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

