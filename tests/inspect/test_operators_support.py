from llm_adapt.inspect.inventory import facts_from_spec
from llm_adapt.inspect.operators import operator_inventory
from llm_adapt.inspect.support import NATIVE, TRANSFORMERS_BACKEND, UNSUPPORTED, Registry, classify, shipped_registry
from llm_adapt.models.spec import spec_from_config
from tests.conftest import config_fixture


def spec(**changes):
    return spec_from_config(config_fixture("llama-3.1-8b") | changes)


def ops(platform="cpu", flags=None, **changes):
    return {op.name: op for op in operator_inventory(facts_from_spec(spec(**changes), "test"), platform, flags)}


def test_attention_kinds():
    assert ops()["attention"].value.startswith("GQA") and "group size 4" in ops()["attention"].value
    assert ops(num_key_value_heads=32)["attention"].value.startswith("MHA")
    assert ops(num_key_value_heads=1)["attention"].value.startswith("MQA")


def test_rope_names_llama3_scaling():
    assert ops()["positional encoding"].value == "RoPE (llama3, theta 500000)"


def test_inventory_flags_avx2_only_cpu():
    assert "CPU ISA" in ops("cpu", {"avx2"})
    assert "CPU ISA" not in ops("cpu", {"avx2", "avx512f"})


def test_no_avx2_line_where_the_cpu_is_not_x86_or_the_device_is_not_the_host():
    assert "CPU ISA" not in ops("cpu", {"fp", "asimd", "bf16"})  # an Arm host (Kunpeng) has neither flag
    assert "CPU ISA" not in ops("cuda", {"avx2"})  # a GPU platform: the host's ISA is not its kernels'


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
    odd = ops(head_dim=16, num_attention_heads=32)
    assert "fails at the first request" in odd["head_dim"].caveats[0]
    assert not ops()["head_dim"].caveats


def test_config_fallback_is_labelled():
    facts = facts_from_spec(spec(), "the model could not be instantiated (ValueError: custom code)")
    assert facts.source == "config only" and "custom code" in facts.source_note
    assert "not read from the model's code" in ops()["norm"].evidence
