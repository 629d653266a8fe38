"""Per-task judgement from per-item correctness: pure, on plain dicts."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import ConfigDict, with_config
from typing_extensions import NotRequired, TypedDict  # pydantic validates typing's TypedDict from Python 3.12 only

from llm_adapt.evaluation.baseline import Baseline
from llm_adapt.evaluation.power import DETECT_POINTS, Sizing, sizing
from llm_adapt.evaluation.rules import AISBENCH_THRESHOLD, disagree, rulings
from llm_adapt.evaluation.stats import (
    DEFAULT_RTOL,
    judge,
    judge_baseline,
    paired,
)
from llm_adapt.messages import Said, reason
from llm_adapt.status import OUT_OF_LINE, Status, worst

if TYPE_CHECKING:
    from llm_adapt.accuracy.result import Verdict


@with_config(ConfigDict(extra="allow"))
class BaselineRow(TypedDict):
    """A published value against the served score (baseline_rows); served None where it was not measured."""

    task: str
    metric: str
    published: float
    served: float | None
    rtol: float
    status: Status
    reason: Said
    source: NotRequired[str | None]


@with_config(ConfigDict(extra="allow"))
class RulingRecord(TypedDict):
    """One rule's ruling on a row (rules.Ruling.as_dict)."""

    status: Status
    reason: Said


@with_config(ConfigDict(extra="allow"))
class PairedRow(TypedDict, total=False):
    """One task metric, served against gold on the same items (paired_rows): the paired test's figures
    (stats.Paired), its status and reason, upstream's rules beside it, and what the items could see."""

    task: str
    metric: str
    n: int
    served: float
    gold: float
    served_only: int
    gold_only: int
    diff: float
    ci_low: float
    ci_high: float
    p_value: float
    rtol: float
    status: Status
    reason: Said
    rules: dict[str, RulingRecord]
    rules_disagree: bool
    sizing: dict[str, float | int | bool | None]  # power.Sizing's fields
    seen: Said  # what the items could see, in words (sizing_line)


def paired_rows(task: str, served: dict[str, dict[int, bool]], gold: dict[str, dict[int, bool]],
                rtol: float = DEFAULT_RTOL, detect: float = DETECT_POINTS, threshold: float = AISBENCH_THRESHOLD,
                available: int | None = None) -> list[PairedRow]:
    """One row per 0/1 metric that both sides logged, over the doc ids both answered: the paired test (which
    decides), upstream's two rules beside it, and what these items could see (a drop of `detect` points)."""
    rows: list[PairedRow] = []
    for metric in sorted(set(served) & set(gold)):
        ids = sorted(set(served[metric]) & set(gold[metric]))
        if not ids:
            continue
        p = paired([served[metric][i] for i in ids], [gold[metric][i] for i in ids])
        status, reason = judge(p, rtol)
        found = rulings(p, rtol, threshold)
        rows.append({"task": task, "metric": metric, **p.as_dict(), "rtol": rtol, "status": status, "reason": reason,
                     "rules": {name: r.as_dict() for name, r in found.items()}, "rules_disagree": disagree(found),
                     "sizing": sizing(p.n, p.served_only + p.gold_only, detect, available).as_dict()})
        rows[-1]["seen"] = sizing_line(rows[-1])
    return rows


def sizing_line(row: PairedRow):
    """What a row's items could see, in one message: a drop too small to be seen, or enough items."""
    s = Sizing(**row["sizing"])
    if s.paired_unseen is None:
        return reason("tv_no_items_seen", task=row["task"], metric=row["metric"])
    args = dict(task=row["task"], metric=row["metric"], n=s.items, drop=f"{s.paired_unseen:.1f}",
                needed=s.paired_needed, detect=f"{s.detect:g}", unpaired=s.unpaired_needed)
    if s.enough:
        return reason("tv_enough", **args)
    if s.available and s.available > s.items:  # more items are there to run (--limit)
        return reason("tv_unseen_more", **args, available=s.available)
    return reason("tv_unseen", **args)


def baseline_rows(task: str, served_scores: dict[str, float], baseline: Baseline | None) -> list[BaselineRow]:
    """Published values for this task, judged with the baseline's rtol; a metric not measured is said so."""
    if baseline is None:
        return []
    rows = []
    for metric, value in baseline.values.get(task, {}).items():
        if metric not in served_scores:
            rows.append({"task": task, "metric": metric, "published": value, "served": None, "rtol": baseline.rtol,
                         "status": Status.SKIP, "reason": reason("tv_not_measured", metric=metric, measured=sorted(served_scores))})
            continue
        status, why = judge_baseline(served_scores[metric], value, baseline.rtol)
        rows.append({"task": task, "metric": metric, "published": value, "served": served_scores[metric],
                     "rtol": baseline.rtol, "status": status, "reason": why, "source": baseline.source})
    return rows


def verdict(paired_rows_: list[PairedRow], baseline_rows_: list[BaselineRow], skipped: list[str]) -> Verdict:
    rows = paired_rows_ + baseline_rows_
    status = worst([r["status"] for r in rows]) if rows else Status.SKIP
    reasons = [reason("tv_row", task=r["task"], metric=r["metric"], why=r["reason"])
               for r in rows if r["status"] in OUT_OF_LINE]
    return {"status": status, "reasons": reasons, "skipped": skipped}
