"""adaptation.json: the run held against vLLM-Ascend's model-adapter workflow. The feature rows, the
capacity baseline, the operator gate, false-ready, both max-model-len figures, and, when the run had
a dummy-weight stage first (`run --stages dummy,real`), the dummy-vs-real matrix: what each stage
proved and what only real weights could show. Built from the run's own results and the model
directory's config and headers; the report and `llm-adapt export` read this file."""

from __future__ import annotations

from pathlib import Path

from llm_adapt import rundir
from llm_adapt.engines.session import ServeResult
from llm_adapt.inspect.gates import (  # declared beside the gates, where the report reads it
    AdaptationResult,
    MatrixRow,
    MaxModelLen,
    StageFacts,
)
from llm_adapt.inspect.stage import InspectResult
from llm_adapt.judged.data import RunData
from llm_adapt.probes.run import JUDGE_CONTENT
from llm_adapt.run_status import StageStatus


def stage_facts(run: RunData, dummy: bool) -> StageFacts:
    """What one stage's results show, row by row (None: this stage cannot show it). Pure."""
    serve, ep, acc = run.serve, run.endpoint_accuracy, run.accuracy
    rows = {r["name"]: r for r in run.probes.rows} if run.probes else {}
    content_free = [n for n, r in rows.items() if n not in JUDGE_CONTENT
                    and r["status"] not in ("not applicable", "not enabled")]  # not this server's to show
    ok = [n for n in content_free if rows[n]["status"] == "supported"]
    chat = rows.get("chat completion") or {}
    started = run.stages.get("serve", {}).get("status")
    return {
        "weights": "dummy (random, --load-format dummy)" if dummy else "the checkpoint's",
        "engine_starts": {StageStatus.DONE: True, StageStatus.SKIPPED: None}.get(started, False) if started else None,
        "startup_seconds": serve.startup_seconds if serve else None,
        "kv_as_planned": serve.prediction_matches if serve else None,
        "first_request": chat.get("status") == "supported" if rows else None,
        "first_request_evidence": (chat.get("evidence") or "")[:160] or None,
        "api_features": f"{len(ok)} of {len(content_free)}" if content_free else None,
        "checkpoint_loads": None if dummy else started == StageStatus.DONE,
        "served_accuracy": None if dummy or not ep or not ep.verdict else ep.verdict["status"],
        "in_process_accuracy": None if dummy or not acc else acc.verdict.get("status"),
    }


MATRIX = (  # (row, fact, what only real weights can show)
    ("engine starts", "engine_starts", False),
    ("KV cache as planned", "kv_as_planned", False),
    ("first request answers (chat, HTTP 200, text)", "first_request", False),
    ("API features that do not judge content", "api_features", False),
    ("checkpoint weights load (names, shapes, dequantization)", "checkpoint_loads", True),
    ("served output against the fp32 gold", "served_accuracy", True),
    ("in-process accuracy against the fp32 gold", "in_process_accuracy", True),
)


def dummy_vs_real(dummy: StageFacts | None, real: StageFacts | None) -> list[MatrixRow]:
    """The skill's matrix: per row, what the dummy stage and the real stage showed. Pure."""
    return [{"row": name, "dummy": dummy.get(fact) if dummy else None, "real": real.get(fact) if real else None,
             "real_only": only} for name, fact, only in MATRIX]


def max_model_len(inspect: InspectResult, serve: ServeResult | None) -> MaxModelLen:
    """The skill asks for both: the config's theoretical length and the one the engine started with."""
    return {"config": inspect.config.get("max_position_embeddings"), "planned": inspect.plan.max_model_len,
            "longest_planned": inspect.plan.longest_max_model_len,
            "served": serve.engine_facts.get("max_model_len") if serve else None}  # as the engine logged it


def deployed_ascend(run: RunData) -> str | None:
    """The vLLM-Ascend version this run had installed (environment.json), or None (the plan's release)."""
    return run.environment.packages.get("vllm-ascend") if run.environment else None


def build(run_dir: Path, model_dir: Path | None) -> AdaptationResult:
    """Assemble adaptation.json from a run directory's results (and the model's files, read once). The
    gates come from inspect/gates.py, the owner `inspect` shares, with what this run served."""
    from llm_adapt.inspect.gates import planning_gates
    from llm_adapt.inspect.operator_gate import gate_of_model
    from llm_adapt.judged.data import load_run
    from llm_adapt.judged.verdict import false_ready
    from llm_adapt.models.spec import load_config
    from llm_adapt.models.weights import tensor_shapes
    from llm_adapt.upstream.setting_checks import setting_checks, with_checks

    run = load_run(run_dir)
    inspect = run.inspect
    dummy = bool(run.status and run.status.dummy)
    config = load_config(model_dir) if model_dir else {}
    names = sorted((tensor_shapes(model_dir) or {}) if model_dir else {})
    serve = run.serve
    served_ok = None if not run.probes else stage_facts(run, dummy)["first_request"]
    operators = (inspect.operator_gate if inspect else None) or (
        gate_of_model(model_dir) if model_dir else {"applies": False, "reason": "no model directory"})
    gates = planning_gates(config, names, inspect.plan.to_dict(), inspect.config.get("max_position_embeddings"),
                           operators, version=deployed_ascend(run), served_mode=serve.mode if serve else None,
                           served_ok=served_ok) if inspect else None
    checks = setting_checks(run.settings.rows if run.settings else [], inspect.platform.name if inspect else "cpu")
    if gates:
        gates["features"] = with_checks(gates["features"], checks)
    stages = None
    dummy_dir = Path(run_dir) / rundir.DUMMY_DIR
    if (dummy_dir / rundir.STATUS).exists() and not dummy:
        d, r = stage_facts(load_run(dummy_dir), True), stage_facts(run, False)
        stages = {"dummy": d, "real": r, "rows": dummy_vs_real(d, r), "dummy_dir": rundir.DUMMY_DIR}
    return AdaptationResult(
        model=inspect.model.get("name", "") if inspect else "", platform=inspect.platform.name if inspect else "cpu",
        features=gates["features"] if gates else [], capacity=gates["capacity"] if gates else {},
        operators=operators, false_ready=false_ready(run.probes, run.endpoint_accuracy, dummy),
        max_model_len=max_model_len(inspect, serve) if inspect else {}, stages=stages, setting_checks=checks)
