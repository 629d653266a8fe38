"""A mock OpenAI streaming server with no model cost: configurable TTFT, inter-token delay,
output length and error rate. It calibrates the benchmark client and serves the tests."""

from __future__ import annotations

import asyncio
import json
import random
import time
from dataclasses import dataclass

from aiohttp import web


@dataclass
class MockConfig:
    ttft_ms: float = 0.0
    itl_ms: float = 0.0
    output_len: int | None = None  # None: honour max_tokens
    error_rate: float = 0.0
    fault: str | None = None  # malformed | truncate | stall | reset: how a faulty stream breaks
    fault_rate: float = 0.0
    seed: int = 0
    model: str = "mock"
    max_model_len: int = 4096


def build_app(cfg: MockConfig) -> web.Application:
    return MockServer(cfg).app()


class MockServer:
    """The routes of one mock server: its settings, its random stream (errors, faults) and the
    requests running now (its /metrics)."""

    def __init__(self, cfg: MockConfig):
        self.cfg, self.rng, self.running = cfg, random.Random(cfg.seed), 0

    def app(self) -> web.Application:
        app = web.Application()
        app.add_routes([web.post("/v1/completions", self.completions), web.post("/v1/chat/completions", self.chat),
                        web.get("/v1/models", self.models), web.get("/health", self.health),
                        web.post("/tokenize", self.tokenize), web.get("/metrics", self.metrics)])
        return app

    def n_tokens(self, body: dict) -> int:
        return self.cfg.output_len if self.cfg.output_len is not None else int(body.get("max_tokens") or 16)

    @staticmethod
    def prompt_tokens(body: dict) -> int:
        prompt = body.get("prompt")
        if isinstance(prompt, list):
            return len(prompt)
        if body.get("messages"):
            return sum(len(str(m.get("content", "")).split()) for m in body["messages"])
        return len(str(prompt or "").split())

    def usage(self, body: dict, n: int) -> dict:
        return {"prompt_tokens": self.prompt_tokens(body), "completion_tokens": n,
                "total_tokens": self.prompt_tokens(body) + n}

    async def generate(self, request: web.Request, chat: bool) -> web.StreamResponse:
        self.running += 1
        try:
            return await self._generate(request, chat)
        finally:
            self.running -= 1

    async def _generate(self, request: web.Request, chat: bool) -> web.StreamResponse:
        cfg = self.cfg
        arrived = time.perf_counter()  # TTFT counts from here: parsing the request is part of it
        body = await request.json()
        if cfg.error_rate and self.rng.random() < cfg.error_rate:
            return web.json_response({"error": {"message": "injected failure"}}, status=500)
        n, created = self.n_tokens(body), int(time.time())
        if not body.get("stream"):
            await asyncio.sleep((cfg.ttft_ms + cfg.itl_ms * max(n - 1, 0)) / 1000)
            text = " tok" * n
            choice = {"index": 0, "message": {"role": "assistant", "content": text}} if chat else {"index": 0, "text": text}
            return web.json_response({"id": "mock", "object": "completion", "created": created, "model": cfg.model,
                                      "choices": [{**choice, "finish_reason": "length"}], "usage": self.usage(body, n)})
        return await self._stream(request, body, chat, arrived, n, created)

    async def _stream(self, request: web.Request, body: dict, chat: bool, arrived: float, n: int,
                      created: int) -> web.StreamResponse:
        cfg = self.cfg
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        fault = cfg.fault if cfg.fault and self.rng.random() < cfg.fault_rate else None
        if chat:
            await _event(resp, {"choices": [{"index": 0, "delta": {"role": "assistant"}}]})
        await sleep_until(arrived + cfg.ttft_ms / 1000)
        if not cfg.itl_ms and not fault:  # zero model cost: the whole stream in one write
            await resp.write(_whole_stream(body, n, chat, created, cfg.model, self.prompt_tokens(body)))
            return resp
        for i in range(n):
            if i:
                await sleep_until(time.perf_counter() + cfg.itl_ms / 1000)
            if fault and i == n // 2:
                return await _break(resp, request, fault)
            choice = {"index": 0, "delta": {"content": " tok"}} if chat else {"index": 0, "text": " tok"}
            await _event(resp, {"id": "mock", "created": created, "model": cfg.model, "choices": [choice]})
        if (body.get("stream_options") or {}).get("include_usage"):
            await _event(resp, {"choices": [], "usage": self.usage(body, n)})
        await resp.write(b"data: [DONE]\n\n")
        return resp

    async def completions(self, request):
        return await self.generate(request, chat=False)

    async def chat(self, request):
        return await self.generate(request, chat=True)

    async def models(self, request):
        return web.json_response({"object": "list", "data": [{"id": self.cfg.model, "object": "model",
                                                              "max_model_len": self.cfg.max_model_len}]})

    async def health(self, request):
        return web.Response(text="")

    async def tokenize(self, request):
        body = await request.json()
        count = self.prompt_tokens(body)
        return web.json_response({"count": count, "max_model_len": self.cfg.max_model_len, "tokens": list(range(count))})

    async def metrics(self, request):
        return web.Response(text=f"vllm:num_requests_running {self.running}\nvllm:num_requests_waiting 0\n"
                                 "vllm:kv_cache_usage_perc 0.0\n")


async def sleep_until(deadline: float) -> None:
    """Wake at `deadline` (perf_counter) to well under a millisecond: the event loop's timers round
    up to whole milliseconds, so sleep to just short of it and yield until it passes."""
    while (left := deadline - time.perf_counter()) > 0.002:
        await asyncio.sleep(left - 0.002)
    while time.perf_counter() < deadline:
        await asyncio.sleep(0)


def _whole_stream(body: dict, n: int, chat: bool, created: int, model: str, prompt_tokens: int) -> bytes:
    choice = {"index": 0, "delta": {"content": " tok"}} if chat else {"index": 0, "text": " tok"}
    event = b"data: " + json.dumps({"id": "mock", "created": created, "model": model, "choices": [choice]}).encode() + b"\n\n"
    tail = b""
    if (body.get("stream_options") or {}).get("include_usage"):
        usage = {"prompt_tokens": prompt_tokens, "completion_tokens": n, "total_tokens": prompt_tokens + n}
        tail = b"data: " + json.dumps({"choices": [], "usage": usage}).encode() + b"\n\n"
    return event * n + tail + b"data: [DONE]\n\n"


async def _break(resp: web.StreamResponse, request: web.Request, fault: str) -> web.StreamResponse:
    """Break the stream the way misbehaving servers do."""
    if fault == "malformed":
        await resp.write(b"data: {not json\n\n")
        await resp.write(b"data: [DONE]\n\n")
    elif fault == "stall":
        await asyncio.sleep(3600)
    elif fault == "reset":
        request.transport.close()
    return resp  # "truncate": end without [DONE]


async def _event(resp: web.StreamResponse, data: dict) -> None:
    await resp.write(b"data: " + json.dumps(data).encode() + b"\n\n")


def serve(cfg: MockConfig, host: str = "127.0.0.1", port: int = 8000) -> None:
    # The default asyncio loop, not uvloop: libuv timers round to whole milliseconds, which
    # would blur the TTFT the mock is asked to produce.
    # Stopped, it drops open streams after a second: a stalled one would hold the stop for a minute.
    web.run_app(build_app(cfg), host=host, port=port, print=None, access_log=None, shutdown_timeout=1.0)
