"""Every judging statistic at its edges: zero vectors, too little evidence, and NaN of our own making.
Plain data; the property tests (Hypothesis) hold over every input the strategies draw."""

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings, strategies as st

from llm_adapt.accuracy import metrics as m
from llm_adapt.accuracy.endpoint_metrics import summarize
from llm_adapt.accuracy.verdict import (
    ABSOLUTE_KL,
    MIN_DECISIVE,
    MIN_GREEDY,
    SAME_DTYPE_KL,
    band,
    graded,
    greedy_min_prompts,
    greedy_status,
    judge,
    judge_endpoint,
    same_dtype_checks,
    top1_check,
    top1_status,
)

DECIDED = ("pass", "warn", "fail")


# ---- zero vectors -------------------------------------------------------------------------------------

def test_two_zero_vectors_are_identical_and_a_zero_against_a_nonzero_is_a_real_difference():
    acc = m.TensorAccumulator()
    ref = torch.tensor([[0.0, 0.0, 0.0], [1.0, 2.0, 3.0], [0.0, 0.0, 0.0]])
    tgt = torch.tensor([[0.0, 0.0, 0.0], [1.0, 2.0, 3.0], [0.5, 0.0, 0.0]])
    acc.add(ref, tgt)
    cos = np.concatenate(acc.cosines)
    assert cos[0] == 1.0  # the padding row: zero in both runs
    assert cos[1] == pytest.approx(1.0)
    assert cos[2] == 0.0  # zero in the gold, not in the target
    same = m.TensorAccumulator()
    same.add(torch.zeros(2, 4), torch.zeros(2, 4))
    summary = same.summary()
    assert summary["cos_min"] == 1.0 and summary["cos_tensor"] == 1.0 and summary["rel_l2"] == 0.0
    assert summary["max_abs"] == 0.0 and not summary["nan_mismatch"]


def test_position_cosines_follow_the_same_rule():
    ref = torch.zeros(3, 8)
    ref[1, 0] = 5.0
    tgt = ref.clone()
    tgt[2, 3] = 1.0
    stats, _ = m.position_stats(ref, tgt, torch.zeros(2, dtype=torch.long), k=2)
    assert list(stats["cos"]) == [1.0, pytest.approx(1.0), 0.0]


def test_the_padding_row_a_new_user_met_no_longer_fails_the_cosine_check():
    # Qwen3 with random weights: pad_token_id = <|im_end|>, whose embedding row transformers zeroes;
    # the embeddings are bit-identical in both runs
    acc = m.TensorAccumulator()
    emb = torch.randn(6, 16)
    emb[2] = 0.0
    acc.add(emb, emb.clone())
    row = {"name": "embeddings", "rel_l2": 0.0, "cos_min": acc.summary()["cos_min"], "local_rel_l2": 0.0,
           "local_cos_min": acc.summary()["cos_min"]}
    target = _runner(layers=[row])
    cosine = next(c for c in judge(target, None)["checks"] if c["key"] == "cosine_local")
    assert cosine["status"] == "pass" and cosine["value"] == 1.0


# ---- too little evidence --------------------------------------------------------------------------

def test_the_evidence_minimums_are_derived_not_chosen():
    assert MIN_DECISIVE == 30  # rule of three: 3 / 30 = the 10% flip rate the absolute budget warns at
    assert MIN_GREEDY == greedy_min_prompts() == 4  # on 3 prompts even 3 genuine divergences cannot fail
    assert greedy_status(3, 0, 3)[0] == "unjudged"
    assert greedy_status(4, 0, 4)[0] == "fail"


def test_one_decisive_position_is_not_enough_evidence_and_the_verdict_rests_on_the_rest():
    # the new user's random Qwen3: "1.0000 vs floor 1.0000 (1 of 350 positions)" fell to FAIL on a NaN
    server = _served_summary(350, decisive=1)
    floor = _served_summary(350, decisive=1)
    assert math.isnan(server["same_top1_decisive_err"])
    check = top1_check(server, floor)
    assert check["status"] == "unjudged"
    assert check["value"].startswith("not enough evidence (1 of 30 positions needed)")
    verdict = judge_endpoint(_sections(server, floor))
    assert verdict["status"] == "PASS"
    assert any("not enough evidence" in r for r in verdict["reasons"])


def test_a_fault_on_a_flat_model_is_still_failed_by_the_kl():
    server = _served_summary(350, decisive=1, kl=2e-8)
    floor = _served_summary(350, decisive=1, kl=2e-9)
    assert judge_endpoint(_sections(server, floor))["status"] == "FAIL"


def test_when_no_check_decides_the_verdict_is_warn_and_says_so():
    # nothing came back to judge: no position, two greedy prompts, the rest not run
    sections = {"tokenization": {"status": "done", "checked": 0, "mismatches": []},
                "teacher_forced": {"status": "done", "server": {"positions": 0}, "floor": None,
                                   "nonfinite_positions": 0},
                "perplexity": {"status": "not run", "reason": "-"},
                "greedy": {"status": "done", "rows": [{"id": "a", "divergence": None, "stop": None}] * 2,
                           "floor_genuine": None}}
    verdict = judge_endpoint(sections)
    assert {c["status"] for c in verdict["checks"]} == {"unjudged"}
    assert verdict["status"] == "WARN" and "no check had enough evidence to decide" in verdict["reasons"]


def test_nan_in_the_servers_output_still_fails():
    server = _served_summary(350, decisive=300)
    sections = _sections(server, _served_summary(350, decisive=300))
    sections["teacher_forced"]["nonfinite_positions"] = 3
    assert judge_endpoint(sections)["status"] == "FAIL"


def test_nothing_decided_in_process_is_warn_with_its_reason():
    target = _runner(layers=[], kl=math.nan, ln=math.nan, greedy_rows=1, positions=0, decisive=0)
    verdict = judge(target, None)
    assert verdict["status"] == "WARN"
    assert "no check had enough evidence to decide" in verdict["reasons"]
    decided = [c for c in verdict["checks"] if c["status"] in DECIDED]
    assert {c["key"] for c in decided} <= {"nonfinite", "localized", "stops"}


# ---- the properties -----------------------------------------------------------------------------

finite = st.floats(min_value=0.0, max_value=1e6, allow_nan=False, allow_infinity=False)
rate = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)
count = st.integers(min_value=0, max_value=400)


@given(ratio=finite, allowed=st.floats(min_value=1.0, max_value=10.0))
def test_a_finite_ratio_is_always_decided(ratio, allowed):
    assert graded(ratio, allowed) in DECIDED
    assert band(ratio, allowed, 2 * allowed) in DECIDED


@given(rt=rate, rf=rate, et=st.one_of(st.just(math.nan), rate), ef=st.one_of(st.just(math.nan), rate))
def test_no_finite_rate_is_decided_by_a_nan_error(rt, rf, et, ef):
    status = top1_status(rt, et, rf, ef)
    assert status == top1_status(rt, 0.0 if math.isnan(et) else et, rf, 0.0 if math.isnan(ef) else ef)


@settings(max_examples=200, deadline=None)
@given(n=count, decisive=count, kl=st.one_of(finite, st.just(math.nan)), flips=count, greedy_rows=count)
def test_a_served_verdict_never_decides_a_check_on_a_nan(n, decisive, kl, flips, greedy_rows):
    server = _served_summary(n, decisive=min(decisive, n), kl=kl, flips=min(flips, min(decisive, n)))
    floor = _served_summary(n, decisive=min(decisive, n))
    verdict = judge_endpoint(_sections(server, floor, greedy_rows=greedy_rows))
    assert verdict["status"] in ("PASS", "WARN", "FAIL")
    for check in verdict["checks"]:
        if check["status"] in DECIDED:
            assert not _holds_nan(check), check


@settings(max_examples=200, deadline=None)
@given(n=st.integers(0, 400), decisive=st.integers(0, 400), kl=finite, top1=rate, ln=st.floats(-1, 1),
       greedy_rows=st.integers(0, 40), genuine=st.integers(0, 40))
def test_an_in_process_verdict_never_decides_a_check_on_a_nan(n, decisive, kl, top1, ln, greedy_rows, genuine):
    target = _runner(kl=kl, top1=top1, ln=ln, greedy_rows=greedy_rows, genuine=min(genuine, greedy_rows),
                     positions=n, decisive=min(decisive, n))
    for floor in (None, _runner(positions=n, decisive=min(decisive, n), greedy_rows=greedy_rows, label="f")):
        verdict = judge(target, floor)
        assert verdict["status"] in ("PASS", "WARN", "FAIL")
        for check in verdict["checks"]:
            if check["status"] in DECIDED:
                assert not _holds_nan(check), check


@settings(max_examples=100, deadline=None)
@given(n=st.integers(MIN_DECISIVE, 2000), kl=st.floats(1e-9, 1.0), greedy_rows=st.integers(0, 40))
def test_identical_inputs_always_pass(n, kl, greedy_rows):
    same = _served_summary(n, decisive=n, kl=kl)
    assert top1_check(same, same)["status"] == "pass"
    verdict = judge_endpoint(_sections(same, same, greedy_rows=max(greedy_rows, MIN_GREEDY)))
    assert verdict["status"] == "PASS"
    target = _runner(kl=0.0, top1=1.0, ln=0.0, positions=n, decisive=n, greedy_rows=max(greedy_rows, MIN_GREEDY))
    assert judge(target, None)["status"] == "PASS"
    assert judge(target, _runner(kl=0.0, top1=1.0, ln=0.0, positions=n, decisive=n, label="f",
                                 greedy_rows=max(greedy_rows, MIN_GREEDY)))["status"] == "PASS"


@settings(max_examples=100, deadline=None)
@given(floor_kl=st.floats(1e-9, 1e-2), scale=st.floats(1.0001, 1e4), spread=st.floats(0.0, 0.5))
def test_an_error_scaled_past_its_threshold_always_leaves_pass(floor_kl, scale, spread):
    allowed = 1 + 3 * spread
    server = _served_summary(500, decisive=400, kl=floor_kl * allowed * scale)
    floor = _served_summary(500, decisive=400, kl=floor_kl)
    sections = _sections(server, floor, allowed=allowed)
    assert judge_endpoint(sections)["status"] != "PASS"
    assert same_dtype_checks({"kl_lb_mean": SAME_DTYPE_KL[0] * scale, "same_top1": 1.0,
                              "positions": 500})[0]["status"] != "pass"
    target = _runner(kl=ABSOLUTE_KL[0] * scale)
    assert judge(target, None, exact_expected=True)["status"] != "PASS"
    in_floor = _runner(kl_ratio=allowed * scale, kl_allowed=allowed)
    assert judge(in_floor, _runner(label="f"))["status"] != "PASS"


# ---- plain data ---------------------------------------------------------------------------------

def _holds_nan(check) -> bool:
    values = [check["value"], *check["args"].values()]
    return any(isinstance(v, float) and math.isnan(v) for v in values) or \
        any(isinstance(v, str) and v == "nan" for v in values)


def _served_summary(n, decisive, kl=1e-3, flips=0):
    rows = [{"kl_lb": kl, "ref_margin": 2.0 if i < decisive else 0.1, "same_top1": 0 if i < flips else 1,
             "topk_agree": 1.0, "dlogprob": 0.0} for i in range(n)]
    return summarize(rows) if rows else {"positions": 0}


def _sections(server, floor, greedy_rows=6, allowed=1.2):
    tf = {"status": "done", "server": server, "floor": floor, "nonfinite_positions": 0,
          "spread": {"allowed": allowed}}
    rows = [{"id": str(i), "divergence": None, "stop": None} for i in range(greedy_rows)]
    return {"tokenization": {"status": "done", "checked": 6, "mismatches": []}, "teacher_forced": tf,
            "perplexity": {"status": "done", "ln_ratio": 0.0, "ln_ratio_sem": 1e-3, "floor_ln_ratio": 0.0,
                           "floor_ln_ratio_sem": 1e-3},
            "greedy": {"status": "done", "rows": rows, "floor_genuine": 0}}


def _runner(layers=None, kl=1e-3, top1=1.0, ln=0.0, greedy_rows=8, genuine=0, positions=300, decisive=200,
            kl_ratio=1.0, kl_allowed=1.2, label="t"):
    if layers is None:
        layers = [{"name": f"layer {i}", "rel_l2": 0.01, "cos_min": 0.9999, "local_rel_l2": 0.001,
                   "local_cos_min": 0.9999, "ratio": 1.0, "allowed": 1.2} for i in range(2)]
    rate_, err = m.rate_with_error(round(top1 * decisive), decisive)
    greedy = [{"id": str(i), "divergence": "genuine" if i < genuine else None, "stop": None}
              for i in range(greedy_rows)]
    return {"label": label, "layers": layers, "greedy": greedy, "first_local_excess": None, "first_nonfinite": None,
            "logits": {"kl_mean": kl, "same_top1": top1, "same_top1_err": 0.0, "positions": positions,
                       "decisive_positions": decisive, "same_top1_decisive": rate_, "same_top1_decisive_err": err,
                       "tie_margin": 0.3},
            "perplexity": {"ln_ratio": ln, "ln_ratio_sem": 1e-3},
            "vs_floor": {"kl_ratio": kl_ratio, "kl_allowed": kl_allowed}, "floor": "f"}


def test_the_binomial_tail_holds_for_thousands_of_tokens():
    from llm_adapt.accuracy.verdict import binomial_tail

    assert binomial_tail(2, 1, 0.5) == pytest.approx(0.75) and binomial_tail(3, 3, 0.5) == pytest.approx(0.125)
    assert binomial_tail(1144, 1144, 1 / 1146) == 0.0 or binomial_tail(1144, 1144, 1 / 1146) < 1e-300
    assert binomial_tail(5000, 3, 1 / 5002) == pytest.approx(1 - sum(
        math.comb(5000, i) * (1 / 5002) ** i * (1 - 1 / 5002) ** (5000 - i) for i in range(3)), rel=1e-9)


def test_a_few_decode_positions_carry_their_own_sampling_spread():
    from llm_adapt.accuracy.verdict.endpoint import _greedy_checks, decode_spread

    # measured: a clean tiny Qwen3-MoE served at bf16; one decode token of 61 holds most of the server's mean
    server = {"positions": 61, "kl_lb_mean": 9.42e-4, "kl_lb_sem": 3.99e-4}
    floor = {"positions": 61, "kl_lb_mean": 5.88e-4, "kl_lb_sem": 4.67e-5}
    assert decode_spread(server, floor) == pytest.approx(math.hypot(3.99e-4 / 9.42e-4, 4.67e-5 / 5.88e-4))
    rows = [{"id": str(i), "divergence": None, "stop": None} for i in range(6)]
    greedy = {"rows": rows, "floor_genuine": 0, "decode": {"server": server, "floor": floor}}
    decode = next(c for c in _greedy_checks(greedy, {"relative": 0.133}) if c["key"] == "decode_kl_ratio")
    assert decode["status"] == "pass"  # 1.60x, inside 1 + 3 x the two spreads in quadrature (2.35)
    # a decode-only fault: ten times the floor's KL, its own standard error 20%
    broken = {"positions": 61, "kl_lb_mean": 5.88e-3, "kl_lb_sem": 1.2e-3}
    greedy["decode"]["server"] = broken
    assert next(c for c in _greedy_checks(greedy, {"relative": 0.133})
                if c["key"] == "decode_kl_ratio")["status"] == "fail"
    assert decode_spread({"kl_lb_mean": 0.0, "kl_lb_sem": math.nan}, {"kl_lb_mean": 1e-3, "kl_lb_sem": math.nan}) == 0.0


def test_a_flat_models_tiny_floor_is_a_scale_and_only_an_exact_zero_is_not():
    """Measured on a random Mixtral served in bf16: its floor's decode-side KL was 5.4e-10 and the server's 3.4e-9.
    The ratio was taken as infinite below 1e-9 and FAILed with no value; it is a ratio like any other (6.3x, judged
    against its allowance), and only a floor of exactly 0 falls back to the bound a same-dtype server meets."""
    from llm_adapt.accuracy.verdict.endpoint import _greedy_checks

    def decode_check(server_kl, floor_kl):
        rows = [{"id": str(i), "divergence": None, "stop": None} for i in range(6)]
        decode = {"server": {"positions": 66, "kl_lb_mean": server_kl, "kl_lb_sem": server_kl * 0.05},
                  "floor": {"positions": 66, "kl_lb_mean": floor_kl, "kl_lb_sem": floor_kl * 0.05}}
        greedy = {"rows": rows, "floor_genuine": 0, "decode": decode}
        return next(c for c in _greedy_checks(greedy, {"relative": 0.1}) if c["key"].startswith("decode_kl"))

    tiny = decode_check(3.4e-9, 5.4e-10)
    assert (tiny["key"], tiny["status"], tiny["value"]) == ("decode_kl_ratio", "fail", 6.2963)  # 6.3x, allowed 1.3
    assert decode_check(5.4e-10, 5.4e-10)["status"] == "pass"
    zero_clean, zero_broken = decode_check(3.4e-9, 0.0), decode_check(1e-3, 0.0)
    assert (zero_clean["key"], zero_clean["status"]) == ("decode_kl_zero_floor", "pass")
    assert zero_broken["status"] == "fail" and not _holds_nan(zero_broken)
    server, floor = _served_summary(350, decisive=200, kl=1e-3), _served_summary(350, decisive=200, kl=0.0)
    teacher = next(c for c in judge_endpoint(_sections(server, floor))["checks"] if "zero_floor" in c["key"])
    assert teacher["status"] == "fail" and "exactly zero" in teacher["name"]
