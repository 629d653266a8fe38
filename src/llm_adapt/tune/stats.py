"""Telling a real difference from noise between repeated benchmark runs. Pure."""

from __future__ import annotations

import math

import numpy as np


def summary(values: list[float]) -> dict[str, float]:
    arr = np.asarray(values, dtype=float)
    if arr.size == 0:
        return {"mean": math.nan, "std": math.nan, "min": math.nan, "max": math.nan, "n": 0}
    return {"mean": float(arr.mean()), "std": float(arr.std(ddof=1)) if arr.size > 1 else 0.0,
            "min": float(arr.min()), "max": float(arr.max()), "n": int(arr.size)}


def ratio_with_uncertainty(a: dict[str, float], b: dict[str, float]) -> tuple[float, float]:
    """a.mean / b.mean and its standard uncertainty from the two relative spreads."""
    if not b["mean"]:
        return math.nan, math.nan
    ratio = a["mean"] / b["mean"]
    rel = math.sqrt((a["std"] / a["mean"]) ** 2 + (b["std"] / b["mean"]) ** 2) if a["mean"] else math.nan
    return ratio, ratio * rel


def clearly_better(a: dict[str, float], b: dict[str, float], higher_is_better: bool = True) -> bool:
    """True when every run of `a` beats every run of `b` (non-overlapping ranges): not a win inside the noise."""
    if a["n"] == 0 or b["n"] == 0:
        return False
    return a["min"] > b["max"] if higher_is_better else a["max"] < b["min"]
