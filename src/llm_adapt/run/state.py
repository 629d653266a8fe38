"""What a run has so far: filled stage by stage, and status.json on disk after every change."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from llm_adapt.results import StageResult

if TYPE_CHECKING:
    from llm_adapt.accuracy.reference import Gold
    from llm_adapt.engines.server import ManagedServer
    from llm_adapt.engines.session import EngineSlot, ServeResult
    from llm_adapt.inspect.stage import InspectResult
    from llm_adapt.models.source import ModelSource


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


def _empty_slot() -> "EngineSlot":
    from llm_adapt.engines.session import EngineSlot

    return EngineSlot()


@dataclass
class RunState:
    status: RunStatus
    source: "ModelSource | None" = None  # resolved once, by the command, before the run directory exists
    inspect: "InspectResult | None" = None
    gold: "Gold | None" = None  # the reference measured in-process, reused by endpoint accuracy
    engine: "EngineSlot" = field(default_factory=_empty_slot)  # the engine this run started, if any
    # whether a stage after the running one talks to the engine (set by the pipeline from the stage table):
    # a stage that changed the engine puts the deployment as planned back only then
    engine_needed_later: bool = False

    @property
    def server(self) -> "ManagedServer | None":
        return self.engine.server

    @property
    def started(self) -> "ServeResult | None":
        return self.engine.started
