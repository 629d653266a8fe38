"""Where llm-adapt keeps what it converts and caches (`$LLM_ADAPT_HOME`, default `~/.cache/llm-adapt`)."""

from __future__ import annotations

import os
from pathlib import Path


def adapt_home() -> Path:
    """The cache root; created on first use."""
    root = Path(os.environ.get("LLM_ADAPT_HOME") or Path.home() / ".cache" / "llm-adapt")
    root.mkdir(parents=True, exist_ok=True)
    return root


def models_cache() -> Path:
    """Converted models (GGUF -> safetensors directories) live here."""
    path = adapt_home() / "models"
    path.mkdir(parents=True, exist_ok=True)
    return path
