"""Before any work against an endpoint: is it there, is it OpenAI-compatible, which model, may we in."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlparse

import httpx

from llm_adapt.engines.client import auth_headers
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
        raise AdaptError(f"cannot reach {endpoint.base_url}: connection refused; is the server running there?") from None
    except httpx.TimeoutException:
        raise AdaptError(f"{endpoint.base_url} did not answer within {timeout_s:g} s; check the address and the server") from None
    except httpx.HTTPError as exc:
        raise AdaptError(f"cannot reach {endpoint.base_url}: {exc}; check the URL") from None
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
