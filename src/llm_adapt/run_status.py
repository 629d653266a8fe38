"""status.json: a run's stages and their outcome, its verdict once the report is drawn. The run writes it
(run/pipeline.py) and the report reads it, so it lives below both."""

from __future__ import annotations

from enum import StrEnum
from typing import ClassVar

from pydantic import ConfigDict, with_config
from typing_extensions import NotRequired, TypedDict  # pydantic validates typing's TypedDict from Python 3.12 only

from llm_adapt import rundir
from llm_adapt.messages import Said, reason
from llm_adapt.results import StageResult
from llm_adapt.status import Status


class StageStatus(StrEnum):
    """Where a stage of a run stands in status.json (run/pipeline.py writes it, the report reads it)."""

    PENDING = "pending"  # not reached yet
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"
    SKIPPED = "skipped"  # left out: not asked for, --skip, or stood in for by --endpoint
    NOT_APPLICABLE = "not applicable"  # meaningless here: a --dummy run's accuracy stages
    NOT_RUN = "not run"  # meant to run, and could not: what it needed did not come, or the run was stopped
    INTERRUPTED = "interrupted"  # stopped by Ctrl-C or SIGTERM while it ran


# a stage meant to run that did not finish: the run's verdict is never PASS with one of these
INCOMPLETE = (StageStatus.FAILED, StageStatus.NOT_RUN, StageStatus.INTERRUPTED)


@with_config(ConfigDict(extra="allow"))
class StageRecord(TypedDict):
    """One stage in status.json: where it stands, why (a stage left out, failed or not run), how long it ran."""

    status: StageStatus
    reason: NotRequired[Said | None]
    seconds: NotRequired[float]
    trace: NotRequired[str]  # a bug's traceback, kept for the report's troubleshooting


@with_config(ConfigDict(extra="allow"))
class RunWorkload(TypedDict, total=False):
    """How much each measuring stage did (run/config.RunSizes, as the run recorded it)."""

    prompts: str
    max_new_tokens: int
    latency_iterations: int
    input_len: int
    output_len: int
    throughput_prompts: int
    sweep: list[int]
    sweep_prompts: int
    quants: list[str]
    corpus_tokens: int | None


@with_config(ConfigDict(extra="allow"))
class RunVerdict(TypedDict):
    """The run's one verdict (judged.verdict.overall_verdict; interrupted_verdict for a run a signal stopped)."""

    status: Status
    reasons: list[Said]
    false_ready: NotRequired[bool]
    judged: NotRequired[list[Said]]  # the reasons of the parts that judged accuracy


class RunStatus(StageResult):
    KIND: ClassVar[str] = "status"
    FILE: ClassVar[str | None] = rundir.STATUS

    model: str
    platform: str
    stages: dict[str, StageRecord]
    workload: RunWorkload
    finished: bool = False
    dummy: bool = False
    tool_version: str | None = None  # the llm-adapt that ran it
    # the run's verdict as the report shows it ({status, reasons}), written once the report is drawn
    verdict: RunVerdict | None = None
    # the signal that stopped the run ("SIGINT": Ctrl-C, or "SIGTERM"); such a run is not judged, and
    # `--resume` finishes it
    stopped_by: str | None = None


def signal_words(stopped_by: str) -> str:
    """What stopped a run, as the report says it: "Ctrl-C" for SIGINT, else the signal's name. Pure."""
    return "Ctrl-C" if stopped_by == "SIGINT" else stopped_by


def interrupted_verdict(stopped: str) -> RunVerdict:
    """The one verdict of a run a signal stopped (`stopped`: signal_words'), from nothing but the signal: the run
    writes it without importing the report (a signal that lands inside a module's first import can leave that
    module half made, and numpy then refuses to be imported again), and the report gives the same. Pure."""
    return {"status": Status.INTERRUPTED, "reasons": [reason("interrupted_not_judged", signal=stopped)]}
