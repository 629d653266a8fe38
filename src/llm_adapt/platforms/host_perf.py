"""What this host's memory and matmuls can do, measured now: the limits a CPU platform plans and reports
against (bench/hardware.py's rooflines read them). Below platforms/cpu.py so the platform needs nothing
from the rooms above it."""

from __future__ import annotations

import statistics
import time

from pydantic import ConfigDict, with_config
from typing_extensions import TypedDict  # pydantic validates typing's TypedDict from Python 3.12 only

GB = 1e9


@with_config(ConfigDict(extra="allow"))
class Bandwidth(TypedDict, total=False):
    """The memory bandwidth a roofline is drawn against: measured here (copy_bandwidth), or a platform's
    published figure (its gb_per_s and source only)."""
    gb_per_s: int | float
    copy_gb_per_s: float
    read_gb_per_s: float
    median_gb_per_s: float
    size_mib: int
    repeats: int
    threads: int
    source: str


@with_config(ConfigDict(extra="allow"))
class MatmulRate(TypedDict, total=False):
    """A matmul rate (matmul_rate; matmul_limit adds each dtype's and what it left out), or a published one."""
    tflops: int | float
    median_tflops: float
    dtype: str
    size: int
    threads: int
    source: str
    by_dtype: dict[str, float | None]
    left_out: dict[str, str]


def copy_bandwidth(size_mib: int = 256, repeats: int = 7) -> Bandwidth:
    """The host's memory bandwidth: STREAM "copy" in torch (dst.copy_(src) of `size_mib` MiB, bytes
    read + written per second) and a read-only pass (a sum over the same bytes), the higher of the two
    as the limit. Decoding mostly reads, and reading alone runs faster than a copy on many CPUs (a
    3B model once read its weights at 51 GB/s where the copy moved 43). The buffers are far larger
    than the caches, so this is memory bandwidth, not cache bandwidth."""
    import torch

    n = size_mib * 1024 * 1024
    src, dst = torch.ones(n // 4, dtype=torch.float32), torch.empty(n // 4, dtype=torch.float32)
    dst.copy_(src)  # first touch: page faults are not bandwidth
    src.sum()
    copy, read = [], []
    for _ in range(repeats):
        start = time.perf_counter()
        dst.copy_(src)
        copy.append(2 * n / (time.perf_counter() - start) / GB)
        start = time.perf_counter()
        src.sum()
        read.append(n / (time.perf_counter() - start) / GB)
    best = max(max(copy), max(read))
    return {"gb_per_s": best, "copy_gb_per_s": max(copy), "read_gb_per_s": max(read),
            "median_gb_per_s": statistics.median(copy), "size_mib": size_mib, "repeats": repeats,
            "threads": torch.get_num_threads(),
            "source": f"measured (torch, the higher of copy and read-only: {'read' if best == max(read) else 'copy'})"}


def matmul_rate(dtype: str = "bf16", size: int = 1024, repeats: int = 5) -> MatmulRate:
    """Measured matmul throughput of `size`-square matrices in `dtype` (TFLOP/s, best of `repeats`).
    A CPU without native bf16 converts in its kernels, so this is the rate the engine's matmuls get."""
    import torch

    dt = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}.get(dtype, torch.float32)
    a, b = torch.randn(size, size).to(dt), torch.randn(size, size).to(dt)
    a @ b  # warm-up: kernel selection and first-touch
    rates = []
    for _ in range(repeats):
        start = time.perf_counter()
        a @ b
        rates.append(2 * size**3 / (time.perf_counter() - start) / 1e12)
    return {"tflops": max(rates), "median_tflops": statistics.median(rates), "dtype": dtype, "size": size,
            "threads": torch.get_num_threads(), "source": f"measured (torch matmul {size}x{size}, {dtype})"}


def matmul_limit(dtypes: tuple[str, ...] = ("bf16", "fp32"), size: int = 1024, repeats: int = 5,
                 native_bf16: bool | None = None) -> MatmulRate:
    """The fastest matmul this host does in any of `dtypes`: an upper bound on what any kernel of the
    engine gets, whatever path it takes (on a CPU without native bf16, torch's bf16 matmul converts
    and is slower than its fp32 one, while an engine's own kernels may not be). Best of `repeats`.

    `native_bf16` False (detected from the CPU's flags): bf16 is not timed. torch converts each
    element there and ran 6.8x slower than fp32 on such a CPU (about 10 s of a run at 1024x1024), so
    it cannot be the faster one; the result says it was left out and why."""
    left_out = {}
    if native_bf16 is False and "bf16" in dtypes and len(dtypes) > 1:
        dtypes = tuple(d for d in dtypes if d != "bf16")
        left_out["bf16"] = "not timed: this CPU has no native bf16 (torch converts, slower than fp32)"
    rates = {d: matmul_rate(d, size, repeats) for d in dtypes}
    best = max(rates.values(), key=lambda r: r["tflops"])
    return {**best, "source": f"measured (the faster of torch's {' and '.join(dtypes)} matmul, {size}x{size}: "
                              f"{best['dtype']})" if len(dtypes) > 1 else
                              f"measured (torch's {best['dtype']} matmul, {size}x{size})",
            "by_dtype": {d: r["tflops"] for d, r in rates.items()} | {d: None for d in left_out},
            **({"left_out": left_out} if left_out else {})}
