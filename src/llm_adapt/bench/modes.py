"""Benchmark modes: serve (rate and/or concurrency), latency (one at a time), throughput (all at
once) and sweep (a list of concurrencies, with the knee of the curve)."""

from __future__ import annotations

import asyncio
import math
import os
import zlib
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Callable, ClassVar

import httpx
from pydantic import ConfigDict, with_config
from typing_extensions import TypedDict  # pydantic validates typing's TypedDict from Python 3.12 only

from llm_adapt import rundir
from llm_adapt.bench import prometheus, stats, vllm_format
from llm_adapt.bench.client import RequestSpec
from llm_adapt.bench.hostload import processes_for
from llm_adapt.bench.load import (
    LoadTiming,
    ResourceSampler,
    ServerResources,
    quiet_transport_errors,
    read_records,
    run_load,
    run_load_processes,
)
from llm_adapt.bench.sla import PointSla, SlaCapacity
from llm_adapt.bench.workload import fixed_specs, sharegpt_specs, suite_specs
from llm_adapt.engines.endpoint import Endpoint, EndpointRecord
from llm_adapt.results import StageResult


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
    repeats: int = 1  # measured runs per level: the result gives each metric's median and spread
    reuse_prompts: bool = False  # the same prompts at every level, stage and repeat (else fresh ones)
    percentiles: tuple[float, ...] = stats.PERCENTILES
    # the vLLM-format result file (one per run, beside bench.json unless result_dir says where)
    label: str | None = None
    metadata: tuple[tuple[str, str], ...] = ()
    result_dir: str | None = None
    result_filename: str | None = None
    tokenizer_id: str | None = None
    percentile_metrics: tuple[str, ...] = vllm_format.METRICS
    prefix_len: int = 0  # a prefix-cache workload: groups of prefix_repeats requests share a prefix this long
    prefix_repeats: int = 1
    client_processes: int | None = None  # None: auto (1, more when one process passes half a core)
    # mode sla: the highest concurrency whose every run meets `slo` (bench/sla.py)
    sla_any: bool = False  # one SLO met is enough (else all)
    sla_max: int = 64
    sla_percentile: int = 99


@with_config(ConfigDict(extra="allow"))
class BenchSettings(TypedDict, total=False):
    """What the benchmark ran with: BenchOptions, less what was not set (request_rate "inf" for as fast as
    possible; tuples as lists)."""
    mode: str
    num_prompts: int
    input_len: int
    output_len: int
    request_rate: int | float | str
    burstiness: int | float
    max_concurrency: int
    concurrencies: list[int]
    warmup: int
    iterations: int
    slo: dict[str, int | float]
    dataset: str
    suite: str
    seed: int
    timeout_s: int | float
    repeats: int
    reuse_prompts: bool
    percentiles: list[int | float]
    label: str
    metadata: list[list[str]]
    result_dir: str
    result_filename: str
    tokenizer_id: str
    percentile_metrics: list[str]
    prefix_len: int
    prefix_repeats: int
    client_processes: int
    sla_any: bool
    sla_max: int
    sla_percentile: int
    prompts_as_token_ids: bool


@with_config(ConfigDict(extra="allow"))
class ServeLoad(TypedDict):
    """Mode serve's one level: its arrival rate ("inf": all at once) and concurrency cap."""
    request_rate: int | float | str
    max_concurrency: int | None


@with_config(ConfigDict(extra="allow"))
class BenchRun(TypedDict, total=False):
    """One run at one level (_one_run), or a level's entry in BenchResult.runs (_level: a single run as it is,
    repeats as the median of each metric with its spread)."""
    metrics: stats.Metrics
    records: str  # the requests' JSONL
    sent: int
    warmup: int
    token_accounting: stats.TokenAccounting
    client_processes: int
    server: ServerResources
    server_metrics: prometheus.ServerView | None  # the server's own histograms, where it has vLLM's /metrics
    latency: dict[str, stats.Figure]  # mode latency (stats.latency_summary)
    vllm_result: str  # the run in `vllm bench serve`'s result format
    label: str
    load: int | float | str | ServeLoad  # a concurrency, "all" (mode throughput), or mode serve's rate and cap
    partial: bool  # an interrupted level's runs so far
    spread: stats.Spread
    repeats: list[BenchRun]
    sla: PointSla  # mode sla: whether the point met the SLO
    # and "from": "latency" on a sweep's concurrency-1 level taken from the latency run (with_latency_level)


class BenchResult(StageResult):
    KIND: ClassVar[str] = "bench"

    mode: str
    endpoint: EndpointRecord
    model: str
    settings: BenchSettings
    runs: list[BenchRun] = []
    knee: stats.Knee | None = None
    sla: SlaCapacity | None = None  # mode sla: the capacity, its bracket and the SLOs
    interrupted: bool = False
    notes: list[str] = []


@dataclass
class Workload:
    tokenizer: Any
    as_ids: bool
    notes: list[str] = field(default_factory=list)


def server_tokenizes(endpoint: Endpoint, model: str, timeout_s: float = 10.0) -> bool:
    """vLLM-like servers take token-id prompts and have /tokenize; then lengths are exact."""
    from llm_adapt.engines.client import EndpointClient, ServerGone

    try:
        return EndpointClient(endpoint, model, timeout_s=timeout_s).post("/tokenize", {"prompt": "hello"}).status_code == 200
    except (ServerGone, httpx.HTTPError):
        return False


@dataclass(frozen=True)
class Plan:
    """One level of a benchmark: its label, its load, how many requests and how they arrive."""

    label: str
    load: int | str | ServeLoad
    n: int
    rate: float
    concurrency: int | None


def plans(opts: BenchOptions) -> list[Plan]:
    """The levels a mode runs."""
    if opts.mode == "latency":
        return [Plan("latency", 1, opts.iterations, math.inf, 1)]
    if opts.mode == "throughput":
        return [Plan("throughput", "all", opts.num_prompts, math.inf, None)]
    if opts.mode == "sweep":
        return [Plan(f"c{c}", c, max(opts.num_prompts, 2 * c), math.inf, c) for c in opts.concurrencies]
    rate = "inf" if math.isinf(opts.request_rate) else opts.request_rate
    return [Plan("serve", {"request_rate": rate, "max_concurrency": opts.max_concurrency}, opts.num_prompts,
                 opts.request_rate, opts.max_concurrency)]


def warmup_count(opts: BenchOptions, plan: Plan, repeat: int) -> int:
    """Before each level (not before its repeats): one full wave at the level's concurrency, at least
    --warmup requests; --warmup 0 turns warm-up off."""
    if repeat > 0 or opts.warmup <= 0:
        return 0
    return max(opts.warmup, plan.concurrency or 0)


def derived_seed(opts: BenchOptions, label: str, repeat: int) -> int:
    """A seed of its own for every stage (mode), level and repeat, so no prompt is sent twice and the
    server's prefix cache cannot flatter a later level; --reuse-prompts keeps the given seed."""
    if opts.reuse_prompts:
        return opts.seed
    return zlib.crc32(f"{opts.seed}/{opts.mode}/{label}/{repeat}".encode())


def build_specs(opts: BenchOptions, work: Workload, n: int, *, rate: float, warmup: int, output_len: int | None = None,
                seed: int | None = None) -> list[RequestSpec]:
    out_len = output_len or opts.output_len
    seed = opts.seed if seed is None else seed
    if opts.dataset:
        return sharegpt_specs(Path(opts.dataset), work.tokenizer, n, warmup, out_len, seed=seed, rate=rate,
                              burstiness=opts.burstiness)
    if opts.suite:
        return suite_specs(opts.suite, n, warmup, out_len, seed=seed, rate=rate, burstiness=opts.burstiness)
    return fixed_specs(work.tokenizer, n, warmup, opts.input_len, out_len, as_ids=work.as_ids, seed=seed,
                       rate=rate, burstiness=opts.burstiness, prefix_len=opts.prefix_len,
                       prefix_repeats=opts.prefix_repeats)


def records_path(out: Path, opts: BenchOptions, label: str, repeat: int) -> Path:
    suffix = f"-r{repeat}" if opts.repeats > 1 else ""
    return out / rundir.bench_records(opts.mode, label, suffix)


def run_bench(endpoint: Endpoint, model: str, work: Workload, opts: BenchOptions, out: Path, *, pid: int | None = None,
              progress: Callable[[str, int, int], None] | None = None, name: str = rundir.bench()) -> BenchResult:
    result = BenchResult(mode=opts.mode, endpoint=endpoint.redacted(), model=model,
                         settings={k: v for k, v in asdict(opts).items() if v is not None}
                         | {"request_rate": "inf" if math.isinf(opts.request_rate) else opts.request_rate,
                            "prompts_as_token_ids": work.as_ids},
                         notes=list(work.notes))
    if opts.suite and not opts.reuse_prompts:
        result.notes.append("a prompt suite repeats its prompts across levels; the server's prefix cache may "
                            "flatter later levels' TTFT")
    done: list[BenchRun] = []
    plan = None
    clients = opts.client_processes or 1
    if opts.mode == "sla":
        return _run_sla(endpoint, model, work, opts, out, result, pid, progress, name)
    vllm_results: list[Path] = []
    try:
        for plan in plans(opts):
            done = []
            clients = _repeats(endpoint, model, work, opts, plan, out, pid, progress, clients, done, vllm_files=True)
            vllm_results += [Path(d["vllm_result"]) for d in done if d.get("vllm_result")]
            result.runs.append(_level(plan, done))
            if opts.mode == "sweep":
                result.knee = stats.knee([{"load": r["load"], **r["metrics"]} for r in result.runs])
            result.save(out / name)
        if len(vllm_results) > 1:  # a sweep or repeats: vLLM's sweep plots read them from one summary
            vllm_format.write_sweep_summary(out, vllm_results)
    except KeyboardInterrupt:
        result.interrupted = True
        if plan is not None:  # the repeat that was running: the one after those done
            _keep_partial(result, opts, plan, done, records_path(out, opts, plan.label, len(done)))
        result.save(out / name)
        raise
    return result


def _run_sla(endpoint, model, work, opts: BenchOptions, out: Path, result: BenchResult, pid, progress,
             name: str) -> BenchResult:
    """The SLA capacity search (bench/sla.py): each point `repeats` runs at one concurrency, fresh
    prompts each, until the bracket is one level wide; the result is saved after every point."""
    from llm_adapt.bench import sla

    if not opts.slo:
        from llm_adapt.errors import UsageError

        raise UsageError("--mode sla needs --slo, e.g. --slo ttft=500,tpot=100 (milliseconds)")
    history: dict[int, bool] = {}
    clients = opts.client_processes or 1
    try:
        while (level := sla.search_next(history, opts.sla_max)) is not None:
            plan = Plan(f"c{level}", level, max(opts.num_prompts, 2 * level), math.inf, level)
            done: list[BenchRun] = []
            clients = _repeats(endpoint, model, work, opts, plan, out, pid, progress, clients, done, vllm_files=False)
            verdict = sla.point_meets([r["metrics"] for r in done], opts.slo, opts.sla_any, opts.sla_percentile)
            history[level] = verdict["met"]
            result.runs.append(_level(plan, done) | {"sla": verdict})
            result.sla = sla.capacity(history, opts.sla_max) | {
                "slo_ms": dict(opts.slo), "percentile": opts.sla_percentile, "any_of": opts.sla_any,
                "repeats": opts.repeats, "probed": list(history)}
            result.save(out / name)
    except KeyboardInterrupt:
        result.interrupted = True
        result.save(out / name)
        raise
    return result


def _repeats(endpoint, model, work, opts: BenchOptions, plan: Plan, out: Path, pid, progress, clients: int,
             done: list[BenchRun], vllm_files: bool) -> int:
    """`opts.repeats` runs at one level, fresh prompts each, appended to `done` as each ends (an interrupt
    keeps those); `vllm_files`: each also saved in `vllm bench serve`'s result format. Returns the
    client processes for the next run: with --client-processes unset, spread when one got busy."""
    for repeat in range(opts.repeats):
        specs = build_specs(opts, work, plan.n, rate=plan.rate, warmup=warmup_count(opts, plan, repeat),
                            seed=derived_seed(opts, plan.label, repeat))
        done.append(_one_run(endpoint, model, work, opts, specs, records_path(out, opts, plan.label, repeat),
                             plan.concurrency, pid, progress, plan.label, clients))
        if opts.client_processes is None:
            cpu = done[-1]["server"].get("cpu") or {}
            clients = processes_for(cpu.get("client_cores_per_process"), clients, os.cpu_count() or 1)
        if vllm_files:
            done[-1]["vllm_result"] = str(_save_vllm_result(opts, plan, repeat, model, specs, done[-1], out))
    return clients


def _save_vllm_result(opts: BenchOptions, plan: Plan, repeat: int, model: str, specs: list[RequestSpec],
                      run: BenchRun, out: Path) -> Path:
    info = vllm_format.RunInfo(
        backend="openai-chat" if any(s.messages is not None for s in specs) else "openai", model_id=model,
        tokenizer_id=opts.tokenizer_id, num_prompts=plan.n, request_rate=plan.rate, burstiness=opts.burstiness,
        max_concurrency=plan.concurrency, label=opts.label, metadata=opts.metadata,
        percentile_metrics=opts.percentile_metrics, percentiles=opts.percentiles, goodput=bool(opts.slo))
    now = datetime.now()
    several = len(plans(opts)) > 1 or opts.repeats > 1
    name = vllm_format.result_filename(info, now, opts.result_filename, plan.label, repeat, several)
    target = Path(opts.result_dir) if opts.result_dir else out
    return vllm_format.write_vllm_result(target / name, vllm_format.vllm_result(info, run["metrics"], now))


def with_latency_level(sweep: BenchResult, latency: BenchResult) -> BenchResult:
    """A sweep with the latency run as its concurrency-1 level: the same lengths, one request at a time,
    so it is not measured twice. Levels in load order, the knee recomputed. Pure."""
    if not latency.runs or any(r["load"] == 1 for r in sweep.runs):
        return sweep
    level = {**latency.runs[0], "label": "c1", "load": 1, "from": "latency"}
    out = sweep.model_copy(deep=True)
    out.runs = sorted([level, *out.runs], key=lambda r: r["load"])
    out.knee = stats.knee([{"load": r["load"], **r["metrics"]} for r in out.runs])
    out.notes.append(f"concurrency 1 is the latency run ({level.get('sent', '?')} requests one at a time, the same "
                     "lengths), not measured again")
    return out


def _level(plan: Plan, runs: list[BenchRun], partial: bool = False) -> BenchRun:
    """One entry per level: a single run as it is; repeats as the median of each metric and its spread."""
    entry: BenchRun = {"label": plan.label, "load": plan.load, **runs[-1]}
    if partial:
        entry["partial"] = True
    if len(runs) > 1:
        entry["metrics"], entry["spread"] = stats.across_repeats([r["metrics"] for r in runs])
        entry["repeats"] = list(runs)
        entry["sent"] = sum(r["sent"] for r in runs)
    return entry


def _keep_partial(result: BenchResult, opts: BenchOptions, plan: Plan, done: list[BenchRun], partial: Path) -> None:
    runs = list(done)
    if partial.exists() and len(done) < opts.repeats:
        records = read_records(partial)
        runs.append({"records": str(partial), "sent": len(records),
                     "metrics": stats.compute_metrics(records, max((r["start"] + r["e2el"] for r in records), default=0.0),
                                                      opts.slo, opts.percentiles)})
    if runs:
        result.runs.append(_level(plan, runs, partial=True))


def fast_loop_factory():
    """uvloop when installed (it comes with vLLM): less client overhead per chunk."""
    try:
        import uvloop

        return uvloop.new_event_loop
    except ImportError:
        return None


def server_view(timing: LoadTiming, client: stats.Metrics, model: str, pcts) -> prometheus.ServerView | None:
    """The server's histograms over the run beside the client's means, where the server has vLLM's /metrics."""
    before, after = timing.get("metrics_before"), timing.get("metrics_after")
    if not before or not after:
        return None
    delta = prometheus.run_delta(before, after, pcts, model)
    if not delta["histograms"]:  # a served name that differs from the label: take every series
        delta = prometheus.run_delta(before, after, pcts)
    if not delta["histograms"]:
        return None
    overhead = timing.get("health_rtt_ms") or 0.0
    delta["client_overhead_ms"] = overhead
    delta["comparison"] = prometheus.compare(client, delta, overhead)
    return delta


def _one_run(endpoint, model, work, opts, specs, records_path, concurrency, pid, progress, label,
             clients: int = 1) -> BenchRun:
    sampler = ResourceSampler(endpoint, pid)
    count = ((lambda texts: [len(ids) for ids in work.tokenizer(texts, add_special_tokens=False)["input_ids"]])
             if work.tokenizer else None)
    if clients > 1:
        timing = run_load_processes(endpoint, model, specs, records_path, processes=clients,
                                    max_concurrency=concurrency, timeout_s=opts.timeout_s, count_tokens=count,
                                    sampler=sampler, progress=progress, label=f"bench {label}")
        clients = timing["client_processes"]
    else:
        with asyncio.Runner(loop_factory=fast_loop_factory()) as runner:
            quiet_transport_errors(runner.get_loop())
            timing = runner.run(run_load(endpoint, model, specs, records_path, max_concurrency=concurrency,
                                         timeout_s=opts.timeout_s, count_tokens=count, sampler=sampler,
                                         progress=progress, label=f"bench {label}"))
    records = read_records(records_path)
    metrics = stats.compute_metrics(records, timing["duration"], opts.slo, opts.percentiles)
    run: BenchRun = {"metrics": metrics, "records": str(records_path), "sent": timing["sent"],
                     "warmup": timing["warmup"], "token_accounting": stats.token_accounting(records),
                     "client_processes": clients, "server": sampler.summary(clients),
                     "server_metrics": server_view(timing, metrics, model, opts.percentiles)}
    if opts.mode == "latency":
        run["latency"] = stats.latency_summary([r["e2el"] for r in records if r["success"]])
    return run
