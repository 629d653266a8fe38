"""The deployment plan: layout choice, KV figures, commands and environment, per platform."""

import pytest

from llm_adapt.errors import AdaptError, UsageError
from llm_adapt.inspect import memory as mem
from llm_adapt.inspect.plan import PlanOptions, make_plan
from llm_adapt.models.spec import spec_from_config
from llm_adapt.platforms import get_platform
from tests.conftest import config_fixture


def plan_for(name, platform, **opts):
    spec = spec_from_config(config_fixture(name))
    params = mem.parameter_breakdown(spec).total
    options = PlanOptions(model_path="/models/m", served_model_name="m", **opts)
    return make_plan(spec, params, get_platform(platform), options)


def smollm2_spec():
    cfg = config_fixture("llama-3.2-1b") | {"hidden_size": 576, "intermediate_size": 1536, "num_hidden_layers": 30,
                                            "num_attention_heads": 9, "num_key_value_heads": 3, "head_dim": 64,
                                            "vocab_size": 49152, "max_position_embeddings": 8192}
    return spec_from_config(cfg)


def test_cpu_plan_kv_is_exact_and_binds_all_cores():
    spec = smollm2_spec()
    plan = make_plan(spec, mem.parameter_breakdown(spec).total, get_platform("cpu"),
                     PlanOptions(model_path="/m", served_model_name="m", kv_cache_space_gib=2, cpu_cores=2,
                                 device_memory_gib=24, max_model_len=2048))
    assert plan.kv_pool_exact and plan.kv_cache_tokens == 93_184 and plan.kv_cache_blocks == 728
    assert plan.max_concurrency == pytest.approx(45.5)
    assert plan.env == {"VLLM_CPU_KVCACHE_SPACE": "2", "VLLM_CPU_OMP_THREADS_BIND": "0-1"}
    assert "--enforce-eager" in plan.argv["eager"] and "--enforce-eager" not in plan.argv["graph"]
    assert plan.commands["eager"] != plan.commands["graph"]
    assert "--gpu-memory-utilization" not in plan.argv["eager"]


def test_npu_8b_fits_one_64gib_card():
    plan = plan_for("llama-3.1-8b", "npu", device_memory_gib=64, devices_per_node=8, max_model_len=32768)
    assert (plan.tensor_parallel, plan.pipeline_parallel, plan.nodes) == (1, 1, 1)
    assert plan.block_size == 128
    assert plan.env["ASCEND_RT_VISIBLE_DEVICES"] == "0"
    assert plan.env["PYTORCH_NPU_ALLOC_CONF"] == "expandable_segments:True"
    assert not plan.kv_pool_exact and plan.max_model_len == 32768
    assert plan.kv_cache_tokens == int(plan.kv_cache_blocks / (32768 // 128) * 32768)
    assert plan.ray is None


def test_70b_spreads_with_tensor_parallel_in_a_node():
    plan = plan_for("llama-3.1-70b", "npu", device_memory_gib=64, devices_per_node=8)
    assert plan.tensor_parallel == 4 and plan.pipeline_parallel == 1
    assert plan.env["ASCEND_RT_VISIBLE_DEVICES"] == "0,1,2,3"
    assert "--tensor-parallel-size" in plan.argv["graph"]
    assert plan.weight_bytes_per_device == pytest.approx(mem.weight_bytes(70_553_706_496, "bf16") / 4, abs=1)


def test_70b_crosses_nodes_with_pipeline_parallel_over_ray():
    plan = plan_for("llama-3.1-70b", "cuda", device_memory_gib=24, devices_per_node=2)
    assert plan.tensor_parallel == 2 and plan.pipeline_parallel > 1 and plan.nodes == plan.pipeline_parallel
    assert plan.ray and "ray start --head" in plan.ray["head"]
    assert "--distributed-executor-backend" in plan.argv["eager"]
    assert plan.env["CUDA_VISIBLE_DEVICES"] == "0,1"


def test_too_small_for_the_weights_is_one_clear_error():
    with pytest.raises(AdaptError, match="do not fit"):
        plan_for("llama-3.1-70b", "cuda", device_memory_gib=24, devices_per_node=1, max_nodes=1)
    with pytest.raises(AdaptError, match="exceed .* of RAM"):
        plan_for("llama-3.1-8b", "cpu", device_memory_gib=8)


def test_max_model_len_beyond_positions_is_a_usage_error():
    with pytest.raises(UsageError, match="max_position_embeddings"):
        plan_for("llama-3.2-1b", "cuda", device_memory_gib=80, max_model_len=200_000)


def test_max_model_len_beyond_the_pool_is_a_failure():
    with pytest.raises(AdaptError, match="needs .* GiB of KV"):
        plan_for("llama-3.1-8b", "cpu", device_memory_gib=64, kv_cache_space_gib=1, max_model_len=131072)


def test_assumed_memory_is_labelled():
    plan = plan_for("llama-3.2-3b", "npu", devices_per_node=8)
    assert plan.device_memory_assumed and plan.device_memory_gib == 64
    assert any("assumed" in w for w in plan.warnings)


def test_host_and_trust_remote_code_defaults():
    plan = plan_for("llama-3.2-1b", "cuda", device_memory_gib=80)
    assert plan.argv["eager"][plan.argv["eager"].index("--host") + 1] == "127.0.0.1"
    assert "--trust-remote-code" not in plan.argv["eager"]
    opened = plan_for("llama-3.2-1b", "cuda", device_memory_gib=80, host="0.0.0.0", trust_remote_code=True)
    assert "--trust-remote-code" in opened.argv["eager"]
    assert any("0.0.0.0" in w for w in opened.warnings) and any("trust-remote-code" in w for w in opened.warnings)


def test_kv_fp8_halves_kv_and_passes_flag():
    bf16 = plan_for("llama-3.1-8b", "cuda", device_memory_gib=80, max_model_len=8192)
    fp8 = plan_for("llama-3.1-8b", "cuda", device_memory_gib=80, max_model_len=8192, kv_dtype="fp8")
    assert fp8.kv_bytes_per_token * 2 == bf16.kv_bytes_per_token
    assert "--kv-cache-dtype" in fp8.argv["eager"]
    assert fp8.kv_cache_blocks == pytest.approx(2 * bf16.kv_cache_blocks, rel=0.01)


def test_render_command_is_copy_pasteable():
    from llm_adapt.inspect.plan import render_command

    text = render_command({"A": "x y"}, ["python", "-m", "mod", "--model", "/p q", "--flag"])
    assert text == "export A='x y'\npython -m mod \\\n    --model '/p q' \\\n    --flag"
