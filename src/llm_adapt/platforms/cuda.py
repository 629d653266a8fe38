"""The NVIDIA GPU platform (vLLM)."""

from __future__ import annotations

import importlib.util
import os

from llm_adapt.platforms.base import Platform


def nvidia_driver_present() -> bool:
    """torch sees CUDA devices only through a loaded NVIDIA driver, which shows in /proc and /dev."""
    return os.path.exists("/proc/driver/nvidia/version") or os.path.exists("/dev/nvidiactl") or os.name != "posix"


def has_cuda_device() -> bool:
    if not nvidia_driver_present() or importlib.util.find_spec("torch") is None:
        return False
    import torch  # seconds to import: only where an NVIDIA driver is loaded at all

    return torch.cuda.is_available()


def datasheet_limits() -> tuple[dict, dict] | None:
    """The first visible GPU's datasheet bandwidth and dense bf16 rate (bench/hardware.py's table), labelled
    as published; None for a GPU the table does not know."""
    from llm_adapt.bench.hardware import published_limits
    from llm_adapt.environment import accelerators

    names = [a["name"] for a in accelerators() if a.get("kind") == "cuda"]
    published = published_limits(names[0]) if names else None
    if published is None:
        return None
    cited = {"source": published["source"], "device": published["device"]}
    return {"gb_per_s": published["gb_per_s"], **cited}, {"tflops": published["tflops"], **cited}


PLATFORM = Platform(
    name="cuda", display="NVIDIA GPU (vLLM)", engine="vLLM", torch_module="cuda",
    block_size=16, graph_mode="CUDA graphs (vLLM's default without --enforce-eager)",
    visible_devices_env="CUDA_VISIBLE_DEVICES", assumed_device_memory_gib=80.0, runtime_overhead_gib=1.0,
    startup_prior_s={"eager": 60.0, "graph": 120.0}, detect=has_cuda_device, hardware_limits=datasheet_limits,
)
