"""The probes' judgements on plain data: the Chinese answer without its echoed question, and tool calling that the
server's start flags left off."""

from types import SimpleNamespace

import httpx
import openai

from llm_adapt.inspect.tool_calling import tool_calling
from llm_adapt.messages import message
from llm_adapt.probes.context import NOT_ENABLED, SUPPORTED, UNSUPPORTED
from llm_adapt.probes.features import (CHINESE_QUESTION, judge_chinese, tool_calling_auto, tool_calling_named,
                                       tool_not_enabled, without_echo)

Q = CHINESE_QUESTION  # 请用中文回答：法国的首都是哪座城市？


def test_an_answer_that_only_echoes_the_question_fails():
    for echo in (Q, "法国的首都是哪座城市？", "法国的首都是哪座城市", f"{Q}\n{Q}", "请用中文回答：法国的首都"):
        ok, seen = judge_chinese(echo, Q)
        assert not ok and seen["cjk"] == 0 and seen["echoed"] >= 5, (echo, seen)
    # the old probe's case: 91% CJK, all of it the question (北京是哪个国家的首都？) asked back
    old = "请用中文回答：北京是哪个国家的首都？"
    assert not judge_chinese(old, old)[0]


def test_a_real_chinese_answer_passes():
    for answer in ("巴黎。", "法国的首都是巴黎。", "法国的首都是巴黎，它也是法国最大的城市。", "巴黎是法国的首都。"):
        ok, seen = judge_chinese(answer, Q)
        assert ok and seen["cjk"] >= 2, (answer, seen)
    assert judge_chinese("法国的首都是巴黎。", Q)[1] == {"share": 2 / 3, "cjk": 2, "kept": 3, "echoed": 6}


def test_an_english_answer_fails_with_or_without_the_echo():
    for answer in ("The capital of France is Paris.", "法国的首都是哪座城市？ The capital is Paris.", "Paris", ""):
        assert not judge_chinese(answer, Q)[0], answer


def test_without_echo_removes_runs_of_the_question_and_keeps_the_rest():
    assert without_echo("法国的首都是巴黎", Q) == ("巴黎", 6)
    assert without_echo("首都巴黎", Q) == ("首都巴黎", 0)  # two characters in common are not an echo
    assert without_echo("abc", "xyz") == ("abc", 0)


class _Completions:
    def __init__(self, answer):
        self.answer = answer

    def create(self, **kw):
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


def _ctx(answer, facts=None):
    client = SimpleNamespace(chat=SimpleNamespace(completions=_Completions(answer)))
    return SimpleNamespace(client=client, model="m", facts=facts or {})


def _refusal(text):
    response = httpx.Response(400, request=httpx.Request("POST", "http://127.0.0.1/v1/chat/completions"))
    return openai.BadRequestError(text, response=response, body=None)


VLLM_AUTO = '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set'
VLLM_NAMED = 'tool_choice=function "get_weather" requires --tool-call-parser to be set'


def test_a_plan_without_tool_calling_reads_not_enabled_with_its_reason_and_flag():
    plan = tool_calling("{% for m in messages %}{{ m.content }}{% endfor %}").to_dict()
    for probe, words in ((tool_calling_auto, VLLM_AUTO), (tool_calling_named, VLLM_NAMED)):
        out = probe(_ctx(_refusal(words), {"tool_calling": plan}))
        assert out.status == NOT_ENABLED, out
        assert out.evidence.startswith("not enabled by this plan: the model's chat template declares no tools")
        assert "--enable-auto-tool-choice --tool-call-parser NAME --chat-template FILE would enable it" in out.evidence
        zh = message(out.evidence, "zh")
        assert zh.startswith("本计划未启用：模型的聊天模板没有声明工具"), zh


def test_an_outside_server_started_without_a_parser_is_not_enabled_in_its_own_words():
    out = tool_not_enabled(None, VLLM_AUTO)
    assert out.status == NOT_ENABLED and "started without tool calling" in out.evidence and VLLM_AUTO in out.evidence
    enabled = tool_calling("{% if tools %}<tool_call>{% endif %}").to_dict()
    assert tool_not_enabled(enabled, VLLM_AUTO).status == UNSUPPORTED  # the plan enabled it and it was refused
    other = tool_calling_auto(_ctx(_refusal("tools are not supported by this model")))
    assert other.status == UNSUPPORTED  # a refusal for another reason stays what it was


def _answer(name, arguments):
    call = SimpleNamespace(function=SimpleNamespace(name=name, arguments=arguments))
    return SimpleNamespace(choices=[SimpleNamespace(message=SimpleNamespace(tool_calls=[call], content=None))])


def test_a_server_with_tool_calling_is_still_judged_on_its_call():
    plan = {"tool_calling": tool_calling("{% if tools %}<tool_call>{% endif %}").to_dict()}
    assert tool_calling_auto(_ctx(_answer("get_weather", '{"city": "Paris"}'), plan)).status == SUPPORTED
    assert tool_calling_named(_ctx(_answer("get_weather", '{"town": 3}'), plan)).status == "error"
    no_call = SimpleNamespace(choices=[SimpleNamespace(message=SimpleNamespace(tool_calls=None, content="sunny"))])
    assert tool_calling_auto(_ctx(no_call, plan)).status == UNSUPPORTED
