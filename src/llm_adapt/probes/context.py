"""What every probe gets: the endpoint, the official openai client, a raw HTTP client, server facts."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import httpx

from llm_adapt.engines.client import http_client, openai_client, url
from llm_adapt.engines.endpoint import Endpoint

SUPPORTED, UNSUPPORTED, ERROR, NOT_RUN = "supported", "unsupported", "error", "not run"
NOT_APPLICABLE = "not applicable"
NOT_ENABLED = "not enabled"  # off by the server's start flags (the plan's choice), with the flag that turns it on


@dataclass
class ProbeContext:
    endpoint: Endpoint
    client: Any  # openai.OpenAI
    http: httpx.Client
    model: str
    max_model_len: int | None = None
    timeout_s: float = 120.0
    facts: dict[str, Any] = field(default_factory=dict)

    def post(self, path: str, payload: dict) -> httpx.Response:
        """Raw POST relative to /v1 (path "completions") or to the root (path "/tokenize")."""
        return self.http.post(url(self.endpoint, path), json=payload, timeout=self.timeout_s)

    def get(self, path: str) -> httpx.Response:
        return self.http.get(url(self.endpoint, path), timeout=self.timeout_s)


def make_context(endpoint: Endpoint, model: str, timeout_s: float = 120.0) -> ProbeContext:
    return ProbeContext(endpoint, openai_client(endpoint, timeout_s), http_client(endpoint, timeout_s), model,
                        timeout_s=timeout_s)


@dataclass
class Outcome:
    status: str
    evidence: str
    detail: dict[str, Any] = field(default_factory=dict)


def snippet(text: Any, limit: int = 160) -> str:
    text = str(text).replace("\n", "\\n")
    return text if len(text) <= limit else text[:limit] + "..."


class Timer:
    def __enter__(self):
        self.start = time.monotonic()
        return self

    def __exit__(self, *exc):
        self.ms = round((time.monotonic() - self.start) * 1000, 1)
