"""What the engine refused against what the model produced, on plain data: a stop string the model is known to
write, rows a flat model's own choices decide, and a base model's core features."""

from types import SimpleNamespace

from llm_adapt.messages import reason
from llm_adapt.probes.context import (CORE_BASE, CORE_CHAT, ERROR, NO_CHAT_TEMPLATE, NOT_APPLICABLE, NOT_JUDGED,
                                      SUPPORTED, UNSUPPORTED, Outcome, core_broken, core_features)
from llm_adapt.probes.features import stop_string
from llm_adapt.probes.run import model_choice, refused


def test_the_stop_string_is_taken_from_the_models_own_text_where_it_first_occurs():
    assert stop_string(" 7, 8, 9, 10, 11") == "7, "
    assert stop_string(" mar mar mar") == "mar"  # a random model's repetition: cut right after the first space
    text = "abcabcabc"
    stop = stop_string(text)
    assert text.find(stop) >= 1 and text.find(stop) == text.index(stop)
    assert stop_string(",,,,,,,,") == ",,,"  # a text that only repeats itself: stopped at its start
    for nothing in ("", "ab", "     "):
        assert stop_string(nothing) is None, nothing


def test_an_answer_of_whitespace_is_an_answer_and_no_token_is_the_models_own_choice():
    from llm_adapt.probes.features import answered

    assert answered("\n\n\n", 24) == SUPPORTED  # a random model's newlines: the engine answered
    assert answered("Paris.", None) == SUPPORTED
    assert answered("", 0) == NOT_JUDGED  # it ended at once
    assert answered("", None) == ERROR
    rows = {"chat completion": {"status": NOT_JUDGED}, "streaming": {"status": SUPPORTED}}
    assert core_broken(rows) == []
    assert core_broken({"chat completion": {"status": ERROR}, "streaming": {"status": SUPPORTED}}) == ["chat completion"]


def test_a_flat_models_own_choice_is_not_judged_but_an_engine_failure_stays():
    refused_cjk = Outcome(UNSUPPORTED, "0% CJK")
    assert model_choice("Chinese prompt answered in Chinese", refused_cjk, flat=True).status == NOT_JUDGED
    assert model_choice("Chinese prompt answered in Chinese", refused_cjk, flat=False).status == UNSUPPORTED
    assert model_choice("stop sequences", Outcome(UNSUPPORTED, "x"), flat=True).status == UNSUPPORTED
    assert model_choice("tool calling (tool_choice auto)", Outcome(SUPPORTED, "ok"), flat=True).status == SUPPORTED
    kept = model_choice("tool calling (tool_choice auto)", Outcome(UNSUPPORTED, "no tool_calls"), flat=True)
    assert kept.status == NOT_JUDGED and "no tool_calls" in kept.evidence


def test_a_base_model_is_served_through_completions_and_judged_on_them():
    ctx = SimpleNamespace(facts={})
    vllm_words = ("As of transformers v4.44, default chat template is no longer allowed, so you must provide a chat "
                  "template if the tokenizer does not define one.")
    outcome = refused(ctx, vllm_words)
    assert outcome.status == NOT_APPLICABLE and outcome.evidence.key == NO_CHAT_TEMPLATE
    assert ctx.facts["no_chat_template"] is True
    other = refused(SimpleNamespace(facts={}), "temperature must be non-negative")
    assert other.status == UNSUPPORTED
    rows = {"chat completion": {"status": NOT_APPLICABLE, "evidence": reason(NO_CHAT_TEMPLATE)}}
    assert core_features(rows) == CORE_BASE
    assert core_features({"chat completion": {"status": UNSUPPORTED, "evidence": reason("pe_http", code=400,
                                                                                         body="x")}}) == CORE_CHAT
    assert core_features({}) == CORE_CHAT
