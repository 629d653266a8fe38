"""The endpoint accuracy's requests: payloads built by pure functions, and requests that never raise
(records, as vLLM's benchmark client returns), on plain dicts and a fake client."""

import httpx

from llm_adapt.accuracy.endpoint import greedy_answer
from llm_adapt.accuracy.endpoint_requests import (
    GONE,
    NONFINITE,
    OK,
    REFUSED,
    TOO_LONG,
    first_gone,
    greedy_request,
    prompt_logprobs_of,
    prompt_logprobs_request,
    send,
    send_all,
    tokenize_request,
)
from llm_adapt.engines.client import ServerGone


def test_payloads_are_built_from_plain_values():
    text = tokenize_request("Hello", None)
    assert (text.path, text.payload) == ("/tokenize", {"prompt": "Hello", "add_special_tokens": True})
    chat = tokenize_request(None, [{"role": "user", "content": "hi"}])
    assert chat.payload == {"messages": [{"role": "user", "content": "hi"}], "add_generation_prompt": True}
    plp = prompt_logprobs_request([1, 2, 3], 20)
    assert (plp.path, plp.payload) == ("completions", {"prompt": [1, 2, 3], "max_tokens": 1, "temperature": 0,
                                                       "prompt_logprobs": 20})
    greedy = greedy_request("Hello", None, 16, 20)
    assert greedy.path == "completions" and greedy.payload["logprobs"] == 20 and greedy.payload["max_tokens"] == 16
    assert greedy.payload["return_token_ids"] and greedy.payload["temperature"] == 0
    chat_greedy = greedy_request(None, [{"role": "user", "content": "hi"}], 16, 20)
    assert chat_greedy.path == "chat/completions" and chat_greedy.payload["logprobs"] is True
    assert chat_greedy.payload["top_logprobs"] == 20 and "prompt" not in chat_greedy.payload


class FakeClient:
    """Answers each path as told: a (status, body or text) pair, or an exception to raise."""

    def __init__(self, answers):
        self.answers, self.sent = answers, []

    def post(self, path, payload):
        self.sent.append((path, payload))
        answer = self.answers[payload.get("prompt", [None])[0] if isinstance(payload.get("prompt"), list) else path]
        if isinstance(answer, Exception):
            raise answer
        status, body = answer
        return httpx.Response(status, json=body) if isinstance(body, dict) else httpx.Response(status, text=body)


def test_a_request_never_raises_it_returns_a_record():
    client = FakeClient({1: (200, {"ok": 1}), 2: (400, "This model's maximum context length is 2048 tokens"),
                         3: (400, "Out of range float values are not JSON compliant"), 4: (404, "no such route"),
                         5: ServerGone("the server stopped answering (ConnectError)"), 6: RuntimeError("boom"),
                         7: (200, "not json")})
    kinds = [send(client, prompt_logprobs_request([i], 1)) for i in range(1, 8)]
    assert [r.kind for r in kinds] == [OK, TOO_LONG, NONFINITE, REFUSED, GONE, REFUSED, REFUSED]
    assert kinds[0].ok and kinds[0].body == {"ok": 1} and not any(r.ok for r in kinds[1:])
    assert "ConnectError" in kinds[4].detail and "RuntimeError: boom" in kinds[5].detail and "not JSON" in kinds[6].detail


def test_a_record_keeps_its_reason_in_english_and_renders_it_in_chinese():
    from llm_adapt.accuracy.endpoint import _none_fits, _skip, _unsupported
    from llm_adapt.messages import message

    client = FakeClient({2: (400, "This model's maximum context length is 2048 tokens"), 4: (404, "no such route"),
                         5: ServerGone("the server stopped answering (ConnectError)", "ConnectError")})
    too_long, refused, gone = (send(client, prompt_logprobs_request([i], 1)) for i in (2, 4, 5))
    assert refused.detail == "prompt_logprobs request answered 404: no such route"
    assert message(refused.detail, "zh") == "prompt_logprobs 请求 返回 404：「no such route」"
    assert gone.detail == "the server stopped answering (ConnectError)"
    assert message(gone.detail, "zh") == "服务端停止响应（ConnectError）"
    # a section's reason as endpoint_accuracy.json keeps it, nesting the reasons of every skipped prompt
    ref = type("Ref", (), {"prompt": type("P", (), {"id": "p1"})()})()
    section = _none_fits([_skip(ref, too_long.detail), {"id": "p2", "reason": "an older row without a key"}])
    assert section["status"] == "unsupported"
    assert section["reason"] == ("no prompt of the suite fits the served context: the server refused it for its "
                                 "length: This model's maximum context length is 2048 tokens; an older row without a key")
    zh = message(section["reason"], "zh")
    assert zh == ("提示词集中没有一条能放进服务端的上下文：服务端因长度拒绝：「This model's maximum context length is 2048 "
                  "tokens」；an older row without a key")
    assert _unsupported("a plain reason") == {"status": "unsupported", "reason": "a plain reason"}


def test_all_requests_come_back_in_their_order_with_the_first_gone_named():
    answers = {i: (200, {"i": i}) for i in range(10)}
    answers[7] = ServerGone("the server stopped answering (ReadTimeout)")
    seen = []
    replies = send_all(FakeClient(answers), [prompt_logprobs_request([i], 1) for i in range(10)],
                       progress=lambda done, total: seen.append((done, total)))
    assert [r.body["i"] for r in replies if r.ok] == [0, 1, 2, 3, 4, 5, 6, 8, 9]
    assert first_gone(replies) is replies[7] and seen[-1] == (10, 10)
    assert first_gone(replies[:7]) is None and send_all(FakeClient({}), []) == []


def test_answers_are_read_by_pure_functions():
    body = {"choices": [{"prompt_logprobs": [None, {"5": {"logprob": -0.1, "rank": 1}}]}]}
    assert prompt_logprobs_of(body) == [{}, {5: {"logprob": -0.1, "rank": 1}}]
    assert prompt_logprobs_of({"choices": [{"prompt_logprobs": None}]}) is None
    chat = {"choices": [{"token_ids": [7, 8], "stop_reason": None, "logprobs": {"content": [
        {"token": "token_id:7", "logprob": -0.5, "top_logprobs": [{"token": "token_id:7", "logprob": -0.5},
                                                                   {"token": "token_id:9", "logprob": -1.5}]},
        {"token": "token_id:8", "logprob": -0.2, "top_logprobs": []}]}}]}
    assert greedy_answer(chat) == ([7, 8], [{7: -0.5, 9: -1.5}, {8: -0.2}], None)
    no_ids = {"choices": [{"logprobs": {"tokens": ["token_id:3"], "token_logprobs": [-0.3], "top_logprobs": [{}]},
                           "stop_reason": 2}]}
    assert greedy_answer(no_ids) == ([3], [{3: -0.3}], 2)
    assert greedy_answer({"choices": [{"logprobs": None}]}) is None
