"""Same top-1 against the floor, judged outside the gold's tie margin: plain rows."""

from llm_adapt.accuracy.verdict import top1_check
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


def test_a_server_at_the_golds_dtype_is_judged_to_rounding():
    from llm_adapt.accuracy.verdict import judge_endpoint

    def sections(kl, flips):
        rows_ = rows(500, flips_tied=0, flips_decisive=flips)
        for r in rows_:
            r["kl_lb"] = kl
        tf = {"status": "done", "server": summarize(rows_), "floor": None, "nonfinite_positions": 0}
        return {"tokenization": {"status": "done", "checked": 6, "mismatches": []}, "teacher_forced": tf,
                "perplexity": {"status": "done", "ln_ratio": 1e-6, "ln_ratio_sem": 1e-5},
                "greedy": {"status": "not run", "reason": "not part of this test"}}

    clean = judge_endpoint(sections(4.5e-9, 0))
    assert {c["name"]: c["status"] for c in clean["checks"]}["top-k KL at the gold's dtype"] == "pass"
    assert clean["status"] == "WARN"  # greedy not run: never a plain pass
    faulty = judge_endpoint(sections(0.1, 60))
    assert faulty["status"] == "FAIL" and any("gold's dtype" in r for r in faulty["reasons"])
