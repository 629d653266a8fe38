"""Who used the CPU while something was measured: the client (this process and its workers), the
server we started (its process tree), and everything else on the host.

A figure taken while other processes kept cores busy is not the machine's figure, and a client
that keeps its own core busy measures itself; both are read from CPU-time counters (psutil)
sampled during the measurement. Summaries are pure functions of the samples.
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass

from pydantic import ConfigDict, with_config
from typing_extensions import TypedDict  # pydantic validates typing's TypedDict from Python 3.12 only


@with_config(ConfigDict(extra="allow"))
class HostLoad(TypedDict, total=False):
    """Who used the CPU over a measurement (summarize): mean and peak cores per party (host, client, server,
    other), and whether the host was busy or the client bound."""
    samples: int
    cores: int
    seconds: float
    host_cores_mean: float
    host_cores_max: float
    client_cores_mean: float
    client_cores_max: float
    server_cores_mean: float
    server_cores_max: float
    other_cores_mean: float
    other_cores_max: float
    busy_threshold_cores: int | float
    busy: bool | None
    client_processes: int
    client_cores_per_process: float
    client_bound: bool | None

BUSY_OTHER_CORES = 0.25  # other processes' mean load that makes a host "busy" (also at least 10% of its cores)
BUSY_SHARE = 0.10
CLIENT_BOUND_CORES = 0.85  # one client process at this load is the bottleneck, not the server


@dataclass(frozen=True)
class CpuSnapshot:
    t: float
    host_busy_s: float  # every core's non-idle time since boot
    client_s: float  # this process and its children
    server_s: float  # the server's process tree (0 without one)


def snapshot(server_pid: int | None = None) -> CpuSnapshot:
    import psutil

    times = psutil.cpu_times()
    busy = sum(times) - times.idle - getattr(times, "iowait", 0.0)
    return CpuSnapshot(time.monotonic(), busy, _tree_cpu(os.getpid()), _tree_cpu(server_pid) if server_pid else 0.0)


def _tree_cpu(pid: int) -> float:
    import psutil

    try:
        root = psutil.Process(pid)
        procs = [root, *root.children(recursive=True)]
    except psutil.Error:
        return 0.0
    total = 0.0
    for proc in procs:
        try:
            t = proc.cpu_times()
            total += t.user + t.system
        except psutil.Error:
            continue
    return total


def interval(a: CpuSnapshot, b: CpuSnapshot) -> dict[str, float] | None:
    """Cores used between two snapshots by the client, the server and the rest. Pure."""
    dt = b.t - a.t
    if dt <= 0:
        return None
    host = max(b.host_busy_s - a.host_busy_s, 0.0) / dt
    client = max(b.client_s - a.client_s, 0.0) / dt
    server = max(b.server_s - a.server_s, 0.0) / dt
    return {"seconds": dt, "host": host, "client": client, "server": server,
            "other": max(host - client - server, 0.0)}


def summarize(intervals: list[dict[str, float]], cores: int, client_processes: int = 1) -> HostLoad:
    """Mean and peak cores per party, and the two judgements: a busy host (other processes' load
    beyond BUSY_OTHER_CORES and BUSY_SHARE of the cores, on average) and a client-bound
    measurement (a client process's own mean load near one core). Pure."""
    if not intervals:
        return {"samples": 0, "cores": cores, "busy": None, "client_bound": None, "client_processes": client_processes}
    total = sum(i["seconds"] for i in intervals)

    def mean(key: str) -> float:
        return sum(i[key] * i["seconds"] for i in intervals) / total

    out: HostLoad = {"samples": len(intervals), "cores": cores, "seconds": round(total, 2)}
    for key in ("host", "client", "server", "other"):
        out[f"{key}_cores_mean"] = round(mean(key), 3)
        out[f"{key}_cores_max"] = round(max(i[key] for i in intervals), 3)
    threshold = max(BUSY_OTHER_CORES, BUSY_SHARE * cores)
    out["busy_threshold_cores"] = threshold
    out["busy"] = out["other_cores_mean"] > threshold
    out["client_processes"] = client_processes
    out["client_cores_per_process"] = round(out["client_cores_mean"] / max(client_processes, 1), 3)
    out["client_bound"] = out["client_cores_per_process"] >= CLIENT_BOUND_CORES
    return out


SPREAD_BELOW = 0.5  # --client-processes auto: enough processes to keep each under half a core


def processes_for(load_per_process: float | None, processes: int, cores: int) -> int:
    """How many client processes the next run takes, from this run's load per process. Pure."""
    if load_per_process is None or load_per_process <= SPREAD_BELOW:
        return processes
    return max(processes, min(cores, math.ceil(processes * load_per_process / SPREAD_BELOW)))


class Sampler:
    """Snapshots at the caller's pace; `summary()` of the intervals between them."""

    def __init__(self, server_pid: int | None = None):
        self.server_pid = server_pid
        self.last = snapshot(server_pid)
        self.intervals: list[dict[str, float]] = []

    def sample(self) -> None:
        now = snapshot(self.server_pid)
        step = interval(self.last, now)
        if step is not None:
            self.intervals.append(step)
        self.last = now

    def summary(self, client_processes: int = 1) -> HostLoad:
        return summarize(self.intervals, os.cpu_count() or 1, client_processes)
