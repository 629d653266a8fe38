"""Family-wise error control over several tests at once (the tuner's trials, the accuracy check's prompts). Pure."""

from __future__ import annotations

import math

ALPHA = 0.05


def holm(pvalues: list[float], alpha: float = ALPHA) -> list[bool]:
    """Holm's step-down: reject the i-th smallest p-value while p <= alpha / (k - i); stop at the first
    that fails. Controls the family-wise error rate at alpha. A NaN p-value is never rejected."""
    order = sorted(range(len(pvalues)), key=lambda i: (math.isnan(pvalues[i]), pvalues[i]))
    reject = [False] * len(pvalues)
    for rank, i in enumerate(order):
        if not pvalues[i] <= alpha / (len(pvalues) - rank):  # NaN compares False: it stops the step-down
            break
        reject[i] = True
    return reject


def upper_tail(z: float) -> float:
    """P(Z >= z) for a standard normal Z; 0 for +inf, 1 for -inf, NaN for NaN."""
    return 0.5 * math.erfc(z / math.sqrt(2))
