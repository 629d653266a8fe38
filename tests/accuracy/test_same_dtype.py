"""The served-at-the-gold's-dtype rule (no floor): equal to rounding passes, a real error fails."""

import math

from llm_adapt.accuracy.endpoint import same_dtype_checks
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


def test_what_cannot_be_computed_is_never_a_pass():
    assert statuses(kl_lb_mean=math.nan, same_top1=math.nan, positions=0) == ["fail", "fail"]
    assert statuses() == ["fail", "fail"]
