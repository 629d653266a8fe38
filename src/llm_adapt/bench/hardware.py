"""How far a deployment is from what the hardware allows: the host's memory bandwidth (a STREAM-like
copy in torch) and single-stream decode as a share of the bandwidth limit. Decoding one token reads
every weight once plus the KV cache of the context so far, so bytes per token / bandwidth is the
fastest a single stream can go; measured TPOT against that floor says how close the engine gets."""

from __future__ import annotations

import statistics
import time
from typing import Any, ClassVar

from llm_adapt.results import StageResult

GB = 1e9


def copy_bandwidth(size_mib: int = 256, repeats: int = 7) -> dict[str, Any]:
    """STREAM "copy" in torch: dst.copy_(src) of `size_mib` MiB; bytes read + written per second. The
    buffers are far larger than the caches, so this is memory bandwidth, not cache bandwidth."""
    import torch

    n = size_mib * 1024 * 1024
    src, dst = torch.ones(n, dtype=torch.uint8), torch.empty(n, dtype=torch.uint8)
    dst.copy_(src)  # first touch: page faults are not bandwidth
    rates = []
    for _ in range(repeats):
        start = time.perf_counter()
        dst.copy_(src)
        rates.append(2 * n / (time.perf_counter() - start) / GB)
    return {"gb_per_s": max(rates), "median_gb_per_s": statistics.median(rates), "size_mib": size_mib,
            "repeats": repeats, "threads": torch.get_num_threads(), "source": "measured (torch copy, read + write)"}


def decode_roofline(weight_bytes: int, kv_bytes_per_token: int, context_tokens: float, tpot_ms: float,
                    bandwidth_gb_s: float) -> dict[str, float]:
    """Single-stream decode against the memory-bandwidth limit. Pure.

    bytes per token = weights + KV of `context_tokens` (the mean context while decoding);
    floor = bytes / bandwidth; share = floor / measured TPOT (1.0: at the limit)."""
    per_token = weight_bytes + kv_bytes_per_token * context_tokens
    floor_ms = per_token / (bandwidth_gb_s * GB) * 1000
    return {"bytes_per_token": per_token, "floor_ms": floor_ms, "tpot_ms": tpot_ms,
            "achieved_gb_per_s": per_token / (tpot_ms / 1000) / GB, "share_of_bandwidth_limit": floor_ms / tpot_ms}


class HardwareResult(StageResult):
    """The run's distance to the hardware limit: measured bandwidth and the decode roofline."""

    KIND: ClassVar[str] = "hardware"

    platform: str
    bandwidth: dict[str, Any]
    decode: dict[str, float]
    workload: dict[str, Any]
