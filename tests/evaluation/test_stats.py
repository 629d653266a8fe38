"""The paired statistics worked by hand on small tables."""

import math

import pytest

from llm_adapt.evaluation.stats import (
    discordant,
    judge,
    judge_baseline,
    mcnemar_exact,
    paired,
    paired_diff_ci,
    within_rtol,
)


def test_discordant_counts_by_hand():
    served = [1, 1, 0, 0, 1, 0]
    gold = [1, 0, 1, 1, 1, 0]
    assert discordant(served, gold) == (1, 2)


def test_discordant_refuses_unpaired_lists():
    with pytest.raises(ValueError):
        discordant([1, 0], [1])


@pytest.mark.parametrize("b,c,expected", [
    (0, 0, 1.0),
    (0, 5, 2 / 32),  # 2 * P(X<=0), X~Bin(5, .5) = 2/32
    (1, 9, 2 * (1 + 10) / 1024),  # 2 * (C(10,0)+C(10,1)) / 2^10
    (5, 5, 1.0),  # capped
    (3, 4, 1.0),
])
def test_mcnemar_exact_by_hand(b, c, expected):
    assert mcnemar_exact(b, c) == pytest.approx(expected)


def test_mcnemar_is_symmetric():
    assert mcnemar_exact(2, 12) == mcnemar_exact(12, 2)


def test_paired_ci_by_hand():
    # n=100, b=2, c=12: diff=-0.10, var=(0.14-0.01)/100, half=1.96*sqrt(0.0013)
    diff, low, high = paired_diff_ci(2, 12, 100)
    half = 1.959963984540054 * math.sqrt(0.0013)
    assert diff == pytest.approx(-0.10)
    assert (low, high) == pytest.approx((-0.10 - half, -0.10 + half))


def test_identical_answers_have_zero_width():
    p = paired([1, 0, 1, 1], [1, 0, 1, 1])
    assert (p.diff, p.ci_low, p.ci_high, p.p_value) == (0.0, 0.0, 0.0, 1.0)
    assert p.served == p.gold == 0.75


def _table(n, both, b, c):
    """n items: `both` right on both sides, b served-only, c gold-only, the rest wrong on both."""
    served = [1] * both + [1] * b + [0] * c + [0] * (n - both - b - c)
    gold = [1] * both + [0] * b + [1] * c + [0] * (n - both - b - c)
    return served, gold


def test_significant_drop_fails():
    p = paired(*_table(200, 100, 2, 20))  # 0.51 vs 0.60, p ~ 1e-4
    status, reason = judge(p)
    assert status == "FAIL" and "significant drop" in reason


def test_clean_noise_passes():
    p = paired(*_table(200, 100, 6, 7))  # 0.53 vs 0.535: discordant items balanced
    assert judge(p)[0] == "PASS"


def test_served_better_is_never_a_fail():
    p = paired(*_table(200, 100, 20, 2))
    assert p.p_value < 0.05 and judge(p)[0] == "PASS"


def test_large_but_insignificant_drop_warns():
    p = paired(*_table(20, 8, 0, 2))  # 0.40 vs 0.50: 20 % drop, p = 0.5
    status, reason = judge(p, rtol=0.05)
    assert p.p_value == pytest.approx(0.5)
    assert status == "WARN" and "rtol" in reason


def test_small_insignificant_drop_within_rtol_passes():
    p = paired(*_table(200, 100, 4, 5))  # 0.52 vs 0.525: 1 % drop
    assert judge(p, rtol=0.05)[0] == "PASS"


def test_within_rtol_matches_numpy_isclose():
    assert within_rtol(0.68, 0.71, 0.05)  # |0.03| <= 0.0355
    assert not within_rtol(0.67, 0.71, 0.05)  # 0.04 > 0.0355
    assert not within_rtol(0.75, 0.71, 0.05)  # two-sided, as the CI checks it


def test_baseline_judgement():
    assert judge_baseline(0.70, 0.71, 0.05)[0] == "PASS"
    status, reason = judge_baseline(0.60, 0.71, 0.05)
    assert status == "WARN" and "published" in reason


