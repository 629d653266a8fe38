"""The SLA capacity search on a simulated latency curve: where it probes, what it reports, and the
points it must call violations."""

import pytest

from llm_adapt.bench.sla import capacity, point_meets, search_next


def _search(meets_at, max_level=64):
    """The whole search against a server where level c meets iff meets_at(c); the levels it probed."""
    history, probed = {}, []
    while (level := search_next(history, max_level)) is not None:
        probed.append(level)
        history[level] = meets_at(level)
    return history, probed


def test_doubling_then_bisection_brackets_the_knee():
    history, probed = _search(lambda c: 0.05 * c + 0.2 <= 1.0)  # a p99 TTFT growing with load: capacity 16
    assert probed == [1, 2, 4, 8, 16, 32, 24, 20, 18, 17]
    assert capacity(history) == {"capacity": 16, "first_failing": 17, "bracket": [16, 17], "non_monotone": [],
                                 "note": "capacity between 16 (met) and 17 (did not)"}


def test_a_server_that_meets_everywhere_stops_at_the_cap():
    history, probed = _search(lambda c: True, max_level=12)
    assert probed == [1, 2, 4, 8, 12]
    cap = capacity(history, 12)
    assert cap["capacity"] == 12 and cap["first_failing"] is None and "at least 12" in cap["note"]


def test_a_server_that_fails_at_once_has_capacity_zero():
    history, probed = _search(lambda c: False)
    assert probed == [1]
    cap = capacity(history)
    assert cap["capacity"] == 0 and cap["first_failing"] == 1 and "no point met" in cap["note"]


def test_a_noisy_point_below_the_capacity_is_reported():
    history = {1: True, 2: False, 4: True, 8: False, 5: True, 6: False}
    assert search_next(history) is None
    assert capacity(history)["non_monotone"] == [2] and capacity(history)["capacity"] == 5


def _run(ttft, tpot, failed=0, completed=8):
    return {"completed": completed, "failed": failed, "p99_ttft_ms": ttft, "p99_tpot_ms": tpot}


def test_every_run_must_meet_and_every_request_succeed():
    slo = {"ttft": 500.0, "tpot": 100.0}
    assert point_meets([_run(400, 90)] * 3, slo)["met"]
    assert not point_meets([_run(400, 90), _run(400, 90), _run(520, 90)], slo)["met"]  # one repeat over
    assert not point_meets([_run(400, 90), _run(400, 90, failed=1, completed=7)], slo)["met"]  # 7 of 8 succeeded
    assert not point_meets([_run(400, 130)], slo)["met"]  # AND: tpot over
    assert point_meets([_run(400, 130)], slo, any_of=True)["met"]  # OR: ttft within is enough
    assert not point_meets([_run(None, 90)], slo)["met"]  # a metric that was not measured never meets
    assert not point_meets([], slo)["met"]


@pytest.mark.parametrize("percentile", [90, 99])
def test_the_chosen_percentile_is_judged(percentile):
    run = {"completed": 4, "failed": 0, "p90_ttft_ms": 300.0, "p99_ttft_ms": 700.0}
    assert point_meets([run], {"ttft": 500.0}, percentile=percentile)["met"] == (percentile == 90)
