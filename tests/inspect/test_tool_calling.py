"""Tool calling in the plan: the parser read from the chat template's own text, the flags in the commands."""

import json

from llm_adapt.inspect import memory as mem
from llm_adapt.inspect.plan import PlanOptions, make_plan
from llm_adapt.inspect.tool_calling import read_chat_template, tool_calling
from llm_adapt.messages import message
from llm_adapt.models.spec import spec_from_config
from llm_adapt.platforms import get_platform
from tests.conftest import config_fixture

# SmolLM2-135M-Instruct's template, as its GGUF's tokenizer.chat_template holds it: no tools anywhere
SMOLLM2 = ("{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}{{ '<|im_start|>system\n"
           "You are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n' }}{% endif %}"
           "{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}"
           "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}")
# Excerpts of the families' templates, each with its tools block and its tool-call rendering
QWEN25 = ("{%- if tools %}{{- '<|im_start|>system\\n# Tools\\n<tools>' }}{%- for tool in tools %}{{- tool | tojson }}"
          "{%- endfor %}{{- '</tools>\\n<tool_call>\\n{\"name\": <function-name>, \"arguments\": <args-json-object>}"
          "\\n</tool_call><|im_end|>\\n' }}{%- endif %}")
LLAMA32 = ("{%- if tools is not none %}{%- set tools_in_user_message = true %}{%- endif %}"
           "{{- '{\"name\": \"' + tool_call.name + '\", ' }}{{- '\"parameters\": ' }}{{- tool_call.arguments | tojson }}"
           "{%- elif message.role == \"tool\" or message.role == \"ipython\" %}"
           "{{- \"<|start_header_id|>ipython<|end_header_id|>\\n\\n\" }}")
MISTRAL = ("{%- if tools is not none and loop.last %}{{- '[AVAILABLE_TOOLS] [' }}{%- for tool in tools %}...{%- endfor %}"
           "{{- '[TOOL_CALLS] [' }}{{- tool_call.function | tojson }}")
QWEN3_CODER = ("{%- if tools %}<tools>{%- endif %}<tool_call>\n<function={{ tool_call.name }}>\n"
               "<parameter={{ args_name }}>\n{{ args_value }}\n</parameter>\n</function>\n</tool_call>")
GLM45 = "{%- if tools -%}<tools>{%- endif -%}<tool_call>{{ tc.name }}\n<arg_key>{{ k }}</arg_key><arg_value>{{ v }}</arg_value>"
DEEPSEEK_V3 = ("{%- if tools %}{%- endif %}{{'<｜Assistant｜><｜tool▁calls▁begin｜><｜tool▁call▁begin｜>' + tool['type'] + "
               "'<｜tool▁sep｜>' + tool['function']['name'] + '\\n' + '```json' + '\\n' + tool['function']['arguments']}}")
DEEPSEEK_V31 = ("{%- if tools %}{%- endif %}{{'<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>' + tool['function']['name'] + "
                "'<｜tool▁sep｜>' + tool['function']['arguments'] + '<｜tool▁call▁end｜>'}}")


def test_each_family_gets_the_parser_of_its_tool_call_format():
    cases = {QWEN25: "hermes", LLAMA32: "llama3_json", MISTRAL: "mistral", QWEN3_CODER: "qwen3_coder", GLM45: "glm45",
             DEEPSEEK_V3: "deepseek_v3", DEEPSEEK_V31: "deepseek_v31"}
    for template, parser in cases.items():
        decision = tool_calling(template)
        assert decision.enabled and decision.parser == parser, (parser, decision)
        assert decision.options() == [("--enable-auto-tool-choice", None), ("--tool-call-parser", parser)]
        assert decision.flags == f"--enable-auto-tool-choice --tool-call-parser {parser}"
    assert "<tool_call>" in str(tool_calling(QWEN25).evidence) and "hermes" in str(tool_calling(QWEN25).evidence)


def test_a_template_without_tools_is_not_enabled_with_the_flags_that_would_enable_it():
    smol = tool_calling(SMOLLM2)  # the bundled default model
    assert not smol.enabled and smol.options() == []
    assert "declares no tools" in str(smol.evidence) and "--tool-call-parser NAME --chat-template FILE" in smol.flags
    assert "<tool_call>" not in SMOLLM2 and not tool_calling("").enabled
    assert "no chat template" in str(tool_calling(None).evidence)
    # a template that reads `tools` but writes its calls in a format no parser here knows: not guessed
    odd = tool_calling("{% if tools %}{{ tools | tojson }}{% endif %}<<call>>")
    assert not odd.enabled and "none this plan knows" in str(odd.evidence) and "hermes" in str(odd.evidence)
    # markers alone, in a template that never reads `tools`, are not a declaration
    assert not tool_calling("<tool_call>{{ message.content }}</tool_call>").enabled


def test_the_decision_keeps_its_english_and_renders_in_chinese():
    for template in (QWEN25, SMOLLM2, "{% if tools %}x{% endif %}", None):
        d = tool_calling(template).to_dict()
        assert message(d["evidence"], "en") == d["evidence"]
        assert message(d["evidence"], "zh") != d["evidence"]


def test_the_chat_template_is_read_from_every_place_a_checkpoint_keeps_it(tmp_path):
    assert read_chat_template(tmp_path) is None and read_chat_template(tmp_path / "absent") is None
    (tmp_path / "tokenizer_config.json").write_text(json.dumps({"chat_template": QWEN25}))
    assert read_chat_template(tmp_path) == QWEN25
    (tmp_path / "tokenizer_config.json").write_text(json.dumps({"chat_template": [
        {"name": "default", "template": SMOLLM2}, {"name": "tool_use", "template": QWEN25}]}))
    assert tool_calling(read_chat_template(tmp_path)).parser == "hermes"  # the tool_use template counts
    (tmp_path / "tokenizer_config.json").write_text("{not json")
    (tmp_path / "chat_template.jinja").write_text(LLAMA32)
    assert read_chat_template(tmp_path) == LLAMA32


def _plan(decision):
    spec = spec_from_config(config_fixture("qwen2.5-7b-instruct"))
    options = PlanOptions(model_path="/m", served_model_name="m", device_memory_gib=80, tool_calling=decision)
    return make_plan(spec, mem.parameter_breakdown(spec).total, get_platform("cuda"), options)


def test_the_plan_starts_vllm_with_the_parser_in_every_mode_and_says_why():
    plan = _plan(tool_calling(QWEN25))
    for mode in ("eager", "graph"):
        command = plan.command(mode)
        assert command.has("--enable-auto-tool-choice") and command.get("--tool-call-parser") == "hermes"
        assert "--tool-call-parser hermes" in plan.commands[mode]
    assert plan.tool_calling["enabled"] and plan.tool_calling["parser"] == "hermes"
    off = _plan(tool_calling(SMOLLM2))
    assert not off.command("graph").has("--tool-call-parser") and not off.command("eager").has("--enable-auto-tool-choice")
    assert off.tool_calling["enabled"] is False and off.tool_calling["evidence"].key == "tc_no_tools"
    assert _plan(None).tool_calling is None  # not read: no flags, nothing said


def test_inspect_reads_the_default_models_template_and_leaves_tool_calling_off(tiny_llama):
    from llm_adapt.inspect.stage import run_inspect
    from llm_adapt.models.source import resolve_model

    result = run_inspect(resolve_model(str(tiny_llama)), PlanOptions(model_path=str(tiny_llama), served_model_name="t",
                                                                     kv_cache_space_gib=1), "cpu")
    assert result.plan.tool_calling["enabled"] is False  # SmolLM2's template declares no tools
    assert result.plan.tool_calling["evidence"].key == "tc_no_tools"
    assert not result.plan.command("eager").has("--tool-call-parser")


def test_every_parser_named_here_is_one_the_installed_vllm_registers():
    import importlib.util
    import re
    from pathlib import Path

    import pytest

    from llm_adapt.inspect.tool_calling import TOOL_PARSERS

    spec = importlib.util.find_spec("vllm")
    table = Path(spec.origin).parent / "tool_parsers" / "__init__.py" if spec and spec.origin else None
    if table is None or not table.is_file():
        pytest.skip("vLLM is not installed here, or keeps its tool parsers elsewhere")
    registered = set(re.findall(r'^\s{4}"([\w-]+)": \(', table.read_text(), re.M))
    assert {parser for parser, _, _ in TOOL_PARSERS} <= registered, registered
