"""The endpoint accuracy's requests in vLLM's own style: each payload is built by a pure function,
and a request never raises: it comes back as a `Reply` record (as bench/client.send does for the
benchmarks), which the section reads. A refusal is classified from the answer alone: too long for
the served context (that prompt is skipped), log-probs the server could not serialise (NaN/Inf:
evidence of a fault), any other refusal; a server that stopped answering is "gone" (the sections
after it are not run).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from llm_adapt.engines.client import EndpointClient, ServerGone
from llm_adapt.messages import reason

OK, TOO_LONG, NONFINITE, REFUSED, GONE = "ok", "too long", "non-finite", "refused", "gone"
IN_FLIGHT = 4  # requests at once: the server batches them, where one at a time left it idle between
TOO_LONG_WORDS = ("maximum context length", "max_model_len", "too long", "longer than")


@dataclass(frozen=True)
class Reply:
    kind: str  # OK, TOO_LONG, NONFINITE, REFUSED or GONE
    body: dict[str, Any] | None = None  # the JSON answer when OK
    detail: str = ""  # why not OK, in one line

    @property
    def ok(self) -> bool:
        return self.kind == OK


@dataclass(frozen=True)
class Request:
    path: str  # "/tokenize" (the server root's) or "completions" / "chat/completions" (under /v1)
    payload: dict[str, Any]
    what: str  # what a refusal is called in the reason


def tokenize_request(text: str | None, messages: list[dict[str, str]] | None) -> Request:
    """The server's own tokens for a prompt: a plain text with the special tokens, or a chat rendered
    with its generation prompt. Pure."""
    payload = ({"prompt": text, "add_special_tokens": True} if text is not None else
               {"messages": messages, "add_generation_prompt": True})
    return Request("/tokenize", payload, reason("rq_tokenize"))


def prompt_logprobs_request(ids: list[int], k: int, cache_salt: str | None = None) -> Request:
    """Teacher-forced log-probs of every prompt position, the top k of each (vLLM's prompt_logprobs); with
    `cache_salt`, no cached block of a request without the same salt serves it (vLLM's prefix-cache isolation).
    Pure."""
    salt = {"cache_salt": cache_salt} if cache_salt else {}
    return Request("completions", {"prompt": ids, "max_tokens": 1, "temperature": 0, "prompt_logprobs": k, **salt},
                   reason("rq_prompt_logprobs"))


def greedy_request(text: str | None, messages: list[dict[str, str]] | None, max_new_tokens: int, k: int) -> Request:
    """Greedy decoding with the chosen token ids and the top k log-probs of each generated token. Pure."""
    common = {"max_tokens": max_new_tokens, "temperature": 0, "logprobs": True, "top_logprobs": k,
              "return_token_ids": True, "return_tokens_as_token_ids": True}
    if text is not None:
        return Request("completions", {"prompt": text, **common, "logprobs": k}, reason("rq_greedy"))
    return Request("chat/completions", {"messages": messages, **common}, reason("rq_greedy"))


def refusal(status: int, text: str, what: str) -> Reply:
    """A non-200 answer as a record: too long, non-finite log-probs, or refused. Pure."""
    if "out of range float" in text.lower():
        return Reply(NONFINITE, detail=reason("er_nonfinite", what=what, text=text[:120]))
    if status == 400 and any(w in text[:200].lower() for w in TOO_LONG_WORDS):
        return Reply(TOO_LONG, detail=reason("er_too_long", text=text[:200]))
    return Reply(REFUSED, detail=reason("er_refused", what=what, status=status, text=text[:160]))


def send(client: EndpointClient, request: Request) -> Reply:
    """One request; never raises (a Ctrl-C aside)."""
    try:
        reply = client.post(request.path, request.payload)
    except ServerGone as exc:
        return Reply(GONE, detail=reason("er_gone", error=exc.error) if getattr(exc, "error", None) else str(exc))
    except Exception as exc:  # a client-side failure is this request's record, not the section's end
        return Reply(REFUSED, detail=reason("er_exception", what=request.what, error=type(exc).__name__,
                                            text=str(exc)[:160]))
    if reply.status_code != 200:
        return refusal(reply.status_code, reply.text, request.what)
    try:
        return Reply(OK, reply.json())
    except ValueError:
        return Reply(REFUSED, detail=reason("er_not_json", what=request.what, text=reply.text[:120]))


def send_all(client: EndpointClient, requests: list[Request], workers: int = IN_FLIGHT,
             progress: Callable[[int, int], None] | None = None) -> list[Reply]:
    """Every request, `workers` at once, replies in the requests' order; `progress(done, total)` advances
    as they arrive."""
    from concurrent.futures import ThreadPoolExecutor, as_completed

    if not requests:
        return []
    pool = ThreadPoolExecutor(max_workers=max(1, min(workers, len(requests))))
    try:
        futures = [pool.submit(send, client, request) for request in requests]
        for done, _ in enumerate(as_completed(futures), 1):
            if progress:
                progress(done, len(requests))
        return [f.result() for f in futures]
    finally:  # a Ctrl-C returns at once: requests in flight end with the server we stop
        pool.shutdown(wait=False, cancel_futures=True)


def first_gone(replies: list[Reply]) -> Reply | None:
    """The first reply of a server that stopped answering, if any. Pure."""
    return next((r for r in replies if r.kind == GONE), None)


def prompt_logprobs_of(body: dict[str, Any]) -> list[dict[int, dict]] | None:
    """The per-position {token id: {"logprob", "rank", ...}} of a prompt_logprobs answer; None when the
    server left them out. Pure."""
    plp = body["choices"][0].get("prompt_logprobs")
    if not plp:
        return None
    return [{int(t): v for t, v in (pos or {}).items()} for pos in plp]
