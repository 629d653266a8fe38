"""Which model a run directory measured, read from its own JSON: what `diff` checks before comparing two runs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, TypedDict

from llm_adapt import rundir


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
