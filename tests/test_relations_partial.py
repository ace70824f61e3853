"""Relations found by the forms added for bug kinds no battery had shown, each made by the
real torch call that makes the bug: a leaky slope changed (``partial_maps.sign_split``),
integers truncated against floored (``partial_maps.toward_zero``), a mask filled with
another value (the threshold form's value swap), a mask inverted
(``partial_maps.disjoint_supports``), a roll that wraps round (``reorder``), an L2
normalisation over another axis (``normalise``), integers through a float
(``elementwise_maps.through_float``), KV heads repeated two ways (``index_maps``), a loss
summed against averaged (``few_values``), and the constants a fit pins (a zero point of
128, ImageNet's normalisation).  Each is checked for its cause, and a control that only
looks alike is checked for its absence."""

from __future__ import annotations

import numpy as np
import pytest
from perpendis.engine.compare import compare_values

torch = pytest.importorskip("torch")
F = torch.nn.functional


def _report(a, b, preset="fp32-cpu"):
    a, b = (x.numpy() if hasattr(x, "numpy") else x for x in (a, b))
    return compare_values(a, b, preset=preset)


def _top(a, b, preset="fp32-cpu"):
    report = _report(a, b, preset)
    assert report.verdict == "investigate"
    return report.findings[0]


def _randn(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize(("slope_a", "slope_b"), [(0.2, 0.01), (0.25, 0.01), (0.01, 0.1)])
def test_a_leaky_relu_slope_changed_is_another_slope_on_the_negative_side(slope_a, slope_b):
    x = _randn(8, 64) * 3
    top = _top(F.leaky_relu(x, slope_a), F.leaky_relu(x, slope_b))
    ratio = slope_a / slope_b
    assert top.kind == "sign_split", top.message
    assert f"A = {ratio:.6g}·B where B < 0" in top.message
    assert len(top.causes) == 1 and "negative_slope" in top.causes[0] and f"{ratio:.4g} ×" in top.causes[0]


def test_prelu_weights_against_leaky_relu_are_the_same_form():
    x = _randn(4, 16, 8, 8)
    prelu = F.prelu(x, torch.tensor([0.25]))
    top = _top(prelu, F.leaky_relu(x, 0.01))
    assert top.kind == "sign_split" and "A = 25·B where B < 0" in top.message


def test_a_slope_that_differs_on_each_side_is_not_one_sided():
    """Both signs changed (A = 2·B for B > 0, 0.5·B below): no single side explains it, so
    no negative-slope cause is offered."""
    x = _randn(8, 64)
    a = torch.where(x > 0, 2 * x, 0.5 * x)
    top = _top(a, x)
    assert top.kind != "sign_split"
    assert not any("negative_slope" in c for c in top.causes)


def test_rounding_noise_on_the_negative_side_only_is_no_other_slope():
    """A float32 run against its float64 reference, perturbed at 1e-6 on negatives only:
    the ratio is 1 to 1e-6, which no leaky slope is."""
    x = _randn(8, 64, seed=3).double()
    a = torch.where(x < 0, x * (1 + 1e-6 * _randn(8, 64, seed=4).double()), x)
    report = _report(a.float(), x.float())
    assert not any(f.kind == "sign_split" for f in report.findings)


def test_c_style_integer_division_against_floor_division_is_rounded_toward_zero():
    n = torch.randint(-500, 500, (256,), generator=torch.Generator().manual_seed(1))
    top = _top(torch.div(n, 7, rounding_mode="trunc"), torch.div(n, 7, rounding_mode="floor"), preset=None)
    assert top.kind == "rounded_toward_zero"
    assert "A rounded toward zero (trunc), B toward −∞ (floor)" in top.message
    assert "floor division" in top.causes[0]


def test_a_cast_to_int_against_ceil_is_toward_plus_infinity():
    g = torch.Generator().manual_seed(2)  # half of them whole numbers, which both sides keep
    x = torch.randint(0, 40, (200,), generator=g) + (torch.rand(200, generator=g) < 0.5) * torch.rand(200, generator=g)
    top = _top(x.ceil().to(torch.int32), x.to(torch.int32), preset=None)
    assert top.kind == "rounded_toward_zero" and "B rounded toward zero (trunc), A toward +∞ (ceil)" in top.message


def test_random_off_by_ones_are_not_a_rounding_direction():
    rng = np.random.default_rng(5)
    b = rng.integers(-100, 100, 512)
    a = b + np.where(rng.random(512) < 0.1, rng.choice([-1, 1], 512), 0)
    report = _report(a, b, preset=None)
    assert not any(f.kind == "rounded_toward_zero" for f in report.findings)


def test_a_mask_filled_with_minus_inf_against_minus_1e9_names_both_values():
    scores = _randn(2, 4, 16, 16)
    causal = torch.triu(torch.ones(16, 16, dtype=torch.bool), 1)
    report = _report(scores.masked_fill(causal, float("-inf")), scores.masked_fill(causal, -1e9))
    swap = next(f for f in report.findings if f.kind == "threshold")
    assert "A = -inf exactly where B = -1e+09 (960 elements)" in swap.message
    assert len(swap.causes) == 1 and "masked_fill's value differs" in swap.causes[0]


def test_one_value_replaced_by_another_that_is_no_mask_fill_gets_no_mask_cause():
    b = torch.randint(0, 10, (64, 64), generator=torch.Generator().manual_seed(6)).float()
    a = torch.where(b == 3, torch.tensor(7.0), b)
    report = _report(a, b)
    swap = next(f for f in report.findings if f.kind == "threshold")
    assert "A = 7 exactly where B = 3" in swap.message and swap.causes == []


@pytest.mark.parametrize(("shape", "shift", "axis"), [((5, 40), 2, 0), ((7, 30), -3, 0), ((6, 9), 4, 1)])
def test_a_roll_that_wraps_round_is_a_roll_by_its_own_amount(shape, shift, axis):
    b = _randn(*shape)
    top = _top(torch.roll(b, shift, axis), b)
    assert top.kind == "shifted" and f"torch.roll(B, {shift})" in top.message
    assert not any("offset by one" in c for c in top.causes)
    assert any(f"by {abs(shift)}" in c for c in top.causes)


def test_int8_against_uint8_codes_name_the_zero_point_first():
    w = _randn(6, 64) / 0.05
    signed = torch.clamp(torch.round(w), -128, 127)
    top = _top(signed + 128, signed)
    assert top.kind == "offset" and "zero point of 128" in top.causes[0]


def test_ids_offset_by_128_outside_the_int8_range_get_no_zero_point():
    ids = torch.randint(0, 30000, (4, 64), generator=torch.Generator().manual_seed(7)).float()
    top = _top(ids + 128, ids)
    assert not any("zero point" in c for c in top.causes)


@pytest.mark.parametrize("normalised", ["A", "B"])
def test_imagenet_normalisation_on_one_side_is_named_with_its_constants(normalised):
    image = torch.rand(2, 3, 16, 16, generator=torch.Generator().manual_seed(8))
    mean = torch.tensor([0.485, 0.456, 0.406]).view(1, 3, 1, 1)
    std = torch.tensor([0.229, 0.224, 0.225]).view(1, 3, 1, 1)
    done = (image - mean) / std
    a, b = (done, image) if normalised == "A" else (image, done)
    top = _top(a, b)
    assert top.kind == "slice_affine"
    assert top.causes == [c for c in top.causes if "ImageNet" in c] and len(top.causes) == 1
    assert f"on {normalised}'s side only" in top.causes[0]


def test_another_per_channel_affine_map_keeps_the_unnamed_causes():
    image = torch.rand(2, 3, 16, 16, generator=torch.Generator().manual_seed(9))
    a = image * torch.tensor([2.0, 3.0, 4.0]).view(1, 3, 1, 1) + torch.tensor([0.1, -0.2, 0.3]).view(1, 3, 1, 1)
    top = _top(a, image)
    assert top.kind == "slice_affine" and not any("ImageNet" in c for c in top.causes)


def test_two_softmaxes_under_a_mask_and_its_inverse_keep_complementary_elements():
    scores = _randn(2, 8, 8, seed=10)
    keep = torch.rand(2, 1, 8, generator=torch.Generator().manual_seed(11)) > 0.3
    a = torch.softmax(scores.masked_fill(keep, -1e9), -1)
    b = torch.softmax(scores.masked_fill(~keep, -1e9), -1)
    report = _report(a, b)
    top = report.findings[0]
    assert top.kind == "disjoint_supports" and "sense inverted" in top.causes[0]
    assert not any("softplus" in c for f in report.findings for c in f.causes)  # the variant map is refuted


def test_one_hots_of_other_classes_are_not_complementary_masks():
    classes = torch.randint(0, 10, (64,), generator=torch.Generator().manual_seed(12))
    a, b = F.one_hot(classes, 10).float(), F.one_hot((classes + 3) % 10, 10).float()
    assert not any(f.kind == "disjoint_supports" for f in _report(a, b).findings)


def test_a_zero_fill_is_no_split_of_the_elements():
    b = _randn(8, 64, seed=13)
    a = b.clone()
    a[:, :8] = 0
    assert not any(f.kind == "disjoint_supports" for f in _report(a, b).findings)


def test_an_l2_normalisation_over_another_axis_says_both_axes():
    p = _randn(3, 16, seed=14)
    top = _top(F.normalize(p, dim=0), F.normalize(p, dim=1))
    assert top.kind == "normalisation" and "have L2 norm 1 along its own axis only" in top.message
    assert top.where["relation"]["params"] == {"a_axis": 0, "b_axis": 1, "norm": "have L2 norm 1"}


def test_ids_past_two_to_the_24_through_float32_lose_their_low_bits():
    ids = torch.randint(2**24, 2**26, (64,), generator=torch.Generator().manual_seed(15))
    top = _top(ids.float().long(), ids, preset=None)
    assert "A = B rounded to float32 (which holds every integer only up to 16,777,216)" in top.message
    assert "integers passed through float32" in top.causes[0]


def test_ids_through_float16_are_named_with_the_narrower_format():
    ids = torch.randint(2048, 30000, (64,), generator=torch.Generator().manual_seed(16))
    top = _top(ids, ids.half().long(), preset=None)
    assert "B = A rounded to float16" in top.message and "2,048" in top.causes[0]


@pytest.mark.parametrize("tiled_side", ["A", "B"])
def test_kv_heads_repeated_against_interleaved_name_repeat_kv(tiled_side):
    kv = _randn(2, 2, 8, 16, seed=17)
    tiled, interleaved = kv.repeat(1, 4, 1, 1), kv.repeat_interleave(4, dim=1)
    a, b = (tiled, interleaved) if tiled_side == "A" else (interleaved, tiled)
    top = _top(a, b)
    assert top.kind == "index_map" and "repeat_interleave" in top.causes[0]


def test_heads_merged_without_a_transpose_do_not_name_a_repeat():
    x = _randn(2, 4, 8, 16, seed=18)  # (batch, heads, time, dim): no head repeated
    top = _top(x.reshape(2, 8, 64), x.transpose(1, 2).reshape(2, 8, 64))
    assert top.kind == "index_map" and not any("repeat" in c for c in top.causes)


def test_a_summed_loss_against_a_mean_loss_names_the_batch_size():
    per_sample = _randn(64, seed=19).pow(2)
    top = _top(per_sample.sum().reshape(()), per_sample.mean().reshape(()))
    assert top.kind == "scale" and "A = 64·B on its one value" in top.message
    assert any("a sum against a mean over 64 values" in c for c in top.causes)


def test_a_loss_changed_by_label_smoothing_names_no_ratio():
    logits = _randn(4, 10, seed=20)
    target = torch.arange(4)
    report = _report(F.cross_entropy(logits, target, label_smoothing=0.3).reshape(()),
                     F.cross_entropy(logits, target).reshape(()))
    assert report.verdict == "investigate" and not any(f.kind == "scale" for f in report.findings)


def test_a_quantiser_that_floors_against_one_that_rounds_is_rounded_down_on_its_grid():
    w = _randn(8, 64, seed=21)
    top = _top(torch.floor(w / 0.05) * 0.05, torch.round(w / 0.05) * 0.05)
    assert top.kind == "rounded_down" and "one step of a grid of 0.05" in top.message
    assert "A rounded down (floor)" in top.message and "quantiser that floors" in top.causes[0]


def test_ties_on_a_quantisation_grid_are_ties_of_that_grid():
    codes = torch.randint(-40, 40, (256,), generator=torch.Generator().manual_seed(22)).float()
    x = (codes + 0.5) * 0.25  # every value a tie between two steps of 0.25
    top = _top(torch.round(x / 0.25) * 0.25, torch.floor(x / 0.25 + 0.5) * 0.25)
    assert top.kind == "ties" and "an even multiple of the step" in top.message


def test_a_tenth_keeps_the_plain_multiplication_beside_a_mean_over_ten():
    v = _randn(3, 4, 16, seed=23)
    top = _top(v * 0.1, v)
    assert top.kind == "scale"
    assert any("a sum against a mean over 10 values" in c for c in top.causes)
    assert any("a multiplication by 0.1 on one side only" in c for c in top.causes)


def test_all_zeros_against_float16_subnormals_are_no_square_of_them():
    """B² of a float16 subnormal underflows to 0, so 'A = B²' would fit an A of zeros: a
    map that predicts one value where A is one value explains nothing."""
    t = (_randn(256, seed=24) * 1e-5).half()
    report = _report(torch.zeros_like(t), t, preset=None)
    assert not any("B²" in f.message for f in report.findings)


def _scores(seed: int, t: int = 12):
    return _randn(2, 4, t, t, seed=seed)


def test_attention_probabilities_without_the_causal_mask_name_the_mask():
    scores = _scores(25)
    causal = torch.triu(torch.ones(12, 12, dtype=torch.bool), 1)
    top = _top(torch.softmax(scores, -1), torch.softmax(scores.masked_fill(causal, float("-inf")), -1))
    assert top.kind == "causal_mask" and "B = 0 exactly on the upper triangle j > i" in top.message
    assert "within the tolerance" not in top.message
    assert top.causes and "causal mask applied on B's side only" in top.causes[0]


def test_scores_masked_with_a_diagonal_offset_name_the_offset():
    scores = _scores(26)
    shifted = torch.triu(torch.ones(12, 12, dtype=torch.bool), 3)  # a cache of 2 more positions
    top = _top(scores.masked_fill(shifted, float("-inf")), scores)
    assert top.kind == "causal_mask" and "j > i + 2" in top.message and "offset by +2" in top.causes[0]


def test_the_same_causal_mask_on_both_sides_is_no_one_sided_mask():
    scores = _scores(27)
    causal = torch.triu(torch.ones(12, 12, dtype=torch.bool), 1)
    a = torch.softmax(scores.masked_fill(causal, float("-inf")), -1)
    b = torch.softmax((scores * 1.5).masked_fill(causal, float("-inf")), -1)
    assert not any(f.kind == "causal_mask" for f in _report(a, b).findings)


def test_per_image_mean_subtraction_against_a_fixed_mean_is_named():
    image = torch.rand(2, 3, 8, 8, generator=torch.Generator().manual_seed(28))
    top = _top(image - image.mean((2, 3), keepdim=True), image - 0.5)
    assert top.kind == "group_affine" and "a mean subtracted per group on A's side only" in top.causes[0]


def test_exp_without_the_softmax_sum_is_a_division_by_the_sum_missing():
    h = _randn(2, 6, 10, seed=29)
    top = _top(torch.exp(h), torch.softmax(h, -1))
    assert top.kind == "normalisation" and "B = A / ΣA along axis 2" in top.message
    assert len(top.causes) == 1 and "softmax's normalisation missing" in top.causes[0]
    assert not any("epsilon" in c for c in top.causes)


def test_a_mask_added_as_zeros_and_ones_is_no_exp_of_the_masked_scores():
    """B's −1e9 fills made its RMS 7.5e8, and a rounding bound of that size let 'A = exp(B)'
    hold on the ordinary values: B's scale is now read without its mask fills."""
    scores = _randn(2, 8, 8, seed=30)
    keep = (torch.rand(2, 1, 8, generator=torch.Generator().manual_seed(31)) > 0.3).float()
    report = _report(scores + keep, scores + (1 - keep) * -1e9)
    assert report.verdict == "investigate"
    assert not any("exp(B)" in f.message or any("exp or log" in c for c in f.causes) for f in report.findings)


def test_embeddings_scaled_by_the_root_of_their_width_name_d_model():
    e = _randn(2, 6, 512, seed=32)
    top = _top(e * 512 ** 0.5, e)
    assert top.kind == "scale" and "√512" in top.causes[0] and "d_model" in top.causes[0]


def test_a_head_size_scale_keeps_the_attention_cause():
    s = _randn(2, 4, 8, 64, seed=33)
    top = _top(s / 8, s)
    assert any("1/√d scaling (d = 64" in c for c in top.causes)
    assert not any("d_model" in c for c in top.causes)


def _printed(a, b):
    """Both sides as their REPL text reads back (``repr``, a few digits): what the page gets."""
    from perpendis.engine.compare import compare as compare_tensors
    from perpendis.inputs.parse import parse_text

    (pa,), (pb,) = parse_text(repr(a)), parse_text(repr(b))
    assert not (pa.lossless and pb.lossless)  # the test is of a print that lost digits
    return compare_tensors(pa, pb)


def test_complementary_masks_pasted_as_torch_repr_text_are_still_found():
    scores = _randn(2, 8, 8, seed=34)
    keep = torch.rand(2, 1, 8, generator=torch.Generator().manual_seed(35)) > 0.3
    report = _printed(torch.softmax(scores.masked_fill(keep, -1e9), -1),
                      torch.softmax(scores.masked_fill(~keep, -1e9), -1))
    assert report.findings[0].kind == "disjoint_supports"


def test_a_causal_mask_pasted_as_torch_repr_text_is_still_found():
    scores = _scores(36, t=8)  # 512 values: torch prints them whole
    causal = torch.triu(torch.ones(8, 8, dtype=torch.bool), 1)
    report = _printed(torch.softmax(scores, -1), torch.softmax(scores.masked_fill(causal, float("-inf")), -1))
    assert report.findings[0].kind == "causal_mask"


def test_a_fitted_form_is_not_stated_from_a_print_of_four_digits():
    """A leaky slope of 20 printed by torch at 4 decimals: the fitted forms need the stored
    bits, so the one-sided slope is not claimed from the print."""
    x = _randn(8, 32, seed=37) * 3
    report = _printed(F.leaky_relu(x, 0.2), F.leaky_relu(x, 0.01))
    assert not any(f.kind == "sign_split" for f in report.findings)
