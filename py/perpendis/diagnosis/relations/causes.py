"""Relation → likely causes, in PyTorch → ONNX / TensorRT work: one table, read by every
finding a member of the grammar makes, by a region (:mod:`.region`), by the offset or
scale of the failing elements (:mod:`perpendis.diagnosis.pattern`) and by the grammar's
table (:mod:`.grammar`, ``docs/relations.md``).

A cause is listed only when the relation implies it: ``A = exp(B)`` says one side is the
exponential of the other, whatever the layer, so its causes are the places ML code takes
an exponential; a relation this table has no entry for gets none (a wrong cause sends the
user the wrong way, so none is better).  Where the amount found points at one cause (a
scale of sqrt(767/768) is the unbiased variance over 768 features, a factor of π) that
cause goes first, with the number that says so.
"""

from __future__ import annotations

import math

import numpy as np

from .constants import name_of
from .elementwise import DESCRIBED, Relation

OFFSET = [
    "a dropped or doubled bias",
    "a wrong mean subtracted in a normalisation",
    "an epsilon added to the output instead of the variance",
]
# Each row (a sample's or a position's values) shifted by its own constant: what a row's
# statistic subtracted on one side leaves, not a bias (one value per feature, every row).
ROW_OFFSET = [
    "a per-row statistic subtracted on one side only: a mean (a normalisation's centring), a max or a log-sum-exp "
    "(logits against log-probabilities; softmax and the top-1 are unchanged by it)",
]
ROW_SCALE = [
    "a LayerNorm / RMSNorm epsilon that differs (a changed default, 1e-5 against 1e-6 or 1e-12)",
    "biased against unbiased variance in a hand-written normalisation",
    "epsilon inside against outside the square root",
    "the normaliser's statistic (variance, mean of squares) computed from other values or rounded to a narrower format",
    "a softmax or normaliser computed over a different axis or with a mask",
]
CUT = [
    "a gain or weight set to zero before these features (a LayerNorm weight zero-initialised, a gate or mask of zeros)",
    "an output that no longer depends on its input (a constant, cached or detached tensor returned)",
]
SIGN_FLIP = ["a subtraction with its operands swapped", "a negated weight or a sign convention (sin/cos, rotary)"]
# Per-slice maps by what the axis is (:func:`axis_role`): a per-channel constant of an
# image (axis 1 of NCHW) is a BatchNorm's or the input normalisation's; a per-feature one
# (the last axis) is a norm layer's elementwise affine or a bias; along any other axis (rows,
# positions, samples) a per-slice constant implies no layer, so none is named.
SLICE = {
    ("sign_flip", "channel"): SIGN_FLIP,
    ("sign_flip", "feature"): SIGN_FLIP,
    ("slice_affine", "channel"): [
        "BatchNorm in training mode (batch statistics instead of running ones)",
        "wrong per-channel mean/std normalisation constants",
        "a folded BatchNorm with stale statistics",
    ],
    ("slice_affine", "feature"): [
        "a norm layer's elementwise weight and bias (γ, β) that differ or are missing on one side (LayerNorm's "
        "affine dropped or not loaded; Gemma's RMSNorm scaling by (1 + w) against w)",
    ],
    ("slice_scale", "channel"): [
        "a wrong per-channel std or weight (normalisation constants, a folded BatchNorm)",
        "a per-channel quantisation scale",
    ],
    ("slice_scale", "feature"): [
        "a norm layer's elementwise weight (γ) that differs or is missing on one side (Gemma's RMSNorm "
        "scaling by (1 + w) against w; a weight not loaded)",
        "a per-feature quantisation scale",
    ],
    ("slice_offset", "channel"): [
        "a dropped or wrong bias (one value per output channel)",
        "a wrong per-channel mean in input normalisation",
        "BatchNorm's shift (beta or running mean) lost in folding",
    ],
    ("slice_offset", "feature"): [
        "a dropped or wrong bias (one value per feature: a Linear's or a norm layer's β)",
    ],
}
# A per-coordinate scale of a box or point whose factors are image sizes.
COORDINATES = ("coordinates normalised to [0, 1] on one side (divided by the image's size, {sizes}) and in pixels on "
               "the other: a box or keypoint format that differs (normalised against absolute xyxy or xywh)")
REVERSED = ["channel order (RGB against BGR)", "a flipped image or sequence (torch.flip, [::-1])"]
SHIFTED = [
    "a position offset by one (position ids starting at 0 against 1, a BOS token)",
    "padding on one side only, or different padding",
    "an off-by-one slice or roll",
]
# A shift by k > 1: positions k apart, never "by one".
SHIFTED_BY = [
    "positions offset by {k} (a prefix of {k} tokens on one side only, position ids or a cache offset by {k})",
    "padding on one side only, or different padding",
    "a roll by {k} on one side only (torch.roll, np.roll; a cyclic shift such as shifted windows)",
]
CHANNELS_ROLLED = ("channels in another order: the channel axis rotated by {k} (RGB against BRG or GBR, a "
                   "channel slice taken {k} {places} off)")
# A slice's own statistic subtracted on one side, by statistic.
SUBTRACTED = {
    "mean": ("a mean subtracted on {side}'s side only (a centring step applied once too often or not at all: "
             "mean-subtraction in preprocessing, LayerNorm's centring where the other side has none)"),
    "max": ("the maximum subtracted on {side}'s side only: a softmax's stabilising shift (x − max(x)) whose "
            "shifted logits were returned, harmless once a softmax follows but not to the logits themselves"),
}
PERMUTED = [
    "a shuffled batch (DataLoader shuffle=True, a sampler, sorting by length)",
    "a channel or head order that differs (a reshape before a permute)",
]
# The columns of a (rows, classes) tensor in another order.
CLASS_ORDER = ("classes (or features) in another order: an id2label or label map that differs, a class list sorted "
               "otherwise")
TRANSPOSED = [
    "a transposed weight or square matrix (x @ W against x @ W.T; nn.Linear stores W as (out, in))",
    "layout: axes of equal size swapped (H and W, heads and head_dim)",
]
CLIPPED = {
    6.0: ["ReLU6 against ReLU (a clamp at 6)", "hardswish / hardsigmoid approximations"],
    0.0: ["a ReLU on one side only", "an activation that differs (ReLU against GELU or LeakyReLU)"],
    65504.0: ["float16 overflow saturating at 65504", "autocast or .half() where values exceed float16's range"],
}
CLIPPED_OTHER = ["a clamp or saturation on one side only (an activation bound, an int8 range)", "quantisation range"]
GRID = [
    "quantisation (ONNX Runtime quantize_dynamic / QDQ int8, fake-quant)",
    "a cast on one side to an integer type and back",
]


def grid_causes(step: float, levels: int) -> list[str]:
    """What a uniform grid implies: a quantisation with that scale, 8-bit when the values
    span at most 255 steps, a cast to an integer only for a step of 1.  A float format's own
    grid is not uniform (its spacing doubles each binade), so it is never a cause here."""
    if abs(step - 1.0) <= 1e-6:
        return [GRID[1]]
    bits = "8-bit (int8/uint8) " if levels <= 255 else ""
    return [f"{bits}quantisation with scale {step:.4g} on one side (ONNX Runtime quantize_dynamic / QDQ, "
            "fake-quant, a quantise-dequantise pair)"]


def per_channel_grid_causes(axis: int, levels: int) -> list[str]:
    """What a grid with a step per index of one axis implies: a per-channel quantisation
    along that axis (8-bit when no slice spans more than 255 steps)."""
    bits = "8-bit (int8/uint8) " if levels <= 255 else ""
    return [f"{bits}per-channel quantisation along axis {axis} on one side (a scale per channel: "
            "torch.ao per_channel observers, ONNX QuantizeLinear with axis, a fake-quant of weights)"]


DROPOUT = ["dropout left in training mode (model.train(), F.dropout(training=True))", "a stochastic layer (DropPath)"]

NORMALISATION = {
    "softmax": ["a softmax applied on one side only (logits against probabilities; an exporter or runtime "
                "appending or dropping the final Softmax)"],
    "log_softmax": ["log_softmax on one side and raw logits on the other (a loss-ready output exported)"],
    "L2 normalisation": ["an L2 normalisation on one side only (F.normalize in an embedding head)"],
    "sum normalisation": ["a division by each fibre's sum on one side only: a softmax's normalisation missing (exp "
                          "without the sum: unnormalised attention weights or scores), or probabilities renormalised "
                          "after a mask or a top-k"],
    "layer norm": ["a normalisation applied on one side only (a final LayerNorm kept or dropped)",
                   "the same normalisation with another epsilon (a norm of a normalised row moves it only "
                   "through ε)"],
    "gained": ["a LayerNorm or RMSNorm applied twice, or on one side only, its gain (and bias) kept (a norm "
               "layer bypassed or repeated in the export; pre-norm against post-norm)",
               "the same LayerNorm or RMSNorm with another epsilon: normalising an already normalised row "
               "changes it only through ε, so one side is a norm of the other"],
    "rms against layer": ["RMSNorm on one side and LayerNorm on the other: the side with RMS 1 was not centred "
                          "(RMSNorm does not subtract the mean; a norm class swapped in a config or a fused kernel)"],
    "axis": ["a softmax or normalisation over the wrong axis (dim=-1 against dim=1; a transpose before it "
             "lost in the export)"],
}
ROTATION = [
    "a rotary embedding that differs (rope_theta / base, rope scaling, position ids offset)",
    "rotary pairs taken as halves (i, i + d/2) on one side and interleaved (2i, 2i + 1) on the other",
]
# A region (:func:`.region.causes`): one run at an end of an axis, else a few indices.
REGION_ROWS = ["one channel, row or position computed differently (a wrong weight slice, an off-by-one index)"]
# One sample of a batch alone differs while the others agree: the samples go through the
# model apart, so what differs is that sample's own input or what goes with it.
REGION_SAMPLE = ["something that differs for that sample alone: its padding (an attention mask ignored, or position "
                 "ids not shifted for a left-padded row) or its input values (an input id, a low-variance row "
                 "meeting another epsilon)"]
REGION_END = ["padding or masking applied to part of the tensor only (a mask or truncation at one end of the axis)",
              "an off-by-one index or a shifted window at the end of the axis"]

# What an offset or a scale fitted to the failing elements alone implies (the plain
# description of :mod:`perpendis.diagnosis.pattern`, no relation fitted over the pair).
FAILING_OFFSET = "a constant added on one side only (a bias or shift applied twice or not at all)"

# The switches that decide a float32 computation's precision, per cause.
SWITCHES = {
    "tf32": [
        "TF32 matmuls: torch.backends.cuda.matmul.allow_tf32 or torch.set_float32_matmul_precision('high')",
        "TF32 convolutions: torch.backends.cudnn.allow_tf32",
        "ONNX Runtime's CUDA provider option use_tf32",
    ],
    "float16": ["a model in .half() with float32 inputs and outputs", "torch.autocast(dtype=torch.float16)"],
    "bfloat16": ["torch.autocast(dtype=torch.bfloat16), on CPU its default", "a model in .bfloat16()"],
}


def for_scale(s: float, shape: tuple[int, ...]) -> list[str]:
    """Causes of a constant scale ``s``: those its value implies (a variance's N/(N−1) for a
    size of the shape, 1/√n, a dropout's 1/(1−p), a known constant), else only that a
    factor was applied on one side."""
    out = []
    for n in sorted(set(shape), reverse=True):
        if n < 2:
            continue
        for ratio, what in ((math.sqrt((n - 1) / n), "sqrt((n-1)/n)"), (math.sqrt(n / (n - 1)), "sqrt(n/(n-1))")):
            if abs(s - ratio) <= 0.05 * abs(1 - ratio):
                out.append(f"biased against unbiased variance over {n} elements: {what} = {ratio:.6g}")
        for ratio, what in ((1 / math.sqrt(n), "1/sqrt(n)"), (math.sqrt(n), "sqrt(n)")):
            if abs(s - ratio) <= 1e-3 * ratio:
                out.append(f"an attention or norm scale of {what} for n = {n} applied or missed")
    for p in (0.1, 0.2, 0.25, 0.5):
        if abs(s - 1 / (1 - p)) <= 1e-3:
            out.append(f"a dropout rescaling by 1/(1-{p}) without its mask")
    if not out:
        out = for_constant(s, 1e-4)
    # What any constant factor implies; a variance's bias only where s is its factor (above).
    return out or [f"a factor of {s:.6g} applied on one side only, or twice (a weight, a scale or a normalisation "
                   "constant)"]


# A per-feature scale names a norm layer's gain only on a last axis this long: a shorter one
# (a box's 4 coordinates, a point's 2) need not be a layer's features.  A bias is any size's.
MIN_FEATURES = 16


def axis_role(shape: tuple[int, ...] | list[int], axis: int) -> str:
    """``channel`` for axis 1 of a 4-D or 5-D tensor (NCHW, NCDHW), ``feature`` for the
    last axis of one of two or more axes, ``other`` for the rest (rows, positions, samples)."""
    ndim = len(shape)
    if ndim in (4, 5) and axis == 1:
        return "channel"
    if ndim >= 2 and axis == ndim - 1:
        return "feature"
    return "other"


# Per-channel (mean, std) of the input normalisations models ship with, RGB order.
NORMALISATIONS = {
    "ImageNet's": ((0.485, 0.456, 0.406), (0.229, 0.224, 0.225)),
    "CLIP's": ((0.48145466, 0.4578275, 0.40821073), (0.26862954, 0.26130258, 0.27577711)),
}


def named_normalisation(scale: np.ndarray, offset: np.ndarray) -> str | None:
    """The cause when a per-channel A = s·B + c over 3 channels is a known normalisation,
    (x − mean)/std on A's side (s = 1/std, c = −mean/std) or undone (s = std, c = mean), in
    RGB or BGR order, each constant to 0.1 %: the fit itself names the constants."""
    if scale.shape != (3,):
        return None
    for name, (mean, std) in NORMALISATIONS.items():
        for order, rev in (("RGB", False), ("BGR", True)):
            m, d = (np.asarray(mean)[::-1], np.asarray(std)[::-1]) if rev else (np.asarray(mean), np.asarray(std))
            for side, (want_s, want_c) in (("A", (1 / d, -m / d)), ("B", (d, m))):
                if np.allclose(scale, want_s, rtol=1e-3, atol=0) and np.allclose(offset, want_c, rtol=1e-3, atol=1e-4):
                    return (f"{name} input normalisation (mean {tuple(mean)}, std {tuple(std)}, {order} order) applied "
                            f"on {side}'s side only: an image normalised twice, or not at all, before the model")
    return None


def for_slices(kind: str, shape: tuple[int, ...] | list[int], axis: int) -> list[str]:
    """Per-slice causes for the axis's role; along an axis of 3 or 4 channels (an image's)
    the input's normalisation constants come first."""
    role = axis_role(shape, axis)
    if role == "feature" and kind in ("slice_scale", "slice_affine") and shape[axis] < MIN_FEATURES:
        return []
    causes = list(SLICE.get((kind, role), ()))
    constants = next((c for c in causes if "mean/std" in c or "mean in input" in c), None)
    if shape[axis] in (3, 4) and constants is not None:
        causes.remove(constants)
        causes.insert(0, constants)
    return causes


def for_reordered(kind: str, shape: tuple[int, ...] | list[int], axis: int, k: int = 0) -> list[str]:
    """The causes of an axis reversed, permuted or shifted by ``k``, by what the axis can be:
    RGB against BGR only for an axis of 3 or 4 entries in a channel's place (axis 1 of NCHW,
    the last of HWC); a shuffled batch only for axis 0; a position off by one only for a
    shift of one, and never for channels."""
    n, ndim = shape[axis], len(shape)
    colour_last = n in (3, 4) and ndim >= 3 and axis == ndim - 1  # the channels of an HWC image
    if kind == "reversed":
        colour = colour_last or (n in (3, 4) and axis_role(shape, axis) == "channel")
        return REVERSED if colour else REVERSED[1:]
    if kind == "permuted":
        if ndim == 2 and axis == 1:
            return [CLASS_ORDER]
        return PERMUTED if axis == 0 else PERMUTED[1:]
    # Channels have no positions to be off by one.
    if colour_last or axis_role(shape, axis) == "channel":
        k_text = "one" if abs(k) == 1 else str(abs(k))
        return [CHANNELS_ROLLED.format(k=k_text, places="place" if abs(k) == 1 else "places")]
    return SHIFTED if abs(k) == 1 else [c.format(k=abs(k)) for c in SHIFTED_BY]


def for_clip(bound: float) -> list[str]:
    for value, causes in CLIPPED.items():
        if abs(abs(bound) - value) <= 1e-6 * max(1.0, value):
            return list(causes)
    if abs(bound) in (127.0, 128.0, 255.0):
        return ["an int8 / uint8 range (quantisation saturates)", *CLIPPED_OTHER]
    return list(CLIPPED_OTHER)


# The parameter-free maps' causes (:func:`of`).
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
        if p.get("mode") == "truncate":
            return ["a conversion to bfloat16 that truncates (drops the low 16 bits of each float32, as a bit shift "
                    "or some converters do) where the other side rounds to nearest"]
        return [_CAST.format(fmt=p["format"])]
    return []


def for_constant(value: float, rel: float) -> list[str]:
    """A cause naming the known constant a fitted factor is, when it is one."""
    named = name_of(value, rel)
    if named is None:
        return []
    return [f"a factor of {named} applied on one side only, or twice (a scale, normaliser or unit constant)"]
