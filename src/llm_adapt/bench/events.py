"""How one streamed answer becomes TTFT, ITL and E2EL: vLLM's rules, as a small state machine fed
(event, time) pairs. Pure: the client feeds it clock readings, tests feed it synthetic ones.

The rules follow vLLM 0.32 `vllm/benchmarks/lib/endpoint_request_func.py`,
`async_request_openai_completions` and `async_request_openai_chat_completions`:
- a *token event* is an SSE event whose `choices` list is non-empty, whatever it carries (text, an empty
  string, a role-only delta, `reasoning_content`); the trailing usage event (`choices: []`) is not one;
- each event is timed on its own, when it is parsed, so several events that arrive in one network read
  give several (tiny) gaps, and one event that carries several tokens gives one gap;
- TTFT: request start to the first token event; ITL: one gap per later token event;
- E2EL (vLLM's `latency`): request start to the last token event, not to `[DONE]`;
- the answer is empty (a failure) only when no token event came at all.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


def is_token_event(event: dict[str, Any]) -> bool:
    """vLLM: `if choices := data.get("choices")`: any non-empty choices list is a token event."""
    return bool(event.get("choices"))


def event_text(event: dict[str, Any]) -> str:
    """Generated text of one event: completions `text`, chat `content`, and reasoning text (which vLLM
    servers stream as `reasoning_content`, newer ones as `reasoning`), for the client token count."""
    choices = event.get("choices") or []
    if not choices:
        return ""
    choice = choices[0]
    if "delta" in choice:
        delta = choice.get("delta") or {}
        return "".join(delta.get(k) or "" for k in ("reasoning_content", "reasoning", "content"))
    return choice.get("text") or ""


@dataclass
class StreamTimes:
    """Times are seconds on one monotonic clock; `start` is when the request was sent."""

    start: float
    ttft: float | None = None
    itl: list[float] = field(default_factory=list)
    last: float | None = None  # time of the last token event
    events: int = 0  # token events seen
    output_tokens: int | None = None  # from the usage event, when the server sends one
    prompt_tokens: int | None = None
    parts: list[str] = field(default_factory=list)

    def feed(self, event: dict[str, Any], now: float) -> None:
        if is_token_event(event):
            if self.ttft is None:
                self.ttft = now - self.start
            else:
                self.itl.append(now - self.last)
            self.last = now
            self.events += 1
            text = event_text(event)
            if text:
                self.parts.append(text)
        usage = event.get("usage")
        if usage:  # vLLM reads it from the choices-less event; reading any event is the same on vLLM servers
            self.output_tokens = usage.get("completion_tokens")
            self.prompt_tokens = usage.get("prompt_tokens", self.prompt_tokens)

    @property
    def e2el(self) -> float | None:
        """vLLM's `latency = most_recent_timestamp - st`: start to the last token event."""
        return None if self.last is None else self.last - self.start

    @property
    def text(self) -> str:
        return "".join(self.parts)
