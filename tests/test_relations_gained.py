"""A normalisation composed with its elementwise affine (relations/normalise.py ``GAINED``):
PyTorch's own LayerNorm and RMSNorm, with trained-like gains and biases, applied twice or on
one side only, found either way round; rounding of the same norm is no relation."""

from __future__ import annotations

import numpy as np
import pytest
from perpendis.engine.compare import compare_values

torch = pytest.importorskip("torch")


def _named(a: np.ndarray, b: np.ndarray):
    return next((f for f in compare_values(a, b, preset="fp32-cpu").findings if f.causes), None)


def _layer_norm(channels: int, seed: int) -> torch.nn.LayerNorm:
    g = torch.Generator().manual_seed(seed)
    norm = torch.nn.LayerNorm(channels)
    with torch.no_grad():
        norm.weight.copy_(torch.rand(channels, generator=g) + 0.5)
        norm.bias.copy_(torch.randn(channels, generator=g))
    return norm


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_channels_first_layernorm_applied_twice_is_named_either_way(seed):
    """ConvNeXt's channels-first LayerNorm repeated (the corpus's ``double``): A = g·LN(B) + β
    along the channel axis, one gain and bias per channel, whichever side is given first."""
    norm = _layer_norm(16, seed)
    x = torch.randn(2, 16, 8, 8, generator=torch.Generator().manual_seed(10 + seed))

    def once(t: torch.Tensor) -> torch.Tensor:
        return norm(t.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)

    with torch.no_grad():
        b, a = once(x).numpy(), once(once(x)).numpy()
    for first, second, lhs in ((a, b, "A"), (b, a, "B")):
        top = _named(first, second)
        assert top is not None and top.kind == "normalisation", top
        assert top.where["relation"]["params"] == {"map": "layer norm", "axis": 1, "gain": True, "bias": True,
                                                   "eps": top.where["relation"]["params"]["eps"]}
        assert top.message.startswith(f"{lhs} = g·layer norm(") and "one g and β per index" in top.message
        assert "applied twice, or on one side only" in top.causes[0]


def test_an_rmsnorm_kept_on_one_side_names_its_epsilon_only_where_it_matters():
    """Llama's RMSNorm (ε = 1e-6, gain only) on B's side alone: B = g·RMS norm(A)."""
    g = torch.Generator().manual_seed(4)
    norm = torch.nn.RMSNorm(64, eps=1e-6)
    with torch.no_grad():
        norm.weight.copy_(torch.rand(64, generator=g) + 0.5)
        x = torch.randn(2, 8, 64, generator=g)
        top = _named(x.numpy(), norm(x).numpy())
    assert top is not None and top.kind == "normalisation"
    assert top.message.startswith("B = g·RMS norm(A") and "β" not in top.message
    assert top.where["relation"]["params"]["map"] == "RMS norm" and not top.where["relation"]["params"]["bias"]


def test_the_same_layernorm_in_float32_and_float64_is_no_relation():
    """A legitimate pair: one LayerNorm in float32 against float64 rounded, rounding only."""
    norm = _layer_norm(32, 5)
    x = torch.randn(4, 16, 32, generator=torch.Generator().manual_seed(6))
    with torch.no_grad():
        a = norm(x).numpy()
        b = norm.double()(x.double()).float().numpy()
    report = compare_values(a, b, preset="fp32-cpu")
    assert report.verdict != "investigate"
    assert not [f for f in report.findings if f.kind == "normalisation"]


def test_fibres_that_are_all_the_same_row_fit_no_gain():
    """BERT's token-type embedding of one type at every position, its table doubled: every
    fibre is the same row, so a gain per index is free and fits anything; the relation is the
    scale, A = 2·B."""
    table = torch.nn.Embedding(2, 32)
    with torch.no_grad():
        b = table(torch.zeros(2, 8, dtype=torch.long)).numpy()
    top = _named(2 * b, b)
    assert top is not None and top.kind in ("scale", "affine"), top
    assert "2" in top.message
