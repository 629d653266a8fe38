import pytest

from llm_adapt.errors import UsageError
from llm_adapt.models.spec import spec_from_config
from tests.conftest import config_fixture


def test_llama31_rope_and_gqa():
    spec = spec_from_config(config_fixture("llama-3.1-8b"))
    assert spec.architecture == "LlamaForCausalLM"
    assert (spec.num_heads, spec.num_kv_heads, spec.head_dim) == (32, 8, 128)
    assert spec.rope.theta == 500000.0
    assert (spec.rope.scaling_type, spec.rope.factor, spec.rope.original_max_position) == ("llama3", 8.0, 8192)
    assert not spec.tie_word_embeddings


def test_transformers5_rope_parameters():
    cfg = config_fixture("llama-3.2-1b")
    cfg.pop("rope_theta")
    cfg["rope_parameters"] = cfg.pop("rope_scaling") | {"rope_theta": 500000.0}
    spec = spec_from_config(cfg)
    assert spec.rope.theta == 500000.0 and spec.rope.scaling_type == "llama3"


def test_head_dim_defaults_to_hidden_over_heads():
    cfg = config_fixture("llama-3.1-8b")
    del cfg["head_dim"]
    assert spec_from_config(cfg).head_dim == 128


@pytest.mark.parametrize("field,value,needle", [
    ("hidden_size", None, "missing 'hidden_size'"),
    ("num_hidden_layers", "thirty", "must be a non-negative integer"),
    ("num_key_value_heads", 5, "not a multiple"),
    ("architectures", None, "no 'architectures'"),
])
def test_malformed_configs_name_the_field(field, value, needle):
    cfg = config_fixture("llama-3.1-8b")
    if value is None:
        cfg.pop(field)
    else:
        cfg[field] = value
    with pytest.raises(UsageError, match=needle):
        spec_from_config(cfg)


def test_moe_parameters_count_all_experts():
    from llm_adapt.inspect.memory import parameter_breakdown

    cfg = config_fixture("llama-3.1-8b") | {"num_local_experts": 8, "num_experts_per_tok": 2,
                                            "architectures": ["MixtralForCausalLM"]}
    dense = parameter_breakdown(spec_from_config(config_fixture("llama-3.1-8b")))
    moe = parameter_breakdown(spec_from_config(cfg))
    assert moe.mlp == 8 * dense.mlp + 32 * 4096 * 8


def test_family_details_from_published_configs():
    gemma = spec_from_config(config_fixture("gemma-2-9b"))
    assert gemma.tie_word_embeddings and gemma.hidden_act == "gelu_pytorch_tanh" and gemma.norms_per_layer == 4
    assert gemma.layer_types[:4] == ("sliding", "full", "sliding", "full") and gemma.attn_softcap == 50.0
    assert gemma.norm_one_plus_w and gemma.embed_scale == pytest.approx(3584**0.5)
    qwen = spec_from_config(config_fixture("qwen2.5-7b-instruct"))
    assert qwen.qkv_bias and not qwen.o_bias and qwen.sliding_window is None and set(qwen.layer_types) == {"full"}
    ds = spec_from_config(config_fixture("deepseek-v2-lite"))
    assert ds.mla.kv_lora_rank == 512 and ds.moe_layers == 26 and ds.shared_expert_intermediate_size == 2 * 1408
    llama = spec_from_config(config_fixture("llama-3.1-8b") | {"attention_bias": True})
    assert llama.qkv_bias and llama.o_bias  # Llama's attention_bias covers o_proj too
