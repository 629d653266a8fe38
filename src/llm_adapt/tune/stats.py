"""Telling a real difference from noise between repeated benchmark runs. Pure."""

from __future__ import annotations

import math

import numpy as np
from typing_extensions import TypedDict  # pydantic validates typing's TypedDict from Python 3.12 only

from llm_adapt.multiple_tests import holm  # noqa: F401  (the tuner's trials are judged with it)


class Summary(TypedDict):
    """Repeated runs of one metric: mean, sample std, range and count (NaN, read back as None: no run)."""
    mean: float | None
    std: float | None
    min: float | None
    max: float | None
    n: int


def summary(values: list[float]) -> Summary:
    arr = np.asarray(values, dtype=float)
    if arr.size == 0:
        return {"mean": math.nan, "std": math.nan, "min": math.nan, "max": math.nan, "n": 0}
    return {"mean": float(arr.mean()), "std": float(arr.std(ddof=1)) if arr.size > 1 else 0.0,
            "min": float(arr.min()), "max": float(arr.max()), "n": int(arr.size)}


def ratio_with_uncertainty(a: Summary, b: Summary) -> tuple[float, float]:
    """a.mean / b.mean and its standard uncertainty from the two relative spreads."""
    if not b["mean"]:
        return math.nan, math.nan
    ratio = a["mean"] / b["mean"]
    rel = math.sqrt((a["std"] / a["mean"]) ** 2 + (b["std"] / b["mean"]) ** 2) if a["mean"] else math.nan
    return ratio, ratio * rel


# --- Correcting the recommendation for the number of trials -------------------------------------------
# A trial "wins" when a one-sided t-test (pooled noise, see pooled_p_values) says it beats the baseline,
# and the p-values of all k trials pass Holm's step-down procedure at a family-wise error rate of ALPHA: with no real effect, the
# chance that any trial is declared a winner stays at or below ALPHA however many trials run.
ALPHA = 0.05


def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction of the regularized incomplete beta function (Numerical Recipes `betacf`)."""
    tiny, qab, qap, qam = 1e-300, a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 300):
        m2 = 2 * m
        for aa in (m * (b - m) * x / ((qam + m2) * (a + m2)), -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))):
            d = 1.0 + aa * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + aa / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < 1e-14:
            break
    return h


def betainc(a: float, b: float, x: float) -> float:
    """Regularized incomplete beta I_x(a, b)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1.0 - x) / b


def t_sf(t: float, df: float) -> float:
    """P(T > t) for Student's t with df degrees of freedom."""
    tail = 0.5 * betainc(df / 2.0, 0.5, df / (df + t * t))
    return tail if t >= 0 else 1.0 - tail


def pooled_p_values(rivals: list[dict[str, float]], baseline: dict[str, float], higher_is_better: bool = True) -> list[float]:
    """One-sided p-value that each rival beats the baseline, from summaries (mean, std with ddof=1, n).

    Every trial runs the same benchmark on the same host, so the run-to-run noise is taken as one
    relative spread shared by all of them and pooled over every trial's repeats (many more degrees
    of freedom than two runs give one trial alone). Each test is a t-test of ln(rival / baseline)
    with that pooled coefficient of variation. 1.0 for all when no trial has two runs."""
    groups = [baseline, *rivals]
    df = sum(g["n"] - 1 for g in groups if g["n"] >= 1)
    if df <= 0:
        return [1.0] * len(rivals)
    cv2 = sum((g["n"] - 1) * (g["std"] / g["mean"]) ** 2 for g in groups if g["n"] >= 2 and g["mean"]) / df
    sign = 1 if higher_is_better else -1
    out = []
    for r in rivals:
        if r["n"] < 1 or not r["mean"] or not baseline["mean"]:
            out.append(1.0)
            continue
        diff = sign * math.log(r["mean"] / baseline["mean"])
        se = math.sqrt(cv2 * (1 / r["n"] + 1 / baseline["n"]))
        out.append(t_sf(diff / se, df) if se > 0 else (0.0 if diff > 0 else 1.0))
    return out


