"""adaptation.json: the run held against vLLM-Ascend's model-adapter workflow. The feature rows, the
capacity baseline, the operator gate, false-ready, both max-model-len figures, and, when the run had
a dummy-weight stage first (`run --stages dummy,real`), the dummy-vs-real matrix: what each stage
proved and what only real weights could show. Built from the run's own results and the model
directory's config and headers; the report and `llm-adapt export` read this file."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from llm_adapt import rundir
from llm_adapt.probes.run import JUDGE_CONTENT
from llm_adapt.results import StageResult


class AdaptationResult(StageResult):
    KIND: ClassVar[str] = "adaptation"

    model: str
    platform: str
    features: list[dict[str, Any]]
    capacity: dict[str, Any]
    operators: dict[str, Any]
    false_ready: dict[str, Any] | None = None
    max_model_len: dict[str, Any] = {}
    stages: dict[str, Any] | None = None  # dummy-vs-real: {"dummy": {...}, "real": {...}, "rows": [...]}


def stage_facts(parts: dict[str, dict[str, Any] | None], dummy: bool) -> dict[str, Any]:
    """What one stage's results show, row by row (None: this stage cannot show it). Pure."""
    status = (parts.get("status") or {}).get("stages", {})
    serve, probes = parts.get("serve") or {}, parts.get("probes") or {}
    rows = {r["name"]: r for r in probes.get("rows", [])}
    content_free = [n for n, r in rows.items() if n not in JUDGE_CONTENT
                    and r["status"] not in ("not applicable", "not enabled")]  # not this server's to show
    ok = [n for n in content_free if rows[n]["status"] == "supported"]
    ep = (parts.get("endpoint_accuracy") or {}).get("verdict") or {}
    acc = (parts.get("accuracy") or {}).get("verdict") or {}
    started = status.get("serve", {}).get("status")
    return {
        "weights": "dummy (random, --load-format dummy)" if dummy else "the checkpoint's",
        "engine_starts": {"done": True, "skipped": None}.get(started, False) if started else None,
        "startup_seconds": serve.get("startup_seconds"),
        "kv_as_planned": serve.get("prediction_matches"),
        "first_request": (rows.get("chat completion") or {}).get("status") == "supported" if rows else None,
        "first_request_evidence": ((rows.get("chat completion") or {}).get("evidence") or "")[:160] or None,
        "api_features": f"{len(ok)} of {len(content_free)}" if content_free else None,
        "checkpoint_loads": None if dummy else started == "done",
        "served_accuracy": None if dummy else ep.get("status"),
        "in_process_accuracy": None if dummy else acc.get("status"),
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


def dummy_vs_real(dummy: dict[str, Any] | None, real: dict[str, Any] | None) -> list[dict[str, Any]]:
    """The skill's matrix: per row, what the dummy stage and the real stage showed. Pure."""
    return [{"row": name, "dummy": (dummy or {}).get(fact), "real": (real or {}).get(fact), "real_only": only}
            for name, fact, only in MATRIX]


def max_model_len(inspect: dict[str, Any], serve: dict[str, Any] | None) -> dict[str, Any]:
    """The skill asks for both: the config's theoretical length and the one the engine started with."""
    plan = inspect.get("plan", {})
    facts = (serve or {}).get("engine_facts") or {}
    return {"config": inspect.get("config", {}).get("max_position_embeddings"), "planned": plan.get("max_model_len"),
            "longest_planned": plan.get("longest_max_model_len"),
            "served": facts.get("max_model_len")}  # as the engine logged it


def deployed_ascend(run_parts: dict[str, Any]) -> str | None:
    """The vLLM-Ascend version this run had installed (environment.json), or None (the plan's release)."""
    return ((run_parts.get("environment") or {}).get("packages") or {}).get("vllm-ascend")


def build(run_dir: Path, model_dir: Path | None) -> AdaptationResult:
    """Assemble adaptation.json from a run directory's results (and the model's files, read once). The
    gates come from inspect/gates.py, the owner `inspect` shares, with what this run served."""
    from llm_adapt.models.spec import load_config
    from llm_adapt.models.weights import tensor_shapes
    from llm_adapt.report.data import load_run
    from llm_adapt.report.findings import false_ready
    from llm_adapt.inspect.gates import planning_gates
    from llm_adapt.inspect.operator_gate import gate_of_model

    run = load_run(run_dir)
    inspect = run.get("inspect") or {}
    platform = inspect.get("platform", {}).get("name", "cpu")
    dummy = bool((run.get("status") or {}).get("dummy"))
    config = load_config(model_dir) if model_dir else {}
    names = sorted((tensor_shapes(model_dir) or {}) if model_dir else {})
    serve = run.get("serve") or {}
    served_ok = None if not run.get("probes") else stage_facts(run.parts, dummy)["first_request"]
    operators = inspect.get("operator_gate") or (gate_of_model(model_dir) if model_dir else
                                                 {"applies": False, "reason": "no model directory"})
    gates = planning_gates(config, names, inspect["plan"], inspect.get("config", {}).get("max_position_embeddings"),
                           operators, version=deployed_ascend(run.parts), served_mode=serve.get("mode"),
                           served_ok=served_ok) if inspect.get("plan") else None
    stages = None
    dummy_dir = Path(run_dir) / rundir.DUMMY_DIR
    if (dummy_dir / rundir.STATUS).exists() and not dummy:
        before = load_run(dummy_dir)
        d, r = stage_facts(before.parts, True), stage_facts(run.parts, False)
        stages = {"dummy": d, "real": r, "rows": dummy_vs_real(d, r), "dummy_dir": rundir.DUMMY_DIR}
    return AdaptationResult(
        model=inspect.get("model", {}).get("name", ""), platform=platform,
        features=gates["features"] if gates else [], capacity=gates["capacity"] if gates else {},
        operators=operators, false_ready=false_ready(run.get("probes"), run.get("endpoint_accuracy"), dummy),
        max_model_len=max_model_len(inspect, serve), stages=stages)
