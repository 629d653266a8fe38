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


_HASHES = "file-hashes.json"


def model_fingerprint(model_dir: Path) -> str:
    """The content hash of every file of a model directory (weights, config, tokenizer, template)."""
    memo_path = adapt_home() / "cache" / _HASHES
    try:
        memo = json.loads(memo_path.read_text())
    except (OSError, json.JSONDecodeError):
        memo = {}
    parts, changed = [], False
    for path in sorted(p for p in Path(model_dir).rglob("*") if p.is_file() and not p.name.startswith(".")):
        st = path.stat()
        stamp = f"{path.resolve()}|{st.st_size}|{st.st_mtime_ns}|{st.st_ino}"
        if stamp not in memo:
            with open(path, "rb") as handle:
                memo[stamp] = hashlib.file_digest(handle, "sha256").hexdigest()
            changed = True
        parts.append([str(path.relative_to(model_dir)), memo[stamp]])
    if changed:
        memo_path.parent.mkdir(parents=True, exist_ok=True)
        _write_atomic(memo_path, memo)
    return digest(parts)


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
    _write_atomic(path, data)


def _write_atomic(path: Path, data: Any) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as handle:
            json.dump(data, handle)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
