"""How many items a task accuracy check needs to see a drop of D points, and the drop it can see with N:
pure functions, scores on a 0-100 scale.

Sources of the formulas:
- unpaired (TensorRT-LLM, tests/integration/defs/accuracy/accuracy_core.py and its README's "Hypothesis
  Testing Methodology"): a one-sided two-sample test of a mean score; with scale = sqrt(2 sigma^2 / n),
  theta = -(Phi^-1(alpha) + Phi^-1(beta)) * scale is the smallest drop seen with power 1 - beta, the
  threshold is ref + Phi^-1(alpha) * scale, and so n = 2 sigma^2 (z_alpha + z_beta)^2 / theta^2.
  sigma = 50 is a 0/1 score at p = 0.5 on the 0-100 scale. Their published figures: MMLU n = 4096,
  theta 2.75, threshold ref - 1.82; GSM8K n = 1319, theta 4.84, threshold ref - 3.20;
- paired (McNemar's test on the same items; Connor, "Sample size for testing differences in proportions
  for the paired-sample design", Biometrics 43:207-211, 1987): with psi the share of discordant items
  and delta the drop as a proportion, n = (z_alpha * sqrt(psi) + z_beta * sqrt(psi - delta^2))^2 / delta^2.
  psi is measured on the items run; under a drop of delta at least delta of the items are discordant,
  so psi is taken as max(measured, delta). The test it sizes is the one evaluation/stats.py runs:
  McNemar two-sided at alpha, so z_alpha = Phi^-1(1 - alpha / 2).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from statistics import NormalDist

DETECT_POINTS = 3.0  # TensorRT-LLM's default minimum detectable effect, in points (0-100)
ALPHA = 0.05  # false alarm rate (type I)
BETA = 0.2  # miss rate (type II): power 0.8
SIGMA = 50.0  # a 0/1 score's standard deviation at p = 0.5, on the 0-100 scale
SCALE = 100.0  # points per unit of accuracy

_Z = NormalDist()


def z(p: float) -> float:
    """The standard normal quantile Phi^-1(p)."""
    return _Z.inv_cdf(p)


def unpaired_theta(n: int, alpha: float = ALPHA, beta: float = BETA, sigma: float = SIGMA) -> float | None:
    """TensorRT-LLM's compute_theta: the smallest drop (points) a one-sided test on n items sees with power
    1 - beta. None for no items: nothing can be seen."""
    if n <= 0:
        return None
    return -(z(alpha) + z(beta)) * math.sqrt(2 * sigma**2 / n)


def unpaired_threshold(n: int, reference: float, alpha: float = ALPHA, sigma: float = SIGMA) -> float | None:
    """TensorRT-LLM's compute_threshold (higher is better): a score below it fails. None for no items."""
    if n <= 0:
        return None
    return reference + z(alpha) * math.sqrt(2 * sigma**2 / n)


def unpaired_items(detect: float, alpha: float = ALPHA, beta: float = BETA, sigma: float = SIGMA) -> int:
    """Items a one-sided unpaired test needs to see a drop of `detect` points: 2 sigma^2 (z_a + z_b)^2 / theta^2."""
    _positive(detect)
    return math.ceil(2 * sigma**2 * (z(alpha) + z(beta)) ** 2 / detect**2)


def paired_items(detect: float, discordance: float, alpha: float = ALPHA, beta: float = BETA) -> int:
    """Items McNemar's two-sided test needs to see a drop of `detect` points where a share `discordance` of
    the items differ between the two sides (Connor 1987)."""
    delta = _positive(detect) / SCALE
    if delta >= 1:
        return 1
    psi = min(1.0, max(discordance, delta))
    za, zb = z(1 - alpha / 2), z(1 - beta)
    return math.ceil((za * math.sqrt(psi) + zb * math.sqrt(psi - delta**2)) ** 2 / delta**2)


def paired_theta(n: int, discordance: float, alpha: float = ALPHA, beta: float = BETA) -> float | None:
    """The smallest drop (points) McNemar's test on n items sees with power 1 - beta at this discordance:
    the inverse of paired_items, found by bisection (paired_items falls as the drop grows). None for no items."""
    if n <= 0:
        return None
    low, high = 1e-6, SCALE  # a drop of all 100 points needs one item
    for _ in range(60):
        mid = (low + high) / 2
        if paired_items(mid, discordance, alpha, beta) <= n:
            high = mid
        else:
            low = mid
    return high


@dataclass(frozen=True)
class Sizing:
    """What one task metric could see: the items it ran, the items each test needs for a drop of `detect`
    points, and the smallest drop each would see with the items it ran (None with no items)."""

    detect: float  # points
    alpha: float
    beta: float
    sigma: float
    items: int  # items run (paired with the gold)
    available: int | None  # items the task holds, where known
    discordance: float | None  # share of items the two sides disagree on (None with no items)
    unpaired_needed: int
    paired_needed: int
    unpaired_unseen: float | None  # a drop smaller than this (points) would go unseen by an unpaired test
    paired_unseen: float | None  # ... by the paired test we run
    enough: bool  # the items run reach what the paired test needs

    def as_dict(self) -> dict:
        return asdict(self)


def sizing(items: int, discordant: int, detect: float = DETECT_POINTS, available: int | None = None,
           alpha: float = ALPHA, beta: float = BETA, sigma: float = SIGMA) -> Sizing:
    """The sizes of one task metric from the items run and how many of them were discordant."""
    psi = discordant / items if items > 0 else None
    paired_needed = paired_items(detect, psi or 0.0, alpha, beta)
    return Sizing(detect=detect, alpha=alpha, beta=beta, sigma=sigma, items=items, available=available,
                  discordance=psi, unpaired_needed=unpaired_items(detect, alpha, beta, sigma),
                  paired_needed=paired_needed, unpaired_unseen=unpaired_theta(items, alpha, beta, sigma),
                  paired_unseen=paired_theta(items, psi or 0.0, alpha, beta), enough=items >= paired_needed)


def _positive(detect: float) -> float:
    if not (isinstance(detect, (int, float)) and math.isfinite(detect) and detect > 0):
        raise ValueError(f"the drop to detect must be a positive number of points, not {detect!r}")
    return float(detect)
