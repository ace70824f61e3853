"""The causes a per-group map implies (:mod:`.group_maps`: one slope and offset per sample,
per run of channels, per (sample, channel) or per fibre): by what the groups are and what
each side's groups look like (kept or zeroed, of norm 1, centred, normalised), each
offered only when the fitted map shows what it needs."""

from __future__ import annotations

from .cause import Cause

GROUP_CAUSES: list[Cause] = [
    Cause("group_affine", "every group either A = B or A = 0", lambda p: bool(p.get("zeroed")),
          lambda p: "a mask applied on one side only: whole groups set to 0 (padding positions zeroed by an "
                    "attention or padding mask, a head or channel dropped)"),
    Cause("group_affine", "A = s·B in every group and every group of A (or of B) has L2 norm 1",
          lambda p: p.get("scale_only") and (p.get("unit_norm_a") or p.get("unit_norm_b")),
          lambda p: f"an L2 normalisation (F.normalize, x / ‖x‖) on {'A' if p.get('unit_norm_a') else 'B'}'s side "
                    "only, over each group's elements (an embedding or a feature normalised on one side)"),
    Cause("group_affine", "both sides' groups centred with variance at most 1 (normalised, with an epsilon), and "
          "A = s·B in each with every s to one side of 1",
          lambda p: p.get("scale_only") and p.get("centred_a") and p.get("centred_b") and (
              (p.get("variance_at_most_1_b") and p["slope_range"][1] < 1)
              or (p.get("variance_at_most_1_a") and p["slope_range"][0] > 1)),
          lambda p: f"the same normalisation with a larger epsilon on {'A' if p['slope_range'][1] < 1 else 'B'}'s "
                    "side: x / √(var + ε) shrinks a group by √(var / (var + ε)), most where its variance is small"),
    Cause("group_affine", "one slope and offset per (sample, group of consecutive channels)",
          lambda p: p.get("per") in ("sample_group", "sample_channel") and p.get("groups_of", 1) > 1
          and not (p["slope_range"][0] >= 0.99 and p["slope_range"][1] <= 1.01),
          lambda p: "a GroupNorm whose group count differs: statistics per group of "
                    f"{p['groups_of']} channels on one side, other groups on the other"),
    Cause("group_affine", "one slope and offset per pixel (fibre along one axis), varying",
          lambda p: p.get("per") == "fibre",
          lambda p: f"a normalisation over other axes: statistics over axis {p['axis']} per position on one side, "
                    "over more axes per sample on the other (a channels-first LayerNorm against GroupNorm(1, C); "
                    "per pixel against per sample)"),
    Cause("group_affine", "one slope and offset per (sample, channel), no run of channels sharing one, varying",
          lambda p: p.get("per") == "sample_channel" and p.get("groups_of", 1) == 1 and not p.get("scale_only")
          and p.get("ndim") in (4, 5) and not (p["slope_range"][0] >= 0.99 and p["slope_range"][1] <= 1.01),
          lambda p: "a normalisation whose statistics are taken per (sample, channel) on one side and over more "
                    "on the other (InstanceNorm, or GroupNorm with a group per channel, against LayerNorm over C·H·W "
                    "or GroupNorm(1, C))"),
    Cause("group_affine", "A = s·B per (sample, channel), no offset, s varying: a gate per channel of each sample",
          lambda p: p.get("per") == "sample_channel" and p.get("groups_of", 1) == 1 and p.get("scale_only")
          and p.get("ndim") in (4, 5) and not p.get("unit_norm_a") and not p.get("unit_norm_b"),
          lambda p: "a per-channel gate of each sample that differs (a squeeze-and-excitation or attention gate: "
                    "its activation, hardsigmoid against sigmoid, or its weights)"),
    Cause("group_affine", "slope 1 in every group, one side's groups centred (mean 0) and the other's not",
          lambda p: "slope_range" in p and abs(p["slope_range"][0] - 1) <= 1e-3
          and abs(p["slope_range"][1] - 1) <= 1e-3 and p.get("centred_a") != p.get("centred_b"),
          lambda p: f"a mean subtracted per group on {'A' if p.get('centred_a') else 'B'}'s side only: each "
                    "group's own mean (per-image or per-sample centring, an InstanceNorm or GroupNorm without its "
                    "scaling) against a fixed mean, or none"),
    Cause("group_affine", "one slope and offset per sample", lambda p: p.get("per") == "sample",
          lambda p: "a normalisation whose statistics are taken per sample over other axes (a LayerNorm or "
                    "GroupNorm over different dims)"),
]
