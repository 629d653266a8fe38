"""The served KL allowance on plain data: one long prompt holding most positions must not widen it
(seen: 2,500 of 3,629 positions in one prompt, an allowance of 2.6x the floor, a doubled KL passed). The spread is
the floor's own: its kernel variant against it (here a clean deployment that differs from the floor prompt by
prompt, as the server does)."""

import math

import numpy as np

from llm_adapt.accuracy.endpoint import _spread
from llm_adapt.accuracy.verdict import allowance, graded

NOISE = 0.5  # per-position spread of the server's KL around the floor's, lognormal with mean 1


def suite(seed: int, long_ratio: float, short_ratio: float, scale: float = 1.0, short_prompts: int = 15):
    """(server, floor, variant) KL per position: one 2,500-position prompt and 60-position ones, each prompt's
    server and the floor's kernel variant at the prompt's own ratio to the floor (a clean deployment differs
    from the floor prompt by prompt); the server at `scale` times that."""
    rng = np.random.default_rng(seed)
    prompts = []
    for n, ratio in [(2500, long_ratio)] + [(60, short_ratio)] * short_prompts:
        floor = rng.exponential(1e-3, n)
        server = floor * ratio * scale * rng.lognormal(-NOISE**2 / 2, NOISE, n)
        variant = floor * ratio * rng.lognormal(-NOISE**2 / 2, NOISE, n)
        prompts.append(list(zip(server.tolist(), floor.tolist(), variant.tolist())))
    return prompts


def judged(prompts):
    floor_rows = [{"kl_lb": f} for p in prompts for _, f, _ in p]
    # the variant's mean equal to the floor's: no kernel offset, only its spread by position
    spread = _spread(prompts, floor_rows, floor_rows)
    ratio = sum(t for p in prompts for t, _, _ in p) / sum(f for p in prompts for _, f, _ in p)
    return ratio, spread


def test_a_clean_server_dominated_by_one_prompt_passes():
    for seed in range(5):
        ratio, spread = judged(suite(seed, long_ratio=0.7, short_ratio=1.6))
        assert graded(ratio, allowance(spread, "relative")) == "pass", (seed, ratio, spread)
        assert spread["bootstrap_units"] == 20 + 15


def test_a_doubled_kl_is_not_a_pass_where_one_prompt_dominates():
    for seed in range(5):
        ratio, spread = judged(suite(seed, long_ratio=0.7, short_ratio=1.6, scale=2.0))
        assert graded(ratio, allowance(spread, "relative")) == "warn", (seed, ratio, spread)
        ratio3, spread3 = judged(suite(seed, long_ratio=0.7, short_ratio=1.6, scale=3.0))
        assert graded(ratio3, allowance(spread3, "relative")) == "fail", (seed, ratio3, spread3)


def test_prompts_of_even_length_give_the_prompt_bootstrap_they_gave_before():
    prompts = suite(3, long_ratio=1.0, short_ratio=1.0)[1:]  # 15 prompts of 60 positions: one unit each
    _, spread = judged(prompts)
    assert spread["bootstrap_units"] == 15 and math.isfinite(spread["bootstrap"])
