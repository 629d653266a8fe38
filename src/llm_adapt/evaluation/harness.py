"""Driving lm-evaluation-harness: the served side through its OpenAI-compatible backends, the gold side
in process (HF backend, float32, batched), the same items and few-shot seed on both. Per-item
correctness comes from lm-eval's logged samples."""

from __future__ import annotations

import os
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from llm_adapt.engines.endpoint import Endpoint

FEWSHOT_SEED = 1234  # lm-eval's default; passed explicitly so both sides see the same shots
AUTO = "auto"  # Settings.limit: as many items as the paired test needs (a pilot first; evaluation/stage.py)
PILOT_ITEMS = 100  # the pilot that measures the discordance for --limit auto


@dataclass(frozen=True)
class Settings:
    limit: int | str | None = None  # first N items, all (None), or AUTO
    num_fewshot: int | None = None  # None: each task's own
    num_concurrent: int = 4  # concurrent requests to the endpoint
    batch_size: int = 16  # gold batch
    served_batch_size: int = 1  # loglikelihood continuations per request (echo + logprobs); >1 gained nothing on vLLM-CPU
    seed: int = FEWSHOT_SEED


def served_backend(endpoint: Endpoint, model: str, tokenizer: str, generative: bool, s: Settings) -> tuple[str, dict]:
    """lm-eval model type and args for the endpoint: chat completions for generation, completions for loglikelihood."""
    common = {"model": model, "num_concurrent": s.num_concurrent, "max_retries": 3, "tokenizer": tokenizer}
    if generative:
        return "local-chat-completions", {**common, "base_url": f"{endpoint.base_url}/chat/completions",
                                          "tokenizer_backend": "huggingface", "tokenized_requests": False}
    # several continuations in one request (a list of token-id prompts, echo, logprobs) where a server
    # gains from it; vLLM-CPU's prompt log-probs are compute-bound (30 items: 48.7 s one each, 53.9 s at 8)
    return "local-completions", {**common, "base_url": f"{endpoint.base_url}/completions",
                                 "tokenizer_backend": "huggingface", "tokenized_requests": True,
                                 "batch_size": s.served_batch_size}


def gold_backend(model_path: str, s: Settings) -> tuple[str, dict]:
    return "hf", {"pretrained": model_path, "dtype": "float32", "device": "cpu", "batch_size": s.batch_size}


@contextmanager
def _api_key(key: str | None):
    """lm-eval's local backends read OPENAI_API_KEY; set it for the call only."""
    old = os.environ.get("OPENAI_API_KEY")
    if key:
        os.environ["OPENAI_API_KEY"] = key
    try:
        yield
    finally:
        if key:
            if old is None:
                os.environ.pop("OPENAI_API_KEY", None)
            else:
                os.environ["OPENAI_API_KEY"] = old


def gold_response_cache(model_path: str) -> str | None:
    """lm-eval's own response cache (a sqlite file per model content) for the in-process gold: its
    answers to the same requests are computed once across calls. None with LLM_ADAPT_CACHE=off."""
    from llm_adapt.accuracy import store
    from llm_adapt.cache import digest, model_fingerprint

    if not store.enabled():
        return None
    root = store.cache_root() / "lm-eval"
    root.mkdir(parents=True, exist_ok=True)
    return str(root / f"gold-fp32-{model_fingerprint(Path(model_path))}-{digest(store.versions())}")


def evaluate(backend: tuple[str, dict], tasks: list[str], tm, generative: bool, s: Settings,
             api_key: str | None = None, response_cache: str | None = None) -> dict:
    """One lm-eval run; returns its results dict (with samples). `response_cache`: lm-eval's sqlite
    cache of the model's answers (the gold side only: a server's answers are what is measured)."""
    from lm_eval import simple_evaluate

    kind, args = backend
    batch = args.pop("batch_size", 1)
    with _api_key(api_key):
        return simple_evaluate(model=kind, model_args=args, tasks=tasks, task_manager=tm, limit=s.limit,
                               use_cache=response_cache,
                               num_fewshot=s.num_fewshot, log_samples=True, batch_size=batch,
                               apply_chat_template=generative, fewshot_as_multiturn=generative,
                               random_seed=s.seed, numpy_random_seed=s.seed, torch_random_seed=s.seed,
                               fewshot_random_seed=s.seed)


def per_item(samples: list[dict]) -> dict[str, dict[int, bool]]:
    """{'metric,filter': {doc_id: correct}} for the 0/1 metrics of one task's logged samples."""
    out: dict[str, dict[int, bool]] = {}
    for sample in samples:
        for metric in sample.get("metrics", []):
            value = sample.get(metric)
            if isinstance(value, bool) or (isinstance(value, (int, float)) and float(value) in (0.0, 1.0)):
                out.setdefault(f"{metric},{sample.get('filter', 'none')}", {})[int(sample["doc_id"])] = bool(value)
    return out


def stderrs(results: dict, task: str) -> dict[str, float]:
    """lm-eval's standard error of each task score ('metric,filter' -> stderr); "N/A" ones left out."""
    row = results.get("results", {}).get(task, {})
    return {k.replace("_stderr,", ","): float(v) for k, v in row.items()
            if "_stderr," in k and isinstance(v, (int, float)) and not isinstance(v, bool)}


def aggregates(results: dict, task: str) -> dict[str, float]:
    """lm-eval's task scores ('metric,filter' -> value), stderr entries dropped."""
    row = results.get("results", {}).get(task, {})
    return {k: float(v) for k, v in row.items() if "," in k and "_stderr" not in k and isinstance(v, (int, float))}
