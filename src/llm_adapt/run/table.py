"""The stages of `llm-adapt run`, in order, each with what it needs and what keeps it from running. The
pipeline loops over this table; no other place decides a stage by its name."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from llm_adapt.messages import reason
from llm_adapt.run import differential, stages
from llm_adapt.run.config import RunConfig
from llm_adapt.run.state import RunState
from llm_adapt.run_status import StageStatus

StageFn = Callable[[RunConfig, RunState], None]
Why = Callable[[RunConfig, RunState], "str | None"]


@dataclass(frozen=True)
class Stage:
    name: str
    run: StageFn
    skippable: bool = True  # `--skip NAME` may leave it out
    needs_endpoint: bool = False  # talks to a served model: this run's engine or --endpoint
    needs_real_weights: bool = False  # meaningless on random weights: not applicable to a --dummy run
    in_dummy_stage: bool = True  # runs in the dummy-weight stage of `--stages dummy,real`
    stood_in_by_endpoint: bool = False  # `--endpoint URL` takes its place: skipped, whatever else was asked
    asked: Callable[[RunConfig], bool] | None = None  # opt-in: runs only when the run asks for it
    not_asked: str = ""  # the reason key when it was not asked for
    not_wanted: Why | None = None  # why it is skipped on this run although it could run
    blocked: Callable[[RunConfig, RunState], "tuple[str, str] | None"] | None = None  # (status, why) it cannot run
    redone_on_resume: bool = False  # `--resume` runs it again even when an earlier run finished it
    ends_the_run: bool = False  # a failure stops the run: nothing else can run without it
    after_engine: bool = False  # runs once the engine is stopped


def _layers_gate(cfg: RunConfig, state: RunState) -> tuple[str, str] | None:
    """The layers stage needs the vLLM engine this run started. An escalation that cannot run here is
    skipped, not a failure: it was not asked for."""
    blocked = stages.layers_blocked(cfg, state)
    if blocked is None:
        return None
    if cfg.layers == "auto":
        return StageStatus.SKIPPED, reason("no_escalation", blocked=blocked)
    return StageStatus.NOT_RUN, blocked


TABLE: tuple[Stage, ...] = (
    Stage("inspect", stages.inspect, skippable=False, redone_on_resume=True, ends_the_run=True),
    Stage("accuracy", stages.accuracy, needs_real_weights=True),
    Stage("serve", stages.start_engine, stood_in_by_endpoint=True, redone_on_resume=True),
    Stage("probes", stages.probes, needs_endpoint=True),
    Stage("endpoint_accuracy", stages.endpoint_accuracy, needs_endpoint=True, needs_real_weights=True),
    Stage("eager_check", stages.eager_check, needs_real_weights=True, not_wanted=stages.eager_check_not_wanted,
          blocked=_layers_gate),
    Stage("layers", stages.layers, needs_real_weights=True, not_wanted=stages.layers_not_wanted, blocked=_layers_gate),
    Stage("eval", stages.task_accuracy, needs_endpoint=True, needs_real_weights=True,
          asked=lambda cfg: bool(cfg.tasks), not_asked="eval_opt_in"),
    Stage("bench", stages.bench, needs_endpoint=True, in_dummy_stage=False),
    Stage("settings", differential.run_settings, needs_real_weights=True, in_dummy_stage=False,
          asked=lambda cfg: len(cfg.settings) > 1, not_asked="settings_opt_in"),
    Stage("adaptation", stages.adaptation, skippable=False),
    Stage("report", stages.report, skippable=False, redone_on_resume=True, after_engine=True),
)

STAGES = tuple(s.name for s in TABLE)
SKIPPABLE = tuple(s.name for s in TABLE if s.skippable)
ENGINE_STAGE = next(s.name for s in TABLE if s.stood_in_by_endpoint)  # the stage that starts the engine


def wanted(stage: Stage, cfg: RunConfig) -> bool:
    """Whether the run means to run `stage` (not skipped, and asked for where it is opt-in)."""
    return stage.name not in cfg.skip and (stage.asked is None or stage.asked(cfg))


def engine_needed_after(run: StageFn, cfg: RunConfig) -> bool:
    """Whether a stage after the one that `run`s, and that this run means to run, talks to the engine (a
    stage function not in the table, as a test gives, has every stage after it)."""
    at = next((i for i, s in enumerate(TABLE) if s.run is run), -1)
    return any(s.needs_endpoint and wanted(s, cfg) for s in TABLE[at + 1:])
