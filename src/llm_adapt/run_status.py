"""status.json: a run's stages and their outcome, its verdict once the report is drawn. The run writes it
(run/pipeline.py) and the report reads it, so it lives below both."""

from __future__ import annotations

from typing import Any, ClassVar

from llm_adapt.results import StageResult


class RunStatus(StageResult):
    KIND: ClassVar[str] = "status"

    model: str
    platform: str
    stages: dict[str, dict[str, Any]]
    workload: dict[str, Any]
    finished: bool = False
    dummy: bool = False
    tool_version: str | None = None  # the llm-adapt that ran it
    # the run's verdict as the report shows it ({status, reasons}), written once the report is drawn
    verdict: dict[str, Any] | None = None
    # the signal that stopped the run ("SIGINT": Ctrl-C, or "SIGTERM"); such a run is not judged, and
    # `--resume` finishes it
    stopped_by: str | None = None
