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
    assert "--enforce-eager" in plan.command("eager").argv() and "--enforce-eager" not in plan.command("graph").argv()
    assert plan.commands["eager"] != plan.commands["graph"]
    assert "--gpu-memory-utilization" not in plan.command("eager").argv()


def test_npu_8b_fits_one_64gib_card():
    plan = plan_for("llama-3.1-8b", "npu", device_memory_gib=64, devices_per_node=8, max_model_len=32768)
    assert (plan.tensor_parallel, plan.pipeline_parallel, plan.nodes) == (1, 1, 1)
    assert plan.block_size == 128
    assert plan.env["ASCEND_RT_VISIBLE_DEVICES"] == "0"
    assert plan.env["PYTORCH_NPU_ALLOC_CONF"] == "expandable_segments:True"
    assert not plan.kv_pool_exact and plan.max_model_len == 32768
    assert plan.kv_cache_tokens == int(plan.kv_cache_blocks / (32768 // 128) * 32768)
    assert plan.multinode is None


def test_70b_spreads_with_tensor_parallel_in_a_node():
    plan = plan_for("llama-3.1-70b", "npu", device_memory_gib=64, devices_per_node=8)
    assert plan.tensor_parallel == 4 and plan.pipeline_parallel == 1
    assert plan.env["ASCEND_RT_VISIBLE_DEVICES"] == "0,1,2,3"
    assert "--tensor-parallel-size" in plan.command("graph").argv()
    assert plan.weight_bytes_per_device == pytest.approx(mem.weight_bytes(70_553_706_496, "bf16") / 4, abs=1)


def test_70b_crosses_nodes_with_pipeline_parallel_over_ray():
    plan = plan_for("llama-3.1-70b", "cuda", device_memory_gib=24, devices_per_node=2)
    assert plan.tensor_parallel == 2 and plan.pipeline_parallel > 1 and plan.nodes == plan.pipeline_parallel
    ray = next(f for f in plan.multinode["forms"] if f["name"] == "ray")
    assert ray["nodes"][0]["ray_start"].startswith("ray start --head")
    assert "--distributed-executor-backend" in plan.command("eager").argv()
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
    assert plan.command("eager").get("--host") == "127.0.0.1"
    assert "--trust-remote-code" not in plan.command("eager").argv()
    opened = plan_for("llama-3.2-1b", "cuda", device_memory_gib=80, host="0.0.0.0", trust_remote_code=True)
    assert "--trust-remote-code" in opened.command("eager").argv()
    assert any("0.0.0.0" in w for w in opened.warnings) and any("trust-remote-code" in w for w in opened.warnings)


def test_kv_fp8_halves_kv_and_passes_flag():
    bf16 = plan_for("llama-3.1-8b", "cuda", device_memory_gib=80, max_model_len=8192)
    fp8 = plan_for("llama-3.1-8b", "cuda", device_memory_gib=80, max_model_len=8192, kv_dtype="fp8")
    assert fp8.kv_bytes_per_token * 2 == bf16.kv_bytes_per_token
    assert "--kv-cache-dtype" in fp8.command("eager").argv()
    assert fp8.kv_cache_blocks == pytest.approx(2 * bf16.kv_cache_blocks, rel=0.01)


def test_render_command_is_copy_pasteable():
    from llm_adapt.inspect.plan import render_command

    text = render_command({"A": "x y"}, ["python", "-m", "mod", "--model", "/p q", "--flag"])
    assert text == "export A='x y'\npython -m mod \\\n    --model '/p q' \\\n    --flag"


# ---- where memory, not the config, sets the length (vLLM 0.32's accounting, null block held back) ----

def test_cpu_3b_at_4gib_longest_is_what_vllm_accepts():
    # vLLM-CPU refused 37,376 here: "... the estimated maximum model length is 37248".
    plan = plan_for("llama-3.2-3b", "cpu", kv_cache_space_gib=4, device_memory_gib=24)
    assert plan.kv_cache_blocks == 292  # 4 GiB // (114,688 B x 128)
    assert plan.longest_max_model_len == plan.max_model_len == 37_248 and plan.max_model_len_from == "plan"
    assert plan.kv_cache_tokens == 37_376  # what vLLM logs as "CPU KV cache size"
    assert plan.kv_margin == 0.0


def test_cpu_8b_longest_leaves_the_null_block():
    plan = plan_for("llama-3.1-8b", "cpu", kv_cache_space_gib=4, device_memory_gib=32)
    assert plan.kv_cache_blocks == 256 and plan.longest_max_model_len == 255 * 128 == 32_640


def test_cpu_user_length_one_block_too_long_is_refused_before_launch():
    plan_for("llama-3.2-3b", "cpu", kv_cache_space_gib=4, device_memory_gib=24, max_model_len=37_248)
    with pytest.raises(AdaptError, match="needs .* GiB of KV"):
        plan_for("llama-3.2-3b", "cpu", kv_cache_space_gib=4, device_memory_gib=24, max_model_len=37_249)


def test_config_bound_length_is_unchanged_by_the_null_block():
    plan = plan_for("llama-3.2-1b", "cpu", kv_cache_space_gib=4, device_memory_gib=24, max_model_len=8192)
    assert plan.max_model_len == 8192 and plan.max_model_len_from == "user"


def test_gpu_longest_leaves_the_stated_margin_of_the_estimated_pool():
    plan = plan_for("llama-3.1-8b", "cuda", device_memory_gib=24)
    assert plan.kv_margin == 0.10 and not plan.kv_pool_exact
    usable = int(plan.kv_cache_blocks * 0.9) - 1
    assert plan.longest_max_model_len == min(usable * 16, 131_072)
    assert plan.longest_max_model_len < (plan.kv_cache_blocks - 1) * 16


# ---- host memory: weights + KV + activations + runtime must fit what is free now ----

def test_cpu_kv_space_sized_from_available_host_memory():
    # 8B bf16: 14.96 GiB weights, 1.02 GiB activations, 3 GiB runtime (engine processes included).
    assert plan_for("llama-3.1-8b", "cpu", host_available_gib=24).kv_pool_bytes == 4 * mem.GIB
    assert plan_for("llama-3.1-8b", "cpu", host_available_gib=22).kv_pool_bytes == 3 * mem.GIB
    assert plan_for("llama-3.1-8b", "cpu", host_available_gib=20).kv_pool_bytes == 1 * mem.GIB
    with pytest.raises(AdaptError, match="exceed 19.5 GiB"):
        plan_for("llama-3.1-8b", "cpu", host_available_gib=19.5)


def test_cpu_refuses_when_the_model_cannot_fit_available_memory():
    with pytest.raises(AdaptError) as info:
        plan_for("llama-3.1-8b", "cpu", host_available_gib=12)
    text = str(info.value)
    assert "weights (15.0 GiB in bf16)" in text and "exceed 12.0 GiB of available host memory" in text
    assert "\n" not in text
    with pytest.raises(AdaptError, match="exceed 22.0 GiB"):  # fits, but not with the KV space asked for
        plan_for("llama-3.1-8b", "cpu", host_available_gib=22, kv_cache_space_gib=4)


def test_device_memory_option_overrides_available_memory_on_cpu():
    plan = plan_for("llama-3.1-8b", "cpu", host_available_gib=12, device_memory_gib=64)
    assert plan.kv_pool_bytes == 4 * mem.GIB



def test_a_model_without_a_native_implementation_is_planned_on_the_transformers_backend(monkeypatch, tiny_llama):
    from llm_adapt.inspect import stage
    from llm_adapt.inspect.plan import PlanOptions
    from llm_adapt.inspect.support import Support
    from llm_adapt.models.source import resolve_model

    source = resolve_model(str(tiny_llama))
    options = PlanOptions(model_path=str(tiny_llama), served_model_name="m", kv_cache_space_gib=1)
    native = stage.run_inspect(source, options, "cpu")
    assert native.support["vllm"] == "native" and "--model-impl" not in native.plan.command("eager").argv()
    backend = Support("transformers-backend", "test registry", "Transformers backend (--model-impl transformers)", "x")
    monkeypatch.setattr(stage, "classify", lambda spec, registry: backend)
    planned = stage.run_inspect(source, options, "cpu")
    for mode in ("eager", "graph"):
        argv = planned.plan.command(mode).argv()
        assert argv[argv.index("--model-impl") + 1] == "transformers"


def test_cpu_preload_needs_tcmalloc_and_on_x86_intel_openmp(tmp_path):
    from llm_adapt.platforms import cpu_preload_libs

    sys_lib, venv = tmp_path / "lib", tmp_path / "venv"
    (venv / "lib").mkdir(parents=True)
    sys_lib.mkdir()
    assert cpu_preload_libs(str(venv), (str(sys_lib),), "x86_64") == ()
    (sys_lib / "libtcmalloc_minimal.so.4").write_bytes(b"")
    assert cpu_preload_libs(str(venv), (str(sys_lib),), "x86_64") == ()  # no Intel OpenMP yet
    assert cpu_preload_libs(str(venv), (str(sys_lib),), "aarch64") == (str(sys_lib / "libtcmalloc_minimal.so.4"),)
    (venv / "lib" / "libiomp5.so").write_bytes(b"")
    assert cpu_preload_libs(str(venv), (str(sys_lib),), "x86_64") == (
        str(sys_lib / "libtcmalloc_minimal.so.4"), str(venv / "lib" / "libiomp5.so"))


def test_cpu_plan_preloads_what_was_found_and_warns_when_not():
    spec = smollm2_spec()
    libs = ("/usr/lib/libtcmalloc_minimal.so.4", "/venv/lib/libiomp5.so")
    options = PlanOptions(model_path="/m", served_model_name="m", kv_cache_space_gib=2, cpu_cores=2,
                          device_memory_gib=24, max_model_len=2048)
    with_libs = make_plan(spec, mem.parameter_breakdown(spec).total, get_platform("cpu"),
                          PlanOptions(**{**options.__dict__, "cpu_preload": libs}))
    assert with_libs.env["LD_PRELOAD"] == ":".join(libs)
    assert with_libs.commands["eager"].startswith("LD_PRELOAD=") or "LD_PRELOAD=" in with_libs.commands["eager"]
    assert not any("LD_PRELOAD" in w for w in with_libs.warnings)
    without = make_plan(spec, mem.parameter_breakdown(spec).total, get_platform("cpu"), options)
    assert "LD_PRELOAD" not in without.env
    assert any("no LD_PRELOAD" in w for w in without.warnings)
