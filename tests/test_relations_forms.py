"""The form search (``relations/forms``) on arrays made by real numpy and torch calls: each
relation is stated with its fitted constants, and only the causes its parameters imply."""

from __future__ import annotations

import re

import numpy as np
import pytest
from perpendis.engine.compare import compare_values

torch = pytest.importorskip("torch")


def _top(a: np.ndarray, b: np.ndarray):
    report = compare_values(a, b, preset="fp32-cpu")
    assert report.verdict == "investigate"
    return report.findings[0]


def _b(shape=(2, 16, 32), seed=0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def test_a_half_names_a_power_of_two_and_no_variance_over_an_axis_of_two():
    b = _b()
    top = _top((b * np.float32(0.5)).astype(np.float32), b)
    assert top.kind == "scale" and "2^-1" in top.message
    assert not any("variance" in c for c in top.causes)


def test_an_unbiased_variance_factor_is_named_with_its_n():
    b = _b((4, 16, 32))
    top = _top((b * np.float32(np.sqrt(32 / 31))).astype(np.float32), b)
    assert any("N = 32" in c for c in top.causes)


def test_a_temperature_applied_twice_names_its_t():
    b = _b((4, 1000))
    top = _top((b / np.float32(0.7)).astype(np.float32), b)
    assert top.kind == "scale" and any("T = 0.7" in c for c in top.causes)


def test_np_roll_is_said_with_its_own_sign():
    b = _b()
    for k in (1, -1, 3):
        top = _top(np.roll(b, k, axis=-1), b)
        assert f"np.roll(B, {k})" in top.message, top.message


def test_a_softmax_of_probabilities_is_a_softmax_applied_twice():
    logits = torch.randn(8, 1000, generator=torch.Generator().manual_seed(1))
    p = torch.softmax(logits, -1)
    top = _top(torch.softmax(p, -1).numpy(), p.numpy())
    assert top.kind in ("row_softmax", "normalisation") and "softmax(B)" in top.message and top.causes


def test_an_int8_wrap_held_as_float32_is_a_wrap_not_a_narrower_format():
    w = np.random.default_rng(2).integers(-300, 300, (64, 64))
    top = _top((((w + 128) % 256) - 128).astype(np.float32), w.astype(np.float32))
    assert top.kind == "wrap" and "int8" in top.message
    assert not any("bfloat16" in c for c in top.causes)


def test_a_sharper_softmax_names_the_missing_attention_scale():
    scores = torch.randn(2, 4, 16, 16, generator=torch.Generator().manual_seed(3))
    a, b = torch.softmax(scores * 8, -1), torch.softmax(scores, -1)  # 8 = √64: 1/√d left out on A's side
    top = _top(a.numpy(), b.numpy())
    assert top.kind == "row_temperature" and any("d = 64" in c for c in top.causes)


def test_a_layernorm_epsilon_that_differs_offers_the_epsilon():
    x = torch.randn(2, 16, 64, generator=torch.Generator().manual_seed(4))
    ln = [torch.nn.functional.layer_norm(x, (64,), eps=e).numpy() for e in (1e-1, 1e-5)]
    top = _top(*ln)
    assert any("epsilon" in c for c in top.causes)


def test_rounding_between_float32_and_float64_states_no_form():
    x = torch.randn(4, 64, 64, generator=torch.Generator().manual_seed(5), dtype=torch.float64)
    w = torch.randn(64, 64, generator=torch.Generator().manual_seed(6), dtype=torch.float64)
    a, b = (x.float() @ w.float()).numpy(), (x @ w).float().numpy()
    report = compare_values(a, b, preset="fp32-cpu")
    assert report.verdict == "rounding" and not [f for f in report.findings if f.severity == "error"]


def _t(shape=(4, 8, 32), seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def test_a_relu_is_named_a_relu_not_a_flush_of_subnormals():
    """torch.relu(B): A = 0 wherever B < 0; the threshold lies anywhere between B's largest
    negative and smallest positive value, which pins 0 and no smallest normal."""
    b = _t()
    top = _top(torch.relu(b).numpy(), b.numpy())
    assert top.kind == "threshold" and top.message.startswith("A = max(B, 0), a ReLU")
    assert any("ReLU on one side only" in c for c in top.causes)
    assert not any("subnormal" in c for c in top.causes)


def test_a_negation_and_an_absolute_value_are_no_rotary_embedding():
    """−B and |B| keep every feature pair's norm, as a rotation does, but also every
    element's size, which no rotation by an angle other than π does."""
    b = _t()
    negated = _top((-b).numpy(), b.numpy())
    assert negated.kind == "sign_flip" and not any("rotary" in c for c in negated.causes[:1])
    absolute = _top(b.abs().numpy(), b.numpy())
    assert absolute.kind == "elementwise_map" and absolute.message.startswith("A = |B|")
    assert any("absolute value on one side only" in c for c in absolute.causes)


def test_an_l2_normalisation_on_one_side_is_named():
    b = _t()
    top = _top(torch.nn.functional.normalize(b, dim=-1).numpy(), b.numpy())
    assert top.kind == "group_affine"
    assert any("L2 normalisation (F.normalize" in c and "on A's side" in c for c in top.causes)


def test_a_layer_norm_with_a_larger_epsilon_is_named_on_its_side():
    """torch's LayerNorm of rows of small variance with eps 1e-3 against 1e-5: A = s·B per
    row, both centred, s < 1 everywhere."""
    x = _t() * 0.01
    a = torch.nn.functional.layer_norm(x, (32,), eps=1e-3)
    b = torch.nn.functional.layer_norm(x, (32,), eps=1e-5)
    top = _top(a.numpy(), b.numpy())
    assert any("larger epsilon on A's side" in c for c in top.causes), top
    swapped = _top(b.numpy(), a.numpy())
    assert any("larger epsilon on B's side" in c for c in swapped.causes), swapped


def test_a_sort_on_one_side_is_named_with_its_side_and_direction():
    """torch.sort(B, descending=True): each row holds B's values, sorted; the members'
    per-feature fit, which leaves 20 % unexplained, is not stated instead."""
    b = _t()
    top = _top(torch.sort(b, dim=-1, descending=True).values.numpy(), b.numpy())
    assert top.kind == "index_map" and top.message.startswith("A = B sorted descending along axis 2")
    assert any("a sort on A's side only" in c for c in top.causes)
    values, _ = torch.topk(b, 32, dim=-1, sorted=True)
    assert _top(b.numpy(), values.numpy()).message.startswith("B = A sorted descending along axis 2")


def test_a_position_embedding_added_twice_is_an_input_independent_term():
    """A GPT-2-style learned position embedding (one vector per position) added on one side
    only: A − B is the same for every sample and varies over positions and features."""
    torch.manual_seed(3)
    embedding = torch.nn.Embedding(8, 32)
    b = _t()
    a = b + embedding(torch.arange(8)).detach()[None]
    top = _top(a.numpy(), b.numpy())
    assert top.kind == "sample_offset" and "varying over axes (1, 2)" in top.message
    assert any("position (or token-type) embedding" in c for c in top.causes)
    per_feature = _top((b + torch.linspace(-1, 1, 32)).numpy(), b.numpy())
    assert per_feature.kind == "slice_offset"  # one value per feature stays the members' per-slice bias


def test_a_value_mask_above_a_threshold_is_stated_and_a_clamp_is_left_a_clamp():
    b = _t()
    masked = _top(b.masked_fill(b > 1.5, 0.0).numpy(), b.numpy())
    assert masked.kind == "threshold" and "A = 0 wherever B > t" in masked.message and not masked.causes
    clamped = _top(b.clamp(max=1.0).numpy(), b.numpy())
    assert clamped.kind == "clipped"


# Relations of kinds the grammar did not list, each made by the torch call that makes it in
# a model, with what the report says and what it must not say.
F = torch.nn.functional if torch else None


def _g(seed: int):
    return torch.Generator().manual_seed(seed)


def _report(a, b, preset="fp32-cpu"):
    return compare_values(np.asarray(a), np.asarray(b), preset=preset)


def test_an_unbiased_variance_over_reduced_axes_names_n_from_the_scale():
    x = torch.randn(2, 8, 16, 16, generator=_g(1))
    top = _top(x.var(dim=(2, 3), unbiased=True).numpy(), x.var(dim=(2, 3), unbiased=False).numpy())
    assert top.kind == "scale" and any("N = 256" in c for c in top.causes), (top.message, top.causes)


def test_rounded_integers_are_not_called_bfloat16():
    v = torch.randn(4, 50, generator=_g(2)) * 10
    report = _report(v.round().numpy(), v.numpy())
    assert report.findings[0].message.startswith("A = round(B)")
    assert not any("bfloat16" in f.message or any("bfloat16" in c for c in f.causes) for f in report.findings)


def test_floor_against_round_is_a_rounding_direction_and_implies_no_bias():
    """An offset of 1 on the failing elements only, A always the lower: A floors where B
    rounds, which that direction implies; no bias does."""
    v = torch.randn(4, 50, generator=_g(3)) * 10
    top = _top(v.floor().numpy(), v.round().numpy())
    assert top.kind == "rounded_down" and "A is the lower on every one" in top.message
    assert len(top.causes) == 1 and "floor()" in top.causes[0] and "bias" not in top.causes[0]


def test_an_absolute_value_dropped_is_said_either_way_round():
    v = torch.randn(4, 50, generator=_g(4))
    top = _top(v.numpy(), v.abs().numpy())
    assert top.message.startswith("B = |A|") and any("absolute value" in c for c in top.causes)


def test_a_norm_layers_missing_affine_is_a_feature_map_not_a_batchnorm():
    x = torch.randn(2, 8, 16, 16, generator=_g(5))
    w, bias = torch.randn(16, generator=_g(6)), torch.randn(16, generator=_g(7))
    top = _top(F.layer_norm(x, (16,)).numpy(), F.layer_norm(x, (16,), w, bias).numpy())
    assert top.kind == "slice_affine" and "axis 3" in top.message
    assert any("elementwise weight and bias" in c for c in top.causes)
    assert not any("BatchNorm" in c for c in top.causes)


def test_a_zeroed_channel_is_a_signal_cut_not_a_normalisation_constant():
    x = torch.randn(2, 8, 16, 16, generator=_g(8))
    gate = torch.ones(1, 8, 1, 1)
    gate[0, 1] = 0
    report = _report((x * gate).numpy(), x.numpy())
    top = report.findings[0]
    assert "the signal was cut" in top.message
    assert not any("BatchNorm" in c or "std" in c for c in top.causes)


def test_class_ids_off_by_one_are_a_roll_of_the_class_axis():
    logits = torch.randn(8, 1000, generator=_g(9)) * 3
    top = _top(torch.roll(logits, -1, 1).numpy(), logits.numpy())
    assert "np.roll(B, -1, axis=1)" in top.message and "t + 1" in top.message
    assert any("class or token ids offset by one" in c for c in top.causes)


def test_two_batch_entries_swapped_name_the_batch_not_a_sin_cos_order():
    x = torch.randn(2, 8, 16, 16, generator=_g(10))
    top = _top(x.flip(0).numpy(), x.numpy())
    assert any("batch" in c for c in top.causes) and not any("sin/cos" in c for c in top.causes)


def test_heads_permuted_are_not_called_a_shuffled_batch():
    h = torch.randn(2, 4, 16, 8, generator=_g(11))
    report = _report(h[:, [1, 0, 3, 2]].numpy(), h.numpy())
    causes = [c for f in report.findings for c in f.causes]
    assert any("head order" in c for c in causes) and not any("shuffle" in c for c in causes)


def test_height_and_width_swapped_are_not_called_nchw_against_nhwc():
    x = torch.randn(2, 8, 16, 16, generator=_g(12))
    report = _report(x.transpose(2, 3).numpy(), x.numpy())
    causes = [c for f in report.findings for c in f.causes]
    assert causes and not any("NCHW" in c for c in causes)


def test_a_padding_mode_that_differs_leaves_the_border_and_names_padding():
    x, w = torch.randn(2, 8, 16, 16, generator=_g(13)), torch.randn(4, 8, 3, 3, generator=_g(14))
    a = F.conv2d(F.pad(x, (1, 1, 1, 1), mode="reflect"), w)
    report = _report(a.numpy(), F.conv2d(x, w, padding=1).numpy())
    top = report.findings[0]
    assert top.kind == "border" and "the outermost row and column of axes (2, 3)" in top.message
    assert any("padding" in c for c in top.causes)


def test_padding_that_differs_before_another_convolution_widens_the_border_by_its_reach():
    """A 5x5 convolution after the 3x3 one spreads the edge's difference two entries inward."""
    x = torch.randn(2, 8, 16, 16, generator=_g(15))
    w1, w2 = torch.randn(8, 8, 3, 3, generator=_g(16)), torch.randn(4, 8, 5, 5, generator=_g(17))
    a = F.conv2d(F.conv2d(F.pad(x, (1, 1, 1, 1), mode="reflect"), w1), w2, padding=2)
    b = F.conv2d(F.conv2d(x, w1, padding=1), w2, padding=2)
    top = _report(a.numpy(), b.numpy()).findings[0]
    assert top.kind == "border" and "the outer 3 rows and columns" in top.message


def test_a_top_k_filter_leads_over_the_infinities_it_writes():
    logits = torch.randn(8, 1000, generator=_g(18)) * 3
    kth = logits.topk(50, -1).values[:, -1:]
    filtered = torch.where(logits >= kth, logits, torch.tensor(-float("inf")))
    report = _report(filtered.numpy(), logits.numpy())
    top = report.findings[0]
    assert top.kind == "threshold" and "among its 50 largest" in top.message
    assert any("top-k filter (k = 50)" in c for c in top.causes)
    assert report.findings[1].kind == "inf"


def test_a_float16_round_trip_within_the_tolerance_is_rounding_only_when_fp16_is_declared():
    """Under fp32-cpu a float32 tensor holding exactly float16(B) was cast somewhere (a bisect
    blames that layer); under --preset fp16 the user said a side runs in float16."""
    x = torch.randn(2, 8, 16, 16, generator=_g(19))
    report = _report(x.half().float().numpy(), x.numpy())
    assert report.verdict == "investigate" and report.findings[0].severity == "error"
    declared = _report(x.half().float().numpy(), x.numpy(), preset="fp16")
    assert declared.verdict == "rounding"
    assert declared.findings[0].severity == "warning" and "rounded to float16" in declared.findings[0].message


def test_rmsnorm_against_layernorm_is_named_as_such():
    x = torch.randn(2, 8, 16, 16, generator=_g(20)) + 0.5
    rms = x / x.pow(2).mean(-1, keepdim=True).add(1e-6).sqrt()
    top = _top(rms.numpy(), F.layer_norm(x, (16,), eps=1e-6).numpy())
    assert top.kind == "normalisation" and "RMS 1 but not mean 0" in top.message
    assert top.causes and top.causes[0].startswith("RMSNorm on one side and LayerNorm on the other")


def test_a_running_sum_on_one_side_is_a_scan():
    mask = (torch.rand(4, 32, generator=_g(21)) > 0.2).float()
    top = _top(torch.cumsum(mask, 1).numpy(), mask.numpy())
    assert top.kind == "scan" and top.message.startswith("A = cumsum(B, axis=1)")
    assert any("cumulative sum on A's side" in c for c in top.causes)


def test_class_indices_off_by_one_are_ids_not_a_bias():
    logits = torch.randn(2, 16, 100, generator=_g(22))
    top = _top((logits.argmax(-1) + 1).numpy(), logits.argmax(-1).numpy())
    assert top.kind == "offset" and any("ids offset by 1" in c for c in top.causes)
    assert not any("bias" in c for c in top.causes)


def test_boxes_normalised_on_one_side_name_the_image_size_not_a_norm_layer():
    boxes = torch.rand(50, 4, generator=_g(23))
    pixels = boxes * torch.tensor([640.0, 480.0, 640.0, 480.0])
    top = _top(boxes.numpy(), pixels.numpy())
    assert top.kind == "slice_scale" and top.causes and "640 and 480" in top.causes[0]
    assert not any("norm layer" in c for c in top.causes)


def test_a_mask_against_its_complement_is_an_inverted_mask_not_dropout_or_a_wrap():
    mask = (torch.rand(4, 32, generator=_g(24)) > 0.3).float()
    top = _top((1 - mask).numpy(), mask.numpy())
    assert top.kind == "affine" and top.causes and top.causes[0].startswith("a complement, 1 − B")


def test_leaky_relu_against_relu_is_an_activation_not_a_clamp():
    x = torch.randn(2, 8, 16, 16, generator=_g(25))
    for act in (lambda t: F.leaky_relu(t, 0.01), F.elu):
        top = _top(act(x).numpy(), F.relu(x).numpy())
        assert top.kind == "saturated" and "clamped to at least 0" in top.message
        assert top.causes and top.causes[0].startswith("an activation that differs on the negative side")


def test_a_relu_dropped_is_named_as_a_relu_on_one_side():
    x = torch.randn(4, 64, generator=_g(26))
    top = _top(x.numpy(), F.relu(x).numpy())
    assert top.causes and top.causes[0].startswith("a ReLU on B's side only")


def test_boxes_in_another_format_are_a_fixed_mix_of_the_last_axis():
    xy = torch.rand(20, 2, generator=_g(27)) * 100
    xyxy = torch.cat([xy, xy + torch.rand(20, 2, generator=_g(28)) * 50], 1)
    xywh = torch.cat([xyxy[:, :2], xyxy[:, 2:] - xyxy[:, :2]], 1)
    report = _report(xywh.numpy(), xyxy.numpy())
    top = report.findings[0]
    assert top.kind == "fibre_map" and "M = [1 0 -1 0; 0 1 0 -1; 0 0 1 0; 0 0 0 1]" in top.message
    assert top.causes == ["a box format that differs: A is in xywh where the other side is in xyxy "
                          "(torchvision.ops.box_convert)"]
    region = next(f for f in report.findings if f.kind == "region")
    assert region.causes == []  # the map explains the columns that fail; no mask at an end


def test_a_colour_space_conversion_is_named_from_its_luma_column():
    rgb = torch.rand(2, 16, 16, 3, generator=_g(29))
    m = torch.tensor([[0.299, 0.587, 0.114], [-0.14713, -0.28886, 0.436], [0.615, -0.51499, -0.10001]])
    top = _top((rgb @ m.T).numpy(), rgb.numpy())
    assert top.kind == "fibre_map" and any("colour-space conversion" in c for c in top.causes)


def test_positions_zeroed_by_a_mask_are_a_mask_not_a_per_group_normalisation():
    hidden = torch.randn(2, 16, 64, generator=_g(30))
    keep = torch.ones(2, 16, 1)
    keep[0, 12:], keep[1, 9:] = 0, 0
    top = _top((hidden * keep).numpy(), hidden.numpy())
    assert top.kind == "group_affine" and "A is 0 on 11 of 32 groups" in top.message
    assert top.causes and top.causes[0].startswith("a mask applied on one side only")


def test_degrees_against_radians_are_named():
    angles = torch.rand(50, generator=_g(31)) * 6 - 3
    top = _top(torch.rad2deg(angles).numpy(), angles.numpy())
    assert "(= 180/π)" in top.message and top.causes[0].startswith("degrees against radians")


def test_classes_in_another_order_are_a_label_map():
    logits = torch.randn(8, 10, generator=_g(32)) * 3
    perm = torch.randperm(10, generator=_g(33))
    report = _report(logits[:, perm].numpy(), logits.numpy())
    permuted = next(f for f in report.findings if f.kind == "permuted")
    assert permuted.causes and "id2label" in permuted.causes[0]


def test_an_image_in_minus_one_to_one_against_zero_to_one_is_named():
    img = torch.rand(2, 3, 16, 16, generator=_g(34))
    top = _top(((img - 0.5) / 0.5).numpy(), img.numpy())
    assert top.kind == "affine" and "mean 0.5 and std 0.5" in top.causes[0]


def test_a_per_row_offset_that_does_not_hold_names_no_cause():
    """log(B + 1e-3) against log(B): each row's mean shift leaves a quarter of the difference."""
    depth = torch.rand(2, 1, 16, 16, generator=_g(35)) * 10 + 0.5
    report = _report(torch.log(depth + 1e-3).numpy(), torch.log(depth).numpy())
    fitted = [f for f in report.findings if f.kind in ("row_offset", "row_scale")]
    assert all(not f.causes and "does not hold to the tolerance" in f.message for f in fitted)


def test_a_sum_against_a_mean_names_the_count():
    x = torch.randn(2, 8, 64, 4, generator=_g(36))
    top = _top(x.sum(-1).numpy(), x.mean(-1).numpy())
    assert any("a sum against a mean over 4 values" in c for c in top.causes)


def test_a_layernorm_epsilon_changed_names_the_epsilon_not_a_norm_on_one_side():
    hidden = torch.randn(2, 16, 64, generator=_g(37)) * 3 + 1
    for eps in (1e-3, 1e-2, 1e-1):
        top = _top(F.layer_norm(hidden, (64,), eps=eps).numpy(), F.layer_norm(hidden, (64,), eps=1e-5).numpy())
        assert top.kind == "normalisation" and "both sides are normalised" in top.message
        assert top.causes and all("another epsilon" in c for c in top.causes), top.causes


def test_a_final_layernorm_dropped_is_a_norm_on_one_side():
    hidden = torch.randn(2, 16, 64, generator=_g(38)) * 3 + 1
    top = _top(hidden.numpy(), F.layer_norm(hidden, (64,)).numpy())
    assert top.kind == "normalisation" and top.causes[0].startswith("a normalisation applied on one side only")


def test_instancenorm_against_layernorm_names_statistics_per_sample_and_channel():
    x = torch.randn(2, 8, 16, 16, generator=_g(39))
    top = _top(F.instance_norm(x).numpy(), F.layer_norm(x, (8, 16, 16)).numpy())
    assert top.kind == "group_affine" and top.causes and "InstanceNorm" in top.causes[0]


def test_a_squeeze_excitation_gate_that_differs_is_a_gate_per_channel():
    x = torch.randn(2, 16, 8, 8, generator=_g(40))
    z = x.mean((2, 3), keepdim=True) * 3
    top = _top((x * F.hardsigmoid(z)).numpy(), (x * torch.sigmoid(z)).numpy())
    assert top.kind == "group_affine" and top.causes and "gate" in top.causes[0]


def test_values_rounded_to_two_decimals_are_a_grid_of_0_01_not_a_narrower_float():
    b = torch.randn(4, 100, generator=torch.Generator().manual_seed(0))
    top = _top(torch.round(b, decimals=2).numpy(), b.numpy())
    assert top.kind == "grid" and top.message.startswith("A = B rounded to a grid of step 0.01")
    assert top.causes and all("bfloat16" not in c and "8-bit" not in c for c in top.causes)


def test_an_int8_fake_quantisation_names_its_scale_and_the_clamp():
    b = torch.randn(4, 100, generator=torch.Generator().manual_seed(1))
    a = torch.fake_quantize_per_tensor_affine(b, 0.02, 0, -128, 127)
    top = _top(a.numpy(), b.numpy())
    assert top.kind == "grid" and "clamped to [-2.56, 2.54]" in top.message
    assert any("8-bit" in c and "scale 0.02" in c for c in top.causes)


def _per_channel(x: torch.Tensor, axis: int) -> torch.Tensor:
    """``x`` through torch's per-channel int8 fake quantisation along ``axis`` (symmetric,
    one scale per channel from that channel's absolute maximum, as a weight observer sets)."""
    others = tuple(d for d in range(x.dim()) if d != axis)
    scale = (x.abs().amax(dim=others) / 127).float()
    return torch.fake_quantize_per_channel_affine(x, scale, torch.zeros(x.shape[axis], dtype=torch.int32),
                                                  axis, -128, 127)


@pytest.mark.parametrize(("shape", "axis"), [((32, 64), 0), ((2, 8, 12, 12), 1), ((48, 16), 1)])
def test_a_per_channel_fake_quantisation_is_a_grid_per_index_of_its_axis(shape, axis):
    g = torch.Generator().manual_seed(3)
    spread = torch.rand(shape[axis], generator=g) * 3 + 0.01
    b = torch.randn(shape, generator=g) * spread.view(-1, *([1] * (len(shape) - axis - 1)))
    top = _top(_per_channel(b, axis).numpy(), b.numpy())
    assert top.kind == "grid" and top.message.startswith(f"A = B rounded, per index of axis {axis}, "), top.message
    assert top.where["axis"] == axis and top.where["amount"]["step_max"] > 4 * top.where["amount"]["step_min"]
    assert top.causes and f"per-channel quantisation along axis {axis}" in top.causes[0]
    assert "8-bit" in top.causes[0]


def test_a_per_channel_grid_is_not_claimed_when_both_sides_run_the_same_quantisation():
    b = torch.randn(32, 64, generator=torch.Generator().manual_seed(4))
    a = _per_channel(b, 0)
    report = compare_values(a.numpy(), _per_channel(b * (1 + 1e-7), 0).numpy())
    assert all(f.kind != "grid" for f in report.findings)


def test_rolled_image_channels_are_a_channel_order_not_a_position_off_by_one():
    b = torch.randn(2, 3, 16, 16, generator=torch.Generator().manual_seed(2))
    top = _top(torch.roll(b, 1, 1).numpy(), b.numpy())
    assert top.kind == "shifted" and top.causes and all("position" not in c for c in top.causes)
    assert any("RGB" in c for c in top.causes)


def test_a_row_with_its_mean_subtracted_is_a_centring_not_a_bias():
    b = torch.randn(4, 100, generator=torch.Generator().manual_seed(3))
    top = _top((b - b.mean(-1, keepdim=True)).numpy(), b.numpy())
    assert "A = B − mean(B)" in top.message and any("mean subtracted on A's side" in c for c in top.causes)


def test_a_per_row_offset_that_leaves_a_quarter_unexplained_says_it_does_not_hold():
    z = torch.randn(4, 100, generator=torch.Generator().manual_seed(4))
    top = _top(torch.sigmoid(z).numpy(), torch.softmax(z, -1).numpy())
    assert "does not hold to the tolerance" in top.message and not top.causes


def test_a_float16_overflow_is_infinity_past_its_edge_with_the_sign_kept():
    b = torch.randn(4, 100, generator=torch.Generator().manual_seed(5)) * 40000
    top = _top(b.half().float().numpy(), b.numpy())
    assert top.kind == "threshold" and "float16 overflow" in top.message
    assert any("overflow in float16" in c for c in top.causes)


def test_infinities_past_no_format_edge_state_the_threshold_and_name_no_format():
    b = torch.randn(4, 100, generator=torch.Generator().manual_seed(6)) * 10
    a = torch.where(b.abs() > 12, b.sign() * torch.inf, b)
    report = compare_values(a.numpy(), b.numpy(), preset="fp32-cpu")
    found = next(f for f in report.findings if f.kind == "threshold")
    assert "|B| > t, t between" in found.message and "overflow" not in found.message and not found.causes


def test_a_mask_filled_with_minus_1e4_is_a_fill_not_an_additive_term():
    b = torch.randn(2, 32, 64, generator=torch.Generator().manual_seed(7))
    a = torch.where(torch.arange(32).view(1, 32, 1) > 24, torch.tensor(-1e4), b)
    top = _top(a.numpy(), b.numpy())
    assert top.kind == "fill" and "A = -10000 on 896 elements" in top.message
    assert any("masked_fill with -10000" in c for c in top.causes)


def test_a_fill_with_an_ordinary_constant_names_no_cause():
    b = torch.randn(2, 32, 64, generator=torch.Generator().manual_seed(8))
    mask = torch.rand(b.shape, generator=torch.Generator().manual_seed(9)) < 0.1
    a = torch.where(mask, torch.tensor(0.5), b)
    found = next(f for f in compare_values(a.numpy(), b.numpy(), preset="fp32-cpu").findings if f.kind == "fill")
    assert f"A = 0.5 on {int(mask.sum())} elements" in found.message and not found.causes


def test_one_sample_returned_for_another_is_a_gather_along_the_batch():
    b = torch.randn(4, 10, generator=torch.Generator().manual_seed(10))
    a = b.clone()
    a[1] = b[0]
    top = _top(a.numpy(), b.numpy())
    assert top.kind == "index_map" and "A[1] = B[0]" in top.message
    assert any("one sample's values returned for another" in c for c in top.causes)


def test_half_a_sequence_repeated_is_a_gather_sixteen_places_off():
    b = torch.randn(2, 32, 64, generator=torch.Generator().manual_seed(11))
    top = _top(torch.cat([b[:, :16], b[:, :16]], 1).numpy(), b.numpy())
    assert top.kind == "index_map" and "16 slices taken 16 places earlier" in top.message
    assert any("off-by-16" in c for c in top.causes) and not any("causal" in c for c in top.causes)


def test_a_zeroed_slice_is_not_taken_from_another_zero_slice():
    b = torch.randn(4, 8, 8, generator=torch.Generator().manual_seed(12))
    b[3] = 0
    a = b.clone()
    a[1] = 0
    report = compare_values(a.numpy(), b.numpy(), preset="fp32-cpu")
    assert not any("B.take" in f.message for f in report.findings)


def test_a_bfloat16_truncation_is_not_a_bfloat16_computation():
    b = torch.randn(4, 100, generator=torch.Generator().manual_seed(13))
    a = (b.view(torch.int32) & -65536).view(torch.float32)  # the low 16 bits dropped: a bit-shift cast
    report = compare_values(a.numpy(), b.numpy(), preset="fp32-cpu")
    top = report.findings[0]
    assert "truncated to bfloat16" in top.message and any("truncates" in c for c in top.causes)
    assert not any("autocast" in c for f in report.findings for c in f.causes)


def test_a_bfloat16_round_trip_is_still_a_cast_rounded_to_nearest():
    b = torch.randn(4, 100, generator=torch.Generator().manual_seed(13))
    top = _top(b.bfloat16().float().numpy(), b.numpy())
    assert "rounded to bfloat16" in top.message and "truncat" not in top.message


def test_an_embedding_padding_row_zeroed_is_a_cut_not_an_additive_term():
    emb = torch.nn.Embedding(50, 16).requires_grad_(False)
    padded = torch.nn.Embedding(50, 16, padding_idx=0).requires_grad_(False)
    padded.weight.copy_(emb.weight)
    padded.weight[0] = 0
    tok = torch.randint(1, 50, (4, 20), generator=torch.Generator().manual_seed(14))
    tok[:, -5:] = 0
    report = compare_values(padded(tok).numpy(), emb(tok).numpy(), preset="fp32-cpu")
    assert report.findings[0].kind == "slice_scale" and "s = 0" in report.findings[0].message
    assert not any(f.kind == "sample_offset" for f in report.findings)


def test_a_scale_names_no_variance_bias_its_value_does_not_imply():
    b = _b((4, 100))
    top = _top((b * np.float32(1.001)).astype(np.float32), b)
    assert top.causes and not any("variance" in c for c in top.causes)


def _executed(text: str, b: torch.Tensor) -> torch.Tensor:
    """The torch calls a data-movement finding states (``A = B.reshape(...)...: ...``), run on B."""
    calls = text.split(" = ", 1)[1].split(": ", 1)[0]
    assert calls.startswith("B.")
    out = b
    for name, args in re.findall(r"\.(reshape|permute|flip)\(([^)]*)\)", calls):
        out = getattr(out, name)(*[int(v) for v in args.split(",")])
    return out


def _depth_to_space_crd(y: torch.Tensor, r: int) -> torch.Tensor:
    """ONNX DepthToSpace in CRD mode written out as reshape and permute (torch's pixel_shuffle)."""
    n, c, h, w = y.shape
    return y.reshape(n, c // (r * r), r, r, h, w).permute(0, 1, 4, 2, 5, 3).reshape(n, c // (r * r), h * r, w * r)


def _depth_to_space_dcr(y: torch.Tensor, r: int) -> torch.Tensor:
    """ONNX DepthToSpace in DCR mode (its default), as the ONNX operator's reference writes it."""
    n, c, h, w = y.shape
    return y.reshape(n, r, r, c // (r * r), h, w).permute(0, 3, 4, 1, 5, 2).reshape(n, c // (r * r), h * r, w * r)


@pytest.mark.parametrize("shape", [(1, 16, 6, 6), (2, 32, 16, 16)])
@pytest.mark.parametrize("noise", [0.0, 1e-7])
def test_depth_to_space_in_the_other_mode_is_solved_as_a_reshape_and_permute(shape, noise):
    g = torch.Generator().manual_seed(5)
    y = torch.randn(shape, generator=g)
    a = F.pixel_shuffle(y, 2)
    assert torch.equal(a, _depth_to_space_crd(y, 2))
    y_b = (y.double() * (1 + noise * torch.randn(shape, generator=g, dtype=torch.float64))).float()
    b = _depth_to_space_dcr(y_b, 2)
    top = _top(a.numpy(), b.numpy())
    assert top.kind == "index_map" and top.where["relation"]["params"]["map"] == "axes_permuted", top.message
    assert torch.allclose(_executed(top.message, b), a, rtol=1e-6, atol=0)
    assert top.causes and "DepthToSpace mode DCR against CRD" in top.causes[0]


def test_a_window_partition_is_a_permutation_of_axes_with_no_depth_to_space_cause():
    x = torch.randn(2, 8, 8, 4, generator=torch.Generator().manual_seed(6))  # NHWC, as Swin holds it
    windows = x.reshape(2, 2, 4, 2, 4, 4).permute(0, 1, 3, 2, 4, 5).reshape(2, 8, 8, 4)
    top = _top(windows.numpy(), x.numpy())
    assert top.kind == "index_map" and torch.equal(_executed(top.message, x), windows), top.message
    assert top.causes and "window partition" in top.causes[0] and "DepthToSpace" not in top.causes[0]


def test_adjacent_pairs_swapped_are_a_flip_of_pairs():
    b = torch.randn(2, 8, 32, generator=torch.Generator().manual_seed(7))
    a = torch.stack([b[..., 1::2], b[..., 0::2]], dim=-1).reshape(2, 8, 32)
    top = _top(a.numpy(), b.numpy())
    assert top.message.startswith("A = B.reshape(256, 2).flip(1).reshape(2, 8, 32)"), top.message
    assert top.causes and "adjacent pair" in top.causes[0]


def test_values_in_an_unstructured_order_are_no_axes_permutation():
    b = torch.randn(4, 6, 8, generator=torch.Generator().manual_seed(8))
    a = b.flatten()[torch.randperm(b.numel(), generator=torch.Generator().manual_seed(9))].reshape(b.shape)
    report = compare_values(a.numpy(), b.numpy(), preset="fp32-cpu")
    assert all((f.where or {}).get("relation", {}).get("params", {}).get("map") != "axes_permuted"
               for f in report.findings)


def test_ties_rounded_to_even_against_half_up_name_the_even_side():
    g = torch.Generator().manual_seed(10)
    x, y = (torch.randint(0, 256, (3, 32, 32), generator=g).float() for _ in range(2))
    mean = (x + y) / 2
    a, b = torch.round(mean).to(torch.uint8), torch.floor(mean + 0.5).to(torch.uint8)
    top = compare_values(a.numpy(), b.numpy()).findings[0]
    assert top.kind == "ties" and "A is even on every one" in top.message
    assert top.causes and "half to even on A's side" in top.causes[0]


def test_random_off_by_ones_are_no_rounding_of_ties():
    g = torch.Generator().manual_seed(11)
    b = torch.randint(0, 256, (3, 32, 32), generator=g).to(torch.uint8)
    a = b + (torch.rand(b.shape, generator=g) < 0.1).to(torch.uint8) * (b < 255).to(torch.uint8)
    report = compare_values(a.numpy(), b.numpy())
    assert report.verdict == "investigate" and all(f.kind != "ties" for f in report.findings)


def test_a_dropped_logit_soft_cap_is_solved_with_its_cap():
    logits = torch.randn(2, 4, 16, 16, generator=torch.Generator().manual_seed(12)) * 40
    top = _top(logits.numpy(), (30 * torch.tanh(logits / 30)).numpy())
    assert top.message.startswith("B = 30·tanh(A/30)"), top.message
    assert top.causes and "soft cap" in top.causes[0] and "c = 30" in top.causes[0]


def test_a_plain_tanh_is_named_as_tanh_not_a_soft_cap():
    b = torch.randn(4, 64, generator=torch.Generator().manual_seed(13)) * 2
    top = _top(torch.tanh(b).numpy(), b.numpy())
    assert "soft cap" not in " ".join(top.causes) and "tanh" in top.message


def test_logits_with_their_row_maximum_subtracted_are_a_softmax_shift():
    b = torch.randn(3, 20, generator=torch.Generator().manual_seed(14))
    top = _top((b - b.max(-1, keepdim=True).values).numpy(), b.numpy())
    assert top.kind == "slice_offset" and "A = B − max(B) over each row" in top.message
    assert top.causes and "stabilising shift" in top.causes[0]


@pytest.mark.parametrize("dtype", ["float8_e4m3fn", "float8_e5m2"])
def test_a_float8_cast_is_named_without_a_bfloat16_precision_finding(dtype):
    b = torch.randn(4, 128, generator=torch.Generator().manual_seed(15))
    report = compare_values(b.to(getattr(torch, dtype)).float().numpy(), b.numpy(), preset="fp32-cpu")
    assert report.findings[0].message.startswith(f"A = B rounded to {dtype}")
    assert all(f.kind != "precision" for f in report.findings)
    assert not any("bfloat16" in c for f in report.findings for c in f.causes)


def test_an_activation_swapped_for_another_monotone_one_is_a_function_of_the_other_side():
    x = torch.randn(4, 64, generator=torch.Generator().manual_seed(16)) * 2
    top = _top(F.selu(x).numpy(), F.elu(x).numpy())
    assert top.message.startswith("A = φ(B) for one smooth function φ") and "increasing" in top.message
    assert top.causes and "activation swapped" in top.causes[0]


@pytest.mark.parametrize("noise", [0.01, 0.3])
def test_b_plus_a_perturbation_of_its_own_per_element_is_no_function_of_b(noise):
    g = torch.Generator().manual_seed(17)
    x = torch.randn(4, 64, generator=g)
    report = compare_values((x + noise * torch.randn(4, 64, generator=g)).numpy(), x.numpy(), preset="fp32-cpu")
    assert not any("φ" in f.message for f in report.findings)


@pytest.mark.parametrize("dtype", ["f4", "f2", "i4"])
def test_a_big_endian_dump_read_as_little_endian_is_bytes_reversed(tmp_path, dtype):
    b = (torch.randn(4, 64, generator=torch.Generator().manual_seed(18)) * 100).numpy().astype(f"<{dtype}")
    path = tmp_path / "dump.bin"
    b.astype(f">{dtype}").tofile(path)  # what a big-endian tool writes
    a = np.fromfile(path, dtype=f"<{dtype}").reshape(b.shape)  # read without its byte order
    report = compare_values(a, b)
    top = report.findings[0]
    assert top.message.startswith(f"A = B with the {b.itemsize} bytes of each element in reverse order"), top.message
    assert top.causes and "wrong byte order" in top.causes[0]
    assert all(not f.causes for f in report.findings if f.kind in ("nan", "inf"))


def test_even_integers_against_integers_are_both_on_grids_with_no_quantisation_cause():
    g = torch.Generator().manual_seed(19)
    b = torch.randint(-100, 100, (8, 64), generator=g).float()
    a = 2 * torch.randint(-50, 50, (8, 64), generator=g).float()
    report = compare_values(a.numpy(), b.numpy(), preset="fp32-cpu")
    grid = [f for f in report.findings if f.kind == "grid"]
    assert grid and "and the other side's on one of step 1" in grid[0].message, [f.message for f in report.findings]
    assert not any("quantisation" in c for f in report.findings for c in f.causes)
