"""Where the fp32 gold runs when the user leaves it to us (`--reference auto`): on the accelerator when its
fp32 matmul is true fp32 and the model fits there, else across the accelerator and the host (accelerate's
placement), else on the host CPU. The gold on an H200 ran 4x faster than on its 16 host cores (7.7 s
against 30.6 s for Llama-3.2-3B's body), and at the reference reports' sizes the gold is most of a run.

True fp32: a CUDA device may run fp32 matmuls as TF32 (10-bit mantissa) and an Ascend NPU as HF32; either
would make the "gold" a lower-precision run. The switches are set off and read back, and what was read
is recorded beside the choice, so the report says where the gold ran and why.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from llm_adapt.platforms.base import Fp32Mode

# Room over the weights for activations, the KV of the longest prompt and the allocator's slack.
HEADROOM = 1.25


@dataclass(frozen=True)
class GoldChoice:
    label: str  # the reference runner: "cuda:fp32", "auto:fp32", "cpu:fp32"
    why: str  # one of WHY's keys
    args: dict[str, Any] = field(default_factory=dict)


WHY = {
    "no_accelerator": "no accelerator here: the gold runs on the host CPU",
    "not_true_fp32": "{device}'s fp32 matmul is not true fp32 here ({switches}): the gold runs on the host CPU",
    "fits_device": "{device}'s fp32 matmul is true fp32 ({switches}) and the fp32 weights ({need_gib:.1f} GiB with "
                   "headroom) fit its {free_gib:.1f} GiB free: the gold runs on the {device}",
    "split": "the fp32 weights ({need_gib:.1f} GiB with headroom) do not fit the {device}'s {free_gib:.1f} GiB free: "
             "the gold is placed across the {device} and the host",
    "host": "the fp32 weights ({need_gib:.1f} GiB with headroom) fit neither the {device} nor beside the host: the "
            "gold runs on the host CPU, one layer at a time",
}


def choose_gold(mode: Fp32Mode | None, fp32_bytes: int, device_free: int | None, host_free: int) -> GoldChoice:
    """The gold's runner from the device's fp32 mode and the free memory (bytes). Pure."""
    if mode is None:
        return GoldChoice("cpu:fp32", "no_accelerator")
    switches = ", ".join(f"{k}={v}" for k, v in mode.switches.items())
    if not mode.true_fp32:
        return GoldChoice("cpu:fp32", "not_true_fp32", {"device": mode.device, "switches": switches})
    need = fp32_bytes * HEADROOM
    args = {"device": mode.device, "switches": switches, "need_gib": need / 2**30, "free_gib": (device_free or 0) / 2**30}
    if device_free is not None and need <= device_free:
        return GoldChoice(f"{mode.device}:fp32", "fits_device", args)
    if need <= (device_free or 0) + host_free:
        return GoldChoice("auto:fp32", "split", args)
    return GoldChoice("cpu:fp32", "host", args)


WHY_ZH = {
    "no_accelerator": "本机没有加速卡：金标准在主机 CPU 上运行",
    "not_true_fp32": "{device} 的 fp32 矩阵乘在此不是真正的 fp32（{switches}）：金标准在主机 CPU 上运行",
    "fits_device": "{device} 的 fp32 矩阵乘为真正的 fp32（{switches}），fp32 权重（含余量 {need_gib:.1f} GiB）可放入其 "
                   "{free_gib:.1f} GiB 空闲显存：金标准在 {device} 上运行",
    "split": "fp32 权重（含余量 {need_gib:.1f} GiB）放不进 {device} 的 {free_gib:.1f} GiB 空闲显存：金标准分布在 {device} 与主机上",
    "host": "fp32 权重（含余量 {need_gib:.1f} GiB）既放不进 {device} 也放不进主机：金标准在主机 CPU 上逐层运行",
}


def why_text(choice: GoldChoice, lang: str = "en") -> str:
    return (WHY_ZH if lang == "zh" else WHY)[choice.why].format(**choice.args)


def accelerator_fp32_mode(platform: str) -> Fp32Mode | None:
    """The fp32 mode of this machine's accelerator, its platform's own switches set and read back (None on a CPU
    host, without a usable device, or for a platform that never hosts the gold)."""
    from llm_adapt.platforms import get_platform

    read = get_platform(platform).fp32_mode
    return read() if read is not None else None


def device_free_bytes(platform: str) -> int | None:
    import torch

    module = getattr(torch, platform, None)
    if module is None or not hasattr(module, "mem_get_info"):
        return None
    free, _total = module.mem_get_info()
    return int(free)


def placed_gold(source, platform: str) -> GoldChoice:
    """`--reference auto` for `source` on this machine: its fp32 size from the config's parameter count,
    the accelerator's fp32 mode and free memory, the host's available memory."""
    import psutil

    from llm_adapt.inspect.memory import parameter_breakdown
    from llm_adapt.models.spec import load_spec

    fp32_bytes = 4 * parameter_breakdown(load_spec(source.path)).total
    mode = accelerator_fp32_mode(platform)
    device_free = device_free_bytes(platform) if mode is not None else None
    return choose_gold(mode, fp32_bytes, device_free, psutil.virtual_memory().available)
