"""The NPU deployment an export describes: the NPU run's own plan (its commands verified where the run
started exactly them), or, for a run elsewhere with `--plan-for npu`, the plan this project's planner
makes for an NPU from the run's model, labelled "planned, not run on an NPU". Its commands name the model
by its hub id, as upstream's tutorials start it (`vllm serve ORG/NAME ...`): no local path.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from llm_adapt.errors import UsageError
from llm_adapt.inspect.ascend_features import ASCEND_RELEASE, ASCEND_RELEASE_VLLM, version_label
from llm_adapt.messages import loaded
from llm_adapt.upstream.origin import npu_series as series_of

PLANNED = "planned, not run on an NPU"
PLANNED_ZH = "仅为规划，未在 NPU 上运行"
RAN = "run on an NPU"
RAN_ZH = "已在 NPU 上运行"


@dataclass(frozen=True)
class Deployment:
    planned: bool  # True: planned for an NPU from a run elsewhere
    plan: dict[str, Any]  # DeployPlan.to_dict() for platform npu
    platform: dict[str, Any]  # inspect.json's platform entry of that plan
    gates: dict[str, Any]  # capacity, features, operators, max_model_len (inspect/gates.py)
    commands: dict[str, dict[str, Any]]  # eager / graph: {"text": shell text, "verified": bool}
    version: str  # the vLLM-Ascend the flags are for, e.g. "vLLM-Ascend v0.23.0.post1"
    hardware: str  # the NPUs, in words
    hardware_zh: str
    vllm: str  # the vLLM under it: the run's, or the one the planned release pins

    @property
    def label(self) -> str:
        return PLANNED if self.planned else RAN

    @property
    def label_zh(self) -> str:
        return PLANNED_ZH if self.planned else RAN_ZH


def upstream_command(argv: list[str], env: dict[str, str], model_id: str) -> str:
    """A plan's command as upstream's tutorials write it: its variables exported, then `vllm serve
    MODEL_ID` with the plan's options (the model by hub id, not a local path). Pure."""
    from llm_adapt.command import Command

    command = Command.from_argv(argv).without("--model").with_program("vllm", "serve", model_id)
    return command.shell(env)


def npu_hardware(plan: dict[str, Any], lang: str = "en", series: str | None = None) -> str:
    """The NPUs a plan deploys on, in words: of the run's series where it ran on NPUs (`series`, e.g.
    "Atlas A2 Series"), else of the card the plan assumed where no memory size was given. Pure."""
    count = plan["tensor_parallel"] * plan.get("pipeline_parallel", 1)
    memory = f"{plan['device_memory_gib']:g} GiB"
    assumed = plan.get("device_memory_assumed") and not series
    if lang == "zh":
        return (f"{count} 张 {memory} 昇腾 NPU" + (f"（{series}）" if series else "")
                + ("（按 Atlas A2 假定；`inspect --device-memory` 可按其他规格规划）" if assumed else ""))
    return (f"{count} Ascend NPU{'s' if count > 1 else ''} of {memory}" + (f" ({series})" if series else "")
            + (" (assumed: an Atlas A2 card; `inspect --device-memory` plans for another)" if assumed else ""))


def from_npu_run(parts: dict[str, Any], model_id: str, commands: dict[str, dict[str, Any]]) -> Deployment:
    """The deployment of a run on an NPU: its own plan and the gates its adaptation stage judged."""
    inspect, ad = parts["inspect"], parts.get("adaptation") or {}
    plan = inspect["plan"]
    version = ((parts.get("environment") or {}).get("packages") or {}).get("vllm-ascend")
    gates = {"capacity": ad.get("capacity") or {}, "features": ad.get("features") or [],
             "operators": ad.get("operators") or {}, "max_model_len": ad.get("max_model_len") or {}}
    texts = {mode: {"text": upstream_command(plan["argv"][mode], plan["env"], model_id),
                    "verified": commands[mode]["verified"]} for mode in ("eager", "graph")}
    vllm = ((parts.get("environment") or {}).get("packages") or {}).get("vllm")
    return Deployment(planned=False, plan=plan, platform=inspect["platform"], gates=gates, commands=texts,
                      vllm=f"vLLM {vllm}" if vllm else "a vLLM whose version was not recorded",
                      version=version_label(version), hardware=npu_hardware(plan, series=series_of(parts)),
                      hardware_zh=npu_hardware(plan, "zh", series_of(parts)))


def planned_for_npu(parts: dict[str, Any], model_id: str) -> Deployment:
    """The NPU deployment the planner makes from the run's model (its config and weights' headers, read
    again) and the run's choices (trust-remote-code), for the vLLM-Ascend release plans target."""
    from llm_adapt.command import Command
    from llm_adapt.inspect.plan import PlanOptions
    from llm_adapt.inspect.stage import run_inspect
    from llm_adapt.platforms import default_serving_dtype

    run_plan = parts["inspect"]["plan"]
    source = _model_source(parts["inspect"]["model"])
    dtype, note = default_serving_dtype("npu")
    trust = Command.from_argv(run_plan["argv"]["eager"]).has("--trust-remote-code")
    options = PlanOptions(model_path=model_id, served_model_name=model_id.split("/")[-1], dtype=dtype, dtype_note=note,
                          trust_remote_code=trust)
    result = loaded(json.loads(run_inspect(source, options, "npu").to_json()))
    plan = result["plan"]
    texts = {mode: {"text": upstream_command(plan["argv"][mode], plan["env"], model_id), "verified": False}
             for mode in ("eager", "graph")}
    return Deployment(planned=True, plan=plan, platform=result["platform"], gates=result["gates"], commands=texts,
                      vllm=f"vLLM v{ASCEND_RELEASE_VLLM}, the release it pins",
                      version=version_label(ASCEND_RELEASE), hardware=npu_hardware(plan),
                      hardware_zh=npu_hardware(plan, "zh"))


def _model_source(model: dict[str, Any]):
    """The run's model, found again: its hub id or GGUF as given, else its directory if still there."""
    from llm_adapt.models.source import resolve_model

    if model.get("origin") in ("hf", "ms", "default", "gguf"):
        return resolve_model(model["given"], weights=False)
    path = Path(model.get("path") or "")
    if not (path / "config.json").is_file():
        raise UsageError(f"--plan-for npu plans from the run's model, and its directory {path} is gone; "
                         "put it back (or export an NPU run)")
    return resolve_model(str(path), weights=False)
