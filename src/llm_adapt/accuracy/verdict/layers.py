"""The judge of layers captured inside a served engine (accuracy/layers_served.py): no logits and no greedy tokens
there, so the per-layer checks of the in-process judge alone, and where a served fault enters from the full
errors (the step up in the error curve). Pure."""

from __future__ import annotations

import math
from typing import Any

from llm_adapt.accuracy.result import LayerRow, LocatedFault, RoundingBasis, Verdict
from llm_adapt.accuracy.verdict.checks import K_SPREAD, allowance, verdict_of
from llm_adapt.accuracy.verdict.in_process import _cosine, _layer_ratio, _localized, _nonfinite
from llm_adapt.accuracy.verdict.roundoff import find_first_local_excess


def judge_layers(target: dict[str, Any], floor: dict[str, Any] | None, exact_expected: bool = False) -> Verdict:
    """The per-layer checks of `judge` alone: layers captured inside a served engine (no logits, no
    greedy tokens there). target: {"layers", "first_local_excess", "first_nonfinite"}; floor: {"label"}."""
    checks = [_nonfinite(target), _cosine(target), _localized(target, exact_expected)]
    if floor is not None:
        checks.append(_layer_ratio(target, floor))
    return verdict_of(checks, noise_floor=floor["label"] if floor is not None else None)


def first_step_up(rows: list[LayerRow]) -> LocatedFault | None:
    """Where a served fault enters, from full errors alone: of the layers whose ratio to the floor
    exceeds its allowance and steps up from the layer before by more than that step's chance spread
    (both ratios' spreads in quadrature, the same K), the one with the largest step. Pure.

    A served layer's error includes all it inherits, so after a fault each later layer stays out of
    line and the error may keep growing: waiting for a layer above twice its allowance named one
    seven layers past the planted fault on vLLM-CPU; the step itself is where it entered. The largest
    step, not the first: where the engine's kernels sit above the in-process floor from the first
    layer on (vLLM-CPU in fp32: about 3x at every clean layer), that offset is a step too, and a
    fault's is far larger. The other significant steps are listed."""
    before_ratio, before_spread, steps = 1.0, 0.0, []  # the embeddings' input: the floor itself
    for row in rows:
        ratio = row.get("ratio")
        if ratio is None or not math.isfinite(ratio) or ratio <= 0:
            continue  # no error on either side (the embeddings, say): no step to measure from it
        allowed = allowance(row)
        spread = max(allowed - 1.0, 0.0) / K_SPREAD
        step = ratio / before_ratio
        step_allowed = 1 + K_SPREAD * math.hypot(spread, before_spread)
        if ratio > allowed and step > step_allowed:
            steps.append({"name": row["name"], "local_rel_l2": row["rel_l2"], "ratio": ratio,
                          **RoundingBasis(kind="step", step=step, step_allowed=step_allowed).fields()})
        before_ratio, before_spread = ratio, spread
    if not steps:
        return None
    largest = max(steps, key=lambda s: s["step"])
    return largest | {"other_steps": [s["name"] for s in steps if s is not largest]}


def locate_and_judge(rows: list[LayerRow], floor_label: str | None, dtype: str, local_factor: float,
           exact_expected: bool) -> tuple[LocatedFault | None, Verdict]:
    """Where to look first and the verdict, by the in-process comparison's own rules; with a floor,
    where the error curve steps up first (first_step_up), else the first layer past the local factor."""
    excess = (first_step_up(rows) if floor_label is not None else None) or \
        find_first_local_excess(rows, local_factor, floor_label is not None, dtype)
    target = {"layers": rows, "first_local_excess": excess,
              "first_nonfinite": next((r["name"] for r in rows if r["nan_mismatch"]), None)}
    return excess, judge_layers(target, {"label": floor_label} if floor_label else None, exact_expected)
