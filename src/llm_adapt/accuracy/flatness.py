"""Whether the gold's logits are flat: untrained or random weights, or a model too small to be decisive.
Such a model is judged as any other, but the checks that rest on decisive positions have little to go
on, and the report says so instead of letting a reader take a quiet same-top-1 check for evidence. Pure.

Measured on the quick prompts with their greedy answers (chat template, fp32): SmolLM2-135M-Instruct
had 88% of its positions decisive (top-1 more than 0.3 nats above top-2) and a mean entropy 16% of the
uniform's; a random-weight Qwen3 (transformers' own init, hidden 256) had 29% and 99.5%."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from llm_adapt.accuracy.result import LogitStats, Sharpness

FLAT_ENTROPY = 0.9  # mean entropy at least this share of the uniform's: next to no preference at all
FLAT_DECISIVE = 0.5  # fewer than this share of positions outside the tie margin
# The checks a flat model weakens: each rests on positions outside the tie margin or on greedy tokens
# that near-ties excuse (messages: the report's words for them).
WEAKENED = ("same_top1", "greedy", "probes")


def is_flat(sharpness: Sharpness | LogitStats | None) -> bool:
    """Whether `sharpness` (metrics.logit_sharpness of the gold) says the logits are flat; False where
    nothing was measured (no position: a NaN of ours decides nothing). Pure."""
    if not sharpness or not sharpness.get("positions"):
        return False
    share = sharpness["decisive_positions"] / sharpness["positions"]
    entropy = sharpness.get("entropy_ratio")
    return share < FLAT_DECISIVE or (entropy is not None and math.isfinite(entropy) and entropy >= FLAT_ENTROPY)
