"""The NVIDIA GPU platform (vLLM)."""

from __future__ import annotations

import importlib.util
import os
from typing import Any

from llm_adapt.platforms.accelerator import ACCELERATOR_CAVEATS
from llm_adapt.platforms.base import DeviceRecord, Fp32Mode, Platform, tool_output, tool_output_now
from llm_adapt.platforms.env import (
    IFNAME,
    NETWORK,
    VLLM_DP,
    VLLM_RAY,
    EnvRow,
    const,
    node_ip,
    visible_devices,
    vllm_docs,
)


def nvidia_driver_present() -> bool:
    """torch sees CUDA devices only through a loaded NVIDIA driver, which shows in /proc and /dev."""
    return os.path.exists("/proc/driver/nvidia/version") or os.path.exists("/dev/nvidiactl") or os.name != "posix"


def has_cuda_device() -> bool:
    if not nvidia_driver_present() or importlib.util.find_spec("torch") is None:
        return False
    import torch  # seconds to import: only where an NVIDIA driver is loaded at all

    return torch.cuda.is_available()


def cuda_missing() -> list[str]:
    """What this host lacks to start vLLM on a GPU: a loaded NVIDIA driver, and a torch that sees a GPU."""
    if not nvidia_driver_present():
        return ["no NVIDIA driver loaded (no /proc/driver/nvidia/version)"]
    if not has_cuda_device():
        return ["no GPU that torch sees (torch.cuda.is_available() is False)"]
    return []


def describe_gpus() -> list[DeviceRecord]:
    """environment.json's accelerator entries for GPUs, as nvidia-smi reports them."""
    out = tool_output_now("nvidia-smi", "--query-gpu=name,memory.total,driver_version", "--format=csv,noheader")
    found: list[DeviceRecord] = []
    for line in out.splitlines():
        name, memory, driver = (part.strip() for part in line.split(",")[:3])
        found.append({"kind": "cuda", "name": name, "memory": memory, "driver": driver})
    return found


async def gpu_memory_reader():
    """Memory in use on the GPUs, summed over them (nvidia-smi, MiB)."""
    async def used() -> int | None:
        out = await tool_output("nvidia-smi", "--query-gpu=memory.used", "--format=csv,noheader,nounits")
        try:
            return sum(int(v) for v in out.split()) * 1024 * 1024 if out.strip() else None
        except ValueError:
            return None

    return used


# Vendor datasheet figures (dense bf16, no sparsity). Matched on the name the driver reports, most
# specific first. Ascend parts are absent: Huawei's public datasheets for the 910 series give no HBM
# bandwidth, and a number we cannot cite is not put in a report.
PUBLISHED = (
    ("H200", 4800.0, 989.0, "NVIDIA H200 Tensor Core GPU datasheet (SXM)"),
    ("H100 NVL", 3900.0, 835.0, "NVIDIA H100 Tensor Core GPU datasheet (H100 NVL)"),
    ("H100 PCIe", 2000.0, 756.0, "NVIDIA H100 Tensor Core GPU datasheet (H100 PCIe)"),
    ("H100", 3350.0, 989.0, "NVIDIA H100 Tensor Core GPU datasheet (H100 SXM)"),
    ("A100-PCIE-40GB", 1555.0, 312.0, "NVIDIA A100 Tensor Core GPU datasheet (40GB PCIe)"),
    ("A100-SXM4-40GB", 1555.0, 312.0, "NVIDIA A100 Tensor Core GPU datasheet (40GB SXM)"),
    ("A100 80GB PCIe", 1935.0, 312.0, "NVIDIA A100 Tensor Core GPU datasheet (80GB PCIe)"),
    ("A100", 2039.0, 312.0, "NVIDIA A100 Tensor Core GPU datasheet (80GB SXM)"),
)


def published_limits(device_name: str) -> dict[str, Any] | None:
    """The datasheet bandwidth (GB/s) and dense bf16 rate (TFLOP/s) for a device name; None if unknown."""
    for pattern, gb_s, tflops, source in PUBLISHED:
        if pattern.lower() in device_name.lower():
            return {"gb_per_s": gb_s, "tflops": tflops, "device": device_name, "source": f"published: {source}"}
    return None


def datasheet_limits() -> tuple[dict, dict] | None:
    """The first visible GPU's datasheet bandwidth and dense bf16 rate (PUBLISHED above), labelled as
    published; None for a GPU the table does not know."""
    names = [gpu["name"] for gpu in describe_gpus()]
    published = published_limits(names[0]) if names else None
    if published is None:
        return None
    cited = {"source": published["source"], "device": published["device"]}
    return {"gb_per_s": published["gb_per_s"], **cited}, {"tflops": published["tflops"], **cited}


ENV_ROWS: tuple[EnvRow, ...] = (  # what a plan for it exports (platforms/env.py)
    EnvRow("CUDA_VISIBLE_DEVICES", visible_devices, "always",
           "the GPUs this node's vLLM processes use (the plan's TP x local DP cards)",
           "本节点 vLLM 进程使用的 GPU（按 TP × 本地 DP 的卡数）",
           vllm_docs(VLLM_DP)),
    EnvRow("NCCL_SOCKET_IFNAME", const(IFNAME), "multinode",
           "network interface NCCL uses for the node's address (bootstrap, and transfers without InfiniBand)",
           "NCCL 使用的网卡（建链；无 InfiniBand 时也用于传输）",
           vllm_docs(NETWORK)),
    EnvRow("GLOO_SOCKET_IFNAME", const(IFNAME), "multinode",
           "network interface of torch's Gloo (host-side) process groups",
           "torch Gloo（主机侧）进程组使用的网卡",
           vllm_docs(NETWORK)),
    EnvRow("VLLM_HOST_IP", node_ip, "ray",
           "this node's own address, so that vLLM and Ray agree on it (a different value on each node)",
           "本节点自身的 IP，使 vLLM 与 Ray 使用同一地址（每个节点不同）",
           vllm_docs(VLLM_RAY, NETWORK)),
)


def cuda_fp32_mode(torch_module: Any) -> Fp32Mode:
    """TF32 off for matmul and cuDNN and fp32 matmul precision "highest" (the H200 had these by default,
    torch 2.11), then read back: true fp32 only if all three read back so."""
    torch_module.backends.cuda.matmul.allow_tf32 = False
    torch_module.backends.cudnn.allow_tf32 = False
    torch_module.set_float32_matmul_precision("highest")
    switches = {"torch.backends.cuda.matmul.allow_tf32": bool(torch_module.backends.cuda.matmul.allow_tf32),
                "torch.backends.cudnn.allow_tf32": bool(torch_module.backends.cudnn.allow_tf32),
                "float32_matmul_precision": torch_module.get_float32_matmul_precision()}
    true_fp32 = not switches["torch.backends.cuda.matmul.allow_tf32"] and not switches["torch.backends.cudnn.allow_tf32"] \
        and switches["float32_matmul_precision"] == "highest"
    return Fp32Mode("cuda", true_fp32, switches)


def local_fp32_mode() -> Fp32Mode | None:
    """This machine's GPU set to true fp32 (None without a usable one)."""
    import torch

    return cuda_fp32_mode(torch) if torch.cuda.is_available() else None


PLATFORM = Platform(
    name="cuda", env_rows=ENV_ROWS, display="NVIDIA GPU (vLLM)", engine="vLLM", torch_module="cuda",
    block_size=16, graph_mode="CUDA graphs (vLLM's default without --enforce-eager)",
    graph_mode_zh="CUDA graphs（不传 --enforce-eager 时 vLLM 的默认模式）",
    graph_name="CUDA graphs",
    visible_devices_env="CUDA_VISIBLE_DEVICES", assumed_device_memory_gib=80.0, runtime_overhead_gib=1.0,
    startup_prior_s={"eager": 60.0, "graph": 120.0}, detect=has_cuda_device,
    missing_here=lambda: cuda_missing(), hardware_limits=datasheet_limits,
    smi="nvidia-smi", describe_devices=describe_gpus, memory_reader=gpu_memory_reader,
    torch_devices=("cuda",), fp32_mode=local_fp32_mode, caveats=ACCELERATOR_CAVEATS,
)
