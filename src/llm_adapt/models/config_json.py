"""A model's config.json, as read."""

from __future__ import annotations

from typing import Any

# transformers' schema, not llm-adapt's: open-ended (each family adds keys of its own, some nest a text_config),
# so it stays a mapping of its own keys; models/spec.ModelSpec is the typed record read from it.
ConfigJson = dict[str, Any]
