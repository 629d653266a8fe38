"""The one place that talks HTTP to an OpenAI-compatible server: auth header, URLs, the official
openai client, and a server that stops answering turned into one exception."""

from __future__ import annotations

from typing import Any

import httpx

from llm_adapt.engines.endpoint import Endpoint


class ServerGone(Exception):
    """The server stopped answering (connection refused or reset, or a timeout); `error`: the transport
    error's name."""

    def __init__(self, message: str, error: str | None = None):
        super().__init__(message)
        self.error = error


def auth_headers(endpoint: Endpoint) -> dict[str, str]:
    return {"Authorization": f"Bearer {endpoint.api_key}"} if endpoint.api_key else {}


def url(endpoint: Endpoint, path: str) -> str:
    """'/tokenize' -> the server root's; 'completions' -> under /v1."""
    return endpoint.root_url + path if path.startswith("/") else f"{endpoint.base_url}/{path}"


def http_client(endpoint: Endpoint, timeout_s: float) -> httpx.Client:
    return httpx.Client(headers=auth_headers(endpoint), timeout=timeout_s)


def openai_client(endpoint: Endpoint, timeout_s: float) -> Any:
    """The official client, no retries: a failure is evidence, not something to hide."""
    from openai import OpenAI

    return OpenAI(base_url=endpoint.base_url, api_key=endpoint.api_key or "EMPTY", timeout=timeout_s, max_retries=0)


class EndpointClient:
    """POSTs for one served model: the model name added to every payload, ServerGone on transport errors."""

    def __init__(self, endpoint: Endpoint, model: str, timeout_s: float = 300.0):
        self.endpoint, self.model = endpoint, model
        self.http = http_client(endpoint, timeout_s)

    def post(self, path: str, payload: dict) -> httpx.Response:
        try:
            return self.http.post(url(self.endpoint, path), json={"model": self.model, **payload})
        except httpx.TransportError as exc:
            raise ServerGone(f"the server stopped answering ({type(exc).__name__})", type(exc).__name__) from None
