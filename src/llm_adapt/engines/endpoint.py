"""An OpenAI-compatible endpoint: where it is, which model it serves, and how to authenticate."""

from __future__ import annotations

import os
from dataclasses import dataclass
from urllib.parse import urlparse

from pydantic import ConfigDict, with_config
from typing_extensions import TypedDict  # pydantic validates typing's TypedDict from Python 3.12 only

from llm_adapt.errors import UsageError


@with_config(ConfigDict(extra="allow"))
class EndpointRecord(TypedDict, total=False):
    """An endpoint as results record it (Endpoint.redacted): never the key itself; {} where none was used."""
    base_url: str
    model: str | None
    api_key: str | None  # "set" or None


@dataclass(frozen=True)
class Endpoint:
    base_url: str  # ends with /v1
    model: str | None = None  # served model name; None: ask /v1/models
    api_key: str | None = None

    @property
    def root_url(self) -> str:
        """Server root, where /health, /metrics and /tokenize live."""
        return self.base_url.removesuffix("/").removesuffix("/v1")

    def redacted(self) -> EndpointRecord:
        """What may be written to results: never the key itself."""
        return {"base_url": self.base_url, "model": self.model, "api_key": "set" if self.api_key else None}


def endpoint_from_url(url: str, model: str | None = None, api_key: str | None = None) -> Endpoint:
    """Normalise a user's URL (with or without /v1) and take the key from the flag or OPENAI_API_KEY."""
    parsed = urlparse(url)
    if parsed.scheme not in ("http", "https") or not parsed.netloc:
        raise UsageError(f"--endpoint {url!r}: not an http(s) URL; use e.g. http://127.0.0.1:8000/v1")
    base = url.rstrip("/")
    if not base.endswith("/v1"):
        base += "/v1"
    return Endpoint(base_url=base, model=model, api_key=api_key or os.environ.get("OPENAI_API_KEY") or None)
