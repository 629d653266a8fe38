"""The adapter workflow's gates that need no device, from one owner (inspect/gates.py), shown by
`inspect --platform npu|cuda` on any machine and carried by `inspect --json`."""

import json

import pytest

from llm_adapt.cli import main
from llm_adapt.inspect.gates import capacity_line, gate_lines, planning_gates
from llm_adapt.messages import loaded
from tests.conftest import config_fixture

from .test_gates import plan

NO_CODE = {"applies": False, "reason": "the model ships no code of its own"}


def pool(blocks, block=128, per_token=114688):
    return plan(blocks, block, per_token) | {"platform": "npu", "max_model_len": 4096, "longest_max_model_len": 4096,
                                             "commands": {"graph": "vllm serve m"}}


def test_the_gates_of_a_plan_carry_the_baseline_rows_operator_gate_and_lengths():
    gates = planning_gates({"num_local_experts": 8}, [], pool(16 * 1024 + 1), 131072, NO_CODE)
    assert gates["capacity"]["status"] == "feasible" and gates["platform"] == "npu"
    rows = {r["feature"]: r for r in gates["features"]}
    assert rows["EP"]["status"] == "not verified" and "no weights read" in rows["EP"]["evidence"]
    assert gates["max_model_len"] == {"config": 131072, "planned": 4096, "longest_planned": 4096}
    assert gates["flags_for"] == "vLLM-Ascend v0.23.0.post1" and gates["operators"] is NO_CODE
    served = planning_gates({}, [], pool(10), 8192, NO_CODE, served_mode="graph", served_ok=True)
    assert served["features"][0]["status"] == "supported"  # what a run served changes only the graph row


def test_the_capacity_line_states_the_numbers_and_the_largest_pairs_that_fit():
    short = capacity_line(planning_gates({}, [], pool(3564), 131072, NO_CODE)["capacity"])
    assert short.startswith("capacity baseline 131,072 x 16: not feasible: 16 x 131,072 tokens need 16,384 KV blocks")
    assert "the planned pool holds 3,563" in short
    assert short.endswith("largest that fit: 16 sequences of 28,416 tokens, or 3 of 131,072")
    ok = capacity_line(planning_gates({}, [], pool(16 * 1024 + 1), 131072, NO_CODE)["capacity"])
    assert "feasible: 16,384 KV blocks of 128 needed, the planned pool holds 16,384" in ok
    na = capacity_line(planning_gates({}, [], pool(3564), 8192, NO_CODE)["capacity"])
    assert na.startswith("capacity baseline 131,072 x 16: not applicable: the model's own limit") and "largest" not in na


def test_gate_lines_name_each_row_and_the_operator_gate():
    lines = gate_lines(planning_gates({}, ["model.layers.0.mlp.up_proj.weight"], pool(10), 8192, NO_CODE))
    assert lines[0].startswith("Adapter gates") and "v0.23.0.post1" in lines[0]
    assert any(line.startswith("  EP: not-applicable: dense") for line in lines)
    assert "  operator gate: not applicable: the model ships no code of its own" in lines
    assert lines[-1] == "  max-model-len: config 8,192, planned 4,096 (longest that fits 4,096)"
    blocking = {"applies": True, "kind": "CUDA extension", "conclusion": "blocks"}
    assert "  operator gate: CUDA extension: blocks" in gate_lines(planning_gates({}, [], pool(10), 8192, blocking))


def inspect_json(capsys, tmp_path, name, *argv):
    model = tmp_path / name
    model.mkdir()
    (model / "config.json").write_text(json.dumps(config_fixture(name)))
    assert main(["inspect", str(model), *argv, "--json"]) == 0
    return loaded(json.loads(capsys.readouterr().out))  # as llm-adapt reads a result back


def test_inspect_for_npu_states_the_128k_baseline_of_llama_3b_as_not_feasible(capsys, tmp_path):
    data = inspect_json(capsys, tmp_path, "llama-3.2-3b", "--platform", "npu", "--device-memory", "64")
    cap = data["gates"]["capacity"]
    assert cap["status"] == "not feasible" and cap["feasible"] is False
    # 28 layers x 8 KV heads x 128 x 2 (K, V) x 2 bytes = 114,688 bytes per token; 16 x 131,072 tokens
    assert cap["needed_blocks"] == 16 * 1024 and cap["pool_blocks"] < cap["needed_blocks"]
    assert cap["longest_at_seqs"] < 131072 and cap["seqs_at_length"] < 16
    assert "16 x 131,072 tokens need 16,384 KV blocks of 128" in cap["reasons"][0]
    rows = {r["feature"]: r for r in data["gates"]["features"]}
    assert rows["EP"]["status"] == "not-applicable" and rows["EP"]["evidence"].startswith("dense:")
    assert data["gates"]["max_model_len"]["config"] == 131072
    assert main(["inspect", str(tmp_path / "llama-3.2-3b"), "--platform", "npu", "--device-memory", "64"]) == 0
    out = capsys.readouterr().out
    assert "capacity baseline 131,072 x 16: not feasible: 16 x 131,072 tokens need 16,384 KV blocks" in out


@pytest.mark.parametrize("platform", ["npu", "cuda"])
def test_a_moe_config_is_ep_applicable_and_a_dense_one_is_not_with_evidence(capsys, tmp_path, platform):
    moe = inspect_json(capsys, tmp_path, "deepseek-v2-lite", "--platform", platform, "--device-memory", "64")
    dense = inspect_json(capsys, tmp_path, "qwen3-8b", "--platform", platform, "--device-memory", "64")
    ep = {r["feature"]: r for r in moe["gates"]["features"]}["EP"]
    assert ep["status"] == "not verified" and "n_routed_experts=64" in ep["evidence"]
    assert ep["flag"] == "--enable-expert-parallel" and ep["flag_version"] == "vLLM-Ascend v0.23.0.post1"
    ep = {r["feature"]: r for r in dense["gates"]["features"]}["EP"]
    assert ep["status"] == "not-applicable" and "dense: the config has none of num_experts" in ep["evidence"]
    assert moe["gates"]["operators"]["applies"] is False and moe["gates"]["platform"] == platform
