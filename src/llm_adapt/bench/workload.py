"""What to send: fixed-length prompts cut from the corpus, a ShareGPT-style file, or a prompt suite."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from llm_adapt.bench.arrivals import schedule
from llm_adapt.bench.client import RequestSpec
from llm_adapt.errors import UsageError


def corpus_token_stream(tokenizer) -> list[int]:
    from llm_adapt.prompts import corpus_texts

    ids: list[int] = []
    for text in corpus_texts().values():
        ids += tokenizer(text, add_special_tokens=False)["input_ids"]
    return ids


def fixed_prompts(tokenizer, n: int, input_len: int, seed: int = 0) -> list[list[int]]:
    """n prompts of exactly `input_len` token ids: windows of the corpus at random offsets, each led by a
    random token. The corpus is small (a few thousand tokens), so windows alone would repeat; a random
    first token makes every prompt's first cache block its own, and so no two prompts share a prefix."""
    stream = corpus_token_stream(tokenizer)
    while len(stream) < input_len + 1:
        stream = stream + stream
    rng = np.random.default_rng(seed)
    starts = rng.integers(0, len(stream) - input_len, size=n)
    # ordinary tokens only: special ones sit at the start of the vocabulary
    leads = rng.integers(min(1000, len(tokenizer) // 2), len(tokenizer), size=n)
    return [[int(lead)] + stream[s:s + input_len - 1] for lead, s in zip(leads, starts)]


def shared_prefixes(tokenizer, prompts: list[list[int]], prefix_len: int, repeats: int, seed: int) -> list[list[int]]:
    """A prefix-cache workload: consecutive groups of `repeats` prompts share one `prefix_len`-token
    prefix (each group's its own), followed by each prompt's own tokens."""
    if prefix_len <= 0 or not prompts:
        return prompts
    groups = -(-len(prompts) // repeats)
    prefixes = fixed_prompts(tokenizer, groups, prefix_len, seed)
    return [prefixes[i // repeats] + p for i, p in enumerate(prompts)]


def fixed_specs(tokenizer, n: int, warmup: int, input_len: int, output_len: int, *, as_ids: bool, seed: int = 0,
                rate: float = float("inf"), burstiness: float = 1.0, prefix_len: int = 0,
                prefix_repeats: int = 1) -> list[RequestSpec]:
    """Fixed-length requests; with prefix_len, shared-prefix groups (warm-up requests get prefixes of
    their own, so they cannot prime the cache for the measured ones)."""
    prompts = fixed_prompts(tokenizer, n + warmup, input_len, seed)
    prompts = (shared_prefixes(tokenizer, prompts[:warmup], prefix_len, prefix_repeats, seed + 1)
               + shared_prefixes(tokenizer, prompts[warmup:], prefix_len, prefix_repeats, seed + 2))
    times = [0.0] * warmup + schedule(n, rate, burstiness, seed)
    return [RequestSpec(index=i - warmup, prompt=p if as_ids else tokenizer.decode(p), prompt_len=len(p),
                        max_tokens=output_len, scheduled=times[i], warmup=i < warmup) for i, p in enumerate(prompts)]


def sharegpt_specs(path: Path, tokenizer, n: int, warmup: int, max_output: int, *, seed: int = 0,
                   rate: float = float("inf"), burstiness: float = 1.0) -> list[RequestSpec]:
    """ShareGPT JSON/JSONL: each item's first human turn is the prompt, the next gpt turn sets the output length."""
    pairs = _sharegpt_pairs(path)
    if not pairs:
        raise UsageError(f"{path}: no conversation with a human turn followed by a gpt turn")
    rng = np.random.default_rng(seed)
    picks = [pairs[i] for i in rng.integers(0, len(pairs), size=n + warmup)]
    times = [0.0] * warmup + schedule(n, rate, burstiness, seed)
    specs = []
    for i, (prompt, answer) in enumerate(picks):
        out_len = max(4, min(max_output, len(tokenizer(answer, add_special_tokens=False)["input_ids"])))
        specs.append(RequestSpec(index=i - warmup, prompt=prompt, prompt_len=len(tokenizer(prompt)["input_ids"]),
                                 max_tokens=out_len, scheduled=times[i], warmup=i < warmup))
    return specs


def _sharegpt_pairs(path: Path) -> list[tuple[str, str]]:
    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise UsageError(f"--dataset {path}: {exc.strerror}") from None
    try:
        items = json.loads(text) if text.lstrip().startswith("[") else [json.loads(line) for line in text.splitlines() if line.strip()]
    except json.JSONDecodeError as exc:
        raise UsageError(f"--dataset {path}: not JSON or JSONL ({exc.msg} at line {exc.lineno})") from None
    pairs = []
    for item in items:
        turns = item.get("conversations") if isinstance(item, dict) else None
        if isinstance(turns, list) and len(turns) >= 2 and turns[0].get("from") == "human":
            pairs.append((str(turns[0].get("value", "")), str(turns[1].get("value", ""))))
    return pairs


def suite_specs(suite: str, n: int, warmup: int, output_len: int, *, seed: int = 0, rate: float = float("inf"),
                burstiness: float = 1.0) -> list[RequestSpec]:
    """Chat requests cycling through a prompt suite."""
    from llm_adapt.prompts import load_prompts

    prompts = [p for p in load_prompts(suite) if p.messages]
    times = [0.0] * warmup + schedule(n, rate, burstiness, seed)
    return [RequestSpec(index=i - warmup, prompt=None, messages=prompts[i % len(prompts)].as_messages(),
                        max_tokens=output_len, scheduled=times[i], warmup=i < warmup) for i in range(n + warmup)]
