"""Benchmark statistics with vLLM's definitions (vllm/benchmarks/serve.py). Pure.

TTFT: time to the first chunk carrying content. TPOT: (E2EL - TTFT) / (output tokens - 1).
ITL: gaps between content chunks. E2EL: request start to last byte. Field names follow
`vllm bench serve --save-result` wherever the metric is the same.
"""

from __future__ import annotations

import math
from typing import Any, Iterable

import numpy as np

PERCENTILES = (50, 90, 95, 99)


def describe(values: Iterable[float], prefix: str, scale: float = 1000.0, pcts=PERCENTILES) -> dict[str, float]:
    """mean/median/std/pXX of `values` (seconds), as milliseconds by default, with vLLM's key names."""
    arr = np.asarray(list(values), dtype=float) * scale
    if arr.size == 0:
        arr = np.array([math.nan])
    out = {f"mean_{prefix}": float(np.mean(arr)), f"median_{prefix}": float(np.median(arr)),
           f"std_{prefix}": float(np.std(arr))}
    out.update({f"p{p}_{prefix}": float(np.percentile(arr, p)) for p in pcts})
    return out


def tpot(record: dict[str, Any]) -> float | None:
    if record["output_tokens"] and record["output_tokens"] > 1 and record["ttft"] is not None:
        return (record["e2el"] - record["ttft"]) / (record["output_tokens"] - 1)
    return None


def meets_slo(record: dict[str, Any], slo: dict[str, float]) -> bool:
    """Goodput: a request counts when every SLO (in ms) holds."""
    values = {"ttft": record["ttft"], "tpot": tpot(record), "e2el": record["e2el"]}
    return all(values[k] is not None and values[k] * 1000 <= limit for k, limit in slo.items())


def compute_metrics(records: list[dict[str, Any]], duration_s: float, slo: dict[str, float] | None = None) -> dict[str, Any]:
    """Aggregate per-request records (warm-up excluded by the caller) into one metrics dict."""
    ok = [r for r in records if r["success"]]
    errors: dict[str, int] = {}
    for r in records:
        if not r["success"]:
            errors[r["error_kind"]] = errors.get(r["error_kind"], 0) + 1
    out_tokens = sum(r["output_tokens"] or 0 for r in ok)
    in_tokens = sum(r["prompt_tokens"] or 0 for r in ok)
    duration_s = max(duration_s, 1e-9)
    busy = sum(r["e2el"] for r in ok)
    metrics: dict[str, Any] = {
        "duration": duration_s, "completed": len(ok), "failed": len(records) - len(ok), "errors": errors,
        "total_input_tokens": in_tokens, "total_output_tokens": out_tokens,
        "request_throughput": len(ok) / duration_s, "output_throughput": out_tokens / duration_s,
        "total_token_throughput": (in_tokens + out_tokens) / duration_s,
        "achieved_concurrency": busy / duration_s,
        **describe([r["ttft"] for r in ok if r["ttft"] is not None], "ttft_ms"),
        **describe([t for t in (tpot(r) for r in ok) if t is not None], "tpot_ms"),
        **describe([g for r in ok for g in r["itl"]], "itl_ms"),
        **describe([r["e2el"] for r in ok], "e2el_ms"),
        **describe([r["dispatch_lag"] for r in records], "dispatch_lag_ms"),
    }
    if slo:
        good = sum(1 for r in ok if meets_slo(r, slo))
        metrics.update(slo=slo, good_requests=good, request_goodput=good / duration_s)
    return metrics


def latency_summary(e2els: list[float]) -> dict[str, float]:
    """`vllm bench latency`'s view of sequential requests: mean and percentiles of end-to-end latency."""
    arr = np.asarray(e2els, dtype=float)
    return {"iterations": int(arr.size), "avg_latency": float(arr.mean()),
            **{f"p{p}_latency": float(np.percentile(arr, p)) for p in (10, 25, 50, 75, 90, 99)}}


def token_accounting(records: list[dict[str, Any]], tolerance: float = 0.05) -> dict[str, Any]:
    """Server usage vs client tokenizer vs chunk count, and whether the fixed lengths were honoured
    (every request asks for ignore_eos with min_tokens = max_tokens)."""
    ok = [r for r in records if r["success"]]
    disagree = [r for r in ok if r.get("client_tokens") is not None and r["output_tokens"]
                and abs(r["client_tokens"] - r["output_tokens"]) > tolerance * r["output_tokens"]]
    chunks_off = [r for r in ok if r["output_tokens"] and abs(r["chunks"] - r["output_tokens"]) > tolerance * r["output_tokens"]]
    wrong = [r for r in ok if (r["output_tokens"] or 0) != r["max_tokens"]]
    return {"requests": len(ok), "usage_reported": sum(1 for r in ok if r["usage_reported"]),
            "client_vs_server_disagree": len(disagree), "chunks_vs_server_disagree": len(chunks_off),
            "tolerance": tolerance, "fixed_length_honoured": not wrong, "wrong_length": len(wrong)}


def knee(points: list[dict[str, Any]], share: float = 0.9) -> dict[str, Any] | None:
    """The smallest load that reaches `share` of the best output throughput of a sweep."""
    if not points:
        return None
    best = max(p["output_throughput"] for p in points)
    for p in sorted(points, key=lambda p: p["load"]):
        if p["output_throughput"] >= share * best:
            return {"load": p["load"], "output_throughput": p["output_throughput"], "share_of_best": share}
    return None
