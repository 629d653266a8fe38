"""Every prompt judged (the served judge's per-request check): each request's top-k KL against the floor's on
the same prompt, set against how far a clean deployment strays from the floor prompt by prompt, with Holm's
family-wise rule across the prompts. A fault that hits a few requests (a length class, every Nth request, only
in batches) leaves the suite's mean near its allowance; it cannot hide here, and it cannot widen its own
allowance either: the noise comes from the floor alone. Pure.

The clean spread by prompt is the floor's own: the floor rerun on another kernel path (its variant) against the
floor, as ln(variant KL / floor KL) per prompt, its root mean square over the prompts (offset included: a clean
deployment is on another kernel path too). A prompt is out of line when both hold:
- its ln(server KL / floor KL) is above ln(the suite's allowed ratio) by more than chance at that spread allows,
  Holm-corrected over the prompts at ALPHA (one-sided normal);
- its ratio is above twice the allowed ratio (graded's WARN edge): clearly bad, not a kernel's wobble.
"""

from __future__ import annotations

import math

from typing_extensions import NotRequired, TypedDict

from llm_adapt.accuracy.shapes import Shape
from llm_adapt.multiple_tests import holm, upper_tail

ALPHA = 0.01  # family-wise over the prompts: a clean suite of 20 prompts is flagged about once in a hundred runs
EFFECT = 2.0  # times the suite's allowed ratio a prompt must also exceed (msprobe's warn edge, as `graded`)
TINY = 1e-12  # a prompt KL sum at or below this is no scale to divide by (a flat model's is about 1e-9 a prompt)


class PromptKL(TypedDict):
    """One request of the teacher-forced pass: where it sits in the prompt and its KL sums over those positions."""

    id: str
    tokens: int  # the prompt's length in tokens
    first: int  # the first and last positions compared
    last: int
    positions: int  # how many positions were compared (non-finite ones left out)
    server: float  # sum of the server's top-k KL over the positions
    floor: float | None  # the floor's, on the same positions (None: served at the gold's dtype, no floor)
    variant: float | None  # the floor rerun on another kernel path (None: not measured)
    shape: NotRequired[Shape]  # the request's shape (accuracy/shapes.py; absent in an earlier version's file)


class JudgedPrompt(TypedDict):
    id: str
    tokens: int
    first: int
    last: int
    ratio: float | None  # server KL / floor KL on this prompt (None: the floor's is ~0)
    p_value: float  # one-sided, before Holm (NaN: not judged)
    out_of_line: bool


def clean_log_spread(rows: list[PromptKL]) -> float:
    """The root mean square of ln(variant KL / floor KL) over the prompts where both are measured and above TINY:
    how far a clean deployment strays from the floor on one prompt. NaN where no prompt gives one. Pure."""
    logs = [math.log(r["variant"] / r["floor"]) for r in rows
            if r["variant"] is not None and r["floor"] is not None and r["variant"] > TINY and r["floor"] > TINY]
    return math.sqrt(sum(v * v for v in logs) / len(logs)) if logs else math.nan


def prompt_ratio(row: PromptKL) -> float | None:
    """server / floor on one prompt; None where the floor's sum is no scale (at or below TINY). Pure."""
    return row["server"] / row["floor"] if row["floor"] is not None and row["floor"] > TINY else None


def judge_prompts(rows: list[PromptKL], allowed: float, alpha: float = ALPHA,
                  effect: float = EFFECT) -> tuple[list[JudgedPrompt], float]:
    """Each prompt with its ratio, its p-value and whether it is out of line (see the module's rule), and the
    spread used: the clean spread by prompt, at least the suite's own relative allowance (ln `allowed`), so
    that a floor whose variant equals it (spread 0) still gives a scale. Prompts without a ratio are listed,
    never flagged. Pure."""
    sigma = clean_log_spread(rows)
    sigma = max(sigma if math.isfinite(sigma) else 0.0, math.log(allowed) if allowed > 1 else 0.0)
    ratios = [prompt_ratio(r) for r in rows]
    pvalues = [_p_value(ratio, allowed, sigma) for ratio in ratios]
    rejected = holm(pvalues, alpha)
    judged = [JudgedPrompt(id=r["id"], tokens=r["tokens"], first=r["first"], last=r["last"], ratio=ratio,
                           p_value=p, out_of_line=bool(hit and ratio is not None and ratio > effect * allowed))
              for r, ratio, p, hit in zip(rows, ratios, pvalues, rejected)]
    return judged, sigma


def _p_value(ratio: float | None, allowed: float, sigma: float) -> float:
    """P(a clean prompt's ratio is this far above `allowed`), one-sided on the log scale; NaN without a ratio."""
    if ratio is None:
        return math.nan
    if ratio <= 0:
        return 1.0
    excess = math.log(ratio) - math.log(allowed)
    if sigma <= 0:  # no spread to scale by: only an excess decides, and it is certain
        return 0.0 if excess > 0 else 1.0
    return upper_tail(excess / sigma)


def prompts_over(rows: list[PromptKL], fail_at: float) -> list[PromptKL]:
    """Served at the gold's own dtype (no floor): the prompts whose mean top-k KL over their positions is above
    `fail_at` (the same-dtype band's FAIL edge), where the suite's mean may sit below it, diluted by the clean
    prompts. Pure."""
    return [r for r in rows if r.get("positions") and r["server"] / r["positions"] > fail_at]
