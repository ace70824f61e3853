"""Shape and layout findings: sides that cannot be compared element for element as
given, and the order of axes that would make them agree (found by align)."""

from __future__ import annotations

from ..report.model import Finding, Report, place
from ..report.text import shape_text

AXIS_NAMES = {2: ("row", "column"), 4: ("batch", "channel", "height", "width")}
_LAYOUT_NAMES = {(0, 2, 3, 1): ("NCHW", "NHWC"), (0, 3, 1, 2): ("NHWC", "NCHW")}
# A transpose is called a layout slip only when at least this share of sampled elements
# agree under it: a bug on top of a slip still leaves most elements right.
LAYOUT_AGREE = 0.5


def _layout_cause(perm: tuple[int, ...]) -> str:
    """NCHW against NHWC only for the permutations that move a 4-D tensor's channels to the
    end or back; any other order is a missing transpose or permute."""
    if perm in _LAYOUT_NAMES:
        return "layout (NCHW against NHWC: a missing transpose or permute)"
    return "a missing or extra transpose or permute (axes taken in another order)"


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
        names = AXIS_NAMES.get(len(perm))
        how = f"with axes {i} and {j}{f' ({names[i]} and {names[j]})' if names else ''} swapped"
    else:
        how = "with its axes permuted"
    message = (
        f"B looks like A {how}: as A.transpose{perm}, {permuted['agree']:.0%} of sampled "
        f"elements agree, against {permuted['given']:.0%} in the given order, in which the values were compared"
    )
    where = place(shape_text(perm), permutation=list(perm))
    return [Finding("layout", "error", message, where, [_layout_cause(perm)])]


def _transposed_finding(layout: dict[str, object]) -> Finding:
    """How A was transposed to B's shape.  The best order is a layout slip only when most
    sampled elements agree under it; otherwise the shapes are merely the same sizes in
    another order, and no layout is named."""
    perm = tuple(layout["perm"])  # type: ignore[arg-type]
    agree = float(layout["agree"])  # type: ignore[arg-type]
    where = place(shape_text(perm), permutation=list(perm))
    if agree < LAYOUT_AGREE:
        return Finding(
            "layout", "error",
            f"no order of A's axes makes A agree with B: the best, A.transpose{perm}, under which the values were "
            f"compared, leaves {agree:.0%} of sampled elements agreeing, so these are not one tensor in two layouts",
            where,
        )
    names = _LAYOUT_NAMES.get(perm)
    named = f" (A is {names[0]}, B is {names[1]})" if names else ""
    return Finding(
        "layout", "error",
        f"B looks like A with its axes permuted{named}: compared as A.transpose{perm}, under which "
        f"{agree:.0%} of sampled elements agree",
        where,
        [_layout_cause(perm)],
    )


def shape_findings(r: Report) -> list[Finding]:
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
        out.append(_transposed_finding(layout))
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

