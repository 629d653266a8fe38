"""How decisive the gold's logits are, and when they are flat: plain tensors, edges included."""

import math

import pytest
import torch

from llm_adapt.accuracy.flatness import FLAT_DECISIVE, FLAT_ENTROPY, is_flat
from llm_adapt.accuracy.metrics import logit_sharpness


def test_uniform_logits_are_flat_and_peaked_ones_are_not():
    uniform = logit_sharpness([torch.zeros(40, 100)], tie_margin=0.3)
    assert uniform["positions"] == 40 and uniform["decisive_positions"] == 0
    assert uniform["entropy_ratio"] == pytest.approx(1.0) and is_flat(uniform)
    peaked = torch.zeros(40, 100)
    peaked[:, 7] = 12.0
    sharp = logit_sharpness([peaked], tie_margin=0.3)
    assert sharp["decisive_positions"] == 40 and sharp["entropy_ratio"] < 0.05 and not is_flat(sharp)


def test_either_sign_of_flatness_is_enough():
    # most positions decisive, but each close to uniform: a random model of a large vocabulary
    assert is_flat({"positions": 100, "decisive_positions": 90, "entropy_ratio": FLAT_ENTROPY})
    # low entropy, but few positions outside the tie margin: two strong candidates everywhere
    assert is_flat({"positions": 100, "decisive_positions": int(100 * FLAT_DECISIVE) - 1, "entropy_ratio": 0.2})
    assert not is_flat({"positions": 100, "decisive_positions": 88, "entropy_ratio": 0.16})  # SmolLM2, measured


def test_the_edges_decide_nothing():
    empty = logit_sharpness([], tie_margin=0.3)
    assert empty["positions"] == 0 and math.isnan(empty["entropy_ratio"]) and not is_flat(empty)
    assert not is_flat(None) and not is_flat({})
    one_word = logit_sharpness([torch.zeros(5, 1)], tie_margin=0.3)
    assert one_word["decisive_positions"] == 5 and one_word["entropy_ratio"] == 0.0 and not is_flat(one_word)
    assert not is_flat({"positions": 10, "decisive_positions": 9, "entropy_ratio": math.nan})


def test_blocks_give_the_same_figures_as_one_pass():
    logits = torch.randn(50, 64, generator=torch.Generator().manual_seed(0)) * 3
    one = logit_sharpness([logits], tie_margin=0.3, rows=1000)
    blocked = logit_sharpness([logits[:20], logits[20:]], tie_margin=0.3, rows=7)
    assert one["decisive_positions"] == blocked["decisive_positions"]
    assert one["entropy_ratio"] == pytest.approx(blocked["entropy_ratio"], rel=1e-12)
