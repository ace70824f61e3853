"""Relation → likely causes: one table, read by every finding a relation makes.

A cause is listed only when the relation implies it: ``A = exp(B)`` says one side is the
exponential of the other, whatever the layer, so its causes are the places ML code takes
an exponential; a relation this table has no entry for gets none (a wrong cause sends the
user the wrong way, so none is better).
"""

from __future__ import annotations

from .constants import name_of
from .elementwise import DESCRIBED, Relation

_EXP = ["an exp or log applied on one side only (log-probabilities against probabilities, log_softmax against "
        "softmax, a log-space parameter such as a log-variance or log-scale not exponentiated)"]
_POWER = {
    2.0: ["a variance against a standard deviation (a square root missing on one side)",
          "a squared norm against a norm"],
    0.5: ["a standard deviation against a variance (a square root applied on one side only)",
          "a norm against a squared norm"],
    3.0: ["a cube applied on one side only (GELU's tanh approximation's x³ term, a hand-written polynomial)"],
    -1.0: ["a reciprocal on one side only (a division against a multiplication, a scale against its inverse)"],
    -0.5: ["rsqrt against sqrt (a normaliser multiplied where the other divides)"],
}
_POWER_OTHER = ["a power or gamma applied on one side only (a gamma correction, a p-norm)"]
_CAST = "a cast to {fmt} and back on one side (autocast, .to(torch.{fmt}), a quantise-dequantise pair)"
_CAST_INT = {
    "round": ["a cast to integer on one side, rounding to nearest (a quantiser, torch.round before .long())"],
    "truncate": ["a cast to integer on one side, truncating toward zero (.long() / .int() / astype(int))"],
}
_GELU_PAIR = {"GELU", "GELU_tanh"}


def _described(name: str) -> str:
    return DESCRIBED.get(name, name)


def of(rel: Relation) -> list[str]:
    """The causes a relation implies, most likely first."""
    p = rel.params
    if rel.kind == "exp":
        return list(_EXP)
    if rel.kind == "power":
        exponent = float(p["exponent"])  # type: ignore[arg-type]
        return list(_POWER.get(round(exponent, 6), _POWER_OTHER))
    if rel.kind == "activation":
        act = _described(str(p["activation"]))
        return [f"{act} applied on one side only (an activation dropped in the export, or applied twice when fused)"]
    if rel.kind == "activation_variant":
        a, b = str(p["activation"]), str(p["instead_of"])
        out = []
        if {a, b} == _GELU_PAIR:
            out.append("GELU's tanh approximation on one side and the exact erf form on the other "
                       "(nn.GELU(approximate='tanh'); hidden_act 'gelu_new' or 'gelu_pytorch_tanh' against 'gelu'; "
                       "a runtime's fused GELU using the other formula)")
        out.append(f"{_described(a)} where the other side has {_described(b)}: an activation swapped in a config "
                   "or replaced by a runtime's fused kernel")
        return out
    if rel.kind == "cast":
        if p.get("format") == "integer":
            return list(_CAST_INT[str(p["mode"])])
        return [_CAST.format(fmt=p["format"])]
    return []


def for_constant(value: float, rel: float) -> list[str]:
    """A cause naming the known constant a fitted factor is, when it is one."""
    named = name_of(value, rel)
    if named is None:
        return []
    return [f"a factor of {named} applied on one side only, or twice (a scale, normaliser or unit constant)"]
