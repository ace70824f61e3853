"""The one-sentence headline of a report: the single source the page, the CLI, Markdown and
HTML all lead with, so none of them can tell a different story from the findings.

It reads only the report's fields (verdict, findings in the order diagnose gave them, the
tolerance, the sides' descriptions), never the samples, so a report rebuilt from JSON has
the same headline as the one computed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..numerics.figures import count

if TYPE_CHECKING:
    from .model import Finding, Report

PRECISION_KIND = "precision"


def _lossy_precision(info: dict[str, Any]) -> str | None:
    """``"4 decimals"`` (or significant digits, where the print's decimals are unknown) for a
    side read from a print too coarse to pin its values; None for an exact side."""
    if info.get("lossless", True):
        return None
    if info.get("decimals") is not None:
        return f"{info['decimals']} decimals"
    if info.get("digits"):
        return f"{info['digits']} significant digits"
    return "an unknown number of digits"


def _lossy_bound(infos: list[dict[str, Any]]) -> str:
    """What agreeing at the printed precision bounds: each print is within half a unit in its
    last place of the value, so the values themselves may differ by up to one unit."""
    decimals = [i["decimals"] for i in infos if i.get("decimals") is not None]
    if decimals:
        return f"the tensors themselves may still differ by up to {10.0 ** -min(decimals):g} per element"
    digits = [int(i["digits"]) for i in infos if i.get("digits")]
    if digits:
        return f"the tensors themselves may still differ by up to one unit in the {min(digits)}th significant digit"
    return "the tensors themselves may still differ below the printed digits"


def _sentence(text: str) -> str:
    text = text.strip()
    return text if text.endswith((".", "!", "?")) else text + "."


def _capital(text: str) -> str:
    return text[:1].upper() + text[1:]


def _narrower(r: Report) -> str | None:
    """The one sentence a dtype mismatch judged as rounding gets (check_dtype off): both
    sides judged in the narrower format.  A mismatch that is an error leads by itself."""
    if r.dtype_match or r.compared_shape is None:
        return None
    if any(f.kind == "dtype" and f.severity == "error" for f in r.findings):
        return None
    return f"A is {r.a['dtype']} and B is {r.b['dtype']}, so both were judged in {r.compared_as}, the narrower format."


def _first(findings: list[Finding], kind: str) -> Finding | None:
    return next((f for f in findings if f.kind == kind), None)


_SEVERITY_RANK = {"error": 0, "warning": 1, "info": 2}


def main_finding(findings: Sequence[Finding]) -> Finding | None:
    """The most severe finding, the first of its severity (diagnose lists them most telling
    first): the one a table row has room for."""
    return min(findings, key=lambda f: _SEVERITY_RANK.get(f.severity, len(_SEVERITY_RANK)), default=None)


def _top(findings: list[Finding]) -> Finding | None:
    return main_finding(findings)


def headline(r: Report) -> str:
    """The headline sentence(s): what the verdict is and the one finding that says why."""
    if r.compared_shape is None:
        top = _top(r.findings)
        return "Not compared: " + _sentence(top.message if top else "the shapes cannot be aligned")
    lossy = [info for info in (r.a, r.b) if _lossy_precision(info)]
    if r.verdict == "identical":
        if lossy:
            shown = min((_lossy_precision(i) for i in lossy), key=len)
            return f"Identical at the printed precision ({shown}): {_lossy_bound(lossy)}."
        return f"Identical: all {count(r.n_elements)} elements have the same bits, in the same shape and dtype."
    precision = _first(r.findings, PRECISION_KIND)
    top = _top(r.findings)
    if r.verdict == "rounding":
        if precision is not None:
            text = "Rounding at lower precision: " + _sentence(precision.message)
        elif r.n_bitwise_diff == 0:
            text = f"Equal values: all {count(r.n_elements)} elements agree in value."
        elif _first(r.findings, "not_rounding") is not None:
            text = (
                "Within the tolerance given, but not like rounding: "
                f"{count(r.n_bitwise_diff)} of {count(r.n_elements)} elements "
                f"differ, by up to {r.max_rel_diff:.3g} relative, with no structure found; only the loose tolerance "
                "passes them."
            )
        elif _first(r.findings, "deep_rounding") is not None:
            text = (
                f"Rounding of a deep computation: {count(r.n_bitwise_diff)} of {count(r.n_elements)} elements differ, "
                "by at most "
                f"{r.max_ulp} ULP, more than one rounding but with no structure a bug would leave."
            )
        else:
            text = (
                f"Rounding: {count(r.n_bitwise_diff)} of {count(r.n_elements)} elements differ, by at most "
                f"{r.max_ulp} ULP, as rounding does."
            )
    else:
        passed = r.tolerance is not None and r.tolerance.passed
        lead = top if top is not None and top.severity == "error" else None
        if lead is not None and precision is not None and precision.severity == "error":
            lead = precision
        if lead is None:
            text = "Investigate: the differences do not look like rounding alone."
        elif passed and lead.kind != "dtype":
            text = "Inside tolerance, but systematic: " + _sentence(lead.message)
        else:
            text = "Investigate: " + _sentence(lead.message)
    narrower = _narrower(r)
    if narrower:
        text = f"{narrower} {text}"
    if lossy and r.verdict != "identical":
        shown = min((_lossy_precision(i) for i in lossy), key=len)
        text += f" (Judged at the printed precision, {shown}.)"
    return _capital(text)
