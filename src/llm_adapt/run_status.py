"""status.json: a run's stages and their outcome, its verdict once the report is drawn. The run writes it
(run/pipeline.py) and the report reads it, so it lives below both."""

from __future__ import annotations

from typing import Any, ClassVar

from llm_adapt.messages import reason
from llm_adapt.results import StageResult
from llm_adapt.status import INTERRUPTED


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


def signal_words(stopped_by: str) -> str:
    """What stopped a run, as the report says it: "Ctrl-C" for SIGINT, else the signal's name. Pure."""
    return "Ctrl-C" if stopped_by == "SIGINT" else stopped_by


def interrupted_verdict(stopped: str) -> dict[str, Any]:
    """The one verdict of a run a signal stopped (`stopped`: signal_words'), from nothing but the signal: the run
    writes it without importing the report (a signal that lands inside a module's first import can leave that
    module half made, and numpy then refuses to be imported again), and the report gives the same. Pure."""
    return {"status": INTERRUPTED, "reasons": [reason("interrupted_not_judged", signal=stopped)]}
