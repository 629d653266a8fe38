"""Same top-1 against the floor, judged outside the gold's tie margin: plain rows."""

from llm_adapt.accuracy.endpoint import top1_check
from llm_adapt.accuracy.endpoint_metrics import summarize


def rows(n, flips_tied, flips_decisive, tied_share=0.4):
    """n positions; a share with the gold's top two within 0.1 nats, the rest 2 nats apart."""
    out = []
    tied = int(n * tied_share)
    for i in range(n):
        margin = 0.1 if i < tied else 2.0
        flipped = (i < flips_tied) if i < tied else (i - tied < flips_decisive)
        out.append({"kl_lb": 1e-3, "ref_margin": margin, "same_top1": 0 if flipped else 1, "topk_agree": 1.0,
                    "dlogprob": 0.0})
    return out


def test_a_clean_server_on_a_near_flat_model_passes():
    floor = summarize(rows(1000, flips_tied=3, flips_decisive=0))
    server = summarize(rows(1000, flips_tied=40, flips_decisive=0))  # 4% flips, all inside the margin
    assert server["same_top1"] == 0.96 and server["same_top1_decisive"] == 1.0
    check = top1_check(server, floor)
    assert check["status"] == "pass" and "tie margin" in check["name"]


def test_a_fault_that_moves_top1_outside_the_margin_still_fails():
    floor = summarize(rows(1000, flips_tied=3, flips_decisive=0))
    server = summarize(rows(1000, flips_tied=3, flips_decisive=30))  # 5% of the decisive positions
    assert top1_check(server, floor)["status"] == "fail"


def test_without_decisive_positions_all_positions_are_judged():
    floor = summarize(rows(100, flips_tied=0, flips_decisive=0, tied_share=1.0))
    server = summarize(rows(100, flips_tied=30, flips_decisive=0, tied_share=1.0))
    check = top1_check(server, floor)
    assert check["name"] == "same top-1 rate" and check["status"] == "fail"
