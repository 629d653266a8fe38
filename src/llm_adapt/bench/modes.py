"""Benchmark modes: serve (rate and/or concurrency), latency (one at a time), throughput (all at
once) and sweep (a list of concurrencies, with the knee of the curve)."""

from __future__ import annotations

import asyncio
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, ClassVar

import httpx

from llm_adapt.bench import stats
from llm_adapt.bench.client import RequestSpec
from llm_adapt.bench.load import ResourceSampler, read_records, run_load
from llm_adapt.bench.workload import fixed_specs, sharegpt_specs, suite_specs
from llm_adapt.engines.endpoint import Endpoint
from llm_adapt.results import StageResult

MODES = ("serve", "latency", "throughput", "sweep")


@dataclass(frozen=True)
class BenchOptions:
    mode: str = "serve"
    num_prompts: int = 32
    input_len: int = 128
    output_len: int = 64
    request_rate: float = math.inf
    burstiness: float = 1.0
    max_concurrency: int | None = None
    concurrencies: tuple[int, ...] = (1, 2, 4, 8)
    warmup: int = 2
    iterations: int = 8
    slo: dict[str, float] | None = None
    dataset: str | None = None
    suite: str | None = None
    seed: int = 0
    timeout_s: float = 600.0


class BenchResult(StageResult):
    KIND: ClassVar[str] = "bench"

    mode: str
    endpoint: dict[str, Any]
    model: str
    settings: dict[str, Any]
    runs: list[dict[str, Any]] = []
    knee: dict[str, Any] | None = None
    interrupted: bool = False
    notes: list[str] = []


@dataclass
class Workload:
    tokenizer: Any
    as_ids: bool
    notes: list[str] = field(default_factory=list)


def server_tokenizes(endpoint: Endpoint, model: str) -> bool:
    """vLLM-like servers take token-id prompts and have /tokenize; then lengths are exact."""
    try:
        reply = httpx.post(endpoint.root_url + "/tokenize", json={"model": model, "prompt": "hello"}, timeout=10)
        return reply.status_code == 200
    except httpx.HTTPError:
        return False


def build_specs(opts: BenchOptions, work: Workload, n: int, *, rate: float, warmup: int, output_len: int | None = None) -> list[RequestSpec]:
    out_len = output_len or opts.output_len
    if opts.dataset:
        return sharegpt_specs(Path(opts.dataset), work.tokenizer, n, warmup, out_len, seed=opts.seed, rate=rate,
                              burstiness=opts.burstiness)
    if opts.suite:
        return suite_specs(opts.suite, n, warmup, out_len, seed=opts.seed, rate=rate, burstiness=opts.burstiness)
    return fixed_specs(work.tokenizer, n, warmup, opts.input_len, out_len, as_ids=work.as_ids, seed=opts.seed,
                       rate=rate, burstiness=opts.burstiness)


def run_bench(endpoint: Endpoint, model: str, work: Workload, opts: BenchOptions, out: Path, *, pid: int | None = None,
              progress: Callable[[str, int, int], None] | None = None, name: str = "bench.json") -> BenchResult:
    result = BenchResult(mode=opts.mode, endpoint=endpoint.redacted(), model=model,
                         settings={k: v for k, v in asdict(opts).items() if v is not None}
                         | {"request_rate": "inf" if math.isinf(opts.request_rate) else opts.request_rate,
                            "prompts_as_token_ids": work.as_ids},
                         notes=list(work.notes))
    plans = _plans(opts)
    try:
        for label, load, specs_kw, concurrency in plans:
            specs = build_specs(opts, work, **specs_kw)
            run = _one_run(endpoint, model, work, opts, specs, out / f"bench-{opts.mode}-{label}.jsonl", concurrency,
                           pid, progress, label)
            result.runs.append({"label": label, "load": load, **run})
            if opts.mode == "sweep":
                result.knee = stats.knee([{"load": r["load"], **r["metrics"]} for r in result.runs])
            result.save(out / name)
    except KeyboardInterrupt:
        result.interrupted = True
        label, load, _, _ = plans[len(result.runs)]
        partial = out / f"bench-{opts.mode}-{label}.jsonl"
        if partial.exists():
            records = read_records(partial)
            result.runs.append({"label": label, "load": load, "partial": True,
                                "metrics": stats.compute_metrics(records, max((r["start"] + r["e2el"] for r in records), default=0.0), opts.slo)})
        result.save(out / name)
        raise
    return result


def _plans(opts: BenchOptions) -> list[tuple[str, Any, dict, int | None]]:
    """(label, load, spec arguments, max concurrency) for each run the mode makes."""
    if opts.mode == "latency":
        return [("latency", 1, dict(n=opts.iterations, rate=math.inf, warmup=opts.warmup), 1)]
    if opts.mode == "throughput":
        return [("throughput", "all", dict(n=opts.num_prompts, rate=math.inf, warmup=opts.warmup), None)]
    if opts.mode == "sweep":
        return [(f"c{c}", c, dict(n=max(opts.num_prompts, 2 * c), rate=math.inf, warmup=opts.warmup if i == 0 else 0), c)
                for i, c in enumerate(opts.concurrencies)]
    rate = "inf" if math.isinf(opts.request_rate) else opts.request_rate
    return [("serve", {"request_rate": rate, "max_concurrency": opts.max_concurrency},
             dict(n=opts.num_prompts, rate=opts.request_rate, warmup=opts.warmup), opts.max_concurrency)]


def fast_loop_factory():
    """uvloop when installed (it comes with vLLM): less client overhead per chunk."""
    try:
        import uvloop

        return uvloop.new_event_loop
    except ImportError:
        return None


def _one_run(endpoint, model, work, opts, specs, records_path, concurrency, pid, progress, label) -> dict[str, Any]:
    sampler = ResourceSampler(endpoint, pid)
    count = ((lambda texts: [len(ids) for ids in work.tokenizer(texts, add_special_tokens=False)["input_ids"]])
             if work.tokenizer else None)
    with asyncio.Runner(loop_factory=fast_loop_factory()) as runner:
        timing = runner.run(run_load(endpoint, model, specs, records_path, max_concurrency=concurrency,
                                     timeout_s=opts.timeout_s, count_tokens=count, sampler=sampler, progress=progress,
                                     label=f"bench {label}"))
    records = read_records(records_path)
    metrics = stats.compute_metrics(records, timing["duration"], opts.slo)
    run = {"metrics": metrics, "records": str(records_path), "sent": timing["sent"], "warmup": timing["warmup"],
           "token_accounting": stats.token_accounting(records),
           "server": sampler.summary()}
    if opts.mode == "latency":
        run["latency"] = stats.latency_summary([r["e2el"] for r in records if r["success"]])
    return run
