"""One tokenizer per checkpoint folder and process. transformers takes 0.4-0.8 s to build SmolLM2's,
and a run builds the same one in most of its stages (the gold, each target's stop tokens and chat
template, the endpoint, the bench workload). A changed tokenizer file is a new entry: the key holds
every file's size and modification time. Nothing in llm-adapt changes a tokenizer after loading it."""

from __future__ import annotations

import functools
from pathlib import Path


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

    return AutoTokenizer.from_pretrained(folder)


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
