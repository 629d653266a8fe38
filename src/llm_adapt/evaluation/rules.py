"""Three rules for one task metric, side by side, so a reader sees where they disagree: ours (the served
model against the gold, paired by item: evaluation/stats.judge) and the two vLLM-Ascend gates on, with the
gold's score as their reference:

- its e2e test, tests/e2e/models/test_lm_eval_correctness.py: `np.isclose(ground_truth, measured, rtol=0.05)`
  (two-sided; numpy's atol 1e-8 included);
- its nightly AISBench cases, tools/aisbench.py `_accuracy_verify`: `baseline - threshold <= acc <= baseline
  + threshold` in points (0-100), threshold 1 unless the case sets one (its configs use 5 or 10).

Each is a pure function of counts and scores; with no item none of them judges (SKIP, "no items"), so
nothing is decided by 0/0.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from llm_adapt.evaluation.stats import DEFAULT_RTOL, Paired, judge, within_rtol
from llm_adapt.messages import reason
from llm_adapt.status import Status

AISBENCH_THRESHOLD = 1.0  # points; tools/aisbench.py's default `threshold`
RULES = ("paired", "lm_eval", "aisbench")  # the order the report shows them in


@dataclass(frozen=True)
class Ruling:
    status: Status  # SKIP where the rule cannot judge
    reason: Any  # a message

    def as_dict(self) -> dict:
        return asdict(self)


def no_items() -> Ruling:
    return Ruling(Status.SKIP, reason("tv_rule_no_items"))


def paired_rule(p: Paired, rtol: float = DEFAULT_RTOL) -> Ruling:
    """Ours: McNemar's exact test on the discordant items (stats.judge)."""
    if p.n == 0:
        return no_items()
    return Ruling(*judge(p, rtol))


def lm_eval_rule(gold: float, served: float, n: int, rtol: float = DEFAULT_RTOL) -> Ruling:
    """vLLM-Ascend's e2e test with the gold's score as its ground truth: FAIL outside rtol, either side."""
    if n == 0:
        return no_items()
    words = reason("tv_rule_rtol", served=f"{served:.3f}", gold=f"{gold:.3f}", rtol=f"{rtol:g}",
                   allowed=f"{1e-8 + rtol * abs(gold):.3f}")
    return Ruling(Status.PASS if within_rtol(served, gold, rtol) else Status.FAIL, words)


def aisbench_rule(gold: float, served: float, n: int, threshold: float = AISBENCH_THRESHOLD) -> Ruling:
    """vLLM-Ascend's nightly AISBench check with the gold's score (in points) as its baseline."""
    if n == 0:
        return no_items()
    base, acc = gold * 100, served * 100
    words = reason("tv_rule_threshold", served=f"{acc:.2f}", gold=f"{base:.2f}", threshold=f"{threshold:g}")
    return Ruling(Status.PASS if base - threshold <= acc <= base + threshold else Status.FAIL, words)


def rulings(p: Paired, rtol: float = DEFAULT_RTOL, threshold: float = AISBENCH_THRESHOLD) -> dict[str, Ruling]:
    """The three rules on one task metric's paired items, by name (RULES)."""
    return {"paired": paired_rule(p, rtol), "lm_eval": lm_eval_rule(p.gold, p.served, p.n, rtol),
            "aisbench": aisbench_rule(p.gold, p.served, p.n, threshold)}


def disagree(found: dict[str, Ruling]) -> bool:
    """Whether the rules that judged reach different verdicts (SKIPs left out)."""
    return len({r.status for r in found.values() if r.status != Status.SKIP}) > 1
