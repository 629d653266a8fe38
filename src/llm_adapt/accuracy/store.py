"""The gold reference and the noise floors, measured once and kept on disk under $LLM_ADAPT_HOME.

A measurement is keyed by everything its numbers depend on: the model directory's content (every
file hashed, remembered by size, mtime and inode so an unchanged model is not read again), the
prompts as rendered to token ids, the decoding settings, the runner (device, dtype, numerics), and
the versions of llm-adapt, torch and transformers. Anything else gives a new key, so a stale entry
is never read; `LLM_ADAPT_CACHE=off` measures afresh and writes nothing. Entries are written
atomically (a temporary directory, then a rename) and the least recently used ones are removed
beyond `LLM_ADAPT_CACHE_GIB` (default 20).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

# Bumped when what a measurement records changes: 2 adds the gold's per-position top-1/top-2 margin and the
# decisive-position rates, which an entry measured before lacks (it would be judged on all positions); 3 the
# cosine of two zero vectors (1, not 0: a padding row zero in both runs is identical); 4 the gold's actual
# input to each layer where the model computes it between modules (a scaled embedding), which 3 assumed.
CACHE_FORMAT = 4
CACHE_ENV = "LLM_ADAPT_CACHE"  # "off": measure afresh, write nothing
SIZE_ENV = "LLM_ADAPT_CACHE_GIB"
DEFAULT_CAP_GIB = 20.0


def enabled() -> bool:
    return os.environ.get(CACHE_ENV, "on").lower() not in ("off", "0", "no", "false")


def cache_root() -> Path:
    from llm_adapt.home import adapt_home

    path = adapt_home() / "measured"
    path.mkdir(parents=True, exist_ok=True)
    return path


def versions() -> dict[str, str]:
    import torch
    import transformers

    from llm_adapt import __version__

    return {"llm_adapt": __version__, "torch": torch.__version__, "transformers": transformers.__version__,
            "format": str(CACHE_FORMAT)}


# The last measurement of each kind in this process, kept in memory: a run's later stages reuse it
# without reading the disk, and with the disk cache off (one measurement per process, not per call).
_RECENT: dict[str, tuple[str, Any]] = {}


def remember(kind: str, key: str, value: Any) -> None:
    _RECENT[kind] = (key, value)


def recall(kind: str, key: str) -> Any | None:
    held = _RECENT.get(kind)
    return held[1] if held is not None and held[0] == key else None


def forget() -> None:
    _RECENT.clear()


def entry_dir(kind: str, key: str) -> Path:
    return cache_root() / f"{kind}-{key}"


def lookup(kind: str, key: str) -> Path | None:
    """The entry's directory when it is complete, its use time refreshed; None otherwise."""
    if not enabled():
        return None
    path = entry_dir(kind, key)
    if not (path / "meta.json").is_file():
        return None
    os.utime(path / "meta.json")  # least recently used goes first
    return path


def meta_of(path: Path) -> dict[str, Any]:
    return json.loads((path / "meta.json").read_text())


def store(kind: str, key: str, write, meta: dict[str, Any]) -> Path | None:
    """Write an entry through `write(directory)` into a temporary directory, then rename it into
    place with its meta.json last; an error leaves no entry behind."""
    if not enabled():
        return None
    root = cache_root()
    final = entry_dir(kind, key)
    tmp = Path(tempfile.mkdtemp(prefix=f".{kind}-", dir=root))
    try:
        write(tmp)
        meta = {**meta, "kind": kind, "key": key, "measured_at": time.strftime("%Y-%m-%dT%H:%M:%S"),
                "versions": versions()}
        (tmp / "meta.json").write_text(json.dumps(meta, indent=1, default=str))
        _put_in_place(tmp, final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    evict(cap_bytes())
    return final


def _put_in_place(tmp: Path, final: Path) -> None:
    """Rename the finished entry into place. A complete entry there already is the same measurement, written
    by another process measuring at the same time (the key is everything the numbers depend on): it stays,
    and it may be being read. A directory there without meta.json (a removal that was cut short) goes."""
    if (final / "meta.json").is_file():
        shutil.rmtree(tmp, ignore_errors=True)
        return
    if final.exists():
        shutil.rmtree(final, ignore_errors=True)
    try:
        os.replace(tmp, final)
    except OSError:
        if not (final / "meta.json").is_file():  # not another writer's entry: a real failure
            raise
        shutil.rmtree(tmp, ignore_errors=True)


def cap_bytes() -> int:
    try:
        gib = float(os.environ.get(SIZE_ENV, DEFAULT_CAP_GIB))
    except ValueError:
        gib = DEFAULT_CAP_GIB
    return int(gib * 1024**3)


def evict(cap: int, root: Path | None = None) -> list[str]:
    """Remove the least recently used entries until the rest fit `cap` bytes; the names removed."""
    root = root or cache_root()
    entries = []
    for path in root.iterdir():
        try:
            size = sum(f.stat().st_size for f in path.iterdir() if f.is_file())
            entries.append(((path / "meta.json").stat().st_mtime, size, path))
        except (FileNotFoundError, NotADirectoryError):  # not an entry, or one another process is writing or removing
            continue
    total, removed = sum(size for _, size, _ in entries), []
    for _, size, path in sorted(entries, key=lambda e: e[0]):
        if total <= cap:
            break
        shutil.rmtree(path, ignore_errors=True)
        total -= size
        removed.append(path.name)
    return removed


def reuse_note(meta: dict[str, Any]):
    """Where a cached measurement came from, as a message (the report words it in its language)."""
    from llm_adapt.messages import reason

    return reason("gold_reused", measured_at=meta.get("measured_at"), version=meta.get("versions", {}).get("llm_adapt"))
