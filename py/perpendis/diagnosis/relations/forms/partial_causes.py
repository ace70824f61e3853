"""The causes of the forms where A = B except on some elements (:mod:`.partial_maps`): ties
rounded another way, integers truncated, another slope on one sign, complementary supports
and a fill, each offered only when the fitted form shows what it needs."""

from __future__ import annotations

from .cause import Cause

PARTIAL_CAUSES: list[Cause] = [
    Cause("ties", "off-by-ones where one side is always even", lambda p: True,
          lambda p: f"ties (x.5) rounded differently: half to even on {p['even_side']}'s side (torch.round, "
                    "np.round, ONNX Round, a float-to-int cast in round-to-nearest-even) against half up or away "
                    "from zero on the other (floor(x + 0.5), C's round(), an image library's resize)"),
    Cause("rounded_toward_zero", "off-by-ones where one side is always the nearer zero", lambda p: True,
          lambda p: f"integers rounded toward zero on {p['near_side']}'s side and {p['rule']} on the other: "
                    + ("C-style (truncating) integer division against Python's floor division //, or a cast to int "
                       "(which truncates) against floor()" if p["rule"] == "toward −∞" else
                       "a cast to int (which truncates) against ceil()" if p["rule"] == "toward +∞" else
                       "a cast to int (which truncates) against a rounding away from zero")),
    Cause("rounded_down", "off-by-one steps where one side is always the lower", lambda p: True,
          lambda p: f"values rounded down (floor, toward −∞) on {p['low_side']}'s side where the other rounds to "
                    "nearest or up"
                    + (": a quantiser that floors (x // s, an arithmetic shift right, a cast after no + 0.5) against "
                       f"one that rounds, on a grid of {p['step']:g}" if p["step"] != 1 else
                       ": floor() or an arithmetic shift right against round(), a cast to int after adding no 0.5")),
    Cause("causal_mask", "one side's mask value exactly on the upper triangle of the last two axes, every slice",
          lambda p: True,
          lambda p: f"a causal mask applied on {p['side']}'s side only: the attention mask or is_causal dropped, or "
                    "added, in the export"
                    + (f" (its diagonal offset by {p['offset']:+d}: a mask built for a KV cache or a prefix of "
                       "another length)" if p["offset"] else "")),
    Cause("sign_split", "A = B on B's non-negative side and A = s·B, s ∉ {0, 1}, on its negative side",
          lambda p: p["side"] == "negative" and p["scale"] > 0,
          lambda p: f"a negative slope that differs: LeakyReLU's negative_slope or PReLU's weight on A's side is "
                    f"{p['scale']:.4g} × B's (0.2 against 0.01 gives 20; ONNX's LeakyRelu defaults to alpha 0.01, "
                    "as PyTorch does, and PReLU's weight starts at 0.25)"),
    Cause("disjoint_supports", "each side zero exactly where the other is not", lambda p: True,
          lambda p: "a mask with its sense inverted on one side: keep against drop (an attention or padding mask "
                    "of 1 = keep read as True = masked, a ~mask added or lost), or a sign flipped before a ReLU"),
    Cause("fill", "A's constant is a mask fill (−inf, −1e4, −1e9, a format's lowest value)",
          lambda p: p["mask_fill"],
          lambda p: f"a mask applied on A's side only, or over other positions (masked_fill with {p['value']:g}, "
                    "an attention or padding mask)"),
]
