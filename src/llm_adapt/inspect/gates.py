"""The vLLM-Ascend adapter workflow's gates that need no device: the 128k x 16 capacity baseline, the
feature rows' applicability with evidence, the operator gate and max-model-len. One owner for both
`inspect` (planning for a platform from any machine) and `run` (its adaptation stage adds what the run
served). Pure: the inputs are the model's config and tensor names, the deployment plan and the operator
gate already read.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import ConfigDict, with_config
from typing_extensions import TypedDict  # pydantic validates typing's TypedDict from Python 3.12 only

from llm_adapt import rundir
from llm_adapt.inspect.ascend_features import FeatureRow, feature_rows, version_label
from llm_adapt.inspect.capacity import NOT_APPLICABLE, Capacity, PlanFigures, capacity_baseline
from llm_adapt.inspect.operator_gate import OperatorGate
from llm_adapt.models.config_json import ConfigJson
from llm_adapt.results import StageResult


class PlanForGates(PlanFigures):
    """What the gates read of a plan (DeployPlan.to_dict() holds these and more)."""
    platform: str
    max_model_len: int
    longest_max_model_len: int | None
    commands: dict[str, str]


@with_config(ConfigDict(extra="allow"))
class MaxModelLen(TypedDict, total=False):
    """Both figures the skill asks for: the config's, the plan's (and the longest that fits), the engine's."""
    config: int | None
    planned: int | None
    longest_planned: int | None
    served: int | None  # as the engine logged it (adaptation.json only)


@with_config(ConfigDict(extra="allow"))
class Gates(TypedDict, total=False):
    """planning_gates: the gates for one plan ({} in an inspect.json written before them)."""
    platform: str
    flags_for: str
    capacity: Capacity
    features: list[FeatureRow]
    operators: OperatorGate
    max_model_len: MaxModelLen


def planning_gates(config: ConfigJson, tensor_names: list[str], plan: PlanForGates,
                   max_position_embeddings: int | None, operators: OperatorGate, *, version: str | None = None,
                   served_mode: str | None = None, served_ok: bool | None = None, planned: bool = False) -> Gates:
    """The gates for `plan` (DeployPlan.to_dict()). `version`: the vLLM-Ascend deployed (None: the
    release a plan targets); `served_mode` / `served_ok`: what a run served, when it served; `planned`:
    a plan no run has tried (`inspect`)."""
    platform = plan["platform"]
    return {
        "platform": platform,
        "flags_for": version_label(version),
        "capacity": capacity_baseline(plan, max_position_embeddings),
        "features": feature_rows(config, tensor_names, platform, served_mode, served_ok,
                                 plan.get("commands", {}).get("graph"), version, planned),
        "operators": operators,
        "max_model_len": {"config": max_position_embeddings, "planned": plan.get("max_model_len"),
                          "longest_planned": plan.get("longest_max_model_len")},
    }


def capacity_line(capacity: Capacity) -> str:
    """The baseline in one line, with its numbers and the largest pairs that fit. Pure."""
    c = capacity
    head = f"capacity baseline {c['length']:,} x {c['seqs']}: {c['status']}"
    if c["status"] == NOT_APPLICABLE:
        return f"{head}: {'; '.join(c['reasons'])}"
    fits = (f"largest that fit: {c['seqs']} sequences of {c['longest_at_seqs']:,} tokens, "
            f"or {c['seqs_at_length']:,} of {c['length']:,}")
    if c["reasons"]:
        return f"{head}: {'; '.join(c['reasons'])}; {fits}"
    return (f"{head}: {c['needed_blocks']:,} KV blocks of {c['block_size']} needed, the planned pool holds "
            f"{c['pool_blocks']:,} besides vLLM's null block; {fits}")


def gate_lines(gates: Gates) -> list[str]:
    """What `inspect` prints of the gates: one line each. Pure."""
    lines = [f"Adapter gates (vLLM-Ascend's model-adapter workflow, judged on this plan without a device; "
             f"flags for {gates['flags_for']}):",
             f"  {capacity_line(gates['capacity'])}"]
    for row in gates["features"]:
        flag = f" [{row['flag']}]" if row.get("flag") and row["status"] != "not-applicable" else ""
        lines.append(f"  {row['feature']}: {row['status']}: {row['evidence']}{flag}")
    op = gates["operators"]
    lines.append(f"  operator gate: {op['kind']}: {op['conclusion']}" if op.get("applies")
                 else f"  operator gate: not applicable: {op.get('reason', 'no code of its own')}")
    m = gates["max_model_len"]
    lines.append(f"  max-model-len: config {_n(m['config'])}, planned {_n(m['planned'])} "
                 f"(longest that fits {_n(m['longest_planned'])})")
    return lines


def _n(value: Any) -> str:
    return f"{value:,}" if isinstance(value, int) else "not known"


@with_config(ConfigDict(extra="allow"))
class StageFacts(TypedDict, total=False):
    """What one stage's results show (upstream/adaptation.stage_facts): None where it cannot show it."""
    weights: str
    engine_starts: bool | None
    startup_seconds: float | None
    kv_as_planned: bool | None
    first_request: bool | None
    first_request_evidence: str | None
    api_features: str | None
    checkpoint_loads: bool | None
    served_accuracy: str | None
    in_process_accuracy: str | None


@with_config(ConfigDict(extra="allow"))
class MatrixRow(TypedDict):
    """One row of the dummy-vs-real matrix: what each stage showed, and whether only real weights can."""
    row: str
    dummy: bool | float | str | None
    real: bool | float | str | None
    real_only: bool


@with_config(ConfigDict(extra="allow"))
class DummyVsReal(TypedDict):
    """A run with a dummy-weight stage first: each stage's facts, the matrix, where the dummy stage's results are."""
    dummy: StageFacts
    real: StageFacts
    rows: list[MatrixRow]
    dummy_dir: str


class AdaptationResult(StageResult):
    """adaptation.json: the run held against the adapter workflow (upstream/adaptation.build writes it)."""

    KIND: ClassVar[str] = "adaptation"
    FILE: ClassVar[str | None] = rundir.ADAPTATION

    model: str
    platform: str
    features: list[FeatureRow]
    capacity: Capacity
    operators: OperatorGate
    false_ready: dict[str, Any] | None = None
    max_model_len: MaxModelLen = {}
    stages: DummyVsReal | None = None
    # a differential run's checks of tensor parallel, expert parallel and graph mode (upstream/setting_checks.py)
    setting_checks: dict[str, Any] = {}
