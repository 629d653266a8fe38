"""The near-max_model_len probe's prefill estimate: on plain numbers, and on a simulated server whose
prefill grows with the square of the prompt (attention), as vLLM-CPU's did."""

import httpx
import pytest

from llm_adapt.messages import message
from llm_adapt.probes import features
from llm_adapt.probes.context import NOT_RUN, SUPPORTED
from llm_adapt.probes.features import near_max_len, prefill_estimate


def seconds(n: int, b: float = 1.5e-3, c: float = 8e-7) -> float:
    return b * n + c * n * n


def test_one_sample_is_linear():
    assert prefill_estimate([(512, 1.0)], 8192) == pytest.approx(16.0)


def test_two_samples_fit_the_quadratic_part():
    samples = [(512, seconds(512)), (2048, seconds(2048))]
    assert prefill_estimate(samples, 8128) == pytest.approx(seconds(8128), rel=1e-9)


def test_the_seen_case_linear_promised_under_the_budget_the_fit_does_not():
    # 8,128 tokens took about 70 s on 2 CPU cores; scaled linearly from 512 tokens it looked like 26 s
    samples = [(512, seconds(512)), (2048, seconds(2048))]
    assert prefill_estimate(samples[:1], 8128) < 30 < prefill_estimate(samples, 8128)


def test_noise_never_makes_the_estimate_smaller_than_linear_from_the_longer_sample_allows():
    # the longer sample ran relatively faster (noise, a warm cache): no negative quadratic term
    est = prefill_estimate([(512, 1.0), (2048, 3.0)], 8192)
    assert est == pytest.approx(8192 / 512)


class _Server:
    """/tokenize counts ' hello' units as one token each; a completion takes seconds(prompt tokens)."""

    timeout_s = 120.0

    def __init__(self, max_model_len: int, slow: float = 1.0):
        self.max_model_len, self.model, self.slow = max_model_len, "m", slow
        self.sent: list[int] = []
        self.last = 0.0

    def post(self, path, payload):
        tokens = payload["prompt"].count(" hello")
        if path == "/tokenize":
            return httpx.Response(200, json={"count": tokens})
        self.sent.append(tokens)
        self.last = seconds(tokens) * self.slow
        return httpx.Response(200, json={"usage": {"prompt_tokens": tokens}})


@pytest.fixture
def clock(monkeypatch):
    servers = []

    class Timer:
        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.ms = servers[0].last * 1000

    monkeypatch.setattr(features, "Timer", Timer)
    return servers


def test_a_slow_server_is_not_sent_the_near_limit_prompt(clock):
    server = _Server(8192)
    clock.append(server)
    outcome = near_max_len(server)
    assert outcome.status == NOT_RUN and server.sent == [512, 2048]
    assert outcome.detail["estimated_prefill_s"] == pytest.approx(seconds(8128), rel=1e-3)
    assert "512-token prompt took" in outcome.evidence and "2048-token prompt took" in outcome.evidence
    # kept with its key and arguments (the samples nested), so the Chinese report gives it in Chinese
    zh = message(outcome.evidence, "zh")
    assert "8,128 token 的提示词在本机预填充约需" in zh and "512 token 的提示词耗时" in zh and "未发送" in zh


def test_a_fast_server_is_sent_it(clock):
    server = _Server(8192, slow=0.1)
    clock.append(server)
    outcome = near_max_len(server)
    assert outcome.status == SUPPORTED and server.sent == [512, 2048, 8128]


def test_a_short_context_needs_one_sample(clock):
    server = _Server(2048, slow=0.1)
    clock.append(server)
    assert near_max_len(server).status == SUPPORTED and server.sent == [512, 1984]
