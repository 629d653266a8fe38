"""What a run has so far: filled stage by stage, and status.json on disk after every change."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from llm_adapt.run_status import RunStatus

if TYPE_CHECKING:
    from llm_adapt.accuracy.reference import Gold
    from llm_adapt.engines.server import ManagedServer
    from llm_adapt.engines.session import EngineSlot, ServeResult
    from llm_adapt.inspect.stage import InspectResult
    from llm_adapt.models.source import ModelSource


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
