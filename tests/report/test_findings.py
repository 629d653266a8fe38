"""The report's judgement and sentences on plain dicts: verdict, recommendation, notes, page header."""

import json

import pytest

from llm_adapt.run_status import RunStatus
from tests.records import record, run_data, screen_of
from llm_adapt.judged.verdict import overall_verdict
from llm_adapt.report.findings import findings, notes, recommendation
from llm_adapt.report.first_screen import deciding_checks, key_figures
from llm_adapt.report.page import collapse_long_tables, header_html, section_ids

PLAN = {"commands": {"eager": "vllm serve m --enforce-eager", "graph": "vllm serve m"}, "warnings": []}


def run_with(**parts):
    return run_data(**parts)


def endpoint(status):
    return {"verdict": {"status": status, "checks": [{"name": "top-k KL / noise floor", "value": 0.9, "status": "pass"}],
                        "reasons": []},
            "sections": {"teacher_forced": {"status": "not run"}, "greedy": {"status": "not run"},
                         "tokenization": {"status": "not run"}, "perplexity": {"status": "not run"}}}


def test_only_the_started_mode_is_recommended_as_verified():
    run = run_with(inspect={"plan": PLAN}, serve={"engine": "vllm", "mode": "eager"}, endpoint_accuracy=endpoint("PASS"))
    rec = recommendation(run)
    assert rec["verified"] == {"mode": "eager", "command": PLAN["commands"]["eager"]}
    assert [u["label"] for u in rec["unverified"]] == ["graph"]


def test_nothing_is_verified_without_a_judged_vllm_server():
    for serve in ({"engine": "transformers", "mode": "eager"}, {"engine": "vllm", "mode": "eager", "dummy_weights": True}, None):
        run = run_with(inspect={"plan": PLAN}, serve=serve, endpoint_accuracy=endpoint("PASS"))
        rec = recommendation(run)
        assert rec["verified"] is None and len(rec["unverified"]) == 2


def test_a_tune_recommendation_without_an_accuracy_check_says_so():
    run = run_with(inspect={"plan": PLAN}, tune={"recommendation": {"significant": True, "command": "x"}})
    assert recommendation(run)["unverified"][0]["label"] == "tune: faster, accuracy not checked"


def test_overall_verdict_fails_on_a_failed_endpoint_and_warns_on_missing_stages():
    assert overall_verdict(run_with(endpoint_accuracy=endpoint("FAIL")))["status"] == "FAIL"
    status = {"stages": {"bench": {"status": "failed", "reason": "x"}}}
    assert overall_verdict(run_with(endpoint_accuracy=endpoint("PASS"), status=status))["status"] == "WARN"
    assert overall_verdict(run_with(endpoint_accuracy=endpoint("PASS")))["status"] == "PASS"


def test_an_unreadable_result_file_keeps_the_verdict_from_pass_and_is_named():
    unreadable = run_data(endpoint_accuracy=endpoint("PASS"),
                          unreadable={"accuracy": "accuracy.json: schema version 99 is not 2; rerun the stage"})
    verdict = overall_verdict(unreadable)
    assert verdict["status"] == "WARN"
    assert [r.key for r in verdict["reasons"]] == ["result_unreadable"]
    assert str(verdict["reasons"][0]) == "accuracy: result file unreadable, not judged (see the notes)"
    assert overall_verdict(run_with(endpoint_accuracy=endpoint("PASS")))["status"] == "PASS"


def test_an_unreadable_result_does_not_soften_a_failure():
    unreadable = run_data(endpoint_accuracy=endpoint("FAIL"), unreadable={"probes": "x"})
    assert overall_verdict(unreadable)["status"] == "FAIL"


def test_notes_follow_the_report_language():
    run = run_with(status={"stages": {"bench": {"status": "failed", "reason": "boom"}}}, inspect={"plan": {"warnings": ["w"]}})
    assert notes(run, "en") == ["Stage bench failed: boom.", "Plan: w."]
    assert notes(run, "zh") == ["bench 阶段失败：boom。", "部署计划：w。"]


def test_a_warning_the_plan_and_the_server_both_make_is_said_once():
    from llm_adapt.messages import loaded, reason, stored

    said_as = [reason("remote_code_set"), reason("open_host", host="0.0.0.0"), "other"]
    plan = loaded(json.loads(json.dumps(stored({"warnings": said_as}))))  # as inspect.json keeps it
    served = {"host": "0.0.0.0", "argv": ["vllm", "serve", "m", "--trust-remote-code"]}
    said = notes(run_with(inspect={"plan": plan}, serve=served), "en")
    assert sum("trust-remote-code" in n for n in said) == 1 and sum("0.0.0.0" in n for n in said) == 1
    assert "Plan: other." in said
    planned_only = notes(run_with(inspect={"plan": plan}), "en")  # no server ran: the plan says it
    assert sum("trust-remote-code" in n for n in planned_only) == 1 and sum("0.0.0.0" in n for n in planned_only) == 1
    zh = notes(run_with(inspect={"plan": plan}, serve=served), "zh")  # known by key, not by its English words
    assert sum("trust-remote-code" in n for n in zh) == 1


def target(dtype="bf16", floor=None, excess=None, status="PASS"):
    return {"label": f"cpu:{dtype}", "dtype": dtype, "floor": floor, "quant": None, "first_local_excess": excess,
            "layers": [{"rel_l2": 0.02}], "logits": {"kl_mean": 2e-3}, "greedy": [],
            "verdict": {"status": status, "checks": [{"name": "mean KL / noise floor", "key": "kl_ratio", "value": 1,
                                                      "status": status.lower()}]}}


def test_the_no_excess_sentence_names_its_basis():
    text = " ".join(findings(run_with(accuracy={"targets": [target()]})))
    assert "4 x bf16 unit roundoff" in text and "noise floor" not in text
    text = " ".join(findings(run_with(accuracy={"targets": [target(floor="cpu:bf16")]})))
    assert "its noise floor" in text


def test_stop_divergences_become_a_finding():
    t = target(status="WARN")
    t["greedy"] = [{"stop": "early", "divergence": "genuine"}, {"stop": None, "divergence": None}]
    assert any("end early in 1" in f for f in findings(run_with(accuracy={"targets": [t]})))


def test_page_header_lists_failures_first_and_links_cards():
    run = run_with(accuracy={"targets": [target(status="WARN")]}, endpoint_accuracy={
        **endpoint("FAIL"), "verdict": {"status": "FAIL", "reasons": ["x"], "checks": [
            {"name": "top-k KL / noise floor", "key": "served_kl_ratio", "value": 19.8, "status": "fail"}]}})
    checks = deciding_checks(run)
    assert [c.status for c in checks][:2] == ["FAIL", "WARN"]
    cards = key_figures(run)
    assert cards[0].status == "FAIL" and "19.80x" in cards[0].value and "endpoint accuracy" in cards[0].source
    page = header_html(screen_of(run), "en", {9: "9-accuracy"})
    assert 'class="banner fail"' in page and 'href="#9-accuracy"' in page


def test_section_ids_and_folded_tables():
    tokens = [{"level": 1, "name": "Title", "id": "t", "children": [{"level": 2, "name": "8. Accuracy", "id": "8-acc", "children": []}]}]
    assert section_ids(tokens) == {8: "8-acc"}
    table = "<table><tr><th>a</th></tr>" + "<tr><td>1</td></tr>" * 20 + "</table>"
    assert collapse_long_tables(table, "en").startswith("<details><summary>20 rows")
    short = "<table><tr><th>a</th></tr><tr><td>1</td></tr></table>"
    assert collapse_long_tables(short, "en") == short


def test_a_client_server_disagreement_becomes_a_note():
    run = run_data(bench={"serve": {"runs": [{"label": "serve", "metrics": {}, "server_metrics": {"comparison": [
        {"metric": "ttft", "client_mean_ms": 90.0, "server_mean_ms": 40.0, "agree": False},
        {"metric": "itl", "client_mean_ms": 20.0, "server_mean_ms": 20.0, "agree": True}]}}]}})
    text = notes(run)
    assert len(text) == 1 and "disagree on mean TTFT" in text[0]


def test_decode_roofline_by_hand():
    from llm_adapt.bench.hardware import decode_roofline

    r = decode_roofline(weight_bytes=1_000_000_000, kv_bytes_per_token=1000, context_tokens=1000, tpot_ms=100.0,
                        bandwidth_gb_s=20.0)
    assert r.bytes_per_token == 1_001_000_000
    assert r.floor_ms == pytest.approx(50.05) and r.share_of_bandwidth_limit == pytest.approx(0.5005)


def test_task_accuracy_enters_the_overall_verdict_and_an_offline_skip_does_not():
    failed = {"verdict": {"status": "FAIL", "reasons": ["builtin-mc: significant drop"]}}
    assert overall_verdict(run_with(endpoint_accuracy=endpoint("PASS"), eval=failed))["status"] == "FAIL"
    skipped = {"verdict": {"status": "SKIP", "reasons": [], "skipped": ["gsm8k: not cached"]}}
    assert overall_verdict(run_with(endpoint_accuracy=endpoint("PASS"), eval=skipped))["status"] == "PASS"


def test_a_run_that_judged_no_accuracy_is_never_a_pass_and_a_misbehaving_probe_warns():
    probes = {"rows": [{"name": "chat completion", "status": "supported"}, {"name": "streaming", "status": "supported"},
                       {"name": "concurrent requests", "status": "error"}]}
    verdict = overall_verdict(run_with(probes=probes))
    assert verdict["status"] == "WARN"
    assert "probes that found the server misbehaving: concurrent requests" in verdict["reasons"]
    assert "no accuracy was judged in this run" in verdict["reasons"]


def test_metrics_that_were_not_measured_do_not_break_the_report():
    run = run_data(bench={"throughput": {"runs": [{"label": "throughput", "sent": 4, "metrics": {
        "output_throughput": 10.0, "median_ttft_ms": None, "median_tpot_ms": None}}]}})
    labels = [c.label for c in key_figures(run)]
    assert labels == ["output throughput at concurrency 4"]
    assert not any("TTFT" in f for f in findings(run))


def test_a_server_that_answers_wrongly_is_false_ready():
    from llm_adapt.accuracy.result import EndpointAccuracyResult
    from llm_adapt.probes.run import ProbesResult
    from llm_adapt.judged.verdict import false_ready, overall_verdict

    probes = {"rows": [{"name": "chat completion", "status": "supported", "evidence": "answer: 'gibberish'"},
                       {"name": "streaming", "status": "supported", "evidence": ""}]}
    wrong = {"verdict": {"status": "FAIL", "reasons": ["top-k KL / noise floor: 31.2"]}}
    right = {"verdict": {"status": "PASS", "reasons": []}}
    judged = {name: record(EndpointAccuracyResult, **ep) for name, ep in (("wrong", wrong), ("right", right))}
    answered = record(ProbesResult, **probes)
    assert false_ready(answered, judged["wrong"])["false_ready"] is True
    assert false_ready(answered, judged["right"])["false_ready"] is False
    silent = record(ProbesResult, rows=[{"name": "chat completion", "status": "error", "evidence": "500"}])
    assert false_ready(silent, judged["wrong"])["false_ready"] is False  # it does not answer: a plain failure
    assert false_ready(answered, judged["wrong"], dummy=True) is None and false_ready(None, judged["wrong"]) is None
    verdict = overall_verdict(run_with(probes=probes, endpoint_accuracy=wrong))
    assert verdict["status"] == "FAIL" and verdict["false_ready"] and verdict["reasons"][0].startswith("false-ready")
    assert not any(r.startswith("served model vs gold") for r in verdict["reasons"])  # false-ready's words say it
    assert any(j.key == "served_verdict" for j in verdict["judged"])  # still judged
    clean = overall_verdict(run_with(probes=probes, endpoint_accuracy=right))
    assert not clean["false_ready"] and not any("false-ready" in r for r in clean["reasons"])


def test_the_stages_an_engine_that_did_not_start_blocked_are_known_by_their_reason_key_in_any_language():
    from llm_adapt.messages import loaded, reason

    blocked = {"status": "not run", "reason": reason("no_endpoint", serve="failed")}
    stages = {"serve": {"status": "failed", "reason": "vllm exited"}, "probes": blocked, "bench": blocked,
              "eval": {"status": "not run", "reason": loaded({"text": "no endpoint: in words", "key": "stopped",
                                                               "args": {"error": "x"}})}}  # another key: its own line
    for lang in ("en", "zh"):
        said = notes(run_with(status={"stages": stages}), lang)
        assert "probes, bench" in said[0] and "eval" not in said[0], said
        assert sum("eval" in n for n in said) == 1


def test_an_interrupted_run_is_not_judged_whatever_finished():
    """status.json's stopped_by (or, written before it existed, a stage marked interrupted) makes the verdict
    INTERRUPTED, shown "interrupted: not judged", even beside a failed or a passed endpoint."""
    from llm_adapt.judged.verdict import interrupted_by
    from llm_adapt.report.first_screen import verdict_shown

    for stopped_by, shown in (("SIGINT", "Ctrl-C"), ("SIGTERM", "SIGTERM")):
        for served in ("PASS", "FAIL"):
            verdict = overall_verdict(run_with(endpoint_accuracy=endpoint(served),
                                               status={"stopped_by": stopped_by, "stages": {}}))
            assert verdict["status"] == "INTERRUPTED" and verdict["judged"] == [] and not verdict["false_ready"]
            assert f"interrupted ({shown})" in str(verdict["reasons"][0])
    older = record(RunStatus, stages={"bench": {"status": "interrupted"}, "report": {"status": "done"}})
    assert interrupted_by(older) == "Ctrl-C"
    assert interrupted_by(record(RunStatus, stages={"bench": {"status": "failed"}})) is None
    assert verdict_shown("INTERRUPTED") == "interrupted: not judged" and verdict_shown("INTERRUPTED", "zh") == "已中断：未评判"
    assert verdict_shown("PASS", "zh") == "PASS"
    screen = screen_of(run_with(status={"stopped_by": "SIGINT", "stages": {}}), "en")
    assert screen.status == "INTERRUPTED" and screen.shown == "interrupted: not judged"
    assert 'class="banner interrupted"' in header_html(screen, "en", {}) and "interrupted: not judged</span>" in header_html(
        screen, "en", {})


def test_a_clean_setting_beside_an_out_of_line_baseline_is_said_in_the_verdict():
    """The run's own setting FAILs and graph mode is clean: the run stays FAIL, and its reasons say which
    setting was clean and where the fault lies; with every setting out of line the sentence is said too."""
    from llm_adapt.accuracy.setting_cause import SettingsResult, setting_cause
    from llm_adapt.judged.verdict import settings_parts

    def settings(*statuses):
        rows = [{"label": label, "features": features, "status": status}
                for (label, features), status in zip((("eager", []), ("graph", ["graph"])), statuses)]
        return SettingsResult(rows=rows, cause=setting_cause(rows))

    cured = settings_parts(settings("FAIL", "PASS"))
    assert [status for status, _ in cured] == ["FAIL"] and "clean only with graph mode" in str(cured[0][1])
    assert [status for status, _ in settings_parts(settings("PASS", "PASS"))] == ["PASS"]  # clean: not a reason
    assert [status for status, _ in settings_parts(settings("FAIL", "FAIL"))] == ["FAIL"]


def test_a_server_answering_as_another_model_is_named_as_the_likely_cause_not_false_ready():
    """The served id differs from the gold's: said first, before the other reasons, on the first screen too; a
    wrong answer of that server is not called false-ready (another model answers, not this one served wrongly).
    The same id as the gold's, or one the same checkpoint is served under by path, says nothing."""
    probes = {"rows": [{"name": "chat completion", "status": "supported", "evidence": "answer"},
                       {"name": "streaming", "status": "supported", "evidence": ""}]}
    wrong = {**endpoint("FAIL"), "model": "Qwen2.5-0.5B-Instruct", "gold_model": "SmolLM2-135M-Instruct"}
    verdict = overall_verdict(run_with(probes=probes, endpoint_accuracy=wrong))
    assert verdict["status"] == "FAIL" and not verdict["false_ready"]
    assert "answers as 'Qwen2.5-0.5B-Instruct', not the gold's 'SmolLM2-135M-Instruct'" in verdict["reasons"][0]
    screen = screen_of(run_with(probes=probes, endpoint_accuracy=wrong))
    assert any("answers as 'Qwen2.5-0.5B-Instruct'" in c for c in screen.cautions)
    same = dict(wrong, model="/models/SmolLM2-135M-Instruct")
    verdict = overall_verdict(run_with(probes=probes, endpoint_accuracy=same))
    assert verdict["false_ready"] and verdict["reasons"][0].startswith("false-ready")
    assert not screen_of(run_with(probes=probes, endpoint_accuracy=same)).cautions
    renamed_pass = {**endpoint("PASS"), "model": "Qwen2.5-0.5B-Instruct", "gold_model": "SmolLM2-135M-Instruct"}
    assert not any("answers as" in r for r in overall_verdict(run_with(probes=probes, endpoint_accuracy=renamed_pass))["reasons"])


def test_a_base_model_is_named_as_judged_through_completions():
    from llm_adapt.messages import reason

    rows = [{"name": "chat completion", "status": "not applicable", "evidence": reason("pe_no_chat_template")},
            {"name": "completions", "status": "supported", "evidence": ""},
            {"name": "streaming", "status": "supported", "evidence": ""}]
    screen = screen_of(run_with(probes={"rows": rows}, endpoint_accuracy=endpoint("PASS")))
    assert any(v.startswith("base model (no chat template): judged through the completions API") for v in screen.verified)
    chat = screen_of(run_with(probes={"rows": [dict(rows[0], status="supported", evidence="")] + rows[1:]},
                                 endpoint_accuracy=endpoint("PASS")))
    assert not any(v.startswith("base model") for v in chat.verified)


def test_a_head_the_engine_never_reads_is_the_likely_cause_of_a_served_failure_and_only_then():
    """Cohere's class always reads the embeddings as its head: an untied checkpoint served FAIL is named at its
    head, first among the reasons, in both languages; a clean served model with the same caveat is not."""
    import json as _json

    from llm_adapt.inspect.operators import caveat_dicts
    from llm_adapt.inspect.inventory import ModelFacts
    from llm_adapt.messages import message

    facts = ModelFacts(**{**{f: None for f in ModelFacts.__dataclass_fields__}, "norm": "layernorm", "activation": "silu",
                          "embed_scale": None, "attention": "GQA", "head_dim": 32, "num_kv_heads": 2, "tied": False,
                          "architecture": "CohereForCausalLM", "evidence": {}})
    from llm_adapt.messages import loaded, stored

    caveats = loaded(_json.loads(_json.dumps(stored(caveat_dicts(facts, "cpu", set())))))  # as inspect.json keeps them
    assert [c["id"] for c in caveats if "head" in c["id"]] == ["untied-head-ignored"]
    failed = overall_verdict(run_with(inspect={"caveats": caveats}, endpoint_accuracy=endpoint("FAIL")))
    first = failed["reasons"][0]
    assert first.key == "head_not_read" and "never reads lm_head" in message(first, "en")
    assert "从不读取 lm_head" in message(first, "zh")
    clean = overall_verdict(run_with(inspect={"caveats": caveats}, endpoint_accuracy=endpoint("PASS")))
    assert all(r.key != "head_not_read" for r in clean["reasons"])
    tied = overall_verdict(run_with(inspect={"caveats": []}, endpoint_accuracy=endpoint("FAIL")))
    assert all(r.key != "head_not_read" for r in tied["reasons"])
