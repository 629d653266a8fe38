"""Messages as keys (stage reasons, plan warnings): English in the JSON as before, the report's language
in the report."""

import json
from dataclasses import asdict

from llm_adapt.messages import REASONS, Reason, reason, rendered, rendered_warnings, stored


def test_a_keyed_reason_reads_as_its_english_sentence_and_keeps_its_key():
    r = reason("nothing_to_localize", verdict="PASS")
    assert isinstance(r, Reason) and r == "endpoint accuracy PASS: nothing to localize (--layers captures anyway)"
    entry = {"status": "skipped", **stored(r)}
    assert entry["reason"] == str(r) and entry["reason_key"] == "nothing_to_localize"
    assert json.loads(json.dumps(entry)) == entry  # plain JSON in status.json
    assert rendered(entry, "en") == str(r)
    assert rendered(entry, "zh") == "端点精度为 PASS：无需定位（--layers 仍会捕获）"


def test_nested_reasons_render_in_the_same_language():
    entry = stored(reason("no_escalation", blocked=reason("layers_engine")))
    assert entry["reason"].startswith("no escalation: the layers stage needs the vLLM engine")
    zh = rendered(entry, "zh")
    assert zh.startswith("未升级：逐层阶段需要本次运行自行启动的 vLLM 引擎") and "needs" not in zh


def test_a_reason_without_a_key_or_with_a_stranger_key_is_shown_as_written():
    assert rendered({"reason": "vllm exited with code 1 during start-up"}, "zh") == "vllm exited with code 1 during start-up"
    assert rendered({"reason": "old words", "reason_key": "from-a-later-version"}, "zh") == "old words"
    assert rendered({"reason": "old words", "reason_key": "no_endpoint", "reason_args": {}}, "zh") == "old words"
    assert stored("plain text") == {"reason": "plain text"} and rendered({}, "en") == ""


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
    from llm_adapt.run.state import RunStatus

    run_inspect(resolve_model(str(tiny_llama)), PlanOptions(model_path=str(tiny_llama), served_model_name="m",
                                                            host="0.0.0.0"), "cpu").save(tmp_path / "inspect.json")
    stages = {"inspect": {"status": "done", "seconds": 0.1},
              "layers": {"status": "skipped", **stored(reason("nothing_to_localize", verdict="PASS"))},
              "eval": {"status": "skipped", **stored(reason("eval_opt_in"))},
              "bench": {"status": "not run", **stored(reason("ctrl_c"))}}
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
    plan = run_inspect(resolve_model(str(tiny_llama)), options, "cpu").model_dump()["plan"]
    keys = [k["key"] for k in plan["warning_keys"] if k]
    assert {"dtype_auto_fp32", "open_host", "kv_below_seqs"} <= set(keys)
    assert len(plan["warning_keys"]) == len(plan["warnings"])
    assert "the server listens on 0.0.0.0, reachable from other machines" in plan["warnings"]  # as before
    zh = rendered_warnings(plan, "zh")
    assert "服务监听 0.0.0.0，其他机器可以访问" in zh and not any("listens on" in w for w in zh)
    assert rendered_warnings(plan, "en") == plan["warnings"]
    # a warning without a key (a platform's own quantization line, an older inspect.json) is shown as written
    assert rendered_warnings({"warnings": ["int4 needs a GPU kernel"]}, "zh") == ["int4 needs a GPU kernel"]
    assert rendered_warnings({"warnings": ["a", "b"], "warning_keys": [None]}, "zh") == ["a", "b"]
