"""The inspect stage: model source -> spec -> support, operators, memory, plan -> InspectResult."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, with_config
from typing_extensions import TypedDict  # pydantic validates typing's TypedDict from Python 3.12 only

from llm_adapt import platforms, rundir
from llm_adapt.errors import UsageError
from llm_adapt.inspect import memory as mem
from llm_adapt.inspect.accounting import AccountingRecord, expected_groups, reconcile, weight_groups
from llm_adapt.inspect.gates import Gates, planning_gates
from llm_adapt.inspect.memory import WeightSizingRecord
from llm_adapt.inspect.model_walk import read_facts
from llm_adapt.inspect.operator_gate import OperatorGate, gate_of_model
from llm_adapt.inspect.operators import CaveatRecord, OperatorRecord, caveat_dicts, operator_inventory
from llm_adapt.inspect.plan import DeployPlan, PlanOptions, make_plan
from llm_adapt.inspect.strategy import StrategyRecord, decide
from llm_adapt.inspect.support import TRANSFORMERS_BACKEND, Support, SupportAnswer, classify, registry_for
from llm_adapt.inspect.tool_calling import read_chat_template, tool_calling
from llm_adapt.models.provenance import Provenance, provenance_of, recorded
from llm_adapt.models.quant import QuantRecord
from llm_adapt.models.source import ModelRef, ModelSource
from llm_adapt.models.spec import ModelSpec, load_config, load_spec
from llm_adapt.models.weights import checkpoint_tensors, parameters_from_weights, tensor_shapes
from llm_adapt.results import StageResult


class PlatformReport(BaseModel):
    """The platform planned for, as inspect.json records it."""

    model_config = ConfigDict(extra="forbid")

    name: str
    display: str
    engine: str
    local: bool  # the platform of this machine
    graph_mode: str
    graph_mode_zh: str | None = None
    block_size: int
    # where the host is the device (CPU), the host's processor
    cpu_model: str | None = None
    cores: int | None = None
    avx512: bool | None = None

    def graph_mode_in(self, lang: str) -> str:
        """The graph mode's name in `lang` where the platform gives one, else its own."""
        return (self.graph_mode_zh if lang == "zh" else None) or self.graph_mode


@with_config(ConfigDict(extra="allow"))
class ParameterReport(TypedDict, total=False):
    """inspect.json's `parameters`: counted from the config, and from the weights where they are here."""
    from_config: int
    breakdown: dict[str, int]
    from_weights: int | None
    weights_by_dtype: dict[str, int] | None
    agree: bool | None
    accounting: AccountingRecord  # the weights' groups against the config's
    weight_sizing: WeightSizingRecord  # the weights' bytes from the safetensors headers (plan_inputs)


@with_config(ConfigDict(extra="allow"))
class ConfigSummary(TypedDict, total=False):
    """inspect.json's `config` (config_summary): the ModelSpec figures the plan and the report use."""
    hidden_size: int
    intermediate_size: int
    num_layers: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    vocab_size: int
    max_position_embeddings: int | None
    tie_word_embeddings: bool
    torch_dtype: str | None
    custom_code: bool
    quantization: QuantRecord | None


class InspectResult(StageResult):
    KIND: ClassVar[str] = "inspect"
    FILE: ClassVar[str | None] = rundir.INSPECT

    model: ModelRef
    architecture: str
    model_type: str
    config: ConfigSummary
    parameters: ParameterReport
    weight_bytes: dict[str, int]
    kv_cache_bytes_per_token: int
    kv_dtype: str
    support: SupportAnswer
    operators: list[OperatorRecord]
    platform: PlatformReport
    plan: DeployPlan
    inventory: dict[str, Any] = {}  # ModelFacts: read from the model's code, or the labelled config fallback
    caveats: list[CaveatRecord] = []  # platform caveats with source and accuracy check (and their message keys)
    strategy: StrategyRecord = {}  # inspect/strategy.py: decision, evidence, backend trial, plugin skeleton
    operator_gate: OperatorGate = {}  # upstream/operators.py: the custom operators of the model's own code
    # inspect/gates.py: the adapter workflow's gates that need no device (capacity baseline, feature
    # applicability with evidence, operator gate, max-model-len), for this plan's platform
    gates: Gates = {}
    # models/provenance.py: what was measured (checkpoint, revision, format, quantization as loaded, the dtype it
    # was converted to); None in an inspect.json written before it was recorded (provenance.recorded rebuilds it)
    provenance: Provenance | None = None

    @property
    def measured(self) -> Provenance | None:
        """What the run measured: the provenance recorded, or what an older file's model entry still tells."""
        return recorded(self.provenance, self.model, self.parameters.get("weights_by_dtype"),
                        self.config.get("quantization"))


def config_summary(spec: ModelSpec) -> ConfigSummary:
    """inspect.json's `config`: the ModelSpec figures the plan and the report use."""
    return {
        "hidden_size": spec.hidden_size, "intermediate_size": spec.intermediate_size,
        "num_layers": spec.num_layers, "num_heads": spec.num_heads, "num_kv_heads": spec.num_kv_heads,
        "head_dim": spec.head_dim, "vocab_size": spec.vocab_size,
        "max_position_embeddings": spec.max_position_embeddings,
        "tie_word_embeddings": spec.tie_word_embeddings, "torch_dtype": spec.torch_dtype,
        "custom_code": spec.custom_code, "quantization": spec.quant.to_dict() if spec.quant else None,
    }


def parameter_report(spec: ModelSpec, source: ModelSource) -> ParameterReport:
    breakdown = mem.parameter_breakdown(spec)
    from_weights = parameters_from_weights(source.path)
    report: ParameterReport = {"from_config": breakdown.total, "breakdown": breakdown.to_dict(),
                               "from_weights": None, "weights_by_dtype": None, "agree": None}
    if from_weights is not None:
        total, by_dtype = from_weights
        pack = spec.quant.pack_factor if spec.quant else 1
        accounting = reconcile(expected_groups(spec), weight_groups(tensor_shapes(source.path) or {}, pack))
        total = accounting.from_weights if spec.quant else total  # packed weights counted as the weights they hold
        report.update(from_weights=total, weights_by_dtype=by_dtype, agree=accounting.agree,
                      accounting=accounting.to_dict())
    return report


def platform_report(name: str, detected: str) -> PlatformReport:
    info = platforms.get_platform(name)
    report = PlatformReport(name=name, display=info.display, engine=info.engine, local=name == detected,
                            graph_mode=info.graph_mode, graph_mode_zh=info.graph_mode_zh, block_size=info.block_size)
    if info.host_memory:
        report = report.model_copy(update={"cpu_model": platforms.cpu_model(), "cores": platforms.cpu_cores(),
                                           "avx512": "avx512f" in platforms.cpu_flags()})
    return report


AVAILABLE_MEMORY_ENV = "LLM_ADAPT_AVAILABLE_MEMORY_GIB"


def available_host_memory_gib() -> float:
    """Host memory free for a new engine now; LLM_ADAPT_AVAILABLE_MEMORY_GIB caps it (a budget, or tests)."""
    import os

    import psutil

    available = psutil.virtual_memory().available / mem.GIB
    override = os.environ.get(AVAILABLE_MEMORY_ENV)
    if not override:
        return available
    try:
        cap = float(override)
    except ValueError:
        raise UsageError(f"{AVAILABLE_MEMORY_ENV}={override!r}: give a number of GiB, e.g. 16") from None
    if cap <= 0:
        raise UsageError(f"{AVAILABLE_MEMORY_ENV}={override!r}: must be a positive number of GiB")
    return min(available, cap)


@dataclass(frozen=True)
class PlanInputs:
    """What the planner takes for one model and platform, read once: the spec, its parameters, the
    platform, the options completed from this host and the checkpoint, the support level, the tensors."""

    spec: ModelSpec
    params: ParameterReport
    target: Any  # platforms.Platform
    options: PlanOptions
    support: SupportAnswer
    tensors: dict[str, Any] | None


def plan_inputs(source: ModelSource, options: PlanOptions, platform: str | None = None) -> PlanInputs:
    """The planner's inputs for `source` on `platform` (this host's by default): the options completed with
    this host's cores and memory where the host is the device, the weights' sizes from the safetensors
    headers, the Transformers backend where vLLM has no native implementation, the chat template's
    tool-call parser."""
    spec = load_spec(source.path)
    detected = platforms.detect_platform()
    target = platforms.get_platform(platform or detected)
    params = parameter_report(spec, source)
    if target.host_memory:  # the host is the device: its cores, free memory and preloads plan it
        options = replace(options, cpu_cores=platforms.cpu_cores(), host_available_gib=available_host_memory_gib(),
                          cpu_preload=platforms.cpu_preload_libs())
    elif options.devices_per_node is None and target.name == detected:
        options = replace(options, devices_per_node=platforms.local_device_count(target.name))
    tensors = checkpoint_tensors(source.path)
    if tensors:  # weights sized from the headers' dtypes (a quantized checkpoint is not parameters x dtype)
        options = replace(options, weights=mem.weight_sizing(tensors, spec.tie_word_embeddings))
        params["weight_sizing"] = options.weights.to_dict()
    support = classify(spec, registry_for(target.name)).to_dict()
    if support["vllm"] == TRANSFORMERS_BACKEND:  # say so on the command line rather than rely on vLLM's fallback
        options = replace(options, model_impl="transformers")
    if options.tool_calling is None:  # enabled where the chat template declares tools in a format vLLM parses
        options = replace(options, tool_calling=tool_calling(read_chat_template(source.path)))
    return PlanInputs(spec, params, target, options, support, tensors)


def architecture_support(spec: ModelSpec, platform: str | None = None) -> Support:
    """Whether vLLM on `platform` (this host's by default) serves the architecture: asked before a plan sizes
    anything where an engine would start, since no engine serves an unsupported one whatever its memory."""
    target = platforms.get_platform(platform or platforms.detect_platform())
    return classify(spec, registry_for(target.name))


def run_inspect(source: ModelSource, options: PlanOptions, platform: str | None = None) -> InspectResult:
    """Everything `llm-adapt inspect` prints, as one typed result."""
    inputs = plan_inputs(source, options, platform)
    spec, params, target, options, support, tensors = (inputs.spec, inputs.params, inputs.target, inputs.options,
                                                       inputs.support, inputs.tensors)
    detected = platforms.detect_platform()
    plan = make_plan(spec, params["from_config"], target, options)
    facts = read_facts(source.path, spec, options.trust_remote_code)
    operator_gate = gate_of_model(source.path)
    return InspectResult(
        model={"name": source.name, "path": str(source.path), "origin": source.origin, "given": source.given,
               "has_weights": source.has_weights, "has_tokenizer": source.has_tokenizer},
        architecture=spec.architecture, model_type=spec.model_type, config=config_summary(spec),
        parameters=params,
        weight_bytes={d: mem.weight_bytes(params["from_config"], d) for d in ("fp32", "bf16", "int8")},
        kv_cache_bytes_per_token=mem.kv_bytes_per_token(spec, plan.kv_dtype), kv_dtype=plan.kv_dtype,
        support=support, strategy=decide(spec.architecture, support, None).to_dict(),
        operators=[op.to_dict() for op in operator_inventory(facts, target.name, platforms.cpu_flags())],
        inventory=facts.to_dict(), caveats=caveat_dicts(facts, target.name, platforms.cpu_flags()),
        platform=platform_report(target.name, detected),
        plan=plan, operator_gate=operator_gate,
        gates=planning_gates(load_config(source.path), sorted(tensors or {}), plan.to_dict(),
                             spec.max_position_embeddings, operator_gate, planned=True),
        provenance=provenance_of(source, params.get("weights_by_dtype"),
                                 f"{spec.quant.method} {spec.quant.scheme}" if spec.quant else None),
    )
