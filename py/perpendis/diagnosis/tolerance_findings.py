"""What the tolerance test says (how many elements fail it, and with which preset), and
sides printed too coarsely for small differences to be seen."""

from __future__ import annotations

from ..numerics.figures import count, percent
from ..report.model import Finding, Report, place
from ..report.text import judged_of, passing_tolerance, shape_text


def tolerance_findings(r: Report) -> list[Finding]:
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


def lossy_findings(r: Report) -> list[Finding]:
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

