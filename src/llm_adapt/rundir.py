"""The run directory, in one place: where it is made (`runs/<model>-<label>-<timestamp>/` or the
user's --out), checked writable before any long work, and the name of every file in it."""

from __future__ import annotations

import os
import re
import shutil
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from llm_adapt.errors import cannot_write

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
SETTINGS = "settings.json"  # a differential run (`run --settings`): each setting's verdict and the one that moved
SETTINGS_DIR = "settings"  # each setting after the first in a folder of its own: serve, endpoint accuracy, layers
ENGINE_LOG = "engine.log"
DUMMY_DIR = "dummy"  # the dummy-weight stage's own run directory (`run --stages dummy,real`), inside the real one
PLOTS = "plots"
AISBENCH_DIR = "aisbench"  # eval --backend aisbench: its config files and its --work-dir

BENCH_MODES = ("latency", "throughput", "sweep", "serve", "sla")


def bench(mode: str | None = None) -> str:
    """bench-<mode>.json inside a run; bench.json for a lone `llm-adapt bench`."""
    return f"bench-{mode}.json" if mode else "bench.json"


def bench_records(mode: str, label: str, suffix: str = "") -> str:
    """The raw per-request records of one benchmark level (JSON lines)."""
    return f"bench-{mode}-{label}{suffix}.jsonl"


def setting_dir(name: str) -> str:
    """The folder of a setting of a differential run, inside the run: settings/<name> (deploy_settings.py names)."""
    return f"{SETTINGS_DIR}/{re.sub(r'[^A-Za-z0-9+._-]+', '-', name)}"


def report(lang: str, suffix: str) -> str:
    """report.md / report.html in English, report.<lang>.<suffix> otherwise."""
    return f"report.{suffix}" if lang == "en" else f"report.{lang}.{suffix}"


def open_run_dir(out: Path | None, model_name: str, label: str, root: Path | None = None) -> Path:
    """The user's --out, or a new directory for this model and label; writable, or one line why not."""
    return ensure_writable(Path(out)) if out else new_run_dir(model_name, label, root)


@contextmanager
def kept_or_scratch(out: Path | None) -> Iterator[Path]:
    """Where a measuring command (probe, bench, compare, eval) writes: the user's --out, kept; without one, a
    scratch directory removed on the way out, so a command asked for a terminal answer leaves no runs/ behind
    (vLLM's `bench serve` saves only with --save-result, lm-eval only with --output_path). A scratch holding
    an engine's log is kept when the engine failed to start: the error names that log."""
    if out is not None:
        yield ensure_writable(Path(out))
        return
    import tempfile

    from llm_adapt.errors import EngineStartError

    scratch = Path(tempfile.mkdtemp(prefix="llm-adapt-"))
    keep = False
    try:
        yield scratch
    except EngineStartError:
        keep = True
        raise
    finally:
        if not keep:
            shutil.rmtree(scratch, ignore_errors=True)


def new_run_dir(model_name: str, label: str, root: Path | None = None) -> Path:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    safe = re.sub(r"[^A-Za-z0-9._-]+", "-", model_name).strip("-") or "model"
    return ensure_writable(Path(root or "runs") / f"{safe}-{label}-{stamp}")


# Per open scope (`no_empty_dirs`): each directory ensure_writable created, with the outermost parent it
# created for it.
_scopes: list[list[tuple[Path, Path]]] = []


@contextmanager
def no_empty_dirs() -> Iterator[None]:
    """Directories made for results inside this scope appear only if something is written in them: on the
    way out (a failed command, or one that wrote nothing) each one this scope created that holds no file is
    removed, then each parent created for it that is left empty."""
    created: list[tuple[Path, Path]] = []
    _scopes.append(created)
    try:
        yield
    finally:
        _scopes.remove(created)
        for leaf, top in reversed(created):
            _remove_if_empty(leaf, top)


def _remove_if_empty(leaf: Path, top: Path) -> None:
    if not leaf.is_dir() or any(p.is_file() or p.is_symlink() for p in leaf.rglob("*")):
        return
    shutil.rmtree(leaf, ignore_errors=True)
    for parent in leaf.parents:  # up to the outermost one we made; another process's directory stops it
        if parent != top and top not in parent.parents:
            break
        try:
            parent.rmdir()
        except OSError:
            break


def _first_missing(path: Path) -> Path | None:
    """The outermost directory mkdir(parents=True) would create for `path`, or None when it exists."""
    missing = None
    for candidate in [path, *path.parents]:
        if candidate.exists():
            break
        missing = candidate
    return missing


def ensure_writable(path: Path) -> Path:
    """Create the directory and prove we can write there, before any long work starts."""
    try:
        missing = _first_missing(path)
        path.mkdir(parents=True, exist_ok=True)
        if missing is not None and _scopes:
            _scopes[-1].append((path, missing))
        probe = path / f".write-test-{os.getpid()}"
        probe.write_text("ok")
        probe.unlink()
    except OSError as exc:
        raise cannot_write(path, exc) from None
    return path
