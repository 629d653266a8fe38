"""Benchmark statistics with vLLM's definitions, from vLLM 0.32 `vllm/benchmarks/serve.py`
`calculate_metrics` (and `benchmark`'s `process_one_metric` for key names). Pure.

TTFT, ITL and E2EL per request come from bench/events.py (vLLM's request functions). Here:
output length = the server's usage count, else the client tokenizer's count of the text;
TPOT = (E2EL - TTFT) / (output length - 1) for outputs longer than one token; for goodput a
one-token output's TPOT counts as 0 (it passes any TPOT SLO); ITL pools every request's gaps;
throughputs divide by the run's wall time. Key names follow `vllm bench serve --save-result`.
One deviation: a metric with no values is NaN here (vLLM writes 0); the vLLM-format file writes 0.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Iterable

import numpy as np
from pydantic import ConfigDict, with_config
from typing_extensions import TypedDict  # pydantic validates typing's TypedDict from Python 3.12 only

if TYPE_CHECKING:
    from llm_adapt.bench.client import RecordRow

PERCENTILES = (50, 90, 95, 99)
# A run's metrics under vLLM's names ("p99_ttft_ms", "output_throughput", ...: keys made per percentile asked
# for), each a figure (None where JSON held NaN: nothing measured); "errors" (by kind) and "slo" (the limits)
# hold figures by name.
Figure = float | int | None
Metrics = dict[str, Figure | dict[str, Figure]]
# each metric's median over repeated runs, its min, max, relative spread and count (across_repeats)
Spread = dict[str, dict[str, Figure]]


def pct_key(p: float) -> str:
    """vLLM's spelling of a percentile in a key: 99 -> "99", 99.9 -> "99.9"."""
    return str(int(p)) if int(p) == p else str(p)


def describe(values: Iterable[float], prefix: str, scale: float = 1000.0, pcts=PERCENTILES) -> dict[str, float]:
    """mean/median/std/pXX of `values` (seconds), as milliseconds by default, with vLLM's key names."""
    arr = np.asarray(list(values), dtype=float) * scale
    if arr.size == 0:
        arr = np.array([math.nan])
    out = {f"mean_{prefix}": float(np.mean(arr)), f"median_{prefix}": float(np.median(arr)),
           f"std_{prefix}": float(np.std(arr))}
    out.update({f"p{pct_key(p)}_{prefix}": float(np.percentile(arr, p)) for p in pcts})
    return out


def output_len(record: RecordRow) -> int:
    """vLLM: `output_tokens` from usage, else the tokenizer's count of the generated text. Without
    either we count token events (vLLM would count 1)."""
    return record.get("output_tokens") or record.get("client_tokens") or record.get("chunks") or 0


def tpot(record: RecordRow) -> float | None:
    """Time per output token after the first; None for outputs of one token (vLLM leaves them out), and for
    a stream whose tokens all came in one event: no time between tokens was seen, so it is not measured (vLLM
    would write about 0 ms)."""
    n = output_len(record)
    if n > 1 and record["ttft"] is not None and record.get("chunks", 2) >= 2:
        return (record["e2el"] - record["ttft"]) / (n - 1)
    return None


def meets_slo(record: RecordRow, slo: dict[str, float]) -> bool:
    """Goodput: a request counts when every SLO (in ms) holds. As vLLM: value <= slo / 1000 in seconds,
    and a one-token output's TPOT is 0, so it passes the TPOT SLO."""
    values = {"ttft": record["ttft"], "tpot": tpot(record) or 0.0, "e2el": record["e2el"]}
    return all(values[k] is not None and values[k] <= limit / 1000 for k, limit in slo.items())


def peak_rates(ok: list[RecordRow]) -> tuple[float, int]:
    """vLLM's max_output_tokens_per_s and max_concurrent_requests: token events and active requests
    counted in one-second buckets from the first successful request's start."""
    if not ok:
        return 0.0, 0
    t0 = min(r["start"] for r in ok)
    buckets = int(np.ceil(max(r["start"] + r["e2el"] for r in ok) - t0)) + 1
    tokens, active = np.zeros(buckets), np.zeros(buckets)
    for r in ok:
        times = np.cumsum([r["start"] + r["ttft"], *r["itl"]]) - t0
        for second in times.astype(int):
            if 0 <= second < buckets:
                tokens[second] += 1
        active[int(r["start"] - t0):int(r["start"] + r["e2el"] - t0) + 1] += 1
    return float(tokens.max()), int(active.max())


def compute_metrics(records: list[RecordRow], duration_s: float, slo: dict[str, float] | None = None,
                    pcts: Iterable[float] = PERCENTILES) -> Metrics:
    """Aggregate per-request records (warm-up excluded by the caller) into one metrics dict."""
    pcts = tuple(pcts)
    ok = [r for r in records if r["success"]]
    errors: dict[str, int] = {}
    for r in records:
        if not r["success"]:
            errors[r["error_kind"]] = errors.get(r["error_kind"], 0) + 1
    out_tokens = sum(output_len(r) for r in ok)
    in_tokens = sum(r["prompt_tokens"] or 0 for r in ok)
    duration_s = max(duration_s, 1e-9)
    busy = sum(r["e2el"] for r in ok)
    peak_tokens, peak_requests = peak_rates(ok)
    metrics: Metrics = {
        "duration": duration_s, "completed": len(ok), "failed": len(records) - len(ok), "errors": errors,
        "total_input_tokens": in_tokens, "total_output_tokens": out_tokens,
        "request_throughput": len(ok) / duration_s, "output_throughput": out_tokens / duration_s,
        "total_token_throughput": (in_tokens + out_tokens) / duration_s,
        "achieved_concurrency": busy / duration_s,
        "max_output_tokens_per_s": peak_tokens, "max_concurrent_requests": peak_requests,
        **describe([r["ttft"] for r in ok if r["ttft"] is not None], "ttft_ms", pcts=pcts),
        **describe([t for t in (tpot(r) for r in ok) if t is not None], "tpot_ms", pcts=pcts),
        **describe([g for r in ok for g in r["itl"]], "itl_ms", pcts=pcts),
        **describe([r["e2el"] for r in ok], "e2el_ms", pcts=pcts),
        **describe([r["dispatch_lag"] for r in records], "dispatch_lag_ms", pcts=pcts),
    }
    if slo:
        good = sum(1 for r in ok if meets_slo(r, slo))
        metrics.update(slo=slo, good_requests=good, request_goodput=good / duration_s)
    return metrics


def across_repeats(runs: list[Metrics]) -> tuple[Metrics, Spread]:
    """The median of every numeric metric over repeated runs, and each one's spread (min, max and
    (max - min) / median). Non-numeric entries come from the last run."""
    merged: Metrics = dict(runs[-1])
    spread: Spread = {}
    for key, value in runs[-1].items():
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            continue
        values = np.asarray([r[key] for r in runs if isinstance(r.get(key), (int, float))], dtype=float)
        values = values[~np.isnan(values)]
        if values.size == 0:
            continue
        median = float(np.median(values))
        merged[key] = int(median) if isinstance(value, int) and median.is_integer() else median
        spread[key] = {"median": median, "min": float(values.min()), "max": float(values.max()),
                       "rel_spread": float((values.max() - values.min()) / median) if median else math.nan,
                       "n": int(values.size)}
    return merged, spread


def latency_summary(e2els: list[float]) -> dict[str, float]:
    """`vllm bench latency`'s view of sequential requests: mean and percentiles of end-to-end latency."""
    arr = np.asarray(e2els, dtype=float)
    if arr.size == 0:  # every request failed: nothing to summarise (the errors are in the metrics)
        return {"iterations": 0, "avg_latency": float("nan"),
                **{f"p{p}_latency": float("nan") for p in (10, 25, 50, 75, 90, 99)}}
    return {"iterations": int(arr.size), "avg_latency": float(arr.mean()),
            **{f"p{p}_latency": float(np.percentile(arr, p)) for p in (10, 25, 50, 75, 90, 99)}}


@with_config(ConfigDict(extra="allow"))
class TokenAccounting(TypedDict):
    """Whose token counts agree (token_accounting), over a run's successful requests."""
    requests: int
    usage_reported: int  # requests whose server reported usage
    client_vs_server_disagree: int  # the client's tokenizer against the server's usage, beyond the tolerance
    chunks_vs_server_disagree: int  # streamed chunks against the server's usage
    tolerance: float
    fixed_length_honoured: bool  # every request produced exactly max_tokens (ignore_eos, min_tokens)
    wrong_length: int


@with_config(ConfigDict(extra="allow"))
class Knee(TypedDict):
    """The smallest load of a sweep that reaches `share_of_best` of its best output throughput (knee)."""
    load: int | float  # a concurrency, or a request rate
    output_throughput: float
    share_of_best: float


def token_accounting(records: list[RecordRow], tolerance: float = 0.05) -> TokenAccounting:
    """Server usage vs client tokenizer vs chunk count, and whether the fixed lengths were honoured
    (every request asks for ignore_eos with min_tokens = max_tokens)."""
    ok = [r for r in records if r["success"]]
    disagree = [r for r in ok if r.get("client_tokens") is not None and r["output_tokens"]
                and abs(r["client_tokens"] - r["output_tokens"]) > tolerance * r["output_tokens"]]
    chunks_off = [r for r in ok if r["output_tokens"] and abs(r["chunks"] - r["output_tokens"]) > tolerance * r["output_tokens"]]
    wrong = [r for r in ok if output_len(r) != r["max_tokens"]]
    return {"requests": len(ok), "usage_reported": sum(1 for r in ok if r["usage_reported"]),
            "client_vs_server_disagree": len(disagree), "chunks_vs_server_disagree": len(chunks_off),
            "tolerance": tolerance, "fixed_length_honoured": not wrong, "wrong_length": len(wrong)}


def knee(points: list[dict[str, Any]], share: float = 0.9) -> Knee | None:
    """The smallest load that reaches `share` of the best output throughput of a sweep."""
    if not points:
        return None
    best = max(p["output_throughput"] for p in points)
    for p in sorted(points, key=lambda p: p["load"]):
        if p["output_throughput"] >= share * best:
            return {"load": p["load"], "output_throughput": p["output_throughput"], "share_of_best": share}
    return None
