"""Where AISBench is, and how it gets a venv of its own.

`pip install --dry-run ais-bench-benchmark` beside this project's pins is refused (it needs datasets <= 3.6.0
against 5.x); installed alone it moves numpy to 1.26.4, datasets to 3.6.0, pandas, Pillow (pinned 11.2.1),
fsspec, dill and transformers, and it pulls a CUDA build of torch unless a CPU one is pinned. So it lives in
its own venv, which `eval --backend aisbench` calls as a program:

    python -m llm_adapt.evaluation.aisbench.install            # creates <this environment>/aisbench
    python -m llm_adapt.evaluation.aisbench.install --venv DIR

`make setup` runs the first. Found, in order: $LLM_ADAPT_AISBENCH (a venv or its ais_bench), the venv in
this environment (<sys.prefix>/aisbench), `ais_bench` on PATH (vLLM-Ascend's images install it there).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from importlib import metadata
from pathlib import Path

from llm_adapt.errors import UsageError

ENV = "LLM_ADAPT_AISBENCH"
VERSION = "3.1.20260630"
# its own venv's pins beyond the package: its numpy < 2 needs a pyarrow built for it (newer ones need numpy
# 2); its config loader imports pkg_resources (setuptools < 81); its HF backend calls the tokenizer's
# batch_encode_plus, gone in transformers 5
PINS = (f"ais-bench-benchmark=={VERSION}", "pyarrow<22", "setuptools<81", "transformers<5")


def default_venv() -> Path:
    return Path(sys.prefix) / "aisbench"


def executable_in(path: Path) -> Path | None:
    """The ais_bench of a venv directory, or the path itself when it is the program."""
    for candidate in (path / "bin" / "ais_bench", path):
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    return None


def locate(env: dict[str, str] | None = None) -> Path | None:
    env = os.environ if env is None else env
    if env.get(ENV):
        return executable_in(Path(env[ENV]))
    found = executable_in(default_venv())
    if found:
        return found
    on_path = shutil.which("ais_bench")
    return Path(on_path) if on_path else None


def require(env: dict[str, str] | None = None) -> Path:
    """ais_bench, or one line naming the fix."""
    found = locate(env)
    if found:
        return found
    env = os.environ if env is None else env
    where = f"{ENV}={env[ENV]} holds no ais_bench" if env.get(ENV) else "AISBench is not installed"
    raise UsageError(f"{where}; `python -m llm_adapt.evaluation.aisbench.install` creates its own venv at "
                     f"{default_venv()} (its numpy < 2 and datasets <= 3.6 pins clash with vLLM's), or set {ENV} "
                     "to an ais_bench")


def torch_pin() -> list[str]:
    """This environment's torch, pinned (without its local tag) so the venv takes the same build's wheel and
    not a CUDA one; nothing where torch is not installed here."""
    try:
        return [f"torch=={metadata.version('torch').split('+')[0]}"]
    except metadata.PackageNotFoundError:
        return []


def install(venv: Path, say=print) -> Path:
    """Create `venv` and install AISBench into it (minutes; needs the package index)."""
    python = venv / "bin" / "python"
    # without this environment's PYTHONPATH (make setup sets it to src/): the venv's pip would take whatever
    # it names for installed packages
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    if not python.exists():
        say(f"creating {venv}")
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, env=env)
    pins = torch_pin()
    if pins:  # first, so AISBench's unpinned torch is already met
        subprocess.run([str(python), "-m", "pip", "install", "-q", *pins], check=True, env=env)
    subprocess.run([str(python), "-m", "pip", "install", "-q", *PINS, *pins], check=True, env=env)
    found = executable_in(venv)
    if found is None:
        raise UsageError(f"{venv}: installed, but it has no bin/ais_bench")
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m llm_adapt.evaluation.aisbench.install",
                                     description="Install AISBench into a venv of its own for `llm-adapt eval --backend aisbench`.")
    parser.add_argument("--venv", type=Path, default=default_venv(), help=f"where (default {default_venv()})")
    args = parser.parse_args(argv)
    found = install(args.venv)
    print(f"ais_bench: {found}" + ("" if args.venv == default_venv() else f"  (set {ENV}={args.venv})"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
