"""The Ascend NPU platform (vLLM + vLLM-Ascend), and the NPU facts read from the machine: npu-smi's
query output and the CANN toolkit's version.

The parsers are pure functions on text, written to the formats in Huawei's published npu-smi
reference (samples in tests/fixtures/npu_smi/, each with its source). The few functions that
run a command or read a file sit at the bottom and never raise.
"""

from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from llm_adapt.messages import reason
from llm_adapt.models.quant import MSMODELSLIM
from llm_adapt.platforms.accelerator import ACCELERATOR_CAVEATS
from llm_adapt.platforms.base import CaveatRule, DeviceRecord, Fp32Mode, Platform, tool_output, tool_output_now
from llm_adapt.platforms.env import (
    ASCEND_RAY,
    HCCL_TUNING,
    IFNAME,
    KIMI_TABLE,
    MULTINODE_DP,
    NIC_BINDING,
    QWEN3_DENSE,
    QWEN3_MOE,
    TUNING,
    EnvRow,
    ascend_docs,
    const,
    node_ip,
    visible_devices,
)

MIB = 1024 * 1024


def has_npu_device() -> bool:
    import importlib.util

    if importlib.util.find_spec("torch_npu") is None:
        return False
    try:
        import torch
        import torch_npu  # noqa: F401  registers torch.npu

        return bool(torch.npu.is_available())
    except Exception:
        return False


def npu_missing() -> list[str]:
    """What this host lacks to start vLLM-Ascend: the Ascend driver's npu-smi and the torch_npu package (looked
    up, not imported: importing it takes seconds and needs CANN)."""
    import importlib.util

    missing = [] if shutil.which("npu-smi") else ["no npu-smi on PATH (the Ascend driver)"]
    if importlib.util.find_spec("torch_npu") is None:
        missing.append("no torch_npu package")
    return missing


ENV_ROWS: tuple[EnvRow, ...] = (  # what a plan for it exports (platforms/env.py)
    EnvRow("ASCEND_RT_VISIBLE_DEVICES", visible_devices, "always",
           "the NPUs this node's vLLM processes use (the plan's TP x local DP cards)",
           "本节点 vLLM 进程使用的 NPU（按 TP × 本地 DP 的卡数）",
           ascend_docs(QWEN3_DENSE, ASCEND_RAY)),
    EnvRow("PYTORCH_NPU_ALLOC_CONF", const("expandable_segments:True"), "always",
           "torch_npu's caching allocator grows segments instead of splitting fixed blocks: less fragmentation",
           "torch_npu 缓存分配器使用可扩展段而非切分固定块，减少 NPU 内存碎片",
           ascend_docs(TUNING, QWEN3_DENSE, KIMI_TABLE)),
    EnvRow("TASK_QUEUE_ENABLE", const("1"), "always",
           "torch_npu dispatches operators through its task queue; the tuning guide's level 2 saves more host time "
           "but raises the memory peak",
           "torch_npu 通过任务队列下发算子；调优指南中的 2 级可进一步节省主机时间，但会提高内存峰值",
           ascend_docs(QWEN3_DENSE, TUNING, KIMI_TABLE)),
    EnvRow("OMP_PROC_BIND", const("false"), "always",
           "OpenMP threads are not pinned to cores (avoids overly strict CPU binding of the worker processes)",
           "不把 OpenMP 线程绑定到固定核（避免 worker 进程的 CPU 绑定过严）",
           ascend_docs(QWEN3_MOE, MULTINODE_DP, KIMI_TABLE)),
    EnvRow("OMP_NUM_THREADS", const("1"), "always",
           "one OpenMP thread per process: the NPU computes, so the workers' host threads need not compete for cores",
           "每个进程一个 OpenMP 线程：计算在 NPU 上，worker 的主机线程无需争抢 CPU 核",
           ascend_docs(QWEN3_MOE, MULTINODE_DP)),
    EnvRow("HCCL_OP_EXPANSION_MODE", const("AIV"), "communicating",
           "HCCL schedules collectives on the AI Vector cores instead of the AI CPU (the AIV communication path)",
           "HCCL 集合通信由 AI Vector 核调度而非 AI CPU（AIV 通信路径）",
           ascend_docs(HCCL_TUNING, QWEN3_DENSE, KIMI_TABLE)),
    EnvRow("HCCL_BUFFSIZE", const("1024"), "communicating",
           "MB of HCCL buffer for data shared between two NPUs; 1024 as in the guides' TP=2 dense example",
           "两张 NPU 间共享数据的 HCCL 缓冲区大小（MB）；取 1024，与指南中 TP=2 稠密模型及已验证的示例一致",
           ascend_docs(QWEN3_DENSE, HCCL_TUNING, KIMI_TABLE)),
    EnvRow("HCCL_IF_IP", node_ip, "multinode",
           "this node's own address, on which HCCL sets up its cross-node communicators",
           "本节点自身的 IP，HCCL 在此地址上建立跨节点通信域",
           ascend_docs(ASCEND_RAY, MULTINODE_DP, NIC_BINDING)),
    EnvRow("GLOO_SOCKET_IFNAME", const(IFNAME), "multinode",
           "network interface of torch's Gloo (host-side) process groups",
           "torch Gloo（主机侧）进程组使用的网卡",
           ascend_docs(ASCEND_RAY, MULTINODE_DP, NIC_BINDING)),
    EnvRow("TP_SOCKET_IFNAME", const(IFNAME), "multinode",
           "network interface of the TP (TensorPipe) sockets",
           "TP（TensorPipe）通信套接字使用的网卡",
           ascend_docs(ASCEND_RAY, MULTINODE_DP, NIC_BINDING)),
    EnvRow("HCCL_SOCKET_IFNAME", const(IFNAME), "data_parallel",
           "network interface HCCL uses for its host-side socket exchange between nodes",
           "HCCL 节点间主机侧套接字通信使用的网卡",
           ascend_docs(MULTINODE_DP, NIC_BINDING)),
    EnvRow("RAY_EXPERIMENTAL_NOSET_ASCEND_RT_VISIBLE_DEVICES", const("1"), "ray",
           "stops Ray (> 2.1) from rewriting ASCEND_RT_VISIBLE_DEVICES, so vLLM-Ascend sees the NPUs set above",
           "阻止 Ray（> 2.1）改写 ASCEND_RT_VISIBLE_DEVICES，使 vLLM-Ascend 看到上面设置的 NPU",
           ascend_docs(ASCEND_RAY)),
)


CAVEATS = (
    CaveatRule("ascend-softcap", "soft-capping", lambda f: bool(f.attn_softcap),
               lambda f: reason("cav_ascend_softcap", cap=f.attn_softcap), reason("cav_ascend_softcap_check"),
               "vLLM-Ascend v0.23.0 vllm_ascend/attention/attention_v1.py: AscendAttentionBackendImpl.__init__ takes "
               "logits_soft_cap and neither stores nor passes it on"),
    # No sliding-window caveat: the 0.8 series dropped sliding_window, but at v0.23.0 attention_v1.py passes it to
    # the NPU kernels (sparse_mode 4, pre_tokens = the window).
    CaveatRule("ascend-mla", "attention", lambda f: f.attention == "MLA",
               lambda f: reason("cav_ascend_mla"), reason("cav_ascend_mla_check"), "vLLM-Ascend vllm_ascend/attention/mla_v1.py"),
    CaveatRule("ascend-quant", "quantization",
               lambda f: bool(f.quantization) and f.quantization not in ("ascend", "w8a8", "w4a8"),
               lambda f: reason("cav_ascend_quant", method=f.quantization), reason("cav_ascend_quant_check"),
               "vLLM-Ascend docs, user guide: Supported Features (Quantization: W8A8 available) and the quantization guide"),
    *ACCELERATOR_CAVEATS,
)


def npu_fp32_mode(torch_npu_module: Any) -> Fp32Mode:
    """HF32 off through torch_npu's switches (torch_npu.npu.matmul.allow_hf32 and torch_npu.npu.conv.allow_hf32,
    torch_npu's documented flags), then read back. A torch_npu without them: not known to be true fp32."""
    npu = getattr(torch_npu_module, "npu", None)
    matmul, conv = getattr(npu, "matmul", None), getattr(npu, "conv", None)
    if matmul is None or not hasattr(matmul, "allow_hf32"):
        return Fp32Mode("npu", False, {"torch_npu.npu.matmul.allow_hf32": "absent"})
    matmul.allow_hf32 = False
    if conv is not None and hasattr(conv, "allow_hf32"):
        conv.allow_hf32 = False
    switches = {"torch_npu.npu.matmul.allow_hf32": bool(matmul.allow_hf32)}
    if conv is not None and hasattr(conv, "allow_hf32"):
        switches["torch_npu.npu.conv.allow_hf32"] = bool(conv.allow_hf32)
    return Fp32Mode("npu", not any(switches.values()), switches)


def local_fp32_mode() -> Fp32Mode | None:
    """This machine's NPU set to true fp32 (None without torch_npu or a usable device)."""
    import importlib

    import torch

    try:
        torch_npu = importlib.import_module("torch_npu")
    except ImportError:
        return None
    return npu_fp32_mode(torch_npu) if torch.npu.is_available() else None


PLATFORM = Platform(
    name="npu", env_rows=ENV_ROWS, display="Ascend NPU (vLLM-Ascend)", engine="vLLM + vllm-ascend", torch_module="npu",
    block_size=128, graph_mode="ACLGraph (vLLM-Ascend's default without --enforce-eager)",
    graph_mode_zh="ACLGraph（不传 --enforce-eager 时 vLLM-Ascend 的默认模式）",
    graph_name="ACLGraph",
    visible_devices_env="ASCEND_RT_VISIBLE_DEVICES", assumed_device_memory_gib=64.0,
    runtime_overhead_gib=2.0, startup_prior_s={"eager": 60.0, "graph": 150.0}, layer_dump=True,
    graph_variants=(("graph mode, FULL_DECODE_ONLY", "cudagraph_mode",
                     ("--compilation-config", '{"cudagraph_mode": "FULL_DECODE_ONLY"}')),),
    detect=has_npu_device, missing_here=lambda: npu_missing(), smi="npu-smi", describe_devices=lambda: describe_npus(),
    memory_reader=lambda: npu_memory_reader(),
    torch_extension=("torch_npu", "install CANN and torch_npu (see vLLM-Ascend's installation guide)"),
    own_quant=(MSMODELSLIM, "vLLM-Ascend"),  # msmodelslim checkpoints (W8A8, W8A8_DYNAMIC, ...)
    torch_devices=("npu",), fp32_mode=local_fp32_mode, caveats=CAVEATS,
    host_facts=lambda: {"cann": cann_version()},
)


@dataclass(frozen=True)
class NpuUsage:
    """One chip's line of `npu-smi info -t usages -i N`."""

    npu_id: int | None
    chip_id: int | None
    memory_kind: str  # "HBM" where the chip reports on-chip memory, else "DDR" (the chip's own memory)
    capacity_mb: float | None
    usage_pct: float | None
    aicore_pct: float | None
    npu_util_pct: float | None

    @property
    def used_bytes(self) -> int | None:
        """Capacity x usage rate: npu-smi prints whole percents, so this is good to 1% of capacity."""
        if self.capacity_mb is None or self.usage_pct is None:
            return None
        return int(self.capacity_mb * self.usage_pct / 100 * MIB)


@dataclass(frozen=True)
class NpuMemory:
    """One chip's line of `npu-smi info -t memory -i N`."""

    npu_id: int | None
    chip_id: int | None
    memory_kind: str
    capacity_mb: float | None
    clock_mhz: float | None


@dataclass(frozen=True)
class NpuDevice:
    """One chip's row pair in the `npu-smi info` table."""

    npu_id: int
    name: str
    health: str
    chip_id: int | None
    memory_used_mb: float | None
    memory_total_mb: float | None


@dataclass(frozen=True)
class NpuTable:
    npu_smi_version: str | None
    driver_version: str | None
    devices: tuple[NpuDevice, ...]


def parse_key_values(text: str) -> list[dict[str, str]]:
    """`key : value` lines grouped per chip: a `Chip ID` line opens a chip's group; the lines before
    the first one (NPU ID, Chip Count) belong to every group. Output without chip groups is one group."""
    head: dict[str, str] = {}
    groups: list[dict[str, str]] = []
    for line in text.splitlines():
        if ":" not in line:
            continue
        key, value = (part.strip() for part in line.split(":", 1))
        if not key:
            continue
        if key == "Chip ID":
            groups.append({**head, key: value})
        elif groups:
            groups[-1][key] = value
        else:
            head[key] = value
    return groups or ([head] if head else [])


def _number(value: str | None) -> float | None:
    """A number, or None for a missing field and npu-smi's NA / N/A."""
    if value is None:
        return None
    try:
        return float(value)
    except ValueError:
        return None


def _integer(value: str | None) -> int | None:
    number = _number(value)
    return int(number) if number is not None else None


def _memory_kind(fields: dict[str, str]) -> str:
    """HBM where the chip has on-chip memory (capacity > 0), else its DDR / plain memory."""
    return "HBM" if (_number(fields.get("HBM Capacity(MB)")) or 0) > 0 else "DDR"


def _pick(fields: dict[str, str], *keys: str) -> float | None:
    for key in keys:
        number = _number(fields.get(key))
        if number is not None:
            return number
    return None


def parse_usages(text: str) -> list[NpuUsage]:
    """`npu-smi info -t usages -i N` (optionally `-c CHIP`): one entry per chip that reports memory."""
    out = []
    for fields in parse_key_values(text):
        kind = _memory_kind(fields)
        if kind == "HBM":
            capacity, usage = _pick(fields, "HBM Capacity(MB)"), _pick(fields, "HBM Usage Rate(%)")
        else:
            capacity = _pick(fields, "DDR Capacity(MB)", "Memory Capacity(MB)")
            usage = _pick(fields, "DDR Usage Rate(%)", "Memory Usage Rate(%)")
        if capacity is None and usage is None:
            continue
        out.append(NpuUsage(npu_id=_integer(fields.get("NPU ID")), chip_id=_integer(fields.get("Chip ID")),
                            memory_kind=kind, capacity_mb=capacity, usage_pct=usage,
                            aicore_pct=_pick(fields, "Aicore Usage Rate(%)"),
                            npu_util_pct=_pick(fields, "NPU Utilization(%)")))
    return out


def parse_memory(text: str) -> list[NpuMemory]:
    """`npu-smi info -t memory -i N`: each chip's memory capacity (HBM where present)."""
    out = []
    for fields in parse_key_values(text):
        kind = _memory_kind(fields)
        if kind == "HBM":
            capacity, clock = _pick(fields, "HBM Capacity(MB)"), _pick(fields, "HBM Clock Speed(MHz)")
        else:
            capacity = _pick(fields, "DDR Capacity(MB)", "Capacity(MB)", "Total Capacity(MB)")
            clock = _pick(fields, "DDR Clock Speed(MHz)", "Clock Speed(MHz)")
        if capacity is None:
            continue
        out.append(NpuMemory(npu_id=_integer(fields.get("NPU ID")), chip_id=_integer(fields.get("Chip ID")),
                             memory_kind=kind, capacity_mb=capacity, clock_mhz=clock))
    return out


_VERSION = re.compile(r"npu-smi\s+(\S+)\s+Version:\s*(\S+)")
_PAIR = re.compile(r"(\d+(?:\.\d+)?)\s*/\s*(\d+(?:\.\d+)?)")


def parse_table(text: str) -> NpuTable:
    """The `npu-smi info` table: its version line and each chip's two rows (NPU / name / health,
    then chip / bus id / usage). The last `used / total` pair of the chip row is the device memory
    (HBM-Usage on chips that have it, else Memory-Usage). The process table below is not read."""
    match = _VERSION.search(text)
    devices: list[NpuDevice] = []
    first: list[str] | None = None
    for line in text.splitlines():
        if "Process id" in line or "Process name" in line:
            break
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 3 or not cells[0] or not cells[0].split()[0].isdigit():
            continue
        if first is None:
            first = cells
            continue
        devices.append(_device(first, cells))
        first = None
    return NpuTable(npu_smi_version=match.group(1) if match else None,
                    driver_version=match.group(2) if match else None, devices=tuple(devices))


def _device(first: list[str], second: list[str]) -> NpuDevice:
    head = first[0].split(None, 1)
    pairs = _PAIR.findall(second[-1])
    used, total = (float(pairs[-1][0]), float(pairs[-1][1])) if pairs else (None, None)
    return NpuDevice(npu_id=int(head[0]), name=head[1] if len(head) > 1 else "", health=first[1].split()[0] if first[1] else "",
                     chip_id=_integer(second[0].split()[0]), memory_used_mb=used, memory_total_mb=total)


# The chip names npu-smi and torch_npu print, by the product series vLLM-Ascend builds for (its
# AscendDeviceType: A2 for SoC 220-225, the 910B1-910B4; A3 for 250-255, the 910_93xx; 310P for 200-205;
# A5 for the 950) and upstream's e2e configs name as `hardware: "Atlas A2 Series"`.
_SERIES = ((re.compile(r"910B\d", re.I), "Atlas A2 Series"), (re.compile(r"910_93", re.I), "Atlas A3 Series"),
           (re.compile(r"310P", re.I), "Atlas 300I Series"), (re.compile(r"950|910_95", re.I), "Atlas A5 Series"))


def atlas_series(chip: str) -> str | None:
    """The Atlas series of a chip name ("910B3", "Ascend910B3", "Ascend910_9391"), None for a chip
    vLLM-Ascend does not build for (the 310B of an Atlas 200I A2) or a name npu-smi hid. Pure."""
    return next((series for pattern, series in _SERIES if pattern.search(chip or "")), None)


def parse_install_info(text: str) -> str | None:
    """CANN's `ascend_toolkit_install.info` (key=value lines): the `version` field."""
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep and key.strip().lower() == "version" and value.strip():
            return value.strip()
    return None


_RUNNING = re.compile(r"^\s*\w*version\s*=\s*\[?([^\]\s]+)\]?\s*$", re.IGNORECASE | re.MULTILINE)


def parse_version_cfg(text: str) -> str | None:
    """A toolkit `version.cfg`: `..._version=[inner:release]` or `version=X`; the release part."""
    match = _RUNNING.search(text)
    if not match:
        return None
    return match.group(1).split(":")[-1] or None


# --- the machine (never raises) ---------------------------------------------------------------

# CANN's installation guide, "File Paths": root's default install (8.0: ascend-toolkit/latest;
# 8.5: cann), and a non-root user's under $HOME/Ascend.
DEFAULT_TOOLKITS = (Path("/usr/local/Ascend/ascend-toolkit/latest"), Path("/usr/local/Ascend/cann"),
                    Path("~/Ascend/ascend-toolkit/latest"), Path("~/Ascend/cann"))


def toolkit_roots(env: dict[str, str] | None = None) -> list[Path]:
    """Where CANN's toolkit may be: the variables its set_env.sh exports, then the default paths."""
    env = os.environ if env is None else env
    roots = [Path(env[name]) for name in ("ASCEND_TOOLKIT_HOME", "ASCEND_HOME_PATH") if env.get(name)]
    return [*roots, *(root.expanduser() for root in DEFAULT_TOOLKITS)]


def cann_version(env: dict[str, str] | None = None) -> dict[str, str] | None:
    """CANN's version and the file it was read from: `<arch>-linux/ascend_toolkit_install.info`
    (CANN's installation guide, "File Paths"), else `version.cfg` in the toolkit root."""
    for root in toolkit_roots(env):
        for info in sorted(root.glob("*-linux/ascend_toolkit_install.info")):
            version = parse_install_info(_read(info))
            if version:
                return {"version": version, "source": str(info)}
        cfg = root / "version.cfg"
        version = parse_version_cfg(_read(cfg)) if cfg.is_file() else None
        if version:
            return {"version": version, "source": str(cfg)}
    return None


def _read(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return ""


def npu_smi(*args: str, timeout: float = 20) -> str:
    """npu-smi's output, or "" where the tool is missing, fails or hangs."""
    return tool_output_now("npu-smi", *args, timeout=timeout) if shutil.which("npu-smi") else ""


def visible_ids(ids: list[int], env: dict[str, str] | None = None) -> list[int]:
    """The NPU ids a server started from this environment can use (ASCEND_RT_VISIBLE_DEVICES)."""
    env = os.environ if env is None else env
    visible = env.get("ASCEND_RT_VISIBLE_DEVICES", "").strip()
    if not visible:
        return ids
    wanted = {int(v) for v in visible.split(",") if v.strip().isdigit()}
    return [i for i in ids if i in wanted]


def describe_npus() -> list[DeviceRecord]:
    """environment.json's accelerator entries for NPUs: the table's chips with each one's memory."""
    table = parse_table(npu_smi("info"))
    found: list[DeviceRecord] = []
    for npu_id in sorted({d.npu_id for d in table.devices}):
        chips = parse_memory(npu_smi("info", "-t", "memory", "-i", str(npu_id)))
        names = [d.name for d in table.devices if d.npu_id == npu_id]
        capacity = sum(c.capacity_mb or 0 for c in chips)
        name = names[0] if names else "Ascend NPU"
        found.append({"kind": "npu", "npu_id": npu_id, "name": name, "series": atlas_series(name),
                      "memory": f"{capacity:.0f} MiB" if capacity else "",
                      "memory_kind": chips[0].memory_kind if chips else None,
                      "driver": table.driver_version, "npu_smi": table.npu_smi_version})
    return found


async def npu_memory_reader():
    """HBM in use on the NPUs a server started from this environment can see: the NPUs listed once
    (`npu-smi info`, within ASCEND_RT_VISIBLE_DEVICES), then `npu-smi info -t usages -i N` per reading."""
    npu_ids = visible_ids(sorted({d.npu_id for d in parse_table(await tool_output("npu-smi", "info")).devices}))

    async def used() -> int | None:
        found = []
        for npu_id in npu_ids:
            out = await tool_output("npu-smi", "info", "-t", "usages", "-i", str(npu_id))
            found += [u.used_bytes for u in parse_usages(out) if u.used_bytes is not None]
        return sum(found) if found else None

    return used
