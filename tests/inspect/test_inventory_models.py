"""The inventory read from real (tiny, random) checkpoints written by transformers' own classes."""

import json

import pytest

from llm_adapt.inspect.accounting import expected_groups, reconcile, weight_groups
from llm_adapt.inspect.inventory import FROM_CONFIG, FROM_MODEL
from llm_adapt.inspect.model_walk import read_facts
from llm_adapt.models.weights import tensor_shapes
from llm_adapt.models.spec import load_config, spec_from_config
from llm_adapt.models.synthetic import write_tiny_family


@pytest.fixture(scope="module")
def families(tmp_path_factory):
    root = tmp_path_factory.mktemp("families")
    return {name: write_tiny_family(name, root / name)
            for name in ("llama", "qwen2", "qwen3", "gemma", "gemma2", "gemma3", "mistral", "mixtral", "qwen2_moe",
                         "qwen3_moe", "deepseek_v2")}


def facts(path):
    return read_facts(path, spec_from_config(load_config(path)))


def test_llama_is_the_plain_template(families):
    f = facts(families["llama"])
    assert f.source == FROM_MODEL and f.norm == "rms" and f.activation == "silu" and f.gated_mlp
    assert f.biased == () and f.attention == "GQA" and not f.qk_norm and f.embed_scale is None
    assert f.layer_types == ("full", "full") and f.attn_softcap is None and f.experts is None
    assert f.layer_norms == ("input_layernorm", "post_attention_layernorm")
    assert {"mm", "silu", "rsqrt", "_softmax"} <= set(f.aten_ops) and "tanh" not in f.aten_ops


def test_qwen2_has_qkv_biases(families):
    f = facts(families["qwen2"])
    assert f.biased == ("self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj")


def test_qwen3_has_qk_norm(families):
    f = facts(families["qwen3"])
    assert f.qk_norm and "self_attn.q_norm" in f.layer_norms and f.biased == ()


def test_gemma2_shows_everything_the_llama_template_missed(families):
    f = facts(families["gemma2"])
    assert f.activation == "gelu_tanh" and f.norm == "rms_1p"
    assert {"pre_feedforward_layernorm", "post_feedforward_layernorm"} <= set(f.layer_norms)
    assert f.attn_softcap == 50.0 and f.final_softcap == 30.0
    assert f.layer_types == ("sliding", "full") and f.sliding_window == 16
    assert f.embed_scale == pytest.approx(64**0.5) and f.tied
    assert {"tanh", "gelu"} <= set(f.aten_ops)  # soft-capping and the activation, seen in the trace


def test_mistral_slides_in_every_layer(families):
    f = facts(families["mistral"])
    assert f.layer_types == ("sliding", "sliding") and f.sliding_window == 16 and f.norm == "rms"


@pytest.mark.parametrize("name,router,shared", [("mixtral", "MixtralTopKRouter", None),
                                                ("qwen2_moe", "Qwen2MoeTopKRouter", "intermediate 64, sigmoid-gated")])
def test_moe_experts_router_and_shared_experts(families, name, router, shared):
    f = facts(families[name])
    assert (f.experts, f.experts_per_token, f.moe_layers, f.router, f.shared_experts) == (4, 2, 2, router, shared)
    assert "stopped" in f.trace_note or f.aten_ops  # routing is data-dependent: the trace may stop, and says so


def test_custom_code_without_trust_falls_back_to_the_config_labelled(families, tmp_path):
    cfg = json.loads((families["llama"] / "config.json").read_text())
    cfg |= {"architectures": ["NotInTransformersForCausalLM"], "model_type": "not-in-transformers",
            "auto_map": {"AutoConfig": "configuration_x.XConfig", "AutoModelForCausalLM": "modeling_x.XForCausalLM"}}
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    f = facts(tmp_path)
    assert f.source == FROM_CONFIG and "--trust-remote-code was not given" in f.source_note
    assert f.norm == "rms"  # what the config implies, labelled as such


@pytest.mark.parametrize("name", ["llama", "qwen2", "qwen3", "gemma", "gemma2", "gemma3", "mistral", "mixtral",
                                  "qwen2_moe", "qwen3_moe", "deepseek_v2"])
def test_every_checkpoint_tensor_is_explained(families, name):
    path = families[name]
    result = reconcile(expected_groups(spec_from_config(load_config(path))), weight_groups(tensor_shapes(path)))
    assert result.agree, result.warnings()


def test_the_issue_case_qwen2_biases_flagged_by_a_llama_formula(families):
    cfg = load_config(families["qwen2"]) | {"model_type": "llama"}
    result = reconcile(expected_groups(spec_from_config(cfg)), weight_groups(tensor_shapes(families["qwen2"])))
    assert result.from_weights - result.from_config == 2 * (128 + 64 + 64)
    assert "q_proj.bias" in result.warnings()[0] and not result.agree


def test_gemma3_and_gemma1(families):
    g3 = facts(families["gemma3"])
    assert g3.norm == "rms_1p" and g3.qk_norm and len(g3.layer_norms) == 6 and g3.embed_scale
    g1 = facts(families["gemma"])
    assert g1.norm == "rms_1p" and g1.layer_norms == ("input_layernorm", "post_attention_layernorm")
    assert g1.activation == "gelu_tanh" and g1.attn_softcap is None and g1.tied


def test_deepseek_mla_with_a_dense_first_layer(families):
    f = facts(families["deepseek_v2"])
    assert f.attention == "MLA" and f.kv_lora_rank == 512 and f.head_dim == 96  # qk_nope 32 + qk_rope 64
    assert (f.experts, f.moe_layers, f.shared_experts) == (4, 1, "intermediate 32")
