"""The tutorial's section 2 table in the template's own columns (vLLM-Ascend's
docs/source/_templates/Model-Deployment-Tutorial-Template.md, "Example 1: Feature Support List"), one cell per
column from this run's evidence. Pure.

A cell is one of four words: "✅" (this run served it on an NPU and it answered), "❌" (the engine refused it or
it failed), "to verify" (it applies to this model and no NPU run has tried it yet) or "n/a" (it does not apply:
the evidence is in the features table below it). Nothing is claimed for a feature no NPU run exercised: a
planned deployment has no ✅ at all.
"""

from __future__ import annotations

from typing import Any

from llm_adapt.inspect.ascend_features import NOT_APPLICABLE, SUPPORTED, UNSUPPORTED, FeatureRow

# The template's header, in its order (the template's "Example 1: Feature Support List").
COLUMNS = ("Model Name", "Support Status", "Remarks", "BF16", "Supported Hardware", "W8A8", "Chunked Prefill",
           "Automatic Prefix Caching", "LoRA", "Speculative Decoding", "Asynchronous Scheduling",
           "Tensor Parallelism", "Pipeline Parallelism", "Expert Parallelism", "Data Parallelism",
           "Prefill-Decode Separation", "Segmented ACL Graph Execution", "Full ACL Graph Execution",
           "Max Model Length", "Documentation")
VERIFIED, FAILED, TO_VERIFY, NA = "✅", "❌", "to verify", "n/a"
LEGEND = {VERIFIED: "served on an NPU by this validation, and it answered",
          FAILED: "refused or failed on an NPU in this validation",
          TO_VERIFY: "applies to this model; no NPU run has tried it yet",
          NA: "does not apply to this model (the evidence is in the table below)"}


def _status_cell(status: str | None, on_npu: bool) -> str:
    """A feature row's status as a cell: supported only counts where an NPU served it."""
    if status == NOT_APPLICABLE:
        return NA
    if status == UNSUPPORTED and on_npu:
        return FAILED
    return VERIFIED if status == SUPPORTED and on_npu else TO_VERIFY


def _check_cell(check: dict[str, Any] | None, on_npu: bool) -> str | None:
    """A differential run's check of a setting (upstream/setting_checks), where one ran on an NPU."""
    if not check or not on_npu:
        return None
    return VERIFIED if check.get("status") in ("PASS", "WARN") else FAILED


def cells(model: str, rows: list[FeatureRow], plan: Any, *, on_npu: bool, served: bool, remark: str,
          hardware: str, quantization: str | None, setting_checks: dict[str, Any], doc_link: str,
          tp_checked: str | None = None) -> dict[str, str]:
    """The template's columns for this model. `on_npu`: the run served on an NPU (not planned);
    `served`: its engine started and answered. `plan` is the NPU deployment (DeployPlan). `tp_checked`: the
    words of a tensor-parallel check made off an NPU, said beside "to verify" (it verifies nothing there)."""
    status = {r["feature"]: r.get("status") for r in rows}
    ran = on_npu and served
    dtype = str(plan.dtype).lower()
    bf16 = (VERIFIED if ran else TO_VERIFY) if dtype in ("bf16", "bfloat16") else NA
    w8a8 = (VERIFIED if ran else TO_VERIFY) if (quantization or "").lower() in ("w8a8", "ascend") else TO_VERIFY
    tp_check = _check_cell(setting_checks.get("tp"), on_npu)
    tp = tp_check or (VERIFIED if ran and plan.tensor_parallel > 1 else TO_VERIFY)
    if tp == TO_VERIFY and tp_checked:
        tp = f"{TO_VERIFY} ({tp_checked})"
    ep = _check_cell(setting_checks.get("ep"), on_npu) or _status_cell(status.get("EP"), ran)
    graph = _check_cell(setting_checks.get("graph"), on_npu) or _status_cell(status.get("ACLGraph"), ran)
    spec = _status_cell(status.get("MTP"), ran)
    return {"Model Name": model, "Support Status": VERIFIED if ran else TO_VERIFY, "Remarks": remark,
            "BF16": bf16, "Supported Hardware": hardware, "W8A8": w8a8,
            # on by default in vLLM's V1 engine: a served run has them on, but only a run that checks them verifies
            "Chunked Prefill": TO_VERIFY, "Automatic Prefix Caching": TO_VERIFY, "LoRA": TO_VERIFY,
            "Speculative Decoding": TO_VERIFY if spec == NA else spec, "Asynchronous Scheduling": TO_VERIFY,
            "Tensor Parallelism": tp, "Pipeline Parallelism": TO_VERIFY, "Expert Parallelism": ep,
            "Data Parallelism": TO_VERIFY, "Prefill-Decode Separation": TO_VERIFY,
            "Segmented ACL Graph Execution": graph, "Full ACL Graph Execution": TO_VERIFY,
            "Max Model Length": f"{plan.max_model_len:,}", "Documentation": doc_link}


def used_words(row: dict[str, str]) -> list[str]:
    """The legend entries the row uses, in LEGEND's order."""
    return [word for word in LEGEND if word in row.values()]
