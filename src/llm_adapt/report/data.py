"""Everything the report shows, read from a run directory's JSON files and nothing else."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from llm_adapt.errors import UsageError
from llm_adapt import rundir
from llm_adapt.results import UnreadableResult, read_checked


@dataclass
class RunData:
    dir: Path
    parts: dict[str, dict[str, Any]] = field(default_factory=dict)
    bench: dict[str, dict[str, Any]] = field(default_factory=dict)
    unreadable: dict[str, str] = field(default_factory=dict)

    def get(self, name: str) -> dict[str, Any] | None:
        return self.parts.get(name)


def load_run(run_dir: Path) -> RunData:
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise UsageError(f"{run_dir}: no such run directory")
    data = RunData(run_dir)
    for name, file in rundir.RESULTS.items():
        _read(data, name, run_dir / file, data.parts)
    for mode in rundir.BENCH_MODES:
        _read(data, mode, run_dir / rundir.bench(mode), data.bench)
    if "bench" not in data.bench and (run_dir / rundir.bench()).exists():
        _read(data, "bench", run_dir / rundir.bench(), data.bench)
        if (data.bench.get("bench") or {}).get("mode") == "sla":  # `bench --mode sla --out RUN_DIR`: beside the sweep
            data.bench.setdefault("sla", data.bench.pop("bench"))
    if not data.parts.get("inspect") and not data.parts.get("status"):
        raise UsageError(f"{run_dir}: not a run directory (no inspect.json or status.json); run `llm-adapt run` first")
    return data


def _read(data: RunData, name: str, path: Path, into: dict) -> None:
    if not path.exists():
        return
    try:
        into[name] = read_checked(path)
    except UnreadableResult as exc:  # named in the report's notes, never misread
        data.unreadable[name] = str(exc)
