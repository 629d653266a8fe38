"""One flat JSON per run with the fields `vllm bench serve --save-result` writes (vLLM 0.32
`vllm/benchmarks/serve.py`: `main_async` builds `result_json`, `benchmark` adds the metrics and
`process_one_metric` the mean_/median_/std_/pNN_ keys), so vLLM's sweep and plotting tools can read our
runs. Building the dict is pure; writing it is one function at the edge."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from llm_adapt.bench.stats import pct_key

METRICS = ("ttft", "tpot", "itl", "e2el")  # vLLM's --percentile-metrics names
SCALARS = ("duration", "completed", "failed", "total_input_tokens", "total_output_tokens", "request_throughput",
           "output_throughput", "total_token_throughput", "max_output_tokens_per_s", "max_concurrent_requests")


@dataclass(frozen=True)
class RunInfo:
    """What vLLM records about a run beside its metrics."""

    backend: str  # "openai" (completions) or "openai-chat"
    model_id: str
    tokenizer_id: str | None
    num_prompts: int
    request_rate: float
    burstiness: float
    max_concurrency: int | None
    label: str | None = None
    metadata: tuple[tuple[str, str], ...] = ()
    percentile_metrics: tuple[str, ...] = METRICS
    percentiles: tuple[float, ...] = (99,)
    goodput: bool = False


def _number(value: float) -> float:
    """vLLM writes 0 for a metric with no values (`np.mean(x or 0)`); we hold NaN for it."""
    return 0.0 if value is None or (isinstance(value, float) and math.isnan(value)) else value


def vllm_result(info: RunInfo, metrics: dict[str, Any], date: datetime) -> dict[str, Any]:
    """The flat dict vLLM saves, in vLLM's key order."""
    out: dict[str, Any] = {"date": date.strftime("%Y%m%d-%H%M%S"), "endpoint_type": info.backend,
                           "backend": info.backend, "label": info.label, "model_id": info.model_id,
                           "tokenizer_id": info.tokenizer_id, "num_prompts": info.num_prompts}
    out.update(dict(info.metadata))
    out.update(request_rate="inf" if math.isinf(info.request_rate) else info.request_rate,
               burstiness=info.burstiness, max_concurrency=info.max_concurrency)
    out.update({k: _number(metrics[k]) for k in SCALARS})
    out["request_goodput"] = metrics.get("request_goodput") if info.goodput else None
    for name in info.percentile_metrics:
        for stat in ("mean", "median", "std"):
            out[f"{stat}_{name}_ms"] = _number(metrics[f"{stat}_{name}_ms"])
        for p in info.percentiles:
            out[f"p{pct_key(p)}_{name}_ms"] = _number(metrics[f"p{pct_key(p)}_{name}_ms"])
    return out


def result_filename(info: RunInfo, date: datetime, given: str | None, level: str, repeat: int, several: bool) -> str:
    """vLLM's name `{label}-{rate}qps[-concurrency{N}]-{model}-{date}.json`, or --result-filename; when one
    command makes several runs, each name gains its level and repeat."""
    if given:
        name = given
    else:
        conc = f"-concurrency{info.max_concurrency}" if info.max_concurrency is not None else ""
        rate = "inf" if math.isinf(info.request_rate) else info.request_rate
        name = (f"{info.label or info.backend}-{rate}qps{conc}-{info.model_id.split('/')[-1]}-"
                f"{date.strftime('%Y%m%d-%H%M%S')}.json")
    if several:
        stem, dot, ext = name.rpartition(".")
        name = f"{stem}-{level}-r{repeat}.{ext}" if dot else f"{name}-{level}-r{repeat}"
    return name


SWEEP_SUMMARY = "summary.json"  # what `vllm bench sweep` writes per parameter set, and its plot commands read


def write_sweep_summary(out: Path, results: list[Path]) -> Path:
    """The command's vLLM-format results as one list in `out`/summary.json, the layout `vllm bench sweep`
    writes, so `vllm bench sweep plot_pareto OUT` (and `plot`) draw a sweep of ours."""
    return write_vllm_result(out / SWEEP_SUMMARY, [json.loads(path.read_text()) for path in results])


def write_vllm_result(path: Path, data: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(data))
    tmp.replace(path)
    return path
