"""Which setting moved accuracy (accuracy/setting_cause.py), on plain rows: the cases it must name, the clean
ones it must call clean, and the ones it must not pin on any setting.

The rule was written for the three classes the fault injector plants (a reduction twice at TP>1, a fault
in the compiled graph, a routing fault); held out when it was written, and added here after: two faults
at once in different settings (no one feature), a fault only where TP and graph meet (the combination),
and a baseline out of line (never blamed on a setting)."""

from llm_adapt.accuracy.setting_cause import setting_cause
from llm_adapt.messages import message, reason

EAGER, GRAPH, TP2, EP2 = ("eager", []), ("graph", ["graph"]), ("TP=2", ["tp"]), ("EP=2", ["ep", "tp"])
TP2_GRAPH = ("TP=2 + graph", ["graph", "tp"])


def rows(*settings, **extra):
    """(setting, status) pairs into rows; extra: label -> fields to add."""
    return [{"label": s[0], "features": s[1], "status": status, **extra.get(s[0], {})} for s, status in settings]


def test_fail_only_at_tp2_names_tensor_parallel_and_where():
    where = reason("sc_located_MLP", layer="layer 1", rel="100%", ratio="177")
    found = setting_cause(rows((EAGER, "PASS"), (GRAPH, "PASS"), (TP2, "FAIL"), **{"TP=2": {"located": where}}))
    assert (found["status"], found["feature"], found["cause"]) == ("moved", "tp", "tensor parallel")
    text = str(found["summary"])
    assert text.startswith("clean in eager, graph; FAIL only at TP=2: layer 1's MLP output, off by 100% of its size "
                           "(177x its noise floor)")
    assert "tensor parallel" in text and "张量并行" in str(message(found["summary"], "zh"))


def test_tp_fault_seen_at_ep_too_is_still_tensor_parallel():
    """EP=N runs at TP=N: a reduction fault shows in both, and TP is what they share."""
    found = setting_cause(rows((EAGER, "PASS"), (TP2, "FAIL"), (EP2, "FAIL")))
    assert found["cause"] == "tensor parallel" and found["out_of_line"] == ["TP=2", "EP=2"]


def test_fail_only_with_ep_names_expert_parallel():
    found = setting_cause(rows((EAGER, "PASS"), (TP2, "PASS"), (EP2, "FAIL")))
    assert (found["feature"], found["cause"]) == ("ep", "expert parallel")


def test_graph_only_names_graph_mode():
    found = setting_cause(rows((EAGER, "PASS"), (GRAPH, "FAIL"), (TP2, "PASS")))
    assert found["cause"] == "graph mode" and "graph mode" in str(found["summary"])


def test_router_flips_in_the_failing_setting_name_expert_routing():
    found = setting_cause(rows((EAGER, "PASS"), (TP2, "FAIL"), **{"TP=2": {"routing": "wrong"}}))
    assert (found["feature"], found["cause"]) == ("tp", "expert routing")
    clean_router = setting_cause(rows((EAGER, "PASS"), (TP2, "FAIL"), **{"TP=2": {"routing": "clean"}}))
    assert clean_router["cause"] == "tensor parallel"


def test_clean_everywhere_is_clean():
    found = setting_cause(rows((EAGER, "PASS"), (GRAPH, "PASS"), (TP2, "PASS")))
    assert found["status"] == "clean" and found["cause"] is None and "eager, graph, TP=2" in str(found["summary"])


def test_a_warn_is_out_of_line_too():
    found = setting_cause(rows((EAGER, "PASS"), (TP2, "WARN")))
    assert found["status"] == "moved" and "WARN only at TP=2" in str(found["summary"])


def test_baseline_out_of_line_blames_no_setting():  # held out
    found = setting_cause(rows((EAGER, "FAIL"), (TP2, "FAIL"), (GRAPH, "FAIL")))
    assert (found["status"], found["cause"]) == ("everywhere", None)
    mixed = setting_cause(rows((EAGER, "FAIL"), (TP2, "PASS")))
    assert (mixed["status"], mixed["cause"]) == ("unknown", None)


def test_two_faults_in_two_settings_name_no_one_setting():  # held out
    found = setting_cause(rows((EAGER, "PASS"), (GRAPH, "FAIL"), (TP2, "FAIL")))
    assert (found["status"], found["cause"]) == ("ambiguous", None)


def test_only_where_tp_and_graph_meet_is_the_combination():  # held out
    found = setting_cause(rows((EAGER, "PASS"), (GRAPH, "PASS"), (TP2, "PASS"), (TP2_GRAPH, "FAIL")))
    assert (found["feature"], found["cause"]) == ("graph+tp", "combination")
    assert "graph mode + tensor parallel together" in str(found["summary"])
    alone = setting_cause(rows((EAGER, "PASS"), (TP2_GRAPH, "FAIL")))  # never served apart: not separated
    assert alone["status"] == "ambiguous"


def test_a_setting_the_engine_refused_is_never_judged():
    found = setting_cause(rows((EAGER, "PASS"), (TP2, "PASS"), (EP2, None)))
    assert found["status"] == "clean" and found["not_run"] == ["EP=2"]
    nothing = setting_cause(rows((EAGER, "PASS"), (EP2, None)))
    assert nothing["status"] == "not judged" and "EP=2" in str(nothing["summary"])
