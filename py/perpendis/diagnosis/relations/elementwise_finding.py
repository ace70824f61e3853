"""The relation search's findings: the most specific relation that maps B to A (or A to B)
to rounding, stated in the user's terms with its constants and residual, and the causes
it implies (:mod:`.causes`).

It reads the grammar's sampled view of a pair (:class:`~.pair.Pair`):
the uniform flat sample when the pair is in memory (the relation then holds everywhere it
was sampled), else the fold's sample of differing elements (it then holds on the elements
that differ, which may be one region: the message says so and never "everywhere").
"""

from __future__ import annotations

import numpy as np

from ...report.model import Finding, place
from . import causes, region
from .elementwise import Relation, Sample, search
from .forms.implies import mask_fills
from .pair import Pair

OUTLIER = 1e4  # values this many times B's median magnitude (mask fills such as −1e9) set no scale


def sample_of(pair: Pair) -> Sample:
    """The sample the elementwise search judges, with B's scale taken without its mask
    fills: a −1e9 in a masked score would make B's RMS 5e8, and a rounding bound of that
    size admits any map on the ordinary values."""
    a, b = pair.values()
    finite = b[np.isfinite(b)]
    finite = np.abs(finite[~mask_fills(finite)])
    ordinary = finite[finite <= OUTLIER * float(np.median(finite))] if finite.size else finite
    scale = float(np.sqrt(np.mean(ordinary * ordinary))) if ordinary.size else pair.b_rms
    return Sample(a, b, pair.u, pair.depth, min(scale, pair.b_rms) if scale > 0 else pair.b_rms)


def finding(rel: Relation, pair: Pair) -> Finding:
    """The finding of a relation: its statement, scope and residual, its place as data.

    Fitted on the differing elements alone (a streamed pair), it holds on them: in the one
    region they all lie in when there is one (:func:`.region.of_sample`), never "everywhere"."""
    amounts = {k: v for k, v in rel.params.items() if isinstance(v, int | float)}
    found = None if pair.in_memory else region.of_sample(pair.shape, pair.diff_flat)
    if pair.in_memory:
        scope, where = "everywhere sampled", place(None, **amounts)
    elif found is None:
        scope = f"on the {pair.n_diff} differing elements of {pair.n_elements}"
        where = place(scope, **amounts)
    else:
        axis, indices = found
        text = region.describe(pair.shape, axis, indices)
        scope = f"in {text}, where every sampled difference lies"
        where = place(text, axis=axis, axis_size=pair.shape[axis], indices=indices[:64], **amounts)
    message = (f"{rel.text} {scope}, to within {max(rel.residual, 0.0):.2g} ULP "
               f"(on {rel.held} sampled elements where A ≠ B beyond rounding)")
    where["relation"] = rel.as_dict() | {"scope": "everywhere" if pair.in_memory else "differing elements"}
    return Finding("elementwise", "error", message, where, causes.of(rel))


def find(pair: Pair) -> list[Finding]:
    """The elementwise relation that holds, as a finding (at most one), for float data."""
    if pair.printed or not pair.fmt.is_float:
        return []
    rel = search(sample_of(pair))
    return [] if rel is None else [finding(rel, pair)]
