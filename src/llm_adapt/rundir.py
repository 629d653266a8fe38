"""The run directory, in one place: where it is made (`runs/<model>-<label>-<timestamp>/` or the
user's --out), checked writable before any long work, and the name of every file in it."""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

from llm_adapt.errors import AdaptError

STATUS = "status.json"
ENVIRONMENT = "environment.json"
INSPECT = "inspect.json"
ACCURACY = "accuracy.json"
SERVE = "serve.json"
PROBES = "probes.json"
ENDPOINT_ACCURACY = "endpoint_accuracy.json"
TUNE = "tune.json"
HARDWARE = "hardware.json"
EVAL = "eval.json"
DIFF = "diff.json"
ADAPTATION = "adaptation.json"  # the run against vLLM-Ascend's adapter workflow: gates, feature rows, dummy vs real
LAYERS = "layers.json"  # llm-adapt layers: the engine's own layers against the gold
EAGER_CHECK = "eager"  # a graph deployment's escalation: endpoint accuracy of the eager engine, beside the graph one's
CAPTURE = "capture"  # the capture plugin's directory (LLM_ADAPT_CAPTURE_DIR) inside a run
ENGINE_LOG = "engine.log"
PLOTS = "plots"

# result name -> file, for every stage the report reads
RESULTS = {"status": STATUS, "environment": ENVIRONMENT, "inspect": INSPECT, "accuracy": ACCURACY, "serve": SERVE,
           "probes": PROBES, "endpoint_accuracy": ENDPOINT_ACCURACY, "tune": TUNE, "hardware": HARDWARE, "eval": EVAL,
           "layers": LAYERS, "adaptation": ADAPTATION}
BENCH_MODES = ("latency", "throughput", "sweep", "serve", "sla")


def bench(mode: str | None = None) -> str:
    """bench-<mode>.json inside a run; bench.json for a lone `llm-adapt bench`."""
    return f"bench-{mode}.json" if mode else "bench.json"


def bench_records(mode: str, label: str, suffix: str = "") -> str:
    """The raw per-request records of one benchmark level (JSON lines)."""
    return f"bench-{mode}-{label}{suffix}.jsonl"


def report(lang: str, suffix: str) -> str:
    """report.md / report.html in English, report.<lang>.<suffix> otherwise."""
    return f"report.{suffix}" if lang == "en" else f"report.{lang}.{suffix}"


def open_run_dir(out: Path | None, model_name: str, label: str, root: Path | None = None) -> Path:
    """The user's --out, or a new directory for this model and label; writable, or one line why not."""
    return ensure_writable(Path(out)) if out else new_run_dir(model_name, label, root)


def new_run_dir(model_name: str, label: str, root: Path | None = None) -> Path:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    safe = re.sub(r"[^A-Za-z0-9._-]+", "-", model_name).strip("-") or "model"
    return ensure_writable(Path(root or "runs") / f"{safe}-{label}-{stamp}")


def ensure_writable(path: Path) -> Path:
    """Create the directory and prove we can write there, before any long work starts."""
    try:
        path.mkdir(parents=True, exist_ok=True)
        probe = path / f".write-test-{os.getpid()}"
        probe.write_text("ok")
        probe.unlink()
    except OSError as exc:
        raise AdaptError(f"{path}: cannot write results there ({exc.strerror}); choose another --out") from None
    return path
