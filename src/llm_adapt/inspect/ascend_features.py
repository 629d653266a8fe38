"""The skill's feature rows (ACLGraph, EP, sequence parallelism, MTP, multimodal; FlashComm v1 where the
deployed vLLM-Ascend still has it, marked deprecated), each with its status, the evidence behind it, the
flag that turns it on and the vLLM-Ascend version that flag applies to. Not-applicable only with evidence:
from the config keys and the checkpoint's tensor names, never assumed. Pure given those inputs.

Statuses follow the skill's legend (multimodal-ep-aclgraph-lessons.md §6): supported (verified),
unsupported (framework-level), checkpoint-missing (the weights or config do not provide it),
not-applicable (e.g. EP on a dense model), and "not verified" where this run did not try it (with the
reason and the command that would).

FlashComm v1 was removed on vLLM-Ascend main by #13946 (commit 92616f3a64, in no release tag yet;
tests/fixtures/upstream/SOURCE.md): sequence parallelism replaces it, and main's ascend_config.py only
warns "FlashComm is deprecated". The releases up to the 0.26 line still carry it.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import ConfigDict, with_config
from typing_extensions import TypedDict  # pydantic validates typing's TypedDict from Python 3.12 only

from llm_adapt.messages import reason
from llm_adapt.messages.core import Said
from llm_adapt.models.config_json import ConfigJson


@with_config(ConfigDict(extra="allow"))
class FeatureRow(TypedDict, total=False):
    """One feature's row, as adaptation.json and inspect.json's gates hold it."""
    feature: str
    status: str  # SUPPORTED, UNSUPPORTED, MISSING, NOT_APPLICABLE or NOT_VERIFIED
    evidence: Said
    flag: str | None  # the flag that turns it on (None: on unless --enforce-eager)
    flag_version: str
    source: str
    platform_name: str  # the graph row: the platform's name for graph mode
    command: str | None  # the graph row: the command that serves it
    deprecated: str  # FlashComm v1, where the deployed version still has it
    setting_check: Said  # a differential run's check of the feature (upstream/setting_checks.with_checks)


SUPPORTED, UNSUPPORTED, MISSING, NOT_APPLICABLE, NOT_VERIFIED = (
    "supported", "unsupported", "checkpoint-missing", "not-applicable", "not verified")

# The vLLM-Ascend release on PyPI a plan targets when no deployed version is known (0.23.0.post1, cut from
# tag v0.23.0, which pins vLLM v0.23.0).
ASCEND_RELEASE = "0.23.0.post1"
ASCEND_RELEASE_VLLM = "0.23.0"  # the vLLM it pins (tag v0.23.0: docs/source/conf.py, .github/vllm-release-tag.commit)
MAIN = "main"  # a development build: main's flags (after #13946)
FLASHCOMM_LAST_LINE = (0, 26)  # the v0.26.0rc branch still carries FlashComm1 (#14513); main has none
FLASHCOMM_REMOVED = "removed on vLLM-Ascend main by #13946"
FLASHCOMM_STILL_HERE = "still in this release; " + FLASHCOMM_REMOVED  # a file for main shows no such row
SP, FLASHCOMM = "sequence parallelism", "flashcomm1 (deprecated)"

# vLLM-Ascend v0.23.0 documentation pages the flags come from
DOCS = {
    "graph": "vLLM-Ascend v0.23.0 docs: user_guide/feature_guide/graph_mode (ACLGraph is on unless --enforce-eager)",
    "ep": "vLLM-Ascend v0.23.0 docs: user_guide/feature_guide/large_scale_ep (--enable-expert-parallel)",
    "sp": "vLLM-Ascend v0.23.0 docs: user_guide/feature_guide/sequence_parallelism (pass_config enable_sp)",
    "sp_main": "vLLM-Ascend main docs: user_guide/feature_guide/sequence_parallelism (#13946: vLLM's own SP, "
               "with DP>1, TP>1 and the allgather_reducescatter all2all backend)",
    "flashcomm1": "vLLM-Ascend v0.23.0 docs: user_guide/configuration/additional_config (enable_flashcomm1); "
                  + FLASHCOMM_REMOVED,
    "mtp": "vLLM-Ascend v0.23.0 docs: user_guide/feature_guide/speculative_decoding (Speculating using MTP)",
    "multimodal": "vLLM-Ascend v0.23.0 docs: tutorials of the VL models (--limit-mm-per-prompt)",
}
FLAGS = {
    "ep": "--enable-expert-parallel",
    "sp": "--tensor-parallel-size N --compilation-config '{\"pass_config\": {\"enable_sp\": true}}'",
    "sp_main": "--tensor-parallel-size N --data-parallel-size M --all2all-backend allgather_reducescatter",
    "flashcomm1": "--additional-config '{\"enable_flashcomm1\": true}'",
    "mtp": "--speculative-config '{\"method\": \"mtp\", \"num_speculative_tokens\": 1}'",
    "multimodal": "--limit-mm-per-prompt '{\"image\": 1}'",
}
EXPERT_KEYS = ("num_experts", "n_routed_experts", "num_local_experts", "moe_num_experts")
MTP_KEYS = ("num_nextn_predict_layers", "mtp_num_hidden_layers", "num_mtp_layers", "mtp_num_layers")
# Architectures with MTP layers and no config key for them (vLLM 0.32 config/speculative.py: qwen3_next ->
# qwen3_next_mtp, one layer by default).
MTP_MODEL_TYPES = ("qwen3_next",)
VISION_KEYS = ("vision_config", "audio_config", "visual", "vision_tower", "image_token_id", "image_token_index")
EXPERT_TENSOR = re.compile(r"\.(experts|block_sparse_moe)\.")
MTP_TENSOR = re.compile(r"(^|\.)(mtp|nextn|eh_proj|enorm|hnorm)(\.|_|$)")


def _text_config(config: ConfigJson) -> ConfigJson:
    return config.get("text_config") or config


def moe_evidence(config: ConfigJson, tensor_names: list[str]) -> tuple[bool, str]:
    text = _text_config(config)
    keys = {k: text[k] for k in EXPERT_KEYS if isinstance(text.get(k), int) and text[k] > 0}
    experts = [n for n in tensor_names if EXPERT_TENSOR.search(n)]
    if keys or experts:
        found = ", ".join(f"{k}={v}" for k, v in keys.items()) or reason("ev_no_expert_count")
        if not tensor_names:
            return True, reason("ev_moe_unread", found=found)
        return True, reason("ev_moe", found=found, experts=len(experts))
    if tensor_names:
        return False, reason("ev_dense", keys=", ".join(EXPERT_KEYS), tensors=len(tensor_names))
    return False, reason("ev_dense_no_weights", keys=", ".join(EXPERT_KEYS))


def mtp_evidence(config: ConfigJson, tensor_names: list[str]) -> tuple[str, str]:
    """The MTP row's status and evidence. An architecture has MTP layers when its config counts them
    (MTP_KEYS > 0: DeepSeek-V3, GLM-4.5, MiMo), its model type has them (MTP_MODEL_TYPES: Qwen3-Next) or
    its checkpoint holds MTP tensors. Not verified (it applies) when the checkpoint has them or no weights
    were read; checkpoint-missing when an MTP architecture's checkpoint lacks them; not applicable when
    the architecture has none."""
    text = _text_config(config)
    keys = {k: text[k] for k in MTP_KEYS if isinstance(text.get(k), int) and text[k] > 0}
    model_type = next((t for t in (text.get("model_type"), config.get("model_type")) if t in MTP_MODEL_TYPES), None)
    layers = text.get("num_hidden_layers")
    tensors = [n for n in tensor_names if MTP_TENSOR.search(n) or _past_stack(n, layers)]
    if not (keys or model_type or tensors):
        return NOT_APPLICABLE, reason("ev_no_mtp", keys=", ".join(MTP_KEYS))
    found = (", ".join(f"{k}={v}" for k, v in keys.items()) or (f"model_type={model_type}" if model_type else None)
             or reason("ev_no_mtp_key"))
    if tensors:
        return NOT_VERIFIED, reason("ev_mtp", found=found, tensors=len(tensors))
    if not tensor_names:
        return NOT_VERIFIED, reason("ev_mtp_unread", found=found)
    return MISSING, reason("ev_mtp_missing", found=found, tensors=len(tensor_names))


def _past_stack(name: str, layers: Any) -> bool:
    """A tensor of a layer past num_hidden_layers (DeepSeek-V3 keeps its MTP layer as layer 61 of 61)."""
    index = _layer_index(name)
    return isinstance(layers, int) and index is not None and index >= layers


def _layer_index(name: str) -> int | None:
    found = re.search(r"\.layers\.(\d+)\.", name)
    return int(found.group(1)) if found else None


def multimodal_evidence(config: ConfigJson) -> tuple[bool, str]:
    keys = [k for k in VISION_KEYS if config.get(k) is not None]
    if keys:
        return True, reason("ev_multimodal", keys=", ".join(keys))
    return False, reason("ev_text_only", keys=", ".join(VISION_KEYS))


def version_line(version: str | None) -> tuple[int, int] | None:
    """(major, minor) of a vLLM-Ascend release ("0.23.0.post1", "v0.26.0rc1"); None for main or a
    development build ("0.26.1.dev12+g...", "main"), whose flags are main's. Pure."""
    text = (version or ASCEND_RELEASE).strip().lower()
    found = re.match(r"^v?(\d+)\.(\d+)", text)
    if not found or "dev" in text:
        return None
    return int(found.group(1)), int(found.group(2))


def has_flashcomm(version: str | None) -> bool:
    """Whether this vLLM-Ascend version still has FlashComm v1 (None: the release a plan targets). Pure."""
    line = version_line(version)
    return line is not None and line <= FLASHCOMM_LAST_LINE


def version_label(version: str | None) -> str:
    """The version a flag applies to, as a row names it."""
    line = version_line(version)
    if line is None:
        return f"vLLM-Ascend {MAIN} (after #13946)"
    text = (version or ASCEND_RELEASE).strip()
    return f"vLLM-Ascend {text if text.startswith('v') else 'v' + text}"


def graph_row(platform: str, served_mode: str | None, served_ok: bool | None, graph_command: str | None,
              version: str | None = None, planned: bool = False) -> FeatureRow:
    """Graph mode (ACLGraph on NPU, CUDA graphs on CUDA, torch.compile on CPU): supported when this run
    served in graph mode and answered; not verified when it served eager (the command that would)."""
    from llm_adapt.platforms import PLATFORMS

    name = PLATFORMS[platform].graph_name if platform in PLATFORMS else "graph mode"
    row: FeatureRow = {"feature": "ACLGraph", "platform_name": name, "source": DOCS["graph"], "command": graph_command,
           "flag": None, "flag_version": version_label(version)}  # on unless --enforce-eager: no flag of its own
    if served_mode == "graph":
        return row | {"status": SUPPORTED if served_ok else UNSUPPORTED,
                      "evidence": reason("ev_graph_answered" if served_ok else "ev_graph_silent", name=name)}
    why = reason("ev_graph_eager" if served_mode == "eager" else "ev_graph_planned" if planned else "ev_graph_no_engine",
                 name=name)
    return row | {"status": NOT_VERIFIED, "evidence": why}


def feature_rows(config: ConfigJson, tensor_names: list[str], platform: str, served_mode: str | None,
                 served_ok: bool | None, graph_command: str | None, version: str | None = None,
                 planned: bool = False) -> list[FeatureRow]:
    """The rows for the vLLM-Ascend `version` deployed (None: the release a plan targets, ASCEND_RELEASE).
    EP and sequence parallelism (and FlashComm v1, which it replaces) apply to MoE models only; MTP only
    to an architecture with MTP layers (checkpoint-missing where its checkpoint lacks them); multimodal
    only with a vision or audio part. A row that applies but needs an Ascend device this run did not
    have reads "not verified", with its flag. FlashComm v1 appears only where `version` still has it,
    marked deprecated. `planned`: rows of a plan (`inspect`), which no run has tried yet."""
    moe, moe_ev = moe_evidence(config, tensor_names)
    mtp, mtp_ev = mtp_evidence(config, tensor_names)
    mm, mm_ev = multimodal_evidence(config)
    device = reason("ev_needs_ascend" if platform != "npu" else "ev_planned_only" if planned else "ev_not_exercised")
    label = version_label(version)
    old = has_flashcomm(version)

    def row(feature: str, key: str, applies: bool, evidence, absent_status: str, flag: str | None = None) -> FeatureRow:
        status = NOT_VERIFIED if applies else absent_status
        text = reason("ev_to_verify", evidence=evidence, device=device) if applies else evidence
        return {"feature": feature, "status": status, "evidence": text, "flag": FLAGS[flag or key],
                "flag_version": label, "source": DOCS[flag or key]}

    rows = [graph_row(platform, served_mode, served_ok, graph_command, version, planned),
            row("EP", "ep", moe, moe_ev, NOT_APPLICABLE),
            row(SP, "sp", moe, moe_ev, NOT_APPLICABLE, flag="sp" if old else "sp_main")]
    if old:  # the deployed version still has it: shown, and marked deprecated in favour of the row above
        rows.append(row(FLASHCOMM, "flashcomm1", moe, moe_ev, NOT_APPLICABLE) | {"deprecated": FLASHCOMM_STILL_HERE})
    return rows + [row("MTP", "mtp", mtp == NOT_VERIFIED, mtp_ev, mtp),
                   row("multimodal", "multimodal", mm, mm_ev, NOT_APPLICABLE)]
