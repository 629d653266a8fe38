"""vLLM's per-request timing rules (bench/events.py and the client's stream reader), by hand."""

import asyncio
import json

import pytest

from llm_adapt.bench.client import Record, _read_stream
from llm_adapt.bench.events import StreamTimes, event_text, is_token_event


def ev(text=None, delta=None, usage=None, choices=True):
    if not choices:
        return {"choices": [], "usage": usage}
    choice = {"index": 0, "delta": delta} if delta is not None else {"index": 0, "text": text}
    return {"choices": [choice], **({"usage": usage} if usage else {})}


def feed(events):
    times = StreamTimes(start=1.0)
    for event, now in events:
        times.feed(event, now)
    return times


def test_itl_is_one_gap_per_token_event_even_when_one_read_carries_several():
    # t=1.10 first token; 1.15 two events parsed from one read (tiny gap each); 1.30 one event with 3 tokens
    t = feed([(ev("a"), 1.10), (ev("b"), 1.15), (ev("c"), 1.1501), (ev("def"), 1.30)])
    assert t.ttft == pytest.approx(0.10)
    assert t.itl == pytest.approx([0.05, 0.0001, 0.1499])  # the 3-token event is one gap, as in vLLM
    assert t.events == 4 and t.text == "abcdef"


def test_e2el_ends_at_the_last_token_event_not_at_the_usage_event():
    t = feed([(ev("a"), 1.1), (ev("b"), 1.2), (ev(choices=False, usage={"completion_tokens": 2, "prompt_tokens": 7}), 1.5)])
    assert t.e2el == pytest.approx(0.2) and t.output_tokens == 2 and t.prompt_tokens == 7
    assert not is_token_event({"choices": [], "usage": {}})


def test_ttft_at_the_first_chunk_with_choices_role_only_and_reasoning_included():
    t = feed([(ev(delta={"role": "assistant", "content": ""}), 1.05), (ev(delta={"content": "x"}), 1.2)])
    assert t.ttft == pytest.approx(0.05) and t.itl == pytest.approx([0.15])  # vLLM's chat rule
    r = feed([(ev(delta={"reasoning_content": "think"}), 1.3), (ev(delta={"reasoning": "more"}), 1.4)])
    assert r.ttft == pytest.approx(0.3) and r.text == "thinkmore"  # a reasoning-only answer is not empty
    assert event_text(ev(delta={"role": "assistant"})) == ""


def test_no_token_event_means_no_ttft():
    t = feed([(ev(choices=False, usage={"completion_tokens": 0}), 1.2)])
    assert t.ttft is None and t.e2el is None


class FakeContent:
    def __init__(self, reads, pause_s):
        self.reads, self.pause_s = reads, pause_s

    async def iter_any(self):
        for i, data in enumerate(self.reads):
            if i:
                await asyncio.sleep(self.pause_s)
            yield data


class FakeResponse:
    def __init__(self, reads, pause_s=0.0):
        self.content = FakeContent(reads, pause_s)


def sse(*events, done=True):
    body = b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events)
    return body + (b"data: [DONE]\n\n" if done else b"")


def read(reads, pause_s=0.0):
    import time

    record = Record(index=0, scheduled=0.0)
    asyncio.run(_read_stream(FakeResponse(reads, pause_s), record, time.perf_counter()))
    return record


def test_reader_times_each_event_and_stops_e2el_before_done():
    usage = ev(choices=False, usage={"completion_tokens": 3, "prompt_tokens": 4})
    r = read([sse(ev("a"), ev("b"), ev("c"), done=False), sse(usage)], pause_s=0.2)
    assert r.success and r.chunks == 3 and len(r.itl) == 2 and r.output_tokens == 3 and r.usage_reported
    assert max(r.itl) < 0.01  # three events in one read: tiny gaps, not one gap for the read
    assert r.e2el < 0.1  # [DONE] came 0.2 s later; E2EL ends at the last token


def test_reader_reasoning_only_succeeds_and_failures_are_named():
    r = read([sse(ev(delta={"role": "assistant"}), ev(delta={"reasoning_content": "hmm"}))])
    assert r.success and r.text == "hmm" and r.output_tokens is None and not r.usage_reported
    assert read([sse(ev(choices=False, usage={"completion_tokens": 0}))]).error_kind == "empty"
    assert read([sse(ev("a"), done=False)]).error_kind == "truncated_stream"
    assert read([b"data: {oops\n\n"]).error_kind == "malformed_stream"
