"""How far a deployment is from what the hardware allows: the host's memory bandwidth (a STREAM-like
copy in torch) and single-stream decode as a share of the bandwidth limit. Decoding one token reads
every weight once plus the KV cache of the context so far, so bytes per token / bandwidth is the
fastest a single stream can go; measured TPOT against that floor says how close the engine gets.

A batch of B streams reads the weights once per step but does B times the arithmetic, so the best
sweep level is held against whichever limit binds: bytes / bandwidth or FLOPs / the matmul rate
(measured on CPU; on a GPU, the vendor's published figures, labelled as published)."""

from __future__ import annotations

import statistics
import time
from typing import Any, ClassVar

from llm_adapt.results import StageResult

GB = 1e9


def copy_bandwidth(size_mib: int = 256, repeats: int = 7) -> dict[str, Any]:
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


def decode_roofline(weight_bytes: int, kv_bytes_per_token: int, context_tokens: float, tpot_ms: float,
                    bandwidth_gb_s: float) -> dict[str, float]:
    """Single-stream decode against the memory-bandwidth limit. Pure.

    bytes per token = weights + KV of `context_tokens` (the mean context while decoding);
    floor = bytes / bandwidth; share = floor / measured TPOT (1.0: at the limit)."""
    per_token = weight_bytes + kv_bytes_per_token * context_tokens
    floor_ms = per_token / (bandwidth_gb_s * GB) * 1000
    share, unreliable = bounded_share(floor_ms, tpot_ms)  # TPOT can be no shorter than its floor
    return {"bytes_per_token": per_token, "floor_ms": floor_ms, "tpot_ms": tpot_ms,
            "achieved_gb_per_s": per_token / (tpot_ms / 1000) / GB, "share_of_bandwidth_limit": share,
            "unreliable": unreliable}


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


def matmul_limit(dtypes: tuple[str, ...] = ("bf16", "fp32"), size: int = 1024, repeats: int = 5,
                 native_bf16: bool | None = None) -> dict[str, Any]:
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


def bounded_share(value: float, limit: float) -> tuple[float | None, str | None]:
    """A measured rate as a share of its limit, or (None, why) where it exceeds the limit: a rate above
    a physical limit means the limit was measured wrong (a busy host, a path the engine does not
    take), not that the engine beat the hardware. Pure."""
    if not (limit and limit == limit and value == value):
        return None, "no limit measured"
    share = value / limit
    if share > 1.0:
        return None, (f"the measured figure is {share:.0%} of the limit, which cannot be: the limit is unreliable "
                      "here (measured on a busy host, or on another kernel path than the engine's)")
    return share, None


def matmul_rate(dtype: str = "bf16", size: int = 1024, repeats: int = 5) -> dict[str, Any]:
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


def batch_roofline(weight_bytes: int, kv_bytes_per_token: int, context_tokens: float, params: int, concurrency: int,
                   output_tok_s: float, bandwidth_gb_s: float, tflops: float) -> dict[str, Any]:
    """A sweep level's output throughput against the limit that binds at its batch size. Pure.

    One decode step of B streams reads the weights once and B contexts of KV, and does 2 x params FLOPs
    per stream (attention's own FLOPs left out: small next to the weights' at these lengths). The step
    cannot be faster than the larger of bytes / bandwidth and FLOPs / rate."""
    step_bytes = weight_bytes + kv_bytes_per_token * context_tokens * concurrency
    memory_s = step_bytes / (bandwidth_gb_s * GB)
    compute_s = 2 * params * concurrency / (tflops * 1e12)
    limit_tok_s = concurrency / max(memory_s, compute_s)
    share, unreliable = bounded_share(output_tok_s, limit_tok_s)
    return {"concurrency": concurrency, "output_tok_s": output_tok_s, "limit_tok_s": limit_tok_s,
            "bound": "compute" if compute_s > memory_s else "memory", "memory_limit_tok_s": concurrency / memory_s,
            "compute_limit_tok_s": concurrency / compute_s, "share_of_limit": share, "unreliable": unreliable}


def best_level(runs: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The sweep level with the highest output throughput (its concurrency and tokens/s); a sweep
    level's load is its concurrency."""
    levels = [(r["metrics"].get("output_throughput"), r.get("load")) for r in runs]
    levels = [(t, c) for t, c in levels if t and t == t and isinstance(c, int) and c > 0]
    if not levels:
        return None
    tok_s, concurrency = max(levels)
    return {"output_tok_s": tok_s, "concurrency": int(concurrency)}


class HardwareResult(StageResult):
    """The run's distance to the hardware limit: measured bandwidth and the decode roofline."""

    KIND: ClassVar[str] = "hardware"

    platform: str
    bandwidth: dict[str, Any]
    decode: dict[str, Any]  # floor_ms, tpot_ms, share_of_bandwidth_limit (None with `unreliable` when above 100%)
    workload: dict[str, Any]
    compute: dict[str, Any] | None = None  # the matmul rate used (measured, or published on a GPU)
    batch: dict[str, Any] | None = None  # the best sweep level against the limit that binds
    host_load: dict[str, Any] | None = None  # other processes' CPU use while the limits were measured
