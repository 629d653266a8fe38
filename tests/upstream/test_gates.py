"""The skill's gates on plain data: the capacity baseline, the feature rows' applicability, the operator gate."""

from llm_adapt.inspect.capacity import capacity_baseline
from llm_adapt.inspect.ascend_features import (FLASHCOMM, MISSING, NOT_APPLICABLE, NOT_VERIFIED, SP, SUPPORTED, UNSUPPORTED,
                                         feature_rows, has_flashcomm, moe_evidence, mtp_evidence, version_label)
from llm_adapt.inspect.operator_gate import CUDA, CUDA_FALLBACK, TORCH, TRITON, classify_source, operator_gate


def plan(blocks, block=128, per_token=23040):
    return {"block_size": block, "kv_cache_blocks": blocks, "kv_bytes_per_token": per_token,
            "kv_pool_bytes": blocks * block * per_token}


def test_128k_at_16_fits_a_pool_of_enough_blocks():
    ok = capacity_baseline(plan(16 * 1024 + 1), 131072)  # 1,024 blocks of 128 per sequence, plus the null block
    assert ok["feasible"] and ok["reasons"] == [] and ok["longest_at_seqs"] == 131072 and ok["seqs_at_length"] == 16


def test_the_baseline_does_not_apply_to_a_model_whose_own_limit_is_under_128k():
    small = capacity_baseline(plan(1456), 8192)  # SmolLM2: 4 GiB of KV, 8,192 positions
    assert small["status"] == "not applicable" and small["feasible"] is None and len(small["reasons"]) == 1
    assert small["reasons"][0] == "the model's own limit (max_position_embeddings) is 8,192 positions, under the baseline's 131,072"
    assert small["longest_at_seqs"] == 8192  # the pool would allow 11,520 per sequence; the model stops at 8,192
    assert small["seqs_at_length"] == 0  # the model cannot reach 128k at all
    big_pool = capacity_baseline(plan(16 * 1024 + 1), 131071)  # a pool that holds it does not make it apply
    assert big_pool["status"] == "not applicable" and big_pool["feasible"] is None


def test_a_model_that_reaches_128k_is_feasible_or_not_by_the_pool():
    ok = capacity_baseline(plan(16 * 1024 + 1), 131072)
    assert ok["status"] == "feasible" and ok["feasible"] is True
    short_pool = capacity_baseline(plan(1456), 163840)  # a 160k model on a 4 GiB pool
    assert short_pool["status"] == "not feasible" and short_pool["feasible"] is False
    assert len(short_pool["reasons"]) == 1 and "16,384 KV blocks" in short_pool["reasons"][0]
    one_short = capacity_baseline(plan(16 * 1024), None)  # exactly the need: the null block is missing
    assert one_short["status"] == "not feasible" and not one_short["feasible"] and one_short["seqs_at_length"] == 15


def test_ep_and_sequence_parallelism_apply_to_moe_only_with_evidence():
    dense, why = moe_evidence({"num_hidden_layers": 2}, ["model.layers.0.mlp.up_proj.weight"])
    assert not dense and "dense" in why and "1 tensors read" in why
    moe, why = moe_evidence({"num_local_experts": 8}, ["model.layers.0.block_sparse_moe.experts.0.w1.weight"])
    assert moe and "num_local_experts=8" in why and "1 expert tensors" in why
    assert moe_evidence({}, ["model.layers.0.mlp.experts.3.down_proj.weight"])[0]  # tensors alone suffice
    rows = {r["feature"]: r for r in feature_rows({"num_hidden_layers": 2}, ["a.weight"], "cpu", "eager", True, "x")}
    assert rows["EP"]["status"] == rows[SP]["status"] == rows[FLASHCOMM]["status"] == NOT_APPLICABLE
    assert rows["multimodal"]["status"] == NOT_APPLICABLE and "text-only" in rows["multimodal"]["evidence"]
    moe_rows = {r["feature"]: r for r in feature_rows({"n_routed_experts": 64}, [], "cpu", "eager", True, "x")}
    assert moe_rows["EP"]["status"] == NOT_VERIFIED and moe_rows["EP"]["flag"] == "--enable-expert-parallel"
    assert moe_rows[SP]["status"] == NOT_VERIFIED and "enable_sp" in moe_rows[SP]["flag"]


def test_flashcomm_is_shown_deprecated_only_where_the_deployed_version_still_has_it():
    # releases up to the 0.26 line carry FlashComm v1; main (a dev build) and later releases do not (#13946)
    assert has_flashcomm(None) and has_flashcomm("0.23.0.post1") and has_flashcomm("v0.26.0rc1")
    assert has_flashcomm("0.13.0")
    assert not has_flashcomm("0.27.0") and not has_flashcomm("0.26.1.dev12+g1234abc") and not has_flashcomm("main")
    moe = {"n_routed_experts": 64}
    old = {r["feature"]: r for r in feature_rows(moe, [], "npu", "eager", True, "x", "0.23.0")}
    assert old[FLASHCOMM]["deprecated"] and "#13946" in old[FLASHCOMM]["deprecated"]
    assert old[FLASHCOMM]["flag"] == "--additional-config '{\"enable_flashcomm1\": true}'"
    assert old[SP]["flag_version"] == old[FLASHCOMM]["flag_version"] == "vLLM-Ascend v0.23.0"
    new = {r["feature"]: r for r in feature_rows(moe, [], "npu", "eager", True, "x", "0.27.0rc1.dev3")}
    assert FLASHCOMM not in new and "allgather_reducescatter" in new[SP]["flag"]
    assert new[SP]["flag_version"] == "vLLM-Ascend main (after #13946)"
    assert [r["feature"] for r in new.values()] == ["ACLGraph", "EP", SP, "MTP", "multimodal"]


def test_every_row_names_the_version_its_flag_applies_to():
    for version, label in ((None, "vLLM-Ascend v0.23.0.post1"), ("v0.26.0rc1", "vLLM-Ascend v0.26.0rc1"),
                           ("0.26.1.dev4", "vLLM-Ascend main (after #13946)")):
        assert version_label(version) == label
        rows = feature_rows({"num_local_experts": 8}, [], "npu", None, None, None, version)
        assert all(r["flag_version"] == label for r in rows), rows


def test_mtp_is_not_applicable_to_an_architecture_without_mtp_layers():
    status, why = mtp_evidence({"num_hidden_layers": 2}, ["model.layers.1.mlp.up_proj.weight"])
    assert status == NOT_APPLICABLE and "has no MTP layers" in why and "num_nextn_predict_layers" in why
    assert mtp_evidence({"num_hidden_layers": 2, "num_nextn_predict_layers": 0}, [])[0] == NOT_APPLICABLE
    for tensors in ([], ["model.layers.0.mlp.up_proj.weight"]):  # a dense Llama, read or not
        rows = {r["feature"]: r for r in feature_rows({"num_hidden_layers": 2}, tensors, "npu", "eager", True, "x")}
        assert rows["MTP"]["status"] == NOT_APPLICABLE, rows["MTP"]


def test_mtp_applies_to_an_mtp_architecture_and_is_missing_only_where_its_checkpoint_lacks_the_layers():
    deepseek = {"num_nextn_predict_layers": 1, "num_hidden_layers": 61}
    assert mtp_evidence(deepseek, ["model.layers.61.eh_proj.weight"])[0] == NOT_VERIFIED  # the layer past the stack
    status, why = mtp_evidence(deepseek, [])
    assert status == NOT_VERIFIED and "no weights were read" in why
    status, why = mtp_evidence(deepseek, ["model.layers.0.mlp.up_proj.weight", "lm_head.weight"])
    assert status == MISSING and "num_nextn_predict_layers=1" in why and "none of the checkpoint's 2 tensors" in why
    assert mtp_evidence({"model_type": "qwen3_next", "num_hidden_layers": 48}, ["mtp.fc.weight"])[0] == NOT_VERIFIED
    assert mtp_evidence({"model_type": "qwen3_next", "num_hidden_layers": 48}, ["a.weight"])[0] == MISSING
    assert mtp_evidence({"num_hidden_layers": 2}, ["model.layers.2.eh_proj.weight"])[0] == NOT_VERIFIED  # tensors alone
    rows = {r["feature"]: r for r in feature_rows(deepseek, ["model.layers.0.mlp.up_proj.weight"], "npu", "eager",
                                                   True, "x")}
    assert rows["MTP"]["status"] == MISSING and rows["MTP"]["flag"].startswith("--speculative-config")
    rows = {r["feature"]: r for r in feature_rows({"text_config": {"mtp_num_hidden_layers": 1}}, [], "cpu", "eager",
                                                   True, "x")}
    assert rows["MTP"]["status"] == NOT_VERIFIED and "mtp_num_hidden_layers=1" in rows["MTP"]["evidence"]


def test_graph_row_is_measured_only_when_graph_mode_served():
    graph = {r["feature"]: r for r in feature_rows({}, [], "cpu", "graph", True, "vllm serve ...")}["ACLGraph"]
    assert graph["status"] == SUPPORTED and "torch.compile" in graph["evidence"]
    failed = feature_rows({}, [], "npu", "graph", False, None)[0]
    assert failed["status"] == UNSUPPORTED and failed["platform_name"] == "ACLGraph"
    eager = feature_rows({}, [], "cuda", "eager", True, "vllm serve m")[0]
    assert eager["status"] == NOT_VERIFIED and "--graph" in eager["evidence"] and eager["command"] == "vllm serve m"


CUDA_EXT = """
import torch
from torch.utils.cpp_extension import load_inline
kernel = load_inline(name="k", cpp_sources="", cuda_sources="__global__ void f() {}")
"""
GUARDED = """
try:
    from flash_attn import flash_attn_func
except ImportError:
    flash_attn_func = None
"""
TRITON_CODE = """
import triton
import triton.language as tl

@triton.jit
def add(x, y):
    pass
"""


def test_each_kind_of_custom_operator_is_named_with_its_line():
    assert classify_source("m.py", "import torch\nx = torch.ones(2)\n").kind == TORCH
    ext = classify_source("m.py", CUDA_EXT)
    assert ext.kind == CUDA and any("load_inline" in e for e in ext.evidence)
    assert classify_source("m.py", "import flash_attn\n").kind == CUDA
    assert classify_source("m.py", GUARDED).kind == CUDA_FALLBACK
    tri = classify_source("m.py", TRITON_CODE)
    assert tri.kind == TRITON and any("triton.jit" in e for e in tri.evidence)


def test_the_gate_blocks_on_the_worst_file_and_does_not_apply_without_code():
    gate = operator_gate({"modeling_x.py": TRITON_CODE, "ops.py": CUDA_EXT})
    assert gate["blocking"] and gate["kind"] == CUDA and "blocks" in gate["conclusion"]
    assert operator_gate({"modeling_x.py": GUARDED})["blocking"] is False
    assert operator_gate({}, ["kernel.cu"])["kind"] == CUDA
    assert operator_gate({})["applies"] is False


def test_inspect_flags_a_remote_code_model_with_a_cuda_extension_as_blocking(tiny_llama, tmp_path):
    import json
    import shutil

    from llm_adapt.inspect.plan import PlanOptions
    from llm_adapt.inspect.stage import run_inspect
    from llm_adapt.models.source import resolve_model

    model = tmp_path / "remote"
    model.mkdir()
    for name in ("config.json", "tokenizer.json", "tokenizer_config.json"):
        if (tiny_llama / name).exists():
            shutil.copy2(tiny_llama / name, model / name)
    config = json.loads((model / "config.json").read_text())
    config["auto_map"] = {"AutoModelForCausalLM": "modeling_x.XForCausalLM"}
    (model / "config.json").write_text(json.dumps(config))
    (model / "modeling_x.py").write_text(CUDA_EXT + TRITON_CODE)
    source = resolve_model(str(model))
    result = run_inspect(source, PlanOptions(model_path=str(model), served_model_name="x", kv_cache_space_gib=1), "cpu")
    gate = result.operator_gate
    assert gate["applies"] and gate["blocking"] and gate["files"][0]["file"] == "modeling_x.py"
    plain = run_inspect(resolve_model(str(tiny_llama)), PlanOptions(model_path=str(tiny_llama), served_model_name="t",
                                                                    kv_cache_space_gib=1), "cpu")
    assert plain.operator_gate["applies"] is False


def test_feature_evidence_keeps_its_english_and_renders_in_chinese():
    import re

    from llm_adapt.messages import message

    dense = feature_rows({"num_hidden_layers": 2}, ["model.layers.0.mlp.up_proj.weight"], "cpu", "eager", True, "cmd")
    moe = feature_rows({"num_local_experts": 8, "num_hidden_layers": 2},
                       ["model.layers.0.block_sparse_moe.experts.0.w1.weight"], "cpu", "graph", False, "cmd")
    by = {r["feature"]: r["evidence"] for r in dense}
    assert by["EP"] == ("dense: the config has none of num_experts, n_routed_experts, num_local_experts, moe_num_experts "
                        "and the checkpoint has no expert tensors (1 tensors read)")
    assert by["ACLGraph"] == "this run served eager (--enforce-eager); `run --graph` serves torch.compile and checks it"
    assert {r["feature"]: r["evidence"] for r in moe}["EP"] == (
        "MoE: num_local_experts=8; 1 expert tensors in the checkpoint; needs an Ascend NPU and vLLM-Ascend to verify")
    for row in dense + moe:
        zh = re.sub(r"`[^`]*`|\b\w*_\w*\b", "", message(row["evidence"], "zh"))  # code, config keys
        assert not re.search(r"[A-Za-z]+ [A-Za-z]+ [A-Za-z]+", zh), zh  # no English sentence left
        assert re.search(r"[\u4e00-\u9fff]", zh), zh
