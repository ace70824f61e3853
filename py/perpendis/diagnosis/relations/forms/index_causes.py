"""The causes an index map implies (A holds B's values in another order): by the map and
the axis it moves, each offered only when the fitted map shows what it needs."""

from __future__ import annotations

from .cause import Cause


def _last(p: dict) -> bool:
    """Whether the form's axis is the last of the pair's shape."""
    shape = p.get("shape") or []
    return bool(shape) and p.get("axis") == len(shape) - 1


def pairs_swapped(p: dict) -> bool:
    """The innermost group is a pair of the last axis, flipped, and nothing else moved."""
    return p["view"][-1] == 2 and p["perm"] == sorted(p["perm"]) and p["flips"] == [len(p["view"]) - 1]


def _depth_to_space(p: dict) -> bool:
    """In a 4-D (N, C, H, W) tensor, values moved between axis 1 and both axes 2 and 3 (a
    move between two axes only, as between H and W of a window partition, is not one)."""
    crossed = {tuple(sorted(m)) for m in p["moved"]}
    return len(p["shape"]) == 4 and (1, 2) in crossed and (1, 3) in crossed


INDEX_CAUSES: list[Cause] = [
    Cause("index_map", "each fibre of one side is the other's sorted", lambda p: p.get("map") == "sorted",
          lambda p: f"a sort on {p['sorted_side']}'s side only: values in sorted order where the other side keeps "
                    "their positions (torch.topk(sorted=True) against sorted=False, a sort or argsort applied once)"),
    Cause("index_map", "the two halves of the last axis swapped", lambda p: p.get("map") == "halves" and _last(p),
          lambda p: "two halves concatenated in the other order (torch.cat([x1, x2]) against torch.cat([x2, x1]); "
                    "sin/cos order of a sinusoidal embedding, flip_sin_to_cos, rotate_half)"),
    Cause("index_map", "the two halves of axis 0 swapped", lambda p: p.get("map") == "halves" and p["axis"] == 0,
          lambda p: "the samples of a batch in another order (two batches concatenated the other way round, "
                    "a shuffled or sorted batch)"),
    Cause("index_map", "the two halves of an inner axis swapped",
          lambda p: p.get("map") == "halves" and p["axis"] != 0 and not _last(p),
          lambda p: f"two halves of axis {p['axis']} concatenated in the other order (torch.cat([x1, x2]) "
                    "against torch.cat([x2, x1]))"),
    Cause("index_map", "a reshape of a view whose axes were swapped, B one value along a swapped axis",
          lambda p: p.get("map") == "reshape" and p.get("repeated"),
          lambda p: "entries repeated two ways: tiled (torch.repeat, expand then reshape) on one side and "
                    "interleaved (repeat_interleave) on the other, e.g. grouped-query attention's key/value heads "
                    "expanded to the query heads in the other order (repeat_kv)"),
    Cause("index_map", "a reshape of a view whose axes were swapped", lambda p: p.get("map") == "reshape",
          lambda p: "a reshape (view) where a transpose/permute was needed first, or the reverse: e.g. attention "
                    "heads merged by reshape(b, t, h·d) without transpose(1, 2)"),
    Cause("index_map", "adjacent pairs of the last axis swapped",
          lambda p: p.get("map") == "axes_permuted" and pairs_swapped(p),
          lambda p: "the two members of each adjacent pair of the last axis swapped: interleaved (real, imaginary) "
                    "or (x, y) pairs read in the other order, rotary pairs (2i, 2i + 1) rotated the other way round"),
    Cause("index_map", "values moved between the channel axis and the spatial axes of an image tensor",
          lambda p: p.get("map") == "axes_permuted" and _depth_to_space(p),
          lambda p: "a depth-to-space or space-to-depth in another layout: ONNX DepthToSpace mode DCR against CRD, "
                    "pixel_shuffle against a hand-written reshape/permute, a sub-pixel upsampler's channel order"),
    Cause("index_map", "entries reordered within axes, nothing moved across them",
          lambda p: p.get("map") == "axes_permuted" and not p["moved"] and not pairs_swapped(p),
          lambda p: f"the entries of axis {' and '.join(str(a) for a in p['axes'])} in another order: a channel or "
                    "head order that differs (heads or groups split or merged in another order, a reshape before "
                    "a permute)"),
    Cause("index_map", "values moved across axes by a reshape, permutation and flips",
          lambda p: p.get("map") == "axes_permuted" and p["moved"] and not _depth_to_space(p),
          lambda p: "a reshape and permute in another order, or one of them missing: the tensor's layout read as "
                    "another (a view where a permute was needed, channels interleaved by groups, a window "
                    "partition or merge)"),
    Cause("index_map", "a flip of an axis", lambda p: p.get("map") == "flip",
          lambda p: "a flipped axis (torch.flip, [::-1]; RGB against BGR for a channel axis of 3)"),
    Cause("index_map", "a roll along an axis", lambda p: p.get("map") == "roll",
          lambda p: "an off-by-one (or off-by-k) index: a shifted position, a roll, one-sided padding"),
    Cause("index_map", "a roll by ±1 along a last axis of 100 or more entries (a class or vocabulary axis)",
          lambda p: p.get("map") == "roll" and abs(p["shift"]) == 1 and _last(p) and p["shape"][-1] >= 100,
          lambda p: "class or token ids offset by one (a background or padding class at index 0 on one side only, "
                    "labels counted from 1 against 0, a tokenizer's id offset)"),
    Cause("index_map", "slices of one axis taken from other indices of the same axis",
          lambda p: p.get("map") == "gather",
          lambda p: "an index that picks the wrong slice" + (
              f" ({abs(p['shift'])} place{'s' if abs(p['shift']) > 1 else ''} off: an off-by-{abs(p['shift'])} "
              "slice or cache position)" if "shift" in p else " (a gather or index_select with the wrong indices, "
              "a buffer or cache slot reused)") + (
              "; along axis 0, one sample's values returned for another" if p["axis"] == 0 and len(p["shape"]) > 1
              else "")),
    Cause("index_map", "two equal-sized axes swapped", lambda p: p.get("map") == "transpose",
          lambda p: "a transposed weight or axes of equal size swapped (x @ W against x @ W.T; H and W)"),
]
