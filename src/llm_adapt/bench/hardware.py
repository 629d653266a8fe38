"""How far a deployment is from what the hardware allows: the host's memory bandwidth (a STREAM-like
copy in torch) and single-stream decode as a share of the bandwidth limit. Decoding one token reads
every weight once plus the KV cache of the context so far, so bytes per token / bandwidth is the
fastest a single stream can go; measured TPOT against that floor says how close the engine gets.

A batch of B streams reads the weights once per step but does B times the arithmetic, so the best
sweep level is held against whichever limit binds: bytes / bandwidth or FLOPs / the matmul rate
(measured on CPU; on a GPU, the vendor's published figures, labelled as published)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar

from pydantic import BaseModel

from llm_adapt import rundir
from llm_adapt.bench.hostload import HostLoad
from llm_adapt.platforms.host_perf import GB, Bandwidth, MatmulRate
from llm_adapt.results import StageResult


class DecodeRoofline(BaseModel):
    """Single-stream decode against the memory-bandwidth limit (decode_roofline)."""
    bytes_per_token: float  # the weights and the KV cache of the mean context, read once per token
    floor_ms: float  # bytes per token / bandwidth: the fastest a token can come
    tpot_ms: float
    achieved_gb_per_s: float | None  # None where TPOT was not measured
    share_of_bandwidth_limit: float | None  # floor / TPOT; None where above 100% (see unreliable)
    unreliable: str | None


class BatchRoofline(BaseModel):
    """The best sweep level against the limit that binds at its batch size (batch_roofline)."""
    concurrency: int
    output_tok_s: float
    limit_tok_s: float
    bound: str  # memory | compute
    memory_limit_tok_s: float
    compute_limit_tok_s: float
    share_of_limit: float | None  # None where above 100% (see unreliable)
    unreliable: str | None


class RooflineWorkload(BaseModel):
    input_len: int
    output_len: int


@dataclass(frozen=True)
class BestLevel:
    output_tok_s: float
    concurrency: int


def decode_roofline(weight_bytes: int, kv_bytes_per_token: int, context_tokens: float, tpot_ms: float,
                    bandwidth_gb_s: float) -> DecodeRoofline:
    """Single-stream decode against the memory-bandwidth limit. Pure.

    bytes per token = weights + KV of `context_tokens` (the mean context while decoding);
    floor = bytes / bandwidth; share = floor / measured TPOT (1.0: at the limit)."""
    per_token = weight_bytes + kv_bytes_per_token * context_tokens
    floor_ms = per_token / (bandwidth_gb_s * GB) * 1000
    if not (tpot_ms > 0 and math.isfinite(tpot_ms)):  # no time between tokens was measured: nothing to set against
        return DecodeRoofline(bytes_per_token=per_token, floor_ms=floor_ms, tpot_ms=tpot_ms, achieved_gb_per_s=None,
                              share_of_bandwidth_limit=None, unreliable="TPOT not measured")
    # one way round, as rates: the measured token rate (1 / TPOT) against the limit's (1 / floor)
    share, unreliable = bounded_share(1000 / tpot_ms, 1000 / floor_ms)
    return DecodeRoofline(bytes_per_token=per_token, floor_ms=floor_ms, tpot_ms=tpot_ms,
                          achieved_gb_per_s=per_token / (tpot_ms / 1000) / GB, share_of_bandwidth_limit=share,
                          unreliable=unreliable)


def bounded_share(value: float, limit: float) -> tuple[float | None, str | None]:
    """A measured rate (`value`) as a share of its limit's rate, or (None, why) where it exceeds the limit: a
    rate above a physical limit means a measurement is wrong, first the client's timing (tokens that arrived
    together, a latency from too few tokens), else the limit's (a busy host, a path the engine does not take);
    never that the engine beat the hardware. Pure."""
    if not (limit and math.isfinite(limit)):
        return None, "no limit measured"
    if not math.isfinite(value):
        return None, "no rate measured"
    share = value / limit
    if share > 1.0:
        return None, (f"the measured rate is {share:.0%} of the hardware limit, which cannot be: the measurement is "
                      "suspect (the client's timing of streamed tokens: tokens that arrived together, or too few of "
                      "them), or the limit was measured on a busy host or another kernel path than the engine's")
    return share, None


def batch_roofline(weight_bytes: int, kv_bytes_per_token: int, context_tokens: float, params: int, concurrency: int,
                   output_tok_s: float, bandwidth_gb_s: float, tflops: float) -> BatchRoofline:
    """A sweep level's output throughput against the limit that binds at its batch size. Pure.

    One decode step of B streams reads the weights once and B contexts of KV, and does 2 x params FLOPs
    per stream (attention's own FLOPs left out: small next to the weights' at these lengths). The step
    cannot be faster than the larger of bytes / bandwidth and FLOPs / rate."""
    step_bytes = weight_bytes + kv_bytes_per_token * context_tokens * concurrency
    memory_s = step_bytes / (bandwidth_gb_s * GB)
    compute_s = 2 * params * concurrency / (tflops * 1e12)
    limit_tok_s = concurrency / max(memory_s, compute_s)
    share, unreliable = bounded_share(output_tok_s, limit_tok_s)
    return BatchRoofline(concurrency=concurrency, output_tok_s=output_tok_s, limit_tok_s=limit_tok_s,
                         bound="compute" if compute_s > memory_s else "memory",
                         memory_limit_tok_s=concurrency / memory_s, compute_limit_tok_s=concurrency / compute_s,
                         share_of_limit=share, unreliable=unreliable)


def best_level(runs: list[dict[str, Any]]) -> BestLevel | None:
    """The sweep level with the highest output throughput (its concurrency and tokens/s); a sweep
    level's load is its concurrency."""
    levels = [(r["metrics"].get("output_throughput"), r.get("load")) for r in runs]
    levels = [(t, c) for t, c in levels if t and t == t and isinstance(c, int) and c > 0]
    if not levels:
        return None
    tok_s, concurrency = max(levels)
    return BestLevel(tok_s, int(concurrency))


class HardwareResult(StageResult):
    """The run's distance to the hardware limit: measured bandwidth and the decode roofline."""

    KIND: ClassVar[str] = "hardware"
    FILE: ClassVar[str | None] = rundir.HARDWARE

    platform: str
    bandwidth: Bandwidth
    decode: DecodeRoofline
    workload: RooflineWorkload
    compute: MatmulRate | None = None  # the matmul rate used (measured, or published on a GPU)
    batch: BatchRoofline | None = None
    host_load: HostLoad | None = None  # other processes' CPU use while the limits were measured
