"""The caveat table on plain facts: each rule fires where it must and stays quiet on a clean model."""

import json
from dataclasses import replace

import pytest

from llm_adapt.inspect.caveats import RULES, platform_caveats
from llm_adapt.inspect.inventory import facts_from_spec
from llm_adapt.models.spec import spec_from_config
from tests.conftest import config_fixture


def facts(name):
    return facts_from_spec(spec_from_config(config_fixture(name)), "test")


def ids(f, platform):
    return {c.id for c in platform_caveats(f, platform, {"avx512f"})}


def test_every_rule_names_a_source_and_an_accuracy_check():
    from llm_adapt.platforms import PLATFORMS

    for rule in (*RULES, *(r for p in PLATFORMS.values() for r in p.caveats)):
        assert rule.id and rule.source and rule.check, rule.id


def test_a_registered_platform_gets_the_rules_of_every_platform():
    from tests.platforms.test_registry import XPU
    from llm_adapt.platforms import register, unregister

    register(XPU)
    try:
        assert ids(facts("gemma-2-9b"), "xpu") == {"norm-one-plus-w", "embed-scale"}  # not the Ascend or CUDA ones
    finally:
        unregister("xpu")


def test_clean_llama_gets_no_model_caveat_anywhere():
    llama = facts("llama-3.1-8b")
    assert ids(llama, "cpu") == set() and ids(llama, "npu") == set() and ids(llama, "cuda") == set()


def test_gemma2_on_ascend_gets_softcap_fp16_norm_and_scale():
    assert ids(facts("gemma-2-9b"), "npu") == {"ascend-softcap", "fp16-softcap", "norm-one-plus-w", "embed-scale"}
    assert "ascend-softcap" not in ids(facts("gemma-2-9b"), "cpu")  # vLLM-CPU applies the cap


def test_deepseek_mla_on_cpu_and_ascend():
    ds = facts("deepseek-v2-lite")
    assert {"cpu-mla", "moe-cpu"} <= ids(ds, "cpu") and "cpu-head-dim" not in ids(ds, "cpu")
    assert "ascend-mla" in ids(ds, "npu")


def test_a_sliding_window_is_no_ascend_caveat_at_0_23():  # attention_v1.py passes it to the NPU kernels there
    assert not any("sliding" in i for i in ids(facts("gemma-2-9b"), "npu") | ids(facts("qwen2.5-7b-instruct"), "npu"))


@pytest.mark.parametrize("method,fires", [("gptq", True), ("awq", True), ("w8a8", False), (None, False)])
def test_ascend_quantization_formats(method, fires):
    f = replace(facts("llama-3.1-8b"), quantization=method)
    assert ("ascend-quant" in ids(f, "npu")) is fires


def test_cpu_head_dim_list():
    llama = facts("llama-3.1-8b")
    assert "cpu-head-dim" in ids(replace(llama, head_dim=40), "cpu")
    assert "cpu-head-dim" not in ids(replace(llama, head_dim=80), "cpu")


@pytest.mark.parametrize("platform", ["cpu", "cuda", "npu"])
def test_a_tied_deepseek_is_warned_that_vllm_serves_its_head_unloaded(platform):
    """vLLM-CPU 0.32 served a random DeepSeek-V2 saved tied with its output head unloaded (every answer token 0)."""
    deepseek = facts("deepseek-v2-lite")
    assert deepseek.architecture == "DeepseekV2ForCausalLM" and not deepseek.tied  # as DeepSeek ships it: clean
    assert "tied-head-ignored" not in ids(deepseek, platform)
    assert "tied-head-ignored" in ids(replace(deepseek, tied=True), platform)
    assert "tied-head-ignored" not in ids(replace(facts("llama-3.2-1b"), tied=True), platform)  # Llama ties its head


def test_granites_scalings_and_coheres_ignored_head_are_named(default_model, tmp_path):
    """The inventory names the scalings a config declares (Granite's four multipliers, and its embedding
    multiplier as the embedding's scale); a Cohere checkpoint with an lm_head of its own gets the caveat that
    vLLM's class never reads it, and a tied one does not."""
    from llm_adapt.inspect.inventory import inventory_rows
    from llm_adapt.inspect.plan import PlanOptions
    from llm_adapt.inspect.stage import run_inspect
    from llm_adapt.models.source import resolve_model
    from llm_adapt.models.synthetic import write_layout_family

    def inspected(family, **overrides):
        path = write_layout_family(family, tmp_path / family, tokenizer_from=default_model.path)
        if overrides:
            config = json.loads((path / "config.json").read_text())
            (path / "config.json").write_text(json.dumps({**config, **overrides}))
        return run_inspect(resolve_model(str(path)), PlanOptions(model_path=str(path), served_model_name=family), "cpu")

    granite = inspected("granite")
    assert granite.inventory["scalings"] == {"embedding_multiplier": 12.0, "residual_multiplier": 0.22,
                                             "attention_multiplier": 0.0078125, "logits_scaling": 8.0}
    assert "untied-head-ignored" not in [c["id"] for c in granite.caveats]
    cohere = inspected("cohere")
    assert [c["id"] for c in cohere.caveats if c["id"] == "untied-head-ignored"] == ["untied-head-ignored"]
    assert cohere.inventory["scalings"] == {"logit_scale": 0.0625}
    from llm_adapt.inspect.inventory import ModelFacts

    rows = {r.name: r.value for r in inventory_rows(ModelFacts.from_dict(granite.inventory))}
    assert rows["embedding scale"].startswith("x 12") and "residual_multiplier 0.22" in rows["scalings"]


def test_every_class_that_always_ties_its_head_has_the_untied_head_caveat():
    """Cohere, Cohere2 and Cohere2-MoE compute their logits from the embedding in vLLM 0.32 (Cohere2-MoE maps
    "lm_head." to nothing): an untied checkpoint of each is served with another head; a tied one is not."""
    from dataclasses import fields, replace

    from llm_adapt.inspect.caveats import platform_caveats
    from llm_adapt.inspect.inventory import ModelFacts

    blank = {f.name: None for f in fields(ModelFacts)}
    facts = ModelFacts(**{**blank, "norm": "rms", "activation": "silu", "layer_norms": (), "biased": (),
                          "layer_types": (), "evidence": {}, "aten_ops": {}, "scalings": {}, "moe_layer_indexes": (),
                          "num_heads": 4, "num_kv_heads": 4, "head_dim": 32, "moe_layers": 0, "tied": False,
                          "trace_note": "", "source": "config", "source_note": ""})
    for arch in ("CohereForCausalLM", "Cohere2ForCausalLM", "Cohere2MoeForCausalLM"):
        ids = [c.id for c in platform_caveats(replace(facts, architecture=arch), "cpu")]
        assert "untied-head-ignored" in ids, arch
        tied = [c.id for c in platform_caveats(replace(facts, architecture=arch, tied=True), "cpu")]
        assert "untied-head-ignored" not in tied, arch
    assert "untied-head-ignored" not in [c.id for c in platform_caveats(replace(facts, architecture="LlamaForCausalLM"), "cpu")]
