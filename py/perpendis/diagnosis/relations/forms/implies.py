"""Causes a fitted form implies: each states what it needs of the form (its ``implies``)
and a test of the fitted parameters, and is offered only when the test passes.

A form with no matching cause gets none: the relation itself is stated, and a wrong cause
would send the user the wrong way.
"""

from __future__ import annotations

import math

import numpy as np

from .cause import Cause
from .group_causes import GROUP_CAUSES
from .index_causes import INDEX_CAUSES
from .partial_causes import PARTIAL_CAUSES

_HEADS = (8, 16, 32, 48, 64, 80, 96, 128, 256)
CLIP_TEMPERATURE = 1 / 0.07  # CLIP's initial logit scale, exp(ln(1/0.07))


MASK_LOWS = np.array([-1e4, -1e9, float(np.finfo(np.float32).min), float(np.finfo(np.float16).min)])


def mask_fills(x: np.ndarray) -> np.ndarray:
    """Where ``x`` holds a value masks fill with: −inf, −1e4, −1e9, or float32's or float16's lowest."""
    x = np.asarray(x, dtype=np.float64)
    near = np.abs(x[..., None] - MASK_LOWS) <= 1e-4 * np.abs(MASK_LOWS)
    return (x == -math.inf) | near.any(axis=-1)


def is_mask_fill(v: float) -> bool:
    """:func:`mask_fills` of one value."""
    return bool(mask_fills(np.array(v)))


def _near(x: float | None, y: float, rel: float = 1e-4) -> bool:
    return x is not None and math.isfinite(x) and abs(x - y) <= rel * abs(y)


def _scale_only(p: dict) -> bool:
    return "scale" in p and "offset" not in p and p.get("lhs") == p.get("rhs") == "id" and "clip_lo" not in p


def _power_of_two(s: float) -> int | None:
    k = round(math.log2(abs(s))) if s else 0
    return k if k and _near(abs(s), 2.0**k, 1e-6) else None


def _sqrt_head(s: float) -> int | None:
    for d in _HEADS:
        if _near(abs(s), math.sqrt(d), 1e-4) or _near(abs(s), 1 / math.sqrt(d), 1e-4):
            return d
    return None


def _sqrt_size(p: dict) -> int | None:
    """n when |s| is √n or 1/√n for n > 1 the size of one of the pair's axes."""
    s = p.get("scale")
    return next((n for n in p.get("sizes", ()) if n > 1 and s is not None and (
        _near(abs(s), math.sqrt(n), 1e-5) or _near(abs(s), 1 / math.sqrt(n), 1e-5))), None)


def _up(n: int) -> float:
    return n / (n - 1)


def _down(n: int) -> float:
    return (n - 1) / n


def _unbiased(p: dict) -> int | None:
    """N when the scale is N/(N−1), (N−1)/N or a square root of one, N > 2 pinned by the
    fit (its neighbours N ± 1 do not fit) and a size the pair can have reduced over: one of
    its axes, a product of two, or a multiple of 8 (hidden sizes, H·W of a feature map)."""
    s = p.get("scale")
    if s is None or not math.isfinite(s) or s <= 0 or abs(s - 1) < 1e-6:
        return None
    sizes = [n for n in p.get("sizes", ()) if n > 1]
    plausible = set(sizes) | {m * n for m in sizes for n in sizes}
    tol = max(float(p.get("fit_rel", 1e-6)), 2e-7)
    for power in (1.0, 2.0):
        v = s**power
        for guess, f in ((1 + 1 / (v - 1), _up), (1 / (1 - v), _down)):
            if not math.isfinite(guess) or guess < 2.5 or guess > 2**20:
                continue
            n = round(guess)
            if abs(f(n) - v) > tol * v or min(abs(f(n + 1) - v), abs(f(n - 1) - v)) <= tol * v:
                continue
            if n in plausible or n % 8 == 0:
                return n
    return None


def _bounds(p: dict) -> str:
    lo, hi = p["lo"], p["hi"]
    return f"[{lo:g}, {hi:g}]" if lo is not None and hi is not None else f"at least {lo:g}" if hi is None else (
        f"at most {hi:g}")


def _box_matrices() -> dict[tuple[str, str], np.ndarray]:
    """M with box_out = box_in @ M for each pair of formats (columns: the output's entries)."""
    to_xyxy = {"xyxy": np.eye(4),
               "xywh": np.array([[1, 0, 1, 0], [0, 1, 0, 1], [0, 0, 1, 0], [0, 0, 0, 1]], float),
               "cxcywh": np.array([[1, 0, 1, 0], [0, 1, 0, 1], [-.5, 0, .5, 0], [0, -.5, 0, .5]], float)}
    out = {}
    for src, a in to_xyxy.items():
        for dst, b in to_xyxy.items():
            if src != dst:
                out[(src, dst)] = a @ np.linalg.inv(b)
    return out


_BOXES = _box_matrices()


def _box_format(p: dict) -> tuple[str, str] | None:
    """(the other side's format, this side's) when the fitted map converts one box format to another."""
    if p.get("n") != 4 or np.any(np.asarray(p["offset"])):
        return None
    m = np.asarray(p["matrix"])
    return next((k for k, v in _BOXES.items() if np.allclose(m, v, atol=1e-5)), None)


def _whole_factor(s: float) -> int | None:
    """k when |s| is an integer k ≥ 3 or 1/k, k at most 4096, to the fit's precision."""
    v = abs(s) if abs(s) >= 1 else (1 / abs(s) if s else 0)
    k = round(v)
    return k if 3 <= k <= 4096 and _near(v, float(k), 1e-6) else None  # 2: a doubling says it


def _unit_range_pair(p: dict) -> bool:
    """A = 2B − 1 with A in [−1, 1] (so B in [0, 1]), or A = B/2 + 1/2 with A in [0, 1]."""
    s, c, (lo, hi) = p.get("scale"), p.get("offset"), p.get("range", [math.nan, math.nan])
    if _near(s, 2.0, 1e-5) and _near(c, -1.0, 1e-5):
        return lo >= -1 - 1e-6 and hi <= 1 + 1e-6
    if _near(s, 0.5, 1e-5) and _near(c, 0.5, 1e-5):
        return lo >= -1e-6 and hi <= 1 + 1e-6
    return False


def _offset_only(p: dict) -> bool:
    return p.get("lhs") == p.get("rhs") == "id" and "offset" in p and "scale" not in p and "clip_lo" not in p


def _zero_point_128(p: dict) -> bool:
    """A = B ± 128 between integers, A's range inside uint8's and B's (A − offset) inside int8's, or the reverse."""
    if not (p.get("integer") and _offset_only(p) and abs(p["offset"]) == 128):
        return False
    lo, hi = p.get("range", [math.nan, math.nan])
    b_lo, b_hi = lo - p["offset"], hi - p["offset"]
    as_uint8 = (lo >= 0 and hi <= 255 and b_lo >= -128 and b_hi <= 127)
    return as_uint8 or (lo >= -128 and hi <= 127 and b_lo >= 0 and b_hi <= 255)


def _hardsigmoid(p: dict) -> bool:
    s, c = p.get("scale"), p.get("offset")
    return (p.get("clip_lo") in (0, None) and p.get("clip_hi") == 1 and p.get("range", [-1])[0] >= 0
            and s is not None and c is not None
            and abs(c - (1 - s) / 2) <= 1e-3 * max(1.0, abs(s)))


CAUSES: list[Cause] = [
    Cause("elementwise_map", "a scale of exactly −1", lambda p: _scale_only(p) and _near(p["scale"], -1.0, 1e-6),
          lambda p: "a sign flip: a subtraction with its operands swapped, or a negated weight"),
    Cause("elementwise_map", "a scale of exactly 2^k, k ≠ 0",
          lambda p: _scale_only(p) and _power_of_two(p["scale"]) is not None,
          lambda p: f"a factor of exactly {p['scale']:g} on one side: a value doubled or halved "
                    "(applied twice, or once where it should not be)"),
    Cause("elementwise_map", "a scale of √d or 1/√d for an attention head size d",
          lambda p: _scale_only(p) and _sqrt_head(p["scale"]) is not None,
          lambda p: f"a 1/√d scaling (d = {_sqrt_head(p['scale'])}, an attention head size) missing or applied twice"),
    Cause("elementwise_map", "a scale of √n or 1/√n for n the size of one of the pair's axes, not a head size",
          lambda p: _scale_only(p) and _sqrt_head(p["scale"]) is None and _sqrt_size(p) is not None,
          lambda p: f"a scaling by √{_sqrt_size(p)} (the size of one of the pair's axes) on one side only: "
                    "embeddings multiplied by √d_model (Gemma's and T5's embedding normaliser, the Transformer's "
                    f"embedding scale), or a 1/√d attention or norm scale over d = {_sqrt_size(p)}"),
    Cause("elementwise_map", "a scale of ln 10, 1/ln 10, ln 2 or 1/ln 2",
          lambda p: _scale_only(p) and any(_near(abs(p["scale"]), x, 1e-4) for x in
                                             (math.log(10), 1 / math.log(10), math.log(2), 1 / math.log(2))),
          lambda p: "a logarithm in another base (natural log against log10 or log2): "
                    "log_b(x) = ln(x)/ln(b)"),
    Cause("elementwise_map", "an affine map whose slope is ln 10 or 1/ln 10 (a log then a fixed shift and scale)",
          lambda p: "offset" in p and p.get("lhs") == p.get("rhs") == "id" and "scale" in p and any(
              _near(abs(p["scale"]), x, 1e-4) for x in (math.log(10), 1 / math.log(10))),
          lambda p: "a logarithm in another base (natural log against log10) before a fixed shift and scale"),
    Cause("elementwise_map", "a scale of N/(N−1), (N−1)/N or their square roots, N a size of the pair's axes",
          lambda p: _scale_only(p) and _unbiased(p) is not None,
          lambda p: f"biased against unbiased variance over N = {_unbiased(p)} (a factor N/(N−1) in the variance)"),
    Cause("elementwise_map", "a scale of an integer k ≥ 3 or its reciprocal 1/k (k ≤ 4096)",
          lambda p: _scale_only(p) and _whole_factor(p["scale"]) not in (None, 255),  # 255: an image's rescale
          lambda p: f"a sum against a mean over {_whole_factor(p['scale'])} values (a reduction or pool that averages "
                    "on one side and sums on the other)"),
    Cause("elementwise_map", "a scale of 180/π or π/180",
          lambda p: _scale_only(p) and p.get("scale_name") in ("180/π", "π/180"),
          lambda p: "degrees against radians: an angle converted on one side only (rad2deg / deg2rad, "
                    "math.degrees)"),
    Cause("elementwise_map", "A = 2·B − 1 with B in [0, 1], or A = (B + 1)/2 with B in [−1, 1]",
          lambda p: p.get("lhs") == p.get("rhs") == "id" and "clip_lo" not in p and _unit_range_pair(p),
          lambda p: "an image (or signal) in [−1, 1] on one side and [0, 1] on the other: normalised with mean 0.5 "
                    "and std 0.5 on one side only"),
    Cause("elementwise_map", "a scale of 255 or 1/255",
          lambda p: _scale_only(p) and any(_near(abs(p["scale"]), x, 1e-5) for x in (255.0, 1 / 255)),
          lambda p: "an image rescaled by 1/255 twice or not at all"),
    Cause("elementwise_map", "a scale of x·e^−x or e^x/x for x = ln(1/0.07), CLIP's initial logit scale",
          lambda p: _scale_only(p) and any(_near(abs(p["scale"]), v, 2e-3) for v in (
              math.log(CLIP_TEMPERATURE) / CLIP_TEMPERATURE, CLIP_TEMPERATURE / math.log(CLIP_TEMPERATURE))),
          lambda p: "a logit scale used as stored instead of exponentiated: logit_scale against "
                    "exp(logit_scale) (CLIP keeps ln(1/0.07))"),
    Cause("elementwise_map", "A = 1 − B with both sides in [0, 1]",
          lambda p: p.get("lhs") == p.get("rhs") == "id" and _near(p.get("scale"), -1.0, 1e-6)
          and _near(p.get("offset"), 1.0, 1e-6) and p.get("range", [-1, 2])[0] >= 0 and p["range"][1] <= 1,
          lambda p: "a complement, 1 − B: a mask or a probability inverted (a mask meaning keep against one meaning "
                    "drop, the other class's sigmoid, a flag's sense reversed)"),
    Cause("elementwise_map", "an offset of ±128 between integers, one side in [−128, 127] and the other in [0, 255]",
          _zero_point_128,
          lambda p: "int8 against uint8: the same quantised values with a zero point of 128 on one side (asymmetric "
                    "uint8 against symmetric int8 quantisation, or int8 bytes read as uint8 after flipping the top "
                    "bit)"),
    Cause("elementwise_map", "an integer offset between integers (indices or ids)",
          lambda p: p.get("integer") and _offset_only(p) and float(p["offset"]).is_integer(),
          lambda p: f"indices or ids offset by {p['offset']:g}: counted from 1 against 0, or a class or token id "
                    "shift (a background class, a tokenizer's offset)"),
    Cause("elementwise_map", "an offset only", lambda p: not p.get("integer") and _offset_only(p),
          lambda p: f"a constant {p['offset']:g} added on one side only (a bias or shift applied twice or not at all)"),
    Cause("elementwise_map", "both sides clamped to [0, 1] and A = s·B + (1 − s)/2: a hard sigmoid whose slope differs",
          _hardsigmoid,
          lambda p: f"a HardSigmoid slope that differs: alpha = {p['scale'] / 6:.4g} against 1/6 "
                    "(ONNX's HardSigmoid defaults to alpha 0.2; PyTorch's is 1/6)"),
    Cause("elementwise_map", "log A = log B + … with exponent 2, 1/2 or −1 (a power of B)",
          lambda p: p.get("lhs") == p.get("rhs") == "log" and "offset" not in p and any(
              _near(p.get("scale"), x, 1e-4) for x in (2.0, 0.5, -1.0)),
          lambda p: {2.0: "a square on one side only", 0.5: "a square root on one side only",
                     -1.0: "a reciprocal on one side only"}[min((2.0, 0.5, -1.0), key=lambda x: abs(x - p["scale"]))]),
    Cause("elementwise_map", "log A = B exactly (or B = log A)",
          lambda p: {p.get("lhs"), p.get("rhs")} == {"log", "id"} and "offset" not in p
          and _near(p.get("scale"), 1.0, 1e-5),
          lambda p: "an exp or log on one side only (log-probabilities against probabilities, logits against scores)"),
    Cause("elementwise_map", "A = |B| exactly (or B = |A|)", lambda p: p.get("map") == "abs",
          lambda p: "an absolute value on one side only (a magnitude against a signed value: abs() applied, or "
                    "dropped, in the export)"),
    Cause("wrap", "differences that are multiples of 2^k", lambda p: True,
          lambda p: f"a cast to {p['type']} that overflowed: values outside its range wrap around "
                    "(no clamp before the cast"
                    f"{'; int64 ids through an int32-only runtime' if p['bits'] == 32 else ''})"),
    Cause("saturated", "B at 0 and 255 (or −128 and 127) and A wrapped past them",
          lambda p: p.get("wrapped") and (p["lo"], p["hi"]) in ((0.0, 255.0), (-128.0, 127.0), (0.0, 65535.0)),
          lambda p: f"a cast to {'uint8' if p['hi'] == 255 else 'int8' if p['hi'] == 127 else 'uint16'} without "
                    "clamping on A's side: values past the range wrap around (overflow) where B saturates"),
    Cause("saturated", "A wrapped where B holds its bounds", lambda p: p.get("wrapped") and (p["lo"], p["hi"]) not in (
        (0.0, 255.0), (-128.0, 127.0), (0.0, 65535.0)),
          lambda p: "B clamped (saturates) and A cast without the clamp (overflow wraps around)"),
    Cause("saturated", "B held at 0 from below only, A reaching past it under half as far as B reaches above it",
          lambda p: not p.get("wrapped") and p["lo"] == 0 and p["hi"] is None and p.get("past_ratio", 1) < 0.5,
          lambda p: "an activation that differs on the negative side: B is a ReLU, A keeps small negative values "
                    "(LeakyReLU, ELU, GELU or SiLU against ReLU)"),
    Cause("saturated", "B held at 0 from below only, A reaching past it about as far as B reaches above it",
          lambda p: not p.get("wrapped") and p["lo"] == 0 and p["hi"] is None and p.get("past_ratio", 0) >= 0.5,
          lambda p: "a ReLU on B's side only: B = max(A, 0) (an activation dropped, or added, in the export)"),
    Cause("saturated", "A beyond the bounds B holds",
          lambda p: not p.get("wrapped") and not (p["lo"] == 0 and p["hi"] is None),
          lambda p: f"a clamp to {_bounds(p)} on B's side only (saturation, a clip, an activation bound)"),
    Cause("threshold", "A is 0 where B is negative and B elsewhere (the threshold is pinned only to 0)",
          lambda p: p.get("threshold") == "0" and p["value"] == 0 and p["on"] == "B",
          lambda p: "a ReLU on one side only: A = max(B, 0) (an activation dropped, or applied where it should not "
                    "be, in the export)"),
    Cause("threshold", "A is 0 or −inf where B (or |B|) is under float32's or float16's smallest normal or its log",
          lambda p: "threshold" in p and p["threshold"] != "0" and (p["value"] == 0 or p["value"] == -math.inf),
          lambda p: "subnormal (denormal) values flushed to zero (FTZ/DAZ: torch.set_flush_denormal(True), "
                    "-ffast-math, a kernel's flush mode)" + ("; the log of a flushed probability is −inf"
                                                             if p["value"] == -math.inf else "")),
    Cause("threshold", "A = a where B = b, on every element, a and b both mask fills (−inf, −1e4, −1e9, a lowest)",
          lambda p: "b_value" in p and is_mask_fill(p["value"]) and is_mask_fill(p["b_value"]),
          lambda p: f"a mask filled with {p['value']:g} on A's side and {p['b_value']:g} on B's: masked_fill's value "
                    "differs (−inf against a large finite negative such as −1e9 or finfo.min); after a softmax both "
                    "give 0, except in a row masked entirely, where −inf gives NaN"),
    Cause("threshold", "A is ±inf with B's sign exactly where |B| passes a narrower format's overflow edge",
          lambda p: "overflow" in p,
          lambda p: f"an overflow in {p['overflow']} on A's side: values past its largest finite value become ±inf "
                    "(a model or one op run in that format, a cast before a large sum or exp)"),
    Cause("elementwise_map", "A a smooth function of B, the same at every position",
          lambda p: p.get("map") == "function",
          lambda p: "an elementwise function that differs on one side: an activation swapped or approximated, or "
                    "with another parameter (Swish's β, ELU's α, SELU's scale), an elementwise op added or dropped"),
    Cause("elementwise_map", "integers rounded to a float format's grid past its exact range",
          lambda p: p.get("map") == "through_float",
          lambda p: f"integers passed through {p['format']} and back: it holds every integer only up to "
                    f"{p['exact_to']:,}, so larger ids, indices or counts lose their low bits (an int64 input cast to "
                    "float in an export, a Cast before a Gather, indices computed in floating point)"),
    Cause("elementwise_map", "each element's bytes reversed", lambda p: p.get("map") == "byteswap",
          lambda p: "a buffer or file read with the wrong byte order on one side (big-endian data such as '>f4' "
                    "read as little-endian: np.frombuffer or a raw .bin dump without its dtype's byte order)"),
    Cause("elementwise_map", "one side c·tanh(other/c)", lambda p: p.get("map") == "softcap",
          lambda p: f"a logit soft cap (c·tanh(x/c), c = {p['cap']:.6g}) on {p['capped']}'s side only: Gemma 2's "
                    "final_logit_softcapping (30) or attn_logit_softcapping (50), Grok's 30, applied on one side and "
                    "dropped on the other (an attention kernel or an export without it)"),
    Cause("row_temperature", "a temperature τ = √d for an attention head size d",
          lambda p: _sqrt_head(p["tau"]) is not None and abs(p["tau"]) > 1,
          lambda p: f"attention scores not scaled by 1/√d (d = {_sqrt_head(p['tau'])}): the softmax is sharper "
                    "by that temperature"),
    Cause("row_temperature", "a temperature τ = 1/√d for an attention head size d",
          lambda p: _sqrt_head(p["tau"]) is not None and abs(p["tau"]) < 1,
          lambda p: f"attention scores scaled by 1/√d twice (d = {_sqrt_head(p['tau'])}): the softmax is flatter"),
    Cause("row_temperature", "any temperature τ ≠ 1", lambda p: True,
          lambda p: f"a softmax temperature that differs: A's logits are {p['tau']:.4g} × B's "
                    "(a temperature applied twice or not at all, a missing scale on the scores)"),
    Cause("row_softmax", "one side the softmax of the other, which is already a distribution",
          lambda p: p["twice"],
          lambda p: f"a {'log_softmax' if p['logs'] else 'softmax'} applied twice: {p['of']} already holds "
                    "probabilities (a model that ends in a softmax, then a softmax in the loss or the caller)"),
    Cause("row_softmax", "one side the softmax of the other, which is not a distribution",
          lambda p: not p["twice"],
          lambda p: f"a {'log_softmax' if p['logs'] else 'softmax'} on one side only: "
                    f"{'log-probabilities' if p['logs'] else 'probabilities'} compared with the logits "
                    "(an output taken before or after the final normalisation)"),
    Cause("sample_offset", "A − B the same for every sample and not one constant", lambda p: True,
          lambda p: "an additive term that does not depend on the input, added on one side only or twice: a position "
                    "(or token-type) embedding, a bias over several axes, an additive attention mask or bias"),
    Cause("top_k", "the same k kept in every row", lambda p: p["k_min"] == p["k_max"],
          lambda p: f"a top-k filter (k = {p['k_min']}) on {p['side']}'s side only: logits filtered for sampling "
                    "(generate's top_k, a TopKLogitsWarper) compared with raw logits"),
    Cause("top_k", "a kept count that varies from row to row", lambda p: p["k_min"] != p["k_max"],
          lambda p: f"a top-p (nucleus) or per-row threshold filter on {p['side']}'s side only (generate's top_p, "
                    "min_p), compared with raw logits"),
    Cause("scan", "one side the running sum of the other", lambda p: True,
          lambda p: f"a cumulative sum on {p['side']}'s side only (a cumsum left in or dropped; position ids made "
                    "by cumsum of an attention mask against the mask itself)"),
    Cause("fibre_map", "M one of the box conversions between xyxy, xywh and cxcywh, c = 0",
          lambda p: _box_format(p) is not None,
          lambda p: f"a box format that differs: {p['side']} is in {_box_format(p)[1]} where the other side is in "
                    f"{_box_format(p)[0]} (torchvision.ops.box_convert)"),
    Cause("fibre_map", "a 3-entry map whose first column is RGB's luma weights (0.299, 0.587, 0.114)",
          lambda p: p["n"] == 3 and np.allclose(np.asarray(p["matrix"])[:, 0], (0.299, 0.587, 0.114), atol=2e-3),
          lambda p: f"a colour-space conversion on {p['side']}'s side only (RGB to YUV, YCbCr or luma)"),
    Cause("block_constant", "A constant over blocks where B varies", lambda p: True,
          lambda p: "nearest-neighbour upsampling (Resize mode 'nearest', F.interpolate(mode='nearest'), "
                    "repeat_interleave) where the other side interpolates (bilinear)"),
    *GROUP_CAUSES,
    *INDEX_CAUSES,
    *PARTIAL_CAUSES,
]


# Offered only when no specific cause above matched: any pure scale is a multiplication by a constant.
SCALE_FALLBACK = Cause(
    "elementwise_map", "a scale only, matching no constant above", _scale_only,
    lambda p: f"a multiplication by {p['scale']:.6g} on one side only, or applied twice: a weight, "
              f"a temperature (T = {1 / p['scale']:.6g}: logits divided by T twice or not at all), "
              "a normalisation constant")


def causes(kind: str, params: dict) -> list[str]:
    """The causes the form ``kind`` with ``params`` implies, most specific first."""
    out = []
    for c in CAUSES:
        if c.kind == kind and c.test(params):
            out.append(c.text(params))
            if kind in ("row_temperature",):
                break  # the specific temperature first; the generic only when none is specific
    # A whole factor's sum-against-mean is a reading the output cannot confirm (the reduced
    # axis is gone), so the plain multiplication stays beside it.
    if (all(c.startswith("a sum against a mean") for c in out) and kind == SCALE_FALLBACK.kind
            and SCALE_FALLBACK.test(params)):
        out.append(SCALE_FALLBACK.text(params))
    if kind == "group_affine" and params.get("zeroed"):
        return out[:1]  # groups kept or zeroed: a mask, whatever else their slopes would say
    return out
