"""`llm-adapt run`: inspect -> accuracy -> engine -> probes -> endpoint accuracy -> bench -> report.

Every stage writes its JSON the moment it finishes, and status.json says what ran, failed or was
skipped and why; the report is rendered from those files alone. `--resume` skips finished stages.
"""

from __future__ import annotations

import contextlib
import time
import traceback
from dataclasses import asdict
from typing import Callable

from llm_adapt import interrupts
from llm_adapt.errors import AdaptError
from llm_adapt import rundir
from llm_adapt.run import stages
from llm_adapt.run.config import STAGES, RunConfig
from llm_adapt.messages import reason, stored
from llm_adapt.run.state import RunState, RunStatus

Stage = Callable[[RunConfig, RunState], None]


def run_pipeline(cfg: RunConfig, state: RunState | None = None) -> RunStatus:
    """Run every stage; `state` may carry the model the command already resolved."""
    from llm_adapt.environment import collect

    state = state or RunState(status=new_status(cfg))
    state.status = _load_or_new_status(cfg)
    collect().save(cfg.out / rundir.ENVIRONMENT)
    try:
        with contextlib.ExitStack() as engine_scope:
            for stage in STAGES[:-1]:
                if stage == "serve":
                    _serve(cfg, state, engine_scope)
                    continue
                _run_stage(cfg, state, stage, stages.MEASURING[stage])
            engine_scope.close()  # stop the engine before the report: nothing of ours outlives its use
    except BaseException as exc:  # Ctrl-C, SIGTERM, a failed inspect: the report of what finished, then the stop
        _report_after_stop(cfg, state, exc)
        raise
    _run_stage(cfg, state, "report", stages.report)
    state.status.finished = True
    state.status.verdict = run_verdict(cfg.out)
    state.status.save(cfg.out / rundir.STATUS)
    return state.status


def run_verdict(out) -> dict:
    """The run's verdict from its JSON files, exactly as the report and the page show it."""
    from llm_adapt.report.data import load_run
    from llm_adapt.report.findings import overall_verdict

    verdict = overall_verdict(load_run(out))
    return {"status": verdict["status"], "reasons": [str(r) for r in verdict["reasons"]]}


def _report_after_stop(cfg: RunConfig, state: RunState, exc: BaseException) -> None:
    """The engine is stopped by now; mark what never ran and render the report from what finished.
    A report that cannot be rendered (no inspect.json yet) is left out: the stop itself is reported."""
    why = interrupt_reason(exc)
    for stage in STAGES[:-1]:
        if state.status.stages.get(stage, {}).get("status") in (None, "pending"):
            state.status.stages[stage] = {"status": "not run", **stored(why)}
    state.status.save(cfg.out / rundir.STATUS)
    if not (cfg.out / rundir.INSPECT).exists():
        return
    with interrupts.deferred():  # a second Ctrl-C waits for the report, which takes a few seconds
        _run_stage(cfg, state, "report", stages.report_in_a_fresh_process)


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
                     stages={s: {"status": "pending"} for s in STAGES}, dummy=cfg.dummy, tool_version=__version__)


def _load_or_new_status(cfg: RunConfig) -> RunStatus:
    path = cfg.out / rundir.STATUS
    if cfg.resume and path.exists():
        return RunStatus.load(path)
    return new_status(cfg)


def _mark(cfg: RunConfig, state: RunState, stage: str, status: str, **extra) -> None:
    if "reason" in extra:  # a keyed reason keeps its key and arguments for the report's languages
        extra.update(stored(extra.pop("reason")))
    state.status.stages[stage] = {"status": status, **extra}
    state.status.save(cfg.out / rundir.STATUS)


def _run_stage(cfg: RunConfig, state: RunState, stage: str, func: Stage) -> None:
    if stage in cfg.skip:
        return _mark(cfg, state, stage, "skipped", reason=reason("skip_flag", stage=stage))
    if stage == "eval" and not cfg.tasks:
        return _mark(cfg, state, stage, "skipped", reason=reason("eval_opt_in"))
    if stage == "layers" and (why := stages.layers_not_wanted(cfg, state)):
        return _mark(cfg, state, stage, "skipped", reason=why)
    if cfg.dummy and stage in ("accuracy", "endpoint_accuracy", "layers", "eval"):
        return _mark(cfg, state, stage, "not applicable", reason=reason("dummy_weights"))
    previous = state.status.stages.get(stage, {})
    if cfg.resume and previous.get("status") == "done" and stage not in ("inspect", "report"):
        cfg.log(f"{stage}: done in an earlier run, kept")
        return
    if stage == "layers" and cfg.layers == "auto" and (why := _escalation_blocked(cfg, state)):
        return _mark(cfg, state, stage, "skipped", reason=why)
    blocked = _blocked_by(cfg, state, stage)
    if blocked:
        return _mark(cfg, state, stage, "not run", reason=blocked)
    started = time.monotonic()
    _mark(cfg, state, stage, "running")
    try:
        interrupts.check()  # a Ctrl-C whose raise was swallowed during the stage before
        func(cfg, state)
    except KeyboardInterrupt:
        _mark(cfg, state, stage, "interrupted", seconds=round(time.monotonic() - started, 1))
        raise
    except AdaptError as exc:
        _mark(cfg, state, stage, "failed", reason=str(exc), seconds=round(time.monotonic() - started, 1))
        cfg.log(f"{stage}: failed: {exc}")
        if stage == "inspect":
            raise
        return
    except Exception as exc:  # a bug in one stage must not lose the others
        _mark(cfg, state, stage, "failed", reason=f"{type(exc).__name__}: {exc}",
              seconds=round(time.monotonic() - started, 1), trace=traceback.format_exc(limit=6))
        cfg.log(f"{stage}: failed: {type(exc).__name__}: {exc}")
        if stage == "inspect":  # nothing else can run without the model and its plan
            raise AdaptError(f"inspect failed ({type(exc).__name__}: {exc}); see {cfg.out / rundir.STATUS}") from None
        return
    _mark(cfg, state, stage, "done", seconds=round(time.monotonic() - started, 1))
    cfg.log(f"{stage}: done in {time.monotonic() - started:.1f} s")


def _blocked_by(cfg: RunConfig, state: RunState, stage: str) -> str | None:
    if stage in ("probes", "endpoint_accuracy", "eval", "bench") and state.server is None and cfg.endpoint is None:
        serve = state.status.stages.get("serve", {}).get("status", "did not start")
        return reason("no_endpoint", serve=serve)
    if stage == "layers":
        from llm_adapt.run.stages import layers_blocked

        return layers_blocked(cfg, state)
    return None


def _escalation_blocked(cfg: RunConfig, state: RunState) -> str | None:
    """An escalation that cannot run here is skipped, not a failure: it was not asked for."""
    blocked = _blocked_by(cfg, state, "layers")
    return reason("no_escalation", blocked=blocked) if blocked else None


def _serve(cfg: RunConfig, state: RunState, scope: contextlib.ExitStack) -> None:
    if cfg.endpoint is not None:
        return _mark(cfg, state, "serve", "skipped", reason=reason("external_endpoint", url=cfg.endpoint.base_url))
    if cfg.resume and state.status.stages.get("serve", {}).get("status") == "done":
        state.status.stages["serve"] = {"status": "pending"}  # a resumed run needs its engine again
    _run_stage(cfg, state, "serve", lambda c, s: stages.start_engine(c, s, scope))
