"""A found form: the relation as a sentence and as data, how far it holds, where it
fails, and the causes it implies; and the one function that makes it a report finding."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ....report.model import Finding, place
from . import implies
from .view import HOLDS, View

# Kinds that state a structure of the values (where each side is zero or masked), not
# A = T(B) to a tolerance: their message says where, with no tolerance attached.
STRUCTURES = frozenset({"causal_mask", "disjoint_supports"})


@dataclass(frozen=True)
class Form:
    """``A = T(B)`` (or a structure of A that B lacks), found by its shape.

    ``kind`` names the family (``elementwise_map``, ``wrap``, ``threshold``,
    ``saturated``, ``index_map``, ``row_temperature``, ``block_constant``,
    ``group_affine``); ``share`` is the share of the ``judged`` elements where A is within
    the tolerance of T(B); ``fails`` says where the rest lie; ``causes`` are only those the
    fitted form implies (:mod:`.implies`)."""

    kind: str
    text: str
    params: dict[str, Any]
    share: float
    judged: int
    fails: str | None = None
    causes: list[str] = field(default_factory=list)
    where: dict[str, Any] | None = None


def fails_text(view: View, ok: np.ndarray) -> str | None:
    """Where a form that holds on 99 % of the elements does not: the count and the first
    such element, or None when it holds on every one."""
    bad = ~ok
    n = int(np.count_nonzero(bad))
    if not n:
        return None
    first = int(np.flatnonzero(bad.ravel())[0])
    if view.whole:
        at = tuple(int(i) for i in np.unravel_index(first, view.shape))
    else:
        at = tuple(int(i) for i in np.unravel_index(int(view.flat_index[first]), view.shape))  # type: ignore[index]
    return f"it fails on {n} of {ok.size} elements, the first at {list(at)}"


def finding(form: Form) -> Finding:
    """The report finding of a form: the relation first, then how far it holds."""
    held = "on every element" if form.share >= 1.0 else f"on {form.share:.2%} of {form.judged} elements"
    message = form.text if form.kind in STRUCTURES else f"{form.text}, within the tolerance {held}"
    if form.fails:
        message += f" ({form.fails})"
    amounts = {k: v for k, v in form.params.items() if isinstance(v, int | float) and not isinstance(v, bool)
               and k not in ("axis", "axis_size", "indices", "element", "text")}
    where = dict(form.where) if form.where else place(None, **amounts)
    if amounts and "amount" not in where:
        where["amount"] = place(None, **amounts)["amount"]
    where["relation"] = {"kind": form.kind, "text": form.text, "params": form.params,
                         "share": form.share, "judged": form.judged, "scope": "everywhere"}
    return Finding(form.kind, "error", message, where, list(form.causes))


def stated(view: View, kind: str, text: str, params: dict, t: np.ndarray,
            judged: np.ndarray | None = None, lhs: np.ndarray | None = None) -> Form | None:
    """The form when A = T(B) holds on :data:`HOLDS` of the judged elements and explains
    what the identity does not; None otherwise.  ``lhs``, when given, is judged against
    ``t`` instead of A: T(A) against B for a form stated the other way round."""
    ok = view.close(view.a if lhs is None else lhs, t)
    if judged is not None:
        ok = ok[judged]
    share = float(np.mean(ok)) if ok.size else 0.0
    if share < HOLDS or share <= view.identity_share:
        return None
    causes = implies.causes(kind, params)
    return Form(kind, text, params, share, int(ok.size), fails_text(view, ok) if view.whole else None, causes)
