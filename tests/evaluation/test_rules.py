"""The three rules side by side, on plain data: cases each must FAIL, clean cases each must PASS, and the
edges (no item, one item, a gold that scores 0) decided by the rule, never by a NaN."""

import pytest

from llm_adapt.evaluation.judge import paired_rows, sizing_line
from llm_adapt.evaluation.rules import aisbench_rule, disagree, lm_eval_rule, paired_rule, rulings
from llm_adapt.evaluation.stats import paired


def _table(n, both, b, c):
    """n items: `both` right on both sides, b served-only, c gold-only, the rest wrong on both."""
    served = [1] * both + [1] * b + [0] * c + [0] * (n - both - b - c)
    gold = [1] * both + [0] * b + [1] * c + [0] * (n - both - b - c)
    return served, gold


# lm_eval's rule: np.isclose(gold, served, rtol=0.05)
@pytest.mark.parametrize("gold,served,status", [
    (0.71, 0.68, "PASS"),  # |0.03| <= 0.0355
    (0.71, 0.67, "FAIL"),  # 0.04 > 0.0355
    (0.71, 0.75, "FAIL"),  # two-sided: better fails too
    (0.50, 0.50, "PASS"),
    (0.0, 0.0, "PASS"),  # a gold of 0: only 0 (within atol 1e-8) passes
    (0.0, 0.01, "FAIL"),
])
def test_lm_eval_rule(gold, served, status):
    assert lm_eval_rule(gold, served, n=100).status == status


# AISBench's rule: baseline - threshold <= acc <= baseline + threshold, in points
@pytest.mark.parametrize("gold,served,threshold,status", [
    (0.60, 0.595, 1, "PASS"),
    (0.60, 0.585, 1, "FAIL"),  # 1.5 points below
    (0.60, 0.62, 1, "FAIL"),  # 2 points above
    (0.60, 0.56, 5, "PASS"),  # the nightly configs' threshold 5
    (0.0, 0.0, 1, "PASS"),
    (0.0, 0.02, 1, "FAIL"),
])
def test_aisbench_rule(gold, served, threshold, status):
    assert aisbench_rule(gold, served, n=100, threshold=threshold).status == status


def test_paired_rule_fails_a_significant_drop_and_passes_noise():
    assert paired_rule(paired(*_table(200, 100, 2, 20))).status == "FAIL"
    assert paired_rule(paired(*_table(200, 100, 6, 7))).status == "PASS"


def test_no_items_are_not_judged_by_any_rule():
    empty = paired([], [])
    found = rulings(empty)
    assert {r.status for r in found.values()} == {"SKIP"} and not disagree(found)
    assert str(found["lm_eval"].reason) == "no items: not judged"


def test_one_item():
    lost = rulings(paired([0], [1]))  # the one item lost: upstream's rules fail, McNemar cannot tell (p = 1)
    assert lost["paired"].status == "WARN" and lost["lm_eval"].status == "FAIL" and lost["aisbench"].status == "FAIL"
    same = rulings(paired([1], [1]))
    assert {r.status for r in same.values()} == {"PASS"}


def test_gold_scoring_zero():
    found = rulings(paired([1, 0, 0, 0], [0, 0, 0, 0]))  # served better than a gold that scores 0
    assert found["paired"].status == "PASS"  # a gain is never a drop
    assert found["lm_eval"].status == "FAIL" and found["aisbench"].status == "FAIL"  # two-sided: a gain fails


def test_where_they_disagree():
    # 300 items, gold 0.60, served 0.58: 2 points lost, 6 discordant all against the served side (p = 0.031)
    found = rulings(paired(*_table(300, 174, 0, 6)))
    assert found["paired"].status == "FAIL"  # the paired test sees the one-sided losses
    assert found["lm_eval"].status == "PASS"  # 0.02 <= 0.05 * 0.60
    assert found["aisbench"].status == "FAIL"  # 2 points > 1
    assert disagree(found)


def test_paired_rows_carry_the_rules_and_what_the_items_could_see():
    served = {"acc,none": {i: i >= 3 for i in range(60)}}
    gold = {"acc,none": {i: True for i in range(60)}}
    (row,) = paired_rows("t", served, gold, detect=3)
    assert set(row["rules"]) == {"paired", "lm_eval", "aisbench"}
    assert row["rules"]["lm_eval"]["status"] == "PASS" and row["rules"]["aisbench"]["status"] == "FAIL"
    assert row["sizing"]["items"] == 60 and row["sizing"]["discordance"] == pytest.approx(0.05)
    line = str(sizing_line(row))
    assert line.startswith("t acc,none: with 60 items, a drop smaller than ") and "would go unseen" in line


def test_the_unseen_line_names_the_items_the_task_holds_when_more_are_there():
    served = {"acc,none": {i: i >= 3 for i in range(60)}}
    gold = {"acc,none": {i: True for i in range(60)}}
    (row,) = paired_rows("t", served, gold, available=300)
    assert str(row["seen"]).endswith("the task holds 300)")
    (row,) = paired_rows("t", served, gold, available=60)  # all of it ran: nothing more to offer
    assert "holds" not in str(row["seen"])
