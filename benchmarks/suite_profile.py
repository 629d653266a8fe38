"""Where `make test`'s time goes: a pytest plugin that logs each test's start and end in every worker, the
engine starts and stops and the measurement cache's lookups, and samples the host's CPU-time counters every
2 s (bench/hostload.py's snapshot); then, run as a script, the CPU's busy share and the wall time by module.

    SUITE_PROFILE_DIR=prof PYTHONPATH=benchmarks make test PYTEST_ADDOPTS="-p suite_profile"
    .venv/bin/python benchmarks/suite_profile.py prof

The busy share comes from the host's counters, not from `time`: the engines the tests fork from a warm process are
not the shell's children, so `time` leaves their CPU out (on a 2-core box it read 55% busy where the cores
were 94-96% busy).
"""

from __future__ import annotations

import collections
import json
import os
import sys
import threading
import time
from pathlib import Path

ENV = "SUITE_PROFILE_DIR"
SAMPLE_S = 2.0


# ---- the plugin ---------------------------------------------------------------------------------------

def _log_file():
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    return open(Path(os.environ[ENV]) / f"tests-{worker}.jsonl", "a", buffering=1)


_LOG = None


def _write(record: dict) -> None:
    global _LOG
    if _LOG is None:
        _LOG = _log_file()
    _LOG.write(json.dumps(record) + "\n")


def _event(event: str, **fields) -> None:
    _write({"event": event, "t": time.time(), "test": os.environ.get("PYTEST_CURRENT_TEST", ""), **fields})


def _sample_forever(path: Path) -> None:
    """The host's busy CPU seconds (bench/hostload.py's snapshot), every SAMPLE_S, with the core count."""
    from llm_adapt.bench.hostload import snapshot

    cores = os.cpu_count() or 1
    with open(path, "a", buffering=1) as out:
        while True:
            now = snapshot()
            out.write(f"{now.t} {now.host_busy_s} {cores}\n")
            time.sleep(SAMPLE_S)


def _hook_events() -> None:
    """Engine starts and stops, and the gold and floor cache's lookups and stores, as events."""
    from llm_adapt.accuracy import store
    from llm_adapt.engines import server

    start, stop, lookup, put = server.ManagedServer.start, server.ManagedServer.stop, store.lookup, store.store

    def timed_start(self):
        began = time.time()
        try:
            return start(self)
        finally:
            _event("engine start", engine=self.spec.engine, seconds=time.time() - began)

    def timed_stop(self, *args, **kwargs):
        began = time.time()
        try:
            return stop(self, *args, **kwargs)
        finally:
            _event("engine stop", engine=self.spec.engine, seconds=time.time() - began)

    def logged_lookup(kind, key):
        found = lookup(kind, key)
        _event("cache hit" if found else "cache miss", kind=kind, key=key)
        return found

    def logged_store(kind, key, *args, **kwargs):
        _event("cache store", kind=kind, key=key)
        return put(kind, key, *args, **kwargs)

    server.ManagedServer.start, server.ManagedServer.stop = timed_start, timed_stop
    store.lookup, store.store = logged_lookup, logged_store


def pytest_configure(config):
    if not os.environ.get(ENV):
        return
    Path(os.environ[ENV]).mkdir(parents=True, exist_ok=True)
    if not os.environ.get("PYTEST_XDIST_WORKER"):  # the controller samples the host once
        threading.Thread(target=_sample_forever, args=(Path(os.environ[ENV]) / "cpu.txt",), daemon=True).start()
    _hook_events()


def pytest_runtest_logstart(nodeid, location):
    if os.environ.get(ENV):
        _write({"test": nodeid, "start": time.time()})


def pytest_runtest_logfinish(nodeid, location):
    if os.environ.get(ENV):
        _write({"test": nodeid, "end": time.time()})


# ---- the summary --------------------------------------------------------------------------------------

def busy_share(samples: list[tuple[float, float]], cores: int) -> float | None:
    """The cores' busy share between the first and the last (time, host busy seconds) sample; None with fewer
    than two or no time between them. Pure."""
    from llm_adapt.bench.hostload import CpuSnapshot, interval

    if len(samples) < 2:
        return None
    (t0, busy0), (t1, busy1) = samples[0], samples[-1]
    used = interval(CpuSnapshot(t0, busy0, 0.0, 0.0), CpuSnapshot(t1, busy1, 0.0, 0.0))
    return None if used is None else used["host"] / cores


def module_seconds(records: list[dict]) -> dict[str, float]:
    """Wall seconds per test module, summed over its tests (setup and teardown included). Pure."""
    started, seconds = {}, collections.Counter()
    for record in records:
        if "start" in record:
            started[record["test"]] = record["start"]
        elif "end" in record and record["test"] in started:
            seconds[record["test"].split("::")[0]] += record["end"] - started.pop(record["test"])
    return dict(seconds)


def main(argv: list[str]) -> int:
    folder = Path(argv[0]) if argv else Path("prof")
    records = [json.loads(line) for path in sorted(folder.glob("tests-*.jsonl")) for line in path.read_text().splitlines()]
    rows = [line.split() for line in (folder / "cpu.txt").read_text().splitlines()]
    samples = [(float(t), float(busy)) for t, busy, _ in rows]
    share = busy_share(samples, int(rows[0][2])) if rows else None
    print(f"CPU busy: {share:.0%} over {samples[-1][0] - samples[0][0]:.0f} s" if share is not None else "CPU busy: too few samples")
    seconds = module_seconds(records)
    for module, spent in sorted(seconds.items(), key=lambda kv: -kv[1])[:30]:
        print(f"{spent:7.0f} s  {module}")
    starts = [r for r in records if r.get("event") == "engine start" and r["engine"] == "vllm"]
    print(f"vLLM engines started in the workers: {len(starts)}, {sum(r['seconds'] for r in starts):.0f} s to ready in all")
    stores = collections.Counter((r["kind"], r["key"]) for r in records if r.get("event") == "cache store")
    twice = [f"{kind} {key[:8]}" for (kind, key), n in stores.items() if n > 1]
    print("measured more than once:", ", ".join(twice) or "none")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
