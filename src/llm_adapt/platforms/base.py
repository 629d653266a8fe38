"""What llm-adapt knows about one target platform: one `Platform` per module of this package."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic import ConfigDict, with_config
from typing_extensions import TypedDict  # pydantic validates typing's TypedDict from Python 3.12 only

# A device plan leaves this share of the KV blocks unused, so that the plan's own command starts
# (vLLM's profiling run takes some of the pool on a GPU or an NPU).
DEVICE_KV_MARGIN = 0.10


@with_config(ConfigDict(extra="allow"))
class DeviceRecord(TypedDict, total=False):
    """One accelerator as environment.json lists it, in its own tool's words (describe_devices)."""
    kind: str  # the platform: cuda, npu
    name: str
    memory: str
    driver: str | None
    npu_id: int  # npu: the card, its series, the memory's kind and the tool's version
    series: str | None
    memory_kind: str | None
    npu_smi: str | None


@dataclass(frozen=True)
class Fp32Mode:
    """What one accelerator's fp32 matmul does, as read back after switching the fast modes off (TF32, HF32)."""

    device: str  # cuda | npu | ...
    true_fp32: bool
    switches: dict[str, Any] = field(default_factory=dict)  # each switch's name -> the value read back


@dataclass(frozen=True)
class CaveatRule:
    """One caveat of a model on a platform: a condition on the model's facts (inspect/inventory.ModelFacts), its
    words, what to check in the accuracy section and its source. A platform lists its own (`Platform.caveats`);
    inspect/caveats.py holds the rules of every platform."""

    id: str
    operator: str  # the inventory row it belongs to
    applies: Callable[[Any], bool]
    text: Callable[[Any], str]
    check: str  # what to look at in the accuracy section
    source: str
    blocks_start: bool = False  # the engine cannot serve the model at all: refused before one is started


@dataclass(frozen=True)
class Platform:
    """One target platform: its engine, how its memory is planned and how its devices are seen.
    Adding one is one module in this package with one of these, registered in __init__.py."""

    name: str  # cpu | cuda | npu | ...
    display: str
    engine: str  # what serves it
    torch_module: str | None  # torch.<module> that sees its devices (None: the host)
    block_size: int  # vLLM's default KV block size on this platform
    graph_mode: str  # what vLLM calls its graph/compiled mode here
    visible_devices_env: str | None
    assumed_device_memory_gib: float | None  # used when planning for a device not present
    runtime_overhead_gib: float  # context, graph pools, allocator slack beside weights+activations
    startup_prior_s: dict[str, float]  # engine start-up, eager / graph, before one is measured
    # Weights and KV cache in host RAM: a whole-GiB KV space the engine allocates exactly, no share
    # of device memory to give (--gpu-memory-utilization), one node.
    host_memory: bool = False
    multinode: bool = True  # the plan writes multi-node commands for it
    multinode_forms: tuple[str, ...] = ("data_parallel", "ray")  # the forms it plans (multinode.py)
    layer_dump: bool = False  # msprobe's dump config is planned for it
    default_max_num_seqs: int = 256
    default_max_num_batched_tokens: int = 8192
    kv_margin: float = DEVICE_KV_MARGIN
    env: dict[str, str] = field(default_factory=dict)
    env_rows: tuple = ()  # platforms/env.EnvRow: the variables a plan for it exports, each with its rule and source
    # the vendor's device tool, on PATH where its devices are: environment.json's device list
    # (describe_devices) and the memory a benchmark sees in use (memory_reader: set up once, then read)
    smi: str | None = None
    describe_devices: Callable[[], list[DeviceRecord]] | None = field(default=None, compare=False, repr=False)
    memory_reader: Callable[[], Awaitable[Callable[[], Awaitable[int | None]]]] | None = field(
        default=None, compare=False, repr=False)
    graph_name: str = "graph mode"  # its graph mode in two words, for a feature table's row
    graph_mode_zh: str | None = None  # graph_mode in the Chinese report
    # (caveat id, text): what this host CPU's instruction set costs its engine, from /proc/cpuinfo flags
    isa_note: Callable[[set[str]], tuple[str, str] | None] | None = field(default=None, compare=False, repr=False)
    # tune: graph-mode variants only this platform has: (name, knob, extra engine arguments)
    graph_variants: tuple[tuple[str, str, tuple[str, ...]], ...] = ()
    # whether this machine has one of its devices (imports torch lazily); None: never detected
    detect: Callable[[], bool] | None = field(default=None, compare=False, repr=False)
    # what this host lacks to start this platform's engine, one phrase each ([] when nothing); None: the host
    # itself (cpu), always there
    missing_here: Callable[[], list[str]] | None = field(default=None, compare=False, repr=False)
    # the torch extension its devices need, and what to install when it is missing
    torch_extension: tuple[str, str] | None = None
    # a checkpoint format only this platform serves: (its --quantization name, the engine that serves it)
    own_quant: tuple[str, str] | None = None
    # why this platform's engine cannot serve a pre-quantized checkpoint (models/quant.QuantInfo), or None
    quant_warning: Callable[[object], str | None] | None = field(default=None, compare=False, repr=False)
    # (memory bandwidth, matmul rate) a deployment's decode is held against: measured on the host, or a
    # datasheet's for a known device, each labelled with its source; None where no figure can be cited
    hardware_limits: Callable[[], tuple[dict, dict] | None] | None = field(default=None, compare=False, repr=False)
    # the torch device names an in-process runner on it takes (`--target DEVICE:DTYPE`)
    torch_devices: tuple[str, ...] = ()
    # its fp32 matmul set to true fp32 and read back (the gold's placement, accuracy/gold_placement.py); None where
    # this machine has no usable device of it. A platform without the hook never hosts the gold.
    fp32_mode: Callable[[], Fp32Mode | None] | None = field(default=None, compare=False, repr=False)
    # the caveats of a model served on it (CaveatRule), beside inspect/caveats.py's rules of every platform
    caveats: tuple[CaveatRule, ...] = field(default=(), compare=False, repr=False)
    # what environment.json records of this host for it beyond its devices (npu: the CANN version), {} for none
    host_facts: Callable[[], dict[str, Any]] | None = field(default=None, compare=False, repr=False)
    # the KV block size its engine uses for a model (models/spec.ModelSpec) where that is not block_size
    model_block_size: Callable[[Any], int | None] | None = field(default=None, compare=False, repr=False)

    def kv_block_size(self, spec) -> int:
        """The KV block size this platform's engine will use for `spec`'s model."""
        return (self.model_block_size(spec) if self.model_block_size else None) or self.block_size


def tool_output_now(*argv: str, timeout: float = 20) -> str:
    """A device tool's standard output, or "" where it is missing, fails to start or hangs (blocking)."""
    import subprocess

    try:
        return subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout, check=False).stdout
    except (OSError, subprocess.TimeoutExpired):
        return ""


async def tool_output(*argv: str, timeout: float = 5) -> str:
    """A device tool's standard output, or "" where it is missing, fails to start or hangs."""
    try:
        proc = await asyncio.create_subprocess_exec(*argv, stdout=asyncio.subprocess.PIPE,
                                                    stderr=asyncio.subprocess.DEVNULL)
    except OSError:
        return ""
    try:
        out, _ = await asyncio.wait_for(proc.communicate(), timeout=timeout)
    except asyncio.TimeoutError:
        proc.kill()
        await proc.wait()
        return ""
    return out.decode(errors="replace")
