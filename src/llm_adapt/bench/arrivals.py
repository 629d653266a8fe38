"""When each request is sent: Poisson or gamma arrivals (vLLM's burstiness), or all at once. Pure."""

from __future__ import annotations

import math

import numpy as np


def schedule(n: int, rate: float, burstiness: float = 1.0, seed: int = 0) -> list[float]:
    """Send offsets in seconds, as vLLM 0.32 `vllm/benchmarks/serve.py` `get_request` computes them
    (without ramp-up): n gamma intervals with shape=burstiness and theta = 1/(rate*burstiness)
    (burstiness 1 is a Poisson process; lower is burstier), summed, then rescaled so the last send is
    at exactly n/rate. The first request waits its own interval too. rate=inf: all at 0;
    burstiness=inf: evenly spaced at 1/rate."""
    if n <= 0:
        return []
    if math.isinf(rate):
        return [0.0] * n
    if rate <= 0 or burstiness <= 0:
        raise ValueError("rate and burstiness must be positive")
    if math.isinf(burstiness):
        gaps = np.full(n, 1.0 / rate)
    else:
        gaps = np.random.default_rng(seed).gamma(shape=burstiness, scale=1.0 / (rate * burstiness), size=n)
    times = np.cumsum(gaps)
    if times[-1] != 0:
        times *= (n / rate) / times[-1]  # vLLM: close the 1-2% gap so throughput is stable across seeds
    return times.tolist()
