"""When each request is sent: Poisson or gamma arrivals (vLLM's burstiness), or all at once. Pure."""

from __future__ import annotations

import math

import numpy as np


def schedule(n: int, rate: float, burstiness: float = 1.0, seed: int = 0) -> list[float]:
    """Send offsets in seconds. rate=inf: all at 0. Gamma intervals with shape=burstiness,
    mean 1/rate (burstiness 1 is a Poisson process; lower is burstier)."""
    if n <= 0:
        return []
    if math.isinf(rate):
        return [0.0] * n
    if rate <= 0 or burstiness <= 0:
        raise ValueError("rate and burstiness must be positive")
    rng = np.random.default_rng(seed)
    gaps = rng.gamma(shape=burstiness, scale=1.0 / (rate * burstiness), size=n)
    gaps[0] = 0.0
    return np.cumsum(gaps).tolist()
