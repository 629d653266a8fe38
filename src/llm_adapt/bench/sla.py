"""The SLA capacity search: the highest concurrency whose every run meets the latency SLOs.

The idea is evalscope's SLA auto-tune (docs/en/user_guides/stress_test/sla_auto_tune.md in
modelscope/evalscope). It doubles the load from 1 until a point fails, then bisects between the
last point that met and the first that did not. Each point is measured `repeats` times (3 by
default).

A point meets the SLOs only when, in every one of its runs:
- every request succeeded (a success rate below 100% is a violation);
- the chosen percentile of each SLO metric is within its limit. With `any_of`, one metric within
  its limit is enough.

The result is the capacity with its uncertainty: the bracket between the highest point that met
and the lowest point above it that did not. `search_next`, `point_meets` and `capacity` are pure.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import ConfigDict, with_config
from typing_extensions import TypedDict  # pydantic validates typing's TypedDict from Python 3.12 only

if TYPE_CHECKING:
    from llm_adapt.bench.stats import Metrics


@with_config(ConfigDict(extra="allow"))
class SloFigure(TypedDict):
    value: float | None  # the run's percentile of it (None: not measured)
    limit: int | float
    ok: bool


@with_config(ConfigDict(extra="allow"))
class RunSla(TypedDict):
    """One run of a point against the SLOs."""
    run: int
    completed: int
    failed: int
    slo: dict[str, SloFigure]
    ok: bool


@with_config(ConfigDict(extra="allow"))
class PointSla(TypedDict):
    """Whether one point met the SLOs (point_meets), with each run's figures."""
    met: bool
    runs: list[RunSla]


@with_config(ConfigDict(extra="allow"))
class SlaCapacity(TypedDict, total=False):
    """The search's answer (capacity), with the SLOs it held the points to (bench/modes.py adds those)."""
    capacity: int
    first_failing: int | None
    bracket: list[int | None]
    non_monotone: list[int]
    note: str
    slo_ms: dict[str, int | float]
    percentile: int
    any_of: bool
    repeats: int
    probed: list[int]

SLO_KEYS = ("ttft", "tpot", "itl", "e2el")  # the --slo keys, in milliseconds
DEFAULT_PERCENTILE = 99
DEFAULT_MAX_LEVEL = 64


def search_next(history: dict[int, bool], max_level: int = DEFAULT_MAX_LEVEL, start: int = 1) -> int | None:
    """The next concurrency to measure, given {level: met}; None when the search is done. Pure.

    Up from `start` by doubling (capped at max_level) while every point meets, then bisection
    between the highest point that met and the lowest point above it that did not."""
    if not history:
        return start
    met = [c for c, ok in history.items() if ok]
    low = max(met, default=0)
    above = [c for c, ok in history.items() if not ok and c > low]
    if not met:
        return None  # the first point already fails: capacity is below it
    if not above:
        if low >= max_level:
            return None
        nxt = min(low * 2, max_level)
        return nxt if nxt not in history else None
    high = min(above)
    if high - low <= 1:
        return None
    return (low + high) // 2


def point_meets(runs: list[Metrics], slo: dict[str, float], any_of: bool = False,
                percentile: int = DEFAULT_PERCENTILE) -> PointSla:
    """Whether one point (its runs' metrics) meets the SLOs, with the figures that decided it. Pure."""
    checks, met = [], True
    for i, metrics in enumerate(runs):
        failed = int(metrics.get("failed") or 0)  # every request that did not complete (errors counted by kind beside)
        completed = int(metrics.get("completed") or 0)
        per = {}
        for key, limit in slo.items():
            value = metrics.get(f"p{percentile}_{key}_ms")
            per[key] = {"value": value, "limit": limit, "ok": value is not None and value <= limit}
        slos_ok = any(p["ok"] for p in per.values()) if any_of else all(p["ok"] for p in per.values())
        ok = failed == 0 and completed > 0 and slos_ok
        met &= ok
        checks.append({"run": i, "completed": completed, "failed": failed, "slo": per, "ok": ok})
    return {"met": met and bool(runs), "runs": checks}


def capacity(history: dict[int, bool], max_level: int = DEFAULT_MAX_LEVEL) -> SlaCapacity:
    """The highest point that met, the lowest failing point above it, and what that bracket means. Pure."""
    met = [c for c, ok in history.items() if ok]
    low = max(met, default=0)
    above = [c for c, ok in history.items() if not ok and c > low]
    high = min(above, default=None)
    out: SlaCapacity = {"capacity": low, "first_failing": high, "bracket": [low, high],
           "non_monotone": sorted(c for c, ok in history.items() if not ok and c < low)}
    if not met:
        out["note"] = f"no point met the SLOs; the lowest measured ({min(history)}) did not"
    elif high is None:
        out["note"] = f"every point up to the search's cap ({max_level}) met the SLOs: capacity is at least {low}"
    else:
        out["note"] = f"capacity between {low} (met) and {high} (did not)"
    return out

