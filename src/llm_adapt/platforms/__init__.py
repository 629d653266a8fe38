"""The target platforms, one module each (cpu.py, cuda.py, npu.py), and detection of the local one.

Adding a platform is one module with a `Platform` (base.py) and one line in BUILT_IN; or, from
outside, `register()`. Nothing here imports torch at module import time: detection does it lazily.
"""

from __future__ import annotations

from llm_adapt.errors import UsageError
from llm_adapt.platforms import cpu, cuda, npu
from llm_adapt.platforms.base import DEVICE_KV_MARGIN, Platform
from llm_adapt.platforms.cpu import (  # noqa: F401  the CPU facts other packages read
    IOMP_NAME,
    NATIVE_BF16_FLAGS,
    SYSTEM_LIB_DIRS,
    TCMALLOC_NAMES,
    cpu_cores,
    cpu_flags,
    cpu_has_native_bf16,
    cpu_model,
    cpu_preload_libs,
    native_bf16,
    parse_cpu_flags,
)

__all__ = ["DEVICE_KV_MARGIN", "PLATFORMS", "Platform", "default_serving_dtype", "detect_platform", "get_platform",
           "local_device_count", "local_device_memory_gib", "quant_warnings", "register", "require_engine_host",
           "unregister", "vllm_quantization_flag"]

# Detection order: the first whose device this machine has; cpu (no `detect`) is the fallback.
BUILT_IN = (npu.PLATFORM, cuda.PLATFORM, cpu.PLATFORM)
PLATFORMS: dict[str, Platform] = {p.name: p for p in BUILT_IN}
FALLBACK = "cpu"


def register(platform: Platform) -> None:
    """Another platform beside the built-in ones (detected before them when it has `detect`)."""
    others = [(k, v) for k, v in PLATFORMS.items() if k != platform.name]
    PLATFORMS.clear()  # in place: modules hold this dict
    PLATFORMS[platform.name] = platform
    PLATFORMS.update(others)


def unregister(name: str) -> None:
    PLATFORMS.pop(name, None)


def get_platform(name: str) -> Platform:
    try:
        return PLATFORMS[name]
    except KeyError:
        raise UsageError(f"unknown platform {name!r}; use one of: {', '.join(PLATFORMS)}") from None


def detect_platform() -> str:
    """The first platform whose devices this machine has (npu, then cuda), else cpu."""
    for platform in PLATFORMS.values():
        if platform.detect is not None and platform.detect():
            return platform.name
    return FALLBACK


def require_engine_host(name: str | None, model: str) -> None:
    """Before a command starts `name`'s engine on this host: one line (exit 2) naming what the host lacks, and
    the two ways on without it (a server elsewhere, or the plan alone). A platform left to detection is here."""
    if name is None:
        return
    platform = get_platform(name)
    missing = platform.missing_here() if platform.missing_here else []
    if missing:
        raise UsageError(f"--platform {name} starts {platform.engine} on this host, which has {' and '.join(missing)}; "
                         f"judge a server running on another host with --endpoint URL, or see the plan without starting "
                         f"anything with `llm-adapt inspect {model} --platform {name}`")


def with_device_tool() -> list[Platform]:
    """The platforms whose vendor device tool (nvidia-smi, npu-smi, ...) is on PATH here, in detection order."""
    import shutil

    return [p for p in PLATFORMS.values() if p.smi and shutil.which(p.smi)]


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


def default_serving_dtype(platform: str, has_native_bf16: bool | None = None) -> tuple[str, str | None]:
    """The dtype a plan serves in when the user names none, and why when it is not bf16. On a CPU
    without native bf16 vLLM-CPU's bf16 kernels convert: its prefill ran 5x slower than fp32 on such
    a CPU (128 tokens: 1.88 s against 0.37 s, the default model), so the plan serves fp32 there."""
    if not get_platform(platform).host_memory:
        return "bf16", None
    native = cpu_has_native_bf16() if has_native_bf16 is None else has_native_bf16
    if native:
        return "bf16", None
    from llm_adapt.messages import reason

    return "fp32", reason("dtype_auto_fp32")


# ---- a pre-quantized checkpoint (models/quant.QuantInfo) on each platform ----

def vllm_quantization_flag(quant, platform: str) -> str | None:
    """The --quantization value the plan must pass: a format only this platform serves (msmodelslim on
    Ascend). vLLM reads every other method from quantization_config itself (ModelConfig._verify_quantization)
    and refuses a flag that disagrees with it, so none is added there."""
    own = get_platform(platform).own_quant
    return own[0] if quant is not None and own is not None and quant.method == own[0] else None


def quant_warnings(quant, platform: str) -> list[str]:
    """One line per reason the planned engine cannot serve this checkpoint, or a fact the user must know."""
    if quant is None:
        return []
    owner = next((p for p in PLATFORMS.values() if p.own_quant and p.own_quant[0] == quant.method), None)
    if owner is not None and owner.name != platform:
        return [(f"{quant.scheme} ({quant.source}) is served only by {owner.own_quant[1]} (--quantization "
                 f"{owner.own_quant[0]}); on {platform} use the float checkpoint it was made from")]
    here = get_platform(platform)
    warning = here.quant_warning(quant) if here.quant_warning else None
    return [warning] if warning else []
