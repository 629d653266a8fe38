"""The fault-signature rules on plain data: each fires on its pattern and stays quiet on clean and
on other patterns; the diagnosis explains only what is out of line."""

import pytest

from llm_adapt.accuracy.diagnosis import (
    CAUSES,
    category_concentration,
    diagnose,
    dtype_range,
    position_onset,
    prefill_vs_decode,
    range_reason,
)
from llm_adapt.accuracy.endpoint_metrics import position_profile

BOUND = 1e-6


def test_decode_only_error_is_the_decode_path():
    sig = prefill_vs_decode(5e-9, 3e-3, BOUND, 400, 60)
    assert sig["signature"] == "decode" and sig["decode_kl"] == 3e-3 and sig["prefill_kl"] == 5e-9


def test_prefill_only_error_is_the_prefill_path():
    assert prefill_vs_decode(2e-2, 4e-9, BOUND, 400, 60)["signature"] == "prefill"


def test_both_out_is_everywhere_and_clean_is_nothing():
    assert prefill_vs_decode(2e-2, 3e-2, BOUND, 400, 60)["signature"] == "both"
    assert prefill_vs_decode(5e-9, 8e-9, BOUND, 400, 60) is None  # clean
    assert prefill_vs_decode(5e-9, 3e-3, BOUND, 400, 3) is None  # too few decode positions to say
    assert prefill_vs_decode(float("nan"), 3e-3, BOUND, 400, 60) is None
    assert prefill_vs_decode(9e-7, 2e-6, BOUND, 400, 60) is None  # decode just past the bound, not 10x prefill


def _rows(spec):
    """spec: [(first position, count, kl)] -> position rows."""
    return [{"position": p, "kl_lb": kl, "same_top1": 1} for start, n, kl in spec for p in range(start, start + n)]


def test_an_error_that_starts_past_a_position_is_placed_there():
    profile = position_profile(_rows([(1, 63, 4e-9), (64, 64, 2e-3), (128, 100, 5e-3)]))
    assert [b["from"] for b in profile] == [0, 16, 32, 64, 128]
    sig = position_onset(profile, BOUND)
    assert sig["signature"] == "positions" and sig["from_position"] == 64 and sig["kl_after_min"] == 2e-3


def test_no_onset_when_clean_when_bad_from_the_start_or_when_it_comes_back():
    assert position_onset(position_profile(_rows([(1, 200, 4e-9)])), BOUND) is None
    assert position_onset(position_profile(_rows([(1, 200, 3e-3)])), BOUND) is None  # everywhere, no onset
    back = position_profile(_rows([(1, 63, 4e-9), (64, 64, 2e-3), (128, 100, 4e-9)]))
    assert position_onset(back, BOUND) is None  # one bad bin among clean ones is not an onset
    thin = position_profile(_rows([(1, 63, 4e-9), (64, 3, 2e-3)]))
    assert position_onset(thin, BOUND) is None  # three positions past it say nothing


def _cats(**genuine):
    return {c: {"prompts": 3, "genuine": g} for c, g in genuine.items()}


def test_divergences_in_one_category_only():
    sig = category_concentration(_cats(multi_turn=2, knowledge=0, reasoning=0))
    assert sig["category"] == "multi_turn" and sig["clean_categories"] == ["knowledge", "reasoning"]
    assert category_concentration(_cats(multi_turn=2, knowledge=1, reasoning=0)) is None  # spread out
    assert category_concentration(_cats(multi_turn=1, knowledge=0, reasoning=0)) is None  # one is chance
    assert category_concentration(_cats(multi_turn=0, knowledge=0, reasoning=0)) is None
    assert category_concentration(_cats(multi_turn=3, knowledge=0)) is None  # too few categories to compare


def _sections(tf_kl, dec_kl, profile_rows=None, by_category=None):
    return {"teacher_forced": {"status": "done", "server": {"kl_lb_mean": tf_kl, "positions": 400},
                               "by_position": position_profile(profile_rows or _rows([(1, 200, tf_kl)]))},
            "greedy": {"status": "done", "decode": {"server": {"kl_lb_mean": dec_kl, "positions": 60}},
                       "by_category": by_category or _cats(a=0, b=0, c=0)}}


def test_diagnose_names_a_cause_with_its_figures_and_next_command():
    out = diagnose(_sections(5e-9, 3e-3), {"status": "FAIL"}, BOUND)
    (cand,) = out["candidates"]
    assert not out["unknown"] and cand["signature"] == "decode"
    assert cand["cause"] == CAUSES["decode"][0] and cand["next"].startswith("llm-adapt ")
    assert cand["decode_kl"] == 3e-3


def test_diagnose_prefers_an_onset_to_everywhere():
    rows = _rows([(1, 63, 4e-9), (64, 136, 5e-3)])
    out = diagnose(_sections(2e-3, 4e-3, rows), {"status": "FAIL"}, BOUND)
    assert [c["signature"] for c in out["candidates"]] == ["positions"]


def test_diagnose_says_unknown_without_a_signature_and_nothing_for_a_pass():
    out = diagnose(_sections(5e-9, 6e-9, by_category=_cats(a=1, b=1, c=0)), {"status": "FAIL"}, BOUND)
    assert out["unknown"] and out["candidates"] == []
    assert diagnose(_sections(5e-9, 3e-3), {"status": "PASS"}, BOUND) is None


@pytest.mark.parametrize("status", ["WARN", "FAIL"])
def test_diagnose_runs_for_warn_and_fail(status):
    assert diagnose(_sections(5e-9, 3e-3), {"status": status}, BOUND)["candidates"]


def _peaks(*values):
    return [{"name": "embeddings", "max_abs": 0.5}] + [{"name": f"layer {i}", "max_abs": v} for i, v in enumerate(values)]


def test_activations_at_fp16s_range_are_named_with_the_first_tensor_there():
    found = dtype_range(_peaks(40.0, 41000.0, 90000.0), "fp16")
    assert found["tensor"] == "layer 1" and found["limit"] == 65504.0 and found["share"] == pytest.approx(41000 / 65504)
    assert "layer 1 reaches 4.1e+04, 63% of fp16's largest finite value (65504)" in range_reason(found)


def test_the_range_stays_quiet_below_half_of_it_and_in_bf16_and_fp32():
    assert dtype_range(_peaks(40.0, 30000.0), "fp16") is None  # under half of 65,504
    assert dtype_range(_peaks(40.0, 90000.0), "bf16") is None and dtype_range(_peaks(1e30), "fp32") is None
    assert dtype_range(_peaks(float("nan"), 10.0), "fp16") is None  # a gold that is not finite says nothing
    assert dtype_range(_peaks(90000.0), "int4") is None  # not a dtype it knows


def test_diagnose_names_the_range_of_an_fp16_server_and_not_of_a_bf16_one():
    out = diagnose(_sections(5e-9, 6e-9), {"status": "FAIL"}, BOUND, peaks=_peaks(70000.0), dtype="fp16")
    assert [c["signature"] for c in out["candidates"]] == ["range"] and out["candidates"][0]["tensor"] == "layer 0"
    assert out["candidates"][0]["next"] == CAUSES["range"][1]
    assert diagnose(_sections(5e-9, 6e-9), {"status": "FAIL"}, BOUND, peaks=_peaks(70000.0), dtype="bf16")["unknown"]
    assert diagnose(_sections(5e-9, 6e-9), {"status": "PASS"}, BOUND, peaks=_peaks(70000.0), dtype="fp16") is None


def _mode(status, kl, decode_kl=None):
    return {"status": status, "reasons": [], "kl": kl, "decode_kl": decode_kl}


def test_graph_mode_is_named_when_only_the_graph_engine_is_out_of_line():
    from llm_adapt.accuracy.diagnosis import graph_cause

    found = graph_cause(_mode("FAIL", 0.012, 0.013), _mode("PASS", 2e-6, 3e-6))
    assert found["signature"] == "graph" and found["kl_ratio"] == pytest.approx(6000)
    assert found["graph"]["status"] == "FAIL" and "--enforce-eager" in found["cause"] and found["next"]
    # a WARN is enough when its KL stands far above the eager engine's
    assert graph_cause(_mode("WARN", 4e-5), _mode("PASS", 1e-5))["signature"] == "graph"


def test_graph_mode_is_not_named_without_a_clean_eager_engine_or_an_out_of_line_graph():
    from llm_adapt.accuracy.diagnosis import graph_vs_eager

    assert graph_vs_eager(_mode("FAIL", 0.01), _mode("FAIL", 0.01)) is None  # both paths: the layers place it
    assert graph_vs_eager(_mode("FAIL", 0.01), _mode("WARN", 0.001)) is None
    assert graph_vs_eager(_mode("PASS", 1e-6), _mode("PASS", 1e-6)) is None  # clean
    assert graph_vs_eager(_mode("FAIL", 0.01), None) is None  # no eager engine ran
    assert graph_vs_eager(_mode("FAIL", 0.01), _mode(None, None)) is None
    assert graph_vs_eager(_mode("WARN", 2e-5), _mode("PASS", 1e-5)) is None  # a WARN close to the eager KL: chance
    assert graph_vs_eager(_mode("WARN", None), _mode("PASS", 1e-5)) is None  # a WARN without figures names nothing


def test_mode_figures_reads_the_served_kl_of_each_section():
    from llm_adapt.accuracy.diagnosis import mode_figures

    sections = {"teacher_forced": {"status": "done", "server": {"kl_lb_mean": 0.02}},
                "greedy": {"status": "done", "decode": {"server": {"kl_lb_mean": 0.03}}}}
    assert mode_figures({"status": "FAIL", "reasons": ["a", "b", "c", "d"]}, sections) == {
        "status": "FAIL", "reasons": ["a", "b", "c"], "kl": 0.02, "decode_kl": 0.03}
    sections["greedy"] = {"status": "not run", "reason": "server gone"}
    assert mode_figures({"status": "WARN"}, sections)["decode_kl"] is None
    assert mode_figures(None, None) == {"status": None, "reasons": [], "kl": None, "decode_kl": None}
