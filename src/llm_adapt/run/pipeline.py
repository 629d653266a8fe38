"""`llm-adapt run`: the stages of run/table.TABLE, in its order: inspect -> accuracy -> serve -> probes ->
endpoint_accuracy -> eager_check -> layers -> eval -> bench -> settings -> adaptation -> report.

Every stage writes its JSON the moment it finishes, and status.json gives each stage's StageStatus and why
(run_status.py); the report is rendered from those files alone. `--resume` skips finished stages.
"""

from __future__ import annotations

import time
import traceback
from dataclasses import asdict, replace

from llm_adapt import interrupts, rundir
from llm_adapt.errors import AdaptError
from llm_adapt.messages import Said, reason
from llm_adapt.run import stages
from llm_adapt.run.config import RunConfig
from llm_adapt.run.state import RunState
from llm_adapt.run.table import ENGINE_STAGE, STAGES, TABLE, Stage, engine_needed_after
from llm_adapt.run_status import RunStatus, RunVerdict, StageStatus, interrupted_verdict, signal_words


def run_pipeline(cfg: RunConfig, state: RunState | None = None) -> RunStatus:
    """Run every stage of the table; `state` may carry the model the command already resolved. With
    `cfg.dummy_first`, the stages of the dummy-weight check run first, in their own run directory."""
    if cfg.dummy_first:
        _dummy_stage(cfg, state)
    from llm_adapt.environment import collect

    state = state or RunState(status=new_status(cfg))
    state.status = _load_or_new_status(cfg)
    collect().save(cfg.out / rundir.ENVIRONMENT)
    try:
        with state.engine:  # stopped before the report: nothing of ours outlives its use
            for stage in TABLE:
                if not stage.after_engine:
                    run_stage(cfg, state, stage)
    except BaseException as exc:  # Ctrl-C, SIGTERM, a failed inspect: the report of what finished, then the stop
        _report_after_stop(cfg, state, exc)
        raise
    for stage in TABLE:
        if stage.after_engine:
            run_stage(cfg, state, stage)
    state.status.finished = True
    state.status.verdict = run_verdict(cfg.out)
    state.status.save(cfg.out / rundir.STATUS)
    return state.status


def _dummy_stage(cfg: RunConfig, state: RunState | None) -> RunStatus:
    """Stage A of `--stages dummy,real`: the engine, the first request and the API on random weights, in
    DUMMY_DIR inside the run directory; the stages that are not its job are left out."""
    from dataclasses import replace

    from llm_adapt.rundir import DUMMY_DIR, open_run_dir

    left_out = frozenset(s.name for s in TABLE if not s.in_dummy_stage)
    name = state.source.name if state and state.source else cfg.model_arg
    smoke = replace(cfg, out=open_run_dir(cfg.out / DUMMY_DIR, name, "dummy"), dummy=True, dummy_first=False,
                    skip=cfg.skip | left_out)
    cfg.log(f"dummy-weight stage: {smoke.out}")
    status = run_pipeline(smoke, RunState(status=new_status(smoke), source=state.source if state else None))
    cfg.log("real-weight stage (mandatory):")
    return status


def run_verdict(out) -> RunVerdict:
    """The run's verdict from its JSON files, exactly as the report and the page show it."""
    from llm_adapt.judged.data import load_run
    from llm_adapt.judged.verdict import overall_verdict

    verdict = overall_verdict(load_run(out))
    return {"status": verdict["status"], "reasons": [str(r) for r in verdict["reasons"]]}


def _report_after_stop(cfg: RunConfig, state: RunState, exc: BaseException) -> None:
    """The engine is stopped by now; mark what never ran and render the report from what finished.
    A report that cannot be rendered (no inspect.json yet) is left out: the stop itself is reported."""
    why = interrupt_reason(exc)
    for stage in TABLE:
        if not stage.after_engine and state.status.stages.get(stage.name, {}).get("status") in (None, StageStatus.PENDING):
            state.status.stages[stage.name] = {"status": StageStatus.NOT_RUN, "reason": why}
    state.status.stopped_by = stopping_signal(exc)
    state.status.save(cfg.out / rundir.STATUS)
    if state.status.stopped_by:  # not judged: the one verdict of an interrupted run, on disk before the report
        verdict = interrupted_verdict(signal_words(state.status.stopped_by))
        state.status.verdict = {"status": verdict["status"], "reasons": [str(r) for r in verdict["reasons"]]}
        state.status.save(cfg.out / rundir.STATUS)
    if not (cfg.out / rundir.INSPECT).exists():
        return
    with interrupts.deferred():  # a second Ctrl-C waits for the report, which takes a few seconds
        for stage in TABLE:
            if stage.after_engine:
                run_stage(cfg, state, replace(stage, run=stages.report_in_a_fresh_process))


def stopping_signal(exc: BaseException) -> str | None:
    """"SIGTERM" or "SIGINT" where a signal stopped the run; None for any other stop. Pure."""
    if isinstance(exc, interrupts.Terminated):
        return "SIGTERM"
    return "SIGINT" if isinstance(exc, KeyboardInterrupt) else None


def interrupt_reason(exc: BaseException) -> str:
    """Why the stages after a stop did not run, in the words the report shows. Pure."""
    if isinstance(exc, interrupts.Terminated):
        return reason("sigterm")
    if isinstance(exc, KeyboardInterrupt):
        return reason("ctrl_c")
    return reason("stopped", error=type(exc).__name__)


def new_status(cfg: RunConfig) -> RunStatus:
    from llm_adapt import __version__

    return RunStatus(model=cfg.model_arg, platform=cfg.platform or "", workload=asdict(cfg.sizes),
                     stages={name: {"status": StageStatus.PENDING} for name in STAGES}, dummy=cfg.dummy, tool_version=__version__)


def _load_or_new_status(cfg: RunConfig) -> RunStatus:
    path = cfg.out / rundir.STATUS
    if cfg.resume and path.exists():  # judged again once it finishes
        return RunStatus.load(path).model_copy(update={"stopped_by": None, "verdict": None, "finished": False})
    return new_status(cfg)


def _mark(cfg: RunConfig, state: RunState, stage: str, status: StageStatus, **extra) -> None:
    state.status.stages[stage] = {"status": status, **extra}
    state.status.save(cfg.out / rundir.STATUS)


def run_stage(cfg: RunConfig, state: RunState, stage: Stage) -> None:
    """One stage, as the table declares it: left out with its reason, or run and marked with the outcome."""
    left_out = _left_out(cfg, state, stage)
    if left_out is not None:
        return _mark(cfg, state, stage.name, left_out[0], reason=left_out[1])
    previous = state.status.stages.get(stage.name, {})
    if cfg.resume and previous.get("status") == StageStatus.DONE and not stage.redone_on_resume:
        cfg.log(f"{stage.name}: done in an earlier run, kept")
        return
    blocked = _blocked(cfg, state, stage)
    if blocked is not None:
        return _mark(cfg, state, stage.name, blocked[0], reason=blocked[1])
    _run(cfg, state, stage)


def _left_out(cfg: RunConfig, state: RunState, stage: Stage) -> tuple[StageStatus, Said] | None:
    """(status, reason) for a stage this run does not mean to run, before anything is measured."""
    if stage.stood_in_by_endpoint and cfg.endpoint is not None:
        return StageStatus.SKIPPED, reason("external_endpoint", url=cfg.endpoint.base_url)
    if stage.name in cfg.skip:
        return StageStatus.SKIPPED, reason("skip_flag", stage=stage.name)
    if stage.asked is not None and not stage.asked(cfg):
        return StageStatus.SKIPPED, reason(stage.not_asked)
    why = stage.not_wanted(cfg, state) if stage.not_wanted else None
    if why:
        return StageStatus.SKIPPED, why
    if cfg.dummy and stage.needs_real_weights:
        return StageStatus.NOT_APPLICABLE, reason("dummy_weights")
    return None


def _blocked(cfg: RunConfig, state: RunState, stage: Stage) -> tuple[StageStatus, Said] | None:
    """(status, reason) for a stage that cannot run with what the stages before it left."""
    if stage.needs_endpoint and state.server is None and cfg.endpoint is None:
        serve = state.status.stages.get(ENGINE_STAGE, {}).get("status", "did not start")
        return StageStatus.NOT_RUN, reason("no_endpoint", serve=serve)
    return stage.blocked(cfg, state) if stage.blocked else None


def _run(cfg: RunConfig, state: RunState, stage: Stage) -> None:
    state.engine_needed_later = engine_needed_after(stage.run, cfg)
    started = time.monotonic()
    _mark(cfg, state, stage.name, StageStatus.RUNNING)
    try:
        interrupts.check()  # a Ctrl-C whose raise was swallowed during the stage before
        stage.run(cfg, state)
    except KeyboardInterrupt:
        _mark(cfg, state, stage.name, StageStatus.INTERRUPTED, seconds=round(time.monotonic() - started, 1))
        raise
    except AdaptError as exc:
        _mark(cfg, state, stage.name, StageStatus.FAILED, reason=str(exc), seconds=round(time.monotonic() - started, 1))
        cfg.log(f"{stage.name}: failed: {exc}")
        if stage.ends_the_run:
            raise
        return
    except Exception as exc:  # a bug in one stage must not lose the others
        _mark(cfg, state, stage.name, StageStatus.FAILED, reason=f"{type(exc).__name__}: {exc}",
              seconds=round(time.monotonic() - started, 1), trace=traceback.format_exc(limit=6))
        cfg.log(f"{stage.name}: failed: {type(exc).__name__}: {exc}")
        if stage.ends_the_run:  # nothing else can run without it
            raise AdaptError(f"{stage.name} failed ({type(exc).__name__}: {exc}); see {cfg.out / rundir.STATUS}") from None
        return
    _mark(cfg, state, stage.name, StageStatus.DONE, seconds=round(time.monotonic() - started, 1))
    cfg.log(f"{stage.name}: done in {time.monotonic() - started:.1f} s")
