"""Messages as keys (stage reasons, plan warnings, evidence): a Reason in memory, {text, key, args} in every
JSON result, the report's language in the report."""

import json
from dataclasses import asdict

from llm_adapt.messages import (REASONS, Reason, from_schema_1, loaded, message, messages, reason, stored)


def test_a_keyed_reason_reads_as_its_english_sentence_and_keeps_its_key():
    r = reason("nothing_to_localize", verdict="PASS")
    assert isinstance(r, Reason) and r == "endpoint accuracy PASS: nothing to localize (--layers captures anyway)"
    entry = stored({"status": "skipped", "reason": r})
    assert entry["reason"] == {"text": str(r), "key": "nothing_to_localize", "args": {"verdict": "PASS"}}
    back = loaded(json.loads(json.dumps(entry)))  # plain JSON in status.json, a Reason again when read
    assert isinstance(back["reason"], Reason) and back["reason"].key == "nothing_to_localize"
    assert message(back["reason"], "en") == str(r)
    assert message(back["reason"], "zh") == "端点精度为 PASS：无需定位（--layers 仍会捕获）"


def test_nested_reasons_are_stored_in_the_same_shape_and_render_in_the_same_language():
    entry = stored(reason("no_escalation", blocked=reason("layers_engine")))
    assert entry["text"].startswith("no escalation: the layers stage needs the vLLM engine")
    assert entry["args"]["blocked"]["key"] == "layers_engine" and set(entry["args"]["blocked"]) == {"text", "key", "args"}
    zh = message(loaded(json.loads(json.dumps(entry))), "zh")
    assert zh.startswith("未升级：逐层阶段需要本次运行自行启动的 vLLM 引擎") and "needs" not in zh


def test_a_list_of_reasons_as_an_argument_joins_in_the_reports_language():
    r = reason("es_none_fits", reasons=[reason("es_too_long", tokens=9, served_len=8),
                                        reason("es_too_long", tokens=10, served_len=8)])
    back = loaded(json.loads(json.dumps(stored(r))))
    assert message(back, "en") == str(r) and "; " in str(r)
    zh = message(back, "zh")
    assert "；" in zh and "; " not in zh


def test_a_reason_without_a_key_or_with_a_stranger_key_is_shown_as_written():
    assert message("vllm exited with code 1 during start-up", "zh") == "vllm exited with code 1 during start-up"
    stranger = loaded({"text": "old words", "key": "from-a-later-version", "args": {}})
    assert message(stranger, "zh") == "old words"
    wrong_args = loaded({"text": "old words", "key": "no_endpoint", "args": {}})  # another version's arguments
    assert message(wrong_args, "zh") == "old words"
    assert stored("plain text") == "plain text" and message(None, "en") is None
    assert messages(["a", reason("ctrl_c")], "zh") == ["a", REASONS["ctrl_c"]["zh"]]


def test_a_dict_that_only_looks_like_a_message_is_left_alone():
    assert loaded({"text": 3, "key": "k", "args": {}}) == {"text": 3, "key": "k", "args": {}}
    assert loaded({"text": "t", "key": "k"}) == {"text": "t", "key": "k"}


def test_a_schema_1_result_is_read_with_its_messages_as_reasons():
    old = {"stages": {"layers": {"status": "skipped", "reason": "endpoint accuracy PASS: nothing to localize",
                                 "reason_key": "nothing_to_localize", "reason_args": {"verdict": "PASS"}},
                      "serve": {"status": "failed", "reason": "vllm exited"},
                      "eval": {"status": "skipped", "reason": "x", "reason_key": "no_escalation",
                               "reason_args": {"blocked": {"reason": "y", "reason_key": "layers_engine",
                                                           "reason_args": {}}}}},
           "plan": {"warnings": ["w0", "w1"], "warning_keys": [{"key": "open_host", "args": {}}, None]},
           "rows": [{"evidence": "e", "evidence_key": {"key": "pe_stopped_during", "args": {"name": "chat"}}},
                    {"evidence": "plain", "evidence_key": None}],
           "capacity": {"reasons": ["r"], "reason_keys": [{"key": "cap_model_short", "args": {"mpe": 8, "length": 9}}]}}
    new = from_schema_1(old)
    layers = new["stages"]["layers"]
    assert set(layers) == {"status", "reason"} and layers["reason"].key == "nothing_to_localize"
    assert layers["reason"] == old["stages"]["layers"]["reason"]  # its English as it was written
    assert new["stages"]["serve"]["reason"] == "vllm exited" and not isinstance(new["stages"]["serve"]["reason"], Reason)
    assert message(new["stages"]["eval"]["reason"], "zh").startswith("未升级：逐层阶段需要")
    assert [getattr(w, "key", None) for w in new["plan"]["warnings"]] == ["open_host", None]
    assert "warning_keys" not in new["plan"] and "reason_keys" not in new["capacity"]
    assert new["rows"][0]["evidence"].key == "pe_stopped_during" and new["rows"][1] == {"evidence": "plain"}
    assert new["capacity"]["reasons"][0].args == {"mpe": 8, "length": 9}


def test_every_reason_has_both_languages_with_the_same_arguments():
    import string

    for key, texts in REASONS.items():
        fields = [{f for _, f, _, _ in string.Formatter().parse(t) if f} for t in (texts["en"], texts["zh"])]
        assert fields[0] == fields[1], key


def test_the_chinese_report_renders_the_stage_reasons_in_chinese(tmp_path, tiny_llama):
    from llm_adapt.inspect.plan import PlanOptions
    from llm_adapt.inspect.stage import run_inspect
    from llm_adapt.models.source import resolve_model
    from llm_adapt.report.render import render_report
    from llm_adapt.run.config import RunSizes
    from llm_adapt.run_status import RunStatus

    run_inspect(resolve_model(str(tiny_llama)), PlanOptions(model_path=str(tiny_llama), served_model_name="m",
                                                            host="0.0.0.0"), "cpu").save(tmp_path / "inspect.json")
    stages = {"inspect": {"status": "done", "seconds": 0.1},
              "layers": {"status": "skipped", "reason": reason("nothing_to_localize", verdict="PASS")},
              "eval": {"status": "skipped", "reason": reason("eval_opt_in")},
              "bench": {"status": "not run", "reason": reason("ctrl_c")}}
    RunStatus(model="m", platform="cpu", stages=stages, workload=asdict(RunSizes())).save(tmp_path / "status.json")
    zh = next(p for p in render_report(tmp_path, "zh") if p.suffix == ".md").read_text()
    assert "| layers | 已跳过 |" in zh and "端点精度为 PASS：无需定位" in zh and "运行在此阶段之前被中断（Ctrl-C）" in zh
    assert "nothing to localize" not in zh and "before this stage" not in zh
    assert "服务监听 0.0.0.0，其他机器可以访问" in zh and "listens on" not in zh  # the plan's warning, deployment and notes
    en = next(p for p in render_report(tmp_path, "en") if p.suffix == ".md").read_text()
    assert "| layers | skipped |" in en and "endpoint accuracy PASS: nothing to localize" in en


def test_plan_warnings_keep_their_english_and_render_in_chinese(tiny_llama):
    from llm_adapt.inspect.plan import PlanOptions
    from llm_adapt.inspect.stage import run_inspect
    from llm_adapt.models.source import resolve_model
    from llm_adapt.platforms import default_serving_dtype

    _, note = default_serving_dtype("cpu", has_native_bf16=False)
    options = PlanOptions(model_path=str(tiny_llama), served_model_name="m", dtype="fp32", dtype_note=note,
                          host="0.0.0.0", max_num_seqs=4096)
    result = run_inspect(resolve_model(str(tiny_llama)), options, "cpu")
    saved = json.loads(result.to_json())["plan"]["warnings"]
    assert {"dtype_auto_fp32", "open_host", "kv_below_seqs"} <= {w["key"] for w in saved if isinstance(w, dict)}
    assert "the server listens on 0.0.0.0, reachable from other machines" in [w["text"] for w in saved]  # as before
    plan = loaded(json.loads(result.to_json()))["plan"]
    zh = messages(plan["warnings"], "zh")
    assert "服务监听 0.0.0.0，其他机器可以访问" in zh and not any("listens on" in w for w in zh)
    assert messages(plan["warnings"], "en") == plan["warnings"]
    # a warning without a key (a platform's own quantization line) is shown as written
    assert messages(["int4 needs a GPU kernel"], "zh") == ["int4 needs a GPU kernel"]


def _placeholders(text):
    import string

    texts = text.values() if isinstance(text, dict) else [text]
    return {f.split(".")[0] for t in texts for _, f, _, _ in string.Formatter().parse(t) if f}


def test_every_check_has_both_languages_with_the_same_fields_and_arguments():
    from llm_adapt.messages import CHECKS

    for key, texts in CHECKS.items():
        assert set(texts["en"]) == set(texts["zh"]), key
        for field, text in texts["en"].items():
            assert _placeholders(text) == _placeholders(texts["zh"][field]), (key, field)
            if isinstance(text, dict):
                assert set(text) == set(texts["zh"][field]), (key, field)


def test_a_check_keeps_its_english_words_and_renders_them_in_chinese():
    from llm_adapt.accuracy.verdict import GREEDY_ARGS, check
    from llm_adapt.messages import rendered_check

    c = check("greedy", "warn", nt=3, n=6, nf="n/a", p=0.0291, **GREEDY_ARGS)
    assert c["name"] == "genuine greedy divergences" and c["value"] == "3 of 6 vs floor n/a (p = 0.0291)"
    assert c["threshold"].startswith("binomial tail at the floor's rate") and "p >= 0.05 pass" in c["threshold"]
    assert json.loads(json.dumps(c)) == c  # plain JSON in the stage's result
    zh = rendered_check(c, "zh")
    assert zh["name"] == "贪心解码的真实分歧" and zh["value"] == "6 条中 3 条，噪声基线 无（p = 0.0291）"
    assert zh["status"] == "warn" and "p >= 0.05 通过" in zh["threshold"]
    assert rendered_check(c, "en") == c
    # a figure the JSON could not keep (inf saved as null) or an unknown key: the stored words
    assert rendered_check({**c, "args": {**c["args"], "p": None}}, "zh")["value"] == c["value"]
    assert rendered_check({**c, "key": "from-a-later-version"}, "zh") == {**c, "key": "from-a-later-version"}


def test_verdict_reasons_render_from_their_checks_and_keep_the_others():
    from llm_adapt.accuracy.verdict import judge_endpoint
    from llm_adapt.messages import verdict_reasons

    sections = {"tokenization": {"status": "done", "mismatches": [], "checked": 6},
                "teacher_forced": {"status": "done", "nonfinite_positions": 3, "server": {}},
                "perplexity": {"status": "not run", "reason": "server gone"},
                "greedy": {"status": "not run", "reason": "server gone"}}
    verdict = judge_endpoint(sections)
    assert verdict["reasons"] == ["NaN/Inf in the server's log-probs: 3 positions", "perplexity: not run (server gone)",
                                  "greedy: not run (server gone)"]
    zh = verdict_reasons(verdict, "zh")
    assert zh == ["服务端 log-prob 中的 NaN/Inf: 3 个位置", "perplexity: not run (server gone)", "greedy: not run (server gone)"]
    assert verdict_reasons(verdict, "en") == verdict["reasons"]


def test_the_chinese_report_gives_the_verdict_and_its_checks_in_chinese(tmp_path, tiny_llama):
    from llm_adapt.accuracy.endpoint import EndpointAccuracyResult
    from llm_adapt.accuracy.verdict import judge_endpoint
    from llm_adapt.inspect.plan import PlanOptions
    from llm_adapt.inspect.stage import run_inspect
    from llm_adapt.models.source import resolve_model
    from llm_adapt.report.render import render_report

    run_inspect(resolve_model(str(tiny_llama)), PlanOptions(model_path=str(tiny_llama), served_model_name="m"),
                "cpu").save(tmp_path / "inspect.json")
    sections = {"tokenization": {"status": "done", "checked": 6,
                                 "mismatches": [{"id": "greeting-1", "ours": "<s>hi", "server": "hi", "ours_tokens": 3,
                                                 "server_tokens": 2}]},
                **{name: {"status": "not run", "reason": "server gone"}
                   for name in ("teacher_forced", "perplexity", "greedy")}}
    EndpointAccuracyResult(model="m", endpoint={"base_url": "http://127.0.0.1:1/v1"}, reference="cpu:fp32", floor=None,
                           settings={}, sections=sections, verdict=judge_endpoint(sections)).save(
        tmp_path / "endpoint_accuracy.json")
    md, html = (p.read_text() for p in render_report(tmp_path, "zh"))
    assert "服务端模型对比金标准：FAIL" in md and "served model vs gold" not in md
    assert "服务端分词 / 对话模板" in html and "6 条提示词中 1 条不同" in html
    assert "server tokenization" not in html and "served model" not in html and "prompts differ" not in html
    en_md, en_html = (p.read_text() for p in render_report(tmp_path, "en"))
    assert "served model vs gold: FAIL" in en_md and "server tokenization / chat template" in en_html


def test_a_basis_renders_from_its_fields():
    from llm_adapt.messages import basis_text

    step = {"basis": "noise floor, stepping up 2.03x from the layer before (chance allows 1.07x)", "step": 2.031,
            "step_allowed": 1.0712}
    assert basis_text(step, "en") == step["basis"]
    assert basis_text(step, "zh") == "噪声基线，比上一层跃升 2.03 倍（随机波动允许 1.07 倍）"
    assert basis_text({"basis": "noise floor"}, "zh") == "噪声基线"
    assert basis_text({"basis": "4 x fp32 unit roundoff"}, "zh") == "4 × fp32 单位舍入误差"
    assert basis_text({"basis": "4 x fp32 unit roundoff"}, "en") == "4 x fp32 unit roundoff"
    assert basis_text({"basis": "a later version's words"}, "zh") == "a later version's words"


def test_the_located_layer_reads_the_same_in_english_and_renders_in_chinese():
    from llm_adapt.accuracy.verdict import judge_layers
    from llm_adapt.messages import rendered_check

    where = {"name": "layer 7", "ratio": 41.25, "basis": "noise floor", "part": "attention",
             "parts": [{"name": "MLP", "ratio": 1.1, "basis": "noise floor"},
                       {"name": "attention", "ratio": 52.5, "basis": "noise floor",
                        "channels": {"concentrated": True, "share": 0.8, "count": 2, "of": 64, "top": [5, 9]},
                        "heads": {"concentrated": True, "share": 1.0, "heads": [3, 4, 5], "of": 9, "kv_head": 1}}]}
    verdict = judge_layers({"layers": [{"name": "layer 7", "rel_l2": 0.1, "cos_min": 0.999, "local_rel_l2": 0.1}],
                            "first_local_excess": where, "first_nonfinite": None}, None)
    c = next(c for c in verdict["checks"] if c["key"] == "localized")
    assert c["value"] == ("layer 7: 41.25x its noise floor; in it the attention: 52.5x its noise floor, 80% of its "
                          "error in 2 of 64 output channels (5, 9), 100% of its error in heads 3, 4, 5 of 9 (KV head 1)")
    assert rendered_check(c, "zh")["value"] == (
        "layer 7：41.25× 噪声基线；其中注意力：52.5× 噪声基线，80% 的误差集中在 64 个输出通道中的 2 个（5, 9），"
        "100% 的误差集中在 9 个注意力头中的第 3, 4, 5 个（KV 头 1）")
    step = {"name": "layer 12", "ratio": 1.76, "step": 1.74, "step_allowed": 1.29,
            "basis": "noise floor, stepping up 1.74x from the layer before (chance allows 1.29x)"}
    c = next(c for c in judge_layers({"layers": [], "first_local_excess": step, "first_nonfinite": None},
                                     {"label": "f"})["checks"] if c["key"] == "localized")
    assert c["value"] == "layer 12: 1.76x its noise floor, stepping up 1.74x from the layer before (chance allows 1.29x)"
    assert rendered_check(c, "zh")["value"] == "layer 12：1.76× 噪声基线，比上一层跃升 1.74 倍（随机波动允许 1.29 倍）"


def test_every_probe_name_and_status_has_its_chinese():
    from llm_adapt.messages import PROBE_WORDS, probe_words
    from llm_adapt.probes import context
    from llm_adapt.probes.features import PROBES

    statuses = {context.SUPPORTED, context.UNSUPPORTED, context.ERROR, context.NOT_RUN, context.NOT_APPLICABLE,
                context.NOT_ENABLED}
    assert set(PROBES) | statuses <= set(PROBE_WORDS["zh"])
    assert probe_words("chat completion", "zh") == "对话补全" and probe_words("chat completion", "en") == "chat completion"
    assert probe_words("a probe of a later version", "zh") == "a probe of a later version"


def test_each_owner_keeps_its_own_keys_in_both_languages_and_none_twice():
    import pytest

    import llm_adapt.messages as messages

    assert sum(len(owner.REASONS) for owner in messages.OWNERS) == len(REASONS)  # no key lost, none shared
    for owner in messages.OWNERS:
        for key, texts in owner.REASONS.items():
            assert set(texts) == {"en", "zh"}, (owner.__name__, key)
    with pytest.raises(ValueError, match="defined twice"):
        messages._merged([messages.run, messages.run])


def test_the_reports_own_word_tables_say_the_same_things_in_both_languages():
    import string

    from llm_adapt.messages import report

    def fields(text):
        return {f for _, f, _, _ in string.Formatter().parse(text) if f} if isinstance(text, str) else None

    for name in ("REPORT_TEXT", "REPORT_NOTES", "PAGE_LABELS", "FIRST_SCREEN", "FIRST_SCREEN_MODES", "FLOOR_LABEL"):
        table = getattr(report, name)
        if all(isinstance(v, str) for v in table.values()):  # {lang: text}
            assert fields(table["en"]) == fields(table["zh"]), name
            continue
        missing = set(table["en"]) - set(table["zh"])
        en_only_words = {k for k in missing if not fields(table["en"][k]) and table["en"][k] in ("", {})}
        assert missing == en_only_words, (name, missing - en_only_words)  # Chinese says all English says
        for key in table["en"].keys() & table["zh"].keys():
            assert fields(table["en"][key]) == fields(table["zh"][key]), (name, key)


def section_word_gaps(en: dict, zh: dict, path: str = "") -> list[str]:
    """Where two SECTION_WORDS tables differ: a key one lacks, or a text whose placeholders differ."""
    import string

    def fields(text):
        return {f for _, f, _, _ in string.Formatter().parse(text) if f}

    gaps = [f"{path}{k}: only in one language" for k in sorted(en.keys() ^ zh.keys())]
    for key in en.keys() & zh.keys():
        a, b = en[key], zh[key]
        if isinstance(a, dict) and isinstance(b, dict):
            gaps += section_word_gaps(a, b, f"{path}{key}.")
        elif not (isinstance(a, str) and isinstance(b, str)) or fields(a) != fields(b):
            gaps.append(f"{path}{key}: not the same placeholders")
    return gaps


def test_the_report_sections_words_have_every_key_and_placeholder_in_both_languages():
    from llm_adapt.messages import SECTION_WORDS

    assert set(SECTION_WORDS) == {"en", "zh"} and SECTION_WORDS["zh"]["lang"] == "zh"
    assert section_word_gaps(SECTION_WORDS["en"], SECTION_WORDS["zh"]) == []
    # the check itself catches a missing key, a nested one, and a lost placeholder
    assert section_word_gaps({"a": "x", "sl": {"b": "{n} y"}}, {"sl": {"b": "y"}}) == [
        "a: only in one language", "sl.b: not the same placeholders"]


def test_every_word_a_section_template_reads_from_S_is_in_the_table():
    import re
    from importlib.resources import files

    from llm_adapt.messages import SECTION_WORDS

    sections = files("llm_adapt.report") / "templates" / "sections"
    used = set()
    for template in sections.iterdir():
        text = template.read_text()
        used |= set(re.findall(r"\bS\.([a-z_0-9]+)", text))
        used |= {"notes." + k for k in re.findall(r"\bW\.([a-z_0-9]+)", text)}
    table = SECTION_WORDS["en"]
    missing = [k for k in sorted(used) if (table.get(k.split(".")[0], {}) if "." in k else table).get(k.split(".")[-1]) is None]
    assert missing == []
