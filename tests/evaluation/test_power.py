"""Sample sizes from the drop to detect, checked against TensorRT-LLM's published figures and worked by hand."""

import math

import pytest

from llm_adapt.evaluation.power import (
    paired_items,
    paired_theta,
    sizing,
    unpaired_items,
    unpaired_theta,
    unpaired_threshold,
    z,
)


# TensorRT-LLM, tests/integration/defs/accuracy/README.md (scripts/compute_theta_and_thresholds.py, sigma 50,
# alpha 0.05, beta 0.2): "4096  2.747193  -1.817324"; GSM8K's 1319 items: theta 4.84, threshold ref - 3.20
@pytest.mark.parametrize("n,theta,below", [(4096, 2.747193, 1.817324), (1024, 5.494385, 3.634647),
                                           (32, 31.080936, 20.560670), (14042, 1.483729, 0.981517)])
def test_unpaired_theta_and_threshold_match_tensorrt_llms_table(n, theta, below):
    assert unpaired_theta(n) == pytest.approx(theta, abs=1e-5)
    assert unpaired_threshold(n, 70.0) == pytest.approx(70.0 - below, abs=1e-5)


def test_gsm8k_full_test_set():
    assert round(unpaired_theta(1319), 2) == 4.84
    assert round(70.0 - unpaired_threshold(1319, 70.0), 2) == 3.20


def test_unpaired_items_is_the_inverse_of_theta():
    # 2 * 50^2 * (1.6449 + 0.8416)^2 / 3^2 = 3434.6 -> 3435; and theta at that n is just under 3
    assert unpaired_items(3) == 3435
    assert unpaired_theta(3435) <= 3 < unpaired_theta(3434)
    assert unpaired_items(2.747193) == 4096  # TensorRT-LLM's MMLU size back from its theta


def test_paired_items_by_hand():
    # Connor 1987, two-sided alpha 0.05, power 0.8, psi 0.10, delta 0.03:
    # (1.95996 * 0.316228 + 0.84162 * 0.314802)^2 / 0.0009 = 0.884734^2 / 0.0009 = 869.7 -> 870
    expected = (z(0.975) * math.sqrt(0.1) + z(0.8) * math.sqrt(0.1 - 0.0009)) ** 2 / 0.0009
    assert paired_items(3, 0.10) == math.ceil(expected) == 870


def test_paired_needs_far_fewer_items_when_the_sides_rarely_disagree():
    assert paired_items(3, 0.05) < paired_items(3, 0.20) < unpaired_items(3)


def test_paired_discordance_below_the_drop_is_raised_to_it():
    # a drop of 3 points makes at least 3 % of items discordant: psi 0 is sized as psi 0.03
    assert paired_items(3, 0.0) == paired_items(3, 0.03)
    assert paired_items(3, 0.0) == math.ceil((z(0.975) * math.sqrt(0.03) + z(0.8) * math.sqrt(0.03 - 0.0009)) ** 2 / 0.0009)


def test_paired_theta_inverts_paired_items():
    for n, psi in [(60, 0.1), (300, 0.05), (1319, 0.2)]:
        d = paired_theta(n, psi)
        assert paired_items(d, psi) <= n < paired_items(d * 0.99, psi)


@pytest.mark.parametrize("bad", [0, -1, float("nan"), float("inf")])
def test_a_drop_to_detect_must_be_positive(bad):
    with pytest.raises(ValueError, match="positive number of points"):
        unpaired_items(bad)


def test_no_items_see_nothing_and_decide_nothing_by_nan():
    s = sizing(0, 0)
    assert s.items == 0 and s.discordance is None and not s.enough
    assert s.unpaired_unseen is None and s.paired_unseen is None
    assert s.paired_needed == paired_items(3, 0.0) and s.unpaired_needed == 3435


def test_one_item():
    s = sizing(1, 1)
    assert s.discordance == 1.0 and not s.enough
    assert s.paired_unseen is not None and 50 < s.paired_unseen <= 100


def test_sizing_of_sixty_builtin_items():
    # the q/k permutation of issue 55: 60 items of builtin-mc; even at 10 % discordance 3 points go unseen
    s = sizing(60, 6)
    assert s.discordance == pytest.approx(0.1) and not s.enough
    assert s.paired_unseen > 3 and s.unpaired_unseen > s.paired_unseen
    assert sizing(s.paired_needed, int(0.1 * s.paired_needed)).enough


def test_limit_auto_runs_what_the_pilot_says_the_paired_test_needs():
    from llm_adapt.evaluation.judge import paired_rows
    from llm_adapt.evaluation.stage import items_needed

    # a pilot of 100 items, 10 discordant: 3 points need 870 items; the task holds 300, so 300
    served = {"acc,none": {i: i % 10 != 0 for i in range(100)}}
    gold = {"acc,none": {i: True for i in range(100)}}
    assert items_needed(paired_rows("t", served, gold, available=300), 100) == 300
    assert items_needed(paired_rows("t", served, gold), 100) == paired_items(3, 0.10) == 870
    assert items_needed(paired_rows("t", served, gold, detect=30), 100) is None  # the pilot already sees 30 points


def test_limit_auto_measures_a_pilot_then_the_items_needed():
    from llm_adapt.evaluation.harness import PILOT_ITEMS, Settings
    from llm_adapt.evaluation.judge import paired_rows
    from llm_adapt.evaluation.stage import _sized

    asked = []

    def measure(s):  # a task of 300 items whose sides disagree on every tenth
        asked.append(s.limit)
        n = min(s.limit, 300)
        rows = paired_rows("t", {"a": {i: i % 10 != 0 for i in range(n)}}, {"a": {i: True for i in range(n)}},
                           available=300)
        return [], rows, [], {}

    settings, (_, rows, _, _) = _sized(Settings(limit="auto"), measure, say=lambda m: None)
    assert asked == [PILOT_ITEMS, 300] and settings.limit == 300 and rows[0]["n"] == 300
