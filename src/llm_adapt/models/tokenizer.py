"""One tokenizer per checkpoint folder and process. transformers takes 0.4-0.8 s to build SmolLM2's,
and a run builds the same one in most of its stages (the gold, each target's stop tokens and chat
template, the endpoint, the bench workload). A changed tokenizer file is a new entry: the key holds
every file's size and modification time. Nothing in llm-adapt changes a tokenizer after loading it.

Folders whose files other than the weights are byte-identical (a target that is a copy of the reference with
other weights, as compare's targets often are) share one build: each gets a shallow copy naming its own folder."""

from __future__ import annotations

import copy
import functools
import hashlib
import json
from pathlib import Path

WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".gguf", ".index.json")
MODEL_FILES = frozenset({"config.json", "generation_config.json"})  # the model's, not the tokenizer's
_built_by_content: dict[tuple, object] = {}  # the builds of the last few distinct tokenizers, by content
_CONTENT_KEPT = 8


def load_tokenizer(model_dir: str | Path):
    """transformers' AutoTokenizer for `model_dir`, built once per process while its files are unchanged."""
    folder = Path(model_dir).expanduser()
    if not folder.is_dir():  # a hub id, or a path transformers will refuse with its own message
        return _build(str(model_dir), ())
    folder = folder.resolve()
    return _build(str(folder), _stamp(folder))


def _stamp(folder: Path) -> tuple:
    return tuple((f.name, f.stat().st_size, f.stat().st_mtime_ns) for f in sorted(folder.iterdir()) if f.is_file())


@functools.lru_cache(maxsize=8)
def _build(folder: str, _stamp: tuple):
    from transformers import AutoTokenizer

    key = _content(Path(folder)) if _stamp else None
    built = _built_by_content.get(key) if key else None
    if built is not None:
        same = copy.copy(built)
        same.name_or_path = folder
        return same
    tokenizer = AutoTokenizer.from_pretrained(folder)
    if key:
        if len(_built_by_content) >= _CONTENT_KEPT:
            _built_by_content.pop(next(iter(_built_by_content)))
        _built_by_content[key] = tokenizer
    return tokenizer


def _content(folder: Path) -> tuple:
    """What AutoTokenizer reads, by name and SHA-1: every file but the weights and the model's own configs;
    config.json too where tokenizer_config.json names no tokenizer_class (AutoTokenizer then picks the class from
    the model type). Two models of other families with one tokenizer share a build."""
    try:
        named = bool(json.loads((folder / "tokenizer_config.json").read_text()).get("tokenizer_class"))
    except (OSError, ValueError, AttributeError):
        named = False
    skipped = MODEL_FILES if named else MODEL_FILES - {"config.json"}
    return tuple((f.name, hashlib.sha1(f.read_bytes()).hexdigest()) for f in sorted(folder.iterdir())
                 if f.is_file() and not f.name.endswith(WEIGHT_SUFFIXES) and f.name not in skipped)


def eos_ids_of(model_dir: Path, tokenizer) -> list[int]:
    """Stop tokens: the generation config's (else the model config's), plus the tokenizer's."""
    from transformers import AutoConfig, GenerationConfig

    try:
        value = GenerationConfig.from_pretrained(model_dir).eos_token_id
    except OSError:
        value = AutoConfig.from_pretrained(model_dir).eos_token_id
    ids = list(value) if isinstance(value, (list, tuple)) else [value] if value is not None else []
    if tokenizer.eos_token_id is not None and tokenizer.eos_token_id not in ids:
        ids.append(tokenizer.eos_token_id)
    return ids
