"""Our output against vLLM-Ascend's own files, stored as read (tests/fixtures/upstream/SOURCE.md): the
tutorial template's headings in order, the e2e configs' keys and value types, the report template's
fields and upstream's own test reading our config; and the small judges export relies on, each with
cases that must pass and cases that must fail."""

import importlib.util
import re
import types
from pathlib import Path

import jinja2
import jinja2.meta
import pytest
import yaml

from llm_adapt.environment import EnvironmentResult
from llm_adapt.errors import UsageError
from llm_adapt.evaluation.stage import EvalResult
from llm_adapt.messages import reason
from llm_adapt.upstream import formats, origin
from llm_adapt.upstream.deployment import upstream_command

from tests.records import record, run_data

from .markdown_tables import cells, table_problems
from .test_export import DOCS, npu_run, plan_for

UPSTREAM = Path(__file__).parents[1] / "fixtures" / "upstream"
CONFIGS = sorted((UPSTREAM / "configs").glob("*.yaml"))


def upstream_test() -> types.ModuleType:
    """vLLM-Ascend's tests/e2e/models/test_lm_eval_correctness.py, loaded from its stored copy (its
    report template beside it, as upstream keeps them)."""
    path = UPSTREAM / "test_lm_eval_correctness.py.txt"
    module = importlib.util.module_from_spec(importlib.util.spec_from_loader("upstream_lm_eval", loader=None))
    module.__file__ = str(path)
    exec(compile(path.read_text(), str(path), "exec"), module.__dict__)
    return module


def headings(text: str, level: str = "## ") -> list[str]:
    fenced, out = False, []
    for line in text.splitlines():
        fenced = fenced != line.lstrip().startswith("```")
        if not fenced and line.startswith(level):
            out.append(line[len(level):].strip())
    return out


# ---- the stored formats themselves


def test_the_stored_template_has_the_ten_sections_export_writes():
    assert tuple(headings((UPSTREAM / "Model-Deployment-Tutorial-Template.md").read_text())) == formats.TUTORIAL_SECTIONS


def test_every_stored_upstream_config_passes_our_check_and_a_broken_one_fails():
    for path in CONFIGS:
        assert formats.e2e_problems(yaml.safe_load(path.read_text())) == [], path.name
    broken = yaml.safe_load(CONFIGS[0].read_text())
    broken["serve"]["dtype"] = "bf16"
    broken["tasks"] = []
    del broken["num_fewshot"]
    broken["limit"] = "1000"
    broken["serve"]["enforce_eager"] = "yes"
    broken["kv_dtype"] = "fp8"
    problems = formats.e2e_problems(broken)
    for words in ("missing num_fewshot", "serve.dtype 'bf16'", "no tasks", "limit: str", "serve.enforce_eager: str",
                  "kv_dtype is not a key"):
        assert any(words in p for p in problems), (words, problems)
    assert formats.e2e_problems(yaml.safe_load(CONFIGS[0].read_text()) | {"tasks": [{"name": "t", "metrics": [
        {"name": "acc,none", "value": True}]}]})  # a boolean is not a score


def test_vllm_dtype_literals():
    assert [formats.vllm_dtype(d) for d in ("bf16", "fp16", "fp32", "auto", "bfloat16")] == [
        "bfloat16", "float16", "float32", "auto", "bfloat16"]
    with pytest.raises(ValueError):
        formats.vllm_dtype("int8")


# ---- our files against them


def test_the_tutorial_has_the_templates_headings_in_order(run_dir, tmp_path):
    tutorial = plan_for(run_dir, tmp_path)[f"{DOCS}/tiny-llama.md"]
    assert tuple(headings(tutorial)) == formats.TUTORIAL_SECTIONS
    template = headings((UPSTREAM / "Model-Deployment-Tutorial-Template.md").read_text(), "### ")
    ours = headings(tutorial, "### ")
    for name in ("3.1 Model Weight", "4.1 Docker Image Installation", "5.1 Single-Node Online Deployment",
                 "9.1 Recommended Configurations", "9.2 Tuning Guidelines"):
        assert name in template and name in ours
    assert [h for h in ours if h in template] == [h for h in template if h in ours]  # the same order
    assert tutorial.index('=== "A3 series"') < tutorial.index('=== "A2 series"')  # newer series first


def test_our_e2e_config_has_upstreams_keys_with_the_types_upstreams_configs_give_them(model, tmp_path):
    from .test_export import exported

    ours = yaml.safe_load(exported(npu_run(tmp_path / "run", model), tmp_path / "up")[
        "tests/e2e/models/configs/tiny-llama.yaml"])
    theirs = [yaml.safe_load(p.read_text()) for p in CONFIGS]
    top = {k: {type(c[k]) for c in theirs if k in c} for c in theirs for k in c}
    serve = {k: {type(c["serve"][k]) for c in theirs if k in c["serve"]} for c in theirs for k in c["serve"]}
    for key, value in ours.items():
        assert key in top and type(value) in top[key], (key, value)
    for key, value in ours["serve"].items():
        assert key in serve and type(value) in serve[key], (key, value)
    assert {"model_name", "hardware", "tasks", "num_fewshot"} <= set(ours)  # deliverables.md, item 4
    for task in ours["tasks"]:
        assert set(task) == {"name", "metrics"} and all(set(m) == {"name", "value"} for m in task["metrics"])


def test_upstreams_own_test_reads_our_config_and_renders_our_accuracy_report(model, tmp_path):
    from .test_export import exported

    run_dir = npu_run(tmp_path / "run", model)
    files = exported(run_dir, tmp_path / "up")
    config = yaml.safe_load(files["tests/e2e/models/configs/tiny-llama.yaml"])
    test = upstream_test()
    assert test.build_model_args(config, "1") == formats.model_args(config)
    rows, _ = formats.task_rows(EvalResult.load(run_dir / "eval.json"))
    versions = formats.versions_of(EnvironmentResult.load(run_dir / "environment.json"))
    report_rows = [{"task": r["task"], "metric": r["metric"], "value": r["value"], "stderr": r["stderr"]} for r in rows]
    env = test.EnvConfig(**versions)
    test.generate_report("1", config, {"rows": report_rows}, str(tmp_path / "theirs"), env)
    theirs = (tmp_path / "theirs" / "tiny-llama.md").read_text()
    ours = files["benchmarks/accuracy/tiny-llama.md"]
    assert ours.startswith(theirs.rstrip("\n")), (theirs, ours)  # then our line on where it was measured
    assert "Measured by llm-adapt on Ascend910B3 x 2 (Atlas A2 Series)" in ours and "Weights: measured on" in ours


def test_the_report_templates_fields_are_all_computed():
    source = (UPSTREAM / "report_template.md").read_text()
    wanted = jinja2.meta.find_undeclared_variables(jinja2.Environment().parse(source))
    fields = formats.report_fields({"model_name": "a/b", "serve": {}, "tasks": [{"name": "t", "metrics": []}]}, [],
                                   formats.versions_of(None))
    assert wanted - {"show_command"} <= set(fields), wanted - set(fields)


# ---- the judges, on plain data


def test_task_rows_keep_public_tasks_of_one_setting_and_say_why_others_are_left_out():
    ev = {"settings": {"num_fewshot": None, "limit": 10}, "seconds": {"served_generative": 1.0},
          "scores": [{"task": "gsm8k", "metric": "em,strict", "served": 0.41236, "served_stderr": 0.01, "num_fewshot": 5,
                      "chat": True},
                     {"task": "builtin-mc", "metric": "acc,none", "served": 0.5, "num_fewshot": 0, "chat": False},
                     {"task": "mmlu", "metric": "acc,none", "served": 0.6, "num_fewshot": 0, "chat": False},
                     {"task": "ceval-valid", "metric": "acc,none", "served": None}]}
    rows, left = formats.task_rows(record(EvalResult, **ev))
    assert [(r["task"], r["value"], r["num_fewshot"], r["chat"]) for r in rows] == [("gsm8k", 0.4124, 5, True)]
    assert any(line.startswith("builtin-mc: llm-adapt's built-in task") for line in left)
    assert any(line.startswith("mmlu: measured with num_fewshot 0 and the chat template off") for line in left)
    old = {"settings": {"num_fewshot": 3}, "seconds": {"served_loglikelihood": 1.0},
           "scores": [{"task": "arc_easy", "metric": "acc,none", "served": 0.7}]}
    old = record(EvalResult, **old)
    assert formats.task_rows(old)[0][0]["chat"] is False and formats.task_rows(old)[0][0]["num_fewshot"] == 3
    unknown = {"settings": {}, "seconds": {"served_loglikelihood": 1.0, "served_generative": 1.0},
               "scores": [{"task": "arc_easy", "metric": "acc,none", "served": 0.7}]}
    rows, left = formats.task_rows(record(EvalResult, **unknown))
    assert rows == [] and "does not record" in left[0]


def ran_on(parts):
    return origin.ran_on(run_data(**parts))


def test_where_a_run_ran():
    npu_plan = {"inspect": {"platform": {"name": "npu"}}}
    assert ran_on(npu_plan | {"environment": {"accelerators": [{"kind": "npu"}]}}) == "npu"
    endpoint = {"status": {"stages": {"serve": {"status": "skipped",
                                                "reason": reason("external_endpoint", url="http://h:8000/v1")}}}}
    assert ran_on(npu_plan | endpoint) == "npu"  # measured a server declared as an NPU
    skipped = {"status": {"stages": {"serve": {"status": "skipped", "reason": reason("skip_flag", stage="serve")}}}}
    assert ran_on(npu_plan | {"status": {"stages": {"serve": {"status": "skipped", "reason": "external"}}}}) == "cpu"
    assert ran_on(npu_plan | skipped) == "cpu"  # --skip serve: nothing was measured on an NPU
    assert ran_on(npu_plan | {"environment": {"accelerators": []}}) == "cpu"  # planned for one, measured here
    assert ran_on(npu_plan | {"environment": {"accelerators": [{"kind": "cuda"}]}}) == "cuda"
    assert ran_on({"inspect": {"platform": {"name": "cpu"}},
                          "environment": {"accelerators": [{"kind": "npu"}]}}) == "cpu"
    assert ran_on({}) == "cpu"


def test_hub_ids_come_from_the_source_or_the_option_and_nothing_else():
    assert origin.hub_id({"origin": "hf", "given": "hf:meta-llama/Llama-3.2-3B@main"}, None) == "meta-llama/Llama-3.2-3B"
    assert origin.hub_id({"origin": "ms", "given": "ms:LLM-Research/Llama-3.2-3B-Instruct"}, None) == \
        "LLM-Research/Llama-3.2-3B-Instruct"
    assert origin.hub_id({"origin": "dir", "given": "/x/m"}, "acme/m") == "acme/m"
    for model, given in (({"origin": "dir", "given": "/x/m", "name": "m"}, None), ({"origin": "default"}, None),
                         ({"origin": "hf", "given": "hf:a/b"}, "/local/path"), ({"origin": "dir"}, "just-a-name")):
        with pytest.raises(UsageError):
            origin.hub_id(model, given)


def test_local_paths_are_found_known_or_by_their_shape():
    known = ["/srv/me", "/srv/me/.venv"]
    assert origin.local_paths("vllm serve acme/m --port 8000", known) == []
    assert origin.local_paths("docker run -v /usr/local/dcmi:/usr/local/dcmi", known) == []
    assert origin.local_paths("--model /srv/me/models/m", known) == ["/srv/me"]
    for text in ("LD_PRELOAD=/opt/x/.venv/lib/libiomp5.so", "/home/alice/m", "/Users/bob/m", "x/site-packages/y",
                 "/data/.cache/huggingface/hub/m", "/tmp/run-1/inspect.json"):
        assert origin.local_paths(text, []) != [], text


def test_an_upstream_command_names_the_hub_id_and_keeps_the_plans_options():
    argv = ["python", "-m", "vllm.entrypoints.openai.api_server", "--model", "/srv/cache/m", "--dtype", "bfloat16",
            "--enforce-eager"]
    text = upstream_command(argv, {"ASCEND_RT_VISIBLE_DEVICES": "0"}, "acme/m")
    assert text == ("export ASCEND_RT_VISIBLE_DEVICES=0\nvllm serve acme/m \\\n    --dtype bfloat16 \\\n"
                    "    --enforce-eager")


def test_the_table_check_fails_where_markdown_would_not_render_a_table():
    good = "| a | b |\n|---|---|\n| 1 | `x \\| y` |\n"
    assert table_problems(good) == []
    nine_over_ten = "| " + " | ".join("h" * 9) + " |\n|" + "---|" * 10 + "\n| " + " | ".join("1" * 9) + " |\n"
    assert table_problems(nine_over_ten) and "not rendered as a table" in table_problems(nine_over_ten)[0]
    extra_row = "| a | b |\n|---|---|\n| 1 | 2 | 3 |\n"
    assert "[2, 2, 3] cells" in table_problems(extra_row)[0]
    code_pipe = "| a | b |\n|---|---|\n| `x | y` | 2 |\n"  # an unescaped pipe in code still splits the cell
    assert table_problems(code_pipe)
    assert table_problems("```\n| not | a table |\n```\n") == []  # inside a code block: not a table
    assert cells("| a | b \\| c |") == 2


def test_an_npu_runs_accuracy_report_carries_its_versions(model, tmp_path):
    from .test_export import exported

    files = exported(npu_run(tmp_path / "run", model), tmp_path / "up")
    report = files["benchmarks/accuracy/tiny-llama.md"]
    assert "**vLLM Ascend Version**: 0.23.0" in report and "**CANN**: 9.1.0" in report and "[aaaaaaa]" in report
    assert "**Execution mode**: Eager" in report and re.search(r"\| gsm8k \| exact_match,strict-match \| 0.4123 \| ± 0.0136 \|", report)



def test_the_npus_series_is_named_only_where_every_chip_has_the_same_known_one():
    def env(*names, kind="npu"):
        return run_data(environment={"accelerators": [{"kind": kind, "name": n} for n in names]})

    assert origin.npu_series(env("Ascend910B3", "Ascend910B3")) == "Atlas A2 Series"
    assert origin.npu_series(env("Ascend910_9391")) == "Atlas A3 Series"
    assert origin.npu_series(env("Ascend910B3", "Ascend910_9391")) is None  # two series: the chips say it
    assert origin.npu_series(env("Ascend910B3", "xxx")) is None  # one chip's name hidden: no claim
    assert origin.npu_series(env("NVIDIA H200", kind="cuda")) is None and origin.npu_series(run_data()) is None
    assert origin.hardware_of(env("Ascend910B3", "Ascend910B3")) == "Ascend910B3 x 2 (Atlas A2 Series)"
    assert origin.hardware_of(env("xxx")) == "xxx"
    recorded = run_data(environment={"accelerators": [{"kind": "npu", "name": "xxx", "series": "Atlas A3 Series"}]})
    assert origin.npu_series(recorded) == "Atlas A3 Series"  # what environment.json recorded comes first
