"""Which model a run directory measured, read from its own JSON: what `diff` checks before comparing two runs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, TypedDict

from llm_adapt import rundir
from llm_adapt.judged.data import result_files


class RunModel(TypedDict, total=False):
    """What a run says it measured: the model's name, and its architecture where inspect.json gives it."""
    name: str
    architecture: str | None


def run_model(run_dir: Path) -> RunModel:
    """The model of a run: inspect.json's name and architecture, else status.json's model argument; {} when
    the run records neither (nothing to check)."""
    inspected = _read(run_dir / rundir.INSPECT)
    if inspected.get("model", {}).get("name"):
        return {"name": inspected["model"]["name"], "architecture": inspected.get("architecture")}
    given = _read(run_dir / rundir.STATUS).get("model")
    return {"name": given} if given else {}


def model_mismatch(a: RunModel, b: RunModel) -> str | None:
    """Why two runs' models differ, or None (the same, or one of them unknown). Pure."""
    for key in ("name", "architecture"):
        if a.get(key) and b.get(key) and a[key] != b[key]:
            return f"{key} {a[key]!r} against {b[key]!r}"
    return None


def _read(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def earlier_results(run_dir: Path) -> list[str]:
    """The result files of an earlier command in `run_dir` (status.json first), sorted; [] for a new or empty
    directory."""
    if not run_dir.is_dir():
        return []
    names = set(result_files().values()) | {rundir.bench(mode) for mode in rundir.BENCH_MODES} | {rundir.bench()}
    found = sorted(p.name for p in run_dir.iterdir() if p.name in names)
    return sorted(found, key=lambda name: name != rundir.STATUS)


def reuse_problem(found: list[str], earlier: dict[str, Any], model: str, workload: dict[str, Any],
                  resume: bool) -> str | None:
    """Why `run --out DIR` may not write into a directory that holds `found` (earlier_results) and whose
    status.json reads `earlier` ({} without one), or None: a run directory holds one run, so only `--resume` of the
    same model and workload goes on in it. Pure."""
    if not found:
        return None
    if not resume:
        what = f"an earlier run of {earlier['model']!r}" if earlier.get("model") else f"earlier results ({', '.join(found[:3])})"
        return f"it holds {what}; choose another --out (or pass --resume to finish that run)"
    if not earlier:
        return f"--resume needs an earlier run there (status.json); it holds only {', '.join(found[:3])}"
    if earlier.get("model") != model:
        return f"it holds a run of {earlier.get('model')!r}, not {model!r}; --resume finishes the same model's run"
    moved = sorted(key for key in workload if earlier.get("workload", {}).get(key, workload[key]) != workload[key])
    if moved:
        return f"its run had other options ({', '.join(moved)}); --resume finishes a run with the options it started with"
    return None


def require_one_run(out: Path | None, model: str, workload: dict[str, Any], resume: bool) -> None:
    """`run --out DIR`: one line and exit 2 when DIR holds another run (reuse_problem), before anything is made."""
    from llm_adapt.errors import UsageError

    if out is None:
        return
    problem = reuse_problem(earlier_results(Path(out)), _read(Path(out) / rundir.STATUS), model, workload, resume)
    if problem:
        raise UsageError(f"--out {out}: {problem}")
