"""Corpus seeds (bench/corpus ``generate.py --seed N``): seed 0 draws exactly what the
corpus drew before seeds existed, so its cache stays valid; another seed draws other
weights, inputs, targets and perturbations into a folder of its own."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

pytest.importorskip("onnx")

from bench.corpus import cases, models
from bench.corpus.mutate import _target_seed


@pytest.fixture
def seed_restored():
    yield
    models.use_seed(0)


def test_seed_zero_keeps_the_original_draws(seed_restored):
    models.use_seed(0)
    assert models.CACHE == models.BASE_CACHE
    old = int.from_bytes(hashlib.sha256(b"bert/init_half").digest()[:8], "little")
    assert models.variant_seed("bert/init_half") == old
    name = "model_layers_0_bias"
    assert _target_seed(name) == int.from_bytes(name.encode()[:8].ljust(8, b"\0"), "little")


def test_another_seed_draws_other_targets_inputs_and_weights(seed_restored):
    targets = [f"t{i}" for i in range(40)]
    models.use_seed(0)
    first = cases.pick(targets, "bert", "init_half")
    x0 = models._image()
    models.use_seed(1)
    assert models.CACHE == models.BASE_CACHE / "seed1"
    assert cases.pick(targets, "bert", "init_half") != first
    assert not np.array_equal(models._image(), x0)
    models.use_seed(0)
    zero = _target_seed("model_layers_0_bias")
    models.use_seed(1)
    assert _target_seed("model_layers_0_bias") != zero
