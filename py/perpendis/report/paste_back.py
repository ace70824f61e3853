"""The "paste back" lines: code a user pastes into their test to pin what the report found.

One place computes them from a report, for every renderer (page, Markdown, the report JSON):

- ``assert_same(actual, expected, atol=…, rtol=…)`` at the smallest atol that passes at the
  rtol used, or a comment saying no tolerance makes it pass (a NaN or inf mismatch, or a
  structural finding, which ``assert_same`` raises on whatever the tolerance);
- the same tolerance for ``np.testing.assert_allclose`` and ``torch.testing.assert_close``,
  which look at the tolerance only;
- the ``assert_same`` call that reproduces the failure, when the judged tolerance fails.

``actual`` is A and ``expected`` is B, as in :func:`perpendis.testing.assert_same`: the
relative tolerance scales with ``|B|`` in all three libraries.  Tolerances are printed with
three significant digits rounded *up*, so the printed number never falls below the one needed.
"""

from __future__ import annotations

import math
from decimal import Decimal
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .model import Report

# Error findings that come from the failing elements only: at a tolerance that passes every
# element they are gone, so assert_same passes there.  Any other error finding (a sign flip,
# a layout, a channel offset the structure tests saw, ...) makes assert_same raise at any tolerance.
_TOLERANCE_KINDS = frozenset({"tolerance", "region"})


# Below the mantissa's next integer by less than this, x counts as on it (x = 5.91e-08 prints
# as 5.91e-08, not 5.92e-08, though the float is a hair above).
_SLACK = Decimal("1e-9")


def number_up(x: float) -> str:
    """``x`` in at most three significant digits, rounded up so that ``float(text) >= x``."""
    if x == 0:
        return "0"
    exponent = math.floor(math.log10(x)) - 2
    # Scaled by Decimal, exactly: 10.0**exponent is 0.0 below about 1e-323 (a subnormal x).
    mantissa = math.ceil(Decimal(x).scaleb(-exponent) - _SLACK)
    for step in range(3):
        text = f"{float(Decimal(mantissa + step).scaleb(exponent)):.3g}"
        if float(text) >= x:
            return text
    return repr(x)


def _call(name: str, first: str, second: str, atol: str, rtol: str, extra: str = "") -> str:
    return f"{name}({first}, {second}, rtol={rtol}, atol={atol}{extra})"


def paste_back(r: Report) -> list[dict[str, Any]]:
    """The lines, each ``{"what": ..., "code": ..., "passes": bool}``; empty when no values
    were compared (shapes that cannot be aligned)."""
    t = r.tolerance
    if t is None or r.compared_shape is None:
        return []
    m = r.min_tolerance
    atol, rtol = number_up(m.atol_at_rtol), number_up(t.rtol)
    unreachable = m.n_unreachable or r.n_nan_mismatch + r.n_inf_mismatch
    structural = [f for f in r.findings if f.severity == "error" and f.kind not in _TOLERANCE_KINDS]
    # Two float dtypes whose values agree to the narrower one's rounding: only the dtype
    # check fails, and check_dtype=False passes (as torch.testing's).
    # A mismatch judged in the narrower format (a declared preset, a widened side) is no
    # error here, but the pasted line names no preset: it says check_dtype=False itself.
    waived = r.a.get("dtype") != r.b.get("dtype") and not any(
        f.kind == "dtype" and f.severity == "error" for f in r.findings)
    extra = ", check_dtype=False" if waived else ""
    if structural and all(f.kind == "dtype" and (f.evidence or {}).get("agree_to_rounding") for f in structural):
        structural, extra = [], ", check_dtype=False"
    lines: list[dict[str, Any]] = []
    if unreachable:
        lines.append({"what": "assert_same", "passes": False,
                      "code": f"# no tolerance passes: {unreachable} NaN or inf mismatch(es)"})
    elif structural:
        lines.append({"what": "assert_same", "passes": False,
                      "code": f"# assert_same raises at any tolerance: {structural[0].kind}, {structural[0].message}"})
    else:
        lines.append({"what": "assert_same", "passes": True,
                      "code": f"perpendis.assert_same(actual, expected, atol={atol}, rtol={rtol}{extra})"})
    if not unreachable and r.shape_match:
        same_dtype = r.a.get("dtype") == r.b.get("dtype")
        lines.append({"what": "numpy", "passes": True,
                      "code": _call("np.testing.assert_allclose", "actual", "desired", atol, rtol)})
        close = ", equal_nan=True" + ("" if same_dtype else ", check_dtype=False")
        lines.append({"what": "torch", "passes": True,
                      "code": _call("torch.testing.assert_close", "actual", "expected", atol, rtol, close)})
    if not t.passed:
        judged = f"preset={t.preset!r}" if t.preset else f"atol={t.atol!r}, rtol={t.rtol!r}"
        lines.append({"what": "reproduce", "passes": False,
                      "code": f"perpendis.assert_same(actual, expected, {judged})"})
    return lines


def paste_back_markdown(r: Report) -> list[str]:
    """The lines as a fenced Python block for the Markdown report; none when there are none."""
    lines = paste_back(r)
    if not lines:
        return []
    return ["", "Paste back:", "", "```python", *(line["code"] for line in lines), "```"]
