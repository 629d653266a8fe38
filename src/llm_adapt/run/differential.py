"""A differential run (`run MODEL --settings eager,graph,tp2`): the same weights served in each deployment
setting in turn, each judged against the run's one gold and floor, and the setting that moved accuracy
named (accuracy/setting_cause.py).

The first setting is the run's own deployment: the stages before this one (serve, probes, endpoint
accuracy, its layers escalation, bench) measured it in the run directory. Each other setting is planned
(its own inspect.json: tensor-parallel ranks change the KV cache per rank), started in its own folder
(rundir.setting_dir) with vLLM's engine core forked rather than spawned (layout_env), judged by the same
endpoint check, and stopped; an eager one is started with the
layer capture loaded (idle until armed), so that an out-of-line verdict is localized inside that same
engine, at TP>1 on rank 0's full hidden states, without a restart. A setting vLLM refuses, at start or at
its first request, is a row with the engine's own one-line cause, never a verdict.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from llm_adapt import rundir
from llm_adapt.accuracy.setting_cause import EngineFigures, ServedFigures, SettingRow, SettingsResult, located_reason
from llm_adapt.errors import AdaptError
from llm_adapt.results import read_checked
from llm_adapt.status import OUT_OF_LINE, Status

if TYPE_CHECKING:
    from llm_adapt.deploy_settings import Setting
    from llm_adapt.run.config import RunConfig
    from llm_adapt.run.state import RunState


def run_settings(cfg: "RunConfig", state: "RunState") -> None:
    """The stage: the run's own setting read from its files, each other one served and judged in turn;
    settings.json rewritten after each, so a stop keeps what finished."""
    from llm_adapt.accuracy.setting_cause import setting_cause

    state.engine.stop()  # the run's own engine is done with (this stage comes after every stage that uses it)
    base = cfg.settings[0]
    result = SettingsResult(rows=[setting_row(base, cfg.out, "")], seconds={base.name: 0.0})
    for setting in cfg.settings[1:]:
        started = time.monotonic()
        cfg.log(f"settings: serving {setting.label} ({rundir.setting_dir(setting.name)}) ...")
        error = serve_setting(cfg, state, setting)
        result.rows.append(setting_row(setting, cfg.out / rundir.setting_dir(setting.name),
                                       rundir.setting_dir(setting.name), error))
        result.seconds[setting.name] = round(time.monotonic() - started, 1)
        result.save(cfg.out / rundir.SETTINGS)
    result.cause = setting_cause(result.rows)
    result.save(cfg.out / rundir.SETTINGS)
    cfg.log(f"settings: {result.cause['summary']}")


def serve_setting(cfg: "RunConfig", state: "RunState", setting: "Setting") -> str | None:
    """Plan, start, judge (and localize where out of line) one setting in its folder; always stopped after.
    The one-line cause when the plan refused it, the engine did not start or died while judged."""
    from llm_adapt.engines.session import choose_engine
    from llm_adapt.run import stages

    out = rundir.ensure_writable(cfg.out / rundir.setting_dir(setting.name))
    try:
        inspected = plan_setting(cfg, state, setting)
    except AdaptError as exc:
        return str(exc)
    inspected.save(out / rundir.INSPECT)
    engine = choose_engine(cfg.engine)
    capture = engine == "vllm" and not setting.graph
    try:
        state.engine.start(with_capture(inspected, out) if capture else inspected, engine, out,
                           **stages.engine_options(cfg, setting.mode), extra_env=layout_env(engine))
    except AdaptError as exc:
        return getattr(exc, "cause", None) or str(exc)
    try:
        try:
            result = stages.check_endpoint(cfg, state, out, in_flight=1 if setting.serial else None,
                                           plan=inspected.plan)
        except AdaptError as exc:  # the check could not finish: the engine's own cause where it died
            return died(state, out, wait_s=15.0) or str(exc)
        gone = any(v.get("status") != "done" for v in result.sections.values())
        if cause := died(state, out, wait_s=15.0 if gone else 0.0):  # it answered some requests, then died
            return cause
        if capture and cfg.layers != "off" and result.verdict["status"] in OUT_OF_LINE:
            try:
                localize(cfg, state, out, setting)
            except AdaptError as exc:  # the verdict stands without a location; a dead engine says why
                if cause := died(state, out, wait_s=15.0):
                    return cause
                cfg.log(f"settings: {setting.label}: the layer capture failed: {exc}")
    finally:
        state.engine.stop()
    return None


def layout_env(engine: str) -> dict[str, str]:
    """A further setting's engine core is forked from its API server, not spawned: 16 s less per start on
    2 cores, log-probs equal to the last bit (engines/fork_core_plugin.py). The run's own deployment, the
    first setting, was started as the plan writes it."""
    from llm_adapt.engines.fork_core_plugin import FORKED_CORE

    return dict(FORKED_CORE) if engine == "vllm" else {}


def died(state: "RunState", out: Path, wait_s: float = 0.0) -> str | None:
    """The engine's one-line cause (its log's root cause) when it is no longer running (or stops within
    `wait_s`: a worker that crashed takes its engine down in a few seconds), else None."""
    from llm_adapt.engines.server import log_cause

    if state.server is None:
        return None
    deadline = time.monotonic() + wait_s
    while state.server.alive() and time.monotonic() < deadline:
        time.sleep(0.5)
    if state.server.alive():
        return None
    return log_cause(out / rundir.ENGINE_LOG) or f"the engine exited (code {state.server.proc.returncode})"


def plan_setting(cfg: "RunConfig", state: "RunState", setting: "Setting"):
    """The run's plan with the setting's tensor-parallel ranks and expert parallelism, its prefill budget (vLLM
    wants as many tokens a step as sequences: the sequences are capped at the budget) and prefix cache."""
    from dataclasses import replace

    from llm_adapt.inspect.stage import run_inspect

    base = cfg.plan_options_for(state.source)
    options = replace(base, tensor_parallel=setting.tp if setting.tp > 1 else None, expert_parallel=setting.ep,
                      prefix_caching=setting.prefix_cache)
    if setting.chunk:
        options = replace(options, max_num_batched_tokens=setting.chunk,
                          max_num_seqs=min(base.max_num_seqs or setting.chunk, setting.chunk))
    return run_inspect(state.source, options, cfg.platform)


def with_capture(inspected, out: Path):
    from llm_adapt.accuracy import layers_served

    return layers_served.with_capture(inspected, out)


def localize(cfg: "RunConfig", state: "RunState", out: Path, setting: "Setting") -> None:
    """The layers inside this setting's engine against the gold (rank 0's full hidden states at TP>1)."""
    from llm_adapt.accuracy.layers_served import capture_dir, capture_modes, run_layers
    from llm_adapt.run.stages import compare_options

    capture = capture_modes(graph=False, accept_eager=True) | {"setting": setting.name,
                                                               "escalated_from": "endpoint accuracy"}
    cfg.log(f"settings: {setting.label} out of line: capturing its layers inside the engine")
    result = run_layers(state.source, state.server.endpoint, capture_dir(out), compare_options(cfg),
                        state.inspect.plan.dtype, capture, cfg.progress, gold=state.gold)
    result.save(out / rundir.LAYERS)


def setting_row(setting: "Setting", folder: Path, relative: str, error: str | None = None) -> SettingRow:
    """One setting's row, from the files its check wrote in `folder` (the run directory for the first)."""
    serve, ep, layers = (_read(folder / name) for name in (rundir.SERVE, rundir.ENDPOINT_ACCURACY, rundir.LAYERS))
    verdict = (ep or {}).get("verdict") or {}
    row = {"setting": setting.to_dict(), "label": setting.label, "features": sorted(setting.features),
           "dir": relative, "error": error,
           "status": Status(verdict["status"]) if verdict.get("status") and not error else None,
           **served_figures(ep), **engine_figures(serve)}
    where = (layers or {}).get("first_local_excess")
    row["located"], row["routing"] = located_reason(where), ((where or {}).get("routing") or {}).get("verdict")
    return row


def served_figures(ep: dict[str, Any] | None) -> ServedFigures:
    """The table's accuracy columns from an endpoint accuracy result: KL against its floor (or alone where
    served at the gold's dtype), same top-1, genuine greedy divergences. Pure."""
    if not ep or not ep.get("verdict"):
        return {"kl": None, "kl_ratio": None, "allowed": None, "same_top1": None, "greedy": None}
    from llm_adapt.accuracy.verdict import genuine_count

    checks = {c.get("key"): c for c in ep["verdict"].get("checks") or []}
    ratio = checks.get("served_kl_ratio") or {}
    tf, greedy = ep["sections"].get("teacher_forced") or {}, ep["sections"].get("greedy") or {}
    rows = greedy.get("rows") or [] if greedy.get("status") == "done" else []
    return {"kl": (tf.get("server") or {}).get("kl_lb_mean"), "kl_ratio": ratio.get("value"),
            "allowed": (ratio.get("args") or {}).get("allowed", ratio.get("allowed")),
            "same_top1": (tf.get("server") or {}).get("same_top1"),
            "greedy": {"genuine": genuine_count(rows), "prompts": len(rows)} if rows else None}


def engine_figures(serve: dict[str, Any] | None) -> EngineFigures:
    """Start-up, the engine's init (where graph mode compiles), and the KV cache predicted against logged. Pure."""
    serve = serve or {}
    facts, predicted = serve.get("engine_facts") or {}, serve.get("predicted") or {}
    return {"startup_seconds": serve.get("startup_seconds"), "init_seconds": facts.get("engine_init_seconds"),
            "compile_cache": facts.get("compile_cache"),
            "kv": {"predicted": predicted.get("kv_cache_tokens"), "logged": facts.get("kv_cache_tokens"),
                   "ranks": predicted.get("ranks"), "space_by_rank": facts.get("kv_space_gib_by_rank"),
                   "matches": serve.get("prediction_matches")} if serve else None}


def _read(path: Path) -> dict[str, Any] | None:
    """A setting's result as the plain data the row functions read (they are pure, and tested on plain rows)."""
    from llm_adapt.results import UnreadableResult

    try:
        return read_checked(path).model_dump(mode="json") if path.exists() else None
    except UnreadableResult:
        return None
