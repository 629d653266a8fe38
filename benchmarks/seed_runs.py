"""Seed-size dummy runs end to end: `llm-adapt run DIR --dummy --quick` with the default plan on a
config-only directory built from a published config (tests/fixtures/configs) and the default
model's tokenizer. Prints the wall time, each stage's seconds, the engine's start-up, the KV
figures logged against predicted, and the peak RSS of the run's process tree (engine included).

Run (one heavy job at a time on a small box):
  .venv/bin/python benchmarks/seed_runs.py --model llama-3.1-8b [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[1]


def config_only_dir(name: str, out: Path) -> Path:
    """The published config plus the default model's tokenizer: what `--dummy` needs."""
    from llm_adapt.models.source import resolve_model
    from llm_adapt.models.synthetic import copy_tokenizer

    out.mkdir(parents=True, exist_ok=True)
    (out / "config.json").write_text((ROOT / "tests/fixtures/configs" / f"{name}.json").read_text())
    copy_tokenizer(resolve_model("default").path, out)
    return out


class PeakMemory:
    """RSS of a process and all its descendants (the engine's too), sampled every half second: the
    peak. Counted per process tree, not from the host's free memory, which other jobs move."""

    def __init__(self, pid: int) -> None:
        self.root = psutil.Process(pid)
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _tree_rss(self) -> int:
        total = 0
        try:
            procs = [self.root, *self.root.children(recursive=True)]
        except psutil.Error:
            return 0
        for proc in procs:
            try:
                total += proc.memory_info().rss
            except psutil.Error:
                pass
        return total

    def _run(self) -> None:
        while not self._stop.wait(0.5):
            self.peak = max(self.peak, self._tree_rss())

    def __enter__(self) -> "PeakMemory":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()


def seed_run(name: str, work: Path) -> dict:
    model = config_only_dir(name, work / name)
    out = work / f"run-{name}"
    argv = [sys.executable, "-m", "llm_adapt.cli", "run", str(model), "--dummy", "--quick", "--out", str(out)]
    started = time.monotonic()
    proc = subprocess.Popen(argv)
    with PeakMemory(proc.pid) as memory:
        code = proc.wait()
    wall = time.monotonic() - started
    status = json.loads((out / "status.json").read_text())
    serve = json.loads((out / "serve.json").read_text()) if (out / "serve.json").exists() else {}
    return {"model": name, "exit_code": code, "wall_s": round(wall, 1),
            "stages": {k: (v["status"], v.get("seconds")) for k, v in status["stages"].items()},
            "startup_s": serve.get("startup_seconds"), "max_model_len": serve.get("predicted", {}).get("max_model_len"),
            "kv_tokens_logged": serve.get("engine_facts", {}).get("kv_cache_tokens"),
            "kv_tokens_predicted": serve.get("predicted", {}).get("kv_cache_tokens"),
            "attempts": [(a["max_model_len"], a["outcome"]) for a in serve.get("attempts", [])],
            "peak_rss_gib": round(memory.peak / 1024**3, 1), "out": str(out)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", action="append", choices=["llama-3.2-1b", "llama-3.2-3b", "llama-3.1-8b"])
    parser.add_argument("--out", type=Path, help="keep the model directories and runs here")
    args = parser.parse_args()
    work = args.out or Path(tempfile.mkdtemp(prefix="seed-runs-"))
    for name in args.model or ["llama-3.1-8b"]:
        result = seed_run(name, work)
        print(json.dumps(result, indent=1), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
