"""The NPU deployment an export describes: the NPU run's own plan (its commands verified where the run
started exactly them), or, for a run elsewhere with `--plan-for npu`, the plan this project's planner
makes for an NPU from the run's model, labelled "planned, not run on an NPU". Its commands name the model
by its hub id, as upstream's tutorials start it (`vllm serve ORG/NAME ...`): no local path. Beside the plan:
the support level, the caveats and the three tuning scenarios (upstream/scenarios.py), each judged or
planned for vLLM-Ascend, not for the vLLM that served the run.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from typing_extensions import TypedDict  # pydantic validates typing's TypedDict from Python 3.12 only

from llm_adapt.errors import UsageError
from llm_adapt.inspect.ascend_features import ASCEND_RELEASE, ASCEND_RELEASE_VLLM, version_label
from llm_adapt.inspect.gates import Gates
from llm_adapt.inspect.operators import CaveatRecord
from llm_adapt.inspect.plan import DeployPlan
from llm_adapt.inspect.stage import PlatformReport
from llm_adapt.inspect.support import SupportAnswer
from llm_adapt.judged.data import RunData
from llm_adapt.models.source import ModelRef
from llm_adapt.upstream import commands as cmd
from llm_adapt.upstream.origin import npu_series as series_of

PLANNED = "planned, not run on an NPU"
PLANNED_ZH = "仅为规划，未在 NPU 上运行"
RAN = "run on an NPU"
RAN_ZH = "已在 NPU 上运行"


class ModeCommand(TypedDict):
    """A deployment mode's serve command (eager or graph), and whether this run started exactly it."""

    text: str  # the shell text
    verified: bool


@dataclass(frozen=True)
class Deployment:
    planned: bool  # True: planned for an NPU from a run elsewhere
    plan: DeployPlan  # for platform npu
    platform: PlatformReport  # inspect.json's platform entry of that plan
    gates: Gates
    commands: dict[str, ModeCommand]  # eager / graph
    version: str  # the vLLM-Ascend the flags are for, e.g. "vLLM-Ascend v0.23.0.post1"
    hardware: str  # the NPUs, in words
    hardware_zh: str
    vllm: str  # the vLLM under it: the run's, or the one the planned release pins
    support: SupportAnswer  # native / backend / unsupported, judged for that vLLM
    vllm_zh: str = ""
    caveats: list[CaveatRecord] = field(default_factory=list)  # the model's caveats on an NPU (inspect/caveats.py)
    scenarios: list[Any] = field(default_factory=list)  # upstream/scenarios.Scenario: long context, ...
    servers: dict[str, cmd.Shown] = field(default_factory=dict)  # eager / graph: the server command as data

    @property
    def label(self) -> str:
        return PLANNED if self.planned else RAN

    @property
    def label_zh(self) -> str:
        return PLANNED_ZH if self.planned else RAN_ZH


def upstream_command(argv: list[str], env: dict[str, str], model_id: str) -> str:
    """A plan's command as upstream's tutorials write it: its variables exported, then `vllm serve
    MODEL_ID` with the plan's options (the model by hub id, not a local path). Pure."""
    return cmd.serve(argv, env, model_id).text()


def npu_hardware(plan: DeployPlan, lang: str = "en", series: str | None = None) -> str:
    """The NPUs a plan deploys on, in words: of the run's series where it ran on NPUs (`series`, e.g.
    "Atlas A2 Series"), else of the card the plan assumed where no memory size was given. Pure."""
    count = plan.tensor_parallel * plan.pipeline_parallel
    memory = f"{plan.device_memory_gib:g} GiB"
    assumed = plan.device_memory_assumed and not series
    if lang == "zh":
        return (f"{count} 张 {memory} 昇腾 NPU" + (f"（{series}）" if series else "")
                + ("（按 Atlas A2 卡假定）" if assumed else ""))
    return (f"{count} Ascend NPU{'s' if count > 1 else ''} of {memory}" + (f" ({series})" if series else "")
            + (" (an Atlas A2 card assumed)" if assumed else ""))


def _servers(plan: DeployPlan, model_id: str) -> dict[str, cmd.Shown]:
    return {mode: cmd.serve(plan.command(mode).argv(), plan.env, model_id) for mode in ("eager", "graph")}


def from_npu_run(run: RunData, model_id: str, commands: dict[str, ModeCommand]) -> Deployment:
    """The deployment of a run on an NPU: its own plan and the gates its adaptation stage judged."""
    inspect, ad = run.inspect, run.adaptation
    plan = inspect.plan
    packages = run.environment.packages if run.environment else {}
    gates = {"capacity": ad.capacity, "features": ad.features, "operators": ad.operators,
             "max_model_len": ad.max_model_len} if ad else {"capacity": {}, "features": [], "operators": {},
                                                            "max_model_len": {}}
    servers = _servers(plan, model_id)
    texts = {mode: {"text": servers[mode].text(), "verified": commands[mode]["verified"]} for mode in ("eager", "graph")}
    vllm = packages.get("vllm")
    return Deployment(planned=False, plan=plan, platform=inspect.platform, gates=gates, commands=texts,
                      vllm=f"vLLM {vllm}" if vllm else "a vLLM whose version was not recorded",
                      vllm_zh=f"vLLM {vllm}" if vllm else "vLLM（版本未记录）",
                      version=version_label(packages.get("vllm-ascend")), hardware=npu_hardware(plan, series=series_of(run)),
                      hardware_zh=npu_hardware(plan, "zh", series_of(run)), support=inspect.support,
                      caveats=inspect.caveats, servers=servers,
                      scenarios=_scenarios(inspect.model, _options_of(plan, model_id)))


def planned_for_npu(run: RunData, model_id: str) -> Deployment:
    """The NPU deployment the planner makes from the run's model (its config and weights' headers, read
    again) and the run's choices (trust-remote-code), for the vLLM-Ascend release plans target."""
    from llm_adapt.inspect.plan import PlanOptions
    from llm_adapt.inspect.stage import run_inspect
    from llm_adapt.platforms import default_serving_dtype

    source = _model_source(run.inspect.model)
    dtype, note = default_serving_dtype("npu")
    trust = run.inspect.plan.command("eager").has("--trust-remote-code")
    options = PlanOptions(model_path=model_id, served_model_name=model_id.split("/")[-1], dtype=dtype, dtype_note=note,
                          trust_remote_code=trust)
    result = run_inspect(source, options, "npu")
    plan = result.plan
    servers = _servers(plan, model_id)
    texts = {mode: {"text": servers[mode].text(), "verified": False} for mode in ("eager", "graph")}
    from llm_adapt.inspect.stage import plan_inputs
    from llm_adapt.upstream.scenarios import scenarios

    return Deployment(planned=True, plan=plan, platform=result.platform, gates=result.gates, commands=texts,
                      vllm=f"vLLM v{ASCEND_RELEASE_VLLM}, the release it pins",
                      vllm_zh=f"vLLM v{ASCEND_RELEASE_VLLM}，即其固定依赖的版本",
                      version=version_label(ASCEND_RELEASE), hardware=npu_hardware(plan),
                      hardware_zh=npu_hardware(plan, "zh"), support=result.support, caveats=result.caveats,
                      servers=servers, scenarios=scenarios(plan_inputs(source, options, "npu")))


def _options_of(plan: DeployPlan, model_id: str):
    """The planner's options that reproduce an NPU run's plan (its dtype, card, memory share, remote code)."""
    from llm_adapt.inspect.plan import PlanOptions

    eager = plan.command("eager")
    return PlanOptions(model_path=model_id, served_model_name=eager.get("--served-model-name") or model_id.split("/")[-1],
                       dtype=plan.dtype, device_memory_gib=plan.device_memory_gib,
                       gpu_memory_utilization=plan.memory_utilization,
                       trust_remote_code=eager.has("--trust-remote-code"))


def _scenarios(model: ModelRef, options) -> list[Any]:
    from llm_adapt.inspect.stage import plan_inputs
    from llm_adapt.upstream.scenarios import scenarios

    return scenarios(plan_inputs(_model_source(model), options, "npu"))


def _model_source(model: ModelRef):
    """The run's model, found again: the directory it was read from if still there, else its hub id or GGUF
    as given."""
    from llm_adapt.models.source import resolve_model

    path = Path(model.get("path") or "")
    if model.get("path") and (path / "config.json").is_file():
        return resolve_model(str(path), weights=False)
    if model.get("origin") in ("hf", "ms", "default", "gguf"):
        return resolve_model(model["given"], weights=False)
    if not (path / "config.json").is_file():
        raise UsageError(f"export plans the NPU deployment and its scenarios from the run's model, and its directory "
                         f"{path} is gone; put it back")
    return resolve_model(str(path), weights=False)
