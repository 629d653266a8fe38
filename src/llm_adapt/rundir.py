"""Run directories: `runs/<model>-<platform>-<timestamp>/`, one JSON per finished stage."""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

from llm_adapt.errors import AdaptError


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
