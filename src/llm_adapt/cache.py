"""Small results worth keeping between calls (JSON under $LLM_ADAPT_HOME/cache/KIND/), keyed by a
digest of everything they depend on; a key that changes is a miss, never a stale answer."""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from llm_adapt.home import adapt_home


def digest(parts: Any) -> str:
    """A stable key of JSON-able parts. Pure."""
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:32]


def _path(kind: str, key: str) -> Path:
    return adapt_home() / "cache" / kind / f"{key}.json"


def read_json(kind: str, key: str) -> Any | None:
    try:
        return json.loads(_path(kind, key).read_text())
    except (OSError, json.JSONDecodeError):
        return None


def write_json(kind: str, key: str, data: Any) -> None:
    """Atomically: a reader sees the old entry or the new one."""
    path = _path(kind, key)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as handle:
            json.dump(data, handle)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
