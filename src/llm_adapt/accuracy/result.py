"""The accuracy stage's typed result."""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict

from llm_adapt.results import StageResult
from llm_adapt.rounding_basis import RoundingBasis

__all__ = ["AccuracyResult", "RoundingBasis", "Row", "RunnerReport"]


class Row(BaseModel):
    model_config = ConfigDict(extra="allow")


class RunnerReport(BaseModel):
    """One runner compared with the reference: per-tensor table, logits, greedy tokens, perplexity."""

    model_config = ConfigDict(extra="forbid")
    label: str
    device: str
    dtype: str
    quant: str | None = None
    model_path: str | None = None
    load_seconds: float
    run_seconds: float
    quantized_linears: int = 0
    streaming: bool = False  # reference only: computed one layer at a time from the shards
    reused: str | None = None  # measured by an earlier call and read from the cache (accuracy/store.py): how
    layers: list[dict[str, Any]]  # one row per tensor: full and local error, ratios to the floor
    depth_fit: dict[str, float]
    first_local_excess: dict[str, Any] | None  # where to look first
    first_nonfinite: str | None
    logits: dict[str, Any]
    perplexity: dict[str, Any]
    greedy: list[dict[str, Any]]
    greedy_by_category: dict[str, dict[str, Any]]
    floor: str | None = None  # label of the runner used as this one's noise floor
    vs_floor: dict[str, Any] | None = None  # KL ratio to the floor and the ratio its spread allows
    roundoff_basis: dict[str, Any] | None = None  # no floor: what each layer's own error is judged against
    # (verdict.roundoff_basis: its words, factor, dtype and the layer's longest sum)
    spread: dict[str, Any] | None = None  # floors only: how much the floor moves on another kernel path
    samples: dict[str, Any] = {}  # per-prompt sums kept for bootstrap spreads
    template_mismatches: list[str] | None = None  # --target-model: prompts its own chat template renders differently
    verdict: dict[str, Any] | None = None


class AccuracyResult(StageResult):
    KIND: ClassVar[str] = "accuracy"

    model: dict[str, Any]
    reference: RunnerReport  # the reference's own generations and timing (errors all zero)
    floors: list[RunnerReport]
    targets: list[RunnerReport]
    prompts: dict[str, Any]
    settings: dict[str, Any]
    verdict: dict[str, Any]
