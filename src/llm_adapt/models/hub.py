"""Model ids on hubs: `hf:ORG/NAME[@REVISION]` (Hugging Face) and `ms:ORG/NAME[@REVISION]` (ModelScope).

Resolved with the hubs' own libraries into their usual caches, so an id already cached resolves
with no network (`--offline`, or the hubs' own offline variables). Only what a stage needs is
fetched: config and tokenizer first; weights when a stage needs them.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from llm_adapt.errors import AdaptError, UsageError

CONFIG_FILES = ["config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json", "tokenizer.model",
                "special_tokens_map.json", "*.jinja", "*.tiktoken", "vocab.json", "merges.txt"]
WEIGHT_FILES = ["*.safetensors", "*.safetensors.index.json"]
ID = re.compile(r"^(?P<hub>hf|ms):(?P<repo>[A-Za-z0-9][\w.-]*/[\w.-]+)(?:@(?P<rev>[\w./-]+))?$")


@dataclass(frozen=True)
class HubId:
    hub: str  # "hf" | "ms"
    repo: str
    revision: str | None

    @property
    def name(self) -> str:
        return self.repo.split("/")[-1]


def parse_hub_id(text: str) -> HubId:
    match = ID.match(text)
    if not match:
        raise UsageError(f"{text!r}: expected hf:ORG/NAME[@REVISION] or ms:ORG/NAME[@REVISION]")
    return HubId(match["hub"], match["repo"], match["rev"])


def offline_requested(flag: bool) -> bool:
    return flag or any(os.environ.get(v, "").lower() in ("1", "true", "yes")
                       for v in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "LLM_ADAPT_OFFLINE"))


def resolve_hub(hub_id: HubId, *, weights: bool, offline: bool = False) -> Path:
    """The local snapshot directory with what is needed; downloads (resumably) unless offline."""
    patterns = CONFIG_FILES + (WEIGHT_FILES if weights else [])
    what = "config, tokenizer and weights" if weights else "config and tokenizer"
    try:
        path = Path(download(hub_id, patterns, offline_requested(offline)))
    except AdaptError:
        raise
    except Exception as exc:  # each hub library raises its own family of errors
        raise _explain(hub_id, exc, what, offline_requested(offline)) from None
    if weights and not any(path.glob("*.safetensors")):
        miss = UsageError if offline_requested(offline) else AdaptError  # offline, a miss is the user's to fix
        raise miss(f"{hub_id.hub}:{hub_id.repo}: the weights are not in the local cache yet (only config and "
                   "tokenizer); run without --offline where the hub is reachable, or use --dummy")
    return path


def download(hub_id: HubId, patterns: list[str], offline: bool) -> str:
    """The one call that touches a hub (tests replace nothing here: they use a local cache)."""
    if hub_id.hub == "hf":
        from huggingface_hub import snapshot_download

        # Read the hub's variables now, not at import: a caller may set them after importing us.
        return snapshot_download(hub_id.repo, revision=hub_id.revision, allow_patterns=patterns,
                                 local_files_only=offline, cache_dir=os.environ.get("HF_HUB_CACHE") or None,
                                 endpoint=os.environ.get("HF_ENDPOINT") or None, etag_timeout=10)
    try:
        from modelscope import snapshot_download as ms_snapshot_download
    except ImportError:
        raise UsageError("ms: ids need ModelScope's library: pip install 'llm-adapt[modelscope]' (or pip install modelscope)") from None
    return ms_snapshot_download(hub_id.repo, revision=hub_id.revision or "master", allow_patterns=patterns,
                                local_files_only=offline)


def _explain(hub_id: HubId, exc: Exception, what: str, offline: bool) -> AdaptError:
    name = type(exc).__name__
    where = f"{hub_id.hub}:{hub_id.repo}" + (f"@{hub_id.revision}" if hub_id.revision else "")
    if name == "GatedRepoError":
        return UsageError(f"{where} is gated: accept its licence on the hub and set HF_TOKEN")
    if name in ("RepositoryNotFoundError", "RevisionNotFoundError"):
        return UsageError(f"{where}: no such model or revision on the hub; check the id")
    if name in ("LocalEntryNotFoundError", "CachedRepoTreeNotFoundError", "IncompleteSnapshotError") or offline:
        miss = UsageError if offline else AdaptError  # offline, a model the cache lacks is the user's to fix (exit 2)
        return miss(f"{where}: its {what} are not in the local cache"
                          + (" and offline mode is on; run once with network" if offline else
                             " and the hub cannot be reached; download it where there is network or pass a local directory"))
    if "Connect" in name or "Timeout" in name or "HTTPError" in name:
        return AdaptError(f"{where}: the hub cannot be reached ({name}) and the model is not cached; "
                          "pass --offline for a cached model, or a local directory")
    return AdaptError(f"{where}: could not resolve ({name}: {str(exc)[:160]})")
