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


def test_without_decisive_positions_the_rate_is_not_judged_on_the_near_ties():
    # flat logits: every position inside the tie margin, 30% of them flipped by rounding
    floor = summarize(rows(100, flips_tied=0, flips_decisive=0, tied_share=1.0))
    server = summarize(rows(100, flips_tied=30, flips_decisive=0, tied_share=1.0))
    check = top1_check(server, floor)
    assert check["status"] == "unjudged" and "not enough evidence (0 of 30 positions" in check["value"]


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


# ---- in process: the same rule on the logits summary (measure._logits_summary) -------------------
# The absolute budgets decide where the target should match the gold to rounding (exact_expected: same device and
# dtype, a converted checkpoint); a target that is its own floor has them as informational figures (below).

def inproc(all_rate, decisive_rate=None, decisive=200, positions=1000):
    """A target's logits summary as measure.py writes it; decisive_rate None: an accuracy.json from before
    the decisive figures."""
    lg = {"positions": positions, "kl_mean": 2e-4, "same_top1": all_rate, "same_top1_err": 0.007}
    if decisive_rate is not None:
        lg.update(decisive_positions=decisive, same_top1_decisive=decisive_rate, same_top1_decisive_err=0.01,
                  tie_margin=0.3)
    return {"label": "cpu:bf16", "layers": [{"name": "layer 0", "rel_l2": 0.01, "cos_min": 0.9999, "local_rel_l2": 0.004}],
            "logits": lg, "perplexity": {"ln_ratio": 0.001, "ln_ratio_sem": 0.002}, "greedy": [],
            "first_local_excess": None, "first_nonfinite": None, "floor": None}


def top1(verdict):
    return next(c for c in verdict["checks"] if c["key"] in ("top1_absolute", "top1_ratio"))


def test_no_floor_a_near_flat_model_flipping_only_near_ties_passes():
    """The H200's cuda:fp32 -> cuda:bf16 on Llama-3.2-3B's random body: 0.945 over all positions."""
    from llm_adapt.accuracy.verdict import judge

    verdict = judge(inproc(0.945, 1.0), None, exact_expected=True)
    check = top1(verdict)
    assert verdict["status"] == "PASS" and check["status"] == "pass"
    assert check["name"] == "same top-1 rate outside the 0.3-nat tie margin (no noise floor measured)"
    assert check["value"] == "1.0 (200 of 1000 positions; all positions: 0.9450)"


def test_no_floor_flips_outside_the_margin_still_warn_and_fail():
    from llm_adapt.accuracy.verdict import judge

    assert top1(judge(inproc(0.93, 0.92), None, exact_expected=True))["status"] == "warn"
    assert judge(inproc(0.90, 0.80), None, exact_expected=True)["status"] == "FAIL"  # a fault: decisive positions flipped


def test_no_floor_an_earlier_report_without_the_decisive_figures_is_judged_as_before():
    from llm_adapt.accuracy.verdict import judge

    check = top1(judge(inproc(0.945), None, exact_expected=True))
    assert check["status"] == "warn" and check["name"] == "same top-1 rate (no noise floor measured)"
    assert check["value"] == 0.945
    # no decisive position at all: not enough evidence, as the served check says
    assert top1(judge(inproc(0.945, 1.0, decisive=0), None, exact_expected=True))["status"] == "unjudged"


def test_with_a_floor_the_decisive_rates_are_compared_when_both_have_them():
    from llm_adapt.accuracy.verdict import judge

    floor = inproc(0.97, 1.0) | {"label": "cpu:bf16"}
    target = inproc(0.93, 1.0) | {"vs_floor": {"kl_ratio": 1.0, "kl_allowed": 1.2}, "floor": "cpu:bf16"}
    for t in (target, floor):
        t["layers"][0].update(ratio=1.0, allowed=1.2, local_ratio=1.0, local_allowed=1.2)
    check = top1(judge(target, floor))
    assert check["status"] == "pass" and "tie margin" in check["name"]
    assert "all positions: 0.9300 vs 0.9700" in check["value"]
    faulty = inproc(0.90, 0.85) | {"vs_floor": target["vs_floor"], "floor": "cpu:bf16", "layers": target["layers"]}
    assert top1(judge(faulty, floor))["status"] == "fail"
    old_floor = inproc(0.97) | {"label": "cpu:bf16", "layers": floor["layers"]}  # a floor from an earlier version
    check = top1(judge(target, old_floor))
    assert check["name"] == "same top-1 rate" and check["status"] == "fail"  # all positions: 0.93 vs 0.97


def test_the_decisive_check_renders_in_chinese():
    from llm_adapt.accuracy.verdict import judge
    from llm_adapt.messages import rendered_check

    check = rendered_check(top1(judge(inproc(0.945, 1.0), None, exact_expected=True)), "zh")
    assert check["name"] == "并列容差（0.3 nat）之外的 top-1 一致率（未测噪声基线）"
    assert "1000 个位置中的 200 个" in check["value"]


def test_a_target_that_is_its_own_floor_has_the_absolute_figures_as_information():
    """No absolute budget decides where the target is its own noise floor (the reference's device at its dtype, as
    the H200's cuda:fp32 -> cuda:bf16 and a CPU's cpu:bf16 are): the same figures that WARN or FAIL a target that
    should match the gold decide nothing there and give no reason; its layers still decide."""
    from llm_adapt.accuracy.verdict import judge

    verdict = judge(inproc(0.90, 0.80), None)
    assert verdict["status"] == "PASS" and top1(verdict)["status"] == "unjudged"
    assert "informational" in top1(verdict)["value"] and top1(verdict)["args"]["would"] == "fail"
    assert not any("same top-1" in r for r in verdict["reasons"])
    faulty = inproc(0.90, 0.80) | {"first_local_excess": {"name": "layer 0", "ratio": 9.0, "basis": "4 x bf16"}}
    assert judge(faulty, None)["status"] == "WARN"  # a located layer still decides
