"""What every probe gets: the endpoint, the official openai client, a raw HTTP client, server facts."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import httpx
from pydantic import ConfigDict, with_config
from typing_extensions import TypedDict  # pydantic validates typing's TypedDict from Python 3.12 only

from llm_adapt.engines.client import http_client, openai_client, url
from llm_adapt.engines.endpoint import Endpoint
from llm_adapt.messages import Said

SUPPORTED, UNSUPPORTED, ERROR, NOT_RUN = "supported", "unsupported", "error", "not run"
NOT_APPLICABLE = "not applicable"
NOT_ENABLED = "not enabled"  # off by the server's start flags (the plan's choice), with the flag that turns it on
NOT_JUDGED = "not judged"  # the model's own output decided the row, not the engine (a stop string never written)
# The probes a server must pass to be of use: chat and streamed chat, or for a base model (no chat template,
# so the server refuses chat) the completions API and streamed completions.
CORE_CHAT = ("chat completion", "streaming")
CORE_BASE = ("legacy completions", "streamed completions")
NO_CHAT_TEMPLATE = "pe_no_chat_template"  # the evidence key of a chat row refused for want of a template


def core_broken(rows: dict[str, ProbeRow]) -> list[str]:
    """The core features (core_features) the engine failed: every status but supported and not judged (the model
    ended its answer at once: accuracy judges the model, not this row). Pure."""
    return [n for n in core_features(rows) if (rows.get(n) or {}).get("status") not in (SUPPORTED, NOT_JUDGED)]


def core_features(rows: dict[str, ProbeRow]) -> tuple[str, ...]:
    """The probes that decide whether the server works: CORE_BASE where the chat row was not applicable for
    want of a chat template (a base model), else CORE_CHAT. rows: probe name -> its row. Pure."""
    chat = rows.get("chat completion") or {}
    key = getattr(chat.get("evidence"), "key", None)  # a Reason, as written and as results.read_checked reads it
    return CORE_BASE if chat.get("status") == NOT_APPLICABLE and key == NO_CHAT_TEMPLATE else CORE_CHAT


class ServerFacts(TypedDict, total=False):
    """What a run knows of the server beyond its answers (run_probes' `facts`)."""
    tool_calling: dict | None  # the plan's ToolCalling.to_dict, where this run planned the server
    flat_logits: bool  # the gold's logits are flat: a random or untrained model's own choices are not the engine's
    no_chat_template: bool  # the server refused chat for want of a template (found by the first probe)


@dataclass
class ProbeContext:
    endpoint: Endpoint
    client: Any  # openai.OpenAI
    http: httpx.Client
    model: str
    max_model_len: int | None = None
    timeout_s: float = 120.0
    facts: ServerFacts = field(default_factory=dict)

    def post(self, path: str, payload: dict) -> httpx.Response:
        """Raw POST relative to /v1 (path "completions") or to the root (path "/tokenize")."""
        return self.http.post(url(self.endpoint, path), json=payload, timeout=self.timeout_s)

    def get(self, path: str) -> httpx.Response:
        return self.http.get(url(self.endpoint, path), timeout=self.timeout_s)


def make_context(endpoint: Endpoint, model: str, timeout_s: float = 120.0) -> ProbeContext:
    return ProbeContext(endpoint, openai_client(endpoint, timeout_s), http_client(endpoint, timeout_s), model,
                        timeout_s=timeout_s)


@with_config(ConfigDict(extra="allow"))
class SentRequest(TypedDict, total=False):
    """A request a probe sent, as recorded beside its answer: chat messages or a plain prompt."""
    messages: list[dict[str, str]]
    prompt: str
    max_tokens: int
    temperature: int | float  # as sent (0, not 0.0)


@with_config(ConfigDict(extra="allow"))
class ProbeDetail(TypedDict, total=False):
    """What a probe recorded beyond its evidence: what it sent and got back where it judged an answer, and
    each probe's own figures (served names, time to first token, a tool call's arguments, ...)."""
    request: SentRequest
    text: str


@with_config(ConfigDict(extra="allow"))
class ProbeRow(TypedDict, total=False):
    """One probe in probes.json (its name and status always; the rest where the probe recorded them)."""
    name: str
    status: str  # SUPPORTED, UNSUPPORTED, ERROR, NOT_RUN, NOT_APPLICABLE, NOT_ENABLED or NOT_JUDGED
    evidence: Said
    latency_ms: float | None
    detail: ProbeDetail


@dataclass
class Outcome:
    status: str
    evidence: str
    detail: ProbeDetail = field(default_factory=dict)


def snippet(text: Any, limit: int = 160) -> str:
    text = str(text).replace("\n", "\\n")
    return text if len(text) <= limit else text[:limit] + "..."


class Timer:
    def __enter__(self):
        self.start = time.monotonic()
        return self

    def __exit__(self, *exc):
        self.ms = round((time.monotonic() - self.start) * 1000, 1)
