"""What a comparison measures and how: the options every accuracy stage shares."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from llm_adapt.accuracy.runner import RunnerSpec

Progress = Callable[[str, int, int], None]  # (what, done, total)


@dataclass(frozen=True)
class CompareOptions:
    reference: RunnerSpec
    targets: tuple[RunnerSpec, ...]
    baseline: RunnerSpec | None = None  # None: chosen per target (see floor_for)
    prompts: str = "default"
    max_new_tokens: int = 64
    tie_margin: float = 0.3
    top_k: int = 5
    ppl_window: int = 512
    local_factor: float = 2.0  # a layer's local error "exceeds its floor" above this ratio
    reference_streaming: bool | None = None  # None: stream when the fp32 model would not fit in RAM

