"""Tensor and expert parallelism in the plan: what the model's heads and experts allow, one line when they do
not, and on CPU one core list and one KV space per rank, predicted as vLLM-CPU logs them."""

import pytest

from llm_adapt.errors import UsageError
from llm_adapt.inspect import memory as mem
from llm_adapt.inspect.plan import PlanOptions, cpu_bind, cpu_rank_problem, make_plan, parallel_problem
from llm_adapt.models.spec import spec_from_config
from llm_adapt.platforms import get_platform
from tests.conftest import config_fixture
from tests.inspect.test_plan import smollm2_spec


def tiny_moe_spec(**over):
    """The tiny Qwen3-MoE the served tests write (models/synthetic.py: 4 heads, 2 KV heads, 8 experts)."""
    return spec_from_config({"architectures": ["Qwen3MoeForCausalLM"], "model_type": "qwen3_moe", "hidden_size": 64,
                             "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4,
                             "num_key_value_heads": 2, "head_dim": 32, "vocab_size": 49152,
                             "max_position_embeddings": 2048, "num_experts": 8, "num_experts_per_tok": 2,
                             "moe_intermediate_size": 32, "torch_dtype": "float32", **over})


def cpu_plan(spec, **opts):
    options = PlanOptions(model_path="/m", served_model_name="m", kv_cache_space_gib=1, cpu_cores=2,
                          device_memory_gib=24, max_model_len=1024, dtype="fp32", **opts)
    return make_plan(spec, mem.parameter_breakdown(spec).total, get_platform("cpu"), options)


def test_smollm2s_nine_heads_refuse_tp2_in_one_line_with_the_fix():
    problem = parallel_problem(smollm2_spec(), 2, False)
    assert "9 attention heads do not divide by 2" in problem and "(1, 3, 9)" in problem and "\n" not in problem
    with pytest.raises(UsageError, match="9 attention heads"):
        cpu_plan(smollm2_spec(), tensor_parallel=2)
    assert parallel_problem(smollm2_spec(), 3, False) is None  # 9 heads, 3 KV heads: TP=3 splits both


def test_kv_heads_split_or_replicated_as_vllm_allows():
    spec = tiny_moe_spec(num_attention_heads=12, num_key_value_heads=3)
    assert parallel_problem(spec, 3, False) is None  # 3 KV heads over 3 ranks
    assert parallel_problem(spec, 6, False) is None  # 6 ranks replicate 3 KV heads
    assert "3 KV heads" in parallel_problem(spec, 4, False)  # 4 neither divides 3 nor is divided by it


def test_expert_parallelism_needs_experts_that_divide_and_more_than_one_rank():
    assert parallel_problem(tiny_moe_spec(), 2, True) is None
    assert "8 experts do not divide among" in parallel_problem(tiny_moe_spec(num_attention_heads=6, num_key_value_heads=3), 3, True)
    assert "no experts" in parallel_problem(smollm2_spec(), 3, True)
    assert "--tp 2 or more" in parallel_problem(tiny_moe_spec(), 1, True)


def test_cpu_tp2_binds_one_core_per_rank_and_predicts_the_kv_per_rank():
    one, two = cpu_plan(tiny_moe_spec()), cpu_plan(tiny_moe_spec(), tensor_parallel=2)
    assert two.env["VLLM_CPU_OMP_THREADS_BIND"] == "0|1" and one.env["VLLM_CPU_OMP_THREADS_BIND"] == "0-1"
    assert two.command("eager").get("--tensor-parallel-size") == "2"
    # each rank holds 1 of the 2 KV heads in its own 1 GiB: 2 layers x 1 x 32 x 2 x 4 bytes = 512 bytes a token,
    # 2,097,152 tokens, as vLLM-CPU 0.32 logged it serving this model at TP=2 (one KV head each: twice TP=1's)
    assert two.kv_bytes_per_token == 512 and two.kv_cache_tokens == 2_097_152
    assert one.kv_cache_tokens == 1_048_576
    assert two.weight_bytes_per_device == pytest.approx(one.weight_bytes_per_device / 2, abs=1)


def test_ep_adds_its_flag_and_a_cpu_caveat():
    plan = cpu_plan(tiny_moe_spec(), tensor_parallel=2, expert_parallel=True)
    assert plan.expert_parallel and plan.command("graph").has("--enable-expert-parallel")
    assert any(getattr(w, "key", None) == "cpu_ep_crash" for w in plan.warnings)


def test_more_ranks_than_cores_is_refused_on_cpu():
    assert "this host gives it 2" in cpu_rank_problem(4, 2) and cpu_rank_problem(2, 2) is None
    with pytest.raises(UsageError, match="--tp 4 on CPU"):
        cpu_plan(tiny_moe_spec(), tensor_parallel=4)


def test_core_lists_split_evenly_per_rank():
    assert cpu_bind(2, 2) == "0|1" and cpu_bind(4, 2) == "0-1|2-3" and cpu_bind(4) == "0-3" and cpu_bind(1) == "0"


def test_a_gpu_plan_takes_the_tp_it_is_given():
    spec = spec_from_config(config_fixture("llama-3.1-8b"))
    options = PlanOptions(model_path="/m", served_model_name="m", device_memory_gib=80, tensor_parallel=4)
    plan = make_plan(spec, mem.parameter_breakdown(spec).total, get_platform("cuda"), options)
    assert plan.tensor_parallel == 4 and plan.command("eager").get("--tensor-parallel-size") == "4"
