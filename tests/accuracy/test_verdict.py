"""The accuracy judges on plain dicts: the cases that must FAIL, WARN and PASS, without a model."""

import math

import numpy as np
import pytest

from llm_adapt.accuracy import metrics as m
from llm_adapt.accuracy.verdict import (
    K_SPREAD,
    allowed_ratio,
    binomial_tail,
    graded,
    greedy_status,
    judge,
    judge_endpoint,
    msprobe_dtype_rule,
    ppl_check,
    stops_check,
)


def layer(name, rel=0.01, cos=0.9999, ratio=None, allowed=1.0, local=0.001):
    row = {"name": name, "rel_l2": rel, "cos_min": cos, "local_rel_l2": local}
    if ratio is not None:
        row.update(ratio=ratio, allowed=allowed, local_ratio=1.0, local_allowed=1.0)
    return row


def greedy(n, genuine=0, stop=None):
    rows = [{"id": str(i), "divergence": None, "stop": None} for i in range(n)]
    for row in rows[:genuine]:
        row.update(divergence="genuine", stop=stop)
    return rows


def runner(kl=2e-3, top1=0.97, ln=0.001, ln_se=0.002, genuine=0, n=16, ratio=1.0, allowed=1.2, excess=None,
           nonfinite=None, kl_ratio=1.0, kl_allowed=1.2, label="t", stop=None):
    return {"label": label, "layers": [layer(f"layer {i}", ratio=ratio, allowed=allowed) for i in range(4)],
            "logits": {"kl_mean": kl, "same_top1": top1, "same_top1_err": 0.01},
            "perplexity": {"ln_ratio": ln, "ln_ratio_sem": ln_se}, "greedy": greedy(n, genuine, stop),
            "first_local_excess": excess, "first_nonfinite": nonfinite,
            "vs_floor": {"kl_ratio": kl_ratio, "kl_allowed": kl_allowed}, "floor": "cpu:bf16"}


FLOOR = runner(label="cpu:bf16")


def status(target, floor=FLOOR, exact=False):
    return judge(target, floor, exact_expected=exact)["status"]


# ---- the clean cases pass ------------------------------------------------------------------------

def test_clean_target_against_its_floor_passes():
    assert status(runner()) == "PASS"


def test_clean_target_without_a_floor_passes():
    assert status(runner(), floor=None) == "PASS"


def test_synthetic_clean_targets_around_the_floor_pass_at_least_99_percent():
    """Targets drawn around the floor with the floor's own measured spread: the judge's false alarms."""
    rng = np.random.default_rng(1)
    spread = 0.08  # relative spread of the floor, as measured
    allowed = allowed_ratio(spread)
    alarms = 0
    for _ in range(2000):
        kl_ratio = 1 + spread * rng.standard_normal()
        layer_ratio = 1 + spread * rng.standard_normal()
        ln = 0.002 * rng.standard_normal()
        target = runner(kl_ratio=kl_ratio, kl_allowed=allowed, ratio=layer_ratio, allowed=allowed, ln=ln,
                        genuine=int(rng.poisson(0.5)))
        alarms += status(target) != "PASS"
    assert alarms / 2000 <= 0.01, alarms


# ---- the faults fail or warn -------------------------------------------------------------------

def test_nan_only_in_the_logits_fails():
    target = runner(kl=float("nan"), kl_ratio=None, nonfinite="logits")
    result = judge(target, FLOOR)
    assert result["status"] == "FAIL"
    assert any("logits" in r for r in result["reasons"])


def test_a_ratio_that_cannot_be_computed_decides_nothing_the_verdict_rests_on_the_others():
    assert graded(None, 1.2) == "unjudged" and graded(float("nan"), 1.2) == "unjudged"
    result = judge(runner(kl_ratio=None), FLOOR)
    kl = next(c for c in result["checks"] if c["key"] == "kl_ratio")
    assert kl["status"] == "unjudged" and "not computable" in kl["value"]
    assert result["status"] == "PASS" and any("not computable" in r for r in result["reasons"])
    assert graded(math.inf, 1.2) == "fail"  # an error where the floor has none is a real difference


def test_ratio_grading_uses_the_spread():
    allowed = allowed_ratio(0.1)
    assert allowed == pytest.approx(1 + K_SPREAD * 0.1)
    assert graded(allowed, allowed) == "pass"
    assert graded(allowed * 1.01, allowed) == "warn"
    assert graded(2 * allowed + 0.01, allowed) == "fail"
    assert graded(19.8, allowed_ratio(0.3)) == "fail"  # the q/k permutation's KL ratio


def test_a_localized_layer_warns_and_fails_when_rounding_is_all_that_is_allowed():
    excess = {"name": "layer 7", "local_rel_l2": 0.3, "ratio": 4579.0, "basis": "4 x fp32 unit roundoff"}
    target = runner(excess=excess)
    assert status(target) == "WARN"
    result = judge(target, None, exact_expected=True)
    assert result["status"] == "FAIL"
    assert any("layer 7" in r for r in result["reasons"])


def test_perplexity_enters_the_verdict():
    # the q/k fault served: ln PPL ratio +0.058 against -0.0005 for the clean floor
    assert status(runner(ln=0.058, ln_se=0.004)) == "FAIL"
    assert ppl_check(-0.0004, 0.002, -0.0005, 0.002, "f")["status"] == "pass"
    assert ppl_check(float("nan"), 0.002, -0.0005, 0.002, "f")["status"] == "unjudged"
    assert ppl_check(math.inf, 0.002, -0.0005, 0.002, "f")["status"] == "fail"


def test_genuine_divergences_beyond_the_floor_fail():
    assert greedy_status(12, 0, 16)[0] == "fail"
    assert greedy_status(1, 0, 16)[0] == "pass"
    assert greedy_status(0, 0, 16)[0] == "pass"
    assert greedy_status(4, 0, 16)[0] == "warn"
    assert status(runner(genuine=12)) == "FAIL"


def test_binomial_tail_by_hand():
    assert binomial_tail(2, 1, 0.5) == pytest.approx(0.75)
    assert binomial_tail(3, 3, 0.5) == pytest.approx(0.125)
    assert binomial_tail(3, 0, 0.2) == 1.0 and binomial_tail(3, 4, 0.2) == 0.0


def test_wrong_stop_positions_warn_at_least():
    rows = greedy(16, genuine=2, stop="early")
    check = stops_check(rows)
    assert check["status"] == "warn" and "early in 2" in check["value"]
    assert status(runner(genuine=2, stop="early")) == "WARN"
    near = [{"id": str(i), "divergence": "near-tie", "stop": "early"} for i in range(4)]
    assert stops_check(near)["status"] == "pass"
    assert stops_check(near[:1])["status"] == "unjudged"  # one prompt: too few to say the stops are right


def test_the_cosine_rule_reads_each_layer_s_own_output_where_it_was_measured():
    rows = [{"name": f"layer {i}", "cos_min": 0.989, "local_cos_min": 0.9998} for i in range(3)]
    from llm_adapt.accuracy.verdict.in_process import _cosine

    assert _cosine({"layers": rows})["status"] == "pass"  # accumulated 0.989 over a long prompt, own 0.9998
    rows[1]["local_cos_min"] = 0.95
    assert _cosine({"layers": rows})["status"] == "warn"
    rows[1]["local_cos_min"] = 0.5
    assert _cosine({"layers": rows})["status"] == "fail"
    served = [{"name": "layer 0", "cos_min": 0.989}]  # inside an engine: no local output, the full one
    assert _cosine({"layers": served})["status"] == "warn"
    nan_row = [{"name": "layer 0", "cos_min": 0.99, "local_cos_min": float("nan")}]
    assert _cosine({"layers": nan_row})["status"] == "unjudged"  # the nonfinite check judges NaN in the output
    assert _cosine({"layers": []})["status"] == "unjudged"


def test_low_cosine_fails_and_a_nan_cosine_from_nan_output_fails_by_the_nonfinite_check():
    target = runner()
    target["layers"][2]["cos_min"] = 0.5
    assert status(target) == "FAIL"
    target["layers"][2]["cos_min"] = float("nan")
    assert status(target) == "PASS"  # no NaN in the output: a NaN of our own decides nothing
    target["first_nonfinite"] = "layer 2"
    assert status(target) == "FAIL"


def test_worst_layer_ratio_names_the_layer():
    target = runner()
    target["layers"][3].update(ratio=9.0)
    result = judge(target, FLOOR)
    assert result["status"] == "FAIL" and any("layer 3" in r for r in result["reasons"])


# ---- metrics used by the judges ---------------------------------------------------------------

def test_stop_margin_by_hand():
    import torch

    from llm_adapt.accuracy.greedy import stop_margin

    logits = torch.log(torch.tensor([0.5, 0.3, 0.2]))
    # the reference went on with token 0 where the other side stopped on token 2
    assert stop_margin(logits, 0, [2], ref_stopped=False) == pytest.approx(math.log(0.5 / 0.2))
    # the reference stopped on token 1: its margin over the best other token (0) is negative here
    assert stop_margin(logits, 1, [1], ref_stopped=True) == pytest.approx(math.log(0.3 / 0.5))


def test_bootstrap_ratio_sd_is_zero_for_proportional_prompts_and_positive_otherwise():
    f = np.array([1.0, 2.0, 3.0, 4.0])
    assert m.bootstrap_ratio_sd(2 * f, f) == pytest.approx(0.0, abs=1e-12)
    assert m.bootstrap_ratio_sd(np.array([1.0, 5.0, 1.0, 9.0]), f) > 0.1
    assert math.isnan(m.bootstrap_ratio_sd(np.array([1.0]), np.array([1.0])))


def test_ratio_or_none():
    assert m.ratio_or_none(0.0, 0.0) == 0.0
    assert m.ratio_or_none(1.0, 0.0) == math.inf
    assert m.ratio_or_none(float("nan"), 1.0) is None and m.ratio_or_none(None, 1.0) is None
    assert m.ratio_or_none(2.0, 4.0) == 0.5


def test_msprobe_dtype_standard():
    shares_clean_bf16 = {"0.01": 0.004, "0.001": 0.0005, "0.0001": 0.3}
    assert msprobe_dtype_rule(0.9999, 0.05, shares_clean_bf16, "bf16") == "pass"
    assert msprobe_dtype_rule(0.9999, 0.05, shares_clean_bf16, "fp32") == "warning"  # ten-thousandths fail
    assert msprobe_dtype_rule(0.9999, 0.05, {"0.001": 0.01, "0.0001": 0.3}, "fp32") == "error"
    assert msprobe_dtype_rule(0.9999, 0.05, {"0.01": 0.004, "0.001": 0.01}, "bf16") == "warning"
    assert msprobe_dtype_rule(0.98, 0.0001, shares_clean_bf16, "bf16") == "error"
    assert msprobe_dtype_rule(0.9999, 0.0001, {"0.01": 0.5}, "bf16") == "pass"  # max abs < 1e-3


# ---- the endpoint judge -----------------------------------------------------------------------

def sections(kl=1.2e-3, floor_kl=1.3e-3, allowed=1.3, nonfinite=0, ln=-0.0005, genuine=0, floor_genuine=0,
             decode_kl=1e-3, floor_decode_kl=1e-3, mismatches=(), stop=None, skipped=()):
    tf_server = {"positions": 300, "kl_lb_mean": kl, "same_top1": 0.97, "same_top1_err": 0.01}
    tf_floor = {"positions": 300, "kl_lb_mean": floor_kl, "same_top1": 0.97, "same_top1_err": 0.01}
    return {
        "tokenization": {"status": "done", "checked": 6, "mismatches": list(mismatches)},
        "teacher_forced": {"status": "done", "server": tf_server, "floor": tf_floor, "nonfinite_positions": nonfinite,
                           "spread": {"allowed": allowed}, "skipped": list(skipped)},
        "perplexity": {"status": "done", "ln_ratio": ln, "ln_ratio_sem": 0.002, "floor_ln_ratio": -0.0005,
                       "floor_ln_ratio_sem": 0.002},
        "greedy": {"status": "done", "rows": greedy(16, genuine, stop), "floor_genuine": floor_genuine, "skipped": [],
                   "decode": {"server": {"positions": 200, "kl_lb_mean": decode_kl},
                              "floor": {"positions": 200, "kl_lb_mean": floor_decode_kl}}},
    }


def test_clean_endpoint_passes():
    assert judge_endpoint(sections())["status"] == "PASS"


@pytest.mark.parametrize("fault, expected", [
    (dict(kl=25e-3), "FAIL"),  # q/k permutation: 19.8x the floor
    (dict(nonfinite=3), "FAIL"),
    (dict(ln=0.058), "FAIL"),
    (dict(genuine=12), "FAIL"),
    (dict(decode_kl=30e-3), "FAIL"),  # a decode-only fault
    (dict(mismatches=[{"id": "a"}]), "FAIL"),  # chat template
    (dict(genuine=2, stop="early"), "WARN"),  # extra EOS on a few prompts
])
def test_endpoint_faults(fault, expected):
    assert judge_endpoint(sections(**fault))["status"] == expected


def test_skipped_prompts_are_listed_and_do_not_discard_the_judgement():
    result = judge_endpoint(sections(kl=25e-3, skipped=[{"id": "long-1", "reason": "too long"}]))
    assert result["status"] == "FAIL" and result["skipped_prompts"] == ["long-1"]


def test_an_unsupported_section_warns_at_most_when_the_rest_is_clean():
    s = sections()
    s["greedy"] = {"status": "unsupported", "reason": "no logprobs"}
    assert judge_endpoint(s)["status"] == "WARN"


def test_a_target_whose_own_chat_template_differs_fails():
    target = runner()
    target["template_mismatches"] = ["knowledge-1"]
    assert status(target) == "FAIL"
    target["template_mismatches"] = []
    assert status(target) == "PASS"


def test_an_endpoint_whose_every_log_prob_is_nan_fails_without_crashing():
    s = sections(nonfinite=300)
    s["teacher_forced"]["server"] = {"positions": 0}
    result = judge_endpoint(s)
    assert result["status"] == "FAIL" and any("NaN" in r for r in result["reasons"])


def test_a_server_that_cannot_serialise_its_log_probs_is_a_non_finite_fault_not_a_missing_feature():
    from llm_adapt.accuracy.endpoint_requests import NONFINITE, REFUSED, TOO_LONG, refusal

    nan = refusal(400, '{"error":{"message":"Out of range float values are not JSON compliant"}}', "prompt_logprobs request")
    assert nan.kind == NONFINITE and not nan.ok and "NaN/Inf" in nan.detail
    assert refusal(400, "This model's maximum context length is 2048 tokens", "x").kind == TOO_LONG
    missing = refusal(404, "no such route", "x")
    assert missing.kind == REFUSED and missing.detail == "x answered 404: no such route"