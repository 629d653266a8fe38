from llm_adapt.inspect.operators import attention_kind, operator_inventory, rope_text
from llm_adapt.inspect.support import NATIVE, TRANSFORMERS_BACKEND, UNSUPPORTED, Registry, classify, shipped_registry
from llm_adapt.models.spec import spec_from_config
from tests.conftest import config_fixture


def spec(**changes):
    return spec_from_config(config_fixture("llama-3.1-8b") | changes)


def test_attention_kinds():
    assert attention_kind(spec()).startswith("GQA") and "group size 4" in attention_kind(spec())
    assert attention_kind(spec(num_key_value_heads=32)).startswith("MHA")
    assert attention_kind(spec(num_key_value_heads=1)).startswith("MQA")


def test_rope_text_names_llama3_scaling():
    assert rope_text(spec()) == "RoPE (theta 500000, llama3 scaling x8 from 8192)"


def test_inventory_flags_avx2_only_cpu():
    names = {op.name for op in operator_inventory(spec(), "cpu", {"avx2"})}
    assert "CPU ISA" in names
    assert "CPU ISA" not in {op.name for op in operator_inventory(spec(), "cpu", {"avx2", "avx512f"})}


def test_shipped_registry_is_stamped_and_knows_llama():
    registry = shipped_registry()
    assert registry.vllm_version and "LlamaForCausalLM" in registry.architectures


def test_classification():
    registry = Registry(frozenset({"LlamaForCausalLM"}), "0.0", "test")
    assert classify(spec(), registry).vllm == NATIVE
    assert classify(spec(architectures=["GPT2LMHeadModel"]), registry).vllm == TRANSFORMERS_BACKEND
    assert classify(spec(architectures=["NoSuchForCausalLM"]), registry).vllm == UNSUPPORTED
    custom = spec(architectures=["MyOwnForCausalLM"], auto_map={"AutoModelForCausalLM": "m.MyOwn"})
    assert classify(custom, registry).vllm == TRANSFORMERS_BACKEND


def test_cpu_flags_head_dims_vllm_cpu_cannot_run():
    odd = {op.name: op for op in operator_inventory(spec(head_dim=16, num_attention_heads=32), "cpu", set())}
    assert "fails at the first request" in odd["head_dim"].caveats[0]
    assert not {op.name: op for op in operator_inventory(spec(), "cpu", set())}["head_dim"].caveats
