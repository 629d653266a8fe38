"""Every file name of a run directory, in one place, and the checked read of a result file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from llm_adapt.results import SCHEMA_VERSION

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
LAYERS = "layers.json"  # llm-adapt layers: the engine's own layers against the gold
CAPTURE = "capture"  # the capture plugin's directory (LLM_ADAPT_CAPTURE_DIR) inside a run
ENGINE_LOG = "engine.log"
PLOTS = "plots"

# result name -> file, for every stage the report reads
RESULTS = {"status": STATUS, "environment": ENVIRONMENT, "inspect": INSPECT, "accuracy": ACCURACY, "serve": SERVE,
           "probes": PROBES, "endpoint_accuracy": ENDPOINT_ACCURACY, "tune": TUNE, "hardware": HARDWARE, "eval": EVAL,
           "layers": LAYERS}
BENCH_MODES = ("latency", "throughput", "sweep", "serve")


def bench(mode: str | None = None) -> str:
    """bench-<mode>.json inside a run; bench.json for a lone `llm-adapt bench`."""
    return f"bench-{mode}.json" if mode else "bench.json"


def report(lang: str, suffix: str) -> str:
    """report.md / report.html in English, report.<lang>.<suffix> otherwise."""
    return f"report.{suffix}" if lang == "en" else f"report.{lang}.{suffix}"


class UnreadableResult(Exception):
    """A result file that is not JSON, or of another schema version: named, never misread."""


def read_result(path: Path) -> dict[str, Any]:
    """A result file's JSON, refused when its schema_version is not this llm-adapt's."""
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise UnreadableResult(f"{Path(path).name}: {exc}") from None
    version = data.get("schema_version") if isinstance(data, dict) else None
    if version != SCHEMA_VERSION:
        raise UnreadableResult(f"{Path(path).name}: schema version {version} is not {SCHEMA_VERSION}; "
                               "rerun the stage with this llm-adapt version")
    return data
