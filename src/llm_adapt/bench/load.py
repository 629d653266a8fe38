"""Drive a list of requests at a schedule and/or a concurrency cap; stream records to JSONL."""

from __future__ import annotations

import asyncio
import json
import math
import time
from pathlib import Path
from typing import Awaitable, Callable

import aiohttp
from pydantic import ConfigDict, with_config
from typing_extensions import TypedDict  # pydantic validates typing's TypedDict from Python 3.12 only

from llm_adapt.bench.client import Record, RecordRow, RequestSpec, send
from llm_adapt.bench.hostload import HostLoad
from llm_adapt.engines.client import auth_headers
from llm_adapt.engines.endpoint import Endpoint


class LoadTiming(TypedDict):
    """One load's timing facts (run_load): its length, what it sent, and the server's /metrics text before
    and after (None where it has none) with the health check's round trip."""
    duration: float
    sent: int
    warmup: int
    metrics_before: str | None
    metrics_after: str | None
    health_rtt_ms: float | None


async def run_load(endpoint: Endpoint, model: str, specs: list[RequestSpec], records_path: Path, *,
                   max_concurrency: int | None = None, timeout_s: float = 600.0,
                   count_tokens: Callable[[list[str]], list[int]] | None = None,
                   sampler: "ResourceSampler | None" = None, progress: Callable[[str, int, int], None] | None = None,
                   label: str = "requests", start_together=None, scrape_metrics: bool = True) -> LoadTiming:
    """Warm-up requests first (not recorded), then the measured ones; returns timing facts.
    `start_together`: a barrier the client processes of one run pass after their warm-ups, so their
    measured requests start at one moment; `scrape_metrics`: read /metrics and the round trip (one
    process of a run does)."""
    headers = auth_headers(endpoint) or None
    timeout = aiohttp.ClientTimeout(total=timeout_s)
    connector = aiohttp.TCPConnector(limit=max_concurrency or 0, force_close=False)
    warm = [s for s in specs if s.warmup]
    measured = [s for s in specs if not s.warmup]
    async with aiohttp.ClientSession(timeout=timeout, connector=connector) as session:
        sem = asyncio.Semaphore(max_concurrency) if max_concurrency else None
        await _warm_up(session, endpoint.base_url, model, warm, sem, headers)
        if start_together is not None:
            await asyncio.get_running_loop().run_in_executor(None, start_together.wait)
        metrics_before = await scrape(session, endpoint.root_url + "/metrics", headers) if scrape_metrics else None
        sampler_task = asyncio.create_task(sampler.run()) if sampler else None
        done = 0
        t0 = time.perf_counter()
        with open(records_path, "w") as sink:
            async def one(spec: RequestSpec) -> None:
                nonlocal done
                delay = t0 + spec.scheduled - time.perf_counter()
                if delay > 0:
                    await asyncio.sleep(delay)
                if sem:
                    async with sem:
                        record = await send(session, endpoint.base_url, model, spec, t0, headers)
                else:
                    record = await send(session, endpoint.base_url, model, spec, t0, headers)
                _write(sink, record)
                done += 1
                if progress:
                    progress(label, done, len(measured))

            try:
                await asyncio.gather(*(one(s) for s in measured))
            finally:
                duration = time.perf_counter() - t0
                if sampler_task:
                    sampler_task.cancel()
        metrics_after = await scrape(session, endpoint.root_url + "/metrics", headers) if metrics_before else None
        rtt = await round_trip_ms(session, endpoint.root_url + "/health", headers) if metrics_before else None
    if count_tokens:
        count_client_tokens(records_path, count_tokens)  # after the clock stopped: not part of the load
    return {"duration": duration, "sent": len(measured), "warmup": len(warm), "metrics_before": metrics_before,
            "metrics_after": metrics_after, "health_rtt_ms": rtt}


async def scrape(session: aiohttp.ClientSession, url: str, headers) -> str | None:
    """The server's Prometheus text, or None where it has no /metrics."""
    try:
        async with session.get(url, headers=headers) as resp:
            return await resp.text() if resp.status == 200 else None
    except (aiohttp.ClientError, asyncio.TimeoutError):
        return None


async def round_trip_ms(session: aiohttp.ClientSession, url: str, headers, n: int = 5) -> float | None:
    """Median time of an idle request through the server's HTTP layer: the client-side share of a latency."""
    times = []
    for _ in range(n):
        start = time.perf_counter()
        try:
            async with session.get(url, headers=headers) as resp:
                await resp.read()
        except (aiohttp.ClientError, asyncio.TimeoutError):
            return None
        times.append((time.perf_counter() - start) * 1000)
    return sorted(times)[n // 2]


async def _warm_up(session, base_url: str, model: str, warm: list[RequestSpec], sem, headers) -> None:
    """Warm-up requests all at once under the level's concurrency cap: one full wave, not recorded."""
    async def one(spec: RequestSpec) -> None:
        if sem:
            async with sem:
                await send(session, base_url, model, spec, time.perf_counter(), headers)
        else:
            await send(session, base_url, model, spec, time.perf_counter(), headers)

    await asyncio.gather(*(one(s) for s in warm))


def _write(sink, record: Record) -> None:
    """One JSON line per finished request, on disk at once (nothing accumulates in memory)."""
    sink.write(json.dumps(vars(record)) + "\n")
    sink.flush()


def count_client_tokens(path: Path, count: Callable[[list[str]], list[int]], batch: int = 256) -> None:
    """Add the client tokenizer's count to each record and drop the generated text, streaming the file."""
    tmp = path.with_suffix(".tmp")
    with open(path) as src, open(tmp, "w") as dst:
        rows: list[dict] = []
        for line in src:
            rows.append(json.loads(line))
            if len(rows) == batch:
                _flush_counted(rows, count, dst)
        _flush_counted(rows, count, dst)
    tmp.replace(path)


def _flush_counted(rows: list[dict], count, dst) -> None:
    texts = [r.get("text") or "" for r in rows]
    counts = count(texts) if any(texts) else [0] * len(rows)
    for row, text, n in zip(rows, texts, counts):
        row.pop("text", None)
        row["client_tokens"] = n if row["success"] and text else None
        dst.write(json.dumps(row) + "\n")
    rows.clear()


def read_records(path: Path) -> list[RecordRow]:
    with open(path) as handle:
        return [json.loads(line) for line in handle if line.strip()]


@with_config(ConfigDict(extra="allow"))
class ServerResources(TypedDict):
    """The server over one run (ResourceSampler.summary): the peaks of what was polled each second."""
    samples: int
    kv_cache_usage_max: float | None  # a share of the KV cache, from vLLM's /metrics
    running_max: float | None
    waiting_max: float | None
    rss_bytes_max: int | None  # the whole process tree of a server we started
    device_memory_bytes_max: int | None
    device_memory_tool: str | None
    cpu: HostLoad  # who used the CPU


class ResourceSampler:
    """Polls the server's /metrics (KV-cache usage, running and waiting requests) and, for a
    server we started, the RSS of its whole process tree and the accelerators' memory in use."""

    KV = ("vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc")

    def __init__(self, endpoint: Endpoint, pid: int | None = None, interval_s: float = 1.0):
        from llm_adapt.bench.hostload import Sampler

        self.endpoint, self.pid, self.interval_s = endpoint, pid, interval_s
        self.samples: list[dict[str, float | int | None]] = []  # t, and each figure polled then
        self.cpu = Sampler(pid)  # who used the CPU: this client, the server we started, everything else

    async def run(self) -> None:
        headers = auth_headers(self.endpoint) or None
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=5), headers=headers) as session:
            read_device_memory = await device_memory_reader() if self.pid else None
            start = time.perf_counter()
            while True:
                sample: dict[str, float | int | None] = {"t": round(time.perf_counter() - start, 3)}
                try:
                    async with session.get(self.endpoint.root_url + "/metrics") as resp:
                        if resp.status == 200:
                            sample.update(parse_metrics(await resp.text()))
                except (aiohttp.ClientError, asyncio.TimeoutError):
                    pass
                if self.pid:
                    sample["rss_bytes"] = tree_rss(self.pid)
                    sample["device_memory_bytes"] = await read_device_memory() if read_device_memory else None
                self.cpu.sample()
                self.samples.append(sample)
                await asyncio.sleep(self.interval_s)

    def summary(self, client_processes: int = 1) -> ServerResources:
        def peak(key):
            values = [s[key] for s in self.samples if s.get(key) is not None]
            return max(values) if values else None

        return {"samples": len(self.samples), "kv_cache_usage_max": peak("kv_cache_usage"),
                "running_max": peak("running"), "waiting_max": peak("waiting"), "rss_bytes_max": peak("rss_bytes"),
                "device_memory_bytes_max": peak("device_memory_bytes"), "device_memory_tool": device_tool(),
                "cpu": self.cpu.summary(client_processes)}


def parse_metrics(text: str) -> dict[str, float]:
    """The few Prometheus gauges we watch; summed over label sets."""
    wanted = {"vllm:kv_cache_usage_perc": "kv_cache_usage", "vllm:gpu_cache_usage_perc": "kv_cache_usage",
              "vllm:num_requests_running": "running", "vllm:num_requests_waiting": "waiting"}
    out: dict[str, float] = {}
    for line in text.splitlines():
        if line.startswith("#") or not line.strip():
            continue
        name = line.split("{", 1)[0].split(" ", 1)[0]
        if name in wanted:
            try:
                value = float(line.rsplit(" ", 1)[1])
            except ValueError:
                continue
            if not math.isnan(value):
                out[wanted[name]] = out.get(wanted[name], 0.0) + value
    return out


def tree_rss(pid: int) -> int | None:
    import psutil

    try:
        root = psutil.Process(pid)
        return sum(p.memory_info().rss for p in [root, *root.children(recursive=True)])
    except psutil.Error:
        return None


def device_platform():
    """The platform whose device tool is on PATH, in detection order: it lists the devices and reads
    their memory. None on a host without one (the CPU)."""
    from llm_adapt.platforms import with_device_tool

    return next(iter(with_device_tool()), None)


def device_tool() -> str | None:
    """The tool the device memory is read with."""
    platform = device_platform()
    return platform.smi if platform else None


async def device_memory_reader() -> Callable[[], Awaitable[int | None]] | None:
    """What reads the memory in use on the accelerators a server started here can see (set up once:
    the NPUs are listed once); None where no device tool is present."""
    platform = device_platform()
    return await platform.memory_reader() if platform and platform.memory_reader else None


# ---- several client processes ------------------------------------------------------------------
# One Python process parses a few thousand stream chunks per second; past that the client measures
# itself. A run can spread its streams over worker processes: each takes every N-th request and its
# share of the concurrency cap, they start together after their warm-ups, and their records are
# merged into one file, as aiperf and guidellm do.

def split_evenly(items: list, parts: int) -> list[list]:
    """Round-robin: the k-th part takes items k, k + parts, ... (each keeps the schedule's order). Pure."""
    return [items[k::parts] for k in range(parts)]


def split_concurrency(cap: int | None, parts: int) -> list[int | None]:
    """A concurrency cap shared out: the first cap % parts processes take one more. Pure."""
    if cap is None:
        return [None] * parts
    return [cap // parts + (1 if k < cap % parts else 0) for k in range(parts)]


def run_load_processes(endpoint: Endpoint, model: str, specs: list[RequestSpec], records_path: Path, *, processes: int,
                       max_concurrency: int | None = None, timeout_s: float = 600.0,
                       count_tokens: Callable[[list[str]], list[int]] | None = None,
                       sampler: "ResourceSampler | None" = None, progress: Callable[[str, int, int], None] | None = None,
                       label: str = "requests") -> LoadTiming:
    """run_load over `processes` worker processes; returns the same timing facts for the merged records."""
    import multiprocessing as mp

    caps = split_concurrency(max_concurrency, processes)
    processes = sum(1 for c in caps if c is None or c > 0)  # never a worker with a cap of 0
    caps, parts = caps[:processes], split_evenly(specs, processes)
    ctx = mp.get_context("spawn")  # a clean interpreter: the parent may hold threads and a model
    barrier, done, answers = ctx.Barrier(processes), ctx.Value("i", 0), ctx.Queue()
    paths = [records_path.with_name(f"{records_path.stem}.client{k}.jsonl") for k in range(processes)]
    workers = [ctx.Process(target=_worker, daemon=True,
                           args=(k, endpoint, model, parts[k], paths[k], caps[k], timeout_s, barrier, done, answers))
               for k in range(processes)]
    measured = sum(1 for s in specs if not s.warmup)
    for w in workers:
        w.start()
    try:
        results = _wait_for_workers(workers, answers, done, measured, sampler, progress, label)
    finally:
        for w in workers:
            if w.is_alive():
                w.terminate()
            w.join(timeout=5)
    _merge(paths, records_path)
    if count_tokens:
        count_client_tokens(records_path, count_tokens)
    first = results[0]
    return {"duration": max(r["duration"] for r in results), "sent": sum(r["sent"] for r in results),
            "warmup": sum(r["warmup"] for r in results), "metrics_before": first["metrics_before"],
            "metrics_after": first["metrics_after"], "health_rtt_ms": first["health_rtt_ms"],
            "client_processes": processes}


def quiet_transport_errors(loop: asyncio.AbstractEventLoop) -> asyncio.AbstractEventLoop:
    """The loop, told not to print a stream's transport traceback: a stream cut by Ctrl-C or by the
    server is that request's error, which its record keeps; asyncio would also log it with a
    traceback (seen as "Fatal error on transport" when a Ctrl-C lands mid-stream). Nor the Ctrl-C itself
    where it landed inside a request's task: the task keeps the KeyboardInterrupt, and asyncio printed it
    as "Task exception was never retrieved" with a traceback, beside the run's own "interrupted" line."""

    def handler(loop, context):
        stop = isinstance(context.get("exception"), (OSError, KeyboardInterrupt, asyncio.CancelledError))
        if "transport" in context or stop:
            return
        loop.default_exception_handler(context)

    loop.set_exception_handler(handler)
    return loop


def _worker(k, endpoint, model, specs, path, cap, timeout_s, barrier, done, answers) -> None:
    def count(_label, _done, _total):
        with done.get_lock():
            done.value += 1

    try:
        with asyncio.Runner() as runner:
            quiet_transport_errors(runner.get_loop())
            timing = runner.run(run_load(endpoint, model, specs, path, max_concurrency=cap, timeout_s=timeout_s,
                                         progress=count, start_together=barrier, scrape_metrics=k == 0))
        answers.put((k, timing, None))
    except BaseException as exc:  # the parent reports it; a worker never dies silently
        barrier.abort()
        answers.put((k, None, f"{type(exc).__name__}: {exc}"))


def _wait_for_workers(workers, answers, done, measured, sampler, progress, label) -> list[LoadTiming]:
    import queue

    async def sample_until_done() -> list[LoadTiming]:
        task = asyncio.create_task(sampler.run()) if sampler else None
        results: dict[int, LoadTiming] = {}
        try:
            while len(results) < len(workers):
                try:
                    k, timing, error = answers.get_nowait()
                except queue.Empty:
                    if not any(w.is_alive() for w in workers) and answers.empty():
                        raise RuntimeError("a client process died without an answer") from None
                    if progress:
                        progress(label, done.value, measured)
                    await asyncio.sleep(0.2)
                    continue
                if error:
                    raise RuntimeError(f"client process {k} failed: {error}")
                results[k] = timing
            if progress:
                progress(label, done.value, measured)
            return [results[k] for k in sorted(results)]
        finally:
            if task:
                task.cancel()

    return asyncio.run(sample_until_done())


def _merge(paths: list[Path], target: Path) -> None:
    """The workers' records as one file, in request order; the parts removed."""
    rows = []
    for path in paths:
        if path.exists():
            rows += [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
            path.unlink()
    with open(target, "w") as sink:
        for row in sorted(rows, key=lambda r: r["index"]):
            sink.write(json.dumps(row) + "\n")
