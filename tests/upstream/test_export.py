"""`llm-adapt export --to vllm-ascend`, tried as a new user would: a run on a CPU host is refused with one
line unless `--plan-for npu`; a run on an NPU exports its own deployment. The files land at their upstream
paths, name the model by its hub id, carry no local path, have tables that render, and every number in
them is one the run measured or the plan computed."""

import json
import math
import re
from pathlib import Path
from typing import Any

import yaml

from llm_adapt import rundir
from llm_adapt.cli import main
from llm_adapt.engines.session import ServeResult, predicted_for
from llm_adapt.environment import collect
from llm_adapt.evaluation.stage import EvalResult
from llm_adapt.inspect.plan import PlanOptions
from llm_adapt.inspect.stage import run_inspect
from llm_adapt.models.source import resolve_model
from llm_adapt.probes.run import ProbesResult
from llm_adapt.judged.data import load_run
from llm_adapt.run_status import RunStatus
from llm_adapt.upstream import origin
from llm_adapt.upstream.adaptation import build
from llm_adapt.upstream.deployment import planned_for_npu

from .markdown_tables import table_problems
from .test_adaptation import CHAT_OK, ENDPOINT, STREAM

TEMPLATES = Path(__file__).parents[2] / "src/llm_adapt/upstream/templates"
DOCS = "docs/source/tutorials/models"
GSM8K = [{"task": "gsm8k", "metric": "exact_match,strict-match", "served": 0.412345, "gold": 0.43,
          "served_stderr": 0.0136, "num_fewshot": 5, "chat": True},
         {"task": "gsm8k", "metric": "exact_match,flexible-extract", "served": 0.45, "gold": 0.46,
          "served_stderr": 0.0137, "num_fewshot": 5, "chat": True}]
BUILTIN = [{"task": "builtin-mc", "metric": "acc,none", "served": 0.633333, "gold": 0.7}]


# the chat check as probes.json records it: its answer beside the request that produced it
NPU_CHAT = CHAT_OK | {"detail": {"text": "2 + 2 = 4.", "request": {
    "messages": [{"role": "user", "content": "What is 2+2? Answer briefly."}], "max_tokens": 24, "temperature": 0}}}


def save_eval(out: Path, scores: list[dict[str, Any]], limit: int | None = 30) -> None:
    EvalResult(model="m", endpoint=ENDPOINT, settings={"limit": limit, "num_fewshot": None}, skipped=[],
               seconds={"served_generative": 12.5}, scores=scores, paired=[], baseline=[],
               verdict={"status": "PASS", "reasons": []}).save(out / rundir.EVAL)


def npu_run(out: Path, model: Path, ascend: str = "0.23.0", scores=GSM8K, eval_json: Path | None = None) -> Path:
    """A run on an Ascend host: planned for npu, environment.json lists the NPUs and vLLM-Ascend, the
    engine started the planned eager command (on another port), the model came from the hub. Its
    eval.json holds `scores`, or is a copy of `eval_json` (one a real eval stage wrote)."""
    out.mkdir(parents=True)
    source = resolve_model(str(model))
    inspected = run_inspect(source, PlanOptions(model_path=str(source.path), served_model_name="tiny-llama",
                                                device_memory_gib=64, max_model_len=512), "npu")
    inspected.model |= {"origin": "hf", "given": "hf:acme/tiny-llama"}
    inspected.save(out / rundir.INSPECT)
    env = collect([]).model_copy(update={
        "accelerators": [{"kind": "npu", "npu_id": i, "name": "Ascend910B3", "series": "Atlas A2 Series",
                          "memory": "65536 MiB"} for i in range(2)],
        "packages": {"vllm": "0.23.0", "vllm-ascend": ascend, "torch": "2.10.0", "torch-npu": "2.10.0.post4"},
        "builds": {"vllm": {"version": "0.23.0", "commit": "a" * 40, "source": None}}, "cann": {"version": "9.1.0"}})
    env.save(out / rundir.ENVIRONMENT)
    plan = inspected.plan
    argv = plan.command("eager").with_option("--port", "43210").argv()
    ServeResult(engine="vllm", endpoint=ENDPOINT, host="127.0.0.1", argv=argv, env=plan.env, mode="eager",
                startup_seconds=41.5, log=str(out / "engine.log"), engine_facts={"max_model_len": 512,
                                                                                  "kv_cache_tokens": 9344},
                predicted=predicted_for(plan, 512), prediction_matches=True).save(out / rundir.SERVE)
    stages = {"inspect": {"status": "done"}, "serve": {"status": "done"}, "probes": {"status": "done"}}
    RunStatus(model="hf:acme/tiny-llama", platform="npu", stages=stages, workload={}).save(out / rundir.STATUS)
    ProbesResult(endpoint=ENDPOINT, model="tiny-llama", rows=[NPU_CHAT, STREAM], summary={"supported": 2},
                 complete=True).save(out / rundir.PROBES)
    if eval_json:
        (out / rundir.EVAL).write_text(eval_json.read_text())
    else:
        save_eval(out, scores)
    build(out, source.path).save(out / rundir.ADAPTATION)
    return out


def exported(run_dir, dest, *extra):
    assert main(["export", str(run_dir), "--to", "vllm-ascend", "--out", str(dest), *extra]) == 0
    return {str(p.relative_to(dest)): p.read_text() for p in sorted(dest.rglob("*")) if p.is_file()}


def prose(files: dict[str, str]) -> dict[str, str]:
    """The exported files a reader reads: all but the nav patch, which is lines of mkdocs.yml."""
    return {name: text for name, text in files.items() if not name.endswith(".patch")}


def plan_for(run_dir, tmp_path, *extra):
    return exported(run_dir, tmp_path / "upstream", "--plan-for", "npu", "--model-id", "acme/tiny-llama", *extra)


def test_a_run_not_on_an_npu_is_refused_in_one_line(run_dir, tmp_path, capsys):
    assert main(["export", str(run_dir), "--to", "vllm-ascend", "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "ran on CPU" in err[0] and "not on an NPU" in err[0] and "--plan-for npu" in err[0]
    assert not (tmp_path / "o").exists()  # nothing written, not even the directory


def test_a_run_without_adaptation_json_is_one_line(tmp_path, capsys):
    (tmp_path / "r").mkdir()
    (tmp_path / "r" / "status.json").write_text(json.dumps({"kind": "status", "schema_version": 1, "model": "m",
                                                             "platform": "cpu", "stages": {}, "workload": {}}))
    assert main(["export", str(tmp_path / "r"), "--to", "vllm-ascend", "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "adaptation.json" in err[0]


def test_a_local_model_needs_a_hub_id_in_one_line(run_dir, tmp_path, capsys):
    for extra, words in (([], "pass --model-id ORG/NAME"), (["--model-id", "not a hub id"], "expected ORG/NAME")):
        assert main(["export", str(run_dir), "--to", "vllm-ascend", "--out", str(tmp_path / "o"), "--plan-for", "npu",
                     *extra]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and words in err[0], err


def test_plan_for_npu_writes_every_file_at_its_upstream_path_labelled_planned(run_dir, tmp_path, capsys):
    files = plan_for(run_dir, tmp_path)
    # no e2e config and no accuracy report: their values would be this CPU's, not an NPU's
    assert sorted(files) == [f"{DOCS}/tiny-llama-adaptation-report.md", f"{DOCS}/tiny-llama-runbook.md",
                             f"{DOCS}/tiny-llama.md", "tiny-llama-nav.patch"]
    assert "its values must be measured on an NPU, and this run was not" in capsys.readouterr().err
    tutorial = files[f"{DOCS}/tiny-llama.md"]
    assert "planned, not run on an NPU" in tutorial and "vllm serve acme/tiny-llama" in tutorial
    assert "VLLM_CPU" not in tutorial and "LD_PRELOAD" not in tutorial and "ASCEND_RT_VISIBLE_DEVICES=0" in tutorial
    assert tutorial.count("Result on an Atlas NPU: *to be filled by the NPU run* of the command above.") == 3  # §6-8
    for words in ("CPU:", "vLLM-CPU", "(not an NPU)", "0.4123", "Paris"):  # nothing the CPU run measured
        assert words not in tutorial, words
    report = files[f"{DOCS}/tiny-llama-adaptation-report.md"]
    for words in ("仅为规划，未在 NPU 上运行", "## 特性矩阵", "## Dummy 与真实权重验证矩阵", "**false-ready**",
                  "## max-model-len", "## 回退阶梯", "未测量", "| MTP | N/A 不适用 | 该架构没有 MTP 层",
                  "基线 | N/A 不适用 | 模型自身的上限", "（非 NPU）", "flashcomm1 (deprecated)（已弃用",
                  "## 输入输出样例", "## 结论", "教程第 6–8 节的结果待 NPU 运行填入"):
        assert words in report, words
    # the tool is named where the report says how it was measured: its method line and its own section
    assert report.index("llm-adapt") < report.index("## 基本信息") and tool_named_only_in(report, "## 测量方法")
    assert "请在此列出" not in report  # no instructions to an author under 代码变更
    english = plan_for(run_dir, tmp_path / "en", "--lang", "en")
    report_en = english[f"{DOCS}/tiny-llama-adaptation-report.md"]
    assert "## Feature matrix" in report_en and "## Conclusion" in report_en
    assert tool_named_only_in(report_en, "## How this was measured")


def tool_named_only_in(report: str, section: str) -> bool:
    """Past the method line, the report names llm-adapt only in its `section` (how it was measured)."""
    body = report[report.index("\n## "):]
    start = body.index(section)
    end = body.index("\n## ", start + 1)
    return "llm-adapt" not in body[:start] + body[end:] and "llm-adapt run" in body[start:end]


def test_the_vllm_and_the_dict_are_written_as_words(run_dir, tmp_path):
    files = plan_for(run_dir, tmp_path, "--lang", "en")
    text = "\n".join(files.values())
    assert "vLLM vLLM" not in text and "{'" not in text and not re.search(r"'\w+': ['\[{\d]", text)
    assert "3,244,352 parameters" in files[f"{DOCS}/tiny-llama.md"]
    for body in re.findall(r"```bash\n(.*?)```", text, re.S):
        assert "not measured" not in body and "not recorded" not in body, body


def test_no_exported_file_carries_a_local_path(run_dir, tmp_path, model):
    files = plan_for(run_dir, tmp_path)
    known = origin.known_local_paths(run_dir, load_run(run_dir))
    known += [str(tmp_path), str(model)]
    for name, text in files.items():
        assert origin.local_paths(text, known) == [], name
        assert "--model /" not in text and "VLLM_CPU_" not in text, name


def test_every_table_of_every_exported_file_and_of_the_report_parses(run_dir, tmp_path):
    from llm_adapt.report.render import render_report

    files = {**plan_for(run_dir, tmp_path), **plan_for(run_dir, tmp_path / "en", "--lang", "en")}
    for lang in ("en", "zh"):
        for path in render_report(run_dir, lang):
            if path.suffix == ".md":
                files[f"report.{lang}.md"] = path.read_text()
    # the report's §2 and first screen say what was measured, in each language
    assert "| weights measured | measured on the local checkpoint 'model' (safetensors, fp32) |" in files["report.en.md"]
    assert "Weights: measured on the local checkpoint `model`" in files["report.en.md"]
    assert "| 测量所用权重 | 测量对象为本地检查点 'model'（safetensors, fp32） |" in files["report.zh.md"]
    tables = 0
    for name, text in files.items():
        assert table_problems(text) == [], (name, table_problems(text))
        tables += text.count("\n|---") + text.count("\n|----")
    assert tables >= 10


def test_an_npu_run_exports_its_own_deployment_verified_where_it_started_it(model, tmp_path, capsys):
    out = npu_run(tmp_path / "run", model)
    files = exported(out, tmp_path / "upstream")
    tutorial = files[f"{DOCS}/tiny-llama.md"]
    assert "run on an NPU" in tutorial and "planned, not run on an NPU" not in tutorial
    assert "eager mode, slower decode (verified in this validation)" in tutorial
    assert "graph mode (ACLGraph, vLLM-Ascend's default; not verified in this validation)" in tutorial
    assert "vllm serve acme/tiny-llama" in tutorial
    assert "Ascend910B3 x 2 (Atlas A2 Series) with vLLM 0.23.0, vLLM-Ascend 0.23.0" in tutorial
    assert "flashcomm1 (deprecated)" in tutorial  # v0.23.0 still has FlashComm v1
    assert "1 Ascend NPU of 64 GiB (Atlas A2 Series)" in tutorial and "card assumed" not in tutorial
    # sections 6 to 8 carry the NPU's own results, each the result of the command shown above it
    assert 'Result on 1 Ascend NPU of 64 GiB (Atlas A2 Series) in this validation: HTTP 200, ' \
           '`choices[0].message.content`: "2 + 2 = 4."' in tutorial
    assert "| gsm8k | exact_match,strict-match | 0.4123 | 0.0136 |" in tutorial
    assert "to be filled" not in tutorial
    assert "| tiny-llama | ✅ | run on an NPU | ✅ |" in tutorial  # served on the NPU: supported, at bf16
    for name, text in prose(files).items():
        assert table_problems(text) == [] and origin.local_paths(text, [str(tmp_path)]) == []
        # every file says what was measured: here a local directory exported under a hub id
        assert "measured on the local checkpoint `model`" in text or "测量对象为本地检查点 `model`" in text or \
            "measured on the local checkpoint 'model'" in text or "测量对象为本地检查点 'model'" in text, name
    config = yaml.safe_load(files["tests/e2e/models/configs/tiny-llama.yaml"])
    assert config["hardware"] == "Atlas A2 Series" and config["serve"]["enforce_eager"] is True  # as upstream's
    newer = npu_run(tmp_path / "run2", model, ascend="0.27.0.dev5+g1234567")
    tutorial = exported(newer, tmp_path / "up2")[f"{DOCS}/tiny-llama.md"]
    assert "flashcomm1" not in tutorial and "allgather_reducescatter" in tutorial
    assert "vLLM-Ascend main (after #13946)" in tutorial


def test_the_e2e_config_loads_with_upstreams_keys_and_every_value_is_in_the_runs_json(model, tmp_path):
    out = npu_run(tmp_path / "run", model)
    config = yaml.safe_load(exported(out, tmp_path / "upstream")["tests/e2e/models/configs/tiny-llama.yaml"])
    assert list(config) == ["model_name", "model_type", "hardware", "serve", "tasks", "num_fewshot", "limit",
                            "apply_chat_template", "fewshot_as_multiturn", "batch_size"]
    assert config["num_fewshot"] == 5 and config["serve"]["dtype"] == "bfloat16"
    assert config["tasks"] == [{"name": "gsm8k", "metrics": [{"name": "exact_match,strict-match", "value": 0.4123},
                                                             {"name": "exact_match,flexible-extract", "value": 0.45}]}]
    strings, numbers = run_json_leaves(out)
    constants = {"model_type": "vllm", "batch_size": "auto"}  # upstream's test defaults, as its configs write them
    environment = load_run(out)
    for key, value in leaves(config):
        if key == "hardware":  # the series environment.json recorded for the NPUs, as upstream's configs name it
            assert value == origin.npu_series(environment) == "Atlas A2 Series" and value in strings
            assert origin.hardware_of(environment) == "Ascend910B3 x 2 (Atlas A2 Series)"
        elif key in constants:
            assert value == constants[key]
        elif isinstance(value, bool):
            continue  # trust_remote_code, enforce_eager, chat: checked by name above and below
        elif isinstance(value, (int, float)):
            assert any(abs(value - n) <= 5e-5 for n in numbers), (key, value)
        else:
            assert any(value in s for s in strings), (key, value)
    assert config["apply_chat_template"] is True  # the score's "chat": lm-eval applied the template


def test_without_a_public_task_no_yaml_is_written_and_the_run_command_is_printed(model, tmp_path, capsys):
    out = npu_run(tmp_path / "run", model, scores=BUILTIN)
    files = exported(out, tmp_path / "upstream")
    assert not any(name.endswith(".yaml") for name in files) and "benchmarks/accuracy/tiny-llama.md" not in files
    err = capsys.readouterr().err
    assert "no e2e config or accuracy report written: builtin-mc: llm-adapt's built-in task" in err
    assert "`llm-adapt run hf:acme/tiny-llama --platform npu --tasks gsm8k" in err
    (out / rundir.EVAL).unlink()
    files = exported(out, tmp_path / "up2")
    assert "the run measured no task (no eval stage)" in capsys.readouterr().err
    assert "Result on 1 Ascend NPU of 64 GiB (Atlas A2 Series): not measured in this validation." in \
        files[f"{DOCS}/tiny-llama.md"]


def test_every_number_in_the_exported_files_is_the_runs_or_the_plans(run_dir, tmp_path):
    files = plan_for(run_dir, tmp_path)
    deploy = planned_for_npu(load_run(run_dir), "acme/tiny-llama")
    scenarios = [s.plan.to_dict() for s in deploy.scenarios]
    known = run_json_numbers(run_dir) + numbers_of({"plan": deploy.plan.to_dict(), "gates": deploy.gates, "sc": scenarios})
    known += [k / 2**30 for k in known] + [k * 100 for k in known]  # GiB of a byte count, a share as a percentage
    known += [float(math.floor(k)) for k in known]  # whole sequences that fit
    known += [g * u for g in numbers_of(deploy.plan.device_memory_gib) for u in (deploy.plan.memory_utilization,
                                                                                 1 - deploy.plan.memory_utilization)]
    constants = {n for path in TEMPLATES.glob("*.j2") for n in numbers_in(path.read_text())}
    src = Path(__file__).parents[2] / "src/llm_adapt"
    for source in ("upstream/export.py", "upstream/formats.py", "upstream/deployment.py", "inspect/ascend_features.py",
                   "upstream/origin.py", "upstream/commands.py", "upstream/scenarios.py", "messages/upstream.py",
                   "inspect/capacity.py", "probes/features.py"):
        constants |= set(numbers_in((src / source).read_text()))
    unexplained = [(name, n) for name, text in prose(files).items() for n in numbers_in(HEADING_NUMBER.sub("", text))
                   if n not in constants and not explained(n, known)]
    assert not unexplained, unexplained[:20]


HEADING_NUMBER = re.compile(r"^(#+ )[\d.]+ ", re.M)  # a heading's own number (10.2) is its place, not a figure


def test_the_number_check_can_fail():
    assert explained("0.6333", [0.633333]) and explained("1,024", [1024.0]) and not explained("0.64", [0.633333])
    # numbers glued to letters are names (v0.23.0, bf16, H200), not figures
    assert numbers_in("TP 1, 2,048 tokens, v0.23.0 in bf16 on H200, 12.5 s") == ["1", "2,048", "12.5"]


def leaves(value: Any, key: str = "") -> list[tuple[str, Any]]:
    if isinstance(value, dict):
        return [leaf for k, v in value.items() for leaf in leaves(v, k)]
    if isinstance(value, list):
        return [leaf for v in value for leaf in leaves(v, key)]
    return [(key, value)]


def run_json_leaves(run_dir: Path) -> tuple[list[str], list[float]]:
    strings, numbers = [], []
    for path in sorted(Path(run_dir).rglob("*.json")):
        for _, value in leaves(json.loads(path.read_text())):
            if isinstance(value, str):
                strings.append(value)
            elif isinstance(value, (int, float)) and not isinstance(value, bool):
                numbers.append(float(value))
    return strings, numbers


def numbers_of(value: Any) -> list[float]:
    """Every number in a JSON value: its numbers and the figures inside its strings (and keys)."""
    found: list[float] = []
    for key, leaf in leaves(value):
        if isinstance(leaf, (int, float)) and not isinstance(leaf, bool):
            found.append(float(leaf))
        elif isinstance(leaf, str):
            found += [float(x.replace(",", "")) for x in NUMBER.findall(leaf)]
    return found


def run_json_numbers(run_dir: Path) -> list[float]:
    """Every number in a run directory's JSON files (for the check that exported files invent none)."""
    found: list[float] = []
    for path in sorted(Path(run_dir).rglob("*.json")):
        data = json.loads(path.read_text())
        found += numbers_of(data) + numbers_of(_keys(data))
    return found


def _keys(value: Any) -> list[str]:
    if isinstance(value, dict):
        return list(value) + [k for v in value.values() for k in _keys(v)]
    if isinstance(value, list):
        return [k for v in value for k in _keys(v)]
    return []


NUMBER = re.compile(r"(?<![\w.])\d{1,3}(?:,\d{3})+(?:\.\d+)?|(?<![\w.])\d+(?:\.\d+)?")


def numbers_in(text: str) -> list[str]:
    """The figures a reader sees in an exported file (digits, with thousands separators); digits glued
    to a letter or a dot are part of a name (v0.23.0, bf16, H200)."""
    return NUMBER.findall(text)


def explained(number: str, known: list[float]) -> bool:
    """Whether a printed number is one of the run's, as printed: rounded to its decimals (the sign is
    read apart from the digits, so magnitudes are compared)."""
    value = float(number.replace(",", ""))
    decimals = len(number.split(".")[1]) if "." in number else 0
    step = 0.5 * 10 ** -decimals + 1e-12
    return any(abs(abs(k) - value) <= step for k in known)
