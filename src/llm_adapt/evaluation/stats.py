"""Pure statistics for task accuracy: the served model against the gold on the same items, paired.

Sources of the rules:
- the paired difference and its interval: the Wald interval for a difference of paired proportions
  (Agresti, Categorical Data Analysis, 10.1); the items are the same, so only discordant items move it;
- McNemar's exact test: under "no difference" each discordant item is served-only-right or
  gold-only-right with probability 1/2, so the count is Binomial(b + c, 1/2), two-sided;
- rtol against a published baseline: vLLM-Ascend's model CI (tests/e2e/models, rtol 0.05) and vLLM's
  lm-eval CI (rtol 0.08) accept |measured - baseline| <= rtol * |baseline| (numpy.isclose).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass

from llm_adapt.messages import reason
from llm_adapt.status import Status

ALPHA = 0.05  # significance level of the paired test
Z_95 = 1.959963984540054  # two-sided 95 % normal quantile
DEFAULT_RTOL = 0.05  # vLLM-Ascend's model CI


@dataclass(frozen=True)
class Paired:
    """One task metric, served vs gold on the same n items."""

    n: int
    served: float  # served accuracy
    gold: float  # gold accuracy
    served_only: int  # b: served right, gold wrong
    gold_only: int  # c: gold right, served wrong
    diff: float  # served - gold
    ci_low: float
    ci_high: float
    p_value: float  # exact McNemar, two-sided

    def as_dict(self) -> dict:
        return asdict(self)


def discordant(served: Sequence[bool], gold: Sequence[bool]) -> tuple[int, int]:
    """(b, c): items only the served model got right, items only the gold got right."""
    if len(served) != len(gold):
        raise ValueError(f"paired lists differ in length: {len(served)} vs {len(gold)}")
    b = sum(1 for s, g in zip(served, gold) if s and not g)
    c = sum(1 for s, g in zip(served, gold) if g and not s)
    return b, c


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value: 2 * P(X <= min(b, c)), X ~ Binomial(b + c, 1/2), capped at 1."""
    n = b + c
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, k) for k in range(min(b, c) + 1)) / 2**n
    return min(1.0, 2 * tail)


def paired_diff_ci(b: int, c: int, n: int, z: float = Z_95) -> tuple[float, float, float]:
    """(diff, low, high) of served - gold accuracy from the discordant counts of n paired items."""
    if n == 0:
        return 0.0, 0.0, 0.0
    diff = (b - c) / n
    var = max(0.0, (b + c) / n - diff**2) / n
    half = z * math.sqrt(var)
    return diff, diff - half, diff + half


def paired(served: Sequence[bool], gold: Sequence[bool]) -> Paired:
    b, c = discordant(served, gold)
    n = len(served)
    diff, low, high = paired_diff_ci(b, c, n)
    return Paired(n=n, served=sum(map(bool, served)) / n if n else 0.0, gold=sum(map(bool, gold)) / n if n else 0.0,
                  served_only=b, gold_only=c, diff=diff, ci_low=low, ci_high=high, p_value=mcnemar_exact(b, c))


def within_rtol(measured: float, baseline: float, rtol: float) -> bool:
    """vLLM-Ascend's check: numpy.isclose(baseline, measured, rtol) (its atol 1e-8 included)."""
    return abs(measured - baseline) <= 1e-8 + rtol * abs(baseline)


def relative_drop(served: float, gold: float) -> float:
    """(gold - served) / gold; 0 when the gold scores 0 (nothing to drop from)."""
    return (gold - served) / gold if gold > 0 else 0.0


def judge(p: Paired, rtol: float = DEFAULT_RTOL, alpha: float = ALPHA) -> tuple[str, str]:
    """(status, reason) of one metric: a significant drop FAILs; a drop beyond rtol that is not
    significant WARNs (too few items to tell); anything else PASSes."""
    drop = relative_drop(p.served, p.gold)
    facts = reason("tv_facts", served=f"{p.served:.3f}", gold=f"{p.gold:.3f}", n=p.n, diff=f"{p.diff:+.3f}",
                   low=f"{p.ci_low:+.3f}", high=f"{p.ci_high:+.3f}", p=f"{p.p_value:.3g}", served_only=p.served_only,
                   gold_only=p.gold_only)
    if p.served < p.gold and p.p_value < alpha:
        return Status.FAIL, reason("tv_significant_drop", facts=facts)
    if drop > rtol:
        return Status.WARN, reason("tv_drop_beyond_rtol", drop=f"{drop:.1%}", rtol=f"{rtol:g}", alpha=f"{alpha:g}", facts=facts)
    return Status.PASS, facts


def judge_baseline(measured: float, baseline: float, rtol: float) -> tuple[str, str]:
    """A published baseline with its rtol, as its CI judges it: outside is WARN here (a baseline measured
    on other hardware, other software), never a FAIL on its own."""
    text = reason("tv_published", served=f"{measured:.3f}", published=f"{baseline:.3f}", rtol=f"{rtol:g}")
    if within_rtol(measured, baseline, rtol):
        return Status.PASS, text
    return Status.WARN, reason("tv_outside_published", text=text)


