"""The async streaming client. One pooled aiohttp session; SSE parsed as it arrives; monotonic
clocks. `send` never raises: every outcome, failures included, is a record."""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass, field
from typing import Any, TypedDict

import aiohttp

from llm_adapt.bench.events import StreamTimes

try:  # msgspec (a vLLM dependency) decodes each SSE event several times faster than json
    from msgspec import DecodeError as _DecodeError
    from msgspec.json import decode as _decode
except ImportError:  # pragma: no cover
    _decode, _DecodeError = json.loads, json.JSONDecodeError


@dataclass
class RequestSpec:
    index: int
    prompt: str | list[int] | None  # completions: text or token ids
    max_tokens: int
    prompt_len: int | None = None
    messages: list[dict[str, str]] | None = None  # chat instead of completions
    ignore_eos: bool = True
    scheduled: float = 0.0  # send offset from the start, seconds
    warmup: bool = False


@dataclass
class Record:
    index: int
    scheduled: float
    max_tokens: int = 0  # asked for, with ignore_eos: the length the server must return
    start: float = 0.0
    dispatch_lag: float = 0.0
    success: bool = False
    error_kind: str | None = None
    error: str | None = None
    ttft: float | None = None
    itl: list[float] = field(default_factory=list)
    e2el: float = 0.0
    chunks: int = 0
    output_tokens: int | None = None
    prompt_tokens: int | None = None
    usage_reported: bool = False
    client_tokens: int | None = None
    text: str = ""


class RecordRow(TypedDict):
    """A Record as the requests' JSONL file holds it (dataclasses.asdict), the form the statistics read."""

    index: int
    scheduled: float
    max_tokens: int
    start: float
    dispatch_lag: float
    success: bool
    error_kind: str | None
    error: str | None
    ttft: float | None
    itl: list[float]
    e2el: float
    chunks: int
    output_tokens: int | None
    prompt_tokens: int | None
    usage_reported: bool
    client_tokens: int | None
    text: str


def payload(spec: RequestSpec, model: str) -> tuple[str, dict[str, Any]]:
    """(path, JSON body) of one streaming request; pure."""
    body: dict[str, Any] = {"model": model, "max_tokens": spec.max_tokens, "stream": True, "temperature": 0,
                            "stream_options": {"include_usage": True}}
    if spec.ignore_eos:
        body.update(ignore_eos=True, min_tokens=spec.max_tokens)
    if spec.messages is not None:
        return "chat/completions", {**body, "messages": spec.messages}
    return "completions", {**body, "prompt": spec.prompt}


async def send(session: aiohttp.ClientSession, base_url: str, model: str, spec: RequestSpec, t0: float,
               headers: dict[str, str] | None = None) -> Record:
    record = Record(index=spec.index, scheduled=spec.scheduled, max_tokens=spec.max_tokens, prompt_tokens=spec.prompt_len)
    path, body = payload(spec, model)
    start = time.perf_counter()
    record.start, record.dispatch_lag = start - t0, max(0.0, start - t0 - spec.scheduled)
    try:
        async with session.post(f"{base_url}/{path}", json=body, headers=headers) as resp:
            if resp.status != 200:
                text = (await resp.text())[:200]
                return _fail(record, f"http_{resp.status}", text, start)
            await _read_stream(resp, record, start)
    except asyncio.TimeoutError:
        return _fail(record, "timeout", "no complete answer within the request timeout", start)
    except aiohttp.ClientError as exc:
        return _fail(record, "connection", f"{type(exc).__name__}: {exc}"[:200], start)
    return record


async def _read_stream(resp: aiohttp.ClientResponse, record: Record, start: float) -> None:
    """Parse SSE events as bytes arrive; each event is timed when it is parsed (vLLM's rule, see
    bench/events.py). One split per network chunk keeps long streams linear in their length."""
    times, done, pending = StreamTimes(start=start, prompt_tokens=record.prompt_tokens), False, b""
    async for data in resp.content.iter_any():
        events = (pending + data).split(b"\n\n")
        pending = events.pop()  # an incomplete event waits for the next chunk
        for event in events:
            now = time.perf_counter()  # per event, as vLLM's chat client does (before decoding)
            payload = _event_payload(event)
            if payload is None:
                continue
            if payload is DONE:
                done = True
                break
            if isinstance(payload, _Malformed):
                _fail(record, "malformed_stream", f"not JSON: {payload.data[:80]!r}", start)
                return
            times.feed(payload, now)
        if done:
            break
    _finish(record, times, done, start)


def _finish(record: Record, times: StreamTimes, done: bool, start: float) -> None:
    record.ttft, record.itl, record.chunks, record.text = times.ttft, times.itl, times.events, times.text
    record.output_tokens, record.prompt_tokens = times.output_tokens, times.prompt_tokens
    record.usage_reported = times.output_tokens is not None
    if not done:  # stricter than vLLM, which counts a cleanly closed stream without [DONE] as a success
        _fail(record, "truncated_stream", "the stream ended without [DONE]", start)
    elif times.ttft is None:
        _fail(record, "empty", "no token event (no chunk with choices) in the stream", start)
    else:
        record.e2el = times.e2el  # to the last token event, not to [DONE]
        record.success = True



DONE = object()


class _Malformed:
    def __init__(self, data: bytes):
        self.data = data


def _event_payload(event: bytes):
    """The JSON of one SSE event's data line(s); DONE; None for comments and keep-alives."""
    if b"\n" in event:  # several fields: keep the data lines
        event = b"".join(line[5:].strip() for line in event.split(b"\n") if line.startswith(b"data:"))
        data = event
    else:
        event = event.strip()
        if not event.startswith(b"data:"):
            return None
        data = event[5:].strip()
    if not data:
        return None
    if data == b"[DONE]":
        return DONE
    try:
        return _decode(data)
    except (_DecodeError, ValueError):
        return _Malformed(data)


def _fail(record: Record, kind: str, message: str, start: float) -> Record:
    record.success, record.error_kind, record.error = False, kind, message
    record.e2el = time.perf_counter() - start
    return record
