"""A second start at vLLM's own estimate when it refuses the plan's max-model-len."""

import json
import sys

import pytest

from llm_adapt.engines import session
from llm_adapt.engines.server import EngineStartError, LaunchSpec
from llm_adapt.engines.vllm import argv_max_model_len, estimated_max_len, with_max_model_len
from llm_adapt.command import Command
from llm_adapt.inspect.plan import DeployPlan

REFUSAL = ("ValueError: To serve at least one request with the model's max seq len (37376), (3.99 GiB KV cache is "
           "needed, which is larger than the available KV cache memory (3.99 GiB). Based on the available memory, "
           "the estimated maximum model length is 37248. Try increasing `gpu_memory_utilization` ...")
PLAN = DeployPlan.model_construct(max_model_len_from="plan", max_model_len=37376, kv_cache_blocks=292, block_size=128,
                                  kv_pool_exact=True, tensor_parallel=1, kv_pool_bytes=2 * 1024**3)


def test_estimate_is_parsed_only_from_the_refusal():
    assert estimated_max_len(REFUSAL) == 37248
    assert estimated_max_len("ValueError: No available memory for the cache blocks.") is None
    assert estimated_max_len(None) is None


def test_retry_only_for_the_plans_own_length_and_a_shorter_estimate():
    assert session.retry_length(REFUSAL, PLAN, 37376) == 37248
    assert session.retry_length(REFUSAL, PLAN.model_copy(update={"max_model_len_from": "user"}), 37376) is None
    assert session.retry_length("RuntimeError: boom", PLAN, 37376) is None
    assert session.retry_length(REFUSAL, PLAN, 37248) is None  # no shorter: a second start would fail the same way
    assert session.retry_length(REFUSAL.replace("37248", "0"), PLAN, 37376) is None


def test_argv_length_rewrite():
    argv = ["python", "-m", "x", "--max-model-len", "37376", "--port", "1"]
    assert with_max_model_len(argv, 37248) == ["python", "-m", "x", "--max-model-len", "37248", "--port", "1"]
    assert argv_max_model_len(argv) == 37376 and argv_max_model_len(["python"]) is None


def test_prediction_follows_the_served_length():
    assert session.predicted_for(PLAN, 37248).model_dump() == {"kv_cache_tokens": 37376, "max_concurrency": 1.0,
                                                               "max_model_len": 37248, "exact": True, "ranks": 1,
                                                               "kv_space_gib_per_rank": 2.0}
    assert session.predicted_for(PLAN, 4096).kv_cache_tokens == 37376  # 292 blocks / 32 per request x 4096


# A fake vLLM: refuses any --max-model-len above 300 with vLLM's message, else serves /health and /v1/models.
FAKE = r"""
import http.server, sys
mml = int(sys.argv[sys.argv.index("--max-model-len") + 1])
port = int(sys.argv[sys.argv.index("--port") + 1])
if mml > 300:
    print(f"(EngineCore_DP0 pid=1) ERROR 11-30 08:00:00 [core.py:1] ValueError: To serve at least one request with "
          f"the model's max seq len ({mml}), (0.01 GiB KV cache is needed, which is larger than the available KV "
          f"cache memory (0.01 GiB). Based on the available memory, the estimated maximum model length is 256. Try ...")
    sys.exit(1)
print(f"INFO 11-30 08:00:00 [kv_cache_utils.py:1] CPU KV cache size: 384 tokens, Maximum concurrency for {mml} "
      f"tokens per request: 1.50x", flush=True)
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200); self.end_headers(); self.wfile.write(b'{"data": []}')
    def log_message(self, *a): pass
http.server.HTTPServer(("127.0.0.1", port), H).serve_forever()
"""


class Inspected:
    def __init__(self, plan):
        self.plan = plan
        self.model = {"path": "/m", "has_tokenizer": True}


def fake_plan(mml, source):
    argv = [sys.executable, "-c", FAKE, "--max-model-len", str(mml), "--served-model-name", "m",
            "--host", "127.0.0.1", "--port", "0"]
    return DeployPlan.model_construct(mode_commands={"eager": Command.from_argv(argv)}, env={}, max_model_len=mml, max_model_len_from=source,
                                      kv_cache_blocks=3, block_size=128, kv_cache_tokens=384, max_concurrency=1.5,
                                      kv_pool_exact=True, tensor_parallel=1, kv_pool_bytes=1024**3)


def fake_launch(engine, plan, model_dir, mode, port, timeout, extra):
    argv = plan.command(mode).with_option("--port", str(port)).argv()
    return LaunchSpec(engine="vllm", argv=argv, env={}, host="127.0.0.1", port=port, served_model="m",
                      ready_paths=("/health",), startup_timeout_s=30)


def test_refused_plan_length_starts_again_at_the_estimate(tmp_path, monkeypatch):
    monkeypatch.setattr(session, "launch_spec", fake_launch)
    said = []
    with session.started_engine(Inspected(fake_plan(384, "plan")), "vllm", tmp_path, notify=said.append) as (server, result):
        assert server.alive() and argv_max_model_len(server.spec.argv) == 256
    saved = json.loads((tmp_path / "serve.json").read_text())
    assert [(a["max_model_len"], a["outcome"]) for a in saved["attempts"]] == [(384, "refused"), (256, "started")]
    assert "estimated maximum model length is 256" in saved["attempts"][0]["cause"]
    assert (tmp_path / "engine-refused.log").exists() and saved["attempts"][1]["log"] == str(tmp_path / "engine.log")
    assert len(said) == 1 and "refused max-model-len 384" in said[0] and "256" in said[0]
    assert saved["predicted"]["max_model_len"] == 256 and saved["prediction_matches"]


def test_prediction_is_judged_at_the_served_length(tmp_path, monkeypatch):
    monkeypatch.setattr(session, "launch_spec", fake_launch)
    plan = fake_plan(256, "plan").model_copy(update={"kv_cache_tokens": 999})  # a stale figure for another length must not count
    with session.started_engine(Inspected(plan), "vllm", tmp_path, notify=print) as (_, result):
        assert result.predicted.kv_cache_tokens == 384 and result.prediction_matches


def test_a_length_the_user_set_is_not_changed(tmp_path, monkeypatch):
    monkeypatch.setattr(session, "launch_spec", fake_launch)
    with pytest.raises(EngineStartError, match="estimated maximum model length is 256"):
        with session.started_engine(Inspected(fake_plan(384, "user")), "vllm", tmp_path, notify=print):
            pass
    assert not (tmp_path / "engine-refused.log").exists() and not (tmp_path / "serve.json").exists()


def test_a_plan_that_fits_starts_once(tmp_path, monkeypatch):
    monkeypatch.setattr(session, "launch_spec", fake_launch)
    with session.started_engine(Inspected(fake_plan(256, "plan")), "vllm", tmp_path, notify=print) as (_, result):
        assert [a.outcome for a in result.attempts] == ["started"]
