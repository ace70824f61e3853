"""A fitted scale/offset map names a cause only where it holds to rounding (issue 32): a
global affine fit to a softmax of logits, or two constants per feature fitted to an input
scaled through a LayerNorm, describe the difference but imply no cause; a map that does
hold (a temperature, a per-feature bias) still names one.  Real torch runs throughout."""

from __future__ import annotations

import numpy as np
import pytest
from perpendis.diagnosis.relations.rounding_model import holds
from perpendis.engine.compare import compare_values

torch = pytest.importorskip("torch")

_AFFINE = {"affine", "scale", "offset", "slice_affine", "slice_scale", "slice_offset", "row_scale", "row_offset"}


def _head(seed: int, features: int = 32, classes: int = 10) -> tuple[torch.nn.Module, torch.Tensor]:
    torch.manual_seed(seed)
    net = torch.nn.Sequential(torch.nn.Linear(features, 64), torch.nn.GELU(), torch.nn.Linear(64, classes)).eval()
    return net, torch.randn(2, features)


def _named(report) -> list[str]:
    return [f.kind for f in report.findings if f.causes and f.kind in _AFFINE]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_softmax_appended_to_logits_names_no_affine_cause(seed):
    """A = softmax(B) over 2x10 logits: a global affine fit explains most of it (softmax is
    near-linear over a small range) but leaves more than rounding, so it names no cause;
    the softmax relation, which holds, names its own."""
    net, x = _head(seed)
    with torch.no_grad():
        b = net(x)
        a = torch.softmax(b, dim=-1)
    r = compare_values(a.numpy(), b.numpy(), preset="fp32-cpu")
    assert r.verdict == "investigate"
    assert _named(r) == []
    # Two rows of 10 values are enough for the normalisation relation itself.
    found = next(f for f in r.findings if f.kind == "normalisation")
    assert found.causes and found.where["relation"]["params"] == {"map": "softmax", "axis": 1}


def test_an_input_scaled_through_a_layernorm_names_no_per_feature_cause():
    """The input multiplied by 8 before Linear + LayerNorm: each feature of A is roughly an
    affine map of B's, which two constants per feature fit, yet not to rounding."""
    torch.manual_seed(3)
    net = torch.nn.Sequential(torch.nn.Linear(32, 32), torch.nn.GELU(), torch.nn.LayerNorm(32)).eval()
    with torch.no_grad():
        net[2].weight.copy_(1 + 0.1 * torch.randn(32))
        net[2].bias.copy_(0.1 * torch.randn(32))
        x = torch.randn(2, 16, 32)
        a, b = net(8 * x), net(x)
    r = compare_values(a.numpy(), b.numpy(), preset="fp32-cpu")
    assert r.verdict == "investigate"
    assert not any(f.kind == "slice_affine" and f.causes for f in r.findings)


def test_a_temperature_on_logits_still_names_its_scale():
    """A = B / 2 computed by torch: the map holds to rounding, so the scale names causes."""
    net, x = _head(4)
    with torch.no_grad():
        b = net(x)
        a = b / 2.0
    r = compare_values(a.numpy(), b.numpy(), preset="fp32-cpu")
    assert "scale" in _named(r)


def test_holds_is_the_tolerance_test_on_the_fitted_values():
    b = np.linspace(-3, 3, 400)
    assert holds(2 * b + 1e-7, 2 * b, (1e-5, 1.3e-6))
    assert not holds(np.exp(b), 1 + b, (1e-5, 1.3e-6))
    assert holds(np.exp(b), 1 + b, None)  # no tolerance known: nothing to hold it to


def test_a_layernorm_epsilon_changed_is_a_per_row_map_not_a_per_token_scale():
    """A LayerNorm's epsilon changed scales each row (batch entry and token) by its own
    factor: one scale per token fits that only roughly, one map per row exactly, so the
    per-row relation is named (a richer map that leaves less than half the residual)."""
    torch.manual_seed(5)
    x = torch.randn(2, 8, 32) * (0.05 + torch.rand(1, 8, 1)) * (0.5 + torch.rand(2, 1, 1))  # per token and entry
    ln = torch.nn.LayerNorm(32, eps=1e-5).eval()
    with torch.no_grad():
        ln.weight.copy_(1 + 0.1 * torch.randn(32))
        ln.bias.copy_(0.1 * torch.randn(32))
        b = ln(x)
        ln.eps = 1e-2
        a = ln(x)
    r = compare_values(a.numpy(), b.numpy(), preset="fp32-cpu")
    named = _named(r)
    assert named and named[0] in ("row_scale", "row_offset"), [(f.kind, f.message) for f in r.findings]
