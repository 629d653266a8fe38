"""Parameter accounting: the formula against published totals, and every difference named."""

import pytest

from llm_adapt.inspect.accounting import Group, canonical_name, expected_groups, reconcile, weight_groups
from llm_adapt.inspect.memory import parameter_breakdown
from llm_adapt.models.spec import spec_from_config
from tests.conftest import config_fixture

# Published parameter counts as the model pages show them (safetensors metadata, rounded to 3 significant
# digits): Qwen/Qwen2.5-7B-Instruct 7.62B, Qwen/Qwen3-8B 8.19B, google/gemma-2-9b 9.24B,
# mistralai/Mistral-7B-v0.3 7.25B, deepseek-ai/DeepSeek-V2-Lite 15.7B. Tolerance: half a unit of the
# last published digit. The exact totals are the sums of the checkpoints' safetensors headers as the
# model pages list them.
PUBLISHED = {
    "qwen2.5-7b-instruct": (7.62e9, 0.005e9, 7_615_616_512),
    "qwen3-8b": (8.19e9, 0.005e9, 8_190_735_360),
    "gemma-2-9b": (9.24e9, 0.005e9, 9_241_705_984),
    "mistral-7b-v0.3": (7.25e9, 0.005e9, 7_248_023_552),
    "deepseek-v2-lite": (15.7e9, 0.05e9, 15_706_484_224),
}


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_formula_matches_published_totals(name):
    rounded, tolerance, exact = PUBLISHED[name]
    total = parameter_breakdown(spec_from_config(config_fixture(name))).total
    assert abs(total - rounded) <= tolerance
    assert total == exact


def test_llama_layout_is_unchanged():
    assert parameter_breakdown(spec_from_config(config_fixture("llama-3.1-8b"))).total == 8_030_261_248


def test_family_details_change_the_formula():
    names = {g.name for g in expected_groups(spec_from_config(config_fixture("qwen2.5-7b-instruct")))}
    assert {"layers.{L}.self_attn.q_proj.bias", "layers.{L}.self_attn.v_proj.bias"} <= names
    assert "layers.{L}.self_attn.o_proj.bias" not in names and "lm_head.weight" in names
    gemma = {g.name for g in expected_groups(spec_from_config(config_fixture("gemma-2-9b")))}
    assert "layers.{L}.pre_feedforward_layernorm.weight" in gemma and "lm_head.weight" not in gemma  # tied
    qwen3 = {g.name for g in expected_groups(spec_from_config(config_fixture("qwen3-8b")))}
    assert "layers.{L}.self_attn.k_norm.weight" in qwen3
    ds = {g.name: g for g in expected_groups(spec_from_config(config_fixture("deepseek-v2-lite")))}
    assert ds["layers.{L}.mlp.gate_proj.weight"].tensors == 1  # only layer 0 is dense
    assert ds["layers.{L}.mlp.experts"].tensors == 26 * 64 * 3
    assert "layers.{L}.self_attn.kv_b_proj.weight" in ds


def test_checkpoint_spellings_fold_onto_the_formula_names():
    assert canonical_name("model.layers.7.self_attn.q_proj.bias") == "layers.{L}.self_attn.q_proj.bias"
    assert canonical_name("model.layers.0.block_sparse_moe.experts.3.w1.weight") == "layers.{L}.mlp.experts"
    assert canonical_name("model.layers.0.block_sparse_moe.gate.weight") == "layers.{L}.mlp.gate.weight"
    assert canonical_name("lm_head.weight") == "lm_head.weight"


def _checkpoint(layers=2, bias=True, extra_norms=False):
    shapes = {"model.embed_tokens.weight": [100, 8], "model.norm.weight": [8], "lm_head.weight": [100, 8]}
    for i in range(layers):
        p = f"model.layers.{i}."
        for proj in ("q", "k", "v", "o"):
            shapes[p + f"self_attn.{proj}_proj.weight"] = [8, 8]
            if bias and proj != "o":
                shapes[p + f"self_attn.{proj}_proj.bias"] = [8]
        for proj, shape in (("gate", [16, 8]), ("up", [16, 8]), ("down", [8, 16])):
            shapes[p + f"mlp.{proj}_proj.weight"] = shape
        norms = ("input", "post_attention") + (("pre_feedforward", "post_feedforward") if extra_norms else ())
        for norm in norms:
            shapes[p + f"{norm}_layernorm.weight"] = [8]
    return shapes


def _spec(**changes):
    cfg = {"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": 8, "intermediate_size": 16,
           "num_hidden_layers": 2, "num_attention_heads": 2, "num_key_value_heads": 2, "vocab_size": 100,
           "tie_word_embeddings": False}
    return spec_from_config(cfg | changes)


def test_a_clean_checkpoint_agrees():
    result = reconcile(expected_groups(_spec()), weight_groups(_checkpoint()))
    assert result.agree and result.warnings() == []
    assert result.by_role["attention"]["config"] == result.by_role["attention"]["weights"] == 2 * (4 * 64 + 24)


def test_biases_the_formula_did_not_expect_are_named():
    llama_formula = expected_groups(_spec(model_type="llama", architectures=["LlamaForCausalLM"]))
    result = reconcile(llama_formula, weight_groups(_checkpoint()))
    assert not result.agree and result.from_weights - result.from_config == 2 * 24
    assert [g.name for g in result.unexpected] == [f"layers.{{L}}.self_attn.{p}_proj.bias" for p in "kqv"]
    assert "did not expect" in result.warnings()[0] and "q_proj.bias (2 tensors, 16 parameters)" in result.warnings()[0]


def test_extra_norms_and_missing_and_resized_tensors_are_named():
    shapes = _checkpoint(extra_norms=True)
    del shapes["lm_head.weight"]
    shapes["model.layers.0.mlp.up_proj.weight"] = [32, 8]
    result = reconcile(expected_groups(_spec()), weight_groups(shapes))
    assert {g.name for g in result.unexpected} == {"layers.{L}.pre_feedforward_layernorm.weight",
                                                   "layers.{L}.post_feedforward_layernorm.weight"}
    assert [g.name for g in result.missing] == ["lm_head.weight"]
    assert result.mismatched == [{"name": "layers.{L}.mlp.up_proj.weight", "config": 256, "weights": 384}]
    assert len(result.warnings()) == 3


def test_unknown_tensors_get_a_role_by_name():
    result = reconcile([Group("embed_tokens.weight", "embedding", 10)],
                       weight_groups({"model.embed_tokens.weight": [10], "model.vision_tower.proj": [3]}))
    assert result.by_role["other"] == {"config": 0, "weights": 3}
