"""Findings and the verdict: does the shape of the difference look like rounding or a bug?

Rounding leaves a thin spread of small relative errors that scale with magnitude.  Bugs
leave structure: a wrong shape or dtype, NaN on one side, a whole channel or row wrong
while the rest matches, a sign flip, a constant offset, a scale factor.  Each check reads
the report's numbers and the bounded samples compare kept, and adds a :class:`Finding`;
the verdict follows from their severities.

This module holds the order of the checks and how one check's finding silences another
(a layout align named, a structure that makes a precision fingerprint moot); each check
lives in its own module beside it (:mod:`.shape`, :mod:`.dtype_evidence`,
:mod:`.nonfinite`, :mod:`.structure`, :mod:`.failing_region`, :mod:`.pattern`,
:mod:`.tolerance_findings`, :mod:`.rounding`, :mod:`.reference`), and the relation grammar
the structure step runs in :mod:`perpendis.diagnosis.relations`.
"""

from __future__ import annotations

import numpy as np

from ..report.model import Finding, Report
from .border_region import find_border
from .dtype_evidence import dtype_evidence, dtype_findings
from .failing_region import find_region
from .nonfinite import nonfinite_findings
from .pattern import find_pattern
from .reference import reference_findings
from .rounding import ROUNDING_SHARE, rounding_findings
from .shape import shape_findings
from .spared_region import find_spared
from .structure import cast_within_tolerance, declared_precision, structure
from .tolerance_findings import lossy_findings, tolerance_findings

__all__ = ["ROUNDING_SHARE", "diagnose"]

_SEVERITY = {"error": 0, "warning": 1, "info": 2}
_DEPENDENCE = {"sign_bias", "position_dependence", "value_dependence"}


def _holds_everywhere(structural: list[Finding]) -> bool:
    relation = ((structural[0].where or {}).get("relation") or {}) if structural else {}
    return relation.get("share", 0.0) >= 1.0 and relation.get("scope") == "everywhere"


def _sorted(findings: list[Finding]) -> list[Finding]:
    """Most severe first, keeping the order of the checks within a severity."""
    return sorted(findings, key=lambda f: _SEVERITY.get(f.severity, len(_SEVERITY)))


# Said when a model output's difference is structural but implies no cause: the place it
# starts is found layer by layer, and these are the commands that do it.
LAYER_HINT = (
    "no cause is implied by what the output shows; the first layer where A departs is found layer by layer: "
    "`perpendis check-export model.onnx --module model.py:NAME --input x.npy` runs both, or "
    "`perpendis bisect torch.safetensors ort.npz --model model.onnx` compares two layer captures"
)
_NOT_THE_VALUES = {"dtype", "shape", "layout", "broadcast", "reference", "lossy"}
_ROUNDING_KINDS = {"rounding", "deep_rounding", "precision"}


def _layer_hint(findings: list[Finding]) -> list[Finding]:
    """The hint, when the values fail (a structure, or the tolerance alone) and no finding
    names a cause or calls the differences rounding; a shape or dtype error comes first."""
    errors = [f for f in findings if f.severity == "error"]
    if not errors or any(f.kind in _NOT_THE_VALUES for f in errors) or any(f.causes for f in errors):
        return []
    if any(f.kind in _ROUNDING_KINDS for f in findings):
        return []
    return [Finding("layers", "info", LAYER_HINT)]


def diagnose(report: Report, *, depth: float = 1.0, check_dtype: bool = True,
             preset: str | None = None) -> tuple[list[Finding], str]:
    """The findings (most telling first) and the verdict of a report, from its numbers, its
    samples and the relation grammar (:mod:`perpendis.diagnosis.relations`); the report's one writer
    (:meth:`perpendis.engine.compare.Prepared.finish`) puts them in it.

    Any error-level structural finding makes the verdict ``investigate`` even when every
    element passes the tolerance; a precision finding leads when nothing structural does.
    A dtype mismatch is an error unless ``check_dtype`` is off for two float formats, the
    declared ``preset`` is for the narrower one, or the wider side holds only its values.
    """
    # Ratios against |B| meet B = 0: each test filters the non-finite values it makes, so
    # NumPy's floating-point warnings about them are not the user's to see (np.errstate is
    # per thread, as the bisect's workers need).
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        return _diagnose(report, depth, check_dtype, preset)


def _diagnose(report: Report, depth: float, check_dtype: bool, preset: str | None) -> tuple[list[Finding], str]:
    findings = shape_findings(report) + dtype_findings(report, check_dtype, preset)
    if report.compared_shape is not None and report.n_bitwise_diff:
        nonfinite = nonfinite_findings(report)
        structural, found_precision, narrow = structure(report, depth)
        if any(f.kind == "layout" for f in findings):
            structural = [f for f in structural if f.kind != "transposed"]  # align named it already
        region_findings, region = find_region(report)
        if all(f.kind in _DEPENDENCE for f in structural):
            # A sign flip, offset or scale of the failing region says more than a dependence
            # on position or value, which such a region also leaves.
            # So does a start of an axis spared while every later entry departs.
            spared = [] if region_findings else find_border(report) or find_spared(report)
            pattern = spared or find_pattern(report, region, region_findings[0].where if region_findings else None,
                                             depth)
            # Without a map of its own, the region says more than the dependences it leaves.
            structural = pattern or ([] if region_findings else structural)
        # A relation that holds on every element holds on the infinities too (a filter that
        # writes −inf, a flush to −inf): it explains them, so it leads.
        everywhere = _holds_everywhere(structural) and bool(structural[0].causes)
        findings += structural + nonfinite if everywhere else nonfinite + structural
        if found_precision is not None:
            findings.append(found_precision)
        if everywhere:
            # A form with its causes explains every element: where the failures lie is said,
            # but a region's own causes (a mask at one end, one slice computed differently)
            # do not follow from it, nor do the non-finite values' own (a float16 overflow for
            # NaNs that bytes read in the other order made).
            for f in region_findings + nonfinite:
                f.causes = []
        findings += region_findings
        findings += tolerance_findings(report)
        findings += rounding_findings(report, depth, narrow, bool(structural))
    elif report.tolerance is not None and report.tolerance.warning:
        findings += tolerance_findings(report)
    findings += lossy_findings(report)
    findings += reference_findings(report, findings)
    declared_precision(findings, report)
    cast_within_tolerance(findings, report)
    dtype_evidence(findings, report)
    findings = _sorted(findings) + _layer_hint(findings)
    if report.identical:
        return findings, "identical"
    if any(f.severity == "error" for f in findings) or report.compared_shape is None:
        return findings, "investigate"
    return findings, "rounding"
