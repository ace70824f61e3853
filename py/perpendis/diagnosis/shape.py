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


def _entries(end: str, k: int) -> str:
    return "" if k == 0 else f"the {end} entry" if k == 1 else f"the {end} {k} entries"


def _inside_finding(layout: dict[str, object], r: Report) -> list[Finding]:
    """Where the smaller side sits in the larger (align's ``inside``): a run of one axis
    (A = B[:, 1:16]) or one index of an axis the smaller lacks (B = A[:, 15])."""
    got = layout.get("inside")
    if not isinstance(got, dict):
        return []
    side = str(got["side"])
    other = "B" if side == "A" else "A"
    ax = int(got["axis"])
    large = list((r.b if side == "A" else r.a)["shape"])
    n = large[ax]
    if "index" in got:
        i = int(got["index"])
        pick = ", ".join([":"] * ax + [str(i)])
        which = "the last index" if i == n - 1 else "the first index" if i == 0 else f"index {i}"
        message = (f"{side} = {other}[{pick}]: {side} holds {which} of {other}'s axis {ax} ({n} entries), to the "
                   f"tolerance on {got['agree']:.0%} of sampled elements")
        causes = [f"one side keeps {which} of axis {ax} only (the last position's logits, logits[:, -1], against "
                  "every position's; a pooled or CLS output against the sequence)" if i in (0, n - 1) else
                  f"one side keeps a single index of axis {ax} (a wrong index or a squeeze of the wrong axis)"]
    else:
        start, stop = int(got["start"]), int(got["stop"])
        pick = ", ".join([":"] * ax + [f"{start}:{stop}"])
        dropped = [_entries("first", start), _entries("last", n - stop)]
        message = (f"{side} = {other}[{pick}]: {side} is {other} with {' and '.join(d for d in dropped if d)} of "
                   f"axis {ax} ({n} entries) dropped, to the tolerance on {got['agree']:.0%} of sampled elements")
        causes = ["an off-by-one slice or a special token kept on one side only (a BOS, CLS or EOS position, a "
                  "padding row, a prompt prefix)"]
    where = place(f"axis {ax}", axis=ax, axis_size=n)
    return [Finding("inside", "error", message, where, causes)]


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
        message = f"{differ}: the shapes cannot be aligned, so no values were compared{extra}"
        return [Finding("shape", "error", message), *_inside_finding(layout, r)]
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

