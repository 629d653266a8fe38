"""Before any work against an endpoint: is it there, is it OpenAI-compatible, which model, may we in."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlparse

import httpx

from llm_adapt.engines.client import EndpointClient, ServerGone, auth_headers
from llm_adapt.engines.endpoint import Endpoint
from llm_adapt.errors import AdaptError, UsageError

PRECHECK_TIMEOUT_S = 10.0  # the pre-check's wait, unless the command's own --timeout is shorter


def precheck_timeout(timeout_s: float | None = None) -> float:
    """The pre-check never waits longer than the command's own request timeout."""
    return min(PRECHECK_TIMEOUT_S, timeout_s) if timeout_s else PRECHECK_TIMEOUT_S


def not_found(endpoint: Endpoint, url: str) -> str:
    """What a 404 from /v1/models means. The hint of the server's /v1 base only where the URL given is not it."""
    parsed = urlparse(endpoint.base_url)
    if parsed.path.rstrip("/") == "/v1":
        return f"{url} answered 404: not an OpenAI-compatible server at {endpoint.root_url}; check the host and port"
    return (f"{url} answered 404: no OpenAI-compatible API under {parsed.path}; give the server's base URL, "
            f"e.g. {parsed.scheme}://{parsed.netloc}/v1")


def served_models(endpoint: Endpoint, timeout_s: float = PRECHECK_TIMEOUT_S) -> tuple[list[dict[str, Any]] | None, str]:
    """(models listed by /v1/models or None, why not). Raises for what the user must fix."""
    url = f"{endpoint.base_url}/models"
    try:
        reply = httpx.get(url, headers=auth_headers(endpoint), timeout=timeout_s)
    except httpx.ConnectError:
        raise UsageError(f"cannot reach {endpoint.base_url}: connection refused; is the server running there?") from None
    except httpx.TimeoutException:
        # a server that takes the connection and never answers is there and broken (exit 1), not a wrong address
        raise AdaptError(f"{endpoint.base_url} did not answer within {timeout_s:g} s; check the address and the server") from None
    except httpx.HTTPError as exc:
        raise UsageError(f"cannot reach {endpoint.base_url}: {exc}; check the URL") from None
    if reply.status_code in (401, 403):
        raise UsageError(f"{endpoint.base_url} answered {reply.status_code}: the API key is missing or wrong; "
                         "pass --api-key KEY or set OPENAI_API_KEY")
    if reply.status_code == 404:
        raise UsageError(not_found(endpoint, url))
    if reply.status_code != 200:
        return None, f"GET /v1/models answered {reply.status_code}"
    try:
        data = reply.json()["data"]
    except (ValueError, KeyError, TypeError):
        raise UsageError(f"{url} did not answer OpenAI-style JSON ({reply.headers.get('content-type', '?')}); "
                         "is this an OpenAI-compatible server?") from None
    return data, ""


def resolve_model_name(endpoint: Endpoint, timeout_s: float = PRECHECK_TIMEOUT_S) -> tuple[str, dict[str, Any]]:
    """The model to request: the one named on the command line (checked), else the only one served."""
    listed, why = served_models(endpoint, timeout_s)
    if listed is None:
        if endpoint.model:
            return endpoint.model, {"listed": None, "note": why}
        raise UsageError(f"{endpoint.base_url}: cannot list models ({why}); name one with --model")
    names = [m.get("id") for m in listed]
    if endpoint.model is None:
        if len(names) != 1:
            raise UsageError(f"{endpoint.base_url} serves {names}; choose one with --model")
        return names[0], {"listed": listed}
    if endpoint.model not in names:
        raise UsageError(f"model {endpoint.model!r} is not served at {endpoint.base_url}; it serves {names}")
    return endpoint.model, {"listed": listed}


ANSWER_TIMEOUT_S = 60.0  # one token of a short prompt: seconds even on a few CPU cores
# The smallest requests a served model answers: a chat turn and, for a model without a chat template, a
# plain completion. Either answering is enough.
FIRST_REQUESTS = (("chat/completions", {"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 1,
                                        "temperature": 0}),
                  ("completions", {"prompt": "Hi", "max_tokens": 1, "temperature": 0}))


def gist(text: str, limit: int = 80) -> str:
    """An error answer in a few words: an HTML page's text without its tags, whitespace collapsed. Pure."""
    plain = " ".join(re.sub(r"<[^>]*>", " ", text).split())
    return (plain[:limit] + "...") if len(plain) > limit else plain or "no body"


def refused_answers(answers: list[tuple[str, int, str]], base_url: str) -> str | None:
    """One line when every first request was answered with an error: [(path, HTTP status, body)]; None when
    one was answered 200. Pure."""
    if not answers or any(status == 200 for _, status, _ in answers):
        return None
    said = " and ".join(f"POST /v1/{path} answered {status} ({gist(body)})" for path, status, body in answers)
    return (f"{base_url} lists its models but serves no request: {said}; nothing was measured. Check the "
            "server's log, or give the URL of a server that answers")


def require_answers(endpoint: Endpoint, model: str | None = None, timeout_s: float = ANSWER_TIMEOUT_S) -> str:
    """Before any measuring against an endpoint: one token from its model, by chat or by plain completion.
    A server whose /v1/models answers while every POST fails is refused here, in one line (exit 2), before a
    gold is computed or a result is written. A request that times out or drops proves nothing: the
    measurement itself says what it sees. The served model's name."""
    model = model or resolve_model_name(endpoint)[0]
    client = EndpointClient(endpoint, model, timeout_s)
    answers = []
    try:
        for path, payload in FIRST_REQUESTS:
            try:
                reply = client.post(path, payload)
            except (ServerGone, httpx.HTTPError):
                return model
            if reply.status_code == 200:
                return model
            answers.append((path, reply.status_code, reply.text))
    finally:
        client.http.close()
    problem = refused_answers(answers, endpoint.base_url)
    if problem:
        raise UsageError(problem)
    return model
