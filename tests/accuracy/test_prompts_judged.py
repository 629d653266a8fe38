"""Every prompt judged (accuracy/verdict/prompts.py) on plain data: one clearly bad prompt in 20 FAILs and is
named; a clean suite, a flat model's tiny KL and a kernel offset stay clean; the allowance of every served check
does not move when a bad prompt is added (the noise is the floor's alone); the edges (no prompt, one prompt, a
floor of 0) decide nothing of their own."""

import math
import random

import pytest

from llm_adapt.accuracy.verdict.endpoint import prompts_check
from llm_adapt.accuracy.verdict.prompts import clean_log_spread, judge_prompts
from llm_adapt.multiple_tests import holm, upper_tail


def suite(n=20, offset=1.0, wobble=0.08, variant_wobble=0.08, scale=1e-2, seed=0):
    """n clean prompts: the floor's KL, its variant within `variant_wobble`, the server at `offset` x the floor
    within `wobble` (log-normal), lengths 40-400 tokens."""
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        tokens = rng.randint(40, 400)
        floor = scale * tokens * rng.uniform(0.5, 2.0)
        rows.append({"id": f"p{i}", "tokens": tokens, "first": 1, "last": tokens - 1, "positions": tokens - 1, "floor": floor,
                     "variant": floor * math.exp(rng.gauss(0, variant_wobble)),
                     "server": floor * offset * math.exp(rng.gauss(0, wobble))})
    return rows


def with_bad(rows, index=7, factor=6.0):
    out = [dict(r) for r in rows]
    out[index]["server"] *= factor
    return out


ALLOWED = 1.25


def test_one_clearly_bad_prompt_in_20_fails_and_is_named():
    check = prompts_check(with_bad(suite()), ALLOWED)
    assert check["status"] == "fail" and check["args"]["count"] == 1
    assert "p7 (" in check["value"] and "positions 1-" in check["value"]


@pytest.mark.parametrize("seed", range(30))
def test_a_clean_suite_stays_clean(seed):
    # a server on another kernel path than the variant: an offset of 1.15 and twice the variant's wobble
    assert prompts_check(suite(offset=1.15, wobble=0.16, seed=seed), ALLOWED)["status"] == "pass"


def test_a_flat_models_tiny_kl_is_a_ratio_like_any_other():
    rows = suite(scale=1e-11)
    assert prompts_check(rows, ALLOWED)["status"] == "pass"
    assert prompts_check(with_bad(rows), ALLOWED)["status"] == "fail"


def test_the_spread_is_the_floors_and_a_bad_prompt_does_not_move_it():
    rows = suite()
    judged_clean, sigma_clean = judge_prompts(rows, ALLOWED)
    judged_bad, sigma_bad = judge_prompts(with_bad(rows, factor=50.0), ALLOWED)
    assert sigma_bad == sigma_clean and clean_log_spread(rows) == clean_log_spread(with_bad(rows))


def test_a_moderate_excess_on_one_prompt_is_not_clearly_bad():
    # 1.8x the floor on one prompt: past the allowance, not past twice it
    assert prompts_check(with_bad(suite(), factor=1.8), ALLOWED)["status"] == "pass"


def test_edges_decide_nothing_of_their_own():
    assert prompts_check([], ALLOWED)["status"] == "unjudged"
    one = suite(n=1)
    assert prompts_check(with_bad(one, index=0, factor=100.0), ALLOWED)["status"] == "unjudged"
    zero_floor = [dict(r, floor=0.0) for r in suite(n=5)]
    assert prompts_check(zero_floor, ALLOWED)["status"] == "unjudged"
    no_variant = [dict(r, variant=None) for r in suite()]
    assert prompts_check(no_variant, ALLOWED)["status"] == "pass"  # the suite's allowance alone gives the scale
    assert prompts_check(with_bad(no_variant), ALLOWED)["status"] == "fail"
    assert math.isnan(clean_log_spread([]))


def test_holm_and_the_normal_tail():
    assert holm([0.001, float("nan"), 0.2], 0.01) == [True, False, False]
    assert upper_tail(0.0) == pytest.approx(0.5) and upper_tail(math.inf) == 0.0


def test_the_served_kl_allowance_does_not_move_when_a_bad_prompt_is_added():
    """The teacher-forced KL ratio's allowed spread (endpoint._spread) and the perplexity check's allowance come
    from the floor alone: the same with or without a bad prompt among clean rows. (The bootstrap of the server's
    own ratio, which the allowance was before, is kept for the record and grows with the fault.)"""
    from llm_adapt.accuracy.endpoint import _spread
    from llm_adapt.accuracy.verdict.checks import ppl_check

    rng = random.Random(1)
    clean = [[(f * 1.1, f, f * (1 + rng.gauss(0, 0.05))) for f in (rng.uniform(1e-3, 5e-3) for _ in range(60))]
             for _ in range(12)]
    bad = [list(p) for p in clean]
    bad[3] = [(t * 8, f, v) for t, f, v in bad[3]]
    rows = lambda per: [{"kl_lb": f} for p in per for _, f, _ in p]  # noqa: E731
    variants = lambda per: [{"kl_lb": v} for p in per for _, _, v in p]  # noqa: E731
    a, b = _spread(clean, rows(clean), variants(clean)), _spread(bad, rows(bad), variants(bad))
    assert a["relative"] == b["relative"] and a["source"] == "floor"
    assert b["bootstrap_served"] > 3 * a["bootstrap_served"]  # the server's own spread grew with the fault
    assert ppl_check(0.030, 0.0012, 0.002, 0.0012, "f")["args"]["allowed"] == \
        ppl_check(0.030, 0.0052, 0.002, 0.0012, "f")["args"]["allowed"]
    assert ppl_check(0.0183, 0.0052, 0.0017, 0.0012, "f")["status"] != "pass"  # the sparse fault


def test_at_the_golds_dtype_a_prompt_above_the_band_fails_where_the_mean_does_not():
    from llm_adapt.accuracy.verdict.endpoint import same_dtype_prompts_check

    rows = [{"id": f"p{i}", "tokens": 100, "first": 1, "last": 99, "positions": 99, "server": 99 * 5e-9,
             "floor": None, "variant": None} for i in range(20)]
    assert same_dtype_prompts_check(rows)["status"] == "pass"
    rows[4] = dict(rows[4], server=99 * 1e-3)  # one request at 1e-3: the suite's mean is 5e-5, inside the warn band
    check = same_dtype_prompts_check(rows)
    assert check["status"] == "fail" and "p4 (100 tokens, positions 1-99" in check["value"]
    assert same_dtype_prompts_check([])["status"] == "unjudged"
